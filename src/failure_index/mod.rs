//! The failure index: one Durable Object per deployment that records an event only when it
//! needs a person (dead-lettered, redelivered, recovered, forgotten while dead), so an
//! operator can ask what failed since Friday and redeliver it, and so notifications go out.
//!
//! A healthy delivery never touches it. The event's own object stays the authority: it keeps
//! each change in its record until the index acknowledges it (see [`crate::claim::report_due`]),
//! so a report lost on the way is sent again by that object's next alarm; every action through
//! the index re-checks the event's object with its own rules. Entries expire with the records
//! they point to.
//!
//! Transport: the worker and the claim authority objects call the index object's `call` with
//! the JSON [`IndexRequest`], answered with the JSON [`IndexReply`].

use serde::{Deserialize, Serialize};

pub mod alert;
mod entry;
mod index;
pub mod object;
pub mod query;
mod reconciliations;
mod store;

pub use alert::{AlertPolicy, Notification};
pub use entry::{
    due_report, event_type, Entry, EntryState, IndexReport, MAX_ENTRY_BYTES, MAX_HISTORY,
};
pub use index::{
    apply, entry, expire, gone, list, next_wake, summary, Applied, IndexCounts, Page, MAX_SCANNED,
};
pub use query::{Cursor, ListQuery, QueryError};
pub use store::{IndexStore, MemoryIndexStore};

use crate::claim::{self, Change, ClaimStore, Millis, RetryPolicy, StoreError};
use crate::origin::Reason;

/// The name of the one index object of a deployment.
pub const INDEX_NAME: &str = "failures";

/// How long a caller waits for the index's reply. An event's object waits no longer than
/// this in its alarm; a report that timed out is sent again later, and the index applies a
/// change once however often it arrives.
pub const REPLY_TIMEOUT_MS: u64 = 5_000;

/// One request to the failure index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexRequest {
    /// An event's changes (see [`apply`]).
    Report(IndexReport),
    /// An attempt at `origin` failed (see [`alert::origin_failed`]).
    OriginFailed {
        /// The origin: scheme, host and port.
        origin: String,
        /// The event's key.
        key: String,
        /// Why it failed.
        reason: Option<Reason>,
    },
    /// An origin's breaker closed (see [`alert::origin_recovered`]).
    OriginRecovered {
        /// The origin: its URL without credentials or query.
        origin: String,
        /// When its breaker opened.
        down_since: Millis,
    },
    /// A page of entries (see [`list`]).
    List(ListQuery),
    /// The counts (see [`summary`]).
    Summary,
    /// An action found a stored event gone (see [`gone`]).
    Gone {
        /// The event's key.
        key: String,
        /// Which stored event.
        storage_id: u64,
    },
    /// A reconciliation ran (see [`crate::reconcile::progress`]): kept as the sender's last
    /// run, and a scheduled one moves its pass on.
    Reconciled(Box<crate::reconcile::progress::Ran>),
    /// Where each sender's reconciliation stands.
    Reconciliations,
}

impl IndexRequest {
    /// The request's name (in storage-usage log lines).
    pub fn op(&self) -> &'static str {
        match self {
            IndexRequest::Report(_) => "report",
            IndexRequest::OriginFailed { .. } => "origin_failed",
            IndexRequest::OriginRecovered { .. } => "origin_recovered",
            IndexRequest::List(_) => "list",
            IndexRequest::Summary => "summary",
            IndexRequest::Gone { .. } => "gone",
            IndexRequest::Reconciled(_) => "reconciled",
            IndexRequest::Reconciliations => "reconciliations",
        }
    }
}

/// The index's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexReply {
    /// A report was applied.
    Applied(Applied),
    /// A failure or a gone record was noted.
    Noted,
    /// A page of entries.
    Page(Page),
    /// The counts.
    Summary(IndexCounts),
    /// Where each sender's reconciliation stands, for the senders that ran.
    Reconciliations(Vec<crate::reconcile::progress::Progress>),
    /// The index's storage failed; nothing changed.
    StoreFailed {
        /// What failed.
        detail: String,
    },
}

impl IndexReply {
    /// The reply a caller takes when the index gave none within [`REPLY_TIMEOUT_MS`]: a store
    /// failure, so the report is sent again later and nothing is taken as applied.
    pub fn not_in_time() -> IndexReply {
        let detail = format!("the failure index did not answer within {REPLY_TIMEOUT_MS} ms");
        IndexReply::StoreFailed { detail }
    }
}

/// Settles the changes of `key` that were sent, given the index's `reply` (`None` when nothing
/// was sent: the record is no webhook sender's, and its changes are dropped). Applied: they
/// leave the record's outbox. Otherwise they are sent again after `retry`'s back-off (with
/// `jitter` in `[0, 1)`), or, with no `retry` (an invalid configuration), left for the alarm's
/// own guard a minute later. `Err` says what went wrong, for the log.
pub fn after_report<S: ClaimStore>(
    store: &mut S,
    key: &str,
    changes: &[Change],
    reply: Option<IndexReply>,
    now: Millis,
    backoff: (Option<RetryPolicy>, f64),
) -> Result<(), String> {
    let refused = reply.and_then(|reply| refusal(&reply));
    after_refusal(store, key, changes, refused, now, backoff)
}

/// Why the index did not take a report, from its `reply`; `None` when it applied it.
pub fn refusal(reply: &IndexReply) -> Option<String> {
    match reply {
        IndexReply::Applied(_) => None,
        IndexReply::StoreFailed { detail } => Some(detail.clone()),
        other => Some(format!("an answer out of turn: {other:?}")),
    }
}

/// [`after_report`] once the reply is read: `refused` says why the index did not take the
/// changes (`None`: taken, or nothing was sent).
pub fn after_refusal<S: ClaimStore>(
    store: &mut S,
    key: &str,
    changes: &[Change],
    refused: Option<String>,
    now: Millis,
    (retry, jitter): (Option<RetryPolicy>, f64),
) -> Result<(), String> {
    let settled = match (&refused, retry) {
        (None, _) => claim::report_sent(store, key, changes, now).map(|_| ()),
        (Some(_), Some(retry)) => claim::report_failed(store, key, now, retry, jitter).map(|_| ()),
        (Some(_), None) => Ok(()),
    };
    match refused {
        Some(detail) => Err(detail),
        None => settled.map_err(|error| error.to_string()),
    }
}

/// Runs `request` against the index's `store` at `now`; `alerts` is set when notifications are
/// on (`ALERT_URL`).
pub fn handle<S: IndexStore>(
    store: &mut S,
    request: &IndexRequest,
    now: Millis,
    alerts: Option<&AlertPolicy>,
) -> IndexReply {
    let reply = match request {
        IndexRequest::Report(report) => apply(store, report, now, alerts).map(IndexReply::Applied),
        IndexRequest::OriginFailed {
            origin,
            key,
            reason,
        } => match alerts {
            Some(alerts) => alert::origin_failed(store, origin, key, *reason, now, alerts)
                .map(|_| IndexReply::Noted),
            None => Ok(IndexReply::Noted),
        },
        IndexRequest::OriginRecovered { origin, down_since } => match alerts {
            Some(_) => {
                alert::origin_recovered(store, origin, *down_since, now).map(|()| IndexReply::Noted)
            }
            None => Ok(IndexReply::Noted),
        },
        IndexRequest::List(query) => list(store, query).map(IndexReply::Page),
        IndexRequest::Summary => summary(store).map(IndexReply::Summary),
        IndexRequest::Gone { key, storage_id } => {
            gone(store, key, *storage_id, now).map(|_| IndexReply::Noted)
        }
        IndexRequest::Reconciled(ran) => {
            reconciliations::record(store, ran).map(|()| IndexReply::Noted)
        }
        IndexRequest::Reconciliations => {
            reconciliations::read_all(store).map(IndexReply::Reconciliations)
        }
    };
    reply.unwrap_or_else(|error: StoreError| IndexReply::StoreFailed {
        detail: error.to_string(),
    })
}

#[cfg(test)]
mod tests;
