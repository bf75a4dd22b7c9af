//! The claim authority's own log lines: what its reply to a delivery reports, and how an
//! attempt ended without a caller to tell.

use super::attempt::{AttemptSummary, End, LateWord};
use super::queue::AttemptEnd;
use super::{AuthorityReply, Delivery};
use crate::claim::Millis;
use crate::log_line::{Level, LogLine, Outcome};
use crate::origin::{OriginOutcome, Verdict};

impl LogLine {
    /// Notes on the line what a claim authority's `reply` to a delivery reports: a store
    /// failure's detail; for a forward, its attempt, takeover, origin status and time, settle
    /// step and classified reason, raising the level for a refused or failed settle.
    pub fn note(&mut self, reply: &AuthorityReply) {
        match reply {
            AuthorityReply::StoreFailed { detail, .. } => self.detail = Some(detail.clone()),
            AuthorityReply::Delivery(Delivery::Forwarded(report)) => {
                self.attempt = Some(report.attempt);
                self.takeover = Some(report.takeover);
                self.origin_ms = Some(report.origin_ms);
                self.settle = Some(report.settle);
                if let OriginOutcome::Answered { status } = report.outcome {
                    self.origin_status = Some(status);
                }
                if let Verdict::Failed(reason) | Verdict::Unknown(reason) = report.verdict {
                    self.detail = Some(reason.to_string());
                }
                if !report.settle.is_clean() {
                    self.raise(Level::Warn);
                }
            }
            _ => {}
        }
    }

    /// The line for an attempt that ended without a caller to tell (a delivery settled after
    /// its sender was answered, or a queued attempt) at `now`: a lost answer, a refused or
    /// failed settle and a retry are warnings, a dead letter or a failed queue settle an error.
    pub fn ended(summary: &AttemptSummary, now: Millis) -> LogLine {
        let mut line = LogLine {
            provider: summary.provider,
            key: Some(summary.key.clone()),
            attempt: Some(summary.attempt),
            origin_status: match summary.outcome {
                OriginOutcome::Answered { status } => Some(status),
                _ => None,
            },
            origin_ms: Some(summary.origin_ms),
            ..LogLine::new(summary.door.route())
        };
        let reason = match summary.verdict {
            Verdict::Failed(reason) | Verdict::Unknown(reason) => Some(reason.to_string()),
            Verdict::Succeeded | Verdict::Pending => None,
        };
        match &summary.end {
            End::Late(word, step) => {
                line.outcome = match word {
                    LateWord::LateAnswer => Outcome::LateAnswer,
                    LateWord::AnswerSettled => Outcome::AnswerSettled,
                    LateWord::AnswerLost => Outcome::AnswerLost,
                };
                line.settle = Some(*step);
                if !step.is_clean() || *word == LateWord::AnswerLost {
                    line.raise(Level::Warn);
                }
            }
            End::Queue(end) => {
                line.takeover = Some(summary.takeover);
                line.detail = reason;
                let (outcome, level) = queue_end(&mut line, end, now);
                line.outcome = outcome;
                line.raise(level);
            }
            End::QueueSettleFailed(detail) => {
                line.takeover = Some(summary.takeover);
                line.outcome = Outcome::SettleFailed;
                line.detail = Some(detail.clone());
                line.raise(Level::Error);
            }
        }
        line
    }
}

/// The outcome and level of a queued attempt that ended with `end` at `now`; a retry's or a
/// hold's line says when the next attempt comes.
fn queue_end(line: &mut LogLine, end: &AttemptEnd, now: Millis) -> (Outcome, Level) {
    let in_seconds = |at: Millis| at.saturating_sub(now).div_ceil(1_000);
    match end {
        AttemptEnd::Delivered => (Outcome::Delivered, Level::Info),
        AttemptEnd::RetryAt(at) => {
            line.detail = Some(format!(
                "{}; next attempt in {} s",
                line.detail.as_deref().unwrap_or("time-out"),
                in_seconds(*at)
            ));
            (Outcome::RetryScheduled, Level::Warn)
        }
        AttemptEnd::DeadLettered => (Outcome::DeadLettered, Level::Error),
        AttemptEnd::FenceConflict => (Outcome::FenceConflict, Level::Warn),
        AttemptEnd::Held { until, why } => {
            line.detail = Some(format!(
                "origin {}; next attempt in {} s (not counted)",
                why.name(),
                in_seconds(*until)
            ));
            (Outcome::Held, Level::Info)
        }
    }
}
