//! Sending a request to an origin with a time-out; shared by both front doors.

use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{AbortController, Date, Delay, Fetch, Headers, Method, Request, RequestInit};

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
    /// The body, byte for byte.
    pub body: Option<Vec<u8>>,
    /// Time-out for the whole exchange.
    pub timeout_ms: u64,
}

/// The origin's answer, read whole.
pub struct OriginAnswer {
    /// Its status.
    pub status: u16,
    /// Its headers, as received (hop-by-hop ones left out).
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

/// How a forward ended and what the origin answered.
pub struct Forwarded {
    /// How it ended.
    pub result: OriginResult,
    /// The answer, when the origin answered (its body read only when asked for).
    pub answer: Option<OriginAnswer>,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

/// Sends `outgoing` and waits at most its time-out for the answer, and for its body too when
/// `read_body` is set.
pub async fn send(outgoing: Outgoing<'_>, read_body: bool) -> Forwarded {
    let started = Date::now().as_millis();
    let timeout_ms = outgoing.timeout_ms;
    let controller = AbortController::default();
    let exchange = Box::pin(exchange(outgoing, controller.signal(), read_body));
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
    signal: worker::AbortSignal,
    read_body: bool,
) -> worker::Result<OriginAnswer> {
    let mut init = RequestInit::new();
    init.with_method(outgoing.method)
        .with_headers(outgoing.headers);
    if let Some(body) = outgoing.body {
        init.with_body(Some(js_sys::Uint8Array::from(body.as_slice()).into()));
    }
    let request = Request::new_with_init(outgoing.url, &init)?;
    let mut response = Fetch::Request(request).send_with_signal(&signal).await?;
    let headers = response
        .headers()
        .entries()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
        .collect();
    let body = if read_body {
        response.bytes().await?
    } else {
        Vec::new()
    };
    Ok(OriginAnswer {
        status: response.status_code(),
        headers,
        body,
    })
}
