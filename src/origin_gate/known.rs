//! What one worker instance knows of its origins, for sync deliveries.
//!
//! A sync delivery does not pass through its origin's gate: that would cost every healthy
//! delivery one more object request. Instead each instance of the worker keeps, in its own
//! memory, what it has seen:
//!
//! - the answers of the sync deliveries it served: a `429` or `503` with `Retry-After` holds
//!   the origin until then; `ORIGIN_BREAKER_FAILURES` failures in a row hold it for
//!   `ORIGIN_PROBE_SECONDS`, after which the next delivery goes through as the probe;
//! - the gates' answers to the admin calls it served (`GET /admin/origins`, a pause, a
//!   resume).
//!
//! A delivery to a held origin is answered `503` with `Retry-After` and sends nothing, so the
//! sender's own retries carry the backlog. This knowledge is approximate by design: another
//! instance may not know yet, a pause "until a resume" is known for `ORIGIN_PROBE_SECONDS` at a
//! time (a resume served elsewhere is not seen), and an evicted instance forgets. Nothing here
//! is ever written.

use std::collections::BTreeMap;

use super::{Health, HoldReason, OriginState, OriginView};
use crate::claim::Millis;

/// At most this many origins are remembered (a worker has one per sender at most).
pub const KNOWN_ORIGINS: usize = 16;

/// What this instance knows of one origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Standing {
    /// Deliveries are held until then, for this reason.
    held: Option<(Millis, HoldReason)>,
    /// Failures in a row this instance saw.
    failures_in_a_row: u32,
}

/// What this instance knows of its origins. See the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownOrigins {
    by_origin: BTreeMap<String, Standing>,
}

impl KnownOrigins {
    /// Whether a delivery to `origin` at `now` is held: until when, and why; `None` to send it.
    pub fn hold(&self, origin: &str, now: Millis) -> Option<(Millis, HoldReason)> {
        let (until, why) = self.by_origin.get(origin)?.held?;
        (until > now).then_some((until, why))
    }

    /// A sync delivery to `origin` got an answer saying `health` at `now`. A throttle holds
    /// the origin until the time it names; `breaker_failures` failures in a row (0: never)
    /// hold it for `probe_ms`; an answer below 500 ends any hold the failures made.
    pub fn answered(
        &mut self,
        origin: &str,
        health: Health,
        now: Millis,
        breaker_failures: u32,
        probe_ms: Millis,
    ) {
        let mut standing = self.by_origin.get(origin).copied().unwrap_or_default();
        match health {
            Health::Down => {
                standing.failures_in_a_row = standing.failures_in_a_row.saturating_add(1);
                if breaker_failures > 0 && standing.failures_in_a_row >= breaker_failures {
                    let until = now.saturating_add(probe_ms);
                    standing.held = Some((until, HoldReason::BreakerOpen));
                }
            }
            Health::Up => standing = Standing::default(),
            Health::Throttled { until } => {
                standing = Standing {
                    held: Some((until, HoldReason::Paused)),
                    failures_in_a_row: 0,
                };
            }
        }
        self.keep(origin, standing);
    }

    /// The origin's gate said `view` at `now`: its pause or open breaker holds deliveries
    /// until it ends (a pause until a resume, or a probe out: for `probe_ms`); a closed
    /// breaker ends any hold.
    pub fn told(&mut self, view: &OriginView, now: Millis, probe_ms: Millis) {
        let parsed = |at: &Option<String>| at.as_deref().and_then(crate::rfc3339::parse);
        let for_a_while = now.saturating_add(probe_ms);
        let held = match view.state {
            OriginState::Closed => None,
            OriginState::Paused => Some((
                parsed(&view.paused_until).unwrap_or(for_a_while),
                HoldReason::Paused,
            )),
            OriginState::Open => Some((
                parsed(&view.next_probe_at).unwrap_or(for_a_while),
                HoldReason::BreakerOpen,
            )),
            OriginState::HalfOpen => Some((for_a_while, HoldReason::BreakerOpen)),
        };
        let standing = Standing {
            held,
            failures_in_a_row: view.failures_in_a_row,
        };
        self.keep(&view.origin, standing);
    }

    /// Remembers `standing` for `origin`: an origin with nothing to remember is forgotten, and
    /// a new one is not kept once [`KNOWN_ORIGINS`] are.
    fn keep(&mut self, origin: &str, standing: Standing) {
        if standing == Standing::default() {
            self.by_origin.remove(origin);
        } else if self.by_origin.len() < KNOWN_ORIGINS || self.by_origin.contains_key(origin) {
            self.by_origin.insert(origin.to_owned(), standing);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "https://handler.example/hooks";

    fn view(
        state: OriginState,
        paused_until: Option<&str>,
        next_probe: Option<&str>,
    ) -> OriginView {
        OriginView {
            origin: ORIGIN.into(),
            state,
            paused_by: None,
            paused_until: paused_until.map(str::to_owned),
            in_flight: 0,
            failures_in_a_row: 0,
            held: 0,
            next_probe_at: next_probe.map(str::to_owned),
        }
    }

    #[test]
    fn a_throttle_holds_the_origin_until_the_time_it_names_then_lets_deliveries_through() {
        let mut known = KnownOrigins::default();
        assert_eq!(known.hold(ORIGIN, 0), None, "nothing known: send");
        known.answered(ORIGIN, Health::Throttled { until: 5_000 }, 1_000, 5, 30_000);
        assert_eq!(known.hold(ORIGIN, 4_999), Some((5_000, HoldReason::Paused)));
        assert_eq!(known.hold("https://other.example/", 4_999), None);
        assert_eq!(known.hold(ORIGIN, 5_000), None, "the pause ended");
    }

    #[test]
    fn failures_in_a_row_hold_for_the_probe_time_and_one_answer_ends_it() {
        let mut known = KnownOrigins::default();
        for at in [1_000, 2_000] {
            known.answered(ORIGIN, Health::Down, at, 3, 30_000);
            assert_eq!(known.hold(ORIGIN, at), None, "below the threshold");
        }
        known.answered(ORIGIN, Health::Down, 3_000, 3, 30_000);
        assert_eq!(
            known.hold(ORIGIN, 3_000),
            Some((33_000, HoldReason::BreakerOpen))
        );
        assert_eq!(known.hold(ORIGIN, 33_000), None, "the probe goes through");
        known.answered(ORIGIN, Health::Down, 33_500, 3, 30_000);
        assert_eq!(
            known.hold(ORIGIN, 33_500),
            Some((63_500, HoldReason::BreakerOpen)),
            "a failed probe holds again"
        );
        known.answered(ORIGIN, Health::Up, 63_600, 3, 30_000);
        assert_eq!(known.hold(ORIGIN, 63_600), None);
        assert_eq!(
            known,
            KnownOrigins::default(),
            "a healthy origin is forgotten"
        );
    }

    #[test]
    fn no_breaker_means_failures_never_hold() {
        let mut known = KnownOrigins::default();
        for at in 0..10 {
            known.answered(ORIGIN, Health::Down, at, 0, 30_000);
        }
        assert_eq!(known.hold(ORIGIN, 10), None);
    }

    #[test]
    fn what_a_gate_said_holds_until_its_pause_or_probe_and_a_closed_breaker_ends_it() {
        let mut known = KnownOrigins::default();
        let at = |text| crate::rfc3339::parse(text).expect("a time");
        let now = at("2026-12-06T10:00:00Z");
        let paused = view(OriginState::Paused, Some("2026-12-06T10:00:20Z"), None);
        known.told(&paused, now, 30_000);
        let until = at("2026-12-06T10:00:20Z");
        assert_eq!(known.hold(ORIGIN, now), Some((until, HoldReason::Paused)));
        known.told(&view(OriginState::Paused, None, None), now, 30_000);
        assert_eq!(
            known.hold(ORIGIN, now),
            Some((now + 30_000, HoldReason::Paused)),
            "a pause until a resume is known for the probe time"
        );
        let open = view(OriginState::Open, None, Some("2026-12-06T10:00:05Z"));
        known.told(&open, now, 30_000);
        let probe = at("2026-12-06T10:00:05Z");
        assert_eq!(
            known.hold(ORIGIN, now),
            Some((probe, HoldReason::BreakerOpen))
        );
        known.told(&view(OriginState::Closed, None, None), now, 30_000);
        assert_eq!(known.hold(ORIGIN, now), None);
    }

    #[test]
    fn at_most_so_many_origins_are_remembered() {
        let mut known = KnownOrigins::default();
        for i in 0..KNOWN_ORIGINS + 4 {
            let origin = format!("https://h{i}.example/");
            known.answered(&origin, Health::Throttled { until: 9_000 }, 0, 5, 30_000);
        }
        assert_eq!(known.by_origin.len(), KNOWN_ORIGINS);
        let last = format!("https://h{}.example/", KNOWN_ORIGINS + 3);
        assert_eq!(known.hold(&last, 0), None, "not kept, so not held");
    }
}
