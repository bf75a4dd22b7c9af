//! The run's sequence over the in-memory runtime: what is asked of the sender's API and of
//! each claim, and what is counted.

use super::run;
use crate::claim::{
    ClaimOutcome, ClaimRecord, ClaimStage, ClaimState, EnqueueOutcome, Fence, Finished, Lease,
    Source, Stage,
};
use crate::claim_authority::{AuthorityReply, AuthorityRequest, Delivery, ForwardReport};
use crate::config::Config;
use crate::origin::{OriginOutcome, Verdict};
use crate::providers::stripe::signature;
use crate::providers::Provider;
use crate::reconcile::call::ReconcileCall;
use crate::reconcile::tally::{ErrorCode, RunOutcome, SenderAnswer};
use crate::reconcile::SenderLog;
use crate::runtime::memory::{run as run_now, Memory, RuntimeCall};
use crate::secret::Secret;

const NOW: u64 = 1_800_000_000_000;
const HOUR: u64 = 3_600_000;

fn config(mode: &str) -> Config {
    let mode = mode.to_owned();
    Config::load(move |key| match key {
        "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
        "ORIGIN_URL" => Some("https://origin.example/stripe".into()),
        "GITHUB_WEBHOOK_SECRET" => Some("g".into()),
        "STRIPE_API_KEY" => Some("rk_test_1".into()),
        "STRIPE_API_BASE_URL" => Some("http://127.0.0.1:9/".into()),
        "GITHUB_API_TOKEN" => Some("ghp_1".into()),
        "GITHUB_HOOK" => Some("repos/acme/shop/hooks/42".into()),
        "DELIVERY_MODE" => Some(mode.clone()),
        _ => None,
    })
    .unwrap()
}

fn call(log: SenderLog, dry_run: bool) -> ReconcileCall {
    ReconcileCall {
        log,
        since: NOW - 2 * HOUR,
        until: NOW,
        dry_run,
        after: None,
    }
}

fn api(status: u16, headers: &[(&str, &str)], body: &str) -> SenderAnswer {
    SenderAnswer {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.as_bytes().to_vec(),
    }
}

fn events(ids: &[&str], has_more: bool) -> SenderAnswer {
    let data: Vec<String> = ids
        .iter()
        .map(|id| {
            format!(r#"{{"id": "{id}", "object": "event", "type": "invoice.paid", "created": 1}}"#)
        })
        .collect();
    let body = format!(
        r#"{{"object": "list", "data": [{}], "has_more": {has_more}}}"#,
        data.join(",")
    );
    api(200, &[], &body)
}

fn runtime(answers: Vec<SenderAnswer>, replies: Vec<AuthorityReply>) -> Memory {
    let memory = Memory::new(NOW, &[], b"").replying(replies);
    *memory.api_replies.borrow_mut() = answers.into();
    memory
}

fn forwarded(status: u16) -> AuthorityReply {
    let outcome = OriginOutcome::Answered { status };
    AuthorityReply::Delivery(Delivery::Forwarded(ForwardReport {
        attempt: 1,
        takeover: false,
        verdict: Verdict::of(&outcome, |status| (200..300).contains(&status)),
        outcome,
        settle: crate::claim::SettleStep::Finalized,
        origin_ms: 1,
        not_before: None,
        head: None,
    }))
}

fn done_record(key: &str) -> AuthorityReply {
    let record = ClaimRecord {
        key: key.into(),
        source: Source::Webhook(Provider::Github),
        attempts: 1,
        first_seen_at: 0,
        expires_at: u64::MAX,
        lease: Lease {
            fence: Fence::new(1, [7; 16]),
            request: None,
            claimed_at: 0,
            until: 0,
            takeover: false,
            wait_ends_at: None,
        },
        last_failure: None,
        stage: Stage::Claim(ClaimStage::Done(Finished {
            finished_at: 0,
            response: None,
        })),
    };
    AuthorityReply::Record {
        record: Some(Box::new(record)),
    }
}

fn ran(
    outcome: RunOutcome,
) -> (
    crate::reconcile::tally::Tally,
    Option<crate::reconcile::cursor::ReconcileCursor>,
) {
    match outcome {
        RunOutcome::Ran { tally, next } => (tally, next),
        other => panic!("not a run: {other:?}"),
    }
}

/// Sync mode: each listed event goes through its claim as a delivery, signed anew with the
/// endpoint's secret and marked as reconciled; done and held ones are counted, not run.
#[test]
fn stripe_events_are_delivered_through_their_claims_and_the_page_continues() {
    let config = config("sync");
    let replies = vec![
        forwarded(200),
        AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateProcessed {
            finished_at: 1,
            response: None,
        })),
        AuthorityReply::Delivery(Delivery::Declined(ClaimOutcome::DuplicateInflight {
            retry_at: 1,
            lease_expires_at: 1,
        })),
        forwarded(500),
    ];
    let runtime = runtime(
        vec![events(&["evt_4", "evt_3", "evt_2", "evt_1"], true)],
        replies,
    );
    let call = call(SenderLog::Stripe, false);
    let (tally, next) = ran(run_now(run(&runtime, &config, &call)));
    assert_eq!(
        (
            tally.listed,
            tally.handed_over,
            tally.already_done,
            tally.in_flight
        ),
        (4, 1, 1, 1)
    );
    assert_eq!(tally.errors[0].code, ErrorCode::OriginFailed);
    assert_eq!(tally.errors[0].id.as_deref(), Some("evt_1"));
    assert_eq!(
        next.and_then(|cursor| cursor.after).as_deref(),
        Some("evt_1")
    );
    let calls = runtime.calls();
    let RuntimeCall::SenderApi("GET", url) = &calls[0] else {
        panic!("the list first: {calls:?}");
    };
    assert!(url.starts_with("http://127.0.0.1:9/v1/events?"), "{url}");
    let RuntimeCall::Deliver(AuthorityRequest::Deliver(sent), body) = &calls[1] else {
        panic!("a delivery: {calls:?}");
    };
    assert_eq!(sent.key, "evt_4");
    let header = |name: &str| {
        let found = sent.forward.headers.iter().find(|(key, _)| key == name);
        found.map(|(_, value)| value.clone())
    };
    assert_eq!(
        header("x-webhook-dedup-source").as_deref(),
        Some("reconcile")
    );
    let signed = header("stripe-signature");
    let secrets = [Secret::new("whsec_a")];
    let verified = signature::verify(signed.as_deref(), body, &secrets, (NOW / 1_000) as i64, 300);
    assert!(verified.is_ok(), "{signed:?}");
    assert!(std::str::from_utf8(body)
        .unwrap()
        .starts_with(r#"{"id": "evt_4""#));
}

/// Queue mode: an unknown event is stored; a dead one is left to the operator; the last page
/// ends the window.
#[test]
fn in_queue_mode_events_are_stored_and_dead_ones_left_alone() {
    let config = config("queue");
    let replies = vec![
        AuthorityReply::Enqueue(EnqueueOutcome::Queued),
        AuthorityReply::Enqueue(EnqueueOutcome::Duplicate {
            state: ClaimState::Dead,
        }),
    ];
    let runtime = runtime(vec![events(&["evt_2", "evt_1"], false)], replies);
    let (tally, next) = ran(run_now(run(
        &runtime,
        &config,
        &call(SenderLog::Stripe, false),
    )));
    assert_eq!((tally.handed_over, tally.dead, next), (1, 1, None));
    assert!(matches!(
        &runtime.calls()[1],
        RuntimeCall::Deliver(AuthorityRequest::Enqueue { .. }, _)
    ));
}

/// A dry run only reads each event's record.
#[test]
fn a_dry_run_reads_records_and_changes_nothing() {
    let config = config("sync");
    let replies = vec![
        AuthorityReply::Record { record: None },
        done_record("evt_1"),
    ];
    let runtime = runtime(vec![events(&["evt_2", "evt_1"], false)], replies);
    let (tally, _) = ran(run_now(run(
        &runtime,
        &config,
        &call(SenderLog::Stripe, true),
    )));
    assert_eq!((tally.handed_over, tally.already_done), (1, 1));
    let changed = runtime
        .calls()
        .iter()
        .any(|call| matches!(call, RuntimeCall::Deliver(..)));
    assert!(!changed);
}

/// The sender's refusals: a refused key ends the call; a rate limit or a failure is reported,
/// and the call comes back to the same place.
#[test]
fn the_sender_s_refusals_and_failures_stop_the_page_where_it_was() {
    let config = config("sync");
    for status in [401, 403] {
        let runtime = runtime(vec![api(status, &[], "{}")], vec![]);
        let outcome = run_now(run(&runtime, &config, &call(SenderLog::Stripe, false)));
        assert_eq!(outcome, RunOutcome::KeyRefused { status });
    }
    let mut continued = call(SenderLog::Stripe, false);
    continued.after = Some("evt_9".into());
    let cases = [
        (
            api(429, &[("retry-after", "7")], "{}"),
            ErrorCode::SenderRateLimited,
        ),
        (
            api(403, &[("x-ratelimit-remaining", "0")], "{}"),
            ErrorCode::SenderRateLimited,
        ),
        (api(500, &[], "oops"), ErrorCode::SenderFailed),
        (api(200, &[], "not json"), ErrorCode::SenderUnreadable),
    ];
    for (answer, code) in cases {
        let runtime = runtime(vec![answer], vec![]);
        let (tally, next) = ran(run_now(run(&runtime, &config, &continued)));
        assert_eq!(tally.errors[0].code, code);
        assert_eq!(
            next.and_then(|cursor| cursor.after).as_deref(),
            Some("evt_9")
        );
        assert_eq!(runtime.calls().len(), 1, "nothing asked of any claim");
    }
    let runtime = runtime(vec![api(429, &[("retry-after", "7")], "{}")], vec![]);
    let (tally, _) = ran(run_now(run(&runtime, &config, &continued)));
    assert_eq!(tally.errors[0].retry_after_seconds, Some(7));
}

/// GitHub: the newest attempt of each delivery decides; a failed one never stored here is
/// redelivered by GitHub, one stored is counted by its record; the window ends at the first
/// delivery older than it.
#[test]
fn failed_github_deliveries_never_stored_are_redelivered_by_github() {
    let config = config("sync");
    let at = |ms: u64| crate::rfc3339::format(ms).unwrap();
    let item = |id: u64, guid: &str, status: &str, ms: u64| {
        format!(
            r#"{{"id": {id}, "guid": "{guid}", "status": "{status}", "status_code": 0, "delivered_at": "{}", "event": "issues", "redelivery": false}}"#,
            at(ms)
        )
    };
    let page = [
        item(9, "aaaa-1", "Invalid HTTP Response: 503", NOW + 60_000),
        item(8, "aaaa-2", "Invalid HTTP Response: 503", NOW - 1_000),
        item(7, "aaaa-3", "Invalid HTTP Response: 500", NOW - 2_000),
        item(6, "aaaa-4", "OK", NOW - 3_000),
        item(5, "aaaa-4", "Invalid HTTP Response: 500", NOW - 4_000),
        item(4, "aaaa-5", "Invalid HTTP Response: 500", NOW - 3 * HOUR),
    ];
    let link = r#"<http://127.0.0.1:9/repos/acme/shop/hooks/42/deliveries?per_page=20&cursor=c2>; rel="next""#;
    let list = api(200, &[("link", link)], &format!("[{}]", page.join(",")));
    let answers = vec![list, api(202, &[], "{}")];
    let replies = vec![
        AuthorityReply::Record { record: None },
        done_record("github:aaaa-3"),
    ];
    let runtime = runtime(answers, replies);
    let (tally, next) = ran(run_now(run(
        &runtime,
        &config,
        &call(SenderLog::Github, false),
    )));
    assert_eq!(
        (
            tally.listed,
            tally.redelivery_requested,
            tally.already_done,
            tally.skipped
        ),
        (4, 1, 1, 2)
    );
    assert_eq!(next, None, "a delivery older than the window ends it");
    let posted: Vec<String> = runtime
        .calls()
        .into_iter()
        .filter_map(|call| match call {
            RuntimeCall::SenderApi("POST", url) => Some(url),
            _ => None,
        })
        .collect();
    assert_eq!(
        posted,
        ["https://api.github.com/repos/acme/shop/hooks/42/deliveries/8/attempts"]
    );
    let list_only = api(
        200,
        &[("link", link)],
        &format!("[{}]", page[..2].join(",")),
    );
    let runtime = runtime_for(list_only);
    let (_, next) = ran(run_now(run(
        &runtime,
        &config,
        &call(SenderLog::Github, true),
    )));
    assert_eq!(next.and_then(|cursor| cursor.after).as_deref(), Some("c2"));
}

fn runtime_for(list: SenderAnswer) -> Memory {
    runtime(vec![list], vec![AuthorityReply::Record { record: None }])
}
