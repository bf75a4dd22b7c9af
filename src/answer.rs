//! What every front door shares in its answers: the HTTP answer itself, as the doors decide it
//! and the worker renders it, and how a caller is told to come back later.

use serde_json::Value;

use crate::claim::Millis;
use crate::claim_authority::AuthorityReply;

/// An HTTP answer, decided by a front door's rules; the worker renders it as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The status.
    pub status: u16,
    /// The headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body; `None` for an answer without one.
    pub body: Option<Vec<u8>>,
}

impl HttpAnswer {
    /// `status` with `value` as its JSON body.
    pub fn json(status: u16, value: &Value) -> HttpAnswer {
        HttpAnswer::typed(status, "application/json", value)
    }

    /// `status` with `value` as its JSON body, of content type `content_type`.
    pub fn typed(status: u16, content_type: &str, value: &Value) -> HttpAnswer {
        HttpAnswer {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: Some(value.to_string().into_bytes()),
        }
    }

    /// `status` with `{"error": code, "detail": detail}`.
    pub fn error(status: u16, code: &str, detail: &str) -> HttpAnswer {
        HttpAnswer::json(
            status,
            &serde_json::json!({ "error": code, "detail": detail }),
        )
    }

    /// The same answer with header `name` set to `value`.
    pub fn with(mut self, name: &str, value: impl Into<String>) -> HttpAnswer {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// The same answer with `Retry-After` (seconds) and `Allow`, each when given.
    pub fn with_hints(self, retry_after: Option<u64>, allow: Option<&str>) -> HttpAnswer {
        let answer = match retry_after {
            Some(seconds) => self.with("retry-after", seconds.to_string()),
            None => self,
        };
        match allow {
            Some(allow) => answer.with("allow", allow),
            None => answer,
        }
    }
}

/// Seconds a caller is asked to wait after a retryable store failure.
pub const STORE_RETRY_AFTER_SECONDS: u64 = 10;

/// The error code of every answer to a request while the configuration is invalid (500), and
/// so its log line's outcome.
pub const MISCONFIGURED: &str = "misconfigured";

/// The error code of the answer to a request that met a runtime error (500), and so its log
/// line's outcome; the error's text goes to the log line only.
pub const INTERNAL_ERROR: &str = "internal_error";

/// Whole seconds from `now` until `until`, at least 1: a `Retry-After` value.
pub fn retry_after_seconds(until: Millis, now: Millis) -> u64 {
    until.saturating_sub(now).div_ceil(1_000).max(1)
}

/// How a reply failed the request, when it did not fit it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFailure {
    /// The store is busy or unavailable: come back after [`STORE_RETRY_AFTER_SECONDS`] (503).
    Unavailable,
    /// The store failed, or gave a reply that does not fit the request (500).
    Failed,
}

impl StoreFailure {
    /// The failure a reply stands for: a retryable store failure is `Unavailable`; anything
    /// else that reaches a caller expecting another reply is `Failed`.
    pub fn of(reply: &AuthorityReply) -> StoreFailure {
        match reply {
            AuthorityReply::StoreFailed {
                retryable: true, ..
            } => StoreFailure::Unavailable,
            _ => StoreFailure::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_their_body_type_and_hints() {
        let answer = HttpAnswer::error(405, "method_not_allowed", "POST only")
            .with_hints(Some(3), Some("POST"));
        assert_eq!(answer.status, 405);
        assert_eq!(
            answer.headers,
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("retry-after".to_owned(), "3".to_owned()),
                ("allow".to_owned(), "POST".to_owned()),
            ]
        );
        let body: Value = serde_json::from_slice(answer.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["error"], "method_not_allowed");
    }

    #[test]
    fn retry_after_rounds_up_and_is_at_least_one_second() {
        assert_eq!(retry_after_seconds(1_000, 1_000), 1);
        assert_eq!(retry_after_seconds(500, 1_000), 1);
        assert_eq!(retry_after_seconds(2_001, 1_000), 2);
        assert_eq!(retry_after_seconds(901_000, 1_000), 900);
    }

    #[test]
    fn only_a_retryable_failure_is_unavailable() {
        let failed = |retryable| AuthorityReply::StoreFailed {
            retryable,
            detail: String::new(),
        };
        assert_eq!(StoreFailure::of(&failed(true)), StoreFailure::Unavailable);
        assert_eq!(StoreFailure::of(&failed(false)), StoreFailure::Failed);
        assert_eq!(
            StoreFailure::of(&AuthorityReply::Record { record: None }),
            StoreFailure::Failed
        );
    }
}

/// Why a request's body was not read: the same three ways at both front doors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than `limit` bytes (`MAX_BODY_BYTES`).
    TooLarge {
        /// The cap, in bytes.
        limit: u64,
    },
    /// The sender hung up or the stream failed before the end.
    Unreadable,
    /// The whole body did not arrive within `ms` (`BODY_READ_TIMEOUT_MS`).
    TimedOut {
        /// The deadline, in milliseconds.
        ms: u64,
    },
}

/// How a request's body is read under the cap `limit` (`MAX_BODY_BYTES`), decided from its
/// `Content-Length` before any of it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyRead {
    /// The declared length is over the cap: refused at once, nothing read.
    TooLarge,
    /// A length within the cap is declared: read in one call (the runtime holds the sender to
    /// it; what arrived is checked against the cap all the same).
    Whole,
    /// No length, or one that is not a number: read chunk by chunk, counting, and cut off as
    /// soon as the count passes the cap.
    Chunked,
}

impl BodyRead {
    /// The way to read a body whose `Content-Length` header is `declared`, under `limit`.
    pub fn of(declared: Option<&str>, limit: u64) -> BodyRead {
        match declared.and_then(|value| value.trim().parse::<u64>().ok()) {
            Some(length) if length > limit => BodyRead::TooLarge,
            Some(_) => BodyRead::Whole,
            None => BodyRead::Chunked,
        }
    }
}

/// A body's length, counted as it arrives under the cap `limit` (`MAX_BODY_BYTES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BodyCount {
    limit: u64,
    total: u64,
}

impl BodyCount {
    /// Nothing counted yet.
    pub fn new(limit: u64) -> BodyCount {
        BodyCount { limit, total: 0 }
    }

    /// Counts `len` more bytes and returns the total: `TooLarge` as soon as it passes the cap,
    /// so the rest is never read.
    pub fn add(&mut self, len: u64) -> Result<u64, BodyError> {
        self.total = self.total.saturating_add(len);
        if self.total > self.limit {
            return Err(BodyError::TooLarge { limit: self.limit });
        }
        Ok(self.total)
    }
}

#[cfg(test)]
mod body_tests {
    use super::{BodyCount, BodyError, BodyRead};

    /// A body exactly at the cap is read; one byte more, in whatever chunks, is refused.
    #[test]
    fn a_body_is_counted_against_the_cap_as_it_arrives() {
        let mut count = BodyCount::new(10);
        assert_eq!(count.add(4), Ok(4));
        assert_eq!(count.add(6), Ok(10));
        assert_eq!(count.add(0), Ok(10));
        let too_large = Err(BodyError::TooLarge { limit: 10 });
        assert_eq!(count.add(1), too_large);
        assert_eq!(BodyCount::new(10).add(11), too_large);
        assert_eq!(BodyCount::new(10).add(u64::MAX), too_large);
        assert_eq!(BodyCount::new(0).add(0), Ok(0));
    }

    /// A declared length over the cap is refused before reading; one within it is read whole;
    /// none, or one that is not a number, is counted as it comes.
    #[test]
    fn the_declared_length_decides_how_a_body_is_read() {
        assert_eq!(BodyRead::of(Some("101"), 100), BodyRead::TooLarge);
        assert_eq!(BodyRead::of(Some("100"), 100), BodyRead::Whole);
        assert_eq!(BodyRead::of(Some(" 0 "), 100), BodyRead::Whole);
        assert_eq!(BodyRead::of(None, 100), BodyRead::Chunked);
        assert_eq!(BodyRead::of(Some("ten"), 100), BodyRead::Chunked);
        assert_eq!(BodyRead::of(Some("-1"), 100), BodyRead::Chunked);
        let huge = "99999999999999999999999";
        assert_eq!(BodyRead::of(Some(huge), 100), BodyRead::Chunked);
    }
}
