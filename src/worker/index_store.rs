//! The failure index's store over its object's synchronous key-value API.

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use worker::Storage;

use super::kv_store::{js_error, sync_kv, SyncKv, Usage};
use crate::claim::StoreError;
use crate::failures::{IndexStore, Scan};

/// An [`IndexStore`] in the index object's storage: every call synchronous, so a rule's reads
/// and writes are one atomic step of the object.
pub struct KvIndexStore {
    kv: SyncKv,
    /// Rows read and written so far, as Cloudflare bills them.
    pub usage: Usage,
}

impl KvIndexStore {
    /// The store of the object whose storage is `storage`.
    pub fn open(storage: &Storage) -> Result<Self, StoreError> {
        Ok(KvIndexStore {
            kv: sync_kv(storage)?,
            usage: Usage::default(),
        })
    }
}

fn text(value: JsValue) -> Result<String, StoreError> {
    value
        .as_string()
        .ok_or_else(|| StoreError::Fatal("the failure index holds a value that is not text".into()))
}

impl IndexStore for KvIndexStore {
    fn get(&mut self, key: &str) -> Result<Option<String>, StoreError> {
        let value = self.kv.get(key).map_err(js_error)?;
        self.usage.rows_read += 1;
        if value.is_undefined() {
            return Ok(None);
        }
        text(value).map(Some)
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.usage.rows_written += 1;
        self.kv.put(key, value).map_err(js_error)
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.usage.rows_written += 1;
        self.kv.delete(key).map(|_| ()).map_err(js_error)
    }

    fn scan(&mut self, scan: &Scan) -> Result<Vec<(String, String)>, StoreError> {
        let options = Object::new();
        let set = |name: &str, value: JsValue| Reflect::set(&options, &name.into(), &value);
        set("prefix", scan.prefix.into()).map_err(js_error)?;
        if let Some(start) = &scan.start {
            set("start", start.into()).map_err(js_error)?;
        }
        if let Some(end) = &scan.end {
            set("end", end.into()).map_err(js_error)?;
        }
        set("reverse", scan.reverse.into()).map_err(js_error)?;
        set("limit", (scan.limit as f64).into()).map_err(js_error)?;
        let mut found = Vec::new();
        for pair in self.kv.list_with(&options).map_err(js_error)? {
            let pair: Array = pair.map_err(js_error)?.unchecked_into();
            self.usage.rows_read += 1;
            found.push((text(pair.get(0))?, text(pair.get(1))?));
        }
        Ok(found)
    }
}
