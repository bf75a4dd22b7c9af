//! What the runtime does for every Durable Object of this service, the claim authority's and
//! the failure index's alike: its clock, the configuration, its table, its alarm and the log.
//! Each object's own calls extend it ([`crate::claim_authority::object::ObjectIo`],
//! [`crate::failure_index::object::IndexIo`]).

use std::rc::Rc;

use crate::claim::{KvStore, KvTable, Millis, StoreError};
use crate::config::Config;
use crate::log_line::LogLine;

/// How long the object waits before trying again an attempt that was due but could not start.
pub const BLOCKED_RETRY_MS: Millis = 60_000;

/// When the alarm that ran at `ran_at` fires next, for work due at `at`: then, unless that was
/// already due when the alarm ran, which means its attempt could not start (a configuration
/// problem, a store error): then a minute after `now`, so the event waits, stored, and the
/// object does not spin on an alarm that fires again at once.
pub fn rearm_at(at: Millis, ran_at: Millis, now: Millis) -> Millis {
    if at > ran_at {
        at
    } else {
        now.saturating_add(BLOCKED_RETRY_MS)
    }
}

/// What only the runtime can do for any of this service's objects.
#[allow(async_fn_in_trait)] // used by generics only, never as `dyn`
pub trait Host {
    /// The object's synchronous key-value table.
    type Table: KvTable;

    /// Now, in milliseconds since the Unix epoch, by the object's clock.
    fn now_ms(&self) -> Millis;

    /// The worker's configuration; `None` while it is invalid.
    fn config(&self) -> Option<Rc<Config>>;

    /// The object's table, rows counted from here.
    fn open(&self) -> Result<KvStore<Self::Table>, StoreError>;

    /// Sets the object's alarm for the absolute time `at`.
    async fn set_alarm(&self, at: Millis) -> Result<(), String>;

    /// Writes `line` to the log.
    fn write(&self, line: &LogLine);
}

/// Runs a future to its end in one poll: over an object in memory nothing waits. For the host
/// tests of both objects and of the doors.
#[cfg(test)]
pub fn run_at_once<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = std::task::Waker::noop();
    match future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(waker))
    {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("a sequence waited in memory, where nothing waits"),
    }
}
