//! Sync deliveries and what this instance of the worker knows of their origin (see
//! [`crate::origin_gate::known`]): a delivery to an origin known to be paused (or whose gate's
//! breaker is known open) is
//! answered `503` with `Retry-After`, nothing sent and nothing written, so the sender's own
//! retries carry the backlog; every sync delivery's answer teaches the instance. A healthy
//! delivery asks nothing more of the runtime than before: the knowledge is in memory.

use serde_json::json;

use super::Answer;
use crate::answer::retry_after_seconds;
use crate::claim::Millis;
use crate::claim_authority::{AuthorityReply, Delivery};
use crate::config::{Config, DeliveryMode};
use crate::log_line::Outcome;
use crate::origin_gate::known::KnownOrigins;
use crate::origin_gate::{origin_name, Health, HoldReason};
use crate::providers::Provider;

/// Whether a sync delivery of `provider` at `now` is held: until when, and why; `None` to send
/// it (always in queue mode). While the instance knows of no origin held, as it almost always
/// does, the origin's name is not even made.
pub fn hold(
    known: &KnownOrigins,
    config: &Config,
    provider: Provider,
    now: Millis,
) -> Option<(Millis, HoldReason)> {
    if known.is_empty() {
        return None;
    }
    known.hold(&sync_origin(config, provider)?, now)
}

/// The origin a sync delivery of `provider` goes to, named as its gate is; `None` in queue
/// mode (there the gate itself holds attempts) or for a sender that is off.
fn sync_origin(config: &Config, provider: Provider) -> Option<String> {
    if config.queue.mode(provider) == DeliveryMode::Queue {
        return None;
    }
    config.sender(provider).map(|(_, url)| origin_name(url))
}

/// 503 `origin_held` with `Retry-After` until `until`: the origin is known to be paused or
/// failing (`why`), so nothing was sent and nothing stored.
pub fn held_answer(until: Millis, why: HoldReason, now: Millis) -> Answer {
    let reason = match why {
        HoldReason::BreakerOpen => "is failing (its breaker is open)",
        _ => "is paused",
    };
    let at = crate::rfc3339::format(until).unwrap_or_default();
    let detail = format!(
        "the origin {reason} until {at}; nothing was sent and nothing stored: deliver again then"
    );
    Answer {
        status: 503,
        body: json!({ "error": "origin_held", "detail": detail, "why": why.name() }),
        retry_after: Some(retry_after_seconds(until, now)),
        allow: None,
        outcome: Outcome::Held,
        note: None,
    }
}

/// Teaches `known` what `reply`, the answer to a delivery of `provider` at `now`, says of its
/// origin in sync mode; a reply without the origin's answer (a duplicate, a store failure)
/// teaches nothing, and neither does an answer without `Retry-After` while nothing is held.
pub fn learn(
    known: &mut KnownOrigins,
    config: &Config,
    provider: Provider,
    reply: &AuthorityReply,
    now: Millis,
) {
    let AuthorityReply::Delivery(Delivery::Forwarded(report)) = reply else {
        return;
    };
    if report.not_before.is_none() && known.is_empty() {
        return;
    }
    let Some(origin) = sync_origin(config, provider) else {
        return;
    };
    let origin = origin.as_str();
    let max_delay_ms = config.queue.retry.max_delay_ms;
    let health = Health::of(&report.outcome, report.not_before, now, max_delay_ms);
    known.answered(origin, health);
}
