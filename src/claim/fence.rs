//! The fence that identifies one claim.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use subtle::ConstantTimeEq;

/// Identifies one claim of a key: the attempt number plus 128 random bits.
///
/// Guarantees: a new fence is made at every claim, so an attempt whose lease ran out and was
/// taken over holds a fence that no longer matches the record, and every finalize or release it
/// sends is refused. The random part makes a fence impossible to guess; it is compared in
/// constant time. Text form: `{attempt}.{32 lower-case hex digits}`.
#[derive(Clone, Debug)]
pub struct Fence {
    attempt: u32,
    nonce: [u8; 16],
}

impl Fence {
    /// Makes the fence of attempt `attempt` from 16 random bytes (from `getrandom` in production).
    pub fn new(attempt: u32, nonce: [u8; 16]) -> Self {
        Fence { attempt, nonce }
    }

    /// The attempt number this fence was issued for (1 for the first claim of a key).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Its random part.
    pub fn nonce(&self) -> Nonce {
        Nonce(self.nonce)
    }
}

impl PartialEq for Fence {
    fn eq(&self, other: &Self) -> bool {
        self.attempt == other.attempt && bool::from(self.nonce.ct_eq(&other.nonce))
    }
}

impl Eq for Fence {}

impl std::hash::Hash for Fence {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.attempt.hash(state);
        self.nonce.hash(state);
    }
}

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.attempt, hex::encode(self.nonce))
    }
}

/// The 16 random bytes that make a claim's fence unguessable, chosen by the caller of a claim
/// so that sending the same claim again (after a lost answer) is recognised as the same claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Nonce(pub [u8; 16]);

impl Nonce {
    /// 16 bytes from the platform's secure random source (`getrandom`). Its failure is a
    /// retryable store failure: nothing was written, and the request may be sent again.
    pub fn random() -> Result<Nonce, super::StoreError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|error| super::StoreError::Retryable(format!("no random bytes: {error}")))?;
        Ok(Nonce(bytes))
    }
}

impl Serialize for Nonce {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&hex::encode(self.0))
    }
}

impl<'de> Deserialize<'de> for Nonce {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        let mut bytes = [0u8; 16];
        hex::decode_to_slice(text.as_ref(), &mut bytes).map_err(serde::de::Error::custom)?;
        Ok(Nonce(bytes))
    }
}

/// A fence in text form that is not `{attempt}.{32 hex digits}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidFence;

impl fmt::Display for InvalidFence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a fence is `{attempt}.{32 hex digits}`")
    }
}

impl std::error::Error for InvalidFence {}

impl FromStr for Fence {
    type Err = InvalidFence;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (attempt, nonce) = text.split_once('.').ok_or(InvalidFence)?;
        if attempt.is_empty() || !attempt.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InvalidFence);
        }
        let attempt = attempt.parse().map_err(|_| InvalidFence)?;
        let mut bytes = [0u8; 16];
        hex::decode_to_slice(nonce, &mut bytes).map_err(|_| InvalidFence)?;
        Ok(Fence::new(attempt, bytes))
    }
}

impl Serialize for Fence {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Fence {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A fraction in `[0, 1)` from the platform's secure random source (for back-off jitter);
/// one half when the source fails.
pub fn random_fraction() -> f64 {
    let mut bytes = [0u8; 4];
    match getrandom::fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        let fence = Fence::new(3, [0xab; 16]);
        let text = fence.to_string();
        assert_eq!(text, format!("3.{}", "ab".repeat(16)));
        assert_eq!(text.parse::<Fence>().unwrap(), fence);
    }

    #[test]
    fn fences_differ_by_attempt_or_nonce() {
        assert_ne!(Fence::new(1, [1; 16]), Fence::new(2, [1; 16]));
        assert_ne!(Fence::new(1, [1; 16]), Fence::new(1, [2; 16]));
    }

    #[test]
    fn random_nonces_differ_and_round_trip() {
        let a = Nonce::random().unwrap();
        assert_ne!(a, Nonce::random().unwrap());
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Nonce>(&text).unwrap(), a);
    }

    #[test]
    fn malformed_text_is_refused() {
        for bad in [
            "",
            "1",
            "1.",
            ".00000000000000000000000000000000",
            "x.00000000000000000000000000000000",
            "+1.00000000000000000000000000000000",
            "1.0000000000000000000000000000000",
            "1.000000000000000000000000000000000",
            "1.0000000000000000000000000000000g",
            "99999999999.00000000000000000000000000000000",
        ] {
            assert_eq!(bad.parse::<Fence>(), Err(InvalidFence), "{bad:?}");
        }
    }
}
