//! A forward's I/O (see [`crate::keeper::Forwarding`]; the loop that carries out the attempt
//! driver's commands is [`Keeper::drive`]): the request to the origin, its answer and body,
//! and the caller's answer and stream.

use futures_channel::oneshot;
use js_sys::futures::JsFuture;
use js_sys::Uint8Array;
use worker::web_sys::{self, ReadableStream, TransformStream, WritableStreamDefaultWriter};

use super::clock;
use super::forward::{self, BodyReader, Exchange};
use crate::authority::attempt::{Event, Wants};
use crate::authority::{Attempt, AuthorityReply, Delivery, Door, Head, Report};
use crate::claim::Millis;
use crate::keeper::{Forwarding, Keeper, ObjectIo};
use crate::origin::OriginOutcome;

/// What the caller of a delivery is told by the forward time-out.
pub enum Early {
    /// A reply in JSON.
    Reply(AuthorityReply),
    /// A reply whose body is the origin's answer, streaming.
    Stream(AuthorityReply, ReadableStream),
}

/// Runs `attempt` over the forward `sent` (or the reason nothing was sent) to its end. Its
/// caller, if any, is answered through `early`.
pub async fn run<O: ObjectIo>(
    keeper: &Keeper<O>,
    attempt: Attempt,
    sent: Result<Exchange, OriginOutcome>,
    early: Option<oneshot::Sender<Early>>,
) {
    let mut io = Io {
        aborter: None,
        exchange: None,
        response: None,
        reader: None,
        chunk: None,
        sink: None,
        early,
    };
    let sent = sent.map(|exchange| {
        io.aborter = Some(exchange.aborter());
        io.exchange = Some(exchange);
    });
    keeper.drive(attempt, sent, &mut io).await;
}

/// The forward's I/O: the request, its answer and body, and the caller's stream.
struct Io {
    /// Aborts the request and any body still being read.
    aborter: Option<forward::Aborter>,
    exchange: Option<Exchange>,
    response: Option<web_sys::Response>,
    reader: Option<BodyReader>,
    /// The chunk read last.
    chunk: Option<Uint8Array>,
    sink: Option<Sink>,
    early: Option<oneshot::Sender<Early>>,
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

    fn reply(&mut self, report: Report) {
        self.answer(Early::Reply(forwarded(report)));
    }

    fn stream(&mut self, report: Report) -> bool {
        let Ok((sink, stream)) = Sink::new() else {
            return false;
        };
        self.sink = Some(sink);
        self.answer(Early::Stream(forwarded(report), stream));
        true
    }

    fn abort(&mut self) {
        if let Some(aborter) = &self.aborter {
            aborter.abort();
        }
        if let Some(reader) = self.reader.as_mut() {
            reader.cancel();
        }
    }

    fn discard_body(&mut self) {
        if let Some(response) = &self.response {
            forward::discard_body(response);
        }
    }

    fn chunk(&self) -> Vec<u8> {
        self.chunk
            .as_ref()
            .map(Uint8Array::to_vec)
            .unwrap_or_default()
    }

    async fn pass(&mut self, deadline: Option<Millis>) -> bool {
        let (Some(sink), Some(chunk)) = (&self.sink, &self.chunk) else {
            return false;
        };
        let remaining = deadline.map_or(0, |at| at.saturating_sub(clock::now_ms()));
        // A write still pending at the deadline is dropped with the stream.
        let written = forward::within(Box::pin(sink.write(chunk)), remaining).await;
        if matches!(written, Ok(true)) {
            return true;
        }
        drop(written);
        self.end_stream(false);
        false
    }

    fn end_stream(&mut self, closed: bool) {
        if let Some(sink) = self.sink.take() {
            sink.end(closed);
        }
    }
}

impl Io {
    /// Waits `remaining` ms for the origin's head; its headers are read only for a `door`
    /// that passes them back.
    async fn head(&mut self, door: Door, remaining: Millis) -> Event {
        let Some(exchange) = self.exchange.take() else {
            return Event::NoHead(OriginOutcome::NotSent);
        };
        match forward::within(exchange, remaining).await {
            Ok(Ok(response)) => {
                let headers = if door.passes_answer() {
                    forward::answer_headers(&response)
                } else {
                    Vec::new()
                };
                let status = response.status();
                self.reader = Some(BodyReader::new(&response));
                self.response = Some(response);
                Event::Head(Head { status, headers })
            }
            Ok(Err(outcome)) => Event::NoHead(outcome),
            Err(exchange) => {
                self.exchange = Some(exchange);
                Event::Timeout
            }
        }
    }

    fn answer(&mut self, early: Early) {
        if let Some(sender) = self.early.take() {
            let _ = sender.send(early);
        }
    }
}

fn forwarded(report: Report) -> AuthorityReply {
    AuthorityReply::Delivery(Delivery::Forwarded(report))
}

/// Where the origin's answer streams to the caller.
struct Sink {
    writer: WritableStreamDefaultWriter,
}

impl Sink {
    fn new() -> Result<(Sink, ReadableStream), wasm_bindgen::JsValue> {
        let pipe = TransformStream::new()?;
        let writer = pipe.writable().get_writer()?;
        Ok((Sink { writer }, pipe.readable()))
    }

    async fn write(&self, chunk: &Uint8Array) -> bool {
        JsFuture::from(self.writer.write_with_chunk(chunk))
            .await
            .is_ok()
    }

    /// Ends the caller's stream: closed when the body ended, else broken.
    fn end(self, closed: bool) {
        let _ = if closed {
            self.writer.close()
        } else {
            self.writer.abort()
        };
    }
}
