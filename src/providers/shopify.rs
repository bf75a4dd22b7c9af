//! Shopify: `X-Shopify-Hmac-Sha256`, the base64 HMAC-SHA256 of the raw body with the app's
//! client secret. Its "ignore duplicate webhooks" guidance keys on `X-Shopify-Event-Id`, shared by
//! every delivery one merchant action causes (so two subscriptions to one topic run once); the
//! topic is in `X-Shopify-Topic`. No signed timestamp.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::{Inbound, Refusal};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-shopify-hmac-sha256";
/// The event id header (the de-duplication key).
pub const ID_HEADER: &str = "x-shopify-event-id";
/// The topic header.
pub const TOPIC_HEADER: &str = "x-shopify-topic";

/// Reads a delivery's headers: its signature, event id and topic.
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Inbound, Refusal> {
    let decode = |text: &str| BASE64.decode(text).ok()?.try_into().ok();
    super::read_body_mac(header, SIGNATURE_HEADER, decode, ID_HEADER, TOPIC_HEADER)
}

#[cfg(test)]
mod tests {
    use super::super::{verify, Provider};
    use super::*;
    use crate::mac::hmac_sha256 as mac;

    #[test]
    fn verifies_the_documented_hmac() {
        let body = br#"{"id":1}"#;
        let signature = BASE64.encode(mac(b"shpss_secret", b"", body));
        let headers = |signature: String, id: &'static str| {
            move |name: &str| match name {
                SIGNATURE_HEADER => Some(signature.clone()),
                ID_HEADER => Some(id.to_owned()),
                TOPIC_HEADER => Some("orders/create".to_owned()),
                _ => None,
            }
        };
        let keys = [b"shpss_other".to_vec(), b"shpss_secret".to_vec()];
        let verified = verify(
            Provider::Shopify,
            &headers(signature.clone(), "e-1"),
            body,
            &keys,
            0,
            300,
        )
        .unwrap();
        assert_eq!(
            (verified.id.as_str(), verified.event_type.as_deref()),
            ("e-1", Some("orders/create"))
        );
        assert_eq!(
            verify(
                Provider::Shopify,
                &headers("bm90IDMyIGJ5dGVz".into(), "e-1"),
                body,
                &keys,
                0,
                300
            ),
            Err(Refusal::MalformedSignature)
        );
        assert_eq!(
            verify(
                Provider::Shopify,
                &headers(signature, "e-1"),
                b"{}",
                &keys,
                0,
                300
            ),
            Err(Refusal::SignatureMismatch)
        );
    }
}
