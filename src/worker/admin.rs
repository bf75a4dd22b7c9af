//! `/admin/...`: inspect, release and forget records. Off unless `ADMIN_TOKEN` is set. The
//! decisions are the answer table in [`crate::admin`]; this reads, asks, and renders.

use worker::{Env, Method, Response, Result};

use super::admin_index;
use super::authority_client::AuthorityClient;
use super::clock;
use super::door::Visit;
use super::env_config;
use super::inbound::Inbound;
use super::index_client;
use crate::admin::{self, dead_letters, page, Action, AdminAnswer};
use crate::answer::HttpAnswer;
use crate::authority::AuthorityRequest;
use crate::config::Config;
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

/// The answer: the operator page and its assets without a token (while the admin API is on),
/// every other route with one.
async fn answer(req: &Inbound, env: &Env, rest: &str, line: &mut LogLine) -> Result<Answer> {
    let Ok(config) = env_config::config(env) else {
        return Ok(Answer::Api(AdminAnswer::misconfigured()));
    };
    let Some(token) = &config.admin.token else {
        return Ok(Answer::Api(AdminAnswer::off()));
    };
    if req.method() == Method::Get {
        if let Some(asset) = page::asset(rest) {
            line.outcome = Outcome::Code("admin_page");
            return Ok(Answer::Page(asset));
        }
    }
    let authorization = req.headers().get("authorization")?;
    if !admin::authorized(authorization.as_deref(), token.expose_str()) {
        return Ok(Answer::Api(AdminAnswer::unauthorized()));
    }
    let url = req.url()?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let pairs = pairs
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    match dead_letters::index_call(req.method().as_ref(), rest, pairs) {
        Some(Ok(call)) => admin_index::answer(env, &config, call)
            .await
            .map(Answer::Api),
        Some(Err(refused)) => Ok(Answer::Api(refused)),
        None => record_call(req, env, &config, rest, line)
            .await
            .map(Answer::Api),
    }
}

/// An admin API answer, or one of the page's assets.
enum Answer {
    Api(AdminAnswer),
    Page(HttpAnswer),
}

/// A call on one record: inspect, release, forget or redeliver it.
async fn record_call(
    req: &Inbound,
    env: &Env,
    config: &Config,
    rest: &str,
    line: &mut LogLine,
) -> Result<AdminAnswer> {
    let call = match admin::call(req.method().as_ref(), rest) {
        Ok(route) => route,
        Err(error) => return Ok(AdminAnswer::for_call_error(error)),
    };
    line.key = Some(call.key.clone());
    let force = req
        .url()?
        .query_pairs()
        .any(|(name, value)| name == "force" && value == "true");
    let policy = admin::policy_for(
        call.family,
        config.webhook.claims,
        config.api.as_ref().map(|api| api.claims),
    );
    let client = AuthorityClient::new(env)?;
    let inspected = client
        .send(&AuthorityRequest::Inspect {
            key: call.key.clone(),
        })
        .await;
    let next = admin::after_inspect(call.action, &inspected, clock::now_ms(), force);
    let change = match next.into_request(&call.key, policy) {
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
    if answer.status < 400 && call.action != Action::Inspect {
        line.raise(Level::Warn); // an operator changed a record
    }
    Ok(answer)
}
