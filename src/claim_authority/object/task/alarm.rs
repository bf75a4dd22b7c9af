//! The object's alarm: delete what retention ended, run each queued attempt that is due (see
//! [`DueAttempt`]), send the failure index the changes it has not acknowledged (see
//! [`SendReport`]), then re-arm, or delete the whole storage when nothing is left. When
//! re-arming fails (storage trouble, an unreadable record), the alarm makes sure it fires again
//! by when the work needs it, within a minute at the latest, instead of failing: the runtime
//! retries a failing alarm only a few times, about two minutes in all, and then drops it, which
//! would leave an acknowledged queue event waiting for ever. Only if even that alarm cannot be
//! set does the run end in `Err`, for the runtime's own retries.

use std::collections::VecDeque;

use super::due::DueAttempt;
use super::report::SendReport;
use super::{log, Call, Done, Ended};
use crate::claim::{self, ClaimStore, Millis};
use crate::claim_authority::alarm::{self, KnownAlarm, Rearm};
use crate::config::Config;
use crate::log_line::LogLine;

/// One run of the object's alarm. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AlarmTask {
    ran_at: Millis,
    /// The first record the sweep met (an object holds one in practice).
    key: String,
    stage: Stage,
    calls: VecDeque<Call>,
}

/// Where the run stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// Expired records are deleted and the keys read.
    Sweep,
    /// The attempt due for the key at `at` of `keys`, if one is.
    Due {
        keys: Vec<String>,
        at: usize,
        attempt: DueAttempt,
    },
    /// The alarm needed is read; `second`: after the changes due were sent.
    Rearm { second: bool },
    /// The changes due for the key at `at` of `keys` go to the failure index.
    Report {
        keys: Vec<String>,
        at: usize,
        send: SendReport,
    },
    /// The alarm is set for this time.
    Setting(Millis),
    /// The whole storage is being deleted.
    Deleting,
    /// Re-arming failed with `error`: the alarm is set again by `retry_at` (`setting`: for
    /// this time, once the call is made).
    Retry {
        error: String,
        retry_at: Millis,
        setting: Option<Millis>,
    },
    /// Over.
    Over(Result<(), String>),
}

impl AlarmTask {
    /// The alarm that fires at `now`.
    pub fn new(now: Millis) -> AlarmTask {
        AlarmTask {
            ran_at: now,
            key: String::new(),
            stage: Stage::Sweep,
            calls: VecDeque::from([Call::Store { op: "alarm" }]),
        }
    }

    /// The first record the sweep met, once it ran.
    pub fn key(&self) -> &str {
        &self.key
    }

    pub(super) fn poll(
        &mut self,
        known: &mut KnownAlarm,
        config: Option<&Config>,
        now: Millis,
    ) -> Option<Call> {
        loop {
            if let Some(call) = self.calls.pop_front() {
                return Some(call);
            }
            if !self.advance(known, config, now) {
                return None;
            }
        }
    }

    /// Moves on where no call's result is awaited; `false` when the run waits, or is over.
    fn advance(&mut self, known: &mut KnownAlarm, config: Option<&Config>, now: Millis) -> bool {
        match &mut self.stage {
            Stage::Due { keys, at, attempt } if attempt.is_over() => {
                let (keys, next) = (std::mem::take(keys), *at + 1);
                self.due_from(keys, next, config);
                true
            }
            Stage::Due { attempt, .. } => attempt.advance(known, config, now, &mut self.calls),
            Stage::Report { keys, at, send } if send.is_over() => {
                let (keys, next) = (std::mem::take(keys), *at + 1);
                self.report_from(keys, next);
                true
            }
            Stage::Retry {
                error,
                retry_at,
                setting: None,
            } => {
                let (error, retry_at) = (error.clone(), *retry_at);
                match known.to_fire_by(retry_at, now) {
                    // A known alarm fires sooner: it will do.
                    None => {
                        let at = match known {
                            KnownAlarm::At(known) => *known,
                            _ => retry_at,
                        };
                        self.retried(&error, Ok(at));
                    }
                    Some(at) => {
                        *known = KnownAlarm::At(at);
                        let setting = Some(at);
                        self.stage = Stage::Retry {
                            error,
                            retry_at,
                            setting,
                        };
                        self.calls.push_back(Call::SetAlarm(at));
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// The attempt due for the key at `at` of `keys` (none while the configuration is
    /// invalid: the event waits, stored), else the re-arm.
    fn due_from(&mut self, keys: Vec<String>, at: usize, config: Option<&Config>) {
        match keys.get(at) {
            Some(key) if config.is_some() => {
                let attempt = DueAttempt::new(key.clone(), &mut self.calls);
                self.stage = Stage::Due { keys, at, attempt };
            }
            _ => self.rearm(false),
        }
    }

    /// The report of the key at `at` of `keys`, or the second re-arm once every key was sent.
    fn report_from(&mut self, keys: Vec<String>, at: usize) {
        match keys.get(at) {
            Some(key) => {
                let send = SendReport::new(key.clone(), &mut self.calls);
                self.stage = Stage::Report { keys, at, send };
            }
            None => self.rearm(true),
        }
    }

    fn rearm(&mut self, second: bool) {
        self.stage = Stage::Rearm { second };
        self.calls.push_back(Call::Store { op: "rearm" });
    }

    pub(super) fn store<S: ClaimStore>(
        &mut self,
        store: &mut S,
        config: Option<&Config>,
        now: Millis,
    ) {
        match &mut self.stage {
            Stage::Sweep => self.swept(store, config),
            Stage::Due { attempt, .. } => attempt.store(store, config, now, &mut self.calls),
            Stage::Rearm { second } => {
                let second = *second;
                self.rearmed(store, second, now)
            }
            Stage::Report { send, .. } => send.store(store, config, now, &mut self.calls),
            _ => {}
        }
    }

    /// The sweep: expired records deleted (a line each), then the attempts due.
    fn swept<S: ClaimStore>(&mut self, store: &mut S, config: Option<&Config>) {
        let swept = claim::expire(store, self.ran_at).and_then(|sweep| Ok((sweep, store.keys()?)));
        match swept {
            Ok((sweep, keys)) => {
                let first = sweep
                    .expired
                    .iter()
                    .map(|expired| &expired.key)
                    .chain(&keys)
                    .next();
                self.key = first.cloned().unwrap_or_default();
                for expired in &sweep.expired {
                    let line = LogLine::expired(&expired.key, expired.state);
                    self.calls.push_back(log(line, false));
                }
                self.due_from(keys, 0, config);
            }
            Err(error) => self.failed(None, error.to_string(), self.ran_at),
        }
    }

    /// The alarm needed, read at `now`: on the first pass, the changes due for the index are
    /// sent first (then it is read again).
    fn rearmed<S: ClaimStore>(&mut self, store: &mut S, second: bool, now: Millis) {
        let read = if second {
            alarm::rearm(store, self.ran_at, now).map(|rearm| (rearm, Vec::new()))
        } else {
            alarm::rearm_and_reports(store, self.ran_at, now)
        };
        match read {
            Ok((_, reports)) if !reports.is_empty() => self.report_from(reports, 0),
            Ok((Rearm::DeleteAll, _)) => {
                self.stage = Stage::Deleting;
                self.calls.push_back(Call::DeleteAll);
            }
            Ok((Rearm::At(at), _)) => {
                self.stage = Stage::Setting(at);
                self.calls.push_back(Call::SetAlarm(at));
            }
            Err(error) => self.failed(None, error.to_string(), now),
        }
    }

    /// Re-arming for `wanted` (when known) failed with `error` at `now`.
    fn failed(&mut self, wanted: Option<Millis>, error: String, now: Millis) {
        let retry_at = alarm::retry_after_failed_rearm(wanted, now);
        self.stage = Stage::Retry {
            error,
            retry_at,
            setting: None,
        };
    }

    /// The alarm after a failed re-arm is set for `at`, or could not be.
    fn retried(&mut self, error: &str, set: Result<Millis, String>) {
        let (detail, result) = match set {
            Ok(at) => (format!("{error}; the alarm runs again at {at}"), Ok(())),
            Err(set_error) => (
                format!(
                    "{error}; setting the next alarm failed too ({set_error}): the runtime retries"
                ),
                Err(set_error),
            ),
        };
        self.calls
            .push_back(log(LogLine::alarm_failed(&detail), false));
        self.stage = Stage::Over(result);
    }

    pub(super) fn handle(&mut self, done: Done, known: &mut KnownAlarm, now: Millis) {
        match (&mut self.stage, done) {
            (Stage::Sweep | Stage::Rearm { .. }, Done::Unopened(error)) => {
                self.failed(None, error.to_string(), now)
            }
            (Stage::Due { attempt, .. }, done) => attempt.handle(done, known, &mut self.calls),
            (Stage::Report { send, .. }, done) => send.handle(done, &mut self.calls),
            (Stage::Setting(at), Done::AlarmSet(result)) => {
                let at = *at;
                *known = KnownAlarm::after_set(at, result.is_ok());
                match result {
                    Ok(()) => self.stage = Stage::Over(Ok(())),
                    Err(error) => self.failed(Some(at), error, now),
                }
            }
            (Stage::Deleting, Done::Deleted(result)) => {
                if result.is_ok() {
                    *known = KnownAlarm::None;
                }
                self.stage = Stage::Over(result);
            }
            (
                Stage::Retry {
                    error,
                    setting: Some(at),
                    ..
                },
                Done::AlarmSet(result),
            ) => {
                let (error, at) = (error.clone(), *at);
                *known = KnownAlarm::after_set(at, result.is_ok());
                self.retried(&error, result.map(|()| at));
            }
            _ => {}
        }
    }

    pub(super) fn ended(&self) -> Ended {
        match (&self.stage, self.calls.is_empty()) {
            (Stage::Over(result), true) => Ended::Alarm(result.clone()),
            _ => Ended::Running,
        }
    }
}
