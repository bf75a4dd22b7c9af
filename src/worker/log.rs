//! Writing structured log lines to the Workers console (`wrangler tail`, `wrangler dev`).

use crate::claim::ClaimState;
use crate::log_line::LogLine;

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
