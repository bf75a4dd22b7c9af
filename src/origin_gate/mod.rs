//! The origin gate: the rules of the one Durable Object per origin that every queued attempt to
//! that origin passes through. It protects the origin as a whole, where each event's own object
//! can only protect its event:
//!
//! - **Pause.** An operator's pause, or the time a `429` or `503` asked for in `Retry-After`:
//!   no attempt starts before it ends.
//! - **Caps.** At most `ORIGIN_MAX_RPS` attempts are counted at once, each from its send until
//!   a second after its answer (see [`RATE_WINDOW_MS`]), and at most
//!   `ORIGIN_MAX_IN_FLIGHT` are at the origin at once. Each start holds a permit until its
//!   answer comes or its lease would end, whichever is first: a permit of an attempt that
//!   crashed is never lost for longer than its lease.
//! - **Breaker.** After `ORIGIN_BREAKER_FAILURES` failures in a row (5xx, time-outs, network
//!   errors) attempts are held, and one probe goes out every `ORIGIN_PROBE_SECONDS`: a real
//!   attempt, or a request to `ORIGIN_HEALTH_URL` from the gate's alarm. Its first answer
//!   below 500 closes the breaker.
//! - **Drain.** When the origin comes back, the gate ramps up: one attempt at once and one a
//!   second in the first second, then 2, 4, 8 (doubling each second) until the caps, or 1,024,
//!   are reached. Held attempts are given times one after another in the order they were held,
//!   so the backlog comes back oldest first at the capped rate instead of all at once.
//!
//! An attempt the gate holds back is told when to come back ([`Admission::Hold`]); its event's
//! object puts it back in the queue for then without counting an attempt (see
//! [`crate::claim::attempt_held`]). The gate never drops anything: what it holds stays stored
//! in its event's object.
//!
//! What the gate keeps in memory (permits, starts, the drain cursor, the held count) is lost
//! when its object is evicted; its pause and breaker are stored ([`GateState`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::claim::Millis;
use crate::failure_index::IndexRequest;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::origin::OriginOutcome;

pub mod known;
#[cfg(test)]
mod tests;

/// The ramp after a recovery ends once it allows this many attempts a second (and at once).
pub const RAMP_END: u32 = 1_024;
/// How long after its answer a start still counts against `ORIGIN_MAX_RPS`. A start counts
/// from its send until a second after its answer (or after its permit ends): the request
/// reached the origin at some moment between the two, so the origin never sees more than the
/// cap arrive in any second, however long the way there took. (A start counted for a second
/// from its send alone let 21 of a cap of 20 arrive within one second under load, when the
/// way to the origin took over 300 ms.)
pub const RATE_WINDOW_MS: Millis = 1_000;
/// With no rate cap, held attempts are given times this many a second.
pub const UNCAPPED_SLOTS_PER_SECOND: u32 = 100;
/// At most this many held events are counted (the count is for people; nothing else uses it).
pub const HELD_COUNTED: usize = 100_000;

/// The gate's limits, from the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateLimits {
    /// Most attempts started in any one second (`ORIGIN_MAX_RPS`); 0 for no cap.
    pub max_rps: u32,
    /// Most attempts at the origin at once (`ORIGIN_MAX_IN_FLIGHT`); 0 for no cap.
    pub max_in_flight: u32,
    /// Failures in a row that open the breaker (`ORIGIN_BREAKER_FAILURES`); 0 for no breaker.
    pub breaker_failures: u32,
    /// Time between probes while the breaker is open (`ORIGIN_PROBE_SECONDS`).
    pub probe_ms: Millis,
    /// True when the gate probes `ORIGIN_HEALTH_URL` itself instead of letting an attempt
    /// through as the probe.
    pub health_probe: bool,
    /// Longest a permit is held: a queued attempt's lease.
    pub permit_ms: Millis,
}

impl GateLimits {
    /// The limits `config` sets. A permit lasts a queued attempt's lease, and never less than
    /// the gate's own wait for the origin's answer (`QUEUE_FORWARD_TIMEOUT_MS`): no request the
    /// gate has open is ever without its permit.
    pub fn of(config: &crate::config::Config) -> GateLimits {
        let lease_ms = config.queue.attempt_policy(config.webhook.claims).lease_ms;
        let gate = &config.gate;
        GateLimits {
            max_rps: gate.max_rps,
            max_in_flight: gate.max_in_flight,
            breaker_failures: gate.breaker_failures,
            probe_ms: gate.probe_ms,
            health_probe: gate.health_url.is_some(),
            permit_ms: lease_ms.max(config.queue.forward_timeout_ms),
        }
    }
}

/// Why an operator or the origin paused deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseCause {
    /// `POST /admin/origins/pause`.
    Operator,
    /// A `429` or `503` with `Retry-After`.
    RetryAfter,
}

/// A pause: no attempt starts before `until` (or, with none, before a resume).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pause {
    /// Who asked.
    pub cause: PauseCause,
    /// When it ends by itself; `None`: at a resume.
    pub until: Option<Millis>,
}

/// The breaker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Breaker {
    /// Attempts go through.
    #[default]
    Closed,
    /// Attempts are held; the next probe goes out at `next_probe`.
    Open {
        /// When it opened.
        since: Millis,
        /// When the next probe may go out.
        next_probe: Millis,
    },
    /// One probe is out; it counts as lost at `probe_ends`.
    HalfOpen {
        /// When the breaker opened.
        since: Millis,
        /// When the probe's permit ends.
        probe_ends: Millis,
    },
}

/// What the gate stores: its pause and breaker survive the object's eviction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GateState {
    /// The pause in force, if any.
    pub paused: Option<Pause>,
    /// The breaker.
    pub breaker: Breaker,
    /// Failures in a row since the last answer below 500.
    pub failures_in_a_row: u32,
    /// When the origin last came back (a pause ended, a resume, the breaker closed): the drain
    /// ramps up from here.
    pub ramp_from: Option<Millis>,
    /// The origin's name, once the gate has seen it (its alarm needs it for notifications).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The gate's answer to an attempt that asks to start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Admission {
    /// Go: forward now, under this permit.
    Go(Permit),
    /// Not now: come back at `until`.
    Hold {
        /// When to come back.
        until: Millis,
        /// Why.
        why: HoldReason,
    },
}

/// Why an attempt was held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldReason {
    /// The origin is paused (by an operator, or by its `Retry-After`).
    Paused,
    /// The breaker is open, or its probe is out.
    BreakerOpen,
    /// `ORIGIN_MAX_RPS` attempts started in the last second.
    RateCap,
    /// `ORIGIN_MAX_IN_FLIGHT` attempts are at the origin.
    InFlightCap,
    /// The drain after a recovery has not ramped up this far yet.
    Ramp,
}

impl HoldReason {
    /// Its name in log lines and answers.
    pub fn name(self) -> &'static str {
        match self {
            HoldReason::Paused => "paused",
            HoldReason::BreakerOpen => "breaker_open",
            HoldReason::RateCap => "rate_cap",
            HoldReason::InFlightCap => "in_flight_cap",
            HoldReason::Ramp => "ramp",
        }
    }

    /// The reason named `name`, if any.
    pub fn named(name: &str) -> Option<HoldReason> {
        [
            HoldReason::Paused,
            HoldReason::BreakerOpen,
            HoldReason::RateCap,
            HoldReason::InFlightCap,
            HoldReason::Ramp,
        ]
        .into_iter()
        .find(|reason| reason.name() == name)
    }
}

/// A permit: one attempt at the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Permit {
    /// Its number, unique in the gate's instance.
    pub id: u64,
    /// True when it is the breaker's probe.
    pub probe: bool,
}

/// What an attempt's answer says of the origin's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Health {
    /// It answered below 500: it is up (a refusal too; `429` without `Retry-After` too).
    Up,
    /// It answered `429` or `503` with `Retry-After`: up, and paused until then.
    Throttled {
        /// When it asked to be called again (already capped).
        until: Millis,
    },
    /// A 5xx, a time-out or a network error.
    Down,
}

impl Health {
    /// What `outcome` says of the origin, with the time its `Retry-After` names (see
    /// [`crate::origin::retry_after_at`]), capped at `max_delay_ms` from `now`.
    pub fn of(
        outcome: &OriginOutcome,
        retry_after: Option<Millis>,
        now: Millis,
        max_delay_ms: Millis,
    ) -> Health {
        match (outcome, retry_after) {
            (OriginOutcome::Answered { .. }, Some(at)) => Health::Throttled {
                until: at.min(now.saturating_add(max_delay_ms)),
            },
            (OriginOutcome::Answered { status }, None) if *status < 500 => Health::Up,
            _ => Health::Down,
        }
    }
}

/// What a change to the gate asks of its object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changed {
    /// The stored state changed: save it.
    pub save: bool,
    /// The breaker just opened.
    pub opened: bool,
    /// The breaker just closed: the origin had been down since then (`origin.recovered`).
    pub recovered_from: Option<Millis>,
}

/// How deliveries to an origin stand: a pause comes first, then the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginState {
    /// Attempts go through, within the caps.
    Closed,
    /// The breaker is open: attempts are held until the next probe.
    Open,
    /// The breaker's probe is out: attempts are held until it answers.
    HalfOpen,
    /// Paused by an operator or by the origin's `Retry-After`: attempts are held.
    Paused,
}

/// How an origin stands, as `GET /admin/origins` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OriginView {
    /// The origin: its URL without credentials or query.
    pub origin: String,
    /// `closed`, `open`, `half_open` or `paused`.
    pub state: OriginState,
    /// Why it is paused: `operator` or `retry_after`; `null` when it is not.
    pub paused_by: Option<PauseCause>,
    /// When the pause ends by itself (RFC 3339); `null` when not paused or until a resume.
    pub paused_until: Option<String>,
    /// Attempts at the origin now.
    pub in_flight: u32,
    /// Failures in a row.
    pub failures_in_a_row: u32,
    /// Events held back whose time to come back has not passed long ago (approximate: kept in
    /// the gate's memory, lost when its object is evicted).
    pub held: u32,
    /// When the next probe may go out (RFC 3339), while the breaker is open.
    pub next_probe_at: Option<String>,
}

/// The gate: its stored state, and what it keeps in memory. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gate {
    state: GateState,
    /// Permits out: `(id, when it ends)`.
    permits: Vec<(u64, Millis)>,
    /// The starts that still count against the rate cap: `(permit, counted until)`; a start
    /// still at the origin counts until a second after its permit ends.
    starts: Vec<(u64, Millis)>,
    /// The next free time for a held attempt.
    cursor: Millis,
    /// Held events and when they were told to come back.
    held: BTreeMap<String, Millis>,
    next_permit: u64,
}

impl Gate {
    /// The gate with `state`, as stored, and nothing in memory yet.
    pub fn new(state: GateState) -> Gate {
        Gate {
            state,
            ..Gate::default()
        }
    }

    /// Its stored state.
    pub fn state(&self) -> &GateState {
        &self.state
    }

    /// Remembers the origin's name (stored with the state at the next save).
    pub fn name(&mut self, origin: &str) {
        if self.state.origin.as_deref() != Some(origin) {
            self.state.origin = Some(origin.to_owned());
        }
    }

    /// The origin's name, once known.
    pub fn origin(&self) -> Option<&str> {
        self.state.origin.as_deref()
    }

    /// Attempts at the origin now (permits not yet ended at `now`).
    pub fn in_flight(&self, now: Millis) -> u32 {
        self.permits.iter().filter(|(_, ends)| *ends > now).count() as u32
    }

    /// Asks to start event `key`'s attempt at `now`.
    pub fn admit(&mut self, key: &str, now: Millis, limits: &GateLimits) -> (Admission, Changed) {
        let mut changed = self.lapse(now);
        self.permits.retain(|(_, ends)| *ends > now);
        self.starts.retain(|(_, until)| *until > now);
        if let Some(pause) = self.state.paused {
            let base = pause
                .until
                .unwrap_or_else(|| now.saturating_add(limits.probe_ms));
            return (
                self.hold(key, base, HoldReason::Paused, now, limits),
                changed,
            );
        }
        let mut probe = false;
        match self.state.breaker {
            Breaker::Open { since, next_probe } if now >= next_probe && !limits.health_probe => {
                let probe_ends = now.saturating_add(limits.permit_ms);
                self.state.breaker = Breaker::HalfOpen { since, probe_ends };
                changed.save = true;
                probe = true;
            }
            Breaker::Open { next_probe, .. } => {
                let base = next_probe.max(now.saturating_add(1));
                return (
                    self.hold(key, base, HoldReason::BreakerOpen, now, limits),
                    changed,
                );
            }
            Breaker::HalfOpen { probe_ends, .. } => {
                let base = probe_ends.min(now.saturating_add(limits.probe_ms));
                return (
                    self.hold(key, base, HoldReason::BreakerOpen, now, limits),
                    changed,
                );
            }
            Breaker::Closed => {}
        }
        if !probe {
            if let Some((base, why)) = self.over_a_cap(now, limits) {
                return (self.hold(key, base, why, now, limits), changed);
            }
        }
        self.next_permit += 1;
        let permit = Permit {
            id: self.next_permit,
            probe,
        };
        let ends = now.saturating_add(limits.permit_ms);
        self.permits.push((permit.id, ends));
        self.starts
            .push((permit.id, ends.saturating_add(RATE_WINDOW_MS)));
        self.held.remove(key);
        (Admission::Go(permit), changed)
    }

    /// The cap a start at `now` would break, with when to come back; `None` when none would.
    fn over_a_cap(&self, now: Millis, limits: &GateLimits) -> Option<(Millis, HoldReason)> {
        let ramp = self.ramp(now);
        let in_flight = limit(limits.max_in_flight, ramp);
        if let Some((most, why)) = in_flight {
            if self.permits.len() as u32 >= most {
                let base = now.saturating_add(spacing_ms(limits));
                return Some((base, why.unwrap_or(HoldReason::InFlightCap)));
            }
        }
        let rate = limit(limits.max_rps, ramp);
        if let Some((most, why)) = rate {
            if self.starts.len() as u32 >= most {
                let freed = self.starts.iter().map(|(_, until)| *until).min();
                let freed = freed.unwrap_or(now).min(now.saturating_add(RATE_WINDOW_MS));
                return Some((freed.max(now + 1), why.unwrap_or(HoldReason::RateCap)));
            }
        }
        None
    }

    /// The ramp's limit at `now` (attempts a second, and at once), while one runs.
    fn ramp(&self, now: Millis) -> Option<u32> {
        let from = self.state.ramp_from?;
        let seconds = now.saturating_sub(from) / 1_000;
        let allowed = 1u32 << seconds.min(11);
        (allowed < RAMP_END).then_some(allowed)
    }

    /// Tells event `key` to come back no earlier than `base`: at the next free time from it,
    /// times handed out one after another, `1 / rate` apart.
    fn hold(
        &mut self,
        key: &str,
        base: Millis,
        why: HoldReason,
        now: Millis,
        limits: &GateLimits,
    ) -> Admission {
        let until = base.max(self.cursor).max(now.saturating_add(1));
        self.cursor = until.saturating_add(spacing_ms(limits));
        if self.held.len() < HELD_COUNTED || self.held.contains_key(key) {
            self.held.insert(key.to_owned(), until);
        }
        Admission::Hold { until, why }
    }

    /// Ends a pause whose time came, and the ramp once it reached its end.
    fn lapse(&mut self, now: Millis) -> Changed {
        let mut changed = Changed::default();
        if let Some(Pause {
            until: Some(until), ..
        }) = self.state.paused
        {
            if until <= now {
                self.state.paused = None;
                self.state.ramp_from = Some(until);
                changed.save = true;
            }
        }
        if let Breaker::HalfOpen { since, probe_ends } = self.state.breaker {
            if probe_ends <= now {
                // The probe never answered: the next may go.
                self.state.breaker = Breaker::Open {
                    since,
                    next_probe: now,
                };
                changed.save = true;
            }
        }
        if self.state.ramp_from.is_some() && self.ramp(now).is_none() {
            self.state.ramp_from = None;
            changed.save = true;
        }
        changed
    }

    /// The attempt under `permit` ended at `now`, its answer saying `health`.
    pub fn finish(
        &mut self,
        permit: Permit,
        health: Health,
        now: Millis,
        limits: &GateLimits,
    ) -> Changed {
        self.permits.retain(|(id, _)| *id != permit.id);
        for (id, until) in &mut self.starts {
            if *id == permit.id {
                *until = (*until).min(now.saturating_add(RATE_WINDOW_MS));
            }
        }
        self.observe(health, now, limits)
    }

    /// What an answer (an attempt's, or the health probe's) said of the origin at `now`.
    fn observe(&mut self, health: Health, now: Millis, limits: &GateLimits) -> Changed {
        let mut changed = Changed::default();
        match health {
            Health::Down => {
                self.state.failures_in_a_row = self.state.failures_in_a_row.saturating_add(1);
                changed.save = true;
                match self.state.breaker {
                    Breaker::HalfOpen { since, .. } => {
                        let next_probe = now.saturating_add(limits.probe_ms);
                        self.state.breaker = Breaker::Open { since, next_probe };
                    }
                    Breaker::Closed
                        if limits.breaker_failures > 0
                            && self.state.failures_in_a_row >= limits.breaker_failures =>
                    {
                        let next_probe = now.saturating_add(limits.probe_ms);
                        self.state.breaker = Breaker::Open {
                            since: now,
                            next_probe,
                        };
                        self.state.ramp_from = None;
                        changed.opened = true;
                    }
                    _ => {}
                }
            }
            Health::Up | Health::Throttled { .. } => {
                if self.state.failures_in_a_row > 0 {
                    self.state.failures_in_a_row = 0;
                    changed.save = true;
                }
                if let Breaker::Open { since, .. } | Breaker::HalfOpen { since, .. } =
                    self.state.breaker
                {
                    self.state.breaker = Breaker::Closed;
                    self.state.ramp_from = Some(now);
                    changed.save = true;
                    changed.recovered_from = Some(since);
                }
                if let Health::Throttled { until } = health {
                    changed.save |= self.throttle(until);
                }
            }
        }
        changed
    }

    /// The origin asked to be left alone until `until`: paused until then, unless an operator
    /// paused it (that pause stands) or a pause already runs longer. True when it changed.
    fn throttle(&mut self, until: Millis) -> bool {
        match self.state.paused {
            Some(Pause {
                cause: PauseCause::Operator,
                ..
            }) => false,
            Some(Pause {
                until: Some(current),
                ..
            }) if current >= until => false,
            _ => {
                self.state.paused = Some(Pause {
                    cause: PauseCause::RetryAfter,
                    until: Some(until),
                });
                true
            }
        }
    }

    /// An operator paused the origin at `now`, until a resume.
    pub fn pause(&mut self) -> Changed {
        self.state.paused = Some(Pause {
            cause: PauseCause::Operator,
            until: None,
        });
        Changed {
            save: true,
            ..Changed::default()
        }
    }

    /// An operator resumed the origin at `now`: any pause ends, and the drain ramps up.
    pub fn resume(&mut self, now: Millis) -> Changed {
        let was_paused = self.state.paused.take().is_some();
        if was_paused {
            self.state.ramp_from = Some(now);
        }
        Changed {
            save: was_paused,
            ..Changed::default()
        }
    }

    /// When the gate's own health probe is due (with `ORIGIN_HEALTH_URL`, while the breaker is
    /// open).
    pub fn health_probe_at(&self, limits: &GateLimits) -> Option<Millis> {
        match self.state.breaker {
            Breaker::Open { next_probe, .. } if limits.health_probe => Some(next_probe),
            _ => None,
        }
    }

    /// The health probe at `now` answered `health` (nothing is done when it is not due).
    pub fn health_probed(&mut self, health: Health, now: Millis, limits: &GateLimits) -> Changed {
        match self.state.breaker {
            Breaker::Open { since, next_probe } if next_probe <= now => {
                if health == Health::Down {
                    let next_probe = now.saturating_add(limits.probe_ms);
                    self.state.breaker = Breaker::Open { since, next_probe };
                }
                self.observe(health, now, limits)
            }
            _ => Changed::default(),
        }
    }

    /// The origin `origin` as it stands at `now`.
    pub fn view(&mut self, origin: &str, now: Millis) -> OriginView {
        self.held
            .retain(|_, until| until.saturating_add(60_000) > now);
        let paused = self
            .state
            .paused
            .filter(|pause| pause.until.is_none_or(|at| at > now));
        let state = match (paused, self.state.breaker) {
            (Some(_), _) => OriginState::Paused,
            (None, Breaker::Closed) => OriginState::Closed,
            (None, Breaker::Open { .. }) => OriginState::Open,
            (None, Breaker::HalfOpen { .. }) => OriginState::HalfOpen,
        };
        let next_probe = match self.state.breaker {
            Breaker::Open { next_probe, .. } => crate::rfc3339::format(next_probe),
            _ => None,
        };
        OriginView {
            origin: origin.to_owned(),
            state,
            paused_by: paused.map(|pause| pause.cause),
            paused_until: paused
                .and_then(|pause| pause.until)
                .and_then(crate::rfc3339::format),
            in_flight: self.in_flight(now),
            failures_in_a_row: self.state.failures_in_a_row,
            held: self.held.len() as u32,
            next_probe_at: next_probe,
        }
    }
}

/// What the gate's object does after `changed` for `origin` at `now`: the line to write, if
/// any, and, when notifications are on (`alerts_on`), what to tell the failure index.
pub fn after_change(
    changed: Changed,
    origin: &str,
    limits: &GateLimits,
    alerts_on: bool,
    now: Millis,
) -> (Option<LogLine>, Option<IndexRequest>) {
    let key = Some(origin.to_owned());
    if changed.opened {
        let line = LogLine {
            level: Level::Error,
            outcome: Outcome::BreakerOpened,
            key,
            detail: Some(format!(
                "{} failures in a row; attempts held, one probe every {} s",
                limits.breaker_failures,
                limits.probe_ms / 1_000
            )),
            ..LogLine::new(Route::Gate)
        };
        return (Some(line), None);
    }
    let Some(down_since) = changed.recovered_from else {
        return (None, None);
    };
    let line = LogLine {
        level: Level::Warn,
        outcome: Outcome::BreakerClosed,
        key,
        detail: Some(format!(
            "answered again after {} s; the held events drain",
            now.saturating_sub(down_since) / 1_000
        )),
        ..LogLine::new(Route::Gate)
    };
    let tell = alerts_on.then(|| IndexRequest::OriginRecovered {
        origin: origin.to_owned(),
        down_since,
    });
    (Some(line), tell)
}

/// The lower of `cap` (0: none) and the ramp's limit, and whether the ramp is the lower.
fn limit(cap: u32, ramp: Option<u32>) -> Option<(u32, Option<HoldReason>)> {
    match (cap, ramp) {
        (0, None) => None,
        (0, Some(ramp)) => Some((ramp, Some(HoldReason::Ramp))),
        (cap, Some(ramp)) if ramp < cap => Some((ramp, Some(HoldReason::Ramp))),
        (cap, _) => Some((cap, None)),
    }
}

/// The time between two held attempts' times: `1 / ORIGIN_MAX_RPS`, or
/// `1 / UNCAPPED_SLOTS_PER_SECOND` with no cap.
fn spacing_ms(limits: &GateLimits) -> Millis {
    let rate = match limits.max_rps {
        0 => UNCAPPED_SLOTS_PER_SECOND,
        rps => rps,
    };
    (1_000 / Millis::from(rate)).max(1)
}

/// The origin's name for `url`: without credentials, query or fragment. The gate's object is
/// named by it, and operators name the origin by it.
pub fn origin_name(url: &url::Url) -> String {
    let mut named = url.clone();
    let _ = named.set_username("");
    let _ = named.set_password(None);
    named.set_query(None);
    named.set_fragment(None);
    named.to_string()
}

/// The request header that names the event whose attempt the gate is asked to forward; the
/// gate reads it and removes it.
pub const EVENT_HEADER: &str = "x-webhook-dedup-gate-event";
/// The header of the gate's own answers, when it sent nothing on or got no answer. The gate
/// removes it from every answer of the origin's, so an origin can never forge one.
pub const GATE_HEADER: &str = "x-webhook-dedup-gate";

/// What the gate says of an attempt it did not get an origin's answer for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GateWord {
    /// Held back: nothing was sent; come back at `until`.
    Held {
        /// When.
        until: Millis,
        /// Why.
        why: HoldReason,
    },
    /// Sent, and the runtime reported this error instead of an answer.
    Failed(crate::origin::NetworkError),
    /// Sent, and no answer came within the attempt's time-out.
    TimedOut,
    /// Not sent: the request could not be built.
    NotSent,
}

impl GateWord {
    /// The value of [`GATE_HEADER`] that says it.
    pub fn header_value(self) -> String {
        match self {
            GateWord::Held { until, why } => format!("held; until={until}; why={}", why.name()),
            GateWord::Failed(crate::origin::NetworkError::ConnectionLost) => {
                "failed; error=connection_lost".into()
            }
            GateWord::Failed(crate::origin::NetworkError::Other) => "failed; error=other".into(),
            GateWord::TimedOut => "timed_out".into(),
            GateWord::NotSent => "not_sent".into(),
        }
    }

    /// The word a [`GATE_HEADER`] value says; `None` for anything else.
    pub fn read(value: &str) -> Option<GateWord> {
        let mut parts = value.split(';').map(str::trim);
        let word = parts.next()?;
        let mut fields = parts.filter_map(|part| part.split_once('='));
        let mut field = |name: &str| fields.find(|(key, _)| *key == name).map(|(_, v)| v);
        match word {
            "held" => {
                let until = field("until")?.parse().ok()?;
                let why = HoldReason::named(field("why")?)?;
                Some(GateWord::Held { until, why })
            }
            "failed" => Some(GateWord::Failed(match field("error")? {
                "connection_lost" => crate::origin::NetworkError::ConnectionLost,
                _ => crate::origin::NetworkError::Other,
            })),
            "timed_out" => Some(GateWord::TimedOut),
            "not_sent" => Some(GateWord::NotSent),
            _ => None,
        }
    }
}

/// A request to the gate other than an attempt's forward.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateRequest {
    /// How the origin stands.
    View {
        /// Its name.
        origin: String,
    },
    /// Pause it until a resume.
    Pause {
        /// Its name.
        origin: String,
    },
    /// End any pause.
    Resume {
        /// Its name.
        origin: String,
    },
}

impl GateRequest {
    /// The origin it is about: its gate's name.
    pub fn origin(&self) -> &str {
        match self {
            GateRequest::View { origin }
            | GateRequest::Pause { origin }
            | GateRequest::Resume { origin } => origin,
        }
    }
}

/// Serves `request` at `now` on `gate`: how the origin stands after it, and what changed.
pub fn serve(gate: &mut Gate, request: &GateRequest, now: Millis) -> (OriginView, Changed) {
    let (origin, changed) = match request {
        GateRequest::View { origin } => (origin, Changed::default()),
        GateRequest::Pause { origin } => (origin, gate.pause()),
        GateRequest::Resume { origin } => (origin, gate.resume(now)),
    };
    (gate.view(origin, now), changed)
}
