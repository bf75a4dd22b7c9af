//! What the runtime does for every Durable Object of this service, the claim authority's and
//! the failure index's alike: its clock, the configuration, its table, its alarm and the log.
//! Each object's own calls extend it ([`crate::keeper::ObjectIo`],
//! [`crate::failures::object::IndexIo`]).

use std::rc::Rc;

use crate::claim::{KvStore, KvTable, Millis, StoreError};
use crate::config::Config;
use crate::log_line::LogLine;

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
