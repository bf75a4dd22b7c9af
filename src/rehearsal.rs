//! A Stripe delivery rehearsed in memory, from its signature to its answer, and then a repeat of
//! it: run once when the module starts (see `src/entry.mjs`), before any request.
//!
//! The runtime compiles each WebAssembly function the first time it is called. A fresh isolate's
//! first delivery used to pay for compiling most of the code it runs. The rehearsal runs the same
//! functions (the objects' own store type, over a table in memory) at start-up, where Cloudflare
//! runs a module's start while the connection is still being set up. It does no I/O, needs no
//! random source, and keeps nothing: the claim record lives in a table dropped at the end.

use crate::authority::attempt::{Command, Event};
use crate::authority::{
    self, frame_json_range, frame_prefix, Attempt, AuthorityReply, AuthorityRequest, Begin,
    Delivery, Head,
};
use crate::claim::{BoxedStore, KvStore, MemoryTable, Millis, Nonce};
use crate::config::Config;
use crate::log_line::{LogLine, Route};
use crate::mac;
use crate::providers::stripe::envelope::{self, FieldValue, Fields};
use crate::providers::Provider;
use crate::webhook::{self, Checked, Unchecked};

/// What the rehearsal's two deliveries were answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rehearsed {
    /// Each delivery's log line: the first's, then the repeat's.
    pub lines: [String; 2],
}

const SECRET: &str = "whsec_rehearsal";
const EVENT_ID: &str = "evt_rehearsal";
const BODY: &[u8] = br#"{"id":"evt_rehearsal","object":"event","type":"invoice.paid","livemode":false,"created":1700000000,"data":{"object":{}}}"#;
/// The rehearsal's clock: a fixed time, in milliseconds.
const NOW: Millis = 1_700_000_000_000;

/// Rehearses a delivery and its repeat. `Err` names the step that did not go as a delivery
/// does (a rule changed and the rehearsal was not), which the host tests catch.
pub fn rehearse() -> Result<Rehearsed, String> {
    let vars = |key: &str| match key {
        "STRIPE_WEBHOOK_SECRET" => Some(SECRET.to_owned()),
        "ORIGIN_URL" => Some("https://origin.example/stripe".to_owned()),
        "DELIVERY_MODE" => Some("sync".to_owned()),
        _ => None,
    };
    let config = Config::load(vars).map_err(|problems| format!("config: {problems:?}"))?;
    let timestamp = (NOW / 1_000) as i64;
    let mac = mac::hmac_sha256(SECRET.as_bytes(), format!("{timestamp}.").as_bytes(), BODY);
    let header = format!("t={timestamp},v1={}", hex::encode(mac));
    let headers = |name: &str| match name {
        "stripe-signature" => Some(header.clone()),
        "content-type" => Some("application/json".to_owned()),
        _ => None,
    };
    let unchecked = Unchecked::read(Provider::Stripe, &headers).map_err(|e| format!("{e:?}"))?;
    let expected = [mac::hmac_sha256(SECRET.as_bytes(), &unchecked.prefix(), BODY)];
    let tolerance = config.webhook.signature_tolerance_seconds;
    match unchecked.decide(&expected, timestamp, tolerance) {
        Ok(Checked::ReadEnvelope) => {}
        other => return Err(format!("signature: {other:?}")),
    }
    let identity = webhook::identity_of(envelope::from_fields(fields()))
        .map_err(|refusal| format!("envelope: {refusal:?}"))?;
    let mut store: BoxedStore = KvStore::new(Box::new(MemoryTable::default()));
    let key = Provider::Stripe.key(&identity.id);
    let forwarded = webhook::forwarded_headers(Provider::Stripe, &headers);
    let mut lines = Vec::new();
    for nonce in [Nonce([1; 16]), Nonce([2; 16])] {
        let request = webhook::request(&config, Provider::Stripe, key.clone(), forwarded.clone(), false, nonce);
        let reply = through_object(&mut store, &request)?;
        let reply: AuthorityReply = serde_json::from_str(&reply).map_err(|e| e.to_string())?;
        let mut line = LogLine::new(Route::Webhook);
        line.note(&reply);
        let answer = webhook::after_delivery(&reply, EVENT_ID, NOW);
        line.outcome = answer.outcome;
        line.answered(answer.http().status);
        lines.push(line.to_json());
    }
    let [first, repeat] = <[String; 2]>::try_from(lines).map_err(|_| "two deliveries")?;
    Ok(Rehearsed {
        lines: [first, repeat],
    })
}

/// The envelope's fields as `JSON.parse` gives them for [`BODY`].
fn fields() -> Fields {
    let text = |value: &str| Some(FieldValue::Text(value.to_owned()));
    Fields {
        id: text(EVENT_ID),
        event_type: text("invoice.paid"),
        livemode: Some(FieldValue::Bool(false)),
        created: Some(FieldValue::Integer(1_700_000_000)),
        object: text("event"),
    }
}

/// `request` framed, read back as the object reads it, and run as the object runs it, with an
/// origin that answers 200 at once; the reply's JSON.
fn through_object(store: &mut BoxedStore, request: &AuthorityRequest) -> Result<String, String> {
    let json = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    let frame = frame_prefix(&json);
    let head = [frame[0], frame[1], frame[2], frame[3]];
    let (start, end) = frame_json_range(head, frame.len()).ok_or("frame")?;
    let request: AuthorityRequest =
        serde_json::from_slice(&frame[start..end]).map_err(|e| e.to_string())?;
    let AuthorityRequest::Deliver(deliver) = request else {
        return Err("not a delivery".into());
    };
    let won = match authority::begin(store, &deliver, NOW, Nonce([3; 16])).0 {
        Begin::Forward(won) => won,
        Begin::Reply(reply) => return serde_json::to_string(&reply).map_err(|e| e.to_string()),
    };
    let _ = authority::attempt_headers(Provider::Stripe, &deliver.key, won.attempt, won.takeover);
    let mut attempt = Attempt::sync(&deliver, won, NOW);
    let mut reply = None;
    let mut events = vec![
        Event::BodyEnded,
        Event::Head(Head {
            status: 200,
            headers: Vec::new(),
        }),
    ];
    while !attempt.is_finished() {
        while let Some(command) = attempt.poll() {
            match command {
                Command::Reply(report) => reply = Some(AuthorityReply::Delivery(Delivery::Forwarded(report))),
                Command::Settle(op) => {
                    let settled = attempt.settle_with(&op, store, NOW).0;
                    attempt.handle(Event::Settled(settled), NOW);
                }
                Command::Report(summary) => {
                    let _ = LogLine::ended(&summary, NOW).to_json();
                }
                _ => {}
            }
        }
        let event = events.pop().ok_or("the attempt did not finish")?;
        attempt.handle(event, NOW);
    }
    let reply = reply.ok_or("no reply")?;
    serde_json::to_string(&reply).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rehearsal_runs_a_delivery_to_its_end_and_answers_its_repeat_as_a_duplicate() {
        let [first, repeat] = rehearse().expect("every step went as a delivery does").lines;
        assert!(first.contains(r#""outcome":"processed","status":200"#), "{first}");
        assert!(first.contains(r#""settle":"finalized""#), "{first}");
        assert!(repeat.contains(r#""outcome":"duplicate","status":200"#), "{repeat}");
    }
}
