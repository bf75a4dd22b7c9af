//! The failure index object: one per deployment (see [`crate::failures`]). Its RPC `call` and
//! its alarm are [`object::call`] and [`object::run_alarm`]; this carries out their I/O.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use worker::{Env, State};

use super::clock;
use super::env_config;
use super::forward::{self, Exchange, Outgoing};
use super::kv_store::{self, SyncKv};
use super::log;
use crate::claim::{random_fraction, KvStore, Millis, StoreError, Usage};
use crate::config::Config;
use crate::failures::alert;
use crate::failures::object::{self, IndexIo, SendLine};
use crate::failures::INDEX_NAME;
use crate::log_line::{LogLine, Route};
use crate::origin::OriginOutcome;

/// The Rust core of the `FailureIndex` class of `src/entry.mjs`.
#[wasm_bindgen(js_name = FailureIndexCore)]
pub struct FailureIndex {
    state: State,
    env: Env,
}

#[wasm_bindgen(js_class = FailureIndexCore, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl FailureIndex {
    /// The index for `state` (its storage) and `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(state: worker::worker_sys::DurableObjectState, env: Env) -> FailureIndex {
        FailureIndex {
            state: State::from(state),
            env,
        }
    }

    /// One request's JSON (an [`crate::failures::IndexRequest`]), answered with the reply's
    /// JSON.
    pub async fn call(&self, request: String) -> String {
        object::call(self, &request).await
    }

    /// Expires entries and sends due notifications, then sets itself for the next.
    pub async fn alarm(&self) {
        object::run_alarm(self, random_fraction).await;
    }
}

impl IndexIo for FailureIndex {
    type Table = SyncKv;

    fn now_ms(&self) -> Millis {
        clock::now_ms()
    }

    fn config(&self) -> Option<Rc<Config>> {
        env_config::config(&self.env).ok()
    }

    fn open(&self) -> Result<KvStore<SyncKv>, StoreError> {
        kv_store::open(&self.state.storage())
    }

    async fn alarm_at(&self) -> Option<Millis> {
        let set = self.state.storage().get_alarm().await.ok().flatten();
        set.map(|at| at as Millis)
    }

    async fn set_alarm(&self, at: Millis) {
        if let Err(error) = kv_store::set_alarm(&self.state.storage(), at).await {
            log::write(&LogLine::alarm_not_set(&error));
        }
    }

    /// No 2xx within [`alert::SEND_TIMEOUT_MS`] is a failure (see [`alert::send_outcome`]).
    async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<(), String> {
        let body = JsValue::from_str(body);
        let sent = Exchange::start(&Outgoing {
            url,
            method: "POST",
            headers,
            body: Some(&body),
        });
        let answer = forward::answer_within(sent, alert::SEND_TIMEOUT_MS).await;
        let outcome = answer.map_or_else(
            |outcome| outcome,
            |response| {
                forward::discard_body(&response);
                OriginOutcome::Answered {
                    status: response.status(),
                }
            },
        );
        alert::send_outcome(&outcome)
    }

    fn usage(&self, op: &'static str, usage: Usage) {
        let line = LogLine::usage(INDEX_NAME, op, usage.rows_read, usage.rows_written);
        log::write(&LogLine {
            route: Route::Index,
            ..line
        });
    }

    fn sent(&self, line: &SendLine) {
        let failed = line
            .failed
            .as_ref()
            .map(|(why, gave_up)| (why.as_str(), *gave_up));
        log::write(&LogLine::notification(&line.id, line.kind, failed));
    }
}
