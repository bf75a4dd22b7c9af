//! Requests to a sender's API for reconciliation (see [`crate::reconcile`]): sent with the
//! runtime's `fetch`, answered within [`API_TIMEOUT_MS`], the body read whole up to
//! [`MAX_API_BODY_BYTES`].

use js_sys::futures::JsFuture;
use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::JsCast;
use worker::web_sys;

use super::forward::{answer_headers, answer_within, within, Exchange};
use crate::origin::OriginOutcome;
use crate::reconcile::tally::{SenderAnswer, SenderRequest};

/// How long a sender's API may take to answer, body included.
pub const API_TIMEOUT_MS: u64 = 20_000;
/// Largest answer read: a page of 40 Stripe events of up to about 200 KB each.
pub const MAX_API_BODY_BYTES: u32 = 8 * 1024 * 1024;

/// Sends `request` and reads its answer; `Err` says why none came.
pub async fn send(request: &SenderRequest) -> Result<SenderAnswer, String> {
    let sent = Exchange::start(request.method, &request.url, &request.headers, None);
    let response: web_sys::Response =
        answer_within(sent, API_TIMEOUT_MS)
            .await
            .map_err(|outcome| match outcome {
                OriginOutcome::TimedOut => "no answer in time".to_owned(),
                OriginOutcome::NotSent => "the request could not be made".to_owned(),
                _ => "the connection failed".to_owned(),
            })?;
    let status = response.status();
    let headers = answer_headers(&response);
    let read = response
        .array_buffer()
        .map_err(|_| "its body could not be read".to_owned())?;
    let body = match within(JsFuture::from(read), API_TIMEOUT_MS).await {
        Ok(Ok(buffer)) => buffer,
        Ok(Err(_)) => return Err("its body broke off".into()),
        Err(_) => return Err("its body did not arrive in time".into()),
    };
    let buffer: ArrayBuffer = body.unchecked_into();
    if buffer.byte_length() > MAX_API_BODY_BYTES {
        return Err(format!("its answer is over {MAX_API_BODY_BYTES} bytes"));
    }
    Ok(SenderAnswer {
        status,
        headers,
        body: Uint8Array::new(&buffer).to_vec(),
    })
}
