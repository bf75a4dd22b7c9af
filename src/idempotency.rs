//! The Idempotency-Key front door's rules: the key, its scope, the request fingerprint, which
//! answers are cached, and the problem answers. Pure; the worker adapter supplies the facts.
//!
//! Follows draft-ietf-httpapi-idempotency-key-header and Stripe's API: a key is bound to one
//! request (same key, other request → 422), a repeat while the first runs → 409, a repeat
//! after it finished → the first answer replayed, errors as `application/problem+json`.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::answer::{
    retry_after_seconds, BodyError, HttpAnswer, StoreFailure, STORE_RETRY_AFTER_SECONDS,
};
use crate::claim::{CachedResponse, ClaimOutcome, Millis};
use crate::claim_authority::{is_final, AuthorityReply, Delivery, Head};
use crate::config::{self, ApiConfig, ConfigProblem};
use crate::log_line::{LogLine, Outcome};
use crate::origin::OriginOutcome;

pub mod door;
mod forwarding;
mod path;

pub use forwarding::{is_client_address_header, origin_request_headers, FORWARDED_HEADERS};
pub use path::{check_path, MAX_DECODINGS};

/// The request header carrying the key.
pub const KEY_HEADER: &str = "idempotency-key";
/// The header marking a replayed answer.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// The header marking a replay whose body was too large to keep (the first caller got it).
pub const BODY_OMITTED_HEADER: &str = "idempotent-body-omitted";
/// The header marking a replay whose body nobody received (it broke off, stalled, or came in a
/// late answer too large to keep): only the status and headers are known.
pub const BODY_LOST_HEADER: &str = "idempotent-body-lost";
/// Longest key accepted (Stripe's limit).
pub const MAX_KEY_LEN: usize = 255;
/// Prefix of every problem `type`.
pub const PROBLEM_TYPE_PREFIX: &str = "urn:webhook-dedup:problem:";
/// Why an `Idempotency-Key` header was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// Empty (or an empty quoted string).
    Empty,
    /// Longer than [`MAX_KEY_LEN`] characters.
    TooLong,
    /// A character outside printable ASCII (tabs and control characters included).
    InvalidCharacter,
    /// Starts with `"` but is not a valid structured-field string.
    BadQuoting,
}

/// Reads an `Idempotency-Key` value: 1 to 255 printable ASCII characters, given bare or as a
/// structured-field string (`"..."`, with `\"` and `\\` escapes), which is unquoted.
pub fn parse_key(raw: &str) -> Result<String, KeyError> {
    let key = match raw.strip_prefix('"') {
        Some(quoted) => unquote(quoted)?,
        None => raw.to_owned(),
    };
    if key.is_empty() {
        return Err(KeyError::Empty);
    }
    if !key.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err(KeyError::InvalidCharacter);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(KeyError::TooLong);
    }
    Ok(key)
}

fn unquote(rest: &str) -> Result<String, KeyError> {
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('"' | '\\')) => out.push(escaped),
                _ => return Err(KeyError::BadQuoting),
            },
            '"' => {
                return if chars.next().is_none() {
                    Ok(out)
                } else {
                    Err(KeyError::BadQuoting)
                }
            }
            c if (' '..='~').contains(&c) => out.push(c),
            _ => return Err(KeyError::InvalidCharacter),
        }
    }
    Err(KeyError::BadQuoting)
}

fn hash_fields(fields: &[&[u8]]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for field in fields {
        hash.update((field.len() as u64).to_be_bytes());
        hash.update(field);
    }
    hash.finalize().into()
}

/// The client identity a header value gives: `None` for a missing, empty or blank value, so a
/// bare `Authorization:` is no identity at all (it would otherwise let every such client share
/// one scope).
pub fn client_identity(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.trim().is_empty())
}

/// How the API door's answers are kept from scripting the operator page, which shares their
/// origin unless it has a host of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confinement {
    /// Every answer carries [`SANDBOX_POLICY`]: a page the API serves runs in an opaque origin
    /// (no scripts, no storage, no same-origin requests), so it cannot read the operator
    /// page's `sessionStorage` or drive a window of it. JSON clients never notice.
    Sandboxed,
    /// Answers pass as the origin gave them: the operator page is confined to a host of its
    /// own (`ADMIN_PAGE_HOST`) and the request came on another.
    AsIs,
}

/// The policy every confined answer carries (besides any policy of the origin's own, which
/// still applies: a browser enforces each policy given).
pub const SANDBOX_POLICY: &str = "sandbox";

/// The confinement of the door's answers to a request on `host`, given `page_host`, the one
/// host the operator page is served on (`ADMIN_PAGE_HOST`): sandboxed unless the page has a
/// host of its own and this is another one.
pub fn confinement(page_host: Option<&str>, host: Option<&str>) -> Confinement {
    match page_host {
        Some(page) if host.is_some_and(|host| !host.eq_ignore_ascii_case(page)) => {
            Confinement::AsIs
        }
        _ => Confinement::Sandboxed,
    }
}

impl Confinement {
    /// `headers` with [`SANDBOX_POLICY`] added when sandboxed.
    pub fn apply(self, mut headers: Vec<(String, String)>) -> Vec<(String, String)> {
        if self == Confinement::Sandboxed {
            headers.push(("content-security-policy".into(), SANDBOX_POLICY.into()));
        }
        headers
    }
}

/// The rate limiter's keys of a keyed request: its client (hashed) and its address
/// (`CF-Connecting-IP`), both of which must be within the limit, so a client that makes up a
/// new identity per request is still bounded by its address.
pub fn rate_limit_keys(client: Option<&str>, address: Option<&str>) -> [String; 2] {
    [
        rate_limit_client_key(client),
        rate_limit_address_key(address),
    ]
}

/// The key under which a client's requests are rate-limited: a hash of its identity (never the
/// identity itself), or `anonymous`.
pub fn rate_limit_client_key(client: Option<&str>) -> String {
    match client {
        Some(value) => format!(
            "client:{}",
            hex::encode(&hash_fields(&[b"rate limit", value.as_bytes()])[..16])
        ),
        None => "client:anonymous".to_owned(),
    }
}

/// The key under which a caller's address is rate-limited (`CF-Connecting-IP`): an IPv4
/// address as it is, an IPv6 address by its /64 network (one subscriber's usual allocation,
/// so rotating through it does not escape the limit), anything else as given.
pub fn rate_limit_address_key(address: Option<&str>) -> String {
    let Some(address) = address else {
        return "ip:unknown".to_owned();
    };
    match address.trim().parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let [a, b, c, d, ..] = v6.segments();
            format!("ip:{a:x}:{b:x}:{c:x}:{d:x}::/64")
        }
        Ok(std::net::IpAddr::V6(v6)) => format!("ip:{}", v6.to_canonical()),
        Ok(ip) => format!("ip:{ip}"),
        Err(_) => format!("ip:{address}"),
    }
}

/// Seconds a rate-limited client is asked to wait: the longest period the runtime's rate
/// limiter supports (the configured period is not visible to the worker).
pub const RATE_LIMITED_RETRY_AFTER_SECONDS: u64 = 60;

/// The claim authority name for `key` sent by the client identified by `client` (the value of
/// the client header, `None` when absent): a hash of both, so two clients' keys never meet in
/// one record and no client can read another's cached answer.
pub fn scope(client: Option<&str>, key: &str) -> String {
    let client_hash = match client {
        Some(value) => hash_fields(&[b"client", value.as_bytes()]),
        None => hash_fields(&[b"anonymous"]),
    };
    format!(
        "idem_{}",
        hex::encode(hash_fields(&[
            b"webhook-dedup scope 1",
            &client_hash,
            key.as_bytes()
        ]))
    )
}

/// The fingerprint of a request: SHA-256 over method, path with query, content type and body,
/// each length-prefixed so no two different requests share one.
pub fn fingerprint(
    method: &str,
    path_and_query: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> String {
    let content_type = content_type.unwrap_or("");
    hex::encode(hash_fields(&[
        method.as_bytes(),
        path_and_query.as_bytes(),
        content_type.as_bytes(),
        body,
    ]))
}

/// An `application/problem+json` answer (RFC 9457).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// HTTP status.
    pub status: u16,
    /// The stable last part of the `type` URI, also the log word.
    pub slug: &'static str,
    /// A short, fixed summary of the problem type.
    pub title: &'static str,
    /// What happened in this case.
    pub detail: String,
    /// `Retry-After` seconds, when the client should come back later.
    pub retry_after: Option<u64>,
    /// What the log line says beside the answer (a runtime error's text); never sent.
    pub note: Option<String>,
}

impl From<BodyError> for Problem {
    fn from(error: BodyError) -> Problem {
        match error {
            BodyError::TooLarge { limit } => Problem::body_too_large(limit),
            BodyError::Unreadable => Problem::body_unreadable(),
            BodyError::TimedOut { ms } => Problem::body_timeout(ms),
        }
    }
}

impl Problem {
    /// A problem with no `Retry-After`.
    pub fn new(
        status: u16,
        slug: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        Problem {
            status,
            slug,
            title,
            detail: detail.into(),
            retry_after: None,
            note: None,
        }
    }

    /// The problem for a failure of the runtime itself (500): a fixed detail for the client,
    /// and `cause` (the runtime error's text, which can quote URLs, headers or values) only
    /// for the log line.
    pub fn internal(cause: impl Into<String>) -> Problem {
        Problem {
            note: Some(cause.into()),
            ..Problem::new(
                500,
                "internal-error",
                "Internal error",
                "an internal error; the service's log says more",
            )
        }
    }

    /// The problem as an HTTP answer: `application/problem+json`, with `Retry-After` when set,
    /// sandboxed as every answer of the door is by default (see [`Confinement`]).
    pub fn http(&self) -> HttpAnswer {
        HttpAnswer::typed(self.status, "application/problem+json", &self.body())
            .with_hints(self.retry_after, None)
            .with("content-security-policy", SANDBOX_POLICY)
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        json!({
            "type": format!("{PROBLEM_TYPE_PREFIX}{}", self.slug),
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        })
    }

    /// The problem for a refused key.
    pub fn invalid_key(error: KeyError) -> Problem {
        let detail = match error {
            KeyError::Empty => "the Idempotency-Key is empty",
            KeyError::TooLong => "the Idempotency-Key is longer than 255 characters",
            KeyError::InvalidCharacter => {
                "the Idempotency-Key has a character outside printable ASCII"
            }
            KeyError::BadQuoting => "the Idempotency-Key is not a valid quoted string",
        };
        Problem::new(
            400,
            "idempotency-key-invalid",
            "Invalid Idempotency-Key",
            detail,
        )
    }

    /// The problem for a keyed request without the header that identifies its client.
    pub fn anonymous(header: &str) -> Problem {
        Problem::new(
            400,
            "client-identity-missing",
            "Client identity required",
            format!(
                "a request with an Idempotency-Key must carry the {header} header, which scopes the key to its client"
            ),
        )
    }

    /// The problem for a keyed request over the rate limit (429 + Retry-After).
    pub fn rate_limited() -> Problem {
        Problem {
            retry_after: Some(RATE_LIMITED_RETRY_AFTER_SECONDS),
            ..Problem::new(
                429,
                "rate-limited",
                "Too many requests",
                "too many keyed requests from this client or address; retry later",
            )
        }
    }

    /// The problem while the configuration is invalid (500, naming the keys, never values);
    /// the log line says what is wrong with each.
    pub fn misconfigured(problems: &[ConfigProblem]) -> Problem {
        let detail = format!(
            "the service is not configured: {}; see /healthz",
            config::keys(problems)
        );
        Problem {
            note: Some(config::describe(problems)),
            ..Problem::new(500, "misconfigured", "Not configured", detail)
        }
    }

    /// The problem for every `/api/` request while the door is off (no `API_ORIGIN_URL`).
    pub fn door_off() -> Problem {
        Problem::new(
            404,
            "not-found",
            "Not found",
            "the Idempotency-Key front door is off (no API_ORIGIN_URL)",
        )
    }

    /// The problem for a body over `limit` bytes.
    pub fn body_too_large(limit: u64) -> Problem {
        Problem::new(
            413,
            "body-too-large",
            "Request body too large",
            format!("the body is larger than {limit} bytes"),
        )
    }

    /// The problem for a body that could not be read to its end.
    pub fn body_unreadable() -> Problem {
        Problem::new(
            400,
            "body-unreadable",
            "Request body unreadable",
            "the body could not be read to its end",
        )
    }

    /// The problem for a body that did not arrive in full within `ms` milliseconds (408).
    pub fn body_timeout(ms: u64) -> Problem {
        Problem::new(
            408,
            "body-timeout",
            "Request body too slow",
            format!("the whole body did not arrive within {ms} ms"),
        )
    }

    /// Writes this problem on `line`: its slug as the outcome, and its note, if any, as the
    /// detail.
    pub fn log_on(&self, line: &mut LogLine) {
        line.outcome = Outcome::Refused(self.slug);
        if self.note.is_some() {
            line.detail.clone_from(&self.note);
        }
    }

    /// The problem for a missing key where one is required.
    pub fn missing_key() -> Problem {
        Problem::new(
            400,
            "idempotency-key-missing",
            "Idempotency-Key required",
            "this endpoint requires an Idempotency-Key header on POST, PUT, PATCH and DELETE",
        )
    }
}

/// How a request under `/api/` is handled, decided before any I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Sent to the origin untouched (a safe method, or no key where none is required).
    PassThrough,
    /// Run through the claim authority under this key (already validated).
    Keyed(String),
}

/// Where an `/api/...` request goes, decided before any I/O.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiRoute {
    /// Run through the claim authority under its key.
    Keyed(Keyed),
    /// Sent to the origin at `target` untouched (a safe method, or no key where none is
    /// required).
    PassThrough {
        /// The origin URL it goes to.
        target: String,
    },
}

/// A keyed request: its key (already validated), path and query, and the URL it goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keyed {
    /// The key.
    pub key: String,
    /// The request's path and query, as the fingerprint covers them.
    pub path_and_query: String,
    /// The origin URL it goes to.
    pub target: String,
}

/// Where a `method` request for `path` and `query` with the `Idempotency-Key` value `raw_key`
/// goes under `api`'s terms (see [`check_path`] and [`handling`]).
pub fn route(
    api: &ApiConfig,
    method: &str,
    (path, query): (&str, Option<&str>),
    raw_key: Option<&str>,
) -> Result<ApiRoute, Problem> {
    check_path(path)?;
    let path_and_query = match query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let target = api.target(&path_and_query);
    Ok(match handling(method, raw_key, api.key_required)? {
        Handling::Keyed(key) => ApiRoute::Keyed(Keyed {
            key,
            path_and_query,
            target,
        }),
        Handling::PassThrough => ApiRoute::PassThrough { target },
    })
}

/// True for the methods that go through the claim authority when they carry a key.
pub fn is_keyed_method(method: &str) -> bool {
    matches!(method, "POST" | "PUT" | "PATCH" | "DELETE")
}

/// Decides how a request with `method` and the `Idempotency-Key` value `raw_key` is handled:
/// keyed methods with a valid key are claimed; without a key they pass through, or are refused
/// when `key_required`; an invalid key is refused; other methods pass through.
pub fn handling(
    method: &str,
    raw_key: Option<&str>,
    key_required: bool,
) -> Result<Handling, Problem> {
    match (is_keyed_method(method), raw_key) {
        (true, Some(raw)) => parse_key(raw)
            .map(Handling::Keyed)
            .map_err(Problem::invalid_key),
        (true, None) if key_required => Err(Problem::missing_key()),
        _ => Ok(Handling::PassThrough),
    }
}

/// The log's outcome for an origin answer passed on: `executed` when it is final (kept for
/// replay), else `origin_failed`.
pub fn live_outcome(status: u16) -> Outcome {
    if is_final(status) {
        Outcome::Executed
    } else {
        Outcome::OriginFailed
    }
}

/// What to answer a keyed request, from the claim authority's reply.
#[derive(Clone, Debug, PartialEq)]
pub enum ApiAnswer {
    /// The origin's answer, passed on: its status and headers, the body streaming beside.
    Live(Head),
    /// Replay this stored answer, with the replay marker; the origin was not called.
    Replay(CachedResponse),
    /// Answer with this problem.
    Refuse(Problem),
}

/// How soon a client whose key is in flight should come back: while the holder still waits for
/// the origin's answer (its wait ends before its lease), that answer can arrive at any moment,
/// so in [`IN_FLIGHT_POLL_MS`]; once the claim is only held until its lease ends (an answer that
/// cannot be learned any more), when the lease ends. In seconds, at least 1.
fn in_flight_retry_after(retry_at: Millis, lease_expires_at: Millis, now: Millis) -> u64 {
    let until = if retry_at < lease_expires_at {
        retry_at.min(now.saturating_add(IN_FLIGHT_POLL_MS))
    } else {
        lease_expires_at
    };
    retry_after_seconds(until, now)
}

/// The `Retry-After` of a repeat that meets a request whose answer is still awaited.
const IN_FLIGHT_POLL_MS: Millis = 1_000;

/// Decides from the reply to a keyed delivery, at `now`: the origin's live answer, a replay, in
/// flight (409 + Retry-After), reused key (422), no answer from the origin (504 on time-out,
/// the key held while a late answer is awaited; 502 when unreachable), or a store failure
/// (503 + Retry-After when retryable, else 500).
pub fn after_delivery(reply: &AuthorityReply, now: Millis) -> ApiAnswer {
    let report = match reply {
        AuthorityReply::Delivery(Delivery::Forwarded(report)) => report,
        AuthorityReply::Delivery(Delivery::Declined(declined)) => {
            return match declined {
                ClaimOutcome::DuplicateProcessed {
                    response: Some(response),
                    ..
                } => ApiAnswer::Replay(response.clone()),
                ClaimOutcome::DuplicateInflight {
                    retry_at,
                    lease_expires_at,
                } => ApiAnswer::Refuse(Problem {
                    retry_after: Some(in_flight_retry_after(*retry_at, *lease_expires_at, now)),
                    ..Problem::new(
                        409,
                        "request-in-flight",
                        "Request in progress",
                        "a request with this Idempotency-Key is still being processed; retry later",
                    )
                }),
                ClaimOutcome::FingerprintMismatch => ApiAnswer::Refuse(Problem::new(
                    422,
                    "idempotency-key-reused",
                    "Idempotency-Key reused",
                    "this Idempotency-Key was used with a different request (method, path, query, content type or body)",
                )),
                _ => ApiAnswer::Refuse(Problem::new(
                    500,
                    "store-failed",
                    "Idempotency store failure",
                    "the request finished but its answer was not stored",
                )),
            }
        }
        other => return ApiAnswer::Refuse(store_problem(StoreFailure::of(other))),
    };
    if let Some(head) = &report.head {
        return ApiAnswer::Live(head.clone());
    }
    ApiAnswer::Refuse(origin_problem(&report.outcome))
}

/// `status` when a response can carry it (200 to 599, what the runtime's `Response` accepts);
/// `None` for anything else, which is answered with [`invalid_status_problem`] instead.
pub fn passable_status(status: u16) -> Option<u16> {
    (200..=599).contains(&status).then_some(status)
}

/// True for the statuses whose response has no body by definition (204, 205 and 304; RFC 9110
/// sections 15.3.5, 15.3.6 and 15.4.5): they are passed on and replayed with no body at all,
/// since the runtime refuses a body stream for them.
pub fn has_no_body(status: u16) -> bool {
    matches!(status, 204 | 205 | 304)
}

/// A stored answer replayed: the same status, kept headers and body, plus the replay marker
/// (and a marker when its body was not kept, or lost), confined by `confinement`; a status
/// with no body by definition (204, 205, 304) is replayed without one. A status no response
/// can carry is a 502 problem.
pub fn replay(cached: &CachedResponse, confinement: Confinement) -> Result<HttpAnswer, Problem> {
    let status =
        passable_status(cached.status).ok_or_else(|| invalid_status_problem(cached.status))?;
    let mut headers = confinement.apply(cached.headers.clone());
    headers.push((REPLAYED_HEADER.into(), "true".into()));
    if cached.body_omitted {
        headers.push((BODY_OMITTED_HEADER.into(), "true".into()));
    }
    if cached.body_lost {
        headers.push((BODY_LOST_HEADER.into(), "true".into()));
    }
    Ok(HttpAnswer {
        status,
        headers,
        body: (!has_no_body(status)).then(|| cached.body.clone()),
    })
}

/// The status and headers with which an origin's live answer is passed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveHead {
    /// The status.
    pub status: u16,
    /// The headers, `content-encoding` left out (the runtime already decoded the body).
    pub headers: Vec<(String, String)>,
    /// True when the status has no body by definition: the body stream is cancelled.
    pub drop_body: bool,
}

/// How the origin's answer `head` is passed on as it streams, confined by `confinement`; a
/// status no response can carry is a 502 problem.
pub fn live_head(head: &Head, confinement: Confinement) -> Result<LiveHead, Problem> {
    let status = passable_status(head.status).ok_or_else(|| invalid_status_problem(head.status))?;
    let headers = head
        .headers
        .iter()
        .filter(|(name, _)| name != "content-encoding")
        .cloned()
        .collect();
    Ok(LiveHead {
        status,
        headers: confinement.apply(headers),
        drop_body: has_no_body(status),
    })
}

/// The problem for an origin answer whose status cannot be passed on (502).
pub fn invalid_status_problem(status: u16) -> Problem {
    Problem::new(
        502,
        "origin-answer-invalid",
        "Origin answer invalid",
        format!("the API origin answered status {status}, which cannot be passed on"),
    )
}

/// The problem for a forward that brought no answer: 504 on time-out, 502 otherwise.
pub fn origin_problem(outcome: &OriginOutcome) -> Problem {
    match outcome {
        OriginOutcome::TimedOut => Problem::new(
            504,
            "origin-timeout",
            "Origin timed out",
            "the API origin did not answer in time; retry with the same key to get its answer",
        ),
        _ => Problem::new(
            502,
            "origin-unreachable",
            "Origin unreachable",
            "the API origin could not be reached; the request may be retried with the same key",
        ),
    }
}

/// The problem for a store failure (503 + Retry-After when retryable, else 500).
pub fn store_problem(failure: StoreFailure) -> Problem {
    match failure {
        StoreFailure::Unavailable => Problem {
            retry_after: Some(STORE_RETRY_AFTER_SECONDS),
            ..Problem::new(
                503,
                "store-unavailable",
                "Idempotency store unavailable",
                "the idempotency store is busy or unavailable; retry later",
            )
        },
        StoreFailure::Failed => Problem::new(
            500,
            "store-failed",
            "Idempotency store failure",
            "the idempotency store failed",
        ),
    }
}

#[cfg(test)]
mod tests;
