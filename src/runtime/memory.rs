//! A [`Runtime`] in memory for the doors' host tests: one request with its headers and body,
//! the MACs computed by this crate's HMAC, Stripe envelopes read by its own parser, and the
//! claim authority's and the failure index's replies given in advance. Every call is noted,
//! in order, so a test checks what a door asked as well as what it answered.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;

use super::{Runtime, RuntimeFault};
use crate::answer::BodyError;
use crate::claim::{Millis, Nonce};
use crate::claim_authority::{AuthorityReply, AuthorityRequest};
use crate::config::DeliveryConfig;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::Route;
use crate::origin_gate::known::KnownOrigins;
use crate::origin_gate::{GateRequest, OriginView};
use crate::providers::stripe::envelope::{self, Envelope, EnvelopeError};
use crate::reconcile::tally::{SenderAnswer, SenderRequest};

/// What a door asked of the runtime.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeCall {
    /// Read the body.
    Body,
    /// Compute MACs under this many keys.
    Macs(usize),
    /// Read the Stripe envelope.
    Envelope,
    /// Ask the rate limiter bound as this name about these keys.
    Limit(String, Vec<String>),
    /// Run this delivery, with this body beside it.
    Deliver(AuthorityRequest, Vec<u8>),
    /// Send this to a claim authority.
    Ask(AuthorityRequest),
    /// Send this to the failure index.
    Index(IndexRequest),
    /// Send this to an origin's gate.
    Gate(GateRequest),
    /// Ask a sender's API: the method and URL.
    SenderApi(&'static str, String),
}

/// One request, and what the runtime under it will say.
pub struct Memory {
    /// The clock.
    pub now: Millis,
    /// The request's headers, lower-case names.
    pub headers: Vec<(String, String)>,
    /// What reading the body gives.
    pub body: Result<Vec<u8>, BodyError>,
    /// Whether the rate limiter says a key is past its limit.
    pub over_limit: bool,
    /// The claim authority's replies, in order (a store failure once they run out).
    pub replies: RefCell<VecDeque<AuthorityReply>>,
    /// The failure index's replies, in order (a store failure once they run out).
    pub index_replies: RefCell<VecDeque<IndexReply>>,
    /// Every call, in order.
    pub calls: RefCell<Vec<RuntimeCall>>,
    /// Whether the claim authority's binding is missing from the deploy.
    pub no_binding: bool,
    /// The origins' gates' answers, in order (a failure once they run out).
    pub gate_replies: RefCell<VecDeque<Result<OriginView, String>>>,
    /// What the instance knows of its origins.
    pub known_origins: RefCell<KnownOrigins>,
    /// The senders' APIs' answers, in order (no answer once they run out).
    pub api_replies: RefCell<VecDeque<SenderAnswer>>,
}

/// The nonce [`Memory`] hands to every delivery.
pub const NONCE: Nonce = Nonce([7; 16]);

impl Memory {
    /// A request at `now` with `headers` and `body`, every limit open, no replies yet.
    pub fn new(now: Millis, headers: &[(&str, &str)], body: &[u8]) -> Memory {
        Memory {
            now,
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            body: Ok(body.to_vec()),
            over_limit: false,
            replies: RefCell::default(),
            index_replies: RefCell::default(),
            calls: RefCell::default(),
            no_binding: false,
            gate_replies: RefCell::new(VecDeque::new()),
            known_origins: RefCell::new(KnownOrigins::default()),
            api_replies: RefCell::new(VecDeque::new()),
        }
    }

    /// The same, with the claim authority's `replies` to come.
    pub fn replying(mut self, replies: Vec<AuthorityReply>) -> Memory {
        self.replies = RefCell::new(replies.into());
        self
    }

    /// The calls made so far.
    pub fn calls(&self) -> Vec<RuntimeCall> {
        self.calls.borrow().clone()
    }

    fn note(&self, call: RuntimeCall) {
        self.calls.borrow_mut().push(call);
    }

    fn next_reply(&self) -> AuthorityReply {
        self.replies
            .borrow_mut()
            .pop_front()
            .unwrap_or_else(|| AuthorityReply::StoreFailed {
                retryable: true,
                detail: "no reply given".into(),
            })
    }
}

impl Runtime for Memory {
    type Body = Vec<u8>;
    type Stream = ();

    fn now_ms(&self) -> Millis {
        self.now
    }

    fn header(&self, name: &str) -> Option<String> {
        let found = self.headers.iter().find(|(known, _)| known == name);
        found.map(|(_, value)| value.clone())
    }

    fn headers(&self) -> Vec<(String, String)> {
        self.headers.clone()
    }

    async fn body(&self, limits: &DeliveryConfig) -> Result<Vec<u8>, BodyError> {
        self.note(RuntimeCall::Body);
        let body = self.body.clone()?;
        if body.len() as u64 > limits.max_body_bytes {
            return Err(BodyError::TooLarge {
                limit: limits.max_body_bytes,
            });
        }
        Ok(body)
    }

    fn bytes(&self, body: &Vec<u8>) -> Vec<u8> {
        body.clone()
    }

    fn body_of(&self, bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }

    async fn macs(&self, keys: &[&[u8]], prefix: &[u8], body: &Vec<u8>) -> Vec<[u8; 32]> {
        self.note(RuntimeCall::Macs(keys.len()));
        let mac = |key: &&[u8]| crate::mac::hmac_sha256(key, prefix, body);
        keys.iter().map(mac).collect()
    }

    fn envelope(&self, body: &Vec<u8>) -> Result<Envelope, EnvelopeError> {
        self.note(RuntimeCall::Envelope);
        envelope::parse(body)
    }

    async fn within_limit(&self, _route: Route, binding: &str, keys: &[String]) -> bool {
        self.note(RuntimeCall::Limit(binding.to_owned(), keys.to_vec()));
        !self.over_limit
    }

    async fn deliver(
        &self,
        make: impl FnOnce(Nonce) -> AuthorityRequest,
        body: &Vec<u8>,
    ) -> (AuthorityReply, Option<()>) {
        self.note(RuntimeCall::Deliver(make(NONCE), body.clone()));
        (self.next_reply(), None)
    }

    async fn ask(&self, request: &AuthorityRequest) -> Result<AuthorityReply, RuntimeFault> {
        self.note(RuntimeCall::Ask(request.clone()));
        if self.no_binding {
            return Err(RuntimeFault("no binding CLAIM_AUTHORITY".into()));
        }
        Ok(self.next_reply())
    }

    async fn ask_index(&self, request: &IndexRequest) -> IndexReply {
        self.note(RuntimeCall::Index(request.clone()));
        let next = self.index_replies.borrow_mut().pop_front();
        next.unwrap_or_else(|| IndexReply::StoreFailed {
            detail: "no reply given".into(),
        })
    }

    async fn ask_gate(&self, request: &GateRequest) -> Result<OriginView, String> {
        self.note(RuntimeCall::Gate(request.clone()));
        let next = self.gate_replies.borrow_mut().pop_front();
        next.unwrap_or_else(|| Err("no reply given".into()))
    }

    async fn sender_api(&self, request: &SenderRequest) -> Result<SenderAnswer, String> {
        self.note(RuntimeCall::SenderApi(request.method, request.url.clone()));
        let next = self.api_replies.borrow_mut().pop_front();
        next.ok_or_else(|| "no answer given".into())
    }

    fn with_known_origins<T>(&self, f: impl FnOnce(&mut KnownOrigins) -> T) -> T {
        f(&mut self.known_origins.borrow_mut())
    }
}

/// Runs a door's future to its end: over [`Memory`] nothing waits, so one poll finishes it.
pub fn run<F: Future>(future: F) -> F::Output {
    crate::object::run_at_once(future)
}
