//! The worker's configuration: every key, its default and its check, in sections (delivery,
//! webhook, Idempotency-Key API, admin), each a small struct with its own loader. An invalid
//! configuration is reported whole: every problem, each naming its key, never its value.

use std::fmt;

mod admin;
mod alerts;
mod api;
mod delivery;
mod gate;
mod queue;
mod reader;
mod reconcile;
mod senders;
mod webhook;

pub use admin::{admin_token, AdminConfig, MIN_ADMIN_TOKEN_LEN};
pub use alerts::{
    is_https_or_loopback, AlertConfig, ALERT_SECRET_BYTES,
    DEFAULT_ALERT_DEAD_LETTER_INTERVAL_SECONDS, DEFAULT_ALERT_DEAD_LETTER_LIMIT,
    DEFAULT_ALERT_MIN_INTERVAL_SECONDS,
};
pub use api::ApiConfig;
pub use delivery::{settle_margin_ms, DeliveryConfig};
pub use gate::GateConfig;
pub use queue::{DeliveryMode, QueueConfig, QUEUE_MAX_BODY_BYTES};
pub use reconcile::{GithubApi, ReconcileConfig, StripeApi};
pub use senders::{origin_key, secret_key, SenderConfig};
pub use webhook::WebhookConfig;

use reader::Reader;

use crate::providers::Provider;
use crate::secret::{HmacKey, Secret};

/// The name of every configuration key (a wrangler var or secret).
pub mod keys {
    /// How long a claim is honoured (seconds).
    pub const LEASE_SECONDS: &str = "LEASE_SECONDS";
    /// How long a webhook record is kept after its last change (hours).
    pub const RETENTION_HOURS: &str = "RETENTION_HOURS";
    /// Allow a webhook retention under Stripe's 3-day retries.
    pub const ALLOW_SHORT_RETENTION: &str = "ALLOW_SHORT_RETENTION";
    /// When the sender is answered at the latest (milliseconds).
    pub const FORWARD_TIMEOUT_MS: &str = "FORWARD_TIMEOUT_MS";
    /// How much longer a late answer is awaited (seconds).
    pub const LATE_ANSWER_WAIT_SECONDS: &str = "LATE_ANSWER_WAIT_SECONDS";
    /// Largest accepted request body (bytes).
    pub const MAX_BODY_BYTES: &str = "MAX_BODY_BYTES";
    /// How long a request body may take to arrive (milliseconds).
    pub const BODY_READ_TIMEOUT_MS: &str = "BODY_READ_TIMEOUT_MS";
    /// The Stripe endpoint's signing secrets, comma-separated.
    pub const STRIPE_WEBHOOK_SECRET: &str = "STRIPE_WEBHOOK_SECRET";
    /// Where verified events are forwarded.
    pub const ORIGIN_URL: &str = "ORIGIN_URL";
    /// Largest accepted age of a signature timestamp (seconds).
    pub const SIGNATURE_TOLERANCE_SECONDS: &str = "SIGNATURE_TOLERANCE_SECONDS";
    /// Most queued attempts started per second per origin (0: no cap).
    pub const ORIGIN_MAX_RPS: &str = "ORIGIN_MAX_RPS";
    /// Most queued attempts at one origin at once (0: no cap).
    pub const ORIGIN_MAX_IN_FLIGHT: &str = "ORIGIN_MAX_IN_FLIGHT";
    /// Failures in a row that open an origin's breaker (0: no breaker).
    pub const ORIGIN_BREAKER_FAILURES: &str = "ORIGIN_BREAKER_FAILURES";
    /// Time between probes of an origin whose breaker is open (seconds).
    pub const ORIGIN_PROBE_SECONDS: &str = "ORIGIN_PROBE_SECONDS";
    /// What the breaker probes instead of a queued event (optional).
    pub const ORIGIN_HEALTH_URL: &str = "ORIGIN_HEALTH_URL";
    /// The API behind `/api/`; the Idempotency-Key door is off without it.
    pub const API_ORIGIN_URL: &str = "API_ORIGIN_URL";
    /// Refuse unsafe methods without a key.
    pub const IDEMPOTENCY_KEY_REQUIRED: &str = "IDEMPOTENCY_KEY_REQUIRED";
    /// How long a key's record is kept (hours).
    pub const IDEMPOTENCY_RETENTION_HOURS: &str = "IDEMPOTENCY_RETENTION_HOURS";
    /// Largest answer body kept for replay (bytes).
    pub const IDEMPOTENCY_MAX_RESPONSE_BYTES: &str = "IDEMPOTENCY_MAX_RESPONSE_BYTES";
    /// The header identifying an API client.
    pub const IDEMPOTENCY_CLIENT_HEADER: &str = "IDEMPOTENCY_CLIENT_HEADER";
    /// Let keyed requests without a client identity share one scope.
    pub const IDEMPOTENCY_ALLOW_ANONYMOUS: &str = "IDEMPOTENCY_ALLOW_ANONYMOUS";
    /// The admin API's bearer token.
    pub const ADMIN_TOKEN: &str = "ADMIN_TOKEN";
    /// Serve the `/_test/` routes.
    pub const ENABLE_TEST_ROUTES: &str = "ENABLE_TEST_ROUTES";
    /// The one host the operator page is served on.
    pub const ADMIN_PAGE_HOST: &str = "ADMIN_PAGE_HOST";
    /// Request headers the API door passes to the API origin besides its own list.
    pub const API_FORWARD_HEADERS: &str = "API_FORWARD_HEADERS";
    /// Log the rows each claim-authority operation read and wrote.
    pub const LOG_STORAGE_USAGE: &str = "LOG_STORAGE_USAGE";
    /// `sync` (forward while the sender waits) or `queue` (store, acknowledge, deliver later).
    pub const DELIVERY_MODE: &str = "DELIVERY_MODE";
    /// Stripe's delivery mode, over `DELIVERY_MODE`.
    pub const STRIPE_DELIVERY_MODE: &str = "STRIPE_DELIVERY_MODE";
    /// Standard Webhooks' delivery mode, over `DELIVERY_MODE`.
    pub const STANDARD_DELIVERY_MODE: &str = "STANDARD_DELIVERY_MODE";
    /// GitHub's delivery mode, over `DELIVERY_MODE` (default `queue`).
    pub const GITHUB_DELIVERY_MODE: &str = "GITHUB_DELIVERY_MODE";
    /// Shopify's delivery mode, over `DELIVERY_MODE` (default `queue`).
    pub const SHOPIFY_DELIVERY_MODE: &str = "SHOPIFY_DELIVERY_MODE";
    /// The Standard Webhooks endpoint's secrets (base64, with or without `whsec_`),
    /// comma-separated; the route is off without it.
    pub const STANDARD_WEBHOOK_SECRET: &str = "STANDARD_WEBHOOK_SECRET";
    /// The GitHub webhook's secrets, comma-separated; the route is off without it.
    pub const GITHUB_WEBHOOK_SECRET: &str = "GITHUB_WEBHOOK_SECRET";
    /// The Shopify app's client secrets, comma-separated; the route is off without it.
    pub const SHOPIFY_WEBHOOK_SECRET: &str = "SHOPIFY_WEBHOOK_SECRET";
    /// Where Standard Webhooks deliveries go, else `ORIGIN_URL`.
    pub const STANDARD_ORIGIN_URL: &str = "STANDARD_ORIGIN_URL";
    /// Where GitHub deliveries go, else `ORIGIN_URL`.
    pub const GITHUB_ORIGIN_URL: &str = "GITHUB_ORIGIN_URL";
    /// Where Shopify deliveries go, else `ORIGIN_URL`.
    pub const SHOPIFY_ORIGIN_URL: &str = "SHOPIFY_ORIGIN_URL";
    /// Queue mode: the first back-off (seconds).
    pub const RETRY_BASE_SECONDS: &str = "RETRY_BASE_SECONDS";
    /// Queue mode: the longest back-off (seconds).
    pub const RETRY_MAX_DELAY_SECONDS: &str = "RETRY_MAX_DELAY_SECONDS";
    /// Queue mode: attempts in one budget.
    pub const RETRY_MAX_ATTEMPTS: &str = "RETRY_MAX_ATTEMPTS";
    /// Queue mode: hours after acceptance during which attempts start.
    pub const RETRY_MAX_AGE_HOURS: &str = "RETRY_MAX_AGE_HOURS";
    /// Queue mode: retry an attempt the origin refused with a 4xx (but 408, 409, 425, 429).
    pub const RETRY_CLIENT_ERRORS: &str = "RETRY_CLIENT_ERRORS";
    /// Queue mode: the time-out of one attempt (milliseconds).
    pub const QUEUE_FORWARD_TIMEOUT_MS: &str = "QUEUE_FORWARD_TIMEOUT_MS";

    /// Reconciliation: the Stripe API key that reads Events.
    pub const STRIPE_API_KEY: &str = "STRIPE_API_KEY";
    /// Reconciliation: where Stripe's API is (for tests).
    pub const STRIPE_API_BASE_URL: &str = "STRIPE_API_BASE_URL";
    /// Reconciliation: the GitHub token that reads and redelivers the hook's deliveries.
    pub const GITHUB_API_TOKEN: &str = "GITHUB_API_TOKEN";
    /// Reconciliation: where GitHub's API is (for tests, or GitHub Enterprise Server).
    pub const GITHUB_API_BASE_URL: &str = "GITHUB_API_BASE_URL";
    /// Reconciliation: the GitHub hook, `repos/{owner}/{repo}/hooks/{id}` or
    /// `orgs/{org}/hooks/{id}`.
    pub const GITHUB_HOOK: &str = "GITHUB_HOOK";
    /// Reconciliation: how far back a scheduled run looks (hours).
    pub const RECONCILE_LOOKBACK_HOURS: &str = "RECONCILE_LOOKBACK_HOURS";

    /// Operational notifications: where they are POSTed.
    pub const ALERT_URL: &str = "ALERT_URL";
    /// Operational notifications: the Standard Webhooks secret that signs them.
    pub const ALERT_SECRET: &str = "ALERT_SECRET";
    /// Operational notifications: at most one `origin.failing` per origin per this long.
    pub const ALERT_MIN_INTERVAL_SECONDS: &str = "ALERT_MIN_INTERVAL_SECONDS";
    /// Operational notifications: at most this many `delivery.dead_lettered` per sender per
    /// interval; the rest in one digest.
    pub const ALERT_DEAD_LETTER_LIMIT: &str = "ALERT_DEAD_LETTER_LIMIT";
    /// Operational notifications: the interval of that cap.
    pub const ALERT_DEAD_LETTER_INTERVAL_SECONDS: &str = "ALERT_DEAD_LETTER_INTERVAL_SECONDS";

    /// The order problems are reported in, whichever section found them.
    pub const ORDER: &[&str] = &[
        LEASE_SECONDS,
        ALLOW_SHORT_RETENTION,
        RETENTION_HOURS,
        FORWARD_TIMEOUT_MS,
        LATE_ANSWER_WAIT_SECONDS,
        SIGNATURE_TOLERANCE_SECONDS,
        MAX_BODY_BYTES,
        BODY_READ_TIMEOUT_MS,
        DELIVERY_MODE,
        STRIPE_DELIVERY_MODE,
        STANDARD_DELIVERY_MODE,
        GITHUB_DELIVERY_MODE,
        SHOPIFY_DELIVERY_MODE,
        RETRY_BASE_SECONDS,
        RETRY_MAX_DELAY_SECONDS,
        RETRY_MAX_ATTEMPTS,
        RETRY_MAX_AGE_HOURS,
        RETRY_CLIENT_ERRORS,
        QUEUE_FORWARD_TIMEOUT_MS,
        ORIGIN_MAX_RPS,
        ORIGIN_MAX_IN_FLIGHT,
        ORIGIN_BREAKER_FAILURES,
        ORIGIN_PROBE_SECONDS,
        ORIGIN_HEALTH_URL,
        STRIPE_WEBHOOK_SECRET,
        ORIGIN_URL,
        STANDARD_WEBHOOK_SECRET,
        STANDARD_ORIGIN_URL,
        GITHUB_WEBHOOK_SECRET,
        GITHUB_ORIGIN_URL,
        SHOPIFY_WEBHOOK_SECRET,
        SHOPIFY_ORIGIN_URL,
        ENABLE_TEST_ROUTES,
        API_ORIGIN_URL,
        IDEMPOTENCY_RETENTION_HOURS,
        IDEMPOTENCY_KEY_REQUIRED,
        IDEMPOTENCY_MAX_RESPONSE_BYTES,
        IDEMPOTENCY_CLIENT_HEADER,
        IDEMPOTENCY_ALLOW_ANONYMOUS,
        API_FORWARD_HEADERS,
        ADMIN_TOKEN,
        ADMIN_PAGE_HOST,
        STRIPE_API_KEY,
        STRIPE_API_BASE_URL,
        GITHUB_API_TOKEN,
        GITHUB_API_BASE_URL,
        GITHUB_HOOK,
        RECONCILE_LOOKBACK_HOURS,
        ALERT_URL,
        ALERT_SECRET,
        ALERT_MIN_INTERVAL_SECONDS,
        ALERT_DEAD_LETTER_LIMIT,
        ALERT_DEAD_LETTER_INTERVAL_SECONDS,
        LOG_STORAGE_USAGE,
    ];
}

/// Longest retention accepted for any record: 366 days, in hours.
pub const MAX_RETENTION_HOURS: f64 = 366.0 * 24.0;

/// The whole configuration, valid as a whole.
#[derive(Clone, Debug)]
pub struct Config {
    /// Lease, forward time-out, late-answer wait, body cap: how every delivery runs.
    pub delivery: DeliveryConfig,
    /// The delivery mode, and how queued events are retried.
    pub queue: QueueConfig,
    /// How queued attempts treat each origin as a whole: caps, breaker, probe.
    pub gate: GateConfig,
    /// The Stripe webhook front door, and what every webhook door shares (retention,
    /// signature tolerance).
    pub webhook: WebhookConfig,
    /// The other senders whose secret is set (Standard Webhooks, GitHub, Shopify).
    pub senders: Vec<SenderConfig>,
    /// The Idempotency-Key front door (`/api/`), when `API_ORIGIN_URL` is set.
    pub api: Option<ApiConfig>,
    /// The admin API and the test routes.
    pub admin: AdminConfig,
    /// Operational notifications, when `ALERT_URL` is set.
    pub alerts: Option<AlertConfig>,
    /// Reconciliation against the senders' own logs, for each sender whose keys are set.
    pub reconcile: ReconcileConfig,
    /// Each claim-authority operation logs the rows it read and wrote (`LOG_STORAGE_USAGE`).
    pub log_storage_usage: bool,
}

impl Config {
    /// Reads every key through `lookup` (a wrangler var or secret by name; `None` when unset).
    ///
    /// Returns the configuration, or every problem found (all of them, not just the first),
    /// each naming its key.
    pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, Vec<ConfigProblem>> {
        let mut r = Reader::new(lookup);
        let delivery = DeliveryConfig::load(&mut r);
        let webhook = WebhookConfig::load(&mut r, &delivery);
        // Without a valid Stripe section the configuration is refused anyway (below).
        let origin = webhook.as_ref().map(|webhook| &webhook.origin_url);
        let senders = SenderConfig::load_all(&mut r, origin);
        // Every sender whose secret is set, even one whose own section has a problem, so that
        // the checks that depend on which senders queue name their problems in the same pass.
        let enabled: Vec<Provider> = Provider::ALL
            .into_iter()
            .filter(|provider| {
                *provider == Provider::Stripe || r.raw(secret_key(*provider)).is_some()
            })
            .collect();
        let queue = QueueConfig::load(&mut r, &delivery, &enabled);
        let gate = GateConfig::load(&mut r);
        let api = ApiConfig::load(&mut r, &delivery);
        let admin = AdminConfig::load(&mut r);
        let alerts = AlertConfig::load(&mut r);
        let reconcile = ReconcileConfig::load(&mut r);
        let log_storage_usage = r.flag(keys::LOG_STORAGE_USAGE);
        let webhook = r.finish(webhook)?;
        // A missing section always recorded its problem, so `finish` above already refused.
        let webhook = webhook.ok_or_else(|| {
            vec![ConfigProblem {
                key: keys::ORIGIN_URL,
                problem: "missing".into(),
            }]
        })?;
        Ok(Config {
            delivery,
            queue,
            gate,
            webhook,
            senders,
            api,
            admin,
            alerts,
            reconcile,
            log_storage_usage,
        })
    }

    /// The settings of `provider`'s door when it is enabled (Stripe always is): its HMAC keys
    /// and its origin.
    pub fn sender(&self, provider: Provider) -> Option<(Vec<&[u8]>, &url::Url)> {
        if provider == Provider::Stripe {
            let keys = self.webhook.secrets.iter().map(Secret::expose).collect();
            return Some((keys, &self.webhook.origin_url));
        }
        let sender = self.senders.iter().find(|s| s.provider == provider)?;
        let keys = sender.keys.iter().map(HmacKey::expose).collect();
        Some((keys, &sender.origin_url))
    }
}

/// One configuration key that is missing or invalid. Never holds a secret's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The key, e.g. `ORIGIN_URL`.
    pub key: &'static str,
    /// What is wrong and what is expected.
    pub problem: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.problem)
    }
}

/// A key's value from the worker's environment: its var (`var`), else a secret of the same
/// name (`secret`, read only then). An empty var (such as the `ORIGIN_URL = ""` that
/// `wrangler.toml` ships with) gives way to a secret.
pub fn var_or_secret(
    var: Option<String>,
    secret: impl FnOnce() -> Option<String>,
) -> Option<String> {
    var.filter(|value| !value.trim().is_empty()).or_else(secret)
}

/// Every problem on one line, `KEY: problem; KEY: problem` (for log lines).
pub fn describe(problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The keys with a problem, comma-separated (for answers).
pub fn keys(problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(|p| p.key)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Hours as milliseconds.
fn hours_to_ms(hours: f64) -> u64 {
    (hours * 3_600_000.0).round() as u64
}

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
