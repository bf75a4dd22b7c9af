// The admin API on the real runtime: authentication, inspect, force-release, forget, for
// webhook events and Idempotency-Key records; and metrics with or without Analytics Engine.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, call, sleep, startOrigin, startWorker } from './harness.mjs';
import { deliver, eventId, eventPayload } from './stripe-helpers.mjs';

const SECRET = 'whsec_admin_tests';
const TOKEN = 'admin-token-for-tests-0123456789';
const auth = (token = TOKEN) => ({ authorization: `Bearer ${token}` });

describe('admin API', () => {
  let origin;
  let worker;
  let hangNext = false;
  before(async () => {
    origin = await startOrigin(() => {
      if (hangNext) {
        hangNext = false;
        return { hang: true };
      }
      return { status: 201, body: 'made', headers: { 'content-type': 'text/plain' } };
    });
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        API_ORIGIN_URL: origin.url,
        ADMIN_TOKEN: TOKEN,
        FORWARD_TIMEOUT_MS: '5000',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const forwards = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('without or with a wrong token: 401 and nothing revealed', async () => {
    const id = eventId('secretive');
    await deliver(worker, eventPayload(id), { secret: SECRET });
    for (const headers of [{}, auth('wrong-token-wrong-token'), { authorization: TOKEN }, auth(`${TOKEN}x`)]) {
      for (const [method, suffix] of [['GET', ''], ['POST', '/release'], ['DELETE', '']]) {
        const answer = await call(`${worker.url}/admin/events/${id}${suffix}`, { method, headers });
        assert.equal(answer.status, 401, `${method} ${JSON.stringify(headers)}`);
        assert.equal(answer.headers.get('www-authenticate'), 'Bearer');
        assert.ok(!answer.text.includes(id) && !answer.text.includes('done'), answer.text);
      }
    }
    const bogus = await call(`${worker.url}/admin/whatever`, {});
    assert.equal(bogus.status, 401, 'routes are not revealed either');
    assert.ok(!worker.output.includes(TOKEN), 'the token is never logged');
  });

  test('inspect: the record, 404 when unknown, 400 for a bad id', async () => {
    const id = eventId('inspect');
    await deliver(worker, eventPayload(id), { secret: SECRET });
    const answer = await call(`${worker.url}/admin/events/${id}`, { headers: auth() });
    assert.equal(answer.status, 200);
    const { record } = answer.json;
    assert.equal(record.key, id);
    assert.equal(record.state, 'done');
    assert.equal(record.attempts, 1);
    for (const field of ['first_seen_at', 'claimed_at', 'lease_expires_at', 'finished_at', 'expires_at']) {
      assert.equal(typeof record[field], 'number', field);
      // Beside each time in milliseconds, the same instant in RFC 3339 (UTC, milliseconds).
      const time = record[`${field}_time`];
      assert.match(time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, `${field}_time`);
      assert.equal(Date.parse(time), record[field], `${field}_time is ${field}`);
    }
    assert.equal(record.released_at_time, null, 'an unset time stays null');
    assert.equal(record.last_release_reason, null);
    assert.equal(record.fence, undefined, 'the fence is never shown');
    assert.equal((await call(`${worker.url}/admin/events/${eventId('unknown')}`, { headers: auth() })).status, 404);
    assert.equal((await call(`${worker.url}/admin/events/not-an-event`, { headers: auth() })).status, 400);
    const wrongMethod = await call(`${worker.url}/admin/events/${id}`, { method: 'PUT', headers: auth() });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'GET, DELETE');
  });

  test('force-release a stuck claim: the next delivery is processed', async () => {
    const id = eventId('stuck');
    const payload = eventPayload(id);
    // The delivery's runtime dies while the origin hangs: its claim is left processing.
    hangNext = true;
    const pending = deliver(worker, payload, { secret: SECRET }).catch((error) => error);
    const deadline = Date.now() + 30_000;
    while (forwards(id).length === 0 && Date.now() < deadline) await sleep(50);
    assert.equal(forwards(id).length, 1, 'the delivery reached the origin');
    await worker.restart();
    await pending;
    assert.equal((await deliver(worker, payload, { secret: SECRET })).status, 409, 'stuck');
    let record = (await call(`${worker.url}/admin/events/${id}`, { headers: auth() })).json.record;
    assert.equal(record.state, 'processing');

    const refused = await call(`${worker.url}/admin/events/${id}/release`, { method: 'POST', headers: auth() });
    assert.equal(refused.status, 409, 'its lease is live: it may still be running');
    assert.equal(refused.json.error, 'lease_live');
    const kept = await call(`${worker.url}/admin/events/${id}`, { method: 'DELETE', headers: auth() });
    assert.equal(kept.status, 409, 'a held claim is not deleted');
    assert.deepEqual([kept.json.error, kept.json.lease_expires_at], ['processing', record.lease_expires_at]);
    assert.equal(kept.json.lease_expires_at_time, record.lease_expires_at_time);
    assert.equal(Date.parse(refused.json.lease_expires_at_time), refused.json.lease_expires_at);
    const release = await call(`${worker.url}/admin/events/${id}/release?force=true`, { method: 'POST', headers: auth() });
    assert.equal(release.status, 200);
    assert.equal(release.json.status, 'released');
    record = (await call(`${worker.url}/admin/events/${id}`, { headers: auth() })).json.record;
    assert.equal(record.state, 'released');
    assert.equal(record.last_release_reason, 'released by an operator');
    const line = await worker.waitForLog((l) => l.route === 'admin' && l.key === id && l.outcome === 'admin_released');
    assert.ok(line, 'the release is logged');

    // Its first run's outcome is unknown: it was released under way.
    const early = await call(`${worker.url}/admin/events/${id}`, { method: 'DELETE', headers: auth() });
    assert.equal(early.status, 409, 'not forgotten while the released attempt may still run');
    assert.equal(early.json.error, 'processing');
    const next = await deliver(worker, payload, { secret: SECRET });
    assert.equal(next.status, 200);
    assert.equal(forwards(id).length, 2);
    assert.equal(forwards(id)[1].headers['x-webhook-dedup-takeover'], 'true', 'the run after an operator\'s release is a takeover');
    const again = await call(`${worker.url}/admin/events/${id}/release`, { method: 'POST', headers: auth() });
    assert.equal(again.status, 409, 'a done record is not released');
  });

  test('forget a finished event: a resend is processed again', async () => {
    const id = eventId('forget');
    const payload = eventPayload(id);
    assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'processed');
    assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'duplicate');
    const forget = await call(`${worker.url}/admin/events/${id}`, { method: 'DELETE', headers: auth() });
    assert.equal(forget.status, 200);
    assert.equal(forget.json.status, 'forgotten');
    assert.equal((await call(`${worker.url}/admin/events/${id}`, { headers: auth() })).status, 404);
    const resend = await deliver(worker, payload, { secret: SECRET });
    assert.equal(resend.json.status, 'processed');
    assert.equal(forwards(id).length, 2);
    assert.equal((await call(`${worker.url}/admin/events/${eventId('none')}`, { method: 'DELETE', headers: auth() })).status, 404);
  });

  test('Idempotency-Key records by scope hash: inspect and forget', async () => {
    const send = () => call(`${worker.url}/api/orders`, {
      method: 'POST', headers: { 'idempotency-key': 'admin-order-1', authorization: 'Bearer client' }, body: 'o',
    });
    assert.equal((await send()).status, 201);
    const line = await worker.waitForLog((l) => l.route === 'idempotency' && l.outcome === 'executed');
    const scope = line.key;
    const inspect = await call(`${worker.url}/admin/keys/${scope}`, { headers: auth() });
    assert.equal(inspect.status, 200);
    assert.equal(inspect.json.record.state, 'done');
    assert.deepEqual(inspect.json.record.cached_response, { status: 201, body_bytes: 4, body_omitted: false, body_lost: false });
    assert.equal((await send()).headers.get('idempotent-replayed'), 'true');
    const forget = await call(`${worker.url}/admin/keys/${scope}`, { method: 'DELETE', headers: auth() });
    assert.equal(forget.status, 200);
    const fresh = await send();
    assert.equal(fresh.headers.get('idempotent-replayed'), null, 'executed again');
    assert.equal((await call(`${worker.url}/admin/keys/idem_nothex`, { headers: auth() })).status, 400);
  });
});

test('the admin API is off without ADMIN_TOKEN: every call is 401, as a wrong token is', async (t) => {
  const worker = await startWorker({ vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/x' } });
  t.after(() => worker.dispose());
  const answer = await call(`${worker.url}/admin/events/evt_1`, { headers: auth() });
  assert.equal(answer.status, 401);
  assert.equal(answer.json.error, 'unauthorized');
  assert.equal((await call(`${worker.url}/admin/`)).status, 401, 'nor is the operator page served');
  const line = await worker.waitForLog((l) => l.route === 'admin' && l.outcome === 'unauthorized');
  assert.match(line.detail, /no usable ADMIN_TOKEN/, 'the log line says why');
});

test('with the Analytics Engine binding configured, deliveries are answered as without it', async (t) => {
  const origin = await startOrigin();
  const worker = await startWorker({
    config: path.join(ROOT, 'tests', 'wrangler.metrics.test.toml'),
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, API_ORIGIN_URL: origin.url },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  assert.match(worker.output, /env\.METRICS/, 'the binding is there');
  const id = eventId('metrics');
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).status, 200);
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'duplicate');
  assert.equal((await deliver(worker, 'x', { secret: 'whsec_wrong' })).status, 400);
  const api = await call(`${worker.url}/api/x`, { method: 'POST', headers: { 'idempotency-key': 'm1', authorization: 'Bearer m' } });
  assert.equal(api.status, 200);
  assert.ok(!/error|exception/i.test(worker.output.split('\n').filter((l) => !l.includes('"level"')).join('\n')), worker.output);
});
