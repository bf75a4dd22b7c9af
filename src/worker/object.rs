//! What the runtime does for both of this service's Durable Objects (see
//! [`crate::object::Host`]): the clock, the configuration, the table, the alarm and the log.

use std::rc::Rc;

use worker::{Env, Storage};

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
        kv_store::open(&self.storage)
    }

    async fn set_alarm(&self, at: Millis) -> Result<(), String> {
        kv_store::set_alarm(&self.storage, at).await
    }

    fn write(&self, line: &LogLine) {
        log::write(line);
    }
}
