//! Sending a request to an origin and reading its answer; shared by the claim authority's
//! deliveries and the Idempotency-Key door's pass-through.
//!
//! Redirects are never followed: an origin's 3xx is its answer. (Following one would turn a
//! POST into a GET elsewhere, or send a signed event to another host, and its 200 would be
//! taken for the origin's.)

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{select, Either};
use js_sys::futures::JsFuture;
use js_sys::Uint8Array;
use wasm_bindgen::{JsCast, JsValue};
use worker::web_sys::{
    self, AbortController, ReadableStreamDefaultReader, ReadableStreamReadResult, RequestInit,
    RequestRedirect, WorkerGlobalScope,
};
use worker::Delay;

use super::kv_store::js_text;
use crate::origin::{self, NetworkError, OriginOutcome};

/// One request to an origin.
pub struct Outgoing<'a> {
    /// Absolute URL.
    pub url: &'a str,
    /// HTTP method.
    pub method: &'a str,
    /// Headers to send, in order.
    pub headers: &'a [(String, String)],
    /// The body (bytes or a stream, as a JS value), if any.
    pub body: Option<&'a JsValue>,
}

/// A request on its way to an origin: a future of the answer's head, which can be aborted.
pub struct Exchange {
    controller: AbortController,
    answer: JsFuture,
}

impl Exchange {
    /// Sends `outgoing`. `Err(OriginOutcome::NotSent)` when the request cannot even be built
    /// (a header or URL the runtime refuses): nothing was sent.
    pub fn start(outgoing: &Outgoing<'_>) -> Result<Exchange, OriginOutcome> {
        let not_sent = |_| OriginOutcome::NotSent;
        let controller = AbortController::new().map_err(not_sent)?;
        let headers = web_sys::Headers::new().map_err(not_sent)?;
        for (name, value) in outgoing.headers {
            headers.append(name, value).map_err(not_sent)?;
        }
        let init = RequestInit::new();
        init.set_method(outgoing.method);
        init.set_headers(&headers);
        init.set_redirect(RequestRedirect::Manual);
        init.set_signal(Some(&controller.signal()));
        if let Some(body) = outgoing.body {
            init.set_body(body);
        }
        let request =
            web_sys::Request::new_with_str_and_init(outgoing.url, &init).map_err(not_sent)?;
        let global: WorkerGlobalScope = js_sys::global().unchecked_into();
        Ok(Exchange {
            controller,
            answer: JsFuture::from(global.fetch_with_request(&request)),
        })
    }

    /// What stops the exchange (and any body still being read), kept after its answer came.
    pub fn aborter(&self) -> AbortController {
        self.controller.clone()
    }
}

impl Future for Exchange {
    type Output = Result<web_sys::Response, OriginOutcome>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.answer).poll(cx).map(|result| {
            result
                .and_then(|value| value.dyn_into::<web_sys::Response>())
                .map_err(|error| OriginOutcome::Failed {
                    error: NetworkError::classify(&js_text(&error)),
                })
        })
    }
}

/// Waits for `future` at most `ms` milliseconds: `Ok` with its output, or `Err` with the future
/// itself, still running, so the caller can keep waiting for it.
pub async fn within<F: Future + Unpin>(future: F, ms: u64) -> Result<F::Output, F> {
    match select(future, Box::pin(Delay::from(Duration::from_millis(ms)))).await {
        Either::Left((output, _)) => Ok(output),
        Either::Right(((), future)) => Err(future),
    }
}

/// The answer to `sent` within `ms` milliseconds: the response, or how the exchange ended
/// without one (`TimedOut`, the exchange aborted, when none came in time).
pub async fn answer_within(
    sent: Result<Exchange, OriginOutcome>,
    ms: u64,
) -> Result<web_sys::Response, OriginOutcome> {
    let exchange = sent?;
    let aborter = exchange.aborter();
    match within(exchange, ms).await {
        Ok(result) => result,
        Err(_) => {
            aborter.abort();
            Err(OriginOutcome::TimedOut)
        }
    }
}

/// Waits `ms` milliseconds.
pub async fn sleep(ms: u64) {
    Delay::from(Duration::from_millis(ms)).await;
}

/// The headers of an answer, lower-case, hop-by-hop ones left out, in order.
pub fn answer_headers(response: &web_sys::Response) -> Vec<(String, String)> {
    let headers = worker::Headers(response.headers()).entries();
    headers
        .filter(|(name, _)| !origin::is_hop_by_hop(name))
        .collect()
}

/// Reads an answer's body chunk by chunk, each chunk left in JavaScript memory.
pub struct BodyReader {
    reader: Option<ReadableStreamDefaultReader>,
}

impl BodyReader {
    /// The reader of `response`'s body (an answer without a body reads as empty).
    pub fn new(response: &web_sys::Response) -> BodyReader {
        let reader = response.body().and_then(|body| BodyReader::of(&body));
        reader.unwrap_or(BodyReader { reader: None })
    }

    /// The reader of `stream`; `None` when none can be made.
    pub fn of(stream: &web_sys::ReadableStream) -> Option<BodyReader> {
        let reader = stream.get_reader().dyn_into().ok()?;
        Some(BodyReader {
            reader: Some(reader),
        })
    }

    /// The next chunk; `Ok(None)` at the end; `Err` when the body broke off.
    pub async fn next(&mut self) -> Result<Option<Uint8Array>, ()> {
        let Some(reader) = &self.reader else {
            return Ok(None);
        };
        let read = JsFuture::from(reader.read()).await.map_err(|_| ())?;
        let read: ReadableStreamReadResult = read.unchecked_into();
        if read.get_done().unwrap_or(true) {
            return Ok(None);
        }
        read.get_value().dyn_into().map(Some).map_err(|_| ())
    }

    /// Stops reading: the rest of the body is discarded.
    pub fn cancel(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.cancel();
        }
    }
}

/// Discards an answer's body (its status and headers are all a webhook forward needs).
pub fn discard_body(response: &web_sys::Response) {
    if let Some(body) = response.body() {
        let _ = body.cancel();
    }
}
