//! The one structured log line written per request (and per event of the claim authority),
//! with a stable schema. Its words are typed values serialised to fixed words, so no code
//! compares log text.

use serde::{Serialize, Serializer};

use crate::claim::{ClaimState, SettleStep};
use crate::origin::Reason;
use crate::providers::Provider;
use crate::rate_limit::LimiterFault;

/// How much a line matters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The normal course of things.
    #[default]
    Info,
    /// A refusal, a fence conflict, an admin change, an abandoned claim.
    Warn,
    /// A 5xx of the service's own.
    Error,
}

impl Level {
    /// The level a request's own answer calls for: 5xx → error, 4xx → warn, else info.
    pub fn for_status(status: u16) -> Level {
        match status {
            500.. => Level::Error,
            400..=499 => Level::Warn,
            _ => Level::Info,
        }
    }
}

/// Which front door or job wrote the line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// `POST /webhooks/{provider}`, and queued attempts.
    #[default]
    Webhook,
    /// `/api/...`, the Idempotency-Key door.
    Idempotency,
    /// `/admin/...`.
    Admin,
    /// `/_test/...`.
    Test,
    /// `/healthz`.
    Health,
    /// A path no route serves.
    Unknown,
    /// The claim authority's alarm.
    Alarm,
    /// The claim authority itself (storage usage, alarm failures).
    Authority,
    /// The failure index and its notifications.
    Index,
    /// An origin's gate (see [`crate::origin_gate`]).
    Gate,
    /// A scheduled reconciliation (see [`crate::reconcile`]).
    Reconcile,
}

impl Route {
    /// The route's word, as serialised (log lines, metrics).
    pub fn word(self) -> &'static str {
        match self {
            Route::Webhook => "webhook",
            Route::Idempotency => "idempotency",
            Route::Admin => "admin",
            Route::Test => "test",
            Route::Health => "health",
            Route::Unknown => "unknown",
            Route::Alarm => "alarm",
            Route::Authority => "authority",
            Route::Index => "index",
            Route::Gate => "gate",
            Route::Reconcile => "reconcile",
        }
    }
}

/// What happened: a typed value written as one stable word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Not known (a line written before the outcome was decided).
    #[default]
    Unknown,
    /// Forwarded, and the origin succeeded.
    Processed,
    /// Already processed: acknowledged without running anything.
    Duplicate,
    /// Another delivery holds a live claim.
    InFlight,
    /// The origin answered non-2xx (webhook), or a non-final answer (Idempotency-Key).
    OriginFailed,
    /// No answer within the forward time-out.
    OriginTimeout,
    /// No answer at all.
    OriginUnreachable,
    /// A keyed request ran at the origin and its final answer was passed on.
    Executed,
    /// A keyed request's stored answer was replayed.
    Replayed,
    /// A request without a key passed through untouched.
    PassedThrough,
    /// The origin answered after the sender was answered; the claim was settled on it.
    LateAnswer,
    /// An answer's body ended after it was passed on; the claim was settled.
    AnswerSettled,
    /// The wait for an answer ended without one; the claim is kept until its lease ends.
    AnswerLost,
    /// Queue mode: stored and acknowledged.
    Queued,
    /// Queue mode: an attempt delivered the event (the origin answered 2xx).
    Delivered,
    /// Queue mode: an attempt failed; the next one is scheduled.
    RetryScheduled,
    /// Queue mode: the last allowed attempt failed; the event is dead-lettered.
    DeadLettered,
    /// An origin's breaker opened: its failures in a row reached `ORIGIN_BREAKER_FAILURES`.
    BreakerOpened,
    /// An origin's breaker closed: a probe was answered below 500.
    BreakerClosed,
    /// Queue mode: the origin's gate held an attempt back (a pause, a cap, an open breaker);
    /// nothing was sent, and the event is queued again without counting an attempt.
    Held,
    /// A scheduled reconciliation ran for one sender: its counts and errors are on the line.
    Reconciled,
    /// A settle was refused: the claim is no longer this attempt's (its lease ran out and it
    /// was taken over, or an operator released it).
    FenceConflict,
    /// A settle failed on every try before the lease ended.
    SettleFailed,
    /// A record's retention ended and the alarm deleted it.
    Expired,
    /// A claim nobody finished was deleted at the end of its retention.
    ExpiredAbandonedClaim,
    /// Setting the alarm after a write failed.
    AlarmNotSet,
    /// The alarm's work failed (storage trouble, an unreadable record); it runs again later.
    AlarmFailed,
    /// A rate limiter gave no verdict (a binding of the wrong kind, a failed call): the request
    /// went on without a limit.
    RateLimitFailed,
    /// A sender that is off was asked: answered as one that is on and refuses.
    SenderOff,
    /// An event's changes its object could not hand to the failure index.
    IndexReportFailed,
    /// A notification was sent and taken.
    NotificationSent,
    /// A notification was not taken; it is sent again.
    NotificationRetry,
    /// A notification was dropped once its tries were spent.
    NotificationDropped,
    /// What an admin API request did.
    Admin(AdminWord),
    /// One claim authority operation, for the storage usage log (`claim`, `deliver`, …).
    Operation(&'static str),
    /// A refusal, by the error code of the answer given (`signature_mismatch`,
    /// `store_unavailable`, `rate-limited`, `not_found`, …): the typed error's or problem's own
    /// code, never a word of its own.
    Refused(&'static str),
}

/// What an admin API request did, as its log line's outcome (`admin_…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdminWord {
    /// A record shown.
    Inspected,
    /// A claim released.
    Released,
    /// A release refused (the lease is live, the record is done, the fence moved on).
    ReleaseRefused,
    /// A record forgotten.
    Forgotten,
    /// A forget refused.
    ForgetRefused,
    /// A dead letter queued again.
    Redelivered,
    /// A redelivery refused.
    RedeliverRefused,
    /// Dead letters queued again in bulk.
    BulkRedelivered,
    /// A page of dead letters listed.
    DeadLetters,
    /// The failure index's counts shown.
    Summary,
    /// A list query refused (a bad filter, range, cursor or limit).
    QueryRefused,
    /// No such record or route.
    NotFound,
    /// The failure index failed.
    IndexFailed,
    /// The claim store failed.
    StoreFailed,
    /// The operator page or one of its assets.
    Page,
    /// The origins and their gates' states listed.
    Origins,
    /// An origin paused by an operator.
    OriginPaused,
    /// An origin resumed by an operator.
    OriginResumed,
    /// A pause or resume refused (bad JSON, an origin the worker does not deliver to).
    OriginRefused,
    /// An origin's gate failed.
    GateFailed,
    /// A reconciliation call ran (`POST /admin/reconcile`).
    ReconcileRun,
    /// A reconciliation call was refused (bad input, or the sender refused the key).
    ReconcileRefused,
    /// The reconciliations' last runs were listed (`GET /admin/reconcile`).
    Reconciliations,
}

impl AdminWord {
    /// The word written in the log line.
    pub fn word(self) -> &'static str {
        match self {
            AdminWord::Inspected => "admin_inspected",
            AdminWord::Released => "admin_released",
            AdminWord::ReleaseRefused => "admin_release_refused",
            AdminWord::Forgotten => "admin_forgotten",
            AdminWord::ForgetRefused => "admin_forget_refused",
            AdminWord::Redelivered => "admin_redelivered",
            AdminWord::RedeliverRefused => "admin_redeliver_refused",
            AdminWord::BulkRedelivered => "admin_bulk_redelivered",
            AdminWord::DeadLetters => "admin_dead_letters",
            AdminWord::Summary => "admin_summary",
            AdminWord::QueryRefused => "admin_query_refused",
            AdminWord::NotFound => "admin_not_found",
            AdminWord::IndexFailed => "admin_index_failed",
            AdminWord::StoreFailed => "admin_store_failed",
            AdminWord::Page => "admin_page",
            AdminWord::Origins => "admin_origins",
            AdminWord::OriginPaused => "admin_origin_paused",
            AdminWord::OriginResumed => "admin_origin_resumed",
            AdminWord::OriginRefused => "admin_origin_refused",
            AdminWord::GateFailed => "admin_gate_failed",
            AdminWord::ReconcileRun => "admin_reconciled",
            AdminWord::ReconcileRefused => "admin_reconcile_refused",
            AdminWord::Reconciliations => "admin_reconciliations",
        }
    }
}

impl Outcome {
    /// The word written in the log line.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Unknown => "unknown",
            Outcome::Processed => "processed",
            Outcome::Duplicate => "duplicate",
            Outcome::InFlight => "in_flight",
            Outcome::OriginFailed => "origin_failed",
            Outcome::OriginTimeout => "origin_timeout",
            Outcome::OriginUnreachable => "origin_unreachable",
            Outcome::Executed => "executed",
            Outcome::Replayed => "replayed",
            Outcome::PassedThrough => "passed_through",
            Outcome::LateAnswer => "late_answer",
            Outcome::AnswerSettled => "answer_settled",
            Outcome::AnswerLost => "answer_lost",
            Outcome::Queued => "queued",
            Outcome::Delivered => "delivered",
            Outcome::RetryScheduled => "retry_scheduled",
            Outcome::DeadLettered => "dead_lettered",
            Outcome::Held => "held",
            Outcome::BreakerOpened => "breaker_opened",
            Outcome::BreakerClosed => "breaker_closed",
            Outcome::Reconciled => "reconciled",
            Outcome::FenceConflict => "fence_conflict",
            Outcome::SettleFailed => "settle_failed",
            Outcome::Expired => "expired",
            Outcome::ExpiredAbandonedClaim => "expired_abandoned_claim",
            Outcome::AlarmNotSet => "alarm_not_set",
            Outcome::AlarmFailed => "alarm_failed",
            Outcome::RateLimitFailed => "rate_limit_failed",
            Outcome::SenderOff => "sender_off",
            Outcome::IndexReportFailed => "index_report_failed",
            Outcome::NotificationSent => "notification_sent",
            Outcome::NotificationRetry => "notification_retry",
            Outcome::NotificationDropped => "notification_dropped",
            Outcome::Admin(word) => word.word(),
            Outcome::Operation(word) | Outcome::Refused(word) => word,
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.word())
    }
}

/// One log line. Fields that do not apply are left out. Never holds a payload or a secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct LogLine {
    /// How much it matters.
    pub level: Level,
    /// Which front door or job.
    pub route: Route,
    /// The webhook sender (`stripe`, `standard`, `github`, `shopify`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    /// The HTTP method of the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The claim key (a Stripe event id, `{provider}:{delivery id}` for the other senders, or
    /// an Idempotency-Key scope hash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The event type (Stripe's `type`, GitHub's event, Shopify's topic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_type: Option<String>,
    /// What happened.
    pub outcome: Outcome,
    /// The status answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Which attempt of the key this was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// True when the claim took over one whose lease ran out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub takeover: Option<bool>,
    /// The origin's status, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_status: Option<u16>,
    /// How long the origin took.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin_ms: Option<u64>,
    /// How long the whole request took in the worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The record's state, for alarm lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<ClaimState>,
    /// What the settle did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle: Option<SettleStep>,
    /// SQLite rows read by one claim authority operation (`LOG_STORAGE_USAGE=true` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_read: Option<u64>,
    /// SQLite rows written by it, each alarm set counted as one (`LOG_STORAGE_USAGE=true` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_written: Option<u64>,
    /// A short human explanation (never a payload or secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The answer's status was the origin's, passed on: it says nothing about this service's
    /// health, so it does not raise the level. Not written.
    #[serde(skip)]
    pub status_from_origin: bool,
}

impl LogLine {
    /// A line for `route`, at `info`, with nothing else known yet.
    pub fn new(route: Route) -> LogLine {
        LogLine {
            route,
            ..LogLine::default()
        }
    }

    /// Records the status answered, raising the level for this service's own 4xx (warn) and
    /// 5xx (error), never lowering one raised before; an origin's status passed on raises
    /// nothing.
    pub fn answered(&mut self, status: u16) {
        self.status = Some(status);
        if !self.status_from_origin {
            self.level = self.level.max(Level::for_status(status));
        }
    }

    /// Raises the level to at least `level`.
    pub fn raise(&mut self, level: Level) {
        self.level = self.level.max(level);
    }

    /// The line of a record the retention alarm deleted; an abandoned claim (still
    /// `processing`) is a warning.
    pub fn expired(key: &str, state: ClaimState) -> LogLine {
        let abandoned = state == ClaimState::Processing;
        LogLine {
            level: if abandoned { Level::Warn } else { Level::Info },
            key: Some(key.to_owned()),
            outcome: if abandoned {
                Outcome::ExpiredAbandonedClaim
            } else {
                Outcome::Expired
            },
            state: Some(state),
            ..LogLine::new(Route::Alarm)
        }
    }

    /// The line of the rows one claim authority operation `op` read and wrote for `key`.
    pub fn usage(key: &str, op: &'static str, rows_read: u64, rows_written: u64) -> LogLine {
        LogLine {
            key: Some(key.to_owned()),
            outcome: Outcome::Operation(op),
            rows_read: Some(rows_read),
            rows_written: Some(rows_written),
            ..LogLine::new(Route::Authority)
        }
    }

    /// The line of a rate limiter (the binding `binding`) that gave no verdict on a request
    /// to `route`: the request went on unlimited (see [`crate::rate_limit::Check::admits`]).
    pub fn rate_limit_failed(route: Route, binding: &str, fault: LimiterFault) -> LogLine {
        LogLine {
            level: Level::Error,
            outcome: Outcome::RateLimitFailed,
            detail: Some(format!(
                "{binding}: {}; the request went on without a limit",
                fault.describe()
            )),
            ..LogLine::new(route)
        }
    }

    /// The line of a `setAlarm` that failed after a write (the next request sets it).
    pub fn alarm_not_set(detail: &str) -> LogLine {
        LogLine {
            level: Level::Error,
            outcome: Outcome::AlarmNotSet,
            detail: Some(detail.to_owned()),
            ..LogLine::new(Route::Authority)
        }
    }

    /// The line of a notification: sent (`failed` none), or not accepted and tried again, or
    /// dropped once its tries were spent (`gave_up`).
    pub fn notification(id: &str, kind: &str, failed: Option<(&str, bool)>) -> LogLine {
        let (level, outcome, detail) = match failed {
            None => (Level::Info, Outcome::NotificationSent, None),
            Some((detail, false)) => (Level::Warn, Outcome::NotificationRetry, Some(detail)),
            Some((detail, true)) => (Level::Error, Outcome::NotificationDropped, Some(detail)),
        };
        LogLine {
            level,
            outcome,
            key: Some(id.to_owned()),
            event_type: Some(kind.to_owned()),
            detail: detail.map(str::to_owned),
            ..LogLine::new(Route::Index)
        }
    }

    /// The line of an event's changes its object could not hand to the failure index (sent
    /// again after a back-off, by its alarm).
    pub fn report_failed(key: &str, detail: &str) -> LogLine {
        LogLine {
            level: Level::Warn,
            outcome: Outcome::IndexReportFailed,
            key: Some(key.to_owned()),
            detail: Some(detail.to_owned()),
            ..LogLine::new(Route::Alarm)
        }
    }

    /// The line of an alarm whose work failed; `detail` says why and when it runs again.
    pub fn alarm_failed(detail: &str) -> LogLine {
        LogLine {
            level: Level::Error,
            outcome: Outcome::AlarmFailed,
            detail: Some(detail.to_owned()),
            ..LogLine::new(Route::Alarm)
        }
    }

    /// The line of a queued event of `provider` dead-lettered when its attempt came due with no
    /// attempt left in its budget (no forward was made).
    pub fn dead_before_attempt(provider: Provider, key: &str, reason: Reason) -> LogLine {
        LogLine {
            level: Level::Error,
            provider: Some(provider),
            key: Some(key.to_owned()),
            outcome: Outcome::DeadLettered,
            detail: Some(reason.to_string()),
            ..LogLine::new(Route::Webhook)
        }
    }

    /// The line as compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a log line always serialises")
    }
}

/// One data point of the metrics dataset (Workers Analytics Engine), made from a log line:
/// what its queries group and sum by.
#[derive(Clone, Debug, PartialEq)]
pub struct DataPoint<'a> {
    /// The sampling index: the route.
    pub index: &'static str,
    /// Route, outcome, settle step, event type (or method), provider; `""` where the line has
    /// none.
    pub blobs: [&'a str; 5],
    /// 1 (the count), status, duration in ms, origin time in ms; 0 where the line has none.
    pub doubles: [f64; 4],
}

impl LogLine {
    /// The line's data point (see [`DataPoint`]).
    pub fn data_point(&self) -> DataPoint<'_> {
        let kind = self.event_type.as_deref().or(self.method.as_deref());
        DataPoint {
            index: self.route.word(),
            blobs: [
                self.route.word(),
                self.outcome.word(),
                self.settle.map_or("", |step| step.word()),
                kind.unwrap_or(""),
                self.provider.map_or("", |p| p.name()),
            ],
            doubles: [
                1.0,
                f64::from(self.status.unwrap_or(0)),
                self.duration_ms.unwrap_or(0) as f64,
                self.origin_ms.unwrap_or(0) as f64,
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every outcome a line can carry, bar the operation words and the error codes (which
    /// other tables document). The match fails to build when a variant is added, so that the
    /// list and the guide grow with it.
    fn every_named_outcome() -> Vec<Outcome> {
        use Outcome::*;
        let named = |outcome: Outcome| match outcome {
            Unknown
            | Processed
            | Duplicate
            | InFlight
            | OriginFailed
            | OriginTimeout
            | OriginUnreachable
            | Executed
            | Replayed
            | PassedThrough
            | LateAnswer
            | AnswerSettled
            | AnswerLost
            | Queued
            | Delivered
            | RetryScheduled
            | DeadLettered
            | Held
            | BreakerOpened
            | BreakerClosed
            | Reconciled
            | FenceConflict
            | SettleFailed
            | Expired
            | ExpiredAbandonedClaim
            | AlarmNotSet
            | AlarmFailed
            | RateLimitFailed
            | SenderOff
            | IndexReportFailed
            | NotificationSent
            | NotificationRetry
            | NotificationDropped
            | Admin(_) => outcome,
            Operation(_) | Refused(_) => unreachable!("not named here"),
        };
        let mut all = vec![
            Unknown,
            Processed,
            Duplicate,
            InFlight,
            OriginFailed,
            OriginTimeout,
            OriginUnreachable,
            Executed,
            Replayed,
            PassedThrough,
            LateAnswer,
            AnswerSettled,
            AnswerLost,
            Queued,
            Delivered,
            RetryScheduled,
            DeadLettered,
            Held,
            BreakerOpened,
            BreakerClosed,
            Reconciled,
            FenceConflict,
            SettleFailed,
            Expired,
            ExpiredAbandonedClaim,
            AlarmNotSet,
            AlarmFailed,
            RateLimitFailed,
            SenderOff,
            IndexReportFailed,
            NotificationSent,
            NotificationRetry,
            NotificationDropped,
        ];
        use AdminWord::*;
        all.extend(
            [
                Inspected,
                Released,
                ReleaseRefused,
                Forgotten,
                ForgetRefused,
                Redelivered,
                RedeliverRefused,
                BulkRedelivered,
                DeadLetters,
                Summary,
                QueryRefused,
                NotFound,
                IndexFailed,
                StoreFailed,
                Page,
                Origins,
                OriginPaused,
                OriginResumed,
                OriginRefused,
                GateFailed,
                ReconcileRun,
                ReconcileRefused,
                Reconciliations,
            ]
            .map(Admin),
        );
        all.into_iter().map(named).collect()
    }

    /// The operating guide's table of outcomes explains every word a line can carry.
    #[test]
    fn every_outcome_is_explained_in_the_operating_guide() {
        let guide = include_str!("../docs/operating.md");
        let table = guide
            .split("### Outcomes")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/operating.md has a section \"### Outcomes\"");
        let outcomes = every_named_outcome();
        assert!(outcomes.len() > 40, "{} outcomes", outcomes.len());
        let missing: Vec<&str> = outcomes
            .iter()
            .map(|outcome| outcome.word())
            .filter(|word| !table.contains(&format!("`{word}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/operating.md, Outcomes: no row explains {missing:?}"
        );
    }

    /// A line's data point carries its words and figures in the dataset's fixed places, with
    /// `""` and 0 where the line has none.
    #[test]
    fn a_data_point_puts_each_word_and_figure_in_its_place() {
        let line = LogLine {
            outcome: Outcome::Processed,
            provider: Some(Provider::Github),
            method: Some("POST".into()),
            status: Some(200),
            duration_ms: Some(12),
            ..LogLine::new(Route::Webhook)
        };
        let point = line.data_point();
        assert_eq!(point.index, "webhook");
        assert_eq!(point.blobs, ["webhook", "processed", "", "POST", "github"]);
        assert_eq!(point.doubles, [1.0, 200.0, 12.0, 0.0]);
        let typed = LogLine {
            event_type: Some("invoice.paid".into()),
            ..line
        };
        assert_eq!(
            typed.data_point().blobs[3],
            "invoice.paid",
            "the event type before the method"
        );
        let bare = LogLine::new(Route::Health);
        assert_eq!(bare.data_point().doubles, [1.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn fields_that_do_not_apply_are_left_out() {
        let line = LogLine {
            key: Some("evt_1".into()),
            outcome: Outcome::Duplicate,
            status: Some(200),
            ..LogLine::new(Route::Webhook)
        };
        assert_eq!(
            line.to_json(),
            r#"{"level":"info","route":"webhook","key":"evt_1","outcome":"duplicate","status":200}"#
        );
    }

    #[test]
    fn the_level_follows_the_answer_unless_it_is_the_origin_s() {
        let mut line = LogLine::new(Route::Idempotency);
        line.answered(409);
        assert_eq!(line.level, Level::Warn);
        line.answered(503);
        assert_eq!(line.level, Level::Error);
        let mut passed = LogLine::new(Route::Idempotency);
        passed.status_from_origin = true;
        passed.answered(500);
        assert_eq!(passed.level, Level::Info);
        let mut raised = LogLine::new(Route::Webhook);
        raised.raise(Level::Warn);
        raised.answered(200);
        assert_eq!(raised.level, Level::Warn, "never lowered");
    }

    #[test]
    fn typed_words_serialise_to_the_documented_words() {
        let line = LogLine {
            outcome: Outcome::Refused("signature_mismatch"),
            settle: Some(SettleStep::FenceConflict),
            level: Level::Error,
            ..LogLine::new(Route::Alarm)
        };
        assert_eq!(
            line.to_json(),
            r#"{"level":"error","route":"alarm","outcome":"signature_mismatch","settle":"fence_conflict"}"#
        );
        assert_eq!(
            Outcome::ExpiredAbandonedClaim.word(),
            "expired_abandoned_claim"
        );
        assert_eq!(Outcome::InFlight.word(), "in_flight");
    }
}
