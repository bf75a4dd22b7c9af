//! The adapter to the Workers runtime: the fetch entry point, the claim authority object and
//! the clients it uses. Every decision is made by the pure modules; this only moves bytes.

mod admin;
mod api;
mod authority_client;
mod authority_wire;
mod background;
mod body;
mod claim_object;
mod clock;
mod delivery;
mod door;
mod drive;
mod env_config;
mod failure_index;
mod forward;
mod inbound;
mod index_client;
mod keeper;
mod kv_store;
mod log;
mod metrics;
mod native;
mod rate_limit;
mod rpc;
mod runtime;
mod test_routes;
mod webhook;

use worker::{event, web_sys, Context, Env, Method, Response, Result};

use inbound::Inbound;

use crate::config;
use crate::health;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::providers::Provider;

/// Serves one request (see [`route`]). A runtime error on the way is logged with its text and
/// answered 500 `internal_error` with a fixed detail: its text can quote URLs, headers or
/// values, and never reaches the caller.
#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> Result<Response> {
    let req = Inbound::new(req);
    let path = req.path();
    let method = req.method();
    match route(req, &path, &env, &ctx).await {
        Ok(response) => Ok(response),
        Err(error) => door::internal_error(&env, Route::of_path(&path), &method, &error),
    }
}

/// Routes one request. Unknown paths get 404; a known path with the wrong method gets 405.
async fn route(req: Inbound, path: &str, env: &Env, ctx: &Context) -> Result<Response> {
    if path == "/healthz" {
        return health(&req, env);
    }
    if let Some(provider) = path
        .strip_prefix("/webhooks/")
        .and_then(Provider::from_name)
    {
        return webhook::serve(provider, req, env, ctx).await;
    }
    if path.starts_with("/api/") {
        return api::serve(req, env, ctx).await;
    }
    if let Some(rest) = path.strip_prefix("/admin/") {
        return admin::serve(req, env, ctx, rest).await;
    }
    if let Some(rest) = path.strip_prefix("/_test/") {
        return test_routes::serve(req, env, ctx, rest).await;
    }
    let detail = format!("no route for {path}");
    let refusal = (404, "not_found", detail.as_str());
    door::refuse(env, (Route::Unknown, &req.method()), refusal, None)
}

/// `GET /healthz` (see [`health::answer`]): the sender details only for a caller with the
/// admin token; a broken configuration is logged at `error`, naming its keys.
fn health(req: &Inbound, env: &Env) -> Result<Response> {
    let method = req.method();
    if method != Method::Get && method != Method::Head {
        let refusal = (405, "method_not_allowed", "this route accepts GET, HEAD");
        return door::refuse(env, (Route::Health, &method), refusal, Some("GET, HEAD"));
    }
    let config = env_config::config(env);
    if let Err(problems) = &config {
        log::write(&LogLine {
            level: Level::Error,
            outcome: Outcome::Code("misconfigured"),
            detail: Some(config::describe(problems)),
            ..LogLine::new(Route::Health)
        });
    }
    let loaded = config.as_deref().map_err(|problems| &**problems);
    let authorization = req.headers().get("authorization")?;
    let view = health::view(loaded, authorization.as_deref());
    door::render(health::answer(loaded, view))
}
