//! The claim authority object's own I/O (see [`crate::keeper::ObjectIo`]): deleting its
//! storage, the metrics, the failure index, and a queued attempt's forward.

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;

use super::forward::Exchange;
use super::object::ObjectRuntime;
use super::{drive, index_client, log};
use crate::authority::Attempt;
use crate::failures::{IndexReply, IndexRequest};
use crate::keeper::{self, ObjectIo};
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;

/// The keeper of a claim authority object in the runtime.
pub type Keeper = keeper::Keeper<ObjectRuntime>;

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

    async fn forward(keeper: &Keeper, attempt: Attempt, request: Option<keeper::Outgoing>) {
        let sent = match &request {
            Some(request) => {
                let body = JsValue::from(Uint8Array::from(request.body.as_slice()));
                Exchange::start("POST", &request.url, &request.headers, Some(&body))
            }
            None => Err(OriginOutcome::NotSent),
        };
        drive::run(keeper, attempt, sent, None).await;
    }
}
