//! The worker's typed client of the claim authority (one Durable Object per key).

use js_sys::futures::JsFuture;
use js_sys::{Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::web_sys::ReadableStream;
use worker::{Env, ObjectNamespace};

use super::authority_wire;
use super::kv_store::{js_flag, js_text};
use crate::authority::{after_stub_failure, AuthorityReply, AuthorityRequest, StubFailure};

#[wasm_bindgen]
extern "C" {
    /// A stub of one claim authority object, called over RPC.
    type ClaimStub;

    /// Sends one request frame; resolves to the object's reply.
    #[wasm_bindgen(method, catch)]
    fn call(this: &ClaimStub, frame: &Uint8Array) -> Result<Promise, JsValue>;
}

/// The binding name of the claim authority's namespace in `wrangler.toml`.
pub const BINDING: &str = "CLAIM_AUTHORITY";

/// Sends [`AuthorityRequest`]s to the object named by their key and reads the replies.
///
/// Failures never escape as errors: they come back as `AuthorityReply::StoreFailed`. A stub
/// error flagged `retryable` is sent once more (a claim or delivery carries its nonce, so a
/// repeat is recognised as the same request); one flagged `overloaded` is not. Either way, and
/// for any other exception on the way to the object, the failure is reported as retryable so
/// the sender backs off and comes back.
pub struct AuthorityClient {
    namespace: ObjectNamespace,
}

impl AuthorityClient {
    /// The client over the `CLAIM_AUTHORITY` binding.
    pub fn new(env: &Env) -> worker::Result<Self> {
        Ok(AuthorityClient {
            namespace: env.durable_object(BINDING)?,
        })
    }

    /// Sends `request` to the object named by its key and returns its reply.
    pub async fn send(&self, request: &AuthorityRequest) -> AuthorityReply {
        self.send_with_body(request, None).await.0
    }

    /// Sends `request` with `body` (a delivery's raw bytes) beside it, and returns the reply and,
    /// when the origin's answer streams back with it, that body.
    pub async fn send_with_body(
        &self,
        request: &AuthorityRequest,
        body: Option<&Uint8Array>,
    ) -> (AuthorityReply, Option<ReadableStream>) {
        let frame = authority_wire::encode_request(request, body);
        let mut sends = 0;
        loop {
            sends += 1;
            match self.send_once(request.key(), &frame).await {
                Ok(Ok(read)) => return read,
                Ok(Err(detail)) => return (failed(false, detail), None),
                Err(error) => {
                    match after_stub_failure(
                        js_flag(&error, "retryable"),
                        js_flag(&error, "overloaded"),
                        sends,
                    ) {
                        StubFailure::SendAgain => continue,
                        StubFailure::GiveUp => {
                            let detail =
                                format!("claim authority unreachable: {}", js_text(&error));
                            return (failed(true, detail), None);
                        }
                    }
                }
            }
        }
    }

    /// One send: `Err` is the stub's exception (to decide on a retry), `Ok(Err)` an answer that
    /// is not a reply.
    #[allow(clippy::type_complexity)]
    async fn send_once(
        &self,
        key: &str,
        frame: &Uint8Array,
    ) -> Result<Result<(AuthorityReply, Option<ReadableStream>), String>, wasm_bindgen::JsValue>
    {
        let stub = self
            .namespace
            .id_from_name(key)
            .and_then(|id| id.get_stub())
            .map_err(|error| wasm_bindgen::JsValue::from_str(&error.to_string()))?;
        let stub: ClaimStub = stub.into_rpc::<JsValue>().unchecked_into();
        let answer = JsFuture::from(stub.call(frame)?).await?;
        Ok(authority_wire::read_reply(answer))
    }
}

fn failed(retryable: bool, detail: String) -> AuthorityReply {
    AuthorityReply::StoreFailed { retryable, detail }
}
