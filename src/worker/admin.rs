//! `/admin/...`: inspect, release and forget records. Off unless `ADMIN_TOKEN` is set. The
//! decisions are the answer table in [`crate::admin`]; this reads, asks, and renders.

use worker::{Env, Method, Response, Result};

use super::authority_client::AuthorityClient;
use super::clock;
use super::door::Visit;
use super::env_config;
use super::inbound::Inbound;
use crate::admin::{self, page, Action, AdminAnswer, Next};
use crate::answer::HttpAnswer;
use crate::authority::AuthorityRequest;
use crate::config::Config;
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
    record_call(req, env, &config, token.expose_str(), rest, line)
        .await
        .map(Answer::Api)
}

/// An admin API answer, or one of the page's assets.
enum Answer {
    Api(AdminAnswer),
    Page(HttpAnswer),
}

async fn record_call(
    req: &Inbound,
    env: &Env,
    config: &Config,
    token: &str,
    rest: &str,
    line: &mut LogLine,
) -> Result<AdminAnswer> {
    let authorization = req.headers().get("authorization")?;
    if !admin::authorized(authorization.as_deref(), token) {
        return Ok(AdminAnswer::unauthorized());
    }
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
    let change = match admin::after_inspect(call.action, &inspected, clock::now_ms(), force) {
        Next::Answer(answer) => return Ok(answer),
        Next::Release {
            fence,
            reason,
            only_after_lease,
        } => AuthorityRequest::Release {
            key: call.key.clone(),
            fence,
            reason,
            policy,
            only_after_lease,
        },
        Next::Forget { fence } => AuthorityRequest::Forget {
            key: call.key.clone(),
            fence,
        },
        Next::Redeliver => AuthorityRequest::Redeliver {
            key: call.key.clone(),
            policy,
        },
    };
    let answer = admin::after_change(&client.send(&change).await);
    if answer.status < 400 && call.action != Action::Inspect {
        line.raise(Level::Warn); // an operator changed a record
    }
    Ok(answer)
}
