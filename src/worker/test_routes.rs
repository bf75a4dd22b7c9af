//! `/_test/...`: the test routes (see [`crate::test_routes`] for which exist and who may use
//! them), carried out: the claim authority reached directly, a signature computed both ways,
//! and panics or traps on demand, for the tests that the next call runs on a fresh
//! WebAssembly instance (see `src/entry.mjs`).

use js_sys::Uint8Array;
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
use crate::test_routes::{self, SettleBody, SignatureVector, TestRoute};

/// Serves one test route; `rest` is the path after `/_test/`.
pub async fn serve(req: Inbound, env: &Env, rest: &str) -> Result<Response> {
    let method = req.method();
    let refuse = |(status, code, detail): (u16, &'static str, &str)| {
        door::refuse(env, (Route::Test, &method), (status, code, detail), None)
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
        Some(TestRoute::Signature) => return cross_check(env, &req).await,
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

/// `POST /_test/signature`: a vector's `v1` MAC computed both ways the worker can (see
/// [`SignatureVector::answer`]).
async fn cross_check(env: &Env, req: &Inbound) -> Result<Response> {
    let (vector, body) = match SignatureVector::read(&req.text().await.unwrap_or_default()) {
        Ok(read) => read,
        Err(error) => return bad_body(env, &req.method(), &worker::Error::RustError(error)),
    };
    let secret = Secret::new(vector.secret.clone());
    let prefix = signature::signed_prefix(vector.timestamp);
    let native = native::macs(
        &[secret.expose()],
        prefix.as_bytes(),
        &Uint8Array::from(&body[..]),
    )
    .await
    .map_err(|_| worker::Error::RustError("WebCrypto failed".into()))?;
    door::render(vector.answer(&body, native.first().copied()))
}
