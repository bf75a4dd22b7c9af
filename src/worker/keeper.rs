//! The claim authority's storage and alarm, shared by the object and the forwards it runs in
//! the background (they outlive the request that started them). When to set the alarm is
//! decided in [`crate::authority::alarm`]; this only calls `setAlarm`.

use std::cell::Cell;

use worker::{Env, Result, ScheduledTime, Storage};

use super::clock;
use super::env_config;
use super::kv_store::{self, ObjectStore};
use super::log;
use crate::authority::alarm::{AlarmStep, KnownAlarm};
use crate::authority::{Wake, WakeBy};
use crate::claim::{Millis, StoreError};
use crate::log_line::LogLine;

/// The object's storage and what it knows of its alarm.
pub struct Keeper {
    storage: Storage,
    env: Env,
    alarm: Cell<KnownAlarm>,
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
            alarm: Cell::new(KnownAlarm::Unknown),
            log_usage,
        }
    }

    /// The object's storage.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The environment (for the metrics binding).
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Notes that the object's storage (and its alarm) is gone.
    pub fn forget_alarm(&self) {
        self.alarm.set(KnownAlarm::None);
    }

    /// Runs `rule` over the object's store, then makes sure of the alarm its write needs.
    /// With `LOG_STORAGE_USAGE=true`, logs the rows it read and wrote for `key` and `op` (each
    /// alarm set counted as a row written).
    pub async fn with_store<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut ObjectStore) -> (T, WakeBy),
    ) -> std::result::Result<T, StoreError> {
        self.with_store_step(key, op, rule)
            .await
            .map(|(result, _)| result)
    }

    /// Like [`Keeper::with_store`], and says what making sure of the alarm did.
    pub async fn with_store_step<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut ObjectStore) -> (T, WakeBy),
    ) -> std::result::Result<(T, AlarmStep), StoreError> {
        let mut store = kv_store::open(&self.storage)?;
        let (result, wake_by) = rule(&mut store);
        let usage = store.usage;
        let step = match wake_by {
            Some(wake) => self.ensure_alarm(wake).await,
            None => AlarmStep::Kept,
        };
        if self.log_usage {
            let written = usage.rows_written + u64::from(step == AlarmStep::Set);
            log::write(&LogLine::usage(key, op, usage.rows_read, written));
        }
        Ok((result, step))
    }

    /// Makes sure the alarm serves `wake` (see [`KnownAlarm::to_serve`]).
    async fn ensure_alarm(&self, wake: Wake) -> AlarmStep {
        let Some(at) = self.alarm.get().to_serve(wake, clock::now_ms()) else {
            return AlarmStep::Kept;
        };
        let set = self.set_alarm_at(at).await;
        if let Err(error) = &set {
            // The write stands; the next request to the object sets it.
            log::write(&LogLine::alarm_not_set(&error.to_string()));
        }
        AlarmStep::of(wake, Some(set.is_ok()))
    }

    /// Makes sure the alarm fires by `at` (see [`KnownAlarm::to_fire_by`]). Returns when it
    /// fires.
    pub async fn set_alarm_by(&self, at: Millis) -> Result<Millis> {
        match self.alarm.get().to_fire_by(at, clock::now_ms()) {
            None => match self.alarm.get() {
                KnownAlarm::At(known) => Ok(known),
                _ => Ok(at),
            },
            Some(at) => self.set_alarm_at(at).await.map(|()| at),
        }
    }

    /// Sets the alarm for the absolute time `at` (an `i64` would be read as an offset). Known
    /// as set from the call on (so a concurrent write does not set it again); unknown again if
    /// it failed, so that the next write sets it.
    pub async fn set_alarm_at(&self, at: Millis) -> Result<()> {
        self.alarm.set(KnownAlarm::At(at));
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(at as f64));
        let set = self.storage.set_alarm(ScheduledTime::new(date)).await;
        self.alarm.set(KnownAlarm::after_set(at, set.is_ok()));
        set
    }
}
