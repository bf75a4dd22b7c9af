//! The client of the failure index (one Durable Object per deployment), used by the admin API
//! and by the claim authority objects.

use wasm_bindgen::JsValue;
use worker::Env;

use super::rpc;
use crate::failures::{IndexReply, IndexRequest, INDEX_NAME};

/// The binding name of the failure index's namespace in `wrangler.toml`.
pub const BINDING: &str = "FAILURE_INDEX";

/// How long a caller waits for the index's reply. An event's object waits no longer than
/// this in its alarm; a report that timed out is sent again later, and the index applies a
/// change once however often it arrives.
pub const TIMEOUT_MS: u64 = 5_000;

/// Sends `request` to the index and returns its reply; any failure on the way, or no reply
/// within [`TIMEOUT_MS`], comes back as `StoreFailed` (the callers treat the index as best
/// effort: it never fails a delivery).
pub async fn send(env: &Env, request: &IndexRequest) -> IndexReply {
    let reply = super::forward::within(Box::pin(send_once(env, request)), TIMEOUT_MS).await;
    match reply {
        Ok(Ok(reply)) => reply,
        Ok(Err(detail)) => IndexReply::StoreFailed { detail },
        Err(_) => IndexReply::StoreFailed {
            detail: format!("the failure index did not answer within {TIMEOUT_MS} ms"),
        },
    }
}

async fn send_once(env: &Env, request: &IndexRequest) -> Result<IndexReply, String> {
    let namespace = env
        .durable_object(BINDING)
        .map_err(|error| format!("no failure index: {error}"))?;
    let json = serde_json::to_string(request).expect("a request always serialises");
    let answer = rpc::call(&namespace, INDEX_NAME, &JsValue::from_str(&json))
        .await
        .map_err(|error| format!("the failure index failed: {error:?}"))?;
    let text = answer
        .as_string()
        .ok_or("the failure index answered no text")?;
    serde_json::from_str(&text).map_err(|error| format!("an unreadable index reply: {error}"))
}
