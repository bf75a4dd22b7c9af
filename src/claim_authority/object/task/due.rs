//! One queued attempt's start, as the alarm runs it for a key: a nonce for the fence, the
//! attempt written (its stored event read first), the alarm its lease needs, the back-off's
//! jitter, then the forward, which the alarm waits for.

use std::collections::VecDeque;

use super::{log, Call, Done, EnsureAlarm};
use crate::claim::{AttemptTerms, ClaimStore, Millis, Nonce, StoreError};
use crate::claim_authority::alarm::KnownAlarm;
use crate::claim_authority::object::Outgoing;
use crate::claim_authority::queue::{self, Due};
use crate::claim_authority::{Attempt, Won};
use crate::config::Config;
use crate::log_line::LogLine;
use crate::providers::Provider;
use crate::reverts::{reverted, Fix};

/// A fraction in `[0, 1)`, kept as its bits so that a task can be hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fraction(u64);

impl Fraction {
    /// `value` kept.
    pub fn of(value: f64) -> Fraction {
        Fraction(value.to_bits())
    }

    /// The value kept.
    pub fn value(self) -> f64 {
        f64::from_bits(self.0)
    }
}

/// Where the start stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    /// A nonce for the attempt's fence is asked for.
    Nonce,
    /// The attempt starts under this nonce.
    Start(Nonce),
    /// Started at the time given (or not); the alarm its write needs is seen to.
    Alarm(Result<Due, StoreError>, EnsureAlarm, Millis),
    /// The stored event is read after the attempt was written (only with the fix that reads
    /// it before taken out: see [`Fix::BodyReadBeforeTheAttempt`]).
    Payload(Won, Provider, Millis),
    /// The back-off's jitter is asked for.
    Jitter(Won, Provider, Option<Vec<u8>>, Millis),
    /// Ready to forward, with the jitter drawn.
    Ready(Won, Provider, Option<Vec<u8>>, Millis, Fraction),
    /// The forward runs; the alarm waits for it.
    Forwarding,
    /// Over: on to the next key.
    Over,
}

/// One queued attempt's start for `key`. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DueAttempt {
    key: String,
    step: Step,
}

impl DueAttempt {
    /// The attempt due for `key`, if one is; its first call is queued on `calls`.
    pub fn new(key: String, calls: &mut VecDeque<Call>) -> DueAttempt {
        calls.push_back(Call::Nonce);
        DueAttempt {
            key,
            step: Step::Nonce,
        }
    }

    /// True once it is over.
    pub fn is_over(&self) -> bool {
        self.step == Step::Over
    }

    /// Moves on where no call's result is awaited, queuing the calls that needs on `calls`;
    /// `false` when it waits, or is over.
    pub fn advance(
        &mut self,
        known: &mut KnownAlarm,
        config: Option<&Config>,
        now: Millis,
        calls: &mut VecDeque<Call>,
    ) -> bool {
        match &mut self.step {
            Step::Alarm(due, ensure, started) => {
                if let Some(call) = ensure.poll(known, now) {
                    calls.push_back(call);
                    return true;
                }
                if ensure.step().is_none() {
                    return false;
                }
                let (due, started) = (due.clone(), *started);
                self.started(due, started, calls);
                true
            }
            Step::Ready(..) => {
                let Step::Ready(won, provider, payload, started, jitter) =
                    std::mem::replace(&mut self.step, Step::Forwarding)
                else {
                    return false;
                };
                let ready = (won, provider, payload, started, jitter);
                match config {
                    Some(config) => calls.push_back(self.attempt(config, ready, now)),
                    None => self.step = Step::Over,
                }
                true
            }
            _ => false,
        }
    }

    /// What follows the start: the jitter (or the old separate read), a dead letter's line, or
    /// nothing to do.
    fn started(
        &mut self,
        due: Result<Due, StoreError>,
        started: Millis,
        calls: &mut VecDeque<Call>,
    ) {
        self.step = match due {
            Ok(Due::Attempt(won, provider, None)) if reverted(Fix::BodyReadBeforeTheAttempt) => {
                calls.push_back(Call::Store { op: "payload" });
                Step::Payload(won, provider, started)
            }
            Ok(Due::Attempt(won, provider, payload)) => {
                calls.push_back(Call::Jitter);
                Step::Jitter(won, provider, payload, started)
            }
            Ok(Due::Dead(reason, provider)) => {
                let line = LogLine::dead_before_attempt(provider, &self.key, reason);
                calls.push_back(log(line, true));
                Step::Over
            }
            Ok(Due::Nothing) | Err(_) => Step::Over,
        };
    }

    /// The forward of the attempt made ready: its stored event signed anew, under the
    /// configuration's policy.
    fn attempt(
        &self,
        config: &Config,
        (won, provider, payload, started, jitter): (
            Won,
            Provider,
            Option<Vec<u8>>,
            Millis,
            Fraction,
        ),
        now: Millis,
    ) -> Call {
        let request = outgoing(config, provider, &self.key, &won, payload, now);
        let policy = config.queue.attempt_policy(config.webhook.claims);
        let attempt = Attempt::queued(
            provider,
            &self.key,
            won,
            started,
            AttemptTerms {
                policy,
                retry: config.queue.retry,
                jitter: jitter.value(),
            },
            config.queue.forward_timeout_ms,
        );
        Call::Attempt {
            attempt: Box::new(attempt),
            request,
        }
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
            Step::Start(nonce) => {
                let (due, wake) = match config {
                    Some(config) => {
                        let policy = config.queue.attempt_policy(config.webhook.claims);
                        queue::start(store, &self.key, now, policy, config.queue.retry, nonce)
                    }
                    None => (Ok(Due::Nothing), None),
                };
                self.step = Step::Alarm(due, EnsureAlarm::after(wake), now);
            }
            Step::Payload(won, provider, started) => {
                // The old order: a read that fails spends the attempt, nothing sent.
                let payload = store.load_payload(&self.key).ok().flatten();
                self.step = Step::Jitter(won, provider, payload, started);
                calls.push_back(Call::Jitter);
            }
            other => self.step = other,
        }
    }

    /// Takes what the last call led to.
    pub fn handle(&mut self, done: Done, known: &mut KnownAlarm, calls: &mut VecDeque<Call>) {
        match (done, &mut self.step) {
            (Done::Unopened(_) | Done::Nonce(Err(_)), _) => self.step = Step::Over,
            (Done::Nonce(Ok(nonce)), Step::Nonce) => {
                self.step = Step::Start(nonce);
                calls.push_back(Call::Store { op: "attempt" });
            }
            (Done::AlarmSet(result), Step::Alarm(_, ensure, _)) => ensure.set(result, known, calls),
            (Done::Jitter(jitter), Step::Jitter(..)) => {
                let Step::Jitter(won, provider, payload, started) =
                    std::mem::replace(&mut self.step, Step::Over)
                else {
                    return;
                };
                self.step = Step::Ready(won, provider, payload, started, Fraction::of(jitter));
            }
            (Done::Forwarded, Step::Forwarding) => self.step = Step::Over,
            _ => {}
        }
    }
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
