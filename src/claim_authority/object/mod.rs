//! The claim authority object: its sequences as state machines with no I/O ([`task`]), and
//! [`Executor`], the one executor that makes the calls they ask for over [`ObjectIo`] (the few
//! things only the runtime can do) and a forward's own I/O ([`Forwarding`]). The model check
//! (`tests/protocol/`) drives the same tasks over its own world; the host tests run the
//! executor over an object in memory (`memory.rs`). The worker's object carries out each
//! [`ObjectIo`] call.

mod drive;
#[cfg(test)]
pub mod memory;
pub mod task;
#[cfg(test)]
mod tests;

pub use drive::Forwarding;

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;

use crate::claim::{random_fraction, Millis, Nonce, Usage};
use crate::claim_authority::alarm::KnownAlarm;
use crate::claim_authority::attempt::Event;
use crate::claim_authority::{Attempt, AuthorityReply, AuthorityRequest, Deliver, Won};
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::LogLine;
use crate::object::Host;
use crate::origin::OriginOutcome;
use task::{AlarmTask, BeginTask, Call, Done, Ended, ForwardTask, ServeTask, Task};

/// What only the runtime can do for a claim authority object, beyond what it does for every
/// object ([`Host`]).
#[allow(async_fn_in_trait)] // used by generics only, never as `dyn`
pub trait ObjectIo: Host + Sized {
    /// Deletes the object's whole storage, its alarm included.
    async fn delete_all(&self) -> Result<(), String>;

    /// Writes `line` to the log and counts it in the metrics.
    fn record(&self, line: &LogLine);

    /// Sends `request` to the failure index; any failure comes back as `StoreFailed`.
    async fn ask_index(&self, request: &IndexRequest) -> IndexReply;

    /// Sends a queued attempt's forward (`None`: there is nothing that can be sent) and
    /// carries `attempt` out over it to its end (see [`Executor::drive`]).
    async fn forward(executor: &Executor<Self>, attempt: Attempt, request: Option<Outgoing>);
}

/// A queued attempt's request to its origin.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outgoing {
    /// The sender's origin URL.
    pub url: String,
    /// The headers, in order: the stored ones signed anew, and the attempt's own.
    pub headers: Vec<(String, String)>,
    /// The stored event's body.
    pub body: Vec<u8>,
}

/// A claim authority object: its I/O, and what it knows of its alarm (lost with the instance).
pub struct Executor<I> {
    io: I,
    alarm: Cell<KnownAlarm>,
    log_usage: bool,
}

/// The rows of the store step made last, and what the usage line names it by.
type Spent = (String, &'static str, Usage);

impl<I: ObjectIo> Executor<I> {
    /// The executor over `io`; `LOG_STORAGE_USAGE=true` logs the rows each store step read and
    /// wrote, with the alarm it set.
    pub fn new(io: I) -> Executor<I> {
        let log_usage = io.config().is_some_and(|config| config.log_storage_usage);
        Executor {
            io,
            alarm: Cell::new(KnownAlarm::Unknown),
            log_usage,
        }
    }

    /// The object's I/O.
    pub fn io(&self) -> &I {
        &self.io
    }

    /// Serves `request` (any but a delivery; see [`Executor::begin`]) with the raw `body` beside
    /// it (see [`ServeTask`]).
    pub async fn serve(&self, request: &AuthorityRequest, body: &[u8]) -> AuthorityReply {
        let mut task = Task::Serve(ServeTask::new(request.clone(), body.to_vec()));
        match self.run(&mut task, &mut drive::NoForward).await {
            Some(Call::Reply(reply)) => reply,
            _ => AuthorityReply::from(crate::claim::StoreError::Fatal(
                "the request ended without a reply".into(),
            )),
        }
    }

    /// Begins `deliver` (see [`BeginTask`]): the claim it won, to forward under, and when; or
    /// the reply when it is not forwarded.
    pub async fn begin(&self, deliver: &Deliver) -> Result<(Won, Millis), AuthorityReply> {
        let mut task = Task::Begin(BeginTask::new(deliver.clone()));
        match self.run(&mut task, &mut drive::NoForward).await {
            Some(Call::Begun { won, at }) => Ok((won, at)),
            Some(Call::Reply(reply)) => Err(reply),
            _ => Err(AuthorityReply::from(crate::claim::StoreError::Fatal(
                "the delivery ended without a reply".into(),
            ))),
        }
    }

    /// Runs the alarm (see [`AlarmTask`]); `Err` only when even the alarm that should run it
    /// again could not be set, for the runtime's own retries.
    pub async fn alarm(&self) -> Result<(), String> {
        let mut task = Task::Alarm(AlarmTask::new(self.io.now_ms()));
        self.run(&mut task, &mut drive::NoForward).await;
        match task.ended() {
            Ended::Alarm(result) => result,
            other => Err(format!("the alarm ended as {other:?}")),
        }
    }

    /// Carries `attempt` out over `forward` to its end (see [`ForwardTask`]); `sent` is `Err`
    /// with the reason when nothing was sent.
    pub async fn drive<F: Forwarding>(
        &self,
        attempt: Attempt,
        sent: Result<(), OriginOutcome>,
        forward: &mut F,
    ) {
        let mut task = Task::Forward(ForwardTask::new(attempt));
        if let Err(outcome) = sent {
            self.hand(&mut task, Done::Event(Event::NoHead(outcome)));
        }
        self.run(&mut task, forward).await;
    }

    /// Runs `task` to its end, making each call it asks for, `forward` carrying out a
    /// forward's own I/O; returns the call that answered the object's caller, if any.
    pub async fn run<F: Forwarding>(&self, task: &mut Task, forward: &mut F) -> Option<Call> {
        let config = self.io.config();
        let mut spent: Option<Spent> = None;
        let mut answer = None;
        loop {
            let mut known = self.alarm.get();
            let call = task.poll(&mut known, config.as_deref(), self.io.now_ms());
            self.alarm.set(known);
            let Some(call) = call else {
                break;
            };
            let done = match call {
                Call::Store { op } => {
                    self.log_usage(spent.take());
                    let now = self.io.now_ms();
                    match self.io.open() {
                        Ok(mut store) => {
                            task.store(&mut store, config.as_deref(), now);
                            spent = Some((task.key().to_owned(), op, store.usage));
                            None
                        }
                        Err(error) => Some(Done::Unopened(error)),
                    }
                }
                Call::Reply(_) | Call::Begun { .. } => {
                    answer = Some(call);
                    None
                }
                call => self.make(call, forward, &mut spent).await,
            };
            if let Some(done) = done {
                self.hand(task, done);
            }
        }
        self.log_usage(spent);
        answer
    }

    /// Makes `call` (any but a store step or an answer), `forward` carrying out a forward's
    /// own I/O; what it led to, if the task must hear of it. A `setAlarm` that succeeds counts
    /// as a row written by the store step made last (`spent`).
    async fn make<F: Forwarding>(
        &self,
        call: Call,
        forward: &mut F,
        spent: &mut Option<Spent>,
    ) -> Option<Done> {
        match call {
            Call::Nonce => Some(Done::Nonce(Nonce::random())),
            Call::Jitter => Some(Done::Jitter(random_fraction())),
            Call::SetAlarm(at) => {
                let set = self.io.set_alarm(at).await;
                if let (Ok(()), Some((_, _, usage))) = (&set, spent) {
                    usage.rows_written += 1;
                }
                Some(Done::AlarmSet(set))
            }
            Call::DeleteAll => Some(Done::Deleted(self.io.delete_all().await)),
            Call::AskIndex(request) => Some(Done::Index(self.io.ask_index(&request).await)),
            Call::Log { line, metric } => {
                if metric {
                    self.io.record(&line);
                } else {
                    self.io.write(&line);
                }
                None
            }
            Call::Attempt { attempt, request } => {
                // The attempt runs tasks of its own through this executor: boxed, so that the
                // future does not contain itself.
                let forwarded: Pin<Box<dyn Future<Output = ()> + '_>> =
                    Box::pin(I::forward(self, *attempt, request));
                forwarded.await;
                Some(Done::Forwarded)
            }
            Call::Forward(io) => drive::carry_out(forward, io).await,
            Call::Wait {
                wants,
                door,
                deadline,
            } => Some(Done::Event(forward.next(wants, door, deadline).await)),
            Call::Store { .. } | Call::Reply(_) | Call::Begun { .. } => None,
        }
    }

    /// Hands `done` to `task`.
    fn hand(&self, task: &mut Task, done: Done) {
        let mut known = self.alarm.get();
        task.handle(done, &mut known, self.io.now_ms());
        self.alarm.set(known);
    }

    /// With `LOG_STORAGE_USAGE=true`, logs the rows a store step read and wrote (each alarm it
    /// set counted as a row written).
    fn log_usage(&self, spent: Option<Spent>) {
        if let (true, Some((key, op, usage))) = (self.log_usage, spent) {
            let line = LogLine::usage(&key, op, usage.rows_read, usage.rows_written);
            self.io.write(&line);
        }
    }
}
