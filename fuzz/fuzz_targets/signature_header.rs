//! `Stripe-Signature` parsing and verification: never panics; anything accepted has at least
//! one and at most 16 `v1` signatures.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webhook_dedup::config::Config;
use webhook_dedup::providers::stripe::signature;

fuzz_target!(|data: &[u8]| {
    let split = data
        .first()
        .map_or(0, |&b| b as usize)
        .min(data.len().saturating_sub(1));
    let (header, body) = data.split_at(split);
    let Ok(header) = std::str::from_utf8(header) else {
        return;
    };
    if let Ok(parsed) = signature::parse_header(header) {
        assert!(!parsed.v1.is_empty() && parsed.v1.len() <= signature::MAX_SIGNATURES);
    }
    let secrets = Config::load(|k| match k {
        "STRIPE_WEBHOOK_SECRET" => Some("whsec_fuzz".into()),
        "ORIGIN_URL" => Some("http://127.0.0.1/".into()),
        _ => None,
    })
    .expect("valid configuration")
    .webhook_secrets;
    let _ = signature::verify(Some(header), body, &secrets, 1_700_000_000, 300);
});
