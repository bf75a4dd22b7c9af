//! The header-identified senders' settings (Standard Webhooks, GitHub, Shopify): each is
//! enabled by its secret, and forwards to its own origin or to `ORIGIN_URL`.

use super::reader::Reader;
use crate::providers::{standard, Provider};
use crate::secret::{secret_list, HmacKey};

/// The key holding `provider`'s signing secrets (comma-separated, for rotation).
pub fn secret_key(provider: Provider) -> &'static str {
    match provider {
        Provider::Stripe => super::keys::STRIPE_WEBHOOK_SECRET,
        Provider::Standard => super::keys::STANDARD_WEBHOOK_SECRET,
        Provider::Github => super::keys::GITHUB_WEBHOOK_SECRET,
        Provider::Shopify => super::keys::SHOPIFY_WEBHOOK_SECRET,
    }
}

/// The key naming `provider`'s own origin (Stripe's is `ORIGIN_URL`).
pub fn origin_key(provider: Provider) -> &'static str {
    match provider {
        Provider::Stripe => super::keys::ORIGIN_URL,
        Provider::Standard => super::keys::STANDARD_ORIGIN_URL,
        Provider::Github => super::keys::GITHUB_ORIGIN_URL,
        Provider::Shopify => super::keys::SHOPIFY_ORIGIN_URL,
    }
}

/// One enabled header-identified sender.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    /// Which sender.
    pub provider: Provider,
    /// Its HMAC keys, any of which may sign a delivery (the first signs queued attempts anew).
    pub keys: Vec<HmacKey>,
    /// Where its verified deliveries are forwarded (`<PROVIDER>_ORIGIN_URL`, else
    /// `ORIGIN_URL`).
    pub origin_url: url::Url,
}

impl SenderConfig {
    /// Reads the senders whose secret is set; `fallback` is `ORIGIN_URL`, when valid. A sender
    /// without a secret is not enabled (its route answers 404); one with an invalid secret or
    /// origin records the problem.
    pub fn load_all<F: Fn(&str) -> Option<String>>(
        r: &mut Reader<F>,
        fallback: Option<&url::Url>,
    ) -> Vec<SenderConfig> {
        [Provider::Standard, Provider::Github, Provider::Shopify]
            .into_iter()
            .filter_map(|provider| SenderConfig::load(r, provider, fallback))
            .collect()
    }

    fn load<F: Fn(&str) -> Option<String>>(
        r: &mut Reader<F>,
        provider: Provider,
        fallback: Option<&url::Url>,
    ) -> Option<SenderConfig> {
        let secret_key = secret_key(provider);
        let own_origin = origin_key(provider);
        let text = r.raw(secret_key)?;
        let origin_url = match r.raw(own_origin) {
            Some(_) => r.url(own_origin),
            None => fallback.cloned(),
        };
        let Some(secrets) = secret_list(&text) else {
            r.problem(secret_key, "an empty secret in the comma-separated list");
            return None;
        };
        let keys: Option<Vec<HmacKey>> = secrets
            .iter()
            .map(|secret| match provider {
                Provider::Standard => standard::secret_key(secret.expose_str()).map(HmacKey::new),
                _ => Some(HmacKey::new(secret.expose().to_vec())),
            })
            .collect();
        let Some(keys) = keys else {
            r.problem(
                secret_key,
                "not a Standard Webhooks secret: base64, with or without the whsec_ prefix",
            );
            return None;
        };
        Some(SenderConfig {
            provider,
            keys,
            origin_url: origin_url?,
        })
    }
}
