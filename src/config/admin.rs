//! The admin API's and the test routes' settings.

use super::keys::{ADMIN_PAGE_HOST, ADMIN_TOKEN, ENABLE_TEST_ROUTES};
use super::reader::Reader;
use crate::secret::Secret;

/// Shortest accepted admin token.
pub const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// The admin API's and the test routes' settings.
#[derive(Clone, Debug, Default)]
pub struct AdminConfig {
    /// The bearer token of the admin API and the test routes (`ADMIN_TOKEN`); both are off
    /// without one.
    pub token: Option<Secret>,
    /// Serve the `/_test/` routes that reach the claim authority directly
    /// (`ENABLE_TEST_ROUTES`); they need the token.
    pub test_routes: bool,
    /// The one host name the operator page is served on (`ADMIN_PAGE_HOST`), lower case; on
    /// every host when unset. Set, the API door's answers on other hosts are passed on without
    /// `Content-Security-Policy: sandbox` (see [`crate::idempotency::confinement`]).
    pub page_host: Option<String>,
}

impl AdminConfig {
    /// Reads the admin keys: a token of at least [`MIN_ADMIN_TOKEN_LEN`] characters, and the
    /// test routes only with a token.
    pub fn load<F: Fn(&str) -> Option<String>>(r: &mut Reader<F>) -> AdminConfig {
        let test_routes = r.flag(ENABLE_TEST_ROUTES);
        let token = r.raw(ADMIN_TOKEN).map(Secret::new);
        if token
            .as_ref()
            .is_some_and(|t| t.char_count() < MIN_ADMIN_TOKEN_LEN)
        {
            r.problem(
                ADMIN_TOKEN,
                format!("shorter than {MIN_ADMIN_TOKEN_LEN} characters; use a long random token"),
            );
        }
        if test_routes && token.is_none() {
            r.problem(
                ENABLE_TEST_ROUTES,
                format!("the test routes reach every record and need {ADMIN_TOKEN} to guard them"),
            );
        }
        let page_host = r.raw(ADMIN_PAGE_HOST).map(|host| host.to_ascii_lowercase());
        let is_host = |host: &str| {
            url::Host::parse(host).is_ok_and(|parsed| parsed.to_string() == host)
                && !host.contains(':')
        };
        if page_host.as_deref().is_some_and(|host| !is_host(host)) {
            r.problem(
                ADMIN_PAGE_HOST,
                "not a host name alone (no scheme, port or path), such as admin.example.com",
            );
        }
        AdminConfig {
            token,
            test_routes,
            page_host,
        }
    }
}

/// The admin token alone, read as [`AdminConfig::load`] reads it, when it is usable (set, and
/// at least [`MIN_ADMIN_TOKEN_LEN`] characters): the gate of the admin API and the test routes
/// needs it even while other keys have problems, so that a caller without it gets the same
/// answer whatever the configuration.
pub fn admin_token(lookup: impl Fn(&str) -> Option<String>) -> Option<Secret> {
    Reader::new(lookup)
        .raw(ADMIN_TOKEN)
        .map(Secret::new)
        .filter(|token| token.char_count() >= MIN_ADMIN_TOKEN_LEN)
}
