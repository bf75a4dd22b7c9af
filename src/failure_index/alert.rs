//! Operational notifications: Standard Webhooks-signed POSTs to `ALERT_URL` when an event is
//! dead-lettered or recovered, and when one origin's attempts keep failing across events.
//!
//! Each notification is queued in the index's own storage with a stable `webhook-id` (so a
//! receiver can de-duplicate), sent by the index object's alarm, and retried with back-off
//! like a queued event; it never delays or fails a delivery.

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::entry::Entry;
use super::store::IndexStore;
use super::IndexRequest;
use crate::claim::{Change, Millis, RetryPolicy, Scan, StoreError, Transition};
use crate::config::Config;
use crate::origin::{is_success, OriginOutcome, Reason, Verdict};
use crate::providers::standard;
use crate::providers::Provider;

/// How notifications are made and retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AlertPolicy {
    /// At most one `origin.failing` per origin per this long (`ALERT_MIN_INTERVAL_SECONDS`).
    pub min_interval_ms: u64,
    /// Back-off and give-up for sending (the queue's `RETRY_*` settings).
    pub retry: RetryPolicy,
    /// At most this many `delivery.dead_lettered` per sender per interval
    /// (`ALERT_DEAD_LETTER_LIMIT`); the rest are counted in one digest.
    pub dead_letter_limit: u32,
    /// That interval (`ALERT_DEAD_LETTER_INTERVAL_SECONDS`), in milliseconds.
    pub dead_letter_interval_ms: u64,
}

impl AlertPolicy {
    /// The policy of `config`: on with `ALERT_URL`, retried like a queued event.
    pub fn of(config: &Config) -> Option<AlertPolicy> {
        config.alerts.as_ref().map(|alerts| AlertPolicy {
            min_interval_ms: alerts.min_interval_ms,
            retry: config.queue.retry,
            dead_letter_limit: alerts.dead_letter_limit,
            dead_letter_interval_ms: alerts.dead_letter_interval_ms,
        })
    }
}

/// Most notifications one alarm of the index sends, and most entries it expires; the rest
/// wait a second.
pub const PER_ALARM: usize = 50;

/// When the index's alarm that ran at `ran_at` runs next: a second after `now` when it stopped
/// at [`PER_ALARM`] (`more`), else at `wake`, its next work, unless that was already due when
/// it ran (a notification that could not be read, say): then a minute later, never at once,
/// so the alarm does not spin.
pub fn next_alarm(more: bool, wake: Option<Millis>, ran_at: Millis, now: Millis) -> Option<Millis> {
    match (more, wake) {
        (true, _) => Some(now.saturating_add(1_000)),
        (false, wake) => wake.map(|at| crate::object::rearm_at(at, ran_at, now)),
    }
}

/// How long one notification's POST may take: no 2xx within it is a failed send.
pub const SEND_TIMEOUT_MS: u64 = 10_000;

/// What one POST of a notification came to, given how its exchange ended (`Answered` with the
/// status once one arrived within [`SEND_TIMEOUT_MS`]): `Ok` for a 2xx, else why it failed, in
/// words for the log line (never the runtime's error text, which can quote the URL).
pub fn send_outcome(outcome: &OriginOutcome) -> Result<(), String> {
    match outcome {
        OriginOutcome::Answered { status } if is_success(*status) => Ok(()),
        OriginOutcome::Answered { status } => Err(format!("answered {status}")),
        OriginOutcome::TimedOut => Err("no answer in time".into()),
        OriginOutcome::NotSent => Err("the request could not be made".into()),
        OriginOutcome::Failed { error } => Err(format!("network error ({error:?})")),
    }
}

/// Settles `notification` by its send's outcome at `now`: accepted, it leaves the outbox; else
/// it is sent again or given up (see [`send_failed`]). Returns what its log line says: `None`
/// when it was accepted, else why not and whether it was given up.
pub fn settle<S: IndexStore>(
    store: &mut S,
    notification: &Notification,
    accepted: Result<(), String>,
    now: Millis,
    (policy, jitter): (&AlertPolicy, f64),
) -> Result<Option<(String, bool)>, StoreError> {
    match accepted {
        Ok(()) => sent(store, notification).map(|()| None),
        Err(detail) => {
            let failed = send_failed(store, notification, now, policy, jitter)?;
            Ok(Some((detail, failed == SendFailed::GaveUp)))
        }
    }
}

/// Failed attempts of this many different events within [`ORIGIN_WINDOW_MS`] make an origin
/// failing.
pub const ORIGIN_FAILING_EVENTS: usize = 3;
/// The window in which an origin's failures are counted.
pub const ORIGIN_WINDOW_MS: u64 = 10 * 60 * 1_000;

/// What a notification says happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// `delivery.dead_lettered`: every attempt allowed for an event failed.
    DeadLettered,
    /// `delivery.recovered`: an event that was dead was delivered.
    Recovered,
    /// `origin.failing`: one origin's attempts keep failing across events.
    OriginFailing,
    /// `origin.recovered`: an origin's breaker closed (see [`crate::origin_gate`]).
    OriginRecovered,
    /// `delivery.dead_lettered_digest`: how many of one sender's events died in an interval
    /// past its `delivery.dead_lettered` cap, with the path of their list.
    DeadLetteredDigest,
}

impl Kind {
    /// The `type` of its payload.
    pub fn name(self) -> &'static str {
        match self {
            Kind::DeadLettered => "delivery.dead_lettered",
            Kind::Recovered => "delivery.recovered",
            Kind::OriginFailing => "origin.failing",
            Kind::OriginRecovered => "origin.recovered",
            Kind::DeadLetteredDigest => "delivery.dead_lettered_digest",
        }
    }
}

/// One notification in the outbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// Its `webhook-id`: the same at every try, and the same for the same transition.
    pub id: String,
    /// What it says.
    pub kind: Kind,
    /// The JSON body, fixed when it was made.
    pub payload: String,
    /// Sends that failed so far.
    pub tries: u32,
    /// When it was made (the give-up age counts from here).
    pub made_at: Millis,
    /// When to send it (again).
    pub next_at: Millis,
}

/// A stable id from the parts that make a notification unique.
fn stable_id(kind: Kind, subject: &str, which: &str) -> String {
    let digest = Sha256::digest(format!("{}\n{subject}\n{which}", kind.name()));
    format!("msg_{}", &hex::encode(digest)[..32])
}

/// The notification of `change` to `entry`, made at `now`: for a dead letter and a recovery;
/// `None` for other changes.
pub fn for_change(entry: &Entry, change: &Change, now: Millis) -> Option<Notification> {
    let kind = match change.transition {
        Transition::DeadLettered => Kind::DeadLettered,
        Transition::Recovered => Kind::Recovered,
        Transition::Redelivered | Transition::Forgotten => return None,
    };
    let payload = json!({
        "type": kind.name(),
        "timestamp": crate::rfc3339::format(change.at),
        "data": {
            "provider": entry.provider,
            "id": entry.id(),
            "event_type": entry.event_type,
            "attempts": entry.attempts,
            "last_reason": entry.last_reason.map(|reason| reason.to_string()),
        },
    });
    Some(Notification {
        id: stable_id(
            kind,
            &entry.key,
            &format!("{}:{}", entry.storage_id, change.seq),
        ),
        kind,
        payload: payload.to_string(),
        tries: 0,
        made_at: now,
        next_at: now,
    })
}

/// Queues the notification of `change` to `entry` at `now` (see [`for_change`]), within the
/// cap of `policy`: a sender's first `dead_letter_limit` dead letters of an interval (which
/// starts at the first one) are notified one by one; every one after is counted in one
/// [`Kind::DeadLetteredDigest`], due when the interval ends, so a flood of dead letters (a
/// captured body replayed under made-up ids to a handler that refuses it) costs at most
/// `dead_letter_limit + 1` notifications per sender per interval. Returns the id of what it
/// queued or updated.
pub fn notify<S: IndexStore>(
    store: &mut S,
    entry: &Entry,
    change: &Change,
    now: Millis,
    policy: &AlertPolicy,
) -> Result<Option<String>, StoreError> {
    let Some(notification) = for_change(entry, change, now) else {
        return Ok(None);
    };
    if notification.kind != Kind::DeadLettered {
        queue(store, &notification)?;
        return Ok(Some(notification.id));
    }
    let key = format!("d:{}", entry.provider.name());
    let held: Option<DeadLetterWindow> = match store.get(&key)? {
        Some(json) => serde_json::from_str(&json).ok(),
        None => None,
    };
    let mut window = held
        .filter(|window| now < window.ends_at(policy))
        .unwrap_or(DeadLetterWindow {
            started_at: now,
            first_dead_at: entry.dead_at,
            last_dead_at: entry.dead_at,
            notified: 0,
            held: 0,
        });
    window.first_dead_at = window.first_dead_at.min(entry.dead_at);
    window.last_dead_at = window.last_dead_at.max(entry.dead_at);
    let queued = if window.notified < policy.dead_letter_limit {
        window.notified += 1;
        notification
    } else {
        window.held += 1;
        digest(entry.provider, &window, policy)
    };
    queue(store, &queued)?;
    let json = serde_json::to_string(&window).expect("a window always serialises");
    store.put(&key, &json)?;
    Ok(Some(queued.id))
}

/// One sender's dead-letter notifications in the current interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct DeadLetterWindow {
    /// When the interval began (the index heard of its first dead letter).
    started_at: Millis,
    /// The earliest and the latest time of death of its dead letters (their objects' clocks,
    /// the times the list filters by).
    first_dead_at: Millis,
    /// See `first_dead_at`.
    last_dead_at: Millis,
    /// How many were notified one by one.
    notified: u32,
    /// How many were held for the digest.
    held: u32,
}

impl DeadLetterWindow {
    fn ends_at(&self, policy: &AlertPolicy) -> Millis {
        self.started_at
            .saturating_add(policy.dead_letter_interval_ms)
    }
}

/// The digest of `window`'s held dead letters of `provider`: due when the window ends, with a
/// stable id, so each further dead letter of the window rewrites it in place with its count.
/// Its `list` is the path of the admin API's list of every dead letter of the window (`since`
/// and `until`, both included, span their times of death).
fn digest(provider: Provider, window: &DeadLetterWindow, policy: &AlertPolicy) -> Notification {
    let kind = Kind::DeadLetteredDigest;
    let ends_at = window.ends_at(policy);
    let since = crate::rfc3339::format(window.first_dead_at).unwrap_or_default();
    let until = crate::rfc3339::format(window.last_dead_at).unwrap_or_default();
    let payload = json!({
        "type": kind.name(),
        "timestamp": crate::rfc3339::format(ends_at),
        "data": {
            "provider": provider,
            "count": window.held,
            "notified": window.notified,
            "interval_seconds": policy.dead_letter_interval_ms / 1_000,
            "since": since,
            "until": until,
            "list": format!(
                "/admin/dead-letters?provider={}&state=dead&since={since}&until={until}",
                provider.name()
            ),
        },
    });
    Notification {
        id: stable_id(kind, provider.name(), &window.started_at.to_string()),
        kind,
        payload: payload.to_string(),
        tries: 0,
        made_at: ends_at,
        next_at: ends_at,
    }
}

fn outbox_key(notification: &Notification) -> String {
    format!("n:{:016}:{}", notification.next_at, notification.id)
}

/// Puts `notification` in the outbox.
pub fn queue<S: IndexStore>(store: &mut S, notification: &Notification) -> Result<(), StoreError> {
    let json = serde_json::to_string(notification).expect("a notification always serialises");
    store.put(&outbox_key(notification), &json)
}

/// At most `limit` notifications due by `now`, oldest first.
pub fn due<S: IndexStore>(
    store: &mut S,
    now: Millis,
    limit: usize,
) -> Result<Vec<Notification>, StoreError> {
    let scan = Scan {
        prefix: "n:",
        start: None,
        end: Some(format!("n:{now:016};")),
        reverse: false,
        limit: Some(limit),
    };
    store
        .scan(&scan)?
        .into_iter()
        .map(|(_, json)| {
            serde_json::from_str(&json).map_err(|_| {
                StoreError::Fatal("the failure index holds an unreadable notification".into())
            })
        })
        .collect()
}

/// `notification` was accepted (a 2xx): it leaves the outbox.
pub fn sent<S: IndexStore>(store: &mut S, notification: &Notification) -> Result<(), StoreError> {
    store.delete(&outbox_key(notification))
}

/// What became of a notification whose send failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendFailed {
    /// It is sent again then.
    RetryAt(Millis),
    /// Its tries are spent (`RETRY_MAX_ATTEMPTS`, or `RETRY_MAX_AGE_HOURS` since it was made):
    /// it is dropped, and the log says so.
    GaveUp,
}

/// Sending `notification` failed at `now`: it waits the back-off of `policy` (`jitter` in
/// `[0, 1)`), or is dropped once its tries are spent.
pub fn send_failed<S: IndexStore>(
    store: &mut S,
    notification: &Notification,
    now: Millis,
    policy: &AlertPolicy,
    jitter: f64,
) -> Result<SendFailed, StoreError> {
    store.delete(&outbox_key(notification))?;
    let tries = notification.tries.saturating_add(1);
    let next_at = now.saturating_add(policy.retry.backoff_ms(tries, jitter));
    let too_old = next_at > notification.made_at.saturating_add(policy.retry.max_age_ms);
    if tries >= policy.retry.max_attempts || too_old {
        return Ok(SendFailed::GaveUp);
    }
    queue(
        store,
        &Notification {
            tries,
            next_at,
            ..notification.clone()
        },
    )?;
    Ok(SendFailed::RetryAt(next_at))
}

/// The headers of a send of `notification` at `now_seconds`, signed with the Standard Webhooks
/// secret's key `hmac_key`: `webhook-id`, `webhook-timestamp`, `webhook-signature`, and the
/// JSON content type.
pub fn signed_headers(
    hmac_key: &[u8],
    notification: &Notification,
    now_seconds: i64,
) -> Vec<(String, String)> {
    let signature = standard::signature_for(
        hmac_key,
        &notification.id,
        now_seconds,
        notification.payload.as_bytes(),
    );
    vec![
        ("content-type".into(), "application/json".into()),
        ("webhook-id".into(), notification.id.clone()),
        ("webhook-timestamp".into(), now_seconds.to_string()),
        ("webhook-signature".into(), signature),
    ]
}

/// What the failure index is told when an attempt of event `key` of `provider` ended with
/// `verdict`: an attempt that counts against its origin (a webhook delivery that did not
/// succeed: a non-2xx, a time-out, a network error, a lost answer, whether the sender was told
/// in time or later), while notifications are on (`ALERT_URL`) and the sender is enabled.
/// `None` otherwise, before any other work: a success never costs more.
pub fn origin_failure(
    config: &Config,
    key: &str,
    provider: Option<Provider>,
    verdict: Verdict,
) -> Option<IndexRequest> {
    let reason = match verdict {
        Verdict::Succeeded => return None,
        Verdict::Failed(reason) | Verdict::Unknown(reason) => reason,
        Verdict::Pending => Reason::TimedOut,
    };
    config.alerts.as_ref()?;
    let (_, url) = config.sender(provider?)?;
    Some(IndexRequest::OriginFailed {
        origin: url.origin().ascii_serialization(),
        key: key.to_owned(),
        reason: Some(reason),
    })
}

/// The recent failures of one origin.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct OriginWindow {
    /// `(event key, when)` of each event's latest failure within the window.
    failures: Vec<(String, Millis)>,
    /// When `origin.failing` was last queued for it.
    alerted_at: Option<Millis>,
}

/// An attempt of event `key` at `origin` (its scheme, host and port) failed at `now` for
/// `reason`. Queues `origin.failing` when failures of [`ORIGIN_FAILING_EVENTS`] different
/// events fall within [`ORIGIN_WINDOW_MS`], at most once per `min_interval_ms`. Returns its id
/// when it queued one.
pub fn origin_failed<S: IndexStore>(
    store: &mut S,
    origin: &str,
    key: &str,
    reason: Option<Reason>,
    now: Millis,
    policy: &AlertPolicy,
) -> Result<Option<String>, StoreError> {
    let stored_key = format!("o:{origin}");
    let mut window: OriginWindow = match store.get(&stored_key)? {
        Some(json) => serde_json::from_str(&json).unwrap_or_default(),
        None => OriginWindow::default(),
    };
    let from = now.saturating_sub(ORIGIN_WINDOW_MS);
    window
        .failures
        .retain(|(failed, at)| *at >= from && failed != key);
    window.failures.push((key.to_owned(), now));
    let excess = window
        .failures
        .len()
        .saturating_sub(ORIGIN_FAILING_EVENTS * 4);
    window.failures.drain(..excess);
    let quiet = window
        .alerted_at
        .is_none_or(|at| now >= at.saturating_add(policy.min_interval_ms));
    let mut queued = None;
    if window.failures.len() >= ORIGIN_FAILING_EVENTS && quiet {
        let notification = origin_failing(origin, &window, reason, now);
        queue(store, &notification)?;
        window.alerted_at = Some(now);
        queued = Some(notification.id);
    }
    let json = serde_json::to_string(&window).expect("a window always serialises");
    store.put(&stored_key, &json)?;
    Ok(queued)
}

/// The `origin.failing` notification for `window` at `now`.
fn origin_failing(
    origin: &str,
    window: &OriginWindow,
    reason: Option<Reason>,
    now: Millis,
) -> Notification {
    let kind = Kind::OriginFailing;
    let payload = json!({
        "type": kind.name(),
        "timestamp": crate::rfc3339::format(now),
        "data": {
            "origin": origin,
            "failed_events": window.failures.len(),
            "window_seconds": ORIGIN_WINDOW_MS / 1_000,
            "last_reason": reason.map(|reason| reason.to_string()),
            "keys": window.failures.iter().map(|(key, _)| key).collect::<Vec<_>>(),
        },
    });
    Notification {
        id: stable_id(kind, origin, &now.to_string()),
        kind,
        payload: payload.to_string(),
        tries: 0,
        made_at: now,
        next_at: now,
    }
}

/// Queues `origin.recovered` for `origin`, whose breaker opened at `down_since` and closed at
/// `now`. Its id is the same for the same recovery, however often the gate reports it.
pub fn origin_recovered<S: IndexStore>(
    store: &mut S,
    origin: &str,
    down_since: Millis,
    now: Millis,
) -> Result<(), StoreError> {
    let kind = Kind::OriginRecovered;
    let payload = json!({
        "type": kind.name(),
        "timestamp": crate::rfc3339::format(now),
        "data": {
            "origin": origin,
            "down_since": crate::rfc3339::format(down_since),
            "down_seconds": now.saturating_sub(down_since) / 1_000,
        },
    });
    let notification = Notification {
        id: stable_id(kind, origin, &down_since.to_string()),
        kind,
        payload: payload.to_string(),
        tries: 0,
        made_at: now,
        // Due at once; one outbox entry per recovery, however often it is reported.
        next_at: down_since,
    };
    queue(store, &notification)
}
