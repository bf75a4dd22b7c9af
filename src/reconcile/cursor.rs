//! The cursor of a reconciliation: which sender, which window, and where in the sender's list
//! the next page starts. Opaque to callers: `rc1.` then base64url of its JSON.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::SenderLog;
use crate::claim::Millis;

/// The prefix of every cursor this worker writes.
const PREFIX: &str = "rc1.";
/// Longest position accepted (a Stripe event id, or GitHub's own cursor).
const MAX_AFTER_LEN: usize = 256;

/// Where a reconciliation continues.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReconcileCursor {
    /// The sender.
    pub log: SenderLog,
    /// The window's start (ms since the epoch).
    pub since: Millis,
    /// The window's end.
    pub until: Millis,
    /// The position in the sender's list: the last Stripe event id handled, or GitHub's cursor
    /// of the next page; `None`: the window's newest end.
    pub after: Option<String>,
}

impl ReconcileCursor {
    /// The cursor as callers see it.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("a cursor is plain data");
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json))
    }

    /// The cursor `text` says, when it is one of ours with a sane position; `None` otherwise.
    pub fn decode(text: &str) -> Option<ReconcileCursor> {
        let json = URL_SAFE_NO_PAD.decode(text.strip_prefix(PREFIX)?).ok()?;
        let cursor: ReconcileCursor = serde_json::from_slice(&json).ok()?;
        let sane = |c: char| c.is_ascii_alphanumeric() || "_-=+/%.".contains(c);
        let position_ok = cursor.after.as_deref().is_none_or(|after| {
            !after.is_empty() && after.len() <= MAX_AFTER_LEN && after.chars().all(sane)
        });
        (position_ok && cursor.since <= cursor.until).then_some(cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_and_anything_else_is_refused() {
        let cursor = ReconcileCursor {
            log: SenderLog::Stripe,
            since: 1_000,
            until: 2_000,
            after: Some("evt_1abc".into()),
        };
        let text = cursor.encode();
        assert!(text.starts_with("rc1."));
        assert_eq!(ReconcileCursor::decode(&text), Some(cursor.clone()));
        for bad in ["", "rc1.", "evt_1abc", "rc1.!!!", &text[..text.len() - 3]] {
            assert_eq!(ReconcileCursor::decode(bad), None, "{bad}");
        }
        let odd = ReconcileCursor {
            after: Some("a b".into()),
            ..cursor.clone()
        };
        assert_eq!(
            ReconcileCursor::decode(&odd.encode()),
            None,
            "a position with a space"
        );
        let backwards = ReconcileCursor {
            since: 3_000,
            ..cursor
        };
        assert_eq!(ReconcileCursor::decode(&backwards.encode()), None);
    }
}
