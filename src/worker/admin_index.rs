//! The admin routes over the failure index: the list and the summary are the index's answers;
//! a bulk redelivery asks each event's own object (see [`crate::admin::dead_letters`]).

use worker::Env;

use super::authority_client::AuthorityClient;
use super::index_client;
use crate::admin::dead_letters::{self, IndexCall, Redelivered};
use crate::admin::AdminAnswer;
use crate::authority::AuthorityRequest;
use crate::claim::ClaimPolicy;
use crate::failures::{IndexRequest, ListQuery};

/// The answer to `call`.
pub async fn answer(
    env: &Env,
    policy: ClaimPolicy,
    call: IndexCall,
) -> worker::Result<AdminAnswer> {
    Ok(match call {
        IndexCall::List(query) => {
            dead_letters::list_answer(index_client::send(env, &IndexRequest::List(query)).await)
        }
        IndexCall::Summary => {
            dead_letters::summary_answer(index_client::send(env, &IndexRequest::Summary).await)
        }
        IndexCall::Redeliver(query) => redeliver(env, policy, query).await?,
    })
}

/// Redelivers the dead entries of one page of `query`, each through its own object.
async fn redeliver(
    env: &Env,
    policy: ClaimPolicy,
    query: ListQuery,
) -> worker::Result<AdminAnswer> {
    let page = match dead_letters::page(index_client::send(env, &IndexRequest::List(query)).await) {
        Ok(page) => page,
        Err(answer) => return Ok(answer),
    };
    let client = AuthorityClient::new(env)?;
    let mut queued = 0;
    let mut skipped = Vec::new();
    for entry in &page.items {
        let request = AuthorityRequest::Redeliver {
            key: entry.key.clone(),
            policy,
            dead_only: Some(entry.storage_id),
        };
        match dead_letters::redelivered(&client.send(&request).await) {
            Redelivered::Queued => queued += 1,
            Redelivered::Skipped(reason) => skipped.push((entry, reason)),
            Redelivered::Gone(reason) => {
                let gone = IndexRequest::Gone {
                    key: entry.key.clone(),
                    storage_id: entry.storage_id,
                };
                index_client::send(env, &gone).await;
                skipped.push((entry, reason));
            }
        }
    }
    Ok(dead_letters::redeliver_answer(queued, &skipped, &page))
}
