//! Small JSON refusals shared by every route; each writes its log line.

use worker::{Method, Response, Result};

use super::log;
use crate::log_line::LogLine;

/// Answers `{ "error": code, "detail": detail }` with `status`, and logs it for `route`.
pub fn error(
    route: &'static str,
    method: &Method,
    status: u16,
    code: &'static str,
    detail: &str,
) -> Result<Response> {
    log::write(&LogLine {
        level: if status >= 500 { "error" } else { "warn" },
        route,
        method: Some(method.to_string()),
        outcome: code,
        status: Some(status),
        detail: Some(detail.to_owned()),
        ..LogLine::default()
    });
    Ok(
        Response::from_json(&serde_json::json!({ "error": code, "detail": detail }))?
            .with_status(status),
    )
}

/// 405 with the `Allow` header listing `allow`, logged for `route`.
pub fn method_not_allowed(route: &'static str, method: &Method, allow: &str) -> Result<Response> {
    let response = error(
        route,
        method,
        405,
        "method_not_allowed",
        &format!("this route accepts {allow}"),
    )?;
    response.headers().set("allow", allow)?;
    Ok(response)
}
