//! `/api/...`: the Idempotency-Key front door in front of `API_ORIGIN_URL`.

use worker::{Context, Date, Env, Headers, Method, Request, Response, Result};

use super::authority_client::AuthorityClient;
use super::body::{self, BodyError};
use super::env_config;
use super::forward::{self, Forwarded, OriginAnswer, Outgoing, Read, HOP_BY_HOP};
use super::log;
use super::metrics;
use super::settle::{self, Settle};
use crate::authority::{settle_word, AuthorityReply, AuthorityRequest};
use crate::claim::{CachedResponse, Fence, Nonce};
use crate::config::{self, ApiConfig, Config};
use crate::idempotency::{self as idem, Declined, Problem};
use crate::log_line::LogLine;
use crate::origin::OriginResult;

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
    let client = headers.get(&api.client_header).map_err(internal)?;
    if client.is_none() && !api.allow_anonymous {
        return Err(Problem::anonymous(&api.client_header));
    }
    let scope = idem::scope(client.as_deref(), &key);
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
    let reply = client
        .send(
            &scope,
            &AuthorityRequest::Claim {
                key: scope.clone(),
                policy: api.claims,
                nonce,
                fingerprint: Some(fingerprint),
            },
        )
        .await;
    if let AuthorityReply::StoreFailed { detail, .. } = &reply {
        line.detail = Some(detail.clone());
    }
    let won = match idem::after_claim(reply, Date::now().as_millis()) {
        Ok(won) => won,
        Err(Declined::Replay(cached)) => {
            line.outcome = "replayed";
            return replay(&cached).map_err(internal);
        }
        Err(Declined::Refuse(problem)) => return Err(problem),
    };
    line.attempt = Some(won.attempt);
    line.takeover = Some(won.takeover);
    let outgoing_headers = copy_request_headers(headers).map_err(internal)?;
    let work = Keyed {
        config,
        api,
        client,
        scope,
        fence: won.fence,
        target,
        method,
        headers: outgoing_headers,
        body,
    };
    let Some((forwarded, settle_reply)) = settle::to_completion(ctx, work.run()).await else {
        return Err(idem::store_problem(&AuthorityReply::StoreFailed {
            retryable: true,
            detail: String::new(),
        }));
    };
    line.origin_ms = Some(forwarded.ms);
    line.settle = Some(settle_word(&settle_reply));
    if line.settle != Some("finalized") && line.settle != Some("released") {
        line.level = "warn";
    }
    match (forwarded.result, forwarded.answer) {
        (OriginResult::Responded { status }, Some(answer)) if answer.too_large => {
            line.origin_status = Some(status);
            Err(Problem::new(
                502,
                "origin-answer-too-large",
                "Origin answer too large",
                format!(
                    "the API origin's answer is larger than {} bytes; a final one is kept as status and headers only",
                    idem::MAX_ANSWER_BYTES
                ),
            ))
        }
        (OriginResult::Responded { status }, Some(answer)) => {
            line.origin_status = Some(status);
            line.outcome = if idem::is_final(status) {
                "executed"
            } else {
                "origin_failed"
            };
            fresh_response(answer.status, &answer.headers, &answer.body).map_err(internal)
        }
        (result, _) => Err(origin_problem(&result, line)),
    }
}

/// The problem for a forward that got no answer: 504 on time-out, 502 otherwise.
fn origin_problem(result: &OriginResult, line: &mut LogLine) -> Problem {
    if *result == OriginResult::TimedOut {
        return Problem::new(
            504,
            "origin-timeout",
            "Origin timed out",
            "the API origin did not answer in time; the request may be retried with the same key",
        );
    }
    line.detail = Some(result.release_reason());
    Problem::new(
        502,
        "origin-unreachable",
        "Origin unreachable",
        "the API origin could not be reached; the request may be retried with the same key",
    )
}

/// A won claim for a keyed request, with everything needed to run it and settle.
struct Keyed {
    config: Config,
    api: ApiConfig,
    client: AuthorityClient,
    scope: String,
    fence: Fence,
    target: String,
    method: Method,
    headers: Headers,
    body: Vec<u8>,
}

impl Keyed {
    async fn run(self) -> (Forwarded, AuthorityReply) {
        let has_body = !matches!(self.method, Method::Get | Method::Head);
        let forwarded = forward::send(
            Outgoing {
                url: &self.target,
                method: self.method,
                headers: self.headers,
                body: has_body.then(|| forward::bytes_body(&self.body)),
                timeout_ms: self.config.forward_timeout_ms,
            },
            Read::Whole {
                cap: idem::MAX_ANSWER_BYTES,
            },
        )
        .await;
        let how = match (&forwarded.result, &forwarded.answer) {
            (OriginResult::Responded { status }, Some(answer)) if idem::is_final(*status) => {
                Settle::Finalize(Some(if answer.too_large {
                    CachedResponse {
                        status: answer.status,
                        headers: idem::cached_headers(&answer.headers),
                        body: Vec::new(),
                        body_omitted: true,
                    }
                } else {
                    idem::to_cache(
                        answer.status,
                        &answer.headers,
                        &answer.body,
                        self.api.max_response_bytes,
                    )
                }))
            }
            (result, _) => Settle::Release(result.release_reason()),
        };
        let reply =
            settle::settle(&self.client, &self.scope, self.fence, self.api.claims, how).await;
        (forwarded, reply)
    }
}

/// Client headers for the origin: all but hop-by-hop ones.
fn copy_request_headers(from: &Headers) -> Result<Headers> {
    let headers = Headers::new();
    for (name, value) in from.entries() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            headers.append(&name, &value)?;
        }
    }
    Ok(headers)
}

/// Sends the request to the origin untouched (body streamed) and returns its answer as is,
/// redirects included; 504 / 502 problems when it does not answer in time or at all.
async fn pass_through(
    req: Request,
    target: &str,
    timeout_ms: u64,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let headers = copy_request_headers(req.headers()).map_err(internal)?;
    let forwarded = forward::send(
        Outgoing {
            url: target,
            method: req.method(),
            headers,
            body: req.inner().body().map(Into::into),
            timeout_ms,
        },
        Read::Stream,
    )
    .await;
    line.origin_ms = Some(forwarded.ms);
    match (forwarded.result, forwarded.answer) {
        (
            OriginResult::Responded { status },
            Some(OriginAnswer {
                response: Some(response),
                ..
            }),
        ) => {
            line.origin_status = Some(status);
            Ok(response)
        }
        (result, _) => Err(origin_problem(&result, line)),
    }
}

/// The origin's first answer, passed to the client (its body already read and decoded).
fn fresh_response(status: u16, headers: &[(String, String)], body: &[u8]) -> Result<Response> {
    let out = Headers::new();
    for (name, value) in headers {
        if name != "content-encoding" {
            out.append(name, value)?;
        }
    }
    Ok(Response::from_bytes(body.to_vec())?
        .with_status(status)
        .with_headers(out))
}

/// A cached answer replayed: the same status, kept headers and body, plus the replay marker.
fn replay(cached: &CachedResponse) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in &cached.headers {
        headers.append(name, value)?;
    }
    headers.set(idem::REPLAYED_HEADER, "true")?;
    if cached.body_omitted {
        headers.set(idem::BODY_OMITTED_HEADER, "true")?;
    }
    Ok(Response::from_bytes(cached.body.clone())?
        .with_status(cached.status)
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
