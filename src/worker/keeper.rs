//! The claim authority's storage and alarm, shared by the object and the deliveries it runs in
//! the background (they outlive the request that started them).

use std::cell::Cell;

use std::time::Duration;

use worker::{Delay, Env, Result, ScheduledTime, Storage};

use super::clock;
use super::env_config;
use super::kv_store::{KvClaimStore, Usage};
use super::log;
use crate::authority::{Wake, WakeBy};
use crate::claim::{Millis, StoreError};

/// What this instance knows of its alarm: nothing yet, none, or set for a time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Alarm {
    /// Not known (a new instance, or setting it failed).
    Unknown,
    /// No alarm (the object's storage was deleted).
    None,
    /// Set for this time.
    At(Millis),
}

/// What making sure of the alarm after a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlarmStep {
    /// Nothing to do, or an expiry alarm that could not be set (the next write sets it).
    Kept,
    /// Set (a billed row write).
    Set,
    /// Due work (queue mode) whose alarm could not be set.
    DueNotSet,
}

/// The object's storage and what it knows of its alarm, shared with the deliveries it runs in
/// the background (they outlive the request that started them).
pub struct Keeper {
    storage: Storage,
    env: Env,
    alarm: Cell<Alarm>,
    log_usage: bool,
}

impl Keeper {
    /// The keeper of an object with `storage` and `env`; `LOG_STORAGE_USAGE=true` logs the rows
    /// each operation read and wrote.
    pub fn new(storage: Storage, env: Env) -> Keeper {
        let log_usage = env_config::config(&env).is_ok_and(|config| config.log_storage_usage);
        Keeper {
            storage,
            env,
            alarm: Cell::new(Alarm::Unknown),
            log_usage,
        }
    }

    /// The object's storage.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Notes that the object's storage (and its alarm) is gone.
    pub fn forget_alarm(&self) {
        self.alarm.set(Alarm::None);
    }
}

impl Keeper {
    /// Runs `rule` over the object's store. With `LOG_STORAGE_USAGE=true`, logs the rows it
    /// read and wrote for `key` and `op` (each alarm set counted as a row written).
    pub async fn with_store<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut KvClaimStore) -> (T, WakeBy),
    ) -> std::result::Result<T, StoreError> {
        self.run_rule(key, op, rule).await.map(|(result, _)| result)
    }

    /// Like [`Keeper::with_store`], but a write that leaves work due (a stored or redelivered
    /// event for the alarm to deliver) fails with a retryable error when its alarm cannot be
    /// set: the write stands, the caller is not told it was accepted, and its retry (a repeat
    /// re-asserts the alarm) sets it. Without this an acknowledged event could wait for an
    /// alarm that never comes, since its sender would not send it again.
    pub async fn with_store_and_alarm<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut KvClaimStore) -> (T, WakeBy),
    ) -> std::result::Result<T, StoreError> {
        match self.run_rule(key, op, rule).await? {
            (_, AlarmStep::DueNotSet) => Err(StoreError::Retryable(
                "the alarm that delivers the event could not be set".into(),
            )),
            (result, _) => Ok(result),
        }
    }

    async fn run_rule<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut KvClaimStore) -> (T, WakeBy),
    ) -> std::result::Result<(T, AlarmStep), StoreError> {
        let mut store = KvClaimStore::open(&self.storage)?;
        let (result, wake_by) = rule(&mut store);
        let usage: Usage = store.usage();
        let step = match wake_by {
            Some(wake) => self.ensure_alarm(wake).await,
            None => AlarmStep::Kept,
        };
        if self.log_usage {
            log::usage(
                key,
                op,
                usage.rows_read,
                usage.rows_written + u64::from(step == AlarmStep::Set),
            );
        }
        Ok((result, step))
    }

    /// Runs `rule` (a fenced write, safe to repeat) at the current time, and again after a
    /// retryable store failure, with a growing pause, while `until` (the claim's lease end)
    /// lies ahead: a settle that a busy store refused once is not lost.
    pub async fn with_store_retrying<T>(
        &self,
        key: &str,
        op: &'static str,
        until: Millis,
        rule: impl Fn(&mut KvClaimStore, Millis) -> (std::result::Result<T, StoreError>, WakeBy),
    ) -> std::result::Result<T, StoreError> {
        let mut pause_ms = 100;
        loop {
            let now = clock::now_ms();
            let result = self
                .with_store(key, op, |store| rule(store, now))
                .await
                .and_then(|result| result);
            match result {
                Err(StoreError::Retryable(_)) if now.saturating_add(pause_ms) < until => {
                    Delay::from(Duration::from_millis(pause_ms)).await;
                    pause_ms = (pause_ms * 2).min(5_000);
                }
                other => return other,
            }
        }
    }

    /// The environment (for the metrics binding).
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Makes sure the alarm fires as a write needs, and says what that took.
    ///
    /// For an expiry (`due: false`) a known alarm still ahead is left as it is, whatever its
    /// time: one later than the record's expiry deletes it a little late (a record past its
    /// expiry already counts as absent), and one earlier finds it unexpired and re-arms itself
    /// once. Either way no second `setAlarm`, a billed row write, on the delivery's path. For
    /// due work (`due: true`, queue mode) the alarm must fire by then: a known alarm later than
    /// that is moved. Unknown (a new instance), or a time already past (the alarm may have
    /// given up): set it, with no await between the write and the alarm.
    pub async fn ensure_alarm(&self, wake: Wake) -> AlarmStep {
        if let Alarm::At(at) = self.alarm.get() {
            if at > clock::now_ms() && (!wake.due || at <= wake.at) {
                return AlarmStep::Kept;
            }
        }
        if let Err(error) = self.set_alarm_at(wake.at).await {
            // The write stands; the next write of this key (or the caller's retry) sets it.
            log::alarm_failed(&error.to_string());
            return if wake.due {
                AlarmStep::DueNotSet
            } else {
                AlarmStep::Kept
            };
        }
        AlarmStep::Set
    }

    /// Makes sure the alarm fires by `at`: an alarm this instance knows of that fires sooner
    /// (and is still ahead) is kept, else it is set for `at`. Returns when it fires.
    pub async fn set_alarm_by(&self, at: Millis) -> Result<Millis> {
        if let Alarm::At(known) = self.alarm.get() {
            if known > clock::now_ms() && known <= at {
                return Ok(known);
            }
        }
        self.set_alarm_at(at).await.map(|()| at)
    }

    /// Sets the alarm for the absolute time `at` (an `i64` would be read as an offset). Known
    /// as set from the call on (so a concurrent write does not set it again); unknown again if
    /// it failed, so that the next write sets it.
    pub async fn set_alarm_at(&self, at: Millis) -> Result<()> {
        self.alarm.set(Alarm::At(at));
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(at as f64));
        let set = self.storage.set_alarm(ScheduledTime::new(date)).await;
        if set.is_err() {
            self.alarm.set(Alarm::Unknown);
        }
        set
    }
}
