//! The client of the failure index (one Durable Object per deployment), used by the admin API
//! and by the claim authority objects.

use js_sys::futures::JsFuture;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::Env;

use crate::failures::{IndexReply, IndexRequest, INDEX_NAME};

#[wasm_bindgen]
extern "C" {
    /// A stub of the index object, called over RPC.
    type IndexStub;

    /// Sends one request's JSON; resolves to the reply's JSON.
    #[wasm_bindgen(method, catch)]
    fn call(this: &IndexStub, request: &str) -> Result<Promise, JsValue>;
}

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
    let no_index = |error: worker::Error| format!("no failure index: {error}");
    let namespace = env.durable_object(BINDING).map_err(no_index)?;
    let stub = namespace
        .id_from_name(INDEX_NAME)
        .and_then(|id| id.get_stub())
        .map_err(no_index)?;
    let stub: IndexStub = stub.into_rpc::<JsValue>().unchecked_into();
    let json = serde_json::to_string(request).expect("a request always serialises");
    let promise = stub.call(&json).map_err(|error| format!("{error:?}"))?;
    let answer = JsFuture::from(promise)
        .await
        .map_err(|error| format!("the failure index failed: {error:?}"))?;
    let text = answer
        .as_string()
        .ok_or("the failure index answered no text")?;
    serde_json::from_str(&text).map_err(|error| format!("an unreadable index reply: {error}"))
}
