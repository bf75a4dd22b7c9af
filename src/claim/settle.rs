//! What a settle did to a claim.

use serde::{Deserialize, Serialize};

/// What a settle did. Serialised as the log's `settle` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettleStep {
    /// The claim is done.
    Finalized,
    /// The claim is given back: the next delivery runs the work again.
    Released,
    /// The outcome is unknown and nothing more will be learned: the claim is kept until its
    /// lease ends, then the next delivery takes it over.
    Held,
    /// Not settled yet: the object is still waiting for the answer (or reading its body).
    Waiting,
    /// Refused: the claim is no longer this attempt's (taken over, or released by an operator).
    FenceConflict,
    /// The store failed on every try before the lease ended.
    SettleFailed,
}

impl SettleStep {
    /// The step's word, as serialised (log lines, metrics).
    pub fn word(self) -> &'static str {
        match self {
            SettleStep::Finalized => "finalized",
            SettleStep::Released => "released",
            SettleStep::Held => "held",
            SettleStep::Waiting => "waiting",
            SettleStep::FenceConflict => "fence_conflict",
            SettleStep::SettleFailed => "settle_failed",
        }
    }

    /// True for the steps that leave the record as the rules intend (finalized, released,
    /// held, or a settle still to come); false for a refused or failed settle.
    pub fn is_clean(self) -> bool {
        !matches!(self, SettleStep::FenceConflict | SettleStep::SettleFailed)
    }
}
