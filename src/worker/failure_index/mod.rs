//! The failure index object: one per deployment (see [`crate::failure_index`]). Its RPC `call` and
//! its alarm are [`object::call`] and [`object::run_alarm`]; this carries out their I/O.

pub mod client;

use wasm_bindgen::prelude::*;
use worker::{Env, State};

use crate::claim::{random_fraction, Millis};
use crate::failure_index::alert;
use crate::failure_index::object::{self, IndexIo};
use crate::origin::OriginOutcome;
use crate::worker::forward::{self, Exchange};
use crate::worker::object::ObjectRuntime;

/// The Rust core of the `FailureIndex` class of `src/entry.mjs`.
#[wasm_bindgen(js_name = FailureIndexCore)]
pub struct FailureIndex {
    object: ObjectRuntime,
}

#[wasm_bindgen(js_class = FailureIndexCore, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl FailureIndex {
    /// The index for `state` (its storage) and `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(state: worker::worker_sys::DurableObjectState, env: Env) -> FailureIndex {
        let storage = State::from(state).storage();
        FailureIndex {
            object: ObjectRuntime { storage, env },
        }
    }

    /// One request's JSON (an [`crate::failure_index::IndexRequest`]), answered with the reply's
    /// JSON.
    pub async fn call(&self, request: String) -> String {
        object::call(&self.object, &request).await
    }

    /// Expires entries and sends due notifications, then sets itself for the next.
    pub async fn alarm(&self) {
        object::run_alarm(&self.object, random_fraction).await;
    }
}

impl IndexIo for ObjectRuntime {
    async fn alarm_at(&self) -> Option<Millis> {
        let set = self.storage.get_alarm().await.ok().flatten();
        set.map(|at| at as Millis)
    }

    /// No 2xx within [`alert::SEND_TIMEOUT_MS`] is a failure (see [`alert::send_outcome`]).
    async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<(), String> {
        let body = JsValue::from_str(body);
        let sent = Exchange::start("POST", url, headers, Some(&body));
        let outcome = match forward::answer_within(sent, alert::SEND_TIMEOUT_MS).await {
            Ok(response) => {
                // Its status is all a notification needs.
                if let Some(body) = response.body() {
                    let _ = body.cancel();
                }
                let status = response.status();
                OriginOutcome::Answered { status }
            }
            Err(outcome) => outcome,
        };
        alert::send_outcome(&outcome)
    }
}
