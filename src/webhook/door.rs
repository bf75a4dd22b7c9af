//! A delivery's whole sequence at the webhook door, over the [`Runtime`]: configuration,
//! method, the sender's headers (present, well formed, in its alphabet, and a signed time
//! within tolerance) before any of the body is read, the body, the sender enabled, the
//! signature (for Stripe, then its envelope), the replay limit, then the delivery (sync) or its
//! storage (queue), and the answer.

use crate::answer::HttpAnswer;
use crate::config::{Config, ConfigProblem};
use crate::log_line::{LogLine, Route};
use crate::providers::{Identity, Provider};
use crate::runtime::Runtime;

use super::{after_delivery, forwarded_headers, held, refusal_answer, Answer};
use super::{Checked, Refusal, Unchecked};
use crate::claim_authority::webhook::webhook_request;

/// The binding name of the optional rate limiter of replays (`[[ratelimits]]`): how often one
/// signed body of a sender that signs neither the id nor a time may be delivered.
pub const REPLAY_LIMITER: &str = "WEBHOOK_REPLAY_LIMITER";

/// Serves one `method` delivery from `provider` under `config` (see [`deliver`]): the answer,
/// and on `line` its outcome and what the log says of a refusal.
pub async fn serve<R: Runtime>(
    runtime: &R,
    provider: Provider,
    config: Result<&Config, &[ConfigProblem]>,
    method: &str,
    line: &mut LogLine,
) -> HttpAnswer {
    line.provider = Some(provider);
    let answer = deliver(runtime, provider, config, method, line).await;
    line.outcome = answer.outcome;
    if answer.note.is_some() {
        line.detail.clone_from(&answer.note);
    }
    answer.http()
}

/// Serves one `method` delivery from `provider` under `config` and says what to answer; what
/// it learns (key, event type, the claim authority's reply) is noted on `line`. A refusal asks
/// nothing of the claim authority.
pub async fn deliver<R: Runtime>(
    runtime: &R,
    provider: Provider,
    config: Result<&Config, &[ConfigProblem]>,
    method: &str,
    line: &mut LogLine,
) -> Answer {
    let config = match config {
        Ok(config) => config,
        Err(problems) => return refusal_answer(&Refusal::Misconfigured(problems.to_vec())),
    };
    let verified = match verify(runtime, provider, config, method).await {
        Ok(verified) => verified,
        Err(refusal) => return refusal_answer(&refusal),
    };
    let Verified {
        identity: Identity { id, event_type },
        known_only,
        body,
    } = verified;
    let key = provider.key(&id);
    line.key = Some(key.clone());
    line.event_type = event_type;
    let header = |name: &str| runtime.header(name);
    let headers = forwarded_headers(provider, &header);
    let now = runtime.now_ms();
    let held = runtime.with_known_origins(|known| held::hold(known, config, provider, now));
    if let Some((until, why)) = held {
        return held::held_answer(until, why, now);
    }
    let make = |nonce| webhook_request(config, provider, key, headers, known_only, nonce);
    let (reply, _) = runtime.deliver(make, &body).await;
    line.note(&reply);
    let now = runtime.now_ms();
    runtime.with_known_origins(|known| held::learn(known, config, provider, &reply, now));
    after_delivery(&reply, &id, now)
}

/// A verified delivery: who sent what, whether only a key its object knows may be served, and
/// its body.
struct Verified<B> {
    identity: Identity,
    known_only: bool,
    body: B,
}

/// Method, then the sender's headers before any of the body is read (present, well formed, in
/// the sender's alphabet, a signed time within tolerance: see [`Unchecked`]), so a request that
/// fails them is answered at once, its body never read; then the body within the cap, the
/// sender enabled, the signature (for Stripe, then its envelope), and the replay limit: past it
/// only a delivery its object already knows is served (a repeat is still answered as a
/// duplicate); one that would make a new record is refused.
///
/// A sender that is off runs the same steps and is refused where its signature would be
/// checked, answered as a signature that matches no secret (see [`Refusal::NotEnabled`]): to
/// a caller without its secret it is indistinguishable from one that is on.
async fn verify<R: Runtime>(
    runtime: &R,
    provider: Provider,
    config: &Config,
    method: &str,
) -> Result<Verified<R::Body>, Refusal> {
    if method != "POST" {
        return Err(Refusal::MethodNotAllowed);
    }
    let unchecked = Unchecked::read(provider, &|name: &str| runtime.header(name))?;
    let now_seconds = (runtime.now_ms() / 1_000) as i64;
    let tolerance = config.webhook.signature_tolerance_seconds;
    unchecked.check_time(now_seconds, tolerance)?;
    let body = runtime.body(&config.delivery).await?;
    let Some((keys, _)) = config.sender(provider) else {
        return Err(Refusal::NotEnabled(provider));
    };
    let expected = runtime.macs(&keys, &unchecked.prefix(), &body).await;
    let replay_key = unchecked.replay_key(&expected);
    let identity = match unchecked.decide(&expected, now_seconds, tolerance)? {
        Checked::Identified(identity) => identity,
        Checked::ReadEnvelope => super::identity_of(runtime.envelope(&body))?,
    };
    let known_only = match replay_key {
        Some(key) => {
            !runtime
                .within_limit(Route::Webhook, REPLAY_LIMITER, &[key])
                .await
        }
        None => false,
    };
    Ok(Verified {
        identity,
        known_only,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::ClaimOutcome;
    use crate::claim_authority::{AuthorityReply, AuthorityRequest, Delivery};
    use crate::log_line::Outcome;
    use crate::providers::stripe::signature;
    use crate::runtime::memory::{run, Memory, RuntimeCall, NONCE};
    use crate::secret::Secret;

    const NOW_MS: u64 = 1_700_000_000_000;
    const GUID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
    const EVENT: &[u8] = br#"{"id":"evt_1","object":"event","type":"charge.succeeded"}"#;

    fn config(github: bool) -> Config {
        Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/stripe".into()),
            "GITHUB_WEBHOOK_SECRET" if github => Some("a-github-secret".into()),
            "GITHUB_ORIGIN_URL" if github => Some("https://origin.example/github".into()),
            _ => None,
        })
        .unwrap()
    }

    fn stripe_signed(body: &[u8]) -> Memory {
        let t = (NOW_MS / 1_000) as i64;
        let mac = signature::sign(&Secret::new("whsec_a"), t, body);
        let header = format!("t={t},v1={}", hex::encode(mac));
        Memory::new(NOW_MS, &[("stripe-signature", &header)], body)
    }

    fn github_signed(body: &[u8]) -> Memory {
        let mac = crate::mac::hmac_sha256(b"a-github-secret", b"", body);
        let signature = format!("sha256={}", hex::encode(mac));
        let headers = [
            ("x-hub-signature-256", signature.as_str()),
            ("x-github-delivery", GUID),
            ("x-github-event", "push"),
        ];
        Memory::new(NOW_MS, &headers, body)
    }

    fn serve(runtime: &Memory, provider: Provider, config: &Config, method: &str) -> Answer {
        let mut line = LogLine::new(Route::Webhook);
        run(deliver(runtime, provider, Ok(config), method, &mut line))
    }

    fn duplicate() -> AuthorityReply {
        let declined = ClaimOutcome::DuplicateProcessed {
            finished_at: 1,
            response: None,
        };
        AuthorityReply::Delivery(Delivery::Declined(declined))
    }

    #[test]
    fn an_invalid_configuration_is_refused_before_anything_is_read() {
        let runtime = stripe_signed(EVENT);
        let problems = Config::load(|_| None).unwrap_err();
        let mut line = LogLine::new(Route::Webhook);
        let answer = run(deliver(
            &runtime,
            Provider::Stripe,
            Err(&problems),
            "POST",
            &mut line,
        ));
        assert_eq!(
            (answer.status, answer.outcome),
            (500, Outcome::Refused("misconfigured"))
        );
        assert_eq!(runtime.calls(), []);
    }

    /// The method is checked first, for a sender that is on and one that is off alike; it
    /// reads nothing.
    #[test]
    fn the_method_is_checked_before_anything_is_read() {
        let runtime = github_signed(b"{}");
        let off = serve(&runtime, Provider::Github, &config(false), "GET");
        let on = serve(&runtime, Provider::Github, &config(true), "GET");
        assert_eq!((on.status, on.allow), (405, Some("POST")));
        assert_eq!(off.http(), on.http());
        assert_eq!(runtime.calls(), []);
    }

    /// A request to a sender's door: the sender, its headers, and the code it is refused with.
    type Case<'a> = (Provider, Vec<(&'a str, &'a str)>, &'a str);

    /// Before any of the body is read: the sender's signature headers present and well formed,
    /// its unsigned headers in its alphabet, and a signed time within tolerance. A request that
    /// fails is refused with its code and the body is never read (nor anything asked).
    #[test]
    fn the_senders_headers_are_checked_before_the_body_is_read() {
        let t = (NOW_MS / 1_000) as i64;
        let stale = format!("t={},v1={}", t - 301, "ab".repeat(32));
        let ahead = format!("t={},v1={}", t + 61, "ab".repeat(32));
        let cases: Vec<Case> = vec![
            (Provider::Stripe, vec![], "missing_signature"),
            (
                Provider::Stripe,
                vec![("stripe-signature", "v1=zz")],
                "malformed_signature",
            ),
            (
                Provider::Stripe,
                vec![("stripe-signature", &stale)],
                "timestamp_too_old",
            ),
            (
                Provider::Stripe,
                vec![("stripe-signature", &ahead)],
                "timestamp_in_future",
            ),
            (
                Provider::Github,
                vec![("x-github-delivery", GUID)],
                "missing_signature",
            ),
        ];
        let sig = format!("sha256={}", "ab".repeat(32));
        let github = |id: &'static str, event: &'static str| {
            vec![
                ("x-hub-signature-256", sig.as_str()),
                ("x-github-delivery", id),
                ("x-github-event", event),
            ]
        };
        let more: Vec<Case> = vec![
            (
                Provider::Github,
                github("..", "push"),
                "invalid_delivery_id",
            ),
            (
                Provider::Github,
                github(GUID, "<https://evil.example|x>"),
                "invalid_event_type",
            ),
        ];
        for (provider, headers, code) in cases.into_iter().chain(more) {
            let runtime = Memory::new(NOW_MS, &headers, EVENT);
            let answer = serve(&runtime, provider, &config(true), "POST");
            assert_eq!(
                (answer.status, answer.outcome.word()),
                (400, code),
                "{headers:?}"
            );
            assert_eq!(runtime.calls(), [], "{code}: nothing read, nothing asked");
        }
        let standard = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/stripe".into()),
            "STANDARD_WEBHOOK_SECRET" => Some("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3".into()),
            _ => None,
        })
        .unwrap();
        let old = (t - 301).to_string();
        let headers = [
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", old.as_str()),
            (
                "webhook-signature",
                "v1,q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=",
            ),
        ];
        let runtime = Memory::new(NOW_MS, &headers, EVENT);
        let answer = serve(&runtime, Provider::Standard, &standard, "POST");
        assert_eq!(
            (answer.status, answer.outcome.word()),
            (400, "timestamp_too_old")
        );
        assert_eq!(runtime.calls(), []);
    }

    /// A sender that is off answers a caller without its secret exactly as one that is on and
    /// refuses the request: unsigned, at once, unread; signed with a secret it does not hold,
    /// after the body as a mismatch. Only the log line tells them apart.
    #[test]
    fn a_sender_that_is_off_answers_as_one_that_is_on_and_refuses() {
        let unsigned = |runtime: &Memory, on: bool| {
            serve(runtime, Provider::Github, &config(on), "POST").http()
        };
        let bare = Memory::new(NOW_MS, &[("x-github-delivery", GUID)], b"{}");
        assert_eq!(unsigned(&bare, false), unsigned(&bare, true));
        assert_eq!(bare.calls(), []);
        let mut forged = github_signed(b"{}");
        forged.body = Ok(b"{\"other\":1}".to_vec());
        let off = serve(&forged, Provider::Github, &config(false), "POST");
        assert_eq!(
            forged.calls(),
            [RuntimeCall::Body],
            "off: nothing asked past the body"
        );
        let on = serve(&forged, Provider::Github, &config(true), "POST");
        assert_eq!(off.http(), on.http());
        assert_eq!(on.outcome.word(), "signature_mismatch");
        assert_eq!(off.outcome.word(), "sender_off");
        assert!(off.note.unwrap().contains("GITHUB_WEBHOOK_SECRET"));
    }

    #[test]
    fn a_body_that_cannot_be_read_is_refused_before_its_signature_is_checked() {
        let mut runtime = stripe_signed(EVENT);
        runtime.body = Err(crate::answer::BodyError::TimedOut { ms: 10 });
        let answer = serve(&runtime, Provider::Stripe, &config(false), "POST");
        assert_eq!(answer.status, 408);
        assert_eq!(runtime.calls(), [RuntimeCall::Body]);
    }

    /// A signature that does not match asks nothing of the claim authority (nor reads the
    /// envelope).
    #[test]
    fn a_wrong_signature_writes_nothing() {
        let mut runtime = stripe_signed(EVENT);
        runtime.body = Ok(br#"{"id":"evt_2","object":"event","type":"x"}"#.to_vec());
        let answer = serve(&runtime, Provider::Stripe, &config(false), "POST");
        assert_eq!(
            (answer.status, answer.outcome.word()),
            (400, "signature_mismatch")
        );
        assert_eq!(runtime.calls(), [RuntimeCall::Body, RuntimeCall::Macs(1)]);
    }

    #[test]
    fn a_signed_stripe_event_with_a_bad_envelope_writes_nothing() {
        let runtime = stripe_signed(br#"{"object":"event","type":"x"}"#);
        let answer = serve(&runtime, Provider::Stripe, &config(false), "POST");
        assert_eq!(
            (answer.status, answer.outcome.word()),
            (400, "invalid_envelope")
        );
        assert_eq!(
            runtime.calls(),
            [
                RuntimeCall::Body,
                RuntimeCall::Macs(1),
                RuntimeCall::Envelope
            ]
        );
    }

    /// A verified Stripe event is delivered under its id, with the body beside the request, the
    /// sender's headers forwarded, and no replay limit (Stripe signs a time); the reply makes
    /// the answer, and the log line learns the key, the type and the reply.
    #[test]
    fn a_verified_stripe_event_is_delivered_and_answered_from_the_reply() {
        let runtime = stripe_signed(EVENT).replying(vec![duplicate()]);
        let mut line = LogLine::new(Route::Webhook);
        let config = config(false);
        let answer = run(deliver(
            &runtime,
            Provider::Stripe,
            Ok(&config),
            "POST",
            &mut line,
        ));
        assert_eq!((answer.status, answer.outcome), (200, Outcome::Duplicate));
        assert_eq!(line.key.as_deref(), Some("evt_1"));
        assert_eq!(line.event_type.as_deref(), Some("charge.succeeded"));
        let calls = runtime.calls();
        assert_eq!(
            calls[..3],
            [
                RuntimeCall::Body,
                RuntimeCall::Macs(1),
                RuntimeCall::Envelope
            ]
        );
        let RuntimeCall::Deliver(AuthorityRequest::Deliver(sent), body) = &calls[3] else {
            panic!("a delivery: {calls:?}");
        };
        assert_eq!(
            (sent.key.as_str(), sent.nonce, body.as_slice()),
            ("evt_1", NONCE, EVENT)
        );
        assert!(sent
            .forward
            .headers
            .iter()
            .any(|(name, _)| name == "stripe-signature"));
        assert!(!sent.known_only);
        assert_eq!(calls.len(), 4);
    }

    /// GitHub signs neither the id nor a time: one signed body is counted by the replay limiter
    /// under its MAC, and past the limit only a delivery its object already knows is served.
    #[test]
    fn past_the_replay_limit_only_a_known_delivery_is_served() {
        for over_limit in [false, true] {
            let mut runtime = github_signed(b"{}");
            runtime.over_limit = over_limit;
            let _ = serve(&runtime, Provider::Github, &config(true), "POST");
            let calls = runtime.calls();
            let RuntimeCall::Limit(binding, keys) = &calls[2] else {
                panic!("the replay limiter is asked: {calls:?}");
            };
            assert_eq!((binding.as_str(), keys.len()), (REPLAY_LIMITER, 1));
            let RuntimeCall::Deliver(
                AuthorityRequest::Enqueue {
                    known_only, key, ..
                },
                _,
            ) = &calls[3]
            else {
                panic!("GitHub's deliveries are stored for the queue: {calls:?}");
            };
            assert_eq!(
                (key.as_str(), *known_only),
                (format!("github:{GUID}").as_str(), over_limit)
            );
        }
    }

    /// What the log line learns: through [`serve`], the provider, the outcome and a refusal's
    /// detail; from a forwarded reply, its attempt, the origin's status and the settle step.
    #[test]
    fn the_log_line_learns_the_refusal_or_the_forward() {
        let runtime = github_signed(b"{}");
        let mut line = LogLine::new(Route::Webhook);
        let config = config(true);
        let answer = run(super::serve(
            &runtime,
            Provider::Github,
            Ok(&config),
            "GET",
            &mut line,
        ));
        assert_eq!(answer.status, 405);
        assert_eq!(line.provider, Some(Provider::Github));
        assert_eq!(line.outcome, Outcome::Refused("method_not_allowed"));
        let report = crate::claim_authority::ForwardReport {
            attempt: 2,
            takeover: true,
            outcome: crate::origin::OriginOutcome::Answered { status: 200 },
            verdict: crate::origin::Verdict::Succeeded,
            settle: crate::claim_authority::SettleStep::Finalized,
            origin_ms: 7,
            not_before: None,
            head: None,
        };
        let forwarded = AuthorityReply::Delivery(Delivery::Forwarded(report));
        let runtime = stripe_signed(EVENT).replying(vec![forwarded]);
        let mut line = LogLine::new(Route::Webhook);
        let answer = run(super::serve(
            &runtime,
            Provider::Stripe,
            Ok(&config),
            "POST",
            &mut line,
        ));
        assert_eq!((answer.status, line.outcome), (200, Outcome::Processed));
        assert_eq!(
            (line.attempt, line.takeover, line.origin_status),
            (Some(2), Some(true), Some(200))
        );
        assert_eq!(
            line.settle,
            Some(crate::claim_authority::SettleStep::Finalized)
        );
    }

    fn answered(status: u16, not_before: Option<u64>) -> AuthorityReply {
        let report = crate::claim_authority::ForwardReport {
            attempt: 1,
            takeover: false,
            outcome: crate::origin::OriginOutcome::Answered { status },
            verdict: crate::origin::Verdict::of(
                &crate::origin::OriginOutcome::Answered { status },
                |status| (200..300).contains(&status),
            ),
            settle: crate::claim_authority::SettleStep::Released,
            origin_ms: 3,
            not_before,
            head: None,
        };
        AuthorityReply::Delivery(Delivery::Forwarded(report))
    }

    /// A sync delivery the origin answers `503` with `Retry-After` passes the time on; the next
    /// one before then is answered `503 origin_held` with what is left of it, asks nothing of
    /// the claim authority and writes nothing; after it, deliveries go through again.
    #[test]
    fn an_origin_that_asked_for_time_gets_no_sync_delivery_until_then() {
        let config = config(false);
        let until = NOW_MS + 20_000;
        let mut runtime = stripe_signed(EVENT).replying(vec![answered(503, Some(until))]);
        let first = serve(&runtime, Provider::Stripe, &config, "POST");
        assert_eq!((first.status, first.retry_after), (502, Some(20)));
        runtime.now = NOW_MS + 5_000;
        let calls_before = runtime.calls().len();
        let held = serve(&runtime, Provider::Stripe, &config, "POST");
        assert_eq!(
            (held.status, held.retry_after, held.outcome),
            (503, Some(15), Outcome::Held)
        );
        assert_eq!(held.body["error"], "origin_held");
        assert_eq!(held.body["why"], "paused");
        let asked = runtime.calls()[calls_before..]
            .iter()
            .any(|call| matches!(call, RuntimeCall::Deliver(..) | RuntimeCall::Ask(..)));
        assert!(!asked, "nothing asked of the claim authority");
        runtime.now = until;
        runtime.replies = std::cell::RefCell::new(vec![duplicate()].into());
        let after = serve(&runtime, Provider::Stripe, &config, "POST");
        assert_eq!((after.status, after.outcome), (200, Outcome::Duplicate));
    }

    /// Failures alone never hold a sync delivery; a hold is for its own origin only, and never
    /// for a sender in queue mode (its origin's gate holds its attempts).
    #[test]
    fn failures_never_hold_and_a_hold_is_for_its_own_origin_in_sync_mode_only() {
        let config = config(true);
        let failures = vec![answered(500, None); 8];
        let runtime = stripe_signed(EVENT).replying(failures);
        for _ in 0..8 {
            assert_eq!(
                serve(&runtime, Provider::Stripe, &config, "POST").status,
                502
            );
        }
        let delivered = runtime
            .calls()
            .iter()
            .filter(|call| matches!(call, RuntimeCall::Deliver(..)))
            .count();
        assert_eq!(delivered, 8, "every one was delivered");
        let throttled = stripe_signed(EVENT).replying(vec![answered(503, Some(NOW_MS + 9_000))]);
        serve(&throttled, Provider::Stripe, &config, "POST");
        assert_eq!(
            serve(&throttled, Provider::Stripe, &config, "POST").status,
            503
        );
        let github = github_signed(b"{}").replying(vec![duplicate()]);
        *github.known_origins.borrow_mut() = throttled.known_origins.borrow().clone();
        assert_eq!(
            serve(&github, Provider::Github, &config, "POST").status,
            200
        );
        let queued = Config::load(|key| match key {
            "STRIPE_WEBHOOK_SECRET" => Some("whsec_a".into()),
            "ORIGIN_URL" => Some("https://origin.example/stripe".into()),
            "DELIVERY_MODE" => Some("queue".into()),
            _ => None,
        })
        .unwrap();
        let stored = AuthorityReply::Enqueue(crate::claim::EnqueueOutcome::Queued);
        let queue = stripe_signed(EVENT).replying(vec![stored]);
        *queue.known_origins.borrow_mut() = throttled.known_origins.borrow().clone();
        assert_eq!(serve(&queue, Provider::Stripe, &queued, "POST").status, 200);
    }
}
