//! A delivery's signature, checked the same way for every sender: read from its headers, the
//! MACs computed (by the worker's WebCrypto, or on the host), then decided here.

use crate::providers::stripe::envelope::Envelope;
use crate::providers::stripe::signature::{self, SignatureError, SignatureHeader};
use crate::providers::{self, Identity, Provider, Unverified};

use super::Refusal;

/// A delivery's signature as its headers give it, before any MAC is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unchecked {
    /// Stripe's `Stripe-Signature`; the id and type are in the body's envelope.
    Stripe(SignatureHeader),
    /// A header-identified sender's (Standard Webhooks, GitHub, Shopify).
    Headers(Provider, Unverified),
}

/// Who a verified delivery is, or, for Stripe, that its envelope is still to be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The id and type, from the headers.
    Identified(Identity),
    /// A Stripe event: its id and type come from its body (see [`identity_of`]).
    ReadEnvelope,
}

impl Unchecked {
    /// Reads the signature headers of a delivery from `provider` (`header` looks one up by
    /// its lower-case name); a missing or malformed one is refused.
    pub fn read(
        provider: Provider,
        header: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Unchecked, Refusal> {
        match provider {
            Provider::Stripe => header(signature::HEADER)
                .ok_or(SignatureError::Missing)
                .and_then(|value| signature::parse_header(&value))
                .map(Unchecked::Stripe)
                .map_err(Refusal::Signature),
            other => providers::read(other, header)
                .map(|unverified| Unchecked::Headers(other, unverified))
                .map_err(Refusal::Sender),
        }
    }

    /// The bytes the signature covers before the body.
    pub fn prefix(&self) -> Vec<u8> {
        match self {
            Unchecked::Stripe(parsed) => signature::signed_prefix(parsed.timestamp).into_bytes(),
            Unchecked::Headers(_, unverified) => unverified.signed.prefix.clone(),
        }
    }

    /// The replay-limit key of the delivery, from `expected`, the MACs under each configured
    /// secret (see [`providers::replay_limit_key`]).
    pub fn replay_key(&self, expected: &[[u8; 32]]) -> Option<String> {
        match self {
            Unchecked::Stripe(_) => None,
            Unchecked::Headers(provider, _) => expected
                .first()
                .and_then(|mac| providers::replay_limit_key(*provider, mac)),
        }
    }

    /// The timestamp check alone, before the body is read: Stripe's `t` and Standard Webhooks'
    /// `webhook-timestamp` within `tolerance_seconds` of `now` (Unix seconds); senders that sign
    /// no time pass.
    pub fn check_time(&self, now: i64, tolerance_seconds: u64) -> Result<(), Refusal> {
        match self {
            Unchecked::Stripe(parsed) => {
                signature::check_time(parsed, now, tolerance_seconds).map_err(Refusal::Signature)
            }
            Unchecked::Headers(_, unverified) => {
                providers::check_time(unverified, now, tolerance_seconds).map_err(Refusal::Sender)
            }
        }
    }

    /// The verdict given `expected`, the MACs of the prefix and body under each configured
    /// secret, at `now` (Unix seconds) within `tolerance_seconds`.
    pub fn decide(
        self,
        expected: &[[u8; 32]],
        now: i64,
        tolerance_seconds: u64,
    ) -> Result<Checked, Refusal> {
        match self {
            Unchecked::Stripe(parsed) => {
                signature::decide(&parsed, expected, now, tolerance_seconds)
                    .map(|_| Checked::ReadEnvelope)
                    .map_err(Refusal::Signature)
            }
            Unchecked::Headers(_, unverified) => {
                providers::decide(unverified, expected, now, tolerance_seconds)
                    .map(Checked::Identified)
                    .map_err(Refusal::Sender)
            }
        }
    }
}

/// A verified Stripe event's identity, from its envelope (read from the body by the runtime's
/// `JSON.parse`, or on the host).
pub fn identity_of(
    envelope: Result<Envelope, crate::providers::stripe::envelope::EnvelopeError>,
) -> Result<Identity, Refusal> {
    let event = envelope.map_err(Refusal::Envelope)?;
    Ok(Identity {
        id: event.id,
        event_type: Some(event.event_type),
    })
}

/// What the handler receives besides the body: its `Content-Type` (JSON when none came) and
/// the sender's own headers (signature, id, timestamp, event), so it verifies the delivery as
/// it does today.
pub fn forwarded_headers(
    provider: Provider,
    header: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let content_type = header("content-type").unwrap_or_else(|| "application/json".into());
    let mut forwarded = vec![("content-type".to_owned(), content_type)];
    for name in providers::forwarded_headers(provider, header) {
        if let Some(value) = header(name) {
            forwarded.push(((*name).to_owned(), value));
        }
    }
    forwarded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mac::hmac_sha256;
    use crate::providers::SenderError;
    use crate::secret::Secret;

    const SECRET: &[u8] = b"whsec_test";
    const BODY: &[u8] = br#"{"id":"evt_1","object":"event","type":"invoice.paid"}"#;
    const GUID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

    fn lookup<'a>(headers: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            let found = headers.iter().find(|(header, _)| *header == name);
            found.map(|(_, value)| value.clone())
        }
    }

    /// Reads, computes the MAC over the prefix it names, and decides: the worker's sequence.
    fn check(provider: Provider, headers: &[(&str, String)]) -> Result<Checked, Refusal> {
        let unchecked = Unchecked::read(provider, &lookup(headers))?;
        let expected = [hmac_sha256(SECRET, &unchecked.prefix(), BODY)];
        unchecked.decide(&expected, 1_000, 300)
    }

    /// Stripe's signature is checked over `"{t}."` and the body; its identity is left to the
    /// envelope; a wrong secret, a stale time and a missing header are refused.
    #[test]
    fn a_stripe_delivery_is_checked_then_read_from_its_envelope() {
        let mac = crate::providers::stripe::signature::sign(&Secret::new("whsec_test"), 990, BODY);
        let signed = [("stripe-signature", format!("t=990,v1={}", hex::encode(mac)))];
        assert_eq!(check(Provider::Stripe, &signed), Ok(Checked::ReadEnvelope));
        let old = crate::providers::stripe::signature::sign(&Secret::new("whsec_test"), 600, BODY);
        let stale = [("stripe-signature", format!("t=600,v1={}", hex::encode(old)))];
        assert!(matches!(
            check(Provider::Stripe, &stale),
            Err(Refusal::Signature(SignatureError::TimestampTooOld { .. }))
        ));
        let other =
            crate::providers::stripe::signature::sign(&Secret::new("whsec_other"), 990, BODY);
        let forged = [(
            "stripe-signature",
            format!("t=990,v1={}", hex::encode(other)),
        )];
        assert_eq!(
            check(Provider::Stripe, &forged),
            Err(Refusal::Signature(SignatureError::Mismatch))
        );
        assert_eq!(
            check(Provider::Stripe, &[]),
            Err(Refusal::Signature(SignatureError::Missing))
        );
        let envelope = crate::providers::stripe::envelope::parse(BODY);
        let identity = identity_of(envelope).unwrap();
        assert_eq!(identity.id, "evt_1");
        assert_eq!(identity.event_type.as_deref(), Some("invoice.paid"));
    }

    /// A GitHub delivery is identified by its headers once its MAC over the bare body matches,
    /// and names a replay-limit key; a forged MAC is refused.
    #[test]
    fn a_github_delivery_is_identified_by_its_headers() {
        let mac = hmac_sha256(SECRET, b"", BODY);
        let headers = [
            (
                "x-hub-signature-256",
                format!("sha256={}", hex::encode(mac)),
            ),
            ("x-github-delivery", GUID.to_owned()),
            ("x-github-event", "push".to_owned()),
        ];
        let Ok(Checked::Identified(identity)) = check(Provider::Github, &headers) else {
            panic!("a signed GitHub delivery is identified");
        };
        assert_eq!(
            (identity.id.as_str(), identity.event_type.as_deref()),
            (GUID, Some("push"))
        );
        let unchecked = Unchecked::read(Provider::Github, &lookup(&headers)).unwrap();
        assert!(unchecked
            .replay_key(&[mac])
            .unwrap()
            .starts_with("replay:github:"));
        let forged = [
            ("x-hub-signature-256", format!("sha256={}", "00".repeat(32))),
            headers[1].clone(),
        ];
        assert_eq!(
            check(Provider::Github, &forged),
            Err(Refusal::Sender(SenderError::SignatureMismatch))
        );
    }

    /// The handler gets the sender's own headers and a content type, JSON when none came.
    #[test]
    fn the_handler_gets_the_senders_headers_and_a_content_type() {
        let headers = [
            ("stripe-signature", "t=1,v1=ab".to_owned()),
            ("x-other", "no".into()),
        ];
        assert_eq!(
            forwarded_headers(Provider::Stripe, &lookup(&headers)),
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("stripe-signature".to_owned(), "t=1,v1=ab".to_owned()),
            ]
        );
    }
}
