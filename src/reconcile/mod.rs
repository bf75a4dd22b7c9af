//! Reconciliation: heals what a sender gave up on. The worker lists the sender's own record of
//! what it sent, and hands each event it never stored to the same claim as a delivery:
//!
//! - **Stripe** keeps its events for 30 days (`GET /v1/events`). An event not yet delivered to
//!   every endpoint, and unknown here, is delivered as a webhook would be, signed anew with the
//!   endpoint's secret and marked `X-Webhook-Dedup-Source: reconcile`.
//! - **GitHub** keeps a hook's deliveries for 3 days and never retries one. A delivery that
//!   failed, whose id was never stored here, is redelivered through GitHub's own API, so it
//!   arrives signed by GitHub through the webhook door.
//!
//! Every event goes through its claim: one already done is counted and not run, one in flight
//! is left to its holder, a dead-lettered one is left to the operator. So a run is safe to
//! repeat, and safe beside the sender's own retries.
//!
//! The rules here are pure: the window and its limits ([`call`]), the cursor ([`cursor`]),
//! each sender's list and what it says ([`stripe`], [`github`]), what a run counts
//! ([`tally`]), and the scheduled runs' progress ([`progress`]). The run's sequence over the
//! runtime is `crate::reconciler`.

pub mod call;
pub mod cursor;
pub mod github;
pub mod progress;
pub mod stripe;
pub mod tally;

use serde::{Deserialize, Serialize};

use crate::claim::Millis;
use crate::config::{Config, DeliveryMode};
use crate::providers::Provider;

/// True when `log`'s API keys are set in `config`: reconciliation with it is on.
pub fn configured(config: &Config, log: SenderLog) -> bool {
    match log {
        SenderLog::Stripe => config.reconcile.stripe.is_some(),
        SenderLog::Github => config.reconcile.github.is_some(),
    }
}

/// What handing an event over means for `log`'s sender under `config`: `queued` in queue
/// mode, else `delivered` (the name of its count in answers).
pub fn handed_word(config: &Config, log: SenderLog) -> &'static str {
    match config.queue.mode(log.provider()) {
        DeliveryMode::Queue => "queued",
        DeliveryMode::Sync => "delivered",
    }
}

/// A sender whose own log the worker can reconcile against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SenderLog {
    /// Stripe's event log.
    Stripe,
    /// GitHub's delivery log of one hook.
    Github,
}

impl SenderLog {
    /// Both, in the order runs take them.
    pub const ALL: [SenderLog; 2] = [SenderLog::Stripe, SenderLog::Github];

    /// Its name in the admin API and the logs.
    pub fn name(self) -> &'static str {
        match self {
            SenderLog::Stripe => "stripe",
            SenderLog::Github => "github",
        }
    }

    /// The log named `name`, if any.
    pub fn named(name: &str) -> Option<SenderLog> {
        SenderLog::ALL.into_iter().find(|log| log.name() == name)
    }

    /// The sender.
    pub fn provider(self) -> Provider {
        match self {
            SenderLog::Stripe => Provider::Stripe,
            SenderLog::Github => Provider::Github,
        }
    }

    /// How far back the sender keeps its log: Stripe 30 days, GitHub 3 days.
    pub fn keeps_ms(self) -> Millis {
        match self {
            SenderLog::Stripe => 720 * 3_600_000,
            SenderLog::Github => 72 * 3_600_000,
        }
    }

    /// Its name as people read it.
    pub fn title(self) -> &'static str {
        match self {
            SenderLog::Stripe => "Stripe",
            SenderLog::Github => "GitHub",
        }
    }
}
