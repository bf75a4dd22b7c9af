//! `POST /webhooks/{provider}`: verify the delivery as its sender signs it, then have its
//! claim authority claim, forward and settle it (sync mode), or store it for the object to
//! deliver (queue mode); answer from its report. One sequence for every provider; what differs
//! (signature, id, type) is in [`crate::providers::stripe`] and [`crate::providers`].

use js_sys::Uint8Array;
use worker::{Context, Env, Method, Response, Result};

use super::body;
use super::clock;
use super::door::{self, Visit};
use super::env_config;
use super::inbound::Inbound;
use super::native;
use super::rate_limit;
use crate::config::Config;
use crate::log_line::{LogLine, Route};
use crate::providers::stripe::envelope;
use crate::providers::{Identity, Provider};
use crate::webhook::{self, Answer, Checked, Refusal, Unchecked};

/// The binding name of the optional rate limiter of replays (`[[ratelimits]]`): how often one
/// signed body of a sender that signs neither the id nor a time may be delivered.
const REPLAY_LIMITER: &str = "WEBHOOK_REPLAY_LIMITER";

/// Serves one delivery from `provider` and writes its log line.
pub async fn serve(provider: Provider, req: Inbound, env: &Env, ctx: &Context) -> Result<Response> {
    let mut visit = Visit::start(Route::Webhook, &req.method());
    visit.line.provider = Some(provider);
    let answer = deliver(provider, &req, env, ctx, &mut visit.line).await;
    visit.line.outcome = answer.outcome;
    if answer.note.is_some() {
        visit.line.detail.clone_from(&answer.note);
    }
    visit.answer(env, answer.http())
}

/// Config, sender enabled, method, body, verify, then the delivery (sync) or its storage
/// (queue; see [`webhook::request`]); the answer.
async fn deliver(
    provider: Provider,
    req: &Inbound,
    env: &Env,
    ctx: &Context,
    line: &mut LogLine,
) -> Answer {
    let config = match env_config::config(env) {
        Ok(config) => config,
        Err(problems) => {
            return webhook::refusal_answer(&Refusal::Misconfigured(problems.to_vec()))
        }
    };
    let verified = match verify(provider, req, env, &config).await {
        Ok(verified) => verified,
        Err(refusal) => return webhook::refusal_answer(&refusal),
    };
    let Verified {
        identity: Identity { id, event_type },
        known_only,
        body,
    } = verified;
    let key = provider.key(&id);
    line.key = Some(key.clone());
    line.event_type = event_type;
    let header = |name: &str| req.headers().get(name).ok().flatten();
    let headers = webhook::forwarded_headers(provider, &header);
    let make = |nonce| webhook::request(&config, provider, key, headers, known_only, nonce);
    let (reply, _) = door::deliver(env, ctx, make, &body, line).await;
    webhook::after_delivery(&reply, &id, clock::now_ms())
}

/// A verified delivery: who sent what, whether only a key its object knows may be served, and
/// its body.
struct Verified {
    identity: Identity,
    known_only: bool,
    body: Uint8Array,
}

/// Sender enabled, method, body within the cap, then the signature (see [`Unchecked`]; for
/// Stripe, then its envelope), and the replay limit: past it only a delivery its object already knows is served (a repeat
/// is still answered as a duplicate); one that would make a new record is refused.
async fn verify(
    provider: Provider,
    req: &Inbound,
    env: &Env,
    config: &Config,
) -> std::result::Result<Verified, Refusal> {
    let Some((keys, _)) = config.sender(provider) else {
        return Err(Refusal::NotEnabled(provider));
    };
    // After the sender check, so that a disabled route answers as an unknown path does.
    if req.method() != Method::Post {
        return Err(Refusal::MethodNotAllowed);
    }
    let body = body::read_capped(req, &config.delivery).await?;
    let header = |name: &str| req.headers().get(name).ok().flatten();
    let unchecked = Unchecked::read(provider, &header)?;
    // A failure of WebCrypto itself is not the sender's: it cannot match.
    let expected = native::macs(&keys, &unchecked.prefix(), &body)
        .await
        .unwrap_or_default();
    let replay_key = unchecked.replay_key(&expected);
    let tolerance = config.webhook.signature_tolerance_seconds;
    let identity = match unchecked.decide(&expected, now_seconds(), tolerance)? {
        Checked::Identified(identity) => identity,
        // Stripe: the event's envelope, read by `JSON.parse`.
        Checked::ReadEnvelope => {
            webhook::identity_of(native::envelope_fields(&body).and_then(envelope::from_fields))?
        }
    };
    let known_only = match replay_key {
        Some(replay_key) => {
            !rate_limit::within(env, Route::Webhook, REPLAY_LIMITER, &[replay_key]).await
        }
        None => false,
    };
    Ok(Verified {
        identity,
        known_only,
        body,
    })
}

/// The worker's clock in Unix seconds.
fn now_seconds() -> i64 {
    (clock::now_ms() / 1_000) as i64
}
