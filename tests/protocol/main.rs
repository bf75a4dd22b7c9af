//! The protocol, model-checked: every interleaving, within small bounds, of deliveries (new or
//! the same request again, through either door, in either mode), the origin's answers (2xx,
//! a failure, an answer lost on the way back, or none), time-outs and the end of the wait,
//! settles, store failures, `setAlarm` failures, crashes of the object's instance, the clock
//! moving to the next deadline, an operator's inspect and then release (forced or not),
//! forget or redeliver, a deploy that changes the mode or the lease, and sends to the failure
//! index that fail.
//!
//! The model drives the product's own rules: the claim engine over an in-memory store, the
//! attempt driver, the alarm rules, the admin API's decisions, the doors' answer tables, the
//! failure index's rules over its own in-memory store, and the configuration loader (a deploy can only choose a configuration the real check accepts).
//! Only the object's sequencing (`src/executor/`: a rule, then the alarm it needs) is written
//! again, in `object.rs`, one step per transition so that a crash or another request can come
//! between any two of its I/O calls (`Executor`'s async sequences run each to its end).
//!
//! Each scenario is checked exhaustively (breadth first), prints the states it explored, and
//! fails on the shortest path to a broken invariant, or when a scenario it must reach (a
//! takeover, a replay, a dead letter...) is never reached, so an empty model cannot pass.
//! `traces.rs` replays the counterexamples it found before the fixes, step by step.

mod gate;
mod object;
mod reverts;
pub mod scenarios;

mod world;

use std::io::Write;
use std::time::Instant;

use stateright::{Checker, HasDiscoveries, Model, Property};
use webhook_dedup::admin::Action as AdminAction;
use webhook_dedup::claim::{self, Change, ClaimState, Millis, QueueStep, StoreError, Transition};
use webhook_dedup::claim_authority::attempt::{Event, Wants};
use webhook_dedup::config::{Config, DeliveryMode};
use webhook_dedup::failure_index::{self, EntryState};
use webhook_dedup::origin::Reason;
use webhook_dedup::providers::Provider;

use world::{Budget, Door, RunEnd, World};

/// An invariant broken on a transition (a bit of `Ghost::violations`).
#[derive(Clone, Copy, Debug)]
#[repr(u32)]
pub enum Violation {
    /// A handler run started while an earlier one was still running within its wait horizon.
    Overlap = 1,
    /// A handler run started after one succeeded, with no crash, lost answer, slow handler,
    /// operator action or expiry between.
    Rerun = 2,
    /// A run that follows one whose outcome is unknown was not marked as a takeover.
    TakeoverUnmarked = 4,
    /// A settle changed the record after its claim was no longer the current one.
    StaleSettle = 8,
    /// A done record changed back.
    DoneChanged = 16,
    /// A cached answer was replayed to a request with another fingerprint.
    ReplayToAnother = 32,
    /// An operator's forget deleted a record other than the one it read.
    ForgotAnother = 64,
    /// A queued attempt was spent without its stored event being sent, though the event was
    /// there to send.
    AttemptNotSent = 128,
    /// The origin's gate let an attempt through while the origin was paused (by an operator,
    /// or until the time its `Retry-After` asked for).
    StartedWhilePaused = 256,
    /// An attempt the gate held was not queued again for the time the gate gave, or used up
    /// an attempt.
    HeldDropped = 512,
}

/// A scenario the model must reach (a bit of `Ghost::reached`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Reached {
    Takeover = 1,
    Replayed = 2,
    DeadLettered = 4,
    Redelivered = 8,
    Forgotten = 16,
    Expired = 32,
    /// The failure index lists the dead letter.
    Indexed = 64,
    /// The failure index shows a recovery.
    IndexRecovered = 128,
    /// A send to the failure index failed and a later one delivered its changes.
    ReportResent = 256,
    /// An event the origin refused (a 4xx) dead-lettered after its first attempt.
    RefusedAtOnce = 512,
    /// A stored event attempted after a deploy sent its sender to sync mode with a lease
    /// shorter than the attempt's wait: under the longer lease the attempt needs.
    QueuedUnderSync = 1024,
    /// An event stored in queue mode over a claim of sync mode whose outcome is unknown.
    StoredOverClaim = 2048,
    /// An answer that came after the sender was told to come back, learned and finalized.
    LateAnswerLearned = 4096,
    /// A settle refused because the claim was no longer the attempt's.
    FenceConflict = 8192,
    /// A settle the store refused, tried again.
    SettleRetried = 16384,
    /// The wait for an answer ended without one: the claim is held until its lease ends.
    AnswerGivenUp = 32768,
    /// A write's alarm could not be set.
    AlarmNotSet = 65536,
    /// A delivery answered 409 while another held a live claim.
    InFlight = 131072,
    /// A queued attempt started after its origin's `Retry-After` put the previous one off.
    WaitedAsAsked = 262144,
    /// The origin's gate held an attempt back.
    Held = 1 << 19,
    /// The gate held an attempt because `ORIGIN_MAX_IN_FLIGHT` attempts were at the origin.
    CapHeld = 1 << 20,
    /// The breaker opened and closed again.
    BreakerClosed = 1 << 21,
    /// Another event's attempt went through the same gate.
    OtherThrough = 1 << 22,
    /// An event the gate held was delivered later.
    DeliveredAfterHold = 1 << 23,
    /// The reconciler's hand-over of the event ran it at the origin.
    ReconciledRan = 1 << 24,
    /// The reconciler found the event already done by its real delivery.
    ReconciledFoundDone = 1 << 25,
}

/// How the failure index answers a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexAnswer {
    /// It applied it and answered.
    Applied,
    /// Its storage failed: nothing applied.
    Failed,
    /// It applied it, but its answer was lost on the way back.
    Lost,
}

/// A store failure the model can make happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreFault {
    /// The next call of any kind fails, retryably.
    Retryable,
    /// The next write fails, retryably (the reads before it succeed).
    WriteRetryable,
    /// The next write fails for good (a fatal error).
    WriteFatal,
    /// The call after the next `n` fails, retryably: a failure on any call of a sequence.
    RetryableAfter(u8),
    /// Every call fails, retryably, until the clock moves on.
    Persistent,
}

/// How late a timer or the alarm may fire (a stalled runtime): half a second, less than the
/// settle margin (a tenth of the lease, at least 1 s) every lease keeps beyond its wait.
const LATE_MS: Millis = 500;

/// One nondeterministic step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A delivery through `door`: a new request, or the same request as sender `repeat`'s.
    Deliver { door: Door, repeat: Option<usize> },
    /// Handler run `run` finishes, having done its work (`ok`) or not.
    Answer { run: usize, ok: bool },
    /// Handler run `run`'s answer is lost on the way back (a gateway's 502).
    Lose { run: usize },
    /// Forward `forward`'s deadline came.
    Timeout { forward: usize },
    /// Forward `forward`'s answer body ended, or broke off.
    BodyEnds { forward: usize, broke: bool },
    /// The object's alarm fires.
    AlarmFires,
    /// The failure index answers what forward `forward` (or, `None`, the alarm) asked.
    IndexAnswers {
        forward: Option<usize>,
        answer: IndexAnswer,
    },
    /// The clock moves to the next deadline; `late`: though a timer or the alarm is due (it
    /// fires late, or the runtime stalled).
    Tick { late: bool },
    /// A store failure will happen.
    StoreFails { fault: StoreFault },
    /// The next `setAlarm` fails.
    AlarmSetFails,
    /// The object's instance dies: now, or right after the next store step.
    Crash { after_store: bool },
    /// The operator reads the record.
    Inspect,
    /// The operator acts on what it read.
    Operate { action: OperatorAction, force: bool },
    /// A deploy of configuration `config`.
    Deploy { config: usize },
    /// Another event's attempt asks the origin's gate.
    OtherStarts,
    /// The gate's open request `fetch` of another event is answered (`ok`: 2xx, else 500).
    OtherAnswers { fetch: usize, ok: bool },
    /// An operator pauses the origin (`pause`), or resumes it.
    Pause { pause: bool },
    /// The gate's instance dies.
    GateCrash,
}

/// What an operator does after reading a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperatorAction {
    Release,
    Forget,
    Redeliver,
}

/// One scenario: its configurations, doors and bounds.
pub struct Protocol {
    pub name: &'static str,
    /// The configurations a deploy may choose from; the first is deployed at the start.
    pub configs: Vec<Config>,
    /// The doors deliveries come through.
    pub doors: Vec<Door>,
    pub budget: Budget,
    /// The store failures it may make happen (each spends one of the budget's).
    pub store_faults: Vec<StoreFault>,
    /// Whether a crash may also come right after a store step, inside a sequence.
    pub crash_mid_task: bool,
    /// Whether the failure index answers as a step of its own (slow), or at once.
    pub slow_index: bool,
    /// The clock never moves past this.
    pub max_time: Millis,
    /// The scenarios it must reach.
    pub must_reach: Vec<Reached>,
    /// The status a handler run that fails answers with (500, a refusal such as 404, 410 Gone,
    /// or 429 Too Many Requests).
    pub fail_status: u16,
    /// The `Retry-After` (in seconds) that failing answer carries, if any.
    pub fail_retry_after_seconds: Option<u64>,
    /// The fewest distinct states it must explore: a model that collapsed fails.
    pub min_states: usize,
}

impl Protocol {
    /// The next time something is due after the current one, if any before `max_time`.
    fn next_deadline(&self, world: &World) -> Option<Millis> {
        let now = world.now;
        let mut times: Vec<Millis> = world
            .forwards
            .iter()
            .filter_map(|forward| forward.task.attempt().poll_timeout())
            .collect();
        times.extend(world.alarm);
        times.extend(world.next_fetch_end());
        times.extend(world.runs.iter().map(|run| run.horizon));
        if let Some(record) = world.store.peek(&self.key()) {
            times.extend([record.lease.until, record.expires_at]);
            times.extend(record.lease.wait_ends_at);
            times.extend(record.next_attempt_at());
            times.extend(record.pending_report().map(|report| report.next_at));
        }
        times
            .into_iter()
            .filter(|at| *at > now && *at <= self.max_time)
            .min()
    }

    /// True when a timer of a waiting forward, or the alarm, is due now.
    fn timer_due(&self, world: &World) -> bool {
        let forward_due = world.forwards.iter().any(|f| {
            f.task.waits()
                && f.task
                    .attempt()
                    .poll_timeout()
                    .is_some_and(|at| at <= world.now)
        });
        let alarm_due = world.alarm_run.is_none() && world.alarm.is_some_and(|at| at <= world.now);
        forward_due || alarm_due
    }
}

impl Model for Protocol {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![World::new(self.budget)]
    }

    fn actions(&self, world: &World, actions: &mut Vec<Action>) {
        let left = world.left;
        if left.deliveries > 0 {
            for door in &self.doors {
                actions.push(Action::Deliver {
                    door: *door,
                    repeat: None,
                });
                // The same request again (a send whose answer was lost) differs only where
                // the request carries a nonce: a delivery forwarded while its sender waits.
                let queued = matches!(door, Door::Webhook | Door::Reconcile)
                    && self.config(world).queue.mode(Provider::Stripe) == DeliveryMode::Queue;
                for (index, sender) in world.senders.iter().enumerate() {
                    if sender.door == *door && !queued {
                        actions.push(Action::Deliver {
                            door: *door,
                            repeat: Some(index),
                        });
                    }
                }
            }
        }
        for (run, state) in world.runs.iter().enumerate() {
            if state.end == RunEnd::Running {
                actions.push(Action::Answer { run, ok: true });
                actions.push(Action::Answer { run, ok: false });
                if world
                    .forwards
                    .iter()
                    .any(|f| f.run == run && f.listens && f.task.waits())
                {
                    actions.push(Action::Lose { run });
                }
            }
        }
        for (index, forward) in world.forwards.iter().enumerate() {
            if !forward.task.waits() {
                continue;
            }
            let attempt = forward.task.attempt();
            if attempt.poll_timeout().is_some_and(|at| at <= world.now) {
                actions.push(Action::Timeout { forward: index });
            }
            if attempt.wants() == Wants::Chunk {
                for broke in [false, true] {
                    actions.push(Action::BodyEnds {
                        forward: index,
                        broke,
                    });
                }
            }
        }
        let asking = world
            .forwards
            .iter()
            .enumerate()
            .filter(|(_, f)| f.asking.is_some())
            .map(|(index, _)| Some(index))
            .chain(
                world
                    .alarm_run
                    .as_ref()
                    .filter(|alarm| alarm.asking.is_some())
                    .map(|_| None),
            );
        for forward in asking {
            actions.push(Action::IndexAnswers {
                forward,
                answer: IndexAnswer::Applied,
            });
            if left.index_failures > 0 {
                for answer in [IndexAnswer::Failed, IndexAnswer::Lost] {
                    actions.push(Action::IndexAnswers { forward, answer });
                }
            }
        }
        if world.alarm_run.is_none() && world.alarm.is_some_and(|at| at <= world.now) {
            actions.push(Action::AlarmFires);
        }
        // Timers are on time (the clock moves on only once every due timer has fired), unless
        // the model makes one late.
        if self.next_deadline(world).is_some() {
            if !self.timer_due(world) {
                actions.push(Action::Tick { late: false });
            } else if left.late_timers > 0 {
                actions.push(Action::Tick { late: true });
            }
        }
        if left.store_failures > 0 && !world.store.faulty() {
            for fault in &self.store_faults {
                actions.push(Action::StoreFails { fault: *fault });
            }
        }
        if left.alarm_failures > 0 && !world.alarm_fails {
            actions.push(Action::AlarmSetFails);
        }
        if left.crashes > 0 {
            actions.push(Action::Crash { after_store: false });
            if self.crash_mid_task && !world.crash_after_store {
                actions.push(Action::Crash { after_store: true });
            }
        }
        if left.operator > 0 {
            actions.push(Action::Inspect);
            if world.read.is_some() {
                for (action, force) in [
                    (OperatorAction::Release, false),
                    (OperatorAction::Release, true),
                    (OperatorAction::Forget, false),
                    (OperatorAction::Redeliver, false),
                ] {
                    actions.push(Action::Operate { action, force });
                }
            }
        }
        if left.others > 0 {
            actions.push(Action::OtherStarts);
        }
        for (fetch, open) in world.fetches.iter().enumerate() {
            if open.run.is_none() {
                actions.push(Action::OtherAnswers { fetch, ok: true });
                actions.push(Action::OtherAnswers { fetch, ok: false });
            }
        }
        if left.pauses > 0 {
            actions.push(Action::Pause {
                pause: !world.ghost.operator_paused,
            });
        }
        if left.gate_crashes > 0 {
            actions.push(Action::GateCrash);
        }
        if left.deploys > 0 {
            for config in 0..self.configs.len() {
                if config != world.deploy {
                    actions.push(Action::Deploy { config });
                }
            }
        }
    }

    fn next_state(&self, last: &World, action: Action) -> Option<World> {
        let mut world = last.clone();
        match action {
            Action::Deliver { door, repeat } => {
                world.left.deliveries -= 1;
                let sender = world.add_sender(door, repeat);
                world.deliver(self, door, sender);
            }
            Action::Answer { run, ok } => world.answer(self, run, ok),
            Action::Lose { run } => world.lose(self, run),
            Action::Timeout { forward } => world.feed(self, forward, Event::Timeout),
            Action::BodyEnds { forward, broke } => {
                let event = if broke {
                    Event::BodyBroke
                } else {
                    Event::BodyEnded
                };
                world.feed(self, forward, event)
            }
            Action::AlarmFires => world.alarm_fires(self),
            Action::IndexAnswers { forward, answer } => {
                if answer != IndexAnswer::Applied {
                    world.left.index_failures -= 1;
                }
                world.index_answers(self, forward, answer);
            }
            Action::Tick { late } => {
                let next = self.next_deadline(&world)?;
                world.now = if late {
                    // A timer or the alarm fires late, by at most LATE_MS: less than the
                    // settle margin every lease keeps beyond its attempt's wait.
                    world.left.late_timers -= 1;
                    next.min(world.now + LATE_MS)
                } else {
                    next
                };
                // A store that failed on every call comes back.
                world.store.heal();
                world.fetches_time_out(self);
            }
            Action::StoreFails { fault } => {
                world.left.store_failures -= 1;
                let busy = || StoreError::Retryable("busy".into());
                match fault {
                    StoreFault::Retryable => world.store.fail_next(busy()),
                    StoreFault::WriteRetryable => world.store.fail_next_write(busy()),
                    StoreFault::WriteFatal => world
                        .store
                        .fail_next_write(StoreError::Fatal("the disk is full".into())),
                    StoreFault::Persistent => world.store.fail_every(busy()),
                    StoreFault::RetryableAfter(calls) => {
                        world.store.fail_later(usize::from(calls), busy())
                    }
                }
            }
            Action::AlarmSetFails => {
                world.left.alarm_failures -= 1;
                world.alarm_fails = true;
            }
            Action::Crash { after_store } => {
                world.left.crashes -= 1;
                if after_store {
                    world.crash_after_store = true;
                } else {
                    world.crash();
                }
            }
            Action::Inspect => {
                world.left.operator -= 1;
                world.inspect(self);
            }
            Action::Operate { action, force } => {
                world.left.operator -= 1;
                let action = match action {
                    OperatorAction::Release => AdminAction::Release,
                    OperatorAction::Forget => AdminAction::Forget,
                    OperatorAction::Redeliver => AdminAction::Redeliver,
                };
                world.operate(self, action, force);
            }
            Action::Deploy { config } => {
                world.left.deploys -= 1;
                world.deploy = config;
            }
            Action::OtherStarts => {
                world.left.others -= 1;
                world.other_starts(self);
            }
            Action::OtherAnswers { fetch, ok } => world.other_answers(self, fetch, ok),
            Action::Pause { pause } => {
                world.left.pauses -= 1;
                world.operator_pauses(pause);
            }
            Action::GateCrash => {
                world.left.gate_crashes -= 1;
                world.gate_crashes(self);
            }
        }
        Some(world)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("no run overlaps a run within its wait horizon", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::Overlap as u32 == 0
            }),
            Property::always(
                "no run after a success, unless a crash, a lost, unrecorded or slow answer, an operator or the retention came between",
                |_: &Protocol, w: &World| w.ghost.violations & Violation::Rerun as u32 == 0,
            ),
            Property::always("a run after an unknown outcome is a takeover", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::TakeoverUnmarked as u32 == 0
            }),
            Property::always("a settle changes only the generation it won", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::StaleSettle as u32 == 0
            }),
            Property::always("a done record never changes back", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::DoneChanged as u32 == 0
            }),
            Property::always("a replay goes only to the same fingerprint", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::ReplayToAnother as u32 == 0
            }),
            Property::always("a forget deletes only the record read", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::ForgotAnother as u32 == 0
            }),
            Property::always(
                "no queued attempt is spent without sending the event it holds",
                |_: &Protocol, w: &World| w.ghost.violations & Violation::AttemptNotSent as u32 == 0,
            ),
            Property::always("an acknowledged event is kept, done or dead", acked_event_kept),
            Property::always("no attempt starts while its origin is paused", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::StartedWhilePaused as u32 == 0
            }),
            Property::always(
                "an attempt the gate held is queued again for the time it gave, its number given back",
                |_: &Protocol, w: &World| w.ghost.violations & Violation::HeldDropped as u32 == 0,
            ),
            Property::always(
                "the gate's open requests never exceed ORIGIN_MAX_IN_FLIGHT, each holding a permit",
                gate_in_flight_within_cap,
            ),
            Property::always(
                "a throttled event is not due before the time its origin asked for",
                throttled_event_waits,
            ),
            Property::always("work due has an alarm by then", due_work_has_alarm),
            Property::always(
                "the failure index lists every dead letter, or its object still holds the report",
                index_knows_dead_letters,
            ),
            Property::always(
                "once nothing is left to happen, an acknowledged event is delivered, dead-lettered or expired",
                acked_event_settles,
            ),
        ];
        for reached in &self.must_reach {
            let name = reached.description();
            properties.push(if *reached == Reached::RefusedAtOnce {
                Property::sometimes(name, |model: &Protocol, w: &World| {
                    w.store.peek(&model.key()).is_some_and(|record| {
                        record.state() == ClaimState::Dead
                            && record.attempts == 1
                            && record
                                .last_failure
                                .is_some_and(|reason| reason.is_refusal())
                    })
                })
            } else {
                Property::sometimes(name, reached.condition())
            });
        }
        properties
    }
}

/// True once the scenario `BIT` names was reached.
fn has_reached<const BIT: u32>(_: &Protocol, world: &World) -> bool {
    world.ghost.reached & BIT != 0
}

impl Reached {
    /// Its reachability property's condition.
    fn condition(self) -> fn(&Protocol, &World) -> bool {
        match self {
            Reached::Takeover => has_reached::<{ Reached::Takeover as u32 }>,
            Reached::Replayed => has_reached::<{ Reached::Replayed as u32 }>,
            Reached::DeadLettered => has_reached::<{ Reached::DeadLettered as u32 }>,
            Reached::Redelivered => has_reached::<{ Reached::Redelivered as u32 }>,
            Reached::Forgotten => has_reached::<{ Reached::Forgotten as u32 }>,
            Reached::Expired => has_reached::<{ Reached::Expired as u32 }>,
            Reached::Indexed => has_reached::<{ Reached::Indexed as u32 }>,
            Reached::IndexRecovered => has_reached::<{ Reached::IndexRecovered as u32 }>,
            Reached::ReportResent => has_reached::<{ Reached::ReportResent as u32 }>,
            Reached::RefusedAtOnce => has_reached::<{ Reached::RefusedAtOnce as u32 }>,
            Reached::QueuedUnderSync => has_reached::<{ Reached::QueuedUnderSync as u32 }>,
            Reached::StoredOverClaim => has_reached::<{ Reached::StoredOverClaim as u32 }>,
            Reached::LateAnswerLearned => has_reached::<{ Reached::LateAnswerLearned as u32 }>,
            Reached::FenceConflict => has_reached::<{ Reached::FenceConflict as u32 }>,
            Reached::SettleRetried => has_reached::<{ Reached::SettleRetried as u32 }>,
            Reached::AnswerGivenUp => has_reached::<{ Reached::AnswerGivenUp as u32 }>,
            Reached::AlarmNotSet => has_reached::<{ Reached::AlarmNotSet as u32 }>,
            Reached::InFlight => has_reached::<{ Reached::InFlight as u32 }>,
            Reached::WaitedAsAsked => has_reached::<{ Reached::WaitedAsAsked as u32 }>,
            Reached::Held => has_reached::<{ Reached::Held as u32 }>,
            Reached::CapHeld => has_reached::<{ Reached::CapHeld as u32 }>,
            Reached::BreakerClosed => has_reached::<{ Reached::BreakerClosed as u32 }>,
            Reached::OtherThrough => has_reached::<{ Reached::OtherThrough as u32 }>,
            Reached::DeliveredAfterHold => has_reached::<{ Reached::DeliveredAfterHold as u32 }>,
            Reached::ReconciledRan => has_reached::<{ Reached::ReconciledRan as u32 }>,
            Reached::ReconciledFoundDone => has_reached::<{ Reached::ReconciledFoundDone as u32 }>,
        }
    }

    /// The name of its reachability property.
    fn description(self) -> &'static str {
        match self {
            Reached::Takeover => "reaches a takeover",
            Reached::Replayed => "reaches a replay",
            Reached::DeadLettered => "reaches a dead letter",
            Reached::Redelivered => "reaches a redelivery",
            Reached::Forgotten => "reaches a forget",
            Reached::Expired => "reaches an expiry",
            Reached::Indexed => "reaches a dead letter in the index",
            Reached::IndexRecovered => "reaches a recovery in the index",
            Reached::ReportResent => "reaches a report sent again after a failed send",
            Reached::RefusedAtOnce => "reaches a refused event dead-lettered after one attempt",
            Reached::QueuedUnderSync => {
                "reaches a stored event attempted under sync mode's shorter lease"
            }
            Reached::StoredOverClaim => {
                "reaches an event stored over a sync claim whose outcome is unknown"
            }
            Reached::LateAnswerLearned => "reaches a late answer learned and finalized",
            Reached::FenceConflict => "reaches a settle refused by the fence",
            Reached::SettleRetried => "reaches a settle tried again after the store refused it",
            Reached::AnswerGivenUp => "reaches an answer given up on",
            Reached::AlarmNotSet => "reaches an alarm that could not be set",
            Reached::InFlight => "reaches a 409 while another delivery holds the claim",
            Reached::WaitedAsAsked => {
                "reaches an attempt started once the time its origin asked for had passed"
            }
            Reached::Held => "reaches an attempt held back by the origin's gate",
            Reached::CapHeld => "reaches an attempt held while ORIGIN_MAX_IN_FLIGHT were out",
            Reached::BreakerClosed => "reaches a breaker that opened and closed again",
            Reached::OtherThrough => "reaches another event's attempt through the same gate",
            Reached::DeliveredAfterHold => "reaches an event delivered after the gate held it",
            Reached::ReconciledRan => "reaches the reconciler's hand-over running the event",
            Reached::ReconciledFoundDone => {
                "reaches the reconciler finding the event done by its real delivery"
            }
        }
    }
}

/// A queued event whose last attempt the origin throttled (answered `fail_status` 429 or 503
/// with `Retry-After`) is not due before the time asked, counted from when the answer was
/// heard, unless an operator's redelivery began a new budget since. (Only the settle of the
/// attempt whose answer was heard last can queue the record with that failure.)
fn throttled_event_waits(model: &Protocol, world: &World) -> bool {
    let Some(seconds) = model.fail_retry_after_seconds else {
        return true;
    };
    let Some(record) = world.store.peek(&model.key()) else {
        return true;
    };
    let (Some(queue), Some(next)) = (record.queue(), record.next_attempt_at()) else {
        return true;
    };
    let throttled = record.last_failure == Some(Reason::Answered(model.fail_status))
        && record.attempts > queue.budget.first_attempt
        && !matches!(queue.step, QueueStep::Queued { unknown: true, .. });
    let heard = world.ghost.throttled_at.unwrap_or(Millis::MAX);
    !throttled || next >= heard.saturating_add(seconds * 1_000)
}

/// The requests the origin's gate has open (its own, and other events') are never more than
/// `ORIGIN_MAX_IN_FLIGHT`, and each holds one of the gate's permits: a crash of the object
/// whose attempt it was leaves the permit to the gate's request; a crash of the gate cuts its
/// requests off with its permits.
fn gate_in_flight_within_cap(model: &Protocol, world: &World) -> bool {
    let cap = model.config(world).gate.max_in_flight as usize;
    let open = world.fetches.len();
    (cap == 0 || open <= cap) && open <= world.gate.in_flight(world.now) as usize
}

/// An event acknowledged to a webhook sender has a record that holds its body, or is done or
/// dead, unless an operator released or forgot it since, or its retention ended (which clears
/// the acknowledgement).
fn acked_event_kept(model: &Protocol, world: &World) -> bool {
    if !world.ghost.acked {
        return true;
    }
    match world.store.peek(&model.key()) {
        Some(record) => {
            record.is_expired(world.now)
                || matches!(record.state(), ClaimState::Done | ClaimState::Dead)
                || record.holds_undelivered_event()
        }
        None => false,
    }
}

/// Liveness, within the model's bounds: once nothing is left to happen (no forward, no alarm
/// run, nothing due before the clock stops), an acknowledged event is done, dead or expired,
/// or an alarm is set that will deliver it. A body held for ever with no alarm to deliver it
/// fails this, where it passes "kept".
fn acked_event_settles(model: &Protocol, world: &World) -> bool {
    let quiet = world.forwards.is_empty()
        && world.alarm_run.is_none()
        && world.alarm.is_none_or(|at| at > model.max_time)
        && model.next_deadline(world).is_none();
    if !quiet || !world.ghost.acked {
        return true;
    }
    let Some(record) = world.store.peek(&model.key()) else {
        return true;
    };
    record.is_expired(world.now)
        || matches!(record.state(), ClaimState::Done | ClaimState::Dead)
        || world.alarm.is_some()
}

/// A record that still has to act (a queued attempt due, a queue attempt's lease to take
/// over, changes to send to the failure index) has an alarm at or before then (or now, for work already overdue); excused while the
/// alarm handler runs, right after a request that failed with a retryable error (its sender
/// retries, or the next request sets the alarm), for work that came due before the alarm last
/// ran and could not start then, and after an alarm that could not read the store: both are
/// tried again a minute later.
fn due_work_has_alarm(model: &Protocol, world: &World) -> bool {
    let Some(record) = world.store.peek(&model.key()) else {
        return true;
    };
    if world.alarm_run.is_some() || world.ghost.alarm_excused == Some(world.ghost.record) {
        return true;
    }
    let attempt = match record.state() {
        ClaimState::Queued => record.next_attempt_at(),
        ClaimState::Processing if record.holds_undelivered_event() => Some(record.lease.until),
        _ => None,
    };
    // Changes waiting for the failure index are work too.
    let report = record.pending_report().map(|report| report.next_at);
    let Some(due) = [attempt, report].into_iter().flatten().min() else {
        return true;
    };
    let Some(at) = world.alarm else {
        return false;
    };
    // Work already overdue is served by an alarm now.
    at <= due.max(world.now)
        || world.ghost.alarm_ran_at.is_some_and(|ran| due <= ran)
        || world
            .ghost
            .alarm_blocked_until
            .is_some_and(|until| at <= until)
}

/// A dead-lettered event (its record not past its retention) is in the failure index as dead
/// since that very death, or its record still holds that change for the index: a lost send
/// never loses a dead letter from the operator's view.
fn index_knows_dead_letters(model: &Protocol, world: &World) -> bool {
    let key = model.key();
    let Some(record) = world.store.peek(&key) else {
        return true;
    };
    if record.is_expired(world.now) || record.state() != ClaimState::Dead {
        return true;
    }
    let (Some(dead_at), Some(queue)) = (record.dead_at(), record.queue()) else {
        return false;
    };
    // The death is the stored event's last change noted.
    let change = Change {
        transition: Transition::DeadLettered,
        at: dead_at,
        seq: queue.changes_noted,
    };
    if claim::holds(record.pending_report(), &change) {
        return true;
    }
    let mut index = world.index.clone();
    failure_index::entry(&mut index, &key)
        .ok()
        .flatten()
        .is_some_and(|entry| {
            entry.state == EntryState::Dead
                && entry.storage_id == queue.storage_id
                && entry.last_seq == queue.changes_noted
        })
}

/// Checks `model` exhaustively, prints what it explored, and fails on any broken invariant
/// (with the shortest path to it) or any scenario never reached.
fn check(model: Protocol) {
    let _every_fix_in = reverts::every_fix_in();
    let name = model.name;
    let model_min_states = model.min_states;
    let started = Instant::now();
    // Stops at the first broken invariant: breadth first, its path is (one of) the shortest.
    let checker = model
        .checker()
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_bfs()
        .join();
    // Written to the process's stderr itself, which the test harness does not capture, so
    // that `cargo test` shows what each scenario explored even when it passes.
    let _ = writeln!(
        std::io::stderr(),
        "model check {name}: {} states ({} unique), depth {}, {:.1} s",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        checker.unique_state_count() >= model_min_states,
        "{name}: the model explored {} distinct states, fewer than its floor of {model_min_states}: \
         it collapsed",
        checker.unique_state_count()
    );
    checker.assert_properties();
}

#[test]
fn queue_mode_when_the_origin_is_gone() {
    check(scenarios::gone());
}

#[test]
fn queue_mode_when_the_origin_throttles() {
    check(scenarios::throttled());
}

#[test]
fn queue_mode_through_the_origin_s_gate_paused() {
    check(scenarios::gate_paused());
}

#[test]
fn queue_mode_through_the_origin_s_gate_capped() {
    check(scenarios::gate_capped());
}

#[test]
fn sync_deliveries() {
    check(scenarios::sync_deliveries());
}

#[test]
fn a_reconciled_event_racing_its_real_delivery_runs_once() {
    check(scenarios::reconciled_racing_delivery());
}

#[test]
fn sync_deliveries_and_an_operator() {
    check(scenarios::sync_and_an_operator());
}

#[test]
fn late_timers_and_a_stalled_runtime() {
    check(scenarios::late_timers());
}

#[test]
fn notifications_and_a_slow_failure_index() {
    check(scenarios::notifications());
}

#[test]
fn queue_mode_with_failures() {
    check(scenarios::queue_with_failures());
}

#[test]
fn queue_mode_with_a_store_failure_on_any_call() {
    check(scenarios::store_failure_anywhere());
}

#[test]
fn queue_mode_and_an_operator_who_redelivers() {
    check(scenarios::redelivers());
}

#[test]
fn queue_mode_when_the_origin_refuses() {
    check(scenarios::refuses());
}

#[test]
fn the_failure_index_when_a_send_fails() {
    check(scenarios::index_fails());
}

#[test]
fn queue_mode_and_an_operator_who_forgets() {
    check(scenarios::forgets());
}

#[test]
fn queue_mode_when_set_alarm_fails() {
    check(scenarios::set_alarm_fails());
}

#[test]
fn deploys_that_change_the_mode_or_the_lease() {
    check(scenarios::deploys());
}

#[test]
fn idempotency_keys() {
    check(scenarios::idempotency_keys());
}
