//! The rules of claiming: claim, finalize, release and expire, over any [`ClaimStore`].
//!
//! Each function reads the key's record, decides, and writes at most once, with no other I/O in
//! between; run inside the Durable Object (whose SQLite calls are synchronous) each is one
//! atomic step, so two callers racing on one key always see each other's result.

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::fence::{Fence, Nonce};
use super::record::{
    CachedResponse, ClaimRecord, ClaimStage, ClaimState, Finished, Lease, Millis, QueueStage,
    QueueStep, Source, Stage, Transition,
};
use super::store::ClaimStore;
use crate::origin::Reason;

/// How long claims and records last; travels with each request so each front door has its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClaimPolicy {
    /// How long a claim is honoured before another delivery may take it over.
    pub lease_ms: u64,
    /// How long a record is kept after its last change (finish, release or claim).
    pub retention_ms: u64,
}

/// The answer to a claim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// The caller holds the claim until `lease_expires_at` and must finalize or release it with
    /// `fence`. `takeover` is true when an earlier claim's lease ran out unfinished.
    Claimed {
        /// The fence to present when finalizing or releasing.
        fence: Fence,
        /// Which attempt this is (1 for the first claim of the key).
        attempt: u32,
        /// True when this claim replaced one whose lease ran out.
        takeover: bool,
        /// When this claim's lease runs out.
        lease_expires_at: Millis,
        /// True when this is the same claim request again (same nonce): the claim was won
        /// before, and its work may already be under way.
        #[serde(default)]
        repeated: bool,
    },
    /// The key's work already finished at `finished_at`: acknowledge, run nothing.
    DuplicateProcessed {
        /// When the work finished.
        finished_at: Millis,
        /// The response cached when it finished, if one was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<CachedResponse>,
    },
    /// Another attempt holds a live claim until `lease_expires_at`: come back at `retry_at`.
    DuplicateInflight {
        /// When the live claim's lease runs out.
        lease_expires_at: Millis,
        /// When to come back: the end of the holder's wait for its handler's answer while that
        /// lasts, else the end of the lease.
        retry_at: Millis,
    },
    /// The key is bound to a request with another fingerprint: refused, nothing written.
    FingerprintMismatch,
}

/// The answer to a finalize.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalizeOutcome {
    /// The key is done. `already` is true when this fence had finalized it before.
    Finalized {
        /// When the work finished (the first finalize's time).
        finished_at: Millis,
        /// True when this was a repeat of a finalize that had already succeeded.
        already: bool,
    },
    /// The fence is not the current claim's (taken over, or released): nothing changed.
    NotOwner,
    /// No record for the key: nothing changed.
    NotFound,
}

/// The answer to a release.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseOutcome {
    /// The claim is given back; the next delivery claims the key at once. `already` is true when
    /// this fence had released it before.
    Released {
        /// True when this was a repeat of a release that had already succeeded.
        already: bool,
    },
    /// The key is done; a release never undoes that. Nothing changed.
    AlreadyDone,
    /// The fence is not the current claim's: nothing changed.
    NotOwner,
    /// No record for the key: nothing changed.
    NotFound,
}

/// The answer to a forget.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForgetOutcome {
    /// The record is deleted: the next delivery of the key runs the work again.
    Forgotten,
    /// A claim is held (`processing`: release it first), or a queue attempt whose answer was
    /// lost may still be running until its lease ends. Nothing changed.
    StillProcessing {
        /// When the lease of the claim or attempt ends (a held claim can then be released
        /// without force; a lost queue attempt's record can then be deleted).
        lease_expires_at: Millis,
    },
    /// The fence is not the record's (it changed since it was read): nothing changed.
    NotOwner,
    /// No record for the key.
    NotFound,
}

/// A record deleted by [`expire`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Expired {
    /// The key whose record was deleted.
    pub key: String,
    /// Its state when deleted; `Processing` means a claim was abandoned and never finished.
    pub state: ClaimState,
}

/// What [`expire`] did, and when it must run again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    /// The records deleted.
    pub expired: Vec<Expired>,
    /// The earliest `expires_at` of the records left, if any.
    pub next_expiry: Option<Millis>,
}

/// The record of `key` as the rules see it: a record past its retention counts as absent, so
/// the answer never depends on when the deleting alarm happens to run.
pub(super) fn load_current<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
) -> Result<Option<ClaimRecord>, StoreError> {
    let record = store.load(key)?;
    if let Some(found) = &record {
        if found.key != key {
            return Err(StoreError::Fatal(format!(
                "record stored under {key:?} names the key {:?}",
                found.key
            )));
        }
        if found.is_expired(now) {
            return Ok(None);
        }
    }
    Ok(record)
}

/// One claim request: who asks for which key, when, and on what terms.
#[derive(Clone, Copy, Debug)]
pub struct ClaimRequest<'a> {
    /// The key (event id or Idempotency-Key scope).
    pub key: &'a str,
    /// The claim authority's clock.
    pub now: Millis,
    /// Lease and retention.
    pub policy: ClaimPolicy,
    /// The request's random id: the same nonce again is the same request.
    pub nonce: Nonce,
    /// Fresh random bytes from the claim authority for the fence of a new claim.
    pub salt: Nonce,
    /// Who the key belongs to: a webhook sender, or an Idempotency-Key request's fingerprint.
    pub source: &'a Source,
    /// How long, from `now`, the winner will wait for its handler's answer (forward time-out
    /// plus the late-answer wait); `None` when the caller does not say.
    pub answer_within_ms: Option<u64>,
}

/// Tries to claim `request.key` at `request.now`.
///
/// Exactly one caller wins while a claim is live: no record, a released record, or a claim whose
/// lease ran out → `Claimed` with a new fence made from the nonce (a takeover when the lease
/// ran out, or when the released attempt's outcome is unknown); a done record →
/// `DuplicateProcessed`; a live claim → `DuplicateInflight`, with the time to come back (the
/// end of the holder's wait for its answer while that lasts, else the end of its lease). An
/// event stored by queue mode is acknowledged as a duplicate: the queue delivers it. Writes
/// only when it claims.
///
/// A claim sent again with the same nonce while its claim stands (a retry after a lost answer)
/// gets the same `Claimed` back, marked `repeated`, so retrying a claim never strands it and
/// the caller can tell that the work may already be under way. The fence's random part is the
/// authority's own `salt`, never the request's nonce: the same request sent again after its
/// record was forgotten makes a claim whose fence no earlier attempt holds.
///
/// The fingerprint binds the key to one request: while a record exists, a claim with another
/// fingerprint is `FingerprintMismatch` (webhook claims carry none).
pub fn claim<S: ClaimStore>(
    store: &mut S,
    request: &ClaimRequest<'_>,
) -> Result<ClaimOutcome, StoreError> {
    let ClaimRequest {
        key, now, source, ..
    } = *request;
    let current = load_current(store, key, now)?;
    if current
        .as_ref()
        .is_some_and(|record| record.source.fingerprint() != source.fingerprint())
    {
        return Ok(ClaimOutcome::FingerprintMismatch);
    }
    if let Some(declined) = current
        .as_ref()
        .and_then(|record| decline(record, request.nonce, now))
    {
        return Ok(declined);
    }
    let record = claimed(request, current);
    store.save(&record)?;
    Ok(ClaimOutcome::Claimed {
        fence: record.lease.fence,
        attempt: record.attempts,
        takeover: record.lease.takeover,
        lease_expires_at: record.lease.until,
        repeated: false,
    })
}

/// The record of a claim won by `request` over `previous` (none, released, or a claim whose
/// lease ran out): attempt + 1, a takeover when the previous outcome is unknown, the history
/// kept.
fn claimed(request: &ClaimRequest<'_>, previous: Option<ClaimRecord>) -> ClaimRecord {
    let ClaimRequest {
        key, now, policy, ..
    } = *request;
    let (attempts, first_seen_at, takeover, last_failure) = match previous {
        None => (0, now, false, None),
        Some(record) => (
            record.attempts,
            record.first_seen_at,
            record.state() == ClaimState::Processing || record.outcome_unknown(),
            record.last_failure,
        ),
    };
    let attempt = attempts.saturating_add(1);
    let lease_expires_at = now.saturating_add(policy.lease_ms);
    ClaimRecord {
        key: key.to_owned(),
        source: request.source.clone(),
        attempts: attempt,
        first_seen_at,
        // A claim's record lives until retention after its lease ends: an abandoned claim is
        // kept that long, and a claim finalized within its lease expires earlier than this, so
        // the alarm set now for this time deletes it without being set again.
        expires_at: lease_expires_at.saturating_add(policy.retention_ms),
        lease: Lease {
            fence: Fence::new(attempt, request.salt.0),
            request: Some(request.nonce),
            claimed_at: now,
            until: lease_expires_at,
            takeover,
            wait_ends_at: request
                .answer_within_ms
                .map(|ms| now.saturating_add(ms).min(lease_expires_at)),
        },
        last_failure,
        stage: Stage::Claim(ClaimStage::Processing),
    }
}

/// The answer to a claim that meets `record` with `nonce` at `now`, when it does not claim.
fn decline(record: &ClaimRecord, nonce: Nonce, now: Millis) -> Option<ClaimOutcome> {
    match &record.stage {
        Stage::Claim(ClaimStage::Done(finished)) => Some(ClaimOutcome::DuplicateProcessed {
            finished_at: finished.finished_at,
            response: finished.response.clone(),
        }),
        // Stored by queue mode, which delivers it (or dead-letters it) on its own, taking over
        // an attempt that died itself.
        Stage::Queue(queue) => Some(ClaimOutcome::DuplicateProcessed {
            finished_at: match queue.step {
                QueueStep::Delivered { finished_at } => finished_at,
                _ => record.first_seen_at,
            },
            response: None,
        }),
        // The same request again (its answer was lost): the same claim, nothing written.
        Stage::Claim(ClaimStage::Processing) if record.lease.request == Some(nonce) => {
            Some(ClaimOutcome::Claimed {
                fence: record.lease.fence.clone(),
                attempt: record.attempts,
                takeover: record.lease.takeover,
                lease_expires_at: record.lease.until,
                repeated: true,
            })
        }
        Stage::Claim(ClaimStage::Processing) if record.has_live_lease(now) => {
            Some(ClaimOutcome::DuplicateInflight {
                lease_expires_at: record.lease.until,
                retry_at: record.retry_at(now),
            })
        }
        Stage::Claim(ClaimStage::Processing | ClaimStage::Released { .. }) => None,
    }
}

/// Marks `key` done for the holder of `fence`, keeping `response` to replay to repeats; the
/// record is then kept for `policy.retention_ms`. A queued delivery's stored body is dropped.
///
/// Only the current claim's fence turns `processing` into `done`, also after its lease ran out
/// as long as nobody took the claim over. The same fence again → the same success (the first
/// response stays). Any other fence, or a claim its holder released → `NotOwner`, nothing
/// written.
pub fn finalize<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
    policy: ClaimPolicy,
    response: Option<CachedResponse>,
) -> Result<FinalizeOutcome, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(FinalizeOutcome::NotFound);
    };
    if record.lease.fence != *fence {
        return Ok(FinalizeOutcome::NotOwner);
    }
    if let Some(finished_at) = record.finished_at() {
        return Ok(FinalizeOutcome::Finalized {
            finished_at,
            already: true,
        });
    }
    let delivered = match &mut record.stage {
        Stage::Claim(stage @ ClaimStage::Processing) => {
            *stage = ClaimStage::Done(Finished {
                finished_at: now,
                response,
            });
            false
        }
        Stage::Queue(queue) if queue.step == QueueStep::Attempting => {
            queue.step = QueueStep::Delivered { finished_at: now };
            if queue.dead_at.is_some() {
                queue.note(Transition::Recovered, now);
            }
            true
        }
        _ => return Ok(FinalizeOutcome::NotOwner),
    };
    record.expires_at = now.saturating_add(policy.retention_ms);
    // The record is saved first, so that a save refused by the store leaves the body there for
    // the attempt's retry.
    store.save(&record)?;
    if delivered {
        store.delete_payload(key)?;
    }
    Ok(FinalizeOutcome::Finalized {
        finished_at: now,
        already: false,
    })
}

/// Gives back the claim on `key` held with `fence`, so the next delivery runs the work again.
///
/// Only the current claim's fence releases it; the record keeps its history (attempts,
/// `reason`) in state `released` for `policy.retention_ms`. An operator's release
/// ([`Reason::Operator`]) leaves the attempt's outcome unknown, so the next claim is a
/// takeover. A done record is never released (`AlreadyDone`); the same fence again → the same
/// success; any other fence, or a queued delivery → `NotOwner`.
pub fn release<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
    reason: Reason,
    policy: ClaimPolicy,
) -> Result<ReleaseOutcome, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(ReleaseOutcome::NotFound);
    };
    if record.lease.fence != *fence {
        return Ok(ReleaseOutcome::NotOwner);
    }
    match record.stage {
        Stage::Claim(ClaimStage::Done(_))
        | Stage::Queue(QueueStage {
            step: QueueStep::Delivered { .. },
            ..
        }) => Ok(ReleaseOutcome::AlreadyDone),
        Stage::Claim(ClaimStage::Released { .. }) => Ok(ReleaseOutcome::Released { already: true }),
        Stage::Queue(_) => Ok(ReleaseOutcome::NotOwner),
        Stage::Claim(ClaimStage::Processing) => {
            record.stage = Stage::Claim(ClaimStage::Released {
                released_at: now,
                unknown: reason == Reason::Operator,
            });
            record.last_failure = Some(reason);
            record.expires_at = now.saturating_add(policy.retention_ms);
            store.save(&record)?;
            Ok(ReleaseOutcome::Released { already: false })
        }
    }
}

/// Records that the holder of `fence` on `key` stopped waiting for its answer at `now` (the
/// outcome is unknown and nothing more will be learned), so a repeat is told to come back at
/// the end of the lease, when the claim can be taken over, rather than at the end of a wait
/// that is over. The claim itself is kept: it stays `processing` until its lease ends.
///
/// Writes only when the holder's claim is still `processing` and its wait lay ahead; any other
/// fence or state → nothing written. Returns true when it wrote.
pub fn stop_waiting<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
) -> Result<bool, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(false);
    };
    let waits = record.lease.wait_ends_at.is_some_and(|at| at > now);
    let processing = record.stage == Stage::Claim(ClaimStage::Processing);
    if record.lease.fence != *fence || !processing || !waits {
        return Ok(false);
    }
    record.lease.wait_ends_at = Some(now);
    store.save(&record)?;
    Ok(true)
}

/// Deletes the finished or released record of `key` whose fence is `fence` (as an operator
/// read it), so the key is processed again from scratch. A `processing` record is never
/// deleted, nor one whose last attempt may still be running (a queue attempt whose answer was
/// lost, until its lease ends): `StillProcessing`. A record whose fence changed since it was
/// read is left alone (`NotOwner`).
pub fn forget<S: ClaimStore>(
    store: &mut S,
    key: &str,
    fence: &Fence,
    now: Millis,
) -> Result<ForgetOutcome, StoreError> {
    let Some(record) = load_current(store, key, now)? else {
        return Ok(ForgetOutcome::NotFound);
    };
    if record.lease.fence != *fence {
        return Ok(ForgetOutcome::NotOwner);
    }
    if record.state() == ClaimState::Processing || record.attempt_may_still_run(now) {
        return Ok(ForgetOutcome::StillProcessing {
            lease_expires_at: record.lease.until,
        });
    }
    delete_record(store, &record)?;
    Ok(ForgetOutcome::Forgotten)
}

/// The record of `key` as the rules see it at `now`: `None` when there is none or it is past
/// its retention (even before the alarm deletes it). Changes nothing.
pub fn inspect<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
) -> Result<Option<ClaimRecord>, StoreError> {
    load_current(store, key, now)
}

/// Deletes `record` and the body it holds, if any.
fn delete_record<S: ClaimStore>(store: &mut S, record: &ClaimRecord) -> Result<(), StoreError> {
    // The record first: a body left behind by a failed second delete is never read (only a
    // queued record leads to it), and the object's last sweep deletes all its storage. A
    // delivered event's body too: a finalize saves the record before it deletes the body, and
    // that delete may have failed.
    store.delete(&record.key)?;
    if record.queue().is_some() {
        store.delete_payload(&record.key)?;
    }
    Ok(())
}

/// Deletes every record whose retention ended at or before `now`, and tells when the next one
/// ends. Running it again changes nothing (alarms may fire more than once).
pub fn expire<S: ClaimStore>(store: &mut S, now: Millis) -> Result<Sweep, StoreError> {
    let mut sweep = Sweep::default();
    for key in store.keys()? {
        let Some(record) = store.load(&key)? else {
            continue;
        };
        if record.is_expired(now) {
            delete_record(store, &record)?;
            sweep.expired.push(Expired {
                key,
                state: record.state(),
            });
        } else {
            sweep.next_expiry = Some(
                sweep
                    .next_expiry
                    .map_or(record.expires_at, |at| at.min(record.expires_at)),
            );
        }
    }
    Ok(sweep)
}
