//! The dead-letter list's filters, read from a query string: each bad one is refused with its
//! own code before anything is read or written.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::entry::EntryState;
use crate::claim::Millis;
use crate::providers::{self, Provider};

/// Items per page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 50;
/// The most items one page may ask for.
pub const MAX_LIMIT: usize = 500;

/// Which entries to list, newest dead letter first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ListQuery {
    /// Only this sender's.
    pub provider: Option<Provider>,
    /// Only events of this type.
    pub event_type: Option<String>,
    /// Only entries in this state.
    pub state: Option<EntryState>,
    /// Only those dead-lettered at or after this time.
    pub since: Option<Millis>,
    /// Only those dead-lettered at or before this time.
    pub until: Option<Millis>,
    /// At most this many items (1 to [`MAX_LIMIT`]).
    pub limit: usize,
    /// Where the previous page ended.
    pub cursor: Option<Cursor>,
}

impl ListQuery {
    /// Whether `entry`'s fields pass the filters other than time (the index's order serves
    /// `since`, `until` and the cursor).
    pub fn matches(&self, entry: &super::Entry) -> bool {
        self.provider
            .is_none_or(|provider| entry.provider == provider)
            && self
                .event_type
                .as_ref()
                .is_none_or(|wanted| entry.event_type.as_ref() == Some(wanted))
            && self.state.is_none_or(|state| entry.state == state)
    }
}

/// A position in the index: the last entry a page showed (the next page starts after it).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cursor {
    /// That entry's time of death.
    pub dead_at: Millis,
    /// Its key.
    pub key: String,
}

impl Cursor {
    /// The opaque text handed to the caller.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}:{}", self.dead_at, self.key))
    }

    /// Reads a cursor this service handed out; `None` for anything else.
    pub fn decode(text: &str) -> Option<Cursor> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let (dead_at, key) = text.split_once(':')?;
        let valid_key =
            !key.is_empty() && key.len() <= 300 && key.bytes().all(|b| b.is_ascii_graphic());
        let digits = !dead_at.is_empty() && dead_at.bytes().all(|b| b.is_ascii_digit());
        (valid_key && digits).then_some(Cursor {
            dead_at: dead_at.parse().ok()?,
            key: key.to_owned(),
        })
    }
}

/// Why a query was refused (answered 400, nothing read or written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    /// The error code.
    pub code: &'static str,
    /// What is wrong, in words.
    pub detail: String,
}

fn refuse(code: &'static str, detail: impl Into<String>) -> QueryError {
    QueryError {
        code,
        detail: detail.into(),
    }
}

/// Reads the filters from the query string's `pairs` (already percent-decoded). Every parameter
/// may appear once; an empty value counts as not given. Unknown parameters are refused, so a
/// misspelt filter never silently matches everything.
pub fn parse<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<ListQuery, QueryError> {
    let mut query = ListQuery {
        limit: DEFAULT_LIMIT,
        ..ListQuery::default()
    };
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in pairs {
        if seen.contains(&name) {
            return Err(refuse(
                "duplicate_parameter",
                format!("`{name}` is given twice"),
            ));
        }
        seen.push(name);
        if value.is_empty() {
            continue;
        }
        set(&mut query, name, value)?;
    }
    if let (Some(since), Some(until)) = (query.since, query.until) {
        if since > until {
            return Err(refuse("invalid_range", "`since` is after `until`"));
        }
    }
    Ok(query)
}

/// Sets filter `name` to `value`.
fn set(query: &mut ListQuery, name: &str, value: &str) -> Result<(), QueryError> {
    match name {
        "provider" => query.provider = Some(provider(value)?),
        "type" => query.event_type = Some(event_type(value)?),
        "state" => query.state = Some(state(value)?),
        "since" => query.since = Some(time(name, value)?),
        "until" => query.until = Some(time(name, value)?),
        "limit" => query.limit = limit(value)?,
        "cursor" => query.cursor = Some(cursor(value)?),
        other => {
            return Err(refuse(
                "unknown_parameter",
                format!(
                    "`{other}` is not a filter: provider, type, state, since, until, limit, cursor"
                ),
            ))
        }
    }
    Ok(())
}

fn provider(value: &str) -> Result<Provider, QueryError> {
    Provider::from_name(value).ok_or_else(|| {
        refuse(
            "invalid_provider",
            "`provider` is one of stripe, standard, github, shopify",
        )
    })
}

fn event_type(value: &str) -> Result<String, QueryError> {
    if !providers::is_event_type(value) {
        return Err(refuse(
            "invalid_type",
            "`type` is 1 to 100 printable characters without spaces",
        ));
    }
    Ok(value.to_owned())
}

fn state(value: &str) -> Result<EntryState, QueryError> {
    EntryState::from_name(value).ok_or_else(|| {
        refuse(
            "invalid_state",
            "`state` is one of dead, redelivered, recovered, forgotten",
        )
    })
}

fn time(name: &str, value: &str) -> Result<Millis, QueryError> {
    crate::rfc3339::parse(value).ok_or_else(|| {
        refuse(
            "invalid_time",
            format!("`{name}` is not an RFC 3339 time such as 2026-12-02T10:00:00Z"),
        )
    })
}

fn limit(value: &str) -> Result<usize, QueryError> {
    value
        .parse()
        .ok()
        .filter(|limit| (1..=MAX_LIMIT).contains(limit))
        .ok_or_else(|| {
            refuse(
                "invalid_limit",
                format!("`limit` is a whole number from 1 to {MAX_LIMIT}"),
            )
        })
}

fn cursor(value: &str) -> Result<Cursor, QueryError> {
    Cursor::decode(value).ok_or_else(|| {
        refuse(
            "invalid_cursor",
            "`cursor` is not a next_cursor this service gave",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(query: &str) -> Result<ListQuery, QueryError> {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        parse(
            pairs
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        )
    }

    fn code(query: &str) -> &'static str {
        parsed(query).expect_err(query).code
    }

    #[test]
    fn every_filter_is_read() {
        let cursor = Cursor {
            dead_at: 5,
            key: "github:abc".into(),
        };
        let query = parsed(&format!(
            "provider=github&type=push&state=dead&since=2026-12-01T00:00:00Z&until=2026-12-02T00:00:00%2B01:00&limit=7&cursor={}",
            cursor.encode()
        ))
        .unwrap();
        assert_eq!(query.provider, Some(Provider::Github));
        assert_eq!(query.event_type.as_deref(), Some("push"));
        assert_eq!(query.state, Some(EntryState::Dead));
        assert_eq!(query.since, Some(1_796_083_200_000));
        assert_eq!(query.until, Some(1_796_083_200_000 + 23 * 3_600_000));
        assert_eq!(query.limit, 7);
        assert_eq!(query.cursor, Some(cursor));
        assert_eq!(parsed("").unwrap().limit, DEFAULT_LIMIT);
        assert_eq!(
            parsed("provider=&type=").unwrap(),
            parsed("").unwrap(),
            "empty is not given"
        );
    }

    #[test]
    fn each_bad_filter_has_its_own_code() {
        assert_eq!(code("provider=paypal"), "invalid_provider");
        assert_eq!(code("type=a%20b"), "invalid_type");
        assert_eq!(code("state=lost"), "invalid_state");
        assert_eq!(code("since=friday"), "invalid_time");
        assert_eq!(code("until=2026-12-02"), "invalid_time");
        assert_eq!(
            code("since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z"),
            "invalid_range"
        );
        for limit in ["0", "501", "-1", "1.5", "ten"] {
            assert_eq!(code(&format!("limit={limit}")), "invalid_limit", "{limit}");
        }
        assert_eq!(parsed("limit=500").unwrap().limit, 500);
        assert_eq!(code("cursor=not-ours"), "invalid_cursor");
        assert_eq!(
            code(&format!("cursor={}", URL_SAFE_NO_PAD.encode("x:github:a"))),
            "invalid_cursor"
        );
        // A cursor is not signed: one made up must still name a time and a key of the index's
        // form, or it is refused.
        for forged in [
            "10:".to_owned(),
            "10:github:a b".to_owned(),
            "10:github:\u{1}".to_owned(),
            format!("10:{}", "k".repeat(301)),
            "-10:github:a".to_owned(),
        ] {
            let query = format!("cursor={}", URL_SAFE_NO_PAD.encode(&forged));
            assert_eq!(code(&query), "invalid_cursor", "{forged:?}");
        }
        assert_eq!(code("provder=github"), "unknown_parameter");
        assert_eq!(code("limit=5&limit=6"), "duplicate_parameter");
    }
}
