//! The claim record: what the claim authority keeps for one key.

use serde::{Deserialize, Serialize};

use super::fence::Fence;

/// Milliseconds since the Unix epoch, as read from the claim authority's own clock.
pub type Millis = u64;

/// Where a key stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimState {
    /// One attempt holds the claim until its lease runs out; repeats are told to come back.
    Processing,
    /// The work finished; repeats are acknowledged without running anything.
    Done,
    /// The last attempt failed and gave its claim back; the next delivery claims the key at once.
    /// The record stays only to keep the key's history (attempts, last release reason).
    Released,
}

/// Everything kept for one key.
///
/// Guarantees kept by the rules in [`super::engine`]: `fence` is the fence of the latest claim;
/// a `Done` record is never turned back into anything else; `expires_at` is when the record
/// may be deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// When the work finished (`Done` only).
    pub finished_at: Option<Millis>,
    /// When the last claim was released (`Released` only).
    pub released_at: Option<Millis>,
    /// When the record may be deleted.
    pub expires_at: Millis,
    /// Why the last release happened, as its holder said.
    pub last_release_reason: Option<String>,
}

impl ClaimRecord {
    /// True while a `Processing` record's lease has not run out at `now`.
    pub fn has_live_lease(&self, now: Millis) -> bool {
        self.state == ClaimState::Processing && now < self.lease_expires_at
    }
}
