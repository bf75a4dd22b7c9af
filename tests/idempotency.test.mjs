// The Idempotency-Key front door on the real runtime, in front of a real HTTP API origin that
// counts its calls.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { call, sleep, startOrigin, startWorker } from './harness.mjs';

const REPLAY_COMPARED = ['content-type', 'location', 'x-request-id', 'etag', 'cache-control'];

function baseVars(origin, extra = {}) {
  return {
    STRIPE_WEBHOOK_SECRET: 'whsec_unused_here',
    ORIGIN_URL: 'http://127.0.0.1:9/unused',
    API_ORIGIN_URL: origin.url,
    ...extra,
  };
}

describe('keyed requests', () => {
  const behaviour = new Map(); // path -> (req, n) => answer
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req, n) => {
      const path = req.url.split('?')[0];
      const decide = behaviour.get(path);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    worker = await startWorker({
      vars: baseVars(origin, { IDEMPOTENCY_MAX_RESPONSE_BYTES: '1000', FORWARD_TIMEOUT_MS: '2000' }),
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const calls = (path) => origin.requests.filter((r) => r.url.split('?')[0] === path);
  const post = (path, { key, body = '{"amount":100}', auth = 'Bearer alice', headers = {}, method = 'POST' } = {}) =>
    call(`${worker.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(auth ? { authorization: auth } : {}),
        ...(key === undefined ? {} : { 'idempotency-key': key }),
        ...headers,
      },
      body,
    });

  test('executed once; repeats replay status, body and headers with the marker', async () => {
    const path = `/api/charges/${randomUUID()}`;
    let n = 0;
    behaviour.set(path, () => {
      n += 1;
      return {
        status: 201,
        body: JSON.stringify({ id: `ch_${n}`, amount: 100 }),
        headers: {
          'content-type': 'application/json',
          location: `/api/charges/ch_${n}`,
          'x-request-id': `req_${n}`,
          etag: `"v${n}"`,
          'cache-control': 'no-store',
          'set-cookie': 'session=never-replayed',
        },
      };
    });
    const key = randomUUID();
    const first = await post(`${path}?expand=customer`, { key });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    assert.deepEqual(first.json, { id: 'ch_1', amount: 100 });
    for (let i = 0; i < 3; i += 1) {
      const repeat = await post(`${path}?expand=customer`, { key });
      assert.equal(repeat.status, 201);
      assert.equal(repeat.text, first.text, 'body byte-identical');
      for (const name of REPLAY_COMPARED) {
        assert.equal(repeat.headers.get(name), first.headers.get(name), name);
      }
      assert.equal(repeat.headers.get('idempotent-replayed'), 'true');
      assert.equal(repeat.headers.get('set-cookie'), null, 'cookies are never replayed');
    }
    assert.equal(calls(path).length, 1, 'the origin was called once');
    const forwarded = calls(path)[0];
    assert.equal(forwarded.url, `${path}?expand=customer`, 'path and query kept');
    assert.equal(forwarded.headers['idempotency-key'], key);
    assert.equal(forwarded.headers.authorization, 'Bearer alice');
    assert.equal(forwarded.body.toString(), '{"amount":100}');
  });

  test('20 concurrent requests with one key: one origin call, the rest 409 or the replay', async () => {
    const path = `/api/transfers/${randomUUID()}`;
    behaviour.set(path, () => ({ status: 200, delayMs: 600, body: '{"ok":true}', headers: { 'content-type': 'application/json' } }));
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(path, { key })));
    const statuses = answers.map((a) => a.status);
    assert.ok(statuses.every((s) => s === 200 || s === 409), statuses.join(','));
    assert.equal(answers.filter((a) => a.status === 200 && !a.headers.get('idempotent-replayed')).length, 1);
    for (const a of answers.filter((x) => x.status === 409)) {
      assert.equal(a.headers.get('content-type'), 'application/problem+json');
      assert.equal(a.json.type, 'urn:webhook-dedup:problem:request-in-flight');
      assert.equal(a.json.status, 409);
      assert.ok(Number(a.headers.get('retry-after')) >= 1);
    }
    assert.equal(calls(path).length, 1);
    const later = await post(path, { key });
    assert.equal(later.status, 200);
    assert.equal(later.headers.get('idempotent-replayed'), 'true');
  });

  test('same key with another request is 422; another client gets its own execution', async () => {
    const path = `/api/refunds/${randomUUID()}`;
    behaviour.set(path, (req, n) => ({ status: 201, body: `refund ${n}` }));
    const key = randomUUID();
    assert.equal((await post(path, { key })).status, 201);
    const changed = await post(path, { key, body: '{"amount":999}' });
    assert.equal(changed.status, 422);
    assert.equal(changed.headers.get('content-type'), 'application/problem+json');
    assert.equal(changed.json.type, 'urn:webhook-dedup:problem:idempotency-key-reused');
    assert.equal((await post(`${path}?x=1`, { key })).status, 422, 'another query');
    assert.equal((await post(path, { key, method: 'PUT' })).status, 422, 'another method');
    assert.equal((await post(path, { key, headers: { 'content-type': 'text/plain' } })).status, 422, 'another content type');
    const bob = await post(path, { key, auth: 'Bearer bob' });
    assert.equal(bob.status, 201);
    assert.equal(bob.headers.get('idempotent-replayed'), null, 'executed, not replayed');
    const anonymous = await post(path, { key, auth: null });
    assert.equal(anonymous.status, 400, 'a keyed request must say who its client is');
    assert.equal(anonymous.json.type, 'urn:webhook-dedup:problem:client-identity-missing');
    assert.equal(calls(path).length, 2, 'alice and bob each ran once');
  });

  test('an origin 500 releases the key: the retry executes and is cached', async () => {
    const path = `/api/payouts/${randomUUID()}`;
    behaviour.set(path, (req, n) => (calls(path).length === 1
      ? { status: 500, body: 'database down' }
      : { status: 201, body: '{"payout":"po_1"}', headers: { 'content-type': 'application/json' } }));
    const key = randomUUID();
    const first = await post(path, { key });
    assert.equal(first.status, 500);
    assert.equal(first.text, 'database down', "the origin's own error is returned");
    const second = await post(path, { key });
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), null);
    const third = await post(path, { key });
    assert.equal(third.status, 201);
    assert.equal(third.headers.get('idempotent-replayed'), 'true');
    assert.equal(third.text, '{"payout":"po_1"}');
    assert.equal(calls(path).length, 2);
  });

  test('the origin sees the caller\'s address in X-Real-IP, never a value the client chose (keyed and pass-through)', async () => {
    const path = `/api/address/${randomUUID()}`;
    const spoof = { 'x-real-ip': '6.6.6.6', 'cf-connecting-ip': '203.0.113.7' };
    assert.equal((await post(path, { key: randomUUID(), headers: spoof })).status, 200);
    assert.equal((await post(path, { headers: spoof, method: 'GET', body: null })).status, 200);
    const seen = calls(path);
    assert.equal(seen.length, 2);
    for (const request of seen) assert.equal(request.headers['x-real-ip'], '203.0.113.7', request.method);
  });

  test("a gateway's 504 in front of the API is passed on and holds the key: the retry is 409, never run twice", async () => {
    const path = `/api/gateway/${randomUUID()}`;
    behaviour.set(path, () => ({ status: 504, body: 'upstream timed out' }));
    const key = randomUUID();
    const first = await post(path, { key });
    assert.equal(first.status, 504);
    assert.equal(first.text, 'upstream timed out', "the gateway's own answer is returned");
    const retry = await post(path, { key });
    assert.equal(retry.status, 409, retry.text);
    assert.equal(retry.json.type, 'urn:webhook-dedup:problem:request-in-flight');
    assert.equal(calls(path).length, 1, 'the request behind the gateway may still be running: not sent again');
  });

  test('an origin time-out is 504 and holds the key while its answer is awaited: the retry is 409, never run twice', async () => {
    const path = `/api/slow/${randomUUID()}`;
    behaviour.set(path, () => ({ hang: true }));
    const key = randomUUID();
    const first = await post(path, { key });
    assert.equal(first.status, 504);
    assert.equal(first.headers.get('content-type'), 'application/problem+json');
    assert.equal(first.json.type, 'urn:webhook-dedup:problem:origin-timeout');
    const retry = await post(path, { key });
    assert.equal(retry.status, 409);
    assert.equal(retry.json.type, 'urn:webhook-dedup:problem:request-in-flight');
    assert.ok(Number(retry.headers.get('retry-after')) >= 1);
    assert.equal(calls(path).length, 1);
  });

  test('a 4xx answer is final and replayed; 401, 403 and 429 are not', async () => {
    const path = `/api/cards/${randomUUID()}`;
    const first = [{ status: 401, body: 'token expired' }, { status: 403, body: 'no permission' }, { status: 429, body: 'slow down' }];
    behaviour.set(path, () => first[calls(path).length - 1] ?? { status: 402, body: 'card declined' });
    const key = randomUUID();
    assert.equal((await post(path, { key })).status, 401);
    assert.equal((await post(path, { key })).status, 403, 'a refused request did not run: its retry does');
    assert.equal((await post(path, { key })).status, 429);
    assert.equal((await post(path, { key })).status, 402);
    const replay = await post(path, { key });
    assert.equal(replay.status, 402);
    assert.equal(replay.text, 'card declined');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(calls(path).length, 4);
  });

  test('a response above IDEMPOTENCY_MAX_RESPONSE_BYTES: repeats get status and headers, no body', async () => {
    const path = `/api/reports/${randomUUID()}`;
    const big = 'r'.repeat(5000);
    behaviour.set(path, () => ({ status: 201, body: big, headers: { 'content-type': 'text/plain', location: '/api/reports/1' } }));
    const key = randomUUID();
    const first = await post(path, { key });
    assert.equal(first.status, 201);
    assert.equal(first.text, big, 'the first caller gets the whole body');
    const repeat = await post(path, { key });
    assert.equal(repeat.status, 201);
    assert.equal(repeat.text, '');
    assert.equal(repeat.headers.get('location'), '/api/reports/1');
    assert.equal(repeat.headers.get('idempotent-replayed'), 'true');
    assert.equal(repeat.headers.get('idempotent-body-omitted'), 'true');
    assert.equal(calls(path).length, 1);
  });

  test('redirects are answers, never followed, and a 3xx is not cached', async () => {
    const path = `/api/moved/${randomUUID()}`;
    behaviour.set(path, () => ({ status: 303, headers: { location: '/api/somewhere-else' }, body: '' }));
    const key = randomUUID();
    const first = await call(`${worker.url}${path}`, {
      method: 'POST', redirect: 'manual', headers: { 'idempotency-key': key, authorization: 'Bearer alice' }, body: 'x',
    });
    assert.equal(first.status, 303);
    assert.equal(first.headers.get('location'), '/api/somewhere-else');
    const again = await call(`${worker.url}${path}`, {
      method: 'POST', redirect: 'manual', headers: { 'idempotency-key': key, authorization: 'Bearer alice' }, body: 'x',
    });
    assert.equal(again.status, 303);
    assert.equal(again.headers.get('idempotent-replayed'), null, 'a 3xx releases the key');
    assert.equal(calls(path).length, 2);
    assert.equal(calls('/api/somewhere-else').length, 0, 'never followed');
    const get = await call(`${worker.url}${path}`, { redirect: 'manual' });
    assert.equal(get.status, 303, 'pass-through keeps the redirect too');
  });

  test('answers with no body by definition (204, 205, 304) pass as they are; 204 and 205 are replayed', async () => {
    for (const status of [204, 205, 304]) {
      const path = `/api/things/${randomUUID()}`;
      behaviour.set(path, (req, n) => ({ status, headers: { 'x-request-id': `req_${n}` }, body: '' }));
      const key = randomUUID();
      const first = await post(path, { key, method: 'DELETE' });
      assert.equal(first.status, status, `the origin's ${status} is passed on`);
      assert.equal(first.text, '');
      assert.ok(first.headers.get('x-request-id'), 'with its headers');
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const repeat = await post(path, { key, method: 'DELETE' });
      assert.equal(repeat.status, status);
      assert.equal(repeat.text, '');
      if (status === 304) {
        // Not a final answer: the key is released and the repeat runs again.
        assert.equal(repeat.headers.get('idempotent-replayed'), null);
        assert.equal(calls(path).length, 2);
      } else {
        assert.equal(repeat.headers.get('idempotent-replayed'), 'true');
        assert.equal(repeat.headers.get('x-request-id'), first.headers.get('x-request-id'));
        assert.equal(calls(path).length, 1, 'the origin ran it once');
      }
    }
  });

  test('invalid keys are 400 problems, and nothing reaches the origin', async () => {
    const path = `/api/invalid/${randomUUID()}`;
    for (const key of ['', 'k'.repeat(256), 'tab\there', 'caf\u00e9', '"unterminated']) {
      const answer = await post(path, { key });
      assert.equal(answer.status, 400, JSON.stringify(key));
      assert.equal(answer.json.type, 'urn:webhook-dedup:problem:idempotency-key-invalid');
    }
    assert.equal((await post(path, { key: '"quoted-key"' })).status, 200, 'a structured-field string is accepted');
    assert.equal(calls(path).length, 1);
  });

  test('safe methods and unkeyed requests pass through untouched', async () => {
    const path = `/api/items/${randomUUID()}`;
    behaviour.set(path, (req) => ({ status: 200, body: `${req.method} ${req.body.toString()}`, headers: { 'x-custom': 'kept' } }));
    const get = await call(`${worker.url}${path}?q=1`, { headers: { 'idempotency-key': 'ignored-on-get' } });
    assert.equal(get.status, 200);
    assert.equal(get.text, 'GET ');
    assert.equal(get.headers.get('x-custom'), 'kept');
    const head = await call(`${worker.url}${path}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    const unkeyed1 = await post(path, { body: 'a' });
    const unkeyed2 = await post(path, { body: 'a' });
    assert.equal(unkeyed1.text, 'POST a');
    assert.equal(unkeyed2.text, 'POST a');
    assert.equal(calls(path).length, 4, 'nothing was de-duplicated');
  });

  test('one log line per request, keyed by the scope hash, never the key or the token', async () => {
    const path = `/api/logged/${randomUUID()}`;
    const key = `secret-key-${randomUUID()}`;
    await post(path, { key, auth: 'Bearer token-marker-4412' });
    await post(path, { key, auth: 'Bearer token-marker-4412' });
    const line = await worker.waitForLog((l) => l.route === 'idempotency' && l.outcome === 'replayed');
    assert.match(line.key, /^idem_[0-9a-f]{64}$/);
    assert.ok(!worker.output.includes(key), 'the raw key is not logged');
    assert.ok(!worker.output.includes('token-marker-4412'), 'the token is not logged');
  });
});

test('IDEMPOTENCY_KEY_REQUIRED=true refuses unsafe methods without a key', async (t) => {
  const origin = await startOrigin();
  const worker = await startWorker({ vars: baseVars(origin, { IDEMPOTENCY_KEY_REQUIRED: 'true' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const missing = await call(`${worker.url}/api/charges`, { method: 'POST', body: '{}' });
  assert.equal(missing.status, 400);
  assert.equal(missing.headers.get('content-type'), 'application/problem+json');
  assert.equal(missing.json.type, 'urn:webhook-dedup:problem:idempotency-key-missing');
  const get = await call(`${worker.url}/api/charges`);
  assert.equal(get.status, 200, 'GET still passes');
  assert.equal(origin.requests.length, 1);
});

test('IDEMPOTENCY_ALLOW_ANONYMOUS=true: clients without the header share one scope', async (t) => {
  const origin = await startOrigin((req, n) => ({ status: 201, body: `run ${n}` }));
  const worker = await startWorker({ vars: baseVars(origin, { IDEMPOTENCY_ALLOW_ANONYMOUS: 'true' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const send = (headers) => call(`${worker.url}/api/orders`, { method: 'POST', headers: { 'idempotency-key': 'shared', ...headers }, body: 'x' });
  assert.equal((await send({})).text, 'run 1');
  const again = await send({});
  assert.equal(again.headers.get('idempotent-replayed'), 'true', 'anonymous requests share a scope');
  assert.equal((await send({ authorization: 'Bearer alice' })).text, 'run 2', 'an identified client has its own');
});

test('keys expire after IDEMPOTENCY_RETENTION_HOURS, deleted by the alarm', async (t) => {
  const origin = await startOrigin((req, n) => ({ status: 201, body: `run ${n}` }));
  const worker = await startWorker({
    vars: baseVars(origin, { IDEMPOTENCY_RETENTION_HOURS: '0.001', LEASE_SECONDS: '2', FORWARD_TIMEOUT_MS: '500', LATE_ANSWER_WAIT_SECONDS: '0' }),
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const send = () => call(`${worker.url}/api/orders`, { method: 'POST', headers: { 'idempotency-key': 'order-1', authorization: 'Bearer c' }, body: 'x' });
  assert.equal((await send()).text, 'run 1');
  assert.equal((await send()).headers.get('idempotent-replayed'), 'true');
  const expired = await worker.waitForLog((l) => l.route === 'alarm' && l.key?.startsWith('idem_'), 20_000);
  assert.ok(expired, 'the alarm deleted the record');
  const again = await send();
  assert.equal(again.text, 'run 2', 'after expiry the key runs again');
});

test('an unreachable API origin: 502 for keyed and pass-through requests, the key held (a refusal cannot be told from a reset here)', async (t) => {
  const closed = await startOrigin();
  const url = closed.url;
  await closed.close();
  const worker = await startWorker({ vars: { STRIPE_WEBHOOK_SECRET: 'whsec_x', ORIGIN_URL: 'http://127.0.0.1:9/x', API_ORIGIN_URL: url, ADMIN_TOKEN: 'admin-token-0123456789abcdef' } });
  t.after(() => worker.dispose());
  const keyed = await call(`${worker.url}/api/charges`, {
    method: 'POST', headers: { 'idempotency-key': 'k-down', authorization: 'Bearer c' }, body: 'x',
  });
  assert.equal(keyed.status, 502);
  assert.equal(keyed.json.type, 'urn:webhook-dedup:problem:origin-unreachable');
  const line = await worker.waitForLog((l) => l.route === 'idempotency' && l.status === 502);
  const record = await call(`${worker.url}/admin/keys/${line.key}`, { headers: { authorization: 'Bearer admin-token-0123456789abcdef' } });
  assert.equal(record.json.record.state, 'processing');
  const retry = await call(`${worker.url}/api/charges`, {
    method: 'POST', headers: { 'idempotency-key': 'k-down', authorization: 'Bearer c' }, body: 'x',
  });
  assert.equal(retry.status, 409, 'held until its lease ends');
  const get = await call(`${worker.url}/api/charges`);
  assert.equal(get.status, 502);
  assert.equal(get.json.type, 'urn:webhook-dedup:problem:origin-unreachable');
});

test('without API_ORIGIN_URL the front door is off', async (t) => {
  const worker = await startWorker({ vars: { STRIPE_WEBHOOK_SECRET: 'whsec_x', ORIGIN_URL: 'http://127.0.0.1:9/x' } });
  t.after(() => worker.dispose());
  const answer = await call(`${worker.url}/api/anything`, { method: 'POST', headers: { 'idempotency-key': 'k' } });
  assert.equal(answer.status, 404);
  assert.equal(answer.json.type, 'urn:webhook-dedup:problem:not-found');
});
