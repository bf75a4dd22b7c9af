//! Scheduled runs, and what the operator sees of every run: where each sender's
//! reconciliation stands between runs (kept in the failure index), and the answers of the
//! admin routes.
//!
//! A scheduled run continues the pass in progress, or starts a new one up to now: from the
//! lookback (the first time), else from an hour before where the last pass ended, so every
//! run looks at what is new and a little of what came before.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::call::ReconcileCall;
use super::cursor::ReconcileCursor;
use super::tally::{ErrorCode, RunError, RunOutcome, Tally};
use super::SenderLog;
use crate::claim::Millis;

/// A new pass starts this long before the last one ended.
pub const OVERLAP_MS: Millis = 3_600_000;
/// After a rate limit without `Retry-After`, the next scheduled run waits this long.
pub const RATE_LIMIT_WAIT_MS: Millis = 60_000;

/// Where one sender's reconciliation stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The sender.
    pub log: SenderLog,
    /// The scheduled pass in progress, where it continues.
    #[serde(default)]
    pub pass: Option<ReconcileCursor>,
    /// The end of the last finished scheduled pass.
    #[serde(default)]
    pub covered_until: Option<Millis>,
    /// No scheduled run before then (the sender asked to slow down).
    #[serde(default)]
    pub not_before: Option<Millis>,
    /// The last run, scheduled or called.
    #[serde(default)]
    pub last: Option<LastRun>,
}

/// What the last run did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// When it ran.
    pub at: Millis,
    /// Its window.
    pub since: Millis,
    /// Its window's end.
    pub until: Millis,
    /// True for a scheduled run.
    pub scheduled: bool,
    /// A dry run.
    pub dry_run: bool,
    /// What it counted.
    pub tally: Tally,
    /// Where it stopped, if before the window's end.
    pub next: Option<ReconcileCursor>,
}

impl Progress {
    /// Nothing yet for `log`.
    pub fn new(log: SenderLog) -> Progress {
        Progress {
            log,
            pass: None,
            covered_until: None,
            not_before: None,
            last: None,
        }
    }

    /// The call a scheduled run at `now` makes, with `lookback_ms`; `None` while the sender
    /// asked to wait, or when no time has passed since the last pass.
    pub fn next_call(&self, now: Millis, lookback_ms: Millis) -> Option<ReconcileCall> {
        if self.not_before.is_some_and(|at| at > now) {
            return None;
        }
        if let Some(pass) = &self.pass {
            return Some(ReconcileCall {
                log: pass.log,
                since: pass.since,
                until: pass.until,
                dry_run: false,
                after: pass.after.clone(),
            });
        }
        let oldest = now.saturating_sub(lookback_ms.min(self.log.keeps_ms()));
        let since = match self.covered_until {
            Some(covered) => covered.saturating_sub(OVERLAP_MS).max(oldest),
            None => oldest,
        };
        let until = now;
        (until > since).then_some(ReconcileCall {
            log: self.log,
            since,
            until,
            dry_run: false,
            after: None,
        })
    }

    /// Records how `call` at `now` ended: always as the last run; a scheduled one also moves
    /// the pass on (to its next page, or ends it), and waits as long as the sender asked.
    pub fn ran(
        &mut self,
        call: &ReconcileCall,
        outcome: &RunOutcome,
        now: Millis,
        scheduled: bool,
    ) {
        let (tally, next) = match outcome {
            RunOutcome::Ran { tally, next } => (tally.clone(), next.clone()),
            RunOutcome::KeyRefused { status } => {
                let mut tally = Tally::default();
                tally.errors.push(key_refused(call.log, *status));
                tally.error_count = 1;
                (tally, Some(call.cursor(call.after.clone())))
            }
        };
        if scheduled {
            let waited = tally
                .errors
                .iter()
                .find(|error| error.code == ErrorCode::SenderRateLimited)
                .map(|error| {
                    let seconds = error.retry_after_seconds.unwrap_or(0);
                    (seconds * 1_000).max(RATE_LIMIT_WAIT_MS)
                });
            self.not_before = waited.map(|wait| now.saturating_add(wait));
            self.pass.clone_from(&next);
            if next.is_none() {
                self.covered_until = Some(call.until);
            }
        }
        self.last = Some(LastRun {
            at: now,
            since: call.since,
            until: call.until,
            scheduled,
            dry_run: call.dry_run,
            tally,
            next,
        });
    }

    /// The item of `GET /admin/reconcile`; `handed_word` names what handing over means for
    /// the sender (`delivered` or `queued`).
    pub fn view(&self, handed_word: &str) -> Value {
        let time = |at: Millis| crate::rfc3339::format(at);
        let mut item = json!({
            "provider": self.log.name(),
            "last_run_at": null,
            "since": null,
            "until": null,
            "scheduled": null,
            "next_cursor": null,
            "covered_until": self.covered_until.and_then(time),
            "next_run_not_before": self.not_before.and_then(time),
        });
        if let Some(last) = &self.last {
            item["last_run_at"] = json!(time(last.at));
            item["since"] = json!(time(last.since));
            item["until"] = json!(time(last.until));
            item["scheduled"] = json!(last.scheduled);
            item["next_cursor"] = json!(last.next.as_ref().map(ReconcileCursor::encode));
            counts(&mut item, &last.tally, handed_word);
        } else {
            counts(&mut item, &Tally::default(), handed_word);
        }
        item
    }
}

/// One run, as the failure index is told of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ran {
    /// What it was asked.
    pub call: ReconcileCall,
    /// How it ended.
    pub outcome: RunOutcome,
    /// When.
    pub at: Millis,
    /// True for a scheduled run.
    pub scheduled: bool,
}

/// Writes `tally`'s counts into `item`.
pub fn counts(item: &mut Value, tally: &Tally, handed_word: &str) {
    item["listed"] = json!(tally.listed);
    item["already_done"] = json!(tally.already_done);
    item["in_flight"] = json!(tally.in_flight);
    item["dead"] = json!(tally.dead);
    item[handed_word] = json!(tally.handed_over);
    item["redelivery_requested"] = json!(tally.redelivery_requested);
    item["skipped"] = json!(tally.skipped);
    item["errors"] = json!(tally.errors);
    item["error_count"] = json!(tally.error_count);
}

/// The error of a run whose credentials `log`'s API refused with `status`.
pub fn key_refused(log: SenderLog, status: u16) -> RunError {
    let key = match log {
        SenderLog::Stripe => "STRIPE_API_KEY",
        SenderLog::Github => "GITHUB_API_TOKEN",
    };
    RunError {
        code: ErrorCode::SenderFailed,
        detail: format!("{} refused {key} ({status})", log.title()),
        id: None,
        status: Some(status),
        retry_after_seconds: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_800_000_000_000;
    const HOUR: Millis = 3_600_000;

    fn ran(next: Option<ReconcileCursor>, errors: Vec<RunError>) -> RunOutcome {
        let tally = Tally {
            listed: 3,
            error_count: errors.len() as u32,
            errors,
            ..Tally::default()
        };
        RunOutcome::Ran { tally, next }
    }

    #[test]
    fn a_first_pass_covers_the_lookback_up_to_now() {
        let progress = Progress::new(SenderLog::Github);
        let call = progress.next_call(NOW, 720 * HOUR).unwrap();
        assert_eq!(
            (call.since, call.until, call.after),
            (NOW - 72 * HOUR, NOW, None),
            "never longer than GitHub keeps"
        );
    }

    #[test]
    fn a_pass_continues_page_by_page_and_the_next_starts_an_hour_before_it_ended() {
        let mut progress = Progress::new(SenderLog::Stripe);
        let call = progress.next_call(NOW, 72 * HOUR).unwrap();
        let page = call.cursor(Some("evt_5".into()));
        progress.ran(&call, &ran(Some(page.clone()), vec![]), NOW, true);
        let second = progress.next_call(NOW + 15 * 60_000, 72 * HOUR).unwrap();
        assert_eq!(
            (second.since, second.until, second.after.as_deref()),
            (call.since, call.until, Some("evt_5"))
        );
        progress.ran(&second, &ran(None, vec![]), NOW + 15 * 60_000, true);
        assert_eq!(progress.covered_until, Some(call.until));
        let third = progress.next_call(NOW + 30 * 60_000, 72 * HOUR).unwrap();
        assert_eq!(
            (third.since, third.until),
            (call.until - OVERLAP_MS, NOW + 30 * 60_000)
        );
        let view = progress.view("delivered");
        assert_eq!(view["provider"], "stripe");
        assert_eq!(view["listed"], 3);
        assert_eq!(view["next_cursor"], Value::Null);
    }

    #[test]
    fn a_rate_limit_holds_the_next_scheduled_run_and_a_called_run_moves_nothing() {
        let mut progress = Progress::new(SenderLog::Stripe);
        let call = progress.next_call(NOW, 72 * HOUR).unwrap();
        let limited = RunError {
            code: ErrorCode::SenderRateLimited,
            detail: "slow down".into(),
            id: None,
            status: Some(429),
            retry_after_seconds: Some(120),
        };
        let here = call.cursor(None);
        progress.ran(&call, &ran(Some(here), vec![limited]), NOW, true);
        assert_eq!(progress.next_call(NOW + 119_000, 72 * HOUR), None);
        assert!(progress.next_call(NOW + 120_000, 72 * HOUR).is_some());
        let before = progress.clone();
        progress.ran(&call, &ran(None, vec![]), NOW + 1, false);
        assert_eq!(
            (&progress.pass, progress.covered_until),
            (&before.pass, before.covered_until)
        );
        assert!(progress.last.as_ref().is_some_and(|last| !last.scheduled));
        progress.ran(
            &call,
            &RunOutcome::KeyRefused { status: 401 },
            NOW + 2,
            false,
        );
        let errors = &progress.last.as_ref().unwrap().tally.errors;
        assert!(errors[0].detail.contains("STRIPE_API_KEY"), "{errors:?}");
    }
}
