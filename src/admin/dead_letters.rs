//! The admin routes over the failure index: the dead-letter list, bulk redelivery and the
//! summary. The index answers what to look at; every redelivery goes through the event's own
//! object, with its own rules (refused under a live lease, refused without a body).

use serde_json::{json, Value};

use super::AdminAnswer;
use crate::answer::StoreFailure;
use crate::claim::{ClaimPolicy, ForgetOutcome, Millis, RedeliverOutcome};
use crate::claim_authority::{AuthorityReply, AuthorityRequest};
use crate::failure_index::query::{self, ListQuery};
use crate::failure_index::{Entry, EntryState, IndexReply, IndexReport, IndexRequest, Page};
use crate::log_line::{AdminWord, Outcome};

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
                Outcome::Admin(AdminWord::QueryRefused),
            )))
        }
    };
    if path != "dead-letters" && query.state.is_some_and(|state| state != EntryState::Dead) {
        return Some(Err(AdminAnswer::new(
            400,
            json!({ "error": "invalid_state", "detail": "a redelivery takes dead letters only: leave `state` out, or give dead" }),
            Outcome::Admin(AdminWord::QueryRefused),
        )));
    }
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
pub(super) fn index_failed() -> AdminAnswer {
    AdminAnswer::refused_as(
        503,
        "index_unavailable",
        "the failure index did not answer; try again",
        AdminWord::IndexFailed,
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
            Outcome::Admin(AdminWord::DeadLetters),
        ),
        Err(answer) => answer,
    }
}

/// The answer to `GET /admin/summary`.
pub fn summary_answer(reply: IndexReply) -> AdminAnswer {
    match reply {
        IndexReply::Summary(summary) => {
            AdminAnswer::new(200, summary.view(), Outcome::Admin(AdminWord::Summary))
        }
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
    /// Left alone: the stored event is gone (deleted, or stored again since), so the index
    /// marks its entry forgotten. The reason's code.
    Gone(&'static str),
}

/// What the event's object answered to a bulk redelivery of one dead stored event (see
/// [`crate::claim::redeliver_dead`]).
pub fn redelivered(reply: &AuthorityReply) -> Redelivered {
    match reply {
        AuthorityReply::Redeliver(RedeliverOutcome::Queued) => Redelivered::Queued,
        AuthorityReply::Redeliver(RedeliverOutcome::UnderLease { .. }) => {
            Redelivered::Skipped("lease_live")
        }
        AuthorityReply::Redeliver(RedeliverOutcome::NotDead {
            same_event: true, ..
        }) => Redelivered::Skipped("not_dead"),
        AuthorityReply::Redeliver(RedeliverOutcome::NotDead {
            same_event: false, ..
        }) => Redelivered::Gone("stored_again"),
        AuthorityReply::Redeliver(RedeliverOutcome::NoBody) => Redelivered::Gone("not_found"),
        other => Redelivered::Skipped(match StoreFailure::of(other) {
            StoreFailure::Unavailable => "store_unavailable",
            StoreFailure::Failed => "store_failed",
        }),
    }
}

/// The report that the event read by `inspected` was forgotten at `now`, when the forget went
/// through (`changed`) and the event had been dead-lettered (so the index shows it).
pub fn forgotten_report(
    inspected: &AuthorityReply,
    changed: &AuthorityReply,
    now: Millis,
) -> Option<IndexReport> {
    let AuthorityReply::Record {
        record: Some(record),
    } = inspected
    else {
        return None;
    };
    matches!(changed, AuthorityReply::Forget(ForgetOutcome::Forgotten))
        .then(|| IndexReport::forgotten(record, now))
        .flatten()
}

/// A bulk redelivery of one page of dead entries, each through its own event's object, with no
/// I/O: it hands out one request at a time ([`Bulk::next_request`]), takes each object's answer
/// ([`Bulk::take`]), and answers when every entry has had its turn ([`Bulk::answer`]).
#[derive(Debug)]
pub struct Bulk {
    page: Page,
    policy: ClaimPolicy,
    /// How many entries have had their turn.
    done: usize,
    queued: usize,
    /// Each entry skipped (by its place in the page), with why.
    skipped: Vec<(usize, &'static str)>,
}

impl Bulk {
    /// The redelivery of `page`'s entries, under `policy`.
    pub fn new(page: Page, policy: ClaimPolicy) -> Bulk {
        Bulk {
            page,
            policy,
            done: 0,
            queued: 0,
            skipped: Vec::new(),
        }
    }

    /// The request for the next entry's object (only the dead event the entry names is
    /// redelivered); `None` when every entry has had its turn.
    pub fn next_request(&self) -> Option<AuthorityRequest> {
        let entry = self.page.items.get(self.done)?;
        Some(AuthorityRequest::Redeliver {
            key: entry.key.clone(),
            policy: self.policy,
            dead_only: Some(entry.storage_id),
        })
    }

    /// Takes the answer of the entry's object to [`Bulk::next_request`] (see [`redelivered`]);
    /// returns what to tell the index when the stored event is gone.
    pub fn take(&mut self, reply: &AuthorityReply) -> Option<IndexRequest> {
        let at = self.done;
        let entry = self.page.items.get(at)?;
        self.done += 1;
        match redelivered(reply) {
            Redelivered::Queued => {
                self.queued += 1;
                None
            }
            Redelivered::Skipped(reason) => {
                self.skipped.push((at, reason));
                None
            }
            Redelivered::Gone(reason) => {
                self.skipped.push((at, reason));
                Some(IndexRequest::Gone {
                    key: entry.key.clone(),
                    storage_id: entry.storage_id,
                })
            }
        }
    }

    /// The answer: how many were queued again, each skipped with why, and where the next page
    /// starts.
    pub fn answer(&self) -> AdminAnswer {
        let skipped: Vec<Value> = self
            .skipped
            .iter()
            .map(|(at, reason)| {
                let entry = &self.page.items[*at];
                json!({ "provider": entry.provider, "id": entry.id(), "reason": reason })
            })
            .collect();
        let next_cursor = self.page.next_cursor.as_ref().map(|cursor| cursor.encode());
        AdminAnswer::new(
            200,
            json!({ "redelivered": self.queued, "skipped": skipped, "next_cursor": next_cursor }),
            Outcome::Admin(AdminWord::BulkRedelivered),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bulk redelivery asks each entry's object in turn for that dead event only, counts what
    /// was queued, skips the rest with why, and tells the index of each event found gone.
    #[test]
    fn a_bulk_redelivery_asks_each_object_in_turn_and_reports_what_is_gone() {
        use crate::failure_index::{Cursor, EntryState};
        use crate::providers::Provider;
        let entry = |id: &str, storage_id| Entry {
            key: Provider::Github.key(id),
            storage_id,
            stored_at: 1,
            last_seq: 1,
            provider: Provider::Github,
            event_type: None,
            first_seen_at: 1,
            dead_at: 2,
            attempts: 3,
            last_reason: None,
            state: EntryState::Dead,
            expires_at: 100,
            history: Vec::new(),
        };
        let page = Page {
            items: vec![entry("d-1", 11), entry("d-2", 12), entry("d-3", 13)],
            next_cursor: Some(Cursor {
                dead_at: 2,
                key: Provider::Github.key("d-3"),
            }),
        };
        let policy = ClaimPolicy {
            lease_ms: 1_000,
            retention_ms: 10_000,
        };
        let mut bulk = Bulk::new(page, policy);
        let answers = [
            RedeliverOutcome::Queued,
            RedeliverOutcome::NotDead {
                state: crate::claim::ClaimState::Done,
                same_event: false,
            },
            RedeliverOutcome::UnderLease {
                lease_expires_at: 5,
            },
        ];
        let mut told = Vec::new();
        for (n, answer) in answers.into_iter().enumerate() {
            let request = bulk.next_request().expect("an entry is left");
            assert_eq!(
                request,
                AuthorityRequest::Redeliver {
                    key: Provider::Github.key(&format!("d-{}", n + 1)),
                    policy,
                    dead_only: Some(11 + n as u64),
                }
            );
            told.extend(bulk.take(&AuthorityReply::Redeliver(answer)));
        }
        assert_eq!(bulk.next_request(), None, "every entry had its turn");
        assert_eq!(
            told,
            [IndexRequest::Gone {
                key: Provider::Github.key("d-2"),
                storage_id: 12,
            }]
        );
        let answer = bulk.answer();
        assert_eq!(
            (answer.status, answer.outcome.word()),
            (200, "admin_bulk_redelivered")
        );
        assert_eq!(answer.body["redelivered"], 1);
        let cursor = answer.body["next_cursor"].as_str().and_then(Cursor::decode);
        assert_eq!(cursor.map(|c| c.key), Some(Provider::Github.key("d-3")));
        assert_eq!(
            answer.body["skipped"],
            json!([
                { "provider": "github", "id": "d-2", "reason": "stored_again" },
                { "provider": "github", "id": "d-3", "reason": "lease_live" },
            ])
        );
    }

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
        let refused = call("POST", "dead-letters/redeliver", "state=recovered")
            .unwrap()
            .unwrap_err();
        assert_eq!(refused.body["error"], "invalid_state", "dead letters only");
        let Some(Ok(IndexCall::Redeliver(query))) =
            call("POST", "dead-letters/redeliver", "limit=500&state=dead")
        else {
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
            Redelivered::Gone("not_found")
        );
        let not_dead = |same_event| {
            redelivered(&AuthorityReply::Redeliver(RedeliverOutcome::NotDead {
                state: crate::claim::ClaimState::Queued,
                same_event,
            }))
        };
        assert_eq!(not_dead(true), Redelivered::Skipped("not_dead"));
        assert_eq!(not_dead(false), Redelivered::Gone("stored_again"));
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
