//! Reading a request body with a size cap; shared by both front doors.

use futures_util::StreamExt;
use worker::Request;

/// The body was larger than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// Reads the whole body, refusing (without reading it all) one larger than `limit` bytes,
/// whatever its `Content-Length` claims.
pub async fn read_capped(req: &mut Request, limit: u64) -> Result<Vec<u8>, TooLarge> {
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(TooLarge);
    }
    let mut body = Vec::with_capacity(declared.unwrap_or(0) as usize);
    let Ok(mut stream) = req.stream() else {
        return Ok(body); // no body at all
    };
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| TooLarge)?;
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
