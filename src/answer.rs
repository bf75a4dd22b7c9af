//! What every front door tells a caller to come back later: shared by the webhook, the
//! Idempotency-Key and the admin answer tables.

use crate::authority::AuthorityReply;
use crate::claim::Millis;

/// Seconds a caller is asked to wait after a retryable store failure.
pub const STORE_RETRY_AFTER_SECONDS: u64 = 10;

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
