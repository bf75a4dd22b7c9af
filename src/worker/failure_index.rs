//! The failure index object: one per deployment (see [`crate::failures`]). Its RPC `call`
//! applies reports and answers queries; its alarm expires entries and sends the operational
//! notifications waiting in its outbox.

use futures_util::future::join_all;
use wasm_bindgen::prelude::*;
use worker::{Env, ScheduledTime, State};

use super::clock;
use super::env_config;
use super::forward::{self, Exchange, Outgoing};
use super::kv_store::{self, ObjectStore};
use super::log;
use crate::claim::Millis;
use crate::config::AlertConfig;
use crate::failures::alert::{self, PER_ALARM};
use crate::failures::{self, AlertPolicy, IndexReply, IndexRequest, Notification};
use crate::log_line::{LogLine, Route};

/// How long one notification's POST may take.
const SEND_TIMEOUT_MS: u64 = 10_000;

/// The Rust core of the `FailureIndex` class of `src/entry.mjs`.
#[wasm_bindgen(js_name = FailureIndexCore)]
pub struct FailureIndex {
    state: State,
    env: Env,
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
        let ran_at = clock::now_ms();
        let config = env_config::config(&self.env).ok();
        let Ok(mut store) = kv_store::open(&self.state.storage()) else {
            return;
        };
        let expired = failures::expire(&mut store, ran_at, PER_ALARM).unwrap_or(0);
        let alerts = config
            .as_deref()
            .and_then(|c| Some((c.alerts.as_ref()?, AlertPolicy::of(c)?)));
        let sent = match &alerts {
            Some((alerts, policy)) => self.send_due(&mut store, alerts, policy, ran_at).await,
            None => 0,
        };
        let wake = failures::next_wake(&mut store, alerts.is_some())
            .ok()
            .flatten();
        let more = expired == PER_ALARM || sent == PER_ALARM;
        let at = alert::next_alarm(more, wake, ran_at, clock::now_ms());
        if let Some(at) = at {
            self.set_alarm(at).await;
        }
    }
}

impl FailureIndex {
    async fn serve(&self, request: &IndexRequest) -> IndexReply {
        let config = match env_config::config(&self.env) {
            Ok(config) => config,
            // Without a readable configuration it cannot tell whether to notify: a report is
            // refused (its object sends it again later), so no notification is skipped.
            Err(_) => {
                return IndexReply::StoreFailed {
                    detail: "the worker's configuration is invalid (see /healthz)".into(),
                }
            }
        };
        let alerts = AlertPolicy::of(&config);
        let mut store = match kv_store::open(&self.state.storage()) {
            Ok(store) => store,
            Err(error) => {
                return IndexReply::StoreFailed {
                    detail: error.to_string(),
                }
            }
        };
        let reply = failures::handle(&mut store, request, clock::now_ms(), alerts.as_ref());
        if config.log_storage_usage {
            let usage = store.usage;
            let (read, written) = (usage.rows_read, usage.rows_written);
            let line = LogLine::usage(failures::INDEX_NAME, request.op(), read, written);
            log::write(&LogLine {
                route: Route::Index,
                ..line
            });
        }
        if matches!(reply, IndexReply::Applied(_) | IndexReply::Noted) {
            let wake = failures::next_wake(&mut store, alerts.is_some())
                .ok()
                .flatten();
            self.ensure_alarm_by(wake).await;
        }
        reply
    }

    /// Makes sure the alarm fires by `wake`: set unless one is set at or before it.
    async fn ensure_alarm_by(&self, wake: Option<Millis>) {
        let Some(at) = wake else {
            return;
        };
        let set = self.state.storage().get_alarm().await.ok().flatten();
        if set.is_none_or(|set| set as Millis > at) {
            self.set_alarm(at).await;
        }
    }

    /// Sets the alarm for `at`; a failure is logged (the next request or alarm sets it).
    async fn set_alarm(&self, at: Millis) {
        let date = js_sys::Date::new(&(at as f64).into());
        let set = self
            .state
            .storage()
            .set_alarm(ScheduledTime::new(date))
            .await;
        if let Err(error) = set {
            log::write(&LogLine::alarm_not_set(&error.to_string()));
        }
    }

    /// Sends the notifications due at `now`, all at once; returns how many it tried.
    async fn send_due(
        &self,
        store: &mut ObjectStore,
        alerts: &AlertConfig,
        policy: &AlertPolicy,
        now: Millis,
    ) -> usize {
        let Ok(due) = alert::due(store, now, PER_ALARM) else {
            return 0;
        };
        // Sent side by side, so a slow receiver costs one time-out per alarm, not one each.
        let answers = join_all(due.iter().map(|notification| post(alerts, notification))).await;
        for (notification, accepted) in due.iter().zip(answers) {
            let backoff = (policy, super::queue::random_fraction());
            let now = clock::now_ms();
            if let Ok(failed) = alert::settle(store, notification, accepted, now, backoff) {
                let failed = failed
                    .as_ref()
                    .map(|(detail, gave_up)| (detail.as_str(), *gave_up));
                let line =
                    LogLine::notification(&notification.id, notification.kind.name(), failed);
                log::write(&line);
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
