//! The worker's typed client of the claim authority (one Durable Object per key).

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;
use worker::web_sys::ReadableStream;
use worker::{Env, ObjectNamespace};

use super::wire;
use crate::claim::StoreError;
use crate::claim_authority::{send_to_object, AuthorityReply, AuthorityRequest, StubError};
use crate::worker::kv_store::{js_flag, js_text};
use crate::worker::rpc;

/// The binding name of the claim authority's namespace in `wrangler.toml`.
pub const BINDING: &str = "CLAIM_AUTHORITY";

/// Sends [`AuthorityRequest`]s to the object named by their key and reads the replies. A
/// failure comes back as `AuthorityReply::StoreFailed`, never as an error; [`send_to_object`]
/// says when a request is sent again.
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
        let (namespace, key) = (&self.namespace, request.key());
        let frame = &wire::encode_request(request, body);
        let sent =
            send_to_object(
                || async move { rpc::call(namespace, key, frame).await.map_err(stub_error) },
            );
        match sent.await.map(wire::read_reply) {
            Ok(Ok(read)) => read,
            Ok(Err(detail)) => (StoreError::Fatal(detail).into(), None),
            Err(failed) => (failed.into(), None),
        }
    }
}

/// An exception on the way to the object, with the runtime's flags.
fn stub_error(error: JsValue) -> StubError {
    StubError {
        text: js_text(&error),
        retryable: js_flag(&error, "retryable"),
        overloaded: js_flag(&error, "overloaded"),
    }
}
