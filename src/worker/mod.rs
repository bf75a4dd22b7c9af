//! The adapter to the Workers runtime: the fetch entry point, the claim authority object and
//! the clients it uses. Every decision is made by the pure modules; this only moves bytes.

mod api;
mod background;
mod body;
mod claim_authority;
mod clock;
mod door;
mod env_config;
mod failure_index;
mod forward;
mod inbound;
mod kv_store;
mod log;
mod native;
mod object;
mod origin_gate;
mod rate_limit;
mod rpc;
mod runtime;
mod scheduled;
mod sender_api;

use worker::{event, web_sys, Context, Env, Response, Result};

use door::Visit;
use inbound::Inbound;
use runtime::Doorway;

use crate::log_line::Route;
use crate::routing::{self, Destination};
use crate::runtime::RuntimeFault;
use crate::secret::Secret;
use crate::test_routes::door::{self as test_door, TestRouteServed};
use crate::{admin, health, test_routes, webhook};

/// Serves one request (see [`route`]). A runtime error on the way is logged with its text and
/// answered 500 `internal_error` with a fixed detail: its text can quote URLs, headers or
/// values, and never reaches the caller. A body nothing read is cancelled before the answer
/// leaves (see [`Inbound::cancel_unread`]).
#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> Result<Response> {
    let req = Inbound::new(req);
    let (path, method) = (req.path(), req.method());
    let served = match route(&req, &path, &env, &ctx).await {
        Ok(response) => Ok(response),
        Err(error) => door::internal_error(&env, Destination::of(&path).route(), &method, &error),
    };
    req.cancel_unread();
    served
}

/// Serves one request at its path's [`Destination`] (the webhook, Idempotency-Key, admin and
/// test doors' sequences are [`crate::webhook::door`], [`crate::idempotency::door`],
/// [`crate::admin::door`] and [`crate::test_routes::door`]); an unknown path gets 404.
async fn route(req: &Inbound, path: &str, env: &Env, ctx: &Context) -> Result<Response> {
    let destination = Destination::of(path);
    match destination {
        Destination::Health => return health(req, env),
        Destination::Api => return api::serve(req, env, ctx).await,
        _ => {}
    }
    let method = req.method();
    let loaded = env_config::config(env);
    let config = loaded.as_deref().map_err(|problems| &**problems);
    let doorway = Doorway { req, env, ctx };
    let token = || env_config::admin_token(env, &loaded);
    let mut visit = Visit::start(destination.route(), &method);
    let line = &mut visit.line;
    let answer = match destination {
        Destination::Health | Destination::Api => unreachable!("answered above"),
        Destination::Webhook(provider) => {
            webhook::door::serve(&doorway, provider, config, method.as_ref(), line).await
        }
        Destination::Admin(rest) => {
            let token = token();
            let token = token.as_ref().map(Secret::expose_str);
            let url = req.url()?;
            let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
            let request = (method.as_ref(), rest, pairs.as_slice(), url.host_str());
            let served = admin::door::serve(&doorway, request, token, config, line).await;
            served.map_err(fault)?.http()
        }
        Destination::Test(rest) => {
            let token = token();
            let token = token.as_ref().map(Secret::expose_str);
            let request = (method.as_ref(), rest);
            let served = test_routes::door::serve(&doorway, request, token, config, line).await;
            match served.map_err(fault)? {
                TestRouteServed::Answer(answer) => answer,
                TestRouteServed::Panic => panic!("a panic asked for by POST /_test/panic"),
                TestRouteServed::Error => {
                    return Err(worker::Error::RustError(test_door::TEST_ERROR.into()))
                }
            }
        }
        Destination::Unknown => {
            let detail = format!("no route for {path}");
            let refusal = (404, "not_found", detail.as_str());
            return door::refuse(env, (Route::Unknown, &method), refusal, None);
        }
    };
    visit.answer(env, answer)
}

/// A runtime fault as a runtime error (answered 500 `internal_error`, its text logged).
fn fault(RuntimeFault(detail): RuntimeFault) -> worker::Error {
    worker::Error::RustError(detail)
}

/// `GET /healthz` (see [`health::answer`]): the sender details only for a caller with the
/// admin token; a broken configuration is logged at `error`, naming its keys.
fn health(req: &Inbound, env: &Env) -> Result<Response> {
    let method = req.method();
    if !routing::health_allows(method.as_ref()) {
        let refusal = (405, "method_not_allowed", "this route accepts GET, HEAD");
        let allow = Some(routing::HEALTH_METHODS);
        return door::refuse(env, (Route::Health, &method), refusal, allow);
    }
    let config = env_config::config(env);
    if let Err(problems) = &config {
        log::write(&health::misconfigured_line(problems));
    }
    let loaded = config.as_deref().map_err(|problems| &**problems);
    let authorization = req.headers().get("authorization")?;
    let view = health::view(loaded, authorization.as_deref());
    door::render(health::answer(loaded, view))
}
