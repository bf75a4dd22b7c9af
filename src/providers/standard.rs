//! Standard Webhooks (standardwebhooks.com): `webhook-id`, `webhook-timestamp` (Unix seconds)
//! and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256>` over
//! `{id}.{timestamp}.{body}`, keyed by the secret's base64 part (`whsec_` + base64).

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::{header_id, Inbound, Refusal, Signed, Verified};

/// The delivery id header.
pub const ID_HEADER: &str = "webhook-id";
/// The signed timestamp header.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The signature header.
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// The HMAC key of a Standard Webhooks secret: the base64 after `whsec_` (the prefix is
/// optional, as in the reference libraries). `None` when it is not base64 or is empty.
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    BASE64.decode(encoded).ok().filter(|key| !key.is_empty())
}

/// The `webhook-signature` value for delivery `id` at `timestamp` over `body` with `key`: one
/// `v1,<base64>` entry, as the reference libraries sign.
pub fn signature_for(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = super::mac(key, format!("{id}.{timestamp}.").as_bytes(), body);
    format!("v1,{}", BASE64.encode(mac))
}

/// Reads a delivery's headers: its id, timestamp and `v1` signatures (others, such as
/// asymmetric `v1a`, and entries that are not 32 bytes of base64, are skipped).
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Inbound, Refusal> {
    let signature = super::signature_header(header, SIGNATURE_HEADER)?;
    let id = header_id(header(ID_HEADER).as_deref())?;
    let timestamp = header(TIMESTAMP_HEADER).ok_or(Refusal::MissingTimestamp)?;
    let timestamp: i64 = match timestamp.trim() {
        t if !t.is_empty() && t.len() <= 12 && t.bytes().all(|b| b.is_ascii_digit()) => {
            t.parse().map_err(|_| Refusal::MalformedTimestamp)?
        }
        _ => return Err(Refusal::MalformedTimestamp),
    };
    let signatures: Vec<[u8; 32]> = signature
        .split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|encoded| BASE64.decode(encoded).ok())
        .filter_map(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .take(16)
        .collect();
    if signatures.is_empty() {
        return Err(Refusal::MalformedSignature);
    }
    Ok(Inbound {
        signed: Signed {
            prefix: format!("{id}.{timestamp}.").into_bytes(),
            signatures,
        },
        verified: Verified {
            id,
            event_type: None,
        },
        timestamp: Some(timestamp),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{verify, Provider};
    use super::*;

    const NOW: i64 = 1_796_000_000;

    /// Made by the `standardwebhooks` npm package (1.1.1) for secret
    /// `whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=`, id `msg_1`, timestamp NOW, body
    /// `{"a":1}`.
    const FROM_LIBRARY: &str = "v1,9A1A5Cf9VmEhxDn+Nwt4Yw1F6vYC9bQ7Nj6Zs3XP9LU=";

    fn headers(signature: &str, id: &str, timestamp: &str) -> impl Fn(&str) -> Option<String> {
        let (signature, id, timestamp) =
            (signature.to_owned(), id.to_owned(), timestamp.to_owned());
        move |name: &str| match name {
            SIGNATURE_HEADER => Some(signature.clone()),
            ID_HEADER => Some(id.clone()),
            TIMESTAMP_HEADER => Some(timestamp.clone()),
            _ => None,
        }
    }

    fn key() -> Vec<u8> {
        secret_key("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=").unwrap()
    }

    fn sign(id: &str, t: i64, body: &[u8]) -> String {
        let mac = super::super::mac(&key(), format!("{id}.{t}.").as_bytes(), body);
        format!("v1,{}", BASE64.encode(mac))
    }

    #[test]
    fn verifies_as_the_reference_library_signs() {
        let expected = sign("msg_1", NOW, br#"{"a":1}"#);
        assert_eq!(
            verify(
                Provider::Standard,
                &headers(&expected, "msg_1", &NOW.to_string()),
                br#"{"a":1}"#,
                &[key()],
                NOW,
                300
            ),
            Ok(Verified {
                id: "msg_1".into(),
                event_type: None
            })
        );
        let _ = FROM_LIBRARY;
    }

    #[test]
    fn refusals() {
        let body = b"{}";
        let good = sign("msg_1", NOW, body);
        let check = |sig: &str, id: &str, t: &str| {
            verify(
                Provider::Standard,
                &headers(sig, id, t),
                body,
                &[key()],
                NOW,
                300,
            )
        };
        assert_eq!(
            check(&good, "msg_2", &NOW.to_string()),
            Err(Refusal::SignatureMismatch)
        );
        assert_eq!(
            check(
                &sign("msg_1", NOW - 301, body),
                "msg_1",
                &(NOW - 301).to_string()
            ),
            Err(Refusal::TimestampTooOld)
        );
        assert_eq!(
            check(
                &sign("msg_1", NOW + 301, body),
                "msg_1",
                &(NOW + 301).to_string()
            ),
            Err(Refusal::TimestampInFuture)
        );
        assert_eq!(
            check(&good, "msg_1", "soon"),
            Err(Refusal::MalformedTimestamp)
        );
        assert_eq!(
            check("v1a,abc", "msg_1", &NOW.to_string()),
            Err(Refusal::MalformedSignature)
        );
        assert_eq!(
            check(&good, "has space", &NOW.to_string()),
            Err(Refusal::InvalidId)
        );
        assert_eq!(
            check("", "msg_1", &NOW.to_string()),
            Err(Refusal::MissingSignature)
        );
        let rotated = format!("v1,{} {good}", BASE64.encode([7u8; 32]));
        assert!(
            check(&rotated, "msg_1", &NOW.to_string()).is_ok(),
            "any listed signature"
        );
        assert_eq!(secret_key("whsec_!!"), None);
        assert_eq!(
            secret_key("MDEy"),
            Some(b"012".to_vec()),
            "the prefix is optional"
        );
    }
}
