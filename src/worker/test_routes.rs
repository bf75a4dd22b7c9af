//! `/_test/...`: the test routes (see [`crate::test_routes`] for which exist and who may use
//! them), carried out: the claim authority reached directly, a signature computed both ways,
//! and panics or traps on demand, for the tests that the next call runs on a fresh
//! WebAssembly instance (see `src/entry.mjs`).

use js_sys::Uint8Array;
use serde::Deserialize;
use worker::{Env, Method, Response, Result};

use super::authority_client::AuthorityClient;
use super::door::{self, Visit};
use super::env_config;
use super::inbound::Inbound;
use super::native;
use crate::answer::HttpAnswer;
use crate::claim::Nonce;
use crate::log_line::{Outcome, Route};
use crate::providers::stripe::signature;
use crate::secret::Secret;
use crate::test_routes::{self, SettleBody, TestRoute};

/// Serves one test route; `rest` is the path after `/_test/`.
pub async fn serve(req: Inbound, env: &Env, rest: &str) -> Result<Response> {
    let method = req.method();
    let refuse = |(status, code, detail): (u16, &'static str, &str)| {
        door::refuse(env, Route::Test, &method, status, code, detail, None)
    };
    let loaded = env_config::config(env);
    let token = env_config::admin_token(env, &loaded);
    let authorization = req.headers().get("authorization")?;
    let config = loaded.as_deref().map_err(|problems| &**problems);
    let token = token.as_ref().map(|token| token.expose_str());
    if let Some(refused) = test_routes::refusal(config, token, authorization.as_deref()) {
        let mut visit = Visit::start(Route::Test, &method);
        visit.line.outcome = Outcome::Code(refused.code);
        visit.line.detail = Some(refused.note);
        return visit.answer(env, refused.answer);
    }
    let Ok(config) = loaded else {
        return refuse((500, "misconfigured", "see /healthz"));
    };
    let (key, op) = match test_routes::route(method.as_ref(), rest) {
        None => return refuse((404, "not_found", "unknown test route")),
        Some(TestRoute::Panic) => panic!("a panic asked for by POST /_test/panic"),
        Some(TestRoute::Error) => return Err(worker::Error::RustError(ERROR_TEXT.into())),
        Some(TestRoute::Signature) => {
            return match req.json::<SignatureVector>().await {
                Ok(vector) => cross_check(vector).await,
                Err(error) => bad_body(env, &method, &error),
            }
        }
        Some(TestRoute::Claims { key, op }) => (key, op),
    };
    let body = match op.takes_body() {
        true => match req.json::<SettleBody>().await {
            Ok(body) => Some(body),
            Err(error) => return bad_body(env, &method, &error),
        },
        false => None,
    };
    let nonce = Nonce::random().map_err(|e| worker::Error::RustError(e.to_string()))?;
    let request = match test_routes::request(&key, op, body, config.webhook.claims, nonce) {
        Ok(request) => request,
        Err(error) => return refuse((400, "bad_request", &error)),
    };
    let reply = AuthorityClient::new(env)?.send(&request).await;
    Visit::start(Route::Test, &method).answer(env, test_routes::view(&reply))
}

/// The text of the runtime error `POST /_test/error` raises: the tests check that it reaches
/// the log line and never the answer.
const ERROR_TEXT: &str =
    "a runtime error asked for by POST /_test/error (https://user:secret@origin.example)";

/// 400 for a body that is not the JSON the route reads: a fixed detail; the error's text (the
/// runtime's, or the parser's) goes to the log line only.
fn bad_body(env: &Env, method: &Method, error: &worker::Error) -> Result<Response> {
    let mut visit = Visit::start(Route::Test, method);
    visit.line.outcome = Outcome::Code("bad_request");
    visit.line.detail = Some(error.to_string());
    let answer = HttpAnswer::error(
        400,
        "bad_request",
        "the body is not the JSON this route reads",
    );
    visit.answer(env, answer)
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
