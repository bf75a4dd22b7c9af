// The worker builds, starts under `wrangler dev` and answers /healthz; configuration problems
// are reported there without revealing a secret.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { ROOT, TEST_ADMIN_TOKEN, call, startWorker } from './harness.mjs';

const SECRET = 'whsec_health_test_secret_value';

test('healthz answers 200 with the name and the released version when configured', async (t) => {
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/origin', ADMIN_TOKEN: TEST_ADMIN_TOKEN },
  });
  t.after(() => worker.dispose());
  const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const health = await call(`${worker.url}/healthz`);
  assert.equal(health.status, 200);
  assert.equal(health.json.name, 'webhook-dedup');
  assert.equal(health.json.version, version, 'the version of package.json, Cargo.toml and the changelog');
  assert.equal(health.json.status, 'ok');
  const operator = await call(`${worker.url}/healthz`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
  assert.equal(operator.json.version, version, 'the operator sees the version too');

  const wrongMethod = await call(`${worker.url}/healthz`, { method: 'POST' });
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get('allow'), 'GET, HEAD');

  const unknown = await call(`${worker.url}/nowhere`);
  assert.equal(unknown.status, 404);
  assert.equal(unknown.json.error, 'not_found');

  assert.equal(health.json.providers, undefined, 'which senders are on is for the operator');

  const testRoute = await call(`${worker.url}/_test/claims/evt_x`);
  assert.equal(testRoute.status, 401, 'test routes are off, and say so to no one without the token');
});

test('healthz names missing and invalid keys, never a secret value', async (t) => {
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: `${SECRET},`, LEASE_SECONDS: 'soon' },
  });
  t.after(() => worker.dispose());
  const health = await call(`${worker.url}/healthz`);
  assert.equal(health.status, 503);
  assert.equal(health.json.status, 'misconfigured');
  assert.deepEqual(health.json.problems.map((p) => p.key).sort(),
    ['LEASE_SECONDS', 'ORIGIN_URL', 'STRIPE_WEBHOOK_SECRET']);
  assert.ok(!health.text.includes(SECRET), 'the secret value never appears');
  assert.ok(!worker.output.includes(SECRET), 'nor in the logs');
});

test('a lease too short for the time-out and the late-answer wait is a configuration problem', async (t) => {
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/x', LEASE_SECONDS: '600' },
  });
  t.after(() => worker.dispose());
  const health = await call(`${worker.url}/healthz`);
  assert.equal(health.status, 503);
  assert.deepEqual(health.json.problems.map((p) => p.key), ['LATE_ANSWER_WAIT_SECONDS']);
  assert.match(health.json.problems[0].problem, /LEASE_SECONDS/);
  const delivery = await call(`${worker.url}/webhooks/stripe`, { method: 'POST', body: '{}' });
  assert.equal(delivery.status, 500);
  assert.equal(delivery.json.error, 'misconfigured');
  assert.match(delivery.json.detail, /LATE_ANSWER_WAIT_SECONDS/);
  // The test routes tell no one without the admin token (there is none here) anything.
  const testRoute = await call(`${worker.url}/_test/claims/evt_x`);
  assert.equal(testRoute.status, 401);
  assert.equal(testRoute.json.error, 'unauthorized');
});

test('the shipped wrangler.toml asks for ORIGIN_URL until it is filled in', async (t) => {
  // The repository's wrangler.toml as a user deploys it (`ORIGIN_URL = ""` in [vars]), copied
  // to a folder of its own so that no .dev.vars beside it fills the value in.
  const dir = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-shipped-'));
  const shipped = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8');
  assert.match(shipped, /^ORIGIN_URL = ""$/m, 'wrangler.toml leaves ORIGIN_URL to fill in');
  assert.match(shipped, /^\[observability\]\nenabled = true$/m, 'Workers Logs are on');
  const config = path.join(dir, 'wrangler.toml');
  writeFileSync(config, shipped.replace(/^main = .*$/m, `main = ${JSON.stringify(path.join(ROOT, 'build', 'index.js'))}`));
  const worker = await startWorker({ config, vars: { STRIPE_WEBHOOK_SECRET: SECRET } });
  t.after(async () => {
    await worker.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const health = await call(`${worker.url}/healthz`);
  assert.equal(health.status, 503);
  assert.deepEqual(health.json.problems.map((p) => p.key), ['ORIGIN_URL']);
  assert.match(health.json.problems[0].problem, /set ORIGIN_URL/);
});
