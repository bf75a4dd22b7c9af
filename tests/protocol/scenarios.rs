//! The scenarios the model check explores: each picks its configurations, doors, faults and
//! bounds, what it must reach, and the fewest distinct states it must explore (about 80% of
//! what it explores today, so that a model that collapsed fails).

use std::collections::BTreeMap;

use webhook_dedup::claim::Millis;
use webhook_dedup::config::Config;

use super::world::{Budget, Door};
use super::{Protocol, Reached, StoreFault};

/// The configuration `vars` give, which the real loader must accept.
fn config(vars: &[(&str, &str)]) -> Config {
    let vars: BTreeMap<&str, &str> = vars.iter().copied().collect();
    Config::load(|key| vars.get(key).map(|value| value.to_string()))
        .unwrap_or_else(|problems| panic!("the model's configuration is refused: {problems:?}"))
}

/// The settings every scenario shares: a short retention (so that records expire within the
/// bounds), a lease of 10 s, a forward time-out of 2 s and a wait of 4 s (a wait horizon of
/// 6 s, a settle margin of 1 s), a queue time-out of 5 s, and retries 1 s apart, at most 2.
const BASE: &[(&str, &str)] = &[
    ("STRIPE_WEBHOOK_SECRET", "whsec_model"),
    ("ORIGIN_URL", "http://origin.test/"),
    ("RETENTION_HOURS", "0.01"),
    ("ALLOW_SHORT_RETENTION", "true"),
    ("SIGNATURE_TOLERANCE_SECONDS", "1"),
    ("LEASE_SECONDS", "10"),
    ("FORWARD_TIMEOUT_MS", "2000"),
    ("LATE_ANSWER_WAIT_SECONDS", "4"),
    ("QUEUE_FORWARD_TIMEOUT_MS", "5000"),
    ("RETRY_BASE_SECONDS", "1"),
    ("RETRY_MAX_DELAY_SECONDS", "2"),
    ("RETRY_MAX_ATTEMPTS", "2"),
    ("API_ORIGIN_URL", "http://origin.test/api"),
    ("IDEMPOTENCY_RETENTION_HOURS", "0.01"),
];

/// [`BASE`] with `changes`.
fn with(changes: &[(&'static str, &'static str)]) -> Config {
    let mut vars: Vec<(&str, &str)> = BASE.to_vec();
    for (key, value) in changes {
        vars.retain(|(k, _)| k != key);
        vars.push((key, value));
    }
    config(&vars)
}

/// Queue mode.
const QUEUE: &[(&str, &str)] = &[("DELIVERY_MODE", "queue")];

/// Nothing happens: every budget empty.
const NONE: Budget = Budget {
    deliveries: 0,
    crashes: 0,
    store_failures: 0,
    alarm_failures: 0,
    deploys: 0,
    operator: 0,
    index_failures: 0,
    late_timers: 0,
    others: 0,
    pauses: 0,
    gate_crashes: 0,
};

/// `protocol` with the fewest distinct states it must explore.
fn floor(min_states: usize, protocol: Protocol) -> Protocol {
    Protocol {
        min_states,
        ..protocol
    }
}

/// A scenario of webhook deliveries under `config`, with `budget`, reaching `must_reach`,
/// the clock stopping at `max_time`; the rest as most scenarios have it.
fn scenario(
    name: &'static str,
    config: Config,
    budget: Budget,
    max_time: Millis,
    must_reach: Vec<Reached>,
) -> Protocol {
    Protocol {
        name,
        configs: vec![config],
        doors: vec![Door::Webhook],
        budget,
        store_faults: vec![StoreFault::Retryable],
        crash_mid_task: false,
        slow_index: false,
        max_time,
        must_reach,
        fail_status: 500,
        fail_retry_after_seconds: None,
        min_states: 1_000,
    }
}

/// Sync deliveries, the handler's answers lost or late, a crash inside a sequence, and a
/// store that fails on a read or a write.
pub fn sync_deliveries() -> Protocol {
    floor(900_000, {
        let budget = Budget {
            deliveries: 3,
            crashes: 1,
            store_failures: 1,
            ..NONE
        };
        Protocol {
            store_faults: vec![StoreFault::Retryable, StoreFault::WriteRetryable],
            crash_mid_task: true,
            ..scenario(
                "sync deliveries",
                with(&[]),
                budget,
                40_000,
                vec![
                    Reached::Takeover,
                    Reached::Expired,
                    Reached::LateAnswerLearned,
                    Reached::AnswerGivenUp,
                    Reached::InFlight,
                    Reached::SettleRetried,
                ],
            )
        }
    })
}

/// A reconciliation hands the event to its claim while its real delivery (and the sender's
/// retry) runs, the handler's answers lost or late and the instance crashing: the claim
/// still runs it once, whichever comes first.
pub fn reconciled_racing_delivery() -> Protocol {
    floor(600_000, {
        let budget = Budget {
            deliveries: 3,
            crashes: 1,
            ..NONE
        };
        Protocol {
            doors: vec![Door::Webhook, Door::Reconcile],
            ..scenario(
                "a reconciled event racing its real delivery",
                with(&[]),
                budget,
                40_000,
                vec![
                    Reached::ReconciledRan,
                    Reached::ReconciledFoundDone,
                    Reached::InFlight,
                    Reached::Takeover,
                ],
            )
        }
    })
}

/// Sync deliveries and an operator who inspects, releases (forced or not) and forgets.
pub fn sync_and_an_operator() -> Protocol {
    floor(890_000, {
        let budget = Budget {
            deliveries: 2,
            crashes: 1,
            operator: 3,
            ..NONE
        };
        scenario(
            "sync deliveries and an operator",
            with(&[]),
            budget,
            40_000,
            vec![
                Reached::Takeover,
                Reached::Forgotten,
                Reached::FenceConflict,
            ],
        )
    })
}

/// Timers and the alarm firing late, as a stalled runtime does: an answer read after its
/// time-out, in both modes.
pub fn late_timers() -> Protocol {
    floor(25_000, {
        let budget = Budget {
            deliveries: 2,
            late_timers: 2,
            deploys: 1,
            ..NONE
        };
        Protocol {
            configs: vec![with(&[]), with(QUEUE)],
            ..scenario(
                "late timers and a stalled runtime",
                with(&[]),
                budget,
                30_000,
                vec![Reached::LateAnswerLearned, Reached::Takeover],
            )
        }
    })
}

/// Notifications on (`ALERT_URL`): the forward tells the failure index of an origin's
/// failures, and the index answers slowly, or fails.
pub fn notifications() -> Protocol {
    floor(11_000, {
        let alerts = with(&[
            ("ALERT_URL", "https://alerts.test/hook"),
            (
                "ALERT_SECRET",
                "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
            ),
        ]);
        let budget = Budget {
            deliveries: 2,
            index_failures: 1,
            ..NONE
        };
        Protocol {
            slow_index: true,
            ..scenario(
                "notifications and a slow failure index",
                alerts,
                budget,
                30_000,
                vec![Reached::LateAnswerLearned, Reached::AnswerGivenUp],
            )
        }
    })
}

/// Queue mode with a crash inside a sequence, a store failure of every kind, and a
/// `setAlarm` that fails.
pub fn queue_with_failures() -> Protocol {
    floor(545_000, {
        let budget = Budget {
            deliveries: 2,
            crashes: 1,
            store_failures: 1,
            alarm_failures: 1,
            ..NONE
        };
        Protocol {
            store_faults: vec![
                StoreFault::Retryable,
                StoreFault::WriteRetryable,
                StoreFault::WriteFatal,
                StoreFault::Persistent,
            ],
            crash_mid_task: true,
            ..scenario(
                "queue mode with failures",
                with(QUEUE),
                budget,
                40_000,
                vec![
                    Reached::Takeover,
                    Reached::DeadLettered,
                    Reached::Indexed,
                    Reached::AlarmNotSet,
                ],
            )
        }
    })
}

/// Queue mode with one store failure on any call of the object's sequences: the first, or
/// one of the next few, whatever they read or write.
pub fn store_failure_anywhere() -> Protocol {
    floor(2_400, {
        let budget = Budget {
            deliveries: 1,
            store_failures: 1,
            ..NONE
        };
        Protocol {
            store_faults: (0..6).map(StoreFault::RetryableAfter).collect(),
            ..scenario(
                "queue mode with a store failure on any call",
                with(QUEUE),
                budget,
                20_000,
                vec![Reached::DeadLettered],
            )
        }
    })
}

/// Queue mode and an operator who redelivers a dead letter.
pub fn redelivers() -> Protocol {
    floor(574_000, {
        let budget = Budget {
            deliveries: 1,
            crashes: 1,
            operator: 2,
            ..NONE
        };
        scenario(
            "queue mode and an operator who redelivers",
            with(QUEUE),
            budget,
            40_000,
            vec![
                Reached::Takeover,
                Reached::DeadLettered,
                Reached::Redelivered,
                Reached::Indexed,
                Reached::IndexRecovered,
            ],
        )
    })
}

/// Queue mode when the origin says it is gone (410), with `RETRY_CLIENT_ERRORS` on: still a
/// dead letter after one attempt.
pub fn gone() -> Protocol {
    floor(3_000, {
        let budget = Budget {
            deliveries: 1,
            crashes: 1,
            operator: 1,
            ..NONE
        };
        Protocol {
            fail_status: 410,
            ..scenario(
                "queue mode when the origin is gone (410), client errors retried",
                with(&[("DELIVERY_MODE", "queue"), ("RETRY_CLIENT_ERRORS", "true")]),
                budget,
                20_000,
                vec![Reached::RefusedAtOnce, Reached::Indexed],
            )
        }
    })
}

/// Queue mode when the origin throttles (429 with `Retry-After: 2`, the longest back-off): the
/// next attempt waits for the time asked, never the back-off's second.
pub fn throttled() -> Protocol {
    floor(3_900, {
        let budget = Budget {
            deliveries: 1,
            crashes: 1,
            store_failures: 1,
            ..NONE
        };
        Protocol {
            fail_status: 429,
            fail_retry_after_seconds: Some(2),
            ..scenario(
                "queue mode when the origin throttles (429, Retry-After)",
                with(QUEUE),
                budget,
                20_000,
                vec![Reached::WaitedAsAsked, Reached::DeadLettered],
            )
        }
    })
}

/// Queue mode when the origin refuses (404): a dead letter after one attempt.
pub fn refuses() -> Protocol {
    floor(21_000, {
        let budget = Budget {
            deliveries: 1,
            crashes: 1,
            operator: 2,
            ..NONE
        };
        Protocol {
            fail_status: 404,
            ..scenario(
                "queue mode when the origin refuses (404)",
                with(QUEUE),
                budget,
                20_000,
                vec![
                    Reached::RefusedAtOnce,
                    Reached::Indexed,
                    Reached::Redelivered,
                ],
            )
        }
    })
}

/// The failure index when it fails, or its answer is lost after it applied a report.
pub fn index_fails() -> Protocol {
    floor(458_000, {
        let budget = Budget {
            deliveries: 1,
            operator: 2,
            index_failures: 1,
            ..NONE
        };
        Protocol {
            slow_index: true,
            ..scenario(
                "the failure index when a send fails",
                with(QUEUE),
                budget,
                20_000,
                vec![
                    Reached::DeadLettered,
                    Reached::Indexed,
                    Reached::ReportResent,
                    Reached::IndexRecovered,
                ],
            )
        }
    })
}

/// Queue mode and an operator who forgets, and the sender sends again.
pub fn forgets() -> Protocol {
    floor(514_000, {
        let budget = Budget {
            deliveries: 2,
            operator: 3,
            ..NONE
        };
        scenario(
            "queue mode and an operator who forgets",
            with(QUEUE),
            budget,
            12_000,
            vec![Reached::Forgotten, Reached::DeadLettered],
        )
    })
}

/// Queue mode when `setAlarm` fails.
pub fn set_alarm_fails() -> Protocol {
    floor(172_000, {
        let budget = Budget {
            deliveries: 2,
            crashes: 1,
            alarm_failures: 1,
            operator: 1,
            ..NONE
        };
        scenario(
            "queue mode when setAlarm fails",
            with(QUEUE),
            budget,
            40_000,
            vec![
                Reached::Takeover,
                Reached::DeadLettered,
                Reached::AlarmNotSet,
            ],
        )
    })
}

/// Deploys that change the mode or shorten the lease.
pub fn deploys() -> Protocol {
    floor(164_000, {
        let budget = Budget {
            deliveries: 2,
            crashes: 1,
            deploys: 2,
            ..NONE
        };
        Protocol {
            configs: vec![
                with(&[]),
                with(QUEUE),
                with(&[
                    ("LEASE_SECONDS", "4"),
                    ("FORWARD_TIMEOUT_MS", "1000"),
                    ("LATE_ANSWER_WAIT_SECONDS", "2"),
                ]),
            ],
            ..scenario(
                "deploys that change the mode or the lease",
                with(&[]),
                budget,
                40_000,
                vec![
                    Reached::Takeover,
                    Reached::QueuedUnderSync,
                    Reached::StoredOverClaim,
                ],
            )
        }
    })
}

/// Idempotency-Key requests, two fingerprints.
pub fn idempotency_keys() -> Protocol {
    floor(1_326_000, {
        let budget = Budget {
            deliveries: 3,
            crashes: 1,
            store_failures: 1,
            ..NONE
        };
        Protocol {
            doors: vec![Door::Api(1), Door::Api(2)],
            ..scenario(
                "Idempotency-Key requests",
                with(&[]),
                budget,
                20_000,
                vec![Reached::Takeover, Reached::Replayed],
            )
        }
    })
}

/// Queue mode through the origin's gate, paused and resumed by an operator at any moment.
pub fn gate_paused() -> Protocol {
    floor(150_000, {
        let gated = with(&[("DELIVERY_MODE", "queue"), ("ORIGIN_BREAKER_FAILURES", "0")]);
        let budget = Budget {
            deliveries: 2,
            pauses: 2,
            crashes: 1,
            store_failures: 1,
            ..NONE
        };
        scenario(
            "queue mode through the origin's gate, paused and resumed",
            gated,
            budget,
            20_000,
            vec![Reached::Held, Reached::DeliveredAfterHold],
        )
    })
}

/// Queue mode through the origin's gate: a cap of one attempt at once, a breaker that opens
/// at the first failure and probes every second, another event's attempt through the same
/// gate, and a crash of the gate's instance.
pub fn gate_capped() -> Protocol {
    floor(60_000, {
        let gated = with(&[
            ("DELIVERY_MODE", "queue"),
            ("ORIGIN_MAX_IN_FLIGHT", "1"),
            // One a second: a held attempt comes back a second later, not 10 ms later.
            ("ORIGIN_MAX_RPS", "1"),
            ("ORIGIN_BREAKER_FAILURES", "1"),
            ("ORIGIN_PROBE_SECONDS", "1"),
        ]);
        let budget = Budget {
            deliveries: 1,
            others: 1,
            gate_crashes: 1,
            ..NONE
        };
        scenario(
            "queue mode through the origin's gate, capped, with a breaker",
            gated,
            budget,
            16_000,
            vec![
                Reached::CapHeld,
                Reached::BreakerClosed,
                Reached::OtherThrough,
                Reached::Takeover,
            ],
        )
    })
}
