//! `/api/...`: the Idempotency-Key front door in front of `API_ORIGIN_URL`.

use worker::web_sys::{self, ReadableStream};
use worker::{Context, Env, Headers, Response, Result};

use super::body::{self, BodyError};
use super::clock;
use super::door::{self, Visit};
use super::env_config;
use super::forward::{self, Exchange, Outgoing, HOP_BY_HOP};
use super::inbound::Inbound;
use super::rate_limit;
use crate::authority::{Deliver, Door, Forward, Head};
use crate::claim::{CachedResponse, Source};
use crate::config;
use crate::idempotency::{self as idem, ApiAnswer, Handling, Problem};
use crate::log_line::{LogLine, Outcome, Route};

/// Serves one `/api/...` request and writes its log line.
pub async fn serve(req: Inbound, env: &Env, ctx: &Context) -> Result<Response> {
    let mut visit = Visit::start(Route::Idempotency, &req.method());
    let response = match handle(req, env, ctx, &mut visit.line).await {
        Ok(response) => response,
        Err(problem) => {
            visit.line.outcome = problem.outcome();
            problem_response(&problem)?
        }
    };
    Ok(visit.finish(env, response))
}

/// Config, the door's rules, rate limit, body, then the delivery; the answer.
async fn handle(
    req: Inbound,
    env: &Env,
    ctx: &Context,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let config = env_config::config(env).map_err(|problems| {
        line.detail = Some(config::describe(&problems));
        Problem::misconfigured(&problems)
    })?;
    let Some(api) = &config.api else {
        return Err(Problem::door_off());
    };
    let url = req.url().map_err(internal)?;
    let path_and_query = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let target = api.target(&path_and_query);
    let method = req.method();
    let raw_key = req.headers().get(idem::KEY_HEADER).map_err(internal)?;
    let key = match idem::handling(method.as_ref(), raw_key.as_deref(), api.key_required)? {
        Handling::Keyed(key) => key,
        Handling::PassThrough => {
            line.outcome = Outcome::PassedThrough;
            return pass_through(req, &target, config.delivery.forward_timeout_ms, line).await;
        }
    };
    let client_value = req.headers().get(&api.client_header).map_err(internal)?;
    let client = idem::client_identity(client_value.as_deref());
    if client.is_none() && !api.allow_anonymous {
        return Err(Problem::anonymous(&api.client_header));
    }
    let address = req.headers().get("cf-connecting-ip").map_err(internal)?;
    if !within_rate_limit(env, client, address.as_deref()).await {
        return Err(Problem::rate_limited());
    }
    let limit = config.delivery.max_body_bytes;
    let body = body::read_capped(&req, limit)
        .await
        .map_err(|error| match error {
            BodyError::TooLarge => Problem::body_too_large(limit),
            BodyError::Unreadable => Problem::body_unreadable(),
        })?;
    let headers = req.headers();
    let scope = idem::scope(client, &key);
    let content_type = headers.get("content-type").map_err(internal)?;
    let fingerprint = idem::fingerprint(
        method.as_ref(),
        &path_and_query,
        content_type.as_deref(),
        &body.to_vec(),
    );
    line.key = Some(scope.clone());
    let forward = Forward {
        url: target,
        method: method.to_string(),
        headers: request_headers(headers),
        timeout_ms: config.delivery.forward_timeout_ms,
        wait_ms: config.delivery.late_answer_wait_ms,
    };
    let make = |nonce| Deliver {
        known_only: false,
        key: scope,
        policy: api.claims,
        nonce,
        source: Source::Api { fingerprint },
        forward,
        door: Door::Api {
            max_cached_body: api.max_response_bytes,
        },
    };
    let (reply, stream) = door::deliver(env, ctx, make, &body, line).await;
    match idem::after_delivery(&reply, clock::now_ms()) {
        ApiAnswer::Live(head) => {
            line.outcome = idem::live_outcome(head.status);
            // The origin's status only once it is passed on: a status no response can carry
            // is this service's own 502, logged as its error.
            let response = live_response(&head, stream.as_ref())?;
            line.status_from_origin = true;
            Ok(response)
        }
        ApiAnswer::Replay(cached) => {
            line.outcome = Outcome::Replayed;
            replay(&cached)
        }
        ApiAnswer::Refuse(problem) => Err(problem),
    }
}

/// The binding name of the optional rate limiter of keyed requests (`[[ratelimits]]`).
const RATE_LIMITER: &str = "IDEMPOTENCY_RATE_LIMITER";

/// True when the keyed request may go on: without the binding always; with it, only when both
/// its client (hashed) and its address (`CF-Connecting-IP`) are within the limit, so a client
/// that makes up a new identity per request is still bounded by its address.
async fn within_rate_limit(env: &Env, client: Option<&str>, address: Option<&str>) -> bool {
    let keys = [
        idem::rate_limit_client_key(client),
        idem::rate_limit_address_key(address),
    ];
    rate_limit::within(env, RATE_LIMITER, &keys).await
}

/// Client headers for the origin (see [`idem::origin_request_headers`]).
fn request_headers(from: &Headers) -> Vec<(String, String)> {
    idem::origin_request_headers(from.entries(), HOP_BY_HOP)
}

/// Sends the request to the origin untouched (body streamed) and returns its answer as is,
/// redirects included; 504 / 502 problems when it does not answer in time or at all.
async fn pass_through(
    req: Inbound,
    target: &str,
    timeout_ms: u64,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let headers = request_headers(req.headers());
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
    match result {
        Ok(response) => {
            let head = Head {
                status: response.status(),
                headers: forward::answer_headers(&response),
            };
            line.origin_status = Some(head.status);
            let response = live_response(&head, response.body().as_ref())?;
            line.status_from_origin = true;
            Ok(response)
        }
        Err(outcome) => Err(idem::origin_problem(&outcome)),
    }
}

/// The origin's answer, passed to the client as it streams (its body already decoded by the
/// runtime, so `content-encoding` is dropped). A status the runtime cannot represent in a
/// response (outside 200 to 599) is answered 502 instead; one that has no body by definition
/// (204, 205, 304) goes without one, its (empty) stream cancelled.
fn live_response(
    head: &Head,
    body: Option<&ReadableStream>,
) -> std::result::Result<Response, Problem> {
    let Some(status) = idem::passable_status(head.status) else {
        return Err(idem::invalid_status_problem(head.status));
    };
    let headers = web_sys::Headers::new().map_err(js_internal)?;
    for (name, value) in &head.headers {
        if name != "content-encoding" {
            headers.append(name, value).map_err(js_internal)?;
        }
    }
    let body = match body {
        Some(stream) if idem::has_no_body(status) => {
            let _ = stream.cancel();
            None
        }
        other => other,
    };
    let init = web_sys::ResponseInit::new();
    init.set_status(status);
    init.set_headers(&headers);
    web_sys::Response::new_with_opt_readable_stream_and_init(body, &init)
        .map(Response::from)
        .map_err(js_internal)
}

/// A cached answer replayed: the same status, kept headers and body, plus the replay marker
/// (and a marker when its body was not kept); a status with no body by definition (204, 205)
/// is replayed without one.
fn replay(cached: &CachedResponse) -> std::result::Result<Response, Problem> {
    let Some(status) = idem::passable_status(cached.status) else {
        return Err(idem::invalid_status_problem(cached.status));
    };
    let headers = Headers::new();
    let set = || -> Result<()> {
        for (name, value) in &cached.headers {
            headers.append(name, value)?;
        }
        headers.set(idem::REPLAYED_HEADER, "true")?;
        if cached.body_omitted {
            headers.set(idem::BODY_OMITTED_HEADER, "true")?;
        }
        if cached.body_lost {
            headers.set(idem::BODY_LOST_HEADER, "true")?;
        }
        Ok(())
    };
    set().map_err(internal)?;
    let response = if idem::has_no_body(status) {
        Response::empty().map_err(internal)?
    } else {
        Response::from_bytes(cached.body.clone()).map_err(internal)?
    };
    Ok(response.with_status(status).with_headers(headers))
}

fn problem_response(problem: &Problem) -> Result<Response> {
    let response =
        Response::from_bytes(problem.body().to_string().into_bytes())?.with_status(problem.status);
    response
        .headers()
        .set("content-type", "application/problem+json")?;
    door::decorate(response, problem.retry_after, None)
}

fn internal(error: worker::Error) -> Problem {
    Problem::new(500, "internal-error", "Internal error", error.to_string())
}

fn js_internal(_: wasm_bindgen::JsValue) -> Problem {
    Problem::new(
        500,
        "internal-error",
        "Internal error",
        "the answer could not be built",
    )
}
