//! Stripe's event log: the page to ask for, what a page says, and the signature a reconciled
//! event carries to the handler.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::claim::Millis;
use crate::providers::stripe::{envelope, signature};
use crate::secret::Secret;

/// Events asked for per page: with one claim request each, a call stays within the Workers
/// Free plan's 50 subrequests.
pub const STRIPE_PAGE: u32 = 40;

/// The URL of the page of events created in `since..=until` (whole seconds) that are not yet
/// delivered to every endpoint, newest first, after event `after` when given.
pub fn list_url(base: &url::Url, since: Millis, until: Millis, after: Option<&str>) -> String {
    let mut url = base.clone();
    url.set_path("/v1/events");
    {
        let mut query = url.query_pairs_mut();
        query.clear();
        query.append_pair("created[gte]", &(since / 1_000).to_string());
        query.append_pair("created[lte]", &(until / 1_000).to_string());
        query.append_pair("delivery_success", "false");
        query.append_pair("limit", &STRIPE_PAGE.to_string());
        if let Some(after) = after {
            query.append_pair("starting_after", after);
        }
    }
    url.to_string()
}

/// The headers of a request to Stripe's API under `key`.
pub fn headers(key: &Secret) -> Vec<(String, String)> {
    vec![
        (
            "authorization".into(),
            format!("Bearer {}", key.expose_str()),
        ),
        (
            "user-agent".into(),
            crate::reconcile::tally::USER_AGENT.into(),
        ),
    ]
}

/// One event of the list: its id and type, and its JSON exactly as Stripe sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedEvent {
    /// The event id.
    pub id: String,
    /// Its type.
    pub event_type: String,
    /// Its JSON, the body a webhook of it carries.
    pub body: Vec<u8>,
}

/// A page of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventPage {
    /// Its events, newest first.
    pub events: Vec<ListedEvent>,
    /// True when older events follow.
    pub has_more: bool,
}

#[derive(Deserialize)]
struct ListShape<'a> {
    #[serde(borrow)]
    data: Vec<&'a RawValue>,
    has_more: bool,
}

/// The page `body` says; `Err` says why it is not a list of events.
pub fn read_page(body: &[u8]) -> Result<EventPage, String> {
    let list: ListShape = serde_json::from_slice(body)
        .map_err(|error| format!("Stripe's list did not read as a list: {error}"))?;
    let mut events = Vec::with_capacity(list.data.len());
    for raw in list.data {
        let body = raw.get().as_bytes().to_vec();
        let event = envelope::parse(&body)
            .map_err(|error| format!("Stripe listed an event that is not one: {}", error.code()))?;
        events.push(ListedEvent {
            id: event.id,
            event_type: event.event_type,
            body,
        });
    }
    Ok(EventPage {
        events,
        has_more: list.has_more,
    })
}

/// A `Stripe-Signature` for `body` at `timestamp`: one `v1` per secret of the endpoint, as
/// Stripe itself signs while a secret is rolled, so the handler's own check passes with
/// whichever secret it holds.
pub fn signature_header(secrets: &[Secret], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        let mac = signature::sign(secret, timestamp, body);
        header.push_str(",v1=");
        header.push_str(&hex::encode(mac));
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_asks_for_undelivered_events_in_the_window_after_the_cursor() {
        let base = url::Url::parse("https://api.stripe.com").unwrap();
        let url = list_url(&base, 1_700_000_000_999, 1_700_003_600_000, Some("evt_9"));
        let parsed = url::Url::parse(&url).unwrap();
        assert_eq!(parsed.path(), "/v1/events");
        let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
        let pair = |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(pair("created[gte]"), Some("1700000000"));
        assert_eq!(pair("created[lte]"), Some("1700003600"));
        assert_eq!(pair("delivery_success"), Some("false"));
        assert_eq!(pair("limit"), Some("40"));
        assert_eq!(pair("starting_after"), Some("evt_9"));
        let first = list_url(&base, 0, 1_000, None);
        assert!(!first.contains("starting_after"));
    }

    #[test]
    fn a_page_keeps_each_event_s_json_as_stripe_sent_it() {
        let body = br#"{"object": "list", "url": "/v1/events", "has_more": true, "data": [
            {"id": "evt_2", "object": "event", "type": "invoice.paid", "created": 2, "data": {"object": {"amount": 1.50}}},
            {"id": "evt_1", "object": "event", "type": "charge.succeeded", "created": 1}
        ]}"#;
        let page = read_page(body).unwrap();
        assert!(page.has_more);
        assert_eq!(page.events.len(), 2);
        assert_eq!(
            (
                page.events[0].id.as_str(),
                page.events[0].event_type.as_str()
            ),
            ("evt_2", "invoice.paid")
        );
        let text = std::str::from_utf8(&page.events[0].body).unwrap();
        assert!(
            text.starts_with(r#"{"id": "evt_2""#) && text.contains("1.50"),
            "{text}"
        );
        assert!(read_page(b"{}").is_err());
        assert!(read_page(br#"{"has_more": false, "data": [{"id": "x"}]}"#).is_err());
    }

    #[test]
    fn the_signature_verifies_under_every_secret_of_the_endpoint() {
        let secrets = [Secret::new("whsec_old"), Secret::new("whsec_new")];
        let header = signature_header(&secrets, 1_700_000_000, b"{}");
        for secret in &secrets {
            let verified = signature::verify(
                Some(&header),
                b"{}",
                std::slice::from_ref(secret),
                1_700_000_010,
                300,
            );
            assert!(verified.is_ok(), "{header}");
        }
    }
}
