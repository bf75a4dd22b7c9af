//! What one worker instance knows of its origins, for sync deliveries.
//!
//! A sync delivery does not pass through its origin's gate: that would cost every healthy
//! delivery one more object request. Instead each instance of the worker keeps, in its own
//! memory, what it has seen:
//!
//! - the answers of the sync deliveries it served: a `429` or `503` with `Retry-After` holds
//!   the origin until then;
//! - the gates' answers to the admin calls it served (`GET /admin/origins`, a pause, a
//!   resume): a pause, or a breaker the origin's queued attempts opened, holds it until it
//!   ends.
//!
//! Failures alone never hold a sync delivery: an instance sees only its own share of them, and
//! a flaky origin that fails five times in a row is still up. Holding it would turn a sender's
//! next delivery, which would likely have succeeded, into a 503 (and GitHub never retries).
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

/// What this instance knows of its origins: for each origin held, until when and why. See
/// the module documentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownOrigins {
    by_origin: BTreeMap<String, (Millis, HoldReason)>,
}

impl KnownOrigins {
    /// True when no origin is held (the usual case: nothing to look up).
    pub fn is_empty(&self) -> bool {
        self.by_origin.is_empty()
    }

    /// Whether a delivery to `origin` at `now` is held: until when, and why; `None` to send it.
    pub fn hold(&self, origin: &str, now: Millis) -> Option<(Millis, HoldReason)> {
        let (until, why) = *self.by_origin.get(origin)?;
        (until > now).then_some((until, why))
    }

    /// A sync delivery to `origin` got an answer saying `health`: a throttle holds the origin
    /// until the time it names; any other answer ends what this instance held it for.
    pub fn answered(&mut self, origin: &str, health: Health) {
        let held = match health {
            Health::Throttled { until } => Some((until, HoldReason::Paused)),
            Health::Up | Health::Down => None,
        };
        self.keep(origin, held);
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
        self.keep(&view.origin, held);
    }

    /// Remembers that `origin` is held (`Some`) or not: an origin not held is forgotten, and a
    /// new one is not kept once [`KNOWN_ORIGINS`] are.
    fn keep(&mut self, origin: &str, held: Option<(Millis, HoldReason)>) {
        match held {
            None => {
                self.by_origin.remove(origin);
            }
            Some(held) => {
                if self.by_origin.len() < KNOWN_ORIGINS || self.by_origin.contains_key(origin) {
                    self.by_origin.insert(origin.to_owned(), held);
                }
            }
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
        known.answered(ORIGIN, Health::Throttled { until: 5_000 });
        assert_eq!(known.hold(ORIGIN, 4_999), Some((5_000, HoldReason::Paused)));
        assert_eq!(known.hold("https://other.example/", 4_999), None);
        assert_eq!(known.hold(ORIGIN, 5_000), None, "the pause ended");
        known.answered(ORIGIN, Health::Up);
        assert_eq!(
            known,
            KnownOrigins::default(),
            "a healthy origin is forgotten"
        );
    }

    #[test]
    fn failures_alone_never_hold_a_sync_delivery() {
        let mut known = KnownOrigins::default();
        for _ in 0..20 {
            known.answered(ORIGIN, Health::Down);
        }
        assert_eq!(known.hold(ORIGIN, 0), None);
        assert_eq!(known, KnownOrigins::default());
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
            known.answered(&origin, Health::Throttled { until: 9_000 });
        }
        assert_eq!(known.by_origin.len(), KNOWN_ORIGINS);
        let last = format!("https://h{}.example/", KNOWN_ORIGINS + 3);
        assert_eq!(known.hold(&last, 0), None, "not kept, so not held");
    }
}
