//! `/_test/claims/{key}[/claim|/finalize|/release]`: the claim authority reached directly, for
//! the end-to-end tests of its rules; `/_test/signature`: both HMAC implementations on one
//! vector; `POST /_test/panic`: a Rust panic in the worker, and
//! `POST /_test/claims/{key}/panic` or `…/trap`: a panic, or a WebAssembly trap without one, in
//! that key's object, for the tests that the next call runs on a fresh WebAssembly instance (see
//! `src/entry.mjs`). Served only with `ENABLE_TEST_ROUTES=true` (404
//! otherwise), and only to callers with the admin bearer token (401 otherwise).

use serde::Deserialize;
use worker::{Env, Method, Response, Result};

use super::authority_client::AuthorityClient;
use super::env_config;
use super::inbound::Inbound;
use super::native;
use super::respond;
use crate::admin;
use crate::answer::StoreFailure;
use crate::authority::{AuthorityReply, AuthorityRequest};
use crate::claim::{ClaimPolicy, Fence, Nonce, Source};
use crate::log_line::Route;
use crate::origin::{Reason, UnknownReason};
use crate::providers::Provider;
use crate::secret::Secret;
use crate::stripe::signature;
use js_sys::Uint8Array;

#[derive(Deserialize)]
struct SettleBody {
    fence: Fence,
    #[serde(default)]
    reason: Option<String>,
}

/// Serves one test route; `rest` is the path after `/_test/`.
pub async fn serve(req: Inbound, env: &Env, rest: &str) -> Result<Response> {
    let method = req.method();
    let refuse = |status, code, detail: &str| {
        respond::refuse(env, Route::Test, &method, status, code, detail, None)
    };
    // A broken configuration is answered as on every other route, before anything else: it
    // cannot say whether the test routes are on.
    let config = match env_config::config(env) {
        Ok(config) if config.admin.test_routes => config,
        Ok(_) => return refuse(404, "not_found", "test routes are off"),
        Err(_) => return refuse(500, "misconfigured", "see /healthz"),
    };
    let authorization = req.headers().get("authorization")?;
    let token = config.admin.token.as_ref().map(|t| t.expose_str());
    if !token.is_some_and(|token| admin::authorized(authorization.as_deref(), token)) {
        let response = refuse(
            401,
            "unauthorized",
            "the test routes need the admin bearer token",
        )?;
        response.headers().set("www-authenticate", "Bearer")?;
        return Ok(response);
    }
    if rest == "panic" && method == Method::Post {
        panic!("a panic asked for by POST /_test/panic");
    }
    if rest == "signature" && method == Method::Post {
        return match req.json::<SignatureVector>().await {
            Ok(vector) => cross_check(vector).await,
            Err(error) => refuse(400, "bad_request", &error.to_string()),
        };
    }
    let Some((key, op)) = rest
        .strip_prefix("claims/")
        .map(|rest| rest.split_once('/').unwrap_or((rest, "")))
        .filter(|(key, _)| !key.is_empty())
    else {
        return refuse(404, "not_found", "unknown test route");
    };
    let request = match (&method, op) {
        (Method::Get, "") => AuthorityRequest::Inspect { key: key.into() },
        (Method::Post, "claim") => AuthorityRequest::Claim {
            key: key.into(),
            policy: config.webhook.claims,
            nonce: Nonce::random().map_err(|e| worker::Error::RustError(e.to_string()))?,
            source: Source::Webhook(Provider::Stripe),
        },
        (Method::Post, "panic" | "trap") => AuthorityRequest::Trap {
            key: key.into(),
            panic: op == "panic",
        },
        (Method::Post, "finalize" | "release") => match req.json::<SettleBody>().await {
            Ok(body) => match settle(key, op, body, config.webhook.claims) {
                Ok(request) => request,
                Err(error) => return refuse(400, "bad_request", &error),
            },
            Err(error) => return refuse(400, "bad_request", &error.to_string()),
        },
        _ => return refuse(404, "not_found", "unknown test route"),
    };
    let reply = AuthorityClient::new(env)?.send(&request).await;
    let status = match &reply {
        AuthorityReply::StoreFailed { .. } => match StoreFailure::of(&reply) {
            StoreFailure::Unavailable => 503,
            StoreFailure::Failed => 500,
        },
        _ => 200,
    };
    Ok(Response::from_json(&view(&reply))?.with_status(status))
}

/// The reply as the test routes show it: a rule's outcome as `{"outcome": name, ...fields}`,
/// any other reply as its fields (`{"record": ...}`), rather than the nested form the worker
/// and the object exchange.
fn view(reply: &AuthorityReply) -> serde_json::Value {
    use serde_json::Value;
    if let AuthorityReply::Record { record } = reply {
        // A record as the admin API shows it, with its fence (which the tests settle with).
        let view = record.as_deref().map(|record| {
            let mut view = admin::record_view(record);
            view["fence"] = serde_json::json!(record.fence());
            view
        });
        return serde_json::json!({ "record": view });
    }
    let inner = match serde_json::to_value(reply) {
        Ok(Value::Object(outer)) if outer.len() == 1 => outer.into_iter().next().map(|(_, v)| v),
        Ok(other) => Some(other),
        Err(_) => None,
    }
    .unwrap_or(Value::Null);
    let is_outcome = matches!(
        reply,
        AuthorityReply::Claim(_)
            | AuthorityReply::Finalize(_)
            | AuthorityReply::Release(_)
            | AuthorityReply::Forget(_)
            | AuthorityReply::Enqueue(_)
            | AuthorityReply::Redeliver(_)
    );
    match inner {
        Value::String(name) if is_outcome => serde_json::json!({ "outcome": name }),
        Value::Object(named) if is_outcome && named.len() == 1 => {
            let (name, fields) = named.into_iter().next().expect("one entry");
            let mut fields = match fields {
                Value::Object(fields) => fields,
                _ => serde_json::Map::new(),
            };
            fields.insert("outcome".into(), Value::String(name));
            Value::Object(fields)
        }
        other => other,
    }
}

/// A signature test vector: a secret, a timestamp and a body (base64).
#[derive(Deserialize)]
struct SignatureVector {
    secret: String,
    timestamp: i64,
    body_base64: String,
}

/// `POST /_test/signature`: the `v1` MAC of a vector computed both ways the worker can, by the
/// runtime's WebCrypto (what deliveries use) and by the `hmac` crate (what the host tests and
/// queue mode's re-signing use), for the end-to-end tests to compare with each other and with
/// the `stripe` package.
async fn cross_check(vector: SignatureVector) -> Result<Response> {
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD
        .decode(vector.body_base64.as_bytes())
        .map_err(|e| worker::Error::RustError(e.to_string()))?;
    let secret = Secret::new(vector.secret);
    let native = native::macs(
        &[secret.expose()],
        signature::signed_prefix(vector.timestamp).as_bytes(),
        &Uint8Array::from(body.as_slice()),
    )
    .await
    .map_err(|_| worker::Error::RustError("WebCrypto failed".into()))?;
    let rust = signature::sign(&secret, vector.timestamp, &body);
    Response::from_json(&serde_json::json!({
        "webcrypto": native.first().map(hex::encode),
        "rust": hex::encode(rust),
    }))
}

/// The finalize or release a test route asks for; a release's reason is one this service
/// writes (`origin answered 500` when none is given).
fn settle(
    key: &str,
    op: &str,
    body: SettleBody,
    policy: ClaimPolicy,
) -> std::result::Result<AuthorityRequest, String> {
    if op == "finalize" {
        return Ok(AuthorityRequest::Finalize {
            key: key.into(),
            fence: body.fence,
            policy,
            response: None,
        });
    }
    let reason = match body.reason {
        Some(text) => text
            .parse()
            .map_err(|error: UnknownReason| error.to_string())?,
        None => Reason::Answered(500),
    };
    Ok(AuthorityRequest::Release {
        key: key.into(),
        fence: body.fence,
        reason,
        policy,
        only_after_lease: false,
    })
}
