//! Queue mode's rules: store an event, attempt its delivery under a lease, retry it with
//! back-off, dead-letter it, redeliver it. Same shape as [`super::engine`]: each function reads
//! the key's record, decides, and writes, with no other I/O in between.
//!
//! | state | meaning | next |
//! | --- | --- | --- |
//! | `queued` | stored, waiting for its attempt at `next_attempt_at` | `processing` when the attempt starts |
//! | `processing` | an attempt holds the claim under a lease | `done` (2xx), `queued` (failed, another attempt allowed: after the back-off, and not before the lease ends when the answer was lost), `dead` (failed, none allowed); after a crash, a new attempt once the lease ends |
//! | `done` | delivered; the body is dropped, the record kept for the retention | deleted at the end of the retention |
//! | `dead` | every allowed attempt failed; the body is kept | `queued` on an operator's redelivery; deleted at the end of the retention |
//!
//! An attempt that follows one whose outcome is unknown (its answer was lost, or its lease ran
//! out with no answer) is a takeover: its handler may have run.

use serde::{Deserialize, Serialize};

use super::engine::{load_current, ClaimPolicy};
use super::error::StoreError;
use super::fence::{Fence, Nonce};
use super::record::{
    Budget, ClaimRecord, ClaimStage, ClaimState, Lease, Millis, QueueStage, QueueStep, Source,
    Stage, Transition,
};
use super::store::ClaimStore;
use crate::origin::Reason;
use crate::providers::Provider;
use crate::reverts::{reverted, Fix};

/// How failed attempts are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// The first back-off (`RETRY_BASE_SECONDS`), doubled after each failed attempt.
    pub base_ms: u64,
    /// The longest back-off (`RETRY_MAX_DELAY_SECONDS`).
    pub max_delay_ms: u64,
    /// Attempts allowed in one budget (`RETRY_MAX_ATTEMPTS`).
    pub max_attempts: u32,
    /// How long after the budget began attempts may start (`RETRY_MAX_AGE_HOURS`).
    pub max_age_ms: u64,
    /// Retry an attempt the origin refused (a 4xx but 408, 409, 425, 429) like any other
    /// failure (`RETRY_CLIENT_ERRORS`); by default such an event is dead-lettered at once.
    pub retry_client_errors: bool,
}

impl RetryPolicy {
    /// The back-off after the `failed`-th failed attempt of a budget (1 for the first), with
    /// `jitter` in `[0, 1)` taking off up to a quarter: `min(max, base × 2^(failed-1))`, times
    /// 0.75 to 1.
    pub fn backoff_ms(&self, failed: u32, jitter: f64) -> u64 {
        let doubled = self
            .base_ms
            .saturating_mul(1u64 << failed.saturating_sub(1).min(40));
        let delay = doubled.min(self.max_delay_ms);
        let factor = 0.75 + 0.25 * jitter.clamp(0.0, 1.0);
        ((delay as f64) * factor).round() as u64
    }
}

/// The terms a queued attempt runs and settles under.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttemptTerms {
    /// Its lease and the record's retention.
    pub policy: ClaimPolicy,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
    /// In `[0, 1)`, for its back-off (see [`RetryPolicy::backoff_ms`]).
    pub jitter: f64,
}

/// The answer to storing an event.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnqueueOutcome {
    /// Stored; its first attempt is due now.
    Queued,
    /// The event is already known (queued, in delivery, delivered or dead): nothing stored.
    Duplicate {
        /// Its state.
        state: ClaimState,
    },
    /// A forward made while its sender waited (sync mode, before a switch to queue mode) holds
    /// the event: nothing stored; the sender retries after `retry_at`, and is then answered by
    /// how that forward ended (stored if it failed, a duplicate if it succeeded).
    InFlight {
        /// When to come back (the end of the holder's wait for its answer, else its lease).
        retry_at: Millis,
    },
}

/// Stores the event `key` from `provider` with `payload` (its body and headers) at `now`, due
/// at once, with a fence of its own made from `salt` (fresh random bytes from the claim
/// authority), unless the key is already known. A record past its retention counts as absent.
/// A record left by a forward made while its sender waited (before a switch to queue mode) is
/// replaced when that forward was released or its lease ran out (its outcome unknown: the
/// first attempt is then a takeover), and answered in flight while its lease is live.
pub fn enqueue<S: ClaimStore>(
    store: &mut S,
    key: &str,
    provider: Provider,
    now: Millis,
    policy: ClaimPolicy,
    salt: Nonce,
    payload: &[u8],
) -> Result<EnqueueOutcome, StoreError> {
    let previous = load_current(store, key, now)?;
    let unknown = match previous.as_ref().map(|record| replaceable(record, now)) {
        None => false,
        Some(Ok(unknown)) => unknown,
        Some(Err(outcome)) => return Ok(outcome),
    };
    // Attempt numbers keep increasing over a forward made before, as they do in sync mode.
    let attempts = previous.as_ref().map_or(0, |record| record.attempts);
    let record = ClaimRecord {
        key: key.to_owned(),
        source: Source::Webhook(provider),
        attempts,
        first_seen_at: previous.as_ref().map_or(now, |record| record.first_seen_at),
        expires_at: now.saturating_add(policy.retention_ms),
        lease: Lease {
            fence: Fence::new(attempts, stored_fence_salt(salt)),
            request: None,
            claimed_at: now,
            until: previous
                .as_ref()
                .map_or(now, |record| record.lease.until.min(now)),
            takeover: false,
            wait_ends_at: None,
        },
        last_failure: previous.and_then(|record| record.last_failure),
        stage: Stage::Queue(QueueStage {
            accepted_at: now,
            budget: Budget {
                first_attempt: attempts,
                started_at: now,
            },
            step: QueueStep::Queued {
                next_attempt_at: now,
                unknown,
            },
            storage_id: u64::from_le_bytes(salt.0[..8].try_into().expect("8 of 16 bytes")),
            changes_noted: 0,
            dead_at: None,
            report: None,
        }),
    };
    store.save_payload(key, payload)?;
    store.save(&record)?;
    Ok(EnqueueOutcome::Queued)
}

/// The random part of a stored event's fence: `salt`, fresh random bytes of its own.
fn stored_fence_salt(salt: Nonce) -> [u8; 16] {
    if reverted(Fix::StoredEventFenceIsRandom) {
        [0; 16]
    } else {
        salt.0
    }
}

/// Whether an event may be stored over `record` at `now`: `Ok` with whether the record's last
/// outcome is unknown, or the answer when it may not.
fn replaceable(record: &ClaimRecord, now: Millis) -> Result<bool, EnqueueOutcome> {
    match record.stage {
        // A released claim of a forward made while its sender waited is no delivery.
        Stage::Claim(ClaimStage::Released { unknown, .. }) => {
            Ok(unknown && !reverted(Fix::StoredOverUnknownClaimIsTakeover))
        }
        // Such a forward under a live lease may still fail and be released: the sender must
        // come back. Once its lease ran out with no outcome learned (a crash, a lost answer):
        // stored, its first attempt a takeover.
        Stage::Claim(ClaimStage::Processing) if record.has_live_lease(now) => {
            Err(EnqueueOutcome::InFlight {
                retry_at: record.retry_at(now),
            })
        }
        Stage::Claim(ClaimStage::Processing) => {
            Ok(!reverted(Fix::StoredOverUnknownClaimIsTakeover))
        }
        _ => Err(EnqueueOutcome::Duplicate {
            state: record.state(),
        }),
    }
}

/// The answer to starting an attempt.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The attempt holds the claim until `lease_expires_at`; forward the stored payload.
    Start {
        /// The fence to settle with.
        fence: Fence,
        /// The attempt's number (they keep increasing across redeliveries).
        attempt: u32,
        /// True when it follows an attempt whose outcome is unknown (its answer was lost, or
        /// its lease ran out unfinished).
        takeover: bool,
        /// When this attempt's lease runs out.
        lease_expires_at: Millis,
        /// The event's sender.
        provider: Provider,
        /// The stored event (its headers and body), read before the attempt was written: a
        /// store that cannot read it fails the start, so no attempt is spent on it. `None`
        /// when none is stored.
        payload: Option<Vec<u8>>,
    },
    /// Nothing to deliver now; come back at `at` (the next attempt, or a live lease's end).
    NotDue {
        /// When something may be due.
        at: Millis,
    },
    /// Nothing to deliver: no queued record (delivered, dead, absent, or not queue mode).
    Idle,
    /// The budget had no attempt left when one came due (the last attempt's lease ran out, or
    /// `RETRY_MAX_AGE_HOURS` passed while attempts could not start): dead-lettered for
    /// `reason`, the body kept.
    Dead {
        /// Why the last attempt failed, as recorded.
        reason: Reason,
        /// The event's sender.
        provider: Provider,
    },
}

/// Starts the attempt due at `now`: a `queued` record whose time has come, or an attempt whose
/// lease ran out (it died: the new one is a takeover). Never while an attempt's lease is live,
/// so attempts of one event never overlap, and never beyond the `retry` budget (no more than
/// `max_attempts`, none later than `max_age_ms` after the budget began): the event is
/// dead-lettered instead.
pub fn start_attempt<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
    policy: ClaimPolicy,
    retry: RetryPolicy,
    nonce: Nonce,
) -> Result<AttemptOutcome, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(AttemptOutcome::Idle);
    };
    let (Stage::Queue(queue), Some(provider)) = (&record.stage, record.source.provider()) else {
        return Ok(AttemptOutcome::Idle);
    };
    let queue = queue.clone();
    let (takeover, cut_off) = match due(&record, &queue, now) {
        Ok(due) => due,
        Err(outcome) => return Ok(outcome),
    };
    let made = record.attempts.saturating_sub(queue.budget.first_attempt);
    let too_late = now > queue.budget.started_at.saturating_add(retry.max_age_ms);
    if made >= retry.max_attempts || too_late {
        let reason = dead_letter(&mut record, queue, now, takeover, cut_off);
        record.expires_at = record
            .expires_at
            .max(now.saturating_add(policy.retention_ms));
        store.save(&record)?;
        return Ok(AttemptOutcome::Dead { reason, provider });
    }
    let payload = payload_first(store, key)?;
    let attempt = attempting(&mut record, queue, now, policy, nonce, takeover);
    store.save(&record)?;
    Ok(AttemptOutcome::Start {
        fence: record.lease.fence,
        attempt,
        takeover,
        lease_expires_at: record.lease.until,
        provider,
        payload,
    })
}

/// `record` with its next attempt started at `now` under `policy`, fenced with `nonce`: its
/// number, returned, and its lease.
fn attempting(
    record: &mut ClaimRecord,
    queue: QueueStage,
    now: Millis,
    policy: ClaimPolicy,
    nonce: Nonce,
    takeover: bool,
) -> u32 {
    let attempt = record.attempts.saturating_add(1);
    record.stage = Stage::Queue(QueueStage {
        step: QueueStep::Attempting,
        ..queue
    });
    record.attempts = attempt;
    record.lease = Lease {
        fence: Fence::new(attempt, nonce.0),
        request: None,
        claimed_at: now,
        until: now.saturating_add(policy.lease_ms),
        takeover,
        wait_ends_at: None,
    };
    record.expires_at = record
        .expires_at
        .max(record.lease.until.saturating_add(policy.retention_ms));
    attempt
}

/// The stored event of `key`, read before an attempt is written: a read that fails spends no
/// attempt (the alarm tries again a minute later, the event still queued).
fn payload_first<S: ClaimStore>(store: &mut S, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
    if reverted(Fix::BodyReadBeforeTheAttempt) {
        return Ok(None);
    }
    store.load_payload(key)
}

/// Dead-letters `record` at `now`, its budget spent when an attempt came due: the reason is its
/// last failure, or that the last attempt was cut off, or that none could start in time.
fn dead_letter(
    record: &mut ClaimRecord,
    queue: QueueStage,
    now: Millis,
    takeover: bool,
    cut_off: bool,
) -> Reason {
    let reason = match (cut_off, record.last_failure) {
        (true, _) => Reason::CutOff,
        (false, Some(last)) => last,
        (false, None) => Reason::NoAttemptInTime,
    };
    let step = QueueStep::Dead {
        died_at: now,
        unknown: takeover && !reverted(Fix::DeadLetterKeepsUnknown),
    };
    record.stage = Stage::Queue(died(QueueStage { step, ..queue }, now));
    record.last_failure = Some(reason);
    reason
}

/// `queue` with a step just set: when that step is `dead`, its time of death kept and the
/// dead letter noted for the failure index.
fn died(mut queue: QueueStage, now: Millis) -> QueueStage {
    if matches!(queue.step, QueueStep::Dead { .. }) {
        queue.dead_at = Some(now);
        queue.note(Transition::DeadLettered, now);
    }
    queue
}

/// Whether `record`'s next attempt is due at `now`: whether it is a takeover, and whether the
/// last attempt was cut off (its lease ran out with no answer); or the answer when none is.
fn due(
    record: &ClaimRecord,
    queue: &QueueStage,
    now: Millis,
) -> Result<(bool, bool), AttemptOutcome> {
    match queue.step {
        QueueStep::Queued {
            next_attempt_at, ..
        } if next_attempt_at > now => Err(AttemptOutcome::NotDue {
            at: next_attempt_at,
        }),
        QueueStep::Queued { unknown, .. } => Ok((unknown, false)),
        QueueStep::Attempting if now < record.lease.until => Err(AttemptOutcome::NotDue {
            at: record.lease.until,
        }),
        QueueStep::Attempting => Ok((true, true)),
        QueueStep::Delivered { .. } | QueueStep::Dead { .. } => Err(AttemptOutcome::Idle),
    }
}

/// The answer to a failed attempt.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedOutcome {
    /// Another attempt is due at `next_attempt_at`.
    Retry {
        /// When.
        next_attempt_at: Millis,
    },
    /// No attempt is left in the budget: the event is dead-lettered, its body kept.
    Dead,
    /// The fence is not the current attempt's (its lease ran out and another took over):
    /// nothing changed.
    NotOwner,
}

/// How an attempt failed, as its settle needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The classified reason, kept as the record's last failure.
    pub reason: Reason,
    /// True when the attempt's answer was lost (a time-out, a reset after sending, a gateway
    /// that gave up): the handler may still be running, so the next attempt also waits for
    /// this attempt's lease to end, as a crashed attempt's takeover does, and is a takeover.
    pub answer_lost: bool,
    /// The time the origin asked the worker to come back at (its `Retry-After` on a 429 or
    /// 503, see [`crate::origin::retry_after_at`]): the next attempt starts no earlier, though
    /// never later than `RETRY_MAX_DELAY_SECONDS` from now on its account.
    pub not_before: Option<Millis>,
}

impl Failure {
    /// A failure whose answer arrived (`answer_lost` false), with no time asked.
    pub fn definite(reason: Reason) -> Failure {
        Failure {
            reason,
            answer_lost: false,
            not_before: None,
        }
    }
}

/// Records that the attempt holding `fence` failed: schedules the next attempt after the
/// back-off (`jitter` in `[0, 1)`), and no earlier than the time the origin asked for
/// (`not_before`, capped at `max_delay_ms` from `now`), and never before this attempt's lease
/// ends when its answer was lost, so two runs of the handler do not overlap within the lease;
/// or dead-letters the event when the budget has no attempt left (`max_attempts` made, or the
/// next would start after `max_age_ms`), or at once when the origin refused it (see
/// [`Reason::is_refusal`]; unless `retry_client_errors`) or said it is gone (see
/// [`Reason::is_gone`]; always). Fenced: an attempt whose lease ran out and was taken over
/// changes nothing.
pub fn attempt_failed<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
    failure: Failure,
    terms: AttemptTerms,
) -> Result<FailedOutcome, StoreError> {
    let AttemptTerms {
        policy,
        retry,
        jitter,
    } = terms;
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(FailedOutcome::NotOwner);
    };
    let queue = match &record.stage {
        Stage::Queue(queue) if queue.step == QueueStep::Attempting => queue.clone(),
        _ => return Ok(FailedOutcome::NotOwner),
    };
    if record.lease.fence != *fence {
        return Ok(FailedOutcome::NotOwner);
    }
    let failed = record.attempts.saturating_sub(queue.budget.first_attempt);
    let next = next_attempt_at(failure, retry.max_delay_ms, now, &record)
        .max(now.saturating_add(retry.backoff_ms(failed, jitter)));
    if !failure.answer_lost {
        // The attempt is over: its lease ends now (a redelivery need not wait for it).
        record.lease.until = record.lease.until.min(now);
    }
    let refused =
        (failure.reason.is_refusal() && !retry.retry_client_errors) || failure.reason.is_gone();
    let dead = refused
        || failed >= retry.max_attempts
        || next > queue.budget.started_at.saturating_add(retry.max_age_ms);
    let (outcome, step) = after_failure(dead, next, now, failure.answer_lost);
    record.stage = Stage::Queue(died(QueueStage { step, ..queue }, now));
    record.last_failure = Some(failure.reason);
    // Never expire before the next attempt has had its lease: an acknowledged event is kept
    // until it is delivered or dead, whatever the back-off and the retention.
    let kept_from = if dead {
        now
    } else {
        next.saturating_add(policy.lease_ms)
    };
    record.expires_at = record
        .expires_at
        .max(kept_from.saturating_add(policy.retention_ms));
    store.save(&record)?;
    Ok(outcome)
}

/// Records that the attempt holding `fence` was held back by its origin's gate at `now`
/// (a pause, a cap, an open breaker: see [`crate::origin_gate`]), nothing sent: the event is
/// queued again for `until` and the attempt is given back (`attempts` goes back by one, so
/// the next attempt that is sent carries the same number, under a fence with fresh random
/// bits). Nothing counts against the budget. Its lease ends now, the last failure stays as it
/// was, and `unknown` (true when this attempt was a takeover) carries over to the next
/// attempt, which is a takeover too. Fenced like [`attempt_failed`]; returns `NotOwner`
/// when the fence is no longer the current attempt's, else `Retry` with `until`.
pub fn attempt_held<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
    until: Millis,
    unknown: bool,
    policy: ClaimPolicy,
) -> Result<FailedOutcome, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(FailedOutcome::NotOwner);
    };
    let mut queue = match &record.stage {
        Stage::Queue(queue) if queue.step == QueueStep::Attempting => queue.clone(),
        _ => return Ok(FailedOutcome::NotOwner),
    };
    if record.lease.fence != *fence {
        return Ok(FailedOutcome::NotOwner);
    }
    let next_attempt_at = until.max(now);
    record.lease.until = record.lease.until.min(now);
    record.attempts = record.attempts.saturating_sub(1);
    queue.step = QueueStep::Queued {
        next_attempt_at,
        unknown,
    };
    record.stage = Stage::Queue(queue);
    let kept_from = next_attempt_at.saturating_add(policy.lease_ms);
    record.expires_at = record
        .expires_at
        .max(kept_from.saturating_add(policy.retention_ms));
    store.save(&record)?;
    Ok(FailedOutcome::Retry { next_attempt_at })
}

/// The earliest the attempt after `failure` may start, back-off aside: the time the origin
/// asked for (capped at `max_delay_ms` from `now`), and, when the answer was lost, the end of
/// `record`'s lease, since its handler may still be running.
fn next_attempt_at(
    failure: Failure,
    max_delay_ms: Millis,
    now: Millis,
    record: &ClaimRecord,
) -> Millis {
    let asked = failure
        .not_before
        .map_or(now, |at| at.min(now.saturating_add(max_delay_ms)));
    if failure.answer_lost {
        asked.max(record.lease.until)
    } else {
        asked
    }
}

/// Where a failed attempt leaves its event: dead-lettered at `now` (`dead`), else queued for
/// `next`; either way remembering whether its outcome is unknown.
fn after_failure(
    dead: bool,
    next: Millis,
    now: Millis,
    unknown: bool,
) -> (FailedOutcome, QueueStep) {
    if dead {
        let step = QueueStep::Dead {
            died_at: now,
            unknown,
        };
        return (FailedOutcome::Dead, step);
    }
    let step = QueueStep::Queued {
        next_attempt_at: next,
        unknown,
    };
    let outcome = FailedOutcome::Retry {
        next_attempt_at: next,
    };
    (outcome, step)
}

/// The answer to an operator's redelivery.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedeliverOutcome {
    /// Queued again with a fresh budget, due now.
    Queued,
    /// An attempt holds the claim under a live lease, or its answer was lost and its handler
    /// may still run until the lease ends: nothing changed.
    UnderLease {
        /// When that lease runs out.
        lease_expires_at: Millis,
    },
    /// No record, or no body held (a delivered event, or one not stored by queue mode).
    NoBody,
    /// A redelivery of one dead stored event only (see [`redeliver_dead`]) met another state,
    /// or another stored event of the key: nothing changed.
    NotDead {
        /// The record's state.
        state: ClaimState,
        /// True when it is the stored event asked for (it is no longer dead); false when the
        /// key holds another one (stored again after an operator deleted the first).
        same_event: bool,
    },
}

/// [`redeliver`], only for the stored event `storage_id` of `key` and only while it is dead:
/// what a bulk redelivery asks, so that a stale list never resets the budget of an event
/// already on its way, nor touches an event stored again since.
pub fn redeliver_dead<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
    policy: ClaimPolicy,
    storage_id: u64,
) -> Result<RedeliverOutcome, StoreError> {
    let Some(record) = load_current(store, key, now)? else {
        return Ok(RedeliverOutcome::NoBody);
    };
    let same_event = record
        .queue()
        .is_some_and(|queue| queue.storage_id == storage_id);
    if !same_event || record.state() != ClaimState::Dead {
        return Ok(RedeliverOutcome::NotDead {
            state: record.state(),
            same_event,
        });
    }
    requeue(store, record, now, policy)
}

/// Puts a `dead` (or waiting `queued`) event back in the queue, due now, with a fresh attempt
/// budget from `now`; attempt numbers keep increasing. Refused while the last attempt's
/// handler may still be running (a live lease, or a lost answer within its lease), so a
/// redelivery never runs it alongside itself. When the last attempt's outcome is unknown (its
/// answer was lost, or it was cut off without one), the next attempt is a takeover.
pub fn redeliver<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
    policy: ClaimPolicy,
) -> Result<RedeliverOutcome, StoreError> {
    match load_current(store, key, now)? {
        Some(record) => requeue(store, record, now, policy),
        None => Ok(RedeliverOutcome::NoBody),
    }
}

/// [`redeliver`] of `record`, read from `store` within this same step.
fn requeue<S: ClaimStore>(
    store: &mut S,
    mut record: ClaimRecord,
    now: Millis,
    policy: ClaimPolicy,
) -> Result<RedeliverOutcome, StoreError> {
    if record.attempt_may_still_run(now) {
        return Ok(RedeliverOutcome::UnderLease {
            lease_expires_at: record.lease.until,
        });
    }
    let unknown = match record.queue().map(|queue| &queue.step) {
        Some(QueueStep::Queued { unknown, .. } | QueueStep::Dead { unknown, .. }) => *unknown,
        // An attempt cut off without an answer (its lease ran out): its handler may have run.
        Some(QueueStep::Attempting) => true,
        Some(QueueStep::Delivered { .. }) | None => return Ok(RedeliverOutcome::NoBody),
    };
    let Stage::Queue(queue) = &mut record.stage else {
        return Ok(RedeliverOutcome::NoBody);
    };
    if matches!(queue.step, QueueStep::Dead { .. }) {
        queue.note(Transition::Redelivered, now);
    }
    queue.budget = Budget {
        first_attempt: record.attempts,
        started_at: now,
    };
    queue.step = QueueStep::Queued {
        next_attempt_at: now,
        unknown,
    };
    record.expires_at = record
        .expires_at
        .max(now.saturating_add(policy.retention_ms));
    store.save(&record)?;
    Ok(RedeliverOutcome::Queued)
}

/// When the object must wake for `record`: its next attempt, the end of an attempt's lease (to
/// take over an attempt that died), the next send of changes the failure index has not
/// acknowledged, or its expiry, whichever comes first.
pub fn next_wake(record: &ClaimRecord) -> Millis {
    let due = match record.queue().map(|queue| &queue.step) {
        Some(QueueStep::Queued {
            next_attempt_at, ..
        }) => Some(*next_attempt_at),
        Some(QueueStep::Attempting) => Some(record.lease.until),
        _ => None,
    };
    let report = record.pending_report().map(|report| report.next_at);
    [due, report]
        .into_iter()
        .flatten()
        .fold(record.expires_at, Millis::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{
        finalize, forget, Change, FinalizeOutcome, ForgetOutcome, MemoryClaimStore, Transition,
    };
    use crate::origin::Reason;

    const KEY: &str = "evt_queued";
    const POLICY: ClaimPolicy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 1_000_000,
    };
    const RETRY: RetryPolicy = RetryPolicy {
        base_ms: 1_000,
        max_delay_ms: 4_000,
        max_attempts: 3,
        max_age_ms: 100_000,
        retry_client_errors: false,
    };

    fn start(store: &mut MemoryClaimStore, now: Millis, n: u8) -> (Fence, u32, bool) {
        match start_attempt(store, KEY, now, POLICY, RETRY, Nonce([n; 16])).unwrap() {
            AttemptOutcome::Start {
                fence,
                attempt,
                takeover,
                ..
            } => (fence, attempt, takeover),
            other => panic!("expected an attempt, got {other:?}"),
        }
    }

    /// An attempt that definitely failed (its answer arrived).
    fn definite(reason: &str) -> Failure {
        Failure {
            reason: reason.parse().expect("a reason this service writes"),
            answer_lost: false,
            not_before: None,
        }
    }

    /// An attempt whose answer was lost: its handler may still be running.
    fn lost(reason: &str) -> Failure {
        Failure {
            reason: reason.parse().expect("a reason this service writes"),
            answer_lost: true,
            not_before: None,
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_with_at_most_a_quarter_off() {
        assert_eq!(RETRY.backoff_ms(1, 0.999_999), 1_000);
        assert_eq!(RETRY.backoff_ms(2, 0.999_999), 2_000);
        assert_eq!(RETRY.backoff_ms(3, 0.999_999), 4_000);
        assert_eq!(RETRY.backoff_ms(9, 0.999_999), 4_000, "capped");
        assert_eq!(
            RETRY.backoff_ms(1, 0.0),
            750,
            "jitter takes off at most a quarter"
        );
        assert_eq!(RETRY.backoff_ms(99, 0.5), 3_500, "no overflow");
    }

    #[test]
    fn an_event_is_stored_once_and_its_repeats_store_nothing() {
        let mut store = MemoryClaimStore::new();
        assert_eq!(
            enqueue(
                &mut store,
                KEY,
                Provider::Stripe,
                0,
                POLICY,
                Nonce([9; 16]),
                b"body"
            )
            .unwrap(),
            EnqueueOutcome::Queued
        );
        let stored = store.load(KEY).unwrap();
        assert_eq!(
            enqueue(
                &mut store,
                KEY,
                Provider::Stripe,
                5,
                POLICY,
                Nonce([9; 16]),
                b"other"
            )
            .unwrap(),
            EnqueueOutcome::Duplicate {
                state: ClaimState::Queued
            }
        );
        assert_eq!(store.load(KEY).unwrap(), stored);
        assert_eq!(
            store.load_payload(KEY).unwrap().as_deref(),
            Some(&b"body"[..])
        );
        assert_eq!(next_wake(&stored.unwrap()), 0, "due at once");
    }

    #[test]
    fn a_delivered_event_drops_its_body() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, attempt, takeover) = start(&mut store, 1, 1);
        assert_eq!((attempt, takeover), (1, false));
        assert_eq!(
            start_attempt(&mut store, KEY, 2, POLICY, RETRY, Nonce([2; 16])).unwrap(),
            AttemptOutcome::NotDue { at: 10_001 },
            "attempts never overlap"
        );
        assert!(matches!(
            finalize(&mut store, KEY, &fence, 3, POLICY, None).unwrap(),
            FinalizeOutcome::Finalized { .. }
        ));
        assert_eq!(store.load_payload(KEY).unwrap(), None);
        let record = store.load(KEY).unwrap().unwrap();
        assert_eq!(record.state(), ClaimState::Done);
        assert!(!record.holds_body());
        assert_eq!(
            enqueue(
                &mut store,
                KEY,
                Provider::Stripe,
                4,
                POLICY,
                Nonce([9; 16]),
                b"body"
            )
            .unwrap(),
            EnqueueOutcome::Duplicate {
                state: ClaimState::Done
            }
        );
        assert_eq!(
            start_attempt(&mut store, KEY, 5, POLICY, RETRY, Nonce([3; 16])).unwrap(),
            AttemptOutcome::Idle
        );
    }

    #[test]
    fn failures_retry_with_backoff_then_dead_letter_and_redelivery_starts_a_fresh_budget() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 0, 1);
        let failed = |store: &mut MemoryClaimStore, fence: &Fence, now| {
            attempt_failed(
                store,
                KEY,
                fence,
                now,
                definite("origin answered 500"),
                AttemptTerms {
                    policy: POLICY,
                    retry: RETRY,
                    jitter: 0.999_999,
                },
            )
            .unwrap()
        };
        assert_eq!(
            failed(&mut store, &fence, 100),
            FailedOutcome::Retry {
                next_attempt_at: 1_100
            }
        );
        assert_eq!(
            failed(&mut store, &fence, 100),
            FailedOutcome::NotOwner,
            "settled once"
        );
        assert_eq!(
            start_attempt(&mut store, KEY, 1_099, POLICY, RETRY, Nonce([2; 16])).unwrap(),
            AttemptOutcome::NotDue { at: 1_100 }
        );
        let (fence, attempt, _) = start(&mut store, 1_100, 2);
        assert_eq!(attempt, 2);
        assert_eq!(
            failed(&mut store, &fence, 1_200),
            FailedOutcome::Retry {
                next_attempt_at: 3_200
            }
        );
        let (fence, _, _) = start(&mut store, 3_200, 3);
        assert_eq!(failed(&mut store, &fence, 3_300), FailedOutcome::Dead);
        let dead = store.load(KEY).unwrap().unwrap();
        assert_eq!(dead.state(), ClaimState::Dead);
        assert_eq!(
            dead.last_failure.map(|r| r.to_string()).as_deref(),
            Some("origin answered 500")
        );
        assert!(
            store.load_payload(KEY).unwrap().is_some(),
            "a dead event keeps its body"
        );
        let died = Change {
            transition: Transition::DeadLettered,
            at: 3_300,
            seq: 1,
        };
        assert_eq!(dead.dead_at(), Some(3_300));
        assert_eq!(
            dead.pending_report().map(|r| r.changes.clone()),
            Some(vec![died]),
            "the dead letter waits in the record for the failure index"
        );
        assert_eq!(next_wake(&dead), 3_300, "the alarm sends it at once");
        assert!(!crate::claim::report_sent(&mut store, KEY, &[died], 3_400).unwrap());
        let dead = store.load(KEY).unwrap().unwrap();
        assert_eq!(dead.pending_report(), None, "acknowledged, it leaves");
        assert_eq!(next_wake(&dead), dead.expires_at, "only the expiry is left");

        assert_eq!(
            redeliver(&mut store, KEY, 5_000, POLICY).unwrap(),
            RedeliverOutcome::Queued
        );
        let (fence, attempt, _) = start(&mut store, 5_000, 4);
        assert_eq!(attempt, 4, "attempt numbers keep increasing");
        assert_eq!(
            redeliver(&mut store, KEY, 5_001, POLICY).unwrap(),
            RedeliverOutcome::UnderLease {
                lease_expires_at: 15_000
            }
        );
        assert_eq!(
            failed(&mut store, &fence, 5_100),
            FailedOutcome::Retry {
                next_attempt_at: 6_100
            },
            "a fresh budget: the back-off starts again"
        );
    }

    #[test]
    fn a_finalize_whose_save_fails_keeps_the_body_for_the_retry() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 0, 1);
        // The load succeeds, the save is refused.
        store.fail_later(1, StoreError::Retryable("busy".into()));
        assert!(crate::claim::finalize(&mut store, KEY, &fence, 10, POLICY, None).is_err());
        let record = store.load(KEY).unwrap().unwrap();
        assert_eq!(record.state(), ClaimState::Processing);
        assert_eq!(
            store.load_payload(KEY).unwrap().as_deref(),
            Some(&b"body"[..])
        );
        // The retry finalizes and only then drops the body.
        assert!(matches!(
            crate::claim::finalize(&mut store, KEY, &fence, 20, POLICY, None).unwrap(),
            crate::claim::FinalizeOutcome::Finalized { .. }
        ));
        assert_eq!(store.load_payload(KEY).unwrap(), None);
    }

    #[test]
    fn a_body_left_by_a_failed_delete_goes_with_its_record() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 0, 1);
        // Load and save succeed, the body's delete is refused: the record is done.
        store.fail_later(2, StoreError::Retryable("busy".into()));
        assert!(crate::claim::finalize(&mut store, KEY, &fence, 10, POLICY, None).is_err());
        assert_eq!(store.load(KEY).unwrap().unwrap().state(), ClaimState::Done);
        assert!(store.load_payload(KEY).unwrap().is_some());
        let expires_at = store.load(KEY).unwrap().unwrap().expires_at;
        crate::claim::expire(&mut store, expires_at).unwrap();
        assert_eq!(store.load(KEY).unwrap(), None);
        assert_eq!(
            store.load_payload(KEY).unwrap(),
            None,
            "no body left behind"
        );
    }

    #[test]
    fn an_undelivered_event_never_expires_while_its_attempts_cannot_start() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let stored = store.load(KEY).unwrap().unwrap();
        let long_after = stored.expires_at + 10 * POLICY.retention_ms;
        let sweep = crate::claim::expire(&mut store, long_after).unwrap();
        assert!(sweep.expired.is_empty(), "a queued event is not expired");
        assert!(store.load_payload(KEY).unwrap().is_some());
        // Its attempt still starts when it finally can (within the age limit).
        let patient = RetryPolicy {
            max_age_ms: 100 * POLICY.retention_ms,
            retry_client_errors: false,
            ..RETRY
        };
        let AttemptOutcome::Start { fence, .. } =
            start_attempt(&mut store, KEY, long_after, POLICY, patient, Nonce([1; 16])).unwrap()
        else {
            panic!("expected an attempt");
        };
        // An attempt under way (even past its lease) is not expired either.
        let processing = store.load(KEY).unwrap().unwrap();
        let later = processing.expires_at + 1;
        assert!(crate::claim::expire(&mut store, later)
            .unwrap()
            .expired
            .is_empty());
        // Once delivered, the record expires as any other.
        crate::claim::finalize(&mut store, KEY, &fence, later, POLICY, None).unwrap();
        let done = store.load(KEY).unwrap().unwrap();
        let sweep = crate::claim::expire(&mut store, done.expires_at).unwrap();
        assert_eq!(sweep.expired.len(), 1);
    }

    #[test]
    fn no_attempt_starts_beyond_the_budget_not_even_a_takeover() {
        // Past the age limit before any attempt could start: dead-lettered, body kept.
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        assert_eq!(
            start_attempt(
                &mut store,
                KEY,
                RETRY.max_age_ms + 1,
                POLICY,
                RETRY,
                Nonce([1; 16])
            )
            .unwrap(),
            AttemptOutcome::Dead {
                reason: Reason::NoAttemptInTime,
                provider: Provider::Stripe,
            }
        );
        let dead = store.load(KEY).unwrap().unwrap();
        assert_eq!(dead.state(), ClaimState::Dead);
        assert!(
            store.load_payload(KEY).unwrap().is_some(),
            "the body is kept"
        );
        assert!(dead.expires_at >= RETRY.max_age_ms + 1 + POLICY.retention_ms);

        // The last attempt of the budget (2 here) cut off by a crash: not taken over.
        let two = RetryPolicy {
            max_attempts: 2,
            ..RETRY
        };
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 0, 1);
        let FailedOutcome::Retry { next_attempt_at } = attempt_failed(
            &mut store,
            KEY,
            &fence,
            10,
            definite("origin answered 503"),
            AttemptTerms {
                policy: POLICY,
                retry: two,
                jitter: 0.5,
            },
        )
        .unwrap() else {
            panic!("expected a retry");
        };
        let (_, attempt, _) = start(&mut store, next_attempt_at, 2);
        assert_eq!(attempt, 2);
        let lease_end = store.load(KEY).unwrap().unwrap().lease.until;
        assert_eq!(
            start_attempt(&mut store, KEY, lease_end, POLICY, two, Nonce([3; 16])).unwrap(),
            AttemptOutcome::Dead {
                reason: Reason::CutOff,
                provider: Provider::Stripe,
            }
        );
        assert_eq!(
            store.load(KEY).unwrap().unwrap().attempts,
            2,
            "no third attempt"
        );
        // With an attempt left, the same crash is taken over.
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (_, _, _) = start(&mut store, 0, 1);
        let lease_end = store.load(KEY).unwrap().unwrap().lease.until;
        let (_, attempt, takeover) = start(&mut store, lease_end, 2);
        assert_eq!((attempt, takeover), (2, true));
    }

    /// A store holding an event whose first attempt started at 0 (lease to 10 s), and its fence.
    fn first_attempt() -> (MemoryClaimStore, Fence) {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 0, 1);
        (store, fence)
    }

    /// Settles the attempt holding `fence` as failed at `now`, with the longest back-off.
    fn fail(
        store: &mut MemoryClaimStore,
        fence: &Fence,
        now: Millis,
        failure: Failure,
        retry: RetryPolicy,
    ) -> FailedOutcome {
        attempt_failed(
            store,
            KEY,
            fence,
            now,
            failure,
            AttemptTerms {
                policy: POLICY,
                retry,
                jitter: 0.999_999,
            },
        )
        .unwrap()
    }

    #[test]
    fn redelivering_an_attempt_cut_off_without_an_answer_starts_a_takeover() {
        // The attempt started at 0 never settled (the object was restarted): after its lease
        // an operator redelivers before the alarm has taken it over.
        let lease_end = POLICY.lease_ms;
        let (mut store, _) = first_attempt();
        assert_eq!(
            redeliver(&mut store, KEY, lease_end + 1, POLICY).unwrap(),
            RedeliverOutcome::Queued
        );
        let waiting = store.load(KEY).unwrap().unwrap();
        assert_eq!(waiting.state(), ClaimState::Queued);
        assert!(
            waiting.outcome_unknown(),
            "cut off: its handler may have run"
        );
        assert!(
            next_wake(&waiting) <= lease_end + 1,
            "the alarm runs it now"
        );
        let (_, attempt, takeover) = start(&mut store, lease_end + 2, 2);
        assert_eq!((attempt, takeover), (2, true), "its handler may have run");
    }

    #[test]
    fn an_attempt_whose_answer_was_lost_is_not_retried_before_its_lease_ends() {
        // The answer is lost at 3 s (a time-out, a gateway that gave up): the handler may
        // still run, so the next attempt waits for the lease's end, not just the 1 s back-off.
        let lease_end = POLICY.lease_ms;
        let (mut store, fence) = first_attempt();
        assert_eq!(
            fail(&mut store, &fence, 3_000, lost("time-out"), RETRY),
            FailedOutcome::Retry {
                next_attempt_at: lease_end
            }
        );
        let waiting = store.load(KEY).unwrap().unwrap();
        assert_eq!(waiting.state(), ClaimState::Queued);
        assert_eq!(
            waiting.last_failure.map(|r| r.to_string()).as_deref(),
            Some("time-out")
        );
        assert_eq!(next_wake(&waiting), lease_end);
        assert!(waiting.attempt_may_still_run(lease_end - 1));
        assert_eq!(
            redeliver(&mut store, KEY, 3_001, POLICY).unwrap(),
            RedeliverOutcome::UnderLease {
                lease_expires_at: lease_end
            },
            "an operator's redelivery does not run it alongside itself either"
        );
        assert_eq!(
            forget(&mut store, KEY, &waiting.lease.fence, 3_001).unwrap(),
            ForgetOutcome::StillProcessing {
                lease_expires_at: lease_end
            },
            "nor is it deleted, so that a resend would run it at once"
        );
        let early = start_attempt(
            &mut store,
            KEY,
            lease_end - 1,
            POLICY,
            RETRY,
            Nonce([2; 16]),
        );
        assert_eq!(early.unwrap(), AttemptOutcome::NotDue { at: lease_end });
        let (fence, attempt, takeover) = start(&mut store, lease_end, 2);
        assert_eq!(
            (attempt, takeover),
            (2, true),
            "its handler may have run: a takeover, as in sync mode"
        );

        // A back-off longer than what is left of the lease is kept as it is.
        let slow = RetryPolicy {
            base_ms: 50_000,
            max_delay_ms: 50_000,
            ..RETRY
        };
        assert_eq!(
            fail(
                &mut store,
                &fence,
                11_000,
                lost("origin answered 504"),
                slow
            ),
            FailedOutcome::Retry {
                next_attempt_at: 61_000
            }
        );

        // A definite failure at the same point waits for the back-off only, and ends the lease.
        let (mut other, first) = first_attempt();
        assert_eq!(
            fail(
                &mut other,
                &first,
                3_000,
                definite("origin answered 503"),
                RETRY
            ),
            FailedOutcome::Retry {
                next_attempt_at: 4_000
            }
        );
        let ended = other.load(KEY).unwrap().unwrap();
        assert_eq!(ended.lease.until, 3_000);
        assert!(!ended.attempt_may_still_run(3_000));
        assert_eq!(
            redeliver(&mut other, KEY, 3_001, POLICY).unwrap(),
            RedeliverOutcome::Queued
        );

        // Waiting for the lease's end counts against the age limit like any back-off; then
        // no redelivery either until that lease has run out.
        let young = RetryPolicy {
            max_age_ms: 5_000,
            retry_client_errors: false,
            ..RETRY
        };
        let (mut aged, only) = first_attempt();
        assert_eq!(
            fail(&mut aged, &only, 3_000, lost("time-out"), young),
            FailedOutcome::Dead,
            "the lease ends after the budget's age limit"
        );
        assert!(matches!(
            redeliver(&mut aged, KEY, 3_001, POLICY).unwrap(),
            RedeliverOutcome::UnderLease { .. }
        ));
        let dead = aged.load(KEY).unwrap().unwrap();
        assert_eq!(
            forget(&mut aged, KEY, &dead.lease.fence, 3_001).unwrap(),
            ForgetOutcome::StillProcessing {
                lease_expires_at: lease_end
            }
        );
        assert_eq!(
            forget(&mut aged, KEY, &dead.lease.fence, lease_end).unwrap(),
            ForgetOutcome::Forgotten
        );
    }

    #[test]
    fn the_age_limit_dead_letters_before_the_attempt_limit() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 99_500, 1);
        let short = RetryPolicy {
            max_attempts: 100,
            ..RETRY
        };
        assert_eq!(
            attempt_failed(
                &mut store,
                KEY,
                &fence,
                99_500,
                definite("origin answered 503"),
                AttemptTerms {
                    policy: POLICY,
                    retry: short,
                    jitter: 0.999_999
                }
            )
            .unwrap(),
            FailedOutcome::Dead,
            "the next attempt would start after the age limit"
        );
    }

    #[test]
    fn a_crashed_attempt_is_taken_over_after_its_lease_and_its_fence_is_dead() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (old, _, _) = start(&mut store, 0, 1);
        let processing = store.load(KEY).unwrap().unwrap();
        assert_eq!(next_wake(&processing), 10_000, "wake at the lease's end");
        let (new, attempt, takeover) = start(&mut store, 10_000, 2);
        assert_eq!((attempt, takeover), (2, true));
        assert_eq!(
            attempt_failed(
                &mut store,
                KEY,
                &old,
                10_001,
                lost("time-out"),
                AttemptTerms {
                    policy: POLICY,
                    retry: RETRY,
                    jitter: 0.5
                }
            )
            .unwrap(),
            FailedOutcome::NotOwner
        );
        assert_eq!(
            finalize(&mut store, KEY, &old, 10_001, POLICY, None).unwrap(),
            FinalizeOutcome::NotOwner
        );
        assert!(matches!(
            finalize(&mut store, KEY, &new, 10_002, POLICY, None).unwrap(),
            FinalizeOutcome::Finalized { .. }
        ));
    }

    #[test]
    fn a_forgotten_or_expired_event_takes_its_body_with_it() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let fence = store.load(KEY).unwrap().unwrap().lease.fence;
        assert_eq!(
            forget(&mut store, KEY, &fence, 1).unwrap(),
            ForgetOutcome::Forgotten
        );
        assert_eq!(store.load_payload(KEY).unwrap(), None);
        // A dead letter keeps its body until its retention ends, then both go.
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            2,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let (fence, _, _) = start(&mut store, 2, 1);
        let once = RetryPolicy {
            max_attempts: 1,
            ..RETRY
        };
        assert_eq!(
            attempt_failed(
                &mut store,
                KEY,
                &fence,
                3,
                lost("time-out"),
                AttemptTerms {
                    policy: POLICY,
                    retry: once,
                    jitter: 0.5
                }
            )
            .unwrap(),
            FailedOutcome::Dead
        );
        let dead = store.load(KEY).unwrap().unwrap();
        let sweep = crate::claim::expire(&mut store, dead.expires_at).unwrap();
        assert_eq!(sweep.expired.len(), 1);
        assert_eq!(store.load_payload(KEY).unwrap(), None);
    }

    #[test]
    fn a_forget_cut_short_never_leaves_a_record_without_its_body() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let fence = store.load(KEY).unwrap().unwrap().lease.fence;
        // The load and the record's delete succeed; the body's delete fails.
        store.fail_later(2, StoreError::Retryable("disk".into()));
        assert!(forget(&mut store, KEY, &fence, 1).is_err());
        assert_eq!(
            store.load(KEY).unwrap(),
            None,
            "no record is left to deliver a body that is gone"
        );
        // The orphaned body is never read: a new event under the key stores its own.
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            2,
            POLICY,
            Nonce([9; 16]),
            b"new body",
        )
        .unwrap();
        assert_eq!(
            store.load_payload(KEY).unwrap().as_deref(),
            Some(&b"new body"[..])
        );
    }

    #[test]
    fn a_sync_delivery_meeting_a_queued_event_is_acknowledged() {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let outcome = crate::claim::claim(
            &mut store,
            &crate::claim::ClaimRequest {
                key: KEY,
                now: 1,
                policy: POLICY,
                nonce: Nonce([9; 16]),
                salt: Nonce([9; 16]),
                source: &Source::Webhook(Provider::Stripe),
                answer_within_ms: None,
            },
        )
        .unwrap();
        assert!(matches!(
            outcome,
            crate::claim::ClaimOutcome::DuplicateProcessed { .. }
        ));
        // Also while an attempt of queue mode holds it, and after that attempt died: the queue
        // delivers it and takes a dead attempt over itself; a sync claim never replaces it.
        let (_, attempt, _) = start(&mut store, 2, 1);
        for now in [3, 2 + POLICY.lease_ms + 1] {
            assert!(matches!(
                crate::claim::claim(&mut store, &sync_claim(now)).unwrap(),
                crate::claim::ClaimOutcome::DuplicateProcessed { .. }
            ));
        }
        let record = store.load(KEY).unwrap().unwrap();
        assert_eq!(record.attempts, attempt, "nothing written");
        assert!(record.holds_body());
    }

    fn sync_claim(now: Millis) -> crate::claim::ClaimRequest<'static> {
        crate::claim::ClaimRequest {
            key: KEY,
            now,
            policy: POLICY,
            nonce: Nonce([9; 16]),
            salt: Nonce([9; 16]),
            source: &Source::Webhook(Provider::Stripe),
            answer_within_ms: Some(2_000),
        }
    }

    #[test]
    fn an_attempt_cut_off_and_dead_lettered_is_redelivered_as_a_takeover() {
        // The budget's last attempt is cut off (no answer before its lease ended): dead-lettered
        // when it comes due, then redelivered by an operator. Its handler may have run.
        let one = RetryPolicy {
            max_attempts: 1,
            ..RETRY
        };
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        start_attempt(&mut store, KEY, 0, POLICY, one, Nonce([1; 16])).unwrap();
        let lease_end = POLICY.lease_ms;
        assert!(matches!(
            start_attempt(&mut store, KEY, lease_end, POLICY, one, Nonce([2; 16])).unwrap(),
            AttemptOutcome::Dead {
                reason: Reason::CutOff,
                ..
            }
        ));
        assert_eq!(
            redeliver(&mut store, KEY, lease_end + 1, POLICY).unwrap(),
            RedeliverOutcome::Queued
        );
        let AttemptOutcome::Start { takeover, .. } =
            start_attempt(&mut store, KEY, lease_end + 1, POLICY, one, Nonce([3; 16])).unwrap()
        else {
            panic!("the redelivered attempt starts");
        };
        assert!(takeover, "it follows an attempt whose outcome is unknown");
    }

    #[test]
    fn every_stored_event_has_a_fence_of_its_own() {
        // An operator reads a stored event, forgets it; the sender sends it again and it is
        // stored anew. A second forget with the first read must not delete the new event.
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            POLICY,
            Nonce([1; 16]),
            b"body",
        )
        .unwrap();
        let read = store.load(KEY).unwrap().unwrap().lease.fence;
        assert_eq!(
            forget(&mut store, KEY, &read, 1).unwrap(),
            ForgetOutcome::Forgotten
        );
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            2,
            POLICY,
            Nonce([2; 16]),
            b"body",
        )
        .unwrap();
        assert_eq!(
            forget(&mut store, KEY, &read, 3).unwrap(),
            ForgetOutcome::NotOwner,
            "the fence read belonged to the record forgotten before"
        );
        assert!(store.load(KEY).unwrap().is_some());
        assert!(store.load_payload(KEY).unwrap().is_some());
    }

    #[test]
    fn storing_meets_a_forward_made_in_sync_mode() {
        // A forward made while its sender waited, before a switch to queue mode: while its
        // lease is live the outcome may still be a failure, so the sender is told to come back.
        let mut store = MemoryClaimStore::new();
        crate::claim::claim(&mut store, &sync_claim(0)).unwrap();
        assert_eq!(
            enqueue(
                &mut store,
                KEY,
                Provider::Stripe,
                1_000,
                POLICY,
                Nonce([9; 16]),
                b"body"
            )
            .unwrap(),
            EnqueueOutcome::InFlight { retry_at: 2_000 }
        );
        assert_eq!(store.load_payload(KEY).unwrap(), None, "nothing stored");
        // Its lease ran out with no outcome (a crash): stored, attempt numbers continuing.
        let late = POLICY.lease_ms + 1;
        assert_eq!(
            enqueue(
                &mut store,
                KEY,
                Provider::Stripe,
                late,
                POLICY,
                Nonce([9; 16]),
                b"body"
            )
            .unwrap(),
            EnqueueOutcome::Queued
        );
        let record = store.load(KEY).unwrap().unwrap();
        assert_eq!(
            (record.state(), record.attempts, record.first_seen_at),
            (ClaimState::Queued, 1, 0)
        );
        let (fence, attempt, takeover) = start(&mut store, late, 2);
        assert_eq!(attempt, 2);
        assert!(
            takeover,
            "the forward's outcome was never learned: its handler may have run"
        );
        // The budget counts the attempts of queue mode only.
        assert_eq!(
            attempt_failed(
                &mut store,
                KEY,
                &fence,
                late + 1,
                definite("origin answered 503"),
                AttemptTerms {
                    policy: POLICY,
                    retry: RETRY,
                    jitter: 0.0
                }
            )
            .unwrap(),
            FailedOutcome::Retry {
                next_attempt_at: late + 1 + 750
            }
        );
    }

    #[test]
    fn a_queued_event_outlives_its_next_attempt_whatever_the_retention() {
        // A retention shorter than the back-off must not delete an acknowledged event before
        // its next attempt.
        let short = ClaimPolicy {
            lease_ms: 1_000,
            retention_ms: 500,
        };
        let slow = RetryPolicy {
            base_ms: 60_000,
            max_delay_ms: 3_600_000,
            max_attempts: 10,
            max_age_ms: 100_000_000,
            retry_client_errors: false,
        };
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Stripe,
            0,
            short,
            Nonce([9; 16]),
            b"body",
        )
        .unwrap();
        let Ok(AttemptOutcome::Start { fence, .. }) =
            start_attempt(&mut store, KEY, 0, short, RETRY, Nonce([1; 16]))
        else {
            panic!("no attempt")
        };
        let next = match attempt_failed(
            &mut store,
            KEY,
            &fence,
            10,
            definite("origin answered 503"),
            AttemptTerms {
                policy: short,
                retry: slow,
                jitter: 0.0,
            },
        ) {
            Ok(FailedOutcome::Retry { next_attempt_at }) => next_attempt_at,
            other => panic!("{other:?}"),
        };
        assert_eq!(next, 10 + 45_000);
        let record = store.load(KEY).unwrap().unwrap();
        assert!(record.expires_at >= next + short.lease_ms + short.retention_ms);
        assert_eq!(
            next_wake(&record),
            next,
            "the alarm wakes for the attempt, not the expiry"
        );
        assert!(matches!(
            start_attempt(&mut store, KEY, next, short, RETRY, Nonce([2; 16])).unwrap(),
            AttemptOutcome::Start { attempt: 2, .. }
        ));
    }
}
