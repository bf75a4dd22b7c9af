//! The admin routes over the failure index: the list and the summary are the index's answers;
//! a bulk redelivery asks each event's own object (see [`crate::admin::dead_letters`]).

use worker::Env;

use super::authority_client::AuthorityClient;
use super::index_client;
use crate::admin::dead_letters::{self, IndexCall, Redelivered};
use crate::admin::AdminAnswer;
use crate::authority::AuthorityRequest;
use crate::config::Config;
use crate::failures::{IndexRequest, ListQuery};

/// The answer to `call`.
pub async fn answer(env: &Env, config: &Config, call: IndexCall) -> worker::Result<AdminAnswer> {
    Ok(match call {
        IndexCall::List(query) => {
            dead_letters::list_answer(index_client::send(env, &IndexRequest::List(query)).await)
        }
        IndexCall::Summary => {
            dead_letters::summary_answer(index_client::send(env, &IndexRequest::Summary).await)
        }
        IndexCall::Redeliver(query) => redeliver(env, config, query).await?,
    })
}

/// Redelivers the dead entries of one page of `query`, each through its own object.
async fn redeliver(env: &Env, config: &Config, query: ListQuery) -> worker::Result<AdminAnswer> {
    let page = match dead_letters::page(index_client::send(env, &IndexRequest::List(query)).await) {
        Ok(page) => page,
        Err(answer) => return Ok(answer),
    };
    let client = AuthorityClient::new(env)?;
    let policy = config.webhook.claims;
    let mut queued = 0;
    let mut skipped = Vec::new();
    for entry in &page.items {
        let key = entry.key.clone();
        let reply = client
            .send(&AuthorityRequest::Redeliver { key, policy })
            .await;
        match dead_letters::redelivered(&reply) {
            Redelivered::Queued => queued += 1,
            Redelivered::Skipped(reason) => skipped.push((entry, reason)),
            Redelivered::NoBody => {
                let key = entry.key.clone();
                let inspected = client.send(&AuthorityRequest::Inspect { key }).await;
                let (reason, gone) = dead_letters::after_no_body(&inspected);
                if gone {
                    let key = entry.key.clone();
                    index_client::send(env, &IndexRequest::Gone { key }).await;
                }
                skipped.push((entry, reason));
            }
        }
    }
    Ok(dead_letters::redeliver_answer(queued, &skipped, &page))
}
