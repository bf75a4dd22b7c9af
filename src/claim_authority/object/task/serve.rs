//! A request to the object: a fresh nonce, one rule from [`crate::claim_authority`] over the store,
//! the alarm its write needs, then the answer.

use std::collections::VecDeque;

use super::{Call, Done, Ended, EnsureAlarm};
use crate::claim::{ClaimStore, Millis, Nonce, StoreError};
use crate::claim_authority::alarm::{self, KnownAlarm};
use crate::claim_authority::{self, AuthorityReply, AuthorityRequest, Begin, Deliver};

/// Where a request stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Stage<T> {
    /// A nonce is asked for.
    Nonce,
    /// The rule runs under this salt.
    Rule(Nonce),
    /// The rule gave `T`; the alarm its write needs is seen to.
    Alarm(T, EnsureAlarm),
    /// Answered.
    Over,
}

/// A request served: the rule for `request` (any but a delivery) over the store, the alarm its
/// write needs, and the reply. Strict about the alarm: an event stored (or redelivered) for
/// the alarm to deliver is not acknowledged unless the alarm is set (see
/// [`alarm::reply_after`]); the sender's retry sets it.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeTask {
    request: AuthorityRequest,
    body: Vec<u8>,
    stage: Stage<AuthorityReply>,
    calls: VecDeque<Call>,
}

impl ServeTask {
    /// Serving `request`, with the raw `body` beside it.
    pub fn new(request: AuthorityRequest, body: Vec<u8>) -> ServeTask {
        ServeTask {
            request,
            body,
            stage: Stage::Nonce,
            calls: VecDeque::from([Call::Nonce]),
        }
    }

    /// The record it is about.
    pub fn key(&self) -> &str {
        self.request.key()
    }

    pub(super) fn poll(&mut self, known: &mut KnownAlarm, now: Millis) -> Option<Call> {
        if let Some(call) = self.calls.pop_front() {
            return Some(call);
        }
        let Stage::Alarm(reply, ensure) = &mut self.stage else {
            return None;
        };
        if let Some(call) = ensure.poll(known, now) {
            return Some(call);
        }
        let step = ensure.step()?;
        let reply = alarm::reply_after(reply.clone(), step);
        self.stage = Stage::Over;
        Some(Call::Reply(reply))
    }

    pub(super) fn store<S: ClaimStore>(&mut self, store: &mut S, now: Millis) {
        let Stage::Rule(salt) = self.stage else {
            return;
        };
        let (reply, wake) = claim_authority::handle(store, &self.request, &self.body, now, salt);
        self.stage = Stage::Alarm(reply, EnsureAlarm::after(wake));
    }

    pub(super) fn handle(&mut self, done: Done, known: &mut KnownAlarm) {
        match (done, &mut self.stage) {
            (Done::Nonce(Ok(salt)), Stage::Nonce) => {
                self.stage = Stage::Rule(salt);
                self.calls.push_back(Call::Store {
                    op: self.request.op(),
                });
            }
            (Done::Nonce(Err(error)) | Done::Unopened(error), _) => self.fail(error),
            (Done::AlarmSet(result), Stage::Alarm(_, ensure)) => {
                ensure.set(result, known, &mut self.calls)
            }
            _ => {}
        }
    }

    fn fail(&mut self, error: StoreError) {
        self.stage = Stage::Over;
        self.calls
            .push_back(Call::Reply(AuthorityReply::from(error)));
    }

    pub(super) fn ended(&self) -> Ended {
        match (&self.stage, self.calls.is_empty()) {
            (Stage::Over, true) => Ended::Answered,
            _ => Ended::Running,
        }
    }
}

/// A delivery begun (see [`claim_authority::begin`]): claimed under a fresh salt, the alarm its
/// write needs seen to; then forwarded under the claim won ([`Call::Begun`]), or answered at
/// once when it is not forwarded.
#[derive(Clone, Debug, PartialEq)]
pub struct BeginTask {
    deliver: Deliver,
    stage: Stage<(Begin, Millis)>,
    calls: VecDeque<Call>,
}

impl BeginTask {
    /// Beginning `deliver`.
    pub fn new(deliver: Deliver) -> BeginTask {
        BeginTask {
            deliver,
            stage: Stage::Nonce,
            calls: VecDeque::from([Call::Nonce]),
        }
    }

    /// The delivery begun.
    pub fn deliver(&self) -> &Deliver {
        &self.deliver
    }

    pub(super) fn poll(&mut self, known: &mut KnownAlarm, now: Millis) -> Option<Call> {
        if let Some(call) = self.calls.pop_front() {
            return Some(call);
        }
        let Stage::Alarm(begun, ensure) = &mut self.stage else {
            return None;
        };
        if let Some(call) = ensure.poll(known, now) {
            return Some(call);
        }
        ensure.step()?;
        let call = match begun.clone() {
            (Begin::Forward(won), at) => Call::Begun { won, at },
            (Begin::Reply(reply), _) => Call::Reply(reply),
        };
        self.stage = Stage::Over;
        Some(call)
    }

    pub(super) fn store<S: ClaimStore>(&mut self, store: &mut S, now: Millis) {
        let Stage::Rule(salt) = self.stage else {
            return;
        };
        let (begin, wake) = claim_authority::begin(store, &self.deliver, now, salt);
        self.stage = Stage::Alarm((begin, now), EnsureAlarm::after(wake));
    }

    pub(super) fn handle(&mut self, done: Done, known: &mut KnownAlarm) {
        match (done, &mut self.stage) {
            (Done::Nonce(Ok(salt)), Stage::Nonce) => {
                self.stage = Stage::Rule(salt);
                self.calls.push_back(Call::Store { op: "deliver" });
            }
            (Done::Nonce(Err(error)) | Done::Unopened(error), _) => {
                self.stage = Stage::Over;
                self.calls
                    .push_back(Call::Reply(AuthorityReply::from(error)));
            }
            (Done::AlarmSet(result), Stage::Alarm(_, ensure)) => {
                ensure.set(result, known, &mut self.calls)
            }
            _ => {}
        }
    }

    pub(super) fn ended(&self) -> Ended {
        match (&self.stage, self.calls.is_empty()) {
            (Stage::Over, true) => Ended::Answered,
            _ => Ended::Running,
        }
    }
}
