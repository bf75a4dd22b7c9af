//! Operational notifications' settings: where they go and the secret that signs them.

use super::keys::{ALERT_MIN_INTERVAL_SECONDS, ALERT_SECRET, ALERT_URL};
use super::reader::Reader;
use crate::providers::standard;
use crate::secret::HmacKey;

/// The shortest pause between two `origin.failing` notifications of one origin, by default.
pub const DEFAULT_ALERT_MIN_INTERVAL_SECONDS: u64 = 900;

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
}

impl AlertConfig {
    /// Reads the alert keys: `ALERT_URL` turns notifications on and needs `ALERT_SECRET`, a
    /// Standard Webhooks secret (base64, with or without `whsec_`); the secret without the URL is a problem
    /// too, since it would sign nothing.
    pub fn load<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> Option<AlertConfig> {
        let min_interval_seconds = r.integer(
            ALERT_MIN_INTERVAL_SECONDS,
            DEFAULT_ALERT_MIN_INTERVAL_SECONDS,
            1,
            7 * 24 * 3_600,
        );
        let url = r.url(ALERT_URL);
        let secret = r.raw(ALERT_SECRET);
        let key = secret.as_deref().map(standard::secret_key);
        match (r.raw(ALERT_URL).is_some(), key) {
            (false, None) => None,
            (false, Some(_)) => {
                r.problem(
                    ALERT_SECRET,
                    format!("set without {ALERT_URL}: nothing to sign"),
                );
                None
            }
            (true, None) => {
                r.problem(
                    ALERT_SECRET,
                    format!("missing: {ALERT_URL} needs it to sign notifications"),
                );
                None
            }
            (true, Some(None)) => {
                r.problem(
                    ALERT_SECRET,
                    "not a Standard Webhooks secret: base64, with or without the whsec_ prefix",
                );
                None
            }
            (true, Some(Some(key))) => Some(AlertConfig {
                url: url?,
                key: HmacKey::new(key),
                min_interval_ms: min_interval_seconds * 1_000,
            }),
        }
    }
}
