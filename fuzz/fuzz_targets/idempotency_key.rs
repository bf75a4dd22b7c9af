//! Idempotency-Key parsing: never panics; an accepted key is 1 to 255 printable ASCII bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webhook_dedup::idempotency::parse_key;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(key) = parse_key(raw) {
        assert!((1..=255).contains(&key.len()));
        assert!(key.bytes().all(|b| (0x20..=0x7e).contains(&b)));
    }
});
