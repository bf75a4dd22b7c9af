//! GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, the delivery id in
//! `X-GitHub-Delivery` (kept by redeliveries), the event in `X-GitHub-Event`. No timestamp.

use super::{SenderError, Unverified};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// The delivery id header.
pub const ID_HEADER: &str = "x-github-delivery";
/// The event type header.
pub const EVENT_HEADER: &str = "x-github-event";

/// Reads a delivery's headers: its signature, id and event.
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Unverified, SenderError> {
    let decode = |text: &str| {
        let mut mac = [0u8; 32];
        let digits = text.strip_prefix("sha256=")?;
        hex::decode_to_slice(digits, &mut mac).ok().map(|()| mac)
    };
    super::read_body_mac(header, SIGNATURE_HEADER, decode, ID_HEADER, EVENT_HEADER)
}

#[cfg(test)]
mod tests {
    use super::super::{verify, Provider};
    use super::*;

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
            &headers(from_octokit, "d1"),
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
                &headers(from_octokit, "d1"),
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
                &headers("sha1=abc", "d1"),
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
}
