//! The worker's configuration: every key, its default, and a clear error when it is wrong.

use std::fmt;

use crate::claim::ClaimPolicy;

/// Default lease: how long a claim is honoured before another delivery may take it over.
pub const DEFAULT_LEASE_SECONDS: u64 = 15 * 60;
/// Default retention of a record: 30 days, beyond Stripe's 3-day retries and 30-day CLI resends.
pub const DEFAULT_RETENTION_HOURS: f64 = 30.0 * 24.0;
/// Shortest retention accepted without `ALLOW_SHORT_RETENTION=true`: Stripe retries for 3 days.
pub const MIN_SAFE_RETENTION_HOURS: f64 = 72.0;
/// Default time-out of a forward to the origin.
pub const DEFAULT_FORWARD_TIMEOUT_MS: u64 = 25_000;
/// Longest forward time-out: the runtime gives `waitUntil` work 30 s after the sender hangs up,
/// and the finalize or release must still fit in after the forward.
pub const MAX_FORWARD_TIMEOUT_MS: u64 = 25_000;
/// Default wait for a late answer after the forward time-out: ten minutes, well inside the
/// default lease with its margin (see [`settle_margin_ms`]).
pub const DEFAULT_LATE_ANSWER_WAIT_SECONDS: u64 = 10 * 60;
/// Default tolerance on the age of a `Stripe-Signature` timestamp, as Stripe's libraries use.
pub const DEFAULT_SIGNATURE_TOLERANCE_SECONDS: u64 = 300;
/// Default cap on a webhook body.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 512 * 1024;
/// Default retention of an Idempotency-Key record: Stripe's API keeps keys at least 24 h.
pub const DEFAULT_IDEMPOTENCY_RETENTION_HOURS: f64 = 24.0;
/// Default largest response body cached for replay.
pub const DEFAULT_IDEMPOTENCY_MAX_RESPONSE_BYTES: u64 = 256 * 1024;
/// Default header whose value identifies an API client (hashed into the key's scope).
pub const DEFAULT_IDEMPOTENCY_CLIENT_HEADER: &str = "authorization";

/// Shortest accepted admin token.
pub const MIN_ADMIN_TOKEN_LEN: usize = 16;

const MAX_LEASE_SECONDS: u64 = 24 * 60 * 60;
const MAX_LATE_ANSWER_WAIT_SECONDS: u64 = MAX_LEASE_SECONDS;
const MAX_RETENTION_HOURS: f64 = 366.0 * 24.0;
const MAX_TOLERANCE_SECONDS: u64 = 24 * 60 * 60;
const MAX_BODY_CAP_BYTES: u64 = 25 * 1024 * 1024;
// A cached response is stored base64-encoded in one Durable Object row (2 MB at most).
const MAX_CACHED_RESPONSE_BYTES: u64 = 1024 * 1024;

/// A webhook signing secret. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret's bytes, as the HMAC key.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The secret as text (for comparing an admin token).
    pub fn expose_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// The whole configuration, valid as a whole.
#[derive(Clone, Debug)]
pub struct Config {
    /// Lease and retention of webhook claims (`LEASE_SECONDS`, `RETENTION_HOURS`).
    pub webhook_claims: ClaimPolicy,
    /// Secrets a delivery may be signed with (`STRIPE_WEBHOOK_SECRET`, comma-separated).
    pub webhook_secrets: Vec<Secret>,
    /// Where verified, claimed events are forwarded (`ORIGIN_URL`).
    pub origin_url: String,
    /// Time-out of a forward, always shorter than the lease (`FORWARD_TIMEOUT_MS`): the sender
    /// is answered then, at the latest.
    pub forward_timeout_ms: u64,
    /// How much longer the claim authority waits for a late answer after the time-out
    /// (`LATE_ANSWER_WAIT_SECONDS`); the lease exceeds both with a margin.
    pub late_answer_wait_ms: u64,
    /// Largest accepted age of a signature timestamp (`SIGNATURE_TOLERANCE_SECONDS`).
    pub signature_tolerance_seconds: u64,
    /// Largest accepted webhook body (`MAX_BODY_BYTES`).
    pub max_body_bytes: u64,
    /// Serve the `/_test/` routes that reach the claim authority directly (`ENABLE_TEST_ROUTES`).
    pub test_routes: bool,
    /// The Idempotency-Key front door (`/api/`), when `API_ORIGIN_URL` is set.
    pub api: Option<ApiConfig>,
    /// The admin API's bearer token (`ADMIN_TOKEN`); the API is off without one.
    pub admin_token: Option<Secret>,
}

/// Settings of the Idempotency-Key front door.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// Where `/api/...` requests go, path and query appended (`API_ORIGIN_URL`).
    pub origin_url: String,
    /// Lease (`LEASE_SECONDS`) and retention (`IDEMPOTENCY_RETENTION_HOURS`) of key records.
    pub claims: ClaimPolicy,
    /// Refuse unsafe methods without a key (`IDEMPOTENCY_KEY_REQUIRED`).
    pub key_required: bool,
    /// Largest response body cached for replay (`IDEMPOTENCY_MAX_RESPONSE_BYTES`).
    pub max_response_bytes: u64,
    /// Lower-case name of the header identifying the client (`IDEMPOTENCY_CLIENT_HEADER`).
    pub client_header: String,
    /// Let keyed requests without the client header share one anonymous scope
    /// (`IDEMPOTENCY_ALLOW_ANONYMOUS`); otherwise they are refused.
    pub allow_anonymous: bool,
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

struct Reader<F> {
    lookup: F,
    problems: Vec<ConfigProblem>,
}

impl<F: Fn(&str) -> Option<String>> Reader<F> {
    fn raw(&self, key: &str) -> Option<String> {
        (self.lookup)(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn problem(&mut self, key: &'static str, problem: impl Into<String>) {
        self.problems.push(ConfigProblem {
            key,
            problem: problem.into(),
        });
    }

    fn integer(&mut self, key: &'static str, default: u64, min: u64, max: u64) -> u64 {
        let Some(text) = self.raw(key) else {
            return default;
        };
        match text.parse::<u64>() {
            Ok(value) if (min..=max).contains(&value) => value,
            _ => {
                self.problem(key, format!("not a whole number from {min} to {max}"));
                default
            }
        }
    }

    fn hours(&mut self, key: &'static str, default: f64) -> f64 {
        let Some(text) = self.raw(key) else {
            return default;
        };
        match text.parse::<f64>() {
            Ok(h) if h.is_finite() && h > 0.0 && h <= MAX_RETENTION_HOURS => h,
            _ => {
                self.problem(
                    key,
                    "not a number of hours above 0 and at most 8784 (366 days)",
                );
                default
            }
        }
    }

    fn flag(&mut self, key: &'static str) -> bool {
        match self.raw(key).as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                self.problem(key, "not `true` or `false`");
                false
            }
        }
    }
}

impl Config {
    /// Reads every key through `lookup` (a wrangler var or secret by name; `None` when unset).
    ///
    /// Returns the configuration, or every problem found (all of them, not just the first), each
    /// naming its key.
    pub fn load(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, Vec<ConfigProblem>> {
        let mut r = Reader {
            lookup,
            problems: Vec::new(),
        };
        let lease_seconds = r.integer("LEASE_SECONDS", DEFAULT_LEASE_SECONDS, 1, MAX_LEASE_SECONDS);
        let allow_short = r.flag("ALLOW_SHORT_RETENTION");
        let retention_hours = r.hours("RETENTION_HOURS", DEFAULT_RETENTION_HOURS);
        if retention_hours < MIN_SAFE_RETENTION_HOURS && !allow_short {
            r.problem(
                "RETENTION_HOURS",
                "shorter than Stripe's 3-day retries, so a late retry could run an event twice; \
                 set ALLOW_SHORT_RETENTION=true to force it",
            );
        }
        let lease_ms = lease_seconds * 1_000;
        let retention_ms = (retention_hours * 3_600_000.0).round() as u64;
        if retention_ms <= lease_ms {
            r.problem(
                "RETENTION_HOURS",
                "must be longer than the lease (LEASE_SECONDS)",
            );
        }
        let forward_timeout_ms = r.integer(
            "FORWARD_TIMEOUT_MS",
            DEFAULT_FORWARD_TIMEOUT_MS,
            1,
            MAX_FORWARD_TIMEOUT_MS,
        );
        let late_answer_wait_ms = r.integer(
            "LATE_ANSWER_WAIT_SECONDS",
            DEFAULT_LATE_ANSWER_WAIT_SECONDS,
            0,
            MAX_LATE_ANSWER_WAIT_SECONDS,
        ) * 1_000;
        let margin_ms = settle_margin_ms(lease_ms);
        if forward_timeout_ms + late_answer_wait_ms + margin_ms > lease_ms {
            r.problem(
                "LATE_ANSWER_WAIT_SECONDS",
                format!(
                    "FORWARD_TIMEOUT_MS ({forward_timeout_ms} ms) plus LATE_ANSWER_WAIT_SECONDS \
                     ({late_answer_wait_ms} ms) plus a settle margin ({margin_ms} ms) must fit \
                     in LEASE_SECONDS ({lease_ms} ms): shorten the wait or lengthen the lease"
                ),
            );
        }
        let signature_tolerance_seconds = match r.raw("SIGNATURE_TOLERANCE_SECONDS").as_deref() {
            Some("0") => {
                r.problem(
                    "SIGNATURE_TOLERANCE_SECONDS",
                    "0 would turn off the replay check; use a positive number of seconds",
                );
                DEFAULT_SIGNATURE_TOLERANCE_SECONDS
            }
            _ => r.integer(
                "SIGNATURE_TOLERANCE_SECONDS",
                DEFAULT_SIGNATURE_TOLERANCE_SECONDS,
                1,
                MAX_TOLERANCE_SECONDS,
            ),
        };
        let max_body_bytes = r.integer(
            "MAX_BODY_BYTES",
            DEFAULT_MAX_BODY_BYTES,
            1,
            MAX_BODY_CAP_BYTES,
        );
        let webhook_secrets = match r.raw("STRIPE_WEBHOOK_SECRET") {
            None => {
                r.problem(
                    "STRIPE_WEBHOOK_SECRET",
                    "missing: set the endpoint's signing secret (whsec_...) with `wrangler secret put`",
                );
                Vec::new()
            }
            Some(text) => {
                let secrets: Vec<Secret> = text
                    .split(',')
                    .map(|s| Secret(s.trim().to_owned()))
                    .collect();
                if secrets.iter().any(|s| s.0.is_empty()) {
                    r.problem(
                        "STRIPE_WEBHOOK_SECRET",
                        "an empty secret in the comma-separated list",
                    );
                }
                secrets
            }
        };
        let origin_url = match r.raw("ORIGIN_URL") {
            None => {
                r.problem("ORIGIN_URL", "missing: set the URL events are forwarded to");
                String::new()
            }
            Some(text) => {
                if !is_http_url(&text) {
                    r.problem("ORIGIN_URL", "not an absolute http:// or https:// URL");
                }
                text
            }
        };
        let test_routes = r.flag("ENABLE_TEST_ROUTES");
        let api = r.raw("API_ORIGIN_URL").map(|origin_url| {
            if !is_http_url(&origin_url) {
                r.problem("API_ORIGIN_URL", "not an absolute http:// or https:// URL");
            }
            let retention_hours = r.hours(
                "IDEMPOTENCY_RETENTION_HOURS",
                DEFAULT_IDEMPOTENCY_RETENTION_HOURS,
            );
            let retention_ms = (retention_hours * 3_600_000.0).round() as u64;
            if retention_ms <= lease_ms {
                r.problem(
                    "IDEMPOTENCY_RETENTION_HOURS",
                    "must be longer than the lease (LEASE_SECONDS)",
                );
            }
            let key_required = r.flag("IDEMPOTENCY_KEY_REQUIRED");
            let max_response_bytes = r.integer(
                "IDEMPOTENCY_MAX_RESPONSE_BYTES",
                DEFAULT_IDEMPOTENCY_MAX_RESPONSE_BYTES,
                0,
                MAX_CACHED_RESPONSE_BYTES,
            );
            let client_header = r
                .raw("IDEMPOTENCY_CLIENT_HEADER")
                .unwrap_or_else(|| DEFAULT_IDEMPOTENCY_CLIENT_HEADER.to_owned())
                .to_ascii_lowercase();
            if !client_header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                r.problem("IDEMPOTENCY_CLIENT_HEADER", "not a header name");
            }
            let allow_anonymous = r.flag("IDEMPOTENCY_ALLOW_ANONYMOUS");
            ApiConfig {
                allow_anonymous,
                origin_url: origin_url.trim_end_matches('/').to_owned(),
                claims: ClaimPolicy {
                    lease_ms,
                    retention_ms,
                },
                key_required,
                max_response_bytes,
                client_header,
            }
        });
        let admin_token = r.raw("ADMIN_TOKEN").map(Secret);
        if admin_token
            .as_ref()
            .is_some_and(|t| t.0.len() < MIN_ADMIN_TOKEN_LEN)
        {
            r.problem(
                "ADMIN_TOKEN",
                format!("shorter than {MIN_ADMIN_TOKEN_LEN} characters; use a long random token"),
            );
        }
        if test_routes && admin_token.is_none() {
            r.problem(
                "ENABLE_TEST_ROUTES",
                "the test routes reach every record and need ADMIN_TOKEN to guard them",
            );
        }
        if !r.problems.is_empty() {
            return Err(r.problems);
        }
        Ok(Config {
            webhook_claims: ClaimPolicy {
                lease_ms,
                retention_ms,
            },
            webhook_secrets,
            origin_url,
            forward_timeout_ms,
            late_answer_wait_ms,
            signature_tolerance_seconds,
            max_body_bytes,
            test_routes,
            api,
            admin_token,
        })
    }
}

/// The time a lease keeps beyond the forward time-out and the late-answer wait, so that an
/// answer learned at the last moment can still be settled (with retries) before anyone may take
/// the claim over: a tenth of the lease, at least one second.
pub fn settle_margin_ms(lease_ms: u64) -> u64 {
    (lease_ms / 10).max(1_000)
}

fn is_http_url(text: &str) -> bool {
    matches!(url::Url::parse(text), Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, Vec<ConfigProblem>> {
        let mut map: HashMap<String, String> = [
            ("STRIPE_WEBHOOK_SECRET", "whsec_a"),
            ("ORIGIN_URL", "http://127.0.0.1:9000/hook"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in pairs {
            map.insert(k.to_string(), v.to_string());
        }
        Config::load(|k| map.get(k).cloned())
    }

    fn keys(problems: Vec<ConfigProblem>) -> Vec<&'static str> {
        problems.into_iter().map(|p| p.key).collect()
    }

    #[test]
    fn defaults() {
        let config = load(&[]).unwrap();
        assert_eq!(config.webhook_claims.lease_ms, 900_000);
        assert_eq!(config.webhook_claims.retention_ms, 30 * 24 * 3_600_000);
        assert_eq!(config.forward_timeout_ms, 25_000);
        assert_eq!(config.late_answer_wait_ms, 600_000);
        assert_eq!(config.signature_tolerance_seconds, 300);
        assert_eq!(config.max_body_bytes, 524_288);
        assert!(!config.test_routes);
    }

    #[test]
    fn several_secrets_for_rotation() {
        let config = load(&[("STRIPE_WEBHOOK_SECRET", "whsec_old, whsec_new")]).unwrap();
        assert_eq!(config.webhook_secrets.len(), 2);
        assert_eq!(config.webhook_secrets[1].expose(), b"whsec_new");
        assert_eq!(
            format!("{:?}", config.webhook_secrets),
            "[Secret([redacted]), Secret([redacted])]"
        );
    }

    #[test]
    fn missing_secret_and_origin_are_named() {
        let problems = Config::load(|_| None).unwrap_err();
        assert_eq!(keys(problems), ["STRIPE_WEBHOOK_SECRET", "ORIGIN_URL"]);
    }

    #[test]
    fn invalid_values_are_named_all_at_once() {
        let problems = load(&[
            ("LEASE_SECONDS", "soon"),
            ("SIGNATURE_TOLERANCE_SECONDS", "0"),
            ("MAX_BODY_BYTES", "-1"),
            ("ORIGIN_URL", "ftp://x"),
            ("ENABLE_TEST_ROUTES", "yes"),
            ("STRIPE_WEBHOOK_SECRET", "whsec_a,,whsec_b"),
        ])
        .unwrap_err();
        assert_eq!(
            keys(problems.clone()),
            [
                "LEASE_SECONDS",
                "SIGNATURE_TOLERANCE_SECONDS",
                "MAX_BODY_BYTES",
                "STRIPE_WEBHOOK_SECRET",
                "ORIGIN_URL",
                "ENABLE_TEST_ROUTES"
            ]
        );
        assert!(!problems.iter().any(|p| p.problem.contains("whsec_")
            && p.key == "STRIPE_WEBHOOK_SECRET"
            && p.problem.contains("whsec_a")));
    }

    #[test]
    fn problems_never_repeat_the_value() {
        let problems = load(&[
            ("ORIGIN_URL", "no-scheme?token=s3cr3t"),
            ("API_ORIGIN_URL", "also?token=s3cr3t"),
            ("LEASE_SECONDS", "s3cr3t"),
            ("ENABLE_TEST_ROUTES", "s3cr3t"),
            ("IDEMPOTENCY_CLIENT_HEADER", "s3cr3t header"),
        ])
        .unwrap_err();
        assert_eq!(problems.len(), 5);
        assert!(
            problems.iter().all(|p| !p.problem.contains("s3cr3t")),
            "{problems:?}"
        );
    }

    #[test]
    fn the_forward_time_out_fits_in_the_runtime_s_grace_period() {
        assert_eq!(
            keys(load(&[("FORWARD_TIMEOUT_MS", "25001")]).unwrap_err()),
            ["FORWARD_TIMEOUT_MS"]
        );
    }

    #[test]
    fn short_retention_needs_forcing() {
        assert_eq!(
            keys(load(&[("RETENTION_HOURS", "24")]).unwrap_err()),
            ["RETENTION_HOURS"]
        );
        let config = load(&[
            ("RETENTION_HOURS", "0.01"),
            ("ALLOW_SHORT_RETENTION", "true"),
            ("LEASE_SECONDS", "2"),
            ("FORWARD_TIMEOUT_MS", "1000"),
            ("LATE_ANSWER_WAIT_SECONDS", "0"),
        ])
        .unwrap();
        assert_eq!(config.webhook_claims.retention_ms, 36_000);
    }

    #[test]
    fn the_lease_outlasts_the_time_out_the_late_answer_wait_and_a_margin() {
        assert_eq!(
            keys(load(&[("LEASE_SECONDS", "600")]).unwrap_err()),
            ["LATE_ANSWER_WAIT_SECONDS"],
            "the default wait does not fit a 10-minute lease"
        );
        let fits = [
            ("LEASE_SECONDS", "20"),
            ("FORWARD_TIMEOUT_MS", "9000"),
            ("LATE_ANSWER_WAIT_SECONDS", "9"),
        ];
        assert!(load(&fits).is_ok(), "9 s + 9 s + 2 s margin = 20 s");
        assert_eq!(
            keys(
                load(&[
                    ("LEASE_SECONDS", "20"),
                    ("FORWARD_TIMEOUT_MS", "9001"),
                    ("LATE_ANSWER_WAIT_SECONDS", "9"),
                ])
                .unwrap_err()
            ),
            ["LATE_ANSWER_WAIT_SECONDS"]
        );
        // Short values stay possible for tests: a lease of a few seconds, a sub-second time-out.
        let short = load(&[
            ("LEASE_SECONDS", "4"),
            ("FORWARD_TIMEOUT_MS", "500"),
            ("LATE_ANSWER_WAIT_SECONDS", "2"),
        ])
        .unwrap();
        assert_eq!(
            (short.forward_timeout_ms, short.late_answer_wait_ms),
            (500, 2_000)
        );
        assert_eq!(settle_margin_ms(900_000), 90_000);
        assert_eq!(settle_margin_ms(4_000), 1_000);
    }

    #[test]
    fn the_api_front_door_is_off_without_its_origin() {
        let config = load(&[]).unwrap();
        assert!(config.api.is_none());
        let config = load(&[("API_ORIGIN_URL", "http://127.0.0.1:9000/")]).unwrap();
        let api = config.api.unwrap();
        assert_eq!(api.origin_url, "http://127.0.0.1:9000");
        assert_eq!(api.claims.retention_ms, 24 * 3_600_000);
        assert_eq!(api.claims.lease_ms, 900_000);
        assert_eq!(api.max_response_bytes, 262_144);
        assert_eq!(api.client_header, "authorization");
        assert!(!api.key_required);
        assert!(!api.allow_anonymous);
    }

    #[test]
    fn api_keys_are_checked() {
        let problems = load(&[
            ("API_ORIGIN_URL", "nope"),
            ("IDEMPOTENCY_RETENTION_HOURS", "0"),
            ("IDEMPOTENCY_KEY_REQUIRED", "maybe"),
            ("IDEMPOTENCY_MAX_RESPONSE_BYTES", "9999999"),
            ("IDEMPOTENCY_CLIENT_HEADER", "x client"),
        ])
        .unwrap_err();
        assert_eq!(
            keys(problems),
            [
                "API_ORIGIN_URL",
                "IDEMPOTENCY_RETENTION_HOURS",
                "IDEMPOTENCY_KEY_REQUIRED",
                "IDEMPOTENCY_MAX_RESPONSE_BYTES",
                "IDEMPOTENCY_CLIENT_HEADER"
            ]
        );
        let config = load(&[
            ("API_ORIGIN_URL", "https://api.example.com/v1"),
            ("IDEMPOTENCY_RETENTION_HOURS", "1"),
            ("IDEMPOTENCY_CLIENT_HEADER", "X-Api-Key"),
            ("IDEMPOTENCY_KEY_REQUIRED", "true"),
        ])
        .unwrap();
        let api = config.api.unwrap();
        assert_eq!(api.client_header, "x-api-key");
        assert!(api.key_required);
    }

    #[test]
    fn test_routes_need_the_admin_token() {
        assert_eq!(
            keys(load(&[("ENABLE_TEST_ROUTES", "true")]).unwrap_err()),
            ["ENABLE_TEST_ROUTES"]
        );
        let config = load(&[
            ("ENABLE_TEST_ROUTES", "true"),
            ("ADMIN_TOKEN", "0123456789abcdef"),
        ])
        .unwrap();
        assert!(config.test_routes);
    }

    #[test]
    fn admin_token_is_optional_but_long() {
        assert!(load(&[]).unwrap().admin_token.is_none());
        assert_eq!(
            keys(load(&[("ADMIN_TOKEN", "short")]).unwrap_err()),
            ["ADMIN_TOKEN"]
        );
        let config = load(&[("ADMIN_TOKEN", "0123456789abcdef")]).unwrap();
        assert_eq!(config.admin_token.unwrap().expose_str(), "0123456789abcdef");
    }

    #[test]
    fn retention_must_outlast_the_lease() {
        assert_eq!(
            keys(
                load(&[
                    ("RETENTION_HOURS", "0.0001"),
                    ("ALLOW_SHORT_RETENTION", "true"),
                ])
                .unwrap_err()
            ),
            ["RETENTION_HOURS"]
        );
    }
}
