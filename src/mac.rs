//! The MAC every sender signs with, HMAC-SHA256, and how a delivery's signatures are compared
//! with the expected ones. Shared by Stripe and the other senders.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The HMAC-SHA256 of `prefix` then `body` under `key` (the host implementation; the worker
/// computes the same with WebCrypto where the body lies).
pub fn hmac_sha256(key: &[u8], prefix: &[u8], body: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(prefix);
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// True when `a` equals `b`, compared in constant time (`subtle`): how long it takes says
/// nothing about where they differ. The admin token's digest is compared through it.
pub fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    #[cfg(test)]
    CONSTANT_TIME_COMPARISONS.with(|count| count.set(count.get() + 1));
    a.ct_eq(b).into()
}

#[cfg(test)]
thread_local! {
    /// How many comparisons [`digests_equal`] made on this thread: host tests check that a
    /// secret is compared through it.
    pub static CONSTANT_TIME_COMPARISONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// True when some given signature equals some expected MAC. Every pair is compared, in
/// constant time, so the answer's timing says nothing about which (or how much) matched.
pub fn any_matches(given: &[[u8; 32]], expected: &[[u8; 32]]) -> bool {
    let mut matched = subtle::Choice::from(0);
    for mac in expected {
        for signature in given {
            matched |= mac.ct_eq(signature);
        }
    }
    bool::from(matched)
}

/// The signing keys made so far, each with the secret it was made from, so that each secret's
/// key is made once (the runtime's WebCrypto keys, kept per isolate: secrets cannot change
/// within one). Each secret's key is kept once.
#[derive(Debug, Default)]
pub struct KeyCache<K> {
    keys: Vec<(Vec<u8>, K)>,
}

impl<K: Clone> KeyCache<K> {
    /// No key yet.
    pub const fn new() -> KeyCache<K> {
        KeyCache { keys: Vec::new() }
    }

    /// The key made from `secret`, when it is held.
    pub fn get(&self, secret: &[u8]) -> Option<K> {
        let held = self.keys.iter().find(|(held, _)| held == secret);
        held.map(|(_, key)| key.clone())
    }

    /// Keeps `key`, made from `secret`, unless that secret's key is already held.
    pub fn add(&mut self, secret: &[u8], key: K) {
        if !self.keys.iter().any(|(held, _)| held == secret) {
            self.keys.push((secret.to_vec(), key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key is handed out only for the secret it was made from; a secret whose key is added
    /// twice keeps the first.
    #[test]
    fn each_secrets_key_is_kept_once() {
        let mut cache = KeyCache::new();
        assert_eq!(cache.get(b"a"), None);
        cache.add(b"a", 1);
        assert_eq!(cache.get(b"a"), Some(1));
        assert_eq!(cache.get(b"b"), None);
        cache.add(b"b", 2);
        cache.add(b"a", 3);
        assert_eq!((cache.get(b"b"), cache.get(b"a")), (Some(2), Some(1)));
        assert_eq!(cache.keys.len(), 2);
        assert_eq!(cache.get(b"ab"), None);
    }

    #[test]
    fn the_rfc_4231_vector_and_any_pair_matching() {
        // RFC 4231, test case 2 (key "Jefe"), split between prefix and body.
        let mac = hmac_sha256(b"Jefe", b"what do ya want ", b"for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(any_matches(&[[0; 32], mac], &[[1; 32], mac]));
        assert!(!any_matches(&[[0; 32]], &[mac]));
        assert!(!any_matches(&[], &[mac]));
    }
}
