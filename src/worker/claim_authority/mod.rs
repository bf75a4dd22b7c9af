//! The claim authority: one Durable Object per key, the single writer of that key's record.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;
use worker::{Env, State};

pub mod client;
mod delivery;
mod drive;
mod io;
mod wire;

use crate::claim_authority::AuthorityRequest;
use crate::worker::object::ObjectRuntime;
use io::RuntimeExecutor;

/// The Rust core of the Durable Object that holds one key's claim record. The object itself is
/// the `ClaimAuthority` class of `src/entry.mjs`, a `DurableObject` that hands each RPC `call`
/// and each alarm to this core.
///
/// Its own clock is the authority for leases. Each rule from [`crate::claim`] runs synchronously
/// over SQLite (no other I/O between read and write), so concurrent requests for the key are
/// served one after the other. A delivery is forwarded from here (see [`delivery`]); its alarm
/// deletes the record when retention ends. What it does is [`crate::claim_authority::object`]'s.
#[wasm_bindgen(js_name = ClaimAuthorityCore)]
pub struct ClaimAuthority {
    state: State,
    executor: Rc<RuntimeExecutor>,
}

#[wasm_bindgen(js_class = ClaimAuthorityCore, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl ClaimAuthority {
    /// The object for `state` (its storage) and `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(state: worker::worker_sys::DurableObjectState, env: Env) -> ClaimAuthority {
        let state = State::from(state);
        let storage = state.storage();
        let executor = Rc::new(RuntimeExecutor::new(ObjectRuntime { storage, env }));
        ClaimAuthority { state, executor }
    }

    /// One request frame from the worker (see [`authority_wire`]), answered with its reply: the
    /// reply's JSON as a string, or a response carrying the origin's answer. A frame it cannot
    /// read is answered with a retryable store failure; the Rust code rejects only when the
    /// response carrying an origin's answer cannot be made (the glue itself throws after a trap).
    pub async fn call(&self, frame: Uint8Array) -> std::result::Result<JsValue, JsValue> {
        let (request, body) = match wire::read_request(&frame) {
            Ok(read) => read,
            Err(error) => return Ok(wire::unreadable(&error)),
        };
        match request {
            AuthorityRequest::Deliver(deliver) => {
                let answer = delivery::run(&self.state, &self.executor, deliver, body).await;
                answer.map_err(JsValue::from)
            }
            AuthorityRequest::Trap { panic: true, .. } => {
                panic!("a panic asked for by the test routes")
            }
            AuthorityRequest::Trap { panic: false, .. } => core::arch::wasm32::unreachable(),
            request => {
                let reply = self.executor.serve(&request, &body.to_vec()).await;
                Ok(wire::reply(&reply))
            }
        }
    }

    /// The answer to a `fetch`, which is how workers of the release before RPC reached the
    /// object: met during a deploy, such a worker is told to come back (see
    /// [`wire::previous_release_answer`]); nothing is claimed.
    #[wasm_bindgen(js_name = answerFetch)]
    pub fn answer_fetch(&self) -> std::result::Result<JsValue, JsValue> {
        wire::previous_release_answer().map_err(JsValue::from)
    }

    /// The retention and queue alarm (see [`crate::claim_authority::object::Executor::alarm`]); rejects only when
    /// even the alarm that should run it again cannot be set.
    #[wasm_bindgen(js_name = alarm)]
    pub async fn run_alarm(&self) -> std::result::Result<JsValue, JsValue> {
        let ran = self.executor.alarm().await;
        ran.map(|()| JsValue::UNDEFINED)
            .map_err(|error| js_sys::Error::new(&error).into())
    }
}
