// A slow handler never runs twice: a forward that times out holds its claim, and the claim
// authority waits for the late answer and settles on it. Real worker under `wrangler dev`,
// deliveries signed by the `stripe` package, a real HTTP origin.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { call, startOrigin, startWorker, until } from './harness.mjs';
import { deliver, eventId, eventPayload, record } from './stripe-helpers.mjs';

const SECRET = 'whsec_late_answer_tests';
const ADMIN_TOKEN = 'late-answer-admin-token-0123456789';
const TIMEOUT_MS = 1_000;
const WAIT_SECONDS = 3;
// A late answer comes this long after the forward: 1.5 s after the time-out, so that a
// delivery sent on the 504 reaches the claim authority before it, even on a loaded machine,
// and well within the wait.
const LATE_MS = 2.5 * TIMEOUT_MS;

describe('late answers on the webhook route', () => {
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req, n) => {
      const id = req.headers['x-webhook-dedup-event-id'] ?? req.url;
      const decide = behaviour.get(id);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        API_ORIGIN_URL: origin.url,
        ENABLE_TEST_ROUTES: 'true',
        ADMIN_TOKEN,
        FORWARD_TIMEOUT_MS: String(TIMEOUT_MS),
        LATE_ANSWER_WAIT_SECONDS: String(WAIT_SECONDS),
        LEASE_SECONDS: '30',
        IDEMPOTENCY_MAX_RESPONSE_BYTES: '1000',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('a 2xx after 2.5x the time-out: 504, then 409 while awaited, then duplicate; the origin ran once', async () => {
    const id = eventId('late_ok');
    behaviour.set(id, () => ({ status: 200, delayMs: LATE_MS }));
    const payload = eventPayload(id);
    const first = await deliver(worker, payload, { secret: SECRET });
    assert.equal(first.status, 504, first.text);
    assert.equal(first.json.error, 'origin_timeout');
    const during = await deliver(worker, payload, { secret: SECRET });
    assert.equal(during.status, 409, during.text);
    const retryAfter = Number(during.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= WAIT_SECONDS + 1, `Retry-After ${retryAfter} points at the end of the wait, not the lease`);
    await until(() => seen(id)[0]?.answeredAt, 5_000, 'the late answer');
    const settled = await until(async () => {
      const stored = await record(worker, id);
      return stored.state === 'done' && stored;
    }, 5_000, 'the late answer to be settled');
    assert.equal(settled.attempts, 1);
    const later = await deliver(worker, payload, { secret: SECRET });
    assert.deepEqual(later.json, { status: 'duplicate' });
    assert.equal(seen(id).length, 1, 'the origin ran the event once');
    const line = await worker.waitForLog((l) => l.key === id && l.outcome === 'late_answer');
    assert.equal(line.settle, 'finalized');
    assert.equal(line.origin_status, 200);
    assert.equal(line.provider, 'stripe', 'grouped by sender like every webhook line');
  });

  test('a late non-2xx releases the claim: the next delivery runs it again', async () => {
    const id = eventId('late_fail');
    behaviour.set(id, (req, n) => (seen(id).length === 1
      ? { status: 500, delayMs: LATE_MS }
      : { status: 200 }));
    const payload = eventPayload(id);
    assert.equal((await deliver(worker, payload, { secret: SECRET })).status, 504);
    assert.equal((await deliver(worker, payload, { secret: SECRET })).status, 409);
    const released = await until(async () => {
      const stored = await record(worker, id);
      return stored.state === 'released' && stored;
    }, 5_000, 'the late failure to release the claim');
    assert.equal(released.last_release_reason, 'origin answered 500');
    const retry = await deliver(worker, payload, { secret: SECRET });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.json.status, 'processed');
    assert.deepEqual(seen(id).map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2']);
  });

  test('no answer within the wait: the claim is held until its lease ends, never released', async () => {
    const id = eventId('lost');
    behaviour.set(id, () => ({ hang: true }));
    const payload = eventPayload(id);
    assert.equal((await deliver(worker, payload, { secret: SECRET })).status, 504);
    const line = await worker.waitForLog((l) => l.key === id && l.outcome === 'answer_lost', (WAIT_SECONDS + 3) * 1000);
    assert.ok(line, 'the end of the wait is logged');
    assert.equal(line.settle, 'held');
    assert.equal(line.provider, 'stripe');
    const stored = await record(worker, id);
    assert.equal(stored.state, 'processing');
    const after = await deliver(worker, payload, { secret: SECRET });
    assert.equal(after.status, 409);
    const retryAfter = Number(after.headers.get('retry-after'));
    assert.ok(retryAfter > WAIT_SECONDS, `now the lease end: Retry-After ${retryAfter}`);
    assert.equal(seen(id).length, 1);
  });

  for (const [status, state, reason] of [
    [521, 'released', 'connection refused'],
    [522, 'released', 'unreachable'],
    [530, 'released', 'dns'],
    [520, 'processing', null],
    [524, 'processing', null],
  ]) {
    test(`a Cloudflare ${status} answer: claim ${state}`, async () => {
      const id = eventId(`cf${status}`);
      behaviour.set(id, () => ({ status }));
      const answer = await deliver(worker, eventPayload(id), { secret: SECRET });
      assert.equal(answer.status, 502);
      assert.equal(answer.json.origin_status, status);
      const stored = await record(worker, id);
      assert.equal(stored.state, state);
      if (reason) assert.equal(stored.last_release_reason, reason);
      const line = await worker.waitForLog((l) => l.key === id && l.route === 'webhook');
      assert.equal(line.settle, state === 'released' ? 'released' : 'held');
    });
  }

  test('the admin release refuses a live lease unless forced', async () => {
    const id = eventId('admin_live');
    behaviour.set(id, () => ({ hang: true }));
    assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).status, 504);
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const refused = await call(`${worker.url}/admin/events/${id}/release`, { method: 'POST', headers: auth });
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error, 'lease_live');
    assert.equal((await record(worker, id)).state, 'processing');
    const forced = await call(`${worker.url}/admin/events/${id}/release?force=true`, { method: 'POST', headers: auth });
    assert.equal(forced.status, 200, forced.text);
    const stored = await record(worker, id);
    assert.equal(stored.state, 'released');
    assert.equal(stored.last_release_reason, 'released by an operator');
  });

  const api = (path, key, headers = {}) => call(`${worker.url}/api${path}`, {
    method: 'POST',
    headers: { 'idempotency-key': key, authorization: 'Bearer client-a', 'content-type': 'application/json', ...headers },
    body: '{"amount":1}',
  });

  test('Idempotency-Key: a late answer is stored and replayed, the request ran once', async () => {
    const path = `/orders/${eventId('api_late')}`;
    behaviour.set(`/api${path}`, () => ({ status: 201, body: 'order made', delayMs: LATE_MS, headers: { 'x-request-id': 'req_1' } }));
    const first = await api(path, 'late-1');
    assert.equal(first.status, 504, first.text);
    assert.match(first.headers.get('content-type'), /problem\+json/);
    const during = await api(path, 'late-1');
    assert.equal(during.status, 409);
    assert.equal(during.headers.get('retry-after'), '1', 'its answer is awaited and can come at any moment');
    const replay = await until(async () => {
      const answer = await api(path, 'late-1');
      return answer.status !== 409 && answer;
    }, 10_000, 'the late answer to be stored');
    assert.equal(replay.status, 201);
    assert.equal(replay.text, 'order made');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.headers.get('x-request-id'), 'req_1');
    assert.equal(origin.requests.filter((r) => r.url === `/api${path}`).length, 1, 'executed once');
  });

  test('Idempotency-Key: a status received with a body that stalls is final, replayed without a body', async () => {
    const path = `/orders/${eventId('api_stall')}`;
    behaviour.set(`/api${path}`, () => ({ status: 201, stallAfter: 'partial', headers: { 'content-type': 'text/plain' } }));
    const response = await fetch(`${worker.url}/api${path}`, {
      method: 'POST',
      headers: { 'idempotency-key': 'stall-1', authorization: 'Bearer client-a' },
      body: 'x',
    });
    assert.equal(response.status, 201, 'the status and headers reached the client');
    await assert.rejects(response.text(), 'the body broke off when the wait ended');
    const replay = await until(async () => {
      const answer = await call(`${worker.url}/api${path}`, {
        method: 'POST', headers: { 'idempotency-key': 'stall-1', authorization: 'Bearer client-a' }, body: 'x',
      });
      return answer.status !== 409 && answer;
    }, (WAIT_SECONDS + 4) * 1000, 'the stalled answer to be settled');
    assert.equal(replay.status, 201);
    assert.equal(replay.text, '');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.headers.get('idempotent-body-lost'), 'true');
    assert.equal(replay.headers.get('idempotent-body-omitted'), null, 'distinct from the too-large marker');
    assert.equal(origin.requests.filter((r) => r.url === `/api${path}`).length, 1, 'never released, never run again');
  });

  test('Idempotency-Key: a late answer too large to keep is replayed as status and headers, body lost', async () => {
    const path = `/orders/${eventId('api_big_late')}`;
    behaviour.set(`/api${path}`, () => ({ status: 200, body: 'b'.repeat(5000), delayMs: LATE_MS }));
    assert.equal((await api(path, 'big-late')).status, 504);
    const replay = await until(async () => {
      const answer = await api(path, 'big-late');
      return answer.status !== 409 && answer;
    }, 10_000, 'the late answer to be stored');
    assert.equal(replay.status, 200);
    assert.equal(replay.text, '');
    assert.equal(replay.headers.get('idempotent-body-lost'), 'true', 'nobody received that body');
  });
});
