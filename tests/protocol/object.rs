//! The claim authority object in the model: the product's own tasks (`webhook_dedup::claim_authority::object::
//! task`: a request served, a delivery begun, the alarm, a forward) run over the model's world.
//! Nothing here decides the order of the object's calls: each task hands out its calls, and
//! this file only carries each one out over the world (the store with its faults, the alarm,
//! the failure index, the handler runs, the senders) and notes what the invariants are judged
//! on. A request runs to its end in one step, as the object's input gate keeps other events
//! out while its storage calls run; a forward waits for the origin, and the alarm and a
//! forward wait for the failure index, as separate steps.

use webhook_dedup::admin::{self, dead_letters, Action as AdminAction, Family};
use webhook_dedup::claim::{self, ClaimRecord, ClaimState, Nonce};
use webhook_dedup::claim_authority::alarm::KnownAlarm;
use webhook_dedup::claim_authority::attempt::Event;
use webhook_dedup::claim_authority::object::task::{
    AlarmTask, BeginTask, Call, Done, Ended, ForwardIo, ForwardTask, ServeTask, Task,
};
use webhook_dedup::claim_authority::object::Outgoing;
use webhook_dedup::claim_authority::webhook::webhook_request;
use webhook_dedup::claim_authority::{
    Attempt, AuthorityReply, AuthorityRequest, Deliver, Delivery, Forward as ForwardTerms, Head,
    SettleStep, Won,
};
use webhook_dedup::config::{Config, DeliveryMode};
use webhook_dedup::failure_index::{self, EntryState, IndexReply, IndexRequest};
use webhook_dedup::idempotency::{self, ApiAnswer};
use webhook_dedup::log_line::{LogLine, Outcome};
use webhook_dedup::origin::{OriginOutcome, Reason};
use webhook_dedup::providers::Provider;
use webhook_dedup::reconciler::reconciled_request;
use webhook_dedup::webhook;

use super::world::{Alarm, Door, Forward, Heard, Run, RunEnd, Sender, World};
use super::{IndexAnswer, Protocol, Reached, Violation};

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
            Door::Webhook | Door::Reconcile => EVENT_ID.to_owned(),
            Door::Api(_) => idempotency::scope(Some("client"), "key"),
        }
    }
}

/// Who runs a task: the object's caller waits for a request; a forward and the alarm run in
/// the background.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Request,
    Forward(usize),
    Alarm,
}

/// Why a task stopped.
enum Stop {
    /// It answered the object's caller.
    Answered(Call),
    /// It waits for the origin.
    Waiting,
    /// It waits for the failure index's answer to this.
    Index(IndexRequest),
    /// The alarm starts this forward and waits for it.
    Attempt(Box<Attempt>, Option<Outgoing>),
    /// It is over, or waits for nothing the world gives (a forward's end).
    Idle,
    /// The instance died under it.
    Crashed,
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
            // with it what the record knew (an earlier run's unknown outcome included), and
            // what its sender was told.
            self.ghost.expired_at = Some(self.now);
            self.ghost.unknown_pending = false;
            self.ghost.acked = false;
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
        if let (Some(after), false) = (
            &after,
            before.as_ref().map(ClaimRecord::state) == Some(ClaimState::Dead),
        ) {
            if after.state() == ClaimState::Dead {
                self.reach(Reached::DeadLettered);
            }
        }
        result
    }

    pub fn violate(&mut self, violation: Violation) {
        self.ghost.violations |= violation as u32;
    }

    pub fn reach(&mut self, reached: Reached) {
        self.ghost.reached |= reached as u32;
    }

    /// `setAlarm(at)`: fails once when the model said so.
    fn set_alarm(&mut self, at: claim::Millis) -> Result<(), String> {
        if std::mem::take(&mut self.alarm_fails) {
            return Err("setAlarm failed".into());
        }
        self.alarm = Some(at);
        Ok(())
    }

    /// Carries out the calls of `task` (run by `who`) until it stops.
    fn exec(&mut self, model: &Protocol, task: &mut Task, who: Who) -> Stop {
        let config = &model.configs[self.deploy];
        let key = model.key();
        loop {
            let Some(call) = task.poll(&mut self.known, Some(config), self.now) else {
                return Stop::Idle;
            };
            let done = match call {
                Call::Nonce => Some(Done::Nonce(Ok(self.fresh_nonce()))),
                // The back-off's jitter: the middle of its range.
                Call::Jitter => Some(Done::Jitter(0.5)),
                Call::Store { op } => {
                    self.store_step(model, task, who, op, &key);
                    if std::mem::take(&mut self.crash_after_store) {
                        // What the step recorded stands: the forward's settle is known.
                        if let (Who::Forward(index), Task::Forward(forward)) = (who, &*task) {
                            self.forwards[index].task = forward.clone();
                        }
                        self.crash();
                        if who == Who::Alarm {
                            // The runtime runs an alarm handler cut off again.
                            self.alarm = Some(self.alarm.map_or(self.now, |at| at.min(self.now)));
                        }
                        return Stop::Crashed;
                    }
                    None
                }
                Call::SetAlarm(at) => Some(Done::AlarmSet(self.set_alarm(at))),
                Call::DeleteAll => {
                    self.store = Default::default();
                    self.alarm = None;
                    Some(Done::Deleted(Ok(())))
                }
                Call::AskIndex(request) => return Stop::Index(request),
                Call::Log { line, .. } => {
                    self.heard_log(&line);
                    None
                }
                Call::Reply(_) | Call::Begun { .. } => return Stop::Answered(call),
                Call::Attempt { attempt, request } => return Stop::Attempt(attempt, request),
                Call::Forward(io) => self.forward_io(who, io),
                Call::Wait { .. } => return Stop::Waiting,
            };
            if let Some(done) = done {
                task.handle(done, &mut self.known, self.now);
            }
        }
    }

    /// A store step of `task`, with what the invariants need to know of it.
    fn store_step(&mut self, model: &Protocol, task: &mut Task, who: Who, op: &str, key: &str) {
        let config = &model.configs[self.deploy];
        let before = self.record(key);
        self.observe(key, |world| {
            task.store(&mut world.store, Some(config), world.now);
        });
        let Who::Forward(index) = who else {
            return;
        };
        if op != "settle" {
            return;
        }
        let after = self.record(key);
        let forward = &mut self.forwards[index];
        forward.settles += 1;
        let (generation, fingerprint, tries) =
            (forward.generation, forward.fingerprint, forward.settles);
        if tries > 1 {
            self.reach(Reached::SettleRetried);
        }
        let done_now = after
            .as_ref()
            .is_some_and(|r| r.state() == ClaimState::Done);
        if done_now && self.ghost.reached & Reached::Held as u32 != 0 {
            self.reach(Reached::DeliveredAfterHold);
        }
        if before != after && generation != self.ghost.generation {
            self.violate(Violation::StaleSettle);
        }
        if let Some(record) = &after {
            if record.state() == ClaimState::Done
                && before.as_ref().map(ClaimRecord::state) != Some(ClaimState::Done)
                && record.response().is_some()
            {
                self.ghost.cached_fingerprint = fingerprint;
            }
        }
    }

    /// What a log line of the object tells the reachability checks.
    fn heard_log(&mut self, line: &LogLine) {
        match line.outcome {
            Outcome::LateAnswer
                if line
                    .settle
                    .is_some_and(|step| step == SettleStep::Finalized) =>
            {
                self.reach(Reached::LateAnswerLearned)
            }
            Outcome::AnswerLost => self.reach(Reached::AnswerGivenUp),
            Outcome::FenceConflict => self.reach(Reached::FenceConflict),
            Outcome::AlarmNotSet => self.reach(Reached::AlarmNotSet),
            // The alarm could not re-arm for its work: it is set again within a minute, and the
            // work waits for it.
            Outcome::AlarmFailed => self.ghost.alarm_blocked_until = self.alarm,
            _ if line.settle == Some(SettleStep::FenceConflict) => {
                self.reach(Reached::FenceConflict)
            }
            _ => {}
        }
    }

    /// Carries out a forward's own I/O call.
    fn forward_io(&mut self, who: Who, io: ForwardIo) -> Option<Done> {
        let Who::Forward(index) = who else {
            return None;
        };
        match io {
            ForwardIo::Reply(report) | ForwardIo::Stream(report) => {
                if let Some(sender) = self.forwards[index].sender {
                    let reply = AuthorityReply::Delivery(Delivery::Forwarded(report));
                    // A run an operator released (or forgot) under way answers for a record
                    // whose fate the operator took over: its 2xx promises nothing.
                    let started = self.runs[self.forwards[index].run].started_at;
                    let overruled = self.ghost.operator_at.is_some_and(|at| at >= started);
                    self.answer_sender(sender, &reply);
                    if overruled {
                        self.ghost.acked = false;
                    }
                }
                None
            }
            ForwardIo::Abort => {
                let forward = &self.forwards[index];
                if forward.listens && self.runs[forward.run].end == RunEnd::Running {
                    // Nothing more will be learned of this run.
                    self.outcome_lost(forward.run);
                }
                self.forwards[index].listens = false;
                None
            }
            ForwardIo::KeepChunk => Some(Done::Chunk(Vec::new())),
            ForwardIo::DiscardBody | ForwardIo::Pass { .. } | ForwardIo::EndStream { .. } => None,
        }
    }

    /// One request to the object (not a delivery forwarded): the product's task, to its end.
    pub fn request(&mut self, model: &Protocol, request: &AuthorityRequest) -> AuthorityReply {
        self.ghost.alarm_excused = None;
        let mut task = Task::Serve(ServeTask::new(request.clone(), b"body".to_vec()));
        let reply = match self.exec(model, &mut task, Who::Request) {
            Stop::Answered(Call::Reply(reply)) => reply,
            _ => died(),
        };
        // Its sender is told to retry: its retry (or the next request) sets the alarm.
        if matches!(
            reply,
            AuthorityReply::StoreFailed {
                retryable: true,
                ..
            }
        ) {
            self.ghost.alarm_excused = Some(self.ghost.record);
        }
        reply
    }

    /// A delivery through `door` from sender `sender`: the request its door's own rules make
    /// (queue mode stores the event; sync mode and the API door deliver it).
    pub fn deliver(&mut self, model: &Protocol, door: Door, sender: usize) {
        let config = model.config(self).clone();
        let key = model.key();
        let nonce = Nonce([self.senders[sender].nonce; 16]);
        let deliver = match door_request(&config, key.clone(), nonce, door, self.now) {
            AuthorityRequest::Deliver(deliver) => deliver,
            stored => {
                // A sync claim whose outcome is unknown (still processing, its lease over).
                let was_claim = self
                    .store
                    .peek(&key)
                    .is_some_and(|r| r.queue().is_none() && r.state() == ClaimState::Processing);
                let reply = self.request(model, &stored);
                let now_queued = self.store.peek(&key).is_some_and(|r| r.queue().is_some());
                if was_claim && now_queued {
                    self.reach(Reached::StoredOverClaim);
                }
                let answer = webhook::after_delivery(&reply, EVENT_ID, self.now);
                self.hear(sender, (200..300).contains(&answer.status));
                return;
            }
        };
        self.ghost.alarm_excused = None;
        let mut task = Task::Begin(BeginTask::new(deliver.clone()));
        match self.exec(model, &mut task, Who::Request) {
            Stop::Answered(Call::Reply(reply)) => self.answer_sender(sender, &reply),
            Stop::Answered(Call::Begun { won, at }) => {
                let attempt = Attempt::sync(&deliver, won.clone(), at);
                let fingerprint = match door {
                    Door::Api(fp) => Some(fp),
                    Door::Webhook | Door::Reconcile => None,
                };
                let index = self.start_forward(&won, attempt, Some(sender), fingerprint, None);
                self.run_forward(model, index);
            }
            _ => self.senders[sender].heard = Heard::Refused,
        }
    }

    /// Starts a forward of `attempt` under `won`: a handler run at the origin (judged against
    /// every earlier run), unless nothing was sent (`unsent`: what the forward hears instead).
    /// A run that never ran is judged all the same: the object started the attempt.
    fn start_forward(
        &mut self,
        won: &Won,
        attempt: Attempt,
        sender: Option<usize>,
        fingerprint: Option<u8>,
        unsent: Option<Event>,
    ) -> usize {
        let horizon = attempt.wait_ends_at();
        let unknown_pending = self.ghost.unknown_pending;
        let run = self.start_run(won, horizon);
        let mut task = Task::Forward(ForwardTask::new(attempt));
        let sent = unsent.is_none();
        if let Some(event) = unsent {
            // Nothing was sent: the forward hears so first, as the object's does.
            self.runs[run].end = RunEnd::Failed;
            if matches!(event, Event::Held { .. }) {
                // Held back by the gate: the next attempt that is sent is still a takeover.
                self.ghost.unknown_pending = unknown_pending;
            }
            task.handle(Done::Event(event), &mut self.known, self.now);
        }
        let Task::Forward(task) = task else {
            unreachable!()
        };
        self.forwards.push(Forward {
            task,
            run,
            listens: sent,
            sender,
            fingerprint,
            from_alarm: sender.is_none(),
            generation: self.ghost.generation,
            asking: None,
            buffered: None,
            settles: 0,
        });
        self.forwards.len() - 1
    }

    /// Runs forward `index` until it waits, or ends (then the alarm that started it goes on).
    pub fn run_forward(&mut self, model: &Protocol, index: usize) {
        let mut task = Task::Forward(self.forwards[index].task.clone());
        loop {
            let stop = self.exec(model, &mut task, Who::Forward(index));
            if let Stop::Crashed = stop {
                return;
            }
            let Task::Forward(forward) = &task else {
                unreachable!()
            };
            self.forwards[index].task = forward.clone();
            match stop {
                Stop::Waiting => {
                    // An answer that came while it did something else is read at once.
                    if let Some(event) = self.forwards[index].buffered.take() {
                        task.handle(Done::Event(event), &mut self.known, self.now);
                        continue;
                    }
                    return;
                }
                Stop::Index(request) => {
                    self.forwards[index].asking = Some(request);
                    if !model.slow_index {
                        self.index_answers(model, Some(index), super::IndexAnswer::Applied);
                    }
                    return;
                }
                _ => break,
            }
        }
        if task.ended() != Ended::Forwarded {
            return;
        }
        let forward = self.forwards.remove(index);
        if !forward.task.settled() && self.runs[forward.run].end != RunEnd::Failed {
            // Its outcome could not be recorded: the handler may have done its work.
            self.runs[forward.run].unrecorded = true;
            self.outcome_lost(forward.run);
        }
        if forward.from_alarm {
            self.resume_alarm(model, Done::Forwarded);
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
        let expired_since =
            |run: &Run| self.ghost.expired_at.is_some_and(|at| at >= run.started_at);
        let mut violations = Vec::new();
        for run in &self.runs {
            if operator_since(run) {
                continue;
            }
            if run.end == RunEnd::Running && now < run.horizon {
                violations.push(Violation::Overlap);
            }
            let excused = run.cut || run.lost || run.late || run.unrecorded || expired_since(run);
            if run.end == RunEnd::Succeeded && !excused {
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
        let after_throttle = self.store.peek(EVENT_ID).is_some_and(|record| {
            record.queue().is_some()
                && record
                    .last_failure
                    .is_some_and(|reason| matches!(reason, Reason::Answered(429 | 503)))
        });
        if after_throttle {
            self.reach(Reached::WaitedAsAsked);
        }
        self.ghost.unknown_pending = false;
        self.runs.push(Run {
            started_at: now,
            horizon,
            end: RunEnd::Running,
            lost: false,
            cut: false,
            late: false,
            unrecorded: false,
        });
        self.runs.len() - 1
    }

    /// What a sender is told by the reply to its delivery.
    fn answer_sender(&mut self, sender: usize, reply: &AuthorityReply) {
        match self.senders[sender].door {
            door @ (Door::Webhook | Door::Reconcile) => {
                let answer = webhook::after_delivery(reply, EVENT_ID, self.now);
                if answer.status == 409 {
                    self.reach(Reached::InFlight);
                }
                if door == Door::Reconcile {
                    match answer.body["status"].as_str() {
                        Some("processed") => self.reach(Reached::ReconciledRan),
                        Some("duplicate") => self.reach(Reached::ReconciledFoundDone),
                        _ => {}
                    }
                }
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
        if acked && matches!(self.senders[sender].door, Door::Webhook | Door::Reconcile) {
            self.ghost.acked = true;
        }
    }

    /// Hands `event` to forward `index`, waiting for it, and runs it on.
    pub fn feed(&mut self, model: &Protocol, index: usize, event: Event) {
        if let Event::Head(head) = &event {
            if model.fail_retry_after_seconds.is_some() && head.status == model.fail_status {
                self.ghost.throttled_at = Some(self.now);
            }
        }
        let mut task = Task::Forward(self.forwards[index].task.clone());
        task.handle(Done::Event(event), &mut self.known, self.now);
        let Task::Forward(forward) = task else {
            unreachable!()
        };
        self.forwards[index].task = forward;
        self.run_forward(model, index);
    }

    /// The handler of run `run` finishes (`ok`: it did its work); a forward listening hears it
    /// (at once if it waits for it, else as soon as it does).
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
        let status = if ok { 200 } else { model.fail_status };
        let headers = match model.fail_retry_after_seconds {
            Some(seconds) if !ok => vec![("Retry-After".to_owned(), seconds.to_string())],
            _ => vec![],
        };
        // The gate, if the attempt went through it, hears the answer first (whether or not
        // the object still waits for it).
        self.run_answers_gate(model, run, status, &headers);
        let Some(index) = listening else {
            return;
        };
        self.forwards[index].listens = false;
        let head = Event::Head(Head { status, headers });
        if self.forwards[index].task.waits() {
            self.feed(model, index, head);
        } else {
            self.forwards[index].buffered = Some(head);
        }
    }

    /// The answer of run `run` is lost on the way back (a gateway's 502): the handler may go
    /// on, and may do its work.
    pub fn lose(&mut self, model: &Protocol, run: usize) {
        let Some(index) = self
            .forwards
            .iter()
            .position(|forward| forward.run == run && forward.listens && forward.task.waits())
        else {
            return;
        };
        self.runs[run].lost = true;
        self.forwards[index].listens = false;
        self.outcome_lost(run);
        self.run_answers_gate(model, run, 502, &[]);
        let head = Event::Head(Head {
            status: 502,
            headers: vec![],
        });
        self.feed(model, index, head);
    }

    /// The alarm fires: the product's alarm task runs until it waits or ends.
    pub fn alarm_fires(&mut self, model: &Protocol) {
        self.alarm = None;
        self.ghost.alarm_blocked_until = None;
        self.ghost.alarm_ran_at = Some(self.now);
        let task = Task::Alarm(AlarmTask::new(self.now));
        self.continue_alarm(model, task);
    }

    /// Hands the waiting alarm task `done`, and runs it on.
    fn resume_alarm(&mut self, model: &Protocol, done: Done) {
        let Some(alarm) = self.alarm_run.take() else {
            return;
        };
        let mut task = Task::Alarm(alarm.task);
        task.handle(done, &mut self.known, self.now);
        self.continue_alarm(model, task);
    }

    /// Runs the alarm task until it waits or ends.
    fn continue_alarm(&mut self, model: &Protocol, mut task: Task) {
        match self.exec(model, &mut task, Who::Alarm) {
            Stop::Crashed => {}
            Stop::Index(request) => {
                let Task::Alarm(run) = task else {
                    unreachable!()
                };
                self.alarm_run = Some(Alarm {
                    task: run,
                    asking: Some(request),
                });
                if !model.slow_index {
                    self.index_answers(model, None, super::IndexAnswer::Applied);
                }
            }
            Stop::Attempt(attempt, request) => {
                let Task::Alarm(run) = task else {
                    unreachable!()
                };
                self.alarm_run = Some(Alarm {
                    task: run,
                    asking: None,
                });
                let config = model.config(self);
                let sync_now = config.queue.mode(Provider::Stripe) == DeliveryMode::Sync;
                let lease = attempt.won().lease_expires_at.saturating_sub(self.now);
                if sync_now && lease > config.webhook.claims.lease_ms {
                    self.reach(Reached::QueuedUnderSync);
                }
                let won = attempt.won().clone();
                let key = model.key();
                let sent = request.is_some();
                if !sent && self.store.peek_payload(&key).is_some() {
                    // An attempt spent although its stored event is there to send.
                    self.violate(Violation::AttemptNotSent);
                }
                let gated = sent.then(|| self.gate_admit(model, &key));
                let unsent = match &gated {
                    None => Some(Event::NoHead(OriginOutcome::NotSent)),
                    Some(Ok(_)) => None,
                    Some(Err(held)) => Some(held.clone()),
                };
                let index = self.start_forward(&won, *attempt, None, None, unsent);
                if let Some(Ok(permit)) = gated {
                    let run = self.forwards[index].run;
                    self.gate_sent(model, permit, Some(run));
                }
                self.run_forward(model, index);
                if let Some(Err(Event::Held { until, .. })) = gated {
                    self.check_held(&key, until, won.attempt);
                }
            }
            _ => {
                if let Ended::Alarm(Err(_)) = task.ended() {
                    if self.alarm.is_none() {
                        // The handler throws: the runtime runs the alarm again.
                        self.alarm = Some(self.now);
                    }
                }
            }
        }
    }

    /// An attempt numbered `attempt` the gate held until `until`, settled: queued again for
    /// that very time, its number given back. (A settle the store refused leaves the attempt
    /// to its lease, as any other.)
    fn check_held(&mut self, key: &str, until: claim::Millis, attempt: u32) {
        let Some(record) = self.store.peek(key) else {
            return;
        };
        if record.state() == ClaimState::Queued
            && (record.next_attempt_at() != Some(until) || record.attempts + 1 != attempt)
        {
            self.violate(Violation::HeldDropped);
        }
    }

    /// The failure index answers the request the alarm or forward `forward` waits on.
    pub fn index_answers(&mut self, model: &Protocol, forward: Option<usize>, answer: IndexAnswer) {
        let request = match forward {
            Some(index) => self.forwards[index].asking.take(),
            None => self
                .alarm_run
                .as_mut()
                .and_then(|alarm| alarm.asking.take()),
        };
        let Some(request) = request else {
            return;
        };
        let applied = match answer {
            IndexAnswer::Failed => None,
            IndexAnswer::Applied | IndexAnswer::Lost => Some(failure_index::handle(
                &mut self.index,
                &request,
                self.now,
                None,
            )),
        };
        let reply = match (answer, applied) {
            (IndexAnswer::Applied, Some(reply)) => reply,
            _ => IndexReply::StoreFailed {
                detail: "the index failed, or its answer was lost".into(),
            },
        };
        if let IndexRequest::Report(_) = request {
            match answer {
                IndexAnswer::Applied if self.ghost.report_lost => self.reach(Reached::ReportResent),
                IndexAnswer::Applied => {}
                _ => self.ghost.report_lost = true,
            }
            match failure_index::entry(&mut self.index, &model.key())
                .ok()
                .flatten()
                .map(|entry| entry.state)
            {
                Some(EntryState::Dead) => self.reach(Reached::Indexed),
                Some(EntryState::Recovered) => self.reach(Reached::IndexRecovered),
                _ => {}
            }
        }
        match forward {
            Some(index) => {
                let mut task = Task::Forward(self.forwards[index].task.clone());
                task.handle(Done::Index(reply), &mut self.known, self.now);
                let Task::Forward(forward) = task else {
                    unreachable!()
                };
                self.forwards[index].task = forward;
                self.run_forward(model, index);
            }
            None => self.resume_alarm(model, Done::Index(reply)),
        }
    }

    /// Run `run`'s outcome will never be learned: the next run must be a takeover, unless an
    /// operator released or forgot the record since it started (the operator took its fate over).
    pub fn outcome_lost(&mut self, run: usize) {
        let started = self.runs[run].started_at;
        if self.ghost.operator_at.is_none_or(|at| at < started) {
            self.ghost.unknown_pending = true;
        }
    }

    /// The object's instance dies: its forwards, its alarm run and what it knew of its alarm
    /// are gone; the handlers it called may go on. An alarm handler cut off runs again.
    pub fn crash(&mut self) {
        for forward in std::mem::take(&mut self.forwards) {
            if !forward.task.settled() {
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
        self.crash_after_store = false;
        if self.alarm_run.take().is_some() {
            self.alarm = Some(self.alarm.map_or(self.now, |at| at.min(self.now)));
        }
    }

    /// The operator reads the record.
    pub fn inspect(&mut self, model: &Protocol) {
        let key = model.key();
        let reply = self.request(model, &AuthorityRequest::Inspect { key: key.clone() });
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
            Door::Webhook | Door::Reconcile => Family::Events,
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
        let before = self.record(&key).map(|record| record.state());
        let mut reply = self.request(model, &request);
        if reply == died() {
            // The instance died after the write, before the operator heard: what the write
            // did stands, and is what counts.
            let after = self.record(&key).map(|record| record.state());
            reply = match (action, before, after) {
                (AdminAction::Forget, Some(_), None) => {
                    AuthorityReply::Forget(claim::ForgetOutcome::Forgotten)
                }
                (AdminAction::Release, Some(ClaimState::Processing), Some(state))
                    if state != ClaimState::Processing =>
                {
                    AuthorityReply::Release(claim::ReleaseOutcome::Released { already: false })
                }
                (AdminAction::Redeliver, Some(ClaimState::Dead), Some(ClaimState::Queued)) => {
                    AuthorityReply::Redeliver(claim::RedeliverOutcome::Queued)
                }
                _ => reply,
            };
        }
        match reply {
            // A repeat of a release that went through already changes nothing, and excuses
            // nothing.
            AuthorityReply::Release(claim::ReleaseOutcome::Released { already: false }) => {
                // The operator decides the record's fate from here: a sender told its event
                // was processed may now see it run again.
                self.ghost.operator_at = Some(self.now);
                self.ghost.acked = false;
            }
            AuthorityReply::Forget(claim::ForgetOutcome::Forgotten) => {
                // The admin API tells the index, best effort.
                if let Some(report) = dead_letters::forgotten_report(&read, &reply, self.now) {
                    let _ = failure_index::apply(&mut self.index, &report, self.now, None);
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

/// What the caller of a request hears when the instance died under it: the runtime's error,
/// which the worker answers as a retryable store failure.
fn died() -> AuthorityReply {
    AuthorityReply::StoreFailed {
        retryable: true,
        detail: "the instance died".into(),
    }
}

/// The request a delivery through `door` at `now` makes, built by the doors' own rules (the
/// webhook door's [`webhook_request`], the reconciler's [`reconciled_request`], the API door's
/// [`Deliver::api`]).
fn door_request(
    config: &Config,
    key: String,
    nonce: Nonce,
    door: Door,
    now: claim::Millis,
) -> AuthorityRequest {
    let fp = match door {
        Door::Webhook => {
            return webhook_request(config, Provider::Stripe, key, vec![], false, nonce)
        }
        Door::Reconcile => return reconciled_request(config, key, b"body", now, nonce),
        Door::Api(fp) => fp,
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
