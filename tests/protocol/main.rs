//! The protocol, model-checked: every interleaving, within small bounds, of deliveries (new or
//! the same request again, through either door, in either mode), the origin's answers (2xx,
//! a failure, an answer lost on the way back, or none), time-outs and the end of the wait,
//! settles, store failures, `setAlarm` failures, crashes of the object's instance, the clock
//! moving to the next deadline, an operator's inspect and then release (forced or not),
//! forget or redeliver, a deploy that changes the mode or the lease, and sends to the failure
//! index that fail.
//!
//! The model drives the product's own rules: the claim engine over an in-memory store, the
//! attempt driver, the alarm rules, the admin API's decisions, the doors' answer tables, the
//! failure index's rules over its own in-memory store, and the configuration loader (a deploy can only choose a configuration the real check accepts).
//! Only the object's sequencing (`src/keeper/`: a rule, then the alarm it needs) is written
//! again, in `object.rs`, one step per transition so that a crash or another request can come
//! between any two of its I/O calls (`Keeper`'s async sequences run each to its end).
//!
//! Each scenario is checked exhaustively (breadth first), prints the states it explored, and
//! fails on the shortest path to a broken invariant, or when a scenario it must reach (a
//! takeover, a replay, a dead letter...) is never reached, so an empty model cannot pass.
//! `traces.rs` replays the counterexamples it found before the fixes, step by step.

mod object;
mod traces;
mod world;

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use stateright::{Checker, HasDiscoveries, Model, Property};
use webhook_dedup::admin::Action as AdminAction;
use webhook_dedup::authority::attempt::{Event, Wants};
use webhook_dedup::claim::{self, Change, ClaimState, Millis, Transition};
use webhook_dedup::config::{Config, DeliveryMode};
use webhook_dedup::failures::{self, EntryState};
use webhook_dedup::providers::Provider;

use world::{Budget, Door, RunEnd, World};

/// An invariant broken on a transition (a bit of `Ghost::violations`).
#[derive(Clone, Copy, Debug)]
#[repr(u32)]
pub enum Violation {
    /// A handler run started while an earlier one was still running within its wait horizon.
    Overlap = 1,
    /// A handler run started after one succeeded, with no crash, lost answer, slow handler,
    /// operator action or expiry between.
    Rerun = 2,
    /// A run that follows one whose outcome is unknown was not marked as a takeover.
    TakeoverUnmarked = 4,
    /// A settle changed the record after its claim was no longer the current one.
    StaleSettle = 8,
    /// A done record changed back.
    DoneChanged = 16,
    /// A cached answer was replayed to a request with another fingerprint.
    ReplayToAnother = 32,
    /// An operator's forget deleted a record other than the one it read.
    ForgotAnother = 64,
}

/// A scenario the model must reach (a bit of `Ghost::reached`).
#[derive(Clone, Copy, Debug)]
#[repr(u32)]
pub enum Reached {
    Takeover = 1,
    Replayed = 2,
    DeadLettered = 4,
    Redelivered = 8,
    Forgotten = 16,
    Expired = 32,
    /// The failure index lists the dead letter.
    Indexed = 64,
    /// The failure index shows a recovery.
    IndexRecovered = 128,
    /// A send to the failure index failed and a later one delivered its changes.
    ReportResent = 256,
    /// An event the origin refused (a 4xx) dead-lettered after its first attempt.
    RefusedAtOnce = 512,
    /// A stored event attempted after a deploy sent its sender to sync mode with a lease
    /// shorter than the attempt's wait: under the longer lease the attempt needs.
    QueuedUnderSync = 1024,
    /// An event stored in queue mode over a claim of sync mode whose outcome is unknown.
    StoredOverClaim = 2048,
}

/// One nondeterministic step.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A delivery through `door`: a new request, or the same request as sender `repeat`'s.
    Deliver { door: Door, repeat: Option<usize> },
    /// Handler run `run` finishes, having done its work (`ok`) or not.
    Answer { run: usize, ok: bool },
    /// Handler run `run`'s answer is lost on the way back (a gateway's 502).
    Lose { run: usize },
    /// Forward `forward`'s deadline came.
    Timeout { forward: usize },
    /// Forward `forward`'s answer body ended, or broke off.
    BodyEnds { forward: usize, broke: bool },
    /// The object's alarm fires.
    AlarmFires,
    /// The alarm handler ends, its forwards over.
    AlarmEnds,
    /// The clock moves to the next deadline.
    Tick,
    /// The next store call fails (retryable).
    StoreFails,
    /// The next `setAlarm` fails.
    AlarmSetFails,
    /// The object's instance dies.
    Crash,
    /// The operator reads the record.
    Inspect,
    /// The operator acts on what it read.
    Operate { action: OperatorAction, force: bool },
    /// A deploy of configuration `config`.
    Deploy { config: usize },
    /// The next send to the failure index fails.
    IndexFails,
}

/// What an operator does after reading a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperatorAction {
    Release,
    Forget,
    Redeliver,
}

/// One scenario: its configurations, doors and bounds.
pub struct Protocol {
    pub name: &'static str,
    /// The configurations a deploy may choose from; the first is deployed at the start.
    pub configs: Vec<Config>,
    /// The doors deliveries come through.
    pub doors: Vec<Door>,
    pub budget: Budget,
    /// The clock never moves past this.
    pub max_time: Millis,
    /// The scenarios it must reach.
    pub must_reach: Vec<Reached>,
    /// The status a handler run that fails answers with (500, or a refusal such as 404).
    pub fail_status: u16,
}

impl Protocol {
    /// The next time something is due after the current one, if any before `max_time`.
    fn next_deadline(&self, world: &World) -> Option<Millis> {
        let now = world.now;
        let mut times: Vec<Millis> = world
            .forwards
            .iter()
            .filter_map(|forward| forward.attempt.poll_timeout())
            .collect();
        times.extend(world.alarm);
        times.extend(world.runs.iter().map(|run| run.horizon));
        if let Some(record) = world.store.peek(&self.key()) {
            times.extend([record.lease.until, record.expires_at]);
            times.extend(record.lease.wait_ends_at);
            times.extend(record.next_attempt_at());
            times.extend(record.pending_report().map(|report| report.next_at));
        }
        times
            .into_iter()
            .filter(|at| *at > now && *at <= self.max_time)
            .min()
    }
}

impl Model for Protocol {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![World::new(self.budget)]
    }

    fn actions(&self, world: &World, actions: &mut Vec<Action>) {
        let left = world.left;
        if left.deliveries > 0 {
            for door in &self.doors {
                actions.push(Action::Deliver {
                    door: *door,
                    repeat: None,
                });
                // The same request again (a send whose answer was lost) differs only where
                // the request carries a nonce: a delivery forwarded while its sender waits.
                let queued = *door == Door::Webhook
                    && self.config(world).queue.mode(Provider::Stripe) == DeliveryMode::Queue;
                for (index, sender) in world.senders.iter().enumerate() {
                    if sender.door == *door && !queued {
                        actions.push(Action::Deliver {
                            door: *door,
                            repeat: Some(index),
                        });
                    }
                }
            }
        }
        for (run, state) in world.runs.iter().enumerate() {
            if state.end == RunEnd::Running {
                actions.push(Action::Answer { run, ok: true });
                actions.push(Action::Answer { run, ok: false });
                if world.forwards.iter().any(|f| f.run == run && f.listens) {
                    actions.push(Action::Lose { run });
                }
            }
        }
        for (index, forward) in world.forwards.iter().enumerate() {
            if forward
                .attempt
                .poll_timeout()
                .is_some_and(|at| at <= world.now)
            {
                actions.push(Action::Timeout { forward: index });
            }
            if forward.attempt.wants() == Wants::Chunk {
                actions.push(Action::BodyEnds {
                    forward: index,
                    broke: false,
                });
                actions.push(Action::BodyEnds {
                    forward: index,
                    broke: true,
                });
            }
        }
        if !world.alarm_running && world.alarm.is_some_and(|at| at <= world.now) {
            actions.push(Action::AlarmFires);
        }
        if world.alarm_running && !world.forwards.iter().any(|f| f.from_alarm) {
            actions.push(Action::AlarmEnds);
        }
        // Timers are on time: the clock moves on only once every due timer has fired (the
        // alarm handler's own alarm fires after it ends).
        let timer_due = world
            .forwards
            .iter()
            .any(|f| f.attempt.poll_timeout().is_some_and(|at| at <= world.now))
            || (!world.alarm_running && world.alarm.is_some_and(|at| at <= world.now))
            // The alarm handler ends as soon as its forwards have.
            || (world.alarm_running && !world.forwards.iter().any(|f| f.from_alarm));
        if !timer_due && self.next_deadline(world).is_some() {
            actions.push(Action::Tick);
        }
        if left.store_failures > 0 {
            actions.push(Action::StoreFails);
        }
        if left.alarm_failures > 0 && !world.alarm_fails {
            actions.push(Action::AlarmSetFails);
        }
        if left.crashes > 0 {
            actions.push(Action::Crash);
        }
        if left.index_failures > 0 && !world.index_fails {
            actions.push(Action::IndexFails);
        }
        if left.operator > 0 {
            actions.push(Action::Inspect);
            if world.read.is_some() {
                for (action, force) in [
                    (OperatorAction::Release, false),
                    (OperatorAction::Release, true),
                    (OperatorAction::Forget, false),
                    (OperatorAction::Redeliver, false),
                ] {
                    actions.push(Action::Operate { action, force });
                }
            }
        }
        if left.deploys > 0 {
            for config in 0..self.configs.len() {
                if config != world.deploy {
                    actions.push(Action::Deploy { config });
                }
            }
        }
    }

    fn next_state(&self, last: &World, action: Action) -> Option<World> {
        let mut world = last.clone();
        match action {
            Action::Deliver { door, repeat } => {
                world.left.deliveries -= 1;
                let sender = world.add_sender(door, repeat);
                world.deliver(self, door, sender);
            }
            Action::Answer { run, ok } => world.answer(self, run, ok),
            Action::Lose { run } => world.lose(self, run),
            Action::Timeout { forward } => world.feed(self, forward, Event::Timeout),
            Action::BodyEnds { forward, broke } => {
                let event = if broke {
                    Event::BodyBroke
                } else {
                    Event::BodyEnded
                };
                world.feed(self, forward, event)
            }
            Action::AlarmFires => world.alarm_fires(self),
            Action::AlarmEnds => world.alarm_ends(self),
            Action::Tick => world.now = self.next_deadline(&world)?,
            Action::StoreFails => {
                world.left.store_failures -= 1;
                world
                    .store
                    .fail_next(webhook_dedup::claim::StoreError::Retryable("busy".into()));
            }
            Action::AlarmSetFails => {
                world.left.alarm_failures -= 1;
                world.alarm_fails = true;
            }
            Action::Crash => {
                world.left.crashes -= 1;
                world.crash();
            }
            Action::Inspect => {
                world.left.operator -= 1;
                world.inspect(self);
            }
            Action::Operate { action, force } => {
                world.left.operator -= 1;
                let action = match action {
                    OperatorAction::Release => AdminAction::Release,
                    OperatorAction::Forget => AdminAction::Forget,
                    OperatorAction::Redeliver => AdminAction::Redeliver,
                };
                world.operate(self, action, force);
            }
            Action::Deploy { config } => {
                world.left.deploys -= 1;
                world.deploy = config;
            }
            Action::IndexFails => {
                world.left.index_failures -= 1;
                world.index_fails = true;
            }
        }
        Some(world)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("no run overlaps a run within its wait horizon", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::Overlap as u32 == 0
            }),
            Property::always(
                "no run after a success, unless a crash, a lost or slow answer, an operator or the retention came between",
                |_: &Protocol, w: &World| w.ghost.violations & Violation::Rerun as u32 == 0,
            ),
            Property::always("a run after an unknown outcome is a takeover", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::TakeoverUnmarked as u32 == 0
            }),
            Property::always("a settle changes only the generation it won", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::StaleSettle as u32 == 0
            }),
            Property::always("a done record never changes back", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::DoneChanged as u32 == 0
            }),
            Property::always("a replay goes only to the same fingerprint", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::ReplayToAnother as u32 == 0
            }),
            Property::always("a forget deletes only the record read", |_: &Protocol, w: &World| {
                w.ghost.violations & Violation::ForgotAnother as u32 == 0
            }),
            Property::always("an acknowledged event is kept, done or dead", acked_event_kept),
            Property::always("work due has an alarm by then", due_work_has_alarm),
            Property::always(
                "the failure index lists every dead letter, or its object still holds the report",
                index_knows_dead_letters,
            ),
        ];
        for reached in &self.must_reach {
            properties.push(match reached {
                Reached::Takeover => {
                    Property::sometimes("reaches a takeover", |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::Takeover as u32 != 0
                    })
                }
                Reached::Replayed => {
                    Property::sometimes("reaches a replay", |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::Replayed as u32 != 0
                    })
                }
                Reached::DeadLettered => {
                    Property::sometimes("reaches a dead letter", |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::DeadLettered as u32 != 0
                    })
                }
                Reached::Redelivered => {
                    Property::sometimes("reaches a redelivery", |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::Redelivered as u32 != 0
                    })
                }
                Reached::Forgotten => {
                    Property::sometimes("reaches a forget", |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::Forgotten as u32 != 0
                    })
                }
                Reached::Expired => {
                    Property::sometimes("reaches an expiry", |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::Expired as u32 != 0
                    })
                }
                Reached::Indexed => Property::sometimes(
                    "reaches a dead letter in the index",
                    |_: &Protocol, w: &World| w.ghost.reached & Reached::Indexed as u32 != 0,
                ),
                Reached::IndexRecovered => Property::sometimes(
                    "reaches a recovery in the index",
                    |_: &Protocol, w: &World| w.ghost.reached & Reached::IndexRecovered as u32 != 0,
                ),
                Reached::ReportResent => Property::sometimes(
                    "reaches a report sent again after a failed send",
                    |_: &Protocol, w: &World| w.ghost.reached & Reached::ReportResent as u32 != 0,
                ),
                Reached::QueuedUnderSync => Property::sometimes(
                    "reaches a stored event attempted under sync mode's shorter lease",
                    |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::QueuedUnderSync as u32 != 0
                    },
                ),
                Reached::StoredOverClaim => Property::sometimes(
                    "reaches an event stored over a sync claim whose outcome is unknown",
                    |_: &Protocol, w: &World| {
                        w.ghost.reached & Reached::StoredOverClaim as u32 != 0
                    },
                ),
                Reached::RefusedAtOnce => Property::sometimes(
                    "reaches a refused event dead-lettered after one attempt",
                    |model: &Protocol, w: &World| {
                        w.store.peek(&model.key()).is_some_and(|record| {
                            record.state() == ClaimState::Dead
                                && record.attempts == 1
                                && record
                                    .last_failure
                                    .is_some_and(|reason| reason.is_refusal())
                        })
                    },
                ),
            });
        }
        properties
    }
}

/// An event acknowledged to a webhook sender has a record that holds its body, or is done or
/// dead, unless an operator released or forgot it since, or its retention ended.
fn acked_event_kept(model: &Protocol, world: &World) -> bool {
    if !world.ghost.acked || world.ghost.expired {
        return true;
    }
    match world.store.peek(&model.key()) {
        Some(record) => {
            record.is_expired(world.now)
                || matches!(record.state(), ClaimState::Done | ClaimState::Dead)
                || record.holds_undelivered_event()
        }
        None => false,
    }
}

/// A record that still has to act (a queued attempt due, a queue attempt's lease to take
/// over, changes to send to the failure index) has an alarm at or before then (or now, for work already overdue); excused while the
/// alarm handler runs, right after a request that failed with a retryable error (its sender
/// retries, or the next request sets the alarm), for work that came due before the alarm last
/// ran and could not start then, and after an alarm that could not read the store: both are
/// tried again a minute later.
fn due_work_has_alarm(model: &Protocol, world: &World) -> bool {
    if world.alarm_running || world.ghost.alarm_excused {
        return true;
    }
    let Some(record) = world.store.peek(&model.key()) else {
        return true;
    };
    let attempt = match record.state() {
        ClaimState::Queued => record.next_attempt_at(),
        ClaimState::Processing if record.holds_undelivered_event() => Some(record.lease.until),
        _ => None,
    };
    // Changes waiting for the failure index are work too.
    let report = record.pending_report().map(|report| report.next_at);
    let Some(due) = [attempt, report].into_iter().flatten().min() else {
        return true;
    };
    let Some(at) = world.alarm else {
        return false;
    };
    // Work already overdue is served by an alarm now.
    at <= due.max(world.now)
        || world.ghost.alarm_ran_at.is_some_and(|ran| due <= ran)
        || world
            .ghost
            .alarm_blocked_until
            .is_some_and(|until| at <= until)
}

/// A dead-lettered event (its record not past its retention) is in the failure index as dead
/// since that very death, or its record still holds that change for the index: a lost send
/// never loses a dead letter from the operator's view.
fn index_knows_dead_letters(model: &Protocol, world: &World) -> bool {
    let key = model.key();
    let Some(record) = world.store.peek(&key) else {
        return true;
    };
    if record.is_expired(world.now) || record.state() != ClaimState::Dead {
        return true;
    }
    let (Some(dead_at), Some(queue)) = (record.dead_at(), record.queue()) else {
        return false;
    };
    // The death is the stored event's last change noted.
    let change = Change {
        transition: Transition::DeadLettered,
        at: dead_at,
        seq: queue.changes_noted,
    };
    if claim::holds(record.pending_report(), &change) {
        return true;
    }
    let mut index = world.index.clone();
    failures::entry(&mut index, &key)
        .ok()
        .flatten()
        .is_some_and(|entry| {
            entry.state == EntryState::Dead
                && entry.storage_id == queue.storage_id
                && entry.last_seq == queue.changes_noted
        })
}

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

fn with(changes: &[(&'static str, &'static str)]) -> Config {
    let mut vars: Vec<(&str, &str)> = BASE.to_vec();
    for (key, value) in changes {
        vars.retain(|(k, _)| k != key);
        vars.push((key, value));
    }
    config(&vars)
}

/// Checks `model` exhaustively, prints what it explored, and fails on any broken invariant
/// (with the shortest path to it) or any scenario never reached.
fn check(model: Protocol) {
    let name = model.name;
    let started = Instant::now();
    // Stops at the first broken invariant: breadth first, its path is (one of) the shortest.
    let checker = model
        .checker()
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_bfs()
        .join();
    // Written to the process's stderr itself, which the test harness does not capture, so
    // that `cargo test` shows what each scenario explored even when it passes.
    let _ = writeln!(
        std::io::stderr(),
        "model check {name}: {} states ({} unique), depth {}, {:.1} s",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        checker.unique_state_count() > 1_000,
        "{name}: the model explored almost nothing"
    );
    checker.assert_properties();
}

#[test]
fn sync_deliveries() {
    check(Protocol {
        name: "sync deliveries",
        configs: vec![with(&[])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 3,
            crashes: 1,
            store_failures: 1,
            alarm_failures: 0,
            deploys: 0,
            operator: 0,
            index_failures: 0,
        },
        max_time: 40_000,
        must_reach: vec![Reached::Takeover, Reached::Expired],
        fail_status: 500,
    });
}

#[test]
fn sync_deliveries_and_an_operator() {
    check(Protocol {
        name: "sync deliveries and an operator",
        configs: vec![with(&[])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 2,
            crashes: 1,
            store_failures: 0,
            alarm_failures: 0,
            deploys: 0,
            operator: 3,
            index_failures: 0,
        },
        max_time: 40_000,
        must_reach: vec![Reached::Takeover, Reached::Forgotten],
        fail_status: 500,
    });
}

#[test]
fn queue_mode_with_failures() {
    check(Protocol {
        name: "queue mode with failures",
        configs: vec![with(&[("DELIVERY_MODE", "queue")])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 2,
            crashes: 1,
            store_failures: 1,
            alarm_failures: 1,
            deploys: 0,
            operator: 0,
            index_failures: 0,
        },
        max_time: 40_000,
        must_reach: vec![Reached::Takeover, Reached::DeadLettered, Reached::Indexed],
        fail_status: 500,
    });
}

/// The scenario of [`queue_mode_and_an_operator_who_redelivers`].
pub fn redelivers() -> Protocol {
    Protocol {
        name: "queue mode and an operator who redelivers",
        configs: vec![with(&[("DELIVERY_MODE", "queue")])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 1,
            crashes: 1,
            store_failures: 0,
            alarm_failures: 0,
            deploys: 0,
            operator: 2,
            index_failures: 0,
        },
        max_time: 40_000,
        must_reach: vec![
            Reached::Takeover,
            Reached::DeadLettered,
            Reached::Redelivered,
            Reached::Indexed,
            Reached::IndexRecovered,
        ],
        fail_status: 500,
    }
}

#[test]
fn queue_mode_and_an_operator_who_redelivers() {
    check(redelivers());
}

#[test]
fn queue_mode_when_the_origin_refuses() {
    check(Protocol {
        name: "queue mode when the origin refuses (404)",
        configs: vec![with(&[("DELIVERY_MODE", "queue")])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 1,
            crashes: 1,
            store_failures: 0,
            alarm_failures: 0,
            deploys: 0,
            operator: 2,
            index_failures: 0,
        },
        max_time: 20_000,
        must_reach: vec![
            Reached::RefusedAtOnce,
            Reached::Indexed,
            Reached::Redelivered,
        ],
        fail_status: 404,
    });
}

#[test]
fn the_failure_index_when_a_send_fails() {
    check(Protocol {
        name: "the failure index when a send fails",
        configs: vec![with(&[("DELIVERY_MODE", "queue")])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 1,
            crashes: 0,
            store_failures: 0,
            alarm_failures: 0,
            deploys: 0,
            operator: 2,
            index_failures: 1,
        },
        max_time: 30_000,
        must_reach: vec![
            Reached::DeadLettered,
            Reached::Indexed,
            Reached::ReportResent,
            Reached::IndexRecovered,
        ],
        fail_status: 500,
    });
}

/// The scenario of [`queue_mode_and_an_operator_who_forgets`].
pub fn forgets() -> Protocol {
    Protocol {
        name: "queue mode and an operator who forgets",
        configs: vec![with(&[("DELIVERY_MODE", "queue")])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 2,
            crashes: 0,
            store_failures: 0,
            alarm_failures: 0,
            deploys: 0,
            operator: 3,
            index_failures: 0,
        },
        max_time: 12_000,
        must_reach: vec![Reached::Forgotten, Reached::DeadLettered],
        fail_status: 500,
    }
}

#[test]
fn queue_mode_and_an_operator_who_forgets() {
    check(forgets());
}

/// The scenario of [`queue_mode_when_set_alarm_fails`].
pub fn set_alarm_fails() -> Protocol {
    Protocol {
        name: "queue mode when setAlarm fails",
        configs: vec![with(&[("DELIVERY_MODE", "queue")])],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 2,
            crashes: 1,
            store_failures: 0,
            alarm_failures: 1,
            deploys: 0,
            operator: 1,
            index_failures: 0,
        },
        max_time: 40_000,
        must_reach: vec![Reached::Takeover, Reached::DeadLettered],
        fail_status: 500,
    }
}

#[test]
fn queue_mode_when_set_alarm_fails() {
    check(set_alarm_fails());
}

/// The scenario of [`deploys_that_change_the_mode_or_the_lease`].
pub fn deploys() -> Protocol {
    Protocol {
        name: "deploys that change the mode or the lease",
        configs: vec![
            with(&[]),
            with(&[("DELIVERY_MODE", "queue")]),
            with(&[
                ("LEASE_SECONDS", "4"),
                ("FORWARD_TIMEOUT_MS", "1000"),
                ("LATE_ANSWER_WAIT_SECONDS", "2"),
            ]),
        ],
        doors: vec![Door::Webhook],
        budget: Budget {
            deliveries: 2,
            crashes: 1,
            store_failures: 0,
            alarm_failures: 0,
            deploys: 2,
            operator: 0,
            index_failures: 0,
        },
        max_time: 40_000,
        must_reach: vec![
            Reached::Takeover,
            Reached::QueuedUnderSync,
            Reached::StoredOverClaim,
        ],
        fail_status: 500,
    }
}

#[test]
fn deploys_that_change_the_mode_or_the_lease() {
    check(deploys());
}

#[test]
fn idempotency_keys() {
    check(Protocol {
        name: "Idempotency-Key requests",
        configs: vec![with(&[])],
        doors: vec![Door::Api(1), Door::Api(2)],
        budget: Budget {
            deliveries: 3,
            crashes: 1,
            store_failures: 1,
            alarm_failures: 0,
            deploys: 0,
            operator: 0,
            index_failures: 0,
        },
        max_time: 20_000,
        must_reach: vec![Reached::Takeover, Reached::Replayed],
        fail_status: 500,
    });
}
