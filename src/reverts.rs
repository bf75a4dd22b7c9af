//! Test-only switches that take a fix out again, so that the model check can show it finds the
//! defect each fix closed (`tests/protocol/reverts.rs`: `finds_<defect>_when_its_fix_is_reverted`).
//! They exist only with the `reverts` feature, which only the tests turn on: in every other
//! build [`reverted`] is `false`, and the old code behind it is compiled out.

/// A fix that a test may take out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Fix {
    /// A dead letter keeps whether its last attempt's outcome is unknown, so that the attempt
    /// after its redelivery is a takeover.
    DeadLetterKeepsUnknown = 1,
    /// An event stored over a sync claim whose outcome is unknown is attempted as a takeover.
    StoredOverUnknownClaimIsTakeover = 2,
    /// Each stored event gets a random fence of its own.
    StoredEventFenceIsRandom = 4,
    /// Every request that reaches the object sets the alarm a record it read needs.
    EveryRequestSetsTheAlarm = 8,
    /// A queued attempt's lease covers its wait, whatever `LEASE_SECONDS`.
    AttemptLeaseCoversItsWait = 16,
    /// A queued event's body is read before its attempt is written.
    BodyReadBeforeTheAttempt = 32,
    /// The failure index hears of an origin's failures only once the forward is over.
    IndexToldAfterTheForward = 64,
}

#[cfg(feature = "reverts")]
static REVERTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// True when `fix` is taken out (never without the `reverts` feature).
#[inline(always)]
pub fn reverted(fix: Fix) -> bool {
    #[cfg(feature = "reverts")]
    {
        REVERTED.load(std::sync::atomic::Ordering::SeqCst) & fix as u32 != 0
    }
    #[cfg(not(feature = "reverts"))]
    {
        let _ = fix;
        false
    }
}

/// Takes `fix` out (`None`: puts every fix back). For the tests that show the model check
/// finds each defect; the whole process sees it.
#[cfg(feature = "reverts")]
pub fn revert(fix: Option<Fix>) {
    let bits = fix.map_or(0, |fix| fix as u32);
    REVERTED.store(bits, std::sync::atomic::Ordering::SeqCst);
}
