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
use crate::worker::failure_index::client as index_client;
use crate::worker::forward::Exchange;
use crate::worker::log;
use crate::worker::object::ObjectRuntime;

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
        let sent = match &request {
            Some(request) => {
                let body = JsValue::from(Uint8Array::from(request.body.as_slice()));
                Exchange::start("POST", &request.url, &request.headers, Some(&body))
            }
            None => Err(OriginOutcome::NotSent),
        };
        drive::run(executor, attempt, sent, None).await;
    }
}
