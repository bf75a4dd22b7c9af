//! The Idempotency-Key front door's settings.

use super::keys::{
    API_FORWARD_HEADERS, API_ORIGIN_URL, IDEMPOTENCY_ALLOW_ANONYMOUS, IDEMPOTENCY_CLIENT_HEADER,
    IDEMPOTENCY_KEY_REQUIRED, IDEMPOTENCY_MAX_RESPONSE_BYTES, IDEMPOTENCY_RETENTION_HOURS,
    LEASE_SECONDS,
};
use super::reader::Reader;
use super::{hours_to_ms, DeliveryConfig};
use crate::claim::ClaimPolicy;

/// Default retention of an Idempotency-Key record: Stripe's API keeps keys at least 24 h.
pub const DEFAULT_IDEMPOTENCY_RETENTION_HOURS: f64 = 24.0;
/// Default largest response body cached for replay.
pub const DEFAULT_IDEMPOTENCY_MAX_RESPONSE_BYTES: u64 = 256 * 1024;
/// Default header whose value identifies an API client (hashed into the key's scope).
pub const DEFAULT_IDEMPOTENCY_CLIENT_HEADER: &str = "authorization";
/// Largest cached response body: it is stored base64-encoded in one Durable Object row (2 MB
/// at most).
const MAX_CACHED_RESPONSE_BYTES: u64 = 1024 * 1024;

/// Settings of the Idempotency-Key front door.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// Where `/api/...` requests go, path and query appended (`API_ORIGIN_URL`).
    pub origin_url: url::Url,
    /// Lease (`LEASE_SECONDS`) and retention (`IDEMPOTENCY_RETENTION_HOURS`) of key records.
    pub claims: ClaimPolicy,
    /// Refuse unsafe methods without a key (`IDEMPOTENCY_KEY_REQUIRED`).
    pub key_required: bool,
    /// Largest response body cached for replay (`IDEMPOTENCY_MAX_RESPONSE_BYTES`).
    pub max_response_bytes: u64,
    /// Lower-case name of the header identifying the client (`IDEMPOTENCY_CLIENT_HEADER`).
    pub client_header: String,
    /// Let keyed requests without the client header share one anonymous scope
    /// (`IDEMPOTENCY_ALLOW_ANONYMOUS`); otherwise they are refused.
    pub allow_anonymous: bool,
    /// Request headers passed to the origin besides
    /// [`crate::idempotency::FORWARDED_HEADERS`]: the client header and `API_FORWARD_HEADERS`,
    /// lower case.
    pub forward_headers: Vec<String>,
}

impl ApiConfig {
    /// Reads the API keys; `None` (the door is off) without `API_ORIGIN_URL`, or when it is
    /// invalid (the problem is recorded).
    pub fn load<F: Fn(&str) -> Option<String>>(
        r: &mut Reader<F>,
        delivery: &DeliveryConfig,
    ) -> Option<ApiConfig> {
        r.raw(API_ORIGIN_URL)?;
        // Each request's path and query are appended to it: a query or fragment of its own
        // would swallow them.
        let origin_url = r.url(API_ORIGIN_URL).filter(|url| {
            let plain = url.query().is_none() && url.fragment().is_none();
            if !plain {
                r.problem(
                    API_ORIGIN_URL,
                    "has a query or fragment: each request's path and query are appended to it",
                );
            }
            plain
        });
        let retention_hours = r.hours(
            IDEMPOTENCY_RETENTION_HOURS,
            DEFAULT_IDEMPOTENCY_RETENTION_HOURS,
        );
        let retention_ms = hours_to_ms(retention_hours);
        if retention_ms <= delivery.lease_ms {
            r.problem(
                IDEMPOTENCY_RETENTION_HOURS,
                format!("must be longer than the lease ({LEASE_SECONDS})"),
            );
        }
        let key_required = r.flag(IDEMPOTENCY_KEY_REQUIRED);
        let max_response_bytes = r.integer(
            IDEMPOTENCY_MAX_RESPONSE_BYTES,
            DEFAULT_IDEMPOTENCY_MAX_RESPONSE_BYTES,
            0,
            MAX_CACHED_RESPONSE_BYTES,
        );
        let client_header = r
            .raw(IDEMPOTENCY_CLIENT_HEADER)
            .unwrap_or_else(|| DEFAULT_IDEMPOTENCY_CLIENT_HEADER.to_owned())
            .to_ascii_lowercase();
        if !is_header_name(&client_header) {
            r.problem(IDEMPOTENCY_CLIENT_HEADER, "not a header name");
        }
        let allow_anonymous = r.flag(IDEMPOTENCY_ALLOW_ANONYMOUS);
        let forward_headers = forward_headers(r, &client_header);
        Some(ApiConfig {
            origin_url: origin_url?,
            claims: delivery.claims(retention_ms),
            key_required,
            max_response_bytes,
            client_header,
            allow_anonymous,
            forward_headers,
        })
    }

    /// The URL a request for `path_and_query` goes to: the origin's, with the path appended.
    pub fn target(&self, path_and_query: &str) -> String {
        format!(
            "{}{path_and_query}",
            self.origin_url.as_str().trim_end_matches('/')
        )
    }
}

/// True for an HTTP header name (a token of RFC 9110).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The request headers passed to the API origin besides the door's own list: the client
/// header, and the names `API_FORWARD_HEADERS` lists (comma-separated), lower case. A name that
/// is not a header name, is hop-by-hop, or claims the caller's address, host, URL or scheme is
/// a problem.
fn forward_headers<F: Fn(&str) -> Option<String>>(
    r: &mut Reader<F>,
    client_header: &str,
) -> Vec<String> {
    let mut names = vec![client_header.to_owned()];
    let listed = r.raw(API_FORWARD_HEADERS).unwrap_or_default();
    for name in listed.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let name = name.to_ascii_lowercase();
        if !is_header_name(&name) {
            r.problem(
                API_FORWARD_HEADERS,
                "holds a name that is not a header name",
            );
        } else if crate::origin::is_client_address_header(&name)
            || crate::origin::is_hop_by_hop(&name)
        {
            r.problem(
                API_FORWARD_HEADERS,
                "names a hop-by-hop header, or one that claims the caller's address, host, URL \
                 or scheme, which the door never passes on",
            );
        } else {
            names.push(name);
        }
    }
    names
}
