//! The object's alarm: when a write needs `setAlarm` (each one is billed as a row written), and
//! what a failed one means for the reply. The object adapter keeps a [`KnownAlarm`] in memory
//! (lost with the instance) and asks here before each `setAlarm`.

use super::{AuthorityReply, Wake};
use crate::claim::Millis;

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
