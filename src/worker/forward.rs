//! Sending a request to an origin with a time-out; shared by both front doors.
//!
//! Redirects are never followed: an origin's 3xx is its answer. (Following one would turn a
//! POST into a GET elsewhere, or send a signed event to another host, and its 200 would be
//! taken for the origin's.)

use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use wasm_bindgen::JsValue;
use worker::{
    AbortController, AbortSignal, Date, Delay, Fetch, Headers, Method, Request, RequestInit,
    RequestRedirect, Response,
};

use crate::origin::OriginResult;

/// Request headers never copied from a client to the origin (hop-by-hop, or set by fetch).
pub const HOP_BY_HOP: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
];

/// One request to an origin.
pub struct Outgoing<'a> {
    /// Absolute URL.
    pub url: &'a str,
    /// HTTP method.
    pub method: Method,
    /// Headers to send.
    pub headers: Headers,
    /// The body: bytes (`Uint8Array`) or a stream, as a JS value.
    pub body: Option<JsValue>,
    /// Time-out for the exchange (the answer's head, and its body when read).
    pub timeout_ms: u64,
}

/// How much of the origin's answer to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// Only its status and headers.
    Head,
    /// Its whole body, up to `cap` bytes (more is `too_large`, not read further).
    Whole {
        /// The most bytes read.
        cap: u64,
    },
    /// The response itself, its body left to stream to the client.
    Stream,
}

/// The origin's answer.
pub struct OriginAnswer {
    /// Its status.
    pub status: u16,
    /// Its headers, as received (hop-by-hop ones left out).
    pub headers: Vec<(String, String)>,
    /// Its body (`Read::Whole` only).
    pub body: Vec<u8>,
    /// True when the body was larger than the cap (`Read::Whole`); `body` is then empty.
    pub too_large: bool,
    /// The response itself (`Read::Stream` only).
    pub response: Option<Response>,
}

/// How a forward ended and what the origin answered.
pub struct Forwarded {
    /// How it ended.
    pub result: OriginResult,
    /// The answer, when the origin answered.
    pub answer: Option<OriginAnswer>,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

/// Bytes as a request body.
pub fn bytes_body(bytes: &[u8]) -> JsValue {
    js_sys::Uint8Array::from(bytes).into()
}

/// Sends `outgoing` and waits at most its time-out for the answer (and its body, per `read`).
pub async fn send(outgoing: Outgoing<'_>, read: Read) -> Forwarded {
    let started = Date::now().as_millis();
    let timeout_ms = outgoing.timeout_ms;
    let controller = AbortController::default();
    let exchange = Box::pin(exchange(outgoing, controller.signal(), read));
    let timer = Box::pin(Delay::from(Duration::from_millis(timeout_ms)));
    let finished = match select(exchange, timer).await {
        Either::Left((finished, _)) => Some(finished),
        Either::Right(((), _)) => None,
    };
    let ms = Date::now().as_millis().saturating_sub(started);
    match finished {
        Some(Ok(answer)) => Forwarded {
            result: OriginResult::Responded {
                status: answer.status,
            },
            answer: Some(answer),
            ms,
        },
        Some(Err(error)) => Forwarded {
            result: OriginResult::Unreachable(error.to_string()),
            answer: None,
            ms,
        },
        None => {
            controller.abort();
            Forwarded {
                result: OriginResult::TimedOut,
                answer: None,
                ms,
            }
        }
    }
}

async fn exchange(
    outgoing: Outgoing<'_>,
    signal: AbortSignal,
    read: Read,
) -> worker::Result<OriginAnswer> {
    let mut init = RequestInit::new();
    init.with_method(outgoing.method)
        .with_headers(outgoing.headers)
        .with_redirect(RequestRedirect::Manual)
        .with_body(outgoing.body);
    let request = Request::new_with_init(outgoing.url, &init)?;
    let mut response = Fetch::Request(request).send_with_signal(&signal).await?;
    let headers = response
        .headers()
        .entries()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
        .collect();
    let status = response.status_code();
    let mut answer = OriginAnswer {
        status,
        headers,
        body: Vec::new(),
        too_large: false,
        response: None,
    };
    match read {
        Read::Head => {}
        Read::Stream => answer.response = Some(response),
        Read::Whole { cap } => {
            if let Ok(mut stream) = response.stream() {
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk?;
                    if (answer.body.len() + chunk.len()) as u64 > cap {
                        answer.body = Vec::new();
                        answer.too_large = true;
                        break;
                    }
                    answer.body.extend_from_slice(&chunk);
                }
            }
        }
    }
    Ok(answer)
}
