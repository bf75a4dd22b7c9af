//! The claim authority: the Durable Object (class `ClaimAuthority`) that holds one key's claim
//! and is its only writer. Here are its messages, the rules it runs them through, the attempt
//! driver (`attempt`), and its sequences with their executor (`object`); the worker's adapter
//! carries out the calls only the runtime can make (`src/worker/claim_authority/`).
//!
//! The messages between the worker and the object, and the pure dispatcher the object runs
//! them through:
//!
//! Transport: the worker makes one RPC call, `call(frame)`, to the object (see `src/entry.mjs`):
//! the frame (see [`frame_prefix`]) is the JSON [`AuthorityRequest`], then the delivery's raw
//! body, if any. The object answers with the JSON [`AuthorityReply`] as a string or, when the
//! origin's answer streams back with it, with a response whose body is that answer and whose
//! [`REPLY_HEADER`] header carries the JSON. An RPC call makes no Request, Response or body
//! stream where none is needed; JSON keeps the exchange inspectable in logs and host tests.
//!
//! The JSON is serde's default, externally tagged form (`{"claim":{"claimed":{...}}}`, a unit
//! variant as its name): its reader needs no buffering, where an internally tagged one
//! (`{"reply":"claim","outcome":...}`) buffers every message to find its tag, and took a ninth
//! of the module's size.

use serde::{Deserialize, Serialize};

pub use crate::claim::frame::{frame_json_range, frame_prefix};
pub use crate::claim::SettleStep;
use crate::claim::{
    self, CachedResponse, ClaimOutcome, ClaimPolicy, ClaimRecord, ClaimRequest, ClaimStore,
    EnqueueOutcome, Fence, FinalizeOutcome, ForgetOutcome, Millis, Nonce, RedeliverOutcome,
    ReleaseOutcome, Source, StoreError,
};
use crate::origin::Reason;
use crate::providers::Provider;
use crate::reverts::{reverted, Fix};

pub mod alarm;
pub mod attempt;
mod delivery;
mod door;
mod log;
pub mod object;
pub mod queue;
pub mod webhook;

pub use attempt::Attempt;
pub use delivery::{
    begin, settle, Begin, Deliver, Delivery, Forward, ForwardReport, Head, Settle, Won,
};
pub use door::{attempt_headers, is_final, to_cache, BodyKept, Door};

/// The reply header that carries the JSON reply when the body carries the origin's answer.
pub const REPLY_HEADER: &str = "x-authority-reply";

/// One operation on one key's claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorityRequest {
    /// Try to claim `key` (see [`claim::claim`]).
    Claim {
        /// The key (event id or Idempotency-Key scope).
        key: String,
        /// Lease and retention for this front door.
        policy: ClaimPolicy,
        /// Random bytes for the fence; the same nonce again is the same claim request.
        nonce: Nonce,
        /// Who the key belongs to (a webhook sender, or a request's fingerprint).
        source: Source,
    },
    /// Mark `key` done for the holder of `fence` (see [`claim::finalize`]).
    Finalize {
        /// The key.
        key: String,
        /// The fence the claim was won with.
        fence: Fence,
        /// Lease and retention for this front door.
        policy: ClaimPolicy,
        /// The response to replay to repeats (Idempotency-Key front door only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<CachedResponse>,
    },
    /// Give back the claim held with `fence` (see [`claim::release`]).
    Release {
        /// The key.
        key: String,
        /// The fence the claim was won with.
        fence: Fence,
        /// Why, kept in the record and logged.
        reason: Reason,
        /// Lease and retention for this front door.
        policy: ClaimPolicy,
        /// An operator's release without force: refused with [`AuthorityReply::LeaseLive`],
        /// nothing written, while the claim's lease is live by the object's clock.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        only_after_lease: bool,
    },
    /// Delete the settled record of `key` if its fence is still `fence` (see [`claim::forget`]).
    Forget {
        /// The key.
        key: String,
        /// The fence the record had when read.
        fence: Fence,
    },
    /// Read the record of `key` as the rules see it (one past its retention reads as absent),
    /// changing nothing.
    Inspect {
        /// The key.
        key: String,
    },
    /// Claim, forward and settle a delivery in the object (see [`delivery`]); its body travels
    /// beside the message.
    Deliver(Deliver),
    /// Queue mode: store the event (its body travels beside the message) to be delivered by
    /// the object (see [`claim::enqueue`]).
    Enqueue {
        /// The key.
        key: String,
        /// The sender.
        provider: Provider,
        /// Lease and retention.
        policy: ClaimPolicy,
        /// The headers to forward with it (the signature is made anew at each attempt).
        headers: Vec<(String, String)>,
        /// Serve only a key the object already knows (see [`Deliver::known_only`]).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        known_only: bool,
    },
    /// Queue mode: put a dead (or waiting) event back in the queue, due now, with a fresh
    /// attempt budget (see [`claim::redeliver`]).
    Redeliver {
        /// The key.
        key: String,
        /// Lease and retention.
        policy: ClaimPolicy,
        /// Only the stored event with this id, and only while it is dead (a bulk redelivery,
        /// see [`claim::redeliver_dead`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dead_only: Option<u64>,
    },
    /// Test routes only: the object's Rust code stops at once, by a panic (`panic`) or by a
    /// WebAssembly trap without one, so the end-to-end tests can check that the object's next
    /// call runs on a fresh instance. The object does it before any rule runs.
    Trap {
        /// The key of the object.
        key: String,
        /// A Rust panic rather than a bare trap.
        panic: bool,
    },
}

impl AuthorityRequest {
    /// The key the request is about.
    pub fn key(&self) -> &str {
        match self {
            AuthorityRequest::Claim { key, .. }
            | AuthorityRequest::Finalize { key, .. }
            | AuthorityRequest::Release { key, .. }
            | AuthorityRequest::Forget { key, .. }
            | AuthorityRequest::Inspect { key } => key,
            AuthorityRequest::Deliver(deliver) => &deliver.key,
            AuthorityRequest::Enqueue { key, .. }
            | AuthorityRequest::Redeliver { key, .. }
            | AuthorityRequest::Trap { key, .. } => key,
        }
    }

    /// The operation's name (as in the message's JSON, and in storage-usage log lines).
    pub fn op(&self) -> &'static str {
        match self {
            AuthorityRequest::Claim { .. } => "claim",
            AuthorityRequest::Finalize { .. } => "finalize",
            AuthorityRequest::Release { .. } => "release",
            AuthorityRequest::Forget { .. } => "forget",
            AuthorityRequest::Inspect { .. } => "inspect",
            AuthorityRequest::Deliver(_) => "deliver",
            AuthorityRequest::Enqueue { .. } => "enqueue",
            AuthorityRequest::Redeliver { .. } => "redeliver",
            AuthorityRequest::Trap { .. } => "trap",
        }
    }
}

/// The object's answer to one [`AuthorityRequest`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorityReply {
    /// The answer to `Claim`.
    Claim(ClaimOutcome),
    /// The answer to `Finalize`.
    Finalize(FinalizeOutcome),
    /// The answer to `Release`.
    Release(ReleaseOutcome),
    /// The answer to `Forget`.
    Forget(ForgetOutcome),
    /// The answer to `Inspect`.
    Record {
        /// The stored record, if any.
        record: Option<Box<ClaimRecord>>,
    },
    /// The answer to `Deliver`.
    Delivery(Delivery),
    /// The answer to `Enqueue`.
    Enqueue(EnqueueOutcome),
    /// The answer to `Redeliver`.
    Redeliver(RedeliverOutcome),
    /// The request was `known_only` and the key has no record: nothing was written.
    NotKnown,
    /// A release `only_after_lease` met a claim whose lease is live: nothing was written.
    LeaseLive {
        /// When the lease ends.
        lease_expires_at: Millis,
    },
    /// The store failed; nothing was changed.
    StoreFailed {
        /// True when the same request may succeed later.
        retryable: bool,
        /// What failed.
        detail: String,
    },
}

/// A forward's report is the reply to its delivery.
impl From<ForwardReport> for AuthorityReply {
    fn from(report: ForwardReport) -> Self {
        AuthorityReply::Delivery(Delivery::Forwarded(report))
    }
}

impl From<StoreError> for AuthorityReply {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Retryable(detail) => AuthorityReply::StoreFailed {
                retryable: true,
                detail,
            },
            StoreError::Fatal(detail) => AuthorityReply::StoreFailed {
                retryable: false,
                detail,
            },
        }
    }
}

/// An exception met while sending a request to the claim authority: its text and the runtime's
/// flags on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StubError {
    /// What the exception says.
    pub text: String,
    /// The runtime flagged it `retryable`.
    pub retryable: bool,
    /// The runtime flagged it `overloaded`.
    pub overloaded: bool,
}

/// Sends a request with `send` until the object answers, or gives up. A `retryable` exception
/// is sent again once (a claim or delivery carries its nonce, so a repeat is the same request);
/// an `overloaded` object is never sent more load. Every failure given up on is a retryable
/// store failure, so the sender backs off and comes back: an exception on the way to the
/// object says nothing against the request (an overloaded or restarting object, or, during a
/// deploy, an object of the previous release that has no RPC method).
pub async fn send_to_object<T, F>(mut send: impl FnMut() -> F) -> Result<T, StoreError>
where
    F: std::future::Future<Output = Result<T, StubError>>,
{
    let mut sends = 0;
    loop {
        sends += 1;
        match send().await {
            Ok(answer) => return Ok(answer),
            Err(error) if error.retryable && !error.overloaded && sends < 2 => {}
            Err(error) => {
                let detail = format!("claim authority unreachable: {}", error.text);
                return Err(StoreError::Retryable(detail));
            }
        }
    }
}

/// When the object's alarm must fire after a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Wake {
    /// The time.
    pub at: Millis,
    /// True when work is due then (a queued attempt, a queue attempt's lease end): the alarm
    /// must fire by `at`. False when `at` is only the record's expiry: any alarm still ahead
    /// will do, since a record past its expiry already reads as absent and an early alarm
    /// re-arms itself.
    pub due: bool,
}

/// What the object must do after answering: the alarm a write needs, if any.
pub type WakeBy = Option<Wake>;

impl Wake {
    /// The alarm `record` needs, now that it is written.
    pub fn for_record(record: &ClaimRecord) -> Wake {
        let at = claim::next_wake(record);
        Wake {
            at,
            due: at < record.expires_at,
        }
    }
}

/// For a `known_only` request (past the replay limit), the reply that ends it: `NotKnown` when
/// `key` has no record, the failure when its record cannot be read (neither may make a new
/// record); none when the key is known and the request goes on.
pub fn refuse_unknown<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
) -> Option<AuthorityReply> {
    match claim::inspect(store, key, now) {
        Ok(Some(_)) => None,
        Ok(None) => Some(AuthorityReply::NotKnown),
        Err(error) => Some(error.into()),
    }
}

/// Runs one request against `store` at `now` (`body` is the bytes that came beside it;
/// `salt` is fresh random bytes from the object, for the fence of any claim or stored event it
/// makes). Returns the reply and the alarm the object must make sure of: the one a write needs,
/// or, when nothing was written, the one a record read needs for work due.
pub fn handle<S: ClaimStore>(
    store: &mut S,
    request: &AuthorityRequest,
    body: &[u8],
    now: Millis,
    salt: Nonce,
) -> (AuthorityReply, WakeBy) {
    let mut store = Watched::new(store);
    match run(&mut store, request, body, now, salt) {
        Ok(reply) => (reply, store.wake_needed()),
        Err(error) => (error.into(), None),
    }
}

fn run<S: ClaimStore>(
    store: &mut Watched<'_, S>,
    request: &AuthorityRequest,
    body: &[u8],
    now: Millis,
    salt: Nonce,
) -> Result<AuthorityReply, StoreError> {
    match request {
        AuthorityRequest::Claim {
            key,
            policy,
            nonce,
            source,
        } => {
            let request = ClaimRequest {
                key,
                now,
                policy: *policy,
                nonce: *nonce,
                salt,
                source,
                answer_within_ms: None,
            };
            claim::claim(store, &request).map(AuthorityReply::Claim)
        }
        AuthorityRequest::Finalize {
            key,
            fence,
            policy,
            response,
        } => claim::finalize(store, key, fence, now, *policy, response.clone())
            .map(AuthorityReply::Finalize),
        AuthorityRequest::Release { .. } => release(store, request, now),
        AuthorityRequest::Forget { key, fence } => {
            claim::forget(store, key, fence, now).map(AuthorityReply::Forget)
        }
        AuthorityRequest::Inspect { key } => {
            claim::inspect(store, key, now).map(|record| AuthorityReply::Record {
                record: record.map(Box::new),
            })
        }
        AuthorityRequest::Enqueue { .. } => enqueue(store, request, body, now, salt),
        AuthorityRequest::Redeliver { .. } => redeliver(store, request, now),
        // A delivery forwards, which only the object adapter can do (see `begin`).
        AuthorityRequest::Deliver(_) => Err(StoreError::Fatal(
            "a delivery is run by the object, not by handle".into(),
        )),
        AuthorityRequest::Trap { .. } => Err(StoreError::Fatal(
            "a trap is made by the object, never by a rule".into(),
        )),
    }
}

/// A redelivery: of whatever the record holds, or (a bulk redelivery's) of the stored event
/// `dead_only` names, only while it is dead.
fn redeliver<S: ClaimStore>(
    store: &mut Watched<'_, S>,
    request: &AuthorityRequest,
    now: Millis,
) -> Result<AuthorityReply, StoreError> {
    let AuthorityRequest::Redeliver {
        key,
        policy,
        dead_only,
    } = request
    else {
        unreachable!("called for redeliveries only");
    };
    match dead_only {
        None => claim::redeliver(store, key, now, *policy),
        Some(storage_id) => claim::redeliver_dead(store, key, now, *policy, *storage_id),
    }
    .map(AuthorityReply::Redeliver)
}

/// A release; an operator's without force is refused while the claim's lease is live by the
/// object's own clock.
fn release<S: ClaimStore>(
    store: &mut Watched<'_, S>,
    request: &AuthorityRequest,
    now: Millis,
) -> Result<AuthorityReply, StoreError> {
    let AuthorityRequest::Release {
        key,
        fence,
        reason,
        policy,
        only_after_lease,
    } = request
    else {
        return Err(StoreError::Fatal("not a release".into()));
    };
    if *only_after_lease {
        let record = claim::inspect(store, key, now)?;
        if let Some(live) = record.filter(|r| r.fence() == fence && r.has_live_lease(now)) {
            return Ok(AuthorityReply::LeaseLive {
                lease_expires_at: live.lease.until,
            });
        }
    }
    claim::release(store, key, fence, now, *reason, *policy).map(AuthorityReply::Release)
}

/// Stores an event for queue mode (one past the replay limit only when its key is known).
fn enqueue<S: ClaimStore>(
    store: &mut Watched<'_, S>,
    request: &AuthorityRequest,
    body: &[u8],
    now: Millis,
    salt: Nonce,
) -> Result<AuthorityReply, StoreError> {
    let AuthorityRequest::Enqueue {
        key,
        provider,
        policy,
        headers,
        known_only,
    } = request
    else {
        return Err(StoreError::Fatal("not an event to store".into()));
    };
    if *known_only {
        if let Some(refusal) = refuse_unknown(store, key, now) {
            return Ok(refusal);
        }
    }
    let payload = queue::payload(headers, body);
    claim::enqueue(store, key, *provider, now, *policy, salt, &payload).map(AuthorityReply::Enqueue)
}

/// A store that remembers the alarm the record it last saved needs (`wake`), and the one the
/// record it last read needs (`read`), so the object knows them without reading the record
/// again.
struct Watched<'a, S> {
    inner: &'a mut S,
    wake: WakeBy,
    read: WakeBy,
}

impl<'a, S> Watched<'a, S> {
    fn new(inner: &'a mut S) -> Self {
        Watched {
            inner,
            wake: None,
            read: None,
        }
    }

    /// The alarm the object must make sure of after the rule: the one its write needs, or,
    /// when it wrote nothing, the one a record it read needs for work due (a stored event's
    /// attempt, an attempt's lease end). So every request that reaches the object re-asserts
    /// the alarm of a record that still has to act: an alarm whose setting failed before is
    /// set by the next request, whatever it is.
    fn wake_needed(&self) -> WakeBy {
        if reverted(Fix::EveryRequestSetsTheAlarm) {
            return self.wake;
        }
        self.wake.or(self.read.filter(|wake| wake.due))
    }
}

impl<S: ClaimStore> ClaimStore for Watched<'_, S> {
    fn load(&mut self, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        let record = self.inner.load(key)?;
        self.read = record.as_ref().map(Wake::for_record);
        Ok(record)
    }

    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError> {
        self.inner.save(record)?;
        self.wake = Some(Wake::for_record(record));
        Ok(())
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key)
    }

    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        self.inner.keys()
    }

    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError> {
        self.inner.save_payload(key, payload)
    }

    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.load_payload(key)
    }

    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError> {
        self.inner.delete_payload(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const SALT: crate::claim::Nonce = crate::claim::Nonce([77; 16]);
    use crate::claim::MemoryClaimStore;

    const POLICY: ClaimPolicy = ClaimPolicy {
        lease_ms: 1_000,
        retention_ms: 10_000,
    };

    #[test]
    fn requests_and_replies_round_trip_as_json() {
        let request = AuthorityRequest::Release {
            key: "evt_1".into(),
            fence: Fence::new(2, [9; 16]),
            reason: Reason::Answered(500),
            policy: POLICY,
            only_after_lease: false,
        };
        let text = serde_json::to_string(&request).unwrap();
        assert!(text.starts_with(r#"{"release":{"key":"evt_1""#), "{text}");
        assert_eq!(
            serde_json::from_str::<AuthorityRequest>(&text).unwrap(),
            request
        );

        let reply = AuthorityReply::Claim(ClaimOutcome::DuplicateInflight {
            lease_expires_at: 5,
            retry_at: 4,
        });
        let text = serde_json::to_string(&reply).unwrap();
        assert_eq!(
            text,
            r#"{"claim":{"duplicate_inflight":{"lease_expires_at":5,"retry_at":4}}}"#
        );
        assert_eq!(
            serde_json::from_str::<AuthorityReply>(&text).unwrap(),
            reply
        );
    }

    #[test]
    fn a_release_without_force_waits_for_the_lease_by_the_objects_clock() {
        let mut store = MemoryClaimStore::new();
        let (claimed, _) = handle(
            &mut store,
            &AuthorityRequest::Claim {
                key: "evt_1".into(),
                policy: POLICY,
                nonce: crate::claim::Nonce([1; 16]),
                source: Source::Webhook(Provider::Stripe),
            },
            b"",
            0,
            SALT,
        );
        let AuthorityReply::Claim(ClaimOutcome::Claimed { fence, .. }) = claimed else {
            panic!("{claimed:?}")
        };
        let release = |only_after_lease| AuthorityRequest::Release {
            key: "evt_1".into(),
            fence: fence.clone(),
            reason: Reason::Operator,
            policy: POLICY,
            only_after_lease,
        };
        // The worker's clock may run ahead of the object's: the object decides.
        assert_eq!(
            handle(&mut store, &release(true), b"", 999, SALT).0,
            AuthorityReply::LeaseLive {
                lease_expires_at: 1_000
            }
        );
        assert_eq!(
            store.load("evt_1").unwrap().unwrap().state(),
            crate::claim::ClaimState::Processing,
            "nothing written"
        );
        assert_eq!(
            handle(&mut store, &release(true), b"", 1_000, SALT).0,
            AuthorityReply::Release(ReleaseOutcome::Released { already: false })
        );
    }

    #[test]
    fn frames_carry_their_json_then_the_body() {
        let json = br#"{"inspect":{"key":"evt_1"}}"#;
        let mut frame = frame_prefix(json);
        frame.extend_from_slice(b"raw body");
        let head = [frame[0], frame[1], frame[2], frame[3]];
        let (start, end) = frame_json_range(head, frame.len()).unwrap();
        assert_eq!(&frame[start..end], json);
        assert_eq!(&frame[end..], b"raw body");
        assert_eq!(
            frame_json_range([0, 0, 1, 0], 200),
            None,
            "announces more than it has"
        );
        assert_eq!(frame_json_range([255; 4], 10), None);
    }

    #[test]
    fn a_winning_claim_asks_for_an_alarm_at_the_record_expiry() {
        let mut store = MemoryClaimStore::new();
        let claim = |n| AuthorityRequest::Claim {
            key: "evt_1".into(),
            policy: POLICY,
            nonce: Nonce([n; 16]),
            source: Source::Webhook(Provider::Stripe),
        };
        let (reply, wake_by) = handle(&mut store, &claim(1), &[], 100, SALT);
        assert!(matches!(
            reply,
            AuthorityReply::Claim(ClaimOutcome::Claimed { .. })
        ));
        assert_eq!(
            wake_by,
            Some(Wake {
                at: 11_100,
                due: false
            }),
            "retention after the lease"
        );
        let (reply, wake_by) = handle(&mut store, &claim(2), &[], 200, SALT);
        assert!(matches!(
            reply,
            AuthorityReply::Claim(ClaimOutcome::DuplicateInflight { .. })
        ));
        assert_eq!(wake_by, None, "nothing written, no alarm needed");
    }

    /// The sends `send_to_object` makes when each fails with `failures` in turn, and its result.
    fn sends_with(failures: &[(bool, bool)]) -> (usize, Result<&'static str, StoreError>) {
        use std::future::Future as _;
        let mut sends = 0;
        let sent = send_to_object(|| {
            sends += 1;
            let result = match failures.get(sends - 1) {
                Some(&(retryable, overloaded)) => Err(StubError {
                    text: format!("failure {sends}"),
                    retryable,
                    overloaded,
                }),
                None => Ok("answered"),
            };
            std::future::ready(result)
        });
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let std::task::Poll::Ready(result) = std::pin::pin!(sent).poll(&mut context) else {
            panic!("nothing waits");
        };
        (sends, result)
    }

    #[test]
    fn stub_failures_are_sent_again_once_unless_overloaded() {
        assert_eq!(sends_with(&[]), (1, Ok("answered")));
        assert_eq!(sends_with(&[(true, false)]), (2, Ok("answered")));
        let gave_up = |n: u32| {
            Err(StoreError::Retryable(format!(
                "claim authority unreachable: failure {n}"
            )))
        };
        assert_eq!(sends_with(&[(true, false), (true, false)]), (2, gave_up(2)));
        assert_eq!(
            sends_with(&[(true, true)]),
            (1, gave_up(1)),
            "overloaded: no more load"
        );
        assert_eq!(sends_with(&[(false, true)]), (1, gave_up(1)));
        // An unflagged exception (say, an object of the previous release) is given up on, and
        // reported as retryable all the same.
        assert_eq!(sends_with(&[(false, false)]), (1, gave_up(1)));
    }

    #[test]
    fn store_failures_become_replies() {
        let mut store = MemoryClaimStore::new();
        store.fail_next(StoreError::Fatal("disk".into()));
        let (reply, wake_by) = handle(
            &mut store,
            &AuthorityRequest::Inspect {
                key: "evt_1".into(),
            },
            &[],
            0,
            SALT,
        );
        assert_eq!(
            reply,
            AuthorityReply::StoreFailed {
                retryable: false,
                detail: "disk".into()
            }
        );
        assert_eq!(wake_by, None);
    }
}
