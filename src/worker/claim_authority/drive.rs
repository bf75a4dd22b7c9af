//! A forward's I/O (see [`crate::claim_authority::object::Forwarding`]; the loop that carries out the attempt
//! driver's commands is [`Executor::drive`]): the request to the origin, its answer and body,
//! and the caller's answer and stream.

use futures_channel::oneshot;
use js_sys::futures::JsFuture;
use js_sys::Uint8Array;
use worker::web_sys::{
    self, AbortController, ReadableStream, TransformStream, WritableStreamDefaultWriter,
};

use crate::claim::Millis;
use crate::claim_authority::attempt::{Event, Wants};
use crate::claim_authority::object::{Executor, Forwarding, ObjectIo};
use crate::claim_authority::{Attempt, AuthorityReply, Door, ForwardReport, Head};
use crate::origin::OriginOutcome;
use crate::origin_gate::{GateWord, GATE_HEADER};
use crate::worker::clock;
use crate::worker::forward::{self, BodyReader, Exchange};

/// What the caller of a delivery is told by the forward time-out: a reply, and the origin's
/// answer streaming with it when the door passes the answer on.
pub type Early = (AuthorityReply, Option<ReadableStream>);

/// Runs `attempt` over the forward `sent` (or the reason nothing was sent) to its end. Its
/// caller, if any, is answered through `early`.
pub async fn run<O: ObjectIo>(
    executor: &Executor<O>,
    attempt: Attempt,
    sent: Result<Exchange, OriginOutcome>,
    early: Option<oneshot::Sender<Early>>,
    gated: bool,
) {
    let mut io = Io {
        early,
        gated,
        ..Io::default()
    };
    let sent = sent.map(|exchange| {
        io.aborter = Some(exchange.aborter());
        io.exchange = Some(exchange);
    });
    executor.drive(attempt, sent, &mut io).await;
}

/// The forward's I/O: the request, its answer and body, and the caller's stream.
#[derive(Default)]
struct Io {
    /// Aborts the request and any body still being read.
    aborter: Option<AbortController>,
    exchange: Option<Exchange>,
    /// The answer's body; dropping it cancels the body.
    reader: Option<BodyReader>,
    /// The chunk read last.
    chunk: Option<Uint8Array>,
    /// Where the origin's answer streams to the caller.
    sink: Option<WritableStreamDefaultWriter>,
    early: Option<oneshot::Sender<Early>>,
    /// Sent through the origin's gate: its own answers are read as what they say.
    gated: bool,
}

impl Forwarding for Io {
    async fn next(&mut self, wants: Wants, door: Door, deadline: Millis) -> Event {
        let remaining = deadline.saturating_sub(clock::now_ms());
        match wants {
            Wants::Head => self.head(door, remaining).await,
            Wants::Chunk => {
                let Some(reader) = self.reader.as_mut() else {
                    return Event::BodyEnded;
                };
                // A read still pending at the deadline is dropped; the abort that follows
                // cancels the body.
                match forward::within(Box::pin(reader.next()), remaining).await {
                    Ok(Ok(Some(chunk))) => {
                        let len = u64::from(chunk.length());
                        self.chunk = Some(chunk);
                        Event::Chunk { len }
                    }
                    Ok(Ok(None)) => Event::BodyEnded,
                    Ok(Err(())) => Event::BodyBroke,
                    Err(_) => Event::Timeout,
                }
            }
            Wants::Time | Wants::Nothing => {
                forward::sleep(remaining).await;
                Event::Timeout
            }
        }
    }

    fn reply(&mut self, report: ForwardReport) {
        self.answer((report.into(), None));
    }

    fn stream(&mut self, report: ForwardReport) -> bool {
        let Ok(pipe) = TransformStream::new() else {
            return false;
        };
        let Ok(sink) = pipe.writable().get_writer() else {
            return false;
        };
        self.sink = Some(sink);
        self.answer((report.into(), Some(pipe.readable())));
        true
    }

    fn abort(&mut self) {
        if let Some(aborter) = &self.aborter {
            aborter.abort();
        }
        self.reader = None;
    }

    /// Dropping the reader cancels the body.
    fn discard_body(&mut self) {
        self.reader = None;
    }

    fn chunk(&self) -> Vec<u8> {
        self.chunk
            .as_ref()
            .map_or_else(Vec::new, Uint8Array::to_vec)
    }

    async fn pass(&mut self, deadline: Option<Millis>) -> bool {
        let (Some(sink), Some(chunk)) = (&self.sink, &self.chunk) else {
            return false;
        };
        let remaining = deadline.map_or(0, |at| at.saturating_sub(clock::now_ms()));
        // A write still pending at the deadline is dropped with the stream.
        let write = JsFuture::from(sink.write_with_chunk(chunk));
        if matches!(forward::within(write, remaining).await, Ok(Ok(_))) {
            return true;
        }
        self.end_stream(false);
        false
    }

    /// Ends the caller's stream: closed when the body ended, else broken.
    fn end_stream(&mut self, closed: bool) {
        if let Some(sink) = self.sink.take() {
            let _ = if closed { sink.close() } else { sink.abort() };
        }
    }
}

impl Io {
    /// Waits `remaining` ms for the origin's head; its headers are read only when `door` needs
    /// them (see [`Door::reads_answer_headers`]).
    async fn head(&mut self, door: Door, remaining: Millis) -> Event {
        let Some(exchange) = self.exchange.take() else {
            return Event::NoHead(OriginOutcome::NotSent);
        };
        match forward::within(exchange, remaining).await {
            Ok(Ok(response)) => {
                if let Some(word) = self.gate_word(&response) {
                    return word;
                }
                let status = response.status();
                let headers = door
                    .reads_answer_headers(status)
                    .then(|| forward::answer_headers(&response));
                let headers = headers.unwrap_or_default();
                self.reader = response.body().and_then(BodyReader::of);
                Event::Head(Head { status, headers })
            }
            Ok(Err(outcome)) => Event::NoHead(outcome),
            Err(exchange) => {
                self.exchange = Some(exchange);
                Event::Timeout
            }
        }
    }

    /// What the gate's own answer says (see [`GateWord`]), when `response` is one.
    fn gate_word(&self, response: &web_sys::Response) -> Option<Event> {
        if !self.gated {
            return None;
        }
        let value = response.headers().get(GATE_HEADER).ok().flatten()?;
        Some(match GateWord::read(&value)? {
            GateWord::Held { until, why } => Event::Held { until, why },
            GateWord::Failed(error) => Event::NoHead(OriginOutcome::Failed { error }),
            GateWord::TimedOut => Event::NoHead(OriginOutcome::TimedOut),
            GateWord::NotSent => Event::NoHead(OriginOutcome::NotSent),
        })
    }

    fn answer(&mut self, early: Early) {
        if let Some(sender) = self.early.take() {
            let _ = sender.send(early);
        }
    }
}
