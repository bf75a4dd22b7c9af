//! The admin API's rules: who may call it, which routes exist, how records are shown, and one
//! answer table from what the claim authority said to what the operator is told. Pure;
//! [`door`] runs a request's sequence over the runtime.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::answer::{HttpAnswer, StoreFailure};
use crate::claim::{
    ClaimPolicy, ClaimRecord, ClaimState, Fence, ForgetOutcome, Millis, RedeliverOutcome,
    ReleaseOutcome,
};
use crate::claim_authority::{AuthorityReply, AuthorityRequest};
use crate::log_line::{AdminWord, Outcome};
use crate::origin::Reason;
use crate::providers::stripe::envelope::is_event_id;
use crate::providers::{is_header_id, Provider};

pub mod dead_letters;
pub mod door;
pub mod origins;
pub mod page;
pub mod reconcile;
mod route;

pub use route::{route, AdminRoute, RecordCall};

/// True when `authorization` is `Bearer <token>` with the configured token (the scheme's name
/// in any case, as HTTP reads it). Compares SHA-256 digests in constant time, so neither the
/// token's content nor its length leaks by timing.
pub fn authorized(authorization: Option<&str>, token: &str) -> bool {
    let Some(given) = authorization
        .and_then(|h| h.split_once(' '))
        .and_then(|(scheme, given)| scheme.eq_ignore_ascii_case("bearer").then_some(given))
    else {
        return false;
    };
    let given: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
    let expected: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    crate::mac::digests_equal(&given, &expected)
}

/// Why a request to an admin route or a test route is refused at the gate: for the log line
/// only, since every such request gets one answer ([`AdminAnswer::unauthorized`]) whatever the
/// configuration, so that a caller without the token learns nothing about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locked {
    /// No usable `ADMIN_TOKEN` (unset, or too short): the admin API and the test routes are off.
    Off,
    /// A token is configured, and the request did not present it.
    WrongToken,
}

impl Locked {
    /// What the log line says.
    pub fn log_detail(self) -> &'static str {
        match self {
            Locked::Off => "no usable ADMIN_TOKEN: the admin API and the test routes are off",
            Locked::WrongToken => "a missing or wrong admin bearer token",
        }
    }
}

/// The gate in front of every admin route (the operator page's assets aside) and every test
/// route, before any other check: `Ok` when `authorization` presents `token`, the usable
/// `ADMIN_TOKEN` (read even while other keys have problems); else why not. Whether the admin
/// API is on, the test routes are on, or the configuration is valid is told only past it.
pub fn gate(token: Option<&str>, authorization: Option<&str>) -> Result<(), Locked> {
    match token {
        None => Err(Locked::Off),
        Some(token) if authorized(authorization, token) => Ok(()),
        Some(_) => Err(Locked::WrongToken),
    }
}

/// The `detail` of the one answer to a request without a valid token.
pub const UNAUTHORIZED_DETAIL: &str = "a valid admin bearer token is required";

/// Which records an admin route addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Stripe events, by event id (`/admin/events/{id}`).
    Events,
    /// One provider's deliveries, by the id the sender gave
    /// (`/admin/deliveries/{provider}/{id}`, the id percent-encoded where it holds `/`, `?`,
    /// `#` or `%`); `stripe` addresses the same records as `events`.
    Deliveries(Provider),
    /// Idempotency-Key records, by scope hash (`/admin/keys/{idem_…}`).
    Keys,
}

/// An admin action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `GET`: show the record.
    Inspect,
    /// `POST …/release`: release a stuck `processing` claim.
    Release,
    /// `DELETE`: forget a finished record so the key is processed again.
    Forget,
    /// `POST …/redeliver` (events): put a dead-lettered (or waiting) queued event back in the
    /// queue with a fresh attempt budget, due now.
    Redeliver,
}

/// An admin request, parsed: which record, and what to do with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminCall {
    /// Events, a provider's deliveries, or keys.
    pub family: Family,
    /// The record's key (event id, `{provider}:{id}`, or scope).
    pub key: String,
    /// What to do.
    pub action: Action,
}

/// Why an admin request is refused before its record is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No such route (404).
    NotFound,
    /// A known route with another method (405, with the allowed methods).
    MethodNotAllowed(&'static str),
    /// The id is not an event id or a scope hash (400).
    InvalidKey(Family),
}

/// True for `idem_` followed by 64 lower-case hex digits, the form of every scope.
pub fn is_scope(key: &str) -> bool {
    key.strip_prefix("idem_").is_some_and(|hash| {
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Parses `path` (after `/admin/`) with `method` into a call.
pub fn call(method: &str, path: &str) -> Result<AdminCall, CallError> {
    let (family, rest) = if let Some(rest) = path.strip_prefix("events/") {
        (Family::Events, rest)
    } else if let Some(rest) = path.strip_prefix("keys/") {
        (Family::Keys, rest)
    } else if let Some((name, rest)) = path
        .strip_prefix("deliveries/")
        .and_then(|rest| rest.split_once('/'))
    {
        let provider = Provider::from_name(name).ok_or(CallError::NotFound)?;
        (Family::Deliveries(provider), rest)
    } else {
        return Err(CallError::NotFound);
    };
    let (key, tail) = match rest.split_once('/') {
        Some((key, tail)) => (key, Some(tail)),
        None => (rest, None),
    };
    let (valid, key) = match family {
        Family::Events => (is_event_id(key), key.to_owned()),
        Family::Keys => (is_scope(key), key.to_owned()),
        Family::Deliveries(provider) => {
            let id = percent_encoding::percent_decode_str(key)
                .decode_utf8()
                .map(|id| id.into_owned())
                .unwrap_or_default();
            let valid = match provider {
                Provider::Stripe => is_event_id(&id),
                _ => is_header_id(&id),
            };
            (valid, provider.key(&id))
        }
    };
    let queued = family != Family::Keys;
    let action = match (tail, method) {
        (None, "GET") => Action::Inspect,
        (None, "DELETE") => Action::Forget,
        (None, _) => return Err(CallError::MethodNotAllowed("GET, DELETE")),
        (Some("release"), "POST") => Action::Release,
        (Some("release"), _) => return Err(CallError::MethodNotAllowed("POST")),
        (Some("redeliver"), "POST") if queued => Action::Redeliver,
        (Some("redeliver"), _) if queued => return Err(CallError::MethodNotAllowed("POST")),
        (Some(_), _) => return Err(CallError::NotFound),
    };
    if !valid {
        return Err(CallError::InvalidKey(family));
    }
    Ok(AdminCall {
        family,
        key,
        action,
    })
}

/// `ms` (milliseconds since the Unix epoch) as an RFC 3339 time in UTC with milliseconds,
/// `2026-12-02T10:15:30.123Z`, shown beside every `*_at` field as `*_at_time`; `None` past the
/// year 9999.
pub fn rfc3339(ms: Millis) -> Option<String> {
    crate::rfc3339::format(ms)
}

/// [`rfc3339`] of a time that may be unset.
fn rfc3339_opt(ms: Option<Millis>) -> Option<String> {
    ms.and_then(rfc3339)
}

/// A record as the admin API shows it: every field but the cached body (only its size), and
/// the fence's attempt but never its random part. Each `*_at` time (milliseconds since the Unix
/// epoch) has a `*_at_time` beside it, the same instant in RFC 3339.
pub fn record_view(record: &ClaimRecord) -> Value {
    let lease = &record.lease;
    let reason = record.last_failure.map(|reason| reason.to_string());
    json!({
        "key": record.key,
        "provider": record.source.provider(),
        "state": record.state(),
        "attempts": record.attempts,
        "first_seen_at": record.first_seen_at,
        "first_seen_at_time": rfc3339(record.first_seen_at),
        "claimed_at": lease.claimed_at,
        "claimed_at_time": rfc3339(lease.claimed_at),
        "lease_expires_at": lease.until,
        "lease_expires_at_time": rfc3339(lease.until),
        "takeover": lease.takeover,
        "finished_at": record.finished_at(),
        "finished_at_time": rfc3339_opt(record.finished_at()),
        "released_at": record.released_at(),
        "released_at_time": rfc3339_opt(record.released_at()),
        "expires_at": record.expires_at,
        "expires_at_time": rfc3339(record.expires_at),
        "last_release_reason": reason,
        "fingerprint": record.source.fingerprint(),
        "cached_response": record.response().map(|r| json!({
            "status": r.status,
            "body_bytes": r.body.len(),
            "body_omitted": r.body_omitted,
            "body_lost": r.body_lost,
        })),
        "wait_ends_at": lease.wait_ends_at,
        "wait_ends_at_time": rfc3339_opt(lease.wait_ends_at),
        "queue": record.queue().map(|q| json!({
            "accepted_at": q.accepted_at,
            "accepted_at_time": rfc3339(q.accepted_at),
            "next_attempt_at": record.next_attempt_at(),
            "next_attempt_at_time": rfc3339_opt(record.next_attempt_at()),
            "last_error": reason,
            "body_held": record.holds_body(),
            "attempts_in_budget": record.attempts.saturating_sub(q.budget.first_attempt),
            "budget_started_at": q.budget.started_at,
            "budget_started_at_time": rfc3339(q.budget.started_at),
            "dead_at": q.dead_at,
            "dead_at_time": rfc3339_opt(q.dead_at),
        })),
    })
}

/// What the admin API answers: a status, a JSON body, and the log's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct AdminAnswer {
    /// HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: Value,
    /// What happened, for the log line.
    pub outcome: Outcome,
    /// The allowed methods, for a 405.
    pub allow: Option<&'static str>,
}

impl AdminAnswer {
    /// The answer as HTTP: its JSON, `Allow` for a 405, `WWW-Authenticate: Bearer` for a 401;
    /// every one `Cache-Control: no-store` (records and counts stay out of every cache) and
    /// `X-Content-Type-Options: nosniff` (JSON is never read as a page or a script).
    pub fn http(&self) -> HttpAnswer {
        let answer = HttpAnswer::json(self.status, &self.body)
            .with_hints(None, self.allow)
            .with("cache-control", "no-store")
            .with("x-content-type-options", "nosniff");
        match self.status {
            401 => answer.with("www-authenticate", "Bearer"),
            _ => answer,
        }
    }

    fn new(status: u16, body: Value, outcome: Outcome) -> AdminAnswer {
        AdminAnswer {
            status,
            body,
            outcome,
            allow: None,
        }
    }

    /// A refusal whose log line names what the admin API did (`admin_…`).
    fn refused_as(status: u16, error: &'static str, detail: &str, word: AdminWord) -> Self {
        AdminAnswer::new(
            status,
            json!({ "error": error, "detail": detail }),
            Outcome::Admin(word),
        )
    }

    /// A refusal whose log line carries the error code itself.
    fn refused(status: u16, error: &'static str, detail: &str) -> Self {
        AdminAnswer::new(
            status,
            json!({ "error": error, "detail": detail }),
            Outcome::Refused(error),
        )
    }

    /// 401 for a request without a valid token, whatever the path and the configuration (see
    /// [`gate`]): it reveals neither routes, nor records, nor whether the admin API is on.
    pub fn unauthorized() -> AdminAnswer {
        AdminAnswer::refused(401, "unauthorized", UNAUTHORIZED_DETAIL)
    }

    /// 500 while the configuration is invalid (told only to a caller with the token).
    pub fn misconfigured() -> AdminAnswer {
        AdminAnswer::refused(500, "misconfigured", "see /healthz")
    }

    /// The answer to a path that is not a usable route.
    pub fn for_call_error(error: CallError) -> AdminAnswer {
        match error {
            CallError::NotFound => AdminAnswer::refused(404, "not_found", "no such admin route"),
            CallError::MethodNotAllowed(allow) => AdminAnswer {
                allow: Some(allow),
                ..AdminAnswer::refused(
                    405,
                    "method_not_allowed",
                    &format!("this route accepts {allow}"),
                )
            },
            CallError::InvalidKey(Family::Events) => {
                AdminAnswer::refused(400, "invalid_event_id", "not a Stripe event id")
            }
            CallError::InvalidKey(Family::Deliveries(_)) => AdminAnswer::refused(
                400,
                "invalid_delivery_id",
                "not a delivery id: 1 to 255 printable ASCII characters without spaces \
                 (percent-encoded in the path), or a Stripe event id under stripe",
            ),
            CallError::InvalidKey(Family::Keys) => AdminAnswer::refused(
                400,
                "invalid_scope",
                "not an idempotency scope (idem_ + 64 hex)",
            ),
        }
    }

    fn store_failed(failure: StoreFailure) -> AdminAnswer {
        let status = match failure {
            StoreFailure::Unavailable => 503,
            StoreFailure::Failed => 500,
        };
        AdminAnswer::refused_as(
            status,
            "store_failed",
            "the claim store failed",
            AdminWord::StoreFailed,
        )
    }

    fn not_found() -> AdminAnswer {
        AdminAnswer::refused_as(
            404,
            "not_found",
            "no record for this key",
            AdminWord::NotFound,
        )
    }
}

/// What to do after reading the record of an admin route's key.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    /// Answer this; nothing more to ask.
    Answer(AdminAnswer),
    /// Release the claim held with this fence, with the operator's reason.
    Release {
        /// The fence read, so a claim that changed meanwhile is left alone.
        fence: Fence,
        /// The reason kept in the record.
        reason: Reason,
        /// Without force: the object refuses it while the lease is live by its own clock
        /// (this check, made with the worker's clock, answers most such calls first).
        only_after_lease: bool,
    },
    /// Forget the record read with this fence.
    Forget {
        /// The fence read.
        fence: Fence,
    },
    /// Put the queued event back in the queue.
    Redeliver,
}

impl Next {
    /// The request that carries this step out on `key` with `policy`; the answer itself when
    /// there is nothing to ask.
    pub fn into_request(
        self,
        key: &str,
        policy: ClaimPolicy,
    ) -> Result<AuthorityRequest, AdminAnswer> {
        let key = key.to_owned();
        Ok(match self {
            Next::Answer(answer) => return Err(answer),
            Next::Release {
                fence,
                reason,
                only_after_lease,
            } => AuthorityRequest::Release {
                key,
                fence,
                reason,
                policy,
                only_after_lease,
            },
            Next::Forget { fence } => AuthorityRequest::Forget { key, fence },
            Next::Redeliver => AuthorityRequest::Redeliver {
                key,
                policy,
                dead_only: None,
            },
        })
    }
}

/// Decides from the record the claim authority holds for the route's key (a record past its
/// expiry already reads as absent), at `now`:
///
/// - inspect: 200 with the record's view; 404 without a record;
/// - release: 409 `not_processing` for a done or released record; 409 `queued_delivery` for
///   an attempt of queue mode (released, the event would never be delivered: the object takes
///   a dead attempt over itself when its lease ends, and `redeliver` serves a dead event);
///   409 `lease_live` while the claim's lease is live (its attempt may still run or await its
///   answer) unless `force`; else release with the fence read;
/// - forget: forget with the fence read (the claim authority refuses a processing record, and
///   a queue record whose last attempt's answer was lost, until that attempt's lease ends).
pub fn after_inspect(action: Action, reply: &AuthorityReply, now: Millis, force: bool) -> Next {
    let record = match reply {
        AuthorityReply::Record {
            record: Some(record),
        } => record,
        AuthorityReply::Record { record: None } => return Next::Answer(AdminAnswer::not_found()),
        other => return Next::Answer(AdminAnswer::store_failed(StoreFailure::of(other))),
    };
    match action {
        Action::Inspect => Next::Answer(AdminAnswer::new(
            200,
            json!({ "record": record_view(record) }),
            Outcome::Admin(AdminWord::Inspected),
        )),
        Action::Release => release_after_inspect(record, now, force),
        Action::Forget => Next::Forget {
            fence: record.fence().clone(),
        },
        Action::Redeliver if !record.holds_body() => {
            Next::Answer(AdminAnswer::refused_as(
                404,
                "no_body",
                "no stored body to redeliver (a delivered event, or one not stored by queue mode): resend it from the sender's dashboard after DELETE",
                AdminWord::NotFound))
        }
        Action::Redeliver => Next::Redeliver,
    }
}

/// A release of `record`, read at `now` (see [`after_inspect`]).
fn release_after_inspect(record: &ClaimRecord, now: Millis, force: bool) -> Next {
    if record.state() != ClaimState::Processing {
        return Next::Answer(AdminAnswer::new(
            409,
            json!({ "error": "not_processing", "state": record.state(), "detail": "only a processing claim can be released" }),
            Outcome::Admin(AdminWord::ReleaseRefused),
        ));
    }
    if record.holds_body() {
        return Next::Answer(AdminAnswer::new(
            409,
            json!({
                "error": "queued_delivery",
                "lease_expires_at": record.lease.until,
                "lease_expires_at_time": rfc3339(record.lease.until),
                "detail": "an attempt of queue mode: the event's object takes it over itself when its lease ends; redeliver serves a dead event",
            }),
            Outcome::Admin(AdminWord::ReleaseRefused),
        ));
    }
    if record.has_live_lease(now) && !force {
        return Next::Answer(lease_live(record.lease.until));
    }
    Next::Release {
        fence: record.fence().clone(),
        reason: Reason::Operator,
        only_after_lease: !force,
    }
}

/// The refusal of a release without force while the claim's lease is live.
fn lease_live(lease_expires_at: Millis) -> AdminAnswer {
    AdminAnswer::new(
        409,
        json!({
            "error": "lease_live",
            "lease_expires_at": lease_expires_at,
            "lease_expires_at_time": rfc3339(lease_expires_at),
            "detail": "the claim's lease is live: its attempt may still be running or waiting for its answer; add ?force=true to release it anyway",
        }),
        Outcome::Admin(AdminWord::ReleaseRefused),
    )
}

/// The answer to the claim authority's reply to a release or a forget.
pub fn after_change(reply: &AuthorityReply) -> AdminAnswer {
    match reply {
        AuthorityReply::Release(ReleaseOutcome::Released { .. }) => AdminAnswer::new(
            200,
            json!({ "status": "released", "detail": "the next delivery runs the work again" }),
            Outcome::Admin(AdminWord::Released),
        ),
        AuthorityReply::LeaseLive { lease_expires_at } => lease_live(*lease_expires_at),
        AuthorityReply::Release(_) => AdminAnswer::refused_as(
            409,
            "changed",
            "the claim changed while releasing; look again",
            AdminWord::ReleaseRefused,
        ),
        AuthorityReply::Forget(ForgetOutcome::Forgotten) => AdminAnswer::new(
            200,
            json!({ "status": "forgotten", "detail": "the next delivery is processed as new" }),
            Outcome::Admin(AdminWord::Forgotten),
        ),
        AuthorityReply::Forget(ForgetOutcome::StillProcessing { lease_expires_at }) => {
            AdminAnswer::new(
                409,
                json!({
                    "error": "processing",
                    "lease_expires_at": lease_expires_at,
                    "lease_expires_at_time": rfc3339(*lease_expires_at),
                    "detail": "a claim is held (release it first), or an attempt whose answer was lost may still be running until its lease ends",
                }),
                Outcome::Admin(AdminWord::ForgetRefused),
            )
        }
        AuthorityReply::Forget(ForgetOutcome::NotFound) => AdminAnswer::not_found(),
        AuthorityReply::Forget(ForgetOutcome::NotOwner) => AdminAnswer::refused_as(
            409,
            "changed",
            "the record changed; look again",
            AdminWord::ForgetRefused,
        ),
        AuthorityReply::Redeliver(outcome) => after_redeliver(outcome),
        other => AdminAnswer::store_failed(StoreFailure::of(other)),
    }
}

/// The answer to the claim authority's reply to a redelivery.
fn after_redeliver(outcome: &RedeliverOutcome) -> AdminAnswer {
    match outcome {
        RedeliverOutcome::Queued => AdminAnswer::new(
            200,
            json!({ "status": "queued", "detail": "queued again with a fresh attempt budget; delivered now" }),
            Outcome::Admin(AdminWord::Redelivered),
        ),
        RedeliverOutcome::UnderLease { lease_expires_at } => AdminAnswer::new(
            409,
            json!({ "error": "lease_live", "lease_expires_at": lease_expires_at, "lease_expires_at_time": rfc3339(*lease_expires_at), "detail": "an attempt holds the event under a live lease, or its answer was lost and its handler may still be running until then" }),
            Outcome::Admin(AdminWord::RedeliverRefused),
        ),
        RedeliverOutcome::NotDead { state, .. } => AdminAnswer::new(
            409,
            json!({ "error": "not_dead", "state": state, "detail": "the event is no longer dead" }),
            Outcome::Admin(AdminWord::RedeliverRefused),
        ),
        RedeliverOutcome::NoBody => AdminAnswer::refused_as(
            404,
            "no_body",
            "no stored body to redeliver",
            AdminWord::NotFound,
        ),
    }
}

/// The claim policy a change to `family`'s records is made with.
pub fn policy_for(family: Family, events: ClaimPolicy, keys: Option<ClaimPolicy>) -> ClaimPolicy {
    match family {
        Family::Events | Family::Deliveries(_) => events,
        Family::Keys => keys.unwrap_or(events),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{Budget, ClaimStage, Finished, Lease, QueueStage, QueueStep, Source, Stage};
    use crate::providers::Provider;

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let token = "a-long-admin-token-0123456789";
        assert!(authorized(Some(&format!("Bearer {token}")), token));
        assert!(!authorized(None, token));
        assert!(!authorized(Some(token), token), "scheme required");
        assert!(!authorized(Some(&format!("bearer{token}")), token));
        assert!(
            authorized(Some(&format!("bearer {token}")), token),
            "the scheme's name in any case"
        );
        assert!(authorized(Some(&format!("BEARER {token}")), token));
        assert!(!authorized(Some(&format!("Bearer {token}x")), token));
        assert!(!authorized(Some("Bearer "), token));
        assert!(!authorized(Some(&format!("Basic {token}")), token));
    }

    /// Every token presented, right or wrong, of the token's length or another, is compared
    /// as a digest through the constant-time primitive (`mac::digests_equal`), never with `==`.
    #[test]
    fn the_token_is_compared_through_the_constant_time_primitive() {
        let token = "a-long-admin-token-0123456789";
        let comparisons = || crate::mac::CONSTANT_TIME_COMPARISONS.with(std::cell::Cell::get);
        for (authorization, expected) in [
            (format!("Bearer {token}"), true),
            (format!("Bearer {}", "x".repeat(token.len())), false),
            ("Bearer short".to_owned(), false),
            (format!("bearer {token}x"), false),
        ] {
            let before = comparisons();
            assert_eq!(authorized(Some(&authorization), token), expected);
            assert_eq!(comparisons(), before + 1, "{authorization}");
        }
    }

    /// Every admin answer, the 401 of the gate included, is kept out of caches and never
    /// sniffed as another type.
    #[test]
    fn every_admin_answer_is_never_cached_nor_sniffed() {
        let answers = [
            AdminAnswer::unauthorized(),
            AdminAnswer::misconfigured(),
            AdminAnswer::for_call_error(CallError::MethodNotAllowed("GET")),
            AdminAnswer::new(
                200,
                json!({ "record": null }),
                Outcome::Admin(AdminWord::Inspected),
            ),
        ];
        for answer in answers {
            let http = answer.http();
            let header = |name: &str| {
                let found = http.headers.iter().find(|(n, _)| n == name);
                found.map(|(_, v)| v.as_str())
            };
            assert_eq!(
                header("cache-control"),
                Some("no-store"),
                "{}",
                answer.status
            );
            assert_eq!(header("x-content-type-options"), Some("nosniff"));
            assert_eq!(header("content-type"), Some("application/json"));
        }
    }

    #[test]
    fn the_gate_answers_one_way_to_every_caller_without_the_token() {
        let token = "a-long-admin-token-0123456789";
        let bearer = format!("Bearer {token}");
        assert_eq!(gate(Some(token), Some(&bearer)), Ok(()));
        assert_eq!(gate(Some(token), None), Err(Locked::WrongToken));
        assert_eq!(
            gate(Some(token), Some("Bearer nope")),
            Err(Locked::WrongToken)
        );
        assert_eq!(gate(None, Some(&bearer)), Err(Locked::Off));
        assert_eq!(gate(None, None), Err(Locked::Off));
        let answer = AdminAnswer::unauthorized().http();
        assert_eq!(answer.status, 401);
        assert!(answer
            .headers
            .contains(&("www-authenticate".into(), "Bearer".into())));
    }

    fn record(state: ClaimState, lease_expires_at: Millis) -> ClaimRecord {
        let stage = match state {
            ClaimState::Processing => Stage::Claim(ClaimStage::Processing),
            ClaimState::Done => Stage::Claim(ClaimStage::Done(Finished {
                finished_at: 0,
                response: None,
            })),
            ClaimState::Released => Stage::Claim(ClaimStage::Released {
                released_at: 0,
                unknown: false,
            }),
            ClaimState::Queued => {
                return queued(
                    QueueStep::Queued {
                        next_attempt_at: 0,
                        unknown: false,
                    },
                    lease_expires_at,
                )
            }
            ClaimState::Dead => {
                return queued(
                    QueueStep::Dead {
                        died_at: 0,
                        unknown: false,
                    },
                    lease_expires_at,
                )
            }
        };
        ClaimRecord {
            key: "evt_1".into(),
            source: Source::Webhook(Provider::Stripe),
            attempts: 1,
            first_seen_at: 0,
            expires_at: 1_000_000,
            lease: Lease {
                fence: Fence::new(1, [7; 16]),
                request: None,
                claimed_at: 0,
                until: lease_expires_at,
                takeover: false,
                wait_ends_at: None,
            },
            last_failure: None,
            stage,
        }
    }

    /// A record of queue mode at `step`.
    fn queued(step: QueueStep, lease_expires_at: Millis) -> ClaimRecord {
        ClaimRecord {
            stage: Stage::Queue(QueueStage {
                accepted_at: 0,
                budget: Budget {
                    first_attempt: 0,
                    started_at: 0,
                },
                step,
                storage_id: 0,
                changes_noted: 0,
                dead_at: None,
                report: None,
            }),
            ..record(ClaimState::Processing, lease_expires_at)
        }
    }

    fn read(record: ClaimRecord) -> AuthorityReply {
        AuthorityReply::Record {
            record: Some(Box::new(record)),
        }
    }

    fn answered(next: Next) -> (u16, Value) {
        match next {
            Next::Answer(answer) => (answer.status, answer.body),
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn the_answer_table() {
        let processing = || read(record(ClaimState::Processing, 5_000));
        let (status, body) = answered(after_inspect(Action::Inspect, &processing(), 0, false));
        assert_eq!(status, 200);
        assert_eq!(body["record"]["state"], "processing");
        assert!(
            body["record"].get("fence").is_none(),
            "the fence is never shown"
        );
        let (status, body) = answered(after_inspect(Action::Release, &processing(), 4_999, false));
        assert_eq!((status, body["error"].as_str()), (409, Some("lease_live")));
        assert!(matches!(
            after_inspect(Action::Release, &processing(), 4_999, true),
            Next::Release {
                only_after_lease: false,
                ..
            }
        ));
        assert!(matches!(
            after_inspect(Action::Release, &processing(), 5_000, false),
            Next::Release { reason, only_after_lease: true, .. } if reason == Reason::Operator
        ));
        // The object, by its own clock, may still see the lease live: the same refusal.
        let refused = after_change(&AuthorityReply::LeaseLive {
            lease_expires_at: 5_000,
        });
        assert_eq!(
            (
                refused.status,
                refused.body["error"].as_str(),
                refused.body["lease_expires_at"].as_u64()
            ),
            (409, Some("lease_live"), Some(5_000))
        );
        // An attempt of queue mode is never released, even forced: the queue takes it over.
        let attempt = queued(QueueStep::Attempting, 5_000);
        for (now, force) in [(4_999, true), (5_000, false)] {
            let (status, body) = answered(after_inspect(
                Action::Release,
                &read(attempt.clone()),
                now,
                force,
            ));
            assert_eq!(
                (status, body["error"].as_str()),
                (409, Some("queued_delivery"))
            );
        }
        let done = read(record(ClaimState::Done, 5_000));
        let (status, body) = answered(after_inspect(Action::Release, &done, 0, true));
        assert_eq!(
            (status, body["error"].as_str()),
            (409, Some("not_processing"))
        );
        assert!(matches!(
            after_inspect(Action::Forget, &done, 0, false),
            Next::Forget { .. }
        ));
        let (status, _) = answered(after_inspect(
            Action::Inspect,
            &AuthorityReply::Record { record: None },
            0,
            false,
        ));
        assert_eq!(status, 404);
        let busy = AuthorityReply::StoreFailed {
            retryable: true,
            detail: String::new(),
        };
        assert_eq!(
            answered(after_inspect(Action::Inspect, &busy, 0, false)).0,
            503
        );

        let change = |reply: AuthorityReply| {
            let answer = after_change(&reply);
            (answer.status, answer.outcome.word())
        };
        assert_eq!(
            change(AuthorityReply::Release(ReleaseOutcome::Released {
                already: false
            })),
            (200, "admin_released")
        );
        assert_eq!(
            change(AuthorityReply::Release(ReleaseOutcome::NotOwner)),
            (409, "admin_release_refused")
        );
        assert_eq!(
            change(AuthorityReply::Forget(ForgetOutcome::Forgotten)),
            (200, "admin_forgotten")
        );
        assert_eq!(
            change(AuthorityReply::Forget(ForgetOutcome::StillProcessing {
                lease_expires_at: 1
            })),
            (409, "admin_forget_refused")
        );
        let refused = after_change(&AuthorityReply::Forget(ForgetOutcome::StillProcessing {
            lease_expires_at: 7_000,
        }));
        assert_eq!(
            (
                refused.body["error"].as_str(),
                refused.body["lease_expires_at"].as_u64()
            ),
            (Some("processing"), Some(7_000)),
            "the refusal says until when"
        );
        assert_eq!(
            change(AuthorityReply::Forget(ForgetOutcome::NotFound)),
            (404, "admin_not_found")
        );
        assert_eq!(
            AdminAnswer::for_call_error(CallError::MethodNotAllowed("POST")).allow,
            Some("POST")
        );
        let (status, body) = answered(after_inspect(Action::Redeliver, &done, 0, false));
        assert_eq!((status, body["error"].as_str()), (404, Some("no_body")));
        let dead = record(ClaimState::Dead, 5_000);
        assert_eq!(
            after_inspect(Action::Redeliver, &read(dead.clone()), 9_000, false),
            Next::Redeliver
        );
        let view = record_view(&dead);
        assert_eq!(view["queue"]["body_held"], true);
        assert_eq!(
            change(AuthorityReply::Redeliver(RedeliverOutcome::Queued)),
            (200, "admin_redelivered")
        );
        assert_eq!(
            change(AuthorityReply::Redeliver(RedeliverOutcome::UnderLease {
                lease_expires_at: 1
            })),
            (409, "admin_redeliver_refused")
        );
        assert_eq!(
            change(AuthorityReply::Redeliver(RedeliverOutcome::NoBody)).0,
            404
        );
        assert_eq!(
            AdminAnswer::for_call_error(CallError::InvalidKey(Family::Keys)).status,
            400
        );
    }

    #[test]
    fn routes() {
        let scope = format!("idem_{}", "ab".repeat(32));
        assert_eq!(
            call("GET", "events/evt_1"),
            Ok(AdminCall {
                family: Family::Events,
                key: "evt_1".into(),
                action: Action::Inspect
            })
        );
        assert_eq!(
            call("POST", "events/evt_1/release").unwrap().action,
            Action::Release
        );
        assert_eq!(
            call("DELETE", "events/evt_1").unwrap().action,
            Action::Forget
        );
        assert_eq!(
            call("GET", &format!("keys/{scope}")).unwrap().family,
            Family::Keys
        );
        assert_eq!(
            call("PUT", "events/evt_1"),
            Err(CallError::MethodNotAllowed("GET, DELETE"))
        );
        assert_eq!(
            call("GET", "events/evt_1/release"),
            Err(CallError::MethodNotAllowed("POST"))
        );
        assert_eq!(
            call("POST", "events/evt_1/redeliver").unwrap().action,
            Action::Redeliver
        );
        assert_eq!(
            call("POST", &format!("keys/{scope}/redeliver")),
            Err(CallError::NotFound)
        );
        assert_eq!(call("GET", "events/evt_1/other"), Err(CallError::NotFound));
        assert_eq!(call("GET", "nothing/evt_1"), Err(CallError::NotFound));
        assert_eq!(
            call("GET", "events/ch_1"),
            Err(CallError::InvalidKey(Family::Events))
        );
        assert_eq!(
            call("GET", "keys/idem_XYZ"),
            Err(CallError::InvalidKey(Family::Keys))
        );
        assert_eq!(
            call("GET", "keys/evt_1"),
            Err(CallError::InvalidKey(Family::Keys))
        );
    }

    #[test]
    fn deliveries_are_addressed_by_provider_and_the_sender_s_id() {
        let github = call("POST", "deliveries/github/72d3162e-cc78/redeliver").unwrap();
        assert_eq!(
            (github.family, github.key.as_str(), github.action),
            (
                Family::Deliveries(Provider::Github),
                "github:72d3162e-cc78",
                Action::Redeliver
            )
        );
        assert_eq!(
            call("GET", "deliveries/stripe/evt_1").unwrap().key,
            "evt_1",
            "the same record as events/evt_1"
        );
        assert_eq!(
            call("GET", "deliveries/standard/msg%2F1%3F").unwrap().key,
            "standard:msg/1?"
        );
        assert_eq!(
            call("GET", "deliveries/shopify/a%20b"),
            Err(CallError::InvalidKey(Family::Deliveries(Provider::Shopify)))
        );
        assert_eq!(
            call("GET", "deliveries/stripe/msg_1"),
            Err(CallError::InvalidKey(Family::Deliveries(Provider::Stripe)))
        );
        assert_eq!(call("GET", "deliveries/paypal/1"), Err(CallError::NotFound));
        assert_eq!(call("GET", "deliveries/github"), Err(CallError::NotFound));
        assert_eq!(
            AdminAnswer::for_call_error(CallError::InvalidKey(Family::Deliveries(
                Provider::Github
            )))
            .status,
            400
        );
    }

    #[test]
    fn times_are_shown_in_rfc_3339_beside_the_milliseconds() {
        assert_eq!(rfc3339(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(
            rfc3339(1_796_292_930_123).as_deref(),
            Some("2026-12-03T10:15:30.123Z")
        );
        assert_eq!(
            rfc3339(253_402_300_799_999).as_deref(),
            Some("9999-12-31T23:59:59.999Z")
        );
        assert_eq!(rfc3339(253_402_300_800_000), None, "no year past 9999");
        assert_eq!(rfc3339(u64::MAX), None);

        let mut done = record(ClaimState::Done, 1_796_292_930_123);
        done.stage = Stage::Claim(ClaimStage::Done(Finished {
            finished_at: 1_796_292_931_000,
            response: None,
        }));
        done.lease.wait_ends_at = Some(1_796_292_955_123);
        let view = record_view(&done);
        assert_eq!(view["lease_expires_at_time"], "2026-12-03T10:15:30.123Z");
        assert_eq!(view["finished_at_time"], "2026-12-03T10:15:31.000Z");
        assert_eq!(view["released_at_time"], Value::Null, "unset stays null");
        let mut waiting = queued(
            QueueStep::Queued {
                next_attempt_at: 1_796_292_960_000,
                unknown: false,
            },
            1_796_292_930_123,
        );
        waiting.stage = match waiting.stage {
            Stage::Queue(queue) => Stage::Queue(QueueStage {
                accepted_at: 1_796_292_930_000,
                budget: Budget {
                    first_attempt: 0,
                    started_at: 1_796_292_930_000,
                },
                ..queue
            }),
            other => other,
        };
        let queue_view = record_view(&waiting);
        assert_eq!(
            queue_view["queue"]["next_attempt_at_time"],
            "2026-12-03T10:16:00.000Z"
        );
        // Every `*_at` field, wherever it is, has its `*_at_time` twin, the same instant.
        fn check(value: &Value, seen: &mut usize) {
            let Some(object) = value.as_object() else {
                return;
            };
            for (name, field) in object {
                if name.ends_with("_at") {
                    *seen += 1;
                    let twin = &object[&format!("{name}_time")];
                    assert_eq!(
                        *twin,
                        json!(field.as_u64().and_then(rfc3339)),
                        "{name}_time beside {name}"
                    );
                }
                check(field, seen);
            }
        }
        let mut seen = 0;
        check(&view, &mut seen);
        assert_eq!(seen, 7, "the record's times");
        let mut seen = 0;
        check(&queue_view, &mut seen);
        assert_eq!(seen, 11, "a queued record's times, its queue's included");
        for answer in [
            lease_live(5_000),
            after_change(&AuthorityReply::Forget(ForgetOutcome::StillProcessing {
                lease_expires_at: 5_000,
            })),
            after_change(&AuthorityReply::Redeliver(RedeliverOutcome::UnderLease {
                lease_expires_at: 5_000,
            })),
        ] {
            let mut seen = 0;
            check(&answer.body, &mut seen);
            assert_eq!(seen, 1);
            assert_eq!(
                answer.body["lease_expires_at_time"],
                "1970-01-01T00:00:05.000Z"
            );
        }
    }

    mod door {
        use super::*;
        use crate::admin::door::{serve, AdminServed};
        use crate::config::Config;
        use crate::failure_index::{IndexReply, IndexRequest};
        use crate::log_line::{Level, LogLine, Route};
        use crate::runtime::memory::{run, Memory, RuntimeCall};

        const TOKEN: &str = "a-long-admin-token-0123456789";

        fn config() -> Config {
            Config::load(|key| match key {
                "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
                "ORIGIN_URL" => Some("https://origin.example/hook".into()),
                "ADMIN_TOKEN" => Some(TOKEN.into()),
                _ => None,
            })
            .unwrap()
        }

        fn operator(replies: Vec<AuthorityReply>) -> Memory {
            let bearer = format!("Bearer {TOKEN}");
            Memory::new(10, &[("authorization", &bearer)], b"").replying(replies)
        }

        fn serve_on(runtime: &Memory, method: &str, rest: &str) -> (AdminServed, LogLine) {
            let mut line = LogLine::new(Route::Admin);
            let config = config();
            let request = (method, rest, &[][..], None);
            let served = run(serve(runtime, request, Some(TOKEN), Ok(&config), &mut line));
            let served = served.expect("the runtime does not fail");
            (served, line)
        }

        /// Each gate's answer to an admin call tells this instance how its origin stands: a
        /// pause the list shows holds this instance's sync deliveries to it, and a resume it
        /// serves ends that hold.
        #[test]
        fn the_gates_answers_teach_this_instance_its_origins() {
            use crate::origin_gate::{HoldReason, OriginState, OriginView};
            let runtime = operator(vec![]);
            let origin = "https://origin.example/hook";
            let view = |state| OriginView {
                origin: origin.into(),
                state,
                paused_by: None,
                paused_until: None,
                in_flight: 0,
                failures_in_a_row: 0,
                held: 0,
                next_probe_at: None,
            };
            runtime
                .gate_replies
                .borrow_mut()
                .push_back(Ok(view(OriginState::Paused)));
            let (listed, _) = serve_on(&runtime, "GET", "origins");
            assert!(matches!(listed, AdminServed::Api(ref answer) if answer.status == 200));
            let hold = runtime.known_origins.borrow().hold(origin, 10);
            assert_eq!(hold, Some((30_010, HoldReason::Paused)));
            let resumed = Memory {
                body: Ok(format!("{{\"origin\": \"{origin}\"}}").into_bytes()),
                ..operator(vec![])
            };
            *resumed.known_origins.borrow_mut() = runtime.known_origins.borrow().clone();
            resumed
                .gate_replies
                .borrow_mut()
                .push_back(Ok(view(OriginState::Closed)));
            let (answer, _) = serve_on(&resumed, "POST", "origins/resume");
            assert!(matches!(answer, AdminServed::Api(ref answer) if answer.status == 200));
            assert_eq!(resumed.known_origins.borrow().hold(origin, 10), None);
        }

        /// The page is served without the token; any other route without it is answered
        /// before a record or the index is asked.
        #[test]
        fn the_page_or_a_locked_answer_asks_nothing() {
            let anonymous = Memory::new(10, &[], b"");
            let (page, line) = serve_on(&anonymous, "GET", "");
            assert!(matches!(page, AdminServed::Page(_)), "{page:?}");
            assert_eq!(line.outcome, Outcome::Admin(AdminWord::Page));
            let (locked, _) = serve_on(&anonymous, "GET", "events/evt_1");
            let AdminServed::Api(locked) = locked else {
                panic!("an API answer");
            };
            assert_eq!(locked.status, 401);
            assert_eq!(anonymous.calls(), []);
        }

        /// A release inspects the record, then releases it; the operator's change raises the
        /// log line to `warn`. An inspection changes nothing and stays at `info`.
        #[test]
        fn a_release_inspects_then_changes_the_record() {
            let released = AuthorityReply::Release(ReleaseOutcome::Released { already: false });
            let runtime = operator(vec![read(record(ClaimState::Processing, 5)), released]);
            let (answer, line) = serve_on(&runtime, "POST", "events/evt_1/release");
            let AdminServed::Api(answer) = answer else {
                panic!("an API answer");
            };
            assert_eq!((answer.status, line.outcome), (200, answer.outcome));
            assert_eq!(
                (line.key.as_deref(), line.level),
                (Some("evt_1"), Level::Warn)
            );
            let calls = runtime.calls();
            let [RuntimeCall::Ask(AuthorityRequest::Inspect { key }), RuntimeCall::Ask(AuthorityRequest::Release { .. })] =
                calls.as_slice()
            else {
                panic!("inspect, then release: {calls:?}");
            };
            assert_eq!(key, "evt_1");
            let inspect = operator(vec![read(record(ClaimState::Done, 5))]);
            let (_, line) = serve_on(&inspect, "GET", "events/evt_1");
            assert_eq!((inspect.calls().len(), line.level), (1, Level::Info));
        }

        /// Forgetting a dead-lettered event tells the failure index; forgetting a finished one
        /// does not (the index never showed it).
        #[test]
        fn forgetting_a_dead_letter_tells_the_index() {
            for (state, told) in [(ClaimState::Dead, true), (ClaimState::Done, false)] {
                let mut dead = record(state, 5);
                if let Stage::Queue(queue) = &mut dead.stage {
                    queue.dead_at = Some(1);
                }
                let forgotten = AuthorityReply::Forget(ForgetOutcome::Forgotten);
                let runtime = operator(vec![read(dead), forgotten]);
                let _ = serve_on(&runtime, "DELETE", "events/evt_1");
                let calls = runtime.calls();
                let reported = calls
                    .iter()
                    .any(|call| matches!(call, RuntimeCall::Index(IndexRequest::Report(_))));
                assert_eq!(reported, told, "{state:?}: {calls:?}");
            }
        }

        /// A bulk redelivery lists one page from the index, then asks each entry's own
        /// object; a failed list is answered without asking any object.
        #[test]
        fn a_bulk_redelivery_lists_then_asks_each_object() {
            let runtime = operator(Vec::new());
            runtime
                .index_replies
                .borrow_mut()
                .push_back(IndexReply::StoreFailed {
                    detail: "down".into(),
                });
            let (answer, _) = serve_on(&runtime, "POST", "dead-letters/redeliver");
            let AdminServed::Api(answer) = answer else {
                panic!("an API answer");
            };
            assert!(answer.status >= 500, "{answer:?}");
            let calls = runtime.calls();
            assert!(
                matches!(
                    calls.as_slice(),
                    [RuntimeCall::Index(IndexRequest::List(_))]
                ),
                "{calls:?}"
            );
        }

        fn entry(id: &str, storage_id: u64) -> crate::failure_index::Entry {
            crate::failure_index::Entry {
                key: Provider::Github.key(id),
                storage_id,
                stored_at: 1,
                last_seq: 1,
                provider: Provider::Github,
                event_type: None,
                first_seen_at: 1,
                dead_at: 2,
                attempts: 3,
                last_reason: None,
                state: crate::failure_index::EntryState::Dead,
                expires_at: 100,
                history: Vec::new(),
            }
        }

        /// A bulk redelivery asks each entry's own object for that dead event, in turn, and
        /// tells the index of each event found gone; the answer counts what was queued.
        #[test]
        fn a_bulk_redelivery_asks_each_entry_s_object_and_reports_the_gone() {
            let queued = AuthorityReply::Redeliver(RedeliverOutcome::Queued);
            let gone = AuthorityReply::Redeliver(RedeliverOutcome::NoBody);
            let runtime = operator(vec![queued, gone]);
            let page = crate::failure_index::Page {
                items: vec![entry("d-1", 11), entry("d-2", 12)],
                next_cursor: None,
            };
            runtime
                .index_replies
                .borrow_mut()
                .push_back(IndexReply::Page(page));
            let (answer, _) = serve_on(&runtime, "POST", "dead-letters/redeliver");
            let AdminServed::Api(answer) = answer else {
                panic!("an API answer");
            };
            assert_eq!(
                (answer.status, answer.body["redelivered"].as_u64()),
                (200, Some(1))
            );
            let calls = runtime.calls();
            let asked: Vec<&str> = calls
                .iter()
                .map(|call| match call {
                    RuntimeCall::Index(IndexRequest::List(_)) => "list",
                    RuntimeCall::Ask(AuthorityRequest::Redeliver { .. }) => "redeliver",
                    RuntimeCall::Index(IndexRequest::Gone { .. }) => "gone",
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            assert_eq!(asked, ["list", "redeliver", "redeliver", "gone"]);
        }

        /// Without the claim authority's binding, a call on a record and a bulk redelivery
        /// end as a runtime error (500 `internal_error`), never as an answer of their own.
        #[test]
        fn a_missing_binding_is_a_runtime_fault() {
            let mut runtime = operator(Vec::new());
            runtime.no_binding = true;
            let page = crate::failure_index::Page {
                items: vec![entry("d-1", 11)],
                next_cursor: None,
            };
            runtime
                .index_replies
                .borrow_mut()
                .push_back(IndexReply::Page(page));
            let config = config();
            for (method, rest) in [("GET", "events/evt_1"), ("POST", "dead-letters/redeliver")] {
                let mut line = LogLine::new(Route::Admin);
                let request = (method, rest, &[][..], None);
                let served = run(serve(
                    &runtime,
                    request,
                    Some(TOKEN),
                    Ok(&config),
                    &mut line,
                ));
                assert!(served.is_err(), "{rest}: {served:?}");
            }
        }
    }
}
