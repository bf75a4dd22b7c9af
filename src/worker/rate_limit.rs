//! The runtime's rate-limiting bindings (`[[ratelimits]]` in `wrangler.toml`), each optional;
//! their verdicts are decided in [`crate::rate_limit`].

use wasm_bindgen::JsValue;
use worker::Env;

use super::log;
use crate::log_line::{LogLine, Route};
use crate::rate_limit::{Check, LimiterFault};

/// True when every key in `keys` is within the limit of the binding named `binding`; always
/// true without the binding. A limiter that fails (a binding of another kind under that name,
/// or a failed call) lets the request through, and writes a `rate_limit_failed` log line and
/// metric for `route`.
pub async fn within(env: &Env, route: Route, binding: &str, keys: &[String]) -> bool {
    let check = check(env, binding, keys).await;
    if let Check::Failed(fault) = check {
        log::record(env, &LogLine::rate_limit_failed(route, binding, fault));
    }
    check.admits()
}

/// Asks the limiter about each key (every one, so each is counted).
async fn check(env: &Env, binding: &str, keys: &[String]) -> Check {
    let bound = js_sys::Reflect::get(env, &JsValue::from_str(binding))
        .is_ok_and(|value| !value.is_undefined());
    if !bound {
        return Check::Unlimited;
    }
    let Ok(limiter) = env.rate_limiter(binding) else {
        return Check::Failed(LimiterFault::NotALimiter);
    };
    let mut results = Vec::with_capacity(keys.len());
    for key in keys {
        results.push(match limiter.limit(key.clone()).await {
            Ok(outcome) => Ok(outcome.success),
            Err(_) => Err(LimiterFault::CallFailed),
        });
    }
    Check::of(results)
}
