//! The sorted key-value store the failure index and its outbox live in.

use crate::claim::{get_text, KvTable, KvValue, MemoryTable, Scan, StoreError};

/// The sorted key-value store under the index: any [`KvTable`] (the index object's own, or
/// a [`MemoryTable`] in tests and the model checker), its values text.
pub trait IndexStore {
    /// The value of `key`.
    fn get(&mut self, key: &str) -> Result<Option<String>, StoreError>;
    /// Sets `key` to `value`.
    fn put(&mut self, key: &str, value: &str) -> Result<(), StoreError>;
    /// Deletes `key` (absent is fine).
    fn delete(&mut self, key: &str) -> Result<(), StoreError>;
    /// The keys and values `scan` covers, in its order.
    fn scan(&mut self, scan: &Scan) -> Result<Vec<(String, String)>, StoreError>;
}

/// The index in memory, for tests and the model checker.
pub type MemoryIndexStore = MemoryTable;

impl<T: KvTable> IndexStore for T {
    fn get(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        get_text(self, key, &|| {
            format!("the failure index's value of {key:?}")
        })
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        KvTable::put(self, key, &KvValue::Text(value.to_owned()))
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        KvTable::delete(self, key)
    }

    fn scan(&mut self, scan: &Scan) -> Result<Vec<(String, String)>, StoreError> {
        let found = self.list(scan)?;
        let text = |(key, value): (String, KvValue)| match value {
            KvValue::Text(text) => Ok((key, text)),
            KvValue::Bytes(_) => Err(unreadable("value (bytes, not text)")),
        };
        found.into_iter().map(text).collect()
    }
}

/// The store error for a value of the index that does not read as what it should be.
pub(super) fn unreadable(what: &str) -> StoreError {
    StoreError::Fatal(format!("the failure index holds an unreadable {what}"))
}
