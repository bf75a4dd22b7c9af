//! `/api/...`: the Idempotency-Key front door in front of `API_ORIGIN_URL` (its rules are in
//! [`crate::idempotency`]).

use worker::web_sys::ReadableStream;
use worker::{Context, Env, Response, Result};

use super::clock;
use super::door::Visit;
use super::env_config;
use super::forward::{self, Exchange};
use super::inbound::Inbound;
use super::runtime::Doorway;
use crate::claim_authority::Head;
use crate::idempotency::door::{self, Step};
use crate::idempotency::{self as idem, Confinement, Problem};
use crate::log_line::{LogLine, Route};

/// Serves one `/api/...` request (see [`door::serve`]) and writes its log line.
pub async fn serve(req: &Inbound, env: &Env, ctx: &Context) -> Result<Response> {
    let mut visit = Visit::start(Route::Idempotency, &req.method());
    match answer(req, env, ctx, &mut visit.line).await {
        Ok(response) => Ok(visit.finish(env, response)),
        Err(problem) => {
            problem.log_on(&mut visit.line);
            visit.answer(env, problem.http())
        }
    }
}

/// Runs the door's sequence, then carries out its step: the origin's live answer, a replay,
/// or the request passed through.
async fn answer(
    req: &Inbound,
    env: &Env,
    ctx: &Context,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let config = env_config::config(env);
    let loaded = config.as_deref().map_err(|problems| &**problems);
    let url = req.url().map_err(internal)?;
    let method = req.method();
    let doorway = Doorway { req, env, ctx };
    let path = (url.host_str(), url.path(), url.query());
    match door::serve(&doorway, loaded, method.as_ref(), path, line).await? {
        Step::Live(head, stream, confined) => live((&head, confined), stream.as_ref(), line),
        Step::Replay(answer) => super::door::render(answer).map_err(internal),
        Step::PassThrough {
            target,
            headers,
            timeout_ms,
            confinement,
        } => pass_through(req, (&target, &headers, confinement), timeout_ms, line).await,
    }
}

/// Sends the request to the origin untouched (body streamed) and returns its answer as is,
/// redirects included; 504 / 502 problems when it does not answer in time or at all.
async fn pass_through(
    req: &Inbound,
    (target, headers, confinement): (&str, &[(String, String)], Confinement),
    timeout_ms: u64,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let body = req.inner().body().map(Into::into);
    let started = clock::now_ms();
    let sent = Exchange::start(&req.inner().method(), target, headers, body.as_ref());
    let result = forward::answer_within(sent, timeout_ms).await;
    line.origin_ms = Some(clock::now_ms().saturating_sub(started));
    let response = result.map_err(|outcome| idem::origin_problem(&outcome))?;
    let head = Head {
        status: response.status(),
        headers: forward::answer_headers(&response),
    };
    line.origin_status = Some(head.status);
    live((&head, confinement), response.body().as_ref(), line)
}

/// The origin's answer passed on as it streams, confined (see [`idem::live_head`]); its status
/// is the origin's, logged as such, unless no response can carry it (this service's own 502).
fn live(
    (head, confinement): (&Head, Confinement),
    body: Option<&ReadableStream>,
    line: &mut LogLine,
) -> std::result::Result<Response, Problem> {
    let live = idem::live_head(head, confinement)?;
    let body = match body {
        Some(stream) if live.drop_body => {
            let _ = stream.cancel();
            None
        }
        other => other,
    };
    let response = forward::response(live.status, &live.headers, body)
        .map_err(|error| Problem::internal(format!("the answer could not be built: {error:?}")))?;
    line.status_from_origin = true;
    Ok(response.into())
}

/// A runtime error as a problem: its text goes to the log line only.
fn internal(error: worker::Error) -> Problem {
    Problem::internal(error.to_string())
}
