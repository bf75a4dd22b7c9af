//! The claim authority object's sequences as state machines with no I/O: a request served, a
//! delivery begun, the alarm, and a forward carried out. Each is a [`Task`], driven the way
//! [`crate::claim_authority::attempt::Attempt`] is:
//!
//! - [`Task::poll`] hands out the next [`Call`] the executor must make (draw a nonce, run the
//!   task's store step, set the alarm, ask the failure index, write a log line, answer the
//!   caller, run a forward's I/O, wait for the origin), given what the instance knows of its
//!   alarm, the configuration and the clock;
//! - [`Task::store`] runs the task's store step over the object's store, when the call was
//!   [`Call::Store`];
//! - [`Task::handle`] takes the [`Done`] result of the call.
//!
//! The object's executor ([`crate::claim_authority::object::Executor`]) and the model check (`tests/protocol/`)
//! both drive these tasks: the order of the object's calls is written here once. Randomness
//! reaches the rules only through [`Call::Nonce`] and [`Call::Jitter`], so the model chooses
//! it.

mod alarm;
mod due;
mod forward;
mod report;
mod serve;

pub use alarm::AlarmTask;
pub use due::Fraction;
pub use forward::{ForwardIo, ForwardTask};
pub use serve::{BeginTask, ServeTask};

use std::collections::VecDeque;

use crate::claim::{ClaimStore, Millis, Nonce, StoreError};
use crate::claim_authority::alarm::{AlarmStep, KnownAlarm};
use crate::claim_authority::attempt::{Event, Wants};
use crate::claim_authority::{Attempt, AuthorityReply, Door, Wake, WakeBy, Won};
use crate::config::Config;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::LogLine;

use super::Outgoing;

/// One I/O call a task asks its executor to make. The doc of each says what to hand back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    /// Draw 16 random bytes: hand back [`Done::Nonce`].
    Nonce,
    /// Draw a random fraction in `[0, 1)`: hand back [`Done::Jitter`].
    Jitter,
    /// Open the object's store and run [`Task::store`] over it; when it cannot be opened,
    /// hand back [`Done::Unopened`]. `op` names the step, and [`Task::key`] the record it was
    /// about (for the rows it bills).
    Store {
        /// The operation, as the usage log line names it.
        op: &'static str,
    },
    /// `setAlarm(at)`: hand back [`Done::AlarmSet`].
    SetAlarm(Millis),
    /// Delete the object's whole storage, its alarm included: hand back [`Done::Deleted`].
    DeleteAll,
    /// Send this to the failure index: hand back [`Done::Index`].
    AskIndex(IndexRequest),
    /// Write this log line; `metric`: count it as a metric data point too. Nothing to hand back.
    Log {
        /// The line.
        line: Box<LogLine>,
        /// Whether it is also a metric data point.
        metric: bool,
    },
    /// Answer the object's caller with this reply. Nothing to hand back; the task is over.
    Reply(AuthorityReply),
    /// The delivery is begun: forward it under `won`, claimed at `at` (see
    /// [`crate::claim_authority::Attempt::sync`]). Nothing to hand back; the task is over.
    Begun {
        /// The claim won.
        won: Won,
        /// When it was claimed.
        at: Millis,
    },
    /// Send `request` to the origin (`None`: nothing can be sent) and run `attempt` over it
    /// as a [`ForwardTask`] to its end: hand back [`Done::Forwarded`].
    Attempt {
        /// The queued attempt's driver.
        attempt: Box<Attempt>,
        /// Its request.
        request: Option<Outgoing>,
    },
    /// One of the forward's own I/O calls (see [`ForwardIo`]).
    Forward(ForwardIo),
    /// Wait for what the forward wants until `deadline`: hand back [`Done::Event`].
    Wait {
        /// What the attempt waits for.
        wants: Wants,
        /// The door it came through (whether the answer's headers are read).
        door: Door,
        /// Until when.
        deadline: Millis,
    },
}

/// What a call led to, handed back to [`Task::handle`].
#[derive(Clone, Debug, PartialEq)]
pub enum Done {
    /// The nonce drawn, or why none could be.
    Nonce(Result<Nonce, StoreError>),
    /// The fraction drawn.
    Jitter(f64),
    /// The store could not be opened for the step [`Call::Store`] asked for.
    Unopened(StoreError),
    /// What `setAlarm` did.
    AlarmSet(Result<(), String>),
    /// What deleting the storage did.
    Deleted(Result<(), String>),
    /// The failure index's reply.
    Index(IndexReply),
    /// The queued attempt [`Call::Attempt`] started is over.
    Forwarded,
    /// What happened to the forward (the origin's answer, a chunk, a time-out, the caller gone).
    Event(Event),
    /// The bytes of the chunk read last, for [`ForwardIo::KeepChunk`].
    Chunk(Vec<u8>),
}

/// How a task ended, once [`Task::poll`] returns `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Still running.
    Running,
    /// The caller was answered (see [`Call::Reply`], [`Call::Begun`]).
    Answered,
    /// The alarm ran: `Err` when even the alarm that should run it again could not be set.
    Alarm(Result<(), String>),
    /// A forward is over.
    Forwarded,
}

/// One of the object's sequences.
#[derive(Clone, Debug, PartialEq)]
pub enum Task {
    /// A request served (anything but a delivery).
    Serve(ServeTask),
    /// A delivery begun: claimed, then forwarded.
    Begin(BeginTask),
    /// The alarm.
    Alarm(AlarmTask),
    /// A forward carried out.
    Forward(ForwardTask),
}

impl Task {
    /// The next call to make, given what the instance knows of its alarm (`known`, updated as
    /// an alarm is set), the configuration (`None`: invalid) and the clock; `None` when the
    /// task waits for a call's result, or is over.
    pub fn poll(
        &mut self,
        known: &mut KnownAlarm,
        config: Option<&Config>,
        now: Millis,
    ) -> Option<Call> {
        match self {
            Task::Serve(task) => task.poll(known, now),
            Task::Begin(task) => task.poll(known, now),
            Task::Alarm(task) => task.poll(known, config, now),
            Task::Forward(task) => task.poll(known, config, now),
        }
    }

    /// Runs the step [`Call::Store`] asked for over `store`, at `now`.
    pub fn store<S: ClaimStore>(&mut self, store: &mut S, config: Option<&Config>, now: Millis) {
        match self {
            Task::Serve(task) => task.store(store, now),
            Task::Begin(task) => task.store(store, now),
            Task::Alarm(task) => task.store(store, config, now),
            Task::Forward(task) => task.store(store, now),
        }
    }

    /// Takes what the last call led to, at `now`.
    pub fn handle(&mut self, done: Done, known: &mut KnownAlarm, now: Millis) {
        match self {
            Task::Serve(task) => task.handle(done, known),
            Task::Begin(task) => task.handle(done, known),
            Task::Alarm(task) => task.handle(done, known, now),
            Task::Forward(task) => task.handle(done, known, now),
        }
    }

    /// The record the task is about (after an alarm's sweep, the first record it met; an
    /// object holds one record in practice).
    pub fn key(&self) -> &str {
        match self {
            Task::Serve(task) => task.key(),
            Task::Begin(task) => &task.deliver().key,
            Task::Alarm(task) => task.key(),
            Task::Forward(task) => task.key(),
        }
    }

    /// How it ended (`Running` until it is over).
    pub fn ended(&self) -> Ended {
        match self {
            Task::Serve(task) => task.ended(),
            Task::Begin(task) => task.ended(),
            Task::Alarm(task) => task.ended(),
            Task::Forward(task) => task.ended(),
        }
    }
}

/// Making sure of the alarm a write needs: set it unless what the instance knows serves
/// `wake` (see [`KnownAlarm::to_serve`]); a failure is logged, the write stands, and the next
/// write sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EnsureAlarm {
    /// Not yet looked at.
    Wanted(Wake),
    /// `setAlarm(at)` called for `wake`.
    Setting(Wake, Millis),
    /// Done.
    Step(AlarmStep),
}

impl EnsureAlarm {
    /// What a store step that needs `wake_by` leaves to do.
    pub fn after(wake_by: WakeBy) -> EnsureAlarm {
        match wake_by {
            Some(wake) => EnsureAlarm::Wanted(wake),
            None => EnsureAlarm::Step(AlarmStep::Kept),
        }
    }

    /// The call to make, if any: `setAlarm` when `known` does not serve the wake (known as set
    /// from the call on, so that a concurrent write does not set it again).
    pub fn poll(&mut self, known: &mut KnownAlarm, now: Millis) -> Option<Call> {
        let EnsureAlarm::Wanted(wake) = *self else {
            return None;
        };
        match known.to_serve(wake, now) {
            None => {
                *self = EnsureAlarm::Step(AlarmStep::Kept);
                None
            }
            Some(at) => {
                *known = KnownAlarm::At(at);
                *self = EnsureAlarm::Setting(wake, at);
                Some(Call::SetAlarm(at))
            }
        }
    }

    /// Takes what `setAlarm` did; a failure is logged (its line queued on `calls`).
    pub fn set(
        &mut self,
        result: Result<(), String>,
        known: &mut KnownAlarm,
        calls: &mut VecDeque<Call>,
    ) {
        let EnsureAlarm::Setting(wake, at) = *self else {
            return;
        };
        *known = KnownAlarm::after_set(at, result.is_ok());
        *self = EnsureAlarm::Step(AlarmStep::of(wake, Some(result.is_ok())));
        if let Err(error) = result {
            calls.push_back(log(LogLine::alarm_not_set(&error), false));
        }
    }

    /// What was done, once it is.
    pub fn step(&self) -> Option<AlarmStep> {
        match self {
            EnsureAlarm::Step(step) => Some(*step),
            _ => None,
        }
    }
}

/// A log line call.
pub(crate) fn log(line: LogLine, metric: bool) -> Call {
    Call::Log {
        line: Box::new(line),
        metric,
    }
}

#[cfg(test)]
mod tests;
