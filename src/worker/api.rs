//! `/api/...`: the Idempotency-Key front door in front of `API_ORIGIN_URL` (its rules are in
//! [`crate::idempotency`]).

use worker::web_sys::{self, ReadableStream};
use worker::{Context, Env, Response, Result};

use super::body;
use super::clock;
use super::door::{self, Visit};
use super::env_config;
use super::forward::{self, Exchange, Outgoing};
use super::inbound::Inbound;
use super::rate_limit;
use crate::authority::{AuthorityRequest, Deliver, Forward, Head};
use crate::config::{ApiConfig, Config};
use crate::idempotency::{self as idem, ApiAnswer, ApiRoute, Keyed, Problem};
use crate::log_line::{LogLine, Outcome, Route};

/// Serves one `/api/...` request and writes its log line.
pub async fn serve(req: Inbound, env: &Env, ctx: &Context) -> Result<Response> {
    let mut visit = Visit::start(Route::Idempotency, &req.method());
    match handle(req, env, ctx, &mut visit.line).await {
        Ok(response) => Ok(visit.finish(env, response)),
        Err(problem) => {
            visit.line.outcome = problem.outcome();
            if problem.note.is_some() {
                visit.line.detail.clone_from(&problem.note);
            }
            visit.answer(env, problem.http())
        }
    }
}

/// Config and the door's rules (see [`idem::route`]): a request without a key passes through,
/// a keyed one is delivered through its scope's claim authority.
async fn handle(
    req: Inbound,
    env: &Env,
    ctx: &Context,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let config = env_config::config(env).map_err(|problems| Problem::misconfigured(&problems))?;
    let Some(api) = &config.api else {
        return Err(Problem::door_off());
    };
    let url = req.url().map_err(internal)?;
    let raw_key = req.headers().get(idem::KEY_HEADER).map_err(internal)?;
    let method = req.method();
    let route = idem::route(
        api,
        method.as_ref(),
        (url.path(), url.query()),
        raw_key.as_deref(),
    )?;
    match route {
        ApiRoute::Keyed(request) => keyed(req, env, ctx, (&config, api), request, line).await,
        ApiRoute::PassThrough { target } => {
            line.outcome = Outcome::PassedThrough;
            pass_through(req, &target, config.delivery.forward_timeout_ms, line).await
        }
    }
}

/// A keyed request: client, rate limit, body and fingerprint, then the delivery; its origin's
/// live answer, a replay, or a problem.
async fn keyed(
    req: Inbound,
    env: &Env,
    ctx: &Context,
    (config, api): (&Config, &ApiConfig),
    request: Keyed,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let header = |name: &str| req.headers().get(name).map_err(internal);
    let client_value = header(&api.client_header)?;
    let client = admit(
        env,
        api,
        client_value.as_deref(),
        header("cf-connecting-ip")?,
    )
    .await?;
    let body = body::read_capped(&req, &config.delivery).await?;
    let method = req.method().to_string();
    let content_type = header("content-type")?;
    let fingerprint = idem::fingerprint(
        &method,
        &request.path_and_query,
        content_type.as_deref(),
        &body.to_vec(),
    );
    let scope = idem::scope(client, &request.key);
    line.key = Some(scope.clone());
    let forward = Forward {
        url: request.target,
        method,
        headers: idem::origin_request_headers(req.headers().entries()),
        timeout_ms: config.delivery.forward_timeout_ms,
        wait_ms: config.delivery.late_answer_wait_ms,
    };
    let make =
        |nonce| AuthorityRequest::Deliver(Deliver::api(scope, api, nonce, fingerprint, forward));
    let (reply, stream) = door::deliver(env, ctx, make, &body, line).await;
    match idem::after_delivery(&reply, clock::now_ms()) {
        ApiAnswer::Live(head) => {
            line.outcome = idem::live_outcome(head.status);
            live(&head, stream.as_ref(), line)
        }
        ApiAnswer::Replay(cached) => {
            line.outcome = Outcome::Replayed;
            door::render(idem::replay(&cached)?).map_err(internal)
        }
        ApiAnswer::Refuse(problem) => Err(problem),
    }
}

/// The client a keyed request comes from, when it may go on: it names itself (unless anonymous
/// callers are allowed), and it and its `address` are within the rate limit.
async fn admit<'a>(
    env: &Env,
    api: &ApiConfig,
    client_value: Option<&'a str>,
    address: Option<String>,
) -> std::result::Result<Option<&'a str>, Problem> {
    let client = idem::client_identity(client_value);
    if client.is_none() && !api.allow_anonymous {
        return Err(Problem::anonymous(&api.client_header));
    }
    let keys = idem::rate_limit_keys(client, address.as_deref());
    if !rate_limit::within(env, Route::Idempotency, RATE_LIMITER, &keys).await {
        return Err(Problem::rate_limited());
    }
    Ok(client)
}

/// The binding name of the optional rate limiter of keyed requests (`[[ratelimits]]`): both a
/// request's client (hashed) and its address (`CF-Connecting-IP`) must be within its limit, so
/// a client that makes up a new identity per request is still bounded by its address.
const RATE_LIMITER: &str = "IDEMPOTENCY_RATE_LIMITER";

/// Sends the request to the origin untouched (body streamed) and returns its answer as is,
/// redirects included; 504 / 502 problems when it does not answer in time or at all.
async fn pass_through(
    req: Inbound,
    target: &str,
    timeout_ms: u64,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let headers = idem::origin_request_headers(req.headers().entries());
    let body = req.inner().body().map(Into::into);
    let started = clock::now_ms();
    let sent = Exchange::start(&Outgoing {
        url: target,
        method: req.inner().method().as_str(),
        headers: &headers,
        body: body.as_ref(),
    });
    let result = forward::answer_within(sent, timeout_ms).await;
    line.origin_ms = Some(clock::now_ms().saturating_sub(started));
    let response = result.map_err(|outcome| idem::origin_problem(&outcome))?;
    let head = Head {
        status: response.status(),
        headers: forward::answer_headers(&response),
    };
    line.origin_status = Some(head.status);
    live(&head, response.body().as_ref(), line)
}

/// The origin's answer passed on as it streams (see [`idem::live_head`]); its status is the
/// origin's, logged as such, unless no response can carry it (this service's own 502).
fn live(
    head: &Head,
    body: Option<&ReadableStream>,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let live = idem::live_head(head)?;
    let headers = web_sys::Headers::new().map_err(js_internal)?;
    for (name, value) in &live.headers {
        headers.append(name, value).map_err(js_internal)?;
    }
    let body = match body {
        Some(stream) if live.drop_body => {
            let _ = stream.cancel();
            None
        }
        other => other,
    };
    let init = web_sys::ResponseInit::new();
    init.set_status(live.status);
    init.set_headers(&headers);
    let response = web_sys::Response::new_with_opt_readable_stream_and_init(body, &init)
        .map(Response::from)
        .map_err(js_internal)?;
    line.status_from_origin = true;
    Ok(response)
}

/// A runtime error as a problem: its text goes to the log line only.
fn internal(error: worker::Error) -> Problem {
    Problem::internal(error.to_string())
}

/// A JavaScript error while building the answer, as a problem (see [`internal`]).
fn js_internal(error: wasm_bindgen::JsValue) -> Problem {
    Problem::internal(format!("the answer could not be built: {error:?}"))
}
