//! The failure index object: one per deployment (see [`crate::failures`]). Its RPC `call`
//! applies reports and answers queries; its alarm expires entries and sends the operational
//! notifications waiting in its outbox.

use futures_util::future::join_all;
use wasm_bindgen::prelude::*;
use worker::{Env, ScheduledTime, State};

use super::clock;
use super::env_config;
use super::forward::{self, Exchange, Outgoing};
use super::kv_store;
use super::log;
use crate::claim::Millis;
use crate::config::AlertConfig;
use crate::failures::{self, alert, object, IndexReply, IndexRequest, Notification};
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

    /// Expires entries and sends due notifications, then sets itself for the next (see
    /// [`object::alarm_start`] and [`object::alarm_end`]).
    pub async fn alarm(&self) {
        let config = env_config::config(&self.env).ok();
        let Ok(mut store) = kv_store::open(&self.state.storage()) else {
            return;
        };
        let run = object::alarm_start(&mut store, config.as_deref(), clock::now_ms());
        // Sent side by side, so a slow receiver costs one time-out per alarm, not one each.
        let answers = match run.alerts {
            Some((alerts, _)) => join_all(run.due.iter().map(|due| post(alerts, due))).await,
            None => Vec::new(),
        };
        let jitter = crate::keeper::random_fraction;
        let (sent, at) = object::alarm_end(&mut store, &run, answers, clock::now_ms(), jitter);
        for line in &sent {
            let failed = line
                .failed
                .as_ref()
                .map(|(why, gave_up)| (why.as_str(), *gave_up));
            log::write(&LogLine::notification(&line.id, line.kind, failed));
        }
        if let Some(at) = at {
            self.set_alarm(at).await;
        }
    }
}

impl FailureIndex {
    async fn serve(&self, request: &IndexRequest) -> IndexReply {
        let config = env_config::config(&self.env).ok();
        let mut store = kv_store::open(&self.state.storage());
        let opened = store.as_mut().map_err(|error| &*error);
        let (reply, wake) = object::serve(opened, config.as_deref(), request, clock::now_ms());
        if let (Ok(store), Some(true)) = (&store, config.map(|c| c.log_storage_usage)) {
            let usage = store.usage;
            let (read, written) = (usage.rows_read, usage.rows_written);
            let line = LogLine::usage(failures::INDEX_NAME, request.op(), read, written);
            log::write(&LogLine {
                route: Route::Index,
                ..line
            });
        }
        if let Some(wake) = wake {
            let set = self.state.storage().get_alarm().await.ok().flatten();
            if object::must_set_alarm(set.map(|set| set as Millis), wake) {
                self.set_alarm(wake).await;
            }
        }
        reply
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
