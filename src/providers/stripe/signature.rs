//! Verification of the `Stripe-Signature` header.
//!
//! The header is `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`; each `v1` is HMAC-SHA256 of
//! `"<t>.<raw body>"` keyed by one of the endpoint's secrets. Only `v1` counts (`v0` and unknown
//! schemes are ignored). A delivery is accepted when any `v1` matches any configured secret,
//! compared in constant time, and its timestamp is neither older than the tolerance nor further
//! ahead than [`MAX_FUTURE_SKEW_SECONDS`] or the tolerance, whichever is shorter.

use std::fmt;

use crate::mac;
use crate::secret::Secret;

/// The header's name.
pub const HEADER: &str = "stripe-signature";
/// How far ahead of our clock a timestamp may be (clock skew), in seconds, unless the
/// tolerance is shorter: then the tolerance, so that a signature is accepted for at most twice
/// the tolerance, which the configuration's retention check relies on.
pub const MAX_FUTURE_SKEW_SECONDS: i64 = 60;
/// Longest header accepted; a real one with several rotated secrets is far shorter.
pub const MAX_HEADER_BYTES: usize = 4_096;
/// Most `v1` signatures accepted in one header.
pub const MAX_SIGNATURES: usize = 16;

/// Why a delivery's signature was refused. Each maps to one answer and one log word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// No `Stripe-Signature` header, or an empty one.
    Missing,
    /// The header is not `t=...,v1=...`; the text says which part is wrong.
    Malformed(&'static str),
    /// The header has no `v1` signature (for example only `v0`).
    NoV1Signature,
    /// No `v1` matches any configured secret.
    Mismatch,
    /// The signed timestamp is older than the tolerance.
    TimestampTooOld {
        /// How old it is, in seconds.
        age_seconds: i64,
    },
    /// The signed timestamp is too far in the future.
    TimestampInFuture {
        /// How far ahead it is, in seconds.
        ahead_seconds: i64,
    },
}

impl SignatureError {
    /// A stable code for answers and log lines.
    pub fn code(&self) -> &'static str {
        match self {
            SignatureError::Missing => "missing_signature",
            SignatureError::Malformed(_) => "malformed_signature",
            SignatureError::NoV1Signature => "no_v1_signature",
            SignatureError::Mismatch => "signature_mismatch",
            SignatureError::TimestampTooOld { .. } => "timestamp_too_old",
            SignatureError::TimestampInFuture { .. } => "timestamp_in_future",
        }
    }
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureError::Missing => f.write_str("no Stripe-Signature header"),
            SignatureError::Malformed(what) => write!(f, "malformed Stripe-Signature: {what}"),
            SignatureError::NoV1Signature => f.write_str("Stripe-Signature has no v1 signature"),
            SignatureError::Mismatch => {
                f.write_str("no v1 signature matches the endpoint's signing secrets")
            }
            SignatureError::TimestampTooOld { age_seconds } => {
                write!(f, "signature timestamp is {age_seconds} s old")
            }
            SignatureError::TimestampInFuture { ahead_seconds } => {
                write!(f, "signature timestamp is {ahead_seconds} s in the future")
            }
        }
    }
}

impl std::error::Error for SignatureError {}

/// A parsed header: the timestamp and every `v1` signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureHeader {
    /// The signed Unix timestamp (`t`).
    pub timestamp: i64,
    /// The `v1` signatures, decoded from hex.
    pub v1: Vec<[u8; 32]>,
}

/// Parses a `Stripe-Signature` header as Stripe's own libraries read it, where that cannot
/// weaken the check: empty parts, parts without `=`, unknown keys and schemes other than `v1`
/// (such as `v0`) are ignored, and a `v1` that is not 64 hex digits is skipped while the others
/// are verified. Refused: no `t`, a `t` that is not a Unix timestamp, `t` given twice (which
/// of two timestamps was signed is ambiguous), no `v1` at all ([`SignatureError::NoV1Signature`]),
/// only malformed `v1` entries, more than [`MAX_SIGNATURES`] of them, and headers over
/// [`MAX_HEADER_BYTES`].
pub fn parse_header(header: &str) -> Result<SignatureHeader, SignatureError> {
    if header.trim().is_empty() {
        return Err(SignatureError::Missing);
    }
    if header.len() > MAX_HEADER_BYTES {
        return Err(SignatureError::Malformed("header too long"));
    }
    let mut timestamp = None;
    let mut v1 = Vec::new();
    let mut malformed_v1 = false;
    for part in header.split(',') {
        let Some((scheme, value)) = part.trim().split_once('=') else {
            continue; // an empty part, or one without `=`: ignored, as Stripe's libraries do
        };
        match scheme {
            "t" => {
                if timestamp.is_some() {
                    return Err(SignatureError::Malformed("t appears twice"));
                }
                timestamp = Some(unix_timestamp(value)?);
            }
            "v1" => {
                let mut bytes = [0u8; 32];
                if hex::decode_to_slice(value, &mut bytes).is_err() {
                    malformed_v1 = true; // skipped; the others are verified
                    continue;
                }
                if v1.len() == MAX_SIGNATURES {
                    return Err(SignatureError::Malformed("too many v1 signatures"));
                }
                v1.push(bytes);
            }
            _ => {} // v0, unknown schemes and keys do not count
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed("no t timestamp"))?;
    if v1.is_empty() {
        return Err(if malformed_v1 {
            SignatureError::Malformed("no v1 is 64 hex digits")
        } else {
            SignatureError::NoV1Signature
        });
    }
    Ok(SignatureHeader { timestamp, v1 })
}

/// A `t` value: whole Unix seconds, at most 12 digits.
fn unix_timestamp(value: &str) -> Result<i64, SignatureError> {
    let not_a_timestamp = SignatureError::Malformed("t is not a Unix timestamp");
    if value.is_empty() || value.len() > 12 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_timestamp);
    }
    value.parse::<i64>().map_err(|_| not_a_timestamp)
}

/// The `v1` signature of `body` at `timestamp` with `secret`: HMAC-SHA256 of `"{t}.{body}"`.
pub fn sign(secret: &Secret, timestamp: i64, body: &[u8]) -> [u8; 32] {
    mac::hmac_sha256(secret.expose(), signed_prefix(timestamp).as_bytes(), body)
}

/// Verifies a delivery: `header` is the `Stripe-Signature` value (if any), `body` the raw bytes
/// as received, `now` our clock in Unix seconds. Returns the signed timestamp when some `v1`
/// matches some secret (in constant time) and the timestamp is within the tolerance.
pub fn verify(
    header: Option<&str>,
    body: &[u8],
    secrets: &[Secret],
    now: i64,
    tolerance_seconds: u64,
) -> Result<i64, SignatureError> {
    let parsed = parse_header(header.ok_or(SignatureError::Missing)?)?;
    let expected: Vec<[u8; 32]> = secrets
        .iter()
        .map(|secret| sign(secret, parsed.timestamp, body))
        .collect();
    decide(&parsed, &expected, now, tolerance_seconds)
}

/// The verdict on a parsed header, given the MACs `expected` of `"{t}.{body}"` under each
/// configured secret (however they were computed: here with the `hmac` crate, in the worker
/// with the runtime's WebCrypto): accepted when some `v1` equals some expected MAC, compared in
/// constant time, and the timestamp passes [`check_time`]. The MAC is checked first here; the
/// webhook door checks the time before it reads the body too (the clock is no secret: every
/// answer's `Date` tells it).
pub fn decide(
    parsed: &SignatureHeader,
    expected: &[[u8; 32]],
    now: i64,
    tolerance_seconds: u64,
) -> Result<i64, SignatureError> {
    if !mac::any_matches(&parsed.v1, expected) {
        return Err(SignatureError::Mismatch);
    }
    check_time(parsed, now, tolerance_seconds)?;
    Ok(parsed.timestamp)
}

/// The timestamp check alone, needing no body: the signed timestamp is neither older than the
/// tolerance nor further ahead than [`MAX_FUTURE_SKEW_SECONDS`] or the tolerance, whichever is
/// shorter.
pub fn check_time(
    parsed: &SignatureHeader,
    now: i64,
    tolerance_seconds: u64,
) -> Result<(), SignatureError> {
    let age = now.saturating_sub(parsed.timestamp);
    if age > tolerance_seconds as i64 {
        return Err(SignatureError::TimestampTooOld { age_seconds: age });
    }
    if -age > MAX_FUTURE_SKEW_SECONDS.min(tolerance_seconds as i64) {
        return Err(SignatureError::TimestampInFuture {
            ahead_seconds: -age,
        });
    }
    Ok(())
}

/// The bytes a `v1` signature covers: `"{t}."` then the body (this is the prefix).
pub fn signed_prefix(timestamp: i64) -> String {
    format!("{timestamp}.")
}
