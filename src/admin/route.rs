//! Where an admin request goes, decided before any record or the failure index is asked: the
//! operator page, an answer at once (locked, misconfigured, a bad call), a route over the
//! index, or a call on one record.

use super::dead_letters::{self, IndexCall};
use super::origins::{self, OriginsCall};
use super::{call, gate, page, policy_for, Action, AdminAnswer, AdminCall};
use crate::answer::HttpAnswer;
use crate::claim::ClaimPolicy;
use crate::config::{self, Config, ConfigProblem, DeliveryConfig};

/// Where an admin request goes.
#[derive(Clone, Debug, PartialEq)]
pub enum AdminRoute {
    /// The operator page or one of its assets.
    Page(HttpAnswer),
    /// Answered at once, with what its log line says.
    Answer(AdminAnswer, Option<String>),
    /// A route over the failure index; a redelivery changes events' records with the policy.
    Index(IndexCall, ClaimPolicy),
    /// A call on one record.
    Record(RecordCall),
    /// A route over the origins' gates.
    Origins {
        /// Which route.
        call: OriginsCall,
        /// The origins the worker delivers to.
        known: Vec<String>,
        /// The body limits (a pause or resume reads a small JSON body).
        limits: DeliveryConfig,
        /// `ORIGIN_PROBE_SECONDS`, in milliseconds: how long a pause until a resume is
        /// remembered by this instance for its sync deliveries.
        probe_ms: u64,
    },
    /// A reconciliation route (see [`super::reconcile`]).
    Reconcile(super::reconcile::ReconcileRoute),
}

/// A call on one record, with its terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordCall {
    /// Which record and what to do.
    pub call: AdminCall,
    /// `?force=true`: release a claim whose lease is still live.
    pub force: bool,
    /// The claim policy a change to the record is made with.
    pub policy: ClaimPolicy,
}

impl RecordCall {
    /// Whether its log line is raised to `warn`: an operator changed a record.
    pub fn changed(&self, answer: &AdminAnswer) -> bool {
        answer.status < 400 && self.call.action != Action::Inspect
    }
}

/// Where a `method` request on `host` for `rest` (the path after `/admin/`) with the query's
/// `pairs` goes, given the usable admin `token`, the request's `authorization` and the
/// `loaded` configuration. The page and its assets are served to a GET without a token (while
/// a usable admin token is set), on the page's own host when `ADMIN_PAGE_HOST` names one (see
/// [`page_served_on`]); every other route only past the [`gate`]: without the token, one
/// answer whatever the configuration; with it, 500 while the configuration is invalid.
pub fn route(
    (method, rest, pairs, host): (&str, &str, &[(String, String)], Option<&str>),
    token: Option<&str>,
    authorization: Option<&str>,
    loaded: Result<&Config, &[ConfigProblem]>,
) -> AdminRoute {
    if method == "GET" && token.is_some() && page_served_on(host, loaded) {
        if let Some(asset) = page::asset(rest) {
            return AdminRoute::Page(asset);
        }
    }
    if let Err(locked) = gate(token, authorization) {
        let detail = Some(locked.log_detail().to_owned());
        return AdminRoute::Answer(AdminAnswer::unauthorized(), detail);
    }
    let config = match loaded {
        Ok(config) => config,
        Err(problems) => {
            let detail = Some(config::describe(problems));
            return AdminRoute::Answer(AdminAnswer::misconfigured(), detail);
        }
    };
    if rest == "reconcile" {
        return match super::reconcile::reconcile_route(method) {
            Ok(route) => AdminRoute::Reconcile(route),
            Err(refused) => AdminRoute::Answer(refused, None),
        };
    }
    if let Some(route) = collection_route(method, rest, pairs, config) {
        return route;
    }
    let call = match call(method, rest) {
        Ok(call) => call,
        Err(error) => return AdminRoute::Answer(AdminAnswer::for_call_error(error), None),
    };
    let force = pairs
        .iter()
        .any(|(name, value)| name == "force" && value == "true");
    let events = config.webhook.claims;
    let policy = policy_for(
        call.family,
        events,
        config.api.as_ref().map(|api| api.claims),
    );
    AdminRoute::Record(RecordCall {
        call,
        force,
        policy,
    })
}

/// The route of a `method` request for `rest` over a collection (the failure index's lists,
/// the origins), with the query's `pairs`; `None` for a record's route.
fn collection_route(
    method: &str,
    rest: &str,
    pairs: &[(String, String)],
    config: &Config,
) -> Option<AdminRoute> {
    let query = pairs
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    match dead_letters::index_call(method, rest, query) {
        Some(Ok(call)) => return Some(AdminRoute::Index(call, config.webhook.claims)),
        Some(Err(refused)) => return Some(AdminRoute::Answer(refused, None)),
        None => {}
    }
    Some(match origins::origins_call(method, rest)? {
        Ok(call) => {
            let known = origins::known_origins(config);
            let (limits, probe_ms) = (config.delivery, config.gate.probe_ms);
            AdminRoute::Origins {
                call,
                known,
                limits,
                probe_ms,
            }
        }
        Err(refused) => AdminRoute::Answer(refused, None),
    })
}

/// Whether the operator page is served on `host`: on every host, unless `ADMIN_PAGE_HOST`
/// names the one (then elsewhere its paths are admin routes like any other: the gate's 401
/// without the token). While the configuration is invalid the page is served as without the
/// setting: the API door then serves nothing that could script it.
pub fn page_served_on(host: Option<&str>, loaded: Result<&Config, &[ConfigProblem]>) -> bool {
    let page_host = loaded
        .ok()
        .and_then(|config| config.admin.page_host.as_deref());
    page_host.is_none_or(|page| host.is_some_and(|host| host.eq_ignore_ascii_case(page)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::Family;

    const TOKEN: &str = "a-long-admin-token-0123456789";

    fn config() -> Config {
        Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/hook".into()),
            "ADMIN_TOKEN" => Some(TOKEN.into()),
            _ => None,
        })
        .unwrap()
    }

    fn ask(method: &str, rest: &str, query: &[(&str, &str)], bearer: bool) -> AdminRoute {
        let config = config();
        let pairs: Vec<(String, String)> = query
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        let authorization = format!("Bearer {TOKEN}");
        let authorization = bearer.then_some(authorization.as_str());
        route(
            (method, rest, &pairs, Some("worker.example")),
            Some(TOKEN),
            authorization,
            Ok(&config),
        )
    }

    /// The page needs no token; every route past it does; then the index's routes, and a
    /// record's call with its `force` and its family's policy.
    #[test]
    fn an_admin_request_goes_to_the_page_the_gate_the_index_or_a_record() {
        assert!(matches!(ask("GET", "", &[], false), AdminRoute::Page(_)));
        let AdminRoute::Answer(locked, Some(detail)) = ask("GET", "summary", &[], false) else {
            panic!("locked without the token");
        };
        assert_eq!((locked.status, detail.is_empty()), (401, false));
        let summary = ask("GET", "summary", &[], true);
        assert_eq!(
            summary,
            AdminRoute::Index(IndexCall::Summary, config().webhook.claims)
        );
        let AdminRoute::Record(record) =
            ask("POST", "events/evt_1/release", &[("force", "true")], true)
        else {
            panic!("a record's call");
        };
        assert_eq!(
            (record.call.family, record.call.action),
            (Family::Events, Action::Release)
        );
        assert!(record.force);
        assert_eq!(record.policy, config().webhook.claims);
        assert!(
            !record.changed(&AdminAnswer::misconfigured()),
            "a refusal changes nothing"
        );
        let AdminRoute::Answer(bad, None) = ask("PUT", "events/evt_1", &[], true) else {
            panic!("a bad call is answered at once");
        };
        assert_eq!(bad.status, 405);
    }

    /// With the token, an invalid configuration is 500 and names its keys in the log only.
    #[test]
    fn past_the_gate_an_invalid_configuration_is_500() {
        let problems = [ConfigProblem {
            key: "ORIGIN_URL",
            problem: "missing".into(),
        }];
        let bearer = format!("Bearer {TOKEN}");
        let route = route(
            ("GET", "summary", &[], None),
            Some(TOKEN),
            Some(&bearer),
            Err(&problems),
        );
        let AdminRoute::Answer(answer, Some(detail)) = route else {
            panic!("answered at once");
        };
        assert_eq!(answer.status, 500);
        assert!(detail.contains("ORIGIN_URL"));
    }

    /// With `ADMIN_PAGE_HOST` the page is served on that host only; elsewhere its paths are
    /// routes behind the gate (401 without the token).
    #[test]
    fn the_page_is_served_on_its_own_host_when_it_has_one() {
        let confined = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/hook".into()),
            "ADMIN_TOKEN" => Some(TOKEN.into()),
            "ADMIN_PAGE_HOST" => Some("Admin.Example".into()),
            _ => None,
        })
        .unwrap();
        let page = |host| route(("GET", "", &[], host), Some(TOKEN), None, Ok(&confined));
        assert!(matches!(page(Some("admin.example")), AdminRoute::Page(_)));
        let AdminRoute::Answer(elsewhere, _) = page(Some("api.example")) else {
            panic!("not the page elsewhere");
        };
        assert_eq!(elsewhere.status, 401);
        assert!(matches!(page(None), AdminRoute::Answer(..)));
        assert!(
            page_served_on(Some("any.example"), Ok(&config())),
            "unset: every host"
        );
    }
}
