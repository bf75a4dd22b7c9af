// The two HMAC implementations the worker has, on the same vectors: the runtime's WebCrypto
// (what verifies every delivery) and the `hmac` crate (what the host tests check, and what
// queue mode signs attempts with); both must equal Node's HMAC over the raw bytes, and, for
// text bodies, what the `stripe` package makes.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';

import { adminHeaders, call, startWorker } from './harness.mjs';
import { stripe } from './stripe-helpers.mjs';

test('WebCrypto and the hmac crate agree with the stripe package on every vector', async (t) => {
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: 'whsec_native', ORIGIN_URL: 'http://127.0.0.1:9/x', ENABLE_TEST_ROUTES: 'true' },
  });
  t.after(() => worker.dispose());
  const vectors = [
    ['whsec_crosscheck_secret', 1700000000, '{"id":"evt_crosscheck","object":"event","type":"charge.succeeded"}'],
    ['whsec_crosscheck_secret', 1700000000, '{"id":"evt_unicode_\\u00e9","note":"caf\u00e9 \u2603","type":"x"}'],
    ['whsec_other', 1, ''],
    ['whsec_' + 'k'.repeat(100), 4102444800, 'x'.repeat(70)],
    ['whsec_big', 1796000000, JSON.stringify({ id: 'evt_big', lines: Array.from({ length: 3000 }, (_, i) => ({ i, text: 'line item' })) })],
    ['whsec_bytes', 1796000001, Buffer.from([0, 255, 128, 10, 13]).toString('latin1')],
  ];
  for (const [secret, timestamp, payload] of vectors) {
    const bytes = Buffer.from(payload, payload.includes('\u0000') ? 'latin1' : 'utf8');
    const answer = await call(`${worker.url}/_test/signature`, {
      method: 'POST',
      headers: adminHeaders(worker),
      body: JSON.stringify({ secret, timestamp, body_base64: bytes.toString('base64') }),
    });
    assert.equal(answer.status, 200, answer.text);
    const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(bytes).digest('hex');
    assert.equal(answer.json.webcrypto, expected, `WebCrypto, ${bytes.length} bytes`);
    assert.equal(answer.json.rust, expected, `hmac crate, ${bytes.length} bytes`);
    if (Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes)) {
      // Text bodies, as Stripe sends them: the stripe package signs them the same way.
      const fromStripe = stripe.webhooks.generateTestHeaderString({ payload: payload, secret, timestamp }).split('v1=')[1];
      assert.equal(expected, fromStripe, 'the stripe package agrees');
    }
  }
});
