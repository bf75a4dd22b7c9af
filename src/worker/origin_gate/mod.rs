//! The origin gate object: one per origin, the `OriginGate` class of `src/entry.mjs` (see
//! [`crate::origin_gate`] for its rules). Every queued attempt's request to the origin comes
//! here first ([`OriginGate::forward`]): it is held back, or sent on and its answer passed
//! back. Its admin calls come over RPC ([`OriginGate::call`]); its alarm probes
//! `ORIGIN_HEALTH_URL` while the breaker is open.

pub mod client;

use std::cell::RefCell;

use js_sys::futures::JsFuture;
use wasm_bindgen::prelude::*;
use worker::web_sys;
use worker::{Env, State};

use crate::claim::{KvTable, KvValue, Millis};
use crate::config::Config;
use crate::failure_index::alert;
use crate::object::Host;
use crate::origin::{retry_after_at, OriginOutcome};
use crate::origin_gate::{
    after_change, origin_name, serve, Admission, Changed, Gate, GateLimits, GateRequest, GateState,
    GateWord, Health, EVENT_HEADER, GATE_HEADER,
};
use crate::worker::failure_index::client as index_client;
use crate::worker::forward::{self, Exchange};
use crate::worker::object::ObjectRuntime;
use crate::worker::{clock, env_config, log};

/// Where the gate keeps its [`GateState`].
const STATE_KEY: &str = "gate";

/// The Rust core of one origin's gate.
#[wasm_bindgen(js_name = OriginGateCore)]
pub struct OriginGate {
    object: ObjectRuntime,
    /// Read from storage at the first call of the instance.
    gate: RefCell<Option<Gate>>,
}

#[wasm_bindgen(js_class = OriginGateCore, wasm_bindgen_futures = ::worker::wasm_bindgen_futures)]
impl OriginGate {
    /// The gate for `state` (its storage) and `env`.
    #[wasm_bindgen(constructor)]
    pub fn new(state: worker::worker_sys::DurableObjectState, env: Env) -> OriginGate {
        let storage = State::from(state).storage();
        OriginGate {
            object: ObjectRuntime { storage, env },
            gate: RefCell::new(None),
        }
    }

    /// One queued attempt's request: held back (the gate's own answer, nothing sent), or sent
    /// to its URL, the origin's answer passed back without any [`GATE_HEADER`] of its own.
    pub async fn forward(&self, request: web_sys::Request) -> web_sys::Response {
        let Ok(config) = env_config::config(&self.object.env) else {
            // Queued attempts do not start while the configuration is invalid; hold any other.
            let until = clock::now_ms() + 60_000;
            let why = crate::origin_gate::HoldReason::Paused;
            return gate_answer(GateWord::Held { until, why });
        };
        let limits = GateLimits::of(&config);
        let key = request.headers().get(EVENT_HEADER).ok().flatten();
        let now = clock::now_ms();
        let (admission, changed) =
            self.with_gate(|gate| gate.admit(&key.unwrap_or_default(), now, &limits));
        let url = request.url();
        self.after(changed, &url, &config, &limits).await;
        let permit = match admission {
            Admission::Go(permit) => permit,
            Admission::Hold { until, why } => return gate_answer(GateWord::Held { until, why }),
        };
        let answer = send_on(&request, config.queue.forward_timeout_ms).await;
        let now = clock::now_ms();
        let (outcome, retry_after) = match &answer {
            Ok(response) => {
                let status = response.status();
                let headers = forward::answer_headers(response);
                let at = retry_after_at(status, &headers, now);
                (OriginOutcome::Answered { status }, at)
            }
            Err(outcome) => (outcome.clone(), None),
        };
        let max_delay_ms = config.queue.retry.max_delay_ms;
        let health = Health::of(&outcome, retry_after, now, max_delay_ms);
        let changed = self.with_gate(|gate| gate.finish(permit, health, now, &limits));
        self.after(changed, &url, &config, &limits).await;
        match answer {
            Ok(response) => without_gate_header(response),
            Err(OriginOutcome::Failed { error }) => gate_answer(GateWord::Failed(error)),
            Err(OriginOutcome::NotSent) => gate_answer(GateWord::NotSent),
            Err(_) => gate_answer(GateWord::TimedOut),
        }
    }

    /// One admin request's JSON (a [`GateRequest`]), answered with the origin's view as JSON.
    pub async fn call(&self, request: String) -> String {
        let request: GateRequest = match serde_json::from_str(&request) {
            Ok(request) => request,
            Err(error) => return serde_json::json!({ "error": error.to_string() }).to_string(),
        };
        let now = clock::now_ms();
        let (view, changed) = self.with_gate(|gate| serve(gate, &request, now));
        if changed.save {
            self.save();
        }
        serde_json::to_string(&view).expect("a view always serialises")
    }

    /// Probes `ORIGIN_HEALTH_URL` when the open breaker's probe is due, then sets itself for the
    /// next one while the breaker stays open.
    pub async fn alarm(&self) {
        let Ok(config) = env_config::config(&self.object.env) else {
            return;
        };
        let (Some(url), limits) = (config.gate.health_url.as_ref(), GateLimits::of(&config)) else {
            return;
        };
        let now = clock::now_ms();
        if self
            .with_gate(|gate| gate.health_probe_at(&limits))
            .is_some_and(|at| at <= now)
        {
            let sent = Exchange::start("GET", url.as_str(), &[], None);
            let answer = forward::answer_within(sent, alert::SEND_TIMEOUT_MS).await;
            let outcome = match answer {
                Ok(response) => {
                    if let Some(body) = response.body() {
                        let _ = body.cancel();
                    }
                    OriginOutcome::Answered {
                        status: response.status(),
                    }
                }
                Err(outcome) => outcome,
            };
            let now = clock::now_ms();
            let health = Health::of(&outcome, None, now, 0);
            let changed = self.with_gate(|gate| gate.health_probed(health, now, &limits));
            let origin = self.with_gate(|gate| gate.origin().map(str::to_owned));
            self.after(
                changed,
                origin.as_deref().unwrap_or_default(),
                &config,
                &limits,
            )
            .await;
        }
        self.arm(&limits).await;
    }
}

impl OriginGate {
    /// Runs `f` over the gate, read from storage first if this instance has not yet.
    fn with_gate<T>(&self, f: impl FnOnce(&mut Gate) -> T) -> T {
        let mut held = self.gate.borrow_mut();
        let gate = held.get_or_insert_with(|| Gate::new(self.load()));
        f(gate)
    }

    /// The stored state; the default when there is none or it cannot be read.
    fn load(&self) -> GateState {
        let stored = self.object.open().and_then(|mut kv| kv.get(STATE_KEY));
        match stored {
            Ok(Some(KvValue::Text(json))) => serde_json::from_str(&json).unwrap_or_default(),
            _ => GateState::default(),
        }
    }

    /// Writes the gate's state (a failed write is logged; the gate goes on from memory).
    fn save(&self) {
        let json = self.with_gate(|gate| serde_json::to_string(gate.state()));
        let json = json.expect("a state always serialises");
        let saved = self
            .object
            .open()
            .and_then(|mut kv| kv.put(STATE_KEY, &KvValue::Text(json)));
        if let Err(error) = saved {
            let line = crate::log_line::LogLine {
                level: crate::log_line::Level::Error,
                detail: Some(format!("the gate's state was not saved: {error}")),
                ..crate::log_line::LogLine::new(crate::log_line::Route::Gate)
            };
            log::write(&line);
        }
    }

    /// After `changed` at the origin of `url`: saves, logs, tells the failure index of a
    /// recovery, and arms the health probe's alarm.
    async fn after(&self, changed: Changed, url: &str, config: &Config, limits: &GateLimits) {
        if changed == Changed::default() {
            return;
        }
        let origin = url::Url::parse(url).map_or_else(|_| url.to_owned(), |url| origin_name(&url));
        self.with_gate(|gate| gate.name(&origin));
        if changed.save {
            self.save();
        }
        let alerts_on = config.alerts.is_some();
        let (line, tell) = after_change(changed, &origin, limits, alerts_on, clock::now_ms());
        if let Some(line) = line {
            log::record(&self.object.env, &line);
        }
        if let Some(request) = tell {
            index_client::send(&self.object.env, &request).await;
        }
        if changed.opened {
            self.arm(limits).await;
        }
    }

    /// Sets the alarm for the health probe, when one is due.
    async fn arm(&self, limits: &GateLimits) {
        if let Some(at) = self.with_gate(|gate| gate.health_probe_at(limits)) {
            let _ = self.object.set_alarm(at.max(clock::now_ms())).await;
        }
    }
}

/// Sends `request` on to its URL (its body read whole, so the origin gets its length), without
/// the [`EVENT_HEADER`]; its answer within `timeout_ms`.
async fn send_on(
    request: &web_sys::Request,
    timeout_ms: Millis,
) -> Result<web_sys::Response, OriginOutcome> {
    let headers: Vec<(String, String)> = worker::Headers(request.headers())
        .entries()
        .filter(|(name, _)| !name.eq_ignore_ascii_case(EVENT_HEADER))
        .collect();
    let body = match request.array_buffer() {
        Ok(promise) => JsFuture::from(promise).await.ok(),
        Err(_) => None,
    };
    let Some(body) = body else {
        return Err(OriginOutcome::NotSent);
    };
    let body = JsValue::from(js_sys::Uint8Array::new(&body));
    let sent = Exchange::start("POST", &request.url(), &headers, Some(&body));
    forward::answer_within(sent, timeout_ms).await
}

/// The gate's own answer saying `word`.
fn gate_answer(word: GateWord) -> web_sys::Response {
    let headers = [(GATE_HEADER.to_owned(), word.header_value())];
    forward::response(503, &headers, None).expect("a gate answer is always valid")
}

/// `response` without any [`GATE_HEADER`] the origin set, its body passed on as it streams.
fn without_gate_header(response: web_sys::Response) -> web_sys::Response {
    let headers: Vec<(String, String)> = worker::Headers(response.headers())
        .entries()
        .filter(|(name, _)| !name.eq_ignore_ascii_case(GATE_HEADER))
        .collect();
    let body = response.body();
    forward::response(response.status(), &headers, body.as_ref())
        .unwrap_or_else(|_| gate_answer(GateWord::Failed(crate::origin::NetworkError::Other)))
}
