//! The worker's and the object's clock.

/// Now, in milliseconds since the Unix epoch, by the runtime's clock (`Date.now()`, which makes
/// no `Date` object).
pub fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}
