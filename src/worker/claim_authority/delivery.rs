//! A delivery forwarded while its sender waits, run inside its key's claim authority: claim,
//! then the forward's life (see [`crate::claim_authority::attempt`]) as background work of the
//! object, the caller answered by the forward time-out at the latest.
//!
//! The forward runs as background work of the object (`ctx.waitUntil`), which, from
//! compatibility date 2026-10-01, keeps the object running while the forward is pending even
//! after the caller has its answer or has gone.

use std::rc::Rc;

use futures_channel::oneshot;
use js_sys::Uint8Array;
use wasm_bindgen::JsValue;
use worker::{Result, State};

use super::drive;
use super::io::RuntimeExecutor;
use super::wire;
use crate::claim::StoreError;
use crate::claim_authority::{Attempt, Deliver};
use crate::worker::forward::Exchange;

/// Runs `deliver` (its raw body beside it) and answers the caller: at once when it is not
/// forwarded, else when the origin answers or the forward time-out passes, whichever is first.
pub async fn run(
    state: &State,
    executor: &Rc<RuntimeExecutor>,
    deliver: Deliver,
    body: Uint8Array,
) -> Result<JsValue> {
    let (won, now) = match executor.begin(&deliver).await {
        Ok(begun) => begun,
        Err(reply) => return Ok(wire::reply(&reply)),
    };
    let body = JsValue::from(body);
    let (forward, headers) = (&deliver.forward, deliver.outgoing_headers(&won));
    let body = deliver.sends_body().then_some(&body);
    let sent = Exchange::start(&forward.method, &forward.url, &headers, body);
    let attempt = Attempt::sync(&deliver, won, now);
    let (early, answered) = oneshot::channel();
    let executor = executor.clone();
    state.wait_until(async move { drive::run(&executor, attempt, sent, Some(early), false).await });
    match answered.await {
        Ok((reply, None)) => Ok(wire::reply(&reply)),
        Ok((reply, Some(stream))) => wire::reply_with_stream(&reply, &stream),
        Err(_) => {
            let ended = StoreError::Retryable("the delivery ended without an answer".into());
            Ok(wire::reply(&ended.into()))
        }
    }
}
