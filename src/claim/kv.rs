//! A Durable Object's key-value table as the stores see it, and the claim store over it.
//!
//! The runtime's table (`ctx.storage.kv`, SQLite-backed objects only) is synchronous, so one
//! rule's reads and writes are one atomic step of the object. The worker implements
//! [`KvTable`] over it and nothing else: the record format, the payload's place, and the rows
//! billed are all decided here, where host tests reach them.
//!
//! Why key-value rather than a SQL table: with one object per key, a table would be created in
//! every new object, and creating it writes rows that are billed like any other. A value in the
//! built-in key-value table costs exactly one row written per put or delete.

use super::codec::{decode_record, encode_record};
use super::error::StoreError;
use super::record::ClaimRecord;
use super::store::ClaimStore;

/// A value in the table: text (a record, an index entry) or bytes (a queued event).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvValue {
    /// Text, stored as a string.
    Text(String),
    /// Bytes, stored as a `Uint8Array`.
    Bytes(Vec<u8>),
}

/// A range of keys to read. Serialised, it is the options object of the runtime's `list`
/// (a bound left out is absent, never `null`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Scan {
    /// Only keys with this prefix.
    pub prefix: &'static str,
    /// From this key on (included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// Up to this key (excluded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// Newest (greatest) first.
    pub reverse: bool,
    /// At most this many; `None` for every key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// An object's synchronous key-value table: the four calls the runtime offers.
pub trait KvTable {
    /// The value of `key`, if there is one.
    fn get(&mut self, key: &str) -> Result<Option<KvValue>, StoreError>;
    /// Sets `key` to `value`.
    fn put(&mut self, key: &str, value: &KvValue) -> Result<(), StoreError>;
    /// Deletes `key` (absent is fine).
    fn delete(&mut self, key: &str) -> Result<(), StoreError>;
    /// The keys and values `scan` covers, in its order.
    fn list(&mut self, scan: &Scan) -> Result<Vec<(String, KvValue)>, StoreError>;
}

/// Rows read and written, counted as Cloudflare bills the key-value API on SQLite: one row
/// read per key read (or listed), one row written per key put or deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Rows read.
    pub rows_read: u64,
    /// Rows written.
    pub rows_written: u64,
}

/// A [`KvTable`] that counts the rows each call reads and writes. Over the object's own table it
/// is the [`ClaimStore`] of a claim authority object and the failure index's store.
pub struct KvStore<T> {
    table: T,
    /// Rows read and written so far.
    pub usage: Usage,
}

impl<T: KvTable> KvStore<T> {
    /// The store over `table`, nothing counted yet.
    pub fn new(table: T) -> Self {
        KvStore {
            table,
            usage: Usage::default(),
        }
    }
}

impl<T: KvTable> KvTable for KvStore<T> {
    fn get(&mut self, key: &str) -> Result<Option<KvValue>, StoreError> {
        let value = self.table.get(key)?;
        self.usage.rows_read += 1;
        Ok(value)
    }

    fn put(&mut self, key: &str, value: &KvValue) -> Result<(), StoreError> {
        self.table.put(key, value)?;
        self.usage.rows_written += 1;
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.table.delete(key)?;
        self.usage.rows_written += 1;
        Ok(())
    }

    fn list(&mut self, scan: &Scan) -> Result<Vec<(String, KvValue)>, StoreError> {
        let found = self.table.list(scan)?;
        self.usage.rows_read += found.len() as u64;
        Ok(found)
    }
}

/// The text stored under `key` in `table`; bytes there are `Fatal`, named by `what`.
pub fn get_text<T: KvTable + ?Sized>(
    table: &mut T,
    key: &str,
    what: &dyn Fn() -> String,
) -> Result<Option<String>, StoreError> {
    match table.get(key)? {
        None => Ok(None),
        Some(KvValue::Text(text)) => Ok(Some(text)),
        Some(KvValue::Bytes(_)) => Err(StoreError::Fatal(format!("{} is not text", what()))),
    }
}

/// The key of a key's payload (a queued event). It starts with a control character, which no
/// record key has (they are printable), so it sorts first and [`ClaimStore::keys`] never reads it.
fn payload_key(key: &str) -> String {
    format!("\u{1}payload:{key}")
}

/// One entry per claim key, the record as versioned JSON text; the payload beside it as bytes.
impl<T: KvTable> ClaimStore for KvStore<T> {
    fn load(&mut self, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        let what = || format!("the stored claim record under {key:?}");
        match get_text(self, key, &what)? {
            Some(text) => decode_record(&text).map(Some),
            None => Ok(None),
        }
    }

    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError> {
        KvTable::put(self, &record.key, &KvValue::Text(encode_record(record)))
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        KvTable::delete(self, key)
    }

    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        // From the first printable key on: the payloads (under a control character) sort
        // before every record and are not read.
        let records = Scan {
            prefix: "",
            start: Some(" ".into()),
            end: None,
            reverse: false,
            limit: None,
        };
        let found = KvTable::list(self, &records)?;
        Ok(found.into_iter().map(|(key, _)| key).collect())
    }

    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError> {
        KvTable::put(self, &payload_key(key), &KvValue::Bytes(payload.to_vec()))
    }

    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match KvTable::get(self, &payload_key(key))? {
            None => Ok(None),
            Some(KvValue::Bytes(bytes)) => Ok(Some(bytes)),
            Some(KvValue::Text(_)) => Err(StoreError::Fatal(format!(
                "the stored payload of {key:?} is not bytes"
            ))),
        }
    }

    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError> {
        KvTable::delete(self, &payload_key(key))
    }
}

/// A [`KvTable`] in memory, sorted as the runtime's is: for host tests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryTable {
    /// Everything stored.
    pub map: std::collections::BTreeMap<String, KvValue>,
}

impl KvTable for MemoryTable {
    fn get(&mut self, key: &str) -> Result<Option<KvValue>, StoreError> {
        Ok(self.map.get(key).cloned())
    }

    fn put(&mut self, key: &str, value: &KvValue) -> Result<(), StoreError> {
        self.map.insert(key.to_owned(), value.clone());
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.map.remove(key);
        Ok(())
    }

    fn list(&mut self, scan: &Scan) -> Result<Vec<(String, KvValue)>, StoreError> {
        let within = |key: &&String| {
            key.starts_with(scan.prefix)
                && scan.start.as_ref().is_none_or(|start| *key >= start)
                && scan.end.as_ref().is_none_or(|end| *key < end)
        };
        let keys = self.map.keys().filter(within);
        let keys: Vec<&String> = match scan.reverse {
            true => keys.rev().collect(),
            false => keys.collect(),
        };
        let limit = scan.limit.unwrap_or(usize::MAX);
        let pair = |key: &&String| ((*key).clone(), self.map[*key].clone());
        Ok(keys.iter().take(limit).map(pair).collect())
    }
}

#[cfg(test)]
mod scan_tests {
    use super::Scan;

    /// A bound left out is absent, not `null`, and the fields have the names of the runtime's
    /// `list` options. (The worker turns the same serialisation into a plain object with
    /// `serde-wasm-bindgen`'s default serializer.)
    #[test]
    fn a_scan_serialises_without_its_absent_bounds() {
        let open = Scan {
            prefix: "f:",
            start: None,
            end: None,
            reverse: true,
            limit: None,
        };
        let json = serde_json::to_string(&open).unwrap();
        assert_eq!(json, r#"{"prefix":"f:","reverse":true}"#);
        let bounded = Scan {
            start: Some("f:1".into()),
            end: Some("f:9".into()),
            limit: Some(50),
            ..open
        };
        let json = serde_json::to_string(&bounded).unwrap();
        let expected = r#"{"prefix":"f:","start":"f:1","end":"f:9","reverse":true,"limit":50}"#;
        assert_eq!(json, expected);
    }
}
