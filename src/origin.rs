//! How a forward to an origin ended, and what that means for the claim: shared by every front
//! door and by both delivery modes.
//!
//! A time-out, or a connection that broke after the request may have been sent, does not mean
//! the handler failed: the handler may be running, and may succeed. Such an outcome is
//! *ambiguous*, and releasing the claim on it would let the next delivery run the handler a
//! second time. Only a definite failure (the origin answered non-2xx, or nothing was sent)
//! releases. The classification, in one table:
//!
//! | what the runtime reported | reason kept | verdict |
//! | --- | --- | --- |
//! | a 2xx status | | success: finalize |
//! | Cloudflare 521 (origin refused the connection) | `connection refused` | definite: release |
//! | Cloudflare 522, 523 (no connection, origin unreachable) | `unreachable` | definite: release |
//! | Cloudflare 525, 526 (TLS handshake or certificate) | `tls` | definite: release |
//! | Cloudflare 530 (origin's name did not resolve) | `dns` | definite: release |
//! | Cloudflare 520 (connection reset after the request was sent) | `reset after send` | ambiguous, nothing more to learn: hold until the lease ends |
//! | Cloudflare 524 (Cloudflare gave up waiting for the origin) | `time-out` | ambiguous, nothing more to learn: hold |
//! | 410 Gone | `gone` | definite: release; queue mode dead-letters at once, never retried |
//! | any other non-2xx status, a redirect included | `origin answered 503` | definite: release |
//! | no status within the forward time-out | `time-out` | ambiguous: keep waiting for the late answer |
//! | the runtime threw "Network connection lost" | `reset after send` | ambiguous, nothing more to learn: hold |
//! | the runtime threw anything else | `network error` | ambiguous, nothing more to learn: hold |
//! | the request could not be built (nothing sent) | `request not sent` | definite: release |
//!
//! The local runtime throws "Network connection lost" for a refused connection as well as for
//! one reset after sending (the two cannot be told apart there), and a bare "internal error" for
//! a name that does not resolve or a failed TLS handshake: in doubt, both are ambiguous. In
//! production Cloudflare reports the definite cases as the 52x/530 answers above.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How the forward ended, as the runtime reported it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginOutcome {
    /// The origin's status line arrived.
    Answered {
        /// Its HTTP status.
        status: u16,
    },
    /// No status within the time allowed.
    TimedOut,
    /// The runtime reported an error instead of an answer.
    Failed {
        /// What kind of error, classified from the runtime's report (its text is never kept).
        error: NetworkError,
    },
    /// The request could not even be built (e.g. a header value the runtime refuses): nothing
    /// was sent.
    NotSent,
}

/// A runtime error on a forward, classified. Raw error text is never stored or logged: it can
/// quote the origin's URL, credentials included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkError {
    /// "Network connection lost": reset or closed, possibly after the request was sent.
    ConnectionLost,
    /// Any other error.
    Other,
}

impl NetworkError {
    /// Classifies the text of a runtime error.
    pub fn classify(text: &str) -> NetworkError {
        if text.contains("Network connection lost") {
            NetworkError::ConnectionLost
        } else {
            NetworkError::Other
        }
    }
}

/// Why an attempt did not succeed: the classified reason kept in a record
/// (`last_release_reason`), logged and shown by the admin API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The origin answered this non-2xx status. `Answered(410)` is [`Reason::GONE`].
    Answered(u16),
    /// The origin refused the connection (Cloudflare 521).
    ConnectionRefused,
    /// No connection could be made (Cloudflare 522, 523).
    Unreachable,
    /// The TLS handshake or certificate failed (Cloudflare 525, 526).
    Tls,
    /// The origin's name did not resolve (Cloudflare 530).
    Dns,
    /// The connection broke, possibly after the request was sent.
    ResetAfterSend,
    /// No answer in time.
    TimedOut,
    /// Another runtime error.
    NetworkError,
    /// The request could not be built; nothing was sent.
    NotSent,
    /// An operator released the claim with the admin API.
    Operator,
    /// Queue mode: an attempt's lease ran out with no answer (a crash or a restart), and no
    /// attempt was left in its budget.
    CutOff,
    /// Queue mode: no attempt could start before `RETRY_MAX_AGE_HOURS` passed.
    NoAttemptInTime,
}

impl Reason {
    /// The origin answered 410 Gone: it will never take this event (the Standard Webhooks
    /// specification reads it as "stop sending"). Queue mode dead-letters the event at once,
    /// even with `RETRY_CLIENT_ERRORS`. Written `gone`; kept in records as the answer 410, so a
    /// version that does not know the word still reads them.
    pub const GONE: Reason = Reason::Answered(410);

    /// True for [`Reason::GONE`].
    pub fn is_gone(self) -> bool {
        self == Reason::GONE
    }

    /// True when the origin refused the event itself: a 4xx other than 408 (time-out), 409
    /// (conflict), 425 (too early) and 429 (too many requests), which say "later" rather than
    /// "never". Queue mode dead-letters such an event at once unless `RETRY_CLIENT_ERRORS` is
    /// set, so a replayed body a handler refuses reaches it once per stored record.
    pub fn is_refusal(self) -> bool {
        matches!(self, Reason::Answered(status) if (400..500).contains(&status)
            && !matches!(status, 408 | 409 | 425 | 429))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Answered(410) => f.write_str("gone"),
            Reason::Answered(status) => write!(f, "origin answered {status}"),
            Reason::ConnectionRefused => f.write_str("connection refused"),
            Reason::Unreachable => f.write_str("unreachable"),
            Reason::Tls => f.write_str("tls"),
            Reason::Dns => f.write_str("dns"),
            Reason::ResetAfterSend => f.write_str("reset after send"),
            Reason::TimedOut => f.write_str("time-out"),
            Reason::NetworkError => f.write_str("network error"),
            Reason::NotSent => f.write_str("request not sent"),
            Reason::Operator => f.write_str("released by an operator"),
            Reason::CutOff => f.write_str("attempt cut off (its lease ran out)"),
            Reason::NoAttemptInTime => {
                f.write_str("no attempt could start within RETRY_MAX_AGE_HOURS")
            }
        }
    }
}

/// A reason's text that is not one this service writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownReason(pub String);

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a reason this service writes: {:?}", self.0)
    }
}

impl std::str::FromStr for Reason {
    type Err = UnknownReason;

    /// Reads a reason back from its text (as records before schema 5 kept it).
    fn from_str(text: &str) -> Result<Reason, UnknownReason> {
        if let Some(status) = text.strip_prefix("origin answered ") {
            return status
                .parse()
                .map(Reason::Answered)
                .map_err(|_| UnknownReason(text.to_owned()));
        }
        [
            Reason::GONE,
            Reason::ConnectionRefused,
            Reason::Unreachable,
            Reason::Tls,
            Reason::Dns,
            Reason::ResetAfterSend,
            Reason::TimedOut,
            Reason::NetworkError,
            Reason::NotSent,
            Reason::Operator,
            Reason::CutOff,
            Reason::NoAttemptInTime,
        ]
        .into_iter()
        .find(|reason| reason.to_string() == text)
        .ok_or_else(|| UnknownReason(text.to_owned()))
    }
}

/// What an outcome means for the claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The handler succeeded (the front door decides which statuses count): finalize.
    Succeeded,
    /// The handler definitely did not succeed: release, so the next delivery runs it again.
    Failed(Reason),
    /// No answer yet; one may still come: keep the claim and wait for it.
    Pending,
    /// The handler may or may not have run, and nothing more will be learned: keep the claim
    /// until its lease ends, then the next delivery takes it over.
    Unknown(Reason),
}

impl Verdict {
    /// The verdict on `outcome`, where `succeeded(status)` says which answered statuses count as
    /// success for this front door (webhooks: 2xx; Idempotency-Key: every final answer).
    pub fn of(outcome: &OriginOutcome, succeeded: impl Fn(u16) -> bool) -> Verdict {
        match *outcome {
            OriginOutcome::Answered { status } if succeeded(status) => Verdict::Succeeded,
            OriginOutcome::Answered { status } => match status {
                // A gateway in front of the handler gave up on it (502 Bad Gateway, 504 Gateway
                // Timeout): the handler may still be running, and may succeed.
                502 | 504 => Verdict::Unknown(Reason::Answered(status)),
                520 => Verdict::Unknown(Reason::ResetAfterSend),
                524 => Verdict::Unknown(Reason::TimedOut),
                521 => Verdict::Failed(Reason::ConnectionRefused),
                522 | 523 => Verdict::Failed(Reason::Unreachable),
                525 | 526 => Verdict::Failed(Reason::Tls),
                530 => Verdict::Failed(Reason::Dns),
                other => Verdict::Failed(Reason::Answered(other)),
            },
            OriginOutcome::TimedOut => Verdict::Pending,
            OriginOutcome::Failed {
                error: NetworkError::ConnectionLost,
            } => Verdict::Unknown(Reason::ResetAfterSend),
            OriginOutcome::Failed {
                error: NetworkError::Other,
            } => Verdict::Unknown(Reason::NetworkError),
            OriginOutcome::NotSent => Verdict::Failed(Reason::NotSent),
        }
    }

    /// The verdict once the wait for a late answer is over: still pending becomes unknown.
    pub fn final_after_wait(self) -> Verdict {
        match self {
            Verdict::Pending => Verdict::Unknown(Reason::TimedOut),
            other => other,
        }
    }
}

/// The statuses whose `Retry-After` the worker honours: 429 Too Many Requests and 503 Service
/// Unavailable, the two that say "not now" about the origin itself.
pub const THROTTLING_STATUSES: [u16; 2] = [429, 503];

/// The time, in milliseconds since the epoch, before which an origin that answered `status`
/// with `headers` asked not to be called again: its `Retry-After`, a number of seconds or an
/// HTTP date (RFC 9110), read at `now`, on a 429 or a 503 only. A date already past names
/// `now`. `None` for any other status, no such header, or a value that is neither form: a
/// hint that cannot be read is ignored, never guessed at. The caller caps it (see
/// [`crate::claim::attempt_failed`]).
pub fn retry_after_at(status: u16, headers: &[(String, String)], now: u64) -> Option<u64> {
    if !THROTTLING_STATUSES.contains(&status) {
        return None;
    }
    let value = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))?
        .1
        .trim();
    if !value.is_empty() && value.bytes().all(|byte| byte.is_ascii_digit()) {
        // Too many digits for a u64 is a very long time: the cap applies.
        let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
        return Some(now.saturating_add(seconds.saturating_mul(1_000)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    let since_epoch = date.duration_since(std::time::UNIX_EPOCH).ok()?;
    let at = u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX);
    Some(at.max(now))
}

/// True for a 2xx status: what a webhook sender counts as delivered.
pub fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// Headers that belong to one connection, or that the runtime's `fetch` sets itself: never
/// copied from a caller to the origin, nor from the origin's answer back to the caller.
pub const HOP_BY_HOP: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
];

/// True for a header named in [`HOP_BY_HOP`] (`name` in lower case, as the runtime gives it).
pub fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.contains(&name)
}

/// Request headers through which a client claims an address, host or scheme: the worker sets
/// `X-Real-IP` and `X-Forwarded-For` itself, and `API_FORWARD_HEADERS` may not name any of
/// these (see [`is_client_address_header`]).
const CLIENT_ADDRESS_HEADERS: &[&str] = &[
    "forwarded",
    "x-real-ip",
    "true-client-ip",
    "x-client-ip",
    "client-ip",
    "x-cluster-client-ip",
    "fastly-client-ip",
    "x-originating-ip",
    "x-original-url",
    "x-rewrite-url",
    "x-host",
    "cf-connecting-ip",
];

/// True for a header (lower-case name) that claims the caller's address, host, URL or scheme:
/// one of a known list, or any `x-forwarded-*` (`-for`, `-proto`, `-host`, `-port`,
/// `-prefix`, …). `API_FORWARD_HEADERS` may not name one; what reaches the API origin is
/// decided by the door's allow-list (`crate::idempotency::FORWARDED_HEADERS`).
pub fn is_client_address_header(name: &str) -> bool {
    CLIENT_ADDRESS_HEADERS.contains(&name) || name.starts_with("x-forwarded-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_headers_are_hop_by_hop_and_end_to_end_ones_are_not() {
        for name in [
            "host",
            "content-length",
            "connection",
            "keep-alive",
            "transfer-encoding",
            "te",
            "trailer",
            "upgrade",
            "proxy-authorization",
            "proxy-authenticate",
        ] {
            assert!(is_hop_by_hop(name), "{name}");
        }
        for name in [
            "content-type",
            "authorization",
            "x-request-id",
            "location",
            "t",
        ] {
            assert!(!is_hop_by_hop(name), "{name}");
        }
    }

    fn webhook(outcome: OriginOutcome) -> Verdict {
        Verdict::of(&outcome, is_success)
    }

    #[test]
    fn only_a_2xx_succeeds_and_only_definite_failures_release() {
        assert_eq!(
            webhook(OriginOutcome::Answered { status: 204 }),
            Verdict::Succeeded
        );
        for (status, reason) in [
            (500, Reason::Answered(500)),
            (503, Reason::Answered(503)),
            (301, Reason::Answered(301)),
            (404, Reason::Answered(404)),
            (521, Reason::ConnectionRefused),
            (522, Reason::Unreachable),
            (523, Reason::Unreachable),
            (525, Reason::Tls),
            (526, Reason::Tls),
            (530, Reason::Dns),
        ] {
            assert_eq!(
                webhook(OriginOutcome::Answered { status }),
                Verdict::Failed(reason),
                "{status}"
            );
        }
        assert_eq!(
            webhook(OriginOutcome::NotSent),
            Verdict::Failed(Reason::NotSent)
        );
    }

    #[test]
    fn ambiguous_outcomes_never_release() {
        assert_eq!(webhook(OriginOutcome::TimedOut), Verdict::Pending);
        assert_eq!(
            webhook(OriginOutcome::Answered { status: 520 }),
            Verdict::Unknown(Reason::ResetAfterSend)
        );
        assert_eq!(
            webhook(OriginOutcome::Answered { status: 524 }),
            Verdict::Unknown(Reason::TimedOut)
        );
        for status in [502, 504] {
            assert_eq!(
                webhook(OriginOutcome::Answered { status }),
                Verdict::Unknown(Reason::Answered(status)),
                "a gateway's {status} may hide a handler still running"
            );
        }
        for text in [
            "Error: Network connection lost.",
            "Error: internal error; reference = 0123abcd",
            "TypeError: anything at all",
        ] {
            let verdict = webhook(OriginOutcome::Failed {
                error: NetworkError::classify(text),
            });
            assert!(
                matches!(verdict, Verdict::Unknown(_)),
                "{text}: {verdict:?}"
            );
        }
        assert_eq!(
            Verdict::Pending.final_after_wait(),
            Verdict::Unknown(Reason::TimedOut)
        );
    }

    #[test]
    fn the_front_door_decides_which_answers_succeed() {
        let any_final = |s: u16| (200..300).contains(&s) || s == 404;
        assert_eq!(
            Verdict::of(&OriginOutcome::Answered { status: 404 }, any_final),
            Verdict::Succeeded
        );
    }

    fn hint(status: u16, value: &str, now: u64) -> Option<u64> {
        retry_after_at(status, &[("Retry-After".to_owned(), value.to_owned())], now)
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_an_http_date_on_a_429_or_503_only() {
        assert_eq!(hint(429, "120", 1_000), Some(121_000));
        assert_eq!(hint(503, " 0 ", 1_000), Some(1_000));
        // Sun, 06 Dec 2026 08:00:00 GMT is 1_796_544_000 s after the epoch.
        let date = "Sun, 06 Dec 2026 08:00:00 GMT";
        assert_eq!(hint(503, date, 0), Some(1_796_544_000_000));
        assert_eq!(
            hint(429, date, 1_900_000_000_000),
            Some(1_900_000_000_000),
            "a date already past names now"
        );
        assert_eq!(
            hint(429, "99999999999999999999999", 5),
            Some(u64::MAX),
            "longer than anything: the caller's cap applies"
        );
        for bad in ["", "soon", "-5", "1.5", "12 s", "Sun, 06 Dec 2026"] {
            assert_eq!(hint(429, bad, 7), None, "{bad:?} is ignored");
        }
        for status in [200, 410, 500, 502, 504] {
            assert_eq!(hint(status, "120", 0), None, "{status} does not throttle");
        }
        assert_eq!(retry_after_at(429, &[], 0), None);
    }

    #[test]
    fn a_410_is_gone_and_a_definite_failure() {
        assert_eq!(
            webhook(OriginOutcome::Answered { status: 410 }),
            Verdict::Failed(Reason::GONE)
        );
        assert!(Reason::GONE.is_gone() && Reason::GONE.is_refusal());
        assert!(!Reason::Answered(404).is_gone());
    }

    #[test]
    fn every_reason_reads_back_from_its_text() {
        for reason in [
            Reason::Answered(503),
            Reason::GONE,
            Reason::ConnectionRefused,
            Reason::Unreachable,
            Reason::Tls,
            Reason::Dns,
            Reason::ResetAfterSend,
            Reason::TimedOut,
            Reason::NetworkError,
            Reason::NotSent,
            Reason::Operator,
            Reason::CutOff,
            Reason::NoAttemptInTime,
        ] {
            assert_eq!(reason.to_string().parse::<Reason>(), Ok(reason));
        }
        assert!("origin answered x".parse::<Reason>().is_err());
        assert!("something else".parse::<Reason>().is_err());
    }

    #[test]
    fn reasons_are_short_classified_words() {
        assert_eq!(Reason::Answered(503).to_string(), "origin answered 503");
        assert_eq!(Reason::GONE.to_string(), "gone");
        assert_eq!("origin answered 410".parse::<Reason>(), Ok(Reason::GONE));
        assert_eq!(Reason::ConnectionRefused.to_string(), "connection refused");
        assert_eq!(Reason::ResetAfterSend.to_string(), "reset after send");
        assert_eq!(Reason::TimedOut.to_string(), "time-out");
        assert_eq!(Reason::Dns.to_string(), "dns");
        assert_eq!(Reason::Tls.to_string(), "tls");
    }
}
