//! Shopify: `X-Shopify-Hmac-Sha256`, the base64 HMAC-SHA256 of the raw body with the app's
//! client secret. Its "ignore duplicate webhooks" guidance keys on `X-Shopify-Event-Id`, shared by
//! every delivery one merchant action causes (so two subscriptions to one topic run once). One
//! action can cause deliveries of several topics (`X-Shopify-Topic`), each for its own handler,
//! so a delivery is claimed by its topic and event id together: one run per topic per event.
//! No signed timestamp, and none of these headers is signed: each is held to Shopify's own form
//! (topic, event id, shop domain) before anything is stored.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use super::{SenderError, Unverified};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "x-shopify-hmac-sha256";
/// The event id header (the de-duplication key).
pub const ID_HEADER: &str = "x-shopify-event-id";
/// The topic header.
pub const TOPIC_HEADER: &str = "x-shopify-topic";
/// The shop's domain header.
pub const SHOP_DOMAIN_HEADER: &str = "x-shopify-shop-domain";

/// Reads a delivery's headers: its signature, event id, topic and shop domain. Its id (the
/// claim's) is `{topic}:{event id}`, so that deliveries of two topics caused by one action
/// never meet in one record; the event id alone when no topic header is sent. An event id, a
/// topic or a shop domain outside Shopify's form (see [`is_event_id`], [`is_topic`],
/// [`is_shop_domain`]) is refused with its own code: dropping a topic would let two deliveries
/// meet in one record and one of them never run.
pub fn read(header: &dyn Fn(&str) -> Option<String>) -> Result<Unverified, SenderError> {
    let decode = |text: &str| BASE64.decode(text).ok()?.try_into().ok();
    let mac = super::body_mac(header, SIGNATURE_HEADER, decode)?;
    let id_errors = (SenderError::MissingId, SenderError::InvalidId);
    let event_id = super::required(header(ID_HEADER), is_event_id, id_errors)?;
    let topic = super::optional(header(TOPIC_HEADER), is_topic, SenderError::InvalidTopic)?;
    let shop = header(SHOP_DOMAIN_HEADER);
    super::optional(shop, is_shop_domain, SenderError::InvalidShopDomain)?;
    let id = match &topic {
        Some(topic) => format!("{topic}:{event_id}"),
        None => event_id,
    };
    if id.len() > super::MAX_HEADER_ID_LEN {
        return Err(SenderError::InvalidId);
    }
    Ok(Unverified::body_only(id, topic, mac))
}

/// True for an event id as Shopify writes `X-Shopify-Event-Id` (a UUID; numbers in older
/// deliveries): 1 to [`super::MAX_HEADER_ID_LEN`] ASCII letters, digits, `-` and `_`.
pub fn is_event_id(id: &str) -> bool {
    (1..=super::MAX_HEADER_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// True for a topic as Shopify writes `X-Shopify-Topic`: 1 to [`super::MAX_EVENT_TYPE_LEN`]
/// characters, two or more words of lower-case letters, digits and `_` joined by `/` or `.`
/// (`orders/create`, `customers/data_request`, `customer.tags_added`).
pub fn is_topic(topic: &str) -> bool {
    let words: Vec<&str> = topic.split(['/', '.']).collect();
    (1..=super::MAX_EVENT_TYPE_LEN).contains(&topic.len())
        && words.len() >= 2
        && words.iter().all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// True for a shop's domain as Shopify writes `X-Shopify-Shop-Domain`: a host name under
/// `myshopify.com` (`shop-a.myshopify.com`), its label 1 to 63 letters, digits and `-`, neither
/// first nor last a `-`.
pub fn is_shop_domain(domain: &str) -> bool {
    let Some(label) = domain.strip_suffix(".myshopify.com") else {
        return false;
    };
    (1..=63).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-')
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
            Err(SenderError::InvalidTopic),
            "a topic that is not a topic is refused, not dropped: two such deliveries of one \
             event id would otherwise meet in one record"
        );
        assert_eq!(
            read_with(Some(format!("t/{}", "t".repeat(99))), "e-1".into()),
            Err(SenderError::InvalidTopic)
        );
        assert_eq!(
            read_with(Some("orders/create".into()), "e".repeat(250)),
            Err(SenderError::InvalidId),
            "no longer than any other header id"
        );
    }

    /// The unsigned headers are held to Shopify's form: a topic of words joined by `/` or `.`,
    /// an event id of letters, digits, `-` and `_`, a shop under `myshopify.com`; anything else
    /// (a link, a dot-segment, another host) is refused with its own code.
    #[test]
    fn unsigned_headers_are_held_to_shopifys_own_alphabet() {
        for topic in [
            "orders/create",
            "customers/data_request",
            "customer.tags_added",
            "app_subscriptions/update",
        ] {
            assert!(is_topic(topic), "{topic}");
        }
        for topic in [
            "",
            "orders",
            "orders/",
            "/create",
            "orders//create",
            "Orders/create",
            "orders/create ",
            "../admin",
            "<https://evil.example|x>/y",
            ".",
            "..",
        ] {
            assert!(!is_topic(topic), "{topic:?}");
        }
        for id in [
            "98880550-7158-44d4-b7cd-2c97c8a091b5",
            "820982911946154500",
            "e_1",
        ] {
            assert!(is_event_id(id), "{id}");
        }
        for id in ["", ".", "..", "a.b", "a b", "a/b", "<x>", &"1".repeat(256)] {
            assert!(!is_event_id(id), "{id:?}");
        }
        for shop in ["shop-a.myshopify.com", "x1.myshopify.com"] {
            assert!(is_shop_domain(shop), "{shop}");
        }
        for shop in [
            "",
            ".myshopify.com",
            "-a.myshopify.com",
            "a-.myshopify.com",
            "a.b.myshopify.com",
            "evil.example",
            "shop.myshopify.com.evil.example",
            "a_b.myshopify.com",
            "<https://evil.example|x>.myshopify.com",
        ] {
            assert!(!is_shop_domain(shop), "{shop:?}");
        }
        let signature = BASE64.encode([1u8; 32]);
        let read_with = |pairs: Vec<(&'static str, &'static str)>| {
            let signature = signature.clone();
            read(&move |name: &str| match name {
                SIGNATURE_HEADER => Some(signature.clone()),
                other => pairs
                    .iter()
                    .find(|(n, _)| *n == other)
                    .map(|(_, v)| (*v).to_owned()),
            })
            .map(|unverified| unverified.identity.id)
        };
        let good = [
            (ID_HEADER, "e-1"),
            (TOPIC_HEADER, "orders/create"),
            (SHOP_DOMAIN_HEADER, "shop-a.myshopify.com"),
        ];
        assert_eq!(read_with(good.to_vec()), Ok("orders/create:e-1".into()));
        let with = |name: &'static str, value: &'static str| {
            let mut pairs = good.to_vec();
            pairs.retain(|(n, _)| *n != name);
            pairs.push((name, value));
            read_with(pairs)
        };
        assert_eq!(with(ID_HEADER, ".."), Err(SenderError::InvalidId));
        for topic in [
            "shop redact",
            "../admin",
            "<https://evil.example|x>/y",
            "Orders/Create",
        ] {
            assert_eq!(
                with(TOPIC_HEADER, topic),
                Err(SenderError::InvalidTopic),
                "{topic}"
            );
        }
        assert_eq!(
            with(SHOP_DOMAIN_HEADER, "evil.example"),
            Err(SenderError::InvalidShopDomain)
        );
        let no_shop = vec![(ID_HEADER, "e-1"), (TOPIC_HEADER, "orders/create")];
        assert!(
            read_with(no_shop).is_ok(),
            "a delivery without a shop domain is read"
        );
    }
}
