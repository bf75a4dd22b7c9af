//! `/_test/claims/{key}[/claim|/finalize|/release]`: the claim authority reached directly, for
//! the end-to-end tests of its rules. Served only with `ENABLE_TEST_ROUTES=true` (404
//! otherwise), and only to callers with the admin bearer token (401 otherwise).

use serde::Deserialize;
use worker::{Env, Method, Request, Response, Result};

use super::authority_client::AuthorityClient;
use super::env_config;
use super::respond;
use crate::admin;
use crate::authority::{AuthorityReply, AuthorityRequest};
use crate::claim::{Fence, Nonce};

#[derive(Deserialize)]
struct SettleBody {
    fence: Fence,
    #[serde(default)]
    reason: Option<String>,
}

/// Serves one test route; `rest` is the path after `/_test/`.
pub async fn serve(mut req: Request, env: &Env, rest: &str) -> Result<Response> {
    let config = match env_config::config(env) {
        Ok(config) if config.test_routes => config,
        _ => {
            return respond::error(
                "test",
                &req.method(),
                404,
                "not_found",
                "test routes are off",
            )
        }
    };
    let authorization = req.headers().get("authorization")?;
    let token = config.admin_token.as_ref().map(|t| t.expose_str());
    if !token.is_some_and(|token| admin::authorized(authorization.as_deref(), token)) {
        let response = respond::error(
            "test",
            &req.method(),
            401,
            "unauthorized",
            "the test routes need the admin bearer token",
        )?;
        response.headers().set("www-authenticate", "Bearer")?;
        return Ok(response);
    }
    let Some(rest) = rest.strip_prefix("claims/") else {
        return respond::error(
            "test",
            &req.method(),
            404,
            "not_found",
            "unknown test route",
        );
    };
    let (key, op) = rest.split_once('/').unwrap_or((rest, ""));
    if key.is_empty() {
        return respond::error("test", &req.method(), 404, "not_found", "missing key");
    }
    let key = key.to_owned();
    let policy = config.webhook_claims;
    let request = match (req.method(), op) {
        (Method::Get, "") => AuthorityRequest::Inspect { key: key.clone() },
        (Method::Post, "claim") => AuthorityRequest::Claim {
            key: key.clone(),
            policy,
            nonce: Nonce::random().map_err(|e| worker::Error::RustError(e.to_string()))?,
            fingerprint: None,
        },
        (Method::Post, "finalize" | "release") => {
            let body: SettleBody = match req.json().await {
                Ok(body) => body,
                Err(error) => {
                    return respond::error(
                        "test",
                        &req.method(),
                        400,
                        "bad_request",
                        &error.to_string(),
                    )
                }
            };
            if op == "finalize" {
                AuthorityRequest::Finalize {
                    key: key.clone(),
                    fence: body.fence,
                    policy,
                    response: None,
                }
            } else {
                AuthorityRequest::Release {
                    key: key.clone(),
                    fence: body.fence,
                    reason: body.reason.unwrap_or_else(|| "test".into()),
                    policy,
                }
            }
        }
        _ => {
            return respond::error(
                "test",
                &req.method(),
                404,
                "not_found",
                "unknown test route",
            )
        }
    };
    let reply = AuthorityClient::new(env)?.send(&request).await;
    let status = match reply {
        AuthorityReply::StoreFailed {
            retryable: true, ..
        } => 503,
        AuthorityReply::StoreFailed { .. } => 500,
        _ => 200,
    };
    Ok(Response::from_json(&reply)?.with_status(status))
}
