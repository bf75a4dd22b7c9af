//! An [`ObjectIo`] in memory for the executor's host tests: a table, a clock, an alarm that can
//! be made to fail, the failure index's replies given in advance, and every log line, index
//! request, alarm set and forward noted. A forward is noted and not driven, as if the object's
//! instance stopped right after sending it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use super::{Executor, Forwarding, ObjectIo, Outgoing};
use crate::claim::{KvStore, KvTable, KvValue, MemoryTable, Millis, Scan, StoreError};
use crate::claim_authority::attempt::{Event, Wants};
use crate::claim_authority::{Attempt, Door, ForwardReport};
use crate::config::Config;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::{LogLine, Outcome};
use crate::object::Host;

/// A table shared by every store opened over it.
#[derive(Clone, Default)]
pub struct SharedTable(pub Rc<RefCell<MemoryTable>>);

impl KvTable for SharedTable {
    fn get(&mut self, key: &str) -> Result<Option<KvValue>, StoreError> {
        self.0.borrow_mut().get(key)
    }

    fn put(&mut self, key: &str, value: &KvValue) -> Result<(), StoreError> {
        self.0.borrow_mut().put(key, value)
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.0.borrow_mut().delete(key)
    }

    fn list(&mut self, scan: &Scan) -> Result<Vec<(String, KvValue)>, StoreError> {
        self.0.borrow_mut().list(scan)
    }
}

/// A forward as noted: the attempt's key, its request, and the alarm when it was sent.
pub type Forwarded = (String, Option<Outgoing>, Option<Millis>);

/// One object in memory.
#[derive(Default)]
pub struct MemoryObject {
    /// The clock.
    pub now: Cell<Millis>,
    /// The configuration (`None`: invalid).
    pub config: Option<Rc<Config>>,
    /// The object's table.
    pub table: SharedTable,
    /// The alarm set last, if any.
    pub alarm: Cell<Option<Millis>>,
    /// How many `setAlarm` calls were made.
    pub alarms_set: Cell<u32>,
    /// How many `setAlarm` calls from now on fail.
    pub failing_alarms: Cell<u32>,
    /// Every log line, as JSON, and whether it was counted in the metrics.
    pub lines: RefCell<Vec<(LogLine, bool)>>,
    /// The failure index's replies, in order (a store failure once they run out).
    pub index_replies: RefCell<VecDeque<IndexReply>>,
    /// Every request to the failure index.
    pub index: RefCell<Vec<IndexRequest>>,
    /// Every forward: the attempt's key, its request, and the alarm when it was sent.
    pub forwards: RefCell<Vec<Forwarded>>,
    /// How far the clock moves each time the table is opened.
    pub tick_on_open: Millis,
    /// How many opens of the table from now on fail.
    pub failing_opens: Cell<u32>,
    /// Whether deleting the whole storage fails.
    pub failing_delete_all: bool,
    /// What the origin does in the next forwards, in order: each a list of what the forward
    /// sees (then time-outs). Without one, the forward is noted and not driven.
    pub origin: RefCell<VecDeque<Vec<Event>>>,
    /// What the driven forwards did, in order (`reply`, `discard_body`, …).
    pub forward_calls: RefCell<Vec<&'static str>>,
}

impl MemoryObject {
    /// An empty object at `now` under `config`.
    pub fn new(now: Millis, config: Config) -> MemoryObject {
        MemoryObject {
            now: Cell::new(now),
            config: Some(Rc::new(config)),
            ..MemoryObject::default()
        }
    }

    /// The log lines written whose outcome is `outcome`.
    pub fn lines_of(&self, outcome: Outcome) -> Vec<LogLine> {
        let lines = self.lines.borrow();
        let of = lines.iter().filter(|(line, _)| line.outcome == outcome);
        of.map(|(line, _)| line.clone()).collect()
    }
}

impl Host for MemoryObject {
    type Table = SharedTable;

    fn now_ms(&self) -> Millis {
        self.now.get()
    }

    fn config(&self) -> Option<Rc<Config>> {
        self.config.clone()
    }

    fn open(&self) -> Result<KvStore<SharedTable>, StoreError> {
        self.now.set(self.now.get() + self.tick_on_open);
        if self.failing_opens.get() > 0 {
            self.failing_opens.set(self.failing_opens.get() - 1);
            return Err(StoreError::Retryable("the table did not open".into()));
        }
        Ok(KvStore::new(self.table.clone()))
    }

    async fn set_alarm(&self, at: Millis) -> Result<(), String> {
        self.alarms_set.set(self.alarms_set.get() + 1);
        if self.failing_alarms.get() > 0 {
            self.failing_alarms.set(self.failing_alarms.get() - 1);
            return Err("setAlarm failed".into());
        }
        self.alarm.set(Some(at));
        Ok(())
    }

    fn write(&self, line: &LogLine) {
        self.lines.borrow_mut().push((line.clone(), false));
    }
}

impl ObjectIo for MemoryObject {
    async fn delete_all(&self) -> Result<(), String> {
        if self.failing_delete_all {
            return Err("deleteAll failed".into());
        }
        self.table.0.borrow_mut().map.clear();
        self.alarm.set(None);
        Ok(())
    }

    fn record(&self, line: &LogLine) {
        self.lines.borrow_mut().push((line.clone(), true));
    }

    async fn ask_index(&self, request: &IndexRequest) -> IndexReply {
        self.index.borrow_mut().push(request.clone());
        let next = self.index_replies.borrow_mut().pop_front();
        next.unwrap_or_else(|| IndexReply::StoreFailed {
            detail: "no reply given".into(),
        })
    }

    async fn forward(executor: &Executor<Self>, attempt: Attempt, request: Option<Outgoing>) {
        let key = attempt.key().to_owned();
        let alarm = executor.io().alarm.get();
        executor
            .io()
            .forwards
            .borrow_mut()
            .push((key, request, alarm));
        let next = executor.io().origin.borrow_mut().pop_front();
        if let Some(events) = next {
            let mut script = Script {
                events: events.into(),
                calls: &executor.io().forward_calls,
                clock: &executor.io().now,
            };
            executor.drive(attempt, Ok(()), &mut script).await;
        }
    }
}

/// A forward that sees what it is given, in order, then only time-outs; every call noted. A
/// time-out moves the object's clock to the deadline it came at.
pub struct Script<'a> {
    /// What it sees next.
    pub events: VecDeque<Event>,
    /// Where its calls are noted.
    pub calls: &'a RefCell<Vec<&'static str>>,
    /// The object's clock.
    pub clock: &'a Cell<Millis>,
}

impl Script<'_> {
    fn note(&self, call: &'static str) {
        self.calls.borrow_mut().push(call);
    }
}

impl Forwarding for Script<'_> {
    async fn next(&mut self, _wants: Wants, _door: Door, deadline: Millis) -> Event {
        let event = self.events.pop_front().unwrap_or(Event::Timeout);
        if event == Event::Timeout {
            self.clock.set(self.clock.get().max(deadline));
        }
        event
    }

    fn reply(&mut self, _report: ForwardReport) {
        self.note("reply");
    }

    fn stream(&mut self, _report: ForwardReport) -> bool {
        self.note("stream");
        true
    }

    fn abort(&mut self) {
        self.note("abort");
    }

    fn discard_body(&mut self) {
        self.note("discard_body");
    }

    fn chunk(&self) -> Vec<u8> {
        b"chunk".to_vec()
    }

    async fn pass(&mut self, _deadline: Option<Millis>) -> bool {
        self.note("pass");
        true
    }

    fn end_stream(&mut self, closed: bool) {
        self.note(if closed {
            "close_stream"
        } else {
            "abort_stream"
        });
    }
}

/// Runs a executor's future to its end: over [`MemoryObject`] nothing waits, so one poll
/// finishes it.
pub fn run<F: std::future::Future>(future: F) -> F::Output {
    crate::object::run_at_once(future)
}
