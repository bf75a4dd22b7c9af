//! The claim authority object's own I/O (see [`crate::claim_authority::object::ObjectIo`]): deleting its
//! storage, the metrics, the failure index, and a queued attempt's forward.

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;

use super::drive;
use crate::claim_authority::object::{self, ObjectIo};
use crate::claim_authority::Attempt;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;
use crate::origin_gate::{origin_name, EVENT_HEADER};
use crate::worker::failure_index::client as index_client;
use crate::worker::forward::{self, Exchange};
use crate::worker::log;
use crate::worker::object::ObjectRuntime;
use crate::worker::origin_gate::client as gate_client;

/// The executor of a claim authority object in the runtime.
pub type RuntimeExecutor = object::Executor<ObjectRuntime>;

impl ObjectIo for ObjectRuntime {
    async fn delete_all(&self) -> Result<(), String> {
        let deleted = self.storage.delete_all().await;
        deleted.map_err(|error| error.to_string())
    }

    fn record(&self, line: &LogLine) {
        log::record(&self.env, line);
    }

    async fn ask_index(&self, request: &IndexRequest) -> IndexReply {
        index_client::send(&self.env, request).await
    }

    async fn forward(
        executor: &RuntimeExecutor,
        attempt: Attempt,
        request: Option<object::Outgoing>,
    ) {
        let (sent, gated) = match &request {
            Some(request) => send(&executor.io().env, attempt.key(), request),
            None => (Err(OriginOutcome::NotSent), false),
        };
        drive::run(executor, attempt, sent, None, gated).await;
    }
}

/// Sends `request`, an attempt of event `key`, through the gate of its origin (true beside
/// it); straight to the origin when this deployment has no gates (false).
fn send(
    env: &worker::Env,
    key: &str,
    request: &object::Outgoing,
) -> (Result<Exchange, OriginOutcome>, bool) {
    let body = JsValue::from(Uint8Array::from(request.body.as_slice()));
    let direct = || Exchange::start("POST", &request.url, &request.headers, Some(&body));
    let Ok(url) = url::Url::parse(&request.url) else {
        return (direct(), false);
    };
    let mut headers = request.headers.clone();
    headers.push((EVENT_HEADER.to_owned(), key.to_owned()));
    let outgoing = match forward::request("POST", &request.url, &headers, Some(&body), None) {
        Ok(outgoing) => outgoing,
        Err(not_sent) => return (Err(not_sent), false),
    };
    match gate_client::forward(env, &origin_name(&url), &outgoing) {
        Some(Ok(answer)) => (Exchange::pending(answer), true),
        // Thrown before anything was sent.
        Some(Err(_)) => (Err(OriginOutcome::NotSent), true),
        None => (direct(), false),
    }
}
