//! A test route's whole sequence over the [`Runtime`]: who may use it (see [`refusal`]),
//! which route, its body, then the claim authority asked directly or a signature computed
//! both ways. Panics and runtime errors on demand are the worker's to raise.

use crate::answer::{HttpAnswer, MISCONFIGURED};
use crate::claim::Nonce;
use crate::config::{Config, ConfigProblem};
use crate::log_line::{LogLine, Outcome};
use crate::providers::stripe::signature;
use crate::runtime::{Runtime, RuntimeFault};
use crate::secret::Secret;

use super::{refusal, request, route, view, SettleBody, SignatureVector, TestRoute};

/// The text of the runtime error `POST /_test/error` raises ([`TestRouteServed::Error`]): the tests
/// check that it reaches the log line and never the answer.
pub const TEST_ERROR: &str =
    "a runtime error asked for by POST /_test/error (https://user:secret@origin.example)";

/// What a test route asks for.
#[derive(Debug, PartialEq)]
pub enum TestRouteServed {
    /// Answer with this.
    Answer(HttpAnswer),
    /// Panic in the worker.
    Panic,
    /// Raise a runtime error in the worker.
    Error,
}

/// Serves a `method` request for `rest` (the path after `/_test/`), given the usable admin
/// `token` and the `loaded` configuration; a refusal's code and why go on the log line. `Err`
/// when the runtime fails (no random bytes for a claim, the claim authority's binding missing).
pub async fn serve<R: Runtime>(
    runtime: &R,
    (method, rest): (&str, &str),
    token: Option<&str>,
    loaded: Result<&Config, &[ConfigProblem]>,
    line: &mut LogLine,
) -> Result<TestRouteServed, RuntimeFault> {
    let authorization = runtime.header("authorization");
    if let Some(refused) = refusal(loaded, token, authorization.as_deref()) {
        line.outcome = Outcome::Refused(refused.code);
        line.detail = Some(refused.note);
        return Ok(TestRouteServed::Answer(refused.answer));
    }
    let Ok(config) = loaded else {
        return Ok(refuse(line, (500, MISCONFIGURED, "see /healthz")));
    };
    let (key, op) = match route(method, rest) {
        None => return Ok(refuse(line, (404, "not_found", "unknown test route"))),
        Some(TestRoute::Panic) => return Ok(TestRouteServed::Panic),
        Some(TestRoute::Error) => return Ok(TestRouteServed::Error),
        Some(TestRoute::Signature) => return Ok(cross_check(runtime, config, line).await),
        Some(TestRoute::Claims { key, op }) => (key, op),
    };
    let body = match op.takes_body() {
        true => match json(runtime, config).await {
            Ok(body) => Some(body),
            Err(error) => return Ok(bad_body(line, error)),
        },
        false => None,
    };
    let nonce = Nonce::random().map_err(|error| RuntimeFault(error.to_string()))?;
    Ok(
        match request(&key, op, body, config.webhook.claims, nonce) {
            Ok(request) => TestRouteServed::Answer(view(&runtime.ask(&request).await?)),
            Err(error) => refuse(line, (400, "bad_request", &error)),
        },
    )
}

/// `{ "error": code, "detail": detail }` with `status`, its code and detail on the log line.
fn refuse(
    line: &mut LogLine,
    (status, code, detail): (u16, &'static str, &str),
) -> TestRouteServed {
    line.outcome = Outcome::Refused(code);
    line.detail = Some(detail.to_owned());
    TestRouteServed::Answer(HttpAnswer::error(status, code, detail))
}

/// 400 for a body that is not the JSON the route reads: a fixed detail; the error's text goes
/// to the log line only.
fn bad_body(line: &mut LogLine, error: String) -> TestRouteServed {
    let answered = refuse(
        line,
        (
            400,
            "bad_request",
            "the body is not the JSON this route reads",
        ),
    );
    line.detail = Some(error);
    answered
}

/// The request's body as UTF-8 text.
async fn text<R: Runtime>(runtime: &R, config: &Config) -> Result<String, String> {
    let body = runtime.body(&config.delivery).await;
    let bytes = body.map(|body| runtime.bytes(&body));
    let bytes = bytes.map_err(|error| format!("{error:?}"))?;
    String::from_utf8(bytes).map_err(|error| error.to_string())
}

/// The request's body read as a settle body.
async fn json<R: Runtime>(runtime: &R, config: &Config) -> Result<SettleBody, String> {
    let text = text(runtime, config).await?;
    serde_json::from_str(&text).map_err(|error| error.to_string())
}

/// `POST /_test/signature`: a vector's `v1` MAC computed both ways the worker can (see
/// [`SignatureVector::answer`]).
async fn cross_check<R: Runtime>(
    runtime: &R,
    config: &Config,
    line: &mut LogLine,
) -> TestRouteServed {
    let read = text(runtime, config)
        .await
        .and_then(|text| SignatureVector::read(&text));
    let (vector, body) = match read {
        Ok(read) => read,
        Err(error) => return bad_body(line, error),
    };
    let secret = Secret::new(vector.secret.clone());
    let prefix = signature::signed_prefix(vector.timestamp);
    let signed = runtime.body_of(&body);
    let native = runtime
        .macs(&[secret.expose()], prefix.as_bytes(), &signed)
        .await;
    TestRouteServed::Answer(vector.answer(&body, native.first().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim_authority::{AuthorityReply, AuthorityRequest};
    use crate::log_line::Route;
    use crate::runtime::memory::{run, Memory, RuntimeCall};

    const TOKEN: &str = "a-long-admin-token-0123456789";

    fn config(test_routes: bool) -> Config {
        Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/hook".into()),
            "ADMIN_TOKEN" => Some(TOKEN.into()),
            "ENABLE_TEST_ROUTES" if test_routes => Some("true".into()),
            _ => None,
        })
        .unwrap()
    }

    fn serve_on(
        runtime: &Memory,
        on: bool,
        (method, rest): (&str, &str),
    ) -> (TestRouteServed, LogLine) {
        let mut line = LogLine::new(Route::Test);
        let config = config(on);
        let served = run(serve(
            runtime,
            (method, rest),
            Some(TOKEN),
            Ok(&config),
            &mut line,
        ));
        (served.expect("the runtime does not fail"), line)
    }

    fn operator(body: &[u8]) -> Memory {
        let bearer = format!("Bearer {TOKEN}");
        Memory::new(0, &[("authorization", &bearer)], body)
    }

    fn status(served: &TestRouteServed) -> u16 {
        match served {
            TestRouteServed::Answer(answer) => answer.status,
            other => panic!("an answer: {other:?}"),
        }
    }

    /// Without the token, or while the routes are off, nothing is read or asked.
    #[test]
    fn a_caller_without_the_token_or_routes_that_are_off_ask_nothing() {
        let anonymous = Memory::new(0, &[], b"");
        let (served, line) = serve_on(&anonymous, true, ("GET", "claims/evt_1"));
        assert_eq!(
            (status(&served), line.outcome),
            (401, Outcome::Refused("unauthorized"))
        );
        let off = operator(b"");
        let (served, _) = serve_on(&off, false, ("GET", "claims/evt_1"));
        assert_eq!(status(&served), 404);
        assert_eq!((anonymous.calls(), off.calls()), (vec![], vec![]));
    }

    /// A claims route asks the key's claim authority directly; a settle without a fence in
    /// JSON is refused before anything is asked.
    #[test]
    fn a_claims_route_asks_the_claim_authority_directly() {
        let inspect = operator(b"").replying(vec![AuthorityReply::Record { record: None }]);
        let (served, _) = serve_on(&inspect, true, ("GET", "claims/evt_1"));
        assert_eq!(status(&served), 200);
        let asked = AuthorityRequest::Inspect {
            key: "evt_1".into(),
        };
        assert_eq!(inspect.calls(), [RuntimeCall::Ask(asked)]);
        let no_fence = operator(b"not json");
        let (served, line) = serve_on(&no_fence, true, ("POST", "claims/evt_1/finalize"));
        assert_eq!(
            (status(&served), line.outcome),
            (400, Outcome::Refused("bad_request"))
        );
        assert_eq!(no_fence.calls(), [RuntimeCall::Body]);
    }

    /// The signature route computes a vector's MAC with the runtime and with the `hmac`
    /// crate; panics and errors are the worker's to raise.
    #[test]
    fn the_signature_route_computes_both_macs() {
        let vector = br#"{"secret":"whsec_a","timestamp":1,"body_base64":"e30="}"#;
        let runtime = operator(vector);
        let (served, _) = serve_on(&runtime, true, ("POST", "signature"));
        let TestRouteServed::Answer(answer) = served else {
            panic!("an answer");
        };
        let body: serde_json::Value =
            serde_json::from_slice(answer.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["webcrypto"], body["rust"]);
        assert_eq!(
            serve_on(&runtime, true, ("POST", "panic")).0,
            TestRouteServed::Panic
        );
        assert_eq!(
            serve_on(&runtime, true, ("POST", "error")).0,
            TestRouteServed::Error
        );
    }

    /// A body over `MAX_BODY_BYTES` is refused before anything is asked; without the claim
    /// authority's binding a claims route is a runtime fault.
    #[test]
    fn an_oversized_body_asks_nothing_and_a_missing_binding_is_a_fault() {
        let limit = config(true).delivery.max_body_bytes as usize;
        let big = operator(&vec![b'{'; limit + 1]);
        let (served, line) = serve_on(&big, true, ("POST", "claims/evt_1/finalize"));
        assert_eq!(
            (status(&served), line.outcome),
            (400, Outcome::Refused("bad_request"))
        );
        assert_eq!(big.calls(), [RuntimeCall::Body]);
        let mut unbound = operator(b"");
        unbound.no_binding = true;
        let mut line = LogLine::new(Route::Test);
        let config = config(true);
        let request = ("GET", "claims/evt_1");
        let served = run(serve(
            &unbound,
            request,
            Some(TOKEN),
            Ok(&config),
            &mut line,
        ));
        assert!(served.is_err(), "{served:?}");
    }
}
