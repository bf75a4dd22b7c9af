//! How every delivery runs: the lease, the forward time-out, the late-answer wait, the body cap
//! and the body's read deadline.

use super::keys::{
    BODY_READ_TIMEOUT_MS, FORWARD_TIMEOUT_MS, LATE_ANSWER_WAIT_SECONDS, LEASE_SECONDS,
    MAX_BODY_BYTES,
};
use super::reader::Reader;
use crate::claim::ClaimPolicy;

/// Default lease: how long a claim is honoured before another delivery may take it over.
pub const DEFAULT_LEASE_SECONDS: u64 = 15 * 60;
/// Default forward time-out: when the sender is answered at the latest.
pub const DEFAULT_FORWARD_TIMEOUT_MS: u64 = 25_000;
/// Longest forward time-out: the worker's request to the claim authority runs in `waitUntil`,
/// which the runtime lets run about 30 s after the sender hangs up.
pub const MAX_FORWARD_TIMEOUT_MS: u64 = 25_000;
/// Default wait for a late answer after the forward time-out: ten minutes, well inside the
/// default lease with its margin (see [`settle_margin_ms`]).
pub const DEFAULT_LATE_ANSWER_WAIT_SECONDS: u64 = 10 * 60;
/// Default cap on a request body.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 512 * 1024;
/// Default read deadline of a request body: a sender that has not sent its whole body by then
/// is answered 408.
pub const DEFAULT_BODY_READ_TIMEOUT_MS: u64 = 10_000;
/// Longest read deadline of a request body.
pub const MAX_BODY_READ_TIMEOUT_MS: u64 = 60_000;

const MAX_LEASE_SECONDS: u64 = 24 * 60 * 60;
const MAX_LATE_ANSWER_WAIT_SECONDS: u64 = MAX_LEASE_SECONDS;
/// Largest `MAX_BODY_BYTES`: 4 MiB. Measured (`bench/body-memory.mjs`), a request holds about
/// five to seven times its body while it is served (the runtime's buffers, the prefixed copy a
/// MAC is computed over, a Stripe body decoded and parsed, a keyed body in WebAssembly memory
/// and in the frame to its object), so three requests at this cap at once stay under 100 MiB of
/// an isolate's 128 MB; at the earlier 25 MiB one Stripe event alone could exceed it.
const MAX_BODY_CAP_BYTES: u64 = 4 * 1024 * 1024;

/// How every delivery runs, whatever its front door.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryConfig {
    /// How long a claim is honoured before another delivery may take it over
    /// (`LEASE_SECONDS`); it exceeds the time-out plus the wait plus [`settle_margin_ms`].
    pub lease_ms: u64,
    /// When the sender is answered at the latest (`FORWARD_TIMEOUT_MS`).
    pub forward_timeout_ms: u64,
    /// How much longer the claim authority waits for a late answer (`LATE_ANSWER_WAIT_SECONDS`).
    pub late_answer_wait_ms: u64,
    /// Largest accepted request body (`MAX_BODY_BYTES`).
    pub max_body_bytes: u64,
    /// How long a request body may take to arrive in full (`BODY_READ_TIMEOUT_MS`).
    pub body_read_timeout_ms: u64,
}

impl DeliveryConfig {
    /// Reads the delivery keys and checks that the lease fits the time-out and the wait.
    pub fn load<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> DeliveryConfig {
        let lease_ms =
            r.integer(LEASE_SECONDS, DEFAULT_LEASE_SECONDS, 1, MAX_LEASE_SECONDS) * 1_000;
        let forward_timeout_ms = r.integer(
            FORWARD_TIMEOUT_MS,
            DEFAULT_FORWARD_TIMEOUT_MS,
            1,
            MAX_FORWARD_TIMEOUT_MS,
        );
        let late_answer_wait_ms = r.integer(
            LATE_ANSWER_WAIT_SECONDS,
            DEFAULT_LATE_ANSWER_WAIT_SECONDS,
            0,
            MAX_LATE_ANSWER_WAIT_SECONDS,
        ) * 1_000;
        let margin_ms = settle_margin_ms(lease_ms);
        if forward_timeout_ms + late_answer_wait_ms + margin_ms > lease_ms {
            r.problem(
                LATE_ANSWER_WAIT_SECONDS,
                format!(
                    "{FORWARD_TIMEOUT_MS} ({forward_timeout_ms} ms) plus {LATE_ANSWER_WAIT_SECONDS} \
                     ({late_answer_wait_ms} ms) plus a settle margin ({margin_ms} ms) must fit \
                     in {LEASE_SECONDS} ({lease_ms} ms): shorten the wait or lengthen the lease"
                ),
            );
        }
        let max_body_bytes = r.integer(
            MAX_BODY_BYTES,
            DEFAULT_MAX_BODY_BYTES,
            1,
            MAX_BODY_CAP_BYTES,
        );
        let body_read_timeout_ms = r.integer(
            BODY_READ_TIMEOUT_MS,
            DEFAULT_BODY_READ_TIMEOUT_MS,
            1,
            MAX_BODY_READ_TIMEOUT_MS,
        );
        DeliveryConfig {
            lease_ms,
            forward_timeout_ms,
            late_answer_wait_ms,
            max_body_bytes,
            body_read_timeout_ms,
        }
    }

    /// The claim policy for records kept `retention_ms` after their last change.
    pub fn claims(&self, retention_ms: u64) -> ClaimPolicy {
        ClaimPolicy {
            lease_ms: self.lease_ms,
            retention_ms,
        }
    }
}

/// The time a lease keeps beyond the forward time-out and the late-answer wait, so that an
/// answer learned at the last moment can still be settled (with retries) before anyone may take
/// the claim over: a tenth of the lease, at least one second.
pub fn settle_margin_ms(lease_ms: u64) -> u64 {
    (lease_ms / 10).max(1_000)
}
