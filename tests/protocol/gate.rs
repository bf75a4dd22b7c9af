//! The origin's gate in the model: the product's own gate rules (`webhook_dedup::origin_gate`)
//! between the object's queued attempts and the origin, with what only the model knows beside
//! them: the requests the gate has open, the operator's pauses, the origin's `Retry-After`, other
//! events' attempts through the same gate, and a crash of the gate's instance (its memory is
//! lost; what it stored stays).

use webhook_dedup::claim::Millis;
use webhook_dedup::claim_authority::attempt::Event;
use webhook_dedup::origin::{retry_after_at, NetworkError, OriginOutcome};
use webhook_dedup::origin_gate::{
    Admission, Changed, Gate, GateLimits, Health, HoldReason, Permit,
};

use super::world::{GateFetch, World};
use super::{Protocol, Reached, Violation};

/// Another event's key at the same origin.
const OTHER: &str = "evt_other";

impl World {
    /// The gate's limits under the deployed configuration.
    fn gate_limits(&self, model: &Protocol) -> GateLimits {
        GateLimits::of(model.config(self))
    }

    /// Asks the gate to let an attempt of `key` through now: its permit, or the event a held
    /// attempt hears (nothing is sent).
    pub fn gate_admit(&mut self, model: &Protocol, key: &str) -> Result<Permit, Event> {
        let limits = self.gate_limits(model);
        let (admission, changed) = self.gate.admit(key, self.now, &limits);
        self.gate_changed(changed);
        match admission {
            Admission::Go(permit) => {
                let paused_by_origin = self.ghost.throttled_until.is_some_and(|t| t > self.now);
                if self.ghost.operator_paused || paused_by_origin {
                    self.violate(Violation::StartedWhilePaused);
                }
                Ok(permit)
            }
            Admission::Hold { until, why } => {
                self.reach(Reached::Held);
                if why == HoldReason::InFlightCap {
                    self.reach(Reached::CapHeld);
                }
                Err(Event::Held { until, why })
            }
        }
    }

    /// The gate sent an attempt on under `permit`: `run` is the model event's handler run
    /// (none for another event's).
    pub fn gate_sent(&mut self, model: &Protocol, permit: Permit, run: Option<usize>) {
        let config = model.config(self);
        let ends_at = self.now + config.queue.forward_timeout_ms;
        self.fetches.push(GateFetch {
            permit,
            run,
            ends_at,
        });
    }

    /// Saves what the gate's change asks to, and notes what it reached.
    fn gate_changed(&mut self, changed: Changed) {
        if changed.save {
            self.gate_stored = self.gate.state().clone();
        }
        if changed.recovered_from.is_some() {
            self.reach(Reached::BreakerClosed);
        }
    }

    /// The gate's request `index` ended, its answer saying `health`.
    fn fetch_ends(&mut self, model: &Protocol, index: usize, health: Health) {
        let limits = self.gate_limits(model);
        let fetch = self.fetches.remove(index);
        let changed = self.gate.finish(fetch.permit, health, self.now, &limits);
        self.gate_changed(changed);
    }

    /// Handler run `run` answered `status` with `headers`: the gate hears it first.
    pub fn run_answers_gate(
        &mut self,
        model: &Protocol,
        run: usize,
        status: u16,
        headers: &[(String, String)],
    ) {
        let Some(index) = self.fetches.iter().position(|f| f.run == Some(run)) else {
            return;
        };
        let max_delay_ms = model.config(self).queue.retry.max_delay_ms;
        let retry_after = retry_after_at(status, headers, self.now);
        if let Some(seconds) = model
            .fail_retry_after_seconds
            .filter(|_| retry_after.is_some())
        {
            let until = (self.now + seconds * 1_000).min(self.now + max_delay_ms);
            let known = self.ghost.throttled_until.unwrap_or(0);
            self.ghost.throttled_until = Some(until.max(known));
        }
        let outcome = OriginOutcome::Answered { status };
        let health = Health::of(&outcome, retry_after, self.now, max_delay_ms);
        self.fetch_ends(model, index, health);
    }

    /// Every request whose time-out came ends at the gate as a failure.
    pub fn fetches_time_out(&mut self, model: &Protocol) {
        while let Some(index) = self.fetches.iter().position(|f| f.ends_at <= self.now) {
            self.fetch_ends(model, index, Health::Down);
        }
    }

    /// Another event's attempt asks the gate.
    pub fn other_starts(&mut self, model: &Protocol) {
        if let Ok(permit) = self.gate_admit(model, OTHER) {
            self.reach(Reached::OtherThrough);
            self.gate_sent(model, permit, None);
        }
    }

    /// Another event's request `index` is answered: a success, or a 500.
    pub fn other_answers(&mut self, model: &Protocol, index: usize, ok: bool) {
        let health = if ok { Health::Up } else { Health::Down };
        self.fetch_ends(model, index, health);
    }

    /// An operator pauses the origin (or resumes it).
    pub fn operator_pauses(&mut self, pause: bool) {
        let changed = if pause {
            self.gate.pause()
        } else {
            self.gate.resume(self.now)
        };
        self.ghost.operator_paused = pause;
        if !pause {
            // A resume ends the origin's own pause too.
            self.ghost.throttled_until = None;
        }
        self.gate_changed(changed);
    }

    /// The gate's instance dies: what it held in memory is gone, and every request it had open
    /// is cut off: the object waiting for one hears a lost connection (its handler may go on).
    pub fn gate_crashes(&mut self, model: &Protocol) {
        self.gate = Gate::new(self.gate_stored.clone());
        for fetch in std::mem::take(&mut self.fetches) {
            let Some(run) = fetch.run else {
                continue;
            };
            let Some(index) = self
                .forwards
                .iter()
                .position(|forward| forward.run == run && forward.listens)
            else {
                continue;
            };
            self.runs[run].lost = true;
            self.forwards[index].listens = false;
            self.outcome_lost(run);
            let error = NetworkError::ConnectionLost;
            let event = Event::NoHead(OriginOutcome::Failed { error });
            if self.forwards[index].task.waits() {
                self.feed(model, index, event);
            } else {
                self.forwards[index].buffered = Some(event);
            }
        }
    }

    /// When the gate's next request times out, if any is open.
    pub fn next_fetch_end(&self) -> Option<Millis> {
        self.fetches.iter().map(|fetch| fetch.ends_at).min()
    }
}
