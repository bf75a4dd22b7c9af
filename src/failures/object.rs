//! The failure index object's two sequences, over its store but with no other I/O: a request
//! served, and an alarm run in two halves around the sends of its notifications. The adapter
//! (`src/worker/failure_index.rs`) reads the configuration and the clock, opens the store,
//! sends, logs and sets the alarm.

use super::alert::{self, AlertPolicy, Notification, PER_ALARM};
use super::{expire, handle, next_wake, IndexReply, IndexRequest, IndexStore};
use crate::claim::{Millis, StoreError};
use crate::config::{AlertConfig, Config};

/// The reply to `request` at `now`, and the time the index's alarm must fire by after it
/// (`None`: nothing new to wake for, or its next work could not be read). `config` is `None`
/// while the configuration is invalid: the index cannot tell whether to notify, so it refuses
/// (a report's object sends it again later) and no notification is skipped. A store that did
/// not open is refused too.
pub fn serve<S: IndexStore>(
    store: Result<&mut S, &StoreError>,
    config: Option<&Config>,
    request: &IndexRequest,
    now: Millis,
) -> (IndexReply, Option<Millis>) {
    let Some(config) = config else {
        let detail = "the worker's configuration is invalid (see /healthz)".into();
        return (IndexReply::StoreFailed { detail }, None);
    };
    let store = match store {
        Ok(store) => store,
        Err(error) => {
            let detail = error.to_string();
            return (IndexReply::StoreFailed { detail }, None);
        }
    };
    let alerts = AlertPolicy::of(config);
    let reply = handle(store, request, now, alerts.as_ref());
    let wake = match reply {
        IndexReply::Applied(_) | IndexReply::Noted => {
            next_wake(store, alerts.is_some()).ok().flatten()
        }
        _ => None,
    };
    (reply, wake)
}

/// Whether an alarm must be set to fire by `wake` when the one set fires at `set`: unless it
/// fires at or before `wake`.
pub fn must_set_alarm(set: Option<Millis>, wake: Millis) -> bool {
    set.is_none_or(|set| set > wake)
}

/// The first half of an alarm: what it expired, and the notifications due to be sent now.
#[derive(Debug)]
pub struct AlarmRun<'a> {
    /// When the alarm ran.
    pub ran_at: Millis,
    /// How many entries it expired.
    pub expired: usize,
    /// Where and how notifications are sent; `None` while they are off (or the configuration
    /// is invalid).
    pub alerts: Option<(&'a AlertConfig, AlertPolicy)>,
    /// The notifications due, at most [`PER_ALARM`]; empty when `alerts` is `None`.
    pub due: Vec<Notification>,
}

/// Starts the alarm that ran at `ran_at`: expires up to [`PER_ALARM`] entries and takes the
/// notifications due. A store failure stops either step where it is (counted as nothing
/// expired, or nothing due); the alarm comes back when [`alarm_end`] can read the next work.
pub fn alarm_start<'a, S: IndexStore>(
    store: &mut S,
    config: Option<&'a Config>,
    ran_at: Millis,
) -> AlarmRun<'a> {
    let expired = expire(store, ran_at, PER_ALARM).unwrap_or(0);
    let alerts = config.and_then(|c| Some((c.alerts.as_ref()?, AlertPolicy::of(c)?)));
    let due = match alerts {
        Some(_) => alert::due(store, ran_at, PER_ALARM).unwrap_or_default(),
        None => Vec::new(),
    };
    AlarmRun {
        ran_at,
        expired,
        alerts,
        due,
    }
}

/// What one notification's log line says: its id and kind, and, when it was not accepted, why
/// and whether it was given up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendLine {
    /// The notification's id (its `webhook-id`).
    pub id: String,
    /// Its kind's name.
    pub kind: &'static str,
    /// Why it was not accepted, and whether it was given up.
    pub failed: Option<(String, bool)>,
}

/// Ends the alarm `run` at `now`: each due notification settled by its send's answer (`answers`,
/// in the order of `run.due`; `jitter` gives each back-off its fraction in `[0, 1)`). Returns a
/// line for each one settled, and when the alarm runs next (see [`alert::next_alarm`]).
pub fn alarm_end<S: IndexStore>(
    store: &mut S,
    run: &AlarmRun<'_>,
    answers: Vec<Result<(), String>>,
    now: Millis,
    mut jitter: impl FnMut() -> f64,
) -> (Vec<SendLine>, Option<Millis>) {
    let mut lines = Vec::new();
    if let Some((_, policy)) = &run.alerts {
        for (notification, accepted) in run.due.iter().zip(answers) {
            let backoff = (policy, jitter());
            if let Ok(failed) = alert::settle(store, notification, accepted, now, backoff) {
                lines.push(SendLine {
                    id: notification.id.clone(),
                    kind: notification.kind.name(),
                    failed,
                });
            }
        }
    }
    let wake = next_wake(store, run.alerts.is_some()).ok().flatten();
    let more = run.expired == PER_ALARM || run.due.len() == PER_ALARM;
    (lines, alert::next_alarm(more, wake, run.ran_at, now))
}
