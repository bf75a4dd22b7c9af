//! `/api/...`: the Idempotency-Key front door in front of `API_ORIGIN_URL`.

use js_sys::Uint8Array;
use worker::web_sys::{self, ReadableStream};
use worker::{Context, Date, Env, Headers, Method, Request, Response, Result};

use super::authority_client::AuthorityClient;
use super::background;
use super::body::{self, BodyError};
use super::env_config;
use super::forward::{self, Exchange, Outgoing, HOP_BY_HOP};
use super::log;
use super::metrics;
use crate::authority::{AuthorityReply, AuthorityRequest, Deliver, Delivery, Door, Forward, Head};
use crate::claim::{CachedResponse, Nonce};
use crate::config;
use crate::idempotency::{self as idem, ApiAnswer, Problem};
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;

/// Serves one `/api/...` request and writes its log line.
pub async fn serve(req: Request, env: &Env, ctx: &Context) -> Result<Response> {
    let started = Date::now().as_millis();
    let mut line = LogLine {
        level: "info",
        route: "idempotency",
        method: Some(req.method().to_string()),
        ..LogLine::default()
    };
    let response = match handle(req, env, ctx, &mut line).await {
        Ok(response) => response,
        Err(problem) => {
            line.outcome = problem.slug;
            problem_response(&problem)?
        }
    };
    line.status = Some(response.status_code());
    line.duration_ms = Some(Date::now().as_millis().saturating_sub(started));
    if line.level == "info" && response.status_code() >= 500 && line.origin_status.is_none() {
        line.level = "error";
    }
    log::write(&line);
    metrics::count(env, &line);
    Ok(response)
}

async fn handle(
    mut req: Request,
    env: &Env,
    ctx: &Context,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let config = env_config::config(env).map_err(|problems| {
        line.detail = Some(config::describe(&problems));
        Problem::new(
            500,
            "misconfigured",
            "Not configured",
            format!(
                "the service is not configured: {}; see /healthz",
                config::keys(&problems)
            ),
        )
    })?;
    let Some(api) = config.api.clone() else {
        return Err(Problem::new(
            404,
            "not-found",
            "Not found",
            "the Idempotency-Key front door is off (no API_ORIGIN_URL)",
        ));
    };
    let url = req.url().map_err(internal)?;
    let path_and_query = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let target = format!("{}{}", api.origin_url, path_and_query);
    let method = req.method();
    let keyed_method = matches!(
        method,
        Method::Post | Method::Put | Method::Patch | Method::Delete
    );
    let raw_key = req.headers().get(idem::KEY_HEADER).map_err(internal)?;
    let raw_key = match (keyed_method, raw_key) {
        (true, Some(raw)) => raw,
        (true, None) if api.key_required => return Err(Problem::missing_key()),
        _ => {
            line.outcome = "passed_through";
            return pass_through(req, &target, config.forward_timeout_ms, line).await;
        }
    };
    let key = idem::parse_key(&raw_key).map_err(Problem::invalid_key)?;
    let client_value = req.headers().get(&api.client_header).map_err(internal)?;
    let client = idem::client_identity(client_value.as_deref());
    if client.is_none() && !api.allow_anonymous {
        return Err(Problem::anonymous(&api.client_header));
    }
    let address = req.headers().get("cf-connecting-ip").map_err(internal)?;
    if !within_rate_limit(env, client, address.as_deref()).await {
        return Err(Problem::rate_limited());
    }
    let body = body::read_capped(&mut req, config.max_body_bytes)
        .await
        .map_err(|error| match error {
            BodyError::TooLarge => Problem::new(
                413,
                "body-too-large",
                "Request body too large",
                format!("the body is larger than {} bytes", config.max_body_bytes),
            ),
            BodyError::Unreadable => Problem::new(
                400,
                "body-unreadable",
                "Request body unreadable",
                "the body could not be read to its end",
            ),
        })?;
    let headers = req.headers();
    let scope = idem::scope(client, &key);
    let content_type = headers.get("content-type").map_err(internal)?;
    let fingerprint = idem::fingerprint(
        method.as_ref(),
        &path_and_query,
        content_type.as_deref(),
        &body,
    );
    line.key = Some(scope.clone());

    let client = AuthorityClient::new(env).map_err(internal)?;
    let nonce = Nonce::random().map_err(|e| internal(worker::Error::RustError(e.to_string())))?;
    let deliver = AuthorityRequest::Deliver(Deliver {
        key: scope,
        policy: api.claims,
        nonce,
        fingerprint: Some(fingerprint),
        forward: Forward {
            url: target,
            method: method.to_string(),
            headers: request_headers(headers),
            timeout_ms: config.forward_timeout_ms,
            wait_ms: config.late_answer_wait_ms,
        },
        door: Door::Api {
            max_cached_body: api.max_response_bytes,
        },
    });
    let body = Uint8Array::from(body.as_slice());
    let (reply, stream) = background::to_completion(ctx, async move {
        client.send_with_body(&deliver, Some(&body)).await
    })
    .await
    .unwrap_or((
        AuthorityReply::StoreFailed {
            retryable: true,
            detail: "the request was cut off".into(),
        },
        None,
    ));
    match &reply {
        AuthorityReply::StoreFailed { detail, .. } => line.detail = Some(detail.clone()),
        AuthorityReply::Delivery(Delivery::Forwarded(report)) => {
            line.attempt = Some(report.attempt);
            line.takeover = Some(report.takeover);
            line.origin_ms = Some(report.origin_ms);
            line.settle = Some(report.settle.word());
            if let OriginOutcome::Answered { status } = report.outcome {
                line.origin_status = Some(status);
            }
            if !report.settle.is_clean() {
                line.level = "warn";
            }
        }
        _ => {}
    }
    match idem::after_delivery(&reply, Date::now().as_millis()) {
        ApiAnswer::Live(head) => {
            line.outcome = if idem::is_final(head.status) {
                "executed"
            } else {
                "origin_failed"
            };
            live_response(&head, stream.as_ref())
        }
        ApiAnswer::Replay(cached) => {
            line.outcome = "replayed";
            replay(&cached)
        }
        ApiAnswer::Refuse(problem) => Err(problem),
    }
}

/// The binding name of the optional rate limiter of keyed requests (`[[ratelimits]]`).
const RATE_LIMITER: &str = "IDEMPOTENCY_RATE_LIMITER";

/// True when the keyed request may go on: without the binding always; with it, only when both
/// its client (hashed) and its address (`CF-Connecting-IP`) are within the limit, so a client
/// that makes up a new identity per request is still bounded by its address. A limiter that
/// fails lets the request through: the limit bounds cost, it does not guard correctness.
async fn within_rate_limit(env: &Env, client: Option<&str>, address: Option<&str>) -> bool {
    let Ok(limiter) = env.rate_limiter(RATE_LIMITER) else {
        return true;
    };
    let mut allowed = true;
    for key in [
        idem::rate_limit_client_key(client),
        idem::rate_limit_address_key(address),
    ] {
        if let Ok(outcome) = limiter.limit(key).await {
            allowed &= outcome.success;
        }
    }
    allowed
}

/// Client headers for the origin: all but hop-by-hop ones.
fn request_headers(from: &Headers) -> Vec<(String, String)> {
    from.entries()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
        .collect()
}

/// Sends the request to the origin untouched (body streamed) and returns its answer as is,
/// redirects included; 504 / 502 problems when it does not answer in time or at all.
async fn pass_through(
    req: Request,
    target: &str,
    timeout_ms: u64,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let headers = request_headers(req.headers());
    let body = req.inner().body().map(Into::into);
    let started = Date::now().as_millis();
    let sent = Exchange::start(&Outgoing {
        url: target,
        method: req.inner().method().as_str(),
        headers: &headers,
        body: body.as_ref(),
    });
    let result = match sent {
        Ok(exchange) => match forward::within(exchange, timeout_ms).await {
            Ok(result) => result,
            Err(exchange) => {
                exchange.abort();
                Err(OriginOutcome::TimedOut)
            }
        },
        Err(outcome) => Err(outcome),
    };
    line.origin_ms = Some(Date::now().as_millis().saturating_sub(started));
    match result {
        Ok(response) => {
            let head = Head {
                status: response.status(),
                headers: forward::answer_headers(&response),
            };
            line.origin_status = Some(head.status);
            live_response(&head, response.body().as_ref())
        }
        Err(outcome) => Err(idem::origin_problem(&outcome)),
    }
}

/// The origin's answer, passed to the client as it streams (its body already decoded by the
/// runtime, so `content-encoding` is dropped). A status the runtime cannot represent in a
/// response (outside 200 to 599) is answered 502 instead.
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
    let init = web_sys::ResponseInit::new();
    init.set_status(status);
    init.set_headers(&headers);
    web_sys::Response::new_with_opt_readable_stream_and_init(body, &init)
        .map(Response::from)
        .map_err(js_internal)
}

/// A cached answer replayed: the same status, kept headers and body, plus the replay marker
/// (and a marker when its body was not kept).
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
    Ok(Response::from_bytes(cached.body.clone())
        .map_err(internal)?
        .with_status(status)
        .with_headers(headers))
}

fn problem_response(problem: &Problem) -> Result<Response> {
    let response =
        Response::from_bytes(problem.body().to_string().into_bytes())?.with_status(problem.status);
    response
        .headers()
        .set("content-type", "application/problem+json")?;
    if let Some(seconds) = problem.retry_after {
        response
            .headers()
            .set("retry-after", &seconds.to_string())?;
    }
    Ok(response)
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
