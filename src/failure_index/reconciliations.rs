//! Where each sender's reconciliation stands (see [`crate::reconcile::progress`]), kept in
//! the failure index: one record per sender, changed in one step per run.

use super::IndexStore;
use crate::claim::StoreError;
use crate::reconcile::progress::{Progress, Ran};
use crate::reconcile::SenderLog;

/// The key of `log`'s progress in the failure index's store.
fn progress_key(log: SenderLog) -> String {
    format!("r:{}", log.name())
}

/// Records `ran` in `log`'s progress, in one step of the failure index (so runs side by side
/// never lose one another's pass).
pub fn record<S: IndexStore>(store: &mut S, ran: &Ran) -> Result<(), StoreError> {
    let log = ran.call.log;
    let key = progress_key(log);
    let mut progress = match store.get(&key)? {
        Some(text) => serde_json::from_str(&text).unwrap_or_else(|_| Progress::new(log)),
        None => Progress::new(log),
    };
    progress.ran(&ran.call, &ran.outcome, ran.at, ran.scheduled);
    let text = serde_json::to_string(&progress)
        .map_err(|error| StoreError::Fatal(format!("a reconciliation's progress: {error}")))?;
    store.put(&key, &text)
}

/// Every sender's progress, for the senders that ran (an unreadable one reads as new).
pub fn read_all<S: IndexStore>(store: &mut S) -> Result<Vec<Progress>, StoreError> {
    let mut all = Vec::new();
    for log in SenderLog::ALL {
        if let Some(text) = store.get(&progress_key(log))? {
            all.push(serde_json::from_str(&text).unwrap_or_else(|_| Progress::new(log)));
        }
    }
    Ok(all)
}
