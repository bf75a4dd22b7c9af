//! The counterexamples the model check found in the release before the fixes (see "What it
//! found" in docs/how-it-works.md), replayed step by step on today's rules: each path is still
//! possible, every invariant holds in every state along it, and its last step now ends as the
//! fix says it must. They keep the documented traces true, and show what each fix changed.

use stateright::{Expectation, Model};
use webhook_dedup::claim::ClaimState;

use super::world::{Door, World};
use super::{deploys, forgets, redelivers, set_alarm_fails};
use super::{Action, OperatorAction, Protocol, Reached};

const DELIVER: Action = Action::Deliver {
    door: Door::Webhook,
    repeat: None,
};

/// Runs `path` from the model's start: each action must be one the model offers, and every
/// `always` property must hold after each step. Returns the last state.
fn replay(model: &Protocol, path: &[Action]) -> World {
    let invariants: Vec<_> = model
        .properties()
        .into_iter()
        .filter(|property| property.expectation == Expectation::Always)
        .collect();
    assert!(invariants.len() >= 8, "the invariants are read");
    let mut state = model.init_states().remove(0);
    for (step, action) in path.iter().enumerate() {
        let mut offered = Vec::new();
        model.actions(&state, &mut offered);
        assert!(
            offered.contains(action),
            "step {step}: {action:?} is not possible; offered {offered:?}"
        );
        state = model
            .next_state(&state, action.clone())
            .unwrap_or_else(|| panic!("step {step}: {action:?} leads nowhere"));
        for invariant in &invariants {
            assert!(
                (invariant.condition)(model, &state),
                "step {step} ({action:?}) breaks \"{}\"",
                invariant.name
            );
        }
    }
    state
}

fn reached(state: &World, what: Reached) -> bool {
    state.ghost.reached & what as u32 != 0
}

/// A redelivered dead letter whose last attempt a crash cut off: the next attempt is a
/// takeover (it was not: defect 1).
#[test]
fn a_redelivered_cut_off_attempt_is_a_takeover() {
    use Action::*;
    let redeliver = Operate {
        action: OperatorAction::Redeliver,
        force: false,
    };
    let path = [
        DELIVER,
        AlarmFires,
        Answer { run: 0, ok: false },
        AlarmEnds,
        Tick,
        AlarmFires,
        Tick,
        Tick,
        Crash,
        Inspect,
        Tick,
        AlarmFires,
        AlarmEnds,
        redeliver,
    ];
    let model = redelivers();
    let before = replay(&model, &path);
    assert!(!reached(&before, Reached::Takeover), "no takeover yet");
    let after = replay(&model, &[&path[..], &[AlarmFires]].concat());
    assert!(
        reached(&after, Reached::Takeover),
        "the attempt after the redelivery is one"
    );
}

/// An event stored in queue mode over a sync claim whose outcome was unknown: its first
/// attempt is a takeover (it was not: defect 1, its second case).
#[test]
fn an_event_stored_over_an_unknown_sync_claim_is_attempted_as_a_takeover() {
    use Action::*;
    let path = [
        DELIVER,
        Crash,
        Tick,
        Tick,
        Deploy { config: 1 },
        DELIVER,
        AlarmFires,
    ];
    let state = replay(&deploys(), &path);
    assert!(reached(&state, Reached::StoredOverClaim));
    assert!(reached(&state, Reached::Takeover));
}

/// An operator's second forget, fenced with a read made before the first forget and the
/// sender's resend, leaves the new record alone (it deleted it: defect 2).
#[test]
fn a_stale_forget_leaves_the_event_stored_again() {
    use Action::*;
    let forget = Operate {
        action: OperatorAction::Forget,
        force: false,
    };
    let path = [
        DELIVER,
        Inspect,
        forget.clone(),
        AlarmFires,
        DELIVER,
        forget,
    ];
    let model = forgets();
    let state = replay(&model, &path);
    let record = state
        .store
        .peek(&model.key())
        .expect("the resent event is kept");
    assert_eq!(record.state(), ClaimState::Queued);
}

/// A stored event whose `setAlarm` failed, and whose object then lost its instance: the
/// repeat that follows sets the alarm (the old trace's last step, the clock moving on past the
/// due event with no alarm, is no longer possible: the alarm fires first) (defect 3).
#[test]
fn a_repeat_sets_the_alarm_a_failed_set_left_unset() {
    use Action::*;
    let path = [AlarmSetFails, Crash, Inspect, DELIVER];
    let model = set_alarm_fails();
    let failed = replay(&model, &path);
    assert!(
        failed.alarm.is_none(),
        "the first delivery's setAlarm failed"
    );
    let repeated = replay(&model, &[&path[..], &[DELIVER]].concat());
    assert!(repeated.alarm.is_some(), "the repeat set it");
    let mut offered = Vec::new();
    model.actions(&repeated, &mut offered);
    assert!(offered.contains(&AlarmFires) && !offered.contains(&Tick));
}

/// A stored event attempted after a deploy to sync mode with a 4 s lease: its attempt keeps
/// the lease its 5 s wait needs, so a crash and the next alarm do not start a second run
/// while the first may still answer (they did: defect 4).
#[test]
fn an_attempt_after_a_deploy_to_a_shorter_lease_keeps_the_lease_it_needs() {
    use Action::*;
    let path = [
        Deploy { config: 1 },
        DELIVER,
        Deploy { config: 2 },
        AlarmFires,
        Tick,
        Crash,
    ];
    let model = deploys();
    let state = replay(&model, &path);
    assert!(reached(&state, Reached::QueuedUnderSync));
    let mut offered = Vec::new();
    model.actions(&state, &mut offered);
    if offered.contains(&AlarmFires) {
        let next = replay(&model, &[&path[..], &[AlarmFires]].concat());
        assert_eq!(
            next.runs.len(),
            1,
            "no second run while the first may answer"
        );
    }
}
