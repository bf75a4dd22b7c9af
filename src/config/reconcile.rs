//! Reconciliation against the senders' own logs (see [`crate::reconcile`]): each sender's API
//! keys, where its API is, and how far back a scheduled run looks.

use super::keys::{
    GITHUB_API_BASE_URL, GITHUB_API_TOKEN, GITHUB_HOOK, RECONCILE_LOOKBACK_HOURS,
    STRIPE_API_BASE_URL, STRIPE_API_KEY,
};
use super::reader::Reader;
use crate::claim::Millis;
use crate::secret::Secret;

/// Default lookback of a scheduled run: GitHub's delivery log reaches back 3 days.
pub const DEFAULT_RECONCILE_LOOKBACK_HOURS: u64 = 72;
/// Longest lookback: Stripe keeps events for 30 days.
pub const MAX_RECONCILE_LOOKBACK_HOURS: u64 = 720;
/// Stripe's API.
pub const STRIPE_API: &str = "https://api.stripe.com";
/// GitHub's API.
pub const GITHUB_API: &str = "https://api.github.com";

/// Stripe's event log, when `STRIPE_API_KEY` is set.
#[derive(Clone, Debug)]
pub struct StripeApi {
    /// A secret key, or a restricted key with read access to Events.
    pub key: Secret,
    /// Where the API is (`STRIPE_API_BASE_URL`).
    pub base: url::Url,
}

/// GitHub's delivery log of one hook, when `GITHUB_API_TOKEN` and `GITHUB_HOOK` are set.
#[derive(Clone, Debug)]
pub struct GithubApi {
    /// A token that may read and redeliver the hook's deliveries.
    pub token: Secret,
    /// Where the API is (`GITHUB_API_BASE_URL`).
    pub base: url::Url,
    /// The hook's path: `repos/{owner}/{repo}/hooks/{id}` or `orgs/{org}/hooks/{id}`.
    pub hook: String,
}

/// Reconciliation's settings.
#[derive(Clone, Debug, Default)]
pub struct ReconcileConfig {
    /// Stripe's event log, when its key is set.
    pub stripe: Option<StripeApi>,
    /// GitHub's delivery log, when its token and hook are set.
    pub github: Option<GithubApi>,
    /// `RECONCILE_LOOKBACK_HOURS`, in milliseconds.
    pub lookback_ms: Millis,
}

impl ReconcileConfig {
    /// Reads the reconciliation keys. A Stripe key must be a secret (`sk_`) or restricted
    /// (`rk_`) key; a GitHub token needs its hook and the hook its token.
    pub fn load<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> ReconcileConfig {
        let lookback_hours = r.integer(
            RECONCILE_LOOKBACK_HOURS,
            DEFAULT_RECONCILE_LOOKBACK_HOURS,
            1,
            MAX_RECONCILE_LOOKBACK_HOURS,
        );
        let stripe_base = base(r, STRIPE_API_BASE_URL, STRIPE_API);
        let stripe_key = r.raw(STRIPE_API_KEY);
        let stripe_ok = |key: &str| key.starts_with("sk_") || key.starts_with("rk_");
        if stripe_key.as_deref().is_some_and(|key| !stripe_ok(key)) {
            let problem = "not a secret key (sk_…) or a restricted key (rk_…) with Events read";
            r.problem(STRIPE_API_KEY, problem);
        }
        let github_base = base(r, GITHUB_API_BASE_URL, GITHUB_API);
        let token = r.raw(GITHUB_API_TOKEN);
        let hook = r.raw(GITHUB_HOOK);
        if hook.as_deref().is_some_and(|hook| !is_hook(hook)) {
            let problem = "not repos/{owner}/{repo}/hooks/{id} or orgs/{org}/hooks/{id}";
            r.problem(GITHUB_HOOK, problem);
        }
        match (&token, &hook) {
            (Some(_), None) => r.problem(GITHUB_HOOK, format!("needed with {GITHUB_API_TOKEN}")),
            (None, Some(_)) => r.problem(GITHUB_API_TOKEN, format!("needed with {GITHUB_HOOK}")),
            _ => {}
        }
        ReconcileConfig {
            stripe: stripe_key.map(|key| StripeApi {
                key: Secret::new(key),
                base: stripe_base,
            }),
            github: token.zip(hook).map(|(token, hook)| GithubApi {
                token: Secret::new(token),
                base: github_base,
                hook,
            }),
            lookback_ms: lookback_hours * 3_600_000,
        }
    }
}

/// The base URL `key` sets, else `default`.
fn base<F: Fn(&str) -> Option<String>>(
    r: &mut Reader<F>,
    key: &'static str,
    default: &str,
) -> url::Url {
    let fallback = || url::Url::parse(default).expect("a valid default URL");
    r.url(key).unwrap_or_else(fallback)
}

/// True for `repos/{owner}/{repo}/hooks/{id}` or `orgs/{org}/hooks/{id}`: names of letters,
/// digits, `-`, `_` and `.`, and a number.
fn is_hook(hook: &str) -> bool {
    let name = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let id = |part: &str| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit());
    match hook.split('/').collect::<Vec<_>>()[..] {
        ["repos", owner, repo, "hooks", number] => name(owner) && name(repo) && id(number),
        ["orgs", org, "hooks", number] => name(org) && id(number),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_is_a_repository_or_organisation_hook_path() {
        assert!(is_hook("repos/acme/shop.web/hooks/42"));
        assert!(is_hook("orgs/acme/hooks/7"));
        for bad in [
            "repos/acme/hooks/42",
            "repos/acme/shop/hooks/x",
            "orgs/acme/hooks/",
            "repos/../shop/hooks/1",
            "/repos/acme/shop/hooks/1",
            "orgs/ac me/hooks/1",
            "app/hook",
        ] {
            assert!(!is_hook(bad), "{bad}");
        }
    }
}
