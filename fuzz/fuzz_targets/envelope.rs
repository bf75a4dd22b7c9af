//! Event envelope parsing: never panics; an accepted event always has a valid event id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use webhook_dedup::providers::stripe::envelope;

fuzz_target!(|data: &[u8]| {
    if let Ok(event) = envelope::parse(data) {
        assert!(envelope::is_event_id(&event.id));
    }
});
