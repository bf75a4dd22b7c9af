//! Host tests of the claim rules: every transition, then random histories against a model.

use super::*;
use crate::origin::Reason;
use crate::providers::Provider;

const STRIPE: Source = Source::Webhook(Provider::Stripe);

const KEY: &str = "evt_test_1";
const POLICY: ClaimPolicy = ClaimPolicy {
    lease_ms: 1_000,
    retention_ms: 100_000,
};

fn nonce(n: u8) -> [u8; 16] {
    [n; 16]
}

/// The claim rule with positional arguments, as these tests read best (no answer wait).
fn claim<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
    policy: ClaimPolicy,
    nonce: [u8; 16],
    fingerprint: Option<&str>,
) -> Result<ClaimOutcome, StoreError> {
    let source = match fingerprint {
        Some(fingerprint) => Source::Api {
            fingerprint: fingerprint.to_owned(),
        },
        None => Source::Webhook(Provider::Stripe),
    };
    super::claim(
        store,
        &ClaimRequest {
            key,
            now,
            policy,
            nonce: Nonce(nonce),
            salt: Nonce(nonce),
            source: &source,
            answer_within_ms: None,
        },
    )
}

fn claimed(outcome: ClaimOutcome) -> (Fence, u32, bool) {
    match outcome {
        ClaimOutcome::Claimed {
            fence,
            attempt,
            takeover,
            ..
        } => (fence, attempt, takeover),
        other => panic!("expected Claimed, got {other:?}"),
    }
}

#[test]
fn first_claim_wins_with_attempt_one() {
    let mut store = MemoryClaimStore::new();
    let (fence, attempt, takeover) =
        claimed(claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap());
    assert_eq!((fence.attempt(), attempt, takeover), (1, 1, false));
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(record.state(), ClaimState::Processing);
    assert_eq!(record.first_seen_at, 10);
    assert_eq!(record.lease.until, 1_010);
    assert_eq!(record.expires_at, 101_010, "retention after the lease ends");
}

#[test]
fn live_claim_answers_inflight_with_its_lease_end() {
    let mut store = MemoryClaimStore::new();
    claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap();
    let before = store.load(KEY).unwrap();
    assert_eq!(
        claim(&mut store, KEY, 1_009, POLICY, nonce(2), None).unwrap(),
        ClaimOutcome::DuplicateInflight {
            lease_expires_at: 1_010,
            retry_at: 1_010
        }
    );
    assert_eq!(
        store.load(KEY).unwrap(),
        before,
        "an in-flight answer writes nothing"
    );
}

#[test]
fn the_same_claim_request_again_gets_the_same_claim() {
    let mut store = MemoryClaimStore::new();
    let first = claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap();
    let before = store.load(KEY).unwrap();
    let ClaimOutcome::Claimed {
        fence,
        attempt,
        lease_expires_at,
        ..
    } = first
    else {
        panic!("claimed")
    };
    assert_eq!(
        claim(&mut store, KEY, 20, POLICY, nonce(1), None).unwrap(),
        ClaimOutcome::Claimed {
            fence,
            attempt,
            takeover: false,
            lease_expires_at,
            repeated: true
        },
        "the same claim, marked as a repeat"
    );
    assert_eq!(store.load(KEY).unwrap(), before);
    assert!(matches!(
        claim(&mut store, KEY, 20, POLICY, nonce(2), None).unwrap(),
        ClaimOutcome::DuplicateInflight { .. }
    ));
}

#[test]
fn the_same_takeover_request_again_is_still_a_takeover() {
    let mut store = MemoryClaimStore::new();
    claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap();
    let takeover = claim(&mut store, KEY, 2_000, POLICY, nonce(2), None).unwrap();
    assert!(matches!(
        takeover,
        ClaimOutcome::Claimed {
            takeover: true,
            repeated: false,
            ..
        }
    ));
    assert!(matches!(
        claim(&mut store, KEY, 2_001, POLICY, nonce(2), None).unwrap(),
        ClaimOutcome::Claimed {
            takeover: true,
            repeated: true,
            ..
        }
    ));
}

#[test]
fn expired_lease_is_taken_over_with_a_new_fence() {
    let mut store = MemoryClaimStore::new();
    let (first, _, _) = claimed(claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap());
    let (second, attempt, takeover) =
        claimed(claim(&mut store, KEY, 1_010, POLICY, nonce(2), None).unwrap());
    assert_eq!((attempt, takeover), (2, true));
    assert_ne!(first, second);
    assert_eq!(store.load(KEY).unwrap().unwrap().first_seen_at, 10);
    // The late first attempt can neither finalize nor release the new claim.
    let before = store.load(KEY).unwrap();
    assert_eq!(
        finalize(&mut store, KEY, &first, 1_020, POLICY, None).unwrap(),
        FinalizeOutcome::NotOwner
    );
    assert_eq!(
        release(
            &mut store,
            KEY,
            &first,
            1_020,
            Reason::Answered(503),
            POLICY
        )
        .unwrap(),
        ReleaseOutcome::NotOwner
    );
    assert_eq!(store.load(KEY).unwrap(), before);
}

#[test]
fn finalize_makes_repeats_duplicates_and_is_idempotent() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap());
    assert_eq!(
        finalize(&mut store, KEY, &fence, 50, POLICY, None).unwrap(),
        FinalizeOutcome::Finalized {
            finished_at: 50,
            already: false
        }
    );
    assert_eq!(
        finalize(&mut store, KEY, &fence, 60, POLICY, None).unwrap(),
        FinalizeOutcome::Finalized {
            finished_at: 50,
            already: true
        }
    );
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(
        (record.state(), record.expires_at),
        (ClaimState::Done, 100_050)
    );
    // Long after the lease, a repeat is still a duplicate, never a new claim.
    assert_eq!(
        claim(&mut store, KEY, 90_000, POLICY, nonce(2), None).unwrap(),
        ClaimOutcome::DuplicateProcessed {
            finished_at: 50,
            response: None
        }
    );
}

#[test]
fn finalize_after_lease_end_succeeds_while_nobody_took_over() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap());
    assert!(matches!(
        finalize(&mut store, KEY, &fence, 5_000, POLICY, None).unwrap(),
        FinalizeOutcome::Finalized { already: false, .. }
    ));
}

#[test]
fn release_lets_the_next_delivery_claim_and_keeps_history() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap());
    assert_eq!(
        release(&mut store, KEY, &fence, 20, Reason::Answered(500), POLICY).unwrap(),
        ReleaseOutcome::Released { already: false }
    );
    assert_eq!(
        release(&mut store, KEY, &fence, 21, Reason::Answered(503), POLICY).unwrap(),
        ReleaseOutcome::Released { already: true }
    );
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(record.state(), ClaimState::Released);
    assert_eq!(
        record.last_failure.map(|r| r.to_string()).as_deref(),
        Some("origin answered 500")
    );
    // A released holder cannot finalize any more.
    assert_eq!(
        finalize(&mut store, KEY, &fence, 22, POLICY, None).unwrap(),
        FinalizeOutcome::NotOwner
    );
    // Well inside the old lease, the next delivery claims at once, without a takeover.
    let (next, attempt, takeover) =
        claimed(claim(&mut store, KEY, 30, POLICY, nonce(2), None).unwrap());
    assert_eq!((attempt, takeover), (2, false));
    assert_ne!(next, fence);
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(record.first_seen_at, 10);
    assert_eq!(
        record.last_failure.map(|r| r.to_string()).as_deref(),
        Some("origin answered 500")
    );
}

#[test]
fn release_never_removes_a_done_record() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 10, POLICY, nonce(1), None).unwrap());
    finalize(&mut store, KEY, &fence, 20, POLICY, None).unwrap();
    assert_eq!(
        release(&mut store, KEY, &fence, 30, Reason::Answered(503), POLICY).unwrap(),
        ReleaseOutcome::AlreadyDone
    );
    assert_eq!(store.load(KEY).unwrap().unwrap().state(), ClaimState::Done);
}

#[test]
fn missing_record_is_not_found() {
    let mut store = MemoryClaimStore::new();
    let fence = Fence::new(1, nonce(1));
    assert_eq!(
        finalize(&mut store, KEY, &fence, 0, POLICY, None).unwrap(),
        FinalizeOutcome::NotFound
    );
    assert_eq!(
        release(&mut store, KEY, &fence, 0, Reason::Answered(503), POLICY).unwrap(),
        ReleaseOutcome::NotFound
    );
    assert!(store.keys().unwrap().is_empty(), "nothing is written");
}

#[test]
fn expire_deletes_only_what_is_past_retention() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, "a", 0, POLICY, nonce(1), None).unwrap());
    finalize(&mut store, "a", &fence, 10, POLICY, None).unwrap();
    claim(&mut store, "b", 500, POLICY, nonce(2), None).unwrap();
    let sweep = expire(&mut store, 100_009).unwrap();
    assert!(sweep.expired.is_empty());
    assert_eq!(
        sweep.next_expiry,
        Some(100_010),
        "done: retention after it finished"
    );
    let sweep = expire(&mut store, 100_010).unwrap();
    assert_eq!(
        sweep.expired,
        vec![Expired {
            key: "a".into(),
            state: ClaimState::Done
        }]
    );
    assert_eq!(
        sweep.next_expiry,
        Some(101_500),
        "abandoned: retention after its lease"
    );
    // An abandoned processing claim is deleted at retention too, and reported as such.
    let sweep = expire(&mut store, 101_500).unwrap();
    assert_eq!(sweep.expired[0].state, ClaimState::Processing);
    assert_eq!(sweep.next_expiry, None);
    assert_eq!(expire(&mut store, 200_000).unwrap(), Sweep::default());
}

#[test]
fn a_record_past_retention_counts_as_absent_before_the_alarm_runs() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 0, POLICY, nonce(1), None).unwrap());
    finalize(&mut store, KEY, &fence, 0, POLICY, None).unwrap();
    let (_, attempt, _) = claimed(claim(&mut store, KEY, 100_000, POLICY, nonce(2), None).unwrap());
    assert_eq!(attempt, 1, "a record past retention is forgotten entirely");
}

#[test]
fn store_errors_are_outcomes() {
    let mut store = MemoryClaimStore::new();
    store.fail_next(StoreError::Retryable("overloaded".into()));
    assert_eq!(
        claim(&mut store, KEY, 0, POLICY, nonce(1), None),
        Err(StoreError::Retryable("overloaded".into()))
    );
    assert!(store.keys().unwrap().is_empty());
}

#[test]
fn a_record_under_the_wrong_key_is_fatal() {
    let mut store = MemoryClaimStore::new();
    claim(&mut store, KEY, 0, POLICY, nonce(1), None).unwrap();
    let mut record = store.load(KEY).unwrap().unwrap();
    record.key = "other".into();
    // Simulate a corrupt row: stored under KEY, naming another key.
    let text = encode_record(&record);
    let mut wrong = MemoryClaimStore::new();
    let decoded = decode_record(&text).unwrap();
    wrong.save(&decoded).unwrap();
    assert!(matches!(
        claim(&mut WrongKey(wrong), KEY, 0, POLICY, nonce(2), None),
        Err(StoreError::Fatal(_))
    ));
}

/// A store that answers every load with whatever record it holds, whatever the key.
struct WrongKey(MemoryClaimStore);

impl ClaimStore for WrongKey {
    fn load(&mut self, _key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        let keys = self.0.keys()?;
        self.0.load(&keys[0])
    }
    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError> {
        self.0.save(record)
    }
    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.0.delete(key)
    }
    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        self.0.keys()
    }
    fn save_payload(&mut self, key: &str, payload: &[u8]) -> Result<(), StoreError> {
        self.0.save_payload(key, payload)
    }
    fn load_payload(&mut self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.0.load_payload(key)
    }
    fn delete_payload(&mut self, key: &str) -> Result<(), StoreError> {
        self.0.delete_payload(key)
    }
}

#[test]
fn a_key_stays_bound_to_its_fingerprint() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 0, POLICY, nonce(1), Some("fp-a")).unwrap());
    assert_eq!(
        claim(&mut store, KEY, 1, POLICY, nonce(2), Some("fp-b")).unwrap(),
        ClaimOutcome::FingerprintMismatch,
        "while in flight"
    );
    release(&mut store, KEY, &fence, 2, Reason::Answered(503), POLICY).unwrap();
    assert_eq!(
        claim(&mut store, KEY, 3, POLICY, nonce(3), Some("fp-b")).unwrap(),
        ClaimOutcome::FingerprintMismatch,
        "after a release"
    );
    let before = store.load(KEY).unwrap();
    let (fence, attempt, _) =
        claimed(claim(&mut store, KEY, 4, POLICY, nonce(4), Some("fp-a")).unwrap());
    assert_eq!(attempt, 2);
    assert_ne!(store.load(KEY).unwrap(), before);
    let response = CachedResponse {
        status: 201,
        headers: vec![("location".into(), "/charges/1".into())],
        body: b"{\"id\":1}".to_vec(),
        body_omitted: false,
        body_lost: false,
    };
    finalize(&mut store, KEY, &fence, 5, POLICY, Some(response.clone())).unwrap();
    // A repeat of the finalize cannot replace the first response.
    finalize(&mut store, KEY, &fence, 6, POLICY, None).unwrap();
    assert_eq!(
        claim(&mut store, KEY, 7, POLICY, nonce(5), Some("fp-a")).unwrap(),
        ClaimOutcome::DuplicateProcessed {
            finished_at: 5,
            response: Some(response)
        }
    );
    assert_eq!(
        claim(&mut store, KEY, 8, POLICY, nonce(6), Some("fp-b")).unwrap(),
        ClaimOutcome::FingerprintMismatch,
        "after it finished"
    );
}

#[test]
fn forget_deletes_only_a_settled_record_with_the_fence_read() {
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 0, POLICY, nonce(1), None).unwrap());
    assert_eq!(
        forget(&mut store, KEY, &fence, 1).unwrap(),
        ForgetOutcome::StillProcessing {
            lease_expires_at: 1_000
        }
    );
    finalize(&mut store, KEY, &fence, 2, POLICY, None).unwrap();
    assert_eq!(
        forget(&mut store, KEY, &Fence::new(1, nonce(9)), 3).unwrap(),
        ForgetOutcome::NotOwner
    );
    assert!(store.load(KEY).unwrap().is_some());
    assert_eq!(
        forget(&mut store, KEY, &fence, 3).unwrap(),
        ForgetOutcome::Forgotten
    );
    assert_eq!(store.load(KEY).unwrap(), None);
    assert_eq!(
        forget(&mut store, KEY, &fence, 4).unwrap(),
        ForgetOutcome::NotFound
    );
    let (_, attempt, _) = claimed(claim(&mut store, KEY, 5, POLICY, nonce(2), None).unwrap());
    assert_eq!(attempt, 1, "a forgotten key starts over");
}

#[test]
fn a_live_claim_sends_repeats_back_at_the_end_of_its_answer_wait() {
    let mut store = MemoryClaimStore::new();
    let policy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 100_000,
    };
    super::claim(
        &mut store,
        &ClaimRequest {
            key: KEY,
            now: 0,
            policy,
            nonce: Nonce(nonce(1)),
            salt: Nonce(nonce(1)),
            source: &STRIPE,
            answer_within_ms: Some(4_000),
        },
    )
    .unwrap();
    assert_eq!(
        store.load(KEY).unwrap().unwrap().lease.wait_ends_at,
        Some(4_000)
    );
    let mut retry_at = |now| match claim(&mut store, KEY, now, policy, nonce(2), None).unwrap() {
        ClaimOutcome::DuplicateInflight { retry_at, .. } => retry_at,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        retry_at(1_000),
        4_000,
        "while the holder waits for its answer"
    );
    assert_eq!(
        retry_at(4_000),
        10_000,
        "once the wait is over, at the end of the lease"
    );
}

#[test]
fn a_holder_that_stops_waiting_sends_repeats_to_the_end_of_its_lease() {
    let mut store = MemoryClaimStore::new();
    let policy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 100_000,
    };
    let outcome = super::claim(
        &mut store,
        &ClaimRequest {
            key: KEY,
            now: 0,
            policy,
            nonce: Nonce(nonce(1)),
            salt: Nonce(nonce(1)),
            source: &STRIPE,
            answer_within_ms: Some(4_000),
        },
    )
    .unwrap();
    let (fence, _, _) = claimed(outcome);
    assert!(
        !stop_waiting(&mut store, KEY, &Fence::new(1, nonce(9)), 500).unwrap(),
        "another fence writes nothing"
    );
    assert_eq!(
        store.load(KEY).unwrap().unwrap().lease.wait_ends_at,
        Some(4_000)
    );
    assert!(stop_waiting(&mut store, KEY, &fence, 1_000).unwrap());
    let record = store.load(KEY).unwrap().unwrap();
    assert_eq!(
        (record.state(), record.lease.wait_ends_at),
        (ClaimState::Processing, Some(1_000)),
        "the claim is kept"
    );
    assert!(
        !stop_waiting(&mut store, KEY, &fence, 1_500).unwrap(),
        "a wait already over writes nothing"
    );
    match claim(&mut store, KEY, 2_000, policy, nonce(2), None).unwrap() {
        ClaimOutcome::DuplicateInflight { retry_at, .. } => assert_eq!(retry_at, 10_000),
        other => panic!("{other:?}"),
    }
    let mut record = store.load(KEY).unwrap().unwrap();
    record.lease.wait_ends_at = Some(4_000);
    store.save(&record).unwrap();
    finalize(&mut store, KEY, &fence, 3_000, policy, None).unwrap();
    assert!(
        !stop_waiting(&mut store, KEY, &fence, 3_000).unwrap(),
        "a finished claim is left alone, even with its wait ahead"
    );
}

#[test]
fn the_answer_wait_never_outlasts_the_lease() {
    let mut store = MemoryClaimStore::new();
    super::claim(
        &mut store,
        &ClaimRequest {
            key: KEY,
            now: 100,
            policy: POLICY,
            nonce: Nonce(nonce(1)),
            salt: Nonce(nonce(1)),
            source: &STRIPE,
            answer_within_ms: Some(60_000),
        },
    )
    .unwrap();
    assert_eq!(
        store.load(KEY).unwrap().unwrap().lease.wait_ends_at,
        Some(1_100)
    );
}

#[test]
fn after_an_operator_s_release_the_next_claim_is_a_takeover() {
    // An operator releases a claim whose handler may have run (its answer never came): the
    // next delivery runs it again, marked as a takeover so the handler checks its own records.
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 0, POLICY, nonce(1), None).unwrap());
    assert_eq!(
        release(&mut store, KEY, &fence, 10, Reason::Operator, POLICY).unwrap(),
        ReleaseOutcome::Released { already: false }
    );
    let (_, attempt, takeover) =
        claimed(claim(&mut store, KEY, 20, POLICY, nonce(2), None).unwrap());
    assert_eq!((attempt, takeover), (2, true));
    // A release on a definite failure is not a takeover.
    let (fence, _, _) = claimed(claim(&mut store, "evt_other", 0, POLICY, nonce(3), None).unwrap());
    release(
        &mut store,
        "evt_other",
        &fence,
        10,
        Reason::Answered(500),
        POLICY,
    )
    .unwrap();
    let (_, _, takeover) =
        claimed(claim(&mut store, "evt_other", 20, POLICY, nonce(4), None).unwrap());
    assert!(!takeover);
}

#[test]
fn a_claim_an_operator_released_is_not_forgotten_while_its_attempt_may_still_run() {
    // Forced out under a live lease, the attempt may still settle with its fence until the
    // lease ends: deleting the record then would let a new claim meet that settle.
    let mut store = MemoryClaimStore::new();
    let (fence, _, _) = claimed(claim(&mut store, KEY, 0, POLICY, nonce(1), None).unwrap());
    release(&mut store, KEY, &fence, 10, Reason::Operator, POLICY).unwrap();
    assert_eq!(
        forget(&mut store, KEY, &fence, 20).unwrap(),
        ForgetOutcome::StillProcessing {
            lease_expires_at: 1_000
        }
    );
    assert_eq!(
        forget(&mut store, KEY, &fence, 1_000).unwrap(),
        ForgetOutcome::Forgotten
    );
}

#[test]
fn the_same_request_after_a_forget_gets_a_fence_no_earlier_attempt_holds() {
    // A delivery sent again with the same nonce after an operator forgot its record: a new
    // claim, whose fence comes from the authority's salt, so the first attempt (still holding
    // its fence) can settle nothing of it.
    let mut store = MemoryClaimStore::new();
    let request = |now, salt| ClaimRequest {
        key: KEY,
        now,
        policy: POLICY,
        nonce: Nonce(nonce(1)),
        salt: Nonce(salt),
        source: &STRIPE,
        answer_within_ms: None,
    };
    let (first, _, _) = claimed(super::claim(&mut store, &request(0, [10; 16])).unwrap());
    finalize(&mut store, KEY, &first, 1, POLICY, None).unwrap();
    assert_eq!(
        forget(&mut store, KEY, &first, 2).unwrap(),
        ForgetOutcome::Forgotten
    );
    let (second, attempt, _) = claimed(super::claim(&mut store, &request(3, [11; 16])).unwrap());
    assert_eq!(attempt, 1, "a new record");
    assert_ne!(second, first);
    assert_eq!(
        release(&mut store, KEY, &first, 4, Reason::Answered(500), POLICY).unwrap(),
        ReleaseOutcome::NotOwner
    );
    assert_eq!(
        forget(&mut store, KEY, &first, 5).unwrap(),
        ForgetOutcome::NotOwner
    );
    // While its claim stands, the same request again is still the same claim.
    assert!(matches!(
        super::claim(&mut store, &request(6, [12; 16])).unwrap(),
        ClaimOutcome::Claimed { repeated: true, fence, .. } if fence == second
    ));
}

/// The object's store over its key-value table: a record round-trips as text, a payload as
/// bytes beside it, `keys` lists records only and never reads a payload's row, and every call
/// counts the rows Cloudflare bills.
#[test]
fn the_key_value_store_keeps_records_and_payloads_apart_and_counts_rows() {
    let mut store = KvStore::new(MemoryTable::default());
    claim(&mut store, KEY, 0, POLICY, nonce(1), None).unwrap();
    store.save_payload(KEY, b"body bytes").unwrap();
    assert_eq!(
        store.usage,
        Usage {
            rows_read: 1,
            rows_written: 2
        }
    );
    assert_eq!(store.keys().unwrap(), vec![KEY.to_owned()]);
    assert_eq!(store.usage.rows_read, 2, "only the record's row is listed");
    assert_eq!(
        store.load_payload(KEY).unwrap().as_deref(),
        Some(&b"body bytes"[..])
    );
    let record = store.load(KEY).unwrap().expect("the record is stored");
    assert_eq!(record.state(), ClaimState::Processing);
    store.delete_payload(KEY).unwrap();
    assert_eq!(store.load_payload(KEY).unwrap(), None);
    assert_eq!(
        store.usage,
        Usage {
            rows_read: 5,
            rows_written: 3
        }
    );
}

/// A value of the wrong kind (bytes where a record is, text where a payload is) is a fatal
/// store error naming it, never a panic or a silent miss.
#[test]
fn a_value_of_the_wrong_kind_is_a_fatal_store_error() {
    let mut table = MemoryTable::default();
    table.map.insert(KEY.into(), KvValue::Bytes(vec![1]));
    table
        .map
        .insert(format!("\u{1}payload:{KEY}"), KvValue::Text("x".into()));
    let mut store = KvStore::new(table);
    let not_text = store.load(KEY).unwrap_err();
    assert!(
        matches!(&not_text, StoreError::Fatal(d) if d.contains("is not text")),
        "{not_text}"
    );
    let not_bytes = store.load_payload(KEY).unwrap_err();
    assert!(
        matches!(&not_bytes, StoreError::Fatal(d) if d.contains("not bytes")),
        "{not_bytes}"
    );
}

/// A bulk redelivery reads the dead event's record once and writes it once.
#[test]
fn redelivering_a_dead_event_reads_its_record_once() {
    let retry = RetryPolicy {
        base_ms: 1_000,
        max_delay_ms: 4_000,
        max_attempts: 1,
        max_age_ms: 100_000,
        retry_client_errors: false,
    };
    let mut store = KvStore::new(MemoryTable::default());
    let github = crate::providers::Provider::Github;
    enqueue(&mut store, KEY, github, 0, POLICY, Nonce(nonce(1)), b"{}").unwrap();
    let AttemptOutcome::Start { fence, .. } =
        start_attempt(&mut store, KEY, 0, POLICY, retry, Nonce(nonce(2))).unwrap()
    else {
        panic!("the stored event is due");
    };
    let failure = Failure::definite(Reason::Answered(500));
    attempt_failed(
        &mut store,
        KEY,
        &fence,
        10,
        failure,
        AttemptTerms {
            policy: POLICY,
            retry,
            jitter: 0.5,
        },
    )
    .unwrap();
    let storage_id = store
        .load(KEY)
        .unwrap()
        .unwrap()
        .queue()
        .unwrap()
        .storage_id;
    let before = store.usage;
    let outcome = redeliver_dead(&mut store, KEY, 2_000, POLICY, storage_id).unwrap();
    assert_eq!(outcome, RedeliverOutcome::Queued);
    assert_eq!(store.usage.rows_read - before.rows_read, 1);
    assert_eq!(store.usage.rows_written - before.rows_written, 1);
}

/// A storage exception the runtime flags `retryable` or `overloaded` is worth sending again;
/// any other is fatal.
#[test]
fn a_storage_exception_is_retryable_only_when_flagged() {
    let of = |retryable, overloaded| StoreError::of_exception("x".into(), retryable, overloaded);
    assert_eq!(of(true, false), StoreError::Retryable("x".into()));
    assert_eq!(of(false, true), StoreError::Retryable("x".into()));
    assert_eq!(of(false, false), StoreError::Fatal("x".into()));
}
