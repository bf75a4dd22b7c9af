//! The claim store over the Durable Object's SQLite storage.

use wasm_bindgen::JsValue;
use worker::{SqlStorage, SqlStorageValue};

use crate::claim::{decode_record, encode_record, ClaimRecord, ClaimStore, StoreError};

/// A [`ClaimStore`] in one Durable Object's SQLite database: one row per key, the record as
/// versioned JSON. Every call is synchronous, so a rule's load and save are one atomic step.
/// The table is created by the first write only, so reading an empty object leaves it empty.
pub struct SqlClaimStore {
    sql: SqlStorage,
    has_table: bool,
}

#[derive(serde::Deserialize)]
struct Row {
    record: String,
}

#[derive(serde::Deserialize)]
struct KeyRow {
    key: String,
}

#[derive(serde::Deserialize)]
struct NameRow {
    #[allow(dead_code)]
    name: String,
}

impl SqlClaimStore {
    /// The store over `sql`; `has_table` is what the caller knows of the table, if anything.
    pub fn open(sql: SqlStorage, has_table: Option<bool>) -> Result<Self, StoreError> {
        let has_table = match has_table {
            Some(known) => known,
            None => {
                let rows: Vec<NameRow> = sql
                    .exec(
                        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'claims'",
                        None,
                    )
                    .and_then(|cursor| cursor.to_array())
                    .map_err(store_error)?;
                !rows.is_empty()
            }
        };
        Ok(SqlClaimStore { sql, has_table })
    }

    /// Whether the table exists now.
    pub fn has_table(&self) -> bool {
        self.has_table
    }
}

/// Classifies a storage exception: flagged `retryable` or `overloaded` → retryable, else fatal.
pub fn store_error(error: worker::Error) -> StoreError {
    let value = error.to_js_value();
    if js_flag(&value, "retryable") || js_flag(&value, "overloaded") {
        StoreError::Retryable(error.to_string())
    } else {
        StoreError::Fatal(error.to_string())
    }
}

/// True when the JS value has property `name` set to `true`.
pub fn js_flag(value: &JsValue, name: &str) -> bool {
    js_sys::Reflect::get(value, &JsValue::from_str(name))
        .map(|flag| flag.as_bool() == Some(true))
        .unwrap_or(false)
}

impl ClaimStore for SqlClaimStore {
    fn load(&mut self, key: &str) -> Result<Option<ClaimRecord>, StoreError> {
        if !self.has_table {
            return Ok(None);
        }
        let rows: Vec<Row> = self
            .sql
            .exec(
                "SELECT record FROM claims WHERE key = ?",
                vec![SqlStorageValue::from(key.to_owned())],
            )
            .and_then(|cursor| cursor.to_array())
            .map_err(store_error)?;
        rows.first()
            .map(|row| decode_record(&row.record))
            .transpose()
    }

    fn save(&mut self, record: &ClaimRecord) -> Result<(), StoreError> {
        if !self.has_table {
            self.sql
                .exec(
                    "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID",
                    None,
                )
                .map_err(store_error)?;
            self.has_table = true;
        }
        self.sql
            .exec(
                "INSERT INTO claims (key, record) VALUES (?, ?) \
                 ON CONFLICT (key) DO UPDATE SET record = excluded.record",
                vec![
                    SqlStorageValue::from(record.key.clone()),
                    SqlStorageValue::from(encode_record(record)),
                ],
            )
            .map(|_| ())
            .map_err(store_error)
    }

    fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        if !self.has_table {
            return Ok(());
        }
        self.sql
            .exec(
                "DELETE FROM claims WHERE key = ?",
                vec![SqlStorageValue::from(key.to_owned())],
            )
            .map(|_| ())
            .map_err(store_error)
    }

    fn keys(&mut self) -> Result<Vec<String>, StoreError> {
        if !self.has_table {
            return Ok(Vec::new());
        }
        let rows: Vec<KeyRow> = self
            .sql
            .exec("SELECT key FROM claims", None)
            .and_then(|cursor| cursor.to_array())
            .map_err(store_error)?;
        Ok(rows.into_iter().map(|row| row.key).collect())
    }
}
