//! The claim store over the Durable Object's synchronous key-value API (`ctx.storage.kv`,
//! SQLite-backed objects only).
//!
//! Why key-value rather than a SQL table: with one object per key, a table would be created in
//! every new object, and creating it writes rows that are billed like any other. A value in
//! the built-in key-value table costs exactly one row written per put or delete.

use js_sys::{Array, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::Storage;

use crate::claim::{decode_record, encode_record, ClaimRecord, ClaimStore, StoreError};

#[wasm_bindgen]
extern "C" {
    /// `ctx.storage.kv`: synchronous get, put, delete and list.
    pub type SyncKv;

    #[wasm_bindgen(method, catch)]
    pub fn get(this: &SyncKv, key: &str) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch)]
    pub fn put(this: &SyncKv, key: &str, value: &str) -> Result<(), JsValue>;

    #[wasm_bindgen(method, catch, js_name = put)]
    fn put_bytes(this: &SyncKv, key: &str, value: &Uint8Array) -> Result<(), JsValue>;

    #[wasm_bindgen(method, catch)]
    pub fn delete(this: &SyncKv, key: &str) -> Result<bool, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn list(this: &SyncKv) -> Result<js_sys::Iterator, JsValue>;

    /// `list` with its options (`prefix`, `start`, `end`, `reverse`, `limit`).
    #[wasm_bindgen(method, catch, js_name = list)]
    pub fn list_with(this: &SyncKv, options: &JsValue) -> Result<js_sys::Iterator, JsValue>;
}

/// The synchronous key-value API of the object whose storage is `storage`.
pub fn sync_kv(storage: &Storage) -> Result<SyncKv, StoreError> {
    let kv = Reflect::get(storage.as_raw(), &JsValue::from_str("kv")).map_err(js_error)?;
    if kv.is_undefined() {
        return Err(StoreError::Fatal(
            "ctx.storage.kv is missing: the class must be SQLite-backed (new_sqlite_classes)"
                .into(),
        ));
    }
    Ok(kv.unchecked_into())
}

/// The storage key of a key's payload (a queued event). It starts with a control character,
/// which no record key has (they are printable), so [`ClaimStore::keys`] can skip it.
fn payload_key(key: &str) -> String {
    format!("\u{1}payload:{key}")
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

/// A [`ClaimStore`] in one Durable Object: one key-value entry per claim key, the record as
/// versioned JSON text. Every call is synchronous, so a rule's load and save are one atomic
/// step of the object.
pub struct KvClaimStore {
    kv: SyncKv,
    usage: Usage,
}

impl KvClaimStore {
    /// The store of the object whose storage is `storage`.
    pub fn open(storage: &Storage) -> Result<Self, StoreError> {
        Ok(KvClaimStore {
            kv: sync_kv(storage)?,
            usage: Usage::default(),
        })
    }

    /// Rows read and written by this store so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }
}

/// Classifies a storage exception: flagged `retryable` or `overloaded` → retryable, else fatal.
pub fn js_error(error: JsValue) -> StoreError {
    let text = error
        .as_string()
        .or_else(|| {
            Reflect::get(&error, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| "storage error".into());
    if js_flag(&error, "retryable") || js_flag(&error, "overloaded") {
        StoreError::Retryable(text)
    } else {
        StoreError::Fatal(text)
    }
}

/// True when the JS value has property `name` set to `true`.
pub fn js_flag(value: &JsValue, name: &str) -> bool {
    Reflect::get(value, &JsValue::from_str(name))
        .map(|flag| flag.as_bool() == Some(true))
        .unwrap_or(false)
}

impl ClaimStore for KvClaimStore {
    fn load(&mut self, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        let value = self.kv.get(key).map_err(js_error)?;
        self.usage.rows_read += 1;
        if value.is_undefined() {
            return Ok(None);
        }
        let text = value.as_string().ok_or_else(|| {
            StoreError::Fatal(format!("stored claim record under {key:?} is not text"))
        })?;
        decode_record(&text).map(Some)
    }

    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError> {
        self.kv
            .put(&record.key, &encode_record(record))
            .map_err(js_error)?;
        self.usage.rows_written += 1;
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.kv.delete(key).map_err(js_error)?;
        self.usage.rows_written += 1;
        Ok(())
    }

    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        let mut keys = Vec::new();
        for entry in self.kv.list().map_err(js_error)? {
            let entry: Array = entry.map_err(js_error)?.unchecked_into();
            self.usage.rows_read += 1;
            if let Some(key) = entry.get(0).as_string().filter(|k| !k.starts_with('\u{1}')) {
                keys.push(key);
            }
        }
        Ok(keys)
    }

    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError> {
        self.kv
            .put_bytes(&payload_key(key), &Uint8Array::from(payload))
            .map_err(js_error)?;
        self.usage.rows_written += 1;
        Ok(())
    }

    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let value = self.kv.get(&payload_key(key)).map_err(js_error)?;
        self.usage.rows_read += 1;
        if value.is_undefined() {
            return Ok(None);
        }
        let bytes: Uint8Array = value.dyn_into().map_err(|_| {
            StoreError::Fatal(format!("the stored payload of {key:?} is not bytes"))
        })?;
        Ok(Some(bytes.to_vec()))
    }

    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError> {
        self.kv.delete(&payload_key(key)).map_err(js_error)?;
        self.usage.rows_written += 1;
        Ok(())
    }
}
