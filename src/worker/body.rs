//! Reading a request body with a size cap and a read deadline; shared by both front doors.

use js_sys::futures::JsFuture;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::JsCast;
use worker::web_sys::ReadableStreamDefaultReader;

use super::forward;
use super::inbound::Inbound;

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than the cap.
    TooLarge,
    /// The sender hung up or the stream failed before the end.
    Unreadable,
    /// The whole body did not arrive before the read deadline.
    TimedOut,
}

/// The limits a body is read within.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest body, in bytes.
    pub bytes: u64,
    /// How long the whole body may take to arrive, in milliseconds.
    pub deadline_ms: u64,
}

/// The body length the request's `Content-Length` declares, when it is a number.
fn declared_length(req: &Inbound) -> Option<u64> {
    let value = req.headers().get("content-length").ok().flatten()?;
    value.trim().parse().ok()
}

/// Reads the whole body into JavaScript memory (it crosses into WebAssembly only where a rule
/// needs its bytes), refusing one larger than `limits.bytes` whatever its `Content-Length`
/// claims, without reading it all, and one that has not arrived in full within
/// `limits.deadline_ms` (a sender trickling its body holds no request open past it).
pub async fn read_capped(req: &Inbound, limits: Limits) -> Result<Uint8Array, BodyError> {
    let limit = limits.bytes;
    match declared_length(req) {
        Some(length) if length > limit => Err(BodyError::TooLarge),
        // A declared length within the cap: the runtime enforces it, so read it in one call
        // (and check what arrived all the same: the cap must not rest on the runtime alone).
        Some(_) => {
            let promise = req
                .inner()
                .array_buffer()
                .map_err(|_| BodyError::Unreadable)?;
            let buffer = forward::within(JsFuture::from(promise), limits.deadline_ms)
                .await
                .map_err(|_| BodyError::TimedOut)?
                .map_err(|_| BodyError::Unreadable)?;
            let body = Uint8Array::new(&buffer);
            if u64::from(body.length()) > limit {
                return Err(BodyError::TooLarge);
            }
            Ok(body)
        }
        None => read_stream(req, limits).await,
    }
}

/// A body without a declared length: read chunk by chunk, counting, then joined; the reader is
/// cancelled when the deadline passes.
async fn read_stream(req: &Inbound, limits: Limits) -> Result<Uint8Array, BodyError> {
    let Some(stream) = req.inner().body() else {
        return Ok(Uint8Array::new_with_length(0));
    };
    let reader: ReadableStreamDefaultReader = stream
        .get_reader()
        .dyn_into()
        .map_err(|_| BodyError::Unreadable)?;
    let chunks = Box::pin(read_chunks(&reader, limits.bytes));
    let result = match forward::within(chunks, limits.deadline_ms).await {
        Ok(result) => result,
        Err(_) => Err(BodyError::TimedOut),
    };
    if result.is_err() {
        let _ = reader.cancel();
    }
    let (chunks, total) = result?;
    let body = Uint8Array::new_with_length(total as u32);
    let mut at = 0;
    for chunk in chunks {
        body.set(&chunk, at);
        at += chunk.length();
    }
    Ok(body)
}

/// Every chunk `reader` gives until the end, and their total length; `TooLarge` as soon as it
/// passes `limit`.
async fn read_chunks(
    reader: &ReadableStreamDefaultReader,
    limit: u64,
) -> Result<(Vec<Uint8Array>, u64), BodyError> {
    let mut chunks = Vec::new();
    let mut total: u64 = 0;
    loop {
        let result = JsFuture::from(reader.read())
            .await
            .map_err(|_| BodyError::Unreadable)?;
        let done = Reflect::get(&result, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            return Ok((chunks, total));
        }
        let chunk: Uint8Array = Reflect::get(&result, &"value".into())
            .ok()
            .and_then(|v| v.dyn_into().ok())
            .ok_or(BodyError::Unreadable)?;
        total += u64::from(chunk.length());
        if total > limit {
            return Err(BodyError::TooLarge);
        }
        chunks.push(chunk);
    }
}
