//! What the runtime does for both of this service's Durable Objects (see
//! [`crate::object::Host`]): the clock, the configuration, the table, the alarm and the log.

use std::rc::Rc;

use js_sys::Reflect;
use wasm_bindgen::{JsCast, JsValue};
use worker::{Env, ScheduledTime, Storage};

use super::kv_store::{self, SyncKv};
use super::{clock, env_config, log};
use crate::claim::{KvStore, Millis, StoreError};
use crate::config::Config;
use crate::log_line::LogLine;
use crate::object::Host;

/// A Durable Object's storage and the worker's bindings.
pub struct ObjectRuntime {
    /// The object's storage.
    pub storage: Storage,
    /// The worker's bindings.
    pub env: Env,
}

impl Host for ObjectRuntime {
    type Table = SyncKv;

    fn now_ms(&self) -> Millis {
        clock::now_ms()
    }

    fn config(&self) -> Option<Rc<Config>> {
        env_config::config(&self.env).ok()
    }

    fn open(&self) -> Result<KvStore<SyncKv>, StoreError> {
        let kv = Reflect::get(self.storage.as_raw(), &"kv".into()).map_err(kv_store::js_error)?;
        if kv.is_undefined() {
            let why =
                "ctx.storage.kv is missing: the class must be SQLite-backed (new_sqlite_classes)";
            return Err(StoreError::Fatal(why.into()));
        }
        Ok(KvStore::new(kv.unchecked_into()))
    }

    /// At `at`, an absolute time (an `i64` would be read as an offset).
    async fn set_alarm(&self, at: Millis) -> Result<(), String> {
        let date = js_sys::Date::new(&JsValue::from_f64(at as f64));
        let set = self.storage.set_alarm(ScheduledTime::new(date)).await;
        set.map_err(|error| error.to_string())
    }

    fn write(&self, line: &LogLine) {
        log::write(line);
    }
}
