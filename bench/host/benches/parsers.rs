//! Signature verification + envelope parse for 1 KiB, 64 KiB and 512 KiB events, and request
//! fingerprinting, on the host.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use webhook_dedup::config::Config;
use webhook_dedup::idempotency::fingerprint;
use webhook_dedup::providers::stripe::{envelope, signature};

const NOW: i64 = 1_700_000_000;

/// A Stripe-like event of about `size` bytes.
fn event(size: usize) -> Vec<u8> {
    let head = r#"{"id":"evt_1BenchmarkEvent000000000","object":"event","api_version":"2026-04-22","created":1700000000,"livemode":false,"type":"invoice.paid","data":{"object":{"object":"invoice","lines":["#;
    let mut body = head.as_bytes().to_vec();
    let item =
        br#"{"id":"il_1","amount":2000,"currency":"eur","description":"Benchmark line item"},"#;
    while body.len() + item.len() + 8 < size {
        body.extend_from_slice(item);
    }
    body.extend_from_slice(br#"{}]}}}"#);
    body
}

fn verify_and_parse(c: &mut Criterion) {
    let config = Config::load(|k| match k {
        "STRIPE_WEBHOOK_SECRET" => Some("whsec_benchmark_secret".into()),
        "ORIGIN_URL" => Some("http://127.0.0.1/".into()),
        _ => None,
    })
    .expect("valid configuration");
    let secrets = config.webhook.secrets.clone();
    let mut group = c.benchmark_group("verify+parse");
    for size in [1024, 64 * 1024, 512 * 1024] {
        let body = event(size);
        let header = format!(
            "t={NOW},v1={}",
            hex::encode(signature::sign(&secrets[0], NOW, &body))
        );
        assert!(envelope::parse(&body).is_ok());
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{} KiB", size / 1024)),
            &body,
            |b, body| {
                b.iter(|| {
                    signature::verify(
                        Some(black_box(&header)),
                        black_box(body),
                        &secrets,
                        NOW,
                        300,
                    )
                    .unwrap();
                    envelope::parse(black_box(body)).unwrap()
                })
            },
        );
    }
    group.finish();
}

fn fingerprinting(c: &mut Criterion) {
    let mut group = c.benchmark_group("fingerprint");
    for size in [1024, 64 * 1024] {
        let body = event(size);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{} KiB", size / 1024)),
            &body,
            |b, body| {
                b.iter(|| {
                    fingerprint(
                        "POST",
                        "/api/charges?expand=customer",
                        Some("application/json"),
                        black_box(body),
                    )
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, verify_and_parse, fingerprinting);
criterion_main!(benches);
