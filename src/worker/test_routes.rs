//! `/_test/...`: the test routes (see [`crate::test_routes`] for which exist and who may use
//! them; their sequence is [`door::serve`]), and the panics and runtime errors they ask for,
//! for the tests that the next call runs on a fresh WebAssembly instance (see
//! `src/entry.mjs`).

use worker::{Context, Env, Response, Result};

use super::door::Visit;
use super::env_config;
use super::inbound::Inbound;
use super::runtime::Doorway;
use crate::log_line::Route;
use crate::test_routes::door::{self, Served};

/// Serves one test route; `rest` is the path after `/_test/`.
pub async fn serve(req: Inbound, env: &Env, ctx: &Context, rest: &str) -> Result<Response> {
    let method = req.method();
    let mut visit = Visit::start(Route::Test, &method);
    let loaded = env_config::config(env);
    let token = env_config::admin_token(env, &loaded);
    let token = token.as_ref().map(|token| token.expose_str());
    let config = loaded.as_deref().map_err(|problems| &**problems);
    let doorway = Doorway {
        req: &req,
        env,
        ctx,
    };
    let request = (method.as_ref(), rest);
    match door::serve(&doorway, request, token, config, &mut visit.line).await {
        Served::Answer(answer) => visit.answer(env, answer),
        Served::Panic => panic!("a panic asked for by POST /_test/panic"),
        Served::Error => Err(worker::Error::RustError(ERROR_TEXT.into())),
    }
}

/// The text of the runtime error `POST /_test/error` raises: the tests check that it reaches
/// the log line and never the answer.
const ERROR_TEXT: &str =
    "a runtime error asked for by POST /_test/error (https://user:secret@origin.example)";
