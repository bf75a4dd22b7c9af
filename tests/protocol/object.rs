//! The claim authority object as the model runs it: the same sequence as `Keeper` in
//! `src/keeper/` (a rule over the store, then the alarm its write needs; a delivery's claim,
//! then its attempt driver; the alarm's sweep, due attempts and re-arm), calling the product's
//! own rules for every decision.

use webhook_dedup::admin::{self, dead_letters, Action as AdminAction, Family};
use webhook_dedup::authority::alarm::{self, AlarmStep, KnownAlarm, Rearm};
use webhook_dedup::authority::attempt::{Command, Event, SettleOp};
use webhook_dedup::authority::{
    self, queue, Attempt, AuthorityReply, AuthorityRequest, Begin, Deliver,
    Forward as ForwardTerms, Head, WakeBy, Won,
};
use webhook_dedup::claim::{self, ClaimRecord, ClaimState, ClaimStore, Nonce};
use webhook_dedup::config::{Config, DeliveryMode};
use webhook_dedup::failures::{self, EntryState, IndexReply, IndexRequest};
use webhook_dedup::idempotency::{self, ApiAnswer};
use webhook_dedup::providers::Provider;
use webhook_dedup::webhook;

use super::world::{Door, Forward, Heard, Run, RunEnd, Sender, World};
use super::{Protocol, Reached, Violation};

/// The webhook door's event id (a Stripe event, so its key is the id itself).
pub const EVENT_ID: &str = "evt_model";

impl Protocol {
    /// The deployed configuration.
    pub fn config(&self, world: &World) -> &Config {
        &self.configs[world.deploy]
    }

    /// The key every delivery of this scenario is about.
    pub fn key(&self) -> String {
        match self.doors[0] {
            Door::Webhook => EVENT_ID.to_owned(),
            Door::Api(_) => idempotency::scope(Some("client"), "key"),
        }
    }
}

impl World {
    fn record(&self, key: &str) -> Option<ClaimRecord> {
        self.store.peek(key).cloned()
    }

    /// Runs `change` over the world and notes what it did to the record: a record made where
    /// there was none, a record deleted, a done record changed back.
    fn observe<T>(&mut self, key: &str, change: impl FnOnce(&mut World) -> T) -> T {
        let before = self.record(key);
        if before
            .as_ref()
            .is_some_and(|record| record.is_expired(self.now))
        {
            // Past its retention the record counts as absent: the dedup window is over, and
            // with it what the record knew (an earlier run's unknown outcome included).
            self.ghost.expired = true;
            self.ghost.unknown_pending = false;
            self.reach(Reached::Expired);
        }
        let result = change(self);
        let after = self.record(key);
        match (&before, &after) {
            (None, Some(_)) => {
                self.ghost.record += 1;
                self.ghost.generation += 1;
            }
            (Some(before), Some(after))
                if before.state() == ClaimState::Done
                    && after.state() != ClaimState::Done
                    && !before.is_expired(self.now) =>
            {
                self.violate(Violation::DoneChanged)
            }
            (Some(before), Some(after)) if before.queue().is_none() && after.queue().is_some() => {
                // A claim made while its sender waited, replaced by a stored event.
                self.ghost.record += 1;
                self.ghost.generation += 1;
            }
            _ => {}
        }
        result
    }

    pub fn violate(&mut self, violation: Violation) {
        self.ghost.violations |= violation as u32;
    }

    pub fn reach(&mut self, reached: Reached) {
        self.ghost.reached |= reached as u32;
    }

    /// Makes sure of the alarm a write needs, as the object's keeper does.
    fn ensure_alarm(&mut self, wake: WakeBy) -> AlarmStep {
        let Some(wake) = wake else {
            return AlarmStep::Kept;
        };
        let Some(at) = self.known.to_serve(wake, self.now) else {
            return AlarmStep::Kept;
        };
        let set = self.set_alarm(at);
        AlarmStep::of(wake, Some(set))
    }

    /// `setAlarm(at)`: fails once when the model said so.
    fn set_alarm(&mut self, at: claim::Millis) -> bool {
        let set = !std::mem::take(&mut self.alarm_fails);
        if set {
            self.alarm = Some(at);
        }
        self.known = KnownAlarm::after_set(at, set);
        set
    }

    /// One request (not a delivery) to the object: the rule, then the alarm its write needs.
    pub fn request(&mut self, key: &str, request: &AuthorityRequest) -> AuthorityReply {
        self.ghost.alarm_excused = false;
        let now = self.now;
        let salt = self.fresh_nonce();
        let (reply, step) = self.observe(key, |world| {
            let (reply, wake) = authority::handle(&mut world.store, request, b"body", now, salt);
            (reply, world.ensure_alarm(wake))
        });
        let reply = alarm::reply_after(reply, step);
        // Its sender is told to retry: its retry (or the next request) sets the alarm.
        self.ghost.alarm_excused = matches!(
            reply,
            AuthorityReply::StoreFailed {
                retryable: true,
                ..
            }
        );
        reply
    }

    /// A delivery through `door` with `nonce`, from sender `sender`: the request its door's own
    /// rules make (queue mode stores the event; sync mode and the API door deliver it).
    pub fn deliver(&mut self, model: &Protocol, door: Door, sender: usize) {
        let config = model.config(self).clone();
        let key = model.key();
        let nonce = Nonce([self.senders[sender].nonce; 16]);
        let deliver = match door_request(&config, key.clone(), nonce, door) {
            AuthorityRequest::Deliver(deliver) => deliver,
            stored => {
                // A sync claim whose outcome is unknown (still processing, its lease over).
                let was_claim = self
                    .store
                    .peek(&key)
                    .is_some_and(|r| r.queue().is_none() && r.state() == ClaimState::Processing);
                let reply = self.request(&key, &stored);
                let now_queued = self.store.peek(&key).is_some_and(|r| r.queue().is_some());
                if was_claim && now_queued {
                    self.reach(Reached::StoredOverClaim);
                }
                let answer = webhook::after_delivery(&reply, EVENT_ID, self.now);
                self.hear(sender, (200..300).contains(&answer.status));
                return;
            }
        };
        self.ghost.alarm_excused = false;
        let now = self.now;
        let salt = self.fresh_nonce();
        let (begin, step) = self.observe(&key, |world| {
            let (begin, wake) = authority::begin(&mut world.store, &deliver, now, salt);
            (begin, world.ensure_alarm(wake))
        });
        let _ = step;
        match begin {
            Begin::Reply(reply) => self.answer_sender(sender, &reply),
            Begin::Forward(won) => {
                let attempt = Attempt::sync(&deliver, won.clone(), now);
                let horizon = attempt.wait_ends_at();
                let run = self.start_run(&won, horizon);
                self.forwards.push(Forward {
                    attempt,
                    run,
                    listens: true,
                    sender: Some(sender),
                    fingerprint: match door {
                        Door::Api(fp) => Some(fp),
                        Door::Webhook => None,
                    },
                    from_alarm: false,
                    generation: self.ghost.generation,
                    settled: false,
                });
            }
        }
    }

    /// A claim (or attempt) `won` starts a handler run: judged against every earlier run.
    fn start_run(&mut self, won: &Won, horizon: claim::Millis) -> usize {
        self.ghost.generation += 1;
        let now = self.now;
        let operator_since = |run: &Run| {
            self.ghost
                .operator_at
                .is_some_and(|at| at >= run.started_at)
        };
        let expired_since = self.ghost.expired;
        let mut violations = Vec::new();
        for run in &self.runs {
            if operator_since(run) {
                continue;
            }
            if run.end == RunEnd::Running && now < run.horizon {
                violations.push(Violation::Overlap);
            }
            if run.end == RunEnd::Succeeded && !(run.cut || run.lost || run.late || expired_since) {
                violations.push(Violation::Rerun);
            }
        }
        for violation in violations {
            self.violate(violation);
        }
        if self.ghost.unknown_pending && !won.takeover {
            self.violate(Violation::TakeoverUnmarked);
        }
        if won.takeover {
            self.reach(Reached::Takeover);
        }
        self.ghost.unknown_pending = false;
        self.runs.push(Run {
            started_at: now,
            horizon,
            end: RunEnd::Running,
            lost: false,
            cut: false,
            late: false,
        });
        self.runs.len() - 1
    }

    /// What a sender is told by the reply to its delivery.
    fn answer_sender(&mut self, sender: usize, reply: &AuthorityReply) {
        match self.senders[sender].door {
            Door::Webhook => {
                let answer = webhook::after_delivery(reply, EVENT_ID, self.now);
                self.hear(sender, (200..300).contains(&answer.status));
            }
            Door::Api(fingerprint) => {
                let answer = idempotency::after_delivery(reply, self.now);
                if let ApiAnswer::Replay(_) = answer {
                    self.reach(Reached::Replayed);
                    if self.ghost.cached_fingerprint != Some(fingerprint) {
                        self.violate(Violation::ReplayToAnother);
                    }
                }
                self.senders[sender].heard = Heard::Refused;
            }
        }
    }

    fn hear(&mut self, sender: usize, acked: bool) {
        self.senders[sender].heard = if acked { Heard::Acked } else { Heard::Refused };
        if acked && self.senders[sender].door == Door::Webhook {
            self.ghost.acked = true;
        }
    }

    /// Hands `event` to forward `index`'s driver and carries out its commands.
    pub fn feed(&mut self, model: &Protocol, index: usize, event: Event) {
        let now = self.now;
        self.forwards[index].attempt.handle(event, now);
        self.drain(model, index);
        if self.forwards[index].attempt.is_finished() {
            self.forwards.remove(index);
        }
    }

    fn drain(&mut self, model: &Protocol, index: usize) {
        let key = model.key();
        while let Some(command) = self.forwards[index].attempt.poll() {
            match command {
                Command::Reply(report) | Command::ReplyStreaming(report) => {
                    if let Some(sender) = self.forwards[index].sender {
                        let reply = AuthorityReply::Delivery(
                            webhook_dedup::authority::Delivery::Forwarded(report),
                        );
                        // A run an operator released (or forgot) under way answers for a
                        // record whose fate the operator took over: its 2xx promises nothing.
                        let started = self.runs[self.forwards[index].run].started_at;
                        let overruled = self.ghost.operator_at.is_some_and(|at| at >= started);
                        self.answer_sender(sender, &reply);
                        if overruled {
                            self.ghost.acked = false;
                        }
                    }
                }
                Command::Abort => {
                    let forward = &self.forwards[index];
                    if forward.listens && self.runs[forward.run].end == RunEnd::Running {
                        // Nothing more will be learned of this run.
                        self.outcome_lost(forward.run);
                    }
                    self.forwards[index].listens = false;
                }
                Command::Settle(op) => self.settle(&key, index, op),
                Command::DiscardBody
                | Command::Keep
                | Command::Pass
                | Command::CloseStream
                | Command::AbortStream
                | Command::Report(_) => {}
            }
        }
    }

    fn settle(&mut self, key: &str, index: usize, op: SettleOp) {
        let now = self.now;
        let generation = self.forwards[index].generation;
        let before = self.record(key);
        let result = self.observe(key, |world| {
            let attempt = world.forwards[index].attempt.clone();
            let (result, wake) = attempt.settle_with(&op, &mut world.store, now);
            world.ensure_alarm(wake);
            result
        });
        let after = self.record(key);
        if before != after && generation != self.ghost.generation {
            self.violate(Violation::StaleSettle);
        }
        if let (Some(record), SettleOp::Claim(_)) = (&after, &op) {
            if record.state() == ClaimState::Done
                && before.as_ref().map(|r| r.state()) != Some(ClaimState::Done)
                && record.response().is_some()
            {
                self.ghost.cached_fingerprint = self.forwards[index].fingerprint;
            }
        }
        if let Some(record) = &after {
            let was = before.as_ref().map(|r| r.state());
            if record.state() == ClaimState::Dead && was != Some(ClaimState::Dead) {
                self.reach(Reached::DeadLettered);
            }
        }
        if result.is_ok() {
            self.forwards[index].settled = true;
        }
        self.forwards[index]
            .attempt
            .handle(Event::Settled(result), now);
    }

    /// The handler of run `run` finishes (`ok`: it did its work); a forward listening hears it.
    pub fn answer(&mut self, model: &Protocol, run: usize, ok: bool) {
        self.runs[run].end = if ok {
            RunEnd::Succeeded
        } else {
            RunEnd::Failed
        };
        let listening = self
            .forwards
            .iter()
            .position(|forward| forward.run == run && forward.listens);
        // Nobody listens: its forward gave up waiting (a handler slower than the horizon), or
        // its answer was lost, or a crash cut it off (both noted already).
        let run_state = &mut self.runs[run];
        if listening.is_none() && !run_state.lost && !run_state.cut {
            run_state.late = true;
        }
        if let Some(index) = listening {
            self.forwards[index].listens = false;
            let status = if ok { 200 } else { model.fail_status };
            self.feed(
                model,
                index,
                Event::Head(Head {
                    status,
                    headers: vec![],
                }),
            );
        }
    }

    /// The answer of run `run` is lost on the way back (a gateway's 502): the handler may go
    /// on, and may do its work.
    pub fn lose(&mut self, model: &Protocol, run: usize) {
        let Some(index) = self
            .forwards
            .iter()
            .position(|forward| forward.run == run && forward.listens)
        else {
            return;
        };
        self.runs[run].lost = true;
        self.forwards[index].listens = false;
        self.outcome_lost(run);
        self.feed(
            model,
            index,
            Event::Head(Head {
                status: 502,
                headers: vec![],
            }),
        );
    }

    /// The alarm fires: expired records are deleted, the due attempt starts.
    pub fn alarm_fires(&mut self, model: &Protocol) {
        self.alarm = None;
        self.ghost.alarm_blocked_until = None;
        self.alarm_running = true;
        self.ghost.alarm_ran_at = Some(self.now);
        let key = model.key();
        let now = self.now;
        let swept = self.observe(&key, |world| claim::expire(&mut world.store, now));
        match swept {
            Ok(sweep) if !sweep.expired.is_empty() => {
                self.ghost.expired = true;
                self.reach(Reached::Expired);
            }
            Ok(_) => {}
            Err(_) => {
                self.alarm_running = false;
                self.alarm_retry(None);
                return;
            }
        }
        let config = model.config(self).clone();
        let nonce = self.fresh_nonce();
        let policy = config.queue.attempt_policy(config.webhook.claims);
        let started = self.observe(&key, |world| {
            let (started, wake) = queue::start(
                &mut world.store,
                &key,
                now,
                policy,
                config.queue.retry,
                nonce,
            );
            world.ensure_alarm(wake);
            started
        });
        let won = match started {
            Ok(queue::Due::Attempt(won, _)) => won,
            Ok(queue::Due::Dead(..)) => {
                self.reach(Reached::DeadLettered);
                return;
            }
            _ => return,
        };
        let stored = self.store.load_payload(&key).ok().flatten();
        let secrets: Vec<&[u8]> = vec![b"whsec_model"];
        let sendable = queue::outgoing(
            stored.as_deref(),
            Some(&secrets),
            Provider::Stripe,
            &key,
            &won,
            0,
        )
        .is_some();
        let attempt = Attempt::queued(
            Provider::Stripe,
            &key,
            won.clone(),
            now,
            policy,
            config.queue.retry,
            config.queue.forward_timeout_ms,
            0.5,
        );
        let horizon = attempt.wait_ends_at();
        let sync_now = config.queue.mode(Provider::Stripe) == DeliveryMode::Sync;
        if sync_now && policy.lease_ms > config.webhook.claims.lease_ms {
            self.reach(Reached::QueuedUnderSync);
        }
        let run = self.start_run(&won, horizon);
        self.forwards.push(Forward {
            attempt,
            run,
            listens: sendable,
            sender: None,
            fingerprint: None,
            from_alarm: true,
            generation: self.ghost.generation,
            settled: false,
        });
        if !sendable {
            self.runs[run].end = RunEnd::Failed;
            let index = self.forwards.len() - 1;
            self.feed(
                model,
                index,
                Event::NoHead(webhook_dedup::origin::OriginOutcome::NotSent),
            );
        }
    }

    /// The alarm handler ends (its forwards are over): re-armed for what is left, or the
    /// object's storage deleted; when that fails, the alarm runs again by when the work needs it.
    pub fn alarm_ends(&mut self, model: &Protocol) {
        self.send_report(model);
        self.alarm_running = false;
        let ran_at = self.ghost.alarm_ran_at.unwrap_or(self.now);
        match alarm::rearm(&mut self.store, ran_at, self.now) {
            Ok(Rearm::At(at)) => {
                if !self.set_alarm(at) {
                    self.alarm_retry(Some(at));
                }
            }
            Ok(Rearm::DeleteAll) => {
                self.store = Default::default();
                self.alarm = None;
                self.known = KnownAlarm::None;
            }
            Err(_) => self.alarm_retry(None),
        }
    }

    /// The changes the failure index has not acknowledged, sent as the alarm's last step (see
    /// `Keeper::send_due`) and settled by the index's answer (see
    /// [`failures::after_report`]).
    fn send_report(&mut self, model: &Protocol) {
        let key = model.key();
        let now = self.now;
        let retry = model.config(self).queue.retry;
        let Ok(Some((report, changes))) = failures::due_report(&mut self.store, &key, now) else {
            return;
        };
        let fails = std::mem::take(&mut self.index_fails);
        let reply = match (fails, report) {
            (true, _) => Some(IndexReply::StoreFailed {
                detail: "the index failed".into(),
            }),
            (false, Some(report)) => {
                let request = IndexRequest::Report(report);
                Some(failures::handle(&mut self.index, &request, now, None))
            }
            (false, None) => None,
        };
        let backoff = (Some(retry), 0.5);
        let settled = failures::after_report(&mut self.store, &key, &changes, reply, now, backoff);
        if fails {
            self.ghost.report_lost = true;
            return;
        }
        if settled.is_ok() && self.ghost.report_lost {
            self.reach(Reached::ReportResent);
        }
        match failures::entry(&mut self.index, &key)
            .ok()
            .flatten()
            .map(|entry| entry.state)
        {
            Some(EntryState::Dead) => self.reach(Reached::Indexed),
            Some(EntryState::Recovered) => self.reach(Reached::IndexRecovered),
            _ => {}
        }
    }

    /// Run `run`'s outcome will never be learned: the next run must be a takeover, unless an
    /// operator released or forgot the record since it started (the operator took its fate over).
    fn outcome_lost(&mut self, run: usize) {
        let started = self.runs[run].started_at;
        if self.ghost.operator_at.is_none_or(|at| at < started) {
            self.ghost.unknown_pending = true;
        }
    }

    /// After a failed re-arm: the alarm set again by when the work needs it (see `Keeper::alarm`).
    fn alarm_retry(&mut self, wanted: Option<claim::Millis>) {
        let retry = alarm::retry_after_failed_rearm(wanted, self.now);
        if wanted.is_none() {
            // The store could not be read: the work waits for the retry a minute later.
            self.ghost.alarm_blocked_until = Some(retry);
        }
        if let Some(at) = self.known.to_fire_by(retry, self.now) {
            if !self.set_alarm(at) && self.alarm.is_none() {
                // The handler throws: the runtime runs the alarm again.
                self.alarm = Some(self.now);
            }
        }
    }

    /// The object's instance dies: its forwards and what it knew of its alarm are gone; the
    /// handlers it called may go on. An alarm handler cut off runs again.
    pub fn crash(&mut self) {
        for forward in std::mem::take(&mut self.forwards) {
            if !forward.settled {
                // Its outcome was never recorded: it cannot be learned any more.
                self.runs[forward.run].cut = true;
                self.outcome_lost(forward.run);
            }
            if let Some(sender) = forward.sender {
                if self.senders[sender].heard == Heard::Waiting {
                    self.senders[sender].heard = Heard::Refused;
                }
            }
        }
        self.known = KnownAlarm::Unknown;
        if std::mem::take(&mut self.alarm_running) {
            self.alarm = Some(self.alarm.map_or(self.now, |at| at.min(self.now)));
        }
    }

    /// The operator reads the record.
    pub fn inspect(&mut self, model: &Protocol) {
        let key = model.key();
        let reply = self.request(&key, &AuthorityRequest::Inspect { key: key.clone() });
        self.ghost.read_record = self.ghost.record;
        self.read = Some(reply);
    }

    /// The operator acts on what it read: release (`force` or not), forget or redeliver.
    pub fn operate(&mut self, model: &Protocol, action: AdminAction, force: bool) {
        let Some(read) = self.read.clone() else {
            return;
        };
        let key = model.key();
        let config = model.config(self).clone();
        let family = match model.doors[0] {
            Door::Webhook => Family::Events,
            Door::Api(_) => Family::Keys,
        };
        let policy = admin::policy_for(
            family,
            config.webhook.claims,
            config.api.as_ref().map(|api| api.claims),
        );
        let next = admin::after_inspect(action, &read, self.now, force);
        let Ok(request) = next.into_request(&key, policy) else {
            return;
        };
        let record_before = self.ghost.record;
        let reply = self.request(&key, &request);
        match reply {
            AuthorityReply::Release(claim::ReleaseOutcome::Released { .. }) => {
                // The operator decides the record's fate from here: a sender told its event
                // was processed may now see it run again.
                self.ghost.operator_at = Some(self.now);
                self.ghost.acked = false;
            }
            AuthorityReply::Forget(claim::ForgetOutcome::Forgotten) => {
                // The admin API tells the index, best effort (a failed send is lost).
                let report = dead_letters::forgotten_report(&read, &reply, self.now);
                if let (Some(report), false) = (report, std::mem::take(&mut self.index_fails)) {
                    let _ = failures::apply(&mut self.index, &report, self.now, None);
                }
                self.ghost.operator_at = Some(self.now);
                self.reach(Reached::Forgotten);
                if record_before != self.ghost.read_record {
                    self.violate(Violation::ForgotAnother);
                }
                self.ghost.acked = false;
                // Forgotten: the next delivery is processed as new, by design.
                self.ghost.unknown_pending = false;
            }
            AuthorityReply::Redeliver(claim::RedeliverOutcome::Queued) => {
                self.reach(Reached::Redelivered);
            }
            _ => {}
        }
    }

    pub fn fresh_nonce(&mut self) -> Nonce {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        Nonce([nonce; 16])
    }

    /// A new sender of a delivery through `door` (`repeat`: the same request as an earlier
    /// sender's, sent again after its answer was lost).
    pub fn add_sender(&mut self, door: Door, repeat: Option<usize>) -> usize {
        let nonce = match repeat {
            Some(earlier) => self.senders[earlier].nonce,
            None => self.fresh_nonce().0[0],
        };
        self.senders.push(Sender {
            nonce,
            door,
            heard: Heard::Waiting,
        });
        self.senders.len() - 1
    }
}

/// The request a delivery through `door` makes, built by the doors' own rules (the webhook
/// door's [`webhook::request`], the API door's [`Deliver::api`]).
fn door_request(config: &Config, key: String, nonce: Nonce, door: Door) -> AuthorityRequest {
    let Door::Api(fp) = door else {
        return webhook::request(config, Provider::Stripe, key, vec![], false, nonce);
    };
    let api = config.api.as_ref().expect("the API door is on");
    let forward = ForwardTerms {
        url: "http://origin.test/".into(),
        method: "POST".into(),
        headers: vec![],
        timeout_ms: config.delivery.forward_timeout_ms,
        wait_ms: config.delivery.late_answer_wait_ms,
    };
    let fingerprint = format!("fingerprint-{fp}");
    AuthorityRequest::Deliver(Deliver::api(key, api, nonce, fingerprint, forward))
}
