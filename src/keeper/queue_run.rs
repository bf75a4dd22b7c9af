//! Queue mode: one attempt to deliver a stored event, run from the object's alarm (which needs
//! no connected caller and may run for minutes). The rules are in [`crate::claim`] and
//! [`crate::authority::queue`], the attempt's life in [`crate::authority::attempt`].

use super::{Keeper, ObjectIo, Outgoing};
use crate::authority::queue::{self, Due};
use crate::authority::{Attempt, Won};
use crate::claim::{random_fraction, ClaimStore, Nonce};
use crate::config::Config;
use crate::log_line::LogLine;
use crate::providers::Provider;

impl<I: ObjectIo> Keeper<I> {
    /// Runs the attempt due for `key`, if one is: claims it under a lease (the alarm is moved
    /// to the lease's end first, so an attempt that dies is taken over), forwards the stored
    /// event with a fresh signature and waits at most `QUEUE_FORWARD_TIMEOUT_MS`, then settles:
    /// delivered, retry scheduled, or dead-lettered. While the configuration is invalid the
    /// event waits, stored (`/healthz` says why).
    pub async fn run_due(&self, key: &str) {
        let Some(config) = self.io.config() else {
            return;
        };
        let Ok(nonce) = Nonce::random() else {
            return;
        };
        let now = self.io.now_ms();
        let policy = config.queue.attempt_policy(config.webhook.claims);
        let retry = config.queue.retry;
        let due = self
            .with_store(key, "attempt", |store| {
                queue::start(store, key, now, policy, retry, nonce)
            })
            .await
            .and_then(|due| due);
        let (won, provider) = match due {
            Ok(Due::Attempt(won, provider)) => (won, provider),
            Ok(Due::Dead(reason, provider)) => {
                let line = LogLine::dead_before_attempt(provider, key, reason);
                return self.io.record(&line);
            }
            Ok(Due::Nothing) | Err(_) => return,
        };
        let request = self.outgoing(&config, provider, key, &won).await;
        let timeout_ms = config.queue.forward_timeout_ms;
        let jitter = random_fraction();
        let attempt = Attempt::queued(provider, key, won, now, policy, retry, timeout_ms, jitter);
        I::forward(self, attempt, request).await;
    }

    /// The request of the attempt `won` of `provider`'s `key`: its stored event signed anew
    /// (see [`queue::outgoing`]); `None` when it cannot be made.
    async fn outgoing(
        &self,
        config: &Config,
        provider: Provider,
        key: &str,
        won: &Won,
    ) -> Option<Outgoing> {
        let stored = self
            .with_store(key, "payload", |store| (store.load_payload(key), None))
            .await
            .and_then(|loaded| loaded)
            .ok()
            .flatten();
        let (secrets, url) = config.sender(provider)?;
        let now_seconds = (self.io.now_ms() / 1_000) as i64;
        let prepared = queue::outgoing(
            stored.as_deref(),
            Some(&secrets),
            provider,
            key,
            won,
            now_seconds,
        );
        let (headers, body) = prepared?;
        Some(Outgoing {
            url: url.to_string(),
            headers,
            body: body.to_vec(),
        })
    }
}
