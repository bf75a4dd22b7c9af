//! Writing structured log lines to the Workers console (`wrangler tail`, `wrangler dev`), for
//! what the claim authority does on its own: alarms, storage usage, late settles.

use worker::Env;

use super::metrics;
use crate::authority::SettleStep;
use crate::claim::ClaimState;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::origin::OriginOutcome;
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

/// What happened to a delivery after its sender had been answered.
pub struct SettledLater<'a> {
    /// The front door it came through.
    pub route: Route,
    /// Its sender, for a webhook.
    pub provider: Option<Provider>,
    /// Its key.
    pub key: &'a str,
    /// Which attempt.
    pub attempt: u32,
    /// `late_answer`, `answer_settled` or `answer_lost`.
    pub outcome: Outcome,
    /// How the forward ended.
    pub origin: &'a OriginOutcome,
    /// How long the origin took.
    pub origin_ms: u64,
    /// What the settle did.
    pub step: SettleStep,
}

/// Logs and counts how a delivery ended after its sender had been answered; a lost answer or a
/// refused or failed settle is a warning.
pub fn settled_later(env: &Env, later: SettledLater<'_>) {
    let line = LogLine {
        level: if later.step.is_clean() && later.outcome != Outcome::AnswerLost {
            Level::Info
        } else {
            Level::Warn
        },
        provider: later.provider,
        key: Some(later.key.to_owned()),
        outcome: later.outcome,
        attempt: Some(later.attempt),
        origin_status: match later.origin {
            OriginOutcome::Answered { status } => Some(*status),
            _ => None,
        },
        origin_ms: Some(later.origin_ms),
        settle: Some(later.step),
        ..LogLine::new(later.route)
    };
    write(&line);
    metrics::count(env, &line);
}
