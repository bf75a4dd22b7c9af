//! The test routes' rules (off unless `ENABLE_TEST_ROUTES=true`, and only for the admin bearer
//! token): `/_test/claims/{key}[/claim|/finalize|/release|/panic|/trap]` reach the claim
//! authority directly, for the end-to-end tests of its rules; `POST /_test/signature` computes
//! one signature both ways the worker can; `POST /_test/panic` panics in the worker and
//! `POST /_test/error` makes it fail with a runtime error. Pure: the
//! worker reads the request, asks here, and carries it out.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::admin;
use crate::answer::{HttpAnswer, StoreFailure};
use crate::claim::{ClaimPolicy, Fence, Nonce, Source};
use crate::claim_authority::{AuthorityReply, AuthorityRequest};
use crate::config::{self, Config, ConfigProblem};
use crate::origin::{Reason, UnknownReason};
use crate::providers::Provider;

pub mod door;

/// A test route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestRoute {
    /// `POST /_test/panic`: a Rust panic in the worker.
    Panic,
    /// `POST /_test/signature`: a signature computed by WebCrypto and by the `hmac` crate.
    Signature,
    /// `POST /_test/error`: a runtime error in the worker, which must reach the log line and
    /// never the answer.
    Error,
    /// A request to the claim authority of `key`.
    Claims {
        /// The key.
        key: String,
        /// What to ask.
        op: ClaimsOp,
    },
}

/// What a `/_test/claims/{key}` route asks of the key's claim authority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimsOp {
    /// `GET`: the record.
    Inspect,
    /// `POST …/claim`: a claim, as a webhook's.
    Claim,
    /// `POST …/finalize` with `{"fence"}`.
    Finalize,
    /// `POST …/release` with `{"fence", "reason"}`.
    Release,
    /// `POST …/forget` with `{"fence"}`: the fenced delete an operator's `DELETE` makes after
    /// its read, with a fence the test read earlier.
    Forget,
    /// `POST …/panic`: a Rust panic in the object.
    Panic,
    /// `POST …/trap`: a WebAssembly trap without a panic in the object.
    Trap,
}

impl ClaimsOp {
    /// True when the route reads a JSON body (a fence).
    pub fn takes_body(self) -> bool {
        matches!(
            self,
            ClaimsOp::Finalize | ClaimsOp::Release | ClaimsOp::Forget
        )
    }
}

/// The body of a finalize, release or forget route.
#[derive(Clone, Debug, Deserialize)]
pub struct SettleBody {
    /// The fence to settle with.
    pub fence: Fence,
    /// A release's reason, as a reason's text (`origin answered 500` when none); ignored by
    /// the other routes.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A request to a test route refused: its answer, its log word and what its log line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The answer.
    pub answer: HttpAnswer,
    /// The log's outcome word.
    pub code: &'static str,
    /// What the log line says.
    pub note: String,
}

/// Who may use the test routes: the refusal of a request, or `None` to serve it. A caller
/// without the admin token (`token`, the usable `ADMIN_TOKEN`, read even while other keys have
/// problems) gets the admin API's one 401 whatever the configuration ([`admin::gate`]), so it
/// learns neither whether the test routes are on nor whether the configuration is valid; a
/// caller with it is told either.
pub fn refusal(
    config: Result<&Config, &[ConfigProblem]>,
    token: Option<&str>,
    authorization: Option<&str>,
) -> Option<Refused> {
    let refused = |answer: HttpAnswer, code, note: &str| Refused {
        answer,
        code,
        note: note.to_owned(),
    };
    if let Err(locked) = admin::gate(token, authorization) {
        let answer = admin::AdminAnswer::unauthorized().http();
        return Some(refused(answer, "unauthorized", locked.log_detail()));
    }
    match config {
        Ok(config) if config.admin.test_routes => None,
        Ok(_) => {
            let answer = HttpAnswer::error(404, "not_found", "test routes are off");
            Some(refused(answer, "not_found", "test routes are off"))
        }
        Err(problems) => {
            let answer = HttpAnswer::error(500, "misconfigured", "see /healthz");
            Some(refused(
                answer,
                "misconfigured",
                &config::describe(problems),
            ))
        }
    }
}

/// The test route `method` `rest` (the path after `/_test/`) names, if any.
pub fn route(method: &str, rest: &str) -> Option<TestRoute> {
    match (method, rest) {
        ("POST", "panic") => return Some(TestRoute::Panic),
        ("POST", "signature") => return Some(TestRoute::Signature),
        ("POST", "error") => return Some(TestRoute::Error),
        _ => {}
    }
    let (key, op) = rest
        .strip_prefix("claims/")
        .map(|rest| rest.split_once('/').unwrap_or((rest, "")))
        .filter(|(key, _)| !key.is_empty())?;
    let op = match (method, op) {
        ("GET", "") => ClaimsOp::Inspect,
        ("POST", "claim") => ClaimsOp::Claim,
        ("POST", "finalize") => ClaimsOp::Finalize,
        ("POST", "release") => ClaimsOp::Release,
        ("POST", "forget") => ClaimsOp::Forget,
        ("POST", "panic") => ClaimsOp::Panic,
        ("POST", "trap") => ClaimsOp::Trap,
        _ => return None,
    };
    Some(TestRoute::Claims {
        key: key.to_owned(),
        op,
    })
}

/// The request `op` sends to the claim authority of `key` (`body`: its settle body, `nonce`: a
/// claim's request id); a release whose reason is not one this service writes is refused.
pub fn request(
    key: &str,
    op: ClaimsOp,
    body: Option<SettleBody>,
    policy: ClaimPolicy,
    nonce: Nonce,
) -> Result<AuthorityRequest, String> {
    let key = key.to_owned();
    Ok(match (op, body) {
        (ClaimsOp::Inspect, _) => AuthorityRequest::Inspect { key },
        (ClaimsOp::Claim, _) => AuthorityRequest::Claim {
            key,
            policy,
            nonce,
            source: Source::Webhook(Provider::Stripe),
        },
        (ClaimsOp::Panic | ClaimsOp::Trap, _) => AuthorityRequest::Trap {
            key,
            panic: op == ClaimsOp::Panic,
        },
        (ClaimsOp::Finalize, Some(body)) => AuthorityRequest::Finalize {
            key,
            fence: body.fence,
            policy,
            response: None,
        },
        (ClaimsOp::Release, Some(body)) => AuthorityRequest::Release {
            key,
            fence: body.fence,
            reason: match body.reason {
                Some(text) => text
                    .parse()
                    .map_err(|error: UnknownReason| error.to_string())?,
                None => Reason::Answered(500),
            },
            policy,
            only_after_lease: false,
        },
        (ClaimsOp::Forget, Some(body)) => AuthorityRequest::Forget {
            key,
            fence: body.fence,
        },
        (ClaimsOp::Finalize | ClaimsOp::Release | ClaimsOp::Forget, None) => {
            return Err("a JSON body with a fence is required".into())
        }
    })
}

/// A signature test vector (`POST /_test/signature`): a secret, a timestamp and a body.
#[derive(Deserialize)]
pub struct SignatureVector {
    /// The signing secret.
    pub secret: String,
    /// The signed Unix timestamp.
    pub timestamp: i64,
    /// The body, base64.
    pub body_base64: String,
}

impl SignatureVector {
    /// The vector in a request body, its body decoded; `Err` for anything else (its text for
    /// the log line, never the answer).
    pub fn read(json: &str) -> Result<(SignatureVector, Vec<u8>), String> {
        use base64::Engine;
        let vector: SignatureVector =
            serde_json::from_str(json).map_err(|error| error.to_string())?;
        let body = base64::engine::general_purpose::STANDARD
            .decode(vector.body_base64.as_bytes())
            .map_err(|error| error.to_string())?;
        Ok((vector, body))
    }

    /// The answer: the `v1` MAC computed by the runtime's WebCrypto (`native`, what deliveries
    /// use) beside the `hmac` crate's (what the host tests and queue mode's re-signing use),
    /// for the end-to-end tests to compare with each other and with the `stripe` package.
    pub fn answer(&self, body: &[u8], native: Option<[u8; 32]>) -> HttpAnswer {
        let secret = crate::secret::Secret::new(self.secret.clone());
        let rust = crate::providers::stripe::signature::sign(&secret, self.timestamp, body);
        let both = json!({ "webcrypto": native.map(hex::encode), "rust": hex::encode(rust) });
        HttpAnswer::json(200, &both)
    }
}

/// The reply as the test routes show it (200, or 503 / 500 for a store failure): a rule's
/// outcome as `{"outcome": name, ...fields}`, a record as the admin API shows it (with its
/// fence, which the tests settle with), rather than the nested form the worker and the object
/// exchange.
pub fn view(reply: &AuthorityReply) -> HttpAnswer {
    let status = match reply {
        AuthorityReply::StoreFailed { .. } => match StoreFailure::of(reply) {
            StoreFailure::Unavailable => 503,
            StoreFailure::Failed => 500,
        },
        _ => 200,
    };
    HttpAnswer::json(status, &view_body(reply))
}

fn view_body(reply: &AuthorityReply) -> Value {
    if let AuthorityReply::Record { record } = reply {
        let view = record.as_deref().map(|record| {
            let mut view = admin::record_view(record);
            view["fence"] = json!(record.fence());
            view
        });
        return json!({ "record": view });
    }
    let inner = match serde_json::to_value(reply) {
        Ok(Value::Object(outer)) if outer.len() == 1 => outer.into_iter().next().map(|(_, v)| v),
        Ok(other) => Some(other),
        Err(_) => None,
    }
    .unwrap_or(Value::Null);
    let is_outcome = matches!(
        reply,
        AuthorityReply::Claim(_)
            | AuthorityReply::Finalize(_)
            | AuthorityReply::Release(_)
            | AuthorityReply::Forget(_)
            | AuthorityReply::Enqueue(_)
            | AuthorityReply::Redeliver(_)
    );
    match inner {
        Value::String(name) if is_outcome => json!({ "outcome": name }),
        Value::Object(named) if is_outcome && named.len() == 1 => {
            let (name, fields) = named.into_iter().next().expect("one entry");
            let mut fields = match fields {
                Value::Object(fields) => fields,
                _ => serde_json::Map::new(),
            };
            fields.insert("outcome".into(), Value::String(name));
            Value::Object(fields)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{ClaimOutcome, ReleaseOutcome};

    const POLICY: ClaimPolicy = ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 10_000,
    };

    /// A signature vector is read with its body decoded; JSON that is not a vector, and a body
    /// that is not base64, are refused with their reason (a 400 in the worker).
    #[test]
    fn a_signature_vector_is_read_or_refused_with_its_reason() {
        let json = r#"{"secret":"whsec_a","timestamp":5,"body_base64":"e30="}"#;
        let (vector, body) = SignatureVector::read(json).unwrap();
        assert_eq!(body, b"{}");
        let answer = vector.answer(&body, None);
        let shown: Value = serde_json::from_slice(answer.body.as_deref().unwrap()).unwrap();
        let rust = crate::providers::stripe::signature::sign(
            &crate::secret::Secret::new("whsec_a".to_owned()),
            5,
            b"{}",
        );
        assert_eq!(shown["rust"], hex::encode(rust));
        assert_eq!(shown["webcrypto"], Value::Null);
        assert!(SignatureVector::read(r#"{"secret":"s"}"#).is_err());
        let not_base64 = r#"{"secret":"s","timestamp":5,"body_base64":"%%"}"#;
        let refused = SignatureVector::read(not_base64).err().expect("not base64");
        assert!(refused.contains("Invalid"), "{refused}");
    }

    #[test]
    fn without_the_token_every_configuration_answers_alike() {
        let token = "a-long-admin-token-0123456789";
        let bearer = format!("Bearer {token}");
        let on = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("http://127.0.0.1:9/hook".into()),
            "ADMIN_TOKEN" => Some(token.into()),
            "ENABLE_TEST_ROUTES" => Some("true".into()),
            _ => None,
        })
        .unwrap();
        let mut off = on.clone();
        off.admin.test_routes = false;
        let problems = [ConfigProblem {
            key: "LEASE_SECONDS",
            problem: "x".into(),
        }];
        let unauthorized = admin::AdminAnswer::unauthorized().http();
        for (config, token) in [
            (Ok(&on), Some(token)),
            (Ok(&off), Some(token)),
            (Ok(&off), None),
            (Err(&problems[..]), Some(token)),
            (Err(&problems[..]), None),
        ] {
            for authorization in [None, Some("Bearer wrong-token-wrong")] {
                let refused = refusal(config, token, authorization).expect("refused");
                assert_eq!(refused.answer, unauthorized);
            }
        }
        assert_eq!(refusal(Ok(&on), Some(token), Some(&bearer)), None);
        let status = |config| refusal(config, Some(token), Some(&bearer)).map(|r| r.answer.status);
        assert_eq!(status(Ok(&off)), Some(404));
        assert_eq!(status(Err(&problems[..])), Some(500));
    }

    #[test]
    fn routes_are_read_from_the_method_and_the_path() {
        assert_eq!(route("POST", "panic"), Some(TestRoute::Panic));
        assert_eq!(route("GET", "panic"), None);
        assert_eq!(
            route("POST", "claims/evt_1/release"),
            Some(TestRoute::Claims {
                key: "evt_1".into(),
                op: ClaimsOp::Release
            })
        );
        assert_eq!(
            route("GET", "claims/evt_1"),
            Some(TestRoute::Claims {
                key: "evt_1".into(),
                op: ClaimsOp::Inspect
            })
        );
        assert_eq!(
            route("POST", "claims/evt_1/forget"),
            Some(TestRoute::Claims {
                key: "evt_1".into(),
                op: ClaimsOp::Forget
            })
        );
        assert_eq!(route("POST", "claims/"), None);
        assert_eq!(route("DELETE", "claims/evt_1"), None);
    }

    #[test]
    fn a_release_needs_a_reason_this_service_writes() {
        let body = |reason: Option<&str>| SettleBody {
            fence: Fence::new(1, [1; 16]),
            reason: reason.map(str::to_owned),
        };
        let nonce = Nonce([2; 16]);
        assert!(matches!(
            request("evt_1", ClaimsOp::Release, Some(body(None)), POLICY, nonce),
            Ok(AuthorityRequest::Release {
                reason: Reason::Answered(500),
                ..
            })
        ));
        assert!(request(
            "evt_1",
            ClaimsOp::Release,
            Some(body(Some("late"))),
            POLICY,
            nonce
        )
        .is_err());
        assert!(request("evt_1", ClaimsOp::Finalize, None, POLICY, nonce).is_err());
        assert!(request("evt_1", ClaimsOp::Forget, None, POLICY, nonce).is_err());
        assert_eq!(
            request("evt_1", ClaimsOp::Forget, Some(body(None)), POLICY, nonce),
            Ok(AuthorityRequest::Forget {
                key: "evt_1".into(),
                fence: Fence::new(1, [1; 16]),
            })
        );
    }

    #[test]
    fn replies_are_shown_flat() {
        let claimed = view(&AuthorityReply::Claim(ClaimOutcome::DuplicateInflight {
            lease_expires_at: 5,
            retry_at: 4,
        }));
        let body: Value = serde_json::from_slice(claimed.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            body,
            json!({ "outcome": "duplicate_inflight", "lease_expires_at": 5, "retry_at": 4 })
        );
        let released = view(&AuthorityReply::Release(ReleaseOutcome::AlreadyDone));
        let body: Value = serde_json::from_slice(released.body.as_deref().unwrap()).unwrap();
        assert_eq!(body, json!({ "outcome": "already_done" }));
        let failed = view(&AuthorityReply::StoreFailed {
            retryable: true,
            detail: "busy".into(),
        });
        assert_eq!(failed.status, 503);
    }
}
