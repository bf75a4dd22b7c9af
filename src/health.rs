//! `GET /healthz`: whether the configuration is usable, for anyone; which senders are on in
//! which delivery mode, only for the operator. Pure: the worker passes the loaded
//! configuration and who asks, and renders the answer.

use serde_json::{json, Map, Value};

use crate::answer::{HttpAnswer, MISCONFIGURED};
use crate::config::{self, Config, ConfigProblem, DeliveryMode};
use crate::log_line::{Level, LogLine, Outcome, Route};
use crate::providers::Provider;

/// Who asks, as far as `/healthz` is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Any caller: the name, the version and the status (and on a broken configuration, each
    /// key with its problem, which the deployer needs before any token works).
    Anonymous,
    /// A caller with the admin bearer token: also each enabled sender and its delivery mode.
    Operator,
}

/// Each enabled provider with its delivery mode, e.g. `{"stripe":"sync","github":"queue"}`.
fn enabled_providers(config: &Config) -> Map<String, Value> {
    Provider::ALL
        .into_iter()
        .filter(|provider| config.sender(*provider).is_some())
        .map(|provider| {
            let mode = match config.queue.mode(provider) {
                DeliveryMode::Sync => "sync",
                DeliveryMode::Queue => "queue",
            };
            (provider.name().to_owned(), mode.into())
        })
        .collect()
}

/// What `/healthz` shows a caller with `authorization`: the sender details only to one with
/// the admin token of a usable configuration.
pub fn view(loaded: Result<&Config, &[ConfigProblem]>, authorization: Option<&str>) -> View {
    let Ok(config) = loaded else {
        return View::Anonymous;
    };
    let token = config.admin.token.as_ref().map(|token| token.expose_str());
    match crate::admin::gate(token, authorization) {
        Ok(()) => View::Operator,
        Err(_) => View::Anonymous,
    }
}

/// The answer to `GET /healthz` with `loaded` (the configuration, or every problem in it), for
/// `view`: 200 `status: ok` (with the enabled providers and their delivery modes for the
/// operator only, so an anonymous caller does not learn which senders are on), else 503
/// naming each key with a problem (never a value).
pub fn answer(loaded: Result<&Config, &[ConfigProblem]>, view: View) -> HttpAnswer {
    let name = env!("CARGO_PKG_NAME");
    let version = env!("CARGO_PKG_VERSION");
    match loaded {
        Ok(config) => {
            let mut body = json!({
                "name": name,
                "version": version,
                "status": "ok",
            });
            if view == View::Operator {
                body["providers"] = Value::Object(enabled_providers(config));
            }
            HttpAnswer::json(200, &body)
        }
        Err(problems) => HttpAnswer::json(
            503,
            &json!({
                "name": name,
                "version": version,
                "status": "misconfigured",
                "problems": problems.iter().map(|p| json!({
                    "key": p.key,
                    "problem": p.problem,
                })).collect::<Vec<_>>(),
            }),
        ),
    }
}

/// The log line `/healthz` writes while the configuration has `problems`: at `error`,
/// `misconfigured`, naming each key and what it expects (never a value given).
pub fn misconfigured_line(problems: &[ConfigProblem]) -> LogLine {
    LogLine {
        level: Level::Error,
        outcome: Outcome::Refused(MISCONFIGURED),
        detail: Some(config::describe(problems)),
        ..LogLine::new(Route::Health)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A broken configuration is logged at `error`, naming its keys.
    #[test]
    fn a_broken_configuration_is_logged_as_an_error_naming_its_keys() {
        let problems = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("not a url".into()),
            _ => None,
        })
        .unwrap_err();
        let line = misconfigured_line(&problems);
        assert_eq!(line.level, Level::Error);
        assert_eq!(line.route, Route::Health);
        assert_eq!(line.outcome, Outcome::Refused(MISCONFIGURED));
        let detail = line.detail.unwrap();
        assert!(detail.contains("ORIGIN_URL"), "{detail}");
        assert!(!detail.contains("not a url"), "{detail}");
    }

    fn body(answer: &HttpAnswer) -> Value {
        serde_json::from_slice(answer.body.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn a_usable_configuration_names_each_sender_and_its_mode_to_the_operator_only() {
        let config = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("http://127.0.0.1:9/hook".into()),
            "GITHUB_WEBHOOK_SECRET" => Some("gh-secret".into()),
            _ => None,
        })
        .unwrap();
        let operator = answer(Ok(&config), View::Operator);
        assert_eq!(operator.status, 200);
        assert_eq!(
            body(&operator)["providers"],
            json!({ "stripe": "sync", "github": "queue" })
        );
        let anonymous = answer(Ok(&config), View::Anonymous);
        assert_eq!(anonymous.status, 200);
        let shown = body(&anonymous);
        assert_eq!(shown["status"], "ok");
        assert_eq!(shown.get("providers"), None, "{shown}");
        let text = String::from_utf8(anonymous.body.unwrap()).unwrap();
        assert!(
            !text.contains("github") && !text.contains("queue"),
            "{text}"
        );
    }

    #[test]
    fn a_broken_configuration_names_its_keys_never_their_values() {
        let problems =
            Config::load(|key| (key == "LEASE_SECONDS").then(|| "x".into())).unwrap_err();
        let answer = answer(Err(&problems), View::Anonymous);
        assert_eq!(answer.status, 503);
        let text = String::from_utf8(answer.body.unwrap()).unwrap();
        assert!(text.contains("LEASE_SECONDS") && text.contains("\"misconfigured\""));
        assert!(!text.contains("\"x\""), "never a value");
    }

    /// Only the admin token of a usable configuration shows the sender details.
    #[test]
    fn only_the_operator_sees_the_senders() {
        let token = "a-long-admin-token-0123456789";
        let config = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/hook".into()),
            "ADMIN_TOKEN" => Some(token.into()),
            _ => None,
        })
        .unwrap();
        let bearer = format!("Bearer {token}");
        assert_eq!(view(Ok(&config), Some(&bearer)), View::Operator);
        assert_eq!(view(Ok(&config), Some("Bearer nope")), View::Anonymous);
        assert_eq!(view(Ok(&config), None), View::Anonymous);
        let problems = Config::load(|_| None).unwrap_err();
        assert_eq!(view(Err(&problems), Some(&bearer)), View::Anonymous);
    }
}
