//! The client of the failure index (one Durable Object per deployment), used by the admin API
//! and by the claim authority objects.

use wasm_bindgen::JsValue;
use worker::Env;

use crate::failure_index::{IndexReply, IndexRequest, INDEX_NAME, REPLY_TIMEOUT_MS};
use crate::worker::rpc;

/// The binding name of the failure index's namespace in `wrangler.toml`.
pub const BINDING: &str = "FAILURE_INDEX";

/// Sends `request` to the index and returns its reply; any failure on the way, or no reply
/// within [`REPLY_TIMEOUT_MS`], comes back as `StoreFailed` (the callers treat the index as
/// best effort: it never fails a delivery).
pub async fn send(env: &Env, request: &IndexRequest) -> IndexReply {
    let reply = crate::worker::forward::within(Box::pin(send_once(env, request)), REPLY_TIMEOUT_MS);
    match reply.await {
        Ok(Ok(reply)) => reply,
        Ok(Err(detail)) => IndexReply::StoreFailed { detail },
        Err(_) => IndexReply::not_in_time(),
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
