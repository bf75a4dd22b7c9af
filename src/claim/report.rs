//! The failure index's outbox in each event's record: the changes an operator needs to see
//! (dead-lettered, redelivered, recovered) wait in the record until the failure index
//! acknowledges them, so a lost report is sent again by the object's next alarm rather than
//! lost. Reporting never blocks or changes a delivery: these rules touch only the outbox.

use super::engine::load_current;
use super::error::StoreError;
use super::queue::RetryPolicy;
use super::record::{Change, ClaimRecord, Millis, PendingReport, Stage};
use super::store::ClaimStore;

/// The changes of `key` due to be sent at `now`, if any.
pub fn report_due<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
) -> Result<Option<(ClaimRecord, Vec<Change>)>, StoreError> {
    let Some(record) = load_current(store, key, now)? else {
        return Ok(None);
    };
    let due = match record.pending_report() {
        Some(report) if report.next_at <= now => report.changes.clone(),
        _ => return Ok(None),
    };
    Ok(Some((record, due)))
}

/// The failure index took `sent`: they leave the outbox, and changes made since stay (sent at
/// once). Returns whether anything was left to send.
pub fn report_sent<S: ClaimStore>(
    store: &mut S,
    key: &str,
    sent: &[Change],
    now: Millis,
) -> Result<bool, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(false);
    };
    let Stage::Queue(queue) = &mut record.stage else {
        return Ok(false);
    };
    let Some(mut report) = queue.report.take() else {
        return Ok(false);
    };
    report.changes.retain(|change| !sent.contains(change));
    let left = !report.changes.is_empty();
    if left {
        report.tries = 0;
        report.next_at = now;
        queue.report = Some(report);
    }
    store.save(&record)?;
    Ok(left)
}

/// Sending the outbox failed at `now`: it is sent again after the back-off of `retry` (as a
/// queued event's attempts are, but never given up on: the record's retention bounds it).
/// Returns when.
pub fn report_failed<S: ClaimStore>(
    store: &mut S,
    key: &str,
    now: Millis,
    retry: RetryPolicy,
    jitter: f64,
) -> Result<Option<Millis>, StoreError> {
    let Some(mut record) = load_current(store, key, now)? else {
        return Ok(None);
    };
    let Stage::Queue(queue) = &mut record.stage else {
        return Ok(None);
    };
    let Some(report) = queue.report.as_mut() else {
        return Ok(None);
    };
    report.tries = report.tries.saturating_add(1);
    report.next_at = now.saturating_add(retry.backoff_ms(report.tries, jitter));
    let next_at = report.next_at;
    store.save(&record)?;
    Ok(Some(next_at))
}

/// Whether `report` still holds `change` (not yet acknowledged by the failure index).
pub fn holds(report: Option<&PendingReport>, change: &Change) -> bool {
    report.is_some_and(|report| report.changes.contains(change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{
        attempt_failed, enqueue, finalize, redeliver, start_attempt, AttemptOutcome, AttemptTerms,
        ClaimPolicy, Failure, Fence, MemoryClaimStore, Nonce, Transition,
    };
    use crate::origin::Reason;
    use crate::providers::Provider;

    const KEY: &str = "evt_reported";
    const POLICY: ClaimPolicy = ClaimPolicy {
        lease_ms: 10_000,
        retention_ms: 1_000_000,
    };
    const ONE_ATTEMPT: RetryPolicy = RetryPolicy {
        base_ms: 1_000,
        max_delay_ms: 8_000,
        max_attempts: 1,
        max_age_ms: 100_000,
        retry_client_errors: false,
    };

    fn stored() -> MemoryClaimStore {
        let mut store = MemoryClaimStore::new();
        enqueue(
            &mut store,
            KEY,
            Provider::Github,
            0,
            POLICY,
            Nonce([1; 16]),
            b"x",
        )
        .unwrap();
        store
    }

    fn attempt(store: &mut MemoryClaimStore, now: Millis) -> Fence {
        match start_attempt(store, KEY, now, POLICY, ONE_ATTEMPT, Nonce([2; 16])).unwrap() {
            AttemptOutcome::Start { fence, .. } => fence,
            other => panic!("expected an attempt, got {other:?}"),
        }
    }

    fn fail(store: &mut MemoryClaimStore, fence: &Fence, now: Millis) {
        let failure = Failure::definite(Reason::Answered(500));
        attempt_failed(
            store,
            KEY,
            fence,
            now,
            failure,
            AttemptTerms {
                policy: POLICY,
                retry: ONE_ATTEMPT,
                jitter: 0.5,
            },
        )
        .unwrap();
    }

    fn change(transition: Transition, at: Millis, seq: u32) -> Change {
        Change {
            transition,
            at,
            seq,
        }
    }

    fn pending(store: &mut MemoryClaimStore) -> Vec<Change> {
        let record = store.load(KEY).unwrap().unwrap();
        record
            .pending_report()
            .map(|report| report.changes.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_bulk_redelivery_takes_only_the_dead_stored_event_it_names() {
        use crate::claim::{redeliver_dead, ClaimState, RedeliverOutcome};
        let mut store = stored();
        let fence = attempt(&mut store, 1);
        fail(&mut store, &fence, 5);
        let storage_id = store
            .load(KEY)
            .unwrap()
            .unwrap()
            .queue()
            .unwrap()
            .storage_id;
        assert_eq!(
            redeliver_dead(&mut store, KEY, 6, POLICY, storage_id ^ 1).unwrap(),
            RedeliverOutcome::NotDead {
                state: ClaimState::Dead,
                same_event: false
            },
            "another stored event of the key is left alone"
        );
        assert_eq!(
            redeliver_dead(&mut store, KEY, 6, POLICY, storage_id).unwrap(),
            RedeliverOutcome::Queued
        );
        assert_eq!(
            redeliver_dead(&mut store, KEY, 7, POLICY, storage_id).unwrap(),
            RedeliverOutcome::NotDead {
                state: ClaimState::Queued,
                same_event: true
            },
            "a second call does not reset the budget of an event on its way"
        );
        assert_eq!(
            redeliver_dead(&mut MemoryClaimStore::new(), KEY, 7, POLICY, storage_id).unwrap(),
            RedeliverOutcome::NoBody
        );
    }

    #[test]
    fn a_healthy_delivery_reports_nothing() {
        let mut store = stored();
        let fence = attempt(&mut store, 1);
        finalize(&mut store, KEY, &fence, 2, POLICY, None).unwrap();
        assert!(pending(&mut store).is_empty());
        assert_eq!(report_due(&mut store, KEY, 2).unwrap(), None);
    }

    #[test]
    fn death_redelivery_and_recovery_are_each_reported_once_in_order() {
        let mut store = stored();
        let fence = attempt(&mut store, 1);
        fail(&mut store, &fence, 5);
        // The operator redelivers before the index heard of the death: both wait, in order.
        assert_eq!(
            redeliver(&mut store, KEY, 7, POLICY).unwrap(),
            crate::claim::RedeliverOutcome::Queued
        );
        let both = vec![
            change(Transition::DeadLettered, 5, 1),
            change(Transition::Redelivered, 7, 2),
        ];
        assert_eq!(pending(&mut store), both);
        let (_, due) = report_due(&mut store, KEY, 7).unwrap().unwrap();
        assert_eq!(due, both);
        // The delivery succeeds while the report is on its way: the recovery stays for later.
        let fence = attempt(&mut store, 8);
        finalize(&mut store, KEY, &fence, 9, POLICY, None).unwrap();
        assert!(
            report_sent(&mut store, KEY, &due, 10).unwrap(),
            "the recovery is left"
        );
        assert_eq!(
            pending(&mut store),
            vec![change(Transition::Recovered, 9, 3)]
        );
        let (_, due) = report_due(&mut store, KEY, 10).unwrap().unwrap();
        assert!(!report_sent(&mut store, KEY, &due, 11).unwrap());
        assert!(pending(&mut store).is_empty());
        assert_eq!(
            store.load(KEY).unwrap().unwrap().dead_at(),
            Some(5),
            "the time of death is kept"
        );
    }

    #[test]
    fn a_failed_send_waits_a_growing_pause_and_a_new_change_goes_at_once() {
        let mut store = stored();
        let fence = attempt(&mut store, 1);
        fail(&mut store, &fence, 5);
        assert_eq!(
            report_failed(&mut store, KEY, 10, ONE_ATTEMPT, 0.999_999).unwrap(),
            Some(1_010)
        );
        assert_eq!(
            report_due(&mut store, KEY, 1_009).unwrap(),
            None,
            "not before its time"
        );
        assert_eq!(
            report_failed(&mut store, KEY, 1_010, ONE_ATTEMPT, 0.999_999).unwrap(),
            Some(3_010)
        );
        redeliver(&mut store, KEY, 1_500, POLICY).unwrap();
        let (_, due) = report_due(&mut store, KEY, 1_500)
            .unwrap()
            .expect("due at once");
        assert_eq!(due.len(), 2);
    }

    #[test]
    fn an_outbox_keeps_only_its_newest_changes_each_numbered_once() {
        let mut store = stored();
        let Stage::Queue(mut queue) = store.load(KEY).unwrap().unwrap().stage else {
            panic!("stored")
        };
        for at in 0..20 {
            queue.note(Transition::Redelivered, at);
        }
        let report = queue.report.unwrap();
        let numbers: Vec<u32> = report.changes.iter().map(|c| c.seq).collect();
        assert_eq!(numbers, (13..=20).collect::<Vec<_>>());
        assert_eq!(
            report.changes.len(),
            crate::claim::record::MAX_PENDING_CHANGES
        );
        assert_eq!(report.changes.last().map(|c| c.at), Some(19));
    }
}
