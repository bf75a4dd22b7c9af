//! The failure index's rules over a small sorted key-value store (the index object's own
//! storage, or a map in tests): apply a report, list, summarise, expire.
//!
//! | key | value | why |
//! | --- | --- | --- |
//! | `e:{key}` | the entry (JSON) | one per event |
//! | `t:{dead_at}:{key}` | empty | the list's order, newest first |
//! | `x:{expires_at}:{key}` | empty | what expires next |
//! | `c:{provider}:{state}` | a count | the summary without a scan |
//! | `n:{next_at}:{id}` | a notification (JSON) | the notifications' outbox, see [`super::alert`] |
//! | `o:{origin}` | a window of failures (JSON) | `origin.failing`, see [`super::alert`] |
//! | `d:{provider}` | a window of dead letters (JSON) | the cap on `delivery.dead_lettered`, see [`super::alert::notify`] |
//!
//! Times are written as 16 digits, so the keys sort in time order.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::alert::{self, AlertPolicy};
use super::entry::{Entry, EntryState, IndexReport, MAX_HISTORY};
use super::query::{Cursor, ListQuery};
use super::store::{unreadable, IndexStore};
use crate::claim::{Change, Millis, Scan, StoreError, Transition};
use crate::providers::Provider;

fn entry_key(key: &str) -> String {
    format!("e:{key}")
}

fn time_key(dead_at: Millis, key: &str) -> String {
    format!("t:{dead_at:016}:{key}")
}

fn expiry_key(expires_at: Millis, key: &str) -> String {
    format!("x:{expires_at:016}:{key}")
}

fn count_key(provider: Provider, state: EntryState) -> String {
    format!("c:{}:{}", provider.name(), state.name())
}

/// The time and key in a `t:` or `x:` key.
fn split_timed(stored: &str) -> Option<(Millis, &str)> {
    let rest = stored.get(2..)?;
    let (at, key) = rest.split_once(':')?;
    Some((at.parse().ok()?, key))
}

/// The entry of `key`, if the index has one.
pub fn entry<S: IndexStore>(store: &mut S, key: &str) -> Result<Option<Entry>, StoreError> {
    store
        .get(&entry_key(key))?
        .map(|json| serde_json::from_str(&json).map_err(|_| unreadable("entry")))
        .transpose()
}

/// What applying a report did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The changes new to the index (a report sent again changes nothing).
    pub fresh: Vec<Change>,
    /// The notifications queued for them.
    pub notifications: Vec<String>,
}

/// Applies `report` at `now`: each change the index has not seen, in order, moves the entry's
/// state and joins its timeline; a change older than the entry's newest is stale and skipped
/// (so a report overtaken by an operator's forget does not bring the event back). A dead
/// letter and a recovery each queue one notification when `alerts` is on (`ALERT_URL` set),
/// dead letters within their sender's cap (see [`alert::notify`]). Sending the same report
/// again writes nothing.
pub fn apply<S: IndexStore>(
    store: &mut S,
    report: &IndexReport,
    now: Millis,
    alerts: Option<&AlertPolicy>,
) -> Result<Applied, StoreError> {
    let old = entry(store, &report.key)?;
    let mut next = old.clone().unwrap_or_else(|| new_entry(report));
    if next.storage_id != report.storage_id {
        if report.stored_at < next.stored_at {
            return Ok(Applied::default()); // a late report of an earlier stored event
        }
        next.storage_id = report.storage_id;
        next.stored_at = report.stored_at;
        next.last_seq = 0;
    }
    let mut applied = Applied::default();
    for change in &report.changes {
        if change.seq <= next.last_seq {
            continue;
        }
        next.last_seq = change.seq;
        next.state = EntryState::after(change.transition);
        next.history.push(*change);
        applied.fresh.push(*change);
    }
    let excess = next.history.len().saturating_sub(MAX_HISTORY);
    next.history.drain(..excess);
    if applied.fresh.is_empty() && old.is_some() {
        return Ok(applied); // nothing new: the report was sent again
    }
    refresh(&mut next, report);
    save(store, old.as_ref(), &next)?;
    if let Some(policy) = alerts {
        for change in &applied.fresh {
            if let Some(id) = alert::notify(store, &next, change, now, policy)? {
                applied.notifications.push(id);
            }
        }
    }
    Ok(applied)
}

/// A new entry for `report`'s event (its state set by the changes applied next).
fn new_entry(report: &IndexReport) -> Entry {
    let first_change = report.changes.first().map_or(0, |change| change.at);
    Entry {
        key: report.key.clone(),
        storage_id: report.storage_id,
        stored_at: report.stored_at,
        last_seq: 0,
        provider: report.provider,
        event_type: None,
        first_seen_at: report.first_seen_at,
        dead_at: report.dead_at.unwrap_or(first_change),
        attempts: report.attempts,
        last_reason: None,
        state: EntryState::Dead,
        expires_at: report.expires_at,
        history: Vec::new(),
    }
}

/// The entry's facts as `report` has them (a fact the report lacks is kept).
fn refresh(entry: &mut Entry, report: &IndexReport) {
    if report.event_type.is_some() {
        entry.event_type = report.event_type.clone();
    }
    if report.last_reason.is_some() {
        entry.last_reason = report.last_reason;
    }
    if let Some(dead_at) = report.dead_at {
        entry.dead_at = dead_at;
    }
    entry.first_seen_at = report.first_seen_at;
    entry.attempts = entry.attempts.max(report.attempts);
    entry.expires_at = entry.expires_at.max(report.expires_at);
}

/// Writes `next` over `old`: the entry, and its order, expiry and count keys where they moved.
fn save<S: IndexStore>(store: &mut S, old: Option<&Entry>, next: &Entry) -> Result<(), StoreError> {
    let json = serde_json::to_string(next).expect("an entry always serialises");
    store.put(&entry_key(&next.key), &json)?;
    let moved = |of: fn(&Entry) -> Millis| old.is_none_or(|old| of(old) != of(next));
    if moved(|e| e.dead_at) {
        if let Some(old) = old {
            store.delete(&time_key(old.dead_at, &old.key))?;
        }
        store.put(&time_key(next.dead_at, &next.key), "")?;
    }
    if moved(|e| e.expires_at) {
        if let Some(old) = old {
            store.delete(&expiry_key(old.expires_at, &old.key))?;
        }
        store.put(&expiry_key(next.expires_at, &next.key), "")?;
    }
    if old.is_none_or(|old| old.state != next.state) {
        if let Some(old) = old {
            count(store, old.provider, old.state, -1)?;
        }
        count(store, next.provider, next.state, 1)?;
    }
    Ok(())
}

/// Adds `by` to the count of `provider`'s entries in `state`.
fn count<S: IndexStore>(
    store: &mut S,
    provider: Provider,
    state: EntryState,
    by: i64,
) -> Result<(), StoreError> {
    let key = count_key(provider, state);
    let now: i64 = match store.get(&key)? {
        Some(text) => text.parse().map_err(|_| unreadable("count"))?,
        None => 0,
    };
    match (now + by).max(0) {
        0 => store.delete(&key),
        n => store.put(&key, &n.to_string()),
    }
}

/// An action re-checked the event's object at `now` and found the stored event `storage_id`
/// gone (deleted by an operator whose report was lost, or stored again since): its entry is
/// marked forgotten. An entry of another stored event is left alone. Returns whether it
/// changed.
pub fn gone<S: IndexStore>(
    store: &mut S,
    key: &str,
    storage_id: u64,
    now: Millis,
) -> Result<bool, StoreError> {
    let Some(old) = entry(store, key)? else {
        return Ok(false);
    };
    if old.state == EntryState::Forgotten || old.storage_id != storage_id {
        return Ok(false);
    }
    let mut next = old.clone();
    next.state = EntryState::Forgotten;
    next.last_seq = next.last_seq.saturating_add(1);
    next.history.push(Change {
        transition: Transition::Forgotten,
        at: now,
        seq: next.last_seq,
    });
    let excess = next.history.len().saturating_sub(MAX_HISTORY);
    next.history.drain(..excess);
    save(store, Some(&old), &next)?;
    Ok(true)
}

/// The most `t:` keys one page reads; a page that reads them all without filling up ends
/// early, with a cursor to go on from.
pub const MAX_SCANNED: usize = 2_000;

/// One page of entries, newest dead letter first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// The entries that match.
    pub items: Vec<Entry>,
    /// Where the next page starts; `None` when there is no more.
    pub next_cursor: Option<Cursor>,
}

/// The entries `query` asks for, newest dead letter first. A page holds at most `limit` items
/// and reads at most [`MAX_SCANNED`] entries; `next_cursor` is set whenever more may follow.
pub fn list<S: IndexStore>(store: &mut S, query: &ListQuery) -> Result<Page, StoreError> {
    let mut end = range_end(query);
    let start = query.since.map(|since| format!("t:{since:016}:"));
    let mut page = Page::default();
    let mut scanned = 0;
    while scanned < MAX_SCANNED {
        let batch = 200.min(MAX_SCANNED - scanned);
        let keys = store.scan(&Scan {
            prefix: "t:",
            start: start.clone(),
            end: end.clone(),
            reverse: true,
            limit: Some(batch),
        })?;
        scanned += keys.len();
        for (stored, _) in &keys {
            let Some((dead_at, key)) = split_timed(stored) else {
                continue;
            };
            // An entry that cannot be read is left out of the list rather than failing it.
            let found = entry(store, key).ok().flatten();
            let Some(found) = found.filter(|found| query.matches(found)) else {
                continue;
            };
            page.items.push(found);
            if page.items.len() == query.limit {
                page.next_cursor = Some(Cursor {
                    dead_at,
                    key: key.to_owned(),
                });
                return Ok(page);
            }
        }
        let Some((last, _)) = keys.last().filter(|_| keys.len() == batch) else {
            page.next_cursor = None; // the range is read to its end
            return Ok(page);
        };
        end = Some(last.clone());
        page.next_cursor = split_timed(last).map(|(dead_at, key)| Cursor {
            dead_at,
            key: key.to_owned(),
        });
    }
    Ok(page)
}

/// Where a page's range ends (excluded): before the cursor's entry, and past every entry of
/// `until`'s millisecond.
fn range_end(query: &ListQuery) -> Option<String> {
    let cursor = query
        .cursor
        .as_ref()
        .map(|cursor| time_key(cursor.dead_at, &cursor.key));
    // ';' sorts right after ':', so this follows every key of that millisecond.
    let until = query.until.map(|until| format!("t:{until:016};"));
    match (cursor, until) {
        (Some(cursor), Some(until)) => Some(cursor.min(until)),
        (cursor, until) => cursor.or(until),
    }
}

/// How many entries the index holds, by sender and state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexCounts {
    /// `(sender, state, count)`, for the counts above zero.
    pub counts: Vec<(Provider, EntryState, u64)>,
}

impl IndexCounts {
    /// The summary as the admin API shows it: a total, counts by state (every state, zeros
    /// included) and by sender (the senders with entries).
    pub fn view(&self) -> Value {
        let total: u64 = self.counts.iter().map(|(_, _, n)| n).sum();
        let mut by_state = serde_json::Map::new();
        for state in EntryState::ALL {
            let n: u64 = self
                .counts
                .iter()
                .filter(|(_, s, _)| *s == state)
                .map(|(_, _, n)| n)
                .sum();
            by_state.insert(state.name().into(), json!(n));
        }
        let mut by_provider = serde_json::Map::new();
        for provider in Provider::ALL {
            let counts: Vec<_> = self
                .counts
                .iter()
                .filter(|(p, _, _)| *p == provider)
                .collect();
            if counts.is_empty() {
                continue;
            }
            let states: serde_json::Map<_, _> = EntryState::ALL
                .into_iter()
                .map(|state| {
                    let n = counts
                        .iter()
                        .find(|(_, s, _)| *s == state)
                        .map_or(0, |(_, _, n)| *n);
                    (state.name().to_owned(), json!(n))
                })
                .collect();
            by_provider.insert(provider.name().into(), Value::Object(states));
        }
        json!({ "total": total, "by_state": by_state, "by_provider": by_provider })
    }
}

/// The index's counts.
pub fn summary<S: IndexStore>(store: &mut S) -> Result<IndexCounts, StoreError> {
    let scan = Scan {
        prefix: "c:",
        start: None,
        end: None,
        reverse: false,
        limit: Some(64),
    };
    let mut summary = IndexCounts::default();
    for (key, value) in store.scan(&scan)? {
        let (provider, state) = key[2..]
            .split_once(':')
            .ok_or_else(|| unreadable("count"))?;
        let provider = Provider::from_name(provider).ok_or_else(|| unreadable("count"))?;
        let state = EntryState::from_name(state).ok_or_else(|| unreadable("count"))?;
        let n = value.parse().map_err(|_| unreadable("count"))?;
        summary.counts.push((provider, state, n));
    }
    Ok(summary)
}

/// Deletes at most `limit` entries whose time ran out by `now` (their records are gone too).
/// Returns how many it deleted.
pub fn expire<S: IndexStore>(
    store: &mut S,
    now: Millis,
    limit: usize,
) -> Result<usize, StoreError> {
    let due = store.scan(&Scan {
        prefix: "x:",
        start: None,
        end: Some(format!("x:{:016};", now)),
        reverse: false,
        limit: Some(limit),
    })?;
    let mut deleted = 0;
    for (stored, _) in due {
        let Some((_, key)) = split_timed(&stored) else {
            store.delete(&stored)?;
            continue;
        };
        // Read before anything is deleted, so an error leaves every key in place.
        let old = entry(store, key)?;
        store.delete(&stored)?;
        let Some(old) = old.filter(|old| old.expires_at <= now) else {
            continue; // a stale expiry key: the entry lives on
        };
        store.delete(&entry_key(key))?;
        store.delete(&time_key(old.dead_at, key))?;
        count(store, old.provider, old.state, -1)?;
        deleted += 1;
    }
    Ok(deleted)
}

/// When the index's alarm must fire next: the first expiry, or the first notification due
/// while `notifications` are on (off, they wait in the outbox and never wake it).
pub fn next_wake<S: IndexStore>(
    store: &mut S,
    notifications: bool,
) -> Result<Option<Millis>, StoreError> {
    let mut first = |prefix| {
        store
            .scan(&Scan {
                prefix,
                start: None,
                end: None,
                reverse: false,
                limit: Some(1),
            })
            .map(|found| {
                found
                    .first()
                    .and_then(|(key, _)| split_timed(key))
                    .map(|(at, _)| at)
            })
    };
    let expiry = first("x:")?;
    let notification = if notifications { first("n:")? } else { None };
    Ok([expiry, notification].into_iter().flatten().min())
}
