//! Small JSON refusals for requests no front door serves; each writes its log line.

use worker::{Env, Method, Response, Result};

use super::door::{self, Visit};
use crate::log_line::{Outcome, Route};

/// Answers `{ "error": code, "detail": detail }` with `status` (and `Allow` when given), and
/// writes its log line for `route`.
pub fn refuse(
    env: &Env,
    route: Route,
    method: &Method,
    status: u16,
    code: &'static str,
    detail: &str,
    allow: Option<&str>,
) -> Result<Response> {
    let mut visit = Visit::start(route, method);
    visit.line.outcome = Outcome::Code(code);
    visit.line.detail = Some(detail.to_owned());
    let response = door::json(
        status,
        &serde_json::json!({ "error": code, "detail": detail }),
        None,
        allow,
    )?;
    Ok(visit.finish(env, response))
}
