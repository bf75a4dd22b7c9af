//! The life of one forward, from the request to the settle, as a state machine with no I/O.
//!
//! Every forward runs through it: a delivery forwarded while its sender waits (a webhook in
//! sync mode, an Idempotency-Key request) and a queued event's attempt run from the object's
//! alarm. [`crate::claim_authority::object::Executor::drive`] carries out its commands over the forward's I/O
//! and feeds back what happened; every rule is here, tested on the host, and driven by the
//! model checker.
//!
//! How it is driven (the shape of `quinn-proto`'s `Connection`):
//! - [`Attempt::handle`] takes one [`Event`] (the origin's head arrived, a body chunk, the body
//!   ended or broke, the caller went away, a settle's result, or the time given by
//!   [`Attempt::poll_timeout`] came) at the caller's clock;
//! - [`Attempt::poll`] hands out the [`Command`]s the adapter must carry out, in order (answer
//!   the caller, abort the forward, keep or pass a chunk, settle, report);
//! - [`Attempt::wants`] says what to wait for next, and [`Attempt::poll_timeout`] until when.
//!
//! A settle is a [`Command::Settle`]: the adapter runs [`Attempt::settle_with`] over the
//! object's store and hands the result back as [`Event::Settled`]. A retryable store failure is
//! tried again after a growing pause while the lease lasts (the settle is fenced, so repeating
//! it is safe).

use std::collections::VecDeque;

use super::delivery::{Deliver, ForwardReport, Head, Settle, Won};
use super::door::{to_cache, BodyKept, Door};
use super::queue::{settle_attempt, settle_held, AttemptEnd};
use super::WakeBy;
use crate::claim::SettleStep;
use crate::claim::{AttemptTerms, ClaimPolicy, ClaimStore, Millis, RetryPolicy, StoreError};
use crate::origin::{retry_after_at, OriginOutcome, Verdict};
use crate::origin_gate::HoldReason;
use crate::providers::Provider;

/// The first pause before a settle refused by a busy store is tried again; it doubles up to
/// [`SETTLE_PAUSE_MAX_MS`].
pub const SETTLE_PAUSE_MS: Millis = 100;
/// The longest pause between two tries of a settle.
pub const SETTLE_PAUSE_MAX_MS: Millis = 5_000;

/// One forward's state machine. See the module documentation for how it is driven.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    key: String,
    /// The webhook sender (none for an Idempotency-Key request).
    provider: Option<Provider>,
    terms: Terms,
    won: Won,
    started: Millis,
    /// The time of the last event handled.
    now: Millis,
    /// When the caller must be answered at the latest (sync only).
    answer_by: Option<Millis>,
    /// Until when the origin's answer (and its body) is awaited.
    wait_ends_at: Millis,
    caller: Caller,
    outcome: OriginOutcome,
    verdict: Verdict,
    /// The time the origin's answer asked to be left alone until (`Retry-After`).
    not_before: Option<Millis>,
    phase: Phase,
    commands: VecDeque<Command>,
}

/// What kind of forward this is, and the terms it runs under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Terms {
    /// Forwarded while its sender waits, through `door`.
    Sync { door: Door, policy: ClaimPolicy },
    /// A queued event's attempt, run from the object's alarm.
    Queue {
        policy: ClaimPolicy,
        retry: RetryPolicy,
        /// In `[0, 1)`, for the back-off (see [`RetryPolicy::backoff_ms`]); kept as millionths.
        jitter_millionths: u32,
    },
}

/// Where the caller stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Caller {
    /// Still waiting for its answer.
    Waiting,
    /// Answered with the origin's head; it takes the body as it streams.
    Streaming,
    /// Answered (or gone); nothing more goes to it.
    Answered,
    /// No caller: a queued attempt run from the alarm.
    None,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Waiting for the origin's status and headers.
    Head,
    /// Reading a final answer's body (Idempotency-Key door).
    Body(Body),
    /// Settling; `retry_at` is set while a refused settle waits to be tried again.
    Settling {
        op: SettleOp,
        after: After,
        retry_at: Option<Millis>,
        pause_ms: Millis,
    },
    /// Nothing more to do.
    Finished,
}

/// An answer's body being read: what is kept for replay, and how the claim stands meanwhile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Body {
    head: Head,
    /// Most bytes kept for replay (0 for an answer that is not final).
    cap: u64,
    kept: Vec<u8>,
    too_large: bool,
    /// True when the caller received the head (and so the body, while it took it).
    streamed: bool,
    /// The settle made before the body (a final answer settles after it: `Waiting`).
    early_step: SettleStep,
}

/// What follows a settle.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum After {
    /// Answer the caller if it waits, else report how the delivery ended after it.
    Answer,
    /// ForwardReport with this word (the caller was answered before).
    Report(LateWord),
    /// A non-final Idempotency-Key answer: pass its head and body on to the caller.
    Stream(Head),
}

/// Something that happened, handed to [`Attempt::handle`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// The origin's status and headers arrived.
    Head(Head),
    /// The forward ended without a head: the runtime threw, or nothing could be sent.
    NoHead(OriginOutcome),
    /// A chunk of the answer's body of `len` bytes arrived (the adapter holds its bytes).
    Chunk {
        /// Its length in bytes.
        len: u64,
    },
    /// The answer's body ended.
    BodyEnded,
    /// The answer's body broke off.
    BodyBroke,
    /// The caller stopped taking the answer it was streamed.
    CallerGone,
    /// The result of the settle the last [`Command::Settle`] asked for.
    Settled(Result<Settled, StoreError>),
    /// The time [`Attempt::poll_timeout`] gave came.
    Timeout,
    /// The origin's gate held the attempt back: nothing was sent (see [`crate::origin_gate`]).
    Held {
        /// When to come back.
        until: Millis,
        /// Why.
        why: HoldReason,
    },
}

/// Work the adapter must do, in the order [`Attempt::poll`] hands it out.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Answer the caller with this report of the forward.
    Reply(ForwardReport),
    /// Answer the caller with this report, the origin's body streaming after it ([`Command::Pass`]
    /// each chunk, then [`Command::CloseStream`] or [`Command::AbortStream`]). When no stream
    /// can be made, the adapter hands back [`Event::CallerGone`].
    ReplyStreaming(ForwardReport),
    /// Stop the forward: abort the request and cancel the answer's body.
    Abort,
    /// Discard the answer's body unread (a webhook needs only the status).
    DiscardBody,
    /// Copy the chunk just read into the kept body with [`Attempt::keep`].
    Keep,
    /// Pass the chunk just read on to the caller; hand back [`Event::CallerGone`] if it cannot
    /// be written by [`Attempt::poll_timeout`].
    Pass,
    /// The streamed body ended: end the caller's stream.
    CloseStream,
    /// The streamed body broke off: break the caller's stream.
    AbortStream,
    /// Settle now: run [`Attempt::settle_with`] with this and hand back [`Event::Settled`].
    Settle(SettleOp),
    /// ForwardReport how the attempt ended (written as one log line and one metric).
    Report(AttemptSummary),
}

/// What the adapter waits for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wants {
    /// The origin's head (or its failure), until [`Attempt::poll_timeout`].
    Head,
    /// The next chunk of the answer's body (or its end), until [`Attempt::poll_timeout`].
    Chunk,
    /// Only the time [`Attempt::poll_timeout`] gives.
    Time,
    /// Nothing: the attempt is finished.
    Nothing,
}

/// A settle to run over the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SettleOp {
    /// A delivery's claim: finalize, release or hold.
    Claim(Settle),
    /// A queued attempt, on its verdict: delivered, retried or dead-lettered.
    Queue {
        /// How the forward ended.
        verdict: Verdict,
        /// The time the origin asked to be left alone until (its `Retry-After` on a 429 or
        /// 503): the next attempt starts no earlier.
        not_before: Option<Millis>,
    },
    /// A queued attempt the origin's gate held back: queued again for `until`, not counted.
    Hold {
        /// When the next attempt is due.
        until: Millis,
        /// Why the gate held it.
        why: HoldReason,
    },
}

/// What a settle did.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Settled {
    /// A delivery's claim.
    Claim(SettleStep),
    /// A queued attempt.
    Queue(AttemptEnd),
}

/// How a delivery ended after its caller was answered (sync mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LateWord {
    /// The origin answered after the caller was told to come back; the claim was settled.
    LateAnswer,
    /// A streamed answer's body ended; the claim was settled on it.
    AnswerSettled,
    /// The wait ended without an answer; the claim is held until its lease ends.
    AnswerLost,
}

/// How an attempt ended, for its log line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// A delivery forwarded while its sender waited, settled after the sender was answered.
    Late(LateWord, SettleStep),
    /// A queued attempt, settled.
    Queue(AttemptEnd),
    /// A queued attempt whose settle the store refused on every try before the lease ended.
    QueueSettleFailed(String),
}

/// What an attempt reports when it ends without a caller to tell (written as a log line).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AttemptSummary {
    /// The key.
    pub key: String,
    /// The front door (`Webhook` for a queued attempt).
    pub door: Door,
    /// The webhook sender (none for an Idempotency-Key request).
    pub provider: Option<Provider>,
    /// Which attempt of the key.
    pub attempt: u32,
    /// True when it followed an attempt whose outcome is unknown.
    pub takeover: bool,
    /// How the forward ended.
    pub outcome: OriginOutcome,
    /// What that meant for the claim.
    pub verdict: Verdict,
    /// How long the origin took, in milliseconds.
    pub origin_ms: u64,
    /// How the attempt ended.
    pub end: End,
}

impl Attempt {
    /// The forward of `deliver` whose claim was won with `won` at `now`: the caller is answered
    /// by the forward time-out at the latest, and the answer awaited until the time-out plus
    /// the late-answer wait (never past the lease).
    pub fn sync(deliver: &Deliver, won: Won, now: Millis) -> Attempt {
        let forward = &deliver.forward;
        let wait_ends_at = now
            .saturating_add(forward.timeout_ms)
            .saturating_add(forward.wait_ms)
            .min(won.lease_expires_at);
        Attempt::new(
            deliver.key.clone(),
            deliver.source.provider(),
            Terms::Sync {
                door: deliver.door,
                policy: deliver.policy,
            },
            won,
            now,
            Some(now.saturating_add(forward.timeout_ms)),
            wait_ends_at,
        )
    }

    /// The queued attempt of `provider`'s event `key` started with `won` at `now` under
    /// `terms`; its answer is awaited for `timeout_ms`.
    pub fn queued(
        provider: Provider,
        key: &str,
        won: Won,
        now: Millis,
        terms: AttemptTerms,
        timeout_ms: u64,
    ) -> Attempt {
        let terms = Terms::Queue {
            policy: terms.policy,
            retry: terms.retry,
            jitter_millionths: (terms.jitter.clamp(0.0, 0.999_999) * 1e6) as u32,
        };
        Attempt::new(
            key.to_owned(),
            Some(provider),
            terms,
            won,
            now,
            None,
            now.saturating_add(timeout_ms),
        )
    }

    fn new(
        key: String,
        provider: Option<Provider>,
        terms: Terms,
        won: Won,
        now: Millis,
        answer_by: Option<Millis>,
        wait_ends_at: Millis,
    ) -> Attempt {
        let caller = match terms {
            Terms::Sync { .. } => Caller::Waiting,
            Terms::Queue { .. } => Caller::None,
        };
        Attempt {
            key,
            provider,
            terms,
            won,
            started: now,
            now,
            answer_by,
            wait_ends_at,
            caller,
            outcome: OriginOutcome::TimedOut,
            verdict: Verdict::Pending,
            not_before: None,
            phase: Phase::Head,
            commands: VecDeque::new(),
        }
    }

    /// The key this attempt forwards.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The webhook sender of the event it forwards (none for an Idempotency-Key request).
    pub fn provider(&self) -> Option<Provider> {
        self.provider
    }

    /// The claim this attempt holds.
    pub fn won(&self) -> &Won {
        &self.won
    }

    /// The door it came through (`Webhook` for a queued attempt).
    pub fn door(&self) -> Door {
        match self.terms {
            Terms::Sync { door, .. } => door,
            Terms::Queue { .. } => Door::Webhook,
        }
    }

    /// Until when the origin's answer is awaited: the forward time-out plus the late-answer
    /// wait (never past the lease) for a delivery, the queue's time-out for a queued attempt.
    pub fn wait_ends_at(&self) -> Millis {
        self.wait_ends_at
    }

    /// True once nothing more will happen.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished && self.commands.is_empty()
    }

    /// True while the caller is still waiting for its first answer.
    pub fn caller_waits(&self) -> bool {
        self.caller == Caller::Waiting
    }

    /// The next command to carry out, if any.
    pub fn poll(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    /// What to wait for next.
    pub fn wants(&self) -> Wants {
        match &self.phase {
            Phase::Head => Wants::Head,
            Phase::Body(_) => Wants::Chunk,
            Phase::Settling {
                retry_at: Some(_), ..
            } => Wants::Time,
            Phase::Settling { .. } | Phase::Finished => Wants::Nothing,
        }
    }

    /// When [`Event::Timeout`] is due, if anything waits for a time.
    pub fn poll_timeout(&self) -> Option<Millis> {
        match &self.phase {
            Phase::Head => Some(match (self.caller, self.answer_by) {
                (Caller::Waiting, Some(by)) => by.min(self.wait_ends_at),
                _ => self.wait_ends_at,
            }),
            Phase::Body(_) => Some(self.wait_ends_at),
            Phase::Settling { retry_at, .. } => *retry_at,
            Phase::Finished => None,
        }
    }

    /// Copies the bytes of the chunk the last [`Command::Keep`] was about into the kept body.
    pub fn keep(&mut self, bytes: &[u8]) {
        if let Phase::Body(body) = &mut self.phase {
            body.kept.extend_from_slice(bytes);
        }
    }

    /// Runs `op` over `store` at `now` for this attempt's claim (fenced: only the claim this
    /// attempt won changes), and returns what it did and the alarm the write needs.
    pub fn settle_with<S: ClaimStore>(
        &self,
        op: &SettleOp,
        store: &mut S,
        now: Millis,
    ) -> (Result<Settled, StoreError>, WakeBy) {
        match (op, &self.terms) {
            (SettleOp::Claim(how), Terms::Sync { policy, .. }) => {
                match super::settle(store, &self.key, &self.won.fence, *policy, how.clone(), now) {
                    Ok((step, wake)) => (Ok(Settled::Claim(step)), wake),
                    Err(error) => (Err(error), None),
                }
            }
            (
                SettleOp::Queue {
                    verdict,
                    not_before,
                },
                Terms::Queue {
                    policy,
                    retry,
                    jitter_millionths,
                },
            ) => {
                let jitter = f64::from(*jitter_millionths) / 1e6;
                let terms = AttemptTerms {
                    policy: *policy,
                    retry: *retry,
                    jitter,
                };
                let (end, wake) = settle_attempt(
                    store,
                    &self.key,
                    &self.won.fence,
                    now,
                    *verdict,
                    *not_before,
                    terms,
                );
                (end.map(Settled::Queue), wake)
            }
            (SettleOp::Hold { until, why }, Terms::Queue { policy, .. }) => {
                let held = (*until, *why);
                let (fence, takeover) = (&self.won.fence, self.won.takeover);
                let (end, wake) =
                    settle_held(store, &self.key, fence, now, held, takeover, *policy);
                (end.map(Settled::Queue), wake)
            }
            _ => (
                Err(StoreError::Fatal(
                    "a settle of another kind of attempt".into(),
                )),
                None,
            ),
        }
    }

    /// Takes `event`, which happened at `now`.
    pub fn handle(&mut self, event: Event, now: Millis) {
        self.now = self.now.max(now);
        match event {
            Event::Head(head) => self.on_head(head, now),
            Event::NoHead(outcome) => self.on_no_head(outcome),
            Event::Chunk { len } => self.on_chunk(len),
            Event::BodyEnded => self.on_body_end(false),
            Event::BodyBroke => self.on_body_end(true),
            Event::CallerGone => self.on_caller_gone(),
            Event::Settled(result) => self.on_settled(result, now),
            Event::Timeout => self.on_timeout(now),
            Event::Held { until, why } => self.on_held(until, why),
        }
    }

    /// A queued attempt held back by its origin's gate: nothing was sent, so it is put back in
    /// the queue; any other attempt takes it as nothing sent.
    fn on_held(&mut self, until: Millis, why: HoldReason) {
        if self.phase != Phase::Head {
            return;
        }
        match self.terms {
            Terms::Queue { .. } => {
                self.outcome = OriginOutcome::NotSent;
                self.settle(SettleOp::Hold { until, why }, After::Answer);
            }
            Terms::Sync { .. } => self.on_no_head(OriginOutcome::NotSent),
        }
    }

    fn on_head(&mut self, head: Head, now: Millis) {
        if self.phase != Phase::Head {
            return;
        }
        self.outcome = OriginOutcome::Answered {
            status: head.status,
        };
        self.not_before = retry_after_at(head.status, &head.headers, now);
        let door = self.door();
        self.verdict = Verdict::of(&self.outcome, |status| door.succeeded(status));
        match (self.terms.clone(), self.verdict) {
            (
                Terms::Sync {
                    door: Door::Api { max_cached_body },
                    ..
                },
                Verdict::Succeeded,
            ) => {
                let streamed = self.caller == Caller::Waiting;
                if streamed {
                    let report = self.report(SettleStep::Waiting, Some(head.clone()), now);
                    self.reply_streaming(report);
                }
                self.phase = Phase::Body(Body {
                    head,
                    cap: max_cached_body,
                    kept: Vec::new(),
                    too_large: false,
                    streamed,
                    early_step: SettleStep::Waiting,
                });
            }
            (
                Terms::Sync {
                    door: Door::Api { .. },
                    ..
                },
                verdict,
            ) => {
                // Not a final answer: settled at once; its body only passes through.
                let after = match self.caller {
                    Caller::Waiting => After::Stream(head),
                    _ => {
                        self.commands.push_back(Command::Abort);
                        After::Report(LateWord::LateAnswer)
                    }
                };
                self.settle(SettleOp::Claim(Settle::for_verdict(verdict, None)), after);
            }
            _ => {
                self.commands.push_back(Command::DiscardBody);
                self.settle_on_verdict();
            }
        }
    }

    fn on_no_head(&mut self, outcome: OriginOutcome) {
        if self.phase != Phase::Head {
            return;
        }
        let door = self.door();
        self.verdict = Verdict::of(&outcome, |status| door.succeeded(status));
        self.outcome = outcome;
        self.settle_on_verdict();
    }

    /// Settles on the verdict just reached (an answer's status, or its absence).
    fn settle_on_verdict(&mut self) {
        let op = match self.terms {
            Terms::Sync { .. } => SettleOp::Claim(Settle::for_verdict(self.verdict, None)),
            Terms::Queue { .. } => SettleOp::Queue {
                verdict: self.verdict,
                not_before: self.not_before,
            },
        };
        let after = match self.caller {
            Caller::Waiting | Caller::None => After::Answer,
            _ => After::Report(LateWord::LateAnswer),
        };
        self.settle(op, after);
    }

    fn on_chunk(&mut self, len: u64) {
        let Phase::Body(body) = &mut self.phase else {
            return;
        };
        if !body.too_large {
            if body.kept.len() as u64 + len > body.cap {
                body.too_large = true;
                body.kept = Vec::new();
            } else {
                self.commands.push_back(Command::Keep);
            }
        }
        if self.caller == Caller::Streaming {
            self.commands.push_back(Command::Pass);
        } else if body.too_large {
            // Nobody takes it and it cannot be kept: stop reading.
            self.commands.push_back(Command::Abort);
            self.conclude_body(BodyKept::Lost);
        }
    }

    fn on_caller_gone(&mut self) {
        if self.caller == Caller::Waiting || self.caller == Caller::Streaming {
            self.caller = Caller::Answered;
        }
        if let Phase::Body(body) = &self.phase {
            if body.too_large {
                self.commands.push_back(Command::Abort);
                self.conclude_body(BodyKept::Lost);
            }
        }
    }

    fn on_body_end(&mut self, broke: bool) {
        let Phase::Body(body) = &mut self.phase else {
            return;
        };
        let kept = match (broke, body.too_large) {
            (true, _) => BodyKept::Lost,
            (false, true) => BodyKept::TooLarge,
            (false, false) => BodyKept::Whole(std::mem::take(&mut body.kept)),
        };
        if self.caller == Caller::Streaming {
            self.commands.push_back(if broke {
                Command::AbortStream
            } else {
                Command::CloseStream
            });
            self.caller = Caller::Answered;
        }
        self.conclude_body(kept);
    }

    /// The answer's body is over (`kept` says what was kept): a final answer is settled with
    /// it; a non-final one (settled before its body) only reports, if its caller never saw it.
    fn conclude_body(&mut self, kept: BodyKept) {
        let Phase::Body(body) = std::mem::replace(&mut self.phase, Phase::Finished) else {
            return;
        };
        if self.caller == Caller::Streaming {
            self.commands.push_back(Command::AbortStream);
            self.caller = Caller::Answered;
        }
        if self.verdict != Verdict::Succeeded {
            if !body.streamed {
                self.push_report(End::Late(LateWord::LateAnswer, body.early_step));
            }
            return;
        }
        let kept = match kept {
            BodyKept::TooLarge if !body.streamed => BodyKept::Lost,
            other => other,
        };
        let cached = to_cache(body.head.status, &body.head.headers, kept);
        let word = if body.streamed {
            LateWord::AnswerSettled
        } else {
            LateWord::LateAnswer
        };
        self.settle(
            SettleOp::Claim(Settle::Finalize(Some(cached))),
            After::Report(word),
        );
    }

    fn on_timeout(&mut self, now: Millis) {
        match &mut self.phase {
            Phase::Head => {
                if self.caller == Caller::Waiting && self.answer_by.is_some_and(|by| by <= now) {
                    // The sender is told to come back; the answer is still awaited.
                    let report = self.report(SettleStep::Waiting, None, now);
                    self.reply(report);
                }
                if now >= self.wait_ends_at {
                    self.commands.push_back(Command::Abort);
                    self.outcome = OriginOutcome::TimedOut;
                    self.verdict = Verdict::Pending;
                    match self.terms {
                        Terms::Sync { .. } => {
                            // Nothing more will be learned: the claim is held until its lease ends.
                            self.verdict = Verdict::Pending.final_after_wait();
                            self.settle(
                                SettleOp::Claim(Settle::for_verdict(self.verdict, None)),
                                After::Report(LateWord::AnswerLost),
                            )
                        }
                        Terms::Queue { .. } => self.settle_on_verdict(),
                    }
                }
            }
            Phase::Body(_) if now >= self.wait_ends_at => {
                self.commands.push_back(Command::Abort);
                self.conclude_body(BodyKept::Lost);
            }
            Phase::Settling {
                op,
                retry_at: Some(at),
                ..
            } if *at <= now => {
                let op = op.clone();
                if let Phase::Settling { retry_at, .. } = &mut self.phase {
                    *retry_at = None;
                }
                self.commands.push_back(Command::Settle(op));
            }
            _ => {}
        }
    }

    fn settle(&mut self, op: SettleOp, after: After) {
        self.commands.push_back(Command::Settle(op.clone()));
        self.phase = Phase::Settling {
            op,
            after,
            retry_at: None,
            pause_ms: SETTLE_PAUSE_MS,
        };
    }

    fn on_settled(&mut self, result: Result<Settled, StoreError>, now: Millis) {
        let Phase::Settling {
            pause_ms, after, ..
        } = &mut self.phase
        else {
            return;
        };
        let settled = match result {
            Ok(settled) => settled,
            Err(StoreError::Retryable(_))
                if now.saturating_add(*pause_ms) < self.won.lease_expires_at =>
            {
                let at = now.saturating_add(*pause_ms);
                *pause_ms = pause_ms.saturating_mul(2).min(SETTLE_PAUSE_MAX_MS);
                if let Phase::Settling { retry_at, .. } = &mut self.phase {
                    *retry_at = Some(at);
                }
                return;
            }
            Err(error) => match self.terms {
                Terms::Sync { .. } => Settled::Claim(SettleStep::SettleFailed),
                Terms::Queue { .. } => {
                    self.phase = Phase::Finished;
                    let end = End::QueueSettleFailed(error.to_string());
                    self.push_report(end);
                    return;
                }
            },
        };
        let after = after.clone();
        self.phase = Phase::Finished;
        match (settled, after) {
            (Settled::Queue(end), _) => self.push_report(End::Queue(end)),
            (Settled::Claim(step), After::Answer) if self.caller == Caller::Waiting => {
                let report = self.report(step, None, now);
                self.reply(report);
            }
            (Settled::Claim(step), After::Answer) => {
                self.push_report(End::Late(LateWord::LateAnswer, step))
            }
            (Settled::Claim(step), After::Report(word)) => self.push_report(End::Late(word, step)),
            (Settled::Claim(step), After::Stream(head)) => self.stream(head, step, now),
        }
    }

    /// A non-final answer, settled with `step`: its head and body passed on to the caller, if
    /// it still waits; else reported, its body unread.
    fn stream(&mut self, head: Head, step: SettleStep, now: Millis) {
        if self.caller == Caller::Waiting {
            let report = self.report(step, Some(head.clone()), now);
            self.reply_streaming(report);
        }
        if self.caller != Caller::Streaming {
            self.commands.push_back(Command::Abort);
            self.push_report(End::Late(LateWord::LateAnswer, step));
            return;
        }
        self.phase = Phase::Body(Body {
            head,
            cap: 0,
            kept: Vec::new(),
            too_large: false,
            streamed: true,
            early_step: step,
        });
    }

    fn report(&self, step: SettleStep, head: Option<Head>, now: Millis) -> ForwardReport {
        ForwardReport {
            attempt: self.won.attempt,
            takeover: self.won.takeover,
            outcome: self.outcome.clone(),
            verdict: self.verdict,
            settle: step,
            origin_ms: now.saturating_sub(self.started),
            not_before: self.not_before,
            head,
        }
    }

    fn reply(&mut self, reply: ForwardReport) {
        self.caller = Caller::Answered;
        self.commands.push_back(Command::Reply(reply));
    }

    fn reply_streaming(&mut self, reply: ForwardReport) {
        self.caller = Caller::Streaming;
        self.commands.push_back(Command::ReplyStreaming(reply));
    }

    /// Queues the report of how the attempt ended.
    fn push_report(&mut self, end: End) {
        let origin_ms = self.now.saturating_sub(self.started);
        self.commands.push_back(Command::Report(AttemptSummary {
            key: self.key.clone(),
            door: self.door(),
            provider: self.provider,
            attempt: self.won.attempt,
            takeover: self.won.takeover,
            outcome: self.outcome.clone(),
            verdict: self.verdict,
            origin_ms,
            end,
        }));
    }
}

#[cfg(test)]
mod tests;
