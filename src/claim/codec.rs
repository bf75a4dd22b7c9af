//! The stored form of a claim record: JSON tagged with a schema version.

use serde::{Deserialize, Serialize};

use super::record::ClaimRecord;
use super::store::StoreError;

/// The schema version this build writes. Every earlier version stays readable.
pub const SCHEMA_VERSION: u32 = 1;

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
struct EnvelopeV1 {
    #[allow(dead_code)]
    schema: u32,
    record: ClaimRecord,
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
    match tag.schema {
        1 => serde_json::from_str::<EnvelopeV1>(text)
            .map(|stored| stored.record)
            .map_err(|e| StoreError::Fatal(format!("stored claim record (schema 1): {e}"))),
        other => Err(StoreError::Fatal(format!(
            "stored claim record has schema {other}; this build reads 1 to {SCHEMA_VERSION}"
        ))),
    }
}
