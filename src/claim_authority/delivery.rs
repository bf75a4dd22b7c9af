//! A delivery run by the claim authority itself: claim, forward, settle, in the object that owns
//! the key. Pure: the object adapter does the I/O (the forward) and asks here what to claim,
//! what the answer means, and how to settle.
//!
//! Why the object forwards (rather than the worker): the object can wait for a late answer
//! after the sender has been told to come back (its pending work keeps it alive, see the
//! README), it settles with a local write instead of a second round trip, and a repeat that
//! arrives meanwhile meets the live claim in the same object.

use serde::{Deserialize, Serialize};

use super::door::Door;
use super::{AuthorityReply, WakeBy, Watched};
use crate::claim::{
    self, CachedResponse, ClaimOutcome, ClaimPolicy, ClaimRequest, ClaimStore, Fence,
    FinalizeOutcome, Millis, Nonce, ReleaseOutcome, SettleStep, Source, StoreError,
};
use crate::config::ApiConfig;
use crate::origin::{OriginOutcome, Reason, Verdict};

/// Where and how the object forwards the delivery, and how long it waits for the answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forward {
    /// Absolute URL.
    pub url: String,
    /// HTTP method.
    pub method: String,
    /// Headers to send, in order.
    pub headers: Vec<(String, String)>,
    /// How long the sender waits for the answer (`FORWARD_TIMEOUT_MS`).
    pub timeout_ms: u64,
    /// How much longer the object keeps waiting for a late answer (`LATE_ANSWER_WAIT_SECONDS`).
    pub wait_ms: u64,
}

/// A delivery to run: the claim's terms and the forward. The body travels beside this message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deliver {
    /// The key (event id or Idempotency-Key scope).
    pub key: String,
    /// Lease and retention.
    pub policy: ClaimPolicy,
    /// Random bytes for the fence; the same nonce again is the same delivery.
    pub nonce: Nonce,
    /// Who the key belongs to: the webhook sender, or the request's fingerprint.
    pub source: Source,
    /// The forward.
    pub forward: Forward,
    /// The front door.
    pub door: Door,
    /// Serve only a key the object already knows: true for a delivery past the replay limit
    /// (see [`crate::providers::replay_limit_key`]), which is answered as ever when its key has
    /// a record (a duplicate, in flight, or claimed again after a release) and refused with
    /// [`AuthorityReply::NotKnown`], nothing written, when it has none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub known_only: bool,
}

impl Deliver {
    /// A webhook delivery of `key` from `source`, forwarded with `forward`.
    pub fn webhook(
        key: String,
        policy: ClaimPolicy,
        nonce: Nonce,
        source: Source,
        forward: Forward,
        known_only: bool,
    ) -> Deliver {
        Deliver {
            key,
            policy,
            nonce,
            source,
            forward,
            door: Door::Webhook,
            known_only,
        }
    }
}

impl Deliver {
    /// The headers of the forward whose claim was `won`: the caller's (or sender's) as the
    /// door chose them, then, for a webhook, the event id, sender, attempt and takeover flag
    /// (see [`super::attempt_headers`]).
    pub fn outgoing_headers(&self, won: &Won) -> Vec<(String, String)> {
        let mut headers = self.forward.headers.clone();
        if let Some(provider) = self.source.provider() {
            let added = super::attempt_headers(provider, &self.key, won.attempt, won.takeover);
            headers.extend(added);
        }
        headers
    }

    /// True when the forward carries the delivery's body: every method but `GET` and `HEAD`,
    /// which have none.
    pub fn sends_body(&self) -> bool {
        !matches!(self.forward.method.as_str(), "GET" | "HEAD")
    }

    /// An Idempotency-Key request of `scope`, bound to `fingerprint`, under `api`'s terms.
    pub fn api(
        scope: String,
        api: &ApiConfig,
        nonce: Nonce,
        fingerprint: String,
        forward: Forward,
    ) -> Deliver {
        Deliver {
            key: scope,
            policy: api.claims,
            nonce,
            source: Source::Api { fingerprint },
            forward,
            door: Door::Api {
                max_cached_body: api.max_response_bytes,
            },
            known_only: false,
        }
    }
}

/// A claim won for a delivery: what the forward and the settle need.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Won {
    /// The claim's fence.
    pub fence: Fence,
    /// Which attempt of the key this is (1 for the first).
    pub attempt: u32,
    /// True when an earlier claim's lease ran out.
    pub takeover: bool,
    /// When the claim's lease runs out: a settle after it is refused if the claim was taken
    /// over, and the object stops trying to settle then.
    pub lease_expires_at: Millis,
}

/// What to do first with a delivery.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Begin {
    /// The claim is won: forward, then settle.
    Forward(Won),
    /// Not forwarded: answer this (duplicate, in flight, another fingerprint, store failure).
    Reply(AuthorityReply),
}

/// Claims the key of `deliver` at `now` (`salt`: fresh random bytes from the object for the
/// fence). A won claim is forwarded; anything else is answered at once. The same delivery sent
/// again (same nonce, after a lost answer) is answered as in flight: its first send already
/// forwards it, and forwarding it twice could run it twice.
pub fn begin<S: ClaimStore>(
    store: &mut S,
    deliver: &Deliver,
    now: Millis,
    salt: Nonce,
) -> (Begin, WakeBy) {
    let mut watched = Watched::new(store);
    if deliver.known_only {
        if let Some(refusal) = super::refuse_unknown(&mut watched, &deliver.key, now) {
            return (Begin::Reply(refusal), None);
        }
    }
    let forward = &deliver.forward;
    let request = ClaimRequest {
        key: &deliver.key,
        now,
        policy: deliver.policy,
        nonce: deliver.nonce,
        salt,
        source: &deliver.source,
        answer_within_ms: Some(forward.timeout_ms.saturating_add(forward.wait_ms)),
    };
    let begin = match claim::claim(&mut watched, &request) {
        Ok(outcome) => begin_on(outcome, &mut watched, &deliver.key, now),
        Err(error) => Begin::Reply(error.into()),
    };
    (begin, watched.wake_needed())
}

/// What a claim's `outcome` means for a delivery: forward a claim just won; answer a repeated
/// one as in flight, told when to come back; answer anything else as it is.
fn begin_on<S: ClaimStore>(outcome: ClaimOutcome, store: &mut S, key: &str, now: Millis) -> Begin {
    let declined = |outcome| Begin::Reply(AuthorityReply::Delivery(Delivery::Declined(outcome)));
    match outcome {
        ClaimOutcome::Claimed {
            fence,
            attempt,
            takeover,
            lease_expires_at,
            repeated: false,
        } => Begin::Forward(Won {
            fence,
            attempt,
            takeover,
            lease_expires_at,
        }),
        ClaimOutcome::Claimed {
            lease_expires_at, ..
        } => {
            let retry_at = match store.load(key) {
                Ok(Some(record)) => record.retry_at(now),
                _ => lease_expires_at,
            };
            declined(ClaimOutcome::DuplicateInflight {
                lease_expires_at,
                retry_at,
            })
        }
        other => declined(other),
    }
}

/// How the delivery stands when its sender is answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Not forwarded; the claim outcome says why.
    Declined(ClaimOutcome),
    /// Forwarded; the report says how it went so far.
    Forwarded(ForwardReport),
}

/// What happened to a forwarded delivery, as far as known when the sender is answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForwardReport {
    /// Which attempt of the key this was.
    pub attempt: u32,
    /// True when it took over a claim whose lease ran out.
    pub takeover: bool,
    /// How the forward ended (`timed_out` while a late answer is still awaited).
    pub outcome: OriginOutcome,
    /// What that means for the claim.
    pub verdict: Verdict,
    /// What the settle did (or `waiting`, when it comes later).
    pub settle: SettleStep,
    /// How long the origin took, in milliseconds.
    pub origin_ms: u64,
    /// The time the origin asked not to be called again before: its `Retry-After` on a `429`
    /// or `503` (see [`crate::origin::retry_after_at`]), not yet capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<Millis>,
    /// The answer's safe-to-pass headers, when its body streams back with this reply
    /// (Idempotency-Key door only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<Head>,
}

/// The status and headers of an origin answer passed back to the caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Head {
    /// The origin's status.
    pub status: u16,
    /// Its headers (hop-by-hop ones left out), in order.
    pub headers: Vec<(String, String)>,
}

/// How to settle a claim after its forward.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Settle {
    /// Finalize, keeping this response for replays (Idempotency-Key door).
    Finalize(Option<CachedResponse>),
    /// Release for this reason (as kept in the record).
    Release(Reason),
    /// Keep the claim until its lease ends; only the end of the wait for an answer is
    /// written, so that repeats are told to come back when the lease ends.
    Hold,
}

impl Settle {
    /// The settle a final verdict calls for (`Pending` is not final: the caller waits first).
    /// `response` is what the Idempotency-Key door keeps on success.
    pub fn for_verdict(verdict: Verdict, response: Option<CachedResponse>) -> Settle {
        match verdict {
            Verdict::Succeeded => Settle::Finalize(response),
            Verdict::Failed(reason) => Settle::Release(reason),
            Verdict::Pending | Verdict::Unknown(_) => Settle::Hold,
        }
    }
}

/// Settles the claim on `key` held with `won` at `now`, and says what happened. Fenced: only
/// the attempt that holds the claim changes it, so repeating a settle is safe. A store failure
/// is returned as an error so the caller can try again while the lease lasts.
pub fn settle<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    policy: ClaimPolicy,
    how: Settle,
    now: Millis,
) -> Result<(SettleStep, WakeBy), StoreError> {
    let mut watched = Watched::new(store);
    let step = match how {
        Settle::Hold => {
            // Repeats now wait for the lease's end, not for an answer that will not come.
            claim::stop_waiting(&mut watched, key, fence, now)?;
            SettleStep::Held
        }
        Settle::Finalize(response) => {
            match claim::finalize(&mut watched, key, fence, now, policy, response)? {
                FinalizeOutcome::Finalized { .. } => SettleStep::Finalized,
                FinalizeOutcome::NotOwner | FinalizeOutcome::NotFound => SettleStep::FenceConflict,
            }
        }
        Settle::Release(reason) => {
            match claim::release(&mut watched, key, fence, now, reason, policy)? {
                ReleaseOutcome::Released { .. } => SettleStep::Released,
                ReleaseOutcome::AlreadyDone
                | ReleaseOutcome::NotOwner
                | ReleaseOutcome::NotFound => SettleStep::FenceConflict,
            }
        }
    };
    Ok((step, watched.wake))
}

#[cfg(test)]
mod tests {
    use super::*;
    const SALT: crate::claim::Nonce = crate::claim::Nonce([77; 16]);
    use crate::claim::{ClaimState, MemoryClaimStore};

    const POLICY: ClaimPolicy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 100_000,
    };

    fn deliver(nonce: u8) -> Deliver {
        Deliver {
            known_only: false,
            key: "evt_1".into(),
            policy: POLICY,
            nonce: Nonce([nonce; 16]),
            source: Source::Webhook(crate::providers::Provider::Stripe),
            forward: Forward {
                url: "http://origin.test/".into(),
                method: "POST".into(),
                headers: vec![],
                timeout_ms: 1_000,
                wait_ms: 3_000,
            },
            door: Door::Webhook,
        }
    }

    fn won(begin: Begin) -> Won {
        match begin {
            Begin::Forward(won) => won,
            other => panic!("expected a won claim, got {other:?}"),
        }
    }

    /// A webhook forward carries the sender's headers and then the attempt's own; an API
    /// forward only the caller's. Only `GET` and `HEAD` go without the body.
    #[test]
    fn a_forward_carries_its_senders_headers_and_a_body_unless_get_or_head() {
        let mut store = MemoryClaimStore::new();
        let webhook = Deliver {
            forward: Forward {
                headers: vec![("stripe-signature".into(), "t=1,v1=ab".into())],
                ..deliver(1).forward
            },
            ..deliver(1)
        };
        let first = won(begin(&mut store, &webhook, 0, SALT).0);
        let names: Vec<String> = webhook
            .outgoing_headers(&first)
            .into_iter()
            .map(|(name, value)| format!("{name}: {value}"))
            .collect();
        assert_eq!(
            names,
            [
                "stripe-signature: t=1,v1=ab",
                "x-webhook-dedup-event-id: evt_1",
                "x-webhook-dedup-provider: stripe",
                "x-webhook-dedup-attempt: 1",
                "x-webhook-dedup-takeover: false",
            ]
        );
        let takeover = Won {
            attempt: 2,
            takeover: true,
            ..first.clone()
        };
        let sent = webhook.outgoing_headers(&takeover);
        assert_eq!(
            sent[3..],
            [
                ("x-webhook-dedup-attempt".to_owned(), "2".to_owned()),
                ("x-webhook-dedup-takeover".to_owned(), "true".to_owned()),
            ],
            "the attempt's own number and flag"
        );
        assert!(webhook.sends_body());
        let api = Deliver {
            source: Source::Api {
                fingerprint: "fp".into(),
            },
            door: Door::Api {
                max_cached_body: 10,
            },
            ..webhook.clone()
        };
        assert_eq!(api.outgoing_headers(&first), webhook.forward.headers);
        for (method, sends) in [
            ("POST", true),
            ("PUT", true),
            ("DELETE", true),
            ("PATCH", true),
            ("GET", false),
            ("HEAD", false),
        ] {
            let with = Deliver {
                forward: Forward {
                    method: method.into(),
                    ..api.forward.clone()
                },
                ..api.clone()
            };
            assert_eq!(with.sends_body(), sends, "{method}");
        }
    }

    #[test]
    fn past_the_replay_limit_only_a_known_key_is_served() {
        let known_only = |nonce| Deliver {
            known_only: true,
            ..deliver(nonce)
        };
        let mut store = MemoryClaimStore::new();
        // No record: refused, nothing written, no alarm.
        assert_eq!(
            begin(&mut store, &known_only(1), 0, SALT),
            (Begin::Reply(AuthorityReply::NotKnown), None)
        );
        assert_eq!(store.load("evt_1").unwrap(), None);
        // A live claim: in flight, as for any repeat.
        let first = won(begin(&mut store, &deliver(2), 0, SALT).0);
        assert!(matches!(
            begin(&mut store, &known_only(3), 10, SALT).0,
            Begin::Reply(AuthorityReply::Delivery(Delivery::Declined(
                ClaimOutcome::DuplicateInflight { .. }
            )))
        ));
        // Released: claimed again, as the sender's retry would be (the record exists).
        let how = Settle::for_verdict(Verdict::Failed(Reason::Answered(500)), None);
        settle(&mut store, "evt_1", &first.fence, POLICY, how, 20).unwrap();
        let second = won(begin(&mut store, &known_only(5), 30, SALT).0);
        assert_eq!(second.attempt, 2);
        // Done: a duplicate, acknowledged as ever.
        let how = Settle::for_verdict(Verdict::Succeeded, None);
        settle(&mut store, "evt_1", &second.fence, POLICY, how, 40).unwrap();
        assert!(matches!(
            begin(&mut store, &known_only(6), 50, SALT).0,
            Begin::Reply(AuthorityReply::Delivery(Delivery::Declined(
                ClaimOutcome::DuplicateProcessed { .. }
            )))
        ));
        // Past its retention the record reads as absent: refused again.
        assert_eq!(
            begin(&mut store, &known_only(4), 10_000 + 100_000, SALT).0,
            Begin::Reply(AuthorityReply::NotKnown)
        );
    }

    #[test]
    fn a_won_claim_is_forwarded_and_records_its_answer_wait() {
        let mut store = MemoryClaimStore::new();
        let (begin, wake_by) = begin(&mut store, &deliver(1), 100, SALT);
        let won = won(begin);
        assert_eq!(
            (won.attempt, won.takeover, won.lease_expires_at),
            (1, false, 10_100)
        );
        assert_eq!(wake_by.map(|wake| wake.at), Some(110_100));
        let record = store.load("evt_1").unwrap().unwrap();
        assert_eq!(record.lease.wait_ends_at, Some(4_100));
    }

    #[test]
    fn repeats_meet_the_live_claim_until_the_answer_wait_ends() {
        let mut store = MemoryClaimStore::new();
        begin(&mut store, &deliver(1), 0, SALT);
        let (reply, wake_by) = begin(&mut store, &deliver(2), 500, SALT);
        assert_eq!(
            reply,
            Begin::Reply(AuthorityReply::Delivery(Delivery::Declined(
                ClaimOutcome::DuplicateInflight {
                    lease_expires_at: 10_000,
                    retry_at: 4_000
                }
            )))
        );
        assert_eq!(wake_by, None, "nothing written");
    }

    #[test]
    fn the_same_delivery_sent_again_is_never_forwarded_twice() {
        let mut store = MemoryClaimStore::new();
        won(begin(&mut store, &deliver(1), 0, SALT).0);
        assert!(matches!(
            begin(&mut store, &deliver(1), 10, SALT).0,
            Begin::Reply(AuthorityReply::Delivery(Delivery::Declined(
                ClaimOutcome::DuplicateInflight {
                    retry_at: 4_000,
                    ..
                }
            )))
        ));
    }

    #[test]
    fn settles_follow_the_verdict_and_the_fence() {
        let mut store = MemoryClaimStore::new();
        let first = won(begin(&mut store, &deliver(1), 0, SALT).0);
        let how = Settle::for_verdict(Verdict::Failed(Reason::Answered(500)), None);
        let (step, _) = settle(&mut store, "evt_1", &first.fence, POLICY, how, 50).unwrap();
        assert_eq!(step, SettleStep::Released);
        let record = store.load("evt_1").unwrap().unwrap();
        assert_eq!(record.last_failure, Some(Reason::Answered(500)));

        let second = won(begin(&mut store, &deliver(2), 60, SALT).0);
        let (step, _) = settle(
            &mut store,
            "evt_1",
            &second.fence,
            POLICY,
            Settle::for_verdict(Verdict::Unknown(Reason::ResetAfterSend), None),
            70,
        )
        .unwrap();
        assert_eq!(step, SettleStep::Held);
        assert_eq!(
            store.load("evt_1").unwrap().unwrap().state(),
            ClaimState::Processing,
            "an unknown outcome keeps the claim"
        );
        assert!(
            matches!(
                begin(&mut store, &deliver(3), 100, SALT).0,
                Begin::Reply(AuthorityReply::Delivery(Delivery::Declined(
                    ClaimOutcome::DuplicateInflight {
                        lease_expires_at: 10_060,
                        retry_at: 10_060
                    }
                )))
            ),
            "a held claim sends repeats to the end of its lease, not of its answer wait (4_060)"
        );
        let (step, _) = settle(
            &mut store,
            "evt_1",
            &first.fence,
            POLICY,
            Settle::for_verdict(Verdict::Succeeded, None),
            80,
        )
        .unwrap();
        assert_eq!(
            step,
            SettleStep::FenceConflict,
            "an older attempt cannot settle"
        );
        let (step, wake_by) = settle(
            &mut store,
            "evt_1",
            &second.fence,
            POLICY,
            Settle::for_verdict(Verdict::Succeeded, None),
            90,
        )
        .unwrap();
        assert_eq!(
            (step, wake_by.map(|wake| wake.at)),
            (SettleStep::Finalized, Some(100_090))
        );
        assert_eq!(Settle::for_verdict(Verdict::Pending, None), Settle::Hold);
    }

    #[test]
    fn steps_serialise_to_their_words() {
        for step in [
            SettleStep::Finalized,
            SettleStep::Released,
            SettleStep::Held,
            SettleStep::Waiting,
            SettleStep::FenceConflict,
            SettleStep::SettleFailed,
        ] {
            assert_eq!(
                serde_json::to_string(&step).unwrap(),
                format!("\"{}\"", step.word())
            );
        }
    }
}
