//! Bodies in JavaScript memory: a request's, read with a size cap and a read deadline (shared by
//! both front doors), and bytes joined.

use js_sys::futures::JsFuture;
use js_sys::Uint8Array;

use super::forward::{self, BodyReader};
use super::inbound::Inbound;
use crate::answer::{BodyCount, BodyError, BodyRead};
use crate::config::DeliveryConfig;

/// Reads the whole body into JavaScript memory (it crosses into WebAssembly only where a rule
/// needs its bytes), refusing one larger than `MAX_BODY_BYTES` whatever its `Content-Length`
/// claims, without reading it all, and one that has not arrived in full within
/// `BODY_READ_TIMEOUT_MS` (a sender trickling its body holds no request open past it).
pub async fn read_capped(req: &Inbound, limits: &DeliveryConfig) -> Result<Uint8Array, BodyError> {
    let (limit, ms) = (limits.max_body_bytes, limits.body_read_timeout_ms);
    let declared = req.headers().get("content-length").ok().flatten();
    match BodyRead::of(declared.as_deref(), limit) {
        BodyRead::TooLarge => Err(BodyError::TooLarge { limit }),
        // What arrived is checked all the same: the cap must not rest on the runtime alone.
        BodyRead::Whole => {
            let promise = req
                .inner()
                .array_buffer()
                .map_err(|_| BodyError::Unreadable)?;
            let buffer = forward::within(JsFuture::from(promise), ms)
                .await
                .map_err(|_| BodyError::TimedOut { ms })?
                .map_err(|_| BodyError::Unreadable)?;
            let body = Uint8Array::new(&buffer);
            BodyCount::new(limit).add(u64::from(body.length()))?;
            Ok(body)
        }
        BodyRead::Chunked => read_stream(req, limit, ms).await,
    }
}

/// A body without a declared length: read chunk by chunk, counting, then joined; the reader is
/// cancelled (dropped) when the deadline passes or the cap is reached.
async fn read_stream(req: &Inbound, limit: u64, ms: u64) -> Result<Uint8Array, BodyError> {
    let Some(stream) = req.inner().body() else {
        return Ok(Uint8Array::new_with_length(0));
    };
    let mut reader = BodyReader::of(stream).ok_or(BodyError::Unreadable)?;
    let read = forward::within(Box::pin(read_chunks(&mut reader, limit)), ms).await;
    let chunks = read.map_err(|_| BodyError::TimedOut { ms })??;
    Ok(join(&[], &chunks))
}

/// `prefix` then each of `parts`, joined in JavaScript memory.
pub fn join(prefix: &[u8], parts: &[Uint8Array]) -> Uint8Array {
    let mut at = prefix.len() as u32;
    let joined =
        Uint8Array::new_with_length(at + parts.iter().map(Uint8Array::length).sum::<u32>());
    joined.subarray(0, at).copy_from(prefix);
    for part in parts {
        joined.set(part, at);
        at += part.length();
    }
    joined
}

/// Every chunk `reader` gives until the end; `TooLarge` as soon as their total passes `limit`.
async fn read_chunks(reader: &mut BodyReader, limit: u64) -> Result<Vec<Uint8Array>, BodyError> {
    let (mut chunks, mut count) = (Vec::new(), BodyCount::new(limit));
    while let Some(chunk) = reader.next().await.map_err(|()| BodyError::Unreadable)? {
        count.add(u64::from(chunk.length()))?;
        chunks.push(chunk);
    }
    Ok(chunks)
}
