//! Host tests of the configuration.

use super::*;
use crate::providers::Provider;
use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

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
    assert_eq!(config.delivery.lease_ms, 900_000);
    assert_eq!(config.webhook.claims.retention_ms, 30 * 24 * 3_600_000);
    assert_eq!(config.delivery.forward_timeout_ms, 25_000);
    assert_eq!(config.delivery.late_answer_wait_ms, 600_000);
    assert_eq!(config.webhook.signature_tolerance_seconds, 300);
    assert_eq!(config.delivery.max_body_bytes, 524_288);
    assert_eq!(config.delivery.body_read_timeout_ms, 10_000);
    assert!(!config.admin.test_routes);
    assert!(!config.log_storage_usage);
    assert!(
        load(&[("LOG_STORAGE_USAGE", "true")])
            .unwrap()
            .log_storage_usage
    );
}

#[test]
fn the_body_read_deadline_is_bounded() {
    let config = load(&[("BODY_READ_TIMEOUT_MS", "2500")]).unwrap();
    assert_eq!(config.delivery.body_read_timeout_ms, 2_500);
    for bad in ["0", "60001", "soon", "-5"] {
        let problems = load(&[("BODY_READ_TIMEOUT_MS", bad)]).unwrap_err();
        assert_eq!(keys(problems), ["BODY_READ_TIMEOUT_MS"], "{bad}");
    }
    assert!(load(&[("BODY_READ_TIMEOUT_MS", "60000")]).is_ok());
}

#[test]
fn the_body_cap_is_at_most_what_an_isolate_holds_three_times_over() {
    let config = load(&[("MAX_BODY_BYTES", "4194304")]).unwrap();
    assert_eq!(config.delivery.max_body_bytes, 4 * 1024 * 1024);
    for bad in ["0", "4194305", "26214400"] {
        let problems = load(&[("MAX_BODY_BYTES", bad)]).unwrap_err();
        assert_eq!(keys(problems), ["MAX_BODY_BYTES"], "{bad}");
    }
}

#[test]
fn several_secrets_for_rotation() {
    let config = load(&[("STRIPE_WEBHOOK_SECRET", "whsec_old, whsec_new")]).unwrap();
    assert_eq!(config.webhook.secrets.len(), 2);
    assert_eq!(config.webhook.secrets[1].expose(), b"whsec_new");
    assert_eq!(
        format!("{:?}", config.webhook.secrets),
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
        ("LOG_STORAGE_USAGE", "on"),
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
            "ENABLE_TEST_ROUTES",
            "LOG_STORAGE_USAGE"
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
        ("STRIPE_WEBHOOK_SECRET", "whsec_s3cr3t, ,"),
        ("ALERT_URL", "https://alerts.example/?token=s3cr3t"),
        ("ALERT_SECRET", "whsec_s3cr3t!"),
    ])
    .unwrap_err();
    let mut named = keys(problems.clone());
    named.sort_unstable();
    assert_eq!(
        named,
        [
            "ALERT_SECRET",
            "API_ORIGIN_URL",
            "ENABLE_TEST_ROUTES",
            "IDEMPOTENCY_CLIENT_HEADER",
            "LEASE_SECONDS",
            "ORIGIN_URL",
            "STRIPE_WEBHOOK_SECRET",
        ]
    );
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
        ("SIGNATURE_TOLERANCE_SECONDS", "17"),
    ])
    .unwrap();
    assert_eq!(config.webhook.claims.retention_ms, 36_000);
}

#[test]
fn retention_outlasts_every_replay_the_signature_window_accepts_even_when_forced() {
    let short = |tolerance: &'static str| {
        load(&[
            ("RETENTION_HOURS", "0.01"), // 36 s
            ("ALLOW_SHORT_RETENTION", "true"),
            ("LEASE_SECONDS", "2"),
            ("FORWARD_TIMEOUT_MS", "1000"),
            ("LATE_ANSWER_WAIT_SECONDS", "0"),
            ("SIGNATURE_TOLERANCE_SECONDS", tolerance),
        ])
    };
    // Accepted from 18 s before its timestamp to 18 s after: 36 s, no longer than the record.
    let problems = short("18").unwrap_err();
    assert_eq!(keys(problems.clone()), ["RETENTION_HOURS"]);
    assert!(problems[0].problem.contains("SIGNATURE_TOLERANCE_SECONDS"));
    assert!(short("17").is_ok());
    // The defaults: 72 hours against 2 x 5 minutes.
    assert!(load(&[]).is_ok());
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
        (
            short.delivery.forward_timeout_ms,
            short.delivery.late_answer_wait_ms
        ),
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
    assert_eq!(api.target("/api/x"), "http://127.0.0.1:9000/api/x");
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
    // Each request's path and query are appended: the origin's own query or fragment would
    // swallow them (`https://api.example/?t=1/api/charges`).
    for origin in ["https://api.example/?t=1", "https://api.example/v1#top"] {
        let problems = load(&[("API_ORIGIN_URL", origin)]).unwrap_err();
        assert_eq!(keys(problems.clone()), ["API_ORIGIN_URL"]);
        assert!(problems[0].problem.contains("query or fragment"));
    }
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
    assert!(config.admin.test_routes);
}

#[test]
fn admin_token_is_optional_but_long() {
    assert!(load(&[]).unwrap().admin.token.is_none());
    assert_eq!(
        keys(load(&[("ADMIN_TOKEN", "short")]).unwrap_err()),
        ["ADMIN_TOKEN"]
    );
    assert_eq!(
        keys(load(&[("ADMIN_TOKEN", "ééééééééé")]).unwrap_err()),
        ["ADMIN_TOKEN"],
        "counted in characters, not bytes"
    );
    assert!(load(&[("ADMIN_TOKEN", "éééééééééééééééé")]).is_ok());
    let config = load(&[("ADMIN_TOKEN", "0123456789abcdef")]).unwrap();
    assert_eq!(config.admin.token.unwrap().expose_str(), "0123456789abcdef");
}

#[test]
fn retention_must_outlast_the_lease() {
    assert_eq!(
        keys(
            load(&[
                ("RETENTION_HOURS", "0.1"), // 6 minutes, against the 15-minute lease
                ("ALLOW_SHORT_RETENTION", "true"),
                ("SIGNATURE_TOLERANCE_SECONDS", "1"),
            ])
            .unwrap_err()
        ),
        ["RETENTION_HOURS"]
    );
}

#[test]
fn queue_mode_defaults_try_for_72_hours() {
    let config = load(&[]).unwrap();
    assert_eq!(config.queue.mode(Provider::Stripe), DeliveryMode::Sync);
    let retry = config.queue.retry;
    assert_eq!((retry.base_ms, retry.max_delay_ms), (30_000, 3_600_000));
    assert_eq!(retry.max_age_ms, 72 * 3_600_000);
    // The attempts alone, each back-off as short as jitter makes it, outlast the age limit.
    let shortest: u64 = (1..retry.max_attempts)
        .map(|n| retry.backoff_ms(n, 0.0))
        .sum();
    assert!(shortest > retry.max_age_ms, "{shortest} ms");
    assert_eq!(config.queue.forward_timeout_ms, 60_000);
}

#[test]
fn queue_mode_keys_are_checked() {
    let config = load(&[
        ("DELIVERY_MODE", "queue"),
        ("RETRY_BASE_SECONDS", "1"),
        ("RETRY_MAX_DELAY_SECONDS", "4"),
    ])
    .unwrap();
    assert_eq!(config.queue.mode(Provider::Stripe), DeliveryMode::Queue);
    assert_eq!(
        keys(load(&[("DELIVERY_MODE", "later")]).unwrap_err()),
        ["DELIVERY_MODE"]
    );
    assert_eq!(
        keys(load(&[("DELIVERY_MODE", "queue"), ("MAX_BODY_BYTES", "2000000")]).unwrap_err()),
        ["MAX_BODY_BYTES"],
        "a body that cannot be stored in one value"
    );
    assert!(
        load(&[("MAX_BODY_BYTES", "2000000")]).is_ok(),
        "sync mode stores no body"
    );
    assert_eq!(
        keys(
            load(&[
                ("DELIVERY_MODE", "queue"),
                ("LEASE_SECONDS", "60"),
                ("FORWARD_TIMEOUT_MS", "1000"),
                ("LATE_ANSWER_WAIT_SECONDS", "0"),
                ("QUEUE_FORWARD_TIMEOUT_MS", "60000"),
            ])
            .unwrap_err()
        ),
        ["QUEUE_FORWARD_TIMEOUT_MS"]
    );
    assert_eq!(
        keys(
            load(&[
                ("RETRY_BASE_SECONDS", "10"),
                ("RETRY_MAX_DELAY_SECONDS", "5")
            ])
            .unwrap_err()
        ),
        ["RETRY_MAX_DELAY_SECONDS"]
    );
}

#[test]
fn a_sender_is_enabled_by_its_secret_and_forwards_to_its_origin_or_origin_url() {
    let config = load(&[]).unwrap();
    assert!(config.senders.is_empty());
    assert!(config.sender(Provider::Github).is_none());
    assert!(config.sender(Provider::Stripe).is_some());
    let config = load(&[
        ("GITHUB_WEBHOOK_SECRET", "old, new"),
        ("SHOPIFY_WEBHOOK_SECRET", "shpss_1"),
        ("SHOPIFY_ORIGIN_URL", "https://shop.example/hooks"),
        (
            "STANDARD_WEBHOOK_SECRET",
            "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
        ),
    ])
    .unwrap();
    let (keys, origin) = config.sender(Provider::Github).unwrap();
    assert_eq!(keys, [b"old".as_slice(), b"new".as_slice()]);
    assert_eq!(origin.as_str(), "http://127.0.0.1:9000/hook");
    let (_, origin) = config.sender(Provider::Shopify).unwrap();
    assert_eq!(origin.as_str(), "https://shop.example/hooks");
    let (keys, _) = config.sender(Provider::Standard).unwrap();
    assert_eq!(keys, [b"0123456789abcdef0123456789abcdef".as_slice()]);
    assert_eq!(
        format!("{:?}", config.senders[0].keys),
        "[HmacKey([redacted])]"
    );
}

#[test]
fn sender_problems_are_named() {
    assert_eq!(
        keys(
            load(&[
                ("STANDARD_WEBHOOK_SECRET", "whsec_not base64!"),
                ("GITHUB_WEBHOOK_SECRET", "a,,b"),
                ("SHOPIFY_WEBHOOK_SECRET", "s"),
                ("SHOPIFY_ORIGIN_URL", "shop.example"),
            ])
            .unwrap_err()
        ),
        [
            "STANDARD_WEBHOOK_SECRET",
            "GITHUB_WEBHOOK_SECRET",
            "SHOPIFY_ORIGIN_URL"
        ]
    );
}

#[test]
fn each_provider_picks_its_mode_github_and_shopify_queue_by_default() {
    let config = load(&[]).unwrap();
    assert_eq!(config.queue.mode(Provider::Stripe), DeliveryMode::Sync);
    assert_eq!(config.queue.mode(Provider::Standard), DeliveryMode::Sync);
    assert_eq!(config.queue.mode(Provider::Github), DeliveryMode::Queue);
    assert_eq!(config.queue.mode(Provider::Shopify), DeliveryMode::Queue);
    let config = load(&[
        ("DELIVERY_MODE", "sync"),
        ("STANDARD_DELIVERY_MODE", "queue"),
        ("STRIPE_DELIVERY_MODE", "queue"),
    ])
    .unwrap();
    assert_eq!(config.queue.mode(Provider::Stripe), DeliveryMode::Queue);
    assert_eq!(config.queue.mode(Provider::Standard), DeliveryMode::Queue);
    assert_eq!(config.queue.mode(Provider::Github), DeliveryMode::Sync);
    assert_eq!(
        keys(load(&[("GITHUB_DELIVERY_MODE", "soon")]).unwrap_err()),
        ["GITHUB_DELIVERY_MODE"]
    );
    // Queue mode's limits apply once an enabled provider queues: GitHub by default.
    assert!(load(&[("MAX_BODY_BYTES", "2000000")]).is_ok());
    assert_eq!(
        keys(
            load(&[
                ("MAX_BODY_BYTES", "2000000"),
                ("GITHUB_WEBHOOK_SECRET", "g")
            ])
            .unwrap_err()
        ),
        ["MAX_BODY_BYTES"]
    );
    assert!(load(&[
        ("MAX_BODY_BYTES", "2000000"),
        ("GITHUB_WEBHOOK_SECRET", "g"),
        ("GITHUB_DELIVERY_MODE", "sync"),
    ])
    .is_ok());
}

#[test]
fn a_sender_with_a_broken_section_still_counts_for_the_queue_checks() {
    // GitHub queues by default; its own origin URL is invalid, and the body cap is too large
    // for queue mode: both are named at once, not one after the other is fixed.
    let problems = keys(
        load(&[
            ("GITHUB_WEBHOOK_SECRET", "s"),
            ("GITHUB_ORIGIN_URL", "ftp://h"),
            ("MAX_BODY_BYTES", "5000000"),
        ])
        .unwrap_err(),
    );
    assert!(problems.contains(&"GITHUB_ORIGIN_URL"), "{problems:?}");
    assert!(problems.contains(&"MAX_BODY_BYTES"), "{problems:?}");
}

#[test]
fn an_unset_or_empty_origin_url_says_to_set_it() {
    // wrangler.toml ships `ORIGIN_URL = ""` as the one value to fill in: until it is, /healthz
    // answers 503 with this problem.
    for origin in ["", "   "] {
        let problems = load(&[("ORIGIN_URL", origin)]).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].key, "ORIGIN_URL");
        assert!(
            problems[0].problem.contains("set ORIGIN_URL"),
            "{}",
            problems[0].problem
        );
    }
}

#[test]
fn a_queued_attempt_s_lease_always_outlasts_its_time_out() {
    // Every sender switched to sync and the lease shortened below the queue's time-out: the
    // configuration is valid (no sender queues), but events stored before still get a lease
    // that covers their attempt's wait and its settle margin.
    let config = load(&[
        ("DELIVERY_MODE", "sync"),
        ("LEASE_SECONDS", "4"),
        ("FORWARD_TIMEOUT_MS", "1000"),
        ("LATE_ANSWER_WAIT_SECONDS", "2"),
        ("QUEUE_FORWARD_TIMEOUT_MS", "5000"),
    ])
    .unwrap();
    let policy = config.queue.attempt_policy(config.webhook.claims);
    assert_eq!(policy.lease_ms, 5_000 + 1_000);
    assert_eq!(policy.retention_ms, config.webhook.claims.retention_ms);
    // A lease already long enough is kept as it is.
    let config = load(&[]).unwrap();
    assert_eq!(
        config.queue.attempt_policy(config.webhook.claims),
        config.webhook.claims
    );
}

#[test]
fn notifications_need_a_url_and_a_standard_webhooks_secret_together() {
    let with = |pairs: &[(&str, &str)]| {
        let mut all: Vec<(&str, &str)> = vec![
            ("STRIPE_WEBHOOK_SECRET", "whsec_test"),
            ("ORIGIN_URL", "https://origin.example/hook"),
        ];
        all.extend_from_slice(pairs);
        let map: std::collections::HashMap<String, String> = all
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Config::load(|key| map.get(key).cloned())
    };
    let secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    assert!(with(&[]).unwrap().alerts.is_none(), "off by default");
    let on = with(&[
        ("ALERT_URL", "https://alerts.example/in"),
        ("ALERT_SECRET", secret),
    ])
    .unwrap()
    .alerts
    .expect("on");
    assert_eq!(on.min_interval_ms, 900_000);
    assert_eq!(on.key.expose(), b"0123456789abcdef0123456789abcdef");
    let problem = |pairs: &[(&str, &str)]| {
        let problems = with(pairs).unwrap_err();
        (problems[0].key, problems[0].problem.clone())
    };
    assert_eq!(
        problem(&[("ALERT_URL", "https://a.example")]).0,
        "ALERT_SECRET"
    );
    assert_eq!(problem(&[("ALERT_SECRET", secret)]).0, "ALERT_SECRET");
    assert!(problem(&[
        ("ALERT_URL", "https://a.example"),
        ("ALERT_SECRET", "nope!")
    ])
    .1
    .contains("whsec_"));
    assert_eq!(
        problem(&[("ALERT_URL", "ftp://a.example"), ("ALERT_SECRET", secret)]).0,
        "ALERT_URL"
    );
    assert_eq!(
        problem(&[
            ("ALERT_URL", "https://a.example"),
            ("ALERT_SECRET", secret),
            ("ALERT_MIN_INTERVAL_SECONDS", "0")
        ])
        .0,
        "ALERT_MIN_INTERVAL_SECONDS"
    );
    assert_eq!(
        (on.dead_letter_limit, on.dead_letter_interval_ms),
        (10, 900_000),
        "at most 10 dead-letter notifications per sender per 15 minutes by default"
    );
}

/// Notifications carry ids and reasons, which their signature does not hide: `ALERT_URL` must
/// be `https://`, or `http://` to a loopback host for local runs. `ALERT_SECRET` decodes to 24
/// to 64 bytes, as the Standard Webhooks specification asks.
#[test]
fn notifications_go_over_https_signed_with_a_secret_of_the_specified_length() {
    let with = |url: &str, secret: &str| {
        load(&[("ALERT_URL", url), ("ALERT_SECRET", secret)])
            .map(|config| config.alerts.is_some())
            .map_err(|problems| keys(problems))
    };
    let of = |bytes: usize| format!("whsec_{}", BASE64.encode(vec![7u8; bytes]));
    let good = of(32);
    for url in [
        "https://alerts.example/in",
        "http://127.0.0.1:8080/in",
        "http://127.1.2.3/in",
        "http://localhost/in",
        "http://[::1]:9/in",
    ] {
        assert_eq!(with(url, &good), Ok(true), "{url}");
    }
    for url in [
        "http://alerts.example/in",
        "http://10.0.0.1/in",
        "http://localhost.evil.example/in",
    ] {
        assert_eq!(with(url, &good), Err(vec!["ALERT_URL"]), "{url}");
    }
    for bytes in [24, 64] {
        assert_eq!(with("https://a.example", &of(bytes)), Ok(true), "{bytes}");
    }
    for bytes in [1, 16, 23, 65, 128] {
        assert_eq!(
            with("https://a.example", &of(bytes)),
            Err(vec!["ALERT_SECRET"]),
            "{bytes}"
        );
    }
}

#[test]
fn the_admin_token_is_read_alone_while_other_keys_have_problems() {
    let lookup = |key: &str| match key {
        "ADMIN_TOKEN" => Some(" a-long-admin-token-0123456789 ".into()),
        "LEASE_SECONDS" => Some("soon".into()),
        _ => None,
    };
    assert!(Config::load(lookup).is_err());
    let token = admin_token(lookup).expect("usable");
    assert_eq!(token.expose_str(), "a-long-admin-token-0123456789");
    assert!(admin_token(|key| (key == "ADMIN_TOKEN").then(|| "short".into())).is_none());
    assert!(admin_token(|_| None).is_none());
}

/// A var wins unless it is empty (or blank), when a secret of the same name is read.
#[test]
fn an_empty_var_gives_way_to_a_secret() {
    let secret = || Some("from a secret".to_owned());
    assert_eq!(
        var_or_secret(Some("a".into()), secret).as_deref(),
        Some("a")
    );
    assert_eq!(
        var_or_secret(Some(" ".into()), secret).as_deref(),
        Some("from a secret")
    );
    assert_eq!(
        var_or_secret(None, secret).as_deref(),
        Some("from a secret")
    );
    assert_eq!(var_or_secret(Some(String::new()), || None), None);
    let untouched = var_or_secret(Some("a".into()), || panic!("the secret is not read"));
    assert_eq!(untouched.as_deref(), Some("a"));
}
