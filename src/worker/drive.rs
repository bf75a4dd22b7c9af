//! Runs an [`Attempt`] (the rules are in [`crate::authority::attempt`]): carries out each
//! command it hands out and feeds back what happened. The one forward loop of the product:
//! deliveries forwarded while their sender waits, queued attempts and Idempotency-Key requests
//! all run here.

use futures_channel::oneshot;
use js_sys::futures::JsFuture;
use js_sys::Uint8Array;
use worker::web_sys::{self, ReadableStream, TransformStream, WritableStreamDefaultWriter};

use super::clock;
use super::forward::{self, BodyReader, Exchange};
use super::keeper::Keeper;
use crate::authority::attempt::{Command, Event, Wants};
use crate::authority::{Attempt, AuthorityReply, Delivery, Door, Head};
use crate::claim::Millis;
use crate::keeper::ObjectIo;
use crate::log_line::LogLine;
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
pub async fn run(
    keeper: &Keeper,
    mut attempt: Attempt,
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
    match sent {
        Ok(exchange) => {
            io.aborter = Some(exchange.aborter());
            io.exchange = Some(exchange);
        }
        Err(outcome) => attempt.handle(Event::NoHead(outcome), clock::now_ms()),
    }
    loop {
        // Each command is carried out in order; what it leads to is handed back at once.
        while let Some(command) = attempt.poll() {
            if let Some(event) = io.carry_out(command, &mut attempt, keeper).await {
                attempt.handle(event, clock::now_ms());
            }
        }
        if attempt.is_finished() {
            return;
        }
        let deadline = attempt.poll_timeout().unwrap_or_else(clock::now_ms);
        let event = io.next(attempt.wants(), attempt.door(), deadline).await;
        attempt.handle(event, clock::now_ms());
    }
}

/// The forward's I/O: the request, its answer and body, and the caller's stream.
struct Io {
    /// Aborts the request and any body still being read.
    aborter: Option<forward::Aborter>,
    exchange: Option<Exchange>,
    response: Option<web_sys::Response>,
    reader: Option<BodyReader>,
    /// The chunk read last (a [`Command::Keep`] or [`Command::Pass`] is about it).
    chunk: Option<Uint8Array>,
    sink: Option<Sink>,
    early: Option<oneshot::Sender<Early>>,
}

impl Io {
    /// Waits for what the attempt wants until `deadline`, and says what happened.
    async fn next(&mut self, wants: Wants, door: Door, deadline: Millis) -> Event {
        let remaining = deadline.saturating_sub(clock::now_ms());
        match wants {
            Wants::Head => {
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

    /// Carries out `command`; returns the event it leads to, if any.
    async fn carry_out(
        &mut self,
        command: Command,
        attempt: &mut Attempt,
        keeper: &Keeper,
    ) -> Option<Event> {
        match command {
            Command::Reply(report) => self.reply(report, attempt, keeper).await,
            Command::ReplyStreaming(report) => return self.stream(report),
            Command::Abort => {
                if let Some(aborter) = &self.aborter {
                    aborter.abort();
                }
                if let Some(reader) = self.reader.as_mut() {
                    reader.cancel();
                }
            }
            Command::DiscardBody => {
                if let Some(response) = &self.response {
                    forward::discard_body(response);
                }
            }
            Command::Keep => {
                if let Some(chunk) = &self.chunk {
                    attempt.keep(&chunk.to_vec());
                }
            }
            Command::Pass => return self.pass(attempt.poll_timeout()).await,
            Command::CloseStream | Command::AbortStream => {
                if let Some(sink) = self.sink.take() {
                    sink.end(command == Command::CloseStream);
                }
            }
            Command::Settle(op) => {
                let now = clock::now_ms();
                let result = keeper
                    .with_store(attempt.key(), "settle", |store| {
                        attempt.settle_with(&op, store, now)
                    })
                    .await
                    .and_then(|settled| settled);
                return Some(Event::Settled(result));
            }
            Command::Report(summary) => {
                keeper
                    .io()
                    .record(&LogLine::ended(&summary, clock::now_ms()));
                let (key, provider) = (&summary.key, summary.provider);
                keeper.origin_failed(key, provider, summary.verdict).await;
            }
        }
        None
    }

    /// Answers the caller with `report`. A failure the caller was told of in time counts
    /// against the origin too (see [`Keeper::origin_failed`]).
    async fn reply(
        &mut self,
        report: crate::authority::Report,
        attempt: &Attempt,
        keeper: &Keeper,
    ) {
        let verdict = report.verdict;
        self.answer(Early::Reply(forwarded(report)));
        let (key, provider) = (attempt.key(), attempt.provider());
        keeper.origin_failed(key, provider, verdict).await;
    }

    /// Answers the caller with `report` and a stream for the origin's body; `CallerGone` when
    /// no stream can be made.
    fn stream(&mut self, report: crate::authority::Report) -> Option<Event> {
        let Ok((sink, stream)) = Sink::new() else {
            return Some(Event::CallerGone);
        };
        self.sink = Some(sink);
        self.answer(Early::Stream(forwarded(report), stream));
        None
    }

    /// Passes the last chunk on to the caller by `deadline`; `CallerGone` when it cannot.
    async fn pass(&mut self, deadline: Option<Millis>) -> Option<Event> {
        let (Some(sink), Some(chunk)) = (&self.sink, &self.chunk) else {
            return Some(Event::CallerGone);
        };
        let remaining = deadline.map_or(0, |at| at.saturating_sub(clock::now_ms()));
        if matches!(
            forward::within(Box::pin(sink.write(chunk)), remaining).await,
            Ok(true)
        ) {
            return None;
        }
        if let Some(sink) = self.sink.take() {
            sink.end(false);
        }
        Some(Event::CallerGone)
    }

    fn answer(&mut self, early: Early) {
        if let Some(sender) = self.early.take() {
            let _ = sender.send(early);
        }
    }
}

fn forwarded(report: crate::authority::Report) -> AuthorityReply {
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
