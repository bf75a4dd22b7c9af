//! A forward's life carried out: the attempt driver's commands (see
//! [`crate::authority::attempt`]) done in the order it hands them out, and what each leads to
//! handed back, over the forward's own I/O ([`Forwarding`]). The one forward loop of the
//! product: deliveries forwarded while their sender waits, queued attempts and
//! Idempotency-Key requests all run here.

use super::{Keeper, ObjectIo};
use crate::authority::attempt::{Command, Event, Wants};
use crate::authority::{Attempt, Door, Report};
use crate::claim::Millis;
use crate::log_line::LogLine;
use crate::origin::OriginOutcome;

/// A forward's I/O: the request to the origin, its answer and body, and the caller.
#[allow(async_fn_in_trait)] // used by generics only, never as `dyn`
pub trait Forwarding {
    /// Waits for what the attempt `wants` until `deadline`, and says what happened; the
    /// answer's headers are read only for a `door` that passes them back.
    async fn next(&mut self, wants: Wants, door: Door, deadline: Millis) -> Event;

    /// Answers the caller, if one waits, with `report`.
    fn reply(&mut self, report: Report);

    /// Answers the caller with `report` and a stream for the origin's body; `false` when no
    /// stream can be made.
    fn stream(&mut self, report: Report) -> bool;

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

impl<I: ObjectIo> Keeper<I> {
    /// Runs `attempt` to its end over `forward`; `sent` is `Err` with the reason when nothing
    /// was sent.
    pub async fn drive<F: Forwarding>(
        &self,
        mut attempt: Attempt,
        sent: Result<(), OriginOutcome>,
        forward: &mut F,
    ) {
        if let Err(outcome) = sent {
            attempt.handle(Event::NoHead(outcome), self.io.now_ms());
        }
        loop {
            // Each command is carried out in order; what it leads to is handed back at once.
            while let Some(command) = attempt.poll() {
                if let Some(event) = self.carry_out(command, &mut attempt, forward).await {
                    attempt.handle(event, self.io.now_ms());
                }
            }
            if attempt.is_finished() {
                return;
            }
            let deadline = attempt.poll_timeout().unwrap_or_else(|| self.io.now_ms());
            let event = forward
                .next(attempt.wants(), attempt.door(), deadline)
                .await;
            attempt.handle(event, self.io.now_ms());
        }
    }

    /// Carries out `command`; returns the event it leads to, if any.
    async fn carry_out<F: Forwarding>(
        &self,
        command: Command,
        attempt: &mut Attempt,
        forward: &mut F,
    ) -> Option<Event> {
        let caller_gone = |kept: bool| (!kept).then_some(Event::CallerGone);
        match command {
            Command::Reply(report) => {
                let verdict = report.verdict;
                forward.reply(report);
                // A failure the caller was told of in time counts against the origin too.
                self.origin_failed(attempt.key(), attempt.provider(), verdict)
                    .await;
            }
            Command::ReplyStreaming(report) => return caller_gone(forward.stream(report)),
            Command::Abort => forward.abort(),
            Command::DiscardBody => forward.discard_body(),
            Command::Keep => attempt.keep(&forward.chunk()),
            Command::Pass => return caller_gone(forward.pass(attempt.poll_timeout()).await),
            Command::CloseStream => forward.end_stream(true),
            Command::AbortStream => forward.end_stream(false),
            Command::Settle(op) => {
                let now = self.io.now_ms();
                let settled = self
                    .with_store(attempt.key(), "settle", |store| {
                        attempt.settle_with(&op, store, now)
                    })
                    .await
                    .and_then(|settled| settled);
                return Some(Event::Settled(settled));
            }
            Command::Report(summary) => {
                self.io.record(&LogLine::ended(&summary, self.io.now_ms()));
                self.origin_failed(&summary.key, summary.provider, summary.verdict)
                    .await;
            }
        }
        None
    }
}
