use super::alert::{self, Kind, SendFailed, ORIGIN_WINDOW_MS};
use super::*;
use crate::claim::{AttemptTerms, Change, KvValue, RetryPolicy, Transition};
use crate::log_line::{Level, Outcome, Route};
use crate::providers::Provider;

const ALERTS: AlertPolicy = AlertPolicy {
    min_interval_ms: 900_000,
    retry: RetryPolicy {
        base_ms: 1_000,
        max_delay_ms: 4_000,
        max_attempts: 3,
        max_age_ms: 100_000,
        retry_client_errors: false,
    },
    dead_letter_limit: 10,
    dead_letter_interval_ms: 900_000,
};

fn change(transition: Transition, at: Millis, seq: u32) -> Change {
    Change {
        transition,
        at,
        seq,
    }
}

fn report(key: &str, provider: Provider, dead_at: Millis, changes: Vec<Change>) -> IndexReport {
    IndexReport {
        key: provider.key(key),
        storage_id: 7,
        stored_at: 1,
        provider,
        event_type: Some("push".into()),
        first_seen_at: 1,
        attempts: 3,
        last_reason: Some(crate::origin::Reason::Answered(500)),
        dead_at: Some(dead_at),
        expires_at: dead_at + 1_000_000,
        changes,
    }
}

fn dead(key: &str, provider: Provider, at: Millis) -> IndexReport {
    report(
        key,
        provider,
        at,
        vec![change(Transition::DeadLettered, at, 1)],
    )
}

fn everything() -> ListQuery {
    ListQuery {
        limit: 500,
        ..ListQuery::default()
    }
}

#[test]
fn a_report_sent_twice_is_applied_once_and_notifies_once() {
    let mut store = MemoryIndexStore::default();
    let first = apply(
        &mut store,
        &dead("a", Provider::Github, 10),
        11,
        Some(&ALERTS),
    )
    .unwrap();
    assert_eq!(first.fresh.len(), 1);
    assert_eq!(first.notifications.len(), 1);
    let before = store.clone();
    let again = apply(
        &mut store,
        &dead("a", Provider::Github, 10),
        12,
        Some(&ALERTS),
    )
    .unwrap();
    assert_eq!(again, Applied::default());
    assert_eq!(store, before, "nothing written");
    let outbox = alert::due(&mut store, 11, 10).unwrap();
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].kind, Kind::DeadLettered);
    let payload: serde_json::Value = serde_json::from_str(&outbox[0].payload).unwrap();
    assert_eq!(payload["type"], "delivery.dead_lettered");
    assert_eq!(payload["data"]["id"], "a");
    assert_eq!(payload["data"]["provider"], "github");
    assert_eq!(payload["data"]["event_type"], "push");
    assert_eq!(payload["data"]["last_reason"], "origin answered 500");
    assert_eq!(payload["timestamp"], "1970-01-01T00:00:00.010Z");
}

#[test]
fn without_alerts_nothing_is_queued() {
    let mut store = MemoryIndexStore::default();
    apply(&mut store, &dead("a", Provider::Github, 10), 11, None).unwrap();
    assert!(alert::due(&mut store, u64::MAX / 2, 10).unwrap().is_empty());
    assert_eq!(
        next_wake(&mut store, true).unwrap(),
        Some(10 + 1_000_000),
        "only the expiry"
    );
    // Notifications waiting while they are off never wake the index.
    apply(
        &mut store,
        &dead("b", Provider::Github, 20),
        20,
        Some(&ALERTS),
    )
    .unwrap();
    assert_eq!(next_wake(&mut store, true).unwrap(), Some(20));
    assert_eq!(next_wake(&mut store, false).unwrap(), Some(10 + 1_000_000));
}

#[test]
fn the_life_of_an_entry_follows_its_changes_and_a_stale_one_is_skipped() {
    let mut store = MemoryIndexStore::default();
    let key = Provider::Shopify.key("s1");
    apply(
        &mut store,
        &dead("s1", Provider::Shopify, 10),
        10,
        Some(&ALERTS),
    )
    .unwrap();
    let later = report(
        "s1",
        Provider::Shopify,
        10,
        vec![
            change(Transition::DeadLettered, 10, 1),
            change(Transition::Redelivered, 20, 2),
            change(Transition::Recovered, 30, 3),
        ],
    );
    let applied = apply(&mut store, &later, 31, Some(&ALERTS)).unwrap();
    assert_eq!(applied.fresh.len(), 2, "the dead letter was known");
    assert_eq!(applied.notifications.len(), 1, "the recovery notifies");
    let found = entry(&mut store, &key).unwrap().unwrap();
    assert_eq!(found.state, EntryState::Recovered);
    assert_eq!(found.history.len(), 3);
    // A change already applied (its number no higher), say from a report overtaken by an
    // operator's forget, changes nothing.
    let stale = report(
        "s1",
        Provider::Shopify,
        10,
        vec![change(Transition::Redelivered, 25, 2)],
    );
    assert!(apply(&mut store, &stale, 40, Some(&ALERTS))
        .unwrap()
        .fresh
        .is_empty());
    assert_eq!(
        entry(&mut store, &key).unwrap().unwrap().state,
        EntryState::Recovered
    );
}

#[test]
fn the_list_is_newest_first_filtered_and_paged_by_an_opaque_cursor() {
    let mut store = MemoryIndexStore::default();
    for at in 1..=30u64 {
        let provider = if at % 3 == 0 {
            Provider::Stripe
        } else {
            Provider::Github
        };
        let mut dead = dead(&format!("evt_{at:02}"), provider, at * 1_000);
        if at % 2 == 0 {
            dead.event_type = Some("issues".into());
        }
        apply(&mut store, &dead, at * 1_000, None).unwrap();
    }
    let all = list(&mut store, &everything()).unwrap();
    assert_eq!(all.items.len(), 30);
    assert!(all
        .items
        .windows(2)
        .all(|pair| pair[0].dead_at > pair[1].dead_at));
    assert_eq!(all.next_cursor, None);

    // Pages of 4 GitHub issues events from 20 s back to 5 s, followed to the end.
    let mut query = ListQuery {
        provider: Some(Provider::Github),
        event_type: Some("issues".into()),
        since: Some(5_000),
        until: Some(20_000),
        limit: 4,
        ..ListQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = list(&mut store, &query).unwrap();
        assert!(page.items.len() <= 4);
        seen.extend(page.items.iter().map(|e| e.dead_at / 1_000));
        match page.next_cursor {
            Some(cursor) => query.cursor = Cursor::decode(&cursor.encode()),
            None => break,
        }
    }
    assert_eq!(seen, vec![20, 16, 14, 10, 8]);
}

#[test]
fn a_page_reads_a_bounded_number_of_entries_and_says_where_to_go_on() {
    let mut store = MemoryIndexStore::default();
    for at in 0..(MAX_SCANNED as u64 + 10) {
        apply(
            &mut store,
            &dead(&format!("g{at}"), Provider::Github, at + 1),
            0,
            None,
        )
        .unwrap();
    }
    apply(&mut store, &dead("old", Provider::Stripe, 0), 0, None).unwrap();
    let query = ListQuery {
        provider: Some(Provider::Stripe),
        limit: 10,
        ..ListQuery::default()
    };
    let first = list(&mut store, &query).unwrap();
    assert!(first.items.is_empty());
    let cursor = first.next_cursor.expect("more may follow");
    let second = list(
        &mut store,
        &ListQuery {
            cursor: Some(cursor),
            ..query
        },
    )
    .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.next_cursor, None);
}

#[test]
fn the_summary_counts_by_sender_and_state_and_follows_every_move() {
    let mut store = MemoryIndexStore::default();
    apply(&mut store, &dead("a", Provider::Github, 10), 10, None).unwrap();
    apply(&mut store, &dead("b", Provider::Github, 11), 11, None).unwrap();
    apply(&mut store, &dead("evt_c", Provider::Stripe, 12), 12, None).unwrap();
    let redelivered = report(
        "a",
        Provider::Github,
        10,
        vec![change(Transition::Redelivered, 20, 2)],
    );
    apply(&mut store, &redelivered, 20, None).unwrap();
    assert!(gone(&mut store, &Provider::Github.key("b"), 7, 30).unwrap());
    assert!(
        !gone(&mut store, &Provider::Github.key("b"), 7, 31).unwrap(),
        "once"
    );
    let view = summary(&mut store).unwrap().view();
    assert_eq!(view["total"], 3);
    assert_eq!(view["by_state"]["dead"], 1);
    assert_eq!(view["by_state"]["redelivered"], 1);
    assert_eq!(view["by_state"]["forgotten"], 1);
    assert_eq!(view["by_state"]["recovered"], 0);
    assert_eq!(view["by_provider"]["github"]["redelivered"], 1);
    assert_eq!(view["by_provider"]["stripe"]["dead"], 1);
    assert!(view["by_provider"].get("shopify").is_none());
}

#[test]
fn entries_expire_with_their_records_and_take_every_key_with_them() {
    let mut store = MemoryIndexStore::default();
    apply(&mut store, &dead("a", Provider::Github, 10), 10, None).unwrap();
    // A later report extends the record's life: the entry lives on past the first expiry.
    let mut extended = report(
        "a",
        Provider::Github,
        10,
        vec![change(Transition::Redelivered, 50, 2)],
    );
    extended.expires_at = 2_000_000;
    apply(&mut store, &extended, 50, None).unwrap();
    assert_eq!(expire(&mut store, 1_000_010, 10).unwrap(), 0);
    assert_eq!(
        entry(&mut store, &Provider::Github.key("a"))
            .unwrap()
            .map(|e| e.state),
        Some(EntryState::Redelivered)
    );
    assert_eq!(next_wake(&mut store, true).unwrap(), Some(2_000_000));
    assert_eq!(expire(&mut store, 2_000_000, 10).unwrap(), 1);
    assert!(store.map.is_empty(), "left: {:?}", store.map);
    assert_eq!(next_wake(&mut store, true).unwrap(), None);
}

#[test]
fn a_failed_notification_backs_off_then_is_dropped() {
    let mut store = MemoryIndexStore::default();
    apply(
        &mut store,
        &dead("a", Provider::Github, 10),
        10,
        Some(&ALERTS),
    )
    .unwrap();
    let first = alert::due(&mut store, 10, 10).unwrap().remove(0);
    let failed = |detail: &str| Err(detail.to_owned());
    let backoff = (&ALERTS, 0.999_999);
    assert_eq!(
        alert::settle(&mut store, &first, failed("answered 500"), 10, backoff).unwrap(),
        Some(("answered 500".to_owned(), false))
    );
    assert!(alert::due(&mut store, 1_009, 10).unwrap().is_empty());
    let second = alert::due(&mut store, 1_010, 10).unwrap().remove(0);
    assert_eq!(second.id, first.id, "the same webhook-id at every try");
    assert_eq!(second.payload, first.payload);
    assert_eq!(
        alert::send_failed(&mut store, &second, 1_010, &ALERTS, 0.999_999).unwrap(),
        SendFailed::RetryAt(3_010)
    );
    let third = alert::due(&mut store, 3_010, 10).unwrap().remove(0);
    assert_eq!(
        alert::settle(
            &mut store,
            &third,
            failed("no answer"),
            3_010,
            (&ALERTS, 0.5)
        )
        .unwrap(),
        Some(("no answer".to_owned(), true)),
        "given up"
    );
    assert!(alert::due(&mut store, u64::MAX / 2, 10).unwrap().is_empty());
    // Sent: it leaves.
    apply(
        &mut store,
        &dead("b", Provider::Github, 20),
        20,
        Some(&ALERTS),
    )
    .unwrap();
    let sent = alert::due(&mut store, 20, 10).unwrap().remove(0);
    assert_eq!(
        alert::settle(&mut store, &sent, Ok(()), 20, backoff).unwrap(),
        None
    );
    assert!(alert::due(&mut store, 20, 10).unwrap().is_empty());
}

#[test]
fn an_origin_is_failing_after_three_events_fail_within_the_window_at_most_once_per_interval() {
    let mut store = MemoryIndexStore::default();
    let origin = "https://handler.example";
    let failed = |store: &mut MemoryIndexStore, key: &str, now| {
        alert::origin_failed(store, origin, key, None, now, &ALERTS).unwrap()
    };
    assert_eq!(failed(&mut store, "a", 0), None);
    assert_eq!(
        failed(&mut store, "a", 1),
        None,
        "the same event again is one event"
    );
    assert_eq!(failed(&mut store, "b", 2), None);
    let alerted = failed(&mut store, "c", 3).expect("three events failed");
    assert_eq!(failed(&mut store, "d", 4), None, "quiet for the interval");
    assert_eq!(failed(&mut store, "e", 899_999 + 3), None);
    // Past the interval, but the window forgot the old failures: three new ones are needed.
    let later = 3 + ORIGIN_WINDOW_MS * 3;
    assert_eq!(failed(&mut store, "f", later), None);
    assert_eq!(failed(&mut store, "g", later + 1), None);
    let again = failed(&mut store, "h", later + 2).expect("failing again");
    assert_ne!(again, alerted);
    let queued = alert::due(&mut store, u64::MAX / 2, 10).unwrap();
    assert_eq!(queued.len(), 2);
    let payload: serde_json::Value = serde_json::from_str(&queued[0].payload).unwrap();
    assert_eq!(payload["type"], "origin.failing");
    assert_eq!(payload["data"]["origin"], origin);
    assert_eq!(payload["data"]["failed_events"], 3);
}

#[test]
fn an_origin_recovered_once_is_announced_once_with_how_long_it_was_down() {
    let mut store = MemoryIndexStore::default();
    let request = IndexRequest::OriginRecovered {
        origin: "https://handler.example/hook".into(),
        down_since: 10_000,
    };
    assert_eq!(
        handle(&mut store, &request, 70_000, Some(&ALERTS)),
        IndexReply::Noted
    );
    assert_eq!(
        handle(&mut store, &request, 70_500, Some(&ALERTS)),
        IndexReply::Noted
    );
    let queued = alert::due(&mut store, u64::MAX / 2, 10).unwrap();
    assert_eq!(queued.len(), 1, "the same recovery is one notification");
    let payload: serde_json::Value = serde_json::from_str(&queued[0].payload).unwrap();
    assert_eq!(payload["type"], "origin.recovered");
    assert_eq!(payload["data"]["origin"], "https://handler.example/hook");
    assert_eq!(payload["data"]["down_seconds"], 60);
    let mut quiet = MemoryIndexStore::default();
    assert_eq!(
        handle(&mut quiet, &request, 70_000, None),
        IndexReply::Noted
    );
    assert!(alert::due(&mut quiet, u64::MAX / 2, 10).unwrap().is_empty());
}

#[test]
fn a_notification_is_signed_as_standard_webhooks_verifies_it() {
    let key = crate::providers::standard::secret_key(
        "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
    )
    .unwrap();
    let mut store = MemoryIndexStore::default();
    apply(
        &mut store,
        &dead("a", Provider::Github, 10),
        10,
        Some(&ALERTS),
    )
    .unwrap();
    let notification = alert::due(&mut store, 10, 1).unwrap().remove(0);
    let headers = alert::signed_headers(&key, &notification, 1_700_000_000);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let verified = crate::providers::verify(
        Provider::Standard,
        &|name| header(name),
        notification.payload.as_bytes(),
        std::slice::from_ref(&key),
        1_700_000_000,
        300,
    );
    assert!(verified.is_ok(), "{verified:?}");
    assert_eq!(
        header("webhook-id").as_deref(),
        Some(notification.id.as_str())
    );
}

#[test]
fn the_dispatcher_answers_each_request() {
    let mut store = MemoryIndexStore::default();
    let applied = handle(
        &mut store,
        &IndexRequest::Report(dead("a", Provider::Github, 10)),
        10,
        None,
    );
    assert!(matches!(applied, IndexReply::Applied(Applied { ref fresh, .. }) if fresh.len() == 1));
    let page = handle(&mut store, &IndexRequest::List(everything()), 10, None);
    assert!(matches!(page, IndexReply::Page(Page { ref items, .. }) if items.len() == 1));
    assert_eq!(
        handle(
            &mut store,
            &IndexRequest::OriginFailed {
                origin: "o".into(),
                key: "k".into(),
                reason: None
            },
            10,
            None
        ),
        IndexReply::Noted
    );
    assert!(
        !store.map.keys().any(|k| k.starts_with("o:")),
        "no window without alerts"
    );
    assert!(matches!(
        handle(&mut store, &IndexRequest::Summary, 10, None),
        IndexReply::Summary(_)
    ));
}

#[test]
fn changes_in_one_millisecond_are_each_applied_and_a_key_stored_again_starts_over() {
    let mut store = MemoryIndexStore::default();
    let key = Provider::Github.key("same-ms");
    // Died, redelivered and died again within one millisecond: three changes, all applied.
    let burst = report(
        "same-ms",
        Provider::Github,
        10,
        vec![
            change(Transition::DeadLettered, 10, 1),
            change(Transition::Redelivered, 10, 2),
            change(Transition::DeadLettered, 10, 3),
        ],
    );
    let applied = apply(&mut store, &burst, 10, Some(&ALERTS)).unwrap();
    assert_eq!(applied.fresh.len(), 3);
    assert_eq!(
        applied.notifications.len(),
        2,
        "two deaths, two notifications"
    );
    assert_ne!(applied.notifications[0], applied.notifications[1]);
    assert_eq!(
        entry(&mut store, &key).unwrap().unwrap().state,
        EntryState::Dead
    );
    // Forgotten, then stored again by the sender and dead in the same millisecond: another
    // stored event of the key, whose changes count from 1 again.
    let mut forgotten = report(
        "same-ms",
        Provider::Github,
        10,
        vec![change(Transition::Forgotten, 10, 4)],
    );
    forgotten.storage_id = 7;
    apply(&mut store, &forgotten, 10, None).unwrap();
    let mut again = dead("same-ms", Provider::Github, 10);
    again.storage_id = 8;
    again.stored_at = 10;
    assert_eq!(apply(&mut store, &again, 10, None).unwrap().fresh.len(), 1);
    let found = entry(&mut store, &key).unwrap().unwrap();
    assert_eq!(
        (found.state, found.storage_id, found.last_seq),
        (EntryState::Dead, 8, 1)
    );
}

#[test]
fn a_page_that_reads_to_the_end_of_its_range_gives_no_cursor() {
    // 250 GitHub entries after 50 Stripe ones: the Stripe page reads a full batch of GitHub
    // entries, then the short rest of the range, and must not send the caller back into it.
    let mut store = MemoryIndexStore::default();
    for at in 1..=300u64 {
        let (key, provider) = if at <= 50 {
            (format!("evt_{at:03}"), Provider::Stripe)
        } else {
            (format!("g{at}"), Provider::Github)
        };
        apply(&mut store, &dead(&key, provider, at), 0, None).unwrap();
    }
    let query = ListQuery {
        provider: Some(Provider::Stripe),
        limit: 100,
        ..ListQuery::default()
    };
    let page = list(&mut store, &query).unwrap();
    assert_eq!(page.items.len(), 50);
    assert_eq!(page.next_cursor, None, "nothing follows");
}

#[test]
fn a_late_report_of_an_earlier_stored_event_changes_nothing() {
    let mut store = MemoryIndexStore::default();
    let key = Provider::Github.key("k");
    let mut first = dead("k", Provider::Github, 10);
    first.storage_id = 1;
    first.stored_at = 5;
    let mut second = dead("k", Provider::Github, 30);
    second.storage_id = 2;
    second.stored_at = 20;
    apply(&mut store, &first, 10, None).unwrap();
    apply(&mut store, &second, 30, None).unwrap();
    // The first stored event's forget arrives late: the second one's dead letter stays shown.
    let mut late = report(
        "k",
        Provider::Github,
        10,
        vec![change(Transition::Forgotten, 25, 2)],
    );
    late.storage_id = 1;
    late.stored_at = 5;
    assert_eq!(
        apply(&mut store, &late, 31, None).unwrap(),
        Applied::default()
    );
    assert!(
        !gone(&mut store, &key, 1, 32).unwrap(),
        "nor does a gone of the earlier one"
    );
    let found = entry(&mut store, &key).unwrap().unwrap();
    assert_eq!((found.state, found.storage_id), (EntryState::Dead, 2));
    assert!(gone(&mut store, &key, 2, 33).unwrap());
}

#[test]
fn an_unreadable_entry_is_left_out_of_a_page_and_expiry_keeps_its_keys() {
    let mut store = MemoryIndexStore::default();
    apply(&mut store, &dead("a", Provider::Github, 10), 10, None).unwrap();
    apply(&mut store, &dead("b", Provider::Github, 11), 11, None).unwrap();
    store.map.insert(
        format!("e:{}", Provider::Github.key("a")),
        KvValue::Text("not json".into()),
    );
    let page = list(
        &mut store,
        &ListQuery {
            limit: 10,
            ..ListQuery::default()
        },
    )
    .unwrap();
    assert_eq!(page.items.len(), 1);
    let before = store.map.len();
    assert!(expire(&mut store, u64::MAX / 2, 10).is_err());
    assert_eq!(
        store.map.len(),
        before,
        "nothing deleted on the way to the error"
    );
}

/// A dead-lettered GitHub event in its object's store, its change waiting for the index.
fn dead_event_store(key: &str) -> (claim::MemoryClaimStore, Vec<Change>) {
    use claim::{AttemptOutcome, ClaimPolicy, ClaimStore, Failure, Nonce};
    let policy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 1_000_000,
    };
    let retry = RetryPolicy {
        max_attempts: 1,
        ..ALERTS.retry
    };
    let mut store = claim::MemoryClaimStore::new();
    claim::enqueue(
        &mut store,
        key,
        Provider::Github,
        0,
        policy,
        Nonce([1; 16]),
        b"{}",
    )
    .unwrap();
    let AttemptOutcome::Start { fence, .. } =
        claim::start_attempt(&mut store, key, 0, policy, retry, Nonce([2; 16])).unwrap()
    else {
        panic!("the stored event is due");
    };
    let failure = Failure::definite(Reason::Answered(500));
    claim::attempt_failed(
        &mut store,
        key,
        &fence,
        10,
        failure,
        AttemptTerms {
            policy,
            retry,
            jitter: 0.5,
        },
    )
    .unwrap();
    let record = store.load(key).unwrap().unwrap();
    let changes = record.pending_report().unwrap().changes.clone();
    (store, changes)
}

/// An object settles what it sent by the index's answer: applied, the changes leave its
/// outbox; refused (or answered out of turn), they are sent again after the back-off; with no
/// retry policy (an invalid configuration) they stay as they were, for the alarm's guard.
#[test]
fn an_object_settles_its_report_by_the_index_answer() {
    use claim::ClaimStore;
    let key = Provider::Github.key("a");
    let pending = |store: &mut claim::MemoryClaimStore| {
        let record = store.load(&key).unwrap().unwrap();
        record.pending_report().map(|report| report.next_at)
    };
    let (mut store, changes) = dead_event_store(&key);
    let applied = Some(IndexReply::Applied(Applied::default()));
    assert_eq!(
        after_report(&mut store, &key, &changes, applied, 20, (None, 0.5)),
        Ok(())
    );
    assert_eq!(pending(&mut store), None, "acknowledged, the changes leave");

    let (mut store, changes) = dead_event_store(&key);
    let refused = Some(IndexReply::StoreFailed {
        detail: "full".into(),
    });
    let backoff = (Some(ALERTS.retry), 0.999_999);
    let settled = after_report(&mut store, &key, &changes, refused, 20, backoff);
    assert_eq!(settled, Err("full".into()));
    assert_eq!(
        pending(&mut store),
        Some(20 + ALERTS.retry.backoff_ms(1, 0.999_999))
    );
    let out_of_turn = Some(IndexReply::Noted);
    let settled = after_report(&mut store, &key, &changes, out_of_turn, 30, backoff);
    assert!(settled.unwrap_err().contains("out of turn"));

    let (mut store, changes) = dead_event_store(&key);
    let before = pending(&mut store);
    let refused = Some(IndexReply::StoreFailed {
        detail: "full".into(),
    });
    let settled = after_report(&mut store, &key, &changes, refused, 20, (None, 0.5));
    assert_eq!(settled, Err("full".into()));
    assert_eq!(pending(&mut store), before, "left for the alarm's guard");
}

/// The index's alarm runs again a second later when it stopped at its cap; else at its next
/// work, or a minute later when that work was already due when it ran (it must not spin).
#[test]
fn the_index_alarm_never_spins() {
    use alert::{next_alarm, PER_ALARM};
    assert_eq!(PER_ALARM, 50);
    assert_eq!(next_alarm(true, None, 100, 120), Some(1_120));
    assert_eq!(next_alarm(false, Some(5_000), 100, 120), Some(5_000));
    assert_eq!(next_alarm(false, Some(100), 100, 120), Some(60_120));
    assert_eq!(next_alarm(false, None, 100, 120), None);
}

/// Only a webhook attempt that did not succeed, with notifications on and its sender enabled,
/// is reported against its origin; a time-out counts as one.
#[test]
fn only_failed_webhook_attempts_count_against_their_origin() {
    use crate::origin::{Reason, Verdict};
    let (on, off) = (config(true), config(false));
    let key = Provider::Github.key("d-1");
    let github = Some(Provider::Github);
    let failed = Verdict::Failed(Reason::Answered(500));
    assert_eq!(
        alert::origin_failure(&on, &key, github, failed),
        Some(IndexRequest::OriginFailed {
            origin: "https://origin.example:8443".into(),
            key: key.clone(),
            reason: Some(Reason::Answered(500)),
        })
    );
    let timed_out = alert::origin_failure(&on, &key, github, Verdict::Pending);
    assert!(matches!(
        timed_out,
        Some(IndexRequest::OriginFailed {
            reason: Some(Reason::TimedOut),
            ..
        })
    ));
    assert_eq!(
        alert::origin_failure(&on, &key, github, Verdict::Succeeded),
        None
    );
    assert_eq!(
        alert::origin_failure(&off, &key, github, failed),
        None,
        "notifications off"
    );
    assert_eq!(
        alert::origin_failure(&on, &key, None, failed),
        None,
        "not a webhook"
    );
    let shopify = Some(Provider::Shopify);
    assert_eq!(
        alert::origin_failure(&on, &key, shopify, failed),
        None,
        "sender not enabled"
    );
}

/// A configuration with Stripe and GitHub enabled, and notifications on when `alerts`.
fn config(alerts: bool) -> crate::config::Config {
    crate::config::Config::load(move |key| match key {
        "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
        "GITHUB_WEBHOOK_SECRET" => Some("a-github-secret".into()),
        "ORIGIN_URL" => Some("https://origin.example:8443/hooks".into()),
        "ALERT_URL" if alerts => Some("https://alerts.example/in".into()),
        "ALERT_SECRET" if alerts => {
            Some("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTAxMjM=".into())
        }
        _ => None,
    })
    .unwrap()
}

/// The index object refuses every request while the configuration is invalid (so no
/// notification is skipped) or its store cannot be opened, writing nothing; a change asks for
/// the alarm by its next work, a query does not.
#[test]
fn the_index_object_refuses_without_its_configuration_and_wakes_for_a_change() {
    use object::{must_set_alarm, serve};
    let mut store = MemoryIndexStore::default();
    let report = IndexRequest::Report(dead("a", Provider::Github, 10));
    let (reply, wake) = serve(Ok(&mut store), None, &report, 11);
    assert!(matches!(reply, IndexReply::StoreFailed { detail } if detail.contains("/healthz")));
    assert_eq!((wake, store.clone()), (None, MemoryIndexStore::default()));
    let broken = StoreError::Fatal("no table".into());
    let (reply, wake) = serve::<MemoryIndexStore>(Err(&broken), Some(&config(true)), &report, 11);
    assert_eq!(
        (reply, wake),
        (
            IndexReply::StoreFailed {
                detail: broken.to_string()
            },
            None
        )
    );
    let (reply, wake) = serve(Ok(&mut store), Some(&config(true)), &report, 11);
    assert!(matches!(reply, IndexReply::Applied(_)), "{reply:?}");
    assert_eq!(wake, Some(11), "the notification is due at once");
    let gone = IndexRequest::Gone {
        key: "z".into(),
        storage_id: 1,
    };
    let (reply, wake) = serve(Ok(&mut store), Some(&config(true)), &gone, 12);
    assert_eq!(
        (reply, wake),
        (IndexReply::Noted, Some(11)),
        "a noted change wakes too"
    );
    let (reply, wake) = serve(
        Ok(&mut store),
        Some(&config(false)),
        &IndexRequest::Summary,
        12,
    );
    assert!(matches!(reply, IndexReply::Summary(_)), "{reply:?}");
    assert_eq!(wake, None);
    assert!(must_set_alarm(None, 5));
    assert!(must_set_alarm(Some(6), 5));
    assert!(!must_set_alarm(Some(5), 5));
    assert!(!must_set_alarm(Some(4), 5));
}

/// An alarm sends what is due, settles each notification by its own answer (accepted: gone;
/// refused: retried after its back-off), logs each, and comes back for the retry; with
/// notifications off it sends nothing and wakes only for the expiry.
#[test]
fn an_alarm_settles_each_notification_by_its_answer_and_comes_back_for_the_retry() {
    use object::{alarm_end, alarm_start, serve};
    let on = config(true);
    let mut store = MemoryIndexStore::default();
    for key in ["a", "b"] {
        let report = IndexRequest::Report(dead(key, Provider::Github, 10));
        serve(Ok(&mut store), Some(&on), &report, 10);
    }
    let off = config(false);
    let quiet = alarm_start(&mut store.clone(), Some(&off), 20);
    assert_eq!(
        (quiet.expired, quiet.due.len(), quiet.alerts.is_some()),
        (0, 0, false)
    );
    let (lines, at) = alarm_end(&mut store.clone(), &quiet, Vec::new(), 20, || 0.5);
    assert!(lines.is_empty());
    assert!(at.is_some_and(|at| at > 100_000), "only the expiry: {at:?}");

    let run = alarm_start(&mut store, Some(&on), 20);
    assert_eq!((run.expired, run.due.len()), (0, 2));
    let answers = vec![Ok(()), Err("answered 500".to_owned())];
    let (lines, at) = alarm_end(&mut store, &run, answers, 25, || 0.5);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].outcome, Outcome::NotificationSent);
    let first = (lines[0].key.as_deref(), lines[0].event_type.as_deref());
    assert_eq!(
        first,
        (Some(run.due[0].id.as_str()), Some("delivery.dead_lettered"))
    );
    assert_eq!(lines[1].outcome, Outcome::NotificationRetry);
    assert_eq!(lines[1].detail.as_deref(), Some("answered 500"));
    assert_eq!(lines[1].key.as_ref(), Some(&run.due[1].id));
    let retry_at = at.expect("the alarm comes back for the retry");
    assert!(retry_at > 25, "{retry_at}");
    assert!(alert::due(&mut store, retry_at - 1, 10).unwrap().is_empty());
    let again = alert::due(&mut store, retry_at, 10).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(
        (again[0].id.as_str(), again[0].tries),
        (run.due[1].id.as_str(), 1)
    );
}

/// A POST as made: its URL and headers.
type Post = (String, Vec<(String, String)>);

/// A failure index object in memory: its table, its alarm, the POSTs it made (answered in
/// turn from `answers`), and what it logged.
struct MemoryIndex {
    now: Millis,
    config: Option<std::rc::Rc<crate::config::Config>>,
    table: std::rc::Rc<std::cell::RefCell<crate::claim::MemoryTable>>,
    alarm: std::cell::Cell<Option<Millis>>,
    alarms_set: std::cell::Cell<u32>,
    answers: std::cell::RefCell<Vec<Result<(), String>>>,
    posts: std::cell::RefCell<Vec<Post>>,
    alarm_fails: std::cell::Cell<bool>,
    lines: std::cell::RefCell<Vec<crate::log_line::LogLine>>,
}

impl crate::object::Host for MemoryIndex {
    type Table = crate::claim_authority::object::memory::SharedTable;

    fn now_ms(&self) -> Millis {
        self.now
    }

    fn config(&self) -> Option<std::rc::Rc<crate::config::Config>> {
        self.config.clone()
    }

    fn open(&self) -> Result<crate::claim::KvStore<Self::Table>, StoreError> {
        let table = crate::claim_authority::object::memory::SharedTable(self.table.clone());
        Ok(crate::claim::KvStore::new(table))
    }

    async fn set_alarm(&self, at: Millis) -> Result<(), String> {
        if self.alarm_fails.get() {
            return Err("the alarm could not be set".into());
        }
        self.alarms_set.set(self.alarms_set.get() + 1);
        self.alarm.set(Some(at));
        Ok(())
    }

    fn write(&self, line: &crate::log_line::LogLine) {
        self.lines.borrow_mut().push(line.clone());
    }
}

impl object::IndexIo for MemoryIndex {
    async fn alarm_at(&self) -> Option<Millis> {
        self.alarm.get()
    }

    async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        _body: &str,
    ) -> Result<(), String> {
        self.posts
            .borrow_mut()
            .push((url.to_owned(), headers.to_vec()));
        self.answers.borrow_mut().remove(0)
    }
}

fn memory_index(now: Millis, alerts: bool) -> MemoryIndex {
    MemoryIndex {
        now,
        config: Some(std::rc::Rc::new(config(alerts))),
        table: Default::default(),
        alarm: Default::default(),
        alarms_set: Default::default(),
        answers: Default::default(),
        posts: Default::default(),
        alarm_fails: Default::default(),
        lines: Default::default(),
    }
}

/// The index object's request: an unreadable one is a store failure; a report applied sets
/// the alarm for its notification unless the one set fires sooner.
#[test]
fn the_index_object_answers_its_calls_and_sets_the_alarm_only_when_needed() {
    use crate::runtime::memory::run;
    let index = memory_index(10, true);
    let unreadable: IndexReply = serde_json::from_str(&run(object::call(&index, "{"))).unwrap();
    assert!(
        matches!(unreadable, IndexReply::StoreFailed { detail } if detail.contains("unreadable"))
    );
    let report =
        serde_json::to_string(&IndexRequest::Report(dead("a", Provider::Github, 10))).unwrap();
    let applied: IndexReply = serde_json::from_str(&run(object::call(&index, &report))).unwrap();
    assert!(matches!(applied, IndexReply::Applied(_)), "{applied:?}");
    assert_eq!((index.alarm.get(), index.alarms_set.get()), (Some(10), 1));
    let second =
        serde_json::to_string(&IndexRequest::Report(dead("b", Provider::Github, 10))).unwrap();
    run(object::call(&index, &second));
    assert_eq!(
        index.alarms_set.get(),
        1,
        "the alarm set already fires by then"
    );
}

/// A `setAlarm` that fails is logged at `error` on the index's route, and the next request
/// sets the alarm; with `LOG_STORAGE_USAGE=true` each request's rows are logged.
#[test]
fn the_index_object_logs_an_alarm_it_could_not_set_and_its_rows() {
    use crate::runtime::memory::run;
    let mut index = memory_index(10, true);
    index.alarm_fails.set(true);
    let report =
        |key| serde_json::to_string(&IndexRequest::Report(dead(key, Provider::Github, 10)));
    run(object::call(&index, &report("a").unwrap()));
    let logged: Vec<_> = index
        .lines
        .take()
        .into_iter()
        .map(|l| (l.route, l.level, l.outcome))
        .collect();
    assert_eq!(logged, [(Route::Index, Level::Error, Outcome::AlarmNotSet)]);
    assert_eq!(index.alarm.get(), None);

    index.alarm_fails.set(false);
    let mut usage = config(true);
    usage.log_storage_usage = true;
    index.config = Some(std::rc::Rc::new(usage));
    run(object::call(&index, &report("b").unwrap()));
    assert_eq!(index.alarm.get(), Some(10), "set by the next request");
    let lines = index.lines.take();
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (lines[0].route, lines[0].outcome),
        (Route::Index, Outcome::Operation("report"))
    );
    assert!(
        lines[0].rows_written.is_some_and(|rows| rows > 0),
        "{:?}",
        lines[0]
    );
}

/// The alarm POSTs each due notification to `ALERT_URL`, signed as Standard Webhooks signs,
/// logs how each was settled, and comes back for the one refused.
#[test]
fn the_index_alarm_posts_signed_notifications_and_comes_back_for_a_refused_one() {
    use crate::runtime::memory::run;
    let index = memory_index(10, true);
    for key in ["a", "b"] {
        let report = IndexRequest::Report(dead(key, Provider::Github, 10));
        run(object::call(
            &index,
            &serde_json::to_string(&report).unwrap(),
        ));
    }
    *index.answers.borrow_mut() = vec![Ok(()), Err("answered 500".into())];
    let index = MemoryIndex { now: 20, ..index };
    run(object::run_alarm(&index, || 0.5));
    let posts = index.posts.borrow();
    assert_eq!(posts.len(), 2);
    for (url, headers) in posts.iter() {
        assert_eq!(url, "https://alerts.example/in");
        for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
            assert!(
                headers.iter().any(|(known, _)| known == name),
                "{name}: {headers:?}"
            );
        }
    }
    let lines = index.lines.borrow();
    let settled: Vec<_> = lines
        .iter()
        .map(|line| (line.outcome, line.detail.as_deref()))
        .collect();
    let sent = Outcome::NotificationSent;
    let retry = Outcome::NotificationRetry;
    assert_eq!(settled, [(sent, None), (retry, Some("answered 500"))]);
    assert!(
        index.alarm.get().is_some_and(|at| at > 20),
        "back for the retry"
    );
}

/// A notification's send counts only a 2xx; every other ending is a failed send, said in words
/// that never quote the runtime's error text.
#[test]
fn a_notification_s_send_succeeds_only_on_a_2xx() {
    use crate::failure_index::alert::send_outcome;
    use crate::origin::{NetworkError, OriginOutcome};
    assert_eq!(
        send_outcome(&OriginOutcome::Answered { status: 204 }),
        Ok(())
    );
    let failed = |outcome| send_outcome(&outcome).unwrap_err();
    assert_eq!(
        failed(OriginOutcome::Answered { status: 301 }),
        "answered 301"
    );
    assert_eq!(
        failed(OriginOutcome::Answered { status: 500 }),
        "answered 500"
    );
    assert_eq!(failed(OriginOutcome::TimedOut), "no answer in time");
    assert_eq!(
        failed(OriginOutcome::NotSent),
        "the request could not be made"
    );
    let lost = OriginOutcome::Failed {
        error: NetworkError::ConnectionLost,
    };
    assert_eq!(failed(lost), "network error (ConnectionLost)");
}

/// No reply from the index in time is a store failure: nothing is taken as applied.
#[test]
fn no_reply_from_the_index_in_time_is_a_store_failure() {
    let IndexReply::StoreFailed { detail } = IndexReply::not_in_time() else {
        panic!("a store failure");
    };
    assert!(detail.contains(&REPLY_TIMEOUT_MS.to_string()), "{detail}");
}

/// A flood of one sender's dead letters (a captured body replayed under made-up ids to a
/// handler that refuses it) costs at most `dead_letter_limit` notifications one by one and one
/// digest per interval: the digest counts the rest, is due when the interval ends, names the
/// path of their list, and is rewritten in place as the count grows. Another sender has a cap
/// of its own; the next interval starts afresh.
#[test]
fn dead_letter_notifications_are_capped_per_sender_with_one_digest_for_the_rest() {
    let policy = AlertPolicy {
        dead_letter_limit: 2,
        dead_letter_interval_ms: 60_000,
        ..ALERTS
    };
    let mut store = MemoryIndexStore::default();
    for n in 0..6u64 {
        let id = format!("g{n}");
        apply(
            &mut store,
            &dead(&id, Provider::Github, 10 + n),
            10 + n,
            Some(&policy),
        )
        .unwrap();
    }
    apply(
        &mut store,
        &dead("s1", Provider::Stripe, 20),
        20,
        Some(&policy),
    )
    .unwrap();
    let now: Vec<Notification> = alert::due(&mut store, 1_000, 50).unwrap();
    let kinds: Vec<(Kind, String)> = now
        .iter()
        .map(|n| {
            let payload: serde_json::Value = serde_json::from_str(&n.payload).unwrap();
            (
                n.kind,
                payload["data"]["id"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (Kind::DeadLettered, "g0".to_owned()),
            (Kind::DeadLettered, "g1".to_owned()),
            (Kind::DeadLettered, "s1".to_owned()),
        ],
        "two of GitHub's one by one, Stripe's on its own cap"
    );
    let all = alert::due(&mut store, 10 + 60_000, 50).unwrap();
    assert_eq!(all.len(), 4, "and one digest, due when the interval ends");
    let digest = all
        .iter()
        .find(|n| n.kind == Kind::DeadLetteredDigest)
        .unwrap();
    assert_eq!(digest.next_at, 10 + 60_000);
    let payload: serde_json::Value = serde_json::from_str(&digest.payload).unwrap();
    assert_eq!(payload["type"], "delivery.dead_lettered_digest");
    assert_eq!(payload["data"]["provider"], "github");
    assert_eq!(
        (
            payload["data"]["count"].as_u64(),
            payload["data"]["notified"].as_u64()
        ),
        (Some(4), Some(2))
    );
    assert_eq!(
        payload["data"]["list"],
        "/admin/dead-letters?provider=github&state=dead&since=1970-01-01T00:00:00.010Z&until=1970-01-01T00:00:00.015Z",
        "every dead letter of the window, by their times of death"
    );
    assert!(!digest.payload.contains("g5"), "the digest names no id");
    // The next interval starts afresh with the next dead letter.
    apply(
        &mut store,
        &dead("g9", Provider::Github, 70_000),
        70_000,
        Some(&policy),
    )
    .unwrap();
    let later = alert::due(&mut store, 70_000, 50).unwrap();
    assert!(later
        .iter()
        .any(|n| n.kind == Kind::DeadLettered && n.payload.contains("\"g9\"")));
}

/// What one entry can hold, whatever its sender sent: every field is bounded (a delivery id of
/// at most 255 characters, a type of at most 100 in its sender's alphabet, at most
/// `MAX_HISTORY` changes), so an entry's JSON is at most `MAX_ENTRY_BYTES`, and an entry costs
/// three keys besides it. The index's growth is this times the dead letters it is told of.
#[test]
fn an_entry_is_bounded_whatever_its_sender_sent() {
    let longest = "f".repeat(crate::providers::MAX_HEADER_ID_LEN - "orders/create:".len());
    let topic = format!("a/{}", "b".repeat(crate::providers::MAX_EVENT_TYPE_LEN - 2));
    let mut changes: Vec<Change> = (1..=40)
        .map(|seq| change(Transition::DeadLettered, u64::MAX / 4 + u64::from(seq), seq))
        .collect();
    changes.insert(0, change(Transition::Redelivered, u64::MAX / 4, 0));
    let mut report = dead(&longest, Provider::Shopify, u64::MAX / 4);
    report.key = Provider::Shopify.key(&format!("{topic}:{longest}"));
    report.event_type = Some(topic.clone());
    report.changes = changes;
    report.attempts = u32::MAX;
    report.last_reason = Some(crate::origin::Reason::Answered(599));
    let mut store = MemoryIndexStore::default();
    apply(&mut store, &report, 1, Some(&ALERTS)).unwrap();
    let stored = store
        .get(&format!("e:{}", report.key))
        .unwrap()
        .expect("the entry");
    assert!(
        stored.len() <= MAX_ENTRY_BYTES,
        "an entry of {} bytes, over {MAX_ENTRY_BYTES}",
        stored.len()
    );
    assert!(
        stored.len() > MAX_ENTRY_BYTES / 2,
        "the test made a large entry: {}",
        stored.len()
    );
    assert!(crate::providers::is_event_type_of(
        Provider::Shopify,
        &topic
    ));
}

/// A cursor is not signed, so an operator's client can forge one: a forged cursor only moves
/// where a page starts. Whatever time and key it names, the page holds entries of the index
/// only (never another kind of key), each one the same query without a cursor lists too.
#[test]
fn a_forged_cursor_only_moves_where_a_page_starts() {
    let mut store = MemoryIndexStore::default();
    for (n, provider) in [Provider::Github, Provider::Shopify, Provider::Stripe]
        .into_iter()
        .enumerate()
    {
        for m in 0..3u64 {
            let id = format!("e{n}{m}");
            apply(
                &mut store,
                &dead(&id, provider, 10 + m * 10 + n as u64),
                1,
                Some(&ALERTS),
            )
            .unwrap();
        }
    }
    let all = list(&mut store, &everything()).unwrap().items;
    assert_eq!(all.len(), 9);
    for (dead_at, key) in [
        (0, "github:e00"),
        (u64::MAX, "~"),
        (25, "!"),
        (25, "zzzz"),
        (15, "o:https://origin.example"),
        (30, "n:0"),
    ] {
        let query = ListQuery {
            cursor: Some(Cursor {
                dead_at,
                key: key.to_owned(),
            }),
            ..everything()
        };
        let page = list(&mut store, &query).unwrap();
        for item in &page.items {
            assert!(all.contains(item), "{dead_at} {key}: {item:?}");
            assert!(item.dead_at <= dead_at, "only what lies before the cursor");
        }
    }
}

/// A notification is signed when it is sent, its time included: a receiver's Standard Webhooks
/// library (5 minutes' tolerance) refuses one replayed later, and a send tried again carries
/// the same `webhook-id`, so a receiver de-duplicates it.
#[test]
fn a_notification_is_signed_at_each_send_so_an_old_one_is_refused() {
    let key = crate::providers::standard::secret_key(
        "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
    )
    .unwrap();
    let mut store = MemoryIndexStore::default();
    apply(
        &mut store,
        &dead("a", Provider::Github, 10),
        10,
        Some(&ALERTS),
    )
    .unwrap();
    let notification = alert::due(&mut store, 10, 1).unwrap().remove(0);
    let verify_at = |signed_at: i64, now: i64| {
        let headers = alert::signed_headers(&key, &notification, signed_at);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let verdict = crate::providers::verify(
            Provider::Standard,
            &|name| header(name),
            notification.payload.as_bytes(),
            std::slice::from_ref(&key),
            now,
            300,
        );
        (verdict, header("webhook-id"))
    };
    let (fresh, first_id) = verify_at(1_700_000_000, 1_700_000_000);
    assert!(fresh.is_ok());
    let (replayed, _) = verify_at(1_700_000_000, 1_700_000_301);
    assert_eq!(
        replayed,
        Err(crate::providers::SenderError::TimestampTooOld)
    );
    let (retried, retry_id) = verify_at(1_700_003_600, 1_700_003_600);
    assert!(retried.is_ok(), "a later try is signed anew");
    assert_eq!(retry_id, first_id, "with the same webhook-id");
}
