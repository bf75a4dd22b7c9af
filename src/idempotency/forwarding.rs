//! Which of a client's request headers reach the API origin: an allow-list, so a header the
//! client sends to pose as another address, host, URL or scheme (`X-Forwarded-Host`,
//! `X-Original-URL`, `X-Rewrite-URL`, `X-Host`, `Fastly-Client-IP`, `X-Originating-IP`, and
//! whatever the next proxy or framework reads) never does unless the operator names it.

pub use crate::origin::is_client_address_header;

/// The request headers passed to the API origin as the client sent them: the request's own
/// description (content, conditions, ranges, preferences), credentials and CORS, and the
/// tracing headers. `API_FORWARD_HEADERS` adds others by name; the client header
/// (`IDEMPOTENCY_CLIENT_HEADER`) is always passed.
pub const FORWARDED_HEADERS: &[&str] = &[
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "access-control-request-headers",
    "access-control-request-method",
    "authorization",
    "baggage",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "content-type",
    "cookie",
    "dnt",
    "idempotency-key",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "origin",
    "pragma",
    "prefer",
    "range",
    "referer",
    "traceparent",
    "tracestate",
    "user-agent",
    "x-api-key",
    "x-correlation-id",
    "x-csrf-token",
    "x-request-id",
    "x-requested-with",
];

/// The client's request headers (lower-case names, as the runtime gives them) as they go to the
/// API origin: only those in [`FORWARDED_HEADERS`] or `extra` (the client header and
/// `API_FORWARD_HEADERS`), never a hop-by-hop one ([`crate::origin::HOP_BY_HOP`], and any a
/// `Connection` header names), and then `X-Real-IP` and `X-Forwarded-For` set to the caller's
/// address as Cloudflare saw it (`CF-Connecting-IP`), never to a value the client sent:
/// Cloudflare derives the origin's `CF-Connecting-IP` from `X-Real-IP` for a Worker's requests
/// to its own zone, and origins trust `X-Forwarded-For` for allow-lists and limits.
pub fn origin_request_headers(
    entries: impl IntoIterator<Item = (String, String)>,
    extra: &[String],
) -> Vec<(String, String)> {
    let entries: Vec<(String, String)> = entries.into_iter().collect();
    let named_by_connection: Vec<String> = entries
        .iter()
        .filter(|(name, _)| name == "connection")
        .flat_map(|(_, value)| value.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let caller = entries
        .iter()
        .find(|(name, _)| name == "cf-connecting-ip")
        .map(|(_, value)| value.clone());
    let allowed = |name: &str| {
        (FORWARDED_HEADERS.contains(&name) || extra.iter().any(|extra| extra == name))
            && !crate::origin::is_hop_by_hop(name)
            && !named_by_connection.iter().any(|named| named == name)
            && !crate::origin::is_client_address_header(name)
    };
    let mut headers: Vec<(String, String)> = entries
        .into_iter()
        .filter(|(name, _)| allowed(name))
        .collect();
    if let Some(caller) = caller {
        headers.push(("x-real-ip".to_owned(), caller.clone()));
        headers.push(("x-forwarded-for".to_owned(), caller));
    }
    headers
}
