//! The webhook front doors' decisions (Stripe's and every other provider's), as a table
//! from what happened to what the sender is told. Pure: the worker adapter gathers the facts (verification, the claim authority's
//! reply, the origin's answer) and asks here what to answer and how to settle the claim.
//!
//! Senders treat any 2xx as delivered and (Stripe, Standard Webhooks, Shopify) retry
//! everything else, so: a finished duplicate is
//! 200; work that did not happen (in flight elsewhere, origin failed, store failed) is non-2xx
//! so Stripe delivers again; a refusal of a bad request is 4xx and writes nothing.

mod check;
pub mod door;
pub mod held;

pub use check::{forwarded_headers, identity_of, Checked, Unchecked};

use serde_json::{json, Value};

use crate::answer::{
    retry_after_seconds, BodyError, HttpAnswer, StoreFailure, STORE_RETRY_AFTER_SECONDS,
};
use crate::claim::{ClaimOutcome, EnqueueOutcome, Millis};
use crate::claim_authority::{AuthorityReply, Delivery, ForwardReport};
use crate::config::{self, ConfigProblem};
use crate::log_line::Outcome;
use crate::origin::{OriginOutcome, Verdict};
use crate::providers::stripe::envelope::EnvelopeError;
use crate::providers::stripe::signature::SignatureError;
use crate::providers::{Provider, SenderError};

/// The answer to send: status, JSON body, optional `Retry-After` and `Allow`, and the log's
/// outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
    /// `Retry-After` in seconds, when the sender should come back later.
    pub retry_after: Option<u64>,
    /// The methods the route accepts, for a 405.
    pub allow: Option<&'static str>,
    /// What happened, for the log line.
    pub outcome: Outcome,
    /// What the log line says of a refusal (see [`log_detail`]).
    pub note: Option<String>,
}

impl Answer {
    fn error(status: u16, code: &'static str, detail: impl Into<String>) -> Answer {
        Answer {
            status,
            body: json!({ "error": code, "detail": detail.into() }),
            retry_after: None,
            allow: None,
            outcome: Outcome::Refused(code),
            note: None,
        }
    }

    /// The answer as HTTP: its JSON, with `Retry-After` and `Allow` when set.
    pub fn http(&self) -> HttpAnswer {
        HttpAnswer::json(self.status, &self.body).with_hints(self.retry_after, self.allow)
    }

    /// The `detail` text of an error answer, for the log line.
    pub fn detail(&self) -> Option<String> {
        self.body["detail"].as_str().map(str::to_owned)
    }
}

/// A delivery refused before anything was stored.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Not a `POST` (405, `Allow: POST`).
    MethodNotAllowed,
    /// A provider whose secret is not set: its route is off. Answered exactly as a signature
    /// that matches no secret (400 `signature_mismatch`), since no signature can match one that
    /// is not set: a caller without the secret cannot tell an off sender from one that is on
    /// (its log line says which key would turn it on; `/healthz` tells the operator).
    NotEnabled(Provider),
    /// The worker's configuration is incomplete or invalid (500; names the keys only).
    Misconfigured(Vec<ConfigProblem>),
    /// The body is larger than `MAX_BODY_BYTES` (413).
    BodyTooLarge {
        /// The configured cap.
        limit: u64,
    },
    /// The body could not be read to its end (400).
    UnreadableBody,
    /// The whole body did not arrive within `BODY_READ_TIMEOUT_MS` (408).
    BodyTimeout {
        /// The configured deadline, in milliseconds.
        ms: u64,
    },
    /// The signature check failed (400).
    Signature(SignatureError),
    /// The verified body is not a usable Stripe event (400).
    Envelope(EnvelopeError),
    /// A header-identified sender's delivery failed its checks (400).
    Sender(SenderError),
    /// The same signed body was delivered more often than the replay limit allows, under a key
    /// its object does not know (429 + `Retry-After`); see
    /// [`crate::providers::replay_limit_key`].
    ReplayLimited,
}

impl From<BodyError> for Refusal {
    fn from(error: BodyError) -> Refusal {
        match error {
            BodyError::TooLarge { limit } => Refusal::BodyTooLarge { limit },
            BodyError::Unreadable => Refusal::UnreadableBody,
            BodyError::TimedOut { ms } => Refusal::BodyTimeout { ms },
        }
    }
}

/// What the log line says of a refusal: the answer's detail, or for a route that is off, the
/// key that would enable it.
pub fn log_detail(refusal: &Refusal, answer: &Answer) -> Option<String> {
    match refusal {
        Refusal::NotEnabled(provider) => Some(format!(
            "the {provider} route is off: {} is not set",
            config::secret_key(*provider)
        )),
        Refusal::Misconfigured(problems) => Some(config::describe(problems)),
        _ => answer.detail(),
    }
}

/// The answer to a refused delivery, with what its log line says.
pub fn refusal_answer(refusal: &Refusal) -> Answer {
    let answer = refusal_table(refusal);
    Answer {
        note: log_detail(refusal, &answer),
        ..answer
    }
}

fn refusal_table(refusal: &Refusal) -> Answer {
    match refusal {
        Refusal::MethodNotAllowed => Answer {
            allow: Some("POST"),
            ..Answer::error(405, "method_not_allowed", "this route accepts POST")
        },
        // As a signature that matches no secret: which senders are off is not told to the
        // caller (the log line says which key would enable it, see `log_detail`).
        Refusal::NotEnabled(_) => Answer {
            outcome: Outcome::SenderOff,
            ..refusal_table(&Refusal::Sender(SenderError::SignatureMismatch))
        },
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
        Refusal::BodyTimeout { ms } => Answer::error(
            408,
            "body_timeout",
            format!("the whole body did not arrive within {ms} ms"),
        ),
        Refusal::Signature(error) => Answer::error(400, error.code(), error.to_string()),
        Refusal::Envelope(error) => Answer::error(400, error.code(), error.to_string()),
        Refusal::Sender(refusal) => Answer::error(400, refusal.code(), refusal.to_string()),
        Refusal::ReplayLimited => Answer {
            retry_after: Some(crate::providers::REPLAY_LIMITED_RETRY_AFTER_SECONDS),
            ..Answer::error(
                429,
                "replay_limited",
                "this signed body was delivered more often than the replay limit allows; \
                 retry later",
            )
        },
    }
}

/// The answer to a delivery the claim authority ran, declined or stored (see
/// [`after_enqueue`]), at `now`:
///
/// - not forwarded: duplicate (200), in flight (409 + Retry-After to the end of the holder's
///   wait for its answer, else its lease), or a store failure (503 + Retry-After / 500);
/// - forwarded: 200 `processed` when the origin succeeded (also when the finalize was refused
///   or failed: the work was done, and a retry would run it again); otherwise non-2xx, so the
///   sender delivers again: 502 `origin_failed` (the origin answered non-2xx), 504
///   `origin_timeout` (no answer in time: the claim is held while a late answer is awaited),
///   502 `origin_unreachable` (no answer at all).
pub fn after_delivery(reply: &AuthorityReply, event_id: &str, now: Millis) -> Answer {
    match reply {
        AuthorityReply::Delivery(Delivery::Forwarded(report)) => forwarded(report, event_id, now),
        AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateProcessed {
            ..
        })) => ok(json!({ "status": "duplicate" }), Outcome::Duplicate),
        AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateInflight {
            retry_at,
            ..
        })) => in_flight(*retry_at, now),
        AuthorityReply::Enqueue(_) => after_enqueue(reply, event_id, now),
        AuthorityReply::NotKnown => refusal_answer(&Refusal::ReplayLimited),
        other => store_failure_answer(StoreFailure::of(other)),
    }
}

/// A 200 with `body`.
fn ok(body: Value, outcome: Outcome) -> Answer {
    Answer {
        status: 200,
        body,
        retry_after: None,
        allow: None,
        outcome,
        note: None,
    }
}

/// The answer to a delivery that was forwarded, at `now`: 200 `processed` when the origin
/// succeeded, else 502 / 504 saying what happens next; a 502 passes on the time the origin's
/// own `Retry-After` named.
fn forwarded(report: &ForwardReport, event_id: &str, now: Millis) -> Answer {
    let then = match report.verdict {
        Verdict::Failed(_) => "the event will be processed again on retry",
        Verdict::Pending => "its answer is still awaited; retry later",
        Verdict::Succeeded | Verdict::Unknown(_) => {
            "the outcome is unknown, so the claim is kept until its lease ends; retry later"
        }
    };
    match report.outcome {
        OriginOutcome::Answered { status } if report.verdict == Verdict::Succeeded => ok(
            json!({ "status": "processed", "event_id": event_id, "origin_status": status }),
            Outcome::Processed,
        ),
        OriginOutcome::Answered { status } => Answer {
            body: json!({
                "error": "origin_failed",
                "detail": format!("the origin answered {status}; {then}"),
                "origin_status": status,
            }),
            retry_after: report.not_before.map(|at| retry_after_seconds(at, now)),
            outcome: Outcome::OriginFailed,
            ..Answer::error(502, "origin_failed", "")
        },
        OriginOutcome::TimedOut => Answer {
            outcome: Outcome::OriginTimeout,
            ..Answer::error(
                504,
                "origin_timeout",
                format!("the origin did not answer in time; {then}"),
            )
        },
        OriginOutcome::Failed { .. } | OriginOutcome::NotSent => Answer {
            outcome: Outcome::OriginUnreachable,
            ..Answer::error(
                502,
                "origin_unreachable",
                format!("the origin could not be reached; {then}"),
            )
        },
    }
}

/// The answer to storing an event in queue mode at `now`: 200 `queued` once the write is
/// durable, 200 `duplicate` for an event already known (queued, in delivery, delivered or dead:
/// nothing stored), 409 `in_flight` + Retry-After while a forward made in sync mode holds it,
/// or a store failure (503 + Retry-After / 500), so the sender retries and an acknowledged
/// event is never lost.
pub fn after_enqueue(reply: &AuthorityReply, event_id: &str, now: Millis) -> Answer {
    match reply {
        AuthorityReply::Enqueue(EnqueueOutcome::Queued) => ok(
            json!({ "status": "queued", "event_id": event_id }),
            Outcome::Queued,
        ),
        AuthorityReply::Enqueue(EnqueueOutcome::Duplicate { .. }) => {
            ok(json!({ "status": "duplicate" }), Outcome::Duplicate)
        }
        AuthorityReply::Enqueue(EnqueueOutcome::InFlight { retry_at }) => in_flight(*retry_at, now),
        AuthorityReply::NotKnown => refusal_answer(&Refusal::ReplayLimited),
        other => store_failure_answer(StoreFailure::of(other)),
    }
}

/// 409 `in_flight`: another delivery holds the event; come back at `retry_at` (Retry-After).
fn in_flight(retry_at: Millis, now: Millis) -> Answer {
    Answer {
        retry_after: Some(retry_after_seconds(retry_at, now)),
        outcome: Outcome::InFlight,
        ..Answer::error(
            409,
            "in_flight",
            "another delivery of this event is being processed; retry later",
        )
    }
}

/// The answer to a store failure (503 + Retry-After when retryable, else 500).
pub fn store_failure_answer(failure: StoreFailure) -> Answer {
    match failure {
        StoreFailure::Unavailable => Answer {
            retry_after: Some(STORE_RETRY_AFTER_SECONDS),
            ..Answer::error(
                503,
                "store_unavailable",
                "the claim store is busy or unavailable; retry later",
            )
        },
        StoreFailure::Failed => Answer::error(500, "store_failed", "the claim store failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim_authority::{ForwardReport, SettleStep};
    use crate::origin::{NetworkError, Reason};

    fn forwarded(outcome: OriginOutcome, verdict: Verdict, settle: SettleStep) -> AuthorityReply {
        AuthorityReply::Delivery(Delivery::Forwarded(ForwardReport {
            attempt: 1,
            takeover: false,
            outcome,
            verdict,
            settle,
            origin_ms: 5,
            not_before: None,
            head: None,
        }))
    }

    fn summary(reply: AuthorityReply) -> (u16, Option<u64>, &'static str) {
        let answer = after_delivery(&reply, "evt_1", 1_000);
        (answer.status, answer.retry_after, answer.outcome.word())
    }

    #[test]
    fn declined_deliveries_map_to_answers() {
        let declined = |outcome| AuthorityReply::Delivery(Delivery::Declined(outcome));
        assert_eq!(
            summary(declined(ClaimOutcome::DuplicateProcessed {
                finished_at: 1,
                response: None
            })),
            (200, None, "duplicate")
        );
        assert_eq!(
            summary(declined(ClaimOutcome::DuplicateInflight {
                lease_expires_at: 901_000,
                retry_at: 61_001
            })),
            (409, Some(61), "in_flight"),
            "come back when the holder's wait for its answer ends, not at the lease end"
        );
        assert_eq!(
            summary(AuthorityReply::StoreFailed {
                retryable: true,
                detail: String::new()
            }),
            (503, Some(10), "store_unavailable")
        );
        assert_eq!(
            summary(AuthorityReply::StoreFailed {
                retryable: false,
                detail: String::new()
            }),
            (500, None, "store_failed")
        );
        assert_eq!(
            summary(declined(ClaimOutcome::FingerprintMismatch)),
            (500, None, "store_failed")
        );
    }

    #[test]
    fn forwarded_deliveries_map_to_answers() {
        let answer = after_delivery(
            &forwarded(
                OriginOutcome::Answered { status: 204 },
                Verdict::Succeeded,
                SettleStep::Finalized,
            ),
            "evt_1",
            0,
        );
        assert_eq!((answer.status, answer.outcome), (200, Outcome::Processed));
        assert_eq!(answer.body["origin_status"], 204);
        assert_eq!(
            summary(forwarded(
                OriginOutcome::Answered { status: 204 },
                Verdict::Succeeded,
                SettleStep::FenceConflict
            )),
            (200, None, "processed"),
            "the work was done even if the finalize was refused"
        );
        let failed = after_delivery(
            &forwarded(
                OriginOutcome::Answered { status: 500 },
                Verdict::Failed(Reason::Answered(500)),
                SettleStep::Released,
            ),
            "evt_1",
            0,
        );
        assert_eq!(
            (failed.status, failed.outcome),
            (502, Outcome::OriginFailed)
        );
        assert_eq!(failed.body["origin_status"], 500);
        assert!(failed.body["detail"]
            .as_str()
            .unwrap()
            .contains("again on retry"));
        assert_eq!(
            summary(forwarded(
                OriginOutcome::TimedOut,
                Verdict::Pending,
                SettleStep::Waiting
            )),
            (504, None, "origin_timeout")
        );
        let held = after_delivery(
            &forwarded(
                OriginOutcome::Failed {
                    error: NetworkError::ConnectionLost,
                },
                Verdict::Unknown(Reason::ResetAfterSend),
                SettleStep::Held,
            ),
            "evt_1",
            0,
        );
        assert_eq!(
            (held.status, held.outcome),
            (502, Outcome::OriginUnreachable)
        );
        assert!(held.body["detail"].as_str().unwrap().contains("lease"));
    }

    #[test]
    fn queued_events_are_acknowledged_once_stored() {
        let queued = after_enqueue(&AuthorityReply::Enqueue(EnqueueOutcome::Queued), "evt_1", 0);
        assert_eq!((queued.status, queued.outcome), (200, Outcome::Queued));
        assert_eq!(queued.body["status"], "queued");
        assert_eq!(queued.body["event_id"], "evt_1");
        let repeat = after_enqueue(
            &AuthorityReply::Enqueue(EnqueueOutcome::Duplicate {
                state: crate::claim::ClaimState::Dead,
            }),
            "evt_1",
            0,
        );
        assert_eq!(repeat.body, json!({ "status": "duplicate" }));
        // A forward made in sync mode before the switch still holds the event: come back.
        let held = after_enqueue(
            &AuthorityReply::Enqueue(EnqueueOutcome::InFlight { retry_at: 30_500 }),
            "evt_1",
            10_000,
        );
        assert_eq!((held.status, held.retry_after), (409, Some(21)));
        assert_eq!(
            (held.body["error"].as_str(), held.outcome),
            (Some("in_flight"), Outcome::InFlight)
        );
        let busy = after_enqueue(
            &AuthorityReply::StoreFailed {
                retryable: true,
                detail: String::new(),
            },
            "evt_1",
            0,
        );
        assert_eq!((busy.status, busy.retry_after), (503, Some(10)));
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
        let slow = refusal_answer(&Refusal::BodyTimeout { ms: 10_000 });
        assert_eq!(
            (slow.status, slow.outcome),
            (408, Outcome::Refused("body_timeout"))
        );
        assert_eq!(
            slow.body["detail"],
            "the whole body did not arrive within 10000 ms"
        );
        let replayed = refusal_answer(&Refusal::ReplayLimited);
        assert_eq!(
            (replayed.status, replayed.retry_after, replayed.outcome),
            (429, Some(60), Outcome::Refused("replay_limited"))
        );
        let wrong_method = refusal_answer(&Refusal::MethodNotAllowed);
        assert_eq!(
            (wrong_method.status, wrong_method.allow),
            (405, Some("POST"))
        );
        let answer = refusal_answer(&Refusal::Signature(SignatureError::Mismatch));
        assert_eq!(
            (answer.status, answer.outcome),
            (400, Outcome::Refused("signature_mismatch"))
        );
        assert_eq!(answer.body["error"], "signature_mismatch");
        let answer = refusal_answer(&Refusal::Envelope(EnvelopeError::InvalidEventId));
        assert_eq!(
            (answer.status, answer.outcome),
            (400, Outcome::Refused("invalid_event_id"))
        );
        let answer = refusal_answer(&Refusal::Sender(SenderError::TimestampTooOld));
        assert_eq!(
            (answer.status, answer.outcome),
            (400, Outcome::Refused("timestamp_too_old"))
        );
        let off = Refusal::NotEnabled(Provider::Github);
        let answer = refusal_answer(&off);
        let mismatch = refusal_answer(&Refusal::Sender(SenderError::SignatureMismatch));
        assert_eq!(
            answer.http(),
            mismatch.http(),
            "an off sender answers as a signature that matches no secret"
        );
        assert_eq!(answer.outcome, Outcome::SenderOff, "the log tells");
        assert!(
            !answer.body.to_string().contains("SECRET"),
            "no hint to callers"
        );
        assert!(log_detail(&off, &answer)
            .unwrap()
            .contains("GITHUB_WEBHOOK_SECRET"));
    }
}
