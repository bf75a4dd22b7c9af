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
use futures_util::stream::{FusedStream, StreamExt};
use js_sys::futures::{spawn_local, JsFuture};
use js_sys::Uint8Array;
use wasm_bindgen::{JsCast, JsValue};
use wasm_streams::readable::{IntoStream, ReadableStream};
use worker::web_sys::{self, AbortController, RequestInit, RequestRedirect, WorkerGlobalScope};
use worker::Delay;

use super::kv_store::js_text;
use crate::origin::{self, NetworkError, OriginOutcome};

/// A request on its way to an origin: a future of the answer's head, which can be aborted.
pub struct Exchange {
    controller: AbortController,
    answer: JsFuture,
}

impl Exchange {
    /// Sends a `method` request to `url` with `headers` (in order) and `body` (bytes or a
    /// stream). `Err(OriginOutcome::NotSent)` when the request cannot even be built (a header or
    /// URL the runtime refuses): nothing was sent.
    pub fn start(
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: Option<&JsValue>,
    ) -> Result<Exchange, OriginOutcome> {
        let controller = AbortController::new().map_err(|_| OriginOutcome::NotSent)?;
        let request = request(method, url, headers, body, Some(&controller))?;
        let global: WorkerGlobalScope = js_sys::global().unchecked_into();
        Ok(Exchange {
            controller,
            answer: JsFuture::from(global.fetch_with_request(&request)),
        })
    }

    /// The exchange whose answer `answer` resolves to, sent some other way (through a gate);
    /// aborting it stops only the wait.
    pub fn pending(answer: js_sys::Promise) -> Result<Exchange, OriginOutcome> {
        let controller = AbortController::new().map_err(|_| OriginOutcome::NotSent)?;
        Ok(Exchange {
            controller,
            answer: JsFuture::from(answer),
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

/// A `method` request to `url` with `headers` (in order) and `body`, never following a
/// redirect, stopped by `controller` when given. `Err(NotSent)` when the runtime refuses it.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&JsValue>,
    controller: Option<&AbortController>,
) -> Result<web_sys::Request, OriginOutcome> {
    let not_sent = |_| OriginOutcome::NotSent;
    let headers = headers_of(headers).map_err(not_sent)?;
    let init = RequestInit::new();
    init.set_method(method);
    init.set_headers(&headers);
    init.set_redirect(RequestRedirect::Manual);
    if let Some(controller) = controller {
        init.set_signal(Some(&controller.signal()));
    }
    if let Some(body) = body {
        init.set_body(body);
    }
    web_sys::Request::new_with_str_and_init(url, &init).map_err(not_sent)
}

/// `pairs` as the runtime's headers, in order.
fn headers_of(pairs: &[(String, String)]) -> Result<web_sys::Headers, JsValue> {
    let headers = web_sys::Headers::new()?;
    for (name, value) in pairs {
        headers.append(name, value)?;
    }
    Ok(headers)
}

/// The runtime's response with `status`, `headers` (in order) and `body`, a stream.
pub fn response(
    status: u16,
    headers: &[(String, String)],
    body: Option<&web_sys::ReadableStream>,
) -> Result<web_sys::Response, JsValue> {
    let init = web_sys::ResponseInit::new();
    init.set_status(status);
    init.set_headers(&headers_of(headers)?.into());
    web_sys::Response::new_with_opt_readable_stream_and_init(body, &init)
}

/// Waits for `future` at most `ms` milliseconds: `Ok` with its output, or `Err` with the future
/// itself, still running, so the caller can keep waiting for it. When the timer fires, what
/// already arrived still wins: a runtime that stalled may run the timer's callback before
/// the one of an answer that came in time, so the future gets one more turn first.
pub async fn within<F: Future + Unpin>(future: F, ms: u64) -> Result<F::Output, F> {
    let future = match select(future, Box::pin(Delay::from(Duration::from_millis(ms)))).await {
        Either::Left((output, _)) => return Ok(output),
        Either::Right(((), future)) => future,
    };
    match select(future, Box::pin(Delay::from(Duration::ZERO))).await {
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

/// A body read chunk by chunk by `wasm-streams`, each chunk left in JavaScript memory. Dropping
/// it cancels the rest of the body by the stream's `cancel`, run to its end: the stream's own
/// drop would leave a callback for the garbage collector behind for each body it cancels.
pub struct BodyReader(Option<IntoStream<'static>>);

impl BodyReader {
    /// The reader of `stream`; `None` when none can be made (the stream is locked).
    pub fn of(stream: web_sys::ReadableStream) -> Option<BodyReader> {
        let stream = ReadableStream::from_raw(stream).try_into_stream().ok();
        stream.map(|stream| BodyReader(Some(stream)))
    }

    /// The next chunk; `Ok(None)` at the end; `Err` when the body broke off.
    pub async fn next(&mut self) -> Result<Option<Uint8Array>, ()> {
        let Some(stream) = self.0.as_mut() else {
            return Ok(None);
        };
        match stream.next().await {
            Some(chunk) => chunk.and_then(JsCast::dyn_into).map(Some).map_err(|_| ()),
            None => Ok(None),
        }
    }
}

impl Drop for BodyReader {
    fn drop(&mut self) {
        if let Some(stream) = self.0.take().filter(|stream| !stream.is_terminated()) {
            spawn_local(async move {
                let _ = stream.cancel().await;
            });
        }
    }
}
