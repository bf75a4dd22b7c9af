//! The stored form of a claim record: JSON tagged with a schema version.
//!
//! | schema | written by | shape |
//! | --- | --- | --- |
//! | 1 | the first release | the record without `fingerprint` and `response` |
//! | 2 | the Idempotency-Key release | the record with `fingerprint` and `response` (Idempotency-Key front door) |
//! | 3 | the late-answer release | adds `wait_ends_at` (how long the holder waits for a late answer) |
//! | 4 | the queue-mode release | adds the states `queued` and `dead`, and `queue` (queue mode's schedule) |
//! | 5 | this build | typed: `source` (the sender, or the request's fingerprint), `lease`, `last_failure` as a typed reason, and `stage`, whose variants carry only their own data |
//!
//! Records of schemas 1 to 4 are read through [`super::legacy`], which upgrades them; the
//! next write stores them in schema 5.

use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::legacy::{RecordV1, RecordV4};
use super::record::ClaimRecord;

/// The schema version this build writes. Every earlier version stays readable.
pub const SCHEMA_VERSION: u32 = 5;

#[derive(Serialize)]
struct Envelope<'a> {
    schema: u32,
    record: &'a ClaimRecord,
}

#[derive(Deserialize)]
struct Tag {
    schema: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored<R> {
    #[allow(dead_code)]
    schema: u32,
    record: R,
}

/// The stored text of `record`, in the current schema.
pub fn encode_record(record: &ClaimRecord) -> String {
    serde_json::to_string(&Envelope {
        schema: SCHEMA_VERSION,
        record,
    })
    .expect("a claim record always serialises")
}

/// Reads a stored record of any known schema version.
///
/// Unknown versions and anything unreadable are `StoreError::Fatal`: a record is never silently
/// reset, since that could run a finished event again.
pub fn decode_record(text: &str) -> Result<ClaimRecord, StoreError> {
    let tag: Tag = serde_json::from_str(text)
        .map_err(|e| StoreError::Fatal(format!("stored claim record is unreadable: {e}")))?;
    let corrupt = |e: serde_json::Error| {
        StoreError::Fatal(format!("stored claim record (schema {}): {e}", tag.schema))
    };
    match tag.schema {
        1 => serde_json::from_str::<Stored<RecordV1>>(text)
            .map_err(corrupt)?
            .record
            .upgrade(),
        // Schemas 2 and 3 lack only fields that default (`wait_ends_at`, `queue`).
        2..=4 => serde_json::from_str::<Stored<RecordV4>>(text)
            .map_err(corrupt)?
            .record
            .upgrade(),
        SCHEMA_VERSION => serde_json::from_str::<Stored<ClaimRecord>>(text)
            .map(|stored| stored.record)
            .map_err(corrupt),
        other => Err(StoreError::Fatal(format!(
            "stored claim record has schema {other}; this build reads 1 to {SCHEMA_VERSION}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{
        CachedResponse, ClaimStage, ClaimState, Finished, QueueStep, Source, Stage,
    };
    use crate::origin::Reason;
    use crate::providers::Provider;

    /// A record exactly as schema 1 stored it (taken from a local runtime's storage).
    const V1_DONE: &str = r#"{"schema":1,"record":{"key":"evt_1","state":"done","fence":"2.f515155574e710e156f296ffd961f38e","attempts":2,"first_seen_at":1796044969694,"claimed_at":1796044970000,"lease_expires_at":1796045870000,"finished_at":1796044971000,"released_at":null,"expires_at":1798636971000,"last_release_reason":"origin answered 500"}}"#;

    /// Schema 4 records of queue mode, as that release wrote them.
    const V4_QUEUED_AFTER_LOST_ANSWER: &str = r#"{"schema":4,"record":{"key":"github:d1","state":"queued","fence":"1.00000000000000000000000000000001","attempts":1,"first_seen_at":1000,"claimed_at":1000,"lease_expires_at":11000,"wait_ends_at":null,"takeover":false,"finished_at":null,"released_at":6000,"expires_at":99000,"last_release_reason":"time-out","fingerprint":null,"response":null,"queue":{"accepted_at":1000,"next_attempt_at":11000,"budget_first_attempt":0,"budget_started_at":1000,"body_held":true}}}"#;
    const V4_DEAD_CUT_OFF: &str = r#"{"schema":4,"record":{"key":"evt_q","state":"dead","fence":"2.00000000000000000000000000000002","attempts":2,"first_seen_at":1000,"claimed_at":5000,"lease_expires_at":15000,"wait_ends_at":null,"takeover":true,"finished_at":null,"released_at":16000,"expires_at":99000,"last_release_reason":"attempt cut off (its lease ran out)","fingerprint":null,"response":null,"queue":{"accepted_at":1000,"next_attempt_at":null,"budget_first_attempt":0,"budget_started_at":1000,"body_held":true}}}"#;
    const V4_ATTEMPTING: &str = r#"{"schema":4,"record":{"key":"shopify:orders/create:7","state":"processing","fence":"1.00000000000000000000000000000003","attempts":1,"first_seen_at":1000,"claimed_at":1000,"lease_expires_at":11000,"wait_ends_at":null,"takeover":false,"finished_at":null,"released_at":null,"expires_at":99000,"last_release_reason":null,"fingerprint":null,"response":null,"queue":{"accepted_at":1000,"next_attempt_at":null,"budget_first_attempt":0,"budget_started_at":1000,"body_held":true}}}"#;
    const V3_API_DONE: &str = r#"{"schema":3,"record":{"key":"idem_ab","state":"done","fence":"1.00000000000000000000000000000004","attempts":1,"first_seen_at":1000,"claimed_at":1000,"lease_expires_at":11000,"wait_ends_at":7000,"takeover":false,"finished_at":2000,"released_at":null,"expires_at":99000,"last_release_reason":null,"fingerprint":"f1","response":{"status":201,"headers":[["content-type","application/json"]],"body":"e30=","body_omitted":false}}}"#;

    #[test]
    fn reads_a_schema_1_record() {
        let record = decode_record(V1_DONE).unwrap();
        assert_eq!(record.state(), ClaimState::Done);
        assert_eq!(record.attempts, 2);
        assert_eq!(
            record.lease.fence.to_string(),
            "2.f515155574e710e156f296ffd961f38e"
        );
        assert_eq!(record.last_failure, Some(Reason::Answered(500)));
        assert_eq!(record.source, Source::Webhook(Provider::Stripe));
        assert_eq!(record.finished_at(), Some(1_796_044_971_000));
        assert_eq!(record.response(), None);
    }

    #[test]
    fn reads_a_schema_2_record() {
        let v2 = V1_DONE
            .replace(r#""schema":1"#, r#""schema":2"#)
            .replace(
                r#""last_release_reason":"origin answered 500"}"#,
                r#""last_release_reason":"origin answered 500","takeover":false,"fingerprint":null,"response":null}"#,
            );
        let record = decode_record(&v2).unwrap();
        assert_eq!(record.state(), ClaimState::Done);
        assert_eq!(record.lease.wait_ends_at, None);
    }

    #[test]
    fn reads_an_idempotency_record_of_schema_3_with_its_answer() {
        let record = decode_record(V3_API_DONE).unwrap();
        assert_eq!(
            record.source,
            Source::Api {
                fingerprint: "f1".into()
            }
        );
        assert_eq!(record.lease.wait_ends_at, Some(7_000));
        let response = record.response().unwrap();
        assert_eq!(
            (response.status, response.body.as_slice()),
            (201, &b"{}"[..])
        );
    }

    #[test]
    fn reads_queue_records_of_schema_4_and_keeps_their_unknown_outcomes() {
        let lost = decode_record(V4_QUEUED_AFTER_LOST_ANSWER).unwrap();
        assert_eq!(lost.source, Source::Webhook(Provider::Github));
        assert_eq!(lost.state(), ClaimState::Queued);
        assert_eq!(lost.next_attempt_at(), Some(11_000));
        assert!(
            lost.outcome_unknown(),
            "its lease outlived its failure: its answer was lost"
        );
        assert_eq!(lost.last_failure, Some(Reason::TimedOut));
        let dead = decode_record(V4_DEAD_CUT_OFF).unwrap();
        assert_eq!(dead.state(), ClaimState::Dead);
        assert!(dead.outcome_unknown(), "cut off: its handler may have run");
        assert!(dead.holds_body());
        let attempting = decode_record(V4_ATTEMPTING).unwrap();
        assert_eq!(attempting.source, Source::Webhook(Provider::Shopify));
        assert!(matches!(
            attempting.queue().unwrap().step,
            QueueStep::Attempting
        ));
        assert!(attempting.holds_undelivered_event());
    }

    #[test]
    fn writes_schema_5_and_reads_it_back() {
        let mut record = decode_record(V3_API_DONE).unwrap();
        record.stage = Stage::Claim(ClaimStage::Done(Finished {
            finished_at: 2_000,
            response: Some(CachedResponse {
                status: 201,
                headers: vec![("content-type".into(), "application/json".into())],
                body: vec![0, 159, 146, 150, b'{'],
                body_omitted: false,
                body_lost: false,
            }),
        }));
        let text = encode_record(&record);
        assert!(text.starts_with(r#"{"schema":5,"#), "{text}");
        assert!(
            text.contains(r#""body":"AJ+Slns=""#),
            "binary body as base64: {text}"
        );
        assert_eq!(decode_record(&text).unwrap(), record);
        for old in [
            V1_DONE,
            V4_QUEUED_AFTER_LOST_ANSWER,
            V4_DEAD_CUT_OFF,
            V4_ATTEMPTING,
        ] {
            let upgraded = decode_record(old).unwrap();
            assert_eq!(decode_record(&encode_record(&upgraded)).unwrap(), upgraded);
        }
    }

    #[test]
    fn unknown_or_corrupt_data_is_fatal() {
        for bad in [
            "",
            "not json",
            "{}",
            r#"{"schema":99,"record":{}}"#,
            r#"{"schema":1,"record":{"key":"k"}}"#,
            r#"{"schema":2,"record":{"key":"k"}}"#,
            r#"{"schema":5,"record":{"key":"k"}}"#,
            &V1_DONE.replace(r#""attempts":2"#, r#""attempts":2,"extra":1"#),
            &V1_DONE.replace("done", "finished"),
            &V1_DONE.replace("origin answered 500", "something never written"),
            &V1_DONE.replace(r#""state":"done""#, r#""state":"queued""#),
            &V4_DEAD_CUT_OFF.replace(r#""state":"dead""#, r#""state":"released""#),
        ] {
            assert!(
                matches!(decode_record(bad), Err(StoreError::Fatal(_))),
                "{bad:?}"
            );
        }
    }
}
