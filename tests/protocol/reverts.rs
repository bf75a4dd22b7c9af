//! The defects the model check found, found again. Each test takes one fix out (a test-only
//! switch in the rule: `src/reverts.rs`) and asserts that the model check finds a
//! counterexample to the invariant the docs name, on the scenario that shows it; it fails if
//! the model cannot find it. The same scenarios pass with every fix in (`main.rs`).
//!
//! A fix taken out is seen by the whole process, so these tests run alone: each holds
//! [`REVERTS`] for writing, every other model check holds it for reading.

use std::io::Write;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use stateright::{Checker, HasDiscoveries, Model};
use webhook_dedup::reverts::{revert, Fix};

use super::{scenarios, Protocol};

/// Held for reading by every model check, for writing by a test that takes a fix out.
static REVERTS: RwLock<()> = RwLock::new(());

/// Held by a model check run with every fix in.
pub fn every_fix_in() -> RwLockReadGuard<'static, ()> {
    REVERTS.read().unwrap_or_else(PoisonError::into_inner)
}

/// Puts every fix back when dropped, even when the test fails.
struct Reverted;

impl Drop for Reverted {
    fn drop(&mut self) {
        revert(None);
    }
}

/// Checks `model` with `fix` taken out, and asserts that it finds a counterexample to
/// `invariant`, printed with its length.
fn finds(fix: Fix, model: Protocol, invariant: &'static str) {
    let _alone = REVERTS.write().unwrap_or_else(PoisonError::into_inner);
    revert(Some(fix));
    let _back = Reverted;
    let name = model.name;
    let checker = model
        .checker()
        .finish_when(HasDiscoveries::AnyFailures)
        .spawn_bfs()
        .join();
    let found = checker.discovery(invariant);
    let _ = writeln!(
        std::io::stderr(),
        "model check {name} with {fix:?} reverted: {} states; counterexample to \"{invariant}\": {}",
        checker.unique_state_count(),
        found
            .as_ref()
            .map_or("none".to_owned(), |path| {
                let actions = path.clone().into_actions();
                format!("{} steps: {actions:?}", actions.len())
            })
    );
    assert!(
        found.is_some(),
        "with {fix:?} taken out, the model check of \"{name}\" finds no counterexample to \
         \"{invariant}\"; it found {:?}",
        checker.discoveries().keys().collect::<Vec<_>>()
    );
}

#[test]
fn finds_an_unmarked_takeover_after_a_redelivery_when_its_fix_is_reverted() {
    finds(
        Fix::DeadLetterKeepsUnknown,
        scenarios::redelivers(),
        "a run after an unknown outcome is a takeover",
    );
}

#[test]
fn finds_an_unmarked_takeover_after_a_switch_to_queue_mode_when_its_fix_is_reverted() {
    finds(
        Fix::StoredOverUnknownClaimIsTakeover,
        scenarios::deploys(),
        "a run after an unknown outcome is a takeover",
    );
}

#[test]
fn finds_a_predictable_fence_when_its_fix_is_reverted() {
    finds(
        Fix::StoredEventFenceIsRandom,
        scenarios::forgets(),
        "a forget deletes only the record read",
    );
}

#[test]
fn finds_a_lost_alarm_when_its_fix_is_reverted() {
    finds(
        Fix::EveryRequestSetsTheAlarm,
        scenarios::set_alarm_fails(),
        "work due has an alarm by then",
    );
}

#[test]
fn finds_a_lease_shorter_than_its_wait_when_its_fix_is_reverted() {
    finds(
        Fix::AttemptLeaseCoversItsWait,
        scenarios::deploys(),
        "no run overlaps a run within its wait horizon",
    );
}

#[test]
fn finds_an_attempt_spent_on_a_failed_read_when_its_fix_is_reverted() {
    finds(
        Fix::BodyReadBeforeTheAttempt,
        scenarios::store_failure_anywhere(),
        "no queued attempt is spent without sending the event it holds",
    );
}

#[test]
fn finds_a_forward_waiting_on_the_index_when_its_fix_is_reverted() {
    finds(
        Fix::IndexToldAfterTheForward,
        scenarios::notifications(),
        "no run after a success, unless a crash, a lost, unrecorded or slow answer, an operator or the retention came between",
    );
}
