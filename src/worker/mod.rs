//! The adapter to the Workers runtime: the fetch entry point, the claim authority object and
//! the clients it uses. Every decision is made by the pure modules; this only moves bytes.

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

use worker::{event, web_sys, Context, Env, Method, Response, Result};

use door::Visit;
use inbound::Inbound;
use runtime::Doorway;

use crate::config;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::providers::Provider;
use crate::runtime::Fault;
use crate::secret::Secret;
use crate::test_routes::door::Served;
use crate::{admin, health, test_routes, webhook};

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

/// Routes one request to its door (the webhook, Idempotency-Key, admin and test doors'
/// sequences are [`crate::webhook::door`], [`crate::idempotency::door`], [`crate::admin::door`]
/// and [`crate::test_routes::door`]). Unknown paths get 404; a known path with the wrong
/// method gets 405.
async fn route(req: Inbound, path: &str, env: &Env, ctx: &Context) -> Result<Response> {
    if path == "/healthz" {
        return health(&req, env);
    }
    if path.starts_with("/api/") {
        return api::serve(req, env, ctx).await;
    }
    let method = req.method();
    let loaded = env_config::config(env);
    let config = loaded.as_deref().map_err(|problems| &**problems);
    let doorway = Doorway {
        req: &req,
        env,
        ctx,
    };
    let webhook = path.strip_prefix("/webhooks/");
    if let Some(provider) = webhook.and_then(Provider::from_name) {
        let mut visit = Visit::start(Route::Webhook, &method);
        let line = &mut visit.line;
        let answer = webhook::door::serve(&doorway, provider, config, method.as_ref(), line).await;
        return visit.answer(env, answer);
    }
    let token = || env_config::admin_token(env, &loaded);
    if let Some(rest) = path.strip_prefix("/admin/") {
        let token = token();
        let token = token.as_ref().map(Secret::expose_str);
        let pairs: Vec<(String, String)> = req.url()?.query_pairs().into_owned().collect();
        let mut visit = Visit::start(Route::Admin, &method);
        let request = (method.as_ref(), rest, pairs.as_slice());
        let line = &mut visit.line;
        let served = admin::door::serve(&doorway, request, token, config, line).await;
        return visit.answer(env, served.map_err(fault)?.http());
    }
    if let Some(rest) = path.strip_prefix("/_test/") {
        let token = token();
        let token = token.as_ref().map(Secret::expose_str);
        let mut visit = Visit::start(Route::Test, &method);
        let request = (method.as_ref(), rest);
        let line = &mut visit.line;
        let served = test_routes::door::serve(&doorway, request, token, config, line).await;
        return match served.map_err(fault)? {
            Served::Answer(answer) => visit.answer(env, answer),
            Served::Panic => panic!("a panic asked for by POST /_test/panic"),
            Served::Error => Err(worker::Error::RustError(TEST_ERROR.into())),
        };
    }
    let detail = format!("no route for {path}");
    let refusal = (404, "not_found", detail.as_str());
    door::refuse(env, (Route::Unknown, &method), refusal, None)
}

/// A runtime fault as a runtime error (answered 500 `internal_error`, its text logged).
fn fault(Fault(detail): Fault) -> worker::Error {
    worker::Error::RustError(detail)
}

/// The text of the runtime error `POST /_test/error` raises: the tests check that it reaches
/// the log line and never the answer.
const TEST_ERROR: &str =
    "a runtime error asked for by POST /_test/error (https://user:secret@origin.example)";

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
