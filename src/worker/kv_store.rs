//! An object's synchronous key-value table (`ctx.storage.kv`, SQLite-backed objects only) as a
//! [`KvTable`]. The stores over the table are in [`crate::claim`] and [`crate::failure_index`].

use js_sys::{Array, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::claim::{KvTable, KvValue, Scan, StoreError};

#[wasm_bindgen]
extern "C" {
    /// `ctx.storage.kv`: synchronous get, put, delete and list.
    pub type SyncKv;

    #[wasm_bindgen(method, catch)]
    fn get(this: &SyncKv, key: &str) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn put(this: &SyncKv, key: &str, value: &JsValue) -> Result<(), JsValue>;

    #[wasm_bindgen(method, catch)]
    fn delete(this: &SyncKv, key: &str) -> Result<bool, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn list(this: &SyncKv, options: &JsValue) -> Result<js_sys::Iterator, JsValue>;
}

/// A storage exception as a store error (see [`StoreError::of_exception`]).
pub fn js_error(error: JsValue) -> StoreError {
    let flag = |name| js_flag(&error, name);
    StoreError::of_exception(js_text(&error), flag("retryable"), flag("overloaded"))
}

/// What a thrown JavaScript value says: its message, or its text.
pub fn js_text(error: &JsValue) -> String {
    error
        .as_string()
        .or_else(|| {
            Reflect::get(error, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| "an exception without a message".into())
}

/// True when the JS value has property `name` set to `true`.
pub fn js_flag(value: &JsValue, name: &str) -> bool {
    Reflect::get(value, &JsValue::from_str(name))
        .map(|flag| flag.as_bool() == Some(true))
        .unwrap_or(false)
}

/// A stored value as the stores read it: a string is text, anything else must be bytes.
fn value(stored: JsValue) -> Result<KvValue, StoreError> {
    if let Some(text) = stored.as_string() {
        return Ok(KvValue::Text(text));
    }
    let bytes: Uint8Array = stored
        .dyn_into()
        .map_err(|_| StoreError::Fatal("a stored value is neither text nor bytes".into()))?;
    Ok(KvValue::Bytes(bytes.to_vec()))
}

impl KvTable for SyncKv {
    fn get(&mut self, key: &str) -> Result<Option<KvValue>, StoreError> {
        let stored = SyncKv::get(self, key).map_err(js_error)?;
        (!stored.is_undefined()).then(|| value(stored)).transpose()
    }

    fn put(&mut self, key: &str, value: &KvValue) -> Result<(), StoreError> {
        let value = match value {
            KvValue::Text(text) => JsValue::from_str(text),
            KvValue::Bytes(bytes) => Uint8Array::from(bytes.as_slice()).into(),
        };
        SyncKv::put(self, key, &value).map_err(js_error)
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        SyncKv::delete(self, key).map(|_| ()).map_err(js_error)
    }

    fn list(&mut self, scan: &Scan) -> Result<Vec<(String, KvValue)>, StoreError> {
        let options = serde_wasm_bindgen::to_value(scan)
            .map_err(|error| StoreError::Fatal(format!("a scan's options: {error}")))?;
        let mut found = Vec::new();
        for pair in SyncKv::list(self, &options).map_err(js_error)? {
            let pair: Array = pair.map_err(js_error)?.unchecked_into();
            let key = pair.get(0).as_string().unwrap_or_default();
            found.push((key, value(pair.get(1))?));
        }
        Ok(found)
    }
}
