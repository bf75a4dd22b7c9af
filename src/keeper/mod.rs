//! The claim authority object without its I/O: its store and what it knows of its alarm
//! ([`Keeper`]), and its sequences, each written once over [`ObjectIo`] (the few things only
//! the runtime can do) and tested on the host over an object in memory: a request served
//! ([`Keeper::serve`], [`Keeper::begin`]), the alarm ([`Keeper::alarm`]), a queued attempt
//! ([`Keeper::run_due`]) and the reports to the failure index ([`Keeper::send_due`],
//! [`Keeper::origin_failed`]). The worker's object carries out each [`ObjectIo`] call.

mod alarm_run;
mod drive;
#[cfg(test)]
pub mod memory;
mod queue_run;
mod report;
mod serve;
#[cfg(test)]
mod tests;

pub use drive::Forwarding;

use std::cell::Cell;

use crate::authority::alarm::{AlarmStep, KnownAlarm};
use crate::authority::{Attempt, Wake, WakeBy};
use crate::claim::{KvStore, Millis, StoreError};
use crate::failures::{IndexReply, IndexRequest};
use crate::log_line::LogLine;
use crate::object::Host;

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
    /// drives `attempt` over it to its end (see [`crate::authority::attempt`]).
    async fn forward(keeper: &Keeper<Self>, attempt: Attempt, request: Option<Outgoing>);
}

/// A queued attempt's request to its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The sender's origin URL.
    pub url: String,
    /// The headers, in order: the stored ones signed anew, and the attempt's own.
    pub headers: Vec<(String, String)>,
    /// The stored event's body.
    pub body: Vec<u8>,
}

/// A claim authority object: its I/O, and what it knows of its alarm (lost with the instance).
pub struct Keeper<I> {
    io: I,
    alarm: Cell<KnownAlarm>,
    log_usage: bool,
}

impl<I: ObjectIo> Keeper<I> {
    /// The keeper over `io`; `LOG_STORAGE_USAGE=true` logs the rows each operation read and
    /// wrote.
    pub fn new(io: I) -> Keeper<I> {
        let log_usage = io.config().is_some_and(|config| config.log_storage_usage);
        Keeper {
            io,
            alarm: Cell::new(KnownAlarm::Unknown),
            log_usage,
        }
    }

    /// The object's I/O.
    pub fn io(&self) -> &I {
        &self.io
    }

    /// Runs `rule` over the object's store, then makes sure of the alarm its write needs.
    /// With `LOG_STORAGE_USAGE=true`, logs the rows it read and wrote for `key` and `op` (each
    /// alarm set counted as a row written).
    pub async fn with_store<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut KvStore<I::Table>) -> (T, WakeBy),
    ) -> Result<T, StoreError> {
        self.with_store_step(key, op, rule)
            .await
            .map(|(result, _)| result)
    }

    /// Like [`Keeper::with_store`], and says what making sure of the alarm did.
    pub async fn with_store_step<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut KvStore<I::Table>) -> (T, WakeBy),
    ) -> Result<(T, AlarmStep), StoreError> {
        let mut store = self.io.open()?;
        let (result, wake_by) = rule(&mut store);
        let usage = store.usage;
        let step = match wake_by {
            Some(wake) => self.ensure_alarm(wake).await,
            None => AlarmStep::Kept,
        };
        if self.log_usage {
            let written = usage.rows_written + u64::from(step == AlarmStep::Set);
            self.io
                .write(&LogLine::usage(key, op, usage.rows_read, written));
        }
        Ok((result, step))
    }

    /// Makes sure the alarm serves `wake` (see [`KnownAlarm::to_serve`]). A failure is logged:
    /// the write stands, and the next request to the object sets it.
    async fn ensure_alarm(&self, wake: Wake) -> AlarmStep {
        let Some(at) = self.alarm.get().to_serve(wake, self.io.now_ms()) else {
            return AlarmStep::Kept;
        };
        let set = self.set_alarm_at(at).await;
        if let Err(error) = &set {
            self.io.write(&LogLine::alarm_not_set(error));
        }
        AlarmStep::of(wake, Some(set.is_ok()))
    }

    /// Makes sure the alarm fires by `at` (see [`KnownAlarm::to_fire_by`]). Returns when it
    /// fires.
    pub async fn set_alarm_by(&self, at: Millis) -> Result<Millis, String> {
        match self.alarm.get().to_fire_by(at, self.io.now_ms()) {
            None => match self.alarm.get() {
                KnownAlarm::At(known) => Ok(known),
                _ => Ok(at),
            },
            Some(at) => self.set_alarm_at(at).await.map(|()| at),
        }
    }

    /// Sets the alarm for `at`. Known as set from the call on (so a concurrent write does not
    /// set it again); unknown again if it failed, so that the next write sets it.
    pub async fn set_alarm_at(&self, at: Millis) -> Result<(), String> {
        self.alarm.set(KnownAlarm::At(at));
        let set = self.io.set_alarm(at).await;
        self.alarm.set(KnownAlarm::after_set(at, set.is_ok()));
        set
    }

    /// Deletes the object's whole storage: an expired key then costs no storage at all.
    async fn delete_all(&self) -> Result<(), String> {
        self.io.delete_all().await?;
        self.alarm.set(KnownAlarm::None);
        Ok(())
    }
}
