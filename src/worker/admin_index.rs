//! The admin routes over the failure index: the list and the summary are the index's answers;
//! a bulk redelivery asks each event's own object (see [`crate::admin::dead_letters`]).

use worker::Env;

use super::authority_client::AuthorityClient;
use super::index_client;
use crate::admin::dead_letters::{self, Bulk, IndexCall};
use crate::admin::AdminAnswer;
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

/// Redelivers the dead entries of one page of `query`, each through its own object (see
/// [`Bulk`]).
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
    let mut bulk = Bulk::new(page, policy);
    while let Some(request) = bulk.next_request() {
        let reply = client.send(&request).await;
        if let Some(gone) = bulk.take(&reply) {
            index_client::send(env, &gone).await;
        }
    }
    Ok(bulk.answer())
}
