//! The failure index object's two sequences: a request served ([`call`]), and an alarm run
//! ([`run_alarm`]) in two halves around the sends of its notifications. Both are written over
//! [`IndexIo`], the few calls only the runtime can make (the object's table and alarm, a
//! notification's POST, the log), which `src/worker/failure_index.rs` carries out.

use futures_util::future::join_all;

use super::alert::{self, AlertPolicy, Notification, PER_ALARM};
use super::{expire, handle, next_wake, IndexReply, IndexRequest, IndexStore, INDEX_NAME};
use crate::claim::{Millis, StoreError, Usage};
use crate::config::{AlertConfig, Config};
use crate::log_line::{LogLine, Route};
use crate::object::Host;

/// What only the runtime can do for the failure index object, beyond what it does for every
/// object ([`Host`]).
#[allow(async_fn_in_trait)] // used by generics only, never as `dyn`
pub trait IndexIo: Host {
    /// When the alarm set fires; `None` when none is set or it cannot be read.
    async fn alarm_at(&self) -> Option<Millis>;

    /// POSTs `body` with `headers` to `url`: `Ok` for a 2xx in time, else why not.
    async fn post(&self, url: &str, headers: &[(String, String)], body: &str)
        -> Result<(), String>;
}

/// Serves one request's JSON (an [`IndexRequest`]) and answers with the reply's JSON; one it
/// cannot read is a store failure, saying why. With `LOG_STORAGE_USAGE=true` the rows it read
/// and wrote are logged. A change that needs the alarm sooner than the one set sets it.
pub async fn call<I: IndexIo>(io: &I, request: &str) -> String {
    let reply = match serde_json::from_str::<IndexRequest>(request) {
        Ok(request) => served(io, &request).await,
        Err(error) => IndexReply::StoreFailed {
            detail: format!("an unreadable request: {error}"),
        },
    };
    serde_json::to_string(&reply).expect("a reply always serialises")
}

async fn served<I: IndexIo>(io: &I, request: &IndexRequest) -> IndexReply {
    let config = io.config();
    let mut store = io.open();
    let opened = store.as_mut().map_err(|error| &*error);
    let (reply, wake) = serve(opened, config.as_deref(), request, io.now_ms());
    if let (Ok(store), Some(true)) = (&store, config.map(|c| c.log_storage_usage)) {
        let Usage {
            rows_read,
            rows_written,
        } = store.usage;
        let usage = LogLine::usage(INDEX_NAME, request.op(), rows_read, rows_written);
        io.write(&LogLine {
            route: Route::Index,
            ..usage
        });
    }
    if let Some(wake) = wake {
        if must_set_alarm(io.alarm_at().await, wake) {
            set_alarm(io, wake).await;
        }
    }
    reply
}

/// Sets the alarm for `at`; a failure is logged (the next request or alarm sets it).
async fn set_alarm<I: IndexIo>(io: &I, at: Millis) {
    if let Err(error) = io.set_alarm(at).await {
        io.write(&LogLine {
            route: Route::Index,
            ..LogLine::alarm_not_set(&error)
        });
    }
}

/// Runs the alarm: expires entries and sends the due notifications side by side (so a slow
/// receiver costs one time-out per alarm, not one each), each signed as it is sent, settles
/// and logs each, then sets the alarm for the next work. `jitter` gives each back-off its
/// fraction in `[0, 1)`.
pub async fn run_alarm<I: IndexIo>(io: &I, jitter: impl FnMut() -> f64) {
    let config = io.config();
    let Ok(mut store) = io.open() else {
        return;
    };
    let run = alarm_start(&mut store, config.as_deref(), io.now_ms());
    let answers = match run.alerts {
        Some((alerts, _)) => join_all(run.due.iter().map(|due| post(io, alerts, due))).await,
        None => Vec::new(),
    };
    let (sent, at) = alarm_end(&mut store, &run, answers, io.now_ms(), jitter);
    for line in &sent {
        io.write(line);
    }
    if let Some(at) = at {
        set_alarm(io, at).await;
    }
}

/// POSTs `notification` to `ALERT_URL`, signed now.
async fn post<I: IndexIo>(
    io: &I,
    alerts: &AlertConfig,
    notification: &Notification,
) -> Result<(), String> {
    let now_seconds = (io.now_ms() / 1_000) as i64;
    let headers = alert::signed_headers(alerts.key.expose(), notification, now_seconds);
    io.post(alerts.url.as_str(), &headers, &notification.payload)
        .await
}

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

/// Ends the alarm `run` at `now`: each due notification settled by its send's answer (`answers`,
/// in the order of `run.due`; `jitter` gives each back-off its fraction in `[0, 1)`). Returns the
/// log line of each one settled, and when the alarm runs next (see [`alert::next_alarm`]).
pub fn alarm_end<S: IndexStore>(
    store: &mut S,
    run: &AlarmRun<'_>,
    answers: Vec<Result<(), String>>,
    now: Millis,
    mut jitter: impl FnMut() -> f64,
) -> (Vec<LogLine>, Option<Millis>) {
    let mut lines = Vec::new();
    if let Some((_, policy)) = &run.alerts {
        for (notification, accepted) in run.due.iter().zip(answers) {
            let backoff = (policy, jitter());
            if let Ok(failed) = alert::settle(store, notification, accepted, now, backoff) {
                let failed = failed
                    .as_ref()
                    .map(|(why, gave_up)| (why.as_str(), *gave_up));
                let kind = notification.kind.name();
                lines.push(LogLine::notification(&notification.id, kind, failed));
            }
        }
    }
    let wake = next_wake(store, run.alerts.is_some()).ok().flatten();
    let more = run.expired == PER_ALARM || run.due.len() == PER_ALARM;
    (lines, alert::next_alarm(more, wake, run.ran_at, now))
}
