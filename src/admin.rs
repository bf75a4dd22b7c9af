//! The admin API's rules: who may call it, which routes exist, and how records are shown.
//! Pure; `src/worker/admin.rs` carries the requests.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::claim::ClaimRecord;
use crate::stripe::envelope::is_event_id;

/// True when `authorization` is `Bearer <token>` with the configured token. Compares SHA-256
/// digests in constant time, so neither the token's content nor its length leaks by timing.
pub fn authorized(authorization: Option<&str>, token: &str) -> bool {
    let Some(given) = authorization.and_then(|h| h.strip_prefix("Bearer ")) else {
        return false;
    };
    let given: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
    let expected: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    given.ct_eq(&expected).into()
}

/// Which records an admin route addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Stripe events, by event id (`/admin/events/{id}`).
    Events,
    /// Idempotency-Key records, by scope hash (`/admin/keys/{idem_…}`).
    Keys,
}

/// An admin action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// `GET`: show the record.
    Inspect,
    /// `POST …/release`: release a stuck `processing` claim.
    Release,
    /// `DELETE`: forget a finished record so the key is processed again.
    Forget,
}

/// A parsed admin route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Events or keys.
    pub family: Family,
    /// The record's key (event id or scope).
    pub key: String,
    /// What to do.
    pub action: Action,
}

/// Why an admin path is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// No such route (404).
    NotFound,
    /// A known route with another method (405, with the allowed methods).
    MethodNotAllowed(&'static str),
    /// The id is not an event id or a scope hash (400).
    InvalidKey(Family),
}

/// True for `idem_` followed by 64 lower-case hex digits, the form of every scope.
pub fn is_scope(key: &str) -> bool {
    key.strip_prefix("idem_").is_some_and(|hash| {
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Parses `path` (after `/admin/`) with `method` into a route.
pub fn route(method: &str, path: &str) -> Result<Route, RouteError> {
    let (family, rest) = if let Some(rest) = path.strip_prefix("events/") {
        (Family::Events, rest)
    } else if let Some(rest) = path.strip_prefix("keys/") {
        (Family::Keys, rest)
    } else {
        return Err(RouteError::NotFound);
    };
    let (key, tail) = match rest.split_once('/') {
        Some((key, tail)) => (key, Some(tail)),
        None => (rest, None),
    };
    let valid = match family {
        Family::Events => is_event_id(key),
        Family::Keys => is_scope(key),
    };
    let action = match (tail, method) {
        (None, "GET") => Action::Inspect,
        (None, "DELETE") => Action::Forget,
        (None, _) => return Err(RouteError::MethodNotAllowed("GET, DELETE")),
        (Some("release"), "POST") => Action::Release,
        (Some("release"), _) => return Err(RouteError::MethodNotAllowed("POST")),
        (Some(_), _) => return Err(RouteError::NotFound),
    };
    if !valid {
        return Err(RouteError::InvalidKey(family));
    }
    Ok(Route {
        family,
        key: key.to_owned(),
        action,
    })
}

/// A record as the admin API shows it: every field but the cached body (only its size), and
/// the fence's attempt but never its random part.
pub fn record_view(record: &ClaimRecord) -> Value {
    json!({
        "key": record.key,
        "state": record.state,
        "attempts": record.attempts,
        "first_seen_at": record.first_seen_at,
        "claimed_at": record.claimed_at,
        "lease_expires_at": record.lease_expires_at,
        "takeover": record.takeover,
        "finished_at": record.finished_at,
        "released_at": record.released_at,
        "expires_at": record.expires_at,
        "last_release_reason": record.last_release_reason,
        "fingerprint": record.fingerprint,
        "cached_response": record.response.as_ref().map(|r| json!({
            "status": r.status,
            "body_bytes": r.body.len(),
            "body_omitted": r.body_omitted,
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let token = "a-long-admin-token-0123456789";
        assert!(authorized(Some(&format!("Bearer {token}")), token));
        assert!(!authorized(None, token));
        assert!(!authorized(Some(token), token), "scheme required");
        assert!(!authorized(Some(&format!("bearer{token}")), token));
        assert!(!authorized(Some(&format!("Bearer {token}x")), token));
        assert!(!authorized(Some("Bearer "), token));
        assert!(!authorized(Some(&format!("Basic {token}")), token));
    }

    #[test]
    fn routes() {
        let scope = format!("idem_{}", "ab".repeat(32));
        assert_eq!(
            route("GET", "events/evt_1"),
            Ok(Route {
                family: Family::Events,
                key: "evt_1".into(),
                action: Action::Inspect
            })
        );
        assert_eq!(
            route("POST", "events/evt_1/release").unwrap().action,
            Action::Release
        );
        assert_eq!(
            route("DELETE", "events/evt_1").unwrap().action,
            Action::Forget
        );
        assert_eq!(
            route("GET", &format!("keys/{scope}")).unwrap().family,
            Family::Keys
        );
        assert_eq!(
            route("PUT", "events/evt_1"),
            Err(RouteError::MethodNotAllowed("GET, DELETE"))
        );
        assert_eq!(
            route("GET", "events/evt_1/release"),
            Err(RouteError::MethodNotAllowed("POST"))
        );
        assert_eq!(
            route("GET", "events/evt_1/other"),
            Err(RouteError::NotFound)
        );
        assert_eq!(route("GET", "nothing/evt_1"), Err(RouteError::NotFound));
        assert_eq!(
            route("GET", "events/ch_1"),
            Err(RouteError::InvalidKey(Family::Events))
        );
        assert_eq!(
            route("GET", "keys/idem_XYZ"),
            Err(RouteError::InvalidKey(Family::Keys))
        );
        assert_eq!(
            route("GET", "keys/evt_1"),
            Err(RouteError::InvalidKey(Family::Keys))
        );
    }
}
