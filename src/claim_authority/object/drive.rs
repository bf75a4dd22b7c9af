//! A forward's own I/O (the request to the origin, its answer and body, the caller), and how
//! [`crate::claim_authority::object::Executor::run`] carries out each [`ForwardIo`] call over it.

use super::task::{Done, ForwardIo};
use crate::claim::Millis;
use crate::claim_authority::attempt::{Event, Wants};
use crate::claim_authority::{Door, ForwardReport};

/// A forward's I/O: the request to the origin, its answer and body, and the caller.
#[allow(async_fn_in_trait)] // used by generics only, never as `dyn`
pub trait Forwarding {
    /// Waits for what the attempt `wants` until `deadline`, and says what happened; the
    /// answer's headers are read only for a `door` that passes them back.
    async fn next(&mut self, wants: Wants, door: Door, deadline: Millis) -> Event;

    /// Answers the caller, if one waits, with `report`.
    fn reply(&mut self, report: ForwardReport);

    /// Answers the caller with `report` and a stream for the origin's body; `false` when no
    /// stream can be made.
    fn stream(&mut self, report: ForwardReport) -> bool;

    /// Stops the forward: aborts the request and cancels any body still being read.
    fn abort(&mut self);

    /// Discards the answer's body unread.
    fn discard_body(&mut self);

    /// The bytes of the chunk read last.
    fn chunk(&self) -> Vec<u8>;

    /// Passes the chunk read last on to the caller by `deadline`; `false` (the caller's
    /// stream broken) when it cannot.
    async fn pass(&mut self, deadline: Option<Millis>) -> bool;

    /// Ends the caller's stream: closed when the body ended, else broken.
    fn end_stream(&mut self, closed: bool);
}

/// Carries out `io` over `forward`; what it led to, if the task must hear of it.
pub async fn carry_out<F: Forwarding>(forward: &mut F, io: ForwardIo) -> Option<Done> {
    let caller_gone = |kept: bool| (!kept).then_some(Done::Event(Event::CallerGone));
    match io {
        ForwardIo::Reply(report) => forward.reply(report),
        ForwardIo::Stream(report) => return caller_gone(forward.stream(report)),
        ForwardIo::Abort => forward.abort(),
        ForwardIo::DiscardBody => forward.discard_body(),
        ForwardIo::KeepChunk => return Some(Done::Chunk(forward.chunk())),
        ForwardIo::Pass { deadline } => return caller_gone(forward.pass(deadline).await),
        ForwardIo::EndStream { closed } => forward.end_stream(closed),
    }
    None
}

/// No forward: the I/O of a task that never forwards (a request served, a delivery begun, the
/// alarm, whose attempts run over their own). Waiting on it only ever times out.
pub struct NoForward;

impl Forwarding for NoForward {
    async fn next(&mut self, _wants: Wants, _door: Door, _deadline: Millis) -> Event {
        Event::Timeout
    }

    fn reply(&mut self, _report: ForwardReport) {}

    fn stream(&mut self, _report: ForwardReport) -> bool {
        false
    }

    fn abort(&mut self) {}

    fn discard_body(&mut self) {}

    fn chunk(&self) -> Vec<u8> {
        Vec::new()
    }

    async fn pass(&mut self, _deadline: Option<Millis>) -> bool {
        false
    }

    fn end_stream(&mut self, _closed: bool) {}
}
