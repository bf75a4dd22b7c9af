//! An event's changes on their way to the failure index, and an origin's failures it must
//! hear of. A failure here never touches the delivery.

use super::{Keeper, ObjectIo};
use crate::claim::random_fraction;
use crate::failures::{self, alert, IndexReply, IndexRequest};
use crate::log_line::LogLine;
use crate::origin::Verdict;
use crate::providers::Provider;

impl<I: ObjectIo> Keeper<I> {
    /// Sends `key`'s unacknowledged changes, when they are due, and settles them by the index's
    /// answer (see [`failures::after_report`]): cleared when it took them, else sent again
    /// after a back-off.
    pub async fn send_due(&self, key: &str) {
        let now = self.io.now_ms();
        let due = self
            .with_store(key, "report", |store| {
                (failures::due_report(store, key, now), None)
            })
            .await
            .and_then(|due| due);
        let Ok(Some((report, changes))) = due else {
            return;
        };
        let reply = match report {
            Some(report) => Some(self.io.ask_index(&IndexRequest::Report(report)).await),
            None => None,
        };
        let retry = self.io.config().map(|config| config.queue.retry);
        let backoff = (retry, random_fraction());
        let now = self.io.now_ms();
        let settled = self
            .with_store(key, "report", |store| {
                let settled = failures::after_report(store, key, &changes, reply, now, backoff);
                (settled, None)
            })
            .await;
        let failed = match settled {
            Ok(Err(detail)) => detail,
            Err(error) => error.to_string(),
            Ok(Ok(_)) => return,
        };
        self.io.write(&LogLine::report_failed(key, &failed));
    }

    /// Tells the failure index that an attempt of event `key` of `provider` ended with
    /// `verdict` at its origin, when it must hear of it (see [`alert::origin_failure`]): it
    /// sends `origin.failing` when failures spread across events. Best effort, after the
    /// attempt is settled and its caller answered.
    pub async fn origin_failed(&self, key: &str, provider: Option<Provider>, verdict: Verdict) {
        let Some(config) = self.io.config() else {
            return;
        };
        let Some(request) = alert::origin_failure(&config, key, provider, verdict) else {
            return;
        };
        if let IndexReply::StoreFailed { detail } = self.io.ask_index(&request).await {
            self.io.write(&LogLine::report_failed(key, &detail));
        }
    }
}
