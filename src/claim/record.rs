//! The claim record: what the claim authority keeps for one key.

use serde::{Deserialize, Serialize};

use super::fence::Fence;

/// Milliseconds since the Unix epoch, as read from the claim authority's own clock.
pub type Millis = u64;

/// Where a key stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimState {
    /// One attempt holds the claim until its lease runs out; repeats are told to come back.
    Processing,
    /// The work finished; repeats are acknowledged without running anything.
    Done,
    /// The last attempt failed and gave its claim back; the next delivery claims the key at once.
    /// The record stays only to keep the key's history (attempts, last release reason).
    Released,
    /// Queue mode: the event is stored and waits for its next attempt (`queue.next_attempt_at`).
    Queued,
    /// Queue mode: every attempt allowed failed; the body is kept until the retention ends.
    Dead,
}

/// Everything kept for one key.
///
/// Guarantees kept by the rules in [`super::engine`]: `fence` is the fence of the latest claim;
/// a `Done` record is never turned back into anything else; `expires_at` is when the record
/// may be deleted.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The key this record belongs to (a Stripe event id, or an Idempotency-Key scope).
    pub key: String,
    /// Where the key stands.
    pub state: ClaimState,
    /// The fence of the latest claim.
    pub fence: Fence,
    /// How many claims were won for this key (1 for the first).
    pub attempts: u32,
    /// When the key was first claimed.
    pub first_seen_at: Millis,
    /// When the latest claim was won.
    pub claimed_at: Millis,
    /// When the latest claim's lease runs out (a `Processing` record is taken over after it).
    pub lease_expires_at: Millis,
    /// Until when the latest claim's holder waits for its handler's answer (the forward
    /// time-out plus the late-answer wait); after it, nothing more will be learned and the
    /// claim only waits for its lease to end. `None` for records written before schema 3.
    #[serde(default)]
    pub wait_ends_at: Option<Millis>,
    /// True when the latest claim took over one whose lease ran out.
    #[serde(default)]
    pub takeover: bool,
    /// When the work finished (`Done` only).
    pub finished_at: Option<Millis>,
    /// When the last claim was released (`Released` only).
    pub released_at: Option<Millis>,
    /// When the record may be deleted.
    pub expires_at: Millis,
    /// Why the last release happened, as its holder said.
    pub last_release_reason: Option<String>,
    /// The request's fingerprint (Idempotency-Key records): a repeat with another is refused.
    pub fingerprint: Option<String>,
    /// The response cached at finalize (Idempotency-Key records), replayed to repeats.
    pub response: Option<CachedResponse>,
    /// Queue mode only: the delivery schedule of a stored event. `None` for records of a
    /// delivery forwarded while its sender waited (and before schema 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueInfo>,
}

/// The delivery schedule of an event stored in queue mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueueInfo {
    /// When the event was stored and acknowledged.
    pub accepted_at: Millis,
    /// When the next attempt is due (`Queued` only).
    pub next_attempt_at: Option<Millis>,
    /// Attempts made before the current attempt budget began (0, or the attempts before the
    /// last redelivery).
    pub budget_first_attempt: u32,
    /// When the current attempt budget began (acceptance, or the last redelivery).
    pub budget_started_at: Millis,
    /// True while the event's body is stored (until it is delivered, or the record expires).
    pub body_held: bool,
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
    /// True while the record holds an acknowledged event still to deliver (queue mode: queued,
    /// or an attempt under way, its body stored). Such a record never expires: it stays until
    /// it is delivered or dead-lettered, whatever the retention, so an event acknowledged to
    /// its sender is never dropped (not even while attempts cannot start).
    pub fn holds_undelivered_event(&self) -> bool {
        matches!(self.state, ClaimState::Queued | ClaimState::Processing)
            && self.queue.as_ref().is_some_and(|queue| queue.body_held)
    }

    /// True when the record's retention ended at or before `now` (never while it holds an
    /// undelivered event): it then counts as absent and the alarm deletes it.
    pub fn is_expired(&self, now: Millis) -> bool {
        self.expires_at <= now && !self.holds_undelivered_event()
    }

    /// True while a `Processing` record's lease has not run out at `now`.
    pub fn has_live_lease(&self, now: Millis) -> bool {
        self.state == ClaimState::Processing && now < self.lease_expires_at
    }

    /// True while the last attempt's handler may still be running: a `processing` claim under
    /// a live lease, or a queue-mode attempt whose answer was lost (its time-out, a gateway
    /// that gave up) and whose lease has not run out. A definite failure ends the lease when
    /// it is recorded, so it never counts here.
    pub fn attempt_may_still_run(&self, now: Millis) -> bool {
        match self.state {
            ClaimState::Processing => self.has_live_lease(now),
            ClaimState::Queued | ClaimState::Dead => {
                self.queue.is_some() && now < self.lease_expires_at
            }
            ClaimState::Done | ClaimState::Released => false,
        }
    }

    /// When a delivery that meets this live claim should come back: the end of the holder's
    /// wait for its answer while that lies ahead (the claim is settled by then), else the end
    /// of the lease.
    pub fn retry_at(&self, now: Millis) -> Millis {
        match self.wait_ends_at {
            Some(at) if at > now => at.min(self.lease_expires_at),
            _ => self.lease_expires_at,
        }
    }
}
