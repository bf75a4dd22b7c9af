//! The one structured log line written per request, with a stable schema.

use serde::Serialize;

use crate::claim::ClaimState;

/// One log line. Fields that do not apply are left out. Never holds a payload or a secret.
#[derive(Debug, Default, Serialize)]
pub struct LogLine {
    /// `info`, `warn` or `error`.
    pub level: &'static str,
    /// Which front door or job: `webhook`, `idempotency`, `alarm`, `test`, `health`.
    pub route: &'static str,
    /// The HTTP method of the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The claim key (a Stripe event id, or an Idempotency-Key scope hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The Stripe event type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// A stable word for what happened (e.g. `forwarded`, `duplicate`, `bad_signature`).
    pub outcome: &'static str,
    /// The status answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Which attempt of the key this was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// True when the claim took over one whose lease ran out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub takeover: Option<bool>,
    /// The origin's status, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_status: Option<u16>,
    /// How long the origin took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_ms: Option<u64>,
    /// How long the whole request took in the worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The record's state, for alarm lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<ClaimState>,
    /// The settle step's result: `finalized`, `released`, `fence_conflict`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle: Option<&'static str>,
    /// SQLite rows read by one claim authority operation (`LOG_STORAGE_USAGE=true` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_read: Option<u64>,
    /// SQLite rows written by it, each alarm set counted as one (`LOG_STORAGE_USAGE=true` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_written: Option<u64>,
    /// A short human explanation (never a payload or secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl LogLine {
    /// The line as compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a log line always serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_that_do_not_apply_are_left_out() {
        let line = LogLine {
            level: "info",
            route: "webhook",
            key: Some("evt_1".into()),
            outcome: "duplicate",
            status: Some(200),
            ..LogLine::default()
        };
        assert_eq!(
            line.to_json(),
            r#"{"level":"info","route":"webhook","key":"evt_1","outcome":"duplicate","status":200}"#
        );
    }
}
