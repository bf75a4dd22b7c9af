//! How a storage call fails: for a while, or for good.

use std::fmt;

/// A storage failure, reported as an outcome rather than a panic.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StoreError {
    /// Transient: the same request may succeed if sent again later (answered 503 + Retry-After).
    Retryable(String),
    /// Not transient: stored data is unreadable or the store refused the operation (answered 500).
    Fatal(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Retryable(detail) => write!(f, "retryable store error: {detail}"),
            StoreError::Fatal(detail) => write!(f, "fatal store error: {detail}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// A storage exception with message `text`, classified by its flags: one the runtime marks
    /// `retryable` or `overloaded` may succeed if sent again later; any other is fatal.
    pub fn of_exception(text: String, retryable: bool, overloaded: bool) -> StoreError {
        if retryable || overloaded {
            StoreError::Retryable(text)
        } else {
            StoreError::Fatal(text)
        }
    }
}
