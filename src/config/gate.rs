//! How queued attempts treat each origin as a whole (see [`crate::origin_gate`]): the caps,
//! the breaker and its probe.

use super::keys::{
    ORIGIN_BREAKER_FAILURES, ORIGIN_HEALTH_URL, ORIGIN_MAX_IN_FLIGHT, ORIGIN_MAX_RPS,
    ORIGIN_PROBE_SECONDS,
};
use super::reader::Reader;
use crate::claim::Millis;

/// Default attempts started per second per origin: what a small handler takes without falling
/// over, and a backlog of 100,000 events drained in under an hour and a half.
pub const DEFAULT_ORIGIN_MAX_RPS: u64 = 20;
/// Default attempts at one origin at once: a small handler's worker pool.
pub const DEFAULT_ORIGIN_MAX_IN_FLIGHT: u64 = 10;
/// Default failures in a row that open the breaker.
pub const DEFAULT_ORIGIN_BREAKER_FAILURES: u64 = 5;
/// Default time between probes while the breaker is open.
pub const DEFAULT_ORIGIN_PROBE_SECONDS: u64 = 30;

/// The origin gate's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateConfig {
    /// `ORIGIN_MAX_RPS`; 0 for no cap.
    pub max_rps: u32,
    /// `ORIGIN_MAX_IN_FLIGHT`; 0 for no cap.
    pub max_in_flight: u32,
    /// `ORIGIN_BREAKER_FAILURES`; 0 for no breaker.
    pub breaker_failures: u32,
    /// `ORIGIN_PROBE_SECONDS`, in milliseconds.
    pub probe_ms: Millis,
    /// `ORIGIN_HEALTH_URL`: when set, the gate probes it (a `GET`; any answer below 500 closes
    /// the breaker) and no queued event is sent as a probe.
    pub health_url: Option<url::Url>,
}

impl GateConfig {
    /// Reads the gate's keys.
    pub fn load<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> GateConfig {
        let max_rps = r.integer(ORIGIN_MAX_RPS, DEFAULT_ORIGIN_MAX_RPS, 0, 500) as u32;
        let max_in_flight =
            r.integer(ORIGIN_MAX_IN_FLIGHT, DEFAULT_ORIGIN_MAX_IN_FLIGHT, 0, 1_000) as u32;
        let breaker_failures = r.integer(
            ORIGIN_BREAKER_FAILURES,
            DEFAULT_ORIGIN_BREAKER_FAILURES,
            0,
            1_000,
        ) as u32;
        let probe_seconds = r.integer(ORIGIN_PROBE_SECONDS, DEFAULT_ORIGIN_PROBE_SECONDS, 1, 3_600);
        GateConfig {
            max_rps,
            max_in_flight,
            breaker_failures,
            probe_ms: probe_seconds * 1_000,
            health_url: r.url(ORIGIN_HEALTH_URL),
        }
    }
}
