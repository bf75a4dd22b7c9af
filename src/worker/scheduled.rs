//! The Cron Trigger's entry: the scheduled reconciliation (see
//! [`crate::reconcile::scheduled`]) over the worker's bindings, its lines written to the log.
//! Called by `src/entry.mjs`'s `scheduled` handler.

use wasm_bindgen::prelude::*;
use worker::{web_sys, Context, Env};

use super::inbound::Inbound;
use super::runtime::Doorway;
use super::{env_config, log};

/// Runs one scheduled reconciliation. Its runtime has no request of its own: it reads no
/// header and no body, and only asks the claims, the failure index and the senders' APIs. A
/// configuration with problems runs nothing (`/healthz` and every request say why).
#[wasm_bindgen(wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
pub async fn reconcile_scheduled(
    env: Env,
    ctx: worker::worker_sys::Context,
) -> Result<(), JsValue> {
    let Ok(config) = env_config::config(&env) else {
        return Ok(());
    };
    let request = web_sys::Request::new_with_str("https://scheduled.invalid/")?;
    let req = Inbound::new(request);
    let ctx = Context::new(ctx);
    let doorway = Doorway {
        req: &req,
        env: &env,
        ctx: &ctx,
    };
    for line in crate::reconciler::scheduled::scheduled(&doorway, &config).await {
        log::write(&line);
    }
    Ok(())
}
