//! Secret values: signing secrets and the admin token.

use std::fmt;

/// A secret value. Its `Debug` never shows it, so it cannot leak through a log or a panic
/// message; the value is reached only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret's bytes (an HMAC key).
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The secret as text (for comparing an admin token).
    pub fn expose_str(&self) -> &str {
        &self.0
    }

    /// Its length in characters (to check a minimum without exposing it).
    pub fn char_count(&self) -> usize {
        self.0.chars().count()
    }

    /// True for an empty secret.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// An HMAC key as bytes (a secret decoded, e.g. a Standard Webhooks `whsec_` secret's
/// base64). Like [`Secret`], its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct HmacKey(Vec<u8>);

impl HmacKey {
    /// Wraps the key bytes.
    pub fn new(bytes: Vec<u8>) -> HmacKey {
        HmacKey(bytes)
    }

    /// The key's bytes.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacKey([redacted])")
    }
}

/// A comma-separated list of secrets (several during a rotation), trimmed. `None` when an entry
/// is empty.
pub fn secret_list(text: &str) -> Option<Vec<Secret>> {
    let secrets: Vec<Secret> = text.split(',').map(|s| Secret::new(s.trim())).collect();
    (!secrets.iter().any(Secret::is_empty)).then_some(secrets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_output() {
        let list = secret_list("whsec_old, whsec_new").unwrap();
        assert_eq!(list[1].expose(), b"whsec_new");
        assert_eq!(
            format!("{list:?}"),
            "[Secret([redacted]), Secret([redacted])]"
        );
        assert!(secret_list("whsec_a,,whsec_b").is_none());
    }
}
