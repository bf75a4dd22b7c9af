//! Host tests of the Idempotency-Key rules.

use super::*;
use crate::claim::FinalizeOutcome;
use crate::claim_authority::{to_cache, BodyKept, ForwardReport, SettleStep};
use crate::config::ConfigProblem;
use crate::log_line::{LogLine, Outcome, Route};
use crate::origin::Verdict;

#[test]
fn keys_bare_and_quoted() {
    assert_eq!(parse_key("abc-123").unwrap(), "abc-123");
    assert_eq!(parse_key("a b").unwrap(), "a b");
    assert_eq!(parse_key("\"quoted\"").unwrap(), "quoted");
    assert_eq!(
        parse_key(r#""with \"escapes\" and \\""#).unwrap(),
        r#"with "escapes" and \"#
    );
    assert_eq!(parse_key(&"k".repeat(255)).unwrap().len(), 255);
}

#[test]
fn bad_keys_are_refused() {
    assert_eq!(parse_key(""), Err(KeyError::Empty));
    assert_eq!(parse_key("\"\""), Err(KeyError::Empty));
    assert_eq!(parse_key(&"k".repeat(256)), Err(KeyError::TooLong));
    assert_eq!(parse_key("tab\there"), Err(KeyError::InvalidCharacter));
    assert_eq!(parse_key("bell\u{7}"), Err(KeyError::InvalidCharacter));
    assert_eq!(parse_key("caf\u{e9}"), Err(KeyError::InvalidCharacter));
    assert_eq!(parse_key("del\u{7f}"), Err(KeyError::InvalidCharacter));
    assert_eq!(parse_key("\"open"), Err(KeyError::BadQuoting));
    assert_eq!(parse_key("\"a\"b"), Err(KeyError::BadQuoting));
    assert_eq!(parse_key(r#""bad \n escape""#), Err(KeyError::BadQuoting));
    assert_eq!(parse_key("\"tab\there\""), Err(KeyError::InvalidCharacter));
}

#[test]
fn scopes_separate_clients_and_keys() {
    let a = scope(Some("Bearer alice"), "k1");
    assert_eq!(a, scope(Some("Bearer alice"), "k1"), "deterministic");
    assert!(a.starts_with("idem_") && a.len() == 5 + 64);
    assert_ne!(a, scope(Some("Bearer bob"), "k1"));
    assert_ne!(a, scope(Some("Bearer alice"), "k2"));
    assert_ne!(
        scope(None, "k1"),
        scope(Some(""), "k1"),
        "absent is not empty"
    );
    assert!(!a.contains("alice") && !a.contains("k1"));
}

#[test]
fn fingerprints_cover_every_part_of_the_request() {
    let base = fingerprint(
        "POST",
        "/api/charges?a=1&b=2",
        Some("application/json"),
        b"{}",
    );
    assert_eq!(base.len(), 64);
    assert_eq!(
        base,
        fingerprint(
            "POST",
            "/api/charges?a=1&b=2",
            Some("application/json"),
            b"{}"
        )
    );
    for other in [
        fingerprint(
            "PUT",
            "/api/charges?a=1&b=2",
            Some("application/json"),
            b"{}",
        ),
        fingerprint(
            "POST",
            "/api/charges?b=2&a=1",
            Some("application/json"),
            b"{}",
        ),
        fingerprint("POST", "/api/charges", Some("application/json"), b"{}"),
        fingerprint("POST", "/api/charges?a=1&b=2", Some("text/plain"), b"{}"),
        fingerprint("POST", "/api/charges?a=1&b=2", None, b"{}"),
        fingerprint(
            "POST",
            "/api/charges?a=1&b=2",
            Some("application/json"),
            b"",
        ),
        fingerprint(
            "POST",
            "/api/charges?a=1&b=2",
            Some("application/json"),
            b"{ }",
        ),
    ] {
        assert_ne!(base, other);
    }
    // Length prefixes: moving bytes between fields changes the fingerprint.
    assert_ne!(
        fingerprint("POST", "/a", Some("b"), b""),
        fingerprint("POST", "/ab", Some(""), b"")
    );
    assert_eq!(
        fingerprint("DELETE", "/api/x", None, b""),
        fingerprint("DELETE", "/api/x", None, b""),
        "an empty body fingerprints"
    );
}

#[test]
fn delivery_replies_map_to_answers() {
    let declined = |outcome| AuthorityReply::Delivery(Delivery::Declined(outcome));
    let cached = to_cache(201, &[], BodyKept::Whole(b"x".to_vec()));
    assert_eq!(
        after_delivery(
            &declined(ClaimOutcome::DuplicateProcessed {
                finished_at: 1,
                response: Some(cached.clone())
            }),
            0
        ),
        ApiAnswer::Replay(cached)
    );
    let head = Head {
        status: 201,
        headers: vec![("content-type".into(), "text/plain".into())],
    };
    let forwarded = |outcome, head| {
        AuthorityReply::Delivery(Delivery::Forwarded(ForwardReport {
            attempt: 1,
            takeover: false,
            outcome,
            verdict: Verdict::Succeeded,
            settle: SettleStep::Waiting,
            origin_ms: 1,
            not_before: None,
            head,
        }))
    };
    assert_eq!(
        after_delivery(
            &forwarded(OriginOutcome::Answered { status: 201 }, Some(head.clone())),
            0
        ),
        ApiAnswer::Live(head)
    );
    let refused = |reply| match after_delivery(&reply, 0) {
        ApiAnswer::Refuse(problem) => (problem.status, problem.slug, problem.retry_after),
        other => panic!("{other:?}"),
    };
    // While the first request's answer is awaited it can come at any moment: a second.
    assert_eq!(
        refused(declined(ClaimOutcome::DuplicateInflight {
            lease_expires_at: 900_000,
            retry_at: 625_000
        })),
        (409, "request-in-flight", Some(1))
    );
    // Held until its lease ends, with no answer to await: then.
    assert_eq!(
        refused(declined(ClaimOutcome::DuplicateInflight {
            lease_expires_at: 900_000,
            retry_at: 900_000
        })),
        (409, "request-in-flight", Some(900))
    );
    assert_eq!(
        refused(declined(ClaimOutcome::FingerprintMismatch)),
        (422, "idempotency-key-reused", None)
    );
    assert_eq!(
        refused(forwarded(OriginOutcome::TimedOut, None)),
        (504, "origin-timeout", None)
    );
    assert_eq!(
        refused(forwarded(OriginOutcome::NotSent, None)),
        (502, "origin-unreachable", None)
    );
    assert_eq!(
        refused(AuthorityReply::StoreFailed {
            retryable: true,
            detail: String::new()
        }),
        (503, "store-unavailable", Some(10))
    );
    assert_eq!(
        refused(AuthorityReply::Finalize(FinalizeOutcome::NotFound)),
        (500, "store-failed", None)
    );
}

#[test]
fn problems_are_rfc_9457_json() {
    let body = Problem::missing_key().body();
    assert_eq!(
        body["type"],
        "urn:webhook-dedup:problem:idempotency-key-missing"
    );
    assert_eq!(body["status"], 400);
    assert_eq!(body["title"], "Idempotency-Key required");
    assert!(body["detail"].is_string());
    assert_eq!(Problem::invalid_key(KeyError::TooLong).status, 400);
}

#[test]
fn only_statuses_a_response_can_carry_are_passed_on() {
    assert_eq!(passable_status(200), Some(200));
    assert_eq!(passable_status(599), Some(599));
    assert_eq!(passable_status(101), None);
    assert_eq!(passable_status(600), None);
    assert_eq!(invalid_status_problem(600).status, 502);
}

#[test]
fn answers_without_a_body_by_definition_are_204_205_and_304() {
    for status in [204, 205, 304] {
        assert!(has_no_body(status), "{status}");
    }
    for status in [200, 201, 202, 206, 300, 303, 400, 404, 500] {
        assert!(!has_no_body(status), "{status}");
    }
}

#[test]
fn a_blank_client_header_is_no_identity() {
    assert_eq!(client_identity(Some("Bearer alice")), Some("Bearer alice"));
    assert_eq!(client_identity(Some("")), None);
    assert_eq!(client_identity(Some("  \t ")), None);
    assert_eq!(client_identity(None), None);
}

#[test]
fn rate_limit_keys_hash_the_client_and_name_the_address() {
    let alice = rate_limit_client_key(Some("Bearer alice"));
    assert!(alice.starts_with("client:") && !alice.contains("alice"));
    assert_ne!(alice, rate_limit_client_key(Some("Bearer bob")));
    assert_eq!(rate_limit_client_key(None), "client:anonymous");
    assert_eq!(
        rate_limit_address_key(Some("203.0.113.9")),
        "ip:203.0.113.9"
    );
    // IPv6 by its /64: a caller rotating through its allocation stays one address.
    assert_eq!(
        rate_limit_address_key(Some("2001:db8:aa:1::1")),
        rate_limit_address_key(Some("2001:0db8:00aa:0001:ffff:1234:5678:9abc"))
    );
    assert_eq!(
        rate_limit_address_key(Some("2001:db8:aa:1::1")),
        "ip:2001:db8:aa:1::/64"
    );
    assert_ne!(
        rate_limit_address_key(Some("2001:db8:aa:1::1")),
        rate_limit_address_key(Some("2001:db8:aa:2::1"))
    );
    // An IPv4 address written as IPv6 is that IPv4 address.
    assert_eq!(
        rate_limit_address_key(Some("::ffff:203.0.113.9")),
        "ip:203.0.113.9"
    );
    assert_eq!(rate_limit_address_key(None), "ip:unknown");
    let problem = Problem::rate_limited();
    assert_eq!(
        (problem.status, problem.slug, problem.retry_after),
        (429, "rate-limited", Some(60))
    );
}

#[test]
fn handling_is_decided_before_any_io() {
    assert_eq!(handling("GET", Some("k"), true), Ok(Handling::PassThrough));
    assert_eq!(handling("OPTIONS", None, true), Ok(Handling::PassThrough));
    assert_eq!(handling("POST", None, false), Ok(Handling::PassThrough));
    assert_eq!(
        handling("POST", None, true).unwrap_err().slug,
        "idempotency-key-missing"
    );
    assert_eq!(
        handling("DELETE", Some("\"k-1\""), false),
        Ok(Handling::Keyed("k-1".into()))
    );
    assert_eq!(
        handling("PATCH", Some(""), false).unwrap_err().slug,
        "idempotency-key-invalid"
    );
    assert_eq!(live_outcome(201), Outcome::Executed);
    assert_eq!(live_outcome(503), Outcome::OriginFailed);
    assert_eq!(Problem::body_too_large(9).status, 413);
    let slow = Problem::body_timeout(10_000);
    assert_eq!((slow.status, slow.slug), (408, "body-timeout"));
    assert_eq!(Problem::door_off().status, 404);
    let problem = Problem::misconfigured(&[ConfigProblem {
        key: "API_ORIGIN_URL",
        problem: "x".into(),
    }]);
    assert!(problem.detail.contains("API_ORIGIN_URL"));
    assert!(!problem.detail.contains("x"), "the answer names keys only");
    assert_eq!(
        problem.note.as_deref(),
        Some("API_ORIGIN_URL: x"),
        "the log line says why"
    );
    let mut line = LogLine::new(Route::Idempotency);
    line.detail = Some("kept without a note".into());
    problem.log_on(&mut line);
    assert_eq!(line.outcome, Outcome::Refused("misconfigured"));
    assert_eq!(line.detail.as_deref(), Some("API_ORIGIN_URL: x"));
    Problem::missing_key().log_on(&mut line);
    assert_eq!(line.outcome, Outcome::Refused("idempotency-key-missing"));
    assert_eq!(line.detail.as_deref(), Some("API_ORIGIN_URL: x"));
}

/// A keyed method with a valid key is delivered under it, to the origin with the path and
/// query; without a key, or a safe method, it passes through; a bad key or path is refused.
#[test]
fn an_api_request_is_keyed_or_passed_through_by_its_method_and_key() {
    let config = crate::config::Config::load(|key| match key {
        "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
        "ORIGIN_URL" => Some("https://origin.example/hook".into()),
        "API_ORIGIN_URL" => Some("https://api.example/base".into()),
        _ => None,
    })
    .unwrap();
    let api = config.api.as_ref().unwrap();
    let keyed = route(api, "POST", ("/api/charges", Some("a=1")), Some("k-1")).unwrap();
    let ApiRoute::Keyed(keyed) = keyed else {
        panic!("a keyed POST is delivered");
    };
    assert_eq!(
        (keyed.key.as_str(), keyed.path_and_query.as_str()),
        ("k-1", "/api/charges?a=1")
    );
    assert_eq!(keyed.target, api.target("/api/charges?a=1"));
    let get = route(api, "GET", ("/api/charges", None), Some("k-1")).unwrap();
    assert_eq!(
        get,
        ApiRoute::PassThrough {
            target: api.target("/api/charges")
        }
    );
    let bare = route(api, "POST", ("/api/charges", None), None).unwrap();
    assert!(matches!(bare, ApiRoute::PassThrough { .. }));
    assert!(route(api, "POST", ("/api/charges", None), Some("")).is_err());
    assert!(route(api, "POST", ("/api/%2e%2e/admin", None), Some("k-1")).is_err());
}

/// The origin gets the client's headers by an allow-list: the request's own description and
/// credentials, the client header and `API_FORWARD_HEADERS`; never a hop-by-hop one, never one
/// through which the client poses as another address, host, URL or scheme (the finding's
/// `X-Original-URL`, `X-Rewrite-URL`, `X-Host`, `Fastly-Client-IP`, `X-Originating-IP`
/// among them), nor any other the operator did not name; `X-Real-IP` and `X-Forwarded-For`
/// are the address Cloudflare saw.
#[test]
fn the_origin_gets_the_client_s_headers_but_not_hop_by_hop_ones_nor_a_client_chosen_address() {
    let entries = [
        ("authorization", "Bearer alice"),
        ("connection", "keep-alive, X-Secret-Hop"),
        ("x-secret-hop", "only for the next hop"),
        ("host", "api.example"),
        ("x-real-ip", "6.6.6.6"),
        ("x-forwarded-for", "6.6.6.6"),
        ("x-forwarded-proto", "http"),
        ("x-forwarded-host", "evil.example"),
        ("x-forwarded-prefix", "/admin"),
        ("forwarded", "for=6.6.6.6;proto=http;host=evil.example"),
        ("true-client-ip", "6.6.6.6"),
        ("x-client-ip", "6.6.6.6"),
        ("x-original-url", "/admin"),
        ("x-rewrite-url", "/admin"),
        ("x-host", "evil.example"),
        ("fastly-client-ip", "6.6.6.6"),
        ("x-originating-ip", "6.6.6.6"),
        ("x-anything-new", "a proxy reads it"),
        ("cf-connecting-ip", "203.0.113.7"),
        ("x-request-id", "r-1"),
        ("x-tenant", "t-1"),
    ]
    .map(|(n, v)| (n.to_owned(), v.to_owned()));
    let sent = origin_request_headers(entries.clone(), &[]);
    assert_eq!(
        sent,
        [
            ("authorization", "Bearer alice"),
            ("x-request-id", "r-1"),
            ("x-real-ip", "203.0.113.7"),
            ("x-forwarded-for", "203.0.113.7"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned())),
        "the allow-list, and the address Cloudflare saw, never one the client chose"
    );
    let named = origin_request_headers(entries.clone(), &["x-tenant".to_owned()]);
    assert!(
        named.contains(&("x-tenant".to_owned(), "t-1".to_owned())),
        "a named one passes"
    );
    // No address from Cloudflare: no X-Real-IP nor X-Forwarded-For at all, never the client's.
    let without: Vec<(String, String)> = entries
        .into_iter()
        .filter(|(n, _)| n != "cf-connecting-ip")
        .collect();
    let sent = origin_request_headers(without, &[]);
    assert!(sent.iter().all(|(n, _)| !is_client_address_header(n)));
    assert_eq!(sent.len(), 2, "{sent:?}");
    for name in FORWARDED_HEADERS {
        assert!(
            !is_client_address_header(name) && !crate::origin::is_hop_by_hop(name),
            "{name}"
        );
    }
}

/// By default every answer of the door is sandboxed (a page the API serves cannot script the
/// operator page, which shares its origin): a live answer, a replay and a problem. With the
/// page on a host of its own (`ADMIN_PAGE_HOST`), answers on other hosts pass as they are,
/// and on the page's host they stay sandboxed.
#[test]
fn the_door_s_answers_are_sandboxed_unless_the_page_has_a_host_of_its_own() {
    assert_eq!(
        confinement(None, Some("api.example")),
        Confinement::Sandboxed
    );
    assert_eq!(
        confinement(Some("admin.example"), Some("api.example")),
        Confinement::AsIs
    );
    assert_eq!(
        confinement(Some("admin.example"), Some("ADMIN.example")),
        Confinement::Sandboxed
    );
    assert_eq!(
        confinement(Some("admin.example"), None),
        Confinement::Sandboxed
    );
    let policy = |headers: &[(String, String)]| {
        headers
            .iter()
            .filter(|(n, _)| n == "content-security-policy")
            .map(|(_, v)| v.clone())
            .collect::<Vec<_>>()
    };
    let head = Head {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/html".into()),
            (
                "content-security-policy".into(),
                "default-src 'self'".into(),
            ),
        ],
    };
    let live = live_head(&head, Confinement::Sandboxed).unwrap();
    assert_eq!(
        policy(&live.headers),
        ["default-src 'self'", "sandbox"],
        "the origin's kept too"
    );
    assert_eq!(
        policy(&live_head(&head, Confinement::AsIs).unwrap().headers),
        ["default-src 'self'"]
    );
    let cached = CachedResponse {
        status: 200,
        headers: vec![("content-type".into(), "text/html".into())],
        body: b"<script>1</script>".to_vec(),
        body_omitted: false,
        body_lost: false,
    };
    let replayed = replay(&cached, Confinement::Sandboxed).unwrap();
    assert_eq!(policy(&replayed.headers), ["sandbox"]);
    assert_eq!(policy(&Problem::door_off().http().headers), ["sandbox"]);
}

#[test]
fn encoded_separators_and_dot_segments_in_the_path_are_refused() {
    for path in [
        "/api/a/..%2F..%2Fadmin",
        "/api/a%2fb",
        "/api/a%5Cb",
        "/api/a%5cb",
        "/api/a\\b",
        "/api/a%252Fb",
        "/api/%2E%2E/x",
        "/api/.%2e/x",
        "/api/%2e/x",
        "/api/x/..",
        "/api/./x",
        "/api/%252e%252e/x",
    ] {
        let refused = check_path(path).unwrap_err();
        assert_eq!(
            (refused.status, refused.slug),
            (400, "path-refused"),
            "{path}"
        );
    }
    for path in PLAIN_PATHS {
        assert_eq!(check_path(path), Ok(()), "{path}");
    }
}

/// Paths no common origin reads as another: each is passed on.
const PLAIN_PATHS: &[&str] = &[
    "/api/charges",
    "/api/charges/ch_1/refund",
    "/api/files/a.b",
    "/api/files/..hidden",
    "/api/files/...",
    "/api/a%20b",
    "/api/caf%C3%A9",
    "/api/search/100%25",
    "/api/tag/a%2Bb",
    "/api/",
    "/api//double",
];

/// The forms a servlet container, Spring, IIS or a double-decoding proxy reads as a
/// dot-segment, a separator or a parameter, each refused as a table: path parameters (`..;`,
/// `.;`, `;jsessionid=`, encoded `;`), dot-segments encoded once, twice, thrice, mixed, with
/// IIS's `%u`, or overlong in UTF-8, backslashes raw and encoded, control characters, and
/// malformed escapes. The plain paths beside them pass.
#[test]
fn path_parameters_and_every_encoding_of_a_dot_segment_are_refused() {
    let refused = [
        // Path parameters: Tomcat, Jetty and older Spring drop them, then resolve `..`.
        "/api/..;/..;/admin",
        "/api/.;/admin",
        "/api/x/..;jsessionid=1/admin",
        "/api/%2e%2e;/admin",
        "/api/%2E%2E%3B/admin",
        "/api/..%3b/admin",
        "/api/items;v=2",
        "/api/x;",
        "/api/..%253b/admin",
        // Dot-segments, encoded and mixed.
        "/api/.%2E/admin",
        "/api/%2e./admin",
        "/api/%252e./admin",
        "/api/%25252e%25252e/admin",
        "/api/%2525252e/admin",
        "/api/%u002e%u002e/admin",
        "/api/%25u002e/admin",
        // Overlong UTF-8 encodings of `.` and `/`, and bytes that are no UTF-8 at all.
        "/api/%c0%ae%c0%ae/admin",
        "/api/%e0%80%ae%e0%80%ae/admin",
        "/api/x%c0%afadmin",
        "/api/%25c0%25ae/admin",
        "/api/caf%E9",
        // Backslashes and separators.
        "/api/..\\admin",
        "/api/..%5cadmin",
        "/api/..%255cadmin",
        "/api/%2e%2e%2fadmin",
        // Control characters and malformed escapes.
        "/api/x%00.json",
        "/api/x%0d%0aSet-Cookie:a",
        "/api/x%09",
        "/api/x%zz",
        "/api/x%2",
        "/api/x%",
    ];
    for path in refused {
        let problem = check_path(path).unwrap_err();
        assert_eq!(
            (problem.status, problem.slug),
            (400, "path-refused"),
            "{path}"
        );
    }
    for path in PLAIN_PATHS {
        assert_eq!(check_path(path), Ok(()), "{path}");
    }
}

#[test]
fn a_runtime_error_s_text_goes_to_the_log_never_to_the_client() {
    let cause = "TypeError: fetch failed for https://user:pass@api.example/x";
    let problem = Problem::internal(cause);
    assert_eq!((problem.status, problem.slug), (500, "internal-error"));
    assert_eq!(problem.note.as_deref(), Some(cause), "the log line has it");
    let sent = String::from_utf8(problem.http().body.unwrap()).unwrap();
    assert!(
        !sent.contains("user:pass") && !sent.contains("TypeError"),
        "{sent}"
    );
    assert!(sent.contains("an internal error"));
}

#[test]
fn replays_keep_the_cors_and_browser_safety_headers_never_a_cookie() {
    let kept = [
        ("Access-Control-Allow-Origin", "https://app.example"),
        ("Access-Control-Allow-Credentials", "true"),
        ("Access-Control-Expose-Headers", "Request-Id"),
        ("Content-Security-Policy", "default-src 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Vary", "Origin"),
    ];
    let mut headers: Vec<(String, String)> = kept
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    headers.push(("Set-Cookie".into(), "session=secret".into()));
    let cached = to_cache(200, &headers, BodyKept::Whole(b"{}".to_vec()));
    let replayed = replay(&cached, Confinement::AsIs).unwrap();
    for (name, value) in kept {
        let name = name.to_ascii_lowercase();
        assert!(
            replayed.headers.contains(&(name.clone(), value.to_owned())),
            "{name} kept"
        );
    }
    assert!(replayed.headers.iter().all(|(n, _)| n != "set-cookie"));
}

proptest::proptest! {
    #[test]
    fn the_key_parser_never_panics_and_keeps_keys_printable(raw in proptest::prop_oneof!["\"?[ -~]{0,300}\"?", proptest::prelude::any::<String>()]) {
        if let Ok(key) = parse_key(&raw) {
            proptest::prop_assert!((1..=255).contains(&key.len()));
            proptest::prop_assert!(key.bytes().all(|b| (0x20..=0x7e).contains(&b)));
        }
    }
}
