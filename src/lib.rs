//! webhook-dedup: a webhook de-duplication layer (Stripe, Standard Webhooks, GitHub, Shopify)
//! and Idempotency-Key layer for Cloudflare Workers.
//!
//! Every rule lives in a pure module that builds and tests on the host (`cargo test`); the
//! `worker` module, built for WebAssembly only, is the thin adapter to the Workers runtime.
//!
//! | module | what it decides |
//! | --- | --- |
//! | [`claim`] | the claim record and its transitions: claim, finalize, release, forget, expire |
//! | [`claim_authority`] | the claim authority (one Durable Object per key, the only writer of its claim): its messages, a delivery's and a queued attempt's rules, the attempt driver, and its sequences as tasks with their executor ([`claim_authority::object`]) |
//! | [`origin`] | what an origin's answer (or its absence) means for a claim |
//! | [`origin_gate`] | the origin's gate (one Durable Object per origin): pauses, caps, the breaker, the drain |
//! | [`webhook`] | the webhook doors' refusals and answer table (every sender) |
//! | [`providers`] | the senders: names, record keys, default modes, and each sender's signature and id rules (Stripe's `Stripe-Signature` and event envelope among them) |
//! | [`idempotency`] | the Idempotency-Key door's rules and answer table |
//! | [`admin`] | the admin API's routes, token check and answer table, and the operator page |
//! | [`failure_index`] | the failure index (one Durable Object): dead letters, redeliveries and recoveries, its queries, the operational notifications, and its sequences |
//! | [`object`] | what the runtime does for both Durable Objects (the `Host` trait), and the alarm timing they share |
//! | [`reverts`] | test-only switches that take a fix out again (off in every build of the worker) |
//! | [`rfc3339`] | times as RFC 3339 text, both ways |
//! | [`rate_limit`] | the rate limiters' verdicts, and failing open when a limiter fails |
//! | [`answer`] | what every door shares in its answers (`Retry-After`, store failures) |
//! | [`config`] | every configuration key, in sections, with its default and check |
//! | [`health`] | what `GET /healthz` answers |
//! | [`mac`] | the HMAC-SHA256 every sender signs with, and the constant-time comparison of signatures |
//! | [`secret`] | secret values that never show in logs |
//! | [`log_line`] | the structured log line, its typed words |
//! | [`routing`] | which door a request's path leads to: the one routing table |
//! | [`runtime`] | what the front doors ask of the Workers runtime, as one trait (and a runtime in memory for their tests) |
//! | [`test_routes`] | the test routes (off by default): which exist, who may use them, what they show |
//!
//! A front door is a pure module (its decisions, one answer table, and its sequence over the
//! [`runtime`] in its `door` module); the worker's router (`worker/mod.rs`) runs it over the
//! request, with one log line and one metric per request (`worker/door.rs`). Each Durable
//! Object's adapter is its folder of `worker/`: `worker/claim_authority/` and
//! `worker/failure_index/`.

pub mod admin;
pub mod answer;
pub mod claim;
pub mod claim_authority;
pub mod config;
pub mod failure_index;
pub mod health;
pub mod idempotency;
pub mod log_line;
pub mod mac;
pub mod object;
pub mod origin;
pub mod origin_gate;
pub mod providers;
pub mod rate_limit;
pub mod reconcile;
pub mod reconciler;
pub mod reverts;
pub mod rfc3339;
pub mod routing;
pub mod runtime;
pub mod secret;
pub mod test_routes;
pub mod webhook;

#[cfg(target_arch = "wasm32")]
mod worker;
