//! Operational notifications' settings: where they go, the secret that signs them, and how
//! many `delivery.dead_lettered` one sender may cause per interval.

use super::keys::{
    ALERT_DEAD_LETTER_INTERVAL_SECONDS, ALERT_DEAD_LETTER_LIMIT, ALERT_MIN_INTERVAL_SECONDS,
    ALERT_SECRET, ALERT_URL,
};
use super::reader::Reader;
use crate::providers::standard;
use crate::secret::HmacKey;

/// The shortest pause between two `origin.failing` notifications of one origin, by default.
pub const DEFAULT_ALERT_MIN_INTERVAL_SECONDS: u64 = 900;
/// How many `delivery.dead_lettered` notifications one sender causes per interval, by default;
/// the rest are counted in one digest.
pub const DEFAULT_ALERT_DEAD_LETTER_LIMIT: u64 = 10;
/// The interval of that cap, by default, in seconds.
pub const DEFAULT_ALERT_DEAD_LETTER_INTERVAL_SECONDS: u64 = 900;
/// The shortest and longest Standard Webhooks secret, in bytes once decoded: the specification
/// asks for at least 24 bytes (192 bits) and at most 64 (512 bits).
pub const ALERT_SECRET_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

/// Where operational notifications go, and how they are signed. Off without `ALERT_URL`.
#[derive(Clone, Debug)]
pub struct AlertConfig {
    /// Where they are POSTed (`ALERT_URL`).
    pub url: url::Url,
    /// The HMAC key of the Standard Webhooks secret that signs them (`ALERT_SECRET`).
    pub key: HmacKey,
    /// At most one `origin.failing` per origin per this long (`ALERT_MIN_INTERVAL_SECONDS`),
    /// in milliseconds.
    pub min_interval_ms: u64,
    /// At most this many `delivery.dead_lettered` per sender per interval
    /// (`ALERT_DEAD_LETTER_LIMIT`); the rest go in one digest at the interval's end.
    pub dead_letter_limit: u32,
    /// That interval (`ALERT_DEAD_LETTER_INTERVAL_SECONDS`), in milliseconds.
    pub dead_letter_interval_ms: u64,
}

impl AlertConfig {
    /// Reads the alert keys: `ALERT_URL` turns notifications on, must be `https://` (or
    /// `http://` to a loopback host, for local runs: a notification carries ids and reasons,
    /// and its signature does not hide them), and needs `ALERT_SECRET`, a Standard Webhooks
    /// secret (base64, with or without `whsec_`, of 24 to 64 bytes, as the specification asks); the secret
    /// without the URL is a problem too, since it would sign nothing.
    pub fn load<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> Option<AlertConfig> {
        let min_interval_seconds = r.integer(
            ALERT_MIN_INTERVAL_SECONDS,
            DEFAULT_ALERT_MIN_INTERVAL_SECONDS,
            1,
            7 * 24 * 3_600,
        );
        let dead_letter_limit = r.integer(
            ALERT_DEAD_LETTER_LIMIT,
            DEFAULT_ALERT_DEAD_LETTER_LIMIT,
            1,
            1_000,
        );
        let dead_letter_interval_seconds = r.integer(
            ALERT_DEAD_LETTER_INTERVAL_SECONDS,
            DEFAULT_ALERT_DEAD_LETTER_INTERVAL_SECONDS,
            1,
            24 * 3_600,
        );
        let url = alert_url(r);
        let key = alert_key(r)?;
        Some(AlertConfig {
            url: url?,
            key: HmacKey::new(key),
            min_interval_ms: min_interval_seconds * 1_000,
            dead_letter_limit: dead_letter_limit as u32,
            dead_letter_interval_ms: dead_letter_interval_seconds * 1_000,
        })
    }
}

/// `ALERT_URL` when it is usable: `https://`, or `http://` to a loopback host.
fn alert_url<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> Option<url::Url> {
    let url = r.url(ALERT_URL)?;
    if !is_https_or_loopback(&url) {
        r.problem(
            ALERT_URL,
            "not https:// (http:// only to a loopback host, for local runs)",
        );
        return None;
    }
    Some(url)
}

/// The HMAC key of `ALERT_SECRET` while `ALERT_URL` is set: a Standard Webhooks secret of 24 to
/// 64 bytes. `None` (with its problem, if any) otherwise.
fn alert_key<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> Option<Vec<u8>> {
    let secret = r.raw(ALERT_SECRET);
    let key = secret.as_deref().map(standard::secret_key);
    let problem = match (r.raw(ALERT_URL).is_some(), key) {
        (false, None) => return None,
        (true, Some(Some(key))) if ALERT_SECRET_BYTES.contains(&key.len()) => return Some(key),
        (false, Some(_)) => format!("set without {ALERT_URL}: nothing to sign"),
        (true, None) => format!("missing: {ALERT_URL} needs it to sign notifications"),
        (true, Some(None)) => {
            "not a Standard Webhooks secret: base64, with or without the whsec_ prefix".into()
        }
        (true, Some(Some(_))) => {
            "not 24 to 64 bytes once decoded, as the Standard Webhooks specification asks".into()
        }
    };
    r.problem(ALERT_SECRET, problem);
    None
}

/// True for an `https://` URL, or an `http://` one to a loopback host (`localhost`,
/// `127.0.0.0/8`, `[::1]`), which never leaves the machine.
pub fn is_https_or_loopback(url: &url::Url) -> bool {
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    url.scheme() == "https" || (url.scheme() == "http" && loopback)
}
