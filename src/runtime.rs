//! What the front doors ask of the Workers runtime, as one trait. Each door's sequence (which
//! check comes first, what is read, what is asked of the claim authority or the failure index,
//! which answer follows) is written once over it in the door's own module, and tested on the
//! host over [`memory::Memory`]; the worker's adapter carries each call out.

use crate::answer::BodyError;
use crate::claim::{Millis, Nonce};
use crate::claim_authority::{AuthorityReply, AuthorityRequest};
use crate::config::DeliveryConfig;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::Route;
use crate::origin_gate::known::KnownOrigins;
use crate::origin_gate::{GateRequest, OriginView};
use crate::providers::stripe::envelope::{Envelope, EnvelopeError};

#[cfg(test)]
pub mod memory;

/// The runtime failing where no answer of a door's own applies (a binding missing from the
/// deploy, no random bytes): the request ends as a runtime error does, 500 `internal_error`,
/// the text in its log line only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeFault(pub String);

/// One request being served, as a door sees the runtime under it.
#[allow(async_fn_in_trait)] // used by generics only, never as `dyn`
pub trait Runtime {
    /// A request's body, left where the runtime holds it.
    type Body;
    /// The body of an origin's answer, streaming back with a delivery's reply.
    type Stream;

    /// Now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;

    /// The request's header `name` (lower-case), when it has one.
    fn header(&self, name: &str) -> Option<String>;

    /// Every header of the request, lower-case names, in order.
    fn headers(&self) -> Vec<(String, String)>;

    /// The request's whole body, refused when it is larger than `limits` allow or has not
    /// arrived within their read time.
    async fn body(&self, limits: &DeliveryConfig) -> Result<Self::Body, BodyError>;

    /// A copy of `body`'s bytes.
    fn bytes(&self, body: &Self::Body) -> Vec<u8>;

    /// `bytes` as a body the runtime holds.
    fn body_of(&self, bytes: &[u8]) -> Self::Body;

    /// The HMAC-SHA256 of `prefix` then `body` under each of `keys`; none when the runtime's
    /// crypto fails (so nothing can match).
    async fn macs(&self, keys: &[&[u8]], prefix: &[u8], body: &Self::Body) -> Vec<[u8; 32]>;

    /// The Stripe event envelope of `body`.
    fn envelope(&self, body: &Self::Body) -> Result<Envelope, EnvelopeError>;

    /// True when every key of `keys` is within the limit of the rate limiter bound as
    /// `binding`; true without one, and when it fails (logged for `route`).
    async fn within_limit(&self, route: Route, binding: &str, keys: &[String]) -> bool;

    /// Runs the request `make` builds around a fresh nonce in its key's claim authority, `body`
    /// beside it, where a caller's hang-up cannot cut it off; the reply, and the origin's
    /// answer when it streams back. Every failure comes back as a `StoreFailed` reply.
    async fn deliver(
        &self,
        make: impl FnOnce(Nonce) -> AuthorityRequest,
        body: &Self::Body,
    ) -> (AuthorityReply, Option<Self::Stream>);

    /// Sends `request` to its key's claim authority; a failure on the way comes back as
    /// `StoreFailed`, a binding missing from the deploy as a [`RuntimeFault`].
    async fn ask(&self, request: &AuthorityRequest) -> Result<AuthorityReply, RuntimeFault>;

    /// Sends `request` to the failure index; a failure comes back as `StoreFailed`.
    async fn ask_index(&self, request: &IndexRequest) -> IndexReply;

    /// Sends `request` to its origin's gate; `Err` says what failed on the way.
    async fn ask_gate(&self, request: &GateRequest) -> Result<OriginView, String>;

    /// Sends `request` to a sender's API (see [`crate::reconcile`]); `Err` says why no answer
    /// came.
    async fn sender_api(
        &self,
        request: &crate::reconcile::tally::SenderRequest,
    ) -> Result<crate::reconcile::tally::SenderAnswer, String>;

    /// Runs `f` on what this instance of the worker knows of its origins (kept in its memory
    /// only, shared by the requests it serves; see [`KnownOrigins`]).
    fn with_known_origins<T>(&self, f: impl FnOnce(&mut KnownOrigins) -> T) -> T;
}
