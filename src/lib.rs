//! webhook-dedup: a webhook de-duplication layer (Stripe, Standard Webhooks, GitHub, Shopify)
//! and Idempotency-Key layer for Cloudflare Workers.
//!
//! Every rule lives in a pure module that builds and tests on the host (`cargo test`); the
//! `worker` module, built for WebAssembly only, is the thin adapter to the Workers runtime.
//!
//! | module | what it decides |
//! | --- | --- |
//! | [`claim`] | the claim record and its transitions: claim, finalize, release, forget, expire |
//! | [`authority`] | the messages to the claim authority (one Durable Object per key), and a delivery's rules: what to claim, how to settle |
//! | [`origin`] | what an origin's answer (or its absence) means for a claim |
//! | [`webhook`] | the webhook doors' refusals and answer table (every sender) |
//! | [`providers`] | the senders: names, record keys, default modes, and each sender's signature and id rules (Stripe's `Stripe-Signature` and event envelope among them) |
//! | [`idempotency`] | the Idempotency-Key door's rules and answer table |
//! | [`keeper`] | the claim authority object without its I/O: its store and alarm, and its sequences (a request served, the alarm, a queued attempt, the reports to the failure index) |
//! | [`admin`] | the admin API's routes, token check and answer table, and the operator page |
//! | [`failures`] | the failure index (dead letters, redeliveries, recoveries), its queries and the operational notifications |
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
//! request, with one log line and one metric per request (`worker/door.rs`). The claim
//! authority object is [`keeper`] over the object's I/O.

pub mod admin;
pub mod answer;
pub mod authority;
pub mod claim;
pub mod config;
pub mod failures;
pub mod health;
pub mod idempotency;
pub mod keeper;
pub mod log_line;
pub mod mac;
pub mod object;
pub mod origin;
pub mod providers;
pub mod rate_limit;
pub mod reverts;
pub mod rfc3339;
pub mod routing;
pub mod runtime;
pub mod secret;
pub mod test_routes;
pub mod webhook;

#[cfg(target_arch = "wasm32")]
mod worker;
