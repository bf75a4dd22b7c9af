//! What the failure index holds: one entry per event that needed a person, and the report an
//! event's object sends it.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::claim::frame::read_payload;
use crate::claim::{self, Change, ClaimRecord, ClaimStore, Millis, StoreError, Transition};
use crate::origin::Reason;
use crate::providers::{self, Provider};

/// Where an indexed event stands, as the index last heard it (the event's own object stays the
/// authority: every action re-checks it there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryState {
    /// Dead-lettered: every attempt allowed failed; its body is kept.
    Dead,
    /// Put back in the queue by an operator.
    Redelivered,
    /// Delivered after it had been dead-lettered.
    Recovered,
    /// Deleted by an operator, or found gone when an action re-checked it.
    Forgotten,
}

impl EntryState {
    /// Every state, in the order the summary lists them.
    pub const ALL: [EntryState; 4] = [
        EntryState::Dead,
        EntryState::Redelivered,
        EntryState::Recovered,
        EntryState::Forgotten,
    ];

    /// Its name in the API and in filters.
    pub fn name(self) -> &'static str {
        match self {
            EntryState::Dead => "dead",
            EntryState::Redelivered => "redelivered",
            EntryState::Recovered => "recovered",
            EntryState::Forgotten => "forgotten",
        }
    }

    /// The state of that name.
    pub fn from_name(name: &str) -> Option<EntryState> {
        EntryState::ALL
            .into_iter()
            .find(|state| state.name() == name)
    }

    /// The state a transition leads to.
    pub fn after(transition: Transition) -> EntryState {
        match transition {
            Transition::DeadLettered => EntryState::Dead,
            Transition::Redelivered => EntryState::Redelivered,
            Transition::Recovered => EntryState::Recovered,
            Transition::Forgotten => EntryState::Forgotten,
        }
    }
}

/// What an event's object tells the index: the event as it stands, and the changes not yet
/// acknowledged, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexReport {
    /// The event's record key (its object's name).
    pub key: String,
    /// Which stored event of that key (see [`crate::claim::QueueStage::storage_id`]).
    pub storage_id: u64,
    /// When that stored event was stored (orders the stored events of one key).
    pub stored_at: Millis,
    /// Its sender.
    pub provider: Provider,
    /// Its type, when the sender names one (read from the stored event).
    pub event_type: Option<String>,
    /// When it was first seen.
    pub first_seen_at: Millis,
    /// Attempts made so far.
    pub attempts: u32,
    /// Why the last attempt failed.
    pub last_reason: Option<Reason>,
    /// When it was last dead-lettered.
    pub dead_at: Option<Millis>,
    /// When its record expires (the entry expires with it).
    pub expires_at: Millis,
    /// The changes, oldest first.
    pub changes: Vec<Change>,
}

impl IndexReport {
    /// The report of `record` with `changes`; `payload` is its stored event, when it still has
    /// one (its type is read from it). `None` for a record of no webhook sender.
    pub fn of(record: &ClaimRecord, changes: Vec<Change>, payload: Option<&[u8]>) -> Option<Self> {
        let provider = record.source.provider()?;
        Some(IndexReport {
            key: record.key.clone(),
            storage_id: record.queue().map_or(0, |queue| queue.storage_id),
            stored_at: record.queue().map_or(0, |queue| queue.accepted_at),
            provider,
            event_type: payload.and_then(|payload| event_type(provider, payload)),
            first_seen_at: record.first_seen_at,
            attempts: record.attempts,
            last_reason: record.last_failure,
            dead_at: record.dead_at(),
            expires_at: record.expires_at,
            changes,
        })
    }

    /// The report that `record`, read before an operator deleted it at `now`, is forgotten:
    /// `None` unless it was ever dead-lettered (only those are in the index).
    pub fn forgotten(record: &ClaimRecord, now: Millis) -> Option<Self> {
        record.dead_at()?;
        let change = Change {
            transition: Transition::Forgotten,
            at: now,
            seq: record.queue()?.changes_noted.saturating_add(1),
        };
        IndexReport::of(record, vec![change], None)
    }
}

/// The report due for `key` at `now` and the changes it carries (see
/// [`crate::claim::report_due`]); `None` inside when the record is no webhook sender's, whose
/// changes the index does not keep (they are dropped when acknowledged).
#[allow(clippy::type_complexity)]
pub fn due_report<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
) -> Result<Option<(Option<IndexReport>, Vec<Change>)>, StoreError> {
    let Some((record, changes)) = claim::report_due(store, key, now)? else {
        return Ok(None);
    };
    let payload = store.load_payload(key)?;
    let report = IndexReport::of(&record, changes.clone(), payload.as_deref());
    Ok(Some((report, changes)))
}

/// The type of a stored event: the header that names it (GitHub, Shopify), else the body's
/// `type` field (Stripe, Standard Webhooks). `None` when neither names one in its sender's
/// alphabet (see [`providers::is_event_type_of`]): no other text reaches the index or a
/// notification.
pub fn event_type(provider: Provider, payload: &[u8]) -> Option<String> {
    let (headers, body) = read_payload(payload).ok()?;
    let header = match provider {
        Provider::Github => Some(providers::github::EVENT_HEADER),
        Provider::Shopify => Some(providers::shopify::TOPIC_HEADER),
        Provider::Stripe | Provider::Standard => None,
    };
    let named = match header {
        Some(name) => headers
            .into_iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value),
        None => {
            #[derive(Deserialize)]
            struct Typed {
                #[serde(rename = "type")]
                event_type: Option<String>,
            }
            serde_json::from_slice::<Typed>(body).ok()?.event_type
        }
    };
    named.filter(|name| providers::is_event_type_of(provider, name))
}

/// Most changes an entry remembers (its timeline); older ones are dropped.
pub const MAX_HISTORY: usize = 16;

/// The most bytes one entry's JSON takes, whatever its sender sent: its id is at most 255
/// characters and its type at most 100, each in its sender's alphabet, and its timeline at
/// most [`MAX_HISTORY`] changes. Besides it, an entry holds three keys (`e:`, `t:`, `x:`), each
/// at most its key's length and 20 bytes more. Checked by the host tests.
pub const MAX_ENTRY_BYTES: usize = 2_048;

/// One event in the index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The event's record key.
    pub key: String,
    /// Which stored event of that key its changes came from.
    pub storage_id: u64,
    /// When that stored event was stored.
    pub stored_at: Millis,
    /// The number of the last change applied (a change numbered no higher, of the same stored
    /// event, was applied already).
    pub last_seq: u32,
    /// Its sender.
    pub provider: Provider,
    /// Its type, when known.
    pub event_type: Option<String>,
    /// When it was first seen.
    pub first_seen_at: Millis,
    /// When it was last dead-lettered (the index's order).
    pub dead_at: Millis,
    /// Attempts made, as last reported.
    pub attempts: u32,
    /// Why the last attempt failed, as last reported.
    pub last_reason: Option<Reason>,
    /// Where it stands, as last reported.
    pub state: EntryState,
    /// When it leaves the index (its record's expiry).
    pub expires_at: Millis,
    /// The changes applied, oldest first (at most [`MAX_HISTORY`]).
    pub history: Vec<Change>,
}

impl Entry {
    /// The delivery id its sender gave.
    pub fn id(&self) -> &str {
        self.provider.id_of(&self.key)
    }

    /// The entry as the admin API lists it (times in RFC 3339).
    pub fn view(&self) -> Value {
        json!({
            "provider": self.provider,
            "id": self.id(),
            "event_type": self.event_type,
            "first_seen_at": crate::rfc3339::format(self.first_seen_at),
            "dead_at": crate::rfc3339::format(self.dead_at),
            "attempts": self.attempts,
            "last_reason": self.last_reason.map(|reason| reason.to_string()),
            "state": self.state,
            "history": self.history.iter().map(|change| json!({
                "transition": change.transition,
                "at": crate::rfc3339::format(change.at),
            })).collect::<Vec<_>>(),
        })
    }
}
