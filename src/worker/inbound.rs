//! An incoming request as the front doors read it: its method, path and headers over the
//! runtime's own `Request`.
//!
//! The SDK's `worker::Request` reads the request's `cf` object when it is made, which makes the
//! runtime build that object (location, TLS and network details) for every request; no door
//! needs it, so this type never touches it.

use worker::web_sys;
use worker::{Headers, Method};

/// One incoming request.
pub struct Inbound {
    raw: web_sys::Request,
    method: Method,
    headers: Headers,
}

impl Inbound {
    /// Wraps the runtime's request; reads only its method and headers.
    pub fn new(raw: web_sys::Request) -> Inbound {
        Inbound {
            method: raw.method().into(),
            headers: Headers(raw.headers()),
            raw,
        }
    }

    /// The request's method.
    pub fn method(&self) -> Method {
        self.method.clone()
    }

    /// Its headers.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Its URL, as the runtime serialised it.
    pub fn url(&self) -> worker::Result<url::Url> {
        url::Url::parse(&self.raw.url())
            .map_err(|error| worker::Error::RustError(error.to_string()))
    }

    /// Its path (percent-encoded, without the query).
    pub fn path(&self) -> String {
        self.url()
            .map_or_else(|_| "/".into(), |url| url.path().to_owned())
    }

    /// The runtime's request itself (its body, for one).
    pub fn inner(&self) -> &web_sys::Request {
        &self.raw
    }

    /// Cancels the body when nothing has read it (an early refusal), so the runtime sends the
    /// answer at once: otherwise it first drains the body, and a sender that stalls after its
    /// headers would hold the answer back (measured on `wrangler dev`: no answer within 15 s).
    pub fn cancel_unread(&self) {
        let unread = |body: &web_sys::ReadableStream| !self.raw.body_used() && !body.locked();
        if let Some(body) = self.raw.body().filter(unread) {
            let _ = body.cancel();
        }
    }
}
