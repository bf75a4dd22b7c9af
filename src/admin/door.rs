//! An admin request's whole sequence, over the [`Runtime`]: where it goes (see [`route`]),
//! then for a call on one record its inspection and the change the answer table decides, and
//! for a route over the failure index the index's answer or a bulk redelivery.

use crate::answer::HttpAnswer;
use crate::claim::ClaimPolicy;
use crate::claim_authority::AuthorityRequest;
use crate::config::{Config, ConfigProblem};
use crate::failure_index::{IndexRequest, ListQuery};
use crate::log_line::{AdminWord, Level, LogLine, Outcome};
use crate::runtime::{Runtime, RuntimeFault};

use super::dead_letters::{self, Bulk, IndexCall};
use super::origins::{self, OriginsCall};
use super::reconcile::{self, ReconcileRoute};
use super::{after_change, after_inspect, route, AdminAnswer, AdminRoute, RecordCall};
use crate::config::DeliveryConfig;
use crate::origin_gate::GateRequest;

/// What an admin request is answered with.
#[derive(Debug, PartialEq)]
pub enum AdminServed {
    /// An admin API answer.
    Api(AdminAnswer),
    /// The operator page or one of its assets.
    Page(HttpAnswer),
}

impl AdminServed {
    /// The answer as HTTP.
    pub fn http(self) -> HttpAnswer {
        match self {
            AdminServed::Api(answer) => answer.http(),
            AdminServed::Page(asset) => asset,
        }
    }
}

/// Serves a `method` request for `rest` (the path after `/admin/`) with the query's `pairs` on
/// `host`,
/// given the usable admin `token` and the `loaded` configuration; the log line learns the key,
/// the outcome, and a raised level when an operator changed a record. `Err` when the claim
/// authority's binding is missing.
pub async fn serve<R: Runtime>(
    runtime: &R,
    request: (&str, &str, &[(String, String)], Option<&str>),
    token: Option<&str>,
    loaded: Result<&Config, &[ConfigProblem]>,
    line: &mut LogLine,
) -> Result<AdminServed, RuntimeFault> {
    let authorization = runtime.header("authorization");
    let answer = match route(request, token, authorization.as_deref(), loaded) {
        AdminRoute::Page(asset) => {
            line.outcome = Outcome::Admin(AdminWord::Page);
            return Ok(AdminServed::Page(asset));
        }
        AdminRoute::Answer(answer, detail) => {
            line.detail = detail;
            answer
        }
        AdminRoute::Index(call, policy) => index_call(runtime, policy, call).await?,
        AdminRoute::Record(call) => record_call(runtime, call, line).await?,
        AdminRoute::Reconcile(route) => {
            let Ok(config) = loaded else {
                unreachable!("a route past the gate has a valid configuration")
            };
            reconcile_call(runtime, route, config, line).await
        }
        AdminRoute::Origins {
            call,
            known,
            limits,
            probe_ms,
        } => {
            let route = OriginsRoute {
                known: &known,
                limits: &limits,
                probe_ms,
            };
            origins_call(runtime, call, route, line).await
        }
    };
    line.outcome = answer.outcome;
    Ok(AdminServed::Api(answer))
}

/// A call on one record: inspect it, then release, forget or redeliver it as the answer
/// table decides. A forgotten event the failure index shows is reported to it (best effort:
/// a lost report leaves the entry until an action finds the record gone, or it expires).
async fn record_call<R: Runtime>(
    runtime: &R,
    record: RecordCall,
    line: &mut LogLine,
) -> Result<AdminAnswer, RuntimeFault> {
    let RecordCall {
        call,
        force,
        policy,
    } = &record;
    line.key = Some(call.key.clone());
    let inspect = AuthorityRequest::Inspect {
        key: call.key.clone(),
    };
    let inspected = runtime.ask(&inspect).await?;
    let next = after_inspect(call.action, &inspected, runtime.now_ms(), *force);
    let change = match next.into_request(&call.key, *policy) {
        Ok(change) => change,
        Err(answer) => return Ok(answer),
    };
    let changed = runtime.ask(&change).await?;
    let now = runtime.now_ms();
    if let Some(report) = dead_letters::forgotten_report(&inspected, &changed, now) {
        runtime.ask_index(&IndexRequest::Report(report)).await;
    }
    let answer = after_change(&changed);
    if record.changed(&answer) {
        line.raise(Level::Warn);
    }
    Ok(answer)
}

/// A route over the failure index: the list and the summary are the index's answers; a bulk
/// redelivery asks each event's own object.
async fn index_call<R: Runtime>(
    runtime: &R,
    policy: ClaimPolicy,
    call: IndexCall,
) -> Result<AdminAnswer, RuntimeFault> {
    Ok(match call {
        IndexCall::List(query) => {
            dead_letters::list_answer(runtime.ask_index(&IndexRequest::List(query)).await)
        }
        IndexCall::Summary => {
            dead_letters::summary_answer(runtime.ask_index(&IndexRequest::Summary).await)
        }
        IndexCall::Redeliver(query) => redeliver(runtime, policy, query).await?,
    })
}

/// Redelivers the dead entries of one page of `query`, each through its own object (see
/// [`Bulk`]); the index hears of each event found gone.
async fn redeliver<R: Runtime>(
    runtime: &R,
    policy: ClaimPolicy,
    query: ListQuery,
) -> Result<AdminAnswer, RuntimeFault> {
    let listed = runtime.ask_index(&IndexRequest::List(query)).await;
    let page = match dead_letters::page(listed) {
        Ok(page) => page,
        Err(answer) => return Ok(answer),
    };
    let mut bulk = Bulk::new(page, policy);
    while let Some(request) = bulk.next_request() {
        let reply = runtime.ask(&request).await?;
        if let Some(gone) = bulk.take(&reply) {
            runtime.ask_index(&gone).await;
        }
    }
    Ok(bulk.answer())
}

/// A reconciliation route: a run reads its body (raising the line to `warn`: events may have
/// been delivered), the list asks the failure index.
async fn reconcile_call<R: Runtime>(
    runtime: &R,
    route: ReconcileRoute,
    config: &Config,
    line: &mut LogLine,
) -> AdminAnswer {
    if route == ReconcileRoute::List {
        return reconcile::list(runtime, config).await;
    }
    let body = match runtime.body(&config.delivery).await {
        Ok(body) => runtime.bytes(&body),
        Err(_) => Vec::new(),
    };
    let answer = reconcile::run_call(runtime, config, &body).await;
    if answer.status == 200 {
        line.raise(Level::Warn);
    }
    answer
}

/// What a route over the origins' gates works with (see [`AdminRoute::Origins`]).
struct OriginsRoute<'a> {
    known: &'a [String],
    limits: &'a DeliveryConfig,
    probe_ms: u64,
}

/// A route over the origins' gates: the list asks each origin's gate; a pause or resume reads
/// its body, then asks the one gate it names (raising the line to `warn`: an operator changed
/// how events are delivered). Each gate's answer also tells this instance of the worker how
/// its origin stands, for its sync deliveries (see [`crate::origin_gate::known`]).
async fn origins_call<R: Runtime>(
    runtime: &R,
    call: OriginsCall,
    route: OriginsRoute<'_>,
    line: &mut LogLine,
) -> AdminAnswer {
    let ask = |request: GateRequest| async move {
        let view = runtime.ask_gate(&request).await;
        if let Ok(view) = &view {
            let now = runtime.now_ms();
            runtime.with_known_origins(|known| known.told(view, now, route.probe_ms));
        }
        view
    };
    if call == OriginsCall::List {
        let mut views = Vec::new();
        for origin in route.known {
            let origin = origin.clone();
            views.push(ask(GateRequest::View { origin }).await);
        }
        return origins::list_answer(views);
    }
    let body = match runtime.body(route.limits).await {
        Ok(body) => runtime.bytes(&body),
        Err(_) => Vec::new(),
    };
    let request = match origins::change_request(call, &body, route.known) {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    line.key = Some(request.origin().to_owned());
    let answer = origins::changed_answer(call, ask(request).await);
    if answer.status < 400 {
        line.raise(Level::Warn);
    }
    answer
}
