//! `POST /webhooks/stripe`: verify, claim, forward, finalize or release, answer.

use worker::{Context, Date, Env, Headers, Method, Request, Response, Result};

use super::authority_client::AuthorityClient;
use super::body::{self, BodyError};
use super::env_config;
use super::forward::{self, Outgoing, Read};
use super::log;
use super::metrics;
use super::respond;
use super::settle::{self, Settle};
use crate::authority::{AuthorityReply, AuthorityRequest, Won};
use crate::claim::Nonce;
use crate::config::{self, Config};
use crate::log_line::LogLine;
use crate::origin::OriginResult;
use crate::stripe::{envelope, signature};
use crate::webhook::{self, Answer, Refusal};

/// Headers added to the forwarded event.
const EVENT_ID_HEADER: &str = "x-webhook-dedup-event-id";
const ATTEMPT_HEADER: &str = "x-webhook-dedup-attempt";
const TAKEOVER_HEADER: &str = "x-webhook-dedup-takeover";

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
    let reply = client
        .send(
            &event.id,
            &AuthorityRequest::Claim {
                key: event.id.clone(),
                policy: config.webhook_claims,
                nonce,
                fingerprint: None,
            },
        )
        .await;
    if let AuthorityReply::StoreFailed { detail, .. } = &reply {
        line.detail = Some(detail.clone());
    }
    let won = match webhook::after_claim(reply, Date::now().as_millis()) {
        Ok(won) => won,
        Err(answer) => return answer,
    };
    line.attempt = Some(won.attempt);
    line.takeover = Some(won.takeover);

    // Forward and settle inside waitUntil, so the claim is finalized or released even if the
    // sender hangs up; this request waits for the result to answer.
    let work = Claimed {
        config,
        client,
        event_id: event.id,
        won,
        body,
        signature: signature_header.unwrap_or_default(),
        content_type: headers
            .get("content-type")
            .ok()
            .flatten()
            .unwrap_or_else(|| "application/json".into()),
    };
    match settle::to_completion(ctx, work.run()).await {
        Some(Settled {
            answer,
            origin_status,
            origin_ms,
            settle,
            detail,
        }) => {
            line.origin_status = origin_status;
            line.origin_ms = Some(origin_ms);
            line.settle = Some(settle);
            line.detail = detail;
            if settle != "finalized" && settle != "released" {
                line.level = "warn";
            }
            answer
        }
        None => webhook::store_failure_answer(&AuthorityReply::StoreFailed {
            retryable: true,
            detail: String::new(),
        }),
    }
}

/// A won claim, with everything needed to forward the event and settle the claim.
struct Claimed {
    config: Config,
    client: AuthorityClient,
    event_id: String,
    won: Won,
    body: Vec<u8>,
    signature: String,
    content_type: String,
}

struct Settled {
    answer: Answer,
    origin_status: Option<u16>,
    origin_ms: u64,
    settle: &'static str,
    detail: Option<String>,
}

impl Claimed {
    async fn run(self) -> Settled {
        let (origin, origin_ms) = match self.forward_headers() {
            Ok(headers) => {
                let forwarded = forward::send(
                    Outgoing {
                        url: &self.config.origin_url,
                        method: Method::Post,
                        headers,
                        body: Some(forward::bytes_body(&self.body)),
                        timeout_ms: self.config.forward_timeout_ms,
                    },
                    Read::Head,
                )
                .await;
                (forwarded.result, forwarded.ms)
            }
            Err(error) => (OriginResult::Unreachable(error.to_string()), 0),
        };
        let how = if origin.succeeded() {
            Settle::Finalize(None)
        } else {
            Settle::Release(origin.release_reason())
        };
        let settle_reply = settle::settle(
            &self.client,
            &self.event_id,
            self.won.fence,
            self.config.webhook_claims,
            how,
        )
        .await;
        let (answer, settle) = webhook::after_settle(&origin, &self.event_id, &settle_reply);
        let detail = match (&origin, &settle_reply) {
            (_, AuthorityReply::StoreFailed { detail, .. }) => Some(detail.clone()),
            (OriginResult::Unreachable(why), _) => Some(why.clone()),
            _ => None,
        };
        Settled {
            answer,
            origin_status: match origin {
                OriginResult::Responded { status } => Some(status),
                _ => None,
            },
            origin_ms,
            settle,
            detail,
        }
    }

    fn forward_headers(&self) -> Result<Headers> {
        let headers = Headers::new();
        headers.set("content-type", &self.content_type)?;
        headers.set(signature::HEADER, &self.signature)?;
        headers.set(EVENT_ID_HEADER, &self.event_id)?;
        headers.set(ATTEMPT_HEADER, &self.won.attempt.to_string())?;
        headers.set(
            TAKEOVER_HEADER,
            if self.won.takeover { "true" } else { "false" },
        )?;
        Ok(headers)
    }
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
