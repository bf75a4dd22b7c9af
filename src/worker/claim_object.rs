//! The claim authority: one Durable Object per key, the single writer of that key's record.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;
use worker::{Env, Result, State};

use super::authority_wire;
use super::clock;
use super::delivery;
use super::keeper::Keeper;
use super::kv_store;
use super::log;
use super::queue;
use super::report;
use crate::authority::alarm::Rearm;
use crate::authority::{self, alarm, AuthorityReply, AuthorityRequest};
use crate::claim::{self, ClaimStore, Millis, Nonce, StoreError};
use crate::log_line::LogLine;

/// The Rust core of the Durable Object that holds one key's claim record. The object itself is
/// the `ClaimAuthority` class of `src/entry.mjs`, a `DurableObject` that hands each RPC `call`
/// and each alarm to this core.
///
/// Its own clock is the authority for leases. Each rule from [`crate::claim`] runs synchronously
/// over SQLite (no other I/O between read and write), so concurrent requests for the key are
/// served one after the other. A delivery is forwarded from here (see [`delivery`]); its alarm
/// deletes the record when retention ends.
#[wasm_bindgen(js_name = ClaimAuthorityCore)]
pub struct ClaimAuthority {
    state: State,
    keeper: Rc<Keeper>,
}

#[wasm_bindgen(js_class = ClaimAuthorityCore, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl ClaimAuthority {
    /// The object for `state` (its storage) and `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(state: worker::worker_sys::DurableObjectState, env: Env) -> ClaimAuthority {
        let state = State::from(state);
        let keeper = Rc::new(Keeper::new(state.storage(), env));
        ClaimAuthority { state, keeper }
    }

    /// One request frame from the worker (see [`authority_wire`]), answered with its reply: the
    /// reply's JSON as a string, or a response carrying the origin's answer. A frame it cannot
    /// read is answered with a retryable store failure; the Rust code rejects only when the
    /// response carrying an origin's answer cannot be made (the glue itself throws after a trap).
    pub async fn call(&self, frame: Uint8Array) -> std::result::Result<JsValue, JsValue> {
        self.serve(frame).await.map_err(JsValue::from)
    }

    /// The answer to a `fetch`, which is how workers of the release before RPC reached the
    /// object: met during a deploy, such a worker is told to come back (see
    /// [`authority_wire::previous_release_answer`]); nothing is claimed.
    #[wasm_bindgen(js_name = answerFetch)]
    pub fn answer_fetch(&self) -> std::result::Result<JsValue, JsValue> {
        authority_wire::previous_release_answer().map_err(JsValue::from)
    }

    /// The retention and queue alarm (see `alarm` below); rejects only when even the alarm that
    /// should run it again cannot be set.
    #[wasm_bindgen(js_name = alarm)]
    pub async fn run_alarm(&self) -> std::result::Result<JsValue, JsValue> {
        self.alarm()
            .await
            .map(|_| JsValue::UNDEFINED)
            .map_err(JsValue::from)
    }
}

impl ClaimAuthority {
    async fn serve(&self, frame: Uint8Array) -> Result<JsValue> {
        let (request, body) = match authority_wire::read_request(&frame) {
            Ok(read) => read,
            Err(error) => return Ok(authority_wire::unreadable(&error)),
        };
        match request {
            AuthorityRequest::Deliver(deliver) => {
                return delivery::run(&self.state, &self.keeper, deliver, body).await
            }
            AuthorityRequest::Trap { panic: true, .. } => {
                panic!("a panic asked for by the test routes")
            }
            AuthorityRequest::Trap { panic: false, .. } => core::arch::wasm32::unreachable(),
            _ => {}
        }
        let now = clock::now_ms();
        let body = body.to_vec();
        let salt = match Nonce::random() {
            Ok(salt) => salt,
            Err(error) => return Ok(authority_wire::reply(&AuthorityReply::from(error))),
        };
        // Strict about the alarm: an event stored (or redelivered) for the alarm to deliver is
        // not acknowledged unless the alarm is set; the sender's retry sets it.
        let reply = match self
            .keeper
            .with_store_step(request.key(), request.op(), |store| {
                authority::handle(store, &request, &body, now, salt)
            })
            .await
        {
            Ok((reply, step)) => alarm::reply_after(reply, step),
            Err(error) => AuthorityReply::from(error),
        };
        Ok(authority_wire::reply(&reply))
    }

    /// Sweeps expired records, runs due queue attempts and re-arms (see [`alarm::rearm`]).
    /// When that fails (storage trouble, an unreadable record), the alarm makes sure it fires
    /// again by when the work needs it, within a minute at the latest (an earlier alarm already
    /// set, say for a retry this run scheduled, is kept), instead of throwing: the runtime
    /// retries a throwing alarm only a few times, about two minutes in all, and then drops it,
    /// which would leave an acknowledged queue event waiting for ever. Only if even that alarm
    /// cannot be set does it throw, for the runtime's own retries.
    async fn alarm(&self) -> Result<()> {
        let ran_at = clock::now_ms();
        let (wanted, error) = match self.sweep_and_run(ran_at).await {
            Ok(Rearm::DeleteAll) => {
                // Nothing left: delete the object's whole storage (metadata and alarm too), so
                // an expired key costs no storage at all.
                self.keeper.storage().delete_all().await?;
                self.keeper.forget_alarm();
                return Ok(());
            }
            Ok(Rearm::At(at)) => match self.keeper.set_alarm_at(at).await {
                Ok(()) => return Ok(()),
                Err(error) => (Some(at), error.to_string()),
            },
            Err(error) => (None, error.to_string()),
        };
        let retry_at = alarm::retry_after_failed_rearm(wanted, clock::now_ms());
        match self.keeper.set_alarm_by(retry_at).await {
            Ok(at) => {
                log::write(&LogLine::alarm_failed(&format!(
                    "{error}; the alarm runs again at {at}"
                )));
                Ok(())
            }
            Err(set_error) => {
                log::write(&LogLine::alarm_failed(&format!(
                    "{error}; setting the next alarm failed too ({set_error}): the runtime retries"
                )));
                Err(set_error)
            }
        }
    }

    /// Deletes what expired, runs the due attempts, and says how to re-arm.
    async fn sweep_and_run(&self, ran_at: Millis) -> std::result::Result<Rearm, StoreError> {
        let (sweep, keys) = kv_store::open(self.keeper.storage()).and_then(|mut store| {
            let sweep = claim::expire(&mut store, ran_at)?;
            Ok((sweep, store.keys()?))
        })?;
        for expired in &sweep.expired {
            log::write(&LogLine::expired(&expired.key, expired.state));
        }
        // Queue mode: deliver what is due (at most one record per object, in practice).
        for key in &keys {
            queue::run_due(&self.keeper, key).await;
        }
        let mut store = kv_store::open(self.keeper.storage())?;
        let (rearm, reports) = alarm::rearm_and_reports(&mut store, ran_at, clock::now_ms())?;
        if reports.is_empty() {
            return Ok(rearm);
        }
        // Changes the failure index has not acknowledged (after a dead letter, a redelivery or
        // a recovery only: a healthy delivery never gets here).
        for key in &reports {
            report::send_due(&self.keeper, key).await;
        }
        let mut store = kv_store::open(self.keeper.storage())?;
        alarm::rearm(&mut store, ran_at, clock::now_ms())
    }
}
