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
mod forward;
mod inbound;
mod keeper;
mod kv_store;
mod log;
mod metrics;
mod native;
mod queue;
mod rate_limit;
mod respond;
mod test_routes;
mod webhook;

use worker::{event, web_sys, Context, Env, Method, Response, Result};

use inbound::Inbound;

use crate::config;
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::providers::Provider;

/// Routes one request. Unknown paths get 404; a known path with the wrong method gets 405.
#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> Result<Response> {
    let req = Inbound::new(req);
    let path = req.path();
    if path == "/healthz" {
        return health(&req, &env);
    }
    if let Some(provider) = path
        .strip_prefix("/webhooks/")
        .and_then(Provider::from_name)
    {
        return webhook::serve(provider, req, &env, &ctx).await;
    }
    if path.starts_with("/api/") {
        return api::serve(req, &env, &ctx).await;
    }
    if let Some(rest) = path.strip_prefix("/admin/") {
        let rest = rest.to_owned();
        return admin::serve(req, &env, &rest).await;
    }
    if let Some(rest) = path.strip_prefix("/_test/") {
        let rest = rest.to_owned();
        return test_routes::serve(req, &env, &rest).await;
    }
    respond::refuse(
        &env,
        Route::Unknown,
        &req.method(),
        404,
        "not_found",
        &format!("no route for {path}"),
        None,
    )
}

/// Each enabled provider with its delivery mode, e.g. `{"stripe":"sync","github":"queue"}`.
fn enabled_providers(config: &config::Config) -> serde_json::Map<String, serde_json::Value> {
    Provider::ALL
        .into_iter()
        .filter(|provider| config.sender(*provider).is_some())
        .map(|provider| {
            let mode = match config.queue.mode(provider) {
                config::DeliveryMode::Sync => "sync",
                config::DeliveryMode::Queue => "queue",
            };
            (provider.name().to_owned(), mode.into())
        })
        .collect()
}

/// `GET /healthz`: 200 when the configuration is valid (with the enabled providers and their
/// delivery modes), else 503 naming each key with a
/// problem (logged once per check, never a value).
fn health(req: &Inbound, env: &Env) -> Result<Response> {
    if req.method() != Method::Get && req.method() != Method::Head {
        return respond::refuse(
            env,
            Route::Health,
            &req.method(),
            405,
            "method_not_allowed",
            "this route accepts GET, HEAD",
            Some("GET, HEAD"),
        );
    }
    let (status, body) = match env_config::config(env) {
        Ok(config) => (
            200,
            serde_json::json!({
                "name": env!("CARGO_PKG_NAME"),
                "version": env!("CARGO_PKG_VERSION"),
                "status": "ok",
                "providers": enabled_providers(&config),
            }),
        ),
        Err(problems) => {
            log::write(&LogLine {
                level: Level::Error,
                outcome: Outcome::Code("misconfigured"),
                detail: Some(config::describe(&problems)),
                ..LogLine::new(Route::Health)
            });
            (
                503,
                serde_json::json!({
                    "name": env!("CARGO_PKG_NAME"),
                    "version": env!("CARGO_PKG_VERSION"),
                    "status": "misconfigured",
                    "problems": problems.iter().map(|p| serde_json::json!({
                        "key": p.key,
                        "problem": p.problem,
                    })).collect::<Vec<_>>(),
                }),
            )
        }
    };
    Ok(Response::from_json(&body)?.with_status(status))
}
