// Signed Stripe deliveries, made by the real `stripe` npm package.
import Stripe from 'stripe';

import { adminHeaders, call } from './harness.mjs';

export const stripe = new Stripe('sk_test_unused_by_the_tests');

let counter = 0;

/** A unique event id for this test run. */
export function eventId(label = 'e') {
  counter += 1;
  return `evt_${label}_${Date.now().toString(36)}_${process.pid}_${counter}`;
}

/** A Stripe event payload (the raw JSON text) with the given id. */
export function eventPayload(id, type = 'payment_intent.succeeded', extra = {}) {
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2026-04-22',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    type,
    data: { object: { id: `pi_${id.slice(4)}`, object: 'payment_intent', amount: 2000, currency: 'eur' } },
    request: { id: null, idempotency_key: null },
    ...extra,
  });
}

/** The Stripe-Signature header the stripe package makes for `payload`. */
export function signatureFor(payload, secret, timestamp) {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

/**
 * POSTs `payload` to the worker's webhook route, signed with `secret` (or with the given
 * `signature` header as is; `signature: null` sends none).
 */
export function deliver(worker, payload, { secret, timestamp, signature, headers = {} } = {}) {
  const sig = signature === undefined ? signatureFor(payload, secret, timestamp) : signature;
  return call(`${worker.url}/webhooks/stripe`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      ...(sig === null ? {} : { 'stripe-signature': sig }),
      ...headers,
    },
    body: payload,
  });
}

/** The claim record of `key` through the test routes (null when none). */
export async function record(worker, key) {
  const answer = await call(`${worker.url}/_test/claims/${encodeURIComponent(key)}`, { headers: adminHeaders(worker) });
  if (answer.status !== 200) throw new Error(`inspect failed: ${answer.status} ${answer.text}`);
  return answer.json.record;
}

/**
 * The settings of the queue-mode tests: Stripe in queue mode with `secret` to `origin`'s
 * `/stripe`, the admin API on with `token`, retries 1 s then 2 s, 3 attempts, an 8 s lease and
 * 3 s attempts (sync forwards 1 s, no late-answer wait); `extra` adds or replaces settings.
 */
export function queueModeVars(origin, { secret, token }, extra = {}) {
  return {
    STRIPE_WEBHOOK_SECRET: secret,
    ORIGIN_URL: `${origin.url}/stripe`,
    ADMIN_TOKEN: token,
    DELIVERY_MODE: 'queue',
    RETRY_BASE_SECONDS: '1',
    RETRY_MAX_DELAY_SECONDS: '2',
    RETRY_MAX_ATTEMPTS: '3',
    LEASE_SECONDS: '8',
    FORWARD_TIMEOUT_MS: '1000',
    LATE_ANSWER_WAIT_SECONDS: '0',
    QUEUE_FORWARD_TIMEOUT_MS: '3000',
    ...extra,
  };
}
