//! The claim authority: one Durable Object per key, the single writer of that key's record.

use std::cell::Cell;

use worker::{
    durable_object, Date, DurableObject, Env, Request, Response, Result, ScheduledTime, State,
};

use super::kv_store::{KvClaimStore, Usage};
use super::log;
use crate::authority::{self, AuthorityReply, AuthorityRequest};
use crate::claim::{self, ClaimState, Millis, StoreError};

/// What this instance knows of its alarm: nothing yet, none, or set for a time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Alarm {
    Unknown,
    None,
    At(Millis),
}

/// The Durable Object that holds one key's claim record.
///
/// Its own clock is the authority for leases. Each request runs one rule from [`crate::claim`]
/// synchronously over SQLite (no other I/O between read and write), so concurrent requests for
/// the key are served one after the other. Its alarm deletes the record when retention ends.
#[durable_object]
pub struct ClaimAuthority {
    state: State,
    alarm: Cell<Alarm>,
    usage: Cell<Usage>,
    log_usage: bool,
}

impl ClaimAuthority {
    /// Runs `rule` over the object's store, and keeps its row counts for the usage log.
    fn with_store<T>(
        &self,
        rule: impl FnOnce(&mut KvClaimStore) -> T,
    ) -> std::result::Result<T, StoreError> {
        let mut store = KvClaimStore::open(&self.state.storage())?;
        let result = rule(&mut store);
        self.usage.set(store.usage());
        Ok(result)
    }

    /// Makes sure an alarm is set after a write whose record expires at `wake_by`; true when it
    /// had to set one.
    ///
    /// A known alarm is left as it is, whatever its time: one later than the record's expiry
    /// deletes it a little late (a record past its expiry already counts as absent), and one
    /// earlier finds it unexpired and re-arms itself once. Either way no second `setAlarm`, a
    /// billed row write, on the delivery's path. Unknown (a new instance): set it rather than
    /// read it first, so the write and the alarm go out with no await between them.
    async fn ensure_alarm(&self, known: Alarm, wake_by: Millis) -> bool {
        if let Alarm::At(_) = known {
            return false;
        }
        if let Err(error) = self.set_alarm_at(wake_by).await {
            // The write stands and the answer goes out; the next write of this key sets it.
            self.alarm.set(Alarm::Unknown);
            log::alarm_failed(&error.to_string());
            return false;
        }
        true
    }

    /// Sets the alarm for the absolute time `at` (an `i64` would be read as an offset).
    async fn set_alarm_at(&self, at: Millis) -> Result<()> {
        self.alarm.set(Alarm::At(at));
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(at as f64));
        self.state
            .storage()
            .set_alarm(ScheduledTime::new(date))
            .await
    }
}

impl DurableObject for ClaimAuthority {
    fn new(state: State, env: Env) -> Self {
        let log_usage = env
            .var("LOG_STORAGE_USAGE")
            .is_ok_and(|v| v.to_string() == "true");
        ClaimAuthority {
            state,
            alarm: Cell::new(Alarm::Unknown),
            usage: Cell::new(Usage::default()),
            log_usage,
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let request: AuthorityRequest = match req.json().await {
            Ok(request) => request,
            Err(error) => {
                return Response::error(format!("not an authority request: {error}"), 400)
            }
        };
        let known = self.alarm.get();
        let now = Date::now().as_millis();
        let (reply, wake_by) = self
            .with_store(|store| authority::handle(store, &request, now))
            .unwrap_or_else(|error| (AuthorityReply::from(error), None));
        let alarms_set = match wake_by {
            Some(wake_by) => self.ensure_alarm(known, wake_by).await,
            None => false,
        };
        if self.log_usage {
            let usage = self.usage.get();
            log::usage(
                request.key(),
                request.op(),
                usage.rows_read,
                // Each setAlarm is billed as a row written.
                usage.rows_written + u64::from(alarms_set),
            );
        }
        Response::from_json(&reply)
    }

    async fn alarm(&self) -> Result<Response> {
        let now = Date::now().as_millis();
        let sweep = match self
            .with_store(|store| claim::expire(store, now))
            .and_then(|swept| swept)
        {
            Ok(sweep) => sweep,
            Err(error) => {
                // Throwing makes the runtime retry the alarm with back-off.
                return Err(worker::Error::RustError(error.to_string()));
            }
        };
        for expired in &sweep.expired {
            let abandoned = expired.state == ClaimState::Processing;
            log::expired(&expired.key, expired.state, abandoned);
        }
        match sweep.next_expiry {
            Some(at) => self.set_alarm_at(at).await?,
            None => {
                // Nothing left: delete the object's whole storage (metadata and alarm too),
                // so an expired key costs no storage at all.
                self.state.storage().delete_all().await?;
                self.alarm.set(Alarm::None);
            }
        }
        Response::empty()
    }
}
