//! The failure index object: one per deployment (see [`crate::failures`]). Its RPC `call`
//! applies reports and answers queries; its alarm expires entries and sends the operational
//! notifications waiting in its outbox.

use wasm_bindgen::prelude::*;
use worker::{Env, State};

use super::clock;
use super::env_config;
use super::forward::{self, Exchange, Outgoing};
use super::index_store::KvIndexStore;
use super::log;
use crate::claim::Millis;
use crate::config::{AlertConfig, Config};
use crate::failures::alert::{self, SendFailed};
use crate::failures::{self, AlertPolicy, IndexReply, IndexRequest, Notification};
use crate::log_line::{LogLine, Route};

/// How long one notification's POST may take.
const SEND_TIMEOUT_MS: u64 = 10_000;
/// Most notifications one alarm sends, and most entries it expires (the rest wait a second).
const PER_ALARM: usize = 50;

/// The Rust core of the `FailureIndex` class of `src/entry.mjs`.
#[wasm_bindgen(js_name = FailureIndexCore)]
pub struct FailureIndex {
    state: State,
    env: Env,
}

/// The notification policy: on with `ALERT_URL`, retried like a queued event.
fn policy(config: &Config) -> Option<AlertPolicy> {
    config.alerts.as_ref().map(|alerts| AlertPolicy {
        min_interval_ms: alerts.min_interval_ms,
        retry: config.queue.retry,
    })
}

#[wasm_bindgen(js_class = FailureIndexCore, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl FailureIndex {
    /// The index for `state` (its storage) and `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(state: worker::worker_sys::DurableObjectState, env: Env) -> FailureIndex {
        FailureIndex {
            state: State::from(state),
            env,
        }
    }

    /// One request's JSON (an [`IndexRequest`]), answered with the reply's JSON.
    pub async fn call(&self, request: String) -> String {
        let reply = match serde_json::from_str::<IndexRequest>(&request) {
            Ok(request) => self.serve(&request).await,
            Err(error) => IndexReply::StoreFailed {
                detail: format!("an unreadable request: {error}"),
            },
        };
        serde_json::to_string(&reply).expect("a reply always serialises")
    }

    /// Expires entries and sends due notifications, then sets itself for the next.
    pub async fn alarm(&self) {
        let now = clock::now_ms();
        let config = env_config::config(&self.env).ok();
        let Ok(mut store) = KvIndexStore::open(&self.state.storage()) else {
            return;
        };
        let expired = failures::expire(&mut store, now, PER_ALARM).unwrap_or(0);
        let mut more = expired == PER_ALARM;
        if let Some((alerts, policy)) = config
            .as_deref()
            .and_then(|c| Some((c.alerts.as_ref()?, policy(c)?)))
        {
            more |= self.send_due(&mut store, alerts, &policy, now).await == PER_ALARM;
        }
        let soon = more.then(|| clock::now_ms() + 1_000);
        self.rearm(&mut store, soon).await;
    }
}

impl FailureIndex {
    async fn serve(&self, request: &IndexRequest) -> IndexReply {
        let config = env_config::config(&self.env).ok();
        let alerts = config.as_deref().and_then(policy);
        let mut store = match KvIndexStore::open(&self.state.storage()) {
            Ok(store) => store,
            Err(error) => {
                return IndexReply::StoreFailed {
                    detail: error.to_string(),
                }
            }
        };
        let reply = failures::handle(&mut store, request, clock::now_ms(), alerts.as_ref());
        if config.is_some_and(|config| config.log_storage_usage) {
            let usage = store.usage;
            let line = LogLine::usage(
                failures::INDEX_NAME,
                request.op(),
                usage.rows_read,
                usage.rows_written,
            );
            log::write(&LogLine {
                route: Route::Index,
                ..line
            });
        }
        if matches!(reply, IndexReply::Applied(_) | IndexReply::Noted) {
            self.rearm(&mut store, None).await;
        }
        reply
    }

    /// Makes sure the alarm fires by the index's next wake (or `soon`).
    async fn rearm(&self, store: &mut KvIndexStore, soon: Option<Millis>) {
        let wake = failures::next_wake(store).ok().flatten();
        let Some(at) = [wake, soon].into_iter().flatten().min() else {
            return;
        };
        let storage = self.state.storage();
        let set = storage
            .get_alarm()
            .await
            .ok()
            .flatten()
            .map(|at| at as Millis);
        if set.is_none_or(|set| set > at) {
            if let Err(error) = storage
                .set_alarm(worker::ScheduledTime::new(js_sys::Date::new(
                    &(at as f64).into(),
                )))
                .await
            {
                log::write(&LogLine::alarm_not_set(&error.to_string()));
            }
        }
    }

    /// Sends the notifications due at `now`; returns how many it tried.
    async fn send_due(
        &self,
        store: &mut KvIndexStore,
        alerts: &AlertConfig,
        policy: &AlertPolicy,
        now: Millis,
    ) -> usize {
        let Ok(due) = alert::due(store, now, PER_ALARM) else {
            return 0;
        };
        for notification in &due {
            let accepted = post(alerts, notification).await;
            let kind = notification.kind.name();
            match accepted {
                Ok(()) => {
                    if alert::sent(store, notification).is_ok() {
                        log::write(&LogLine::notification(&notification.id, kind, None));
                    }
                }
                Err(detail) => {
                    let jitter = super::queue::random_fraction();
                    let now = clock::now_ms();
                    if let Ok(failed) = alert::send_failed(store, notification, now, policy, jitter)
                    {
                        let gave_up = failed == SendFailed::GaveUp;
                        let line =
                            LogLine::notification(&notification.id, kind, Some((&detail, gave_up)));
                        log::write(&line);
                    }
                }
            }
        }
        due.len()
    }
}

/// POSTs `notification` to `ALERT_URL`, signed now; `Err` says why it was not accepted (no 2xx
/// within [`SEND_TIMEOUT_MS`]).
async fn post(alerts: &AlertConfig, notification: &Notification) -> Result<(), String> {
    let headers = alert::signed_headers(
        alerts.key.expose(),
        notification,
        (clock::now_ms() / 1_000) as i64,
    );
    let body = wasm_bindgen::JsValue::from_str(&notification.payload);
    let exchange = Exchange::start(&Outgoing {
        url: alerts.url.as_str(),
        method: "POST",
        headers: &headers,
        body: Some(&body),
    })
    .map_err(|_| "the request could not be made".to_owned())?;
    let aborter = exchange.aborter();
    let answer = forward::within(exchange, SEND_TIMEOUT_MS).await;
    aborter.abort();
    match answer {
        Ok(Ok(response)) if (200..300).contains(&response.status()) => Ok(()),
        Ok(Ok(response)) => Err(format!("answered {}", response.status())),
        Ok(Err(outcome)) => Err(format!("{outcome:?}")),
        Err(_) => Err("no answer in time".into()),
    }
}
