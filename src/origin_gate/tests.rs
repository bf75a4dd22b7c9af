use super::*;

const LIMITS: GateLimits = GateLimits {
    max_rps: 5,
    max_in_flight: 3,
    breaker_failures: 3,
    probe_ms: 10_000,
    health_probe: false,
    permit_ms: 30_000,
};

fn go(gate: &mut Gate, key: &str, now: Millis, limits: &GateLimits) -> Option<Permit> {
    match gate.admit(key, now, limits).0 {
        Admission::Go(permit) => Some(permit),
        Admission::Hold { .. } => None,
    }
}

fn held_until(gate: &mut Gate, key: &str, now: Millis) -> (Millis, HoldReason) {
    match gate.admit(key, now, &LIMITS).0 {
        Admission::Hold { until, why } => (until, why),
        Admission::Go(_) => panic!("{key} went through at {now}"),
    }
}

#[test]
fn a_closed_gate_lets_attempts_through_within_both_caps() {
    let mut gate = Gate::default();
    let permits: Vec<Permit> = (0..3)
        .map(|i| go(&mut gate, &format!("e{i}"), 1_000, &LIMITS).expect("under the caps"))
        .collect();
    assert_eq!(gate.in_flight(1_000), 3);
    assert_eq!(
        held_until(&mut gate, "e3", 1_000).1,
        HoldReason::InFlightCap
    );
    gate.finish(permits[0], Health::Up, 1_100, &LIMITS);
    assert!(go(&mut gate, "e3", 1_100, &LIMITS).is_some());
}

#[test]
fn no_second_ever_starts_more_than_the_rate_cap() {
    let limits = GateLimits {
        max_in_flight: 0,
        ..LIMITS
    };
    let mut gate = Gate::default();
    let mut starts = Vec::new();
    // Attempts ask every 37 ms for 10 s; each answer comes at once.
    for step in 0..270u64 {
        let now = 50_000 + step * 37;
        if let Some(permit) = go(&mut gate, &format!("e{step}"), now, &limits) {
            starts.push(now);
            gate.finish(permit, Health::Up, now, &limits);
        }
    }
    for &from in &starts {
        let within = starts.iter().filter(|&&at| at >= from && at < from + 1_000);
        assert!(
            within.count() <= 5,
            "more than 5 starts in the second from {from}"
        );
    }
    assert!(starts.len() >= 45, "only {} starts in 10 s", starts.len());
}

#[test]
fn a_permit_of_an_attempt_that_never_finished_ends_with_its_lease() {
    let mut gate = Gate::default();
    for i in 0..3 {
        go(&mut gate, &format!("crashed{i}"), 1_000, &LIMITS).expect("under the caps");
    }
    assert_eq!(
        held_until(&mut gate, "next", 2_000).1,
        HoldReason::InFlightCap
    );
    assert_eq!(gate.in_flight(31_000), 0);
    assert!(go(&mut gate, "next", 31_000, &LIMITS).is_some());
}

#[test]
fn held_attempts_come_back_one_after_another_in_the_order_they_were_held() {
    let mut gate = Gate::default();
    gate.pause();
    let times: Vec<Millis> = (0..20)
        .map(|i| held_until(&mut gate, &format!("e{i}"), 1_000 + i).0)
        .collect();
    assert!(times.windows(2).all(|pair| pair[1] >= pair[0] + 200));
    assert!(times[0] >= 1_000 + LIMITS.probe_ms);
    assert_eq!(gate.view("o", 1_100).held, 20);
}

#[test]
fn an_operator_pause_holds_everything_until_the_resume_then_the_drain_ramps_up() {
    let mut gate = Gate::default();
    assert!(gate.pause().save);
    assert_eq!(held_until(&mut gate, "a", 1_000).1, HoldReason::Paused);
    assert_eq!(gate.view("o", 1_000).state, OriginState::Paused);
    assert!(gate.resume(5_000).save);
    assert!(go(&mut gate, "a", 5_000, &LIMITS).is_some());
    // The first second after the resume admits one attempt at once.
    assert_eq!(held_until(&mut gate, "b", 5_001).1, HoldReason::Ramp);
    assert!(go(&mut gate, "b", 6_000, &LIMITS).is_some());
    // Long after, the caps alone apply, and the ramp is forgotten.
    gate.admit("c", 30_000, &LIMITS);
    assert_eq!(gate.state().ramp_from, None);
}

#[test]
fn retry_after_pauses_the_origin_until_the_time_it_names() {
    let mut gate = Gate::default();
    let permit = go(&mut gate, "a", 1_000, &LIMITS).unwrap();
    let health = Health::of(
        &OriginOutcome::Answered { status: 429 },
        Some(9_000),
        1_000,
        60_000,
    );
    assert_eq!(health, Health::Throttled { until: 9_000 });
    assert!(gate.finish(permit, health, 1_200, &LIMITS).save);
    let (until, why) = held_until(&mut gate, "b", 2_000);
    assert_eq!((why, until >= 9_000), (HoldReason::Paused, true));
    assert!(go(&mut gate, "b", 9_000, &LIMITS).is_some());
    assert_eq!(gate.state().paused, None);
    assert_eq!(gate.state().ramp_from, Some(9_000));
}

#[test]
fn retry_after_is_capped_and_never_shortens_an_operator_pause() {
    let capped = Health::of(
        &OriginOutcome::Answered { status: 503 },
        Some(u64::MAX),
        1_000,
        60_000,
    );
    assert_eq!(capped, Health::Throttled { until: 61_000 });
    let mut gate = Gate::default();
    let permit = go(&mut gate, "a", 1_000, &LIMITS).unwrap();
    gate.pause();
    gate.finish(permit, capped, 1_100, &LIMITS);
    assert_eq!(gate.state().paused.unwrap().cause, PauseCause::Operator);
}

#[test]
fn only_answers_of_500_and_above_and_lost_answers_count_against_the_origin() {
    let health = |outcome| Health::of(&outcome, None, 0, 1);
    assert_eq!(health(OriginOutcome::Answered { status: 404 }), Health::Up);
    assert_eq!(health(OriginOutcome::Answered { status: 429 }), Health::Up);
    assert_eq!(
        health(OriginOutcome::Answered { status: 503 }),
        Health::Down
    );
    assert_eq!(health(OriginOutcome::TimedOut), Health::Down);
    let error = crate::origin::NetworkError::ConnectionLost;
    assert_eq!(health(OriginOutcome::Failed { error }), Health::Down);
}

fn open(gate: &mut Gate, now: Millis, limits: &GateLimits) {
    for i in 0..limits.breaker_failures {
        let permit = go(gate, &format!("f{i}"), now, limits).unwrap();
        let changed = gate.finish(permit, Health::Down, now, limits);
        assert_eq!(changed.opened, i + 1 == limits.breaker_failures);
    }
}

#[test]
fn the_breaker_opens_after_failures_in_a_row_and_one_probe_closes_it() {
    let mut gate = Gate::default();
    open(&mut gate, 1_000, &LIMITS);
    assert_eq!(gate.view("o", 1_000).state, OriginState::Open);
    let (until, why) = held_until(&mut gate, "a", 2_000);
    assert_eq!((why, until >= 11_000), (HoldReason::BreakerOpen, true));
    // At the probe time one attempt goes out; the rest wait for it.
    let probe = go(&mut gate, "a", 11_000, &LIMITS).unwrap();
    assert!(probe.probe);
    assert_eq!(gate.view("o", 11_000).state, OriginState::HalfOpen);
    assert_eq!(
        held_until(&mut gate, "b", 11_001).1,
        HoldReason::BreakerOpen
    );
    let changed = gate.finish(probe, Health::Up, 11_500, &LIMITS);
    assert_eq!(changed.recovered_from, Some(1_000));
    assert_eq!(gate.view("o", 11_500).state, OriginState::Closed);
    assert_eq!(gate.state().failures_in_a_row, 0);
}

#[test]
fn a_failed_probe_opens_the_breaker_for_another_interval() {
    let mut gate = Gate::default();
    open(&mut gate, 1_000, &LIMITS);
    let probe = go(&mut gate, "a", 11_000, &LIMITS).unwrap();
    let changed = gate.finish(probe, Health::Down, 11_200, &LIMITS);
    assert_eq!(changed.recovered_from, None);
    assert_eq!(
        gate.state().breaker,
        Breaker::Open {
            since: 1_000,
            next_probe: 21_200
        }
    );
}

#[test]
fn a_probe_that_never_answers_lets_the_next_probe_go_after_its_permit() {
    let mut gate = Gate::default();
    open(&mut gate, 1_000, &LIMITS);
    go(&mut gate, "lost", 11_000, &LIMITS).unwrap();
    assert_eq!(
        held_until(&mut gate, "b", 20_000).1,
        HoldReason::BreakerOpen
    );
    // The probe's permit (30 s) ends at 41 s; the gate then lets another probe out.
    let admitted = gate.admit("b", 40_999, &LIMITS).0;
    assert!(matches!(admitted, Admission::Hold { .. }));
    assert!(go(&mut gate, "b", 41_000, &LIMITS).is_some_and(|permit| permit.probe));
}

#[test]
fn with_a_health_url_only_the_gate_probes() {
    let limits = GateLimits {
        health_probe: true,
        ..LIMITS
    };
    let mut gate = Gate::default();
    open(&mut gate, 1_000, &limits);
    assert_eq!(gate.health_probe_at(&limits), Some(11_000));
    assert!(go(&mut gate, "a", 12_000, &limits).is_none());
    assert!(gate.health_probed(Health::Down, 12_000, &limits).save);
    assert_eq!(gate.health_probe_at(&limits), Some(22_000));
    let changed = gate.health_probed(Health::Up, 22_000, &limits);
    assert_eq!(changed.recovered_from, Some(1_000));
    assert_eq!(gate.health_probe_at(&limits), None);
}

#[test]
fn a_breaker_of_zero_failures_never_opens() {
    let limits = GateLimits {
        breaker_failures: 0,
        ..LIMITS
    };
    let mut gate = Gate::default();
    for i in 0..20u64 {
        let permit = go(&mut gate, "a", 1_000 + i * 1_000, &limits).unwrap();
        assert!(
            !gate
                .finish(permit, Health::Down, 1_000 + i * 1_000, &limits)
                .opened
        );
    }
    assert_eq!(gate.view("o", 30_000).state, OriginState::Closed);
    assert_eq!(gate.view("o", 30_000).failures_in_a_row, 20);
}

#[test]
fn the_stored_state_reads_back_as_it_was_written() {
    let mut gate = Gate::default();
    open(&mut gate, 1_000, &LIMITS);
    gate.pause();
    let json = serde_json::to_string(gate.state()).unwrap();
    let read: GateState = serde_json::from_str(&json).unwrap();
    assert_eq!(&read, gate.state());
}

#[test]
fn an_origin_is_named_without_credentials_or_query() {
    let url = url::Url::parse("https://user:pw@example.com:8443/hooks/in?token=x#f").unwrap();
    assert_eq!(origin_name(&url), "https://example.com:8443/hooks/in");
}

#[test]
fn hold_reasons_read_back_by_name() {
    for why in [
        HoldReason::Paused,
        HoldReason::BreakerOpen,
        HoldReason::RateCap,
        HoldReason::InFlightCap,
        HoldReason::Ramp,
    ] {
        assert_eq!(HoldReason::named(why.name()), Some(why));
    }
}

#[test]
fn the_gate_header_reads_back_what_it_says_and_nothing_else() {
    let words = [
        GateWord::Held {
            until: 1_234,
            why: HoldReason::RateCap,
        },
        GateWord::Failed(crate::origin::NetworkError::ConnectionLost),
        GateWord::Failed(crate::origin::NetworkError::Other),
        GateWord::TimedOut,
        GateWord::NotSent,
    ];
    for word in words {
        assert_eq!(GateWord::read(&word.header_value()), Some(word));
    }
    for junk in [
        "",
        "held",
        "held; until=x; why=paused",
        "held; until=5; why=bored",
        "ok",
    ] {
        assert_eq!(GateWord::read(junk), None, "{junk:?}");
    }
}

#[test]
fn however_long_the_way_to_the_origin_no_second_there_sees_more_than_the_rate_cap() {
    let limits = GateLimits {
        max_in_flight: 0,
        ..LIMITS
    };
    let mut gate = Gate::default();
    // Attempts ask every 20 ms; each answer comes 400 ms after its send. A request reaches the
    // origin at some moment in between: its send and its answer are the two extremes.
    let mut out: Vec<(Permit, Millis)> = Vec::new();
    let mut sent = Vec::new();
    for step in 0..500u64 {
        let now = 10_000 + step * 20;
        while let Some(index) = out.iter().position(|(_, answer_at)| *answer_at <= now) {
            let (permit, at) = out.remove(index);
            gate.finish(permit, Health::Up, at, &limits);
        }
        if let Some(permit) = go(&mut gate, &format!("e{step}"), now, &limits) {
            out.push((permit, now + 400));
            sent.push((now, now + 400));
        }
    }
    for arrival in [|(s, _): (Millis, Millis)| s, |(_, a): (Millis, Millis)| a] {
        let mut arrivals: Vec<Millis> = sent.iter().copied().map(arrival).collect();
        arrivals.sort_unstable();
        for &from in &arrivals {
            let within = arrivals
                .iter()
                .filter(|&&at| at >= from && at < from + 1_000);
            assert!(
                within.count() <= 5,
                "more than 5 arrivals in the second from {from}"
            );
        }
    }
    assert!(sent.len() >= 20, "only {} starts in 10 s", sent.len());
}
