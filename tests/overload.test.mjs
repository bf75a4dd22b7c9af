// Overload: 500 concurrent deliveries of one event straight to the runtime (no dev proxy).
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';

import { startDirect, startOrigin } from './harness.mjs';
import { eventId, eventPayload, signatureFor } from './stripe-helpers.mjs';

const SECRET = 'whsec_overload';

test('500 concurrent deliveries of one event: one forward, the rest 409 or 503 (or duplicate), never 500', { timeout: 120_000 }, async (t) => {
  const origin = await startOrigin(() => ({ status: 200, delayMs: 1_500 }));
  const runtime = await startDirect({ vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe` } });
  t.after(async () => {
    await runtime.dispose();
    await origin.close();
  });
  const id = eventId('overload');
  const payload = eventPayload(id);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 500 });
  const url = new URL(`${runtime.url}/webhooks/stripe`);
  const send = () => new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(payload, SECRET) },
    }, (res) => {
      let body = '';
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode, retryAfter: res.headers['retry-after'], body }));
    });
    req.on('error', reject);
    req.end(payload);
  });
  const answers = await Promise.all(Array.from({ length: 500 }, send));
  agent.destroy();
  const count = (status) => answers.filter((a) => a.status === status).length;
  const summary = JSON.stringify(Object.fromEntries([...new Set(answers.map((a) => a.status))].map((s) => [s, count(s)])));
  const processed = answers.filter((a) => a.status === 200 && a.body.includes('"processed"'));
  assert.equal(processed.length, 1, summary);
  // The rest met the live claim (409) or a busy object (503), or, on a slow machine, came
  // after it finished (200 duplicate); never a 500.
  const others = answers.filter((a) => !processed.includes(a));
  assert.ok(others.every((a) => a.status === 409 || a.status === 503
    || (a.status === 200 && a.body.includes('"duplicate"'))), summary);
  assert.ok(count(409) + count(503) > 0, summary);
  assert.ok(others.filter((a) => a.status !== 200).every((a) => Number(a.retryAfter) >= 1), 'every refusal has Retry-After');
  assert.equal(answers.filter((a) => a.status >= 500 && a.status !== 503).length, 0, summary);
  assert.equal(origin.requests.length, 1, 'exactly one forward');
});
