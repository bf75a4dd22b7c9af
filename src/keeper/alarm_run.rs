//! The object's alarm: expire what retention ended, run the queue attempts that are due, send
//! the failure index what it has not acknowledged, and re-arm.

use super::{Keeper, ObjectIo};
use crate::authority::alarm::{self, Rearm};
use crate::claim::{self, ClaimStore, Millis, StoreError, Usage};
use crate::log_line::LogLine;

/// What one alarm run read and wrote, and the record it ran for (the first record it met: an
/// object holds one record in practice), for `LOG_STORAGE_USAGE=true`.
#[derive(Default)]
struct Spent {
    key: Option<String>,
    usage: Usage,
}

impl Spent {
    fn add(&mut self, usage: Usage) {
        self.usage.rows_read += usage.rows_read;
        self.usage.rows_written += usage.rows_written;
    }
}

impl<I: ObjectIo> Keeper<I> {
    /// Runs the alarm (see [`Keeper::sweep_and_run`]) and sets the next one. When that fails
    /// (storage trouble, an unreadable record), the alarm makes sure it fires again by when the
    /// work needs it, within a minute at the latest (an earlier alarm already set, say for a
    /// retry this run scheduled, is kept), instead of failing: the runtime retries a failing
    /// alarm only a few times, about two minutes in all, and then drops it, which would leave
    /// an acknowledged queue event waiting for ever. Only if even that alarm cannot be set is
    /// `Err` returned, for the runtime's own retries.
    pub async fn alarm(&self) -> Result<(), String> {
        let ran_at = self.io.now_ms();
        let mut spent = Spent::default();
        let (wanted, error) = match self.sweep_and_run(ran_at, &mut spent).await {
            // Nothing left: the whole storage goes, metadata and alarm too.
            Ok(Rearm::DeleteAll) => {
                self.log_alarm_usage(&spent, 0);
                return self.delete_all().await;
            }
            Ok(Rearm::At(at)) => match self.set_alarm_at(at).await {
                Ok(()) => {
                    self.log_alarm_usage(&spent, 1);
                    return Ok(());
                }
                Err(error) => (Some(at), error),
            },
            Err(error) => (None, error.to_string()),
        };
        let retry_at = alarm::retry_after_failed_rearm(wanted, self.io.now_ms());
        match self.set_alarm_by(retry_at).await {
            Ok(at) => {
                let detail = format!("{error}; the alarm runs again at {at}");
                self.io.write(&LogLine::alarm_failed(&detail));
                Ok(())
            }
            Err(set_error) => {
                let detail = format!(
                    "{error}; setting the next alarm failed too ({set_error}): the runtime retries"
                );
                self.io.write(&LogLine::alarm_failed(&detail));
                Err(set_error)
            }
        }
    }

    /// Deletes what expired, runs the due attempts, sends the due reports, and says how to
    /// re-arm.
    async fn sweep_and_run(&self, ran_at: Millis, spent: &mut Spent) -> Result<Rearm, StoreError> {
        let (sweep, keys) = self.io.open().and_then(|mut store| {
            let sweep = claim::expire(&mut store, ran_at)?;
            let keys = store.keys()?;
            spent.add(store.usage);
            Ok((sweep, keys))
        })?;
        spent.key = (sweep.expired.iter().map(|expired| &expired.key))
            .chain(&keys)
            .next()
            .cloned();
        for expired in &sweep.expired {
            self.io
                .write(&LogLine::expired(&expired.key, expired.state));
        }
        // Queue mode: deliver what is due (at most one record per object, in practice).
        for key in &keys {
            self.run_due(key).await;
        }
        let now = self.io.now_ms();
        let mut store = self.io.open()?;
        let (rearm, reports) = alarm::rearm_and_reports(&mut store, ran_at, now)?;
        spent.add(store.usage);
        if reports.is_empty() {
            return Ok(rearm);
        }
        // Changes the failure index has not acknowledged (after a dead letter, a redelivery or
        // a recovery only: a healthy delivery never gets here).
        for key in &reports {
            self.send_due(key).await;
        }
        alarm::rearm(&mut self.io.open()?, ran_at, self.io.now_ms())
    }

    /// With `LOG_STORAGE_USAGE=true`, logs what an alarm run read and wrote as the operation
    /// `alarm` (one object request each: the runtime bills an alarm's run as one), with
    /// `alarms_set` alarms set, each a row written. The queued attempts and reports it ran log
    /// their own rows.
    fn log_alarm_usage(&self, spent: &Spent, alarms_set: u64) {
        if self.log_usage {
            let key = spent.key.as_deref().unwrap_or_default();
            let written = spent.usage.rows_written + alarms_set;
            self.io.write(&LogLine::usage(
                key,
                "alarm",
                spent.usage.rows_read,
                written,
            ));
        }
    }
}
