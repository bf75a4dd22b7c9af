//! Queue mode's pure pieces: the stored form of a queued event, and the plan of one attempt.
//!
//! A queued event is stored as one value (see [`crate::claim::frame::payload`]).

use super::{WakeBy, Watched, Won};
pub use crate::claim::frame::{payload, read_payload, Headers};
use crate::claim::{
    self, AttemptOutcome, AttemptTerms, ClaimPolicy, ClaimStore, FailedOutcome, Failure, Fence,
    FinalizeOutcome, Millis, Nonce, RetryPolicy, StoreError,
};
use crate::origin::{Reason, Verdict};
use crate::origin_gate::HoldReason;
use crate::providers::{self, Provider};

/// What a queued attempt sends: the stored headers (signed anew where the sender's signature
/// carries a time, with `secrets`' first, at `now_seconds`), the attempt headers, and the
/// stored body. `None` when it cannot be sent: no stored event, an unreadable one, or a sender
/// that is now disabled or has no secret (the attempt then fails as "request not sent").
pub fn outgoing<'a>(
    stored: Option<&'a [u8]>,
    secrets: Option<&[&[u8]]>,
    provider: Provider,
    key: &str,
    won: &super::Won,
    now_seconds: i64,
) -> Option<(Headers, &'a [u8])> {
    let (mut headers, body) = read_payload(stored?).ok()?;
    let first_secret = secrets?.first()?;
    let id = provider.id_of(key);
    providers::refresh_signature(provider, id, &mut headers, first_secret, now_seconds, body);
    headers.extend(super::attempt_headers(
        provider,
        key,
        won.attempt,
        won.takeover,
    ));
    Some((headers, body))
}

/// What the alarm finds for a stored event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Due {
    /// An attempt started: forward the stored event from `provider` (its stored headers and
    /// body, when any are stored) under this claim.
    Attempt(Won, Provider, Option<Vec<u8>>),
    /// No attempt was left when one came due: dead-lettered for this reason, nothing forwarded.
    Dead(Reason, Provider),
    /// Nothing to do now.
    Nothing,
}

/// Starts the attempt due at `now` for `key` (see [`claim::start_attempt`]), and the alarm the
/// write needs (the lease's end, so an attempt that dies is taken over).
pub fn start<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
    policy: ClaimPolicy,
    retry: RetryPolicy,
    nonce: Nonce,
) -> (Result<Due, StoreError>, WakeBy) {
    let mut watched = Watched::new(store);
    let outcome = claim::start_attempt(&mut watched, key, now, policy, retry, nonce);
    let due = outcome.map(|outcome| match outcome {
        AttemptOutcome::Start {
            fence,
            attempt,
            takeover,
            lease_expires_at,
            provider,
            payload,
        } => {
            let won = Won {
                fence,
                attempt,
                takeover,
                lease_expires_at,
            };
            Due::Attempt(won, provider, payload)
        }
        AttemptOutcome::Dead { reason, provider } => Due::Dead(reason, provider),
        AttemptOutcome::NotDue { .. } | AttemptOutcome::Idle => Due::Nothing,
    });
    (due, watched.wake)
}

/// How a queued attempt ended, as settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttemptEnd {
    /// Delivered: the record is done and the body dropped.
    Delivered,
    /// Failed; the next attempt is due then.
    RetryAt(Millis),
    /// Failed, and no attempt is left: dead-lettered, the body kept.
    DeadLettered,
    /// The attempt's lease ran out and another took over: nothing changed.
    FenceConflict,
    /// Held back by the origin's gate, nothing sent: queued again for `until`, the attempt
    /// not counted.
    Held {
        /// When the next attempt is due.
        until: Millis,
        /// Why the gate held it.
        why: HoldReason,
    },
}

/// Settles the attempt holding `fence` on its verdict: a success finalizes; anything else (a
/// non-2xx, a time-out, a network error: in queue mode every one of them is a failed attempt)
/// schedules the next attempt or dead-letters the event. An attempt whose answer was lost (a
/// time-out, a pending or unknown verdict) is not retried before its lease ends, since its
/// handler may still be running, nor before `not_before`, the time its origin asked for (see
/// [`claim::attempt_failed`]). Returns how it ended and the alarm the write needs.
pub fn settle_attempt<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
    verdict: Verdict,
    not_before: Option<Millis>,
    terms: AttemptTerms,
) -> (Result<AttemptEnd, StoreError>, WakeBy) {
    let mut watched = Watched::new(store);
    // How the attempt failed, if it did: the reason, and whether its answer was lost.
    let failed = match verdict {
        Verdict::Succeeded => None,
        Verdict::Failed(reason) => Some((reason, false)),
        Verdict::Unknown(reason) => Some((reason, true)),
        Verdict::Pending => Some((Reason::TimedOut, true)),
    };
    let end = match failed {
        None => claim::finalize(&mut watched, key, fence, now, terms.policy, None).map(|outcome| {
            match outcome {
                FinalizeOutcome::Finalized { .. } => AttemptEnd::Delivered,
                _ => AttemptEnd::FenceConflict,
            }
        }),
        Some((reason, answer_lost)) => {
            let failure = Failure {
                reason,
                answer_lost,
                not_before,
            };
            let failed = claim::attempt_failed(&mut watched, key, fence, now, failure, terms);
            failed.map(|outcome| match outcome {
                FailedOutcome::Retry { next_attempt_at } => AttemptEnd::RetryAt(next_attempt_at),
                FailedOutcome::Dead => AttemptEnd::DeadLettered,
                FailedOutcome::NotOwner => AttemptEnd::FenceConflict,
            })
        }
    };
    (end, watched.wake)
}

/// Settles the attempt holding `fence` as held back by its origin's gate until `until` for
/// `why` (see [`claim::attempt_held`]): queued again, not counted; `unknown` when the attempt
/// was a takeover. Returns how it ended and the alarm the write needs.
pub fn settle_held<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
    (until, why): (Millis, HoldReason),
    unknown: bool,
    policy: ClaimPolicy,
) -> (Result<AttemptEnd, StoreError>, WakeBy) {
    let mut watched = Watched::new(store);
    let held = claim::attempt_held(&mut watched, key, fence, now, until, unknown, policy);
    let end = held.map(|outcome| match outcome {
        FailedOutcome::Retry { next_attempt_at } => AttemptEnd::Held {
            until: next_attempt_at,
            why,
        },
        FailedOutcome::Dead | FailedOutcome::NotOwner => AttemptEnd::FenceConflict,
    });
    (end, watched.wake)
}

#[cfg(test)]
mod tests {
    use super::*;
    const SALT: crate::claim::Nonce = crate::claim::Nonce([77; 16]);

    use crate::claim::{enqueue, ClaimState, EnqueueOutcome, MemoryClaimStore};
    use crate::claim_authority::{AuthorityReply, AuthorityRequest};

    const POLICY: ClaimPolicy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 1_000_000,
    };
    const RETRY: RetryPolicy = RetryPolicy {
        base_ms: 1_000,
        max_delay_ms: 4_000,
        max_attempts: 2,
        max_age_ms: 100_000,
        retry_client_errors: false,
    };

    #[test]
    fn past_the_replay_limit_an_unknown_event_is_not_stored_and_a_known_one_is_a_duplicate() {
        let mut store = MemoryClaimStore::new();
        let request = |known_only| AuthorityRequest::Enqueue {
            key: "evt_q".into(),
            provider: Provider::Stripe,
            policy: POLICY,
            headers: vec![],
            known_only,
        };
        let (reply, wake) = super::super::handle(&mut store, &request(true), b"x", 0, SALT);
        assert_eq!((reply, wake), (AuthorityReply::NotKnown, None));
        assert_eq!(store.load("evt_q").unwrap(), None);
        assert_eq!(store.load_payload("evt_q").unwrap(), None, "no body stored");
        super::super::handle(&mut store, &request(false), b"x", 1, SALT);
        let (reply, _) = super::super::handle(&mut store, &request(true), b"x", 2, SALT);
        assert!(matches!(
            reply,
            AuthorityReply::Enqueue(EnqueueOutcome::Duplicate { .. })
        ));
        // A store that cannot be read makes nothing new: the failure is the reply.
        let mut store = MemoryClaimStore::new();
        store.fail_next(StoreError::Retryable("busy".into()));
        let (reply, wake) = super::super::handle(&mut store, &request(true), b"x", 0, SALT);
        assert!(matches!(
            reply,
            AuthorityReply::StoreFailed {
                retryable: true,
                ..
            }
        ));
        assert_eq!(wake, None);
        assert_eq!(store.load("evt_q").unwrap(), None, "nothing stored");
    }

    #[test]
    fn a_repeat_of_an_event_still_to_deliver_re_asserts_its_alarm() {
        let mut store = MemoryClaimStore::new();
        let enqueue_request = AuthorityRequest::Enqueue {
            key: "evt_q".into(),
            provider: Provider::Stripe,
            policy: POLICY,
            headers: vec![],
            known_only: false,
        };
        let (_, first) = super::super::handle(&mut store, &enqueue_request, b"x", 0, SALT);
        assert_eq!(first.map(|w| (w.at, w.due)), Some((0, true)));
        let (reply, again) = super::super::handle(&mut store, &enqueue_request, b"x", 7, SALT);
        assert!(matches!(
            reply,
            AuthorityReply::Enqueue(EnqueueOutcome::Duplicate { .. })
        ));
        assert_eq!(
            again.map(|w| (w.at, w.due)),
            Some((0, true)),
            "nothing written, but the alarm the record needs"
        );
    }

    #[test]
    fn an_attempt_asks_for_its_lease_end_then_settles_on_its_verdict() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            "evt_q",
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"x",
        )
        .unwrap();
        let (started, wake) = start(&mut store, "evt_q", 5, POLICY, RETRY, Nonce([1; 16]));
        let Ok(Due::Attempt(Won { fence, .. }, _, _)) = started else {
            panic!("{started:?}")
        };
        assert_eq!(
            wake,
            Some(super::super::Wake {
                at: 10_005,
                due: true
            })
        );
        let (end, wake) = settle_attempt(
            &mut store,
            "evt_q",
            &fence,
            6,
            Verdict::Pending,
            None,
            AttemptTerms {
                policy: POLICY,
                retry: RETRY,
                jitter: 0.999_999,
            },
        );
        assert_eq!(
            end,
            Ok(AttemptEnd::RetryAt(10_005)),
            "a time-out's handler may still run: not before the lease's end"
        );
        assert_eq!(wake.map(|w| (w.at, w.due)), Some((10_005, true)));
        assert_eq!(
            store.load("evt_q").unwrap().unwrap().last_failure,
            Some(Reason::TimedOut),
            "a time-out is a failed attempt in queue mode"
        );
        let (started, _) = start(&mut store, "evt_q", 10_005, POLICY, RETRY, Nonce([2; 16]));
        let Ok(Due::Attempt(Won { fence, .. }, _, _)) = started else {
            panic!("{started:?}")
        };
        let (end, wake) = settle_attempt(
            &mut store,
            "evt_q",
            &fence,
            10_006,
            Verdict::Failed(Reason::Answered(500)),
            None,
            AttemptTerms {
                policy: POLICY,
                retry: RETRY,
                jitter: 0.5,
            },
        );
        assert_eq!(end, Ok(AttemptEnd::DeadLettered));
        assert_eq!(
            wake,
            Some(crate::claim_authority::Wake {
                at: 10_006,
                due: true
            }),
            "the dead letter is reported to the failure index at once"
        );
        assert_eq!(
            store.load("evt_q").unwrap().unwrap().state(),
            ClaimState::Dead
        );
    }

    #[test]
    fn every_lost_answer_waits_for_the_lease_and_every_definite_failure_only_for_the_back_off() {
        use crate::origin::{NetworkError, OriginOutcome};
        let answered = |status| OriginOutcome::Answered { status };
        let cases = [
            (answered(502), true),
            (answered(504), true),
            (answered(520), true),
            (answered(524), true),
            (OriginOutcome::TimedOut, true),
            (
                OriginOutcome::Failed {
                    error: NetworkError::ConnectionLost,
                },
                true,
            ),
            (
                OriginOutcome::Failed {
                    error: NetworkError::Other,
                },
                true,
            ),
            (answered(500), false),
            (answered(503), false),
            (answered(408), false),
            (answered(409), false),
            (answered(425), false),
            (answered(429), false),
            (answered(521), false),
            (answered(522), false),
            (OriginOutcome::NotSent, false),
        ];
        for (outcome, lost) in cases {
            let verdict = match outcome {
                OriginOutcome::TimedOut => Verdict::Pending,
                ref other => Verdict::of(other, crate::origin::is_success),
            };
            let end = first_attempt_fails(RETRY, verdict, None);
            let expected = if lost { POLICY.lease_ms } else { 1_100 };
            assert_eq!(end, AttemptEnd::RetryAt(expected), "{outcome:?}");
        }
    }

    #[test]
    fn an_event_the_origin_refuses_is_dead_lettered_at_once_unless_client_errors_are_retried() {
        for status in [400, 401, 403, 404, 410, 422] {
            for retry_client_errors in [false, true] {
                let retry = RetryPolicy {
                    retry_client_errors,
                    ..RETRY
                };
                let verdict = Verdict::Failed(Reason::Answered(status));
                let end = first_attempt_fails(retry, verdict, None);
                // A 410 says the handler will never take it: dead at once, whatever the setting.
                let expected = if retry_client_errors && status != 410 {
                    AttemptEnd::RetryAt(1_100)
                } else {
                    AttemptEnd::DeadLettered
                };
                assert_eq!(end, expected, "{status}, retried: {retry_client_errors}");
            }
        }
    }

    /// The end of a stored event's first attempt, failed at 100 with `verdict` and the time its
    /// origin asked for, under `retry` (the back-off is then 1 s; the lease ends at 10_000).
    fn first_attempt_fails(
        retry: RetryPolicy,
        verdict: Verdict,
        not_before: Option<Millis>,
    ) -> AttemptEnd {
        let mut store = MemoryClaimStore::new();
        let (key, nonce) = ("evt_q", Nonce([9; 16]));
        enqueue(&mut store, key, Provider::Github, 0, POLICY, nonce, b"x").unwrap();
        let (started, _) = start(&mut store, key, 0, POLICY, retry, Nonce([1; 16]));
        let Ok(Due::Attempt(Won { fence, .. }, _, _)) = started else {
            panic!("{started:?}")
        };
        let terms = AttemptTerms {
            policy: POLICY,
            retry,
            jitter: 0.999_999,
        };
        let (end, _) = settle_attempt(&mut store, key, &fence, 100, verdict, not_before, terms);
        end.unwrap()
    }

    #[test]
    fn the_next_attempt_waits_for_the_time_the_origin_asked_for_up_to_the_longest_back_off() {
        let throttled = Verdict::Failed(Reason::Answered(429));
        let retry = RetryPolicy {
            max_attempts: 5,
            ..RETRY
        };
        // The back-off alone would be 1 s (at 1_100).
        assert_eq!(
            first_attempt_fails(retry, throttled, None),
            AttemptEnd::RetryAt(1_100)
        );
        assert_eq!(
            first_attempt_fails(retry, throttled, Some(3_000)),
            AttemptEnd::RetryAt(3_000),
            "later than the back-off: the origin's time"
        );
        assert_eq!(
            first_attempt_fails(retry, throttled, Some(500)),
            AttemptEnd::RetryAt(1_100),
            "sooner than the back-off: the back-off"
        );
        assert_eq!(
            first_attempt_fails(retry, throttled, Some(u64::MAX)),
            AttemptEnd::RetryAt(100 + RETRY.max_delay_ms),
            "never past the longest back-off from now"
        );
        let answer_lost = Verdict::Unknown(Reason::Answered(504));
        assert_eq!(
            first_attempt_fails(retry, answer_lost, Some(3_000)),
            AttemptEnd::RetryAt(POLICY.lease_ms),
            "an answer lost still waits for the lease"
        );
    }

    #[test]
    fn a_stored_event_reads_back_byte_for_byte() {
        let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        let body = "{\"id\":\"evt_1\",\"note\":\"caf\u{e9}\"}".as_bytes();
        let stored = payload(&headers, body);
        let (read_headers, read_body) = read_payload(&stored).unwrap();
        assert_eq!(read_headers, headers);
        assert_eq!(read_body, body);
        assert!(matches!(
            read_payload(&stored[..3]),
            Err(StoreError::Fatal(_))
        ));
        assert!(matches!(
            read_payload(&stored[..10]),
            Err(StoreError::Fatal(_))
        ));
    }
}
