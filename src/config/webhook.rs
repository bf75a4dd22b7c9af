//! The Stripe webhook front door's settings.

use super::keys::{
    ALLOW_SHORT_RETENTION, ORIGIN_URL, RETENTION_HOURS, SIGNATURE_TOLERANCE_SECONDS,
    STRIPE_WEBHOOK_SECRET,
};
use super::reader::Reader;
use super::{hours_to_ms, DeliveryConfig};
use crate::claim::ClaimPolicy;
use crate::secret::{secret_list, Secret};

/// Default retention of a record: 30 days, beyond Stripe's 3-day retries and 30-day CLI resends.
pub const DEFAULT_RETENTION_HOURS: f64 = 30.0 * 24.0;
/// Shortest retention accepted without `ALLOW_SHORT_RETENTION=true`: Stripe retries for 3 days.
pub const MIN_SAFE_RETENTION_HOURS: f64 = 72.0;
/// Default tolerance on the age of a `Stripe-Signature` timestamp, as Stripe's libraries use.
pub const DEFAULT_SIGNATURE_TOLERANCE_SECONDS: u64 = 300;

const MAX_TOLERANCE_SECONDS: u64 = 24 * 60 * 60;

/// The Stripe webhook front door's settings.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    /// Secrets a delivery may be signed with (`STRIPE_WEBHOOK_SECRET`, comma-separated).
    pub secrets: Vec<Secret>,
    /// Where verified, claimed events are forwarded (`ORIGIN_URL`).
    pub origin_url: url::Url,
    /// Largest accepted age of a signature timestamp (`SIGNATURE_TOLERANCE_SECONDS`).
    pub signature_tolerance_seconds: u64,
    /// Lease (`LEASE_SECONDS`) and retention (`RETENTION_HOURS`) of event records.
    pub claims: ClaimPolicy,
}

impl WebhookConfig {
    /// Reads the webhook keys; `None` when a required one is missing or invalid (the problem is
    /// recorded).
    pub fn load<F: Fn(&str) -> Option<String>>(
        r: &mut Reader<F>,
        delivery: &DeliveryConfig,
    ) -> Option<WebhookConfig> {
        let retention_ms = retention(r, delivery);
        let signature_tolerance_seconds = tolerance(r);
        // A delivery is accepted from at most `tolerance` before its timestamp (Standard
        // Webhooks; Stripe 60 s, never more than the tolerance) to `tolerance` after it: its
        // record must outlive that window, or a replay inside it would run the event again.
        // Enforced even with ALLOW_SHORT_RETENTION.
        if retention_ms <= signature_tolerance_seconds.saturating_mul(2_000) {
            r.problem(
                RETENTION_HOURS,
                format!(
                    "must be longer than twice {SIGNATURE_TOLERANCE_SECONDS}: a replay of a \
                     delivery whose signature is still accepted would run it again"
                ),
            );
        }
        let secrets = match r.raw(STRIPE_WEBHOOK_SECRET).map(|text| secret_list(&text)) {
            None => {
                r.problem(
                    STRIPE_WEBHOOK_SECRET,
                    "missing: set the endpoint's signing secret (whsec_...) with \
                     `npm run wrangler -- secret put STRIPE_WEBHOOK_SECRET`",
                );
                None
            }
            Some(None) => {
                r.problem(
                    STRIPE_WEBHOOK_SECRET,
                    "an empty secret in the comma-separated list",
                );
                None
            }
            Some(secrets) => secrets,
        };
        let origin_url = match r.raw(ORIGIN_URL) {
            None => {
                r.problem(
                    ORIGIN_URL,
                    "missing: set ORIGIN_URL to your webhook handler's URL (wrangler.toml \
                     [vars], or .dev.vars locally); events are forwarded there",
                );
                None
            }
            Some(_) => r.url(ORIGIN_URL),
        };
        Some(WebhookConfig {
            secrets: secrets?,
            origin_url: origin_url?,
            signature_tolerance_seconds,
            claims: delivery.claims(retention_ms),
        })
    }
}

/// `RETENTION_HOURS` in milliseconds: at least Stripe's 3 days unless `ALLOW_SHORT_RETENTION`,
/// and always longer than the lease.
fn retention<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>, delivery: &DeliveryConfig) -> u64 {
    let allow_short = r.flag(ALLOW_SHORT_RETENTION);
    let retention_hours = r.hours(RETENTION_HOURS, DEFAULT_RETENTION_HOURS);
    if retention_hours < MIN_SAFE_RETENTION_HOURS && !allow_short {
        r.problem(
            RETENTION_HOURS,
            format!(
                "shorter than Stripe's 3-day retries, so a late retry could run an event \
                 twice; set {ALLOW_SHORT_RETENTION}=true to force it"
            ),
        );
    }
    let retention_ms = hours_to_ms(retention_hours);
    if retention_ms <= delivery.lease_ms {
        r.problem(
            RETENTION_HOURS,
            "must be longer than the lease (LEASE_SECONDS)",
        );
    }
    retention_ms
}

/// `SIGNATURE_TOLERANCE_SECONDS`: positive (0 would turn the replay check off).
fn tolerance<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> u64 {
    if r.raw(SIGNATURE_TOLERANCE_SECONDS).as_deref() == Some("0") {
        r.problem(
            SIGNATURE_TOLERANCE_SECONDS,
            "0 would turn off the replay check; use a positive number of seconds",
        );
        return DEFAULT_SIGNATURE_TOLERANCE_SECONDS;
    }
    r.integer(
        SIGNATURE_TOLERANCE_SECONDS,
        DEFAULT_SIGNATURE_TOLERANCE_SECONDS,
        1,
        MAX_TOLERANCE_SECONDS,
    )
}
