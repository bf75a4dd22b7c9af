//! An `/api/...` request's whole sequence at the Idempotency-Key door, over the [`Runtime`]:
//! configuration, the door on, the route; then for a keyed request its client, the rate limit,
//! the body and its fingerprint, the delivery through its scope's claim authority, and what to
//! answer from the reply.

use crate::claim_authority::{AuthorityRequest, Deliver, Forward, Head};
use crate::config::{ApiConfig, Config, ConfigProblem};
use crate::log_line::{LogLine, Outcome, Route};
use crate::runtime::Runtime;

use super::{
    after_delivery, client_identity, confinement, fingerprint, live_outcome,
    origin_request_headers, rate_limit_keys, replay, route, scope, ApiAnswer, ApiRoute,
    Confinement, Keyed, Problem, KEY_HEADER,
};
use crate::answer::HttpAnswer;

/// The binding name of the optional rate limiter of keyed requests (`[[ratelimits]]`): both a
/// request's client (hashed) and its address (`CF-Connecting-IP`) must be within its limit, so
/// a client that makes up a new identity per request is still bounded by its address.
pub const RATE_LIMITER: &str = "IDEMPOTENCY_RATE_LIMITER";

/// What the door does with a request it does not refuse.
#[derive(Debug, PartialEq)]
pub enum Step<S> {
    /// Pass the origin's answer on as it streams, confined as given: its head, and its body.
    Live(Head, Option<S>, Confinement),
    /// Answer with this replay of a stored answer; the origin was not called.
    Replay(HttpAnswer),
    /// Send the request, body streamed, to `target` with `headers`, and pass its answer on
    /// as it is but for `confinement`; 504 when none comes within `timeout_ms`.
    PassThrough {
        /// The origin URL.
        target: String,
        /// The request's headers as the origin gets them.
        headers: Vec<(String, String)>,
        /// How long the origin has to answer.
        timeout_ms: u64,
        /// How its answer is confined from the operator page.
        confinement: Confinement,
    },
}

/// Serves one `method` request on `host` for `path` and `query` under `config` (see
/// [`route`]): a request without a key passes through, a keyed one is delivered through its
/// scope's claim authority; either answer is confined from the operator page (see
/// [`confinement`]). The log line learns the scope and the outcome.
pub async fn serve<R: Runtime>(
    runtime: &R,
    config: Result<&Config, &[ConfigProblem]>,
    method: &str,
    (host, path, query): (Option<&str>, &str, Option<&str>),
    line: &mut LogLine,
) -> Result<Step<R::Stream>, Problem> {
    let config = config.map_err(Problem::misconfigured)?;
    let Some(api) = &config.api else {
        return Err(Problem::door_off());
    };
    let confined = confinement(config.admin.page_host.as_deref(), host);
    let raw_key = runtime.header(KEY_HEADER);
    match route(api, method, (path, query), raw_key.as_deref())? {
        ApiRoute::Keyed(request) => {
            keyed(runtime, (config, api, confined), method, request, line).await
        }
        ApiRoute::PassThrough { target } => {
            line.outcome = Outcome::PassedThrough;
            Ok(Step::PassThrough {
                target,
                headers: origin_request_headers(runtime.headers(), &api.forward_headers),
                timeout_ms: config.delivery.forward_timeout_ms,
                confinement: confined,
            })
        }
    }
}

/// A keyed request: client, rate limit, body and fingerprint, then the delivery; its origin's
/// live answer, a replay, or a problem.
async fn keyed<R: Runtime>(
    runtime: &R,
    (config, api, confined): (&Config, &ApiConfig, Confinement),
    method: &str,
    request: Keyed,
    line: &mut LogLine,
) -> Result<Step<R::Stream>, Problem> {
    let client_value = runtime.header(&api.client_header);
    let client = admit(runtime, api, client_value.as_deref()).await?;
    let body = runtime.body(&config.delivery).await?;
    let content_type = runtime.header("content-type");
    let bytes = runtime.bytes(&body);
    let fingerprint = fingerprint(
        method,
        &request.path_and_query,
        content_type.as_deref(),
        &bytes,
    );
    let scope = scope(client, &request.key);
    line.key = Some(scope.clone());
    let forward = Forward {
        url: request.target,
        method: method.to_owned(),
        headers: origin_request_headers(runtime.headers(), &api.forward_headers),
        timeout_ms: config.delivery.forward_timeout_ms,
        wait_ms: config.delivery.late_answer_wait_ms,
    };
    let make =
        |nonce| AuthorityRequest::Deliver(Deliver::api(scope, api, nonce, fingerprint, forward));
    let (reply, stream) = runtime.deliver(make, &body).await;
    line.note(&reply);
    match after_delivery(&reply, runtime.now_ms()) {
        ApiAnswer::Live(head) => {
            line.outcome = live_outcome(head.status);
            Ok(Step::Live(head, stream, confined))
        }
        ApiAnswer::Replay(cached) => {
            line.outcome = Outcome::Replayed;
            Ok(Step::Replay(replay(&cached, confined)?))
        }
        ApiAnswer::Refuse(problem) => Err(problem),
    }
}

/// The client a keyed request comes from, when it may go on: it names itself (unless anonymous
/// callers are allowed), and it and its address are within the rate limit.
async fn admit<'a, R: Runtime>(
    runtime: &R,
    api: &ApiConfig,
    client_value: Option<&'a str>,
) -> Result<Option<&'a str>, Problem> {
    let client = client_identity(client_value);
    if client.is_none() && !api.allow_anonymous {
        return Err(Problem::anonymous(&api.client_header));
    }
    let address = runtime.header("cf-connecting-ip");
    let keys = rate_limit_keys(client, address.as_deref());
    if !runtime
        .within_limit(Route::Idempotency, RATE_LIMITER, &keys)
        .await
    {
        return Err(Problem::rate_limited());
    }
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{CachedResponse, ClaimOutcome};
    use crate::claim_authority::{AuthorityReply, Delivery, ForwardReport, SettleStep};
    use crate::origin::{OriginOutcome, Verdict};
    use crate::runtime::memory::{run, Memory, RuntimeCall, NONCE};

    fn config(extra: &[(&str, &str)]) -> Config {
        Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/hook".into()),
            "API_ORIGIN_URL" => Some("https://api.example/base".into()),
            other => extra
                .iter()
                .find(|(name, _)| *name == other)
                .map(|(_, value)| (*value).to_owned()),
        })
        .unwrap()
    }

    const KEYED: &[(&str, &str)] = &[
        ("idempotency-key", "k-1"),
        ("authorization", "Bearer client-a"),
        ("content-type", "application/json"),
        ("cf-connecting-ip", "192.0.2.1"),
        ("connection", "keep-alive"),
    ];

    fn serve_with(
        runtime: &Memory,
        config: &Config,
        method: &str,
    ) -> (Result<Step<()>, Problem>, LogLine) {
        let mut line = LogLine::new(Route::Idempotency);
        let path = (Some("api.example"), "/api/charges", Some("a=1"));
        let step = run(serve(runtime, Ok(config), method, path, &mut line));
        (step, line)
    }

    fn forwarded(head: Head) -> AuthorityReply {
        AuthorityReply::Delivery(Delivery::Forwarded(ForwardReport {
            attempt: 1,
            takeover: false,
            outcome: OriginOutcome::Answered {
                status: head.status,
            },
            verdict: Verdict::Succeeded,
            settle: SettleStep::Waiting,
            origin_ms: 1,
            not_before: None,
            head: Some(head),
        }))
    }

    #[test]
    fn an_invalid_configuration_or_a_door_that_is_off_is_refused_before_anything_is_read() {
        let runtime = Memory::new(0, KEYED, b"{}");
        let problems = Config::load(|_| None).unwrap_err();
        let mut line = LogLine::new(Route::Idempotency);
        let refused = run(serve(
            &runtime,
            Err(&problems),
            "POST",
            (None, "/api/a", None),
            &mut line,
        ));
        assert_eq!(refused.unwrap_err().status, 500);
        let mut off = config(&[]);
        off.api = None;
        let (refused, _) = serve_with(&runtime, &off, "POST");
        assert_eq!(refused.unwrap_err(), Problem::door_off());
        assert_eq!(runtime.calls(), []);
    }

    /// A safe method passes through to the origin with the path and query, its headers as
    /// the origin gets them (hop-by-hop ones left out, the caller's address added), without
    /// reading the body or asking the rate limiter.
    #[test]
    fn a_safe_method_passes_through_untouched() {
        let runtime = Memory::new(0, KEYED, b"");
        let config = config(&[]);
        let (step, line) = serve_with(&runtime, &config, "GET");
        let Ok(Step::PassThrough {
            target,
            headers,
            timeout_ms,
            confinement,
        }) = step
        else {
            panic!("a GET passes through: {step:?}");
        };
        assert_eq!(target, "https://api.example/base/api/charges?a=1");
        assert_eq!(timeout_ms, config.delivery.forward_timeout_ms);
        assert_eq!(confinement, Confinement::Sandboxed, "sandboxed by default");
        assert!(!headers.iter().any(|(name, _)| name == "connection"));
        assert!(headers.contains(&("x-real-ip".into(), "192.0.2.1".into())));
        assert_eq!(line.outcome, Outcome::PassedThrough);
        assert_eq!(runtime.calls(), []);
    }

    /// A keyed request from no named client is refused unless anonymous callers are allowed;
    /// one past the rate limit is refused before its body is read.
    #[test]
    fn an_anonymous_or_rate_limited_client_is_refused_before_its_body_is_read() {
        let anonymous = Memory::new(0, &[("idempotency-key", "k-1")], b"{}");
        let (step, _) = serve_with(&anonymous, &config(&[]), "POST");
        assert_eq!(step.unwrap_err(), Problem::anonymous("authorization"));
        assert_eq!(anonymous.calls(), []);
        let mut limited = Memory::new(0, KEYED, b"{}");
        limited.over_limit = true;
        let (step, _) = serve_with(&limited, &config(&[]), "POST");
        assert_eq!(step.unwrap_err(), Problem::rate_limited());
        let calls = limited.calls();
        let [RuntimeCall::Limit(binding, keys)] = calls.as_slice() else {
            panic!("only the limiter is asked: {calls:?}");
        };
        assert_eq!((binding.as_str(), keys.len()), (RATE_LIMITER, 2));
    }

    /// A keyed request is delivered under its client's scope with its fingerprint, the body
    /// beside it; the origin's answer streams back live, and a stored one is replayed.
    #[test]
    fn a_keyed_request_is_delivered_then_answered_live_or_replayed() {
        let head = Head {
            status: 201,
            headers: vec![("content-type".into(), "application/json".into())],
        };
        let cached = CachedResponse {
            status: 201,
            headers: Vec::new(),
            body: b"{}".to_vec(),
            body_omitted: false,
            body_lost: false,
        };
        let replayed =
            AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateProcessed {
                finished_at: 1,
                response: Some(cached.clone()),
            }));
        let runtime =
            Memory::new(0, KEYED, b"{\"a\":1}").replying(vec![forwarded(head.clone()), replayed]);
        let config = config(&[]);
        let (live, line) = serve_with(&runtime, &config, "POST");
        assert_eq!(
            live.unwrap(),
            Step::Live(head, None, Confinement::Sandboxed)
        );
        assert_eq!(line.outcome, Outcome::Executed);
        assert_eq!(
            (line.attempt, line.origin_status),
            (Some(1), Some(201)),
            "the reply noted"
        );
        let (again, line) = serve_with(&runtime, &config, "POST");
        let sandboxed = replay(&cached, Confinement::Sandboxed).unwrap();
        assert_eq!(again.unwrap(), Step::Replay(sandboxed));
        assert_eq!(line.outcome, Outcome::Replayed);
        let calls = runtime.calls();
        assert_eq!(
            calls[..2],
            [
                RuntimeCall::Limit(
                    RATE_LIMITER.into(),
                    rate_limit_keys(Some("Bearer client-a"), Some("192.0.2.1")).to_vec()
                ),
                RuntimeCall::Body
            ]
        );
        let RuntimeCall::Deliver(AuthorityRequest::Deliver(sent), body) = &calls[2] else {
            panic!("a delivery: {calls:?}");
        };
        assert_eq!(body, b"{\"a\":1}");
        let expected = fingerprint("POST", "/api/charges?a=1", Some("application/json"), body);
        assert_eq!(
            (sent.nonce, sent.key.as_str()),
            (NONCE, line.key.as_deref().unwrap())
        );
        assert_eq!(sent.key, scope(Some("Bearer client-a"), "k-1"));
        assert_eq!(sent.forward.url, "https://api.example/base/api/charges?a=1");
        let json = serde_json::to_string(sent).unwrap();
        assert!(
            json.contains(&serde_json::to_string(&expected).unwrap()),
            "the fingerprint is sent"
        );
    }
}
