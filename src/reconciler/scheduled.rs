//! The scheduled run (a Cron Trigger, every 15 minutes by default): for each sender whose keys
//! are set, one page of its pass (see [`crate::reconcile::progress`]), each listed event through its
//! claim, the run kept in the failure index and said in a log line. One page per sender per
//! run keeps a run within the Workers Free plan's 50 subrequests.

use super::run;
use crate::config::Config;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::reconcile::call::ReconcileCall;
use crate::reconcile::progress::{key_refused, Progress, Ran};
use crate::reconcile::tally::RunOutcome;
use crate::reconcile::{configured, SenderLog};
use crate::runtime::Runtime;

/// Tells the failure index of a run (`scheduled` or called): it is kept as the sender's last,
/// and a scheduled one moves its pass on. True when the index took it; a failure to tell it
/// undoes nothing that was done.
pub async fn remember<R: Runtime>(
    runtime: &R,
    call: &ReconcileCall,
    outcome: &RunOutcome,
    scheduled: bool,
) -> bool {
    let ran = Ran {
        call: call.clone(),
        outcome: outcome.clone(),
        at: runtime.now_ms(),
        scheduled,
    };
    let reply = runtime
        .ask_index(&IndexRequest::Reconciled(Box::new(ran)))
        .await;
    reply == IndexReply::Noted
}

/// Runs the scheduled reconciliation under `config`: the log lines to write, one per sender
/// that ran (none when no sender's keys are set).
pub async fn scheduled<R: Runtime>(runtime: &R, config: &Config) -> Vec<LogLine> {
    let logs: Vec<SenderLog> = SenderLog::ALL
        .into_iter()
        .filter(|log| configured(config, *log))
        .collect();
    if logs.is_empty() {
        return Vec::new();
    }
    let stored = match runtime.ask_index(&IndexRequest::Reconciliations).await {
        IndexReply::Reconciliations(stored) => stored,
        _ => {
            let line = LogLine {
                level: Level::Error,
                detail: Some("the failure index did not answer; the next run tries again".into()),
                outcome: Outcome::Reconciled,
                ..LogLine::new(Route::Reconcile)
            };
            return vec![line];
        }
    };
    let mut lines = Vec::new();
    for log in logs {
        let found = stored.iter().find(|progress| progress.log == log).cloned();
        let progress = found.unwrap_or_else(|| Progress::new(log));
        let Some(call) = progress.next_call(runtime.now_ms(), config.reconcile.lookback_ms) else {
            continue;
        };
        let outcome = run(runtime, config, &call).await;
        let kept = remember(runtime, &call, &outcome, true).await;
        lines.push(line_of(&call, &outcome, kept));
    }
    lines
}

/// The log line of a scheduled run of `call` that ended with `outcome` (`kept`: the index
/// took it): `info`, `warn` with errors or when the index did not take it, `error` when the
/// sender refused the key.
fn line_of(call: &ReconcileCall, outcome: &RunOutcome, kept: bool) -> LogLine {
    let (level, detail) = match outcome {
        RunOutcome::KeyRefused { status } => (Level::Error, key_refused(call.log, *status).detail),
        RunOutcome::Ran { tally, next } => {
            let level = if tally.error_count > 0 || !kept {
                Level::Warn
            } else {
                Level::Info
            };
            let then = if next.is_some() {
                "the pass continues at the next run"
            } else {
                "the window is done"
            };
            let detail = format!(
                "listed {}, already done {}, in flight {}, dead {}, handed over {}, redelivery requested {}, skipped {}, errors {}; {then}{}",
                tally.listed,
                tally.already_done,
                tally.in_flight,
                tally.dead,
                tally.handed_over,
                tally.redelivery_requested,
                tally.skipped,
                tally.error_count,
                if kept { "" } else { "; the failure index did not take the run" },
            );
            (level, detail)
        }
    };
    LogLine {
        level,
        provider: Some(call.log.provider()),
        outcome: Outcome::Reconciled,
        detail: Some(detail),
        ..LogLine::new(Route::Reconcile)
    }
}
