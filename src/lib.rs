//! webhook-dedup: a Stripe webhook de-duplication and Idempotency-Key layer for Cloudflare
//! Workers.
//!
//! The pure modules hold every rule and build and test on the host with `cargo test`:
//! [`claim`] (the claim record and its transitions), [`authority`] (the messages to the claim
//! authority), [`config`] and [`log_line`]. The `worker` module, built for WebAssembly only, is
//! the thin adapter to the Workers runtime: the fetch entry point and the Durable Object.

pub mod admin;
pub mod authority;
pub mod claim;
pub mod config;
pub mod idempotency;
pub mod log_line;
pub mod origin;
pub mod stripe;
pub mod webhook;

#[cfg(target_arch = "wasm32")]
mod worker;
