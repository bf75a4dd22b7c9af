//! The worker's typed client of the claim authority (one Durable Object per key).

use worker::{Env, Headers, Method, ObjectNamespace, Request, RequestInit};

use super::kv_store::js_flag;
use crate::authority::{after_stub_failure, AuthorityReply, AuthorityRequest, StubFailure};

/// The binding name of the claim authority's namespace in `wrangler.toml`.
pub const BINDING: &str = "CLAIM_AUTHORITY";

/// Sends [`AuthorityRequest`]s to the object named by their key and reads the replies.
///
/// Failures never escape as errors: they come back as `AuthorityReply::StoreFailed`. A stub
/// error flagged `retryable` is sent once more (a claim carries its nonce, so a repeat is the
/// same claim); one flagged `overloaded` is not, and is reported as retryable so the sender
/// backs off.
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

    /// Sends `request` to the object named `key` and returns its reply.
    pub async fn send(&self, key: &str, request: &AuthorityRequest) -> AuthorityReply {
        let body = match serde_json::to_string(request) {
            Ok(body) => body,
            Err(error) => return failed(false, format!("request not serialisable: {error}")),
        };
        let mut tries = 0;
        loop {
            tries += 1;
            match self.send_once(key, &body).await {
                Ok(reply) => return reply,
                Err(error) => {
                    let value = error.to_js_value();
                    match after_stub_failure(
                        js_flag(&value, "retryable"),
                        js_flag(&value, "overloaded"),
                        tries,
                    ) {
                        StubFailure::SendAgain => continue,
                        StubFailure::GiveUp { retryable } => {
                            return failed(
                                retryable,
                                format!("claim authority unreachable: {error}"),
                            )
                        }
                    }
                }
            }
        }
    }

    async fn send_once(&self, key: &str, body: &str) -> worker::Result<AuthorityReply> {
        let stub = self.namespace.id_from_name(key)?.get_stub()?;
        let headers = Headers::new();
        headers.set("content-type", "application/json")?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(body.into()));
        let request = Request::new_with_init("https://claim-authority/", &init)?;
        let mut response = stub.fetch_with_request(request).await?;
        if response.status_code() != 200 {
            let text = response.text().await.unwrap_or_default();
            return Ok(failed(
                false,
                format!(
                    "claim authority answered {}: {text}",
                    response.status_code()
                ),
            ));
        }
        let text = response.text().await?;
        Ok(serde_json::from_str(&text).unwrap_or_else(|error| {
            failed(false, format!("claim authority reply unreadable: {error}"))
        }))
    }
}

fn failed(retryable: bool, detail: String) -> AuthorityReply {
    AuthorityReply::StoreFailed { retryable, detail }
}
