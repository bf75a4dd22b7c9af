//! Small JSON answers shared by every route.

use worker::{Response, Result};

/// An error answer `{ "error": code, "detail": detail }` with `status`.
pub fn error(status: u16, code: &str, detail: &str) -> Result<Response> {
    Ok(
        Response::from_json(&serde_json::json!({ "error": code, "detail": detail }))?
            .with_status(status),
    )
}

/// 405 with the `Allow` header listing `allow`.
pub fn method_not_allowed(allow: &str) -> Result<Response> {
    let response = error(
        405,
        "method_not_allowed",
        &format!("this route accepts {allow}"),
    )?;
    response.headers().set("allow", allow)?;
    Ok(response)
}
