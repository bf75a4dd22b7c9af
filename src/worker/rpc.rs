//! Calling a Durable Object's RPC method `call`, shared by the clients of the claim authority
//! and of the failure index.

use js_sys::futures::JsFuture;
use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::ObjectNamespace;

#[wasm_bindgen]
extern "C" {
    /// A stub of one object, called over RPC.
    type Stub;

    /// Sends one request; resolves to the object's reply.
    #[wasm_bindgen(method, catch)]
    fn call(this: &Stub, request: &JsValue) -> Result<Promise, JsValue>;
}

/// Calls `call(request)` on the object named `name` in `namespace` and returns what it
/// resolved to; `Err` is the exception on the way (the stub's, or the object's).
pub async fn call(
    namespace: &ObjectNamespace,
    name: &str,
    request: &JsValue,
) -> Result<JsValue, JsValue> {
    let stub = namespace
        .id_from_name(name)
        .and_then(|id| id.get_stub())
        .map_err(|error| JsValue::from_str(&error.to_string()))?;
    let stub: Stub = stub.into_rpc::<JsValue>().unchecked_into();
    JsFuture::from(stub.call(request)?).await
}
