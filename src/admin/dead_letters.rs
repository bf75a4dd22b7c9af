//! The admin routes over the failure index: the dead-letter list, bulk redelivery and the
//! summary. The index answers what to look at; every redelivery goes through the event's own
//! object, with its own rules (refused under a live lease, refused without a body).

use serde_json::{json, Value};

use super::AdminAnswer;
use crate::answer::StoreFailure;
use crate::authority::AuthorityReply;
use crate::claim::{ForgetOutcome, Millis, RedeliverOutcome};
use crate::failures::query::{self, ListQuery};
use crate::failures::{Entry, EntryState, IndexReply, Page, Report};

/// The most events one bulk redelivery call redelivers; `next_cursor` goes on from there.
pub const REDELIVER_BATCH: usize = 25;

/// A call to a route over the failure index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexCall {
    /// `GET /admin/dead-letters`: one page of entries.
    List(ListQuery),
    /// `POST /admin/dead-letters/redeliver`: redeliver the dead entries of one page.
    Redeliver(ListQuery),
    /// `GET /admin/summary`: the counts.
    Summary,
}

/// The call `method` and `path` (after `/admin/`) make with the query string's `pairs`; `None`
/// when the path is no route of the index (a record's route, say), or the refusal (405, or a
/// 400 naming the bad filter; nothing read or written).
pub fn index_call<'a>(
    method: &str,
    path: &str,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<Result<IndexCall, AdminAnswer>> {
    let allowed = match path {
        "dead-letters" | "summary" => "GET",
        "dead-letters/redeliver" => "POST",
        _ => return None,
    };
    if method != allowed {
        return Some(Err(AdminAnswer::for_call_error(
            super::CallError::MethodNotAllowed(allowed),
        )));
    }
    if path == "summary" {
        return Some(Ok(IndexCall::Summary));
    }
    let query = match query::parse(pairs) {
        Ok(query) => query,
        Err(error) => {
            return Some(Err(AdminAnswer::new(
                400,
                json!({ "error": error.code, "detail": error.detail }),
                "admin_query_refused",
            )))
        }
    };
    Some(Ok(match path {
        "dead-letters" => IndexCall::List(query),
        _ => IndexCall::Redeliver(ListQuery {
            state: Some(EntryState::Dead),
            limit: query.limit.min(REDELIVER_BATCH),
            ..query
        }),
    }))
}

/// The index failed or answered out of turn.
fn index_failed() -> AdminAnswer {
    AdminAnswer::refused(
        503,
        "index_unavailable",
        "the failure index did not answer; try again",
        "admin_index_failed",
    )
}

/// The page the index answered, or the answer when it did not.
pub fn page(reply: IndexReply) -> Result<Page, AdminAnswer> {
    match reply {
        IndexReply::Page(page) => Ok(page),
        _ => Err(index_failed()),
    }
}

/// The answer to `GET /admin/dead-letters`.
pub fn list_answer(reply: IndexReply) -> AdminAnswer {
    match page(reply) {
        Ok(page) => AdminAnswer::new(
            200,
            json!({
                "items": page.items.iter().map(Entry::view).collect::<Vec<_>>(),
                "next_cursor": page.next_cursor.map(|cursor| cursor.encode()),
            }),
            "admin_dead_letters",
        ),
        Err(answer) => answer,
    }
}

/// The answer to `GET /admin/summary`.
pub fn summary_answer(reply: IndexReply) -> AdminAnswer {
    match reply {
        IndexReply::Summary(summary) => AdminAnswer::new(200, summary.view(), "admin_summary"),
        _ => index_failed(),
    }
}

/// What one event's redelivery came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redelivered {
    /// Queued again, due now.
    Queued,
    /// Left alone, for this reason (its code in the answer).
    Skipped(&'static str),
    /// Its object holds no body: ask whether it holds a record at all.
    NoBody,
}

/// What the event's object answered to its redelivery.
pub fn redelivered(reply: &AuthorityReply) -> Redelivered {
    match reply {
        AuthorityReply::Redeliver(RedeliverOutcome::Queued) => Redelivered::Queued,
        AuthorityReply::Redeliver(RedeliverOutcome::UnderLease { .. }) => {
            Redelivered::Skipped("lease_live")
        }
        AuthorityReply::Redeliver(RedeliverOutcome::NoBody) => Redelivered::NoBody,
        other => Redelivered::Skipped(match StoreFailure::of(other) {
            StoreFailure::Unavailable => "store_unavailable",
            StoreFailure::Failed => "store_failed",
        }),
    }
}

/// After an event's object held no body to redeliver, what its record says (read with
/// `Inspect`): the reason it is skipped, and whether its record is gone (the index then marks
/// the entry forgotten: an operator's forget whose report was lost, or an expiry).
pub fn after_no_body(inspected: &AuthorityReply) -> (&'static str, bool) {
    match inspected {
        AuthorityReply::Record { record: None } => ("not_found", true),
        AuthorityReply::Record { record: Some(_) } => ("no_body", false),
        other => match StoreFailure::of(other) {
            StoreFailure::Unavailable => ("store_unavailable", false),
            StoreFailure::Failed => ("store_failed", false),
        },
    }
}

/// The report that the event read by `inspected` was forgotten at `now`, when the forget went
/// through (`changed`) and the event had been dead-lettered (so the index shows it).
pub fn forgotten_report(
    inspected: &AuthorityReply,
    changed: &AuthorityReply,
    now: Millis,
) -> Option<Report> {
    let AuthorityReply::Record {
        record: Some(record),
    } = inspected
    else {
        return None;
    };
    matches!(changed, AuthorityReply::Forget(ForgetOutcome::Forgotten))
        .then(|| Report::forgotten(record, now))
        .flatten()
}

/// The answer to a bulk redelivery: how many were queued again, which were skipped and why,
/// and where the next call goes on.
pub fn redeliver_answer(
    queued: usize,
    skipped: &[(&Entry, &'static str)],
    page: &Page,
) -> AdminAnswer {
    let skipped: Vec<Value> = skipped
        .iter()
        .map(|(entry, reason)| json!({ "provider": entry.provider, "id": entry.id(), "reason": reason }))
        .collect();
    AdminAnswer::new(
        200,
        json!({
            "redelivered": queued,
            "skipped": skipped,
            "next_cursor": page.next_cursor.as_ref().map(|cursor| cursor.encode()),
        }),
        "admin_bulk_redelivered",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, path: &str, query: &str) -> Option<Result<IndexCall, AdminAnswer>> {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        index_call(
            method,
            path,
            pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        )
    }

    #[test]
    fn the_index_routes_and_their_refusals() {
        assert_eq!(call("GET", "events/evt_1", ""), None, "a record's route");
        assert_eq!(
            call("GET", "summary", "").unwrap().unwrap(),
            IndexCall::Summary
        );
        let Some(Ok(IndexCall::List(query))) =
            call("GET", "dead-letters", "provider=github&limit=500")
        else {
            panic!("a list")
        };
        assert_eq!(query.limit, 500);
        assert_eq!(query.state, None, "every state unless asked");
        let Some(Ok(IndexCall::Redeliver(query))) = call(
            "POST",
            "dead-letters/redeliver",
            "limit=500&state=recovered",
        ) else {
            panic!("a redelivery")
        };
        assert_eq!(query.limit, REDELIVER_BATCH, "bounded per call");
        assert_eq!(
            query.state,
            Some(EntryState::Dead),
            "only dead letters are redelivered"
        );
        let refused = call("POST", "dead-letters", "").unwrap().unwrap_err();
        assert_eq!((refused.status, refused.allow), (405, Some("GET")));
        let refused = call("GET", "dead-letters/redeliver", "")
            .unwrap()
            .unwrap_err();
        assert_eq!((refused.status, refused.allow), (405, Some("POST")));
        let refused = call("GET", "dead-letters", "since=friday")
            .unwrap()
            .unwrap_err();
        assert_eq!(refused.status, 400);
        assert_eq!(refused.body["error"], "invalid_time");
        let refused = call("POST", "dead-letters/redeliver", "cursor=zzz")
            .unwrap()
            .unwrap_err();
        assert_eq!(refused.body["error"], "invalid_cursor");
    }

    #[test]
    fn a_redelivery_is_counted_by_what_the_event_object_answered() {
        assert_eq!(
            redelivered(&AuthorityReply::Redeliver(RedeliverOutcome::Queued)),
            Redelivered::Queued
        );
        assert_eq!(
            redelivered(&AuthorityReply::Redeliver(RedeliverOutcome::UnderLease {
                lease_expires_at: 5
            })),
            Redelivered::Skipped("lease_live")
        );
        assert_eq!(
            redelivered(&AuthorityReply::Redeliver(RedeliverOutcome::NoBody)),
            Redelivered::NoBody
        );
        let busy = AuthorityReply::StoreFailed {
            retryable: true,
            detail: String::new(),
        };
        assert_eq!(
            redelivered(&busy),
            Redelivered::Skipped("store_unavailable")
        );
        assert_eq!(list_answer(IndexReply::Noted).status, 503);
    }
}
