//! Host tests of the attempt driver: every rule the object adapter used to decide, over the
//! real claim rules and an in-memory store.

use super::*;

const SALT: Nonce = Nonce([77; 16]);
use crate::claim::Source;
use crate::claim::{enqueue, ClaimState, MemoryClaimStore, Nonce, RetryPolicy, StoreError};
use crate::claim_authority::{begin, queue, Begin, Forward};
use crate::origin::{NetworkError, Reason};
use crate::providers::Provider;

const POLICY: ClaimPolicy = ClaimPolicy {
    lease_ms: 10_000,
    retention_ms: 100_000,
};
const RETRY: RetryPolicy = RetryPolicy {
    base_ms: 1_000,
    max_delay_ms: 4_000,
    max_attempts: 3,
    max_age_ms: 1_000_000,
    retry_client_errors: false,
};
const KEY: &str = "evt_1";

fn deliver(door: Door) -> Deliver {
    Deliver {
        key: KEY.into(),
        policy: POLICY,
        nonce: Nonce([1; 16]),
        source: match door {
            Door::Api { .. } => Source::Api {
                fingerprint: "fp".to_owned(),
            },
            Door::Webhook => Source::Webhook(Provider::Stripe),
        },
        forward: Forward {
            url: "http://origin.test/".into(),
            method: "POST".into(),
            headers: vec![],
            timeout_ms: 1_000,
            wait_ms: 3_000,
        },
        door,
        known_only: false,
    }
}

/// A won sync delivery through `door` at time 0, and its store.
fn sync(door: Door) -> (Attempt, MemoryClaimStore) {
    let mut store = MemoryClaimStore::new();
    let deliver = deliver(door);
    let Begin::Forward(won) = begin(&mut store, &deliver, 0, SALT).0 else {
        panic!("claimed")
    };
    (Attempt::sync(&deliver, won, 0), store)
}

/// A started queued attempt at time 0, and its store.
fn queued() -> (Attempt, MemoryClaimStore) {
    let mut store = MemoryClaimStore::new();
    enqueue(
        &mut store,
        KEY,
        Provider::Stripe,
        0,
        POLICY,
        Nonce([9; 16]),
        b"payload",
    )
    .unwrap();
    let (started, _) = queue::start(&mut store, KEY, 0, POLICY, RETRY, Nonce([2; 16]));
    let Ok(queue::Due::Attempt(won, _, _)) = started else {
        panic!("started")
    };
    (
        Attempt::queued(
            Provider::Stripe,
            KEY,
            won,
            0,
            AttemptTerms {
                policy: POLICY,
                retry: RETRY,
                jitter: 0.5,
            },
            2_000,
        ),
        store,
    )
}

fn head(status: u16) -> Head {
    Head {
        status,
        headers: vec![("content-type".into(), "text/plain".into())],
    }
}

/// Carries out the attempt's commands the way the object adapter does: settles run over
/// `store` at `now` and are handed back; everything else is returned, in order.
fn run(attempt: &mut Attempt, store: &mut MemoryClaimStore, now: Millis) -> Vec<Command> {
    let mut done = Vec::new();
    while let Some(command) = attempt.poll() {
        if let Command::Settle(op) = &command {
            let (result, _) = attempt.settle_with(op, store, now);
            done.push(command);
            attempt.handle(Event::Settled(result), now);
        } else {
            done.push(command);
        }
    }
    done
}

fn step(
    attempt: &mut Attempt,
    store: &mut MemoryClaimStore,
    event: Event,
    now: Millis,
) -> Vec<Command> {
    attempt.handle(event, now);
    run(attempt, store, now)
}

fn reply_of(commands: &[Command]) -> Option<&ForwardReport> {
    commands.iter().find_map(|command| match command {
        Command::Reply(report) | Command::ReplyStreaming(report) => Some(report),
        _ => None,
    })
}

fn summary_of(commands: &[Command]) -> Option<&AttemptSummary> {
    commands.iter().find_map(|command| match command {
        Command::Report(summary) => Some(summary),
        _ => None,
    })
}

fn state(store: &mut MemoryClaimStore) -> ClaimState {
    store.load(KEY).unwrap().unwrap().state()
}

#[test]
fn a_2xx_in_time_finalizes_then_answers_the_caller() {
    let (mut attempt, mut store) = sync(Door::Webhook);
    assert_eq!(attempt.wants(), Wants::Head);
    assert_eq!(
        attempt.poll_timeout(),
        Some(1_000),
        "answer the caller by then"
    );
    let done = step(&mut attempt, &mut store, Event::Head(head(200)), 300);
    assert_eq!(done[0], Command::DiscardBody);
    assert!(matches!(
        done[1],
        Command::Settle(SettleOp::Claim(Settle::Finalize(None)))
    ));
    let report = reply_of(&done).unwrap();
    assert_eq!(
        (report.settle, report.verdict, report.origin_ms),
        (SettleStep::Finalized, Verdict::Succeeded, 300)
    );
    assert!(
        summary_of(&done).is_none(),
        "the caller's answer is the report"
    );
    assert!(attempt.is_finished());
    assert_eq!(state(&mut store), ClaimState::Done);
}

#[test]
fn a_definite_failure_releases_and_an_unknown_one_holds() {
    let (mut attempt, mut store) = sync(Door::Webhook);
    let done = step(&mut attempt, &mut store, Event::Head(head(500)), 10);
    assert_eq!(reply_of(&done).unwrap().settle, SettleStep::Released);
    assert_eq!(state(&mut store), ClaimState::Released);

    let (mut attempt, mut store) = sync(Door::Webhook);
    let lost = OriginOutcome::Failed {
        error: NetworkError::ConnectionLost,
    };
    let done = step(&mut attempt, &mut store, Event::NoHead(lost), 10);
    let report = reply_of(&done).unwrap();
    assert_eq!(
        (report.settle, report.verdict),
        (SettleStep::Held, Verdict::Unknown(Reason::ResetAfterSend))
    );
    assert_eq!(state(&mut store), ClaimState::Processing, "held");
}

#[test]
fn at_the_time_out_the_caller_is_told_to_come_back_and_the_late_answer_settles() {
    let (mut attempt, mut store) = sync(Door::Webhook);
    let done = step(&mut attempt, &mut store, Event::Timeout, 1_000);
    let report = reply_of(&done).unwrap();
    assert_eq!(
        (&report.outcome, report.verdict, report.settle),
        (
            &OriginOutcome::TimedOut,
            Verdict::Pending,
            SettleStep::Waiting
        )
    );
    assert_eq!(attempt.wants(), Wants::Head, "still waiting for the answer");
    assert_eq!(attempt.poll_timeout(), Some(4_000), "until the wait ends");
    let done = step(&mut attempt, &mut store, Event::Head(head(204)), 2_500);
    assert!(reply_of(&done).is_none());
    let summary = summary_of(&done).unwrap();
    assert_eq!(
        summary.end,
        End::Late(LateWord::LateAnswer, SettleStep::Finalized)
    );
    assert_eq!(summary.origin_ms, 2_500);
    assert_eq!(state(&mut store), ClaimState::Done);
}

#[test]
fn when_the_wait_ends_the_forward_is_aborted_and_the_claim_held() {
    let (mut attempt, mut store) = sync(Door::Webhook);
    step(&mut attempt, &mut store, Event::Timeout, 1_000);
    let done = step(&mut attempt, &mut store, Event::Timeout, 4_000);
    assert_eq!(done[0], Command::Abort);
    let summary = summary_of(&done).unwrap();
    assert_eq!(
        summary.end,
        End::Late(LateWord::AnswerLost, SettleStep::Held)
    );
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(record.state(), ClaimState::Processing);
    assert_eq!(record.retry_at(4_001), 10_000, "repeats wait for the lease");
    // An answer after that is ignored: the attempt is over.
    assert!(step(&mut attempt, &mut store, Event::Head(head(200)), 4_100).is_empty());
}

#[test]
fn a_time_out_equal_to_the_wait_answers_the_caller_and_holds_at_once() {
    let mut store = MemoryClaimStore::new();
    let mut deliver = deliver(Door::Webhook);
    deliver.forward.wait_ms = 0;
    let Begin::Forward(won) = begin(&mut store, &deliver, 0, SALT).0 else {
        panic!()
    };
    let mut attempt = Attempt::sync(&deliver, won, 0);
    let done = step(&mut attempt, &mut store, Event::Timeout, 1_000);
    assert_eq!(reply_of(&done).unwrap().settle, SettleStep::Waiting);
    assert_eq!(
        summary_of(&done).unwrap().end,
        End::Late(LateWord::AnswerLost, SettleStep::Held)
    );
}

#[test]
fn a_busy_store_is_tried_again_with_growing_pauses_while_the_lease_lasts() {
    let (mut attempt, _) = sync(Door::Webhook);
    attempt.handle(Event::Head(head(200)), 100);
    assert_eq!(attempt.poll(), Some(Command::DiscardBody));
    let Some(Command::Settle(op)) = attempt.poll() else {
        panic!()
    };
    let busy = || Err(StoreError::Retryable("busy".into()));
    attempt.handle(Event::Settled(busy()), 100);
    assert_eq!(
        (attempt.wants(), attempt.poll_timeout()),
        (Wants::Time, Some(200))
    );
    attempt.handle(Event::Timeout, 200);
    assert_eq!(attempt.poll(), Some(Command::Settle(op.clone())));
    attempt.handle(Event::Settled(busy()), 200);
    assert_eq!(attempt.poll_timeout(), Some(400), "the pause doubles");
    // Past the lease, it gives up: the caller hears the settle failed.
    attempt.handle(Event::Timeout, 400);
    attempt.poll();
    attempt.handle(Event::Settled(busy()), 9_950);
    let Some(Command::Reply(report)) = attempt.poll() else {
        panic!()
    };
    assert_eq!(report.settle, SettleStep::SettleFailed);
    // A fatal failure is not tried again.
    let (mut attempt, mut store) = sync(Door::Webhook);
    store.fail_next(StoreError::Fatal("disk".into()));
    let done = step(&mut attempt, &mut store, Event::Head(head(200)), 100);
    assert_eq!(reply_of(&done).unwrap().settle, SettleStep::SettleFailed);
    assert!(attempt.is_finished());
}

const API: Door = Door::Api { max_cached_body: 8 };

#[test]
fn a_final_api_answer_streams_to_the_caller_and_is_kept_once_its_body_ends() {
    let (mut attempt, mut store) = sync(API);
    let done = step(&mut attempt, &mut store, Event::Head(head(201)), 50);
    let report = reply_of(&done).unwrap();
    assert_eq!(report.settle, SettleStep::Waiting);
    assert_eq!(report.head.as_ref().unwrap().status, 201);
    assert!(matches!(done[0], Command::ReplyStreaming(_)));
    assert_eq!(attempt.wants(), Wants::Chunk);
    assert_eq!(
        step(&mut attempt, &mut store, Event::Chunk { len: 5 }, 60),
        vec![Command::Keep, Command::Pass]
    );
    attempt.keep(b"hello");
    let done = step(&mut attempt, &mut store, Event::BodyEnded, 70);
    assert_eq!(done[0], Command::CloseStream);
    let Command::Settle(SettleOp::Claim(Settle::Finalize(Some(cached)))) = &done[1] else {
        panic!("{done:?}")
    };
    assert_eq!(
        (cached.status, cached.body.as_slice()),
        (201, &b"hello"[..])
    );
    assert_eq!(
        summary_of(&done).unwrap().end,
        End::Late(LateWord::AnswerSettled, SettleStep::Finalized)
    );
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(record.response().unwrap().body, b"hello");
}

#[test]
fn a_final_body_over_the_cap_is_passed_on_but_omitted_from_the_cache() {
    let (mut attempt, mut store) = sync(API);
    step(&mut attempt, &mut store, Event::Head(head(200)), 50);
    assert_eq!(
        step(&mut attempt, &mut store, Event::Chunk { len: 9 }, 60),
        vec![Command::Pass],
        "too large to keep, still passed on"
    );
    let done = step(&mut attempt, &mut store, Event::BodyEnded, 70);
    let Command::Settle(SettleOp::Claim(Settle::Finalize(Some(cached)))) = &done[1] else {
        panic!("{done:?}")
    };
    assert!(cached.body_omitted && !cached.body_lost);
    // A caller that goes away from a body too large to keep: nobody gets it, it is lost.
    let (mut attempt, mut store) = sync(API);
    step(&mut attempt, &mut store, Event::Head(head(200)), 50);
    step(&mut attempt, &mut store, Event::Chunk { len: 9 }, 60);
    let done = step(&mut attempt, &mut store, Event::CallerGone, 61);
    assert_eq!(done[0], Command::Abort);
    let Command::Settle(SettleOp::Claim(Settle::Finalize(Some(cached)))) = &done[1] else {
        panic!("{done:?}")
    };
    assert!(cached.body_lost);
}

#[test]
fn a_body_that_breaks_or_outlasts_the_wait_is_lost_and_the_stream_broken() {
    let (mut attempt, mut store) = sync(API);
    step(&mut attempt, &mut store, Event::Head(head(200)), 50);
    let done = step(&mut attempt, &mut store, Event::BodyBroke, 60);
    assert_eq!(done[0], Command::AbortStream);
    assert!(
        matches!(&done[1], Command::Settle(SettleOp::Claim(Settle::Finalize(Some(c)))) if c.body_lost)
    );

    let (mut attempt, mut store) = sync(API);
    step(&mut attempt, &mut store, Event::Head(head(200)), 50);
    assert_eq!(attempt.poll_timeout(), Some(4_000));
    let done = step(&mut attempt, &mut store, Event::Timeout, 4_000);
    assert_eq!(&done[..2], &[Command::Abort, Command::AbortStream]);
    assert!(
        matches!(&done[2], Command::Settle(SettleOp::Claim(Settle::Finalize(Some(c)))) if c.body_lost)
    );
}

#[test]
fn a_non_final_api_answer_settles_first_then_passes_through_unkept() {
    let (mut attempt, mut store) = sync(API);
    let done = step(&mut attempt, &mut store, Event::Head(head(503)), 50);
    assert!(matches!(
        done[0],
        Command::Settle(SettleOp::Claim(Settle::Release(_)))
    ));
    let report = reply_of(&done).unwrap();
    assert_eq!(report.settle, SettleStep::Released);
    assert_eq!(state(&mut store), ClaimState::Released);
    assert_eq!(
        step(&mut attempt, &mut store, Event::Chunk { len: 100 }, 60),
        vec![Command::Pass]
    );
    let done = step(&mut attempt, &mut store, Event::BodyEnded, 70);
    assert_eq!(done, vec![Command::CloseStream], "no settle, no report");
    assert!(attempt.is_finished());
}

#[test]
fn a_late_api_answer_is_kept_without_a_caller() {
    let (mut attempt, mut store) = sync(API);
    let done = step(&mut attempt, &mut store, Event::Timeout, 1_000);
    assert!(matches!(done[0], Command::Reply(_)));
    let done = step(&mut attempt, &mut store, Event::Head(head(200)), 2_000);
    assert!(done.is_empty(), "nobody to stream to");
    assert_eq!(
        step(&mut attempt, &mut store, Event::Chunk { len: 3 }, 2_010),
        vec![Command::Keep]
    );
    attempt.keep(b"abc");
    let done = step(&mut attempt, &mut store, Event::BodyEnded, 2_020);
    assert_eq!(
        summary_of(&done).unwrap().end,
        End::Late(LateWord::LateAnswer, SettleStep::Finalized)
    );
    // Too large with nobody to take it: read no further, kept as lost.
    let (mut attempt, mut store) = sync(API);
    step(&mut attempt, &mut store, Event::Timeout, 1_000);
    step(&mut attempt, &mut store, Event::Head(head(200)), 2_000);
    let done = step(&mut attempt, &mut store, Event::Chunk { len: 9 }, 2_010);
    assert_eq!(done[0], Command::Abort);
    assert!(
        matches!(&done[1], Command::Settle(SettleOp::Claim(Settle::Finalize(Some(c)))) if c.body_lost)
    );
    // A late non-final answer: settled, its body not read.
    let (mut attempt, mut store) = sync(API);
    step(&mut attempt, &mut store, Event::Timeout, 1_000);
    let done = step(&mut attempt, &mut store, Event::Head(head(500)), 2_000);
    assert_eq!(done[0], Command::Abort);
    assert_eq!(
        summary_of(&done).unwrap().end,
        End::Late(LateWord::LateAnswer, SettleStep::Released)
    );
}

#[test]
fn a_queued_attempt_settles_on_its_verdict_and_reports() {
    let (mut attempt, mut store) = queued();
    assert_eq!(attempt.poll_timeout(), Some(2_000), "the queue's time-out");
    let done = step(&mut attempt, &mut store, Event::Head(head(200)), 100);
    assert_eq!(done[0], Command::DiscardBody);
    assert_eq!(
        summary_of(&done).unwrap().end,
        End::Queue(queue::AttemptEnd::Delivered)
    );
    assert_eq!(state(&mut store), ClaimState::Done);

    let (mut attempt, mut store) = queued();
    let done = step(&mut attempt, &mut store, Event::Head(head(500)), 100);
    let summary = summary_of(&done).unwrap();
    assert!(matches!(
        summary.end,
        End::Queue(queue::AttemptEnd::RetryAt(_))
    ));
    assert_eq!(summary.verdict, Verdict::Failed(Reason::Answered(500)));
    assert_eq!(state(&mut store), ClaimState::Queued);
}

#[test]
fn a_queued_attempt_told_to_come_back_later_is_not_retried_sooner() {
    let (mut attempt, mut store) = queued();
    let mut throttled = head(429);
    throttled.headers.push(("Retry-After".into(), "3".into()));
    let done = step(&mut attempt, &mut store, Event::Head(throttled), 100);
    assert_eq!(
        done[1],
        Command::Settle(SettleOp::Queue {
            verdict: Verdict::Failed(Reason::Answered(429)),
            not_before: Some(3_100)
        })
    );
    let End::Queue(queue::AttemptEnd::RetryAt(at)) = summary_of(&done).unwrap().end else {
        panic!("{done:?}")
    };
    assert_eq!(at, 3_100, "the origin's 3 s, not the back-off");
}

#[test]
fn a_queued_attempt_without_an_answer_in_time_is_a_lost_answer() {
    let (mut attempt, mut store) = queued();
    let done = step(&mut attempt, &mut store, Event::Timeout, 2_000);
    assert_eq!(done[0], Command::Abort);
    assert_eq!(
        done[1],
        Command::Settle(SettleOp::Queue {
            verdict: Verdict::Pending,
            not_before: None
        })
    );
    let End::Queue(queue::AttemptEnd::RetryAt(at)) = summary_of(&done).unwrap().end else {
        panic!("{done:?}")
    };
    assert_eq!(at, 10_000, "not before the lost attempt's lease ends");
}

#[test]
fn a_queued_attempt_whose_settle_keeps_failing_reports_it() {
    let (mut attempt, mut store) = queued();
    store.fail_next(StoreError::Fatal("disk".into()));
    let done = step(&mut attempt, &mut store, Event::Head(head(200)), 100);
    assert!(matches!(
        summary_of(&done).unwrap().end,
        End::QueueSettleFailed(_)
    ));
}
