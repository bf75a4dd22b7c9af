//! What a verified webhook delivery asks of its claim authority, by its sender's delivery
//! mode (see [`webhook_request`]): shared by the webhook doors and the reconciler.

use super::{AuthorityRequest, Deliver, Forward};
use crate::claim::{Nonce, Source};
use crate::config::{Config, DeliveryMode};
use crate::providers::Provider;

/// What a verified delivery of `provider` asks of its key's claim authority, by its sender's
/// delivery mode: in queue mode, to store it for the object's alarm to deliver (signed anew at
/// each attempt where the sender's signature carries a time); in sync mode, to claim, forward
/// (with `headers` to the sender's origin, within `FORWARD_TIMEOUT_MS`) and settle it under
/// `nonce`. `known_only` past the replay limit (see [`Deliver::known_only`]).
pub fn webhook_request(
    config: &Config,
    provider: Provider,
    key: String,
    headers: Vec<(String, String)>,
    known_only: bool,
    nonce: Nonce,
) -> AuthorityRequest {
    let policy = config.webhook.claims;
    if config.queue.mode(provider) == DeliveryMode::Queue {
        return AuthorityRequest::Enqueue {
            key,
            provider,
            policy,
            headers,
            known_only,
        };
    }
    let forward = Forward {
        url: config
            .sender(provider)
            .map(|(_, url)| url.to_string())
            .unwrap_or_default(),
        method: "POST".into(),
        headers,
        timeout_ms: config.delivery.forward_timeout_ms,
        wait_ms: config.delivery.late_answer_wait_ms,
    };
    let source = Source::Webhook(provider);
    AuthorityRequest::Deliver(Deliver::webhook(
        key, policy, nonce, source, forward, known_only,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verified delivery asks its object to store it in queue mode (GitHub's default), and
    /// to claim and forward it in sync mode (Stripe's), to its sender's origin within the
    /// configured time-out and wait.
    #[test]
    fn a_delivery_is_stored_or_forwarded_by_its_senders_mode() {
        let config = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/stripe".into()),
            "GITHUB_WEBHOOK_SECRET" => Some("a-github-secret".into()),
            "GITHUB_ORIGIN_URL" => Some("https://origin.example/github".into()),
            _ => None,
        })
        .unwrap();
        let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        let nonce = Nonce([7; 16]);
        let github = webhook_request(
            &config,
            Provider::Github,
            "github:d".into(),
            headers.clone(),
            true,
            nonce,
        );
        assert_eq!(
            github,
            AuthorityRequest::Enqueue {
                key: "github:d".into(),
                provider: Provider::Github,
                policy: config.webhook.claims,
                headers: headers.clone(),
                known_only: true,
            }
        );
        let stripe = webhook_request(
            &config,
            Provider::Stripe,
            "evt_1".into(),
            headers.clone(),
            false,
            nonce,
        );
        let AuthorityRequest::Deliver(deliver) = stripe else {
            panic!("Stripe is delivered while it waits");
        };
        assert_eq!((deliver.key.as_str(), deliver.nonce), ("evt_1", nonce));
        assert_eq!(deliver.source, Source::Webhook(Provider::Stripe));
        assert_eq!(deliver.forward.url, "https://origin.example/stripe");
        assert_eq!(deliver.forward.headers, headers);
        assert_eq!(
            deliver.forward.timeout_ms,
            config.delivery.forward_timeout_ms
        );
        assert_eq!(deliver.forward.wait_ms, config.delivery.late_answer_wait_ms);
        assert!(!deliver.known_only);
    }
}
