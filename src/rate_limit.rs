//! The rate limiters' verdicts (the `[[ratelimits]]` bindings, each optional): a request's keys
//! checked one by one, and what the door does when the limiter itself fails. Pure: the worker
//! asks the binding and hands each key's result here.

/// Why a rate limiter could not give a verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimiterFault {
    /// The binding exists but is not a rate limiter (another kind of binding, or a var, under
    /// its name).
    NotALimiter,
    /// A call to the limiter failed.
    CallFailed,
}

impl LimiterFault {
    /// What the log line says.
    pub fn describe(self) -> &'static str {
        match self {
            LimiterFault::NotALimiter => "the binding is not a rate limiter",
            LimiterFault::CallFailed => "a call to the rate limiter failed",
        }
    }
}

/// How one request's check went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// No such binding: no limit is configured.
    Unlimited,
    /// Every key is within the limit.
    Within,
    /// A key is over the limit.
    Over,
    /// The limiter gave no verdict for a key, and no other key was over the limit.
    Failed(LimiterFault),
}

impl Check {
    /// The check of a request from each key's result (`Ok(within)`, or the fault): over as soon
    /// as one key is over, even when another could not be checked.
    pub fn of(results: impl IntoIterator<Item = Result<bool, LimiterFault>>) -> Check {
        let mut check = Check::Within;
        for result in results {
            match result {
                Ok(true) => {}
                Ok(false) => return Check::Over,
                Err(fault) => check = Check::Failed(fault),
            }
        }
        check
    }

    /// True when the request goes on. A limiter that fails lets it through (it fails open): a
    /// limit bounds cost, it does not guard correctness, and an outage of the limiter must not
    /// take the doors down with it. The failure is logged and counted instead.
    pub fn admits(self) -> bool {
        !matches!(self, Check::Over)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_limiter_lets_the_request_through_unless_another_key_is_over() {
        assert_eq!(Check::of([Ok(true), Ok(true)]), Check::Within);
        assert_eq!(Check::of([Ok(true), Ok(false)]), Check::Over);
        let failed = Check::of([Err(LimiterFault::CallFailed), Ok(true)]);
        assert_eq!(failed, Check::Failed(LimiterFault::CallFailed));
        assert!(failed.admits(), "fails open");
        assert_eq!(
            Check::of([Err(LimiterFault::CallFailed), Ok(false)]),
            Check::Over,
            "a definite over wins"
        );
        assert!(!Check::Over.admits());
        assert!(Check::Unlimited.admits() && Check::Within.admits());
        assert_eq!(Check::of([]), Check::Within);
    }
}
