//! The values between the worker and the claim authority's RPC method `call`: request frames
//! and replies (the format is described in [`crate::claim_authority`]). Both sides use this file.

use js_sys::Uint8Array;
use wasm_bindgen::{JsCast, JsValue};
use worker::web_sys::{self, ReadableStream};
use worker::Result;

use crate::claim::StoreError;
use crate::claim_authority::{
    frame_json_range, frame_prefix, AuthorityReply, AuthorityRequest, REPLY_HEADER,
};

use crate::worker::body;
use crate::worker::forward;

/// The frame for `request`, with `body` (bytes in JavaScript memory) after its JSON.
pub fn encode_request(request: &AuthorityRequest, body: Option<&Uint8Array>) -> Uint8Array {
    let json = serde_json::to_vec(request).expect("an authority request always serialises");
    body::join(&frame_prefix(&json), body.cloned().as_slice())
}

/// Reads a request frame (in the object): the request, and a view of the body after it.
pub fn read_request(
    frame: &Uint8Array,
) -> std::result::Result<(AuthorityRequest, Uint8Array), String> {
    let len = frame.length() as usize;
    if len < 4 {
        return Err("not an authority request frame".into());
    }
    let mut head = [0u8; 4];
    frame.subarray(0, 4).copy_to(&mut head);
    let (start, end) = frame_json_range(head, len)
        .ok_or_else(|| "the frame is shorter than it says".to_owned())?;
    let json = frame.subarray(start as u32, end as u32).to_vec();
    let request = serde_json::from_slice(&json)
        .map_err(|error| format!("not an authority request: {error}"))?;
    Ok((request, frame.subarray(end as u32, len as u32)))
}

/// A reply: its JSON, as a string.
pub fn reply(reply: &AuthorityReply) -> JsValue {
    JsValue::from_str(&serde_json::to_string(reply).expect("a reply always serialises"))
}

/// The reply to a frame the object could not read: a store failure worth retrying, saying why.
pub fn unreadable(detail: &str) -> JsValue {
    let detail = format!("the claim authority could not read the request: {detail}");
    reply(&StoreError::Retryable(detail).into())
}

/// What the object answers a worker of the release before RPC, which sent its frame by
/// `fetch` and read the reply from [`REPLY_HEADER`] in that release's form (the reply's kind in
/// a `reply` field): a retryable store failure, which such a worker answers with 503 and
/// `Retry-After`, so the sender comes back when the deploy is done. Kept for one release.
pub fn previous_release_answer() -> Result<JsValue> {
    let reply = serde_json::json!({
        "reply": "store_failed",
        "retryable": true,
        "detail": "the claim authority runs a newer release; retry",
    });
    carrying(&reply.to_string(), 503, None)
}

/// A reply whose body is `stream` (the origin's answer), the JSON in [`REPLY_HEADER`].
pub fn reply_with_stream(reply: &AuthorityReply, stream: &ReadableStream) -> Result<JsValue> {
    carrying(&serde_json::to_string(reply)?, 200, Some(stream))
}

/// A response with `status` and `body`, `json` in [`REPLY_HEADER`].
fn carrying(json: &str, status: u16, body: Option<&ReadableStream>) -> Result<JsValue> {
    let headers = [(REPLY_HEADER.to_owned(), json.to_owned())];
    Ok(forward::response(status, &headers, body)?.into())
}

/// Reads a reply (in the worker): the reply, and the body stream when the origin's answer came
/// with it.
pub fn read_reply(
    answer: JsValue,
) -> std::result::Result<(AuthorityReply, Option<ReadableStream>), String> {
    let (json, body) = match answer.dyn_into::<web_sys::Response>() {
        Ok(response) => (
            response.headers().get(REPLY_HEADER).ok().flatten(),
            response.body(),
        ),
        Err(answer) => (answer.as_string(), None),
    };
    let unreadable =
        |why: &dyn std::fmt::Display| format!("claim authority reply unreadable: {why}");
    let json = json.ok_or_else(|| unreadable(&"neither JSON text nor a response carrying it"))?;
    let reply = serde_json::from_str(&json).map_err(|error| unreadable(&error))?;
    Ok((reply, body))
}
