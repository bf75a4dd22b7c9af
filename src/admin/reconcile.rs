//! The admin routes of reconciliation (see [`crate::reconcile`]):
//!
//! - `POST /admin/reconcile` with `{"provider", "since", "until", "dry_run", "cursor"}`: one
//!   page of the sender's log through the claims; its counts and where to continue.
//! - `GET /admin/reconcile`: each configured sender's last run and scheduled pass.

use serde_json::json;

use super::AdminAnswer;
use crate::config::Config;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::{AdminWord, Outcome};
use crate::reconcile::call::{read_call, ReconcileCall};
use crate::reconcile::progress::{counts, key_refused, Progress};
use crate::reconcile::tally::RunOutcome;
use crate::reconcile::{configured, handed_word, SenderLog};
use crate::reconciler::run;
use crate::reconciler::scheduled::remember;
use crate::runtime::Runtime;

/// A call on the reconciliation routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileRoute {
    /// `POST /admin/reconcile`.
    Run,
    /// `GET /admin/reconcile`.
    List,
}

/// The route `method` asks of `/admin/reconcile`, or its 405.
pub fn reconcile_route(method: &str) -> Result<ReconcileRoute, AdminAnswer> {
    match method {
        "POST" => Ok(ReconcileRoute::Run),
        "GET" => Ok(ReconcileRoute::List),
        _ => Err(AdminAnswer::for_call_error(
            super::CallError::MethodNotAllowed("GET, POST"),
        )),
    }
}

/// Runs the call `body` asks for: refused (400, or 502 when the sender refuses the key) with
/// nothing done, or one page through the claims; a run that is not a dry run is kept as the
/// sender's last (a dry run writes nothing at all).
pub async fn run_call<R: Runtime>(runtime: &R, config: &Config, body: &[u8]) -> AdminAnswer {
    let now = runtime.now_ms();
    let lookback = config.reconcile.lookback_ms;
    let call = match read_call(body, now, lookback, |log| configured(config, log)) {
        Ok(call) => call,
        Err(refusal) => {
            let word = AdminWord::ReconcileRefused;
            return AdminAnswer::refused_as(400, refusal.code(), &refusal.detail(), word);
        }
    };
    let outcome = run(runtime, config, &call).await;
    if !call.dry_run {
        remember(runtime, &call, &outcome, false).await;
    }
    answer(config, &call, &outcome)
}

/// The answer to `call` that ended with `outcome`.
pub fn answer(config: &Config, call: &ReconcileCall, outcome: &RunOutcome) -> AdminAnswer {
    let (tally, next) = match outcome {
        RunOutcome::KeyRefused { status } => {
            let detail = key_refused(call.log, *status).detail;
            let word = AdminWord::ReconcileRefused;
            return AdminAnswer::refused_as(502, "sender_refused_key", &detail, word);
        }
        RunOutcome::Ran { tally, next } => (tally, next),
    };
    let time = |at| crate::rfc3339::format(at);
    let mut body = json!({
        "provider": call.log.name(),
        "since": time(call.since),
        "until": time(call.until),
        "dry_run": call.dry_run,
        "next_cursor": next.as_ref().map(|cursor| cursor.encode()),
    });
    counts(&mut body, tally, handed_word(config, call.log));
    AdminAnswer::new(200, body, Outcome::Admin(AdminWord::ReconcileRun))
}

/// `GET /admin/reconcile`: each configured sender's standing; 503 when the index fails.
pub async fn list<R: Runtime>(runtime: &R, config: &Config) -> AdminAnswer {
    let stored = match runtime.ask_index(&IndexRequest::Reconciliations).await {
        IndexReply::Reconciliations(stored) => stored,
        _ => return super::dead_letters::index_failed(),
    };
    let items: Vec<_> = SenderLog::ALL
        .into_iter()
        .filter(|log| configured(config, *log))
        .map(|log| {
            let found = stored.iter().find(|progress| progress.log == log);
            let progress = found.cloned().unwrap_or_else(|| Progress::new(log));
            progress.view(handed_word(config, log))
        })
        .collect();
    let word = Outcome::Admin(AdminWord::Reconciliations);
    AdminAnswer::new(200, json!({ "items": items }), word)
}
