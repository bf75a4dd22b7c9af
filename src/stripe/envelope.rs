//! The few fields of a Stripe event that the worker reads; the rest is forwarded untouched.

use std::fmt;

use serde::Deserialize;

/// Longest event id accepted.
pub const MAX_EVENT_ID_LEN: usize = 255;

/// The envelope of a verified event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// The event id (`evt_...`): the de-duplication key.
    pub id: String,
    /// The event type, e.g. `payment_intent.succeeded`.
    pub event_type: String,
    /// Whether the event comes from live mode, when given.
    pub livemode: Option<bool>,
    /// When Stripe created the event (Unix seconds), when given.
    pub created: Option<i64>,
}

/// Why a body is not a usable event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvelopeError {
    /// The body is not a JSON object (the text says why).
    NotJson(String),
    /// The JSON has a missing or wrongly typed field, or a duplicated one (the text says which).
    InvalidEnvelope(String),
    /// The id does not look like a Stripe event id.
    InvalidEventId,
}

impl EnvelopeError {
    /// A stable code for answers and log lines.
    pub fn code(&self) -> &'static str {
        match self {
            EnvelopeError::NotJson(_) => "invalid_json",
            EnvelopeError::InvalidEnvelope(_) => "invalid_envelope",
            EnvelopeError::InvalidEventId => "invalid_event_id",
        }
    }
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvelopeError::NotJson(why) => write!(f, "body is not JSON: {why}"),
            EnvelopeError::InvalidEnvelope(why) => write!(f, "not a Stripe event: {why}"),
            EnvelopeError::InvalidEventId => write!(
                f,
                "id must be evt_ followed by letters, digits or _, at most {MAX_EVENT_ID_LEN} characters"
            ),
        }
    }
}

impl std::error::Error for EnvelopeError {}

#[derive(Deserialize)]
struct Raw {
    id: String,
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    livemode: Option<bool>,
    #[serde(default)]
    created: Option<i64>,
    #[serde(default)]
    object: Option<String>,
}

/// True for `evt_` followed by 1 or more ASCII letters, digits or `_`, in all at most
/// [`MAX_EVENT_ID_LEN`] characters.
pub fn is_event_id(id: &str) -> bool {
    id.len() <= MAX_EVENT_ID_LEN
        && id.strip_prefix("evt_").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// Turns a JSON error into a refusal whose text never quotes the body: serde's own messages
/// can repeat a value ("invalid type: string \"…\""), so only field names and positions are
/// kept.
fn describe(error: serde_json::Error) -> EnvelopeError {
    let at = format!("line {} column {}", error.line(), error.column());
    match error.classify() {
        serde_json::error::Category::Data => {
            let message = error.to_string();
            let named = ["missing field `", "duplicate field `"]
                .iter()
                .any(|prefix| message.starts_with(prefix));
            match message.split(" at line ").next() {
                Some(field) if named => EnvelopeError::InvalidEnvelope(format!("{field} at {at}")),
                _ => EnvelopeError::InvalidEnvelope(format!("a field has the wrong type at {at}")),
            }
        }
        serde_json::error::Category::Eof => EnvelopeError::NotJson(format!("ends early at {at}")),
        _ => EnvelopeError::NotJson(format!("not valid JSON at {at}")),
    }
}

/// Reads the envelope of `body` (the raw, verified bytes). The whole body must be one JSON
/// object; `id` and `type` are required strings, `livemode` a boolean and `created` an integer
/// when present, `object` must be `"event"` when present; a duplicated field is refused.
pub fn parse(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let value: Raw = serde_json::from_slice(body).map_err(describe)?;
    if value.object.as_deref().is_some_and(|o| o != "event") {
        return Err(EnvelopeError::InvalidEnvelope(
            "object is not \"event\"".into(),
        ));
    }
    if !is_event_id(&value.id) {
        return Err(EnvelopeError::InvalidEventId);
    }
    Ok(Envelope {
        id: value.id,
        event_type: value.event_type,
        livemode: value.livemode,
        created: value.created,
    })
}
