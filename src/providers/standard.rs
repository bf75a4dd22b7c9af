//! Standard Webhooks (standardwebhooks.com): `webhook-id`, `webhook-timestamp` (Unix seconds)
//! and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256>` over
//! `{id}.{timestamp}.{body}`, keyed by the secret's base64 part (`whsec_` + base64). Svix, the
//! largest sender of this format, names the same three headers `svix-id`, `svix-timestamp` and
//! `svix-signature` unless a sender opts into the unbranded names; both are read, as the
//! reference libraries do.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::{Identity, SenderError, Signed, Unverified};

/// The delivery id header.
pub const ID_HEADER: &str = "webhook-id";
/// The signed timestamp header.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// The signature header.
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// The header names of a delivery: the unbranded ones, then Svix's (id, timestamp, signature).
pub const HEADER_NAMES: [[&str; 3]; 2] = [
    [ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER],
    ["svix-id", "svix-timestamp", "svix-signature"],
];

/// The header family a delivery is read and verified from: the unbranded names when it carries
/// `webhook-signature`, else Svix's when it carries `svix-signature`, else the unbranded names.
/// Only this family is forwarded: the other one, if present, was never verified.
pub fn family(header: &dyn Fn(&str) -> Option<String>) -> &'static [&'static str; 3] {
    HEADER_NAMES
        .iter()
        .find(|[_, _, signature]| header(signature).is_some())
        .unwrap_or(&HEADER_NAMES[0])
}

/// The HMAC key of a Standard Webhooks secret: the base64 after `whsec_` (the prefix is
/// optional, as in the reference libraries). `None` when it is not base64 or is empty.
pub fn secret_key(secret: &str) -> Option<Vec<u8>> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    BASE64.decode(encoded).ok().filter(|key| !key.is_empty())
}

/// The signature header's value for delivery `id` at `timestamp` over `body` with `hmac_key`:
/// one `v1,<base64>` entry, as the reference libraries sign.
pub fn signature_for(hmac_key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = crate::mac::hmac_sha256(hmac_key, &signed_prefix(id, timestamp), body);
    format!("v1,{}", BASE64.encode(mac))
}

/// Signs a stored delivery anew at `now` with `hmac_key`: in each header family it came with,
/// the timestamp becomes `now` and the signature list one `v1` entry (signatures under other
/// secrets, and asymmetric `v1a` ones, are not carried over).
pub fn resign(
    stored: &mut Vec<(String, String)>,
    id: &str,
    hmac_key: &[u8],
    now: i64,
    body: &[u8],
) {
    for [_, timestamp, signature] in HEADER_NAMES {
        if !stored.iter().any(|(name, _)| name == signature) {
            continue;
        }
        stored.retain(|(name, _)| name != timestamp && name != signature);
        stored.push((timestamp.into(), now.to_string()));
        stored.push((signature.into(), signature_for(hmac_key, id, now, body)));
    }
}

/// True for a message id as the specification allows one: 1 to
/// [`super::MAX_HEADER_ID_LEN`] printable ASCII characters without spaces, and without `.`,
/// which the specification forbids in an id (it delimits the signed content), so `.` and `..`
/// never name a record.
pub fn is_message_id(id: &str) -> bool {
    super::is_header_id(id) && !id.contains('.')
}

/// What is signed before the body: `"{id}.{timestamp}."`.
fn signed_prefix(id: &str, timestamp: i64) -> Vec<u8> {
    format!("{id}.{timestamp}.").into_bytes()
}

/// Reads a delivery's headers (the unbranded names, else Svix's): its id, timestamp and `v1`
/// signatures (others, such as asymmetric `v1a`, and entries that are not 32 bytes of base64,
/// are skipped).
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Unverified, SenderError> {
    let [id_name, timestamp_name, signature_name] = *family(header);
    let signature = header(signature_name)
        .filter(|v| !v.trim().is_empty())
        .ok_or(SenderError::MissingSignature)?;
    let id_errors = (SenderError::MissingId, SenderError::InvalidId);
    let id = super::required(header(id_name), is_message_id, id_errors)?;
    let timestamp = header(timestamp_name).ok_or(SenderError::MissingTimestamp)?;
    let timestamp: i64 = match timestamp.trim() {
        t if !t.is_empty() && t.len() <= 12 && t.bytes().all(|b| b.is_ascii_digit()) => {
            t.parse().map_err(|_| SenderError::MalformedTimestamp)?
        }
        _ => return Err(SenderError::MalformedTimestamp),
    };
    let signatures: Vec<[u8; 32]> = signature
        .split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|encoded| BASE64.decode(encoded).ok())
        .filter_map(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .take(16)
        .collect();
    if signatures.is_empty() {
        return Err(SenderError::MalformedSignature);
    }
    Ok(Unverified {
        signed: Signed {
            prefix: signed_prefix(&id, timestamp),
            signatures,
        },
        identity: Identity {
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
    const FROM_LIBRARY: &str = "v1,jTxIFkEKUwim4Gt2ljKTKi9Ls3MYC4g0UHC30b3yUrw=";

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
        signature_for(&key(), id, t, body)
    }

    #[test]
    fn verifies_what_the_reference_library_signs_and_signs_as_it_does() {
        assert_eq!(
            signature_for(&key(), "msg_1", NOW, br#"{"a":1}"#),
            FROM_LIBRARY
        );
        assert_eq!(
            verify(
                Provider::Standard,
                &headers(FROM_LIBRARY, "msg_1", &NOW.to_string()),
                br#"{"a":1}"#,
                &[key()],
                NOW,
                300
            ),
            Ok(Identity {
                id: "msg_1".into(),
                event_type: None
            })
        );
    }

    #[test]
    fn svix_header_names_are_read_and_re_signed() {
        let svix = |name: &str| match name {
            "svix-signature" => Some(FROM_LIBRARY.to_owned()),
            "svix-id" => Some("msg_1".to_owned()),
            "svix-timestamp" => Some(NOW.to_string()),
            _ => None,
        };
        let body = br#"{"a":1}"#;
        assert!(verify(Provider::Standard, &svix, body, &[key()], NOW, 300).is_ok());
        let mut stored = vec![
            ("svix-id".to_owned(), "msg_1".to_owned()),
            ("svix-timestamp".to_owned(), NOW.to_string()),
            ("svix-signature".to_owned(), FROM_LIBRARY.to_owned()),
        ];
        resign(&mut stored, "msg_1", &key(), NOW + 3_600, body);
        let later = |name: &str| {
            stored
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(later("svix-timestamp"), Some((NOW + 3_600).to_string()));
        assert!(verify(Provider::Standard, &later, body, &[key()], NOW + 3_600, 300).is_ok());
        assert_eq!(later("webhook-signature"), None, "no other family added");
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
            Err(SenderError::SignatureMismatch)
        );
        assert_eq!(
            check(
                &sign("msg_1", NOW - 301, body),
                "msg_1",
                &(NOW - 301).to_string()
            ),
            Err(SenderError::TimestampTooOld)
        );
        assert_eq!(
            check(
                &sign("msg_1", NOW + 301, body),
                "msg_1",
                &(NOW + 301).to_string()
            ),
            Err(SenderError::TimestampInFuture)
        );
        assert_eq!(
            check(&good, "msg_1", "soon"),
            Err(SenderError::MalformedTimestamp)
        );
        assert_eq!(
            check("v1a,abc", "msg_1", &NOW.to_string()),
            Err(SenderError::MalformedSignature)
        );
        assert_eq!(
            check(&good, "has space", &NOW.to_string()),
            Err(SenderError::InvalidId)
        );
        for id in [".", "..", "msg.1"] {
            let signed = sign(id, NOW, body);
            assert_eq!(
                check(&signed, id, &NOW.to_string()),
                Err(SenderError::InvalidId),
                "the specification forbids a dot in an id: {id}"
            );
        }
        assert_eq!(
            check("", "msg_1", &NOW.to_string()),
            Err(SenderError::MissingSignature)
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

    #[test]
    fn only_the_family_that_was_verified_is_forwarded() {
        let present = |names: &'static [&'static str]| {
            move |name: &str| names.contains(&name).then(|| "x".to_owned())
        };
        let both = present(&["webhook-signature", "svix-id", "svix-signature"]);
        assert_eq!(
            super::super::forwarded_headers(Provider::Standard, &both),
            ["webhook-id", "webhook-timestamp", "webhook-signature"],
            "an added svix-* family is not the one verified"
        );
        let svix = present(&["svix-id", "svix-timestamp", "svix-signature"]);
        assert_eq!(
            super::super::forwarded_headers(Provider::Standard, &svix),
            ["svix-id", "svix-timestamp", "svix-signature"]
        );
    }
}
