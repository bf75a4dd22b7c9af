//! How the gate of an origin is reached: a queued attempt's request through its `fetch`, an
//! admin call over RPC.

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::{web_sys, Env};

use crate::origin_gate::{GateRequest, OriginView};
use crate::worker::rpc;

/// The binding name of the gates' namespace in `wrangler.toml`.
pub const BINDING: &str = "ORIGIN_GATE";

#[wasm_bindgen]
extern "C" {
    /// A stub of one gate, reached with `fetch`.
    type GateStub;

    /// Sends one request; resolves to the gate's answer.
    #[wasm_bindgen(method, catch)]
    fn fetch(this: &GateStub, request: &web_sys::Request) -> Result<Promise, JsValue>;
}

/// The promise of the answer of `origin`'s gate to `request`; `None` when this deployment has
/// no gates (a binding left out: attempts then go straight to the origin).
pub fn forward(
    env: &Env,
    origin: &str,
    request: &web_sys::Request,
) -> Option<Result<Promise, JsValue>> {
    let namespace = env.durable_object(BINDING).ok()?;
    let stub = namespace
        .id_from_name(origin)
        .and_then(|id| id.get_stub())
        .map_err(|error| JsValue::from_str(&error.to_string()));
    Some(stub.and_then(|stub| {
        let stub: GateStub = stub.into_rpc::<JsValue>().unchecked_into();
        stub.fetch(request)
    }))
}

/// Sends `request` to its origin's gate; `Err` says what failed on the way.
pub async fn ask(env: &Env, request: &GateRequest) -> Result<OriginView, String> {
    let namespace = env
        .durable_object(BINDING)
        .map_err(|error| format!("no origin gates: {error}"))?;
    let json = serde_json::to_string(request).expect("a request always serialises");
    let answer = rpc::call(&namespace, request.origin(), &JsValue::from_str(&json))
        .await
        .map_err(|error| format!("the origin's gate failed: {error:?}"))?;
    let text = answer
        .as_string()
        .ok_or("the origin's gate answered no text")?;
    serde_json::from_str(&text).map_err(|_| format!("the origin's gate answered {text}"))
}
