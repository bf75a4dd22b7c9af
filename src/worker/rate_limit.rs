//! The runtime's rate-limiting bindings (`[[ratelimits]]` in `wrangler.toml`), each optional.

use worker::Env;

/// True when every key in `keys` is within the limit of the binding named `binding`; always
/// true without the binding. A limiter that fails lets the request through: a limit bounds
/// cost, it does not guard correctness.
pub async fn within(env: &Env, binding: &str, keys: &[String]) -> bool {
    let Ok(limiter) = env.rate_limiter(binding) else {
        return true;
    };
    let mut allowed = true;
    for key in keys {
        if let Ok(outcome) = limiter.limit(key.clone()).await {
            allowed &= outcome.success;
        }
    }
    allowed
}
