//! The reconciler: one reconciliation call over the runtime (see [`crate::reconcile`] for its
//! rules): one page of the sender's log, and what each listed event gets from its claim; and
//! the scheduled run ([`scheduled`]). Written once over [`Runtime`], tested on the host over
//! [`crate::runtime::memory::Memory`].

use std::collections::BTreeSet;

use futures_util::future::join_all;

pub mod scheduled;
#[cfg(test)]
mod tests;

use crate::claim::{ClaimOutcome, ClaimState, EnqueueOutcome, Millis, Nonce};
use crate::claim_authority::webhook::webhook_request;
use crate::claim_authority::{AuthorityReply, AuthorityRequest, Delivery};
use crate::config::{Config, GithubApi};
use crate::origin::{OriginOutcome, Verdict};
use crate::providers::stripe::signature;
use crate::providers::Provider;
use crate::reconcile::call::ReconcileCall;
use crate::reconcile::tally::{
    ErrorCode, RunError, RunOutcome, SenderAnswer, SenderRequest, Tally, SOURCE_HEADER,
};
use crate::reconcile::{github, stripe, SenderLog};
use crate::runtime::Runtime;

/// Stripe events handed to their claims side by side: the runtime's six connections.
pub const SIDE_BY_SIDE: usize = 6;

/// Counts what one listed event got on `tally`.
fn count(tally: &mut Tally, counted: Counted) {
    match counted {
        Counted::AlreadyDone => tally.already_done += 1,
        Counted::InFlight => tally.in_flight += 1,
        Counted::Dead => tally.dead += 1,
        Counted::HandedOver => tally.handed_over += 1,
        Counted::RedeliveryRequested => tally.redelivery_requested += 1,
        Counted::Failed(error) => tally.error(*error),
    }
}

/// What one listed event got.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Counted {
    AlreadyDone,
    InFlight,
    Dead,
    HandedOver,
    RedeliveryRequested,
    Failed(Box<RunError>),
}

/// Runs `call` under `config`: one page of the sender's log, each listed event through its
/// claim. A sender that is not configured lists nothing.
pub async fn run<R: Runtime>(runtime: &R, config: &Config, call: &ReconcileCall) -> RunOutcome {
    match call.log {
        SenderLog::Stripe => stripe_page(runtime, config, call).await,
        SenderLog::Github => github_page(runtime, config, call).await,
    }
}

/// A page that could not be read: the error, and the same position to come back to.
fn stopped(call: &ReconcileCall, error: RunError) -> RunOutcome {
    let mut tally = Tally::default();
    tally.error(error);
    RunOutcome::Ran {
        tally,
        next: Some(call.cursor(call.after.clone())),
    }
}

/// The sender's answer to `request`, or how the call ends without one.
async fn fetch<R: Runtime>(
    runtime: &R,
    log: SenderLog,
    request: &SenderRequest,
) -> Result<SenderAnswer, Result<RunError, u16>> {
    let answer = match runtime.sender_api(request).await {
        Ok(answer) => answer,
        Err(detail) => {
            let detail = format!("{} did not answer: {detail}", log.title());
            return Err(Ok(RunError::new(ErrorCode::SenderFailed, detail)));
        }
    };
    let status = answer.status;
    let retry_after = crate::origin::retry_after_at(429, &answer.headers, runtime.now_ms())
        .map(|at| crate::answer::retry_after_seconds(at, runtime.now_ms()));
    let exhausted = answer.header("x-ratelimit-remaining") == Some("0");
    let limited = status == 429 || (status == 403 && (exhausted || retry_after.is_some()));
    if limited {
        let detail = format!("{} asked to slow down ({status})", log.title());
        let error = RunError {
            status: Some(status),
            retry_after_seconds: Some(retry_after.unwrap_or(60)),
            ..RunError::new(ErrorCode::SenderRateLimited, detail)
        };
        return Err(Ok(error));
    }
    if status == 401 || status == 403 {
        return Err(Err(status));
    }
    if !(200..300).contains(&status) {
        let detail = format!("{} answered {status}", log.title());
        let error = RunError {
            status: Some(status),
            ..RunError::new(ErrorCode::SenderFailed, detail)
        };
        return Err(Ok(error));
    }
    Ok(answer)
}

/// One page of Stripe's events, each handed to its claim, [`SIDE_BY_SIDE`] at a time.
async fn stripe_page<R: Runtime>(runtime: &R, config: &Config, call: &ReconcileCall) -> RunOutcome {
    let Some(api) = &config.reconcile.stripe else {
        return RunOutcome::Ran {
            tally: Tally::default(),
            next: None,
        };
    };
    let url = stripe::list_url(&api.base, call.since, call.until, call.after.as_deref());
    let request = SenderRequest {
        method: "GET",
        url,
        headers: stripe::headers(&api.key),
    };
    let answer = match fetch(runtime, call.log, &request).await {
        Ok(answer) => answer,
        Err(Ok(error)) => return stopped(call, error),
        Err(Err(status)) => return RunOutcome::KeyRefused { status },
    };
    let page = match stripe::read_page(&answer.body) {
        Ok(page) => page,
        Err(detail) => return stopped(call, RunError::new(ErrorCode::SenderUnreadable, detail)),
    };
    let mut tally = Tally::default();
    for events in page.events.chunks(SIDE_BY_SIDE) {
        let handed = events
            .iter()
            .map(|event| hand_over(runtime, config, event, call.dry_run));
        for counted in join_all(handed).await {
            tally.listed += 1;
            count(&mut tally, counted);
        }
    }
    let last = page.events.last().filter(|_| page.has_more);
    let next = last.map(|event| call.cursor(Some(event.id.clone())));
    RunOutcome::Ran { tally, next }
}

/// Hands Stripe `event` to its claim as a delivery of it would be (in a dry run, only reads
/// its record): signed anew with every secret of the endpoint, marked as reconciled.
async fn hand_over<R: Runtime>(
    runtime: &R,
    config: &Config,
    event: &stripe::ListedEvent,
    dry_run: bool,
) -> Counted {
    let key = Provider::Stripe.key(&event.id);
    if dry_run {
        return by_record(runtime, key, &event.id).await;
    }
    let now = runtime.now_ms();
    let make = |nonce| reconciled_request(config, key, &event.body, now, nonce);
    let body = runtime.body_of(&event.body);
    let (reply, _) = runtime.deliver(make, &body).await;
    by_reply(&reply, &event.id)
}

/// What the reconciler asks of Stripe event `key`'s claim authority at `now`, its JSON `body`
/// beside: what a webhook delivery of it asks (see [`webhook_request`]), signed anew with
/// every secret of the endpoint and marked `X-Webhook-Dedup-Source: reconcile`. The model
/// check delivers with it too.
pub fn reconciled_request(
    config: &Config,
    key: String,
    body: &[u8],
    now: Millis,
    nonce: Nonce,
) -> AuthorityRequest {
    let timestamp = (now / 1_000) as i64;
    let signature = stripe::signature_header(&config.webhook.secrets, timestamp, body);
    let headers = vec![
        (
            "content-type".to_owned(),
            "application/json; charset=utf-8".to_owned(),
        ),
        (signature::HEADER.to_owned(), signature),
        (SOURCE_HEADER.to_owned(), "reconcile".to_owned()),
    ];
    webhook_request(config, Provider::Stripe, key, headers, false, nonce)
}

/// What a delivery's (or storage's) `reply` means for listed event `id`.
fn by_reply(reply: &AuthorityReply, id: &str) -> Counted {
    match reply {
        AuthorityReply::Delivery(Delivery::Forwarded(report)) => {
            if report.verdict == Verdict::Succeeded {
                return Counted::HandedOver;
            }
            let (status, detail) = match report.outcome {
                OriginOutcome::Answered { status } => {
                    (Some(status), format!("the origin answered {status}"))
                }
                OriginOutcome::TimedOut => (None, "the origin did not answer in time".into()),
                _ => (None, "the origin could not be reached".into()),
            };
            let error = RunError {
                id: Some(id.to_owned()),
                status,
                ..RunError::new(ErrorCode::OriginFailed, detail)
            };
            Counted::Failed(Box::new(error))
        }
        AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateProcessed {
            ..
        })) => Counted::AlreadyDone,
        AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateInflight {
            ..
        })) => Counted::InFlight,
        AuthorityReply::Enqueue(EnqueueOutcome::Queued) => Counted::HandedOver,
        AuthorityReply::Enqueue(EnqueueOutcome::Duplicate { state }) => by_state(*state),
        AuthorityReply::Enqueue(EnqueueOutcome::InFlight { .. }) => Counted::InFlight,
        other => claim_failed(other, id),
    }
}

/// What an event's stored `state` means: done, in flight (held or queued), dead; a released
/// claim's work did not happen, so it is handed over again.
fn by_state(state: ClaimState) -> Counted {
    match state {
        ClaimState::Done => Counted::AlreadyDone,
        ClaimState::Processing | ClaimState::Queued => Counted::InFlight,
        ClaimState::Dead => Counted::Dead,
        ClaimState::Released => Counted::HandedOver,
    }
}

/// Reads `key`'s record: what it says of listed event `id` (none: it would be handed over).
async fn by_record<R: Runtime>(runtime: &R, key: String, id: &str) -> Counted {
    match runtime.ask(&AuthorityRequest::Inspect { key }).await {
        Ok(AuthorityReply::Record { record: None }) => Counted::HandedOver,
        Ok(AuthorityReply::Record {
            record: Some(record),
        }) => by_state(record.state()),
        Ok(other) => claim_failed(&other, id),
        Err(fault) => claim_failed(
            &AuthorityReply::from(crate::claim::StoreError::Fatal(fault.0)),
            id,
        ),
    }
}

/// The error of a claim that could not be asked about event `id`.
fn claim_failed(reply: &AuthorityReply, id: &str) -> Counted {
    let detail = match reply {
        AuthorityReply::StoreFailed { detail, .. } => format!("its claim failed: {detail}"),
        _ => "its claim gave an answer that does not fit".into(),
    };
    let error = RunError {
        id: Some(id.to_owned()),
        ..RunError::new(ErrorCode::ClaimFailed, detail)
    };
    Counted::Failed(Box::new(error))
}

/// One page of the hook's deliveries: each failed one whose id was never stored here (or
/// whose claim was given back) is redelivered by GitHub. The window is over at the first
/// delivery older than it.
async fn github_page<R: Runtime>(runtime: &R, config: &Config, call: &ReconcileCall) -> RunOutcome {
    let Some(api) = &config.reconcile.github else {
        return RunOutcome::Ran {
            tally: Tally::default(),
            next: None,
        };
    };
    let request = SenderRequest {
        method: "GET",
        url: github::list_url(&api.base, &api.hook, call.after.as_deref()),
        headers: github::headers(&api.token),
    };
    let answer = match fetch(runtime, call.log, &request).await {
        Ok(answer) => answer,
        Err(Ok(error)) => return stopped(call, error),
        Err(Err(status)) => return RunOutcome::KeyRefused { status },
    };
    let deliveries = match github::read_page(&answer.body) {
        Ok(deliveries) => deliveries,
        Err(detail) => return stopped(call, RunError::new(ErrorCode::SenderUnreadable, detail)),
    };
    let mut next = github::next_cursor(answer.header("link"));
    let mut tally = Tally::default();
    let mut seen = BTreeSet::new();
    for delivery in deliveries {
        if delivery.delivered_at > call.until {
            continue;
        }
        if delivery.delivered_at < call.since {
            next = None;
            break;
        }
        tally.listed += 1;
        let newest_of_its_id = seen.insert(delivery.guid.clone());
        if !newest_of_its_id || delivery.ok || !is_guid(&delivery.guid) {
            tally.skipped += 1;
            continue;
        }
        let counted = redeliver_if_missed(runtime, api, &delivery, call.dry_run).await;
        count(&mut tally, counted);
    }
    let next = next.map(|cursor| call.cursor(Some(cursor)));
    RunOutcome::Ran { tally, next }
}

/// True for a GitHub delivery id: a UUID's letters, digits and dashes.
fn is_guid(guid: &str) -> bool {
    !guid.is_empty() && guid.len() <= 64 && guid.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// A failed delivery: redelivered by GitHub when its id was never stored here (or its claim
/// was given back); else counted by its record.
async fn redeliver_if_missed<R: Runtime>(
    runtime: &R,
    api: &GithubApi,
    delivery: &github::ListedDelivery,
    dry_run: bool,
) -> Counted {
    let key = Provider::Github.key(&delivery.guid);
    match by_record(runtime, key, &delivery.guid).await {
        Counted::HandedOver if dry_run => return Counted::RedeliveryRequested,
        Counted::HandedOver => {}
        counted => return counted,
    }
    let request = SenderRequest {
        method: "POST",
        url: github::redeliver_url(&api.base, &api.hook, delivery.id),
        headers: github::headers(&api.token),
    };
    match fetch(runtime, SenderLog::Github, &request).await {
        Ok(_) => Counted::RedeliveryRequested,
        Err(Ok(error)) => Counted::Failed(Box::new(RunError {
            id: Some(delivery.guid.clone()),
            ..error
        })),
        Err(Err(status)) => Counted::Failed(Box::new(RunError {
            id: Some(delivery.guid.clone()),
            status: Some(status),
            ..RunError::new(
                ErrorCode::SenderFailed,
                format!("GitHub refused the redelivery ({status})"),
            )
        })),
    }
}
