//! The object's alarm: when a write needs `setAlarm` (each one is billed as a row written), and
//! what a failed one means for the reply. The object adapter keeps a [`KnownAlarm`] in memory
//! (lost with the instance) and asks here before each `setAlarm`.

use super::{AuthorityReply, Wake};
use crate::claim::{ClaimStore, Millis, StoreError};

pub use crate::object::{rearm_at, BLOCKED_RETRY_MS};

/// What the alarm handler leaves behind once its sweep and attempts are over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rearm {
    /// Set the alarm for this time: the earliest work or expiry left (see [`rearm_at`]).
    At(Millis),
    /// Nothing is left: delete the object's whole storage, alarm included.
    DeleteAll,
}

/// The alarm the object needs after the alarm handler that ran at `ran_at` did its work, at
/// `now`. A record that cannot be read is never taken for gone: the error is returned (the
/// alarm then runs again, see [`retry_after_failed_rearm`]).
pub fn rearm<S: ClaimStore>(
    store: &mut S,
    ran_at: Millis,
    now: Millis,
) -> Result<Rearm, StoreError> {
    rearm_and_reports(store, ran_at, now).map(|(rearm, _)| rearm)
}

/// [`rearm`], and the keys whose changes for the failure index are due at `now`, read in the
/// same pass (so a healthy record costs no extra read): the alarm sends those, then re-arms
/// again.
pub fn rearm_and_reports<S: ClaimStore>(
    store: &mut S,
    ran_at: Millis,
    now: Millis,
) -> Result<(Rearm, Vec<String>), StoreError> {
    let mut next: Option<Millis> = None;
    let mut reports = Vec::new();
    for key in store.keys()? {
        let Some(record) = store.load(&key)? else {
            continue;
        };
        if record
            .pending_report()
            .is_some_and(|report| report.next_at <= now)
        {
            reports.push(key);
        }
        let wake = Wake::for_record(&record);
        next = Some(next.map_or(wake.at, |at| at.min(wake.at)));
    }
    let rearm = match next {
        Some(at) => Rearm::At(rearm_at(at, ran_at, now)),
        None => Rearm::DeleteAll,
    };
    Ok((rearm, reports))
}

/// What the object's instance knows of its alarm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KnownAlarm {
    /// Not known: a new instance, or the last `setAlarm` failed.
    #[default]
    Unknown,
    /// No alarm: the object's storage was deleted.
    None,
    /// Set for this time.
    At(Millis),
}

/// What making sure of the alarm after a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlarmStep {
    /// Nothing to do, or an expiry alarm that could not be set (a later write sets it).
    Kept,
    /// Set (a billed row write).
    Set,
    /// Due work (queue mode) whose alarm could not be set.
    DueNotSet,
}

impl KnownAlarm {
    /// The time to set the alarm for so that it serves `wake` at `now`, or `None` when the
    /// alarm known is good enough.
    ///
    /// For an expiry (`due: false`) a known alarm still ahead is kept, whatever its time: one
    /// later than the record's expiry deletes it a little late (a record past its expiry
    /// already counts as absent), and one earlier finds it unexpired and re-arms itself. For
    /// due work (`due: true`, queue mode) the alarm must fire by then: a known alarm later
    /// than that is moved. Unknown (a new instance), or a time already past (the alarm may have
    /// given up): set it.
    pub fn to_serve(self, wake: Wake, now: Millis) -> Option<Millis> {
        match self {
            KnownAlarm::At(at) if at > now && (!wake.due || at <= wake.at) => None,
            _ => Some(wake.at),
        }
    }

    /// The time to set the alarm for so that it fires by `at`, or `None` when a known alarm
    /// still ahead fires sooner.
    pub fn to_fire_by(self, at: Millis, now: Millis) -> Option<Millis> {
        match self {
            KnownAlarm::At(known) if known > now && known <= at => None,
            _ => Some(at),
        }
    }

    /// What is known once `setAlarm(at)` succeeded (`set` true) or failed.
    pub fn after_set(at: Millis, set: bool) -> KnownAlarm {
        if set {
            KnownAlarm::At(at)
        } else {
            KnownAlarm::Unknown
        }
    }
}

impl AlarmStep {
    /// The step for `wake` after `setAlarm` was called and succeeded (`Some(true)`), failed
    /// (`Some(false)`), or was not needed (`None`).
    pub fn of(wake: Wake, set: Option<bool>) -> AlarmStep {
        match set {
            None => AlarmStep::Kept,
            Some(true) => AlarmStep::Set,
            Some(false) if wake.due => AlarmStep::DueNotSet,
            Some(false) => AlarmStep::Kept,
        }
    }
}

/// When the alarm must fire after the alarm handler could not re-arm it for `wanted` (the
/// earliest work or expiry left, when known) at `now`: within a minute, so that storage trouble
/// does not spin the alarm, but never later than the work needs.
pub fn retry_after_failed_rearm(wanted: Option<Millis>, now: Millis) -> Millis {
    let within_a_minute = now.saturating_add(BLOCKED_RETRY_MS);
    wanted.map_or(within_a_minute, |at| at.max(now).min(within_a_minute))
}

/// The reply to a request whose write left work due (an event stored or redelivered for the
/// alarm to deliver) but whose alarm could not be set: the write stands, and the caller is not
/// told it was accepted (its retry, or the next request to the object, sets the alarm).
/// Any other reply is returned as it is.
pub fn reply_after(reply: AuthorityReply, step: AlarmStep) -> AuthorityReply {
    match step {
        AlarmStep::DueNotSet => AuthorityReply::StoreFailed {
            retryable: true,
            detail: "the alarm that delivers the event could not be set".into(),
        },
        AlarmStep::Kept | AlarmStep::Set => reply,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPIRY: Wake = Wake {
        at: 1_000,
        due: false,
    };
    const DUE: Wake = Wake {
        at: 1_000,
        due: true,
    };

    #[test]
    fn the_rearm_pass_names_the_records_whose_changes_are_due_and_only_those() {
        use crate::claim::{
            attempt_failed, enqueue, start_attempt, AttemptOutcome, AttemptTerms, ClaimPolicy,
            Failure, MemoryClaimStore, Nonce, RetryPolicy,
        };
        use crate::origin::Reason;
        use crate::providers::Provider;
        let policy = ClaimPolicy {
            lease_ms: 10_000,
            retention_ms: 1_000_000,
        };
        let retry = RetryPolicy {
            base_ms: 1_000,
            max_delay_ms: 1_000,
            max_attempts: 1,
            max_age_ms: 100_000,
            retry_client_errors: false,
        };
        let mut store = MemoryClaimStore::new();
        for key in ["healthy", "dead"] {
            enqueue(
                &mut store,
                key,
                Provider::Stripe,
                0,
                policy,
                Nonce([1; 16]),
                b"x",
            )
            .unwrap();
        }
        let AttemptOutcome::Start { fence, .. } =
            start_attempt(&mut store, "dead", 1, policy, retry, Nonce([2; 16])).unwrap()
        else {
            panic!("an attempt")
        };
        let failure = Failure::definite(Reason::Answered(500));
        attempt_failed(
            &mut store,
            "dead",
            &fence,
            2,
            failure,
            AttemptTerms {
                policy,
                retry,
                jitter: 0.5,
            },
        )
        .unwrap();
        let (rearm, reports) = rearm_and_reports(&mut store, 1, 3).unwrap();
        assert_eq!(reports, vec!["dead".to_owned()]);
        assert_eq!(
            rearm,
            Rearm::At(3 + BLOCKED_RETRY_MS),
            "both were due when it ran"
        );
        let (_, later) = rearm_and_reports(&mut store, 3, 1).unwrap();
        assert!(later.is_empty(), "not before its time");
    }

    #[test]
    fn an_alarm_ahead_serves_an_expiry_whatever_its_time() {
        assert_eq!(KnownAlarm::At(5_000).to_serve(EXPIRY, 0), None);
        assert_eq!(KnownAlarm::At(500).to_serve(EXPIRY, 0), None);
        assert_eq!(
            KnownAlarm::At(500).to_serve(EXPIRY, 600),
            Some(1_000),
            "past"
        );
        assert_eq!(KnownAlarm::Unknown.to_serve(EXPIRY, 0), Some(1_000));
        assert_eq!(KnownAlarm::None.to_serve(EXPIRY, 0), Some(1_000));
    }

    #[test]
    fn due_work_needs_an_alarm_by_its_time() {
        assert_eq!(KnownAlarm::At(900).to_serve(DUE, 0), None);
        assert_eq!(KnownAlarm::At(1_000).to_serve(DUE, 0), None);
        assert_eq!(KnownAlarm::At(1_001).to_serve(DUE, 0), Some(1_000));
        assert_eq!(KnownAlarm::At(2_000).to_fire_by(1_000, 0), Some(1_000));
        assert_eq!(KnownAlarm::At(800).to_fire_by(1_000, 0), None);
    }

    #[test]
    fn a_due_attempt_that_could_not_start_is_tried_again_a_minute_later() {
        assert_eq!(rearm_at(5_000, 1_000, 1_200), 5_000, "work ahead: as due");
        assert_eq!(
            rearm_at(1_000, 1_000, 1_200),
            1_200 + BLOCKED_RETRY_MS,
            "due when the alarm ran and still there: blocked, not spun on"
        );
    }

    #[test]
    fn a_failed_rearm_is_tried_again_by_when_the_work_needs_it() {
        assert_eq!(retry_after_failed_rearm(None, 1_000), 61_000);
        assert_eq!(retry_after_failed_rearm(Some(5_000), 1_000), 5_000);
        assert_eq!(retry_after_failed_rearm(Some(500_000), 1_000), 61_000);
        assert_eq!(retry_after_failed_rearm(Some(900), 1_000), 1_000, "due now");
    }

    #[test]
    fn a_failed_set_is_unknown_and_fails_only_due_work() {
        assert_eq!(KnownAlarm::after_set(7, false), KnownAlarm::Unknown);
        assert_eq!(KnownAlarm::after_set(7, true), KnownAlarm::At(7));
        assert_eq!(AlarmStep::of(DUE, Some(false)), AlarmStep::DueNotSet);
        assert_eq!(AlarmStep::of(EXPIRY, Some(false)), AlarmStep::Kept);
        assert_eq!(AlarmStep::of(DUE, None), AlarmStep::Kept);
        let reply = reply_after(AuthorityReply::NotKnown, AlarmStep::DueNotSet);
        assert!(matches!(
            reply,
            AuthorityReply::StoreFailed {
                retryable: true,
                ..
            }
        ));
        assert_eq!(
            reply_after(AuthorityReply::NotKnown, AlarmStep::Set),
            AuthorityReply::NotKnown
        );
    }
}
