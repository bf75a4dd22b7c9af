//! The claim authority object's I/O (see [`crate::keeper::ObjectIo`]): its storage and alarm,
//! the log, the failure index, and a queued attempt's forward.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;
use worker::{Env, Storage};

use super::clock;
use super::drive;
use super::env_config;
use super::forward::{Exchange, Outgoing};
use super::index_client;
use super::kv_store::{self, SyncKv};
use super::log;
use crate::authority::Attempt;
use crate::claim::{KvStore, Millis, StoreError};
use crate::config::Config;
use crate::failures::{IndexReply, IndexRequest};
use crate::keeper::{self, ObjectIo};
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;

/// The keeper of a claim authority object in the runtime.
pub type Keeper = keeper::Keeper<ObjectRuntime>;

/// A claim authority object's storage and bindings.
pub struct ObjectRuntime {
    /// The object's storage.
    pub storage: Storage,
    /// The worker's bindings.
    pub env: Env,
}

impl ObjectIo for ObjectRuntime {
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

    async fn delete_all(&self) -> Result<(), String> {
        let deleted = self.storage.delete_all().await;
        deleted.map_err(|error| error.to_string())
    }

    fn write(&self, line: &LogLine) {
        log::write(line);
    }

    fn record(&self, line: &LogLine) {
        log::record(&self.env, line);
    }

    async fn ask_index(&self, request: &IndexRequest) -> IndexReply {
        index_client::send(&self.env, request).await
    }

    async fn forward(keeper: &Keeper, attempt: Attempt, request: Option<keeper::Outgoing>) {
        let sent = match &request {
            Some(request) => {
                let body = JsValue::from(Uint8Array::from(request.body.as_slice()));
                Exchange::start(&Outgoing {
                    url: &request.url,
                    method: "POST",
                    headers: &request.headers,
                    body: Some(&body),
                })
            }
            None => Err(OriginOutcome::NotSent),
        };
        drive::run(keeper, attempt, sent, None).await;
    }
}
