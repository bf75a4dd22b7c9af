//! `POST /webhooks/stripe`: verify, then have the event's claim authority claim, forward and
//! settle it; answer from its report.

use js_sys::Uint8Array;
use worker::{Context, Date, Env, Method, Request, Response, Result};

use super::authority_client::AuthorityClient;
use super::background;
use super::body::{self, BodyError};
use super::env_config;
use super::log;
use super::metrics;
use super::respond;
use crate::authority::{AuthorityReply, AuthorityRequest, Deliver, Delivery, Door, Forward};
use crate::claim::Nonce;
use crate::config;
use crate::log_line::LogLine;
use crate::origin::{OriginOutcome, Verdict};
use crate::stripe::{envelope, signature};
use crate::webhook::{self, Answer, Refusal};

/// Serves one delivery and writes its log line.
pub async fn serve(mut req: Request, env: &Env, ctx: &Context) -> Result<Response> {
    if req.method() != Method::Post {
        return respond::method_not_allowed("webhook", &req.method(), "POST");
    }
    let started = Date::now().as_millis();
    let mut line = LogLine {
        level: "info",
        route: "webhook",
        method: Some("POST".into()),
        ..LogLine::default()
    };
    let answer = deliver(&mut req, env, ctx, &mut line).await;
    line.status = Some(answer.status);
    line.outcome = answer.outcome;
    line.duration_ms = Some(Date::now().as_millis().saturating_sub(started));
    if answer.status >= 500 && line.level == "info" {
        line.level = "error";
    } else if answer.status >= 400 && line.level == "info" {
        line.level = "warn";
    }
    log::write(&line);
    metrics::count(env, &line);
    to_response(&answer)
}

async fn deliver(req: &mut Request, env: &Env, ctx: &Context, line: &mut LogLine) -> Answer {
    let config = match env_config::config(env) {
        Ok(config) => config,
        Err(problems) => {
            line.detail = Some(config::describe(&problems));
            return webhook::refusal_answer(&Refusal::Misconfigured(problems));
        }
    };
    let body = match body::read_capped(req, config.max_body_bytes).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => {
            return refused(
                line,
                Refusal::BodyTooLarge {
                    limit: config.max_body_bytes,
                },
            )
        }
        Err(BodyError::Unreadable) => return refused(line, Refusal::UnreadableBody),
    };
    let headers = req.headers();
    let signature_header = headers.get(signature::HEADER).ok().flatten();
    let now_seconds = (Date::now().as_millis() / 1_000) as i64;
    if let Err(error) = signature::verify(
        signature_header.as_deref(),
        &body,
        &config.webhook_secrets,
        now_seconds,
        config.signature_tolerance_seconds,
    ) {
        return refused(line, Refusal::Signature(error));
    }
    let event = match envelope::parse(&body) {
        Ok(event) => event,
        Err(error) => return refused(line, Refusal::Envelope(error)),
    };
    line.key = Some(event.id.clone());
    line.event_type = Some(event.event_type.clone());

    let client = match AuthorityClient::new(env) {
        Ok(client) => client,
        Err(error) => {
            line.detail = Some(error.to_string());
            return webhook::store_failure_answer(&AuthorityReply::StoreFailed {
                retryable: false,
                detail: String::new(),
            });
        }
    };
    let nonce = match Nonce::random() {
        Ok(nonce) => nonce,
        Err(error) => {
            line.detail = Some(format!("no random bytes: {error}"));
            return webhook::store_failure_answer(&AuthorityReply::StoreFailed {
                retryable: true,
                detail: String::new(),
            });
        }
    };
    let content_type = headers
        .get("content-type")
        .ok()
        .flatten()
        .unwrap_or_else(|| "application/json".into());
    let deliver = AuthorityRequest::Deliver(Deliver {
        key: event.id.clone(),
        policy: config.webhook_claims,
        nonce,
        fingerprint: None,
        forward: Forward {
            url: config.origin_url.clone(),
            method: "POST".into(),
            headers: vec![
                ("content-type".into(), content_type),
                (
                    signature::HEADER.into(),
                    signature_header.unwrap_or_default(),
                ),
            ],
            timeout_ms: config.forward_timeout_ms,
            wait_ms: config.late_answer_wait_ms,
        },
        door: Door::Webhook,
    });
    // The delivery runs in the event's object; the request to it runs inside waitUntil, so a
    // sender that hangs up cannot cut it off between the claim and the forward.
    let body = Uint8Array::from(body.as_slice());
    let sent = background::to_completion(ctx, async move {
        client.send_with_body(&deliver, Some(&body)).await.0
    })
    .await;
    let reply = sent.unwrap_or(AuthorityReply::StoreFailed {
        retryable: true,
        detail: "the delivery was cut off".into(),
    });
    match &reply {
        AuthorityReply::StoreFailed { detail, .. } => line.detail = Some(detail.clone()),
        AuthorityReply::Delivery(Delivery::Forwarded(report)) => {
            line.attempt = Some(report.attempt);
            line.takeover = Some(report.takeover);
            line.origin_status = match report.outcome {
                OriginOutcome::Answered { status } => Some(status),
                _ => None,
            };
            line.origin_ms = Some(report.origin_ms);
            line.settle = Some(report.settle.word());
            if !report.settle.is_clean() {
                line.level = "warn";
            }
            if let Verdict::Failed(reason) | Verdict::Unknown(reason) = report.verdict {
                line.detail = Some(reason.to_string());
            }
        }
        _ => {}
    }
    webhook::after_delivery(&reply, &event.id, Date::now().as_millis())
}

fn refused(line: &mut LogLine, refusal: Refusal) -> Answer {
    let answer = webhook::refusal_answer(&refusal);
    line.detail = answer.body["detail"].as_str().map(str::to_owned);
    answer
}

fn to_response(answer: &Answer) -> Result<Response> {
    let response = Response::from_json(&answer.body)?.with_status(answer.status);
    if let Some(seconds) = answer.retry_after {
        response
            .headers()
            .set("retry-after", &seconds.to_string())?;
    }
    Ok(response)
}
