//! The worker's typed client of the claim authority (one Durable Object per key).

use js_sys::Uint8Array;
use worker::web_sys::ReadableStream;
use worker::{Env, ObjectNamespace};

use super::authority_wire;
use super::kv_store::{js_flag, js_text};
use super::rpc;
use crate::authority::{after_stub_failure, AuthorityReply, AuthorityRequest, StubFailure};
use crate::claim::StoreError;

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
            match rpc::call(&self.namespace, request.key(), &frame).await {
                Ok(answer) => match authority_wire::read_reply(answer) {
                    Ok(read) => return read,
                    Err(detail) => return (StoreError::Fatal(detail).into(), None),
                },
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
                            return (StoreError::Retryable(detail).into(), None);
                        }
                    }
                }
            }
        }
    }
}
