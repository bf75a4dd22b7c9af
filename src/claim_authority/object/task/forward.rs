//! A forward carried out: the attempt driver's commands (see [`crate::claim_authority::attempt`])
//! turned into the object's calls, in the order the driver hands them out, and what each led
//! to handed back. The one forward loop of the product: deliveries forwarded while their
//! sender waits, queued attempts and Idempotency-Key requests all run here.
//!
//! A settle runs over the store, then the alarm its write needs is seen to, before the driver
//! hears how it went. The failures the failure index must hear of (see
//! [`alert::origin_failure`]) are sent only once the attempt is over, never while it waits for
//! the origin or settles: a slow index cannot delay reading a late answer.

use std::collections::VecDeque;

use super::{log, Call, Done, Ended, EnsureAlarm};
use crate::claim::{ClaimStore, Millis, StoreError};
use crate::claim_authority::alarm::KnownAlarm;
use crate::claim_authority::attempt::{Command, End, Event, SettleOp, Settled};
use crate::claim_authority::queue::AttemptEnd;
use crate::claim_authority::{Attempt, ForwardReport};
use crate::config::Config;
use crate::failure_index::{alert, IndexReply, IndexRequest};
use crate::log_line::LogLine;
use crate::origin::Verdict;
use crate::providers::Provider;
use crate::reverts::{reverted, Fix};

/// One of a forward's own I/O calls, each the carrying out of a [`Command`] of the driver.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ForwardIo {
    /// Answer the caller, if one waits, with this report. Nothing to hand back.
    Reply(ForwardReport),
    /// Answer the caller with this report and a stream for the origin's body; when no stream
    /// can be made, hand back [`Done::Event`] with [`Event::CallerGone`].
    Stream(ForwardReport),
    /// Abort the request and cancel any body still being read. Nothing to hand back.
    Abort,
    /// Discard the answer's body unread. Nothing to hand back.
    DiscardBody,
    /// Hand back [`Done::Chunk`] with the bytes of the chunk read last.
    KeepChunk,
    /// Pass the chunk read last on to the caller by `deadline`; when it cannot, hand back
    /// [`Done::Event`] with [`Event::CallerGone`].
    Pass {
        /// When the caller must have taken it.
        deadline: Option<Millis>,
    },
    /// End the caller's stream: closed when the body ended, else broken. Nothing to hand back.
    EndStream {
        /// True when the body ended whole.
        closed: bool,
    },
}

/// Where the forward stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Stage {
    /// The driver's commands are carried out.
    Driving,
    /// Waiting for what the driver wants (a [`Call::Wait`] is out).
    Waiting,
    /// The settle asked for runs over the store.
    Settling(SettleOp),
    /// The settle ran; the alarm its write needs is seen to before the driver hears of it.
    Settled(Result<Settled, StoreError>, EnsureAlarm),
    /// The attempt is over: the failure index hears of the failures it must know of.
    Telling,
    /// Over.
    Over,
}

/// A forward carried out. See the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ForwardTask {
    attempt: Attempt,
    stage: Stage,
    /// A settle went through: the attempt's outcome is recorded.
    settled: bool,
    /// For the failure index, once the attempt is over.
    notices: VecDeque<IndexRequest>,
    calls: VecDeque<Call>,
}

impl ForwardTask {
    /// Carrying out `attempt`, whose request was sent.
    pub fn new(attempt: Attempt) -> ForwardTask {
        ForwardTask {
            attempt,
            stage: Stage::Driving,
            settled: false,
            notices: VecDeque::new(),
            calls: VecDeque::new(),
        }
    }

    /// The attempt's driver.
    pub fn attempt(&self) -> &Attempt {
        &self.attempt
    }

    /// The key it forwards.
    pub fn key(&self) -> &str {
        self.attempt.key()
    }

    /// True once a settle went through: the attempt's outcome is recorded.
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// True while it waits for the origin (a [`Call::Wait`] is out).
    pub fn waits(&self) -> bool {
        self.stage == Stage::Waiting
    }

    pub(super) fn poll(
        &mut self,
        known: &mut KnownAlarm,
        config: Option<&Config>,
        now: Millis,
    ) -> Option<Call> {
        loop {
            if let Some(call) = self.calls.pop_front() {
                return Some(call);
            }
            match &mut self.stage {
                Stage::Settled(result, ensure) => {
                    if let Some(call) = ensure.poll(known, now) {
                        return Some(call);
                    }
                    ensure.step()?;
                    let result = result.clone();
                    self.stage = Stage::Driving;
                    self.attempt.handle(Event::Settled(result), now);
                }
                Stage::Driving => return self.drive(config, now),
                Stage::Waiting | Stage::Settling(_) | Stage::Telling | Stage::Over => return None,
            }
        }
    }

    /// The call for the driver's next command, or the wait for what it wants, or, once it is
    /// over, the next notice for the failure index; `None` when nothing is left.
    fn drive(&mut self, config: Option<&Config>, now: Millis) -> Option<Call> {
        let io = match self.attempt.poll() {
            Some(Command::Settle(op)) => {
                self.stage = Stage::Settling(op);
                return Some(Call::Store { op: "settle" });
            }
            Some(Command::Report(summary)) => {
                // A held attempt sent nothing: it says nothing of the origin.
                if !matches!(summary.end, End::Queue(AttemptEnd::Held { .. })) {
                    self.notice(config, &summary.key, summary.provider, summary.verdict);
                }
                return Some(log(LogLine::ended(&summary, now), true));
            }
            Some(Command::Reply(report)) => {
                // A failure the caller was told of in time counts against the origin too.
                let (key, provider) = (self.attempt.key().to_owned(), self.attempt.provider());
                self.notice(config, &key, provider, report.verdict);
                if reverted(Fix::IndexToldAfterTheForward) {
                    // The old order: the index is told at once, the forward waiting for it.
                    if let Some(notice) = self.notices.pop_back() {
                        self.stage = Stage::Telling;
                        self.calls.push_back(Call::AskIndex(notice));
                    }
                }
                ForwardIo::Reply(report)
            }
            Some(Command::ReplyStreaming(report)) => ForwardIo::Stream(report),
            Some(Command::Abort) => ForwardIo::Abort,
            Some(Command::DiscardBody) => ForwardIo::DiscardBody,
            Some(Command::Keep) => ForwardIo::KeepChunk,
            Some(Command::Pass) => ForwardIo::Pass {
                deadline: self.attempt.poll_timeout(),
            },
            Some(Command::CloseStream) => ForwardIo::EndStream { closed: true },
            Some(Command::AbortStream) => ForwardIo::EndStream { closed: false },
            None if self.attempt.is_finished() => return self.tell_next(),
            None => {
                self.stage = Stage::Waiting;
                return Some(Call::Wait {
                    wants: self.attempt.wants(),
                    door: self.attempt.door(),
                    deadline: self.attempt.poll_timeout().unwrap_or(now),
                });
            }
        };
        Some(Call::Forward(io))
    }

    /// Notes that the attempt at `provider`'s origin for `key` ended with `verdict`, when the
    /// failure index must hear of it.
    fn notice(
        &mut self,
        config: Option<&Config>,
        key: &str,
        provider: Option<Provider>,
        verdict: Verdict,
    ) {
        let notice =
            config.and_then(|config| alert::origin_failure(config, key, provider, verdict));
        self.notices.extend(notice);
    }

    /// The next notice for the failure index; `None` at the end.
    fn tell_next(&mut self) -> Option<Call> {
        match self.notices.pop_front() {
            Some(notice) => {
                self.stage = Stage::Telling;
                Some(Call::AskIndex(notice))
            }
            None => {
                self.stage = Stage::Over;
                None
            }
        }
    }

    pub(super) fn store<S: ClaimStore>(&mut self, store: &mut S, now: Millis) {
        let Stage::Settling(op) = &self.stage else {
            return;
        };
        let (result, wake) = self.attempt.settle_with(op, store, now);
        self.settled |= result.is_ok();
        self.stage = Stage::Settled(result, EnsureAlarm::after(wake));
    }

    pub(super) fn handle(&mut self, done: Done, known: &mut KnownAlarm, now: Millis) {
        match (done, &mut self.stage) {
            (Done::Unopened(error), Stage::Settling(_)) => {
                let kept = EnsureAlarm::after(None);
                self.stage = Stage::Settled(Err(error), kept);
            }
            (Done::AlarmSet(result), Stage::Settled(_, ensure)) => {
                ensure.set(result, known, &mut self.calls)
            }
            (Done::Event(event), _) => {
                if self.stage == Stage::Waiting {
                    self.stage = Stage::Driving;
                }
                self.attempt.handle(event, now);
            }
            (Done::Chunk(bytes), _) => self.attempt.keep(&bytes),
            (Done::Index(reply), Stage::Telling) => {
                if let IndexReply::StoreFailed { detail } = reply {
                    let line = LogLine::report_failed(self.attempt.key(), &detail);
                    self.calls.push_back(log(line, false));
                }
                self.stage = Stage::Driving;
            }
            _ => {}
        }
    }

    pub(super) fn ended(&self) -> Ended {
        match (&self.stage, self.calls.is_empty()) {
            (Stage::Over, true) => Ended::Forwarded,
            _ => Ended::Running,
        }
    }
}
