//! Sending a request to the user's origin with a time-out.

use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{
    AbortController, Date, Delay, Fetch, Headers, Method, Request, RequestInit, Response,
};

use crate::webhook::OriginResult;

/// One request to the origin.
pub struct Outgoing<'a> {
    /// Absolute URL.
    pub url: &'a str,
    /// HTTP method.
    pub method: Method,
    /// Headers to send.
    pub headers: Headers,
    /// The body, byte for byte.
    pub body: Option<Vec<u8>>,
    /// Time-out for the origin's answer (status and headers).
    pub timeout_ms: u64,
}

/// Sends `outgoing` and waits at most its time-out for the answer. Returns how it ended, the
/// origin's response when it answered, and how long it took in milliseconds.
pub async fn send(outgoing: Outgoing<'_>) -> (OriginResult, Option<Response>, u64) {
    let started = Date::now().as_millis();
    let elapsed = || Date::now().as_millis().saturating_sub(started);
    let mut init = RequestInit::new();
    init.with_method(outgoing.method)
        .with_headers(outgoing.headers);
    if let Some(body) = outgoing.body {
        init.with_body(Some(js_sys::Uint8Array::from(body.as_slice()).into()));
    }
    let request = match Request::new_with_init(outgoing.url, &init) {
        Ok(request) => request,
        Err(error) => return (OriginResult::Unreachable(error.to_string()), None, 0),
    };
    let controller = AbortController::default();
    let signal = controller.signal();
    let fetch = Fetch::Request(request);
    let sending = Box::pin(fetch.send_with_signal(&signal));
    let timer = Box::pin(Delay::from(Duration::from_millis(outgoing.timeout_ms)));
    let answered = match select(sending, timer).await {
        Either::Left((answer, _)) => Some(answer),
        Either::Right(((), _)) => None,
    };
    match answered {
        Some(Ok(response)) => {
            let status = response.status_code();
            (
                OriginResult::Responded { status },
                Some(response),
                elapsed(),
            )
        }
        Some(Err(error)) => (
            OriginResult::Unreachable(error.to_string()),
            None,
            elapsed(),
        ),
        None => {
            controller.abort();
            (OriginResult::TimedOut, None, elapsed())
        }
    }
}
