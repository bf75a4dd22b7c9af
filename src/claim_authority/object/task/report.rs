//! One key's changes sent to the failure index, as the alarm sends them: read the report due,
//! draw the back-off's jitter, ask the index, then settle the changes by its answer (see
//! [`failure_index::after_refusal`]): cleared when it took them, else sent again after a back-off.

use std::collections::VecDeque;

use super::due::Fraction;
use super::{log, Call, Done};
use crate::claim::{Change, ClaimStore, Millis};
use crate::config::Config;
use crate::failure_index::{self, IndexRequest};
use crate::log_line::LogLine;

/// Where the send stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// The report due is read.
    Read,
    /// The back-off's jitter is asked for.
    Jitter(Option<failure_index::IndexReport>, Vec<Change>),
    /// The index is asked.
    Asking(Vec<Change>, Fraction),
    /// The changes are settled by the index's answer (`refused`: why it did not take them).
    After(Vec<Change>, Fraction, Option<String>),
    /// Over.
    Over,
}

/// One key's report to the failure index. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SendReport {
    key: String,
    step: Step,
}

impl SendReport {
    /// The report of `key`; its first call is queued on `calls`.
    pub fn new(key: String, calls: &mut VecDeque<Call>) -> SendReport {
        calls.push_back(Call::Store { op: "report" });
        SendReport {
            key,
            step: Step::Read,
        }
    }

    /// True once it is over.
    pub fn is_over(&self) -> bool {
        self.step == Step::Over
    }

    /// Runs the store step asked for over `store`.
    pub fn store<S: ClaimStore>(
        &mut self,
        store: &mut S,
        config: Option<&Config>,
        now: Millis,
        calls: &mut VecDeque<Call>,
    ) {
        match std::mem::replace(&mut self.step, Step::Over) {
            Step::Read => {
                if let Ok(Some((report, changes))) =
                    failure_index::due_report(store, &self.key, now)
                {
                    self.step = Step::Jitter(report, changes);
                    calls.push_back(Call::Jitter);
                }
            }
            Step::After(changes, jitter, refused) => {
                let retry = config.map(|config| config.queue.retry);
                let backoff = (retry, jitter.value());
                let key = &self.key;
                let settled =
                    failure_index::after_refusal(store, key, &changes, refused, now, backoff);
                if let Err(detail) = settled {
                    calls.push_back(log(LogLine::report_failed(key, &detail), false));
                }
            }
            other => self.step = other,
        }
    }

    /// Takes what the last call led to.
    pub fn handle(&mut self, done: Done, calls: &mut VecDeque<Call>) {
        let step = std::mem::replace(&mut self.step, Step::Over);
        self.step = match (done, step) {
            (Done::Jitter(jitter), Step::Jitter(report, changes)) => {
                let jitter = Fraction::of(jitter);
                match report {
                    Some(report) => {
                        calls.push_back(Call::AskIndex(IndexRequest::Report(report)));
                        Step::Asking(changes, jitter)
                    }
                    // Nothing to send (a record of no webhook sender): its changes are dropped.
                    None => {
                        calls.push_back(Call::Store { op: "report" });
                        Step::After(changes, jitter, None)
                    }
                }
            }
            (Done::Index(reply), Step::Asking(changes, jitter)) => {
                calls.push_back(Call::Store { op: "report" });
                Step::After(changes, jitter, failure_index::refusal(&reply))
            }
            (Done::Unopened(_), _) => Step::Over,
            (_, step) => step,
        };
    }
}
