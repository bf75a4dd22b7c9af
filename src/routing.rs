//! Which door a request's path leads to: the one routing table, read before anything else.

use crate::log_line::Route;
use crate::providers::Provider;

/// Where a request's path leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Destination<'a> {
    /// `/healthz`.
    Health,
    /// `/api/…`: the Idempotency-Key door, or a pass-through to the API.
    Api,
    /// `/webhooks/{provider}`, for a provider this service knows.
    Webhook(Provider),
    /// `/admin/{rest}`.
    Admin(&'a str),
    /// `/_test/{rest}`.
    Test(&'a str),
    /// Any other path: answered 404 `not_found`.
    Unknown,
}

impl<'a> Destination<'a> {
    /// The destination of `path` (a path only: no query).
    pub fn of(path: &'a str) -> Self {
        if path == "/healthz" {
            return Destination::Health;
        }
        if path.starts_with("/api/") {
            return Destination::Api;
        }
        let webhook = path.strip_prefix("/webhooks/");
        if let Some(provider) = webhook.and_then(Provider::from_name) {
            return Destination::Webhook(provider);
        }
        if let Some(rest) = path.strip_prefix("/admin/") {
            return Destination::Admin(rest);
        }
        match path.strip_prefix("/_test/") {
            Some(rest) => Destination::Test(rest),
            None => Destination::Unknown,
        }
    }

    /// The route its log line names.
    pub fn route(self) -> Route {
        match self {
            Destination::Health => Route::Health,
            Destination::Api => Route::Idempotency,
            Destination::Webhook(_) => Route::Webhook,
            Destination::Admin(_) => Route::Admin,
            Destination::Test(_) => Route::Test,
            Destination::Unknown => Route::Unknown,
        }
    }
}

/// The methods `/healthz` answers; any other gets 405 with these in `Allow`.
pub const HEALTH_METHODS: &str = "GET, HEAD";

/// True when `/healthz` answers `method`.
pub fn health_allows(method: &str) -> bool {
    matches!(method, "GET" | "HEAD")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each door's path leads to it; a webhook path for a provider this service does not know,
    /// and any other path, lead nowhere.
    #[test]
    fn each_path_leads_to_its_door() {
        assert_eq!(Destination::of("/healthz"), Destination::Health);
        assert_eq!(Destination::of("/healthz/"), Destination::Unknown);
        assert_eq!(Destination::of("/api/charges"), Destination::Api);
        assert_eq!(Destination::of("/api"), Destination::Unknown);
        for provider in Provider::ALL {
            let path = format!("/webhooks/{}", provider.name());
            assert_eq!(Destination::of(&path), Destination::Webhook(provider));
        }
        assert_eq!(Destination::of("/webhooks/paypal"), Destination::Unknown);
        assert_eq!(Destination::of("/webhooks/stripe/x"), Destination::Unknown);
        assert_eq!(
            Destination::of("/admin/events/evt_1"),
            Destination::Admin("events/evt_1")
        );
        assert_eq!(Destination::of("/admin/"), Destination::Admin(""));
        assert_eq!(
            Destination::of("/_test/claims/k"),
            Destination::Test("claims/k")
        );
        assert_eq!(Destination::of("/"), Destination::Unknown);
        assert_eq!(Destination::of("/admin"), Destination::Unknown);
    }

    /// Every destination's log line names its route.
    #[test]
    fn each_destination_names_its_route() {
        assert_eq!(Destination::of("/api/x").route(), Route::Idempotency);
        assert_eq!(Destination::of("/webhooks/github").route(), Route::Webhook);
        assert_eq!(Destination::of("/nowhere").route(), Route::Unknown);
        assert_eq!(Destination::of("/healthz").route(), Route::Health);
    }

    /// `/healthz` answers reads only, and its `Allow` header lists exactly the methods it
    /// answers.
    #[test]
    fn health_answers_reads_only_and_says_which() {
        assert!(health_allows("GET") && health_allows("HEAD"));
        assert!(!health_allows("POST") && !health_allows("get"));
        let listed: Vec<&str> = HEALTH_METHODS.split(", ").collect();
        for method in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
            assert_eq!(health_allows(method), listed.contains(&method), "{method}");
        }
        assert!(listed.iter().all(|method| health_allows(method)));
    }
}
