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
/// It forgets everything when dropped. `fail_next` makes the next call fail, to test how
/// callers handle store errors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryClaimStore {
    records: BTreeMap<String, ClaimRecord>,
    payloads: BTreeMap<String, Vec<u8>>,
    fail_next: Option<StoreError>,
    calls_before_failure: usize,
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

    /// The record of `key` as stored, read without counting as a call (a failure made to
    /// happen stays for the next call): for tests that look at the store from outside.
    pub fn peek(&self, key: &str) -> Option<&ClaimRecord> {
        self.records.get(key)
    }

    fn check(&mut self) -> Result<(), StoreError> {
        if self.fail_next.is_some() && self.calls_before_failure > 0 {
            self.calls_before_failure -= 1;
            return Ok(());
        }
        match self.fail_next.take() {
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
        self.check()?;
        self.records.insert(record.key.clone(), record.clone());
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.check()?;
        self.records.remove(key);
        Ok(())
    }

    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        self.check()?;
        Ok(self.records.keys().cloned().collect())
    }

    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError> {
        self.check()?;
        self.payloads.insert(key.to_owned(), payload.to_vec());
        Ok(())
    }

    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.check()?;
        Ok(self.payloads.get(key).cloned())
    }

    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError> {
        self.check()?;
        self.payloads.remove(key);
        Ok(())
    }
}
