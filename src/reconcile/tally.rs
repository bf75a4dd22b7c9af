//! What a reconciliation run says: the requests to a sender's API and their answers, what
//! each listed event got, and how a run ended. Plain data, shared by the run's sequence (see
//! `crate::reconciler`), the failure index that keeps the last run, and the admin answers.

use serde::{Deserialize, Serialize};

use super::cursor::ReconcileCursor;

/// The `User-Agent` of every request to a sender's API (GitHub refuses requests without one).
pub const USER_AGENT: &str = concat!("webhook-dedup/", env!("CARGO_PKG_VERSION"));
/// The header a reconciled Stripe event carries to the handler: `reconcile`.
pub const SOURCE_HEADER: &str = "x-webhook-dedup-source";
/// At most this many errors are listed in one answer; the count goes on.
pub const ERRORS_LISTED: usize = 20;

/// A request to a sender's API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The URL.
    pub url: String,
    /// Its headers, credentials included.
    pub headers: Vec<(String, String)>,
}

/// A sender API's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderAnswer {
    /// Its status.
    pub status: u16,
    /// Its headers, lower-case names.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

impl SenderAnswer {
    /// Its header `name` (lower case), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        let found = self.headers.iter().find(|(key, _)| key == name);
        found.map(|(_, value)| value.as_str())
    }
}

/// What went wrong with one event, or with the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The sender's API failed (a 5xx, another status, or no answer).
    SenderFailed,
    /// The sender's API asked to slow down (a 429, or GitHub's rate limit).
    SenderRateLimited,
    /// The sender's answer did not read as its documented list.
    SenderUnreadable,
    /// A reconciled event reached the origin, which did not take it.
    OriginFailed,
    /// The event's claim could not be asked.
    ClaimFailed,
}

/// One error of a run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunError {
    /// What kind.
    pub code: ErrorCode,
    /// In words.
    pub detail: String,
    /// The event or delivery it is about, if one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The status the sender or the origin answered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long the sender asked to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
}

impl RunError {
    /// An error of `code` saying `detail`, about no event in particular.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> RunError {
        RunError {
            code,
            detail: detail.into(),
            id: None,
            status: None,
            retry_after_seconds: None,
        }
    }
}

/// What a run counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tally {
    /// Events (or deliveries) of the window the sender listed.
    pub listed: u32,
    /// Already done here: not run again.
    pub already_done: u32,
    /// Held by an attempt, or queued: left to it.
    pub in_flight: u32,
    /// Dead-lettered here: left to the operator.
    pub dead: u32,
    /// Stripe: delivered (sync) or stored (queue) now; in a dry run, what would be.
    pub handed_over: u32,
    /// GitHub: redeliveries asked of GitHub; in a dry run, what would be.
    pub redelivery_requested: u32,
    /// Needing nothing: GitHub counts them delivered, or a later attempt of the same delivery
    /// was listed first.
    pub skipped: u32,
    /// What went wrong, the first [`ERRORS_LISTED`].
    pub errors: Vec<RunError>,
    /// How many went wrong.
    pub error_count: u32,
}

impl Tally {
    /// Counts `error`, and lists it while fewer than [`ERRORS_LISTED`] are.
    pub fn error(&mut self, error: RunError) {
        self.error_count += 1;
        if self.errors.len() < ERRORS_LISTED {
            self.errors.push(error);
        }
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// It went as far as it could: its counts, and where to continue (`None`: the window is
    /// done).
    Ran {
        /// The counts.
        tally: Tally,
        /// Where the next call continues.
        next: Option<ReconcileCursor>,
    },
    /// The sender refused the credentials with `status`: nothing was done.
    KeyRefused {
        /// 401 or 403.
        status: u16,
    },
}
