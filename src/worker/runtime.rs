//! The runtime under a front door (see [`crate::runtime::Runtime`]): each call carried out on
//! the request being served and the worker's bindings.

use js_sys::Uint8Array;
use worker::web_sys::ReadableStream;
use worker::{Context, Env};

use super::background;
use super::body;
use super::claim_authority::client::AuthorityClient;
use super::clock;
use super::failure_index::client as index_client;
use super::inbound::Inbound;
use super::native;
use super::origin_gate::client as gate_client;
use super::rate_limit;
use crate::answer::BodyError;
use crate::claim::{Millis, Nonce, StoreError};
use crate::claim_authority::{AuthorityReply, AuthorityRequest};
use crate::config::DeliveryConfig;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::Route;
use crate::origin_gate::known::KnownOrigins;
use crate::origin_gate::{GateRequest, OriginView};
use crate::providers::stripe::envelope::{self, Envelope, EnvelopeError};
use crate::reconcile::tally::{SenderAnswer, SenderRequest};
use crate::runtime::{Runtime, RuntimeFault};

/// One request being served, with the worker's bindings and its context.
pub struct Doorway<'a> {
    /// The request.
    pub req: &'a Inbound,
    /// The worker's bindings.
    pub env: &'a Env,
    /// Its context (for `waitUntil`).
    pub ctx: &'a Context,
}

impl Runtime for Doorway<'_> {
    type Body = Uint8Array;
    type Stream = ReadableStream;

    fn now_ms(&self) -> Millis {
        clock::now_ms()
    }

    fn header(&self, name: &str) -> Option<String> {
        self.req.headers().get(name).ok().flatten()
    }

    fn headers(&self) -> Vec<(String, String)> {
        self.req.headers().entries().collect()
    }

    async fn body(&self, limits: &DeliveryConfig) -> Result<Uint8Array, BodyError> {
        body::read_capped(self.req, limits).await
    }

    fn bytes(&self, body: &Uint8Array) -> Vec<u8> {
        body.to_vec()
    }

    fn body_of(&self, bytes: &[u8]) -> Uint8Array {
        Uint8Array::from(bytes)
    }

    /// A failure of WebCrypto itself is not the sender's: nothing can match.
    async fn macs(&self, keys: &[&[u8]], prefix: &[u8], body: &Uint8Array) -> Vec<[u8; 32]> {
        native::macs(keys, prefix, body).await.unwrap_or_default()
    }

    /// Read by the runtime's `JSON.parse`.
    fn envelope(&self, body: &Uint8Array) -> Result<Envelope, EnvelopeError> {
        native::envelope_fields(body).and_then(envelope::from_fields)
    }

    async fn within_limit(&self, route: Route, binding: &str, keys: &[String]) -> bool {
        rate_limit::within(self.env, route, binding, keys).await
    }

    /// The request runs inside `waitUntil`, so a sender that hangs up cannot cut it off
    /// (between a claim and its forward, or before an event is stored).
    async fn deliver(
        &self,
        make: impl FnOnce(Nonce) -> AuthorityRequest,
        body: &Uint8Array,
    ) -> (AuthorityReply, Option<ReadableStream>) {
        let request = match Nonce::random() {
            Ok(nonce) => make(nonce),
            Err(error) => return (AuthorityReply::from(error), None),
        };
        let client = match AuthorityClient::new(self.env) {
            Ok(client) => client,
            Err(error) => return (StoreError::Fatal(error.to_string()).into(), None),
        };
        let body = body.clone();
        let sent = background::to_completion(self.ctx, async move {
            client.send_with_body(&request, Some(&body)).await
        });
        let cut_off = || StoreError::Retryable("the request was cut off".into());
        sent.await.unwrap_or_else(|| (cut_off().into(), None))
    }

    async fn ask(&self, request: &AuthorityRequest) -> Result<AuthorityReply, RuntimeFault> {
        let client =
            AuthorityClient::new(self.env).map_err(|error| RuntimeFault(error.to_string()))?;
        Ok(client.send(request).await)
    }

    async fn ask_index(&self, request: &IndexRequest) -> IndexReply {
        index_client::send(self.env, request).await
    }

    async fn ask_gate(&self, request: &GateRequest) -> Result<OriginView, String> {
        gate_client::ask(self.env, request).await
    }

    async fn sender_api(&self, request: &SenderRequest) -> Result<SenderAnswer, String> {
        super::sender_api::send(request).await
    }

    fn with_known_origins<T>(&self, f: impl FnOnce(&mut KnownOrigins) -> T) -> T {
        KNOWN_ORIGINS.with(|known| f(&mut known.borrow_mut()))
    }
}

thread_local! {
    /// What this instance knows of its origins: in its memory only, for as long as it lives.
    static KNOWN_ORIGINS: std::cell::RefCell<KnownOrigins> =
        std::cell::RefCell::new(KnownOrigins::default());
}
