//! Host tests of the Idempotency-Key rules.

use super::*;
use crate::authority::Won;
use crate::claim::{Fence, FinalizeOutcome};

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
fn which_answers_are_final() {
    for status in [200, 201, 204, 299, 400, 401, 403, 404, 410, 422, 499] {
        assert!(is_final(status), "{status}");
    }
    for status in [100, 301, 304, 408, 409, 425, 429, 500, 502, 503, 504] {
        assert!(!is_final(status), "{status}");
    }
}

#[test]
fn only_safe_headers_are_cached_and_large_bodies_are_omitted() {
    let headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Location".to_owned(), "/charges/1".to_owned()),
        ("Set-Cookie".to_owned(), "session=secret".to_owned()),
        ("X-Request-Id".to_owned(), "req_1".to_owned()),
        (
            "Date".to_owned(),
            "Mon, 30 Nov 2026 00:00:00 GMT".to_owned(),
        ),
    ];
    let cached = to_cache(201, &headers, b"{\"id\":1}", 100);
    assert_eq!(
        cached.headers,
        vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("location".to_owned(), "/charges/1".to_owned()),
            ("x-request-id".to_owned(), "req_1".to_owned()),
        ]
    );
    assert_eq!((cached.status, cached.body_omitted), (201, false));
    assert_eq!(cached.body, b"{\"id\":1}");
    let big = to_cache(200, &headers, &[7; 101], 100);
    assert!(big.body_omitted);
    assert!(big.body.is_empty());
    assert_eq!(to_cache(200, &headers, &[7; 100], 100).body.len(), 100);
}

#[test]
fn claim_replies_map_to_actions() {
    let fence = Fence::new(1, [3; 16]);
    assert_eq!(
        after_claim(
            AuthorityReply::Claim(ClaimOutcome::Claimed {
                fence: fence.clone(),
                attempt: 1,
                takeover: false,
                lease_expires_at: 9
            }),
            0
        ),
        Ok(Won {
            fence,
            attempt: 1,
            takeover: false
        })
    );
    let cached = to_cache(201, &[], b"x", 10);
    assert_eq!(
        after_claim(
            AuthorityReply::Claim(ClaimOutcome::DuplicateProcessed {
                finished_at: 1,
                response: Some(cached.clone())
            }),
            0
        ),
        Err(Declined::Replay(cached))
    );
    let refused = |reply| match after_claim(reply, 0) {
        Err(Declined::Refuse(problem)) => (problem.status, problem.slug, problem.retry_after),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(AuthorityReply::Claim(ClaimOutcome::DuplicateInflight {
            lease_expires_at: 2_500
        })),
        (409, "request-in-flight", Some(3))
    );
    assert_eq!(
        refused(AuthorityReply::Claim(ClaimOutcome::FingerprintMismatch)),
        (422, "idempotency-key-reused", None)
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
