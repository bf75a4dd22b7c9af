//! The storage a claim authority needs, and an in-memory implementation of it.

use std::collections::BTreeMap;

use super::error::StoreError;
use super::record::ClaimRecord;

/// One key's record storage: the only operations the claim rules use.
///
/// The Durable Object implements it over its SQLite storage, where every call is synchronous,
/// so one rule (a load followed by a save) runs as one atomic step of the object.
/// [`MemoryClaimStore`] implements it for host tests.
pub trait ClaimStore {
    /// The record of `key`, if there is one. Unreadable data is `StoreError::Fatal`.
    fn load(&mut self, key: &str) -> Result<Option<ClaimRecord>, StoreError>;
    /// Writes `record`, replacing any record of the same key.
    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError>;
    /// Deletes the record of `key`; deleting a missing record is not an error.
    fn delete(&mut self, key: &str) -> Result<(), StoreError>;
    /// Every key that has a record.
    fn keys(&mut self) -> Result<Vec<String>, StoreError>;
    /// Stores the payload (a queued event's body and headers) of `key`, replacing any.
    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError>;
    /// The payload of `key`, if one is stored.
    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Deletes the payload of `key`; deleting a missing one is not an error.
    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError>;
}

/// A [`ClaimStore`] held in memory: for tests and for checking the rules on the host.
///
/// It forgets everything when dropped. Failures can be made to happen, to test how callers
/// handle store errors: on the next call of any kind ([`MemoryClaimStore::fail_next`]), on the
/// next write only ([`MemoryClaimStore::fail_next_write`]), or on every call until healed
/// ([`MemoryClaimStore::fail_every`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryClaimStore {
    records: BTreeMap<String, ClaimRecord>,
    payloads: BTreeMap<String, Vec<u8>>,
    fail_next: Option<StoreError>,
    calls_before_failure: usize,
    fail_next_write: Option<StoreError>,
    failing: Option<StoreError>,
}

impl MemoryClaimStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the next call of any operation fail with `error`.
    pub fn fail_next(&mut self, error: StoreError) {
        self.fail_later(0, error);
    }

    /// Lets `calls` calls of any operation succeed, then makes the one after fail with `error`.
    pub fn fail_later(&mut self, calls: usize, error: StoreError) {
        self.fail_next = Some(error);
        self.calls_before_failure = calls;
    }

    /// Makes the next write (a save or a delete, of a record or a payload) fail with `error`;
    /// reads before it succeed.
    pub fn fail_next_write(&mut self, error: StoreError) {
        self.fail_next_write = Some(error);
    }

    /// Makes every call fail with `error` until [`MemoryClaimStore::heal`].
    pub fn fail_every(&mut self, error: StoreError) {
        self.failing = Some(error);
    }

    /// Ends [`MemoryClaimStore::fail_every`].
    pub fn heal(&mut self) {
        self.failing = None;
    }

    /// True while a failure is waiting to happen, or every call fails.
    pub fn faulty(&self) -> bool {
        self.fail_next.is_some() || self.fail_next_write.is_some() || self.failing.is_some()
    }

    /// The record of `key` as stored, read without counting as a call (a failure made to
    /// happen stays for the next call): for tests that look at the store from outside.
    pub fn peek(&self, key: &str) -> Option<&ClaimRecord> {
        self.records.get(key)
    }

    /// The payload of `key` as stored, read without counting as a call.
    pub fn peek_payload(&self, key: &str) -> Option<&[u8]> {
        self.payloads.get(key).map(Vec::as_slice)
    }

    fn check(&mut self) -> Result<(), StoreError> {
        if let Some(error) = &self.failing {
            return Err(error.clone());
        }
        if self.fail_next.is_some() && self.calls_before_failure > 0 {
            self.calls_before_failure -= 1;
            return Ok(());
        }
        match self.fail_next.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn check_write(&mut self) -> Result<(), StoreError> {
        self.check()?;
        match self.fail_next_write.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

impl ClaimStore for MemoryClaimStore {
    fn load(&mut self, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        self.check()?;
        Ok(self.records.get(key).cloned())
    }

    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError> {
        self.check_write()?;
        self.records.insert(record.key.clone(), record.clone());
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.check_write()?;
        self.records.remove(key);
        Ok(())
    }

    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        self.check()?;
        Ok(self.records.keys().cloned().collect())
    }

    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError> {
        self.check_write()?;
        self.payloads.insert(key.to_owned(), payload.to_vec());
        Ok(())
    }

    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.check()?;
        Ok(self.payloads.get(key).cloned())
    }

    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError> {
        self.check_write()?;
        self.payloads.remove(key);
        Ok(())
    }
}
