//! Queue mode: one attempt to deliver a stored event, run from the object's alarm (which needs
//! no connected caller and may run for minutes). The rules are in [`crate::claim`] and
//! [`crate::authority::queue`], the attempt's life in [`crate::authority::attempt`]; this
//! loads the stored event and forwards it.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;

use super::clock;
use super::drive;
use super::env_config;
use super::forward::{Exchange, Outgoing};
use super::keeper::Keeper;
use super::log;
use crate::authority::queue::{self, Due};
use crate::authority::{Attempt, Won};
use crate::claim::{ClaimStore, Nonce};
use crate::config::Config;
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;
use crate::providers::Provider;

/// Runs the attempt due for `key`, if one is: claims it under a lease (the alarm is moved to
/// the lease's end first, so an attempt that dies is taken over), forwards the stored event
/// with a fresh signature and waits at most `QUEUE_FORWARD_TIMEOUT_MS`, then settles:
/// delivered, retry scheduled, or dead-lettered.
pub async fn run_due(keeper: &Rc<Keeper>, key: &str) {
    let Ok(config) = env_config::config(keeper.env()) else {
        return; // misconfigured: /healthz says why; the event waits, stored
    };
    let Ok(nonce) = Nonce::random() else {
        return;
    };
    let now = clock::now_ms();
    let policy = config.queue.attempt_policy(config.webhook.claims);
    let retry = config.queue.retry;
    let due = keeper
        .with_store(key, "attempt", |store| {
            queue::start(store, key, now, policy, retry, nonce)
        })
        .await
        .and_then(|due| due);
    let (won, provider) = match due {
        Ok(Due::Attempt(won, provider)) => (won, provider),
        Ok(Due::Dead(reason, provider)) => {
            let line = LogLine::dead_before_attempt(provider, key, reason);
            return log::record(keeper.env(), &line);
        }
        Ok(Due::Nothing) | Err(_) => return,
    };
    let sent = send_stored(keeper, &config, provider, key, &won).await;
    let timeout_ms = config.queue.forward_timeout_ms;
    let jitter = random_fraction();
    let attempt = Attempt::queued(provider, key, won, now, policy, retry, timeout_ms, jitter);
    drive::run(keeper, attempt, sent, None).await;
}

/// Sends the stored event of `provider`'s `key` for the attempt `won` (see
/// [`queue::outgoing`]); `NotSent` when it cannot be.
async fn send_stored(
    keeper: &Keeper,
    config: &Config,
    provider: Provider,
    key: &str,
    won: &Won,
) -> Result<Exchange, OriginOutcome> {
    let stored = keeper
        .with_store(key, "payload", |store| (store.load_payload(key), None))
        .await
        .and_then(|loaded| loaded)
        .ok()
        .flatten();
    let sender = config.sender(provider);
    let secrets = sender.as_ref().map(|(keys, _)| keys.as_slice());
    let now_seconds = (clock::now_ms() / 1_000) as i64;
    let prepared = queue::outgoing(stored.as_deref(), secrets, provider, key, won, now_seconds);
    let (Some((headers, body)), Some((_, url))) = (prepared, &sender) else {
        return Err(OriginOutcome::NotSent);
    };
    let body = JsValue::from(Uint8Array::from(body));
    Exchange::start(&Outgoing {
        url: url.as_str(),
        method: "POST",
        headers: &headers,
        body: Some(&body),
    })
}

/// A fraction in `[0, 1)` from the platform's secure random source (for back-off jitter).
pub fn random_fraction() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}
