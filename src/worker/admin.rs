//! `/admin/...`: inspect, release and forget records. Off unless `ADMIN_TOKEN` is set. The
//! decisions are the answer table in [`crate::admin`]; this reads, asks, and renders.

use worker::{Env, Response, Result};

use super::admin_index;
use super::authority_client::AuthorityClient;
use super::clock;
use super::door::Visit;
use super::env_config;
use super::inbound::Inbound;
use super::index_client;
use crate::admin::{self, dead_letters, AdminAnswer, AdminRoute, RecordCall};
use crate::answer::HttpAnswer;
use crate::authority::AuthorityRequest;
use crate::failures::IndexRequest;
use crate::log_line::{Level, LogLine, Outcome, Route};

/// Serves one admin request; `rest` is the path after `/admin/`.
pub async fn serve(req: Inbound, env: &Env, rest: &str) -> Result<Response> {
    let mut visit = Visit::start(Route::Admin, &req.method());
    match answer(&req, env, rest, &mut visit.line).await? {
        Answer::Api(answer) => {
            visit.line.outcome = answer.outcome;
            visit.answer(env, answer.http())
        }
        Answer::Page(asset) => visit.answer(env, asset),
    }
}

/// The answer (see [`admin::route`]).
async fn answer(req: &Inbound, env: &Env, rest: &str, line: &mut LogLine) -> Result<Answer> {
    let loaded = env_config::config(env);
    let token = env_config::admin_token(env, &loaded);
    let authorization = req.headers().get("authorization")?;
    let method = req.method();
    let pairs: Vec<(String, String)> = req.url()?.query_pairs().into_owned().collect();
    let route = admin::route(
        (method.as_ref(), rest, &pairs),
        token.as_ref().map(|token| token.expose_str()),
        authorization.as_deref(),
        loaded.as_deref().map_err(|problems| &**problems),
    );
    Ok(match route {
        AdminRoute::Page(asset) => {
            line.outcome = Outcome::Code("admin_page");
            Answer::Page(asset)
        }
        AdminRoute::Answer(answer, detail) => {
            line.detail = detail;
            Answer::Api(answer)
        }
        AdminRoute::Index(call, policy) => {
            Answer::Api(admin_index::answer(env, policy, call).await?)
        }
        AdminRoute::Record(call) => Answer::Api(record_call(env, call, line).await?),
    })
}

/// An admin API answer, or one of the page's assets.
enum Answer {
    Api(AdminAnswer),
    Page(HttpAnswer),
}

/// A call on one record: inspect it, then release, forget or redeliver it as the answer
/// table decides.
async fn record_call(env: &Env, record: RecordCall, line: &mut LogLine) -> Result<AdminAnswer> {
    let RecordCall {
        call,
        force,
        policy,
    } = &record;
    line.key = Some(call.key.clone());
    let client = AuthorityClient::new(env)?;
    let inspected = client
        .send(&AuthorityRequest::Inspect {
            key: call.key.clone(),
        })
        .await;
    let next = admin::after_inspect(call.action, &inspected, clock::now_ms(), *force);
    let change = match next.into_request(&call.key, *policy) {
        Ok(change) => change,
        Err(answer) => return Ok(answer),
    };
    let changed = client.send(&change).await;
    // An event the failure index shows, forgotten: the index hears it (best effort; a lost
    // report leaves the entry until an action finds the record gone, or it expires).
    if let Some(report) = dead_letters::forgotten_report(&inspected, &changed, clock::now_ms()) {
        index_client::send(env, &IndexRequest::Report(report)).await;
    }
    let answer = admin::after_change(&changed);
    if record.changed(&answer) {
        line.raise(Level::Warn);
    }
    Ok(answer)
}
