//! The stored form of a claim record: JSON tagged with a schema version.
//!
//! | schema | written by | shape |
//! | --- | --- | --- |
//! | 1 | the first release | the record without `fingerprint` and `response` |
//! | 2 | the Idempotency-Key release | the record with `fingerprint` and `response` (Idempotency-Key front door) |
//! | 3 | the late-answer release | adds `wait_ends_at` (how long the holder waits for a late answer) |
//! | 4 | this build | adds the states `queued` and `dead`, and `queue` (queue mode's schedule) |

use serde::{Deserialize, Serialize};

use super::fence::Fence;
use super::record::{ClaimRecord, ClaimState, Millis};
use super::store::StoreError;

/// The schema version this build writes. Every earlier version stays readable.
pub const SCHEMA_VERSION: u32 = 4;

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

/// Schema 1: a webhook claim record, before fingerprints and cached responses.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordV1 {
    key: String,
    state: ClaimState,
    fence: Fence,
    attempts: u32,
    first_seen_at: Millis,
    claimed_at: Millis,
    lease_expires_at: Millis,
    finished_at: Option<Millis>,
    released_at: Option<Millis>,
    expires_at: Millis,
    last_release_reason: Option<String>,
}

impl From<RecordV1> for ClaimRecord {
    fn from(v1: RecordV1) -> Self {
        ClaimRecord {
            key: v1.key,
            state: v1.state,
            fence: v1.fence,
            attempts: v1.attempts,
            first_seen_at: v1.first_seen_at,
            claimed_at: v1.claimed_at,
            lease_expires_at: v1.lease_expires_at,
            wait_ends_at: None,
            takeover: false,
            finished_at: v1.finished_at,
            released_at: v1.released_at,
            expires_at: v1.expires_at,
            last_release_reason: v1.last_release_reason,
            fingerprint: None,
            response: None,
            queue: None,
        }
    }
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
            .map(|stored| stored.record.into())
            .map_err(corrupt),
        // Schemas 2 and 3 lack only fields that default (`wait_ends_at`, `queue`).
        2..=4 => serde_json::from_str::<Stored<ClaimRecord>>(text)
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
    use crate::claim::CachedResponse;

    /// A record exactly as schema 1 stored it (taken from a local runtime's storage).
    const V1_DONE: &str = r#"{"schema":1,"record":{"key":"evt_1","state":"done","fence":"2.f515155574e710e156f296ffd961f38e","attempts":2,"first_seen_at":1796044969694,"claimed_at":1796044970000,"lease_expires_at":1796045870000,"finished_at":1796044971000,"released_at":null,"expires_at":1798636971000,"last_release_reason":"origin answered 500"}}"#;

    #[test]
    fn reads_a_schema_1_record() {
        let record = decode_record(V1_DONE).unwrap();
        assert_eq!(record.state, ClaimState::Done);
        assert_eq!(record.attempts, 2);
        assert_eq!(
            record.fence.to_string(),
            "2.f515155574e710e156f296ffd961f38e"
        );
        assert_eq!(
            record.last_release_reason.as_deref(),
            Some("origin answered 500")
        );
        assert_eq!((record.fingerprint, record.response), (None, None));
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
        assert_eq!(record.state, ClaimState::Done);
        assert_eq!(record.wait_ends_at, None);
    }

    #[test]
    fn writes_schema_4_and_reads_it_back() {
        let mut record = decode_record(V1_DONE).unwrap();
        record.fingerprint = Some("ab".repeat(32));
        record.response = Some(CachedResponse {
            status: 201,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![0, 159, 146, 150, b'{'],
            body_omitted: false,
            body_lost: false,
        });
        record.wait_ends_at = Some(1_796_044_999_000);
        let text = encode_record(&record);
        assert!(text.starts_with(r#"{"schema":4,"#), "{text}");
        assert!(
            text.contains(r#""body":"AJ+Slns=""#),
            "binary body as base64: {text}"
        );
        assert_eq!(decode_record(&text).unwrap(), record);
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
            &V1_DONE.replace(r#""attempts":2"#, r#""attempts":2,"extra":1"#),
            &V1_DONE.replace("done", "finished"),
        ] {
            assert!(
                matches!(decode_record(bad), Err(StoreError::Fatal(_))),
                "{bad:?}"
            );
        }
    }
}
