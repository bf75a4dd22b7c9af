// The JavaScript peer: the same protocol as this project's worker, written in plain, idiomatic
// JavaScript the way a competent team would write it on Workers, to compare against. Frozen:
// it is the yardstick, not a product; change it only to fix a protocol mismatch.
//
// Verify Stripe-Signature (WebCrypto HMAC, keys imported once per isolate, constant-time
// compare), JSON.parse the event, claim it in a Durable Object named by the event id (lease,
// fence, retention alarm), forward to the origin, finalize or release, inside waitUntil.
import { DurableObject } from 'cloudflare:workers';

const TOLERANCE_SECONDS = 300;
const FUTURE_SKEW_SECONDS = 60;
const LEASE_MS = 15 * 60 * 1000;
const RETENTION_MS = 30 * 24 * 3600 * 1000;
const FORWARD_TIMEOUT_MS = 25_000;

const encoder = new TextEncoder();
let keys; // the HMAC keys, imported once per isolate

function hmacKeys(env) {
  keys ??= Promise.all(env.STRIPE_WEBHOOK_SECRET.split(',').map((secret) => crypto.subtle.importKey(
    'raw', encoder.encode(secret.trim()), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'],
  )));
  return keys;
}

function json(status, body, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

function parseSignature(header) {
  let timestamp = -1;
  const signatures = [];
  for (const part of header.split(',')) {
    const [key, value] = part.split('=');
    if (key === 't') timestamp = Number.parseInt(value, 10);
    if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  return { timestamp, signatures };
}

function hexToBytes(hex) {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

async function verify(env, header, body) {
  if (!header) return 'missing_signature';
  const { timestamp, signatures } = parseSignature(header);
  if (timestamp < 0 || Number.isNaN(timestamp)) return 'malformed_signature';
  if (signatures.length === 0) return 'no_v1_signature';
  const prefix = encoder.encode(`${timestamp}.`);
  const signed = new Uint8Array(prefix.length + body.byteLength);
  signed.set(prefix, 0);
  signed.set(new Uint8Array(body), prefix.length);
  let matched = false;
  for (const key of await hmacKeys(env)) {
    const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed));
    for (const candidate of signatures) {
      if (crypto.subtle.timingSafeEqual(mac, hexToBytes(candidate))) matched = true;
    }
  }
  if (!matched) return 'signature_mismatch';
  const age = Math.floor(Date.now() / 1000) - timestamp;
  if (age > TOLERANCE_SECONDS) return 'timestamp_too_old';
  if (-age > FUTURE_SKEW_SECONDS) return 'timestamp_in_future';
  return null;
}

export class PeerClaims extends DurableObject {
  async claim(nonce) {
    const now = Date.now();
    const record = await this.ctx.storage.get('record');
    if (record?.state === 'done') return { outcome: 'duplicate' };
    if (record?.state === 'processing' && now < record.leaseEnd) return { outcome: 'in_flight', leaseEnd: record.leaseEnd };
    const attempt = (record?.attempt ?? 0) + 1;
    const fence = `${attempt}.${nonce}`;
    await this.ctx.storage.put('record', { state: 'processing', fence, attempt, leaseEnd: now + LEASE_MS });
    if (!record) await this.ctx.storage.setAlarm(now + LEASE_MS + RETENTION_MS);
    return { outcome: 'claimed', fence, attempt };
  }

  async settle(fence, done) {
    const record = await this.ctx.storage.get('record');
    if (!record || record.fence !== fence || record.state !== 'processing') return false;
    await this.ctx.storage.put('record', { ...record, state: done ? 'done' : 'released' });
    return true;
  }

  async alarm() {
    await this.ctx.storage.deleteAll();
  }
}

export default {
  async fetch(request, env, ctx) {
    if (request.method !== 'POST' || new URL(request.url).pathname !== '/webhooks/stripe') {
      return json(404, { error: 'not_found' });
    }
    const body = await request.arrayBuffer();
    const refusal = await verify(env, request.headers.get('stripe-signature'), body);
    if (refusal) return json(400, { error: refusal });
    let event;
    try {
      event = JSON.parse(new TextDecoder().decode(body));
    } catch {
      return json(400, { error: 'invalid_json' });
    }
    if (typeof event?.id !== 'string' || !/^evt_[A-Za-z0-9_]{1,251}$/.test(event.id) || typeof event.type !== 'string') {
      return json(400, { error: 'invalid_envelope' });
    }
    const stub = env.PEER.get(env.PEER.idFromName(event.id));
    const claim = await stub.claim(crypto.randomUUID());
    if (claim.outcome === 'duplicate') return json(200, { status: 'duplicate' });
    if (claim.outcome === 'in_flight') {
      const seconds = Math.max(1, Math.ceil((claim.leaseEnd - Date.now()) / 1000));
      return json(409, { error: 'in_flight' }, { 'retry-after': String(seconds) });
    }
    const work = (async () => {
      let status = 0;
      try {
        const answer = await fetch(env.ORIGIN_URL, {
          method: 'POST',
          headers: {
            'content-type': request.headers.get('content-type') ?? 'application/json',
            'stripe-signature': request.headers.get('stripe-signature'),
            'x-webhook-dedup-event-id': event.id,
            'x-webhook-dedup-attempt': String(claim.attempt),
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
        });
        status = answer.status;
        await answer.body?.cancel();
      } catch {
        status = 0;
      }
      const ok = status >= 200 && status < 300;
      await stub.settle(claim.fence, ok);
      return status;
    })();
    ctx.waitUntil(work);
    const status = await work;
    if (status >= 200 && status < 300) return json(200, { status: 'processed', event_id: event.id, origin_status: status });
    return json(status ? 502 : 504, { error: status ? 'origin_failed' : 'origin_timeout' });
  },
};
