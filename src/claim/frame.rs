//! Frames: a length-prefixed JSON head, then raw bytes. A request to the claim authority
//! travels as one (the message, then the delivery's body), and a queued event is stored as one
//! (the headers to forward, then the body).

use super::StoreError;

/// The start of a request frame: the length of `json` (4 bytes, big-endian), then `json`; the
/// delivery's raw body follows it.
pub fn frame_prefix(json: &[u8]) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(4 + json.len());
    prefix.extend_from_slice(&(json.len() as u32).to_be_bytes());
    prefix.extend_from_slice(json);
    prefix
}

/// Where a frame's JSON lies: `(start, end)`; the body starts at `end`. `None` when `frame` is
/// too short for the length it announces. `head` is the frame's first four bytes and `len` its
/// whole length.
pub fn frame_json_range(head: [u8; 4], len: usize) -> Option<(usize, usize)> {
    let json_len = u32::from_be_bytes(head) as usize;
    let end = 4usize.checked_add(json_len)?;
    (end <= len).then_some((4, end))
}

/// Headers to forward, in order.
pub type Headers = Vec<(String, String)>;

/// The stored form of a queued event: its headers, then its body.
pub fn payload(headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let json = serde_json::to_vec(headers).expect("headers always serialise");
    let mut stored = frame_prefix(&json);
    stored.extend_from_slice(body);
    stored
}

/// Reads a stored event back: its headers and its body. Unreadable data is a fatal store
/// error (never delivered half-read).
pub fn read_payload(stored: &[u8]) -> Result<(Headers, &[u8]), StoreError> {
    let unreadable = || StoreError::Fatal("a stored event is unreadable".into());
    let head: [u8; 4] = stored
        .get(..4)
        .and_then(|head| head.try_into().ok())
        .ok_or_else(unreadable)?;
    let (start, end) = frame_json_range(head, stored.len()).ok_or_else(unreadable)?;
    let headers = serde_json::from_slice(&stored[start..end]).map_err(|_| unreadable())?;
    Ok((headers, &stored[end..]))
}
