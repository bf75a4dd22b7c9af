//! Host tests of the signature and envelope parsers.

use super::envelope::{self, Created, EnvelopeError};
use super::signature::{self, SignatureError};

const NOW: i64 = 1_700_000_000;
const BODY: &[u8] = br#"{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false,"created":1700000000,"data":{"object":{}}}"#;

fn secrets(list: &str) -> Vec<crate::secret::Secret> {
    crate::secret::secret_list(list).unwrap()
}

fn header(secret: &str, t: i64, body: &[u8]) -> String {
    format!(
        "t={t},v1={}",
        hex::encode(signature::sign(&secrets(secret)[0], t, body))
    )
}

fn verify(h: Option<&str>, body: &[u8], list: &str) -> Result<i64, SignatureError> {
    signature::verify(h, body, &secrets(list), NOW, 300)
}

/// Headers made by the `stripe` npm package (23.1.0, `webhooks.generateTestHeaderString`) for
/// these bodies with secret `whsec_crosscheck_secret` at t=1700000000: both implementations
/// must agree byte for byte, including on a body with non-ASCII UTF-8.
#[test]
fn matches_the_stripe_library() {
    let vectors: [(&[u8], &str); 2] = [
        (
            br#"{"id":"evt_crosscheck","object":"event","type":"charge.succeeded"}"#,
            "t=1700000000,v1=f7ddcacbfb662b2b56a6fae05d8d991f53c0bac479826c3a7c31f451304f4565",
        ),
        (
            "{\"id\":\"evt_unicode_\\u00e9\",\"note\":\"caf\u{e9} \u{2603}\",\"type\":\"x\"}"
                .as_bytes(),
            "t=1700000000,v1=1abfef36b660d8b0454207ef99c986c2a80c644016b322d4bf3e35f0f07590f6",
        ),
    ];
    for (body, from_stripe) in vectors {
        assert_eq!(header("whsec_crosscheck_secret", NOW, body), from_stripe);
        assert_eq!(
            signature::verify(
                Some(from_stripe),
                body,
                &secrets("whsec_crosscheck_secret"),
                NOW,
                300
            ),
            Ok(NOW)
        );
    }
}

#[test]
fn valid_signature_is_accepted_with_its_timestamp() {
    let h = header("whsec_a", NOW - 10, BODY);
    assert_eq!(verify(Some(&h), BODY, "whsec_a"), Ok(NOW - 10));
}

#[test]
fn any_v1_against_any_secret_during_rotation() {
    let old = header("whsec_old", NOW, BODY);
    let new = header("whsec_new", NOW, BODY);
    let both = format!("{new},{}", old.split_once(',').unwrap().1);
    assert_eq!(verify(Some(&both), BODY, "whsec_old"), Ok(NOW));
    assert_eq!(verify(Some(&both), BODY, "whsec_new"), Ok(NOW));
    assert_eq!(verify(Some(&old), BODY, "whsec_new,whsec_old"), Ok(NOW));
    assert_eq!(
        verify(Some(&old), BODY, "whsec_other"),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn tampered_body_or_timestamp_is_a_mismatch() {
    let h = header("whsec_a", NOW, BODY);
    let mut tampered = BODY.to_vec();
    tampered[10] ^= 1;
    assert_eq!(
        verify(Some(&h), &tampered, "whsec_a"),
        Err(SignatureError::Mismatch)
    );
    let moved = h.replace(&format!("t={NOW}"), &format!("t={}", NOW - 1));
    assert_eq!(
        verify(Some(&moved), BODY, "whsec_a"),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn old_and_future_timestamps_are_refused() {
    let old = header("whsec_a", NOW - 301, BODY);
    assert_eq!(
        verify(Some(&old), BODY, "whsec_a"),
        Err(SignatureError::TimestampTooOld { age_seconds: 301 })
    );
    let edge = header("whsec_a", NOW - 300, BODY);
    assert!(verify(Some(&edge), BODY, "whsec_a").is_ok());
    let future = header("whsec_a", NOW + 61, BODY);
    assert_eq!(
        verify(Some(&future), BODY, "whsec_a"),
        Err(SignatureError::TimestampInFuture { ahead_seconds: 61 })
    );
    let skew = header("whsec_a", NOW + 60, BODY);
    assert!(verify(Some(&skew), BODY, "whsec_a").is_ok());
}

#[test]
fn a_tolerance_under_a_minute_also_bounds_how_far_ahead_a_timestamp_may_be() {
    // So a signature is accepted for at most twice the tolerance, which the retention check
    // (longer than twice the tolerance) relies on.
    let within = |t: i64| {
        signature::verify(
            Some(&header("whsec_a", t, BODY)),
            BODY,
            &secrets("whsec_a"),
            NOW,
            17,
        )
    };
    assert!(within(NOW + 17).is_ok());
    assert_eq!(
        within(NOW + 18),
        Err(SignatureError::TimestampInFuture { ahead_seconds: 18 })
    );
    assert!(within(NOW - 17).is_ok());
}

#[test]
fn header_variants() {
    let good = header("whsec_a", NOW, BODY);
    let v1 = good.split_once(',').unwrap().1.to_owned();
    let cases: Vec<(String, SignatureError)> = vec![
        ("".into(), SignatureError::Missing),
        ("   ".into(), SignatureError::Missing),
        (v1.clone(), SignatureError::Malformed("no t timestamp")),
        (
            format!("t={NOW},t={NOW},{v1}"),
            SignatureError::Malformed("t appears twice"),
        ),
        (
            format!("t=abc,{v1}"),
            SignatureError::Malformed("t is not a Unix timestamp"),
        ),
        (
            format!("t=-5,{v1}"),
            SignatureError::Malformed("t is not a Unix timestamp"),
        ),
        (
            format!("t=,{v1}"),
            SignatureError::Malformed("t is not a Unix timestamp"),
        ),
        (format!("t={NOW}"), SignatureError::NoV1Signature),
        (
            format!("t={NOW},v0={}", "ab".repeat(32)),
            SignatureError::NoV1Signature,
        ),
        (
            format!("t={NOW},v1=xyz"),
            SignatureError::Malformed("no v1 is 64 hex digits"),
        ),
        (
            format!("t={NOW},v1={}", "ab".repeat(31)),
            SignatureError::Malformed("no v1 is 64 hex digits"),
        ),
        (
            format!("t={NOW},v1={},v1=", "ab".repeat(33)),
            SignatureError::Malformed("no v1 is 64 hex digits"),
        ),
        (
            format!("t={NOW},{v1},t={NOW}"),
            SignatureError::Malformed("t appears twice"),
        ),
        (
            format!("t={NOW},{}", vec![v1.as_str(); 17].join(",")),
            SignatureError::Malformed("too many v1 signatures"),
        ),
        (
            format!("t={NOW},{v1},x={}", "a".repeat(5000)),
            SignatureError::Malformed("header too long"),
        ),
    ];
    for (h, expected) in cases {
        assert_eq!(verify(Some(&h), BODY, "whsec_a"), Err(expected), "{h:.80}");
    }
    assert_eq!(verify(None, BODY, "whsec_a"), Err(SignatureError::Missing));
    // As Stripe's libraries read it: empty parts, parts without `=`, unknown keys and schemes
    // are ignored, and a malformed v1 beside a valid one is skipped.
    for tolerated in [
        format!("t={NOW},{v1},"),
        format!(",t={NOW},,{v1}"),
        format!("t={NOW},garbage,{v1}"),
        format!("t={NOW},=x,{v1}"),
        format!("t={NOW},v0={},v2=zz,{v1}", "00".repeat(32)),
        format!("t={NOW},v1=not-hex,{v1}"),
        format!("t={NOW},v1={},{v1}", "ab".repeat(31)),
        format!("{v1},t={NOW}"),
    ] {
        assert_eq!(
            verify(Some(&tolerated), BODY, "whsec_a"),
            Ok(NOW),
            "{tolerated}"
        );
    }
    // v0 and unknown schemes next to a good v1 are ignored; spaces around parts are tolerated.
    let with_decoys = format!("t={NOW}, v0={}, scheme9=zz, {v1}", "00".repeat(32));
    assert_eq!(verify(Some(&with_decoys), BODY, "whsec_a"), Ok(NOW));
    let upper = good
        .to_uppercase()
        .replace("T=", "t=")
        .replace("V1=", "v1=");
    assert_eq!(verify(Some(&upper), BODY, "whsec_a"), Ok(NOW));
}

#[test]
fn refusals_never_quote_the_body() {
    for body in [
        r#"{"id":"evt_1","type":"x","livemode":"cus_secret@example.com"}"#,
        r#"{"id":"evt_1","type":"x","created":"cus_secret@example.com"}"#,
        r#"{"id":"evt_1","type":["cus_secret@example.com"]}"#,
        r#"{"id":"evt_1","type":"x","object":"cus_secret@example.com"}"#,
        r#"cus_secret@example.com"#,
        r#"{"id":"evt_1","type":"x"}cus_secret@example.com"#,
    ] {
        let error = envelope::parse(body.as_bytes()).unwrap_err();
        assert!(!error.to_string().contains("secret"), "{error}");
    }
    let missing = envelope::parse(br#"{"type":"x"}"#).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "not a Stripe event: missing field `id`"
    );
    let twice = envelope::parse(br#"{"id":"evt_1","type":"cus_secret","type":"x"}"#).unwrap_err();
    assert_eq!(twice, EnvelopeError::DuplicateField);
    assert!(!twice.to_string().contains("secret"));
}

#[test]
fn envelope_reads_only_what_it_needs() {
    let envelope = envelope::parse(BODY).unwrap();
    assert_eq!(envelope.id, "evt_1");
    assert_eq!(envelope.event_type, "invoice.paid");
    assert_eq!(envelope.livemode, Some(false));
    assert_eq!(envelope.created, Some(Created::Unix(1_700_000_000)));
    let minimal = envelope::parse(br#"{"id":"evt_2","type":"x"}"#).unwrap();
    assert_eq!((minimal.livemode, minimal.created), (None, None));
}

/// A thin event as Stripe's event destinations (API v2) send it.
const THIN: &[u8] = br#"{"id":"evt_test_65R9Ijk8e2HZ7Y2dKs41SLWSgDuHQ2nB","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","livemode":false,"created":"2024-09-17T06:20:52.246Z","related_object":{"id":"mtr_test_61R9IjHIgdOAD7IUw41HUJ6bsfGRFHZD","type":"billing.meter","url":"/v1/billing/meters/mtr_test_61R9IjHIgdOAD7IUw41HUJ6bsfGRFHZD"}}"#;

#[test]
fn thin_events_are_events() {
    let thin = envelope::parse(THIN).unwrap();
    assert_eq!(thin.id, "evt_test_65R9Ijk8e2HZ7Y2dKs41SLWSgDuHQ2nB");
    assert_eq!(thin.event_type, "v1.billing.meter.error_report_triggered");
    assert_eq!(
        thin.created,
        Some(Created::Rfc3339("2024-09-17T06:20:52.246Z".into()))
    );
    let later = br#"{"id":"evt_1","object":"v3.core.event","type":"x","created":"2026-11-30T12:00:00+01:00"}"#;
    assert!(envelope::parse(later).is_ok(), "a later event object");
    for (text, ok) in [
        ("2024-09-17T06:20:52Z", true),
        ("2024-09-17T06:20:52.1-05:30", true),
        ("2024-09-17 06:20:52Z", false),
        ("2024-09-17T06:20:52", false),
        ("2024-09-17T06:20:52.Z", false),
        ("2024-9-17T06:20:52Z", false),
        ("now", false),
    ] {
        assert_eq!(envelope::is_rfc3339(text), ok, "{text}");
    }
}

#[test]
fn bad_envelopes_are_refused_with_a_code() {
    let long_id = format!(r#"{{"id":"evt_{}","type":"x"}}"#, "a".repeat(252));
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "invalid_json"),
        (b"not json".to_vec(), "invalid_json"),
        (
            br#"{"id":"evt_1","type":"x"} trailing"#.to_vec(),
            "invalid_json",
        ),
        (br#"{"id":"evt_1","type":"x""#.to_vec(), "invalid_json"),
        (b"[]".to_vec(), "invalid_envelope"),
        (b"\"evt_1\"".to_vec(), "invalid_envelope"),
        (b"[1,".to_vec(), "invalid_json"),
        (b"{}".to_vec(), "invalid_envelope"),
        (br#"{"type":"x"}"#.to_vec(), "invalid_envelope"),
        (br#"{"id":"evt_1"}"#.to_vec(), "invalid_envelope"),
        (br#"{"id":42,"type":"x"}"#.to_vec(), "invalid_envelope"),
        (
            br#"{"id":"evt_1","type":"x","livemode":"yes"}"#.to_vec(),
            "invalid_envelope",
        ),
        (
            br#"{"id":"evt_1","type":"x","created":"now"}"#.to_vec(),
            "invalid_envelope",
        ),
        (
            br#"{"id":"evt_1","type":"x","object":"charge"}"#.to_vec(),
            "invalid_envelope",
        ),
        (
            br#"{"id":"evt_1","type":"x","object":"v2.core.event_destination"}"#.to_vec(),
            "invalid_envelope",
        ),
        (
            br#"{"id":"evt_1","type":"x","object":7}"#.to_vec(),
            "invalid_envelope",
        ),
        (
            br#"{"id":"evt_1","type":"x","created":1.5}"#.to_vec(),
            "invalid_envelope",
        ),
        (
            br#"{"id":"evt_1","id":"evt_2","type":"x"}"#.to_vec(),
            "invalid_envelope",
        ),
        (br#"{"id":"","type":"x"}"#.to_vec(), "invalid_event_id"),
        (br#"{"id":"evt_","type":"x"}"#.to_vec(), "invalid_event_id"),
        (
            br#"{"id":"ch_123","type":"x"}"#.to_vec(),
            "invalid_event_id",
        ),
        (
            br#"{"id":"evt_a/b","type":"x"}"#.to_vec(),
            "invalid_event_id",
        ),
        (
            "{\"id\":\"evt_caf\u{e9}\",\"type\":\"x\"}"
                .as_bytes()
                .to_vec(),
            "invalid_event_id",
        ),
        (long_id.into_bytes(), "invalid_event_id"),
    ];
    for (body, code) in cases {
        let error: EnvelopeError = envelope::parse(&body).unwrap_err();
        assert_eq!(error.code(), code, "{}", String::from_utf8_lossy(&body));
    }
    let longest = format!(r#"{{"id":"evt_{}","type":"x"}}"#, "a".repeat(251));
    assert!(envelope::parse(longest.as_bytes()).is_ok());
}

// ---- A little fuzzing in every test run ------------------------------------------------------

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    /// Header-like text: mostly the characters a real header is made of, so that the parser's
    /// deeper branches are reached, plus anything at all.
    fn header_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[tv01=,a-f0-9 ]{0,200}",
            "t=[0-9]{1,12},v1=[0-9a-f]{60,68}(,v[01]=[0-9a-zA-Z]{0,70}){0,3}",
            any::<String>(),
        ]
    }

    /// HMAC-SHA256 written from its definition (RFC 2104) over `sha2` alone: an oracle
    /// independent of the `hmac` crate the product uses.
    fn oracle_hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut block = [0u8; 64];
        if key.len() > 64 {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| block.map(|k| k ^ byte);
        let inner = Sha256::new()
            .chain_update(pad(0x36))
            .chain_update(message)
            .finalize();
        Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize()
            .into()
    }

    const SECRETS: [&str; 2] = ["whsec_fuzz_one", "whsec_fuzz_two"];

    /// One part of a header: a good or wrong timestamp, a good or wrong signature, decoys.
    #[derive(Clone, Debug)]
    enum Part {
        Time(i64),
        GoodV1 { secret: usize, t: i64 },
        WrongV1([u8; 32]),
        JunkV1(String),
        Other(String),
    }

    fn part() -> impl Strategy<Value = Part> {
        let t = prop_oneof![NOW - 400..NOW + 100, Just(NOW), 0i64..2_000_000_000];
        prop_oneof![
            3 => t.clone().prop_map(Part::Time),
            3 => (0..2usize, t).prop_map(|(secret, t)| Part::GoodV1 { secret, t }),
            1 => any::<[u8; 32]>().prop_map(Part::WrongV1),
            1 => "[0-9a-zA-Z]{0,70}".prop_map(Part::JunkV1),
            1 => prop_oneof!["", " ", "v0=[0-9a-f]{64}", "[a-z0-9]{1,4}=[ -+--~]{0,10}", "[ -+--~]{0,10}"].prop_map(Part::Other),
        ]
    }

    fn render(part: &Part, body: &[u8]) -> String {
        match part {
            Part::Time(t) => format!("t={t}"),
            Part::GoodV1 { secret, t } => {
                let mut message = format!("{t}.").into_bytes();
                message.extend_from_slice(body);
                format!(
                    "v1={}",
                    hex::encode(oracle_hmac(SECRETS[*secret].as_bytes(), &message))
                )
            }
            Part::WrongV1(mac) => format!("v1={}", hex::encode(mac)),
            Part::JunkV1(text) => format!("v1={text}"),
            Part::Other(text) => text.clone(),
        }
    }

    /// What the header should get, by the documented rules, checked with the oracle HMAC.
    fn expected(header: &str, body: &[u8], secrets: &[&str]) -> Option<i64> {
        if header.trim().is_empty() || header.len() > signature::MAX_HEADER_BYTES {
            return None;
        }
        let mut times = Vec::new();
        let mut macs = Vec::new();
        for item in header.split(',') {
            match item.trim().split_once('=') {
                Some(("t", value)) => times.push(value.to_owned()),
                Some(("v1", value))
                    if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) =>
                {
                    macs.push(value.to_ascii_lowercase())
                }
                _ => {}
            }
        }
        let [time] = times.as_slice() else {
            return None;
        };
        if time.is_empty()
            || time.len() > 12
            || !time.bytes().all(|b| b.is_ascii_digit())
            || macs.len() > signature::MAX_SIGNATURES
        {
            return None;
        }
        let t: i64 = time.parse().ok()?;
        let mut message = format!("{t}.").into_bytes();
        message.extend_from_slice(body);
        let valid = secrets
            .iter()
            .any(|secret| macs.contains(&hex::encode(oracle_hmac(secret.as_bytes(), &message))));
        (valid && (NOW - 300..=NOW + 60).contains(&t)).then_some(t)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn a_header_is_accepted_exactly_when_a_fresh_signature_matches(parts in prop::collection::vec(part(), 0..6), body in any::<Vec<u8>>(), both in any::<bool>()) {
            let header = parts.iter().map(|p| render(p, &body)).collect::<Vec<_>>().join(",");
            let configured: &[&str] = if both { &SECRETS } else { &SECRETS[..1] };
            let verdict = signature::verify(Some(&header), &body, &secrets(&configured.join(",")), NOW, 300);
            prop_assert_eq!(verdict.ok(), expected(&header, &body, configured), "{}", header);
        }

        #[test]
        fn arbitrary_text_never_panics_and_is_refused_unless_signed(header in header_text(), body in any::<Vec<u8>>()) {
            let verdict = signature::verify(Some(&header), &body, &secrets(SECRETS[0]), NOW, 300);
            prop_assert_eq!(verdict.ok(), expected(&header, &body, &SECRETS[..1]));
        }

        #[test]
        fn a_signature_checks_only_its_own_body(body in any::<Vec<u8>>(), other in any::<Vec<u8>>(), t in NOW - 300..NOW + 60) {
            let h = header("whsec_fuzz", t, &body);
            prop_assert_eq!(verify(Some(&h), &body, "whsec_fuzz"), Ok(t));
            if other != body {
                prop_assert_eq!(verify(Some(&h), &other, "whsec_fuzz"), Err(SignatureError::Mismatch));
            }
        }

        #[test]
        fn the_envelope_parser_never_panics(body in prop_oneof![
            any::<Vec<u8>>(),
            "\\{\"id\":\"evt_[a-zA-Z0-9_]{0,20}\",\"type\":\"[a-z.]{0,20}\"(,\"livemode\":(true|false|1|\"x\"))?\\}".prop_map(String::into_bytes),
        ]) {
            // Accepted exactly when the body is a JSON object whose `id` is an event id and
            // `type` a string (checked here through serde_json's own value type).
            let value: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
            let id_ok = value.as_ref().and_then(|v| v.get("id")).and_then(|v| v.as_str()).is_some_and(envelope::is_event_id);
            let type_ok = value.as_ref().and_then(|v| v.get("type")).is_some_and(|v| v.is_string());
            let livemode_ok = value.as_ref().and_then(|v| v.get("livemode")).is_none_or(|v| v.is_boolean());
            match envelope::parse(&body) {
                Ok(event) => {
                    prop_assert!(id_ok && type_ok && livemode_ok);
                    prop_assert_eq!(Some(event.id.as_str()), value.as_ref().and_then(|v| v["id"].as_str()));
                }
                Err(_) => prop_assert!(!(id_ok && type_ok && livemode_ok)),
            }
        }
    }
}

/// A number from the runtime's `JSON.parse` is an integer only when it is whole and exact.
#[test]
fn a_parsed_number_is_an_integer_only_when_whole_and_exact() {
    use crate::providers::stripe::envelope::FieldValue;
    assert_eq!(
        FieldValue::of_number(1_700_000_000.0),
        FieldValue::Integer(1_700_000_000)
    );
    assert_eq!(FieldValue::of_number(-3.0), FieldValue::Integer(-3));
    assert_eq!(FieldValue::of_number(1.5), FieldValue::Other);
    assert_eq!(
        FieldValue::of_number(9.007_199_254_740_992e15),
        FieldValue::Other
    );
    assert_eq!(FieldValue::of_number(f64::NAN), FieldValue::Other);
}
