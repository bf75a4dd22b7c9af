//! `/admin/...`: inspect, release, forget and redeliver records, and the failure index's
//! routes. Off unless `ADMIN_TOKEN` is set. The sequence is [`crate::admin::door`]; this runs it
//! over the request and renders its answer.

use worker::{Context, Env, Response, Result};

use super::door::Visit;
use super::env_config;
use super::inbound::Inbound;
use super::runtime::Doorway;
use crate::admin::door::{self, Served};
use crate::log_line::Route;

/// Serves one admin request; `rest` is the path after `/admin/`.
pub async fn serve(req: Inbound, env: &Env, ctx: &Context, rest: &str) -> Result<Response> {
    let method = req.method();
    let mut visit = Visit::start(Route::Admin, &method);
    let loaded = env_config::config(env);
    let token = env_config::admin_token(env, &loaded);
    let pairs: Vec<(String, String)> = req.url()?.query_pairs().into_owned().collect();
    let request = (method.as_ref(), rest, pairs.as_slice());
    let token = token.as_ref().map(|token| token.expose_str());
    let config = loaded.as_deref().map_err(|problems| &**problems);
    let doorway = Doorway {
        req: &req,
        env,
        ctx,
    };
    match door::serve(&doorway, request, token, config, &mut visit.line).await {
        Served::Api(answer) => visit.answer(env, answer.http()),
        Served::Page(asset) => visit.answer(env, asset),
    }
}
