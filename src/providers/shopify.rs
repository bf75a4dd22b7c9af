//! Shopify: `X-Shopify-Hmac-Sha256`, the base64 HMAC-SHA256 of the raw body with the app's
//! client secret. Its "ignore duplicate webhooks" guidance keys on `X-Shopify-Event-Id`, shared by
//! every delivery one merchant action causes (so two subscriptions to one topic run once). One
//! action can cause deliveries of several topics (`X-Shopify-Topic`), each for its own handler,
//! so a delivery is claimed by its topic and event id together: one run per topic per event.
//! No signed timestamp.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::{SenderError, Unverified};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-shopify-hmac-sha256";
/// The event id header (the de-duplication key).
pub const ID_HEADER: &str = "x-shopify-event-id";
/// The topic header.
pub const TOPIC_HEADER: &str = "x-shopify-topic";

/// Reads a delivery's headers: its signature, topic and event id. Its id (the claim's) is
/// `{topic}:{event id}`, so that deliveries of two topics caused by one action never meet in
/// one record; the event id alone when no topic header is sent. A topic that is not a token
/// (1 to 100 printable ASCII characters without spaces), or an id longer than
/// [`super::MAX_HEADER_ID_LEN`], is refused as invalid: dropping the topic would let two
/// deliveries meet in one record and one of them never run.
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Unverified, SenderError> {
    let decode = |text: &str| BASE64.decode(text).ok()?.try_into().ok();
    let mut unverified =
        super::read_body_mac(header, SIGNATURE_HEADER, decode, ID_HEADER, TOPIC_HEADER)?;
    if header(TOPIC_HEADER).is_some_and(|topic| !super::is_event_type(&topic)) {
        return Err(SenderError::InvalidId);
    }
    if let Some(topic) = &unverified.identity.event_type {
        let id = format!("{topic}:{}", unverified.identity.id);
        if !super::is_header_id(&id) {
            return Err(SenderError::InvalidId);
        }
        unverified.identity.id = id;
    }
    Ok(unverified)
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
            ("orders/create:e-1", Some("orders/create"))
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
            Err(SenderError::MalformedSignature)
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
            Err(SenderError::SignatureMismatch)
        );
    }

    #[test]
    fn one_event_is_claimed_once_per_topic() {
        let body = br#"{"id":1}"#;
        let signature = BASE64.encode(mac(b"shpss_secret", b"", body));
        let read_with = |topic: Option<String>, id: String| {
            let signature = signature.clone();
            read(&move |name: &str| match name {
                SIGNATURE_HEADER => Some(signature.clone()),
                ID_HEADER => Some(id.clone()),
                TOPIC_HEADER => topic.clone(),
                _ => None,
            })
            .map(|unverified| unverified.identity.id)
        };
        let id = |topic: &str| read_with(Some(topic.into()), "e-1".into());
        assert_eq!(id("orders/create"), Ok("orders/create:e-1".into()));
        assert_eq!(id("orders/paid"), Ok("orders/paid:e-1".into()));
        assert_eq!(
            read_with(None, "e-1".into()),
            Ok("e-1".into()),
            "without a topic, the event id alone"
        );
        assert_eq!(
            read_with(Some("a b".into()), "e-1".into()),
            Err(SenderError::InvalidId),
            "a topic that is not a token is refused, not dropped: two such deliveries of one \
             event id would otherwise meet in one record"
        );
        assert_eq!(
            read_with(Some("t".repeat(101)), "e-1".into()),
            Err(SenderError::InvalidId)
        );
        assert_eq!(
            read_with(Some("orders/create".into()), "e".repeat(250)),
            Err(SenderError::InvalidId),
            "no longer than any other header id"
        );
    }
}
