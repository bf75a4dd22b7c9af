//! The few fields of a Stripe event that the worker reads; the rest is forwarded untouched.
//!
//! Both kinds of event Stripe sends are accepted: snapshot events (`"object": "event"`,
//! `created` in Unix seconds) and thin events from event destinations (`"object":
//! "v2.core.event"`, `created` as an RFC 3339 string), and any later event object named
//! `….event`.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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
    /// When Stripe created the event, when given.
    pub created: Option<Created>,
}

/// When Stripe created an event, as it said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Created {
    /// Unix seconds (snapshot events).
    Unix(i64),
    /// An RFC 3339 timestamp (thin events), as sent.
    Rfc3339(String),
}

/// Why a body is not a usable event. Each maps to one code; none quotes the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvelopeError {
    /// The body is not JSON (the text says where it stopped making sense).
    NotJson(String),
    /// JSON, but not an object.
    NotAnObject,
    /// A required field is missing.
    MissingField(&'static str),
    /// A field has the wrong type (or, for `created`, a string that is not RFC 3339).
    WrongType(&'static str),
    /// A field appears twice.
    DuplicateField,
    /// `object` names something other than an event.
    NotAnEvent,
    /// The id does not look like a Stripe event id.
    InvalidEventId,
}

impl EnvelopeError {
    /// A stable code for answers and log lines.
    pub fn code(&self) -> &'static str {
        match self {
            EnvelopeError::NotJson(_) => "invalid_json",
            EnvelopeError::InvalidEventId => "invalid_event_id",
            _ => "invalid_envelope",
        }
    }
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvelopeError::NotJson(why) => write!(f, "body is not JSON: {why}"),
            EnvelopeError::NotAnObject => f.write_str("not a Stripe event: not a JSON object"),
            EnvelopeError::MissingField(field) => {
                write!(f, "not a Stripe event: missing field `{field}`")
            }
            EnvelopeError::WrongType(field) => {
                write!(f, "not a Stripe event: field `{field}` has the wrong type")
            }
            EnvelopeError::DuplicateField => f.write_str("not a Stripe event: a field appears twice"),
            EnvelopeError::NotAnEvent => {
                f.write_str("not a Stripe event: `object` is not an event object")
            }
            EnvelopeError::InvalidEventId => write!(
                f,
                "id must be evt_ followed by letters, digits or _, at most {MAX_EVENT_ID_LEN} characters"
            ),
        }
    }
}

impl std::error::Error for EnvelopeError {}

/// A field's value, whatever its JSON type, so a wrong type is told apart by matching on this
/// rather than by reading a parser's error text.
enum Field<'a> {
    Text(Cow<'a, str>),
    Integer(i64),
    Bool(bool),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Field<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl<'de> Visitor<'de> for FieldVisitor {
            type Value = Field<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Field::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Field::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Field::Text(Cow::Owned(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Field::Integer(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(i64::try_from(v).map_or(Field::Other, Field::Integer))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Field::Other)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Field::Bool(v))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Field::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Field::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Field::Other)
            }
        }
        deserializer.deserialize_any(FieldVisitor)
    }
}

/// The top-level fields read; any other field is skipped. serde refuses a field given twice.
#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow)]
    id: Option<Field<'a>>,
    #[serde(rename = "type", borrow)]
    event_type: Option<Field<'a>>,
    #[serde(borrow)]
    livemode: Option<Field<'a>>,
    #[serde(borrow)]
    created: Option<Field<'a>>,
    #[serde(borrow)]
    object: Option<Field<'a>>,
}

/// True for `evt_` followed by 1 or more ASCII letters, digits or `_`, in all at most
/// [`MAX_EVENT_ID_LEN`] characters.
pub fn is_event_id(id: &str) -> bool {
    id.len() <= MAX_EVENT_ID_LEN
        && id.strip_prefix("evt_").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// True for an `object` that names an event: `event` (snapshot events) or `….event`
/// (`v2.core.event` for thin events, and later versions).
pub fn is_event_object(object: &str) -> bool {
    object == "event" || object.ends_with(".event")
}

/// True for an RFC 3339 date-time as Stripe writes it: `YYYY-MM-DDTHH:MM:SS`, optional
/// fraction, then `Z` or an offset `±HH:MM`. A shape check on ASCII digits and separators;
/// the value is passed on, never interpreted.
pub fn is_rfc3339(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape {
        return false;
    }
    let mut rest = &b[19..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = &fraction[n..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}

/// Turns a JSON error into a refusal. Classified by the error's category and position only:
/// the text is never read, and never quoted (it can repeat a value from the body).
fn from_json_error(error: serde_json::Error) -> EnvelopeError {
    let at = format!("line {} column {}", error.line(), error.column());
    match error.classify() {
        // Every field type is accepted by `Field`, so a data error is a duplicated field.
        serde_json::error::Category::Data => EnvelopeError::DuplicateField,
        serde_json::error::Category::Eof => EnvelopeError::NotJson(format!("ends early at {at}")),
        _ => EnvelopeError::NotJson(format!("not valid JSON at {at}")),
    }
}

/// A top-level field's value as found, whatever its JSON type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValue {
    /// A string.
    Text(String),
    /// A whole number that fits an `i64`.
    Integer(i64),
    /// `true` or `false`.
    Bool(bool),
    /// Anything else (a fraction, `null`, an array, an object).
    Other,
}

impl FieldValue {
    /// A JSON number as the runtime's `JSON.parse` gives it (a double): an integer when it is
    /// whole and exact (within 2^53), anything else [`FieldValue::Other`].
    pub fn of_number(n: f64) -> FieldValue {
        if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
            FieldValue::Integer(n as i64)
        } else {
            FieldValue::Other
        }
    }
}

/// The top-level fields the envelope reads, as found in the body (`None`: absent). The worker
/// fills them from the runtime's `JSON.parse`; [`parse`] from this crate's own parser.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `id`.
    pub id: Option<FieldValue>,
    /// `type`.
    pub event_type: Option<FieldValue>,
    /// `livemode`.
    pub livemode: Option<FieldValue>,
    /// `created`.
    pub created: Option<FieldValue>,
    /// `object`.
    pub object: Option<FieldValue>,
}

impl From<Field<'_>> for FieldValue {
    fn from(field: Field<'_>) -> Self {
        match field {
            Field::Text(text) => FieldValue::Text(text.into_owned()),
            Field::Integer(n) => FieldValue::Integer(n),
            Field::Bool(b) => FieldValue::Bool(b),
            Field::Other => FieldValue::Other,
        }
    }
}

/// The envelope the fields of a JSON object make: `id` and `type` are required strings,
/// `livemode` a boolean when present, `created` an integer or an RFC 3339 string when present,
/// `object` an event object when present ([`is_event_object`]), and the id an event id.
pub fn from_fields(fields: Fields) -> Result<Envelope, EnvelopeError> {
    let text = |field: Option<FieldValue>, name: &'static str| match field {
        Some(FieldValue::Text(text)) => Ok(text),
        Some(_) => Err(EnvelopeError::WrongType(name)),
        None => Err(EnvelopeError::MissingField(name)),
    };
    let id = text(fields.id, "id")?;
    let event_type = text(fields.event_type, "type")?;
    let livemode = match fields.livemode {
        None => None,
        Some(FieldValue::Bool(value)) => Some(value),
        Some(_) => return Err(EnvelopeError::WrongType("livemode")),
    };
    let created = match fields.created {
        None => None,
        Some(FieldValue::Integer(seconds)) => Some(Created::Unix(seconds)),
        Some(FieldValue::Text(text)) if is_rfc3339(&text) => Some(Created::Rfc3339(text)),
        Some(_) => return Err(EnvelopeError::WrongType("created")),
    };
    match fields.object {
        None => {}
        Some(FieldValue::Text(object)) if is_event_object(&object) => {}
        Some(FieldValue::Text(_)) => return Err(EnvelopeError::NotAnEvent),
        Some(_) => return Err(EnvelopeError::WrongType("object")),
    }
    if !is_event_id(&id) {
        return Err(EnvelopeError::InvalidEventId);
    }
    Ok(Envelope {
        id,
        event_type,
        livemode,
        created,
    })
}

/// Reads the envelope of `body` (the raw, verified bytes) with this crate's own JSON parser:
/// the whole body must be one JSON object, a duplicated field is refused, and its fields make
/// an envelope by [`from_fields`].
pub fn parse(body: &[u8]) -> Result<Envelope, EnvelopeError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        // Still JSON? Then it is JSON that is not an object.
        return Err(match serde_json::from_slice::<IgnoredAny>(body) {
            Ok(_) => EnvelopeError::NotAnObject,
            Err(error) => from_json_error(error),
        });
    }
    let raw: Raw<'_> = serde_json::from_slice(body).map_err(from_json_error)?;
    from_fields(Fields {
        id: raw.id.map(Into::into),
        event_type: raw.event_type.map(Into::into),
        livemode: raw.livemode.map(Into::into),
        created: raw.created.map(Into::into),
        object: raw.object.map(Into::into),
    })
}
