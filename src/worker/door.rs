//! What every front door's adapter does, written once: time the request and write its one log
//! line and one metric; run a delivery in its key's claim authority where a sender's hang-up
//! cannot cut it off; render an answer with `Retry-After` and `Allow`.

use js_sys::Uint8Array;
use worker::web_sys::ReadableStream;
use worker::{Context, Env, Method, Response, Result};

use super::authority_client::AuthorityClient;
use super::background;
use super::clock;
use super::log;
use super::metrics;
use crate::authority::{AuthorityReply, AuthorityRequest, Deliver, Delivery};
use crate::claim::Nonce;
use crate::log_line::{Level, LogLine, Route};
use crate::origin::{OriginOutcome, Verdict};

/// One request being served: its log line, filled in as it goes, and when it started.
pub struct Visit {
    started: u64,
    /// The request's log line.
    pub line: LogLine,
}

impl Visit {
    /// Starts serving a `method` request on `route`.
    pub fn start(route: Route, method: &Method) -> Visit {
        Visit {
            started: clock::now_ms(),
            line: LogLine {
                method: Some(method.to_string()),
                ..LogLine::new(route)
            },
        }
    }

    /// Finishes with `response`: records its status (raising the level for this service's own
    /// 4xx and 5xx) and the time taken, writes the log line and the metric, returns it.
    pub fn finish(mut self, env: &Env, response: Response) -> Response {
        self.line.answered(response.status_code());
        self.line.duration_ms = Some(clock::now_ms().saturating_sub(self.started));
        log::write(&self.line);
        metrics::count(env, &self.line);
        response
    }
}

/// Runs a delivery in its key's claim authority and returns the reply, with the origin's
/// answer when it streams back. `make` builds the delivery around a fresh nonce. What the reply
/// reports (attempt, origin status and time, settle, classified reason) is noted on `line`.
/// Failures come back as a `StoreFailed` reply.
pub async fn deliver(
    env: &Env,
    ctx: &Context,
    make: impl FnOnce(Nonce) -> Deliver,
    body: &Uint8Array,
    line: &mut LogLine,
) -> (AuthorityReply, Option<ReadableStream>) {
    match Nonce::random() {
        Ok(nonce) => send(env, ctx, AuthorityRequest::Deliver(make(nonce)), body, line).await,
        Err(error) => note(failed(true, format!("no random bytes: {error}")), line),
    }
}

/// Sends `request` with `body` beside it to its key's claim authority and returns the reply.
/// The request runs inside `waitUntil`, so a sender that hangs up cannot cut it off (between
/// a claim and its forward, or before an event is stored).
pub async fn send(
    env: &Env,
    ctx: &Context,
    request: AuthorityRequest,
    body: &Uint8Array,
    line: &mut LogLine,
) -> (AuthorityReply, Option<ReadableStream>) {
    let client = match AuthorityClient::new(env) {
        Ok(client) => client,
        Err(error) => return note(failed(false, error.to_string()), line),
    };
    let body = body.clone();
    let sent = background::to_completion(ctx, async move {
        client.send_with_body(&request, Some(&body)).await
    })
    .await;
    let reply = sent.unwrap_or_else(|| failed(true, "the request was cut off".into()));
    note(reply, line)
}

fn failed(retryable: bool, detail: String) -> (AuthorityReply, Option<ReadableStream>) {
    (AuthorityReply::StoreFailed { retryable, detail }, None)
}

fn note(
    reply: (AuthorityReply, Option<ReadableStream>),
    line: &mut LogLine,
) -> (AuthorityReply, Option<ReadableStream>) {
    match &reply.0 {
        AuthorityReply::StoreFailed { detail, .. } => line.detail = Some(detail.clone()),
        AuthorityReply::Delivery(Delivery::Forwarded(report)) => {
            line.attempt = Some(report.attempt);
            line.takeover = Some(report.takeover);
            line.origin_ms = Some(report.origin_ms);
            line.settle = Some(report.settle);
            if let OriginOutcome::Answered { status } = report.outcome {
                line.origin_status = Some(status);
            }
            if let Verdict::Failed(reason) | Verdict::Unknown(reason) = report.verdict {
                line.detail = Some(reason.to_string());
            }
            if !report.settle.is_clean() {
                line.raise(Level::Warn);
            }
        }
        _ => {}
    }
    reply
}

/// A JSON answer, with `Retry-After` (seconds) and `Allow` when given.
pub fn json(
    status: u16,
    body: &serde_json::Value,
    retry_after: Option<u64>,
    allow: Option<&str>,
) -> Result<Response> {
    let response = Response::from_json(body)?.with_status(status);
    decorate(response, retry_after, allow)
}

/// Adds `Retry-After` (seconds) and `Allow` to `response` when given.
pub fn decorate(
    response: Response,
    retry_after: Option<u64>,
    allow: Option<&str>,
) -> Result<Response> {
    if let Some(seconds) = retry_after {
        response
            .headers()
            .set("retry-after", &seconds.to_string())?;
    }
    if let Some(allow) = allow {
        response.headers().set("allow", allow)?;
    }
    Ok(response)
}
