//! Queue mode: one attempt to deliver a stored event, run from the object's alarm (which needs
//! no connected caller and may run for minutes). The rules are in [`crate::claim`] and
//! [`crate::authority::queue`]; this forwards and logs.

use std::rc::Rc;

use js_sys::Uint8Array;
use wasm_bindgen::JsValue;

use super::clock;
use super::env_config;
use super::forward::{self, Exchange, Outgoing};
use super::keeper::Keeper;
use super::log;
use super::metrics;
use crate::authority::queue::{self, AttemptEnd};
use crate::authority::Door;
use crate::claim::{AttemptOutcome, ClaimStore, Nonce};
use crate::config::Config;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::origin::{OriginOutcome, Verdict};
use crate::providers::{self, Provider};

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
    let policy = config.webhook.claims;
    let started = keeper
        .with_store(key, "attempt", |store| {
            queue::start(store, key, now, policy, config.queue.retry, nonce)
        })
        .await
        .and_then(|started| started);
    let (fence, attempt, takeover, lease_expires_at) = match started {
        Ok(AttemptOutcome::Start {
            fence,
            attempt,
            takeover,
            lease_expires_at,
        }) => (fence, attempt, takeover, lease_expires_at),
        Ok(AttemptOutcome::Dead { reason }) => {
            // No attempt left when one came due: dead-lettered without a forward.
            let line = LogLine {
                level: Level::Error,
                provider: Some(Provider::of_key(key).0),
                key: Some(key.to_owned()),
                outcome: Outcome::DeadLettered,
                detail: Some(reason),
                ..LogLine::new(Route::Webhook)
            };
            log::write(&line);
            metrics::count(keeper.env(), &line);
            return;
        }
        _ => return,
    };
    let sent = clock::now_ms();
    let outcome = forward_stored(keeper, &config, key, attempt, takeover).await;
    let origin_ms = clock::now_ms().saturating_sub(sent);
    let verdict = match outcome {
        OriginOutcome::TimedOut => Verdict::Pending,
        ref outcome => Verdict::of(outcome, crate::origin::is_success),
    };
    let now = clock::now_ms();
    let jitter = random_fraction();
    // Fenced, so a settle refused by a busy store is tried again while the lease lasts (an
    // attempt left unsettled would be taken over, and its handler run again).
    let end = keeper
        .with_store_retrying(key, "settle", lease_expires_at, |store, now| {
            queue::settle_attempt(
                store,
                key,
                &fence,
                now,
                verdict,
                policy,
                config.queue.retry,
                jitter,
            )
        })
        .await;
    let mut line = LogLine {
        provider: Some(Provider::of_key(key).0),
        key: Some(key.to_owned()),
        attempt: Some(attempt),
        takeover: Some(takeover),
        origin_ms: Some(origin_ms),
        origin_status: match outcome {
            OriginOutcome::Answered { status } => Some(status),
            _ => None,
        },
        ..LogLine::new(Route::Webhook)
    };
    if let Verdict::Failed(reason) | Verdict::Unknown(reason) = verdict {
        line.detail = Some(reason.to_string());
    }
    match end {
        Ok(AttemptEnd::Delivered) => line.outcome = Outcome::Delivered,
        Ok(AttemptEnd::RetryAt(at)) => {
            line.outcome = Outcome::RetryScheduled;
            line.raise(Level::Warn);
            line.detail = Some(format!(
                "{}; next attempt in {} s",
                line.detail.as_deref().unwrap_or("time-out"),
                at.saturating_sub(now).div_ceil(1_000)
            ));
        }
        Ok(AttemptEnd::DeadLettered) => {
            line.outcome = Outcome::DeadLettered;
            line.raise(Level::Error);
        }
        Ok(AttemptEnd::FenceConflict) => {
            line.outcome = Outcome::Code("fence_conflict");
            line.raise(Level::Warn);
        }
        Err(error) => {
            line.outcome = Outcome::Code("settle_failed");
            line.raise(Level::Error);
            line.detail = Some(error.to_string());
        }
    }
    log::write(&line);
    metrics::count(keeper.env(), &line);
}

/// Forwards the stored event of `key` to its provider's origin with the attempt headers and,
/// where the sender's signature carries a time (Stripe, Standard Webhooks), a fresh one
/// (signed now with the first configured secret over the exact stored bytes), and waits at
/// most the queue's forward time-out. A provider whose secret has since been removed cannot
/// be delivered (`NotSent`: the attempt fails and is retried).
async fn forward_stored(
    keeper: &Rc<Keeper>,
    config: &Config,
    key: &str,
    attempt: u32,
    takeover: bool,
) -> OriginOutcome {
    let stored = keeper
        .with_store(key, "payload", |store| (store.load_payload(key), None))
        .await
        .and_then(|loaded| loaded);
    let Ok(Some(stored)) = stored else {
        return OriginOutcome::NotSent;
    };
    let Ok((mut headers, body)) = queue::read_payload(&stored) else {
        return OriginOutcome::NotSent;
    };
    let (provider, id) = Provider::of_key(key);
    let Some((keys, origin_url)) = config.sender(provider) else {
        return OriginOutcome::NotSent;
    };
    let Some(first_key) = keys.first() else {
        return OriginOutcome::NotSent;
    };
    let now_seconds = (clock::now_ms() / 1_000) as i64;
    providers::refresh_signature(provider, id, &mut headers, first_key, now_seconds, body);
    headers.extend(Door::Webhook.attempt_headers(key, attempt, takeover));
    let body = JsValue::from(Uint8Array::from(body));
    let url = origin_url.to_string();
    let exchange = match Exchange::start(&Outgoing {
        url: &url,
        method: "POST",
        headers: &headers,
        body: Some(&body),
    }) {
        Ok(exchange) => exchange,
        Err(outcome) => return outcome,
    };
    match forward::within(exchange, config.queue.forward_timeout_ms).await {
        Ok(result) => {
            if let Ok(response) = &result {
                forward::discard_body(response);
            }
            forward::outcome(&result)
        }
        Err(exchange) => {
            exchange.abort();
            OriginOutcome::TimedOut
        }
    }
}

/// A fraction in `[0, 1)` from the platform's secure random source (for back-off jitter).
fn random_fraction() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}
