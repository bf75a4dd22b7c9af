//! An event's changes on their way to the failure index, sent from its object's alarm: read
//! what is due, send it, then clear what the index took, or wait a back-off (see
//! [`crate::claim::report_due`]). A failure here never touches the delivery.

use super::clock;
use super::env_config;
use super::index_client;
use super::keeper::Keeper;
use super::log;
use crate::failures::{self, alert, IndexReply, IndexRequest};
use crate::log_line::LogLine;
use crate::origin::Verdict;
use crate::providers::Provider;

/// Sends `key`'s unacknowledged changes, when they are due, and settles them by the index's
/// answer (see [`failures::after_report`]).
pub async fn send_due(keeper: &Keeper, key: &str) {
    let now = clock::now_ms();
    let due = keeper
        .with_store(key, "report", |store| {
            (failures::due_report(store, key, now), None)
        })
        .await
        .and_then(|due| due);
    let Ok(Some((report, changes))) = due else {
        return;
    };
    let reply = match report {
        Some(report) => Some(index_client::send(keeper.env(), &IndexRequest::Report(report)).await),
        None => None,
    };
    let retry = env_config::config(keeper.env())
        .ok()
        .map(|config| config.queue.retry);
    let backoff = (retry, super::queue::random_fraction());
    let now = clock::now_ms();
    let settled = keeper
        .with_store(key, "report", |store| {
            let settled = failures::after_report(store, key, &changes, reply, now, backoff);
            (settled, None)
        })
        .await;
    if let Ok(Err(detail)) = settled {
        log::write(&LogLine::report_failed(key, &detail));
    } else if let Err(error) = settled {
        log::write(&LogLine::report_failed(key, &error.to_string()));
    }
}

/// Tells the failure index that an attempt of event `key` of `provider` ended with `verdict`
/// at its origin, when it must hear of it (see [`alert::origin_failure`]): it sends
/// `origin.failing` when failures spread across events. Best effort, after the attempt is
/// settled and its caller answered.
pub async fn origin_failed(
    env: &worker::Env,
    key: &str,
    provider: Option<Provider>,
    verdict: Verdict,
) {
    let Ok(config) = env_config::config(env) else {
        return;
    };
    let Some(request) = alert::origin_failure(&config, key, provider, verdict) else {
        return;
    };
    if let IndexReply::StoreFailed { detail } = index_client::send(env, &request).await {
        log::write(&LogLine::report_failed(key, &detail));
    }
}
