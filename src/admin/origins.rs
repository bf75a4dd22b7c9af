//! The admin routes over the origins' gates (see [`crate::origin_gate`]): how each origin the
//! worker delivers to stands, and an operator's pause and resume.
//!
//! - `GET /admin/origins`: `{"items": [OriginView, …]}`, one per origin.
//! - `POST /admin/origins/pause` and `POST /admin/origins/resume` with `{"origin": "<url>"}`:
//!   the origin's view after the change. Bad JSON or no `origin`: 400; an origin the worker
//!   does not deliver to: 404; nothing is written either way.

use serde_json::{json, Value};

use super::{AdminAnswer, CallError};
use crate::config::Config;
use crate::log_line::{AdminWord, Outcome};
use crate::origin_gate::{origin_name, GateRequest, OriginView};
use crate::providers::Provider;

/// A call to a route over the origins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginsCall {
    /// `GET /admin/origins`.
    List,
    /// `POST /admin/origins/pause`.
    Pause,
    /// `POST /admin/origins/resume`.
    Resume,
}

/// The call `method` and `path` (after `/admin/`) make; `None` when the path is not one of
/// these routes, or the 405 refusal.
pub fn origins_call(method: &str, path: &str) -> Option<Result<OriginsCall, AdminAnswer>> {
    let (allowed, call) = match path {
        "origins" => ("GET", OriginsCall::List),
        "origins/pause" => ("POST", OriginsCall::Pause),
        "origins/resume" => ("POST", OriginsCall::Resume),
        _ => return None,
    };
    if method != allowed {
        let refused = CallError::MethodNotAllowed(allowed);
        return Some(Err(AdminAnswer::for_call_error(refused)));
    }
    Some(Ok(call))
}

/// The origins the worker delivers to: each enabled sender's, named without credentials or
/// query, each once, in the senders' order.
pub fn known_origins(config: &Config) -> Vec<String> {
    let mut origins: Vec<String> = Vec::new();
    for provider in Provider::ALL {
        if let Some((_, url)) = config.sender(provider) {
            let name = origin_name(url);
            if !origins.contains(&name) {
                origins.push(name);
            }
        }
    }
    origins
}

/// The gate request `body` asks for with `call` (pause or resume), given the `known` origins;
/// or the refusal: 400 for a body that is not a JSON object with a string `origin`, 404 for an
/// origin the worker does not deliver to.
pub fn change_request(
    call: OriginsCall,
    body: &[u8],
    known: &[String],
) -> Result<GateRequest, AdminAnswer> {
    let refused = |status, error, detail: &str| {
        AdminAnswer::refused_as(status, error, detail, AdminWord::OriginRefused)
    };
    let parsed: Result<Value, _> = serde_json::from_slice(body);
    let Ok(Value::Object(fields)) = parsed else {
        return Err(refused(
            400,
            "invalid_json",
            "the body must be a JSON object",
        ));
    };
    let Some(Value::String(given)) = fields.get("origin") else {
        let detail = "the body must name the origin: {\"origin\": \"<url>\"}";
        return Err(refused(400, "invalid_origin", detail));
    };
    let named = url::Url::parse(given).map(|url| origin_name(&url));
    let Some(origin) = named.ok().filter(|name| known.contains(name)) else {
        let detail = "the worker delivers to no such origin: see GET /admin/origins";
        return Err(refused(404, "unknown_origin", detail));
    };
    Ok(match call {
        OriginsCall::Pause => GateRequest::Pause { origin },
        _ => GateRequest::Resume { origin },
    })
}

/// The answer to `GET /admin/origins` from each origin's view, in order; 503 when a gate
/// failed.
pub fn list_answer(views: Vec<Result<OriginView, String>>) -> AdminAnswer {
    let views: Result<Vec<OriginView>, String> = views.into_iter().collect();
    match views {
        Ok(items) => AdminAnswer::new(
            200,
            json!({ "items": items }),
            Outcome::Admin(AdminWord::Origins),
        ),
        Err(detail) => gate_failed(&detail),
    }
}

/// The answer to a pause or resume: the origin's view after it; 503 when its gate failed.
pub fn changed_answer(call: OriginsCall, view: Result<OriginView, String>) -> AdminAnswer {
    let word = match call {
        OriginsCall::Pause => AdminWord::OriginPaused,
        _ => AdminWord::OriginResumed,
    };
    match view {
        Ok(view) => AdminAnswer::new(200, json!(view), Outcome::Admin(word)),
        Err(detail) => gate_failed(&detail),
    }
}

/// 503: an origin's gate failed; nothing is known to have changed.
fn gate_failed(detail: &str) -> AdminAnswer {
    AdminAnswer::refused_as(503, "gate_unavailable", detail, AdminWord::GateFailed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://user:pw@origin.example/hook?k=1".into()),
            "GITHUB_WEBHOOK_SECRET" => Some("g".into()),
            "SHOPIFY_WEBHOOK_SECRET" => Some("s".into()),
            "SHOPIFY_ORIGIN_URL" => Some("https://shop.example/in".into()),
            _ => None,
        })
        .unwrap()
    }

    #[test]
    fn the_origins_are_each_sender_s_once_without_credentials_or_query() {
        assert_eq!(
            known_origins(&config()),
            ["https://origin.example/hook", "https://shop.example/in"]
        );
    }

    #[test]
    fn a_pause_names_a_known_origin_in_any_spelling_of_its_url() {
        let known = known_origins(&config());
        let body = br#"{"origin": "https://origin.example/hook?k=1"}"#;
        let request = change_request(OriginsCall::Pause, body, &known).unwrap();
        let origin = "https://origin.example/hook".to_owned();
        assert_eq!(request, GateRequest::Pause { origin });
    }

    #[test]
    fn bad_bodies_and_unknown_origins_are_refused() {
        let known = known_origins(&config());
        let status = |body: &[u8]| change_request(OriginsCall::Resume, body, &known).unwrap_err();
        assert_eq!(status(b"{not json").status, 400);
        assert_eq!(status(b"[]").status, 400);
        assert_eq!(status(br#"{"origin": 7}"#).status, 400);
        assert_eq!(
            status(br#"{"origin": "https://elsewhere.example/"}"#).status,
            404
        );
        assert_eq!(status(br#"{"origin": "not a url"}"#).status, 404);
    }

    #[test]
    fn each_route_takes_one_method() {
        assert_eq!(origins_call("GET", "origins"), Some(Ok(OriginsCall::List)));
        assert_eq!(
            origins_call("POST", "origins/pause"),
            Some(Ok(OriginsCall::Pause))
        );
        assert_eq!(
            origins_call("POST", "origins/resume"),
            Some(Ok(OriginsCall::Resume))
        );
        assert_eq!(
            origins_call("GET", "origins/pause")
                .unwrap()
                .unwrap_err()
                .status,
            405
        );
        assert_eq!(origins_call("GET", "dead-letters"), None);
    }

    #[test]
    fn a_gate_that_failed_is_a_503_to_try_again() {
        let answer = list_answer(vec![Err("the origin's gate failed".into())]);
        assert_eq!(answer.status, 503);
        assert_eq!(answer.body["error"], "gate_unavailable");
    }
}
