//! The claim authority object's sequences over an object in memory: the real rules and
//! records, with only the runtime's calls stood in for.

use super::memory::{run, MemoryObject, Script};
use super::Executor;
use crate::claim::{ClaimState, EnqueueOutcome, Millis, Nonce, Source};
use crate::claim_authority::attempt::Event;
use crate::claim_authority::{
    Attempt, AuthorityReply, AuthorityRequest, Deliver, Delivery, Forward, Head,
};
use crate::config::Config;
use crate::failure_index::{IndexReply, IndexRequest};
use crate::log_line::{Level, Outcome, Route};
use crate::providers::Provider;

const T0: Millis = 1_700_000_000_000;

fn config() -> Config {
    config_with(&[])
}

fn config_with(extra: &[(&str, &str)]) -> Config {
    Config::load(|key| match key {
        "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
        "ORIGIN_URL" => Some("https://origin.example/stripe".into()),
        "GITHUB_WEBHOOK_SECRET" => Some("a-github-secret".into()),
        "GITHUB_ORIGIN_URL" => Some("https://origin.example/github".into()),
        other => extra
            .iter()
            .find(|(name, _)| *name == other)
            .map(|(_, value)| (*value).to_owned()),
    })
    .unwrap()
}

fn executor() -> Executor<MemoryObject> {
    Executor::new(MemoryObject::new(T0, config()))
}

/// A GitHub delivery to store for the alarm to deliver.
fn enqueue(id: &str) -> AuthorityRequest {
    AuthorityRequest::Enqueue {
        key: Provider::Github.key(id),
        provider: Provider::Github,
        policy: config().webhook.claims,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-github-delivery".into(), id.into()),
            ("x-github-event".into(), "push".into()),
            ("x-hub-signature-256".into(), "sha256=00".into()),
        ],
        known_only: false,
    }
}

fn state(executor: &Executor<MemoryObject>, key: &str) -> Option<ClaimState> {
    let inspect = AuthorityRequest::Inspect { key: key.into() };
    match run(executor.serve(&inspect, b"")) {
        AuthorityReply::Record { record } => record.map(|record| record.state()),
        other => panic!("an inspection: {other:?}"),
    }
}

/// A stored event is acknowledged only once the alarm that delivers it is set. The object
/// knows its alarm: a repeat while it is still ahead does not set it again; one whose alarm
/// time has passed (the alarm may have given up) sets it again.
#[test]
fn an_event_is_acknowledged_once_its_alarm_is_set() {
    let executor = executor();
    let stored = run(executor.serve(&enqueue("d1"), b"{}"));
    assert_eq!(stored, AuthorityReply::Enqueue(EnqueueOutcome::Queued));
    assert_eq!(executor.io().alarm.get(), Some(T0), "due at once");
    run(executor.alarm()).unwrap();
    let set = executor.io().alarms_set.get();
    let lease_ms = config()
        .queue
        .attempt_policy(config().webhook.claims)
        .lease_ms;
    assert_eq!(
        executor.io().alarm.get(),
        Some(T0 + lease_ms),
        "the attempt's lease end"
    );
    let again = run(executor.serve(&enqueue("d1"), b"{}"));
    assert!(matches!(
        again,
        AuthorityReply::Enqueue(EnqueueOutcome::Duplicate { .. })
    ));
    assert_eq!(
        executor.io().alarms_set.get(),
        set,
        "the known alarm serves the repeat"
    );
    executor.io().now.set(T0 + lease_ms + 1);
    run(executor.serve(&enqueue("d1"), b"{}"));
    assert_eq!(
        executor.io().alarms_set.get(),
        set + 1,
        "an alarm time passed is set again"
    );
}

/// When `setAlarm` fails, the write stands but the sender is told to retry (503), and the
/// log says why; the retry sets the alarm.
#[test]
fn an_event_whose_alarm_failed_is_not_acknowledged_and_its_retry_sets_it() {
    let executor = executor();
    executor.io().failing_alarms.set(1);
    let stored = run(executor.serve(&enqueue("d1"), b"{}"));
    assert!(
        matches!(
            stored,
            AuthorityReply::StoreFailed {
                retryable: true,
                ..
            }
        ),
        "{stored:?}"
    );
    assert_eq!(executor.io().lines_of(Outcome::AlarmNotSet).len(), 1);
    assert_eq!(state(&executor, "github:d1"), Some(ClaimState::Queued));
    let retried = run(executor.serve(&enqueue("d1"), b"{}"));
    assert!(matches!(
        retried,
        AuthorityReply::Enqueue(EnqueueOutcome::Duplicate { .. })
    ));
    assert_eq!(
        executor.io().alarm.get(),
        Some(T0),
        "the retry set the alarm"
    );
}

/// The alarm delivers a due event: it claims it under a lease (the alarm moved to the lease's
/// end, so an attempt that dies is taken over) and forwards the stored body, signed anew, to
/// the sender's origin.
#[test]
fn the_alarm_forwards_a_due_event_under_a_lease() {
    let executor = executor();
    run(executor.serve(&enqueue("d1"), b"{\"a\":1}"));
    run(executor.alarm()).unwrap();
    let forwards = executor.io().forwards.borrow().clone();
    let [(key, Some(request), alarm_then)] = forwards.as_slice() else {
        panic!("one forward: {forwards:?}");
    };
    let lease_ms = config()
        .queue
        .attempt_policy(config().webhook.claims)
        .lease_ms;
    assert_eq!(
        *alarm_then,
        Some(T0 + lease_ms),
        "the alarm is at the lease's end first"
    );
    assert_eq!(
        (key.as_str(), request.url.as_str()),
        ("github:d1", "https://origin.example/github")
    );
    assert_eq!(request.body, b"{\"a\":1}");
    let header = |name: &str| {
        let found = request.headers.iter().find(|(known, _)| known == name);
        found.map(|(_, value)| value.as_str())
    };
    assert_eq!(
        header("x-hub-signature-256"),
        Some("sha256=00"),
        "GitHub's own, kept"
    );
    assert_eq!(header("x-webhook-dedup-attempt"), Some("1"));
    assert_eq!(state(&executor, "github:d1"), Some(ClaimState::Processing));
    assert_eq!(executor.io().alarm.get(), Some(T0 + lease_ms));
}

/// While the configuration is invalid, a due event waits, stored, and nothing is forwarded;
/// the alarm comes back within a minute instead of spinning.
#[test]
fn a_due_event_waits_while_the_configuration_is_invalid() {
    let mut object = MemoryObject::new(T0, config());
    let keeper_ok = Executor::new(std::mem::take(&mut object));
    run(keeper_ok.serve(&enqueue("d1"), b"{}"));
    let mut object = MemoryObject::new(T0, config());
    object.table = keeper_ok.io().table.clone();
    object.config = None;
    let executor = Executor::new(object);
    run(executor.alarm()).unwrap();
    assert!(executor.io().forwards.borrow().is_empty());
    let alarm = executor.io().alarm.get().unwrap();
    assert!(alarm > T0 && alarm <= T0 + 60_000, "{alarm}");
    assert_eq!(state(&executor, "github:d1"), Some(ClaimState::Queued));
}

/// Past its retention a record is deleted with the object's whole storage, and the log says
/// which expired.
#[test]
fn past_retention_the_alarm_deletes_the_whole_storage() {
    let executor = executor();
    let claim = stripe_claim();
    run(executor.serve(&claim, b""));
    let inspect = AuthorityRequest::Inspect {
        key: "evt_1".into(),
    };
    let AuthorityReply::Record {
        record: Some(record),
    } = run(executor.serve(&inspect, b""))
    else {
        panic!("the claim is stored");
    };
    executor.io().now.set(record.expires_at - 1);
    run(executor.alarm()).unwrap();
    assert_eq!(
        state(&executor, "evt_1"),
        Some(ClaimState::Processing),
        "not yet"
    );
    executor.io().now.set(record.expires_at);
    run(executor.alarm()).unwrap();
    assert!(executor.io().table.0.borrow().map.is_empty());
    assert_eq!(executor.io().alarm.get(), None);
    let expired = executor.io().lines_of(Outcome::ExpiredAbandonedClaim);
    assert_eq!(expired.len(), 1, "a claim never settled is a warning");
    let line = &expired[0];
    assert_eq!(
        (line.level, line.key.as_deref()),
        (Level::Warn, Some("evt_1"))
    );
}

/// With `LOG_STORAGE_USAGE=true` each store step of an alarm run logs what it read and wrote:
/// the sweep as the operation `alarm` (one per run: the benchmark counts an event's alarm runs
/// by it), the re-arm as `rearm`, its `setAlarm` counted as a row written. The first run
/// re-arms (one row: the alarm); the last deletes the record (one row) and then the storage.
#[test]
fn each_alarm_run_logs_its_rows_when_usage_is_logged() {
    let executor = Executor::new(MemoryObject::new(
        T0,
        config_with(&[("LOG_STORAGE_USAGE", "true")]),
    ));
    run(executor.serve(&stripe_claim(), b""));
    let expires_at = expiry(&executor, "evt_1");
    let written = |executor: &Executor<MemoryObject>| -> u64 {
        let mut lines = executor.io().lines_of(Outcome::Operation("alarm"));
        lines.extend(executor.io().lines_of(Outcome::Operation("rearm")));
        lines
            .iter()
            .map(|line| {
                assert_eq!(
                    (line.route, line.key.as_deref()),
                    (Route::Authority, Some("evt_1"))
                );
                line.rows_written.unwrap()
            })
            .sum()
    };
    executor.io().now.set(expires_at - 1);
    run(executor.alarm()).unwrap();
    assert_eq!(written(&executor), 1, "the re-arm");
    executor.io().now.set(expires_at);
    run(executor.alarm()).unwrap();
    assert_eq!(written(&executor), 2, "and the delete");
    assert_eq!(
        executor.io().lines_of(Outcome::Operation("alarm")).len(),
        2,
        "one per run"
    );
    assert!(executor.io().table.0.borrow().map.is_empty());
}

/// When the alarm cannot be re-armed, it is set again for within a minute and the log says
/// why; when even that fails, the alarm fails for the runtime's own retries.
#[test]
fn a_failed_rearm_is_retried_within_a_minute_or_left_to_the_runtime() {
    let executor = executor();
    run(executor.serve(&enqueue("d1"), b"{}"));
    executor.io().failing_alarms.set(2); // the lease's alarm (logged) and the re-arm
    run(executor.alarm()).unwrap();
    assert_eq!(executor.io().lines_of(Outcome::AlarmFailed).len(), 1);
    let retry = executor.io().alarm.get().unwrap();
    assert!(retry > T0 && retry <= T0 + 60_000, "{retry}");
    let executor = self::executor();
    run(executor.serve(&enqueue("d1"), b"{}"));
    executor.io().failing_alarms.set(10);
    assert!(run(executor.alarm()).is_err());
    let failed = executor.io().lines_of(Outcome::AlarmFailed);
    let detail = failed.last().and_then(|line| line.detail.as_deref());
    assert!(
        detail.is_some_and(|detail| detail.ends_with("the runtime retries")),
        "{failed:?}"
    );
}

/// Runs the alarm at each time it asks for, until `key` is dead-lettered.
fn until_dead(executor: &Executor<MemoryObject>, key: &str) {
    for _ in 0..100 {
        run(executor.alarm()).unwrap();
        if state(executor, key) == Some(ClaimState::Dead) {
            return;
        }
        let next = executor
            .io()
            .alarm
            .get()
            .expect("an alarm while work is left");
        executor.io().now.set(next.max(executor.io().now.get() + 1));
    }
    panic!("{key} was never dead-lettered");
}

/// An event whose every attempt dies (its leases run out, nothing settled) is dead-lettered
/// by the alarm, and the change goes to the failure index: one the index did not take is
/// logged and sent again after a back-off; one it took is not sent again.
#[test]
fn a_dead_letter_is_reported_to_the_index_until_it_is_taken() {
    let executor = Executor::new(MemoryObject::new(
        T0,
        config_with(&[("RETRY_MAX_AGE_HOURS", "1")]),
    ));
    run(executor.serve(&enqueue("d1"), b"{}"));
    until_dead(&executor, "github:d1");
    let reports = || {
        let index = executor.io().index.borrow();
        let reports = index
            .iter()
            .filter(|r| matches!(r, IndexRequest::Report(_)));
        reports.count()
    };
    assert_eq!(reports(), 1, "the alarm that dead-lettered it reported it");
    assert_eq!(
        executor.io().lines_of(Outcome::IndexReportFailed).len(),
        1,
        "not taken"
    );
    run(executor.alarm()).unwrap();
    assert_eq!(reports(), 1, "not again before its back-off");
    let applied = crate::failure_index::Applied {
        fresh: Vec::new(),
        notifications: Vec::new(),
    };
    executor
        .io()
        .index_replies
        .borrow_mut()
        .push_back(IndexReply::Applied(applied));
    executor.io().now.set(executor.io().alarm.get().unwrap());
    run(executor.alarm()).unwrap();
    assert_eq!(reports(), 2, "sent again after the back-off, and taken");
    executor.io().now.set(executor.io().now.get() + 3_600_000);
    run(executor.alarm()).unwrap();
    assert_eq!(reports(), 2, "a change the index took is not sent again");
}

fn head(status: u16) -> Event {
    Event::Head(Head {
        status,
        headers: Vec::new(),
    })
}

/// A queued attempt the origin answers 2xx: the body is discarded, the record is done, and
/// the attempt's end is logged and counted.
#[test]
fn a_queued_attempt_answered_2xx_is_done() {
    let executor = executor();
    run(executor.serve(&enqueue("d1"), b"{}"));
    executor.io().origin.borrow_mut().push_back(vec![head(204)]);
    run(executor.alarm()).unwrap();
    assert_eq!(state(&executor, "github:d1"), Some(ClaimState::Done));
    assert_eq!(*executor.io().forward_calls.borrow(), ["discard_body"]);
    let ended = executor
        .io()
        .lines
        .borrow()
        .iter()
        .filter(|(_, counted)| *counted)
        .count();
    assert_eq!(ended, 1, "one line and metric for the attempt");
}

/// A queued attempt the origin answers 503 is released for a retry after a back-off, and the
/// alarm is set for it.
#[test]
fn a_queued_attempt_answered_503_waits_for_its_retry() {
    let executor = executor();
    run(executor.serve(&enqueue("d1"), b"{}"));
    executor.io().origin.borrow_mut().push_back(vec![head(503)]);
    run(executor.alarm()).unwrap();
    assert_eq!(state(&executor, "github:d1"), Some(ClaimState::Queued));
    let retry_at = executor.io().alarm.get().unwrap();
    let base_ms = config().queue.retry.base_ms;
    assert!(retry_at > T0 && retry_at <= T0 + base_ms, "{retry_at}");
}

/// A delivery forwarded while its sender waits: when the origin's head arrives its body is
/// discarded and the sender answered, and the claim is finalized, so a repeat is declined.
#[test]
fn a_sync_delivery_is_answered_then_finalized() {
    let executor = executor();
    let deliver = stripe_delivery();
    let (won, now) = run(executor.begin(&deliver)).unwrap();
    let calls = std::cell::RefCell::new(Vec::new());
    let mut script = Script {
        events: vec![head(200)].into(),
        calls: &calls,
        clock: &executor.io().now,
    };
    run(executor.drive(Attempt::sync(&deliver, won, now), Ok(()), &mut script));
    assert_eq!(*calls.borrow(), ["discard_body", "reply"]);
    assert_eq!(state(&executor, "evt_1"), Some(ClaimState::Done));
    let again = run(executor.begin(&deliver));
    assert!(
        matches!(again, Err(AuthorityReply::Delivery(Delivery::Declined(_)))),
        "a repeat is declined: {again:?}"
    );
}

/// A Stripe event's claim, as the test routes make it.
fn stripe_claim() -> AuthorityRequest {
    AuthorityRequest::Claim {
        key: "evt_1".into(),
        policy: config().webhook.claims,
        nonce: Nonce([1; 16]),
        source: Source::Webhook(Provider::Stripe),
    }
}

/// When `key`'s record expires.
fn expiry(executor: &Executor<MemoryObject>, key: &str) -> Millis {
    let inspect = AuthorityRequest::Inspect { key: key.into() };
    match run(executor.serve(&inspect, b"")) {
        AuthorityReply::Record {
            record: Some(record),
        } => record.expires_at,
        other => panic!("a record: {other:?}"),
    }
}

/// A Stripe delivery forwarded while its sender waits.
fn stripe_delivery() -> Deliver {
    let forward = Forward {
        url: "https://origin.example/stripe".into(),
        method: "POST".into(),
        headers: Vec::new(),
        timeout_ms: 10_000,
        wait_ms: 5_000,
    };
    let source = Source::Webhook(Provider::Stripe);
    let policy = config().webhook.claims;
    Deliver::webhook(
        "evt_1".into(),
        policy,
        Nonce([1; 16]),
        source,
        forward,
        false,
    )
}

/// A sync delivery's deadlines count from when it was claimed: `begin` says the time it read
/// before its write, and the claim's lease runs from then.
#[test]
fn a_delivery_begins_at_the_time_it_was_claimed() {
    let mut object = MemoryObject::new(T0, config());
    object.tick_on_open = 5;
    let executor = Executor::new(object);
    let (won, now) = run(executor.begin(&stripe_delivery())).unwrap();
    assert_eq!(now, T0, "the time before the write");
    assert_eq!(won.lease_expires_at, T0 + config().webhook.claims.lease_ms);
    assert!(
        executor.io().now.get() > T0,
        "the clock moved during the write"
    );
}

/// An alarm whose store does not open is run again within a minute, and the log says why;
/// one that cannot delete the storage once its last record expired fails, for the runtime's
/// own retries.
#[test]
fn an_alarm_that_cannot_open_or_delete_runs_again() {
    let executor = executor();
    run(executor.serve(&enqueue("d1"), b"{}"));
    executor.io().failing_opens.set(1);
    run(executor.alarm()).unwrap();
    assert_eq!(executor.io().lines_of(Outcome::AlarmFailed).len(), 1);
    let retry = executor.io().alarm.get().unwrap();
    assert!(retry > T0 && retry <= T0 + 60_000, "{retry}");
    assert!(executor.io().forwards.borrow().is_empty(), "nothing ran");
    let mut object = MemoryObject::new(T0, config());
    object.failing_delete_all = true;
    let executor = Executor::new(object);
    run(executor.serve(&stripe_claim(), b""));
    executor.io().now.set(expiry(&executor, "evt_1"));
    assert!(run(executor.alarm()).is_err());
    let lines = executor.io().lines.borrow();
    let about: Vec<_> = lines
        .iter()
        .filter(|(line, _)| line.key.as_deref() == Some("evt_1"))
        .collect();
    assert_eq!(about.len(), 1, "only the expiry is logged: {about:?}");
}

/// With notifications on, an attempt that fails at its origin is told to the failure index
/// (which sends `origin.failing` when failures spread across events); one that succeeds is
/// not.
#[test]
fn an_origin_failure_is_told_to_the_index() {
    let secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let alerts = [
        ("ALERT_URL", "https://alerts.example/in"),
        ("ALERT_SECRET", secret),
    ];
    for (status, told) in [(503, true), (200, false)] {
        let executor = Executor::new(MemoryObject::new(T0, config_with(&alerts)));
        run(executor.serve(&enqueue("d1"), b"{}"));
        executor
            .io()
            .origin
            .borrow_mut()
            .push_back(vec![head(status)]);
        run(executor.alarm()).unwrap();
        let index = executor.io().index.borrow();
        let origin_failed = index.iter().any(|request| {
            matches!(request, IndexRequest::OriginFailed { key, .. } if key == "github:d1")
        });
        assert_eq!(origin_failed, told, "{status}: {index:?}");
    }
}

/// A sync delivery whose sender was told of a time-out counts against its origin even when
/// the late answer then succeeds.
#[test]
fn a_time_out_the_sender_was_told_of_counts_against_the_origin() {
    let secret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    let alerts = [
        ("ALERT_URL", "https://alerts.example/in"),
        ("ALERT_SECRET", secret),
    ];
    let executor = Executor::new(MemoryObject::new(T0, config_with(&alerts)));
    let deliver = stripe_delivery();
    let (won, now) = run(executor.begin(&deliver)).unwrap();
    let calls = std::cell::RefCell::new(Vec::new());
    let mut script = Script {
        events: vec![Event::Timeout, head(200)].into(),
        calls: &calls,
        clock: &executor.io().now,
    };
    run(executor.drive(Attempt::sync(&deliver, won, now), Ok(()), &mut script));
    assert_eq!(
        calls.borrow().first(),
        Some(&"reply"),
        "told at the time-out"
    );
    assert_eq!(
        state(&executor, "evt_1"),
        Some(ClaimState::Done),
        "the late answer counts"
    );
    let index = executor.io().index.borrow();
    let told = index
        .iter()
        .filter(|request| matches!(request, IndexRequest::OriginFailed { .. }));
    assert_eq!(told.count(), 1, "{index:?}");
}

/// An event stored before every sender was switched to sync and the lease shortened below the
/// queue's time-out is still attempted under a lease that outlasts its wait: the alarm is at
/// the end of that lease, not of the shorter one.
#[test]
fn a_queued_attempt_after_a_shorter_lease_keeps_a_lease_past_its_time_out() {
    let config = config_with(&[
        ("DELIVERY_MODE", "sync"),
        ("LEASE_SECONDS", "4"),
        ("FORWARD_TIMEOUT_MS", "1000"),
        ("LATE_ANSWER_WAIT_SECONDS", "2"),
        ("QUEUE_FORWARD_TIMEOUT_MS", "5000"),
    ]);
    assert_eq!(
        config.webhook.claims.lease_ms, 4_000,
        "the lease is shorter"
    );
    let executor = Executor::new(MemoryObject::new(T0, config));
    run(executor.serve(&enqueue("d1"), b"{}"));
    run(executor.alarm()).unwrap();
    let forwards = executor.io().forwards.borrow().clone();
    let [(_, Some(_), alarm_then)] = forwards.as_slice() else {
        panic!("one forward: {forwards:?}");
    };
    assert_eq!(
        *alarm_then,
        Some(T0 + 5_000 + 1_000),
        "time-out plus settle margin"
    );
}

/// Any request that reaches the object re-asserts the alarm of a record that still has to act:
/// after a stored event's `setAlarm` failed, an operator's inspect sets it.
#[test]
fn an_inspect_sets_the_alarm_a_stored_event_lost() {
    let executor = executor();
    executor.io().failing_alarms.set(1);
    run(executor.serve(&enqueue("d1"), b"{}"));
    assert_eq!(executor.io().alarm.get(), None, "the alarm failed");
    let inspect = AuthorityRequest::Inspect {
        key: "github:d1".into(),
    };
    run(executor.serve(&inspect, b""));
    assert_eq!(executor.io().alarm.get(), Some(T0), "the inspect set it");
}
