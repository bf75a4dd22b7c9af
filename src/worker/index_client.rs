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

/// Sends `request` to the index and returns its reply; any failure on the way comes back as
/// `StoreFailed` (the callers treat the index as best effort: it never fails a delivery).
pub async fn send(env: &Env, request: &IndexRequest) -> IndexReply {
    send_once(env, request)
        .await
        .unwrap_or_else(|detail| IndexReply::StoreFailed { detail })
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
