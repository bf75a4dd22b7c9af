//! Writing structured log lines to the Workers console (`wrangler tail`, `wrangler dev`), for
//! what the claim authority does on its own: alarms, storage usage, late settles.

use worker::Env;

use super::clock;
use super::metrics;
use crate::authority::attempt::Summary;
use crate::claim::ClaimState;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::origin::Reason;
use crate::providers::Provider;

/// Writes `line` as one JSON line.
pub fn write(line: &LogLine) {
    worker::console_log!("{}", line.to_json());
}

/// Logs a record deleted by the retention alarm; an abandoned claim is logged as a warning.
pub fn expired(key: &str, state: ClaimState, abandoned: bool) {
    write(&LogLine {
        level: if abandoned { Level::Warn } else { Level::Info },
        key: Some(key.to_owned()),
        outcome: if abandoned {
            Outcome::ExpiredAbandonedClaim
        } else {
            Outcome::Expired
        },
        state: Some(state),
        ..LogLine::new(Route::Alarm)
    });
}

/// Logs the SQLite rows one authority operation read and wrote (with `LOG_STORAGE_USAGE=true`).
pub fn usage(key: &str, op: &'static str, rows_read: u64, rows_written: u64) {
    write(&LogLine {
        key: Some(key.to_owned()),
        outcome: Outcome::Operation(op),
        rows_read: Some(rows_read),
        rows_written: Some(rows_written),
        ..LogLine::new(Route::Authority)
    });
}

/// Logs a failed `setAlarm` after a write (the next write of the key tries again).
pub fn alarm_failed(detail: &str) {
    write(&LogLine {
        level: Level::Error,
        outcome: Outcome::AlarmNotSet,
        detail: Some(detail.to_owned()),
        ..LogLine::new(Route::Authority)
    });
}

/// Logs an alarm whose work failed; `detail` says why and when it runs again.
pub fn alarm_retried(detail: &str) {
    write(&LogLine {
        level: Level::Error,
        outcome: Outcome::AlarmFailed,
        detail: Some(detail.to_owned()),
        ..LogLine::new(Route::Alarm)
    });
}

/// Logs and counts how an attempt ended without a caller to tell (see [`LogLine::ended`]).
pub fn ended(env: &Env, summary: &Summary) {
    let line = LogLine::ended(summary, clock::now_ms());
    write(&line);
    metrics::count(env, &line);
}

/// Logs and counts a queued event dead-lettered when its attempt came due with no attempt
/// left in its budget (no forward was made).
pub fn dead_before_attempt(env: &Env, provider: Provider, key: &str, reason: Reason) {
    let line = LogLine {
        level: Level::Error,
        provider: Some(provider),
        key: Some(key.to_owned()),
        outcome: Outcome::DeadLettered,
        detail: Some(reason.to_string()),
        ..LogLine::new(Route::Webhook)
    };
    write(&line);
    metrics::count(env, &line);
}
