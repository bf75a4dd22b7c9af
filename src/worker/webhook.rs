//! `POST /webhooks/{provider}`: a delivery's sequence is [`crate::webhook::door`]; this runs it
//! over the request and writes its log line.

use worker::{Context, Env, Response, Result};

use super::door::Visit;
use super::env_config;
use super::inbound::Inbound;
use super::runtime::Doorway;
use crate::log_line::Route;
use crate::providers::Provider;
use crate::webhook::door;

/// Serves one delivery from `provider` and writes its log line.
pub async fn serve(provider: Provider, req: Inbound, env: &Env, ctx: &Context) -> Result<Response> {
    let method = req.method();
    let mut visit = Visit::start(Route::Webhook, &method);
    visit.line.provider = Some(provider);
    let config = env_config::config(env);
    let loaded = config.as_deref().map_err(|problems| &**problems);
    let doorway = Doorway {
        req: &req,
        env,
        ctx,
    };
    let line = &mut visit.line;
    let answer = door::deliver(&doorway, provider, loaded, method.as_ref(), line).await;
    visit.line.outcome = answer.outcome;
    if answer.note.is_some() {
        visit.line.detail.clone_from(&answer.note);
    }
    visit.answer(env, answer.http())
}
