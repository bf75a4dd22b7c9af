//! Records stored before schema 5, and how each is upgraded to the typed record.
//!
//! Before schema 5 one flat record carried both lives (a claim, and queue mode's delivery) with
//! a `state` word, optional fields for each state, and reasons as text. Each is read exactly as
//! it was written and turned into the typed [`ClaimRecord`]; anything that does not fit (a
//! state the record's life cannot have, a reason this service never wrote) is a fatal store
//! error, never a silent reset.

use serde::Deserialize;

use super::error::StoreError;
use super::fence::Fence;
use super::record::{
    Budget, CachedResponse, ClaimRecord, ClaimStage, ClaimState, Finished, Lease, Millis,
    QueueStage, QueueStep, Source, Stage,
};
use crate::origin::Reason;
use crate::providers::Provider;

/// Schema 1: a webhook claim record, before fingerprints and cached responses.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordV1 {
    key: String,
    state: ClaimState,
    fence: Fence,
    attempts: u32,
    first_seen_at: Millis,
    claimed_at: Millis,
    lease_expires_at: Millis,
    finished_at: Option<Millis>,
    released_at: Option<Millis>,
    expires_at: Millis,
    last_release_reason: Option<String>,
}

/// Schemas 2 to 4: the flat record with fingerprints and cached responses (2), the wait for a
/// late answer (3) and queue mode's schedule (4).
#[derive(Deserialize)]
pub(super) struct RecordV4 {
    key: String,
    state: ClaimState,
    fence: Fence,
    attempts: u32,
    first_seen_at: Millis,
    claimed_at: Millis,
    lease_expires_at: Millis,
    #[serde(default)]
    wait_ends_at: Option<Millis>,
    #[serde(default)]
    takeover: bool,
    finished_at: Option<Millis>,
    released_at: Option<Millis>,
    expires_at: Millis,
    last_release_reason: Option<String>,
    fingerprint: Option<String>,
    response: Option<CachedResponse>,
    #[serde(default)]
    queue: Option<QueueV4>,
}

/// Schema 4's queue schedule.
#[derive(Deserialize)]
struct QueueV4 {
    accepted_at: Millis,
    next_attempt_at: Option<Millis>,
    budget_first_attempt: u32,
    budget_started_at: Millis,
    body_held: bool,
}

impl RecordV1 {
    /// The typed record.
    pub(super) fn upgrade(self) -> Result<ClaimRecord, StoreError> {
        RecordV4 {
            key: self.key,
            state: self.state,
            fence: self.fence,
            attempts: self.attempts,
            first_seen_at: self.first_seen_at,
            claimed_at: self.claimed_at,
            lease_expires_at: self.lease_expires_at,
            wait_ends_at: None,
            takeover: false,
            finished_at: self.finished_at,
            released_at: self.released_at,
            expires_at: self.expires_at,
            last_release_reason: self.last_release_reason,
            fingerprint: None,
            response: None,
            queue: None,
        }
        .upgrade()
    }
}

impl RecordV4 {
    /// The typed record: the sender from the key (the only place a key is read back), the
    /// reason parsed from its text, and the stage from the state and the queue schedule. A
    /// queued or dead record whose last attempt's lease outlasted its failure lost its answer,
    /// and a dead record cut off without one: the next attempt of either is a takeover.
    pub(super) fn upgrade(mut self) -> Result<ClaimRecord, StoreError> {
        let source = match self.fingerprint.take() {
            Some(fingerprint) => Source::Api { fingerprint },
            None => Source::Webhook(Provider::of_key(&self.key).0),
        };
        let last_failure = match &self.last_release_reason {
            Some(text) => Some(
                text.parse::<Reason>()
                    .map_err(|error| fatal(&error.to_string()))?,
            ),
            None => None,
        };
        let stage = self.stage(last_failure)?;
        Ok(ClaimRecord {
            key: self.key,
            source,
            attempts: self.attempts,
            first_seen_at: self.first_seen_at,
            expires_at: self.expires_at,
            lease: Lease {
                // Before schema 5 a claim's fence was made from its request's nonce.
                request: Some(self.fence.nonce()),
                fence: self.fence,
                claimed_at: self.claimed_at,
                until: self.lease_expires_at,
                takeover: self.takeover,
                wait_ends_at: self.wait_ends_at,
            },
            last_failure,
            stage,
        })
    }

    /// The stage the record's state and queue schedule stand for.
    fn stage(&mut self, last_failure: Option<Reason>) -> Result<Stage, StoreError> {
        let finished_at = self.finished_at.unwrap_or(self.claimed_at);
        let released_at = self.released_at.unwrap_or(self.claimed_at);
        // The last attempt's answer was lost (its lease was left running past its failure), or
        // it was cut off with no answer.
        let unknown = self
            .released_at
            .is_some_and(|at| self.lease_expires_at > at)
            || last_failure == Some(Reason::CutOff);
        let Some(queue) = self.queue.take() else {
            return Ok(Stage::Claim(match self.state {
                ClaimState::Processing => ClaimStage::Processing,
                ClaimState::Done => ClaimStage::Done(Finished {
                    finished_at,
                    response: self.response.take(),
                }),
                ClaimState::Released => ClaimStage::Released {
                    released_at,
                    unknown: false,
                },
                state => return Err(fatal(&format!("is {state:?} without queue mode"))),
            }));
        };
        let step = match self.state {
            ClaimState::Queued => QueueStep::Queued {
                next_attempt_at: queue.next_attempt_at.unwrap_or(self.claimed_at),
                unknown,
            },
            ClaimState::Processing if queue.body_held => QueueStep::Attempting,
            ClaimState::Done => QueueStep::Delivered { finished_at },
            ClaimState::Dead => QueueStep::Dead {
                died_at: released_at,
                unknown,
            },
            other => return Err(fatal(&format!("of queue mode is {other:?}"))),
        };
        let budget = Budget {
            first_attempt: queue.budget_first_attempt,
            started_at: queue.budget_started_at,
        };
        // A dead letter from before the failure index is not reported to it (see
        // docs/upgrading.md); its time of death is kept.
        let dead_at = match step {
            QueueStep::Dead { died_at, .. } => Some(died_at),
            _ => None,
        };
        Ok(Stage::Queue(QueueStage {
            accepted_at: queue.accepted_at,
            budget,
            step,
            storage_id: 0,
            changes_noted: 0,
            dead_at,
            report: None,
        }))
    }
}

/// A stored record that does not fit the typed record.
fn fatal(what: &str) -> StoreError {
    StoreError::Fatal(format!("stored claim record {what}"))
}
