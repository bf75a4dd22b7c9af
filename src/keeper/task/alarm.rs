//! The object's alarm: delete what retention ended, run each queued attempt that is due, send
//! the failure index the changes it has not acknowledged, then re-arm, or delete the whole
//! storage when nothing is left. When re-arming fails (storage trouble, an unreadable record),
//! the alarm makes sure it fires again by when the work needs it, within a minute at the
//! latest, instead of failing: the runtime retries a failing alarm only a few times, about
//! two minutes in all, and then drops it, which would leave an acknowledged queue event
//! waiting for ever. Only if even that alarm cannot be set does the run end in `Err`, for the
//! runtime's own retries.

use std::collections::VecDeque;

use super::{log, Call, Done, Ended, EnsureAlarm};
use crate::authority::alarm::{self, KnownAlarm, Rearm};
use crate::authority::queue::{self, Due};
use crate::authority::{Attempt, Won};
use crate::claim::{self, Change, ClaimStore, Millis, Nonce, StoreError};
use crate::config::Config;
use crate::failures::{self, IndexRequest};
use crate::keeper::Outgoing;
use crate::log_line::LogLine;
use crate::providers::Provider;

/// One run of the object's alarm. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AlarmRun {
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
    /// The attempt due for `keys[at]`, if one is.
    Due {
        keys: Vec<String>,
        at: usize,
        step: DueStep,
    },
    /// The alarm needed is read; `reports`: the keys whose changes were sent since (a second
    /// pass), `None` on the first.
    Rearm { second: bool },
    /// The changes due for `keys[at]` go to the failure index.
    Report {
        keys: Vec<String>,
        at: usize,
        step: ReportStep,
    },
    /// The alarm is set for this time.
    Setting(Millis),
    /// The whole storage is being deleted.
    Deleting,
    /// Re-arming failed: the alarm is set again by `retry_at`.
    Retry {
        error: String,
        retry_at: Millis,
        setting: Option<Millis>,
    },
    /// Over.
    Over(Result<(), String>),
}

/// One queued attempt's start.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum DueStep {
    /// A nonce for the attempt's fence is asked for.
    Nonce,
    /// The attempt starts under this nonce.
    Start(Nonce),
    /// Started at `started` (or not); the alarm its write needs is seen to.
    Alarm(Result<Due, StoreError>, EnsureAlarm, Millis),
    /// The back-off's jitter is asked for.
    Jitter(Won, Provider, Option<Vec<u8>>, Millis),
    /// Ready to forward, with the jitter drawn.
    Ready(Won, Provider, Option<Vec<u8>>, Millis, Fraction),
    /// The forward runs; the alarm waits for it.
    Forwarding,
    /// This key is done: on to the next.
    Over,
}

/// One key's report to the failure index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ReportStep {
    Read,
    Jitter(Option<failures::Report>, Vec<Change>),
    Asking(Vec<Change>, Fraction),
    After(Vec<Change>, Fraction, Option<String>),
}

/// A fraction in `[0, 1)`, kept as its bits so that the run can be hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Fraction(u64);

impl Fraction {
    fn of(value: f64) -> Fraction {
        Fraction(value.to_bits())
    }

    fn value(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl AlarmRun {
    /// The alarm that fires at `now`.
    pub fn new(now: Millis) -> AlarmRun {
        AlarmRun {
            ran_at: now,
            key: String::new(),
            stage: Stage::Sweep,
            calls: VecDeque::from([store("alarm")]),
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
            Stage::Due { keys, at, step } => match step {
                DueStep::Alarm(due, ensure, started) => {
                    if let Some(call) = ensure.poll(known, now) {
                        self.calls.push_back(call);
                        return true;
                    }
                    if ensure.step().is_none() {
                        return false;
                    }
                    match due.clone() {
                        Ok(Due::Attempt(won, provider, payload)) => {
                            *step = DueStep::Jitter(won, provider, payload, *started);
                            self.calls.push_back(Call::Jitter);
                        }
                        Ok(Due::Dead(reason, provider)) => {
                            let line = LogLine::dead_before_attempt(provider, &keys[*at], reason);
                            self.calls.push_back(log(line, true));
                            self.next_key(config);
                        }
                        Ok(Due::Nothing) | Err(_) => self.next_key(config),
                    }
                    true
                }
                DueStep::Ready(..) => {
                    let DueStep::Ready(won, provider, payload, started, jitter) =
                        std::mem::replace(step, DueStep::Forwarding)
                    else {
                        return false;
                    };
                    let key = keys[*at].clone();
                    match config {
                        Some(config) => {
                            let request = outgoing(config, provider, &key, &won, payload, now);
                            let policy = config.queue.attempt_policy(config.webhook.claims);
                            let (retry, timeout_ms) =
                                (config.queue.retry, config.queue.forward_timeout_ms);
                            let attempt = Attempt::queued(
                                provider,
                                &key,
                                won,
                                started,
                                policy,
                                retry,
                                timeout_ms,
                                jitter.value(),
                            );
                            self.calls.push_back(Call::Attempt {
                                attempt: Box::new(attempt),
                                request,
                            });
                        }
                        None => self.next_key(None),
                    }
                    true
                }
                DueStep::Over => {
                    self.next_key(config);
                    true
                }
                _ => false,
            },
            Stage::Retry {
                error,
                retry_at,
                setting: None,
            } => {
                let (error, retry_at) = (error.clone(), *retry_at);
                match known.to_fire_by(retry_at, now) {
                    None => {
                        let at = match known {
                            KnownAlarm::At(known) => *known,
                            _ => retry_at,
                        };
                        self.retried(&error, Ok(at));
                    }
                    Some(at) => {
                        *known = KnownAlarm::At(at);
                        self.stage = Stage::Retry {
                            error,
                            retry_at,
                            setting: Some(at),
                        };
                        self.calls.push_back(Call::SetAlarm(at));
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// The attempt of the next key, or the re-arm once every key was seen.
    fn next_key(&mut self, config: Option<&Config>) {
        let Stage::Due { keys, at, .. } = &mut self.stage else {
            return;
        };
        *at += 1;
        let keys = std::mem::take(keys);
        let at = *at;
        self.due_from(keys, at, config);
    }

    /// The attempt due for `keys[at]` (none while the configuration is invalid: the event
    /// waits, stored), else the re-arm.
    fn due_from(&mut self, keys: Vec<String>, at: usize, config: Option<&Config>) {
        if at < keys.len() && config.is_some() {
            self.stage = Stage::Due {
                keys,
                at,
                step: DueStep::Nonce,
            };
            self.calls.push_back(Call::Nonce);
        } else {
            self.stage = Stage::Rearm { second: false };
            self.calls.push_back(store("rearm"));
        }
    }

    pub(super) fn store<S: ClaimStore>(
        &mut self,
        store: &mut S,
        config: Option<&Config>,
        now: Millis,
    ) {
        match std::mem::replace(&mut self.stage, Stage::Over(Ok(()))) {
            Stage::Sweep => self.swept(store, config),
            Stage::Due {
                keys,
                at,
                step: DueStep::Start(nonce),
            } => {
                let (due, wake) = match config {
                    Some(config) => {
                        let policy = config.queue.attempt_policy(config.webhook.claims);
                        let retry = config.queue.retry;
                        queue::start(store, &keys[at], now, policy, retry, nonce)
                    }
                    None => (Ok(Due::Nothing), None),
                };
                let step = DueStep::Alarm(due, EnsureAlarm::after(wake), now);
                self.stage = Stage::Due { keys, at, step };
            }
            Stage::Rearm { second } => self.rearmed(store, second, now),
            Stage::Report {
                keys,
                at,
                step: ReportStep::Read,
            } => match failures::due_report(store, &keys[at], now) {
                Ok(Some((report, changes))) => {
                    self.stage = Stage::Report {
                        keys,
                        at,
                        step: ReportStep::Jitter(report, changes),
                    };
                    self.calls.push_back(Call::Jitter);
                }
                _ => self.next_report(keys, at + 1),
            },
            Stage::Report {
                keys,
                at,
                step: ReportStep::After(changes, jitter, refused),
            } => {
                let retry = config.map(|config| config.queue.retry);
                let backoff = (retry, jitter.value());
                let key = &keys[at];
                let settled = failures::after_refusal(store, key, &changes, refused, now, backoff);
                if let Err(detail) = settled {
                    self.calls
                        .push_back(log(LogLine::report_failed(key, &detail), false));
                }
                self.next_report(keys, at + 1);
            }
            other => self.stage = other,
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
    /// sent first (then read again).
    fn rearmed<S: ClaimStore>(&mut self, store: &mut S, second: bool, now: Millis) {
        let read = if second {
            alarm::rearm(store, self.ran_at, now).map(|rearm| (rearm, Vec::new()))
        } else {
            alarm::rearm_and_reports(store, self.ran_at, now)
        };
        match read {
            Ok((_, reports)) if !reports.is_empty() => self.next_report(reports, 0),
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

    /// The report of `keys[at]`, or the second re-arm pass once every key was sent.
    fn next_report(&mut self, keys: Vec<String>, at: usize) {
        if at < keys.len() {
            self.stage = Stage::Report {
                keys,
                at,
                step: ReportStep::Read,
            };
            self.calls.push_back(store("report"));
        } else {
            self.stage = Stage::Rearm { second: true };
            self.calls.push_back(store("rearm"));
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
        match (
            done,
            std::mem::replace(&mut self.stage, Stage::Over(Ok(()))),
        ) {
            (Done::Unopened(error), Stage::Sweep | Stage::Rearm { .. }) => {
                self.failed(None, error.to_string(), now)
            }
            (Done::Unopened(_) | Done::Nonce(Err(_)), Stage::Due { keys, at, .. }) => {
                self.stage = Stage::Due {
                    keys,
                    at,
                    step: DueStep::Over,
                };
            }
            (Done::Nonce(Ok(nonce)), Stage::Due { keys, at, .. }) => {
                self.stage = Stage::Due {
                    keys,
                    at,
                    step: DueStep::Start(nonce),
                };
                self.calls.push_back(store("attempt"));
            }
            (
                Done::AlarmSet(result),
                Stage::Due {
                    keys,
                    at,
                    step: DueStep::Alarm(due, mut ensure, started),
                },
            ) => {
                ensure.set(result, known, &mut self.calls);
                self.stage = Stage::Due {
                    keys,
                    at,
                    step: DueStep::Alarm(due, ensure, started),
                };
            }
            (Done::Jitter(jitter), Stage::Due { keys, at, step }) => {
                let step = match step {
                    DueStep::Jitter(won, provider, payload, started) => {
                        DueStep::Ready(won, provider, payload, started, Fraction::of(jitter))
                    }
                    other => other,
                };
                self.stage = Stage::Due { keys, at, step };
            }
            (Done::Forwarded, Stage::Due { keys, at, .. }) => {
                self.stage = Stage::Due {
                    keys,
                    at,
                    step: DueStep::Over,
                };
            }
            (Done::Jitter(jitter), Stage::Report { keys, at, step }) => {
                if let ReportStep::Jitter(report, changes) = step {
                    let jitter = Fraction::of(jitter);
                    match report {
                        Some(report) => {
                            self.calls
                                .push_back(Call::AskIndex(IndexRequest::Report(report)));
                            self.stage = Stage::Report {
                                keys,
                                at,
                                step: ReportStep::Asking(changes, jitter),
                            };
                        }
                        None => {
                            self.stage = Stage::Report {
                                keys,
                                at,
                                step: ReportStep::After(changes, jitter, None),
                            };
                            self.calls.push_back(store("report"));
                        }
                    }
                }
            }
            (Done::Index(reply), Stage::Report { keys, at, step }) => {
                if let ReportStep::Asking(changes, jitter) = step {
                    let refused = failures::refusal(&reply);
                    self.stage = Stage::Report {
                        keys,
                        at,
                        step: ReportStep::After(changes, jitter, refused),
                    };
                    self.calls.push_back(store("report"));
                }
            }
            (Done::AlarmSet(result), Stage::Setting(at)) => {
                *known = KnownAlarm::after_set(at, result.is_ok());
                match result {
                    Ok(()) => self.stage = Stage::Over(Ok(())),
                    Err(error) => self.failed(Some(at), error, now),
                }
            }
            (Done::Deleted(result), Stage::Deleting) => {
                if result.is_ok() {
                    *known = KnownAlarm::None;
                }
                self.stage = Stage::Over(result);
            }
            (
                Done::AlarmSet(result),
                Stage::Retry {
                    error,
                    setting: Some(at),
                    ..
                },
            ) => {
                *known = KnownAlarm::after_set(at, result.is_ok());
                self.retried(&error, result.map(|()| at));
            }
            (_, stage) => self.stage = stage,
        }
    }

    pub(super) fn ended(&self) -> Ended {
        match (&self.stage, self.calls.is_empty()) {
            (Stage::Over(result), true) => Ended::Alarm(result.clone()),
            _ => Ended::Running,
        }
    }
}

/// A store step call.
fn store(op: &'static str) -> Call {
    Call::Store { op }
}

/// The request of the attempt `won` of `provider`'s `key`: its stored event (`payload`)
/// signed anew at `now` with the sender's first secret (see [`queue::outgoing`]); `None`
/// when it cannot be made.
fn outgoing(
    config: &Config,
    provider: Provider,
    key: &str,
    won: &Won,
    payload: Option<Vec<u8>>,
    now: Millis,
) -> Option<Outgoing> {
    let (secrets, url) = config.sender(provider)?;
    let now_seconds = (now / 1_000) as i64;
    let (headers, body) = queue::outgoing(
        payload.as_deref(),
        Some(&secrets),
        provider,
        key,
        won,
        now_seconds,
    )?;
    Some(Outgoing {
        url: url.to_string(),
        headers,
        body: body.to_vec(),
    })
}
