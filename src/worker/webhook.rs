//! `POST /webhooks/stripe`: verify, then have the event's claim authority claim, forward and
//! settle it; answer from its report.

use js_sys::Uint8Array;
use worker::{Context, Date, Env, Method, Request, Response, Result};

use super::body::{self, BodyError};
use super::door::{self, Visit};
use super::env_config;
use super::native;
use crate::authority::{AuthorityRequest, Deliver, Door, Forward};
use crate::config::{self, Config, DeliveryMode};
use crate::log_line::{LogLine, Route};
use crate::stripe::envelope;
use crate::stripe::signature::{self, SignatureError};
use crate::webhook::{self, Answer, Refusal};

/// Serves one delivery and writes its log line.
pub async fn serve(mut req: Request, env: &Env, ctx: &Context) -> Result<Response> {
    let mut visit = Visit::start(Route::Webhook, &req.method());
    let answer = deliver(&mut req, env, ctx, &mut visit.line).await;
    visit.line.outcome = answer.outcome;
    let response = door::json(
        answer.status,
        &answer.body,
        answer.retry_after,
        answer.allow,
    )?;
    Ok(visit.finish(env, response))
}

/// Config, body, verify, envelope, then the delivery; the answer.
async fn deliver(req: &mut Request, env: &Env, ctx: &Context, line: &mut LogLine) -> Answer {
    if req.method() != Method::Post {
        return refused(line, Refusal::MethodNotAllowed);
    }
    let config = match env_config::config(env) {
        Ok(config) => config,
        Err(problems) => {
            let answer = webhook::refusal_answer(&Refusal::Misconfigured(problems.to_vec()));
            line.detail = Some(config::describe(&problems));
            return answer;
        }
    };
    let limit = config.delivery.max_body_bytes;
    let body = match body::read_capped_js(req, limit).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => return refused(line, Refusal::BodyTooLarge { limit }),
        Err(BodyError::Unreadable) => return refused(line, Refusal::UnreadableBody),
    };
    let headers = req.headers();
    let signature_header = headers.get(signature::HEADER).ok().flatten();
    if let Err(error) = verify(&config, signature_header.as_deref(), &body).await {
        return refused(line, Refusal::Signature(error));
    }
    let event = match native::envelope_fields(&body).and_then(envelope::from_fields) {
        Ok(event) => event,
        Err(error) => return refused(line, Refusal::Envelope(error)),
    };
    line.key = Some(event.id.clone());
    line.event_type = Some(event.event_type.clone());
    let content_type = headers
        .get("content-type")
        .ok()
        .flatten()
        .unwrap_or_else(|| "application/json".into());
    if config.queue.mode == DeliveryMode::Queue {
        // Stored, then acknowledged; the event's object delivers it (its alarm), signing each
        // attempt anew.
        let enqueue = AuthorityRequest::Enqueue {
            key: event.id.clone(),
            policy: config.webhook.claims,
            headers: vec![("content-type".into(), content_type)],
        };
        let (reply, _) = door::send(env, ctx, enqueue, &body, line).await;
        return webhook::after_enqueue(&reply, &event.id);
    }
    let forward = Forward {
        url: config.webhook.origin_url.to_string(),
        method: "POST".into(),
        headers: vec![
            ("content-type".into(), content_type),
            (
                signature::HEADER.into(),
                signature_header.unwrap_or_default(),
            ),
        ],
        timeout_ms: config.delivery.forward_timeout_ms,
        wait_ms: config.delivery.late_answer_wait_ms,
    };
    let make = |nonce| Deliver {
        key: event.id.clone(),
        policy: config.webhook.claims,
        nonce,
        fingerprint: None,
        forward,
        door: Door::Webhook,
    };
    let (reply, _) = door::deliver(env, ctx, make, &body, line).await;
    webhook::after_delivery(&reply, &event.id, Date::now().as_millis())
}

/// Verifies the signature: the header parsed and the verdict decided by the pure rules, the
/// MACs computed by the runtime's WebCrypto over the body where it lies.
async fn verify(
    config: &Config,
    header: Option<&str>,
    body: &Uint8Array,
) -> Result<i64, SignatureError> {
    let parsed = signature::parse_header(header.ok_or(SignatureError::Missing)?)?;
    let secrets = &config.webhook.secrets;
    // A failure of WebCrypto itself is not the sender's: it cannot match.
    let expected = native::macs(secrets, parsed.timestamp, body)
        .await
        .unwrap_or_default();
    let now_seconds = (Date::now().as_millis() / 1_000) as i64;
    signature::decide(
        &parsed,
        &expected,
        now_seconds,
        config.webhook.signature_tolerance_seconds,
    )
}

fn refused(line: &mut LogLine, refusal: Refusal) -> Answer {
    let answer = webhook::refusal_answer(&refusal);
    line.detail = answer.detail();
    answer
}
