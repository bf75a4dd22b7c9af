//! Reading a request body with a size cap; shared by both front doors.

use futures_util::StreamExt;
use worker::Request;

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than the cap.
    TooLarge,
    /// The sender hung up or the stream failed before the end.
    Unreadable,
}

/// Reads the whole body, refusing (without reading it all) one larger than `limit` bytes,
/// whatever its `Content-Length` claims.
pub async fn read_capped(req: &mut Request, limit: u64) -> Result<Vec<u8>, BodyError> {
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > limit => return Err(BodyError::TooLarge),
        // A declared length within the cap: the runtime enforces it, so read it in one call.
        Some(_) => return req.bytes().await.map_err(|_| BodyError::Unreadable),
        None => {}
    }
    let mut body = Vec::new();
    let Ok(mut stream) = req.stream() else {
        return Ok(body); // no body at all
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| BodyError::Unreadable)?;
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
