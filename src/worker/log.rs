//! Writing structured log lines to the Workers console (`wrangler tail`, `wrangler dev`).

use worker::Env;

use super::metrics;
use crate::authority::SettleStep;
use crate::claim::ClaimState;
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;

/// Writes `line` as one JSON line.
pub fn write(line: &LogLine) {
    worker::console_log!("{}", line.to_json());
}

/// Logs a record deleted by the retention alarm; an abandoned claim is logged as a warning.
pub fn expired(key: &str, state: ClaimState, abandoned: bool) {
    let line = LogLine {
        level: if abandoned { "warn" } else { "info" },
        route: "alarm",
        key: Some(key.to_owned()),
        outcome: if abandoned {
            "expired_abandoned_claim"
        } else {
            "expired"
        },
        state: Some(state),
        ..LogLine::default()
    };
    write(&line);
}

/// Logs the SQLite rows one authority operation read and wrote (with `LOG_STORAGE_USAGE=true`).
pub fn usage(key: &str, op: &'static str, rows_read: u64, rows_written: u64) {
    write(&LogLine {
        level: "info",
        route: "authority",
        key: Some(key.to_owned()),
        outcome: op,
        rows_read: Some(rows_read),
        rows_written: Some(rows_written),
        ..LogLine::default()
    });
}

/// Logs a failed `setAlarm` after a write (the next write of the key tries again).
pub fn alarm_failed(detail: &str) {
    write(&LogLine {
        level: "error",
        route: "authority",
        outcome: "alarm_not_set",
        detail: Some(detail.to_owned()),
        ..LogLine::default()
    });
}

/// Logs how a delivery ended after its sender had been answered (`outcome`: `late_answer`, the
/// origin answered after the forward time-out; `answer_settled`, an answer's body ended after
/// it was passed on; `answer_lost`, the wait ended without an answer), and counts it.
#[allow(clippy::too_many_arguments)]
pub fn settled_later(
    env: &Env,
    route: &'static str,
    key: &str,
    attempt: u32,
    outcome: &'static str,
    origin: &OriginOutcome,
    origin_ms: u64,
    step: SettleStep,
) {
    let line = LogLine {
        level: if step.is_clean() && outcome != "answer_lost" {
            "info"
        } else {
            "warn"
        },
        route,
        key: Some(key.to_owned()),
        outcome,
        attempt: Some(attempt),
        origin_status: match origin {
            OriginOutcome::Answered { status } => Some(*status),
            _ => None,
        },
        origin_ms: Some(origin_ms),
        settle: Some(step.word()),
        ..LogLine::default()
    };
    write(&line);
    metrics::count(env, &line);
}
