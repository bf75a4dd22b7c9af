//! The Stripe webhook front door's decisions, as a table from what happened to what Stripe is
//! told. Pure: the worker adapter gathers the facts (verification, the claim authority's
//! reply, the origin's answer) and asks here what to answer and how to settle the claim.
//!
//! Stripe treats any 2xx as delivered and retries everything else, so: a finished duplicate is
//! 200; work that did not happen (in flight elsewhere, origin failed, store failed) is non-2xx
//! so Stripe delivers again; a refusal of a bad request is 4xx and writes nothing.

use serde_json::{json, Value};

use crate::authority::{settle_word, AuthorityReply, Won};
use crate::claim::{ClaimOutcome, Millis};
use crate::config::{self, ConfigProblem};
use crate::origin::OriginResult;
use crate::stripe::envelope::EnvelopeError;
use crate::stripe::signature::SignatureError;

/// Seconds a sender is asked to wait after a retryable store failure.
pub const STORE_RETRY_AFTER_SECONDS: u64 = 10;

/// The answer to send: status, JSON body, optional `Retry-After`, and the log word.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
    /// `Retry-After` in seconds, when the sender should come back later.
    pub retry_after: Option<u64>,
    /// A stable word for the log line.
    pub outcome: &'static str,
}

impl Answer {
    fn error(status: u16, code: &'static str, detail: impl Into<String>) -> Answer {
        Answer {
            status,
            body: json!({ "error": code, "detail": detail.into() }),
            retry_after: None,
            outcome: code,
        }
    }
}

/// A delivery refused before anything was stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The worker's configuration is incomplete or invalid (500; names the keys only).
    Misconfigured(Vec<ConfigProblem>),
    /// The body is larger than `MAX_BODY_BYTES` (413).
    BodyTooLarge {
        /// The configured cap.
        limit: u64,
    },
    /// The body could not be read to its end (400).
    UnreadableBody,
    /// The signature check failed (400).
    Signature(SignatureError),
    /// The verified body is not a usable Stripe event (400).
    Envelope(EnvelopeError),
}

/// The answer to a refused delivery.
pub fn refusal_answer(refusal: &Refusal) -> Answer {
    match refusal {
        Refusal::Misconfigured(problems) => Answer::error(
            500,
            "misconfigured",
            format!(
                "the endpoint is not configured: {}; see /healthz",
                config::keys(problems)
            ),
        ),
        Refusal::BodyTooLarge { limit } => Answer::error(
            413,
            "body_too_large",
            format!("the body is larger than {limit} bytes"),
        ),
        Refusal::UnreadableBody => Answer::error(
            400,
            "unreadable_body",
            "the body could not be read to its end",
        ),
        Refusal::Signature(error) => Answer::error(400, error.code(), error.to_string()),
        Refusal::Envelope(error) => Answer::error(400, error.code(), error.to_string()),
    }
}

/// Whole seconds from `now` until `until`, at least 1: a `Retry-After` value.
pub fn retry_after_seconds(until: Millis, now: Millis) -> u64 {
    until.saturating_sub(now).div_ceil(1_000).max(1)
}

/// Decides from the claim reply: a won claim is forwarded (`Ok`); otherwise the answer is
/// duplicate (200), in flight (409), or a store failure (503 + Retry-After when retryable, 500
/// when not).
pub fn after_claim(reply: AuthorityReply, now: Millis) -> Result<Won, Answer> {
    if let Some(won) = reply.won() {
        return Ok(won);
    }
    match reply {
        AuthorityReply::Claim(ClaimOutcome::DuplicateProcessed { .. }) => Err(Answer {
            status: 200,
            body: json!({ "status": "duplicate" }),
            retry_after: None,
            outcome: "duplicate",
        }),
        AuthorityReply::Claim(ClaimOutcome::DuplicateInflight { lease_expires_at }) => {
            Err(Answer {
                retry_after: Some(retry_after_seconds(lease_expires_at, now)),
                ..Answer::error(
                    409,
                    "in_flight",
                    "another delivery of this event is being processed; retry later",
                )
            })
        }
        other => Err(store_failure_answer(&other)),
    }
}

/// The answer to a store failure, or to a reply that does not fit the request (500).
pub fn store_failure_answer(reply: &AuthorityReply) -> Answer {
    match reply {
        AuthorityReply::StoreFailed {
            retryable: true, ..
        } => Answer {
            retry_after: Some(STORE_RETRY_AFTER_SECONDS),
            ..Answer::error(
                503,
                "store_unavailable",
                "the claim store is busy or unavailable; retry later",
            )
        },
        AuthorityReply::StoreFailed { .. } => {
            Answer::error(500, "store_failed", "the claim store failed")
        }
        _ => Answer::error(
            500,
            "store_failed",
            "the claim store gave an unexpected reply",
        ),
    }
}

/// The answer after the origin's result and the settle reply (finalize or release), and a
/// word for the log: `finalized`, `released`, `fence_conflict`, `settle_failed`.
///
/// An origin success is always answered 200, even when the finalize was refused (the lease ran
/// out and another attempt took over) or failed: the work was done, and a retry would run it
/// again. An origin failure is 502 (504 on time-out) whatever the release said, so Stripe
/// delivers again.
pub fn after_settle(
    origin: &OriginResult,
    event_id: &str,
    settle: &AuthorityReply,
) -> (Answer, &'static str) {
    let settled = settle_word(settle);
    let answer = match origin {
        OriginResult::Responded { status } if origin.succeeded() => Answer {
            status: 200,
            body: json!({ "status": "processed", "event_id": event_id, "origin_status": status }),
            retry_after: None,
            outcome: "processed",
        },
        OriginResult::Responded { status } => Answer {
            body: json!({
                "error": "origin_failed",
                "detail": format!("the origin answered {status}; the event will be processed again on retry"),
                "origin_status": status,
            }),
            ..Answer::error(502, "origin_failed", "")
        },
        OriginResult::TimedOut => Answer::error(
            504,
            "origin_timeout",
            "the origin did not answer in time; the event will be processed again on retry",
        ),
        OriginResult::Unreachable(_) => Answer::error(
            502,
            "origin_unreachable",
            "the origin could not be reached; the event will be processed again on retry",
        ),
    };
    (answer, settled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{Fence, FinalizeOutcome, ReleaseOutcome};

    #[test]
    fn claim_outcomes_map_to_answers() {
        let fence = Fence::new(1, [0; 16]);
        assert_eq!(
            after_claim(
                AuthorityReply::Claim(ClaimOutcome::Claimed {
                    fence: fence.clone(),
                    attempt: 1,
                    takeover: false,
                    lease_expires_at: 5
                }),
                0
            ),
            Ok(Won {
                fence,
                attempt: 1,
                takeover: false
            })
        );
        let status = |reply| match after_claim(reply, 1_000) {
            Err(a) => (a.status, a.retry_after, a.outcome),
            Ok(_) => panic!("forwarded"),
        };
        assert_eq!(
            status(AuthorityReply::Claim(ClaimOutcome::DuplicateProcessed {
                finished_at: 1,
                response: None
            })),
            (200, None, "duplicate")
        );
        assert_eq!(
            status(AuthorityReply::Claim(ClaimOutcome::DuplicateInflight {
                lease_expires_at: 61_001
            })),
            (409, Some(61), "in_flight")
        );
        assert_eq!(
            status(AuthorityReply::StoreFailed {
                retryable: true,
                detail: String::new()
            }),
            (503, Some(10), "store_unavailable")
        );
        assert_eq!(
            status(AuthorityReply::StoreFailed {
                retryable: false,
                detail: String::new()
            }),
            (500, None, "store_failed")
        );
    }

    #[test]
    fn retry_after_rounds_up_and_is_at_least_one_second() {
        assert_eq!(retry_after_seconds(1_000, 1_000), 1);
        assert_eq!(retry_after_seconds(500, 1_000), 1);
        assert_eq!(retry_after_seconds(2_001, 1_000), 2);
        assert_eq!(retry_after_seconds(901_000, 1_000), 900);
    }

    #[test]
    fn origin_results_map_to_answers_and_settles() {
        let finalized = AuthorityReply::Finalize(FinalizeOutcome::Finalized {
            finished_at: 1,
            already: false,
        });
        let refused = AuthorityReply::Finalize(FinalizeOutcome::NotOwner);
        let released = AuthorityReply::Release(ReleaseOutcome::Released { already: false });
        let ok = OriginResult::Responded { status: 204 };
        assert!(ok.succeeded());
        assert_eq!(after_settle(&ok, "evt_1", &finalized).0.status, 200);
        assert_eq!(after_settle(&ok, "evt_1", &finalized).1, "finalized");
        let (answer, word) = after_settle(&ok, "evt_1", &refused);
        assert_eq!((answer.status, word), (200, "fence_conflict"));
        let failed = OriginResult::Responded { status: 500 };
        assert!(!failed.succeeded());
        assert_eq!(failed.release_reason(), "origin answered 500");
        let (answer, word) = after_settle(&failed, "evt_1", &released);
        assert_eq!(
            (answer.status, answer.outcome, word),
            (502, "origin_failed", "released")
        );
        assert_eq!(answer.body["origin_status"], 500);
        assert!(!OriginResult::Responded { status: 302 }.succeeded());
        assert_eq!(
            after_settle(&OriginResult::TimedOut, "evt_1", &released)
                .0
                .status,
            504
        );
        assert_eq!(
            after_settle(
                &OriginResult::Unreachable("refused".into()),
                "evt_1",
                &released
            )
            .0
            .status,
            502
        );
        let store_down = AuthorityReply::StoreFailed {
            retryable: true,
            detail: String::new(),
        };
        let (answer, word) = after_settle(&ok, "evt_1", &store_down);
        assert_eq!((answer.status, word), (200, "settle_failed"));
    }

    #[test]
    fn refusals_name_keys_never_values() {
        let answer = refusal_answer(&Refusal::Misconfigured(vec![ConfigProblem {
            key: "ORIGIN_URL",
            problem: "missing".into(),
        }]));
        assert_eq!(answer.status, 500);
        assert!(answer.body["detail"]
            .as_str()
            .unwrap()
            .contains("ORIGIN_URL"));
        assert_eq!(
            refusal_answer(&Refusal::BodyTooLarge { limit: 10 }).status,
            413
        );
        let answer = refusal_answer(&Refusal::Signature(SignatureError::Mismatch));
        assert_eq!((answer.status, answer.outcome), (400, "signature_mismatch"));
        assert_eq!(answer.body["error"], "signature_mismatch");
        let answer = refusal_answer(&Refusal::Envelope(EnvelopeError::InvalidEventId));
        assert_eq!((answer.status, answer.outcome), (400, "invalid_event_id"));
    }
}
