//! `/admin/...`: inspect, release and forget records. Off unless `ADMIN_TOKEN` is set.

use serde_json::json;
use worker::{Date, Env, Request, Response, Result};

use super::authority_client::AuthorityClient;
use super::env_config;
use super::log;
use super::respond;
use crate::admin::{self, Action, Family, RouteError};
use crate::authority::{AuthorityReply, AuthorityRequest};
use crate::claim::{ClaimPolicy, ClaimState, ForgetOutcome, ReleaseOutcome};
use crate::log_line::LogLine;
use crate::origin::Reason;

/// Serves one admin request; `rest` is the path after `/admin/`.
pub async fn serve(req: Request, env: &Env, rest: &str) -> Result<Response> {
    let method = req.method();
    let refuse =
        |status, code, detail: &str| respond::error("admin", &method, status, code, detail);
    let config = match env_config::config(env) {
        Ok(config) => config,
        Err(_) => return refuse(500, "misconfigured", "see /healthz"),
    };
    let Some(token) = config.admin_token.as_ref() else {
        return refuse(404, "not_found", "the admin API is off (no ADMIN_TOKEN)");
    };
    let authorization = req.headers().get("authorization")?;
    if !admin::authorized(authorization.as_deref(), token.expose_str()) {
        let response = refuse(
            401,
            "unauthorized",
            "a valid admin bearer token is required",
        )?;
        response.headers().set("www-authenticate", "Bearer")?;
        return Ok(response);
    }
    let route = match admin::route(req.method().as_ref(), rest) {
        Ok(route) => route,
        Err(RouteError::NotFound) => return refuse(404, "not_found", "no such admin route"),
        Err(RouteError::MethodNotAllowed(allow)) => {
            return respond::method_not_allowed("admin", &method, allow)
        }
        Err(RouteError::InvalidKey(Family::Events)) => {
            return refuse(400, "invalid_event_id", "not a Stripe event id")
        }
        Err(RouteError::InvalidKey(Family::Keys)) => {
            return refuse(
                400,
                "invalid_scope",
                "not an idempotency scope (idem_ + 64 hex)",
            )
        }
    };
    let policy = match route.family {
        Family::Events => config.webhook_claims,
        Family::Keys => match &config.api {
            Some(api) => api.claims,
            None => config.webhook_claims,
        },
    };
    let force = req
        .url()?
        .query_pairs()
        .any(|(name, value)| name == "force" && value == "true");
    let client = AuthorityClient::new(env)?;
    let (status, body, outcome) = act(&client, &route.key, route.action, policy, force).await;
    log::write(&LogLine {
        level: if status < 400 && route.action != Action::Inspect {
            "warn"
        } else {
            "info"
        },
        route: "admin",
        method: Some(req.method().to_string()),
        key: Some(route.key.clone()),
        outcome,
        status: Some(status),
        ..LogLine::default()
    });
    Ok(Response::from_json(&body)?.with_status(status))
}

async fn act(
    client: &AuthorityClient,
    key: &str,
    action: Action,
    policy: ClaimPolicy,
    force: bool,
) -> (u16, serde_json::Value, &'static str) {
    let inspected = client
        .send(&AuthorityRequest::Inspect {
            key: key.to_owned(),
        })
        .await;
    let now = Date::now().as_millis();
    let record = match inspected {
        // A record past its expiry counts as absent, as it does for deliveries.
        AuthorityReply::Record {
            record: Some(record),
        } if record.expires_at > now => record,
        AuthorityReply::Record { .. } => {
            return (
                404,
                json!({ "error": "not_found", "detail": "no record for this key" }),
                "admin_not_found",
            )
        }
        other => return store_failed(&other),
    };
    match action {
        Action::Inspect => (
            200,
            json!({ "record": admin::record_view(&record) }),
            "admin_inspect",
        ),
        Action::Release => {
            if record.state != ClaimState::Processing {
                return (
                    409,
                    json!({ "error": "not_processing", "state": record.state, "detail": "only a processing claim can be released" }),
                    "admin_release_refused",
                );
            }
            if record.has_live_lease(now) && !force {
                return (
                    409,
                    json!({
                        "error": "lease_live",
                        "lease_expires_at": record.lease_expires_at,
                        "detail": "the claim's lease is live: its attempt may still be running or waiting for its answer; add ?force=true to release it anyway",
                    }),
                    "admin_release_refused",
                );
            }
            let reply = client
                .send(&AuthorityRequest::Release {
                    key: key.to_owned(),
                    fence: record.fence,
                    reason: Reason::Operator.to_string(),
                    policy,
                })
                .await;
            match reply {
                AuthorityReply::Release(ReleaseOutcome::Released { .. }) => (
                    200,
                    json!({ "status": "released", "detail": "the next delivery runs the work again" }),
                    "admin_released",
                ),
                AuthorityReply::Release(_) => (
                    409,
                    json!({ "error": "changed", "detail": "the claim changed while releasing; look again" }),
                    "admin_release_refused",
                ),
                other => store_failed(&other),
            }
        }
        Action::Forget => {
            let reply = client
                .send(&AuthorityRequest::Forget {
                    key: key.to_owned(),
                    fence: record.fence,
                })
                .await;
            match reply {
                AuthorityReply::Forget(ForgetOutcome::Forgotten) => (
                    200,
                    json!({ "status": "forgotten", "detail": "the next delivery is processed as new" }),
                    "admin_forgotten",
                ),
                AuthorityReply::Forget(ForgetOutcome::StillProcessing) => (
                    409,
                    json!({ "error": "processing", "detail": "a claim is held; release it first" }),
                    "admin_forget_refused",
                ),
                AuthorityReply::Forget(ForgetOutcome::NotFound) => (
                    404,
                    json!({ "error": "not_found", "detail": "no record for this key" }),
                    "admin_not_found",
                ),
                AuthorityReply::Forget(ForgetOutcome::NotOwner) => (
                    409,
                    json!({ "error": "changed", "detail": "the record changed; look again" }),
                    "admin_forget_refused",
                ),
                other => store_failed(&other),
            }
        }
    }
}

fn store_failed(reply: &AuthorityReply) -> (u16, serde_json::Value, &'static str) {
    let status = match reply {
        AuthorityReply::StoreFailed {
            retryable: true, ..
        } => 503,
        _ => 500,
    };
    (
        status,
        json!({ "error": "store_failed", "detail": "the claim store failed" }),
        "admin_store_failed",
    )
}
