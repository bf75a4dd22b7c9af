//! The senders this product serves, each a small unit: how its signature is verified, where its
//! event id and type come from, which timestamp (if any) bounds replays, and how its records
//! are named. Stripe's own rules are in [`crate::providers::stripe`]; the senders that identify a delivery
//! by headers are here.
//!
//! | route | provider | signature | event id |
//! | --- | --- | --- | --- |
//! | `POST /webhooks/stripe` | Stripe | `Stripe-Signature` | body `id` |
//! | `POST /webhooks/standard` | Standard Webhooks | `webhook-signature` over `id.timestamp.body` | `webhook-id` |
//! | `POST /webhooks/github` | GitHub | `X-Hub-Signature-256` over the body | `X-GitHub-Delivery` |
//! | `POST /webhooks/shopify` | Shopify | `X-Shopify-Hmac-Sha256` over the body | `X-Shopify-Event-Id` |

use std::fmt;

use crate::mac;

pub mod github;
pub mod shopify;
pub mod standard;
pub mod stripe;

/// A sender of webhooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Stripe.
    Stripe,
    /// A Standard Webhooks sender (the open specification Svix and many platforms use).
    Standard,
    /// GitHub.
    Github,
    /// Shopify.
    Shopify,
}

impl Provider {
    /// Every provider, Stripe first.
    pub const ALL: [Provider; 4] = [
        Provider::Stripe,
        Provider::Standard,
        Provider::Github,
        Provider::Shopify,
    ];

    /// Its name in routes, keys, logs and configuration (`stripe`, `standard`, …).
    pub fn name(self) -> &'static str {
        match self {
            Provider::Stripe => "stripe",
            Provider::Standard => "standard",
            Provider::Github => "github",
            Provider::Shopify => "shopify",
        }
    }

    /// The provider a name (as in `/webhooks/{name}`) stands for.
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The name of the claim authority object (and record key) of delivery `id`: a Stripe event
    /// id as it is (so records from before providers stay valid); `{provider}:{id}` for the
    /// others, so the same id from two providers never meets in one record.
    pub fn key(self, id: &str) -> String {
        match self {
            Provider::Stripe => id.to_owned(),
            other => format!("{}:{id}", other.name()),
        }
    }

    /// The delivery id in this provider's record key (see [`Provider::key`]): the key without
    /// the `{provider}:` prefix (a Stripe key is the id itself).
    pub fn id_of(self, key: &str) -> &str {
        match self {
            Provider::Stripe => key,
            other => key
                .strip_prefix(other.name())
                .and_then(|rest| rest.strip_prefix(':'))
                .unwrap_or(key),
        }
    }

    /// The provider and delivery id a record key (see [`Provider::key`]) stands for. A key
    /// without a provider's prefix is Stripe's: Stripe event ids never hold a `:`.
    pub fn of_key(key: &str) -> (Provider, &str) {
        key.split_once(':')
            .and_then(|(name, id)| {
                Provider::from_name(name)
                    .filter(|p| *p != Provider::Stripe)
                    .map(|p| (p, id))
            })
            .unwrap_or((Provider::Stripe, key))
    }

    /// The delivery mode used when neither `<PROVIDER>_DELIVERY_MODE` nor `DELIVERY_MODE` is
    /// set: queue for GitHub (which does not retry a failed delivery by itself, and waits 10 s)
    /// and Shopify (which waits 5 s); sync for the others.
    pub fn queues_by_default(self) -> bool {
        matches!(self, Provider::Github | Provider::Shopify)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Longest header delivery id accepted.
pub const MAX_HEADER_ID_LEN: usize = 255;

/// True for a delivery id taken from a header: 1 to 255 printable ASCII characters, no spaces.
pub fn is_header_id(id: &str) -> bool {
    is_token(id, MAX_HEADER_ID_LEN)
}

/// 1 to `max` printable ASCII characters, no spaces.
fn is_token(value: &str, max: usize) -> bool {
    (1..=max).contains(&value.len()) && value.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// Why a delivery from a header-identified sender (Standard Webhooks, GitHub, Shopify) was
/// refused. Each maps to one code, answered 400 with nothing stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderError {
    /// No signature header, or an empty one.
    MissingSignature,
    /// The signature header is not in the sender's format.
    MalformedSignature,
    /// No signature matches any configured secret.
    SignatureMismatch,
    /// No timestamp header (Standard Webhooks).
    MissingTimestamp,
    /// The timestamp is not whole Unix seconds.
    MalformedTimestamp,
    /// The timestamp is older than the tolerance.
    TimestampTooOld,
    /// The timestamp is further in the future than the tolerance.
    TimestampInFuture,
    /// No delivery id header.
    MissingId,
    /// The delivery id is not in its sender's alphabet (see [`is_delivery_id`]).
    InvalidId,
    /// The event type a header names is not in its sender's alphabet (GitHub's event names).
    InvalidEventType,
    /// Shopify's topic is not a topic name (`resource/action`).
    InvalidTopic,
    /// Shopify's shop domain is not a `*.myshopify.com` host name.
    InvalidShopDomain,
}

impl SenderError {
    /// A stable code for answers and log lines.
    pub fn code(self) -> &'static str {
        match self {
            SenderError::MissingSignature => "missing_signature",
            SenderError::MalformedSignature => "malformed_signature",
            SenderError::SignatureMismatch => "signature_mismatch",
            SenderError::MissingTimestamp => "missing_timestamp",
            SenderError::MalformedTimestamp => "malformed_timestamp",
            SenderError::TimestampTooOld => "timestamp_too_old",
            SenderError::TimestampInFuture => "timestamp_in_future",
            SenderError::MissingId => "missing_delivery_id",
            SenderError::InvalidId => "invalid_delivery_id",
            SenderError::InvalidEventType => "invalid_event_type",
            SenderError::InvalidTopic => "invalid_topic",
            SenderError::InvalidShopDomain => "invalid_shop_domain",
        }
    }
}

impl fmt::Display for SenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SenderError::MissingSignature => "no signature header",
            SenderError::MalformedSignature => "the signature header is not in the sender's format",
            SenderError::SignatureMismatch => "no signature matches the endpoint's secrets",
            SenderError::MissingTimestamp => "no timestamp header",
            SenderError::MalformedTimestamp => "the timestamp is not whole Unix seconds",
            SenderError::TimestampTooOld => "the timestamp is older than the tolerance",
            SenderError::TimestampInFuture => "the timestamp is further ahead than the tolerance",
            SenderError::MissingId => "no delivery id header",
            SenderError::InvalidId => {
                "the delivery id is not in its sender's form (GitHub: a GUID; Shopify: letters, \
                 digits, - and _; Standard Webhooks: printable ASCII without spaces or dots)"
            }
            SenderError::InvalidEventType => {
                "the event name is not in its sender's form (GitHub: lower-case letters and _)"
            }
            SenderError::InvalidTopic => {
                "the topic is not a Shopify topic (lower-case words of letters, digits and _, \
                 joined by / or .)"
            }
            SenderError::InvalidShopDomain => "the shop domain is not a *.myshopify.com host name",
        })
    }
}

/// Who a header-identified delivery says it is: its id (not yet the record key) and its event
/// type when the sender names one. Trusted only once [`decide`] returned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The delivery id.
    pub id: String,
    /// The event type, when a header names it.
    pub event_type: Option<String>,
}

/// What a header-identified sender's signature covers: `prefix` then the raw body, HMAC-SHA256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// The bytes signed before the body (`id.timestamp.` for Standard Webhooks, none else).
    pub prefix: Vec<u8>,
    /// The signatures the sender gave (32-byte MACs).
    pub signatures: Vec<[u8; 32]>,
}

/// A header-identified delivery as read from its headers, before its MAC is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unverified {
    /// Its id and type, as its headers give them.
    pub identity: Identity,
    /// What its signature covers and the signatures given.
    pub signed: Signed,
    /// Its signed timestamp, when the sender has one (Standard Webhooks).
    pub timestamp: Option<i64>,
}

/// The verdict on an unverified delivery given the MACs `expected` under each configured key:
/// some signature must match (constant time), then the timestamp, when there is one, must pass
/// [`check_time`]; its identity once verified. The webhook door checks the time before it
/// reads the body too (the clock is no secret: every answer's `Date` tells it).
pub fn decide(
    unverified: Unverified,
    expected: &[[u8; 32]],
    now: i64,
    tolerance_seconds: u64,
) -> Result<Identity, SenderError> {
    if !mac::any_matches(&unverified.signed.signatures, expected) {
        return Err(SenderError::SignatureMismatch);
    }
    check_time(&unverified, now, tolerance_seconds)?;
    Ok(unverified.identity)
}

/// The timestamp check alone, needing no body: a signed timestamp (Standard Webhooks) within
/// `tolerance_seconds` of `now` both ways; a sender without one passes.
pub fn check_time(
    unverified: &Unverified,
    now: i64,
    tolerance_seconds: u64,
) -> Result<(), SenderError> {
    if let Some(timestamp) = unverified.timestamp {
        let age = now.saturating_sub(timestamp);
        if age > tolerance_seconds as i64 {
            return Err(SenderError::TimestampTooOld);
        }
        if -age > tolerance_seconds as i64 {
            return Err(SenderError::TimestampInFuture);
        }
    }
    Ok(())
}

/// Reads a delivery of `provider` (not Stripe) from its headers (`header` looks one up by its
/// lower-case name).
pub fn read(
    provider: Provider,
    header: &dyn Fn(&str) -> Option<String>,
) -> Result<Unverified, SenderError> {
    match provider {
        Provider::Standard => standard::read(header),
        Provider::Github => github::read(header),
        Provider::Shopify => shopify::read(header),
        Provider::Stripe => Err(SenderError::MalformedSignature),
    }
}

/// Verifies a delivery of `provider` on the host: read, MACs with `keys`, decide.
pub fn verify(
    provider: Provider,
    header: &dyn Fn(&str) -> Option<String>,
    body: &[u8],
    keys: &[Vec<u8>],
    now: i64,
    tolerance_seconds: u64,
) -> Result<Identity, SenderError> {
    let unverified = read(provider, header)?;
    let expected: Vec<[u8; 32]> = keys
        .iter()
        .map(|key| mac::hmac_sha256(key, &unverified.signed.prefix, body))
        .collect();
    decide(unverified, &expected, now, tolerance_seconds)
}

/// The rate-limit key of a verified delivery of `provider` whose signed bytes carry neither
/// its id nor a time (GitHub, Shopify): its body, named by `mac`, the body's MAC under the
/// sender's first secret. A captured delivery of such a sender passes the signature check under
/// any made-up id, at any time; counting each signed body bounds how often it can be replayed
/// (each time a new object, record and, in queue mode, a stored body). `None` for senders whose
/// signature binds the id or a time (Stripe, Standard Webhooks): their replays are duplicates
/// or refused as too old.
pub fn replay_limit_key(provider: Provider, mac: &[u8; 32]) -> Option<String> {
    match provider {
        Provider::Github | Provider::Shopify => Some(format!(
            "replay:{}:{}",
            provider.name(),
            hex::encode(&mac[..16])
        )),
        Provider::Stripe | Provider::Standard => None,
    }
}

/// Seconds a delivery over the replay limit is asked to wait: the longest period the runtime's
/// rate limiter supports.
pub const REPLAY_LIMITED_RETRY_AFTER_SECONDS: u64 = 60;

/// The headers of a delivery of `provider` (whose headers `header` reads) kept when it is
/// forwarded, besides `content-type`: its own signature, id, timestamp and event headers, so
/// the handler verifies it as it does today; for Standard Webhooks only the family that was
/// verified.
pub fn forwarded_headers(
    provider: Provider,
    header: &dyn Fn(&str) -> Option<String>,
) -> &'static [&'static str] {
    match provider {
        Provider::Stripe => &["stripe-signature"],
        Provider::Standard => standard::family(header),
        Provider::Github => &[
            github::SIGNATURE_HEADER,
            "x-hub-signature",
            github::ID_HEADER,
            github::EVENT_HEADER,
            "x-github-hook-id",
            "x-github-hook-installation-target-id",
            "x-github-hook-installation-target-type",
            "user-agent",
        ],
        Provider::Shopify => &[
            shopify::SIGNATURE_HEADER,
            shopify::ID_HEADER,
            shopify::TOPIC_HEADER,
            "x-shopify-webhook-id",
            "x-shopify-shop-domain",
            "x-shopify-api-version",
            "x-shopify-triggered-at",
        ],
    }
}

/// The headers a queued attempt of delivery `id` sends at `now` (Unix seconds), from the
/// `stored` ones: a sender whose signature carries a time (Stripe, Standard Webhooks) is
/// signed anew with `hmac_key`, the first configured secret, over the exact stored `body`, so
/// a handler that checks the signature's age accepts an attempt made long after the delivery;
/// GitHub's and Shopify's signatures carry no time and are kept as they came.
pub fn refresh_signature(
    provider: Provider,
    id: &str,
    stored: &mut Vec<(String, String)>,
    hmac_key: &[u8],
    now: i64,
    body: &[u8],
) {
    match provider {
        Provider::Stripe => {
            let header = crate::providers::stripe::signature::HEADER;
            let prefix = crate::providers::stripe::signature::signed_prefix(now);
            let mac = mac::hmac_sha256(hmac_key, prefix.as_bytes(), body);
            stored.retain(|(name, _)| name != header);
            stored.push((header.into(), format!("t={now},v1={}", hex::encode(mac))));
        }
        Provider::Standard => standard::resign(stored, id, hmac_key, now, body),
        Provider::Github | Provider::Shopify => {}
    }
}

/// Longest event type kept from a header (GitHub's event, Shopify's topic).
pub const MAX_EVENT_TYPE_LEN: usize = 100;

/// True for an event type worth keeping: 1 to 100 printable ASCII characters. The event types
/// of the senders whose type is in their signed body (Stripe, Standard Webhooks) are held to
/// this; GitHub's and Shopify's, which come from unsigned headers, to their own alphabets
/// (see [`is_event_type_of`]).
pub fn is_event_type(value: &str) -> bool {
    is_token(value, MAX_EVENT_TYPE_LEN)
}

/// True for an event type `provider` may name: GitHub's event names
/// ([`github::is_event_name`]), Shopify's topics ([`shopify::is_topic`]), else
/// [`is_event_type`]. What the failure index and the notifications keep of a type is held to
/// it, so no text a sender did not sign reaches them beyond these alphabets.
pub fn is_event_type_of(provider: Provider, value: &str) -> bool {
    match provider {
        Provider::Github => github::is_event_name(value),
        Provider::Shopify => shopify::is_topic(value),
        Provider::Stripe | Provider::Standard => is_event_type(value),
    }
}

/// The MAC of a signature over the body alone (GitHub, Shopify), read by `decode` from header
/// `name`: a missing or blank header is `MissingSignature`, one `decode` cannot read
/// `MalformedSignature`.
fn body_mac(
    header: &dyn Fn(&str) -> Option<String>,
    name: &str,
    decode: impl Fn(&str) -> Option<[u8; 32]>,
) -> Result<[u8; 32], SenderError> {
    let value = header(name)
        .filter(|v| !v.trim().is_empty())
        .ok_or(SenderError::MissingSignature)?;
    decode(value.trim()).ok_or(SenderError::MalformedSignature)
}

/// The value of an unsigned header that must be present and in its sender's alphabet
/// (`allowed`): `missing` when absent, `invalid` when outside it.
fn required(
    value: Option<String>,
    allowed: fn(&str) -> bool,
    (missing, invalid): (SenderError, SenderError),
) -> Result<String, SenderError> {
    match value {
        None => Err(missing),
        Some(value) if allowed(&value) => Ok(value),
        Some(_) => Err(invalid),
    }
}

/// The value of an unsigned header that may be absent, but when present must be in its
/// sender's alphabet (`allowed`): `invalid` when outside it.
fn optional(
    value: Option<String>,
    allowed: fn(&str) -> bool,
    invalid: SenderError,
) -> Result<Option<String>, SenderError> {
    match value {
        Some(value) if !allowed(&value) => Err(invalid),
        other => Ok(other),
    }
}

impl Unverified {
    /// A delivery signed over its body alone (GitHub, Shopify): no prefix, one MAC, no time.
    fn body_only(id: String, event_type: Option<String>, mac: [u8; 32]) -> Unverified {
        Unverified {
            identity: Identity { id, event_type },
            signed: Signed {
                prefix: Vec::new(),
                signatures: vec![mac],
            },
            timestamp: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_body_is_counted_only_for_senders_that_sign_neither_id_nor_time() {
        let mac = [7u8; 32];
        let github = replay_limit_key(Provider::Github, &mac).unwrap();
        assert_eq!(github, format!("replay:github:{}", "07".repeat(16)));
        assert_ne!(
            replay_limit_key(Provider::Shopify, &mac),
            Some(github.clone()),
            "each sender counts its own bodies"
        );
        assert_ne!(replay_limit_key(Provider::Github, &[8u8; 32]), Some(github));
        assert_eq!(replay_limit_key(Provider::Stripe, &mac), None);
        assert_eq!(replay_limit_key(Provider::Standard, &mac), None);
    }

    #[test]
    fn keys_never_collide_across_providers_and_stripe_s_stay_as_they_were() {
        assert_eq!(Provider::Stripe.key("evt_1"), "evt_1");
        assert_eq!(Provider::Github.key("abc"), "github:abc");
        assert_ne!(Provider::Shopify.key("abc"), Provider::Standard.key("abc"));
        assert_eq!(Provider::from_name("github"), Some(Provider::Github));
        assert_eq!(Provider::from_name("paypal"), None);
    }

    #[test]
    fn header_ids_are_printable_ascii_without_spaces() {
        assert!(is_header_id("72d3162e-cc78-11e3-81ab-4c9367dc0958"));
        for bad in ["", "a b", "caf\u{e9}", "tab\t", &"x".repeat(256)] {
            assert!(!is_header_id(bad), "{bad:?}");
        }
        assert!(is_header_id(&"x".repeat(255)));
    }

    #[test]
    fn a_key_names_its_provider_and_id() {
        assert_eq!(Provider::of_key("evt_1"), (Provider::Stripe, "evt_1"));
        assert_eq!(Provider::of_key("github:a:b"), (Provider::Github, "a:b"));
        assert_eq!(Provider::of_key("shopify:9"), (Provider::Shopify, "9"));
        assert_eq!(Provider::of_key("stripe:x"), (Provider::Stripe, "stripe:x"));
        for provider in Provider::ALL {
            assert_eq!(Provider::of_key(&provider.key("d-1")), (provider, "d-1"));
        }
    }

    #[test]
    fn queued_attempts_are_signed_anew_where_the_signature_carries_a_time() {
        let body = br#"{"id":"evt_1"}"#;
        let mut stripe = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("stripe-signature".to_owned(), "t=1,v1=00".to_owned()),
        ];
        refresh_signature(
            Provider::Stripe,
            "evt_1",
            &mut stripe,
            b"whsec_k",
            1_800_000_000,
            body,
        );
        assert_eq!(stripe.len(), 2);
        assert!(crate::providers::stripe::signature::verify(
            Some(&stripe[1].1),
            body,
            &[crate::secret::Secret::new("whsec_k")],
            1_800_000_000,
            300
        )
        .is_ok());

        let key =
            standard::secret_key("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=").unwrap();
        let mut headers = vec![
            ("webhook-id".to_owned(), "msg_1".to_owned()),
            ("webhook-timestamp".to_owned(), "1".to_owned()),
            ("webhook-signature".to_owned(), "v1,old".to_owned()),
        ];
        refresh_signature(
            Provider::Standard,
            "msg_1",
            &mut headers,
            &key,
            1_800_000_000,
            body,
        );
        let lookup = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(lookup("webhook-timestamp").as_deref(), Some("1800000000"));
        assert!(verify(
            Provider::Standard,
            &lookup,
            body,
            std::slice::from_ref(&key),
            1_800_000_000,
            300
        )
        .is_ok());

        let mut github = vec![("x-hub-signature-256".to_owned(), "sha256=ab".to_owned())];
        refresh_signature(Provider::Github, "d", &mut github, b"k", 1, body);
        assert_eq!(
            github,
            vec![("x-hub-signature-256".to_owned(), "sha256=ab".to_owned())]
        );
    }

    #[test]
    fn github_and_shopify_queue_by_default() {
        assert!(Provider::Github.queues_by_default());
        assert!(Provider::Shopify.queues_by_default());
        assert!(!Provider::Stripe.queues_by_default());
        assert!(!Provider::Standard.queues_by_default());
    }
}
