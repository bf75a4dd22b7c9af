//! GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, the delivery id in
//! `X-GitHub-Delivery` (a GUID, kept by redeliveries), the event in `X-GitHub-Event`. No
//! timestamp. Neither header is signed, so each is held to GitHub's own form before anything
//! is stored: a delivery id is a GUID, an event name lower-case letters and `_`.

use super::{SenderError, Unverified};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// The delivery id header.
pub const ID_HEADER: &str = "x-github-delivery";
/// The event type header.
pub const EVENT_HEADER: &str = "x-github-event";

/// Reads a delivery's headers: its signature, then its id (a GUID, required), then its event
/// (GitHub's form when present). Anything else is refused with its own code.
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Unverified, SenderError> {
    let decode = |text: &str| {
        let mut mac = [0u8; 32];
        let digits = text.strip_prefix("sha256=")?;
        hex::decode_to_slice(digits, &mut mac).ok().map(|()| mac)
    };
    let mac = super::body_mac(header, SIGNATURE_HEADER, decode)?;
    let id_errors = (SenderError::MissingId, SenderError::InvalidId);
    let id = super::required(header(ID_HEADER), is_delivery_guid, id_errors)?;
    let event = header(EVENT_HEADER);
    let event = super::optional(event, is_event_name, SenderError::InvalidEventType)?;
    Ok(Unverified::body_only(id, event, mac))
}

/// True for a GUID as GitHub writes `X-GitHub-Delivery`: 32 hexadecimal digits in groups of 8,
/// 4, 4, 4 and 12 joined by `-` (`72d3162e-cc78-11e3-81ab-4c9367dc0958`), either case.
pub fn is_delivery_guid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// True for an event name as GitHub writes `X-GitHub-Event`: 1 to
/// [`super::MAX_EVENT_TYPE_LEN`] lower-case letters and `_` (`push`, `pull_request_review`).
pub fn is_event_name(name: &str) -> bool {
    (1..=super::MAX_EVENT_TYPE_LEN).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::super::{verify, Provider};
    use super::*;

    const GUID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

    fn headers(signature: &str, id: &str) -> impl Fn(&str) -> Option<String> {
        let (signature, id) = (signature.to_owned(), id.to_owned());
        move |name: &str| match name {
            SIGNATURE_HEADER => Some(signature.clone()),
            ID_HEADER => Some(id.clone()),
            EVENT_HEADER => Some("push".into()),
            _ => None,
        }
    }

    #[test]
    fn verifies_what_octokit_signs() {
        // `await sign('secret', 'body')` from @octokit/webhooks-methods 6.0.0.
        let from_octokit =
            "sha256=dc46983557fea127b43af721467eb9b3fde2338fe3e14f51952aa8478c13d355";
        let verified = verify(
            Provider::Github,
            &headers(from_octokit, GUID),
            b"body",
            &[b"secret".to_vec()],
            0,
            300,
        )
        .unwrap();
        assert_eq!(verified.event_type.as_deref(), Some("push"));
        assert_eq!(
            verify(
                Provider::Github,
                &headers(from_octokit, GUID),
                b"bodY",
                &[b"secret".to_vec()],
                0,
                300
            ),
            Err(SenderError::SignatureMismatch)
        );
        assert_eq!(
            verify(
                Provider::Github,
                &headers("sha1=abc", GUID),
                b"body",
                &[b"secret".to_vec()],
                0,
                300
            ),
            Err(SenderError::MalformedSignature)
        );
        assert_eq!(
            verify(
                Provider::Github,
                &headers(from_octokit, ""),
                b"body",
                &[b"secret".to_vec()],
                0,
                300
            ),
            Err(SenderError::InvalidId)
        );
    }

    /// The unsigned headers are held to GitHub's form: a GUID for the delivery, lower-case
    /// letters and `_` for the event; anything else (a link, a dot-segment, a made-up id) is
    /// refused with its own code. The event may be absent; the id may not.
    #[test]
    fn unsigned_headers_are_held_to_githubs_own_alphabet() {
        let mac = format!("sha256={}", "ab".repeat(32));
        let read_with = |id: Option<&str>, event: Option<&str>| {
            let (id, event) = (id.map(str::to_owned), event.map(str::to_owned));
            let mac = mac.clone();
            read(&move |name: &str| match name {
                SIGNATURE_HEADER => Some(mac.clone()),
                ID_HEADER => id.clone(),
                EVENT_HEADER => event.clone(),
                _ => None,
            })
            .map(|unverified| unverified.identity)
        };
        for event in ["push", "pull_request_review_comment", "ping"] {
            assert_eq!(read_with(Some(GUID), Some(event)).unwrap().id, GUID);
        }
        assert!(read_with(Some(&GUID.to_uppercase()), Some("push")).is_ok());
        assert_eq!(read_with(Some(GUID), None).unwrap().event_type, None);
        for id in [
            ".",
            "..",
            "d1",
            "72d3162e-cc78-11e3-81ab-4c9367dc095",
            "72d3162ecc7811e381ab4c9367dc0958",
            "72d3162e-cc78-11e3-81ab-4c9367dc095g",
            "{72d3162e-cc78-11e3-81ab-4c9367dc0958}",
            "<https://evil.example|ROTATE-ADMIN-TOKEN>",
        ] {
            assert_eq!(
                read_with(Some(id), Some("push")),
                Err(SenderError::InvalidId),
                "{id}"
            );
        }
        assert_eq!(read_with(None, Some("push")), Err(SenderError::MissingId));
        for event in [
            "",
            "Push",
            "push ",
            "push-1",
            "issues.opened",
            "<https://evil.example|x>",
            &"a".repeat(101),
        ] {
            assert_eq!(
                read_with(Some(GUID), Some(event)),
                Err(SenderError::InvalidEventType),
                "{event:?}"
            );
        }
    }
}
