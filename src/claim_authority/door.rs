//! Which front door a forward came through, and what that door decides about it: which answers
//! count as success, which headers the handler receives, and what of an answer is kept for
//! replay.

use serde::{Deserialize, Serialize};

use crate::claim::CachedResponse;
use crate::log_line::Route;
use crate::providers::Provider;

/// Which front door the delivery came through: what counts as success, and what is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Door {
    /// A webhook: a 2xx is success; the answer's body is not kept.
    Webhook,
    /// An Idempotency-Key request: every final answer is kept for replay (its body up to
    /// `max_cached_body` bytes), and the answer streams back to the caller.
    Api {
        /// Largest answer body kept for replay.
        max_cached_body: u64,
    },
}

/// Headers the webhook doors add to each forward: the event (or delivery) id as the sender
/// gave it, the sender, the attempt number, and whether it took over a claim whose lease ran
/// out.
pub const EVENT_ID_HEADER: &str = "x-webhook-dedup-event-id";
/// See [`EVENT_ID_HEADER`].
pub const ATTEMPT_HEADER: &str = "x-webhook-dedup-attempt";
/// See [`EVENT_ID_HEADER`].
pub const TAKEOVER_HEADER: &str = "x-webhook-dedup-takeover";
/// See [`EVENT_ID_HEADER`]: the sender (`stripe`, `standard`, `github`, `shopify`).
pub const PROVIDER_HEADER: &str = "x-webhook-dedup-provider";

/// The headers a webhook forward of attempt `attempt` of `key` from `provider` carries beside
/// the sender's own (`takeover`: it follows an attempt whose outcome is unknown): the event id
/// as the sender gave it, the sender, the attempt number and the takeover flag.
pub fn attempt_headers(
    provider: Provider,
    key: &str,
    attempt: u32,
    takeover: bool,
) -> Vec<(String, String)> {
    vec![
        (EVENT_ID_HEADER.into(), provider.id_of(key).into()),
        (PROVIDER_HEADER.into(), provider.name().into()),
        (ATTEMPT_HEADER.into(), attempt.to_string()),
        (TAKEOVER_HEADER.into(), takeover.to_string()),
    ]
}

impl Door {
    /// The log route of a forward through this door.
    pub fn route(self) -> Route {
        match self {
            Door::Webhook => Route::Webhook,
            Door::Api { .. } => Route::Idempotency,
        }
    }

    /// True when the origin's answer with `status` must be read with its headers: it goes back
    /// to the caller (the API door), or it may name a time to come back (`Retry-After` on a 429
    /// or 503, see [`crate::origin::retry_after_at`]). A webhook's 2xx needs only its status,
    /// so the healthy path reads no header.
    pub fn reads_answer_headers(self, status: u16) -> bool {
        matches!(self, Door::Api { .. }) || crate::origin::THROTTLING_STATUSES.contains(&status)
    }

    /// True when an answered `status` settles the claim as done.
    pub fn succeeded(self, status: u16) -> bool {
        match self {
            Door::Webhook => crate::origin::is_success(status),
            Door::Api { .. } => is_final(status),
        }
    }
}

/// True when an origin answer is final and is kept for replay: 2xx, and 4xx except 401 and 403
/// (refused before the request ran: credentials a retry may fix, as Stripe keeps no result for
/// a request that never began executing) and 408, 409, 425 and 429 (which say "try again").
/// Anything else releases the key for a retry.
pub fn is_final(status: u16) -> bool {
    (200..300).contains(&status)
        || ((400..500).contains(&status) && !matches!(status, 401 | 403 | 408 | 409 | 425 | 429))
}

/// Response headers kept with a cached answer and replayed (lower-case): the answer's own
/// description, and the CORS and browser-safety headers a browser client needs to read a
/// replay as it read the first answer. Everything else (`Set-Cookie` above all, hop-by-hop
/// headers, anything client-specific) is dropped.
pub const CACHED_HEADERS: &[&str] = &[
    "content-type",
    "content-language",
    "content-location",
    "location",
    "etag",
    "last-modified",
    "cache-control",
    "expires",
    "link",
    "vary",
    "request-id",
    "x-request-id",
    "access-control-allow-origin",
    "access-control-allow-credentials",
    "access-control-expose-headers",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-max-age",
    "content-security-policy",
    "content-security-policy-report-only",
    "x-content-type-options",
    "x-frame-options",
    "referrer-policy",
    "strict-transport-security",
    "cross-origin-resource-policy",
    "cross-origin-opener-policy",
    "cross-origin-embedder-policy",
    "permissions-policy",
];

/// The safe headers of a response, lower-cased, in order.
pub fn cached_headers(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| CACHED_HEADERS.contains(&name.to_ascii_lowercase().as_str()))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.clone()))
        .collect()
}

/// What was kept of an answer's body for replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyKept {
    /// The whole body, within the cache limit.
    Whole(Vec<u8>),
    /// Larger than the cache limit: not kept, but the first caller received it whole.
    TooLarge,
    /// Nobody received it whole and it is not kept (broke off, stalled, or a late answer too
    /// large to keep).
    Lost,
}

/// The answer to keep for a final origin response: its safe headers and what was kept of its
/// body.
pub fn to_cache(status: u16, headers: &[(String, String)], body: BodyKept) -> CachedResponse {
    let headers = cached_headers(headers);
    let (body, body_omitted, body_lost) = match body {
        BodyKept::Whole(bytes) => (bytes, false, false),
        BodyKept::TooLarge => (Vec::new(), true, false),
        BodyKept::Lost => (Vec::new(), false, true),
    };
    CachedResponse {
        status,
        headers,
        body,
        body_omitted,
        body_lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_doors_decide_success() {
        assert!(Door::Webhook.succeeded(200));
        assert!(!Door::Webhook.succeeded(404));
        let api = Door::Api { max_cached_body: 1 };
        assert!(
            api.succeeded(404),
            "a final client error is kept for replay"
        );
        assert!(!api.succeeded(503));
        assert!(!api.succeeded(429));
    }

    #[test]
    fn the_api_door_reads_every_answers_headers_and_a_webhook_only_a_throttling_ones() {
        let api = Door::Api { max_cached_body: 1 };
        for status in [200, 404, 500] {
            assert!(api.reads_answer_headers(status), "{status}");
            assert!(!Door::Webhook.reads_answer_headers(status), "{status}");
        }
        for status in [429, 503] {
            assert!(
                Door::Webhook.reads_answer_headers(status),
                "its Retry-After"
            );
        }
    }

    #[test]
    fn which_answers_are_final() {
        for status in [200, 201, 204, 299, 400, 402, 404, 410, 422, 499] {
            assert!(is_final(status), "{status}");
        }
        // 401 and 403: the request was refused before it ran (a stale token, a missing
        // permission); the client's retry with fixed credentials must run it.
        for status in [
            100, 301, 304, 401, 403, 408, 409, 425, 429, 500, 502, 503, 504,
        ] {
            assert!(!is_final(status), "{status}");
        }
    }

    #[test]
    fn only_safe_headers_are_cached_and_large_bodies_are_omitted() {
        let headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("Location".to_owned(), "/charges/1".to_owned()),
            ("Set-Cookie".to_owned(), "session=secret".to_owned()),
            ("X-Request-Id".to_owned(), "req_1".to_owned()),
            (
                "Date".to_owned(),
                "Mon, 30 Nov 2026 00:00:00 GMT".to_owned(),
            ),
        ];
        let cached = to_cache(201, &headers, BodyKept::Whole(b"{\"id\":1}".to_vec()));
        assert_eq!(
            cached.headers,
            vec![
                ("content-type".to_owned(), "application/json".to_owned()),
                ("location".to_owned(), "/charges/1".to_owned()),
                ("x-request-id".to_owned(), "req_1".to_owned()),
            ]
        );
        assert_eq!(
            (cached.status, cached.body_omitted, cached.body_lost),
            (201, false, false)
        );
        assert_eq!(cached.body, b"{\"id\":1}");
        let big = to_cache(200, &headers, BodyKept::TooLarge);
        assert!(big.body_omitted && !big.body_lost);
        assert!(big.body.is_empty());
        let lost = to_cache(200, &headers, BodyKept::Lost);
        assert!(lost.body_lost && !lost.body_omitted);
        assert!(lost.body.is_empty());
    }

    #[test]
    fn webhook_forwards_carry_the_event_and_attempt_headers() {
        let headers = attempt_headers(Provider::Github, "github:abc", 3, true);
        assert_eq!(
            headers,
            vec![
                (EVENT_ID_HEADER.to_owned(), "abc".to_owned()),
                (PROVIDER_HEADER.to_owned(), "github".to_owned()),
                (ATTEMPT_HEADER.to_owned(), "3".to_owned()),
                (TAKEOVER_HEADER.to_owned(), "true".to_owned()),
            ]
        );
    }
}
