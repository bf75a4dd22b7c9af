//! The claim authority: one Durable Object per key, the single writer of that key's record.

use std::cell::Cell;
use std::rc::Rc;

use worker::{
    durable_object, Date, DurableObject, Env, Request, Response, Result, ScheduledTime, State,
    Storage,
};

use super::authority_wire;
use super::delivery;
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
/// Its own clock is the authority for leases. Each rule from [`crate::claim`] runs synchronously
/// over SQLite (no other I/O between read and write), so concurrent requests for the key are
/// served one after the other. A delivery is forwarded from here (see [`delivery`]); its alarm
/// deletes the record when retention ends.
#[durable_object]
pub struct ClaimAuthority {
    state: State,
    keeper: Rc<Keeper>,
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
    /// Runs `rule` over the object's store. With `LOG_STORAGE_USAGE=true`, logs the rows it
    /// read and wrote for `key` and `op` (each alarm set counted as a row written).
    pub async fn with_store<T>(
        &self,
        key: &str,
        op: &'static str,
        rule: impl FnOnce(&mut KvClaimStore) -> (T, Option<Millis>),
    ) -> std::result::Result<T, StoreError> {
        let mut store = KvClaimStore::open(&self.storage)?;
        let (result, wake_by) = rule(&mut store);
        let usage: Usage = store.usage();
        let alarms_set = match wake_by {
            Some(at) => self.ensure_alarm(at).await,
            None => false,
        };
        if self.log_usage {
            log::usage(
                key,
                op,
                usage.rows_read,
                usage.rows_written + u64::from(alarms_set),
            );
        }
        Ok(result)
    }

    /// The environment (for the metrics binding).
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Makes sure an alarm is set after a write whose record expires at `wake_by`; true when it
    /// had to set one.
    ///
    /// A known alarm still ahead is left as it is, whatever its time: one later than the
    /// record's expiry deletes it a little late (a record past its expiry already counts as
    /// absent), and one earlier finds it unexpired and re-arms itself once. Either way no second
    /// `setAlarm`, a billed row write, on the delivery's path. Unknown (a new instance), or a
    /// time already past (the alarm may have given up): set it, with no await between the
    /// write and the alarm.
    async fn ensure_alarm(&self, wake_by: Millis) -> bool {
        if let Alarm::At(at) = self.alarm.get() {
            if at > Date::now().as_millis() {
                return false;
            }
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
        self.storage.set_alarm(ScheduledTime::new(date)).await
    }
}

impl DurableObject for ClaimAuthority {
    fn new(state: State, env: Env) -> Self {
        let log_usage = env
            .var("LOG_STORAGE_USAGE")
            .is_ok_and(|v| v.to_string() == "true");
        let keeper = Rc::new(Keeper {
            storage: state.storage(),
            env,
            alarm: Cell::new(Alarm::Unknown),
            log_usage,
        });
        ClaimAuthority { state, keeper }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let (request, body) = match authority_wire::read_request(req).await {
            Ok(read) => read,
            Err(error) => return Response::error(error, 400),
        };
        if let AuthorityRequest::Deliver(deliver) = request {
            return delivery::run(&self.state, &self.keeper, deliver, body).await;
        }
        let now = Date::now().as_millis();
        let reply = self
            .keeper
            .with_store(request.key(), request.op(), |store| {
                authority::handle(store, &request, now)
            })
            .await
            .unwrap_or_else(AuthorityReply::from);
        authority_wire::reply(&reply)
    }

    async fn alarm(&self) -> Result<Response> {
        let now = Date::now().as_millis();
        let sweep = KvClaimStore::open(&self.keeper.storage)
            .and_then(|mut store| claim::expire(&mut store, now));
        let sweep = match sweep {
            Ok(sweep) => sweep,
            // Throwing makes the runtime retry the alarm with back-off.
            Err(error) => return Err(worker::Error::RustError(error.to_string())),
        };
        for expired in &sweep.expired {
            let abandoned = expired.state == ClaimState::Processing;
            log::expired(&expired.key, expired.state, abandoned);
        }
        match sweep.next_expiry {
            Some(at) => self.keeper.set_alarm_at(at).await?,
            None => {
                // Nothing left: delete the object's whole storage (metadata and alarm too),
                // so an expired key costs no storage at all.
                self.keeper.storage.delete_all().await?;
                self.keeper.alarm.set(Alarm::None);
            }
        }
        Response::empty()
    }
}
