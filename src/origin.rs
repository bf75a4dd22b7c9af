//! How a forward to an origin ended; shared by both front doors.

/// How the forward to the origin ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginResult {
    /// The origin answered with this status.
    Responded {
        /// The origin's HTTP status.
        status: u16,
    },
    /// No answer within `FORWARD_TIMEOUT_MS`.
    TimedOut,
    /// The origin could not be reached (the text says why).
    Unreachable(String),
}

impl OriginResult {
    /// True for a 2xx answer: only then is the claim finalized.
    pub fn succeeded(&self) -> bool {
        matches!(self, OriginResult::Responded { status } if (200..300).contains(status))
    }

    /// Why the claim is released, kept in the record: e.g. `origin answered 500`.
    pub fn release_reason(&self) -> String {
        match self {
            OriginResult::Responded { status } => format!("origin answered {status}"),
            OriginResult::TimedOut => "origin timed out".to_owned(),
            OriginResult::Unreachable(why) => format!("origin unreachable: {why}"),
        }
    }
}
