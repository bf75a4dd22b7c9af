//! The claim authority: one Durable Object per key, the single writer of that key's record.

use std::cell::Cell;

use worker::{
    durable_object, Date, DurableObject, Env, Request, Response, Result, ScheduledTime, State,
};

use super::log;
use super::sql_store::SqlClaimStore;
use crate::authority::{self, AuthorityReply, AuthorityRequest};
use crate::claim::{self, ClaimState, Millis, StoreError};

/// What the object knows of its alarm: not yet read, none, or set for a time.
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
    has_table: Cell<Option<bool>>,
}

impl ClaimAuthority {
    /// Runs `rule` over the object's store, remembering whether its table exists.
    fn with_store<T>(
        &self,
        rule: impl FnOnce(&mut SqlClaimStore) -> T,
    ) -> std::result::Result<T, StoreError> {
        let mut store = SqlClaimStore::open(self.state.storage().sql(), self.has_table.get())?;
        let result = rule(&mut store);
        self.has_table.set(Some(store.has_table()));
        Ok(result)
    }

    /// Reads the alarm once per instance, before any write, so that the write and the alarm it
    /// needs are issued together with no `await` between them.
    async fn known_alarm(&self) -> Result<Alarm> {
        if self.alarm.get() == Alarm::Unknown {
            let at = self.state.storage().get_alarm().await?;
            self.alarm
                .set(at.map_or(Alarm::None, |ms| Alarm::At(ms.max(0) as u64)));
        }
        Ok(self.alarm.get())
    }

    async fn ensure_alarm_by(&self, known: Alarm, wake_by: Millis) -> Result<()> {
        let needed = match known {
            Alarm::At(at) => at > wake_by,
            Alarm::None | Alarm::Unknown => true,
        };
        if needed {
            self.set_alarm_at(wake_by).await?;
        }
        Ok(())
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
    fn new(state: State, _env: Env) -> Self {
        ClaimAuthority {
            state,
            alarm: Cell::new(Alarm::Unknown),
            has_table: Cell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let request: AuthorityRequest = match req.json().await {
            Ok(request) => request,
            Err(error) => {
                return Response::error(format!("not an authority request: {error}"), 400)
            }
        };
        let known = self.known_alarm().await?;
        let now = Date::now().as_millis();
        let (reply, wake_by) = self
            .with_store(|store| authority::handle(store, &request, now))
            .unwrap_or_else(|error| (AuthorityReply::from(error), None));
        if let Some(wake_by) = wake_by {
            self.ensure_alarm_by(known, wake_by).await?;
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
                // Nothing left: delete the object's whole storage (its tables and metadata,
                // and the alarm), so an expired key costs no storage at all.
                self.state.storage().delete_all().await?;
                self.alarm.set(Alarm::None);
                self.has_table.set(Some(false));
            }
        }
        Response::empty()
    }
}
