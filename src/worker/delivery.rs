//! A delivery run inside the claim authority (the rules are in [`crate::authority::delivery`]):
//! claim, forward, answer the caller by the forward time-out at the latest, keep waiting for a
//! late answer until the wait ends, and settle on what was learned.
//!
//! The forward runs as background work of the object (`ctx.waitUntil`), which, from
//! compatibility date 2026-10-01, keeps the object running while the forward is pending even
//! after the caller has its answer or has gone.

use std::rc::Rc;

use futures_channel::oneshot;
use js_sys::futures::JsFuture;
use js_sys::Uint8Array;
use wasm_bindgen::JsValue;
use worker::web_sys::{self, ReadableStream, TransformStream, WritableStreamDefaultWriter};
use worker::{Result, State};

use super::authority_wire;
use super::clock;
use super::forward::{self, BodyReader, Exchange, Outgoing};
use super::keeper::Keeper;
use super::log::{self, SettledLater};
use crate::authority::{
    self, AuthorityReply, Begin, Deliver, Delivery, Door, Head, Report, Settle, SettleStep, Won,
};
use crate::claim::Millis;
use crate::idempotency::{self, BodyKept};
use crate::log_line::Outcome;
use crate::origin::{OriginOutcome, Verdict};

/// Runs `deliver` (its raw body beside it) and answers the caller: at once when it is not
/// forwarded, else when the origin answers or the forward time-out passes, whichever is first.
pub async fn run(
    state: &State,
    keeper: &Rc<Keeper>,
    deliver: Deliver,
    body: Uint8Array,
) -> Result<JsValue> {
    let now = clock::now_ms();
    let begun = keeper
        .with_store(&deliver.key, "deliver", |store| {
            authority::begin(store, &deliver, now)
        })
        .await;
    let won = match begun {
        Ok(Begin::Forward(won)) => won,
        Ok(Begin::Reply(reply)) => return Ok(authority_wire::reply(&reply)),
        Err(error) => return Ok(authority_wire::reply(&AuthorityReply::from(error))),
    };
    let (early, answered) = oneshot::channel();
    let attempt = Attempt {
        keeper: keeper.clone(),
        wait_ends_at: now
            .saturating_add(deliver.forward.timeout_ms)
            .saturating_add(deliver.forward.wait_ms)
            .min(won.lease_expires_at),
        deliver,
        won,
        body,
        started: now,
        early: Some(early),
    };
    state.wait_until(attempt.run());
    match answered.await {
        Ok(Early::Reply(reply)) => Ok(authority_wire::reply(&reply)),
        Ok(Early::Stream(reply, stream)) => authority_wire::reply_with_stream(&reply, &stream),
        Err(_) => Ok(authority_wire::reply(&AuthorityReply::StoreFailed {
            retryable: true,
            detail: "the delivery ended without an answer".into(),
        })),
    }
}

/// What the caller is told by the forward time-out.
enum Early {
    /// A reply in JSON.
    Reply(AuthorityReply),
    /// A reply whose body is the origin's answer, streaming.
    Stream(AuthorityReply, ReadableStream),
}

/// One forward of a won claim, from the request to the settle.
struct Attempt {
    keeper: Rc<Keeper>,
    deliver: Deliver,
    won: Won,
    body: Uint8Array,
    started: Millis,
    wait_ends_at: Millis,
    /// Taken when the caller has been answered.
    early: Option<oneshot::Sender<Early>>,
}

impl Attempt {
    async fn run(mut self) {
        let forward = &self.deliver.forward;
        let has_body = !matches!(forward.method.as_str(), "GET" | "HEAD");
        let body = JsValue::from(self.body.clone());
        let mut headers = forward.headers.clone();
        headers.extend(self.deliver.door.attempt_headers(
            &self.deliver.key,
            self.won.attempt,
            self.won.takeover,
        ));
        let outgoing = Outgoing {
            url: &forward.url,
            method: &forward.method,
            headers: &headers,
            body: has_body.then_some(&body),
        };
        let exchange = match Exchange::start(&outgoing) {
            Ok(exchange) => exchange,
            Err(outcome) => return self.conclude(Err(outcome)).await,
        };
        let exchange = match forward::within(exchange, forward.timeout_ms).await {
            Ok(result) => return self.conclude(result).await,
            Err(still_waiting) => still_waiting,
        };
        // The sender is told to come back; the object keeps waiting for the answer.
        let report = self.report(
            OriginOutcome::TimedOut,
            Verdict::Pending,
            SettleStep::Waiting,
        );
        self.answer(Early::Reply(delivered(report)));
        let remaining = self.wait_ends_at.saturating_sub(clock::now_ms());
        match forward::within(exchange, remaining).await {
            Ok(result) => self.conclude(result).await,
            Err(exchange) => {
                exchange.abort();
                let verdict = Verdict::Pending.final_after_wait();
                let step = self.settle(Settle::for_verdict(verdict, None)).await;
                self.log(Outcome::AnswerLost, &OriginOutcome::TimedOut, step);
            }
        }
    }

    /// Settles on the forward's result and, if the caller is still waiting, answers it.
    async fn conclude(mut self, result: std::result::Result<web_sys::Response, OriginOutcome>) {
        let outcome = forward::outcome(&result);
        let door = self.deliver.door;
        let verdict = Verdict::of(&outcome, |status| door.succeeded(status));
        let response = match (door, result) {
            (Door::Api { max_cached_body }, Ok(response)) => {
                return self
                    .conclude_api(response, outcome, verdict, max_cached_body)
                    .await
            }
            (_, Ok(response)) => Some(response),
            (_, Err(_)) => None,
        };
        if let Some(response) = &response {
            forward::discard_body(response);
        }
        let step = self.settle(Settle::for_verdict(verdict, None)).await;
        self.finish(outcome, verdict, step);
    }

    /// An Idempotency-Key answer: passed on as it streams (when the caller still waits), its
    /// body kept for replay up to the limit, the claim settled once the body has ended.
    async fn conclude_api(
        mut self,
        response: web_sys::Response,
        outcome: OriginOutcome,
        verdict: Verdict,
        max_cached_body: u64,
    ) {
        let head = Head {
            status: response.status(),
            headers: forward::answer_headers(&response),
        };
        let mut reader = BodyReader::new(&response);
        // Not a final answer: settled at once (released or held); its body only passes through.
        let early_step = if verdict == Verdict::Succeeded {
            SettleStep::Waiting
        } else {
            self.settle(Settle::for_verdict(verdict, None)).await
        };
        let sink = match self.early.is_some() {
            true => match Sink::new() {
                Ok((sink, stream)) => {
                    let mut report = self.report(outcome.clone(), verdict, early_step);
                    report.head = Some(head.clone());
                    self.answer(Early::Stream(delivered(report), stream));
                    Some(sink)
                }
                Err(_) => None,
            },
            false => None,
        };
        let caller_gets_it = sink.is_some();
        let cap = if verdict == Verdict::Succeeded {
            max_cached_body
        } else {
            0
        };
        let kept = pump(&mut reader, sink, cap, self.wait_ends_at).await;
        if verdict != Verdict::Succeeded {
            if !caller_gets_it {
                self.log(Outcome::LateAnswer, &outcome, early_step);
            }
            return;
        }
        let kept = match kept {
            BodyKept::TooLarge if !caller_gets_it => BodyKept::Lost,
            other => other,
        };
        let cached = idempotency::to_cache(head.status, &head.headers, kept);
        let step = self.settle(Settle::Finalize(Some(cached))).await;
        let word = if caller_gets_it {
            Outcome::AnswerSettled
        } else {
            Outcome::LateAnswer
        };
        self.log(word, &outcome, step);
    }

    /// Answers the caller if it still waits, else logs what happened after it was answered.
    fn finish(&mut self, outcome: OriginOutcome, verdict: Verdict, step: SettleStep) {
        if self.early.is_some() {
            let report = self.report(outcome, verdict, step);
            self.answer(Early::Reply(delivered(report)));
        } else {
            self.log(Outcome::LateAnswer, &outcome, step);
        }
    }

    fn report(&self, outcome: OriginOutcome, verdict: Verdict, settle: SettleStep) -> Report {
        Report {
            attempt: self.won.attempt,
            takeover: self.won.takeover,
            outcome,
            verdict,
            settle,
            origin_ms: clock::now_ms().saturating_sub(self.started),
            head: None,
        }
    }

    fn answer(&mut self, early: Early) {
        if let Some(sender) = self.early.take() {
            let _ = sender.send(early);
        }
    }

    fn log(&self, outcome: Outcome, origin: &OriginOutcome, step: SettleStep) {
        log::settled_later(
            self.keeper.env(),
            SettledLater {
                route: self.deliver.door.route(),
                provider: self.deliver.door.provider(&self.deliver.key),
                key: &self.deliver.key,
                attempt: self.won.attempt,
                outcome,
                origin,
                origin_ms: clock::now_ms().saturating_sub(self.started),
                step,
            },
        );
    }

    /// Settles the claim, trying again after a retryable store failure while the lease lasts
    /// (the settle is fenced, so repeating it is safe).
    async fn settle(&self, how: Settle) -> SettleStep {
        let key = &self.deliver.key;
        self.keeper
            .with_store_retrying(key, "settle", self.won.lease_expires_at, |store, now| {
                match authority::settle(
                    store,
                    key,
                    &self.won.fence,
                    self.deliver.policy,
                    how.clone(),
                    now,
                ) {
                    Ok((step, wake_by)) => (Ok(step), wake_by),
                    Err(error) => (Err(error), None),
                }
            })
            .await
            .unwrap_or(SettleStep::SettleFailed)
    }
}

fn delivered(report: Report) -> AuthorityReply {
    AuthorityReply::Delivery(Delivery::Forwarded(report))
}

/// Where the origin's answer streams to the caller.
struct Sink {
    writer: WritableStreamDefaultWriter,
}

impl Sink {
    fn new() -> std::result::Result<(Sink, ReadableStream), JsValue> {
        let pipe = TransformStream::new()?;
        let writer = pipe.writable().get_writer()?;
        Ok((Sink { writer }, pipe.readable()))
    }

    async fn write(&self, chunk: &Uint8Array) -> bool {
        JsFuture::from(self.writer.write_with_chunk(chunk))
            .await
            .is_ok()
    }

    fn close(self) {
        let _ = self.writer.close();
    }

    fn abort(self) {
        let _ = self.writer.abort();
    }
}

/// Reads the answer's body until it ends, breaks, or `deadline` passes, passing each chunk to
/// `sink` (while the caller takes it) and keeping up to `cap` bytes. What it kept: the whole
/// body; too large (it ended, but was longer than `cap`); or lost (it broke off or stalled, or
/// the caller went away from a body too large to keep).
async fn pump(
    reader: &mut BodyReader,
    mut sink: Option<Sink>,
    cap: u64,
    deadline: Millis,
) -> BodyKept {
    let mut kept: Vec<u8> = Vec::new();
    let mut too_large = false;
    loop {
        let remaining = deadline.saturating_sub(clock::now_ms());
        // A read still pending at the deadline is dropped (`map_err`), then the body cancelled.
        let next = forward::within(Box::pin(reader.next()), remaining)
            .await
            .map_err(drop);
        let chunk = match next {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(Ok(None)) => {
                if let Some(sink) = sink {
                    sink.close();
                }
                return if too_large {
                    BodyKept::TooLarge
                } else {
                    BodyKept::Whole(kept)
                };
            }
            Ok(Err(())) | Err(_) => {
                reader.cancel();
                if let Some(sink) = sink {
                    sink.abort();
                }
                return BodyKept::Lost;
            }
        };
        if !too_large {
            if kept.len() as u64 + u64::from(chunk.length()) > cap {
                too_large = true;
                kept = Vec::new();
            } else {
                kept.extend(chunk.to_vec());
            }
        }
        if let Some(open) = &sink {
            let remaining = deadline.saturating_sub(clock::now_ms());
            if !matches!(
                forward::within(Box::pin(open.write(&chunk)), remaining).await,
                Ok(true)
            ) {
                // The caller went away (or stopped reading): keep reading for the record only.
                if let Some(gone) = sink.take() {
                    gone.abort();
                }
            }
        }
        if too_large && sink.is_none() {
            reader.cancel();
            return BodyKept::Lost;
        }
    }
}
