//! The claim record: what the claim authority keeps for one key, typed so that each stage
//! carries only its own data.
//!
//! A key lives one of two lives. A delivery forwarded while its sender waits (a webhook in
//! sync mode, an Idempotency-Key request) is a *claim*: `processing`, then `done` or
//! `released`. An event stored in queue mode is a *queued delivery*: `queued`, `processing`
//! while an attempt runs, then `done` or `dead`. What every record shares (its key, sender,
//! attempts, latest lease and last failure) sits beside its stage.

use serde::{Deserialize, Serialize};

use super::fence::{Fence, Nonce};
use crate::origin::Reason;
use crate::providers::Provider;

/// Milliseconds since the Unix epoch, as read from the claim authority's own clock.
pub type Millis = u64;

/// Where a key stands: the word shown in log lines and by the admin API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimState {
    /// One attempt holds the claim until its lease runs out; repeats are told to come back.
    Processing,
    /// The work finished; repeats are acknowledged without running anything.
    Done,
    /// The last attempt failed and gave its claim back; the next delivery claims the key at once.
    Released,
    /// Queue mode: the event is stored and waits for its next attempt.
    Queued,
    /// Queue mode: every attempt allowed failed; the body is kept until the retention ends.
    Dead,
}

/// Who the key belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A webhook delivery from this sender.
    Webhook(Provider),
    /// An Idempotency-Key request; the key is bound to the request with this fingerprint.
    Api {
        /// The request's fingerprint: a repeat with another is refused.
        fingerprint: String,
    },
}

impl Source {
    /// The request fingerprint the key is bound to (Idempotency-Key records only).
    pub fn fingerprint(&self) -> Option<&str> {
        match self {
            Source::Webhook(_) => None,
            Source::Api { fingerprint } => Some(fingerprint),
        }
    }

    /// The webhook sender, if a webhook delivery.
    pub fn provider(&self) -> Option<Provider> {
        match self {
            Source::Webhook(provider) => Some(*provider),
            Source::Api { .. } => None,
        }
    }
}

/// The latest claim (or queued attempt) of a key. For a queued event no attempt has started
/// for yet, its acceptance, with a fence of its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    /// The claim's fence: every settle and every operator change presents it. Its random part
    /// comes from the claim authority at each claim, so no two claims share one.
    pub fence: Fence,
    /// The request that won it (a delivery's nonce), so that the same request sent again is
    /// recognised as the same claim. None for queued attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Nonce>,
    /// When it was won.
    pub claimed_at: Millis,
    /// When it runs out: a `processing` claim is taken over after it, and an attempt whose
    /// answer was lost may still run until then.
    pub until: Millis,
    /// True when it followed an attempt whose outcome is unknown (its handler may have run).
    pub takeover: bool,
    /// Until when its holder waits for its handler's answer (the forward time-out plus the
    /// late-answer wait), moved back to the moment it gave up when the answer was lost. Only
    /// for a delivery forwarded while its sender waited; `None` in records before schema 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ends_at: Option<Millis>,
}

/// Where a record stands in its life.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// A delivery forwarded while its sender waited.
    Claim(ClaimStage),
    /// An event stored and delivered by the object from its alarm (queue mode).
    Queue(QueueStage),
}

/// The stage of a delivery forwarded while its sender waited.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStage {
    /// Its claim is held under the lease.
    Processing,
    /// It finished.
    Done(Finished),
    /// Its last attempt failed and gave the claim back.
    Released {
        /// When.
        released_at: Millis,
        /// True when the attempt's outcome is unknown (an operator released it while its
        /// handler may have run): the next claim is a takeover.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unknown: bool,
    },
}

/// How a key's work finished.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finished {
    /// When.
    pub finished_at: Millis,
    /// The answer kept to replay to repeats (Idempotency-Key records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<CachedResponse>,
}

/// The stage of an event stored in queue mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueueStage {
    /// When the event was stored and acknowledged.
    pub accepted_at: Millis,
    /// The attempt budget now running (renewed by a redelivery).
    pub budget: Budget,
    /// Where the delivery stands.
    pub step: QueueStep,
    /// Random, drawn by the object when the event was stored: tells this stored event from an
    /// earlier one of the same key that an operator deleted (0 for events stored before the
    /// failure index).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub storage_id: u64,
    /// How many changes were noted for the failure index so far: each change's number.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub changes_noted: u32,
    /// When the event was last dead-lettered (kept after a redelivery: its later delivery is a
    /// recovery).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_at: Option<Millis>,
    /// Changes the failure index has not acknowledged yet; the object's alarm sends them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<PendingReport>,
}

/// A change of a stored event that needs a person, as the failure index learns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    /// Every attempt allowed failed.
    DeadLettered,
    /// An operator put it back in the queue after it was dead-lettered.
    Redelivered,
    /// Delivered after it had been dead-lettered.
    Recovered,
    /// An operator deleted it while the index showed it (reported by the admin API itself:
    /// the record is gone).
    Forgotten,
}

/// One transition of one stored event: numbered in order, so the failure index applies each
/// once, however often it is sent (two may share a millisecond).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Change {
    /// What happened.
    pub transition: Transition,
    /// When, by the event's object's clock.
    pub at: Millis,
    /// Its number among the stored event's changes (from 1).
    pub seq: u32,
}

/// For serde: leave a zero out.
fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// The most changes a record keeps for the failure index; past it the oldest is dropped (the
/// index still learns the event's state now from the newest).
pub const MAX_PENDING_CHANGES: usize = 8;

/// Changes not yet acknowledged by the failure index, oldest first: sent by the object's alarm,
/// sent again with a growing pause until the index takes them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PendingReport {
    /// The changes, oldest first.
    pub changes: Vec<Change>,
    /// How many sends failed so far.
    pub tries: u32,
    /// When to send them (again).
    pub next_at: Millis,
}

impl QueueStage {
    /// Notes `transition` at `now` for the failure index: the next change's number, added to
    /// the outbox, which is sent at once (a new change does not wait out the back-off of older
    /// ones).
    pub fn note(&mut self, transition: Transition, now: Millis) {
        self.changes_noted = self.changes_noted.saturating_add(1);
        let change = Change {
            transition,
            at: now,
            seq: self.changes_noted,
        };
        self.report = Some(PendingReport::with(self.report.take(), change, now));
    }
}

impl PendingReport {
    /// `pending` with `change` added, due at `now`.
    pub fn with(pending: Option<PendingReport>, change: Change, now: Millis) -> Self {
        let mut report = pending.unwrap_or(PendingReport {
            changes: Vec::new(),
            tries: 0,
            next_at: now,
        });
        report.changes.push(change);
        let excess = report.changes.len().saturating_sub(MAX_PENDING_CHANGES);
        report.changes.drain(..excess);
        report.tries = 0;
        report.next_at = now;
        report
    }
}

/// An attempt budget: how many attempts, until when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// Attempts made before it began (0, or the attempts before the last redelivery).
    pub first_attempt: u32,
    /// When it began (acceptance, or the last redelivery).
    pub started_at: Millis,
}

/// Where a queued delivery stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueStep {
    /// Stored; the next attempt is due then. Its body is held.
    Queued {
        /// When the next attempt is due.
        next_attempt_at: Millis,
        /// True when the last attempt's outcome is unknown (its answer was lost, or its lease
        /// ran out): the next attempt is a takeover, and not before that lease ends.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unknown: bool,
    },
    /// An attempt holds the lease. Its body is held.
    Attempting,
    /// Delivered; its body is dropped.
    Delivered {
        /// When.
        finished_at: Millis,
    },
    /// Every attempt allowed failed; its body is kept until the retention ends.
    Dead {
        /// When.
        died_at: Millis,
        /// True when the last attempt's outcome is unknown (as for `Queued`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unknown: bool,
    },
}

/// Everything kept for one key.
///
/// Guarantees kept by the rules in [`super::engine`] and [`super::queue`]: `lease.fence` is
/// the fence of the latest claim or attempt, a new one (with fresh random bits) each time; a
/// done record is never turned back into anything else; `expires_at` is when the record may
/// be deleted, never while it holds an event still to deliver.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The key this record belongs to (a Stripe event id, `{provider}:{id}`, or an
    /// Idempotency-Key scope).
    pub key: String,
    /// Who the key belongs to.
    pub source: Source,
    /// How many claims or attempts were won for this key (1 for the first).
    pub attempts: u32,
    /// When the key was first seen.
    pub first_seen_at: Millis,
    /// When the record may be deleted.
    pub expires_at: Millis,
    /// The latest claim or attempt.
    pub lease: Lease,
    /// Why the last attempt did not succeed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<Reason>,
    /// Where it stands.
    pub stage: Stage,
}

/// A response kept to be replayed to repeats of an idempotent request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CachedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The headers kept (a safe list: no cookies, no hop-by-hop headers), in order.
    pub headers: Vec<(String, String)>,
    /// The body, byte for byte (base64 in the stored JSON).
    #[serde(with = "base64_bytes")]
    pub body: Vec<u8>,
    /// True when the body was larger than the cache limit and was not kept (the first caller
    /// received it whole).
    pub body_omitted: bool,
    /// True when nobody received the body and it is not kept: it broke off or stalled after the
    /// status and headers arrived, or it came in a late answer too large to keep.
    #[serde(default)]
    pub body_lost: bool,
}

mod base64_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

impl ClaimRecord {
    /// Where it stands, as one word.
    pub fn state(&self) -> ClaimState {
        match &self.stage {
            Stage::Claim(ClaimStage::Processing)
            | Stage::Queue(QueueStage {
                step: QueueStep::Attempting,
                ..
            }) => ClaimState::Processing,
            Stage::Claim(ClaimStage::Done(_))
            | Stage::Queue(QueueStage {
                step: QueueStep::Delivered { .. },
                ..
            }) => ClaimState::Done,
            Stage::Claim(ClaimStage::Released { .. }) => ClaimState::Released,
            Stage::Queue(QueueStage {
                step: QueueStep::Queued { .. },
                ..
            }) => ClaimState::Queued,
            Stage::Queue(QueueStage {
                step: QueueStep::Dead { .. },
                ..
            }) => ClaimState::Dead,
        }
    }

    /// The fence of the latest claim or attempt.
    pub fn fence(&self) -> &Fence {
        &self.lease.fence
    }

    /// The queue stage, for a record of queue mode.
    pub fn queue(&self) -> Option<&QueueStage> {
        match &self.stage {
            Stage::Queue(queue) => Some(queue),
            Stage::Claim(_) => None,
        }
    }

    /// True while the event's body is stored beside the record (queue mode: queued, in an
    /// attempt, or dead).
    pub fn holds_body(&self) -> bool {
        self.queue()
            .is_some_and(|queue| !matches!(queue.step, QueueStep::Delivered { .. }))
    }

    /// True while the record holds an acknowledged event still to deliver (queue mode: queued,
    /// or an attempt under way). Such a record never expires: it stays until it is delivered
    /// or dead-lettered, whatever the retention, so an event acknowledged to its sender is
    /// never dropped (not even while attempts cannot start).
    pub fn holds_undelivered_event(&self) -> bool {
        self.queue().is_some_and(|queue| {
            matches!(queue.step, QueueStep::Queued { .. } | QueueStep::Attempting)
        })
    }

    /// True when the record's retention ended at or before `now` (never while it holds an
    /// undelivered event): it then counts as absent and the alarm deletes it.
    pub fn is_expired(&self, now: Millis) -> bool {
        self.expires_at <= now && !self.holds_undelivered_event()
    }

    /// True while a `processing` claim or attempt holds a lease that has not run out at `now`.
    pub fn has_live_lease(&self, now: Millis) -> bool {
        self.state() == ClaimState::Processing && now < self.lease.until
    }

    /// True when the last attempt's outcome is unknown: its handler may have run (a queued
    /// delivery whose last answer was lost or cut off, a claim released by an operator). The
    /// next attempt is then a takeover.
    pub fn outcome_unknown(&self) -> bool {
        match &self.stage {
            Stage::Claim(ClaimStage::Released { unknown, .. }) => *unknown,
            Stage::Queue(QueueStage {
                step: QueueStep::Queued { unknown, .. } | QueueStep::Dead { unknown, .. },
                ..
            }) => *unknown,
            _ => false,
        }
    }

    /// True while the last attempt's handler may still be running: a `processing` claim or
    /// attempt under a live lease, or one whose outcome is unknown (a queued delivery whose
    /// last answer was lost, a claim an operator released) and whose lease has not run out. A
    /// definite failure ends the lease when it is recorded.
    pub fn attempt_may_still_run(&self, now: Millis) -> bool {
        match &self.stage {
            Stage::Claim(ClaimStage::Processing)
            | Stage::Queue(QueueStage {
                step: QueueStep::Attempting,
                ..
            }) => now < self.lease.until,
            _ => self.outcome_unknown() && now < self.lease.until,
        }
    }

    /// When a delivery that meets this live claim should come back: the end of the holder's
    /// wait for its answer while that lies ahead (the claim is settled by then), else the end
    /// of the lease.
    pub fn retry_at(&self, now: Millis) -> Millis {
        match self.lease.wait_ends_at {
            Some(at) if at > now => at.min(self.lease.until),
            _ => self.lease.until,
        }
    }

    /// The changes the failure index has not acknowledged yet, if any.
    pub fn pending_report(&self) -> Option<&PendingReport> {
        self.queue()?.report.as_ref()
    }

    /// When the event was last dead-lettered (queue mode only).
    pub fn dead_at(&self) -> Option<Millis> {
        self.queue()?.dead_at
    }

    /// When a queued delivery's next attempt is due (`queued` only).
    pub fn next_attempt_at(&self) -> Option<Millis> {
        match self.queue()?.step {
            QueueStep::Queued {
                next_attempt_at, ..
            } => Some(next_attempt_at),
            _ => None,
        }
    }

    /// When the work finished (`done` only).
    pub fn finished_at(&self) -> Option<Millis> {
        match &self.stage {
            Stage::Claim(ClaimStage::Done(finished)) => Some(finished.finished_at),
            Stage::Queue(QueueStage {
                step: QueueStep::Delivered { finished_at },
                ..
            }) => Some(*finished_at),
            _ => None,
        }
    }

    /// When the last attempt gave the claim back, failed, or was dead-lettered.
    pub fn released_at(&self) -> Option<Millis> {
        match &self.stage {
            Stage::Claim(ClaimStage::Released { released_at, .. }) => Some(*released_at),
            Stage::Queue(QueueStage {
                step: QueueStep::Dead { died_at, .. },
                ..
            }) => Some(*died_at),
            _ => None,
        }
    }

    /// The answer kept for replay (Idempotency-Key records that finished).
    pub fn response(&self) -> Option<&CachedResponse> {
        match &self.stage {
            Stage::Claim(ClaimStage::Done(Finished { response, .. })) => response.as_ref(),
            _ => None,
        }
    }
}
