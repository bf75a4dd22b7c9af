//! `POST /admin/reconcile`: what the caller asks (which sender, which window, a dry run, where
//! to continue), checked before anything is asked of the sender or the claims.

use serde_json::{Map, Value};

use super::cursor::ReconcileCursor;
use super::SenderLog;
use crate::claim::Millis;

/// One reconciliation call, checked.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ReconcileCall {
    /// The sender.
    pub log: SenderLog,
    /// The window's start (ms since the epoch).
    pub since: Millis,
    /// The window's end.
    pub until: Millis,
    /// Count only: nothing is delivered, stored or redelivered.
    pub dry_run: bool,
    /// Where in the sender's list to continue; `None`: from the window's newest end.
    pub after: Option<String>,
}

impl ReconcileCall {
    /// The cursor that continues this call's window at `after` (`None`: from its start).
    pub fn cursor(&self, after: Option<String>) -> ReconcileCursor {
        ReconcileCursor {
            log: self.log,
            since: self.since,
            until: self.until,
            after,
        }
    }
}

/// Why a call was refused (400, but [`CallRefusal::ReconcileOff`]); nothing was asked of
/// anyone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallRefusal {
    /// The body is not a JSON object.
    InvalidJson,
    /// `provider` is missing or not `stripe` or `github`.
    UnknownProvider,
    /// `since` or `until` is not an RFC 3339 time.
    InvalidTime(&'static str),
    /// `until` is before `since`.
    UntilBeforeSince,
    /// `since` is older than the sender keeps its log.
    SinceTooOld(SenderLog),
    /// The cursor is not one of ours, or belongs to another sender or window.
    InvalidCursor,
    /// A field has the wrong type.
    InvalidField(&'static str),
    /// The sender's API keys are not set.
    ReconcileOff(SenderLog),
}

impl CallRefusal {
    /// The error code.
    pub fn code(&self) -> &'static str {
        match self {
            CallRefusal::InvalidJson => "invalid_json",
            CallRefusal::UnknownProvider => "unknown_provider",
            CallRefusal::InvalidTime(_) => "invalid_time",
            CallRefusal::UntilBeforeSince => "until_before_since",
            CallRefusal::SinceTooOld(_) => "since_too_old",
            CallRefusal::InvalidCursor => "invalid_cursor",
            CallRefusal::InvalidField(_) => "invalid_field",
            CallRefusal::ReconcileOff(_) => "reconcile_off",
        }
    }

    /// What the caller should do, in words.
    pub fn detail(&self) -> String {
        match self {
            CallRefusal::InvalidJson => "the body must be a JSON object".into(),
            CallRefusal::UnknownProvider => "\"provider\" must be \"stripe\" or \"github\"".into(),
            CallRefusal::InvalidTime(field) => {
                format!("\"{field}\" must be an RFC 3339 time, such as 2026-12-06T10:00:00Z")
            }
            CallRefusal::UntilBeforeSince => "\"until\" is before \"since\"".into(),
            CallRefusal::SinceTooOld(log) => format!(
                "{} keeps its log for {} hours; \"since\" is older",
                log.title(),
                log.keeps_ms() / 3_600_000
            ),
            CallRefusal::InvalidCursor => {
                "the cursor is not one this worker gave for this provider and window".into()
            }
            CallRefusal::InvalidField(field) => format!("\"{field}\" has the wrong type"),
            CallRefusal::ReconcileOff(SenderLog::Stripe) => {
                "reconciliation with Stripe is off: set STRIPE_API_KEY".into()
            }
            CallRefusal::ReconcileOff(SenderLog::Github) => {
                "reconciliation with GitHub is off: set GITHUB_API_TOKEN and GITHUB_HOOK".into()
            }
        }
    }
}

/// Reads the call `body` asks for at `now`. `on` says which senders have their API keys set;
/// `lookback_ms` is the default window's length (never longer than the sender keeps). Without
/// a cursor `since` defaults to the lookback and `until` to now (a later `until` is now); a
/// cursor carries its window, and times given beside it must be its own. Only a new window is
/// checked against what the sender keeps: a cursor continues its window however old it grew.
pub fn read_call(
    body: &[u8],
    now: Millis,
    lookback_ms: Millis,
    on: impl Fn(SenderLog) -> bool,
) -> Result<ReconcileCall, CallRefusal> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return Err(CallRefusal::InvalidJson);
    };
    let log = match fields.get("provider") {
        Some(Value::String(name)) => SenderLog::named(name),
        _ => None,
    }
    .ok_or(CallRefusal::UnknownProvider)?;
    if !on(log) {
        return Err(CallRefusal::ReconcileOff(log));
    }
    let dry_run = match fields.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(dry_run)) => *dry_run,
        Some(_) => return Err(CallRefusal::InvalidField("dry_run")),
    };
    let since = time(&fields, "since")?;
    let until = time(&fields, "until")?;
    if let Some(cursor) = cursor(&fields)? {
        let own = |given: Option<Millis>, its: Millis| given.is_none_or(|at| at == its);
        if cursor.log != log || !own(since, cursor.since) || !own(until, cursor.until) {
            return Err(CallRefusal::InvalidCursor);
        }
        return Ok(ReconcileCall {
            log,
            since: cursor.since,
            until: cursor.until,
            dry_run,
            after: cursor.after,
        });
    }
    let oldest = now.saturating_sub(log.keeps_ms());
    let since = since.unwrap_or_else(|| now.saturating_sub(lookback_ms.min(log.keeps_ms())));
    let until = until.map_or(now, |until| until.min(now));
    if until < since {
        return Err(CallRefusal::UntilBeforeSince);
    }
    if since < oldest {
        return Err(CallRefusal::SinceTooOld(log));
    }
    Ok(ReconcileCall {
        log,
        since,
        until,
        dry_run,
        after: None,
    })
}

/// The cursor `fields` carry, when given.
fn cursor(fields: &Map<String, Value>) -> Result<Option<ReconcileCursor>, CallRefusal> {
    match fields.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => ReconcileCursor::decode(text)
            .map(Some)
            .ok_or(CallRefusal::InvalidCursor),
        Some(_) => Err(CallRefusal::InvalidField("cursor")),
    }
}

/// The time field `name` of `fields`, when given.
fn time(fields: &Map<String, Value>, name: &'static str) -> Result<Option<Millis>, CallRefusal> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => crate::rfc3339::parse(text)
            .map(Some)
            .ok_or(CallRefusal::InvalidTime(name)),
        Some(_) => Err(CallRefusal::InvalidTime(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 1_800_000_000_000;
    const HOUR: Millis = 3_600_000;

    fn read(body: &str) -> Result<ReconcileCall, CallRefusal> {
        read_call(body.as_bytes(), NOW, 72 * HOUR, |_| true)
    }

    fn at(ms: Millis) -> String {
        crate::rfc3339::format(ms).unwrap()
    }

    #[test]
    fn a_call_defaults_to_the_lookback_until_now() {
        let call = read(r#"{"provider": "stripe"}"#).unwrap();
        assert_eq!(
            (call.log, call.since, call.until, call.dry_run, call.after),
            (SenderLog::Stripe, NOW - 72 * HOUR, NOW, false, None)
        );
        let body = format!(
            r#"{{"provider": "github", "since": "{}", "until": "{}", "dry_run": true}}"#,
            at(NOW - 2 * HOUR),
            at(NOW + HOUR)
        );
        let call = read(&body).unwrap();
        assert_eq!(
            (call.log, call.since, call.until, call.dry_run),
            (SenderLog::Github, NOW - 2 * HOUR, NOW, true),
            "an until in the future is now"
        );
        let long = read_call(br#"{"provider": "github"}"#, NOW, 720 * HOUR, |_| true).unwrap();
        assert_eq!(
            long.since,
            NOW - 72 * HOUR,
            "never longer than GitHub keeps"
        );
    }

    #[test]
    fn every_bad_call_is_refused_with_its_code() {
        let old = at(NOW - 73 * HOUR);
        let cases = [
            ("[]".to_owned(), "invalid_json"),
            ("{".to_owned(), "invalid_json"),
            (r#"{"provider": "shopify"}"#.to_owned(), "unknown_provider"),
            ("{}".to_owned(), "unknown_provider"),
            (
                r#"{"provider": "stripe", "since": "yesterday"}"#.to_owned(),
                "invalid_time",
            ),
            (
                r#"{"provider": "stripe", "until": 5}"#.to_owned(),
                "invalid_time",
            ),
            (
                r#"{"provider": "stripe", "dry_run": "yes"}"#.to_owned(),
                "invalid_field",
            ),
            (
                r#"{"provider": "stripe", "cursor": "abc"}"#.to_owned(),
                "invalid_cursor",
            ),
            (
                format!(r#"{{"provider": "github", "since": "{old}"}}"#),
                "since_too_old",
            ),
            (
                format!(
                    r#"{{"provider": "stripe", "since": "{}", "until": "{}"}}"#,
                    at(NOW - HOUR),
                    at(NOW - 2 * HOUR)
                ),
                "until_before_since",
            ),
        ];
        for (body, code) in cases {
            assert_eq!(read(&body).map_err(|r| r.code()), Err(code), "{body}");
        }
        let off = read_call(br#"{"provider": "github"}"#, NOW, HOUR, |log| {
            log == SenderLog::Stripe
        });
        assert_eq!(off, Err(CallRefusal::ReconcileOff(SenderLog::Github)));
        let stripe_old = format!(r#"{{"provider": "stripe", "since": "{old}"}}"#);
        assert!(read(&stripe_old).is_ok(), "Stripe keeps 30 days");
    }

    #[test]
    fn a_cursor_carries_its_window_and_only_its_own_sender_and_times_fit_it() {
        let first = read(r#"{"provider": "stripe"}"#).unwrap();
        let cursor = first.cursor(Some("evt_9".into())).encode();
        let body = format!(r#"{{"provider": "stripe", "cursor": "{cursor}"}}"#);
        let next = read_call(body.as_bytes(), NOW + 800 * HOUR, HOUR, |_| true).unwrap();
        assert_eq!(
            (next.since, next.until, next.after.as_deref()),
            (first.since, first.until, Some("evt_9")),
            "a cursor continues its window, however old"
        );
        let same = format!(
            r#"{{"provider": "stripe", "cursor": "{cursor}", "until": "{}"}}"#,
            at(first.until)
        );
        assert!(read(&same).is_ok());
        let other_window = format!(
            r#"{{"provider": "stripe", "cursor": "{cursor}", "until": "{}"}}"#,
            at(first.until - 1_000)
        );
        let other_sender = format!(r#"{{"provider": "github", "cursor": "{cursor}"}}"#);
        for body in [other_window, other_sender] {
            assert_eq!(read(&body), Err(CallRefusal::InvalidCursor), "{body}");
        }
    }
}
