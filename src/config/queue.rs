//! Queue mode's settings: which mode deliveries use, and how queued events are retried.

use super::keys::{
    DELIVERY_MODE, GITHUB_DELIVERY_MODE, LEASE_SECONDS, MAX_BODY_BYTES, QUEUE_FORWARD_TIMEOUT_MS,
    RETRY_BASE_SECONDS, RETRY_CLIENT_ERRORS, RETRY_MAX_AGE_HOURS, RETRY_MAX_ATTEMPTS,
    RETRY_MAX_DELAY_SECONDS, SHOPIFY_DELIVERY_MODE, STANDARD_DELIVERY_MODE, STRIPE_DELIVERY_MODE,
};
use super::reader::Reader;
use super::{settle_margin_ms, DeliveryConfig};
use crate::claim::{ClaimPolicy, RetryPolicy};
use crate::providers::Provider;
use crate::reverts::{reverted, Fix};

/// Default first back-off of a failed queued delivery.
pub const DEFAULT_RETRY_BASE_SECONDS: u64 = 30;
/// Default longest back-off.
pub const DEFAULT_RETRY_MAX_DELAY_SECONDS: u64 = 3_600;
/// Default attempts in one budget: with the default back-off (30 s doubling to an hour, at most
/// a quarter off for jitter) 120 attempts take longer than the default age limit, so delivery
/// is tried for the whole 72 hours, as long as Stripe itself retries.
pub const DEFAULT_RETRY_MAX_ATTEMPTS: u64 = 120;
/// Default age after which no attempt starts: Stripe's own 3 days of retries.
pub const DEFAULT_RETRY_MAX_AGE_HOURS: f64 = 72.0;
/// Default time-out of one queued attempt.
pub const DEFAULT_QUEUE_FORWARD_TIMEOUT_MS: u64 = 60_000;
/// Longest time-out of one queued attempt: well inside the 15 minutes an alarm may run.
pub const MAX_QUEUE_FORWARD_TIMEOUT_MS: u64 = 300_000;
/// Largest body queue mode stores: one stored value (key and value) holds at most 2 MB in a
/// SQLite-backed object, and the stored delivery also holds its headers.
pub const QUEUE_MAX_BODY_BYTES: u64 = 1_900_000;

/// How deliveries are made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeliveryMode {
    /// Forwarded while the sender waits; its answer follows the origin's.
    #[default]
    Sync,
    /// Stored, acknowledged at once, delivered by the event's object with retries.
    Queue,
}

/// The key choosing `provider`'s delivery mode over `DELIVERY_MODE`.
pub fn mode_key(provider: Provider) -> &'static str {
    match provider {
        Provider::Stripe => STRIPE_DELIVERY_MODE,
        Provider::Standard => STANDARD_DELIVERY_MODE,
        Provider::Github => GITHUB_DELIVERY_MODE,
        Provider::Shopify => SHOPIFY_DELIVERY_MODE,
    }
}

/// Queue mode's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueConfig {
    /// The mode of each provider's deliveries, in [`Provider::ALL`]'s order: its own
    /// `<PROVIDER>_DELIVERY_MODE`, else `DELIVERY_MODE`, else the provider's default.
    modes: [DeliveryMode; 4],
    /// How failed attempts are retried (`RETRY_…`).
    pub retry: RetryPolicy,
    /// How long one attempt waits for the origin (`QUEUE_FORWARD_TIMEOUT_MS`); a later answer
    /// is a failed attempt.
    pub forward_timeout_ms: u64,
}

/// The mode `key` names, `None` when unset (or invalid: the problem is recorded).
fn read_mode<F: Fn(&str) -> Option<String>>(
    r: &mut Reader<F>,
    key: &'static str,
) -> Option<DeliveryMode> {
    match r.raw(key).as_deref() {
        None => None,
        Some("sync") => Some(DeliveryMode::Sync),
        Some("queue") => Some(DeliveryMode::Queue),
        Some(_) => {
            r.problem(key, "not `sync` or `queue`");
            None
        }
    }
}

impl QueueConfig {
    /// The terms a queued attempt runs under: `claims`, with a lease never shorter than this
    /// attempt's time-out plus the settle margin, whatever `LEASE_SECONDS` says now. Events
    /// stored before every sender was switched to sync mode (when the configuration check no
    /// longer compares the two) are still attempted with a lease that outlasts their wait, so
    /// a takeover never starts while an attempt's handler may still be answering.
    pub fn attempt_policy(&self, claims: ClaimPolicy) -> ClaimPolicy {
        if reverted(Fix::AttemptLeaseCoversItsWait) {
            return claims;
        }
        let needed = self.forward_timeout_ms + settle_margin_ms(claims.lease_ms);
        ClaimPolicy {
            lease_ms: claims.lease_ms.max(needed),
            ..claims
        }
    }

    /// The mode `provider`'s deliveries use.
    pub fn mode(&self, provider: Provider) -> DeliveryMode {
        let index = Provider::ALL.iter().position(|p| *p == provider);
        self.modes[index.unwrap_or(0)]
    }

    /// Reads the queue keys. When an `enabled` provider queues, the lease must outlast an
    /// attempt with its settle margin, and the body cap must fit one stored value.
    pub fn load<F: Fn(&str) -> Option<String>>(
        r: &mut Reader<F>,
        delivery: &DeliveryConfig,
        enabled: &[Provider],
    ) -> QueueConfig {
        let fallback = read_mode(r, DELIVERY_MODE);
        let modes = Provider::ALL.map(|provider| {
            read_mode(r, mode_key(provider)).or(fallback).unwrap_or(
                if provider.queues_by_default() {
                    DeliveryMode::Queue
                } else {
                    DeliveryMode::Sync
                },
            )
        });
        let retry = retry_policy(r);
        let forward_timeout_ms = r.integer(
            QUEUE_FORWARD_TIMEOUT_MS,
            DEFAULT_QUEUE_FORWARD_TIMEOUT_MS,
            1,
            MAX_QUEUE_FORWARD_TIMEOUT_MS,
        );
        let queued: Vec<&str> = Provider::ALL
            .iter()
            .zip(modes)
            .filter(|(p, mode)| enabled.contains(p) && *mode == DeliveryMode::Queue)
            .map(|(p, _)| p.name())
            .collect();
        if !queued.is_empty() {
            check_queue_fits(r, delivery, forward_timeout_ms, &queued.join(", "));
        }
        QueueConfig {
            modes,
            retry,
            forward_timeout_ms,
        }
    }
}

/// The `RETRY_…` keys: the back-off (its cap at least its start), the attempts, the age limit,
/// and whether a refusal (a 4xx) is retried.
fn retry_policy<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> RetryPolicy {
    let base_ms = r.integer(RETRY_BASE_SECONDS, DEFAULT_RETRY_BASE_SECONDS, 1, 86_400) * 1_000;
    let max_delay_ms = r.integer(
        RETRY_MAX_DELAY_SECONDS,
        DEFAULT_RETRY_MAX_DELAY_SECONDS,
        1,
        7 * 86_400,
    ) * 1_000;
    if max_delay_ms < base_ms {
        r.problem(
            RETRY_MAX_DELAY_SECONDS,
            format!("must be at least {RETRY_BASE_SECONDS}"),
        );
    }
    let max_attempts = r.integer(RETRY_MAX_ATTEMPTS, DEFAULT_RETRY_MAX_ATTEMPTS, 1, 10_000) as u32;
    let max_age_hours = r.hours(RETRY_MAX_AGE_HOURS, DEFAULT_RETRY_MAX_AGE_HOURS);
    RetryPolicy {
        base_ms,
        max_delay_ms,
        max_attempts,
        max_age_ms: super::hours_to_ms(max_age_hours),
        retry_client_errors: r.flag(RETRY_CLIENT_ERRORS),
    }
}

/// With queue mode used by `who`: the lease must outlast an attempt with its settle margin,
/// and the body cap must fit one stored value.
fn check_queue_fits<F: Fn(&str) -> Option<String>>(
    r: &mut Reader<F>,
    delivery: &DeliveryConfig,
    forward_timeout_ms: u64,
    who: &str,
) {
    let margin_ms = settle_margin_ms(delivery.lease_ms);
    if forward_timeout_ms + margin_ms > delivery.lease_ms {
        r.problem(
            QUEUE_FORWARD_TIMEOUT_MS,
            format!(
                "plus a settle margin ({margin_ms} ms) must fit in {LEASE_SECONDS} \
                 ({} ms), as queue mode is used by {who}",
                delivery.lease_ms
            ),
        );
    }
    if delivery.max_body_bytes > QUEUE_MAX_BODY_BYTES {
        r.problem(
            MAX_BODY_BYTES,
            format!(
                "queue mode (used by {who}) stores each event in one value of at \
                 most about 2 MB: at most {QUEUE_MAX_BODY_BYTES} bytes, or set \
                 those providers' <PROVIDER>_DELIVERY_MODE=sync"
            ),
        );
    }
}
