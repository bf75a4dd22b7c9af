//! The claim authority's rules, free of JavaScript: the record, its fence, the store it needs,
//! the transitions (claim, finalize, release, expire) and the stored format.
//!
//! The Durable Object and the host tests both drive these same functions; only the
//! [`ClaimStore`] underneath differs.

mod codec;
mod engine;
mod error;
mod fence;
pub mod frame;
mod kv;
mod legacy;
mod queue;
mod record;
mod report;
mod settle;
mod store;

pub use codec::{decode_record, encode_record, SCHEMA_VERSION};
pub use engine::{
    claim, expire, finalize, forget, inspect, release, stop_waiting, ClaimOutcome, ClaimPolicy,
    ClaimRequest, Expired, FinalizeOutcome, ForgetOutcome, ReleaseOutcome, Sweep,
};
pub use error::StoreError;
pub use fence::{random_fraction, Fence, InvalidFence, Nonce};
pub use kv::{get_text, KvStore, KvTable, KvValue, MemoryTable, Scan, Usage};
pub use queue::{
    attempt_failed, attempt_held, enqueue, next_wake, redeliver, redeliver_dead, start_attempt,
    AttemptOutcome, AttemptTerms, EnqueueOutcome, FailedOutcome, Failure, RedeliverOutcome,
    RetryPolicy,
};
pub use record::{
    Budget, CachedResponse, Change, ClaimRecord, ClaimStage, ClaimState, Finished, Lease, Millis,
    PendingReport, QueueStage, QueueStep, Source, Stage, Transition,
};
pub use report::{holds, report_due, report_failed, report_sent};
pub use settle::SettleStep;
pub use store::{ClaimStore, MemoryClaimStore};

#[cfg(test)]
mod tests;
