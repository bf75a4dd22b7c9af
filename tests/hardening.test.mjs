// Every genuine Stripe delivery accepted, every hostile one refused cheaply: thin events,
// header variants Stripe's own libraries accept, and the Idempotency-Key door's limits (rate
// limit, streamed answers of any size, statuses a response cannot carry).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ROOT, call, databaseRows, objectNamed, sleep, startOrigin, startWorker, storageDump, until } from './harness.mjs';
import { claimId, deliveryId, signedHeaders } from './provider-helpers.mjs';
import { deliver, eventId, eventPayload, record, signatureFor, stripe } from './stripe-helpers.mjs';

const SECRET = 'whsec_hardening_tests';

describe('genuine deliveries accepted', () => {
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({
      vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, ENABLE_TEST_ROUTES: 'true' },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('a thin event (event destinations, API v2) is forwarded once, its repeat is a duplicate', async () => {
    const id = `evt_test_${Date.now().toString(36)}thin${process.pid}`;
    const payload = JSON.stringify({
      id,
      object: 'v2.core.event',
      type: 'v1.billing.meter.error_report_triggered',
      livemode: false,
      created: new Date().toISOString(),
      related_object: { id: 'mtr_test_61R9IjHIgdOAD7IUw41HUJ6bsfGRFHZD', type: 'billing.meter', url: '/v1/billing/meters/mtr_test_61R9IjHIgdOAD7IUw41HUJ6bsfGRFHZD' },
    });
    const first = await deliver(worker, payload, { secret: SECRET });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.status, 'processed');
    const repeat = await deliver(worker, payload, { secret: SECRET });
    assert.deepEqual(repeat.json, { status: 'duplicate' });
    assert.equal(seen(id).length, 1);
    const [forwarded] = seen(id);
    assert.ok(forwarded.body.equals(Buffer.from(payload)), 'forwarded byte for byte');
    const parsed = stripe.parseEventNotification(forwarded.body, forwarded.headers['stripe-signature'], SECRET);
    assert.equal(parsed.id, id, 'the handler verifies it with stripe-node as it would from Stripe');
  });

  const now = () => Math.floor(Date.now() / 1000);
  const v1 = (header) => header.split(',').find((p) => p.startsWith('v1='));
  for (const [name, make] of [
    ['a trailing comma', (good) => `${good},`],
    ['an empty part', (good) => `t=${now()},,${v1(good)}`.replace(/^t=\d+/, good.split(',')[0])],
    ['a part without =', (good) => `${good},junk`],
    ['an unknown key', (good) => `${good},x9=whatever`],
    ['v0 and v2 schemes', (good) => `${good},v0=${'00'.repeat(32)},v2=${'11'.repeat(32)}`],
    ['a junk v1 beside a valid one', (good) => `${good.split(',')[0]},v1=not-hex-at-all,${v1(good)}`],
    ['a short v1 beside a valid one', (good) => `${good.split(',')[0]},v1=${'ab'.repeat(20)},${v1(good)}`],
  ]) {
    test(`a header with ${name} is accepted, as Stripe's libraries accept it`, async () => {
      const id = eventId('variant');
      const payload = eventPayload(id);
      const header = make(signatureFor(payload, SECRET));
      stripe.webhooks.constructEvent(payload, header, SECRET); // stripe-node accepts it too
      const answer = await deliver(worker, payload, { signature: header });
      assert.equal(answer.status, 200, `${header}\n${answer.text}`);
      assert.equal(seen(id).length, 1);
    });
  }

  for (const [name, make, code] of [
    ['no t', (good) => v1(good), 'malformed_signature'],
    ['only malformed v1 entries', (good) => `${good.split(',')[0]},v1=zz,v1=${'ab'.repeat(31)}`, 'malformed_signature'],
    ['no v1 at all', (good) => `${good.split(',')[0]},v0=${'00'.repeat(32)}`, 'no_v1_signature'],
    ['a repeated t', (good) => `${good},t=${now()}`, 'malformed_signature'],
  ]) {
    test(`a header with ${name} is still refused, nothing stored`, async () => {
      const id = eventId('refused');
      const payload = eventPayload(id);
      const answer = await deliver(worker, payload, { signature: make(signatureFor(payload, SECRET)) });
      assert.equal(answer.status, 400);
      assert.equal(answer.json.error, code);
      assert.equal(await record(worker, id), null);
      assert.equal(seen(id).length, 0);
    });
  }
});

describe('the Idempotency-Key door', () => {
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req) => (behaviour.get(req.url) ?? (() => ({ status: 201, body: 'made' })))(req));
    worker = await startWorker({
      config: path.join(ROOT, 'tests', 'wrangler.ratelimit.test.toml'),
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        API_ORIGIN_URL: origin.url,
        IDEMPOTENCY_MAX_RESPONSE_BYTES: '1000',
        FORWARD_TIMEOUT_MS: '10000',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const post = (p, key, authorization = 'Bearer big-client') => call(`${worker.url}/api${p}`, {
    method: 'POST', headers: { 'idempotency-key': key, authorization }, body: 'x',
  });

  test('a 64 MiB answer reaches the client whole; a repeat gets status and headers, body omitted', async () => {
    const body = Buffer.alloc(64 * 1024 * 1024, 'abcdefghij');
    const digest = createHash('sha256').update(body).digest('hex');
    behaviour.set('/api/export', () => ({ status: 200, body, headers: { 'content-type': 'application/octet-stream', etag: '"v1"' } }));
    const response = await fetch(`${worker.url}/api/export`, {
      method: 'POST', headers: { 'idempotency-key': 'export-1', authorization: 'Bearer big-client' }, body: 'x',
    });
    assert.equal(response.status, 200);
    const received = Buffer.from(await response.arrayBuffer());
    assert.equal(received.length, body.length);
    assert.equal(createHash('sha256').update(received).digest('hex'), digest, 'byte for byte');
    let replay;
    for (let i = 0; i < 50; i += 1) {
      replay = await post('/export', 'export-1');
      if (replay.status !== 409) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(replay.status, 200);
    assert.equal(replay.text, '');
    assert.equal(replay.headers.get('idempotent-body-omitted'), 'true');
    assert.equal(replay.headers.get('etag'), '"v1"');
  });

  test('an origin status a response cannot carry is 502, never a crash', async () => {
    behaviour.set('/api/odd', () => ({ status: 600, body: 'odd' }));
    const answer = await post('/odd', 'odd-1');
    assert.equal(answer.status, 502);
    assert.equal(answer.json.type, 'urn:webhook-dedup:problem:origin-answer-invalid');
    // The 502 is this service's own answer, not the origin's status passed on: an error.
    const line = await worker.waitForLog((l) => l.route === 'idempotency' && l.outcome === 'origin-answer-invalid');
    assert.ok(line, 'its log line');
    assert.equal(line.level, 'error', JSON.stringify(line));
    const health = await call(`${worker.url}/healthz`);
    assert.equal(health.status, 200, 'the worker still serves');
  });

  test('keyed requests are rate-limited per client and per address: 429, nothing written', async () => {
    // The test config allows 5 per minute (counted per fixed window); every request carries a
    // new made-up identity, so only the address limit can stop them.
    let refused;
    let accepted = 0;
    for (let n = 0; n < 12 && !refused; n += 1) {
      const before = storageDump(worker.persistDir);
      const answer = await post(`/limited/${n}`, `limited-${n}`, `Bearer made-up-${n}`);
      if (answer.status === 429) {
        refused = answer;
        assert.equal(storageDump(worker.persistDir), before, 'the refused request wrote nothing');
        assert.equal(origin.requests.filter((r) => r.url === `/api/limited/${n}`).length, 0, 'nor reached the origin');
      } else {
        accepted += 1;
      }
    }
    assert.ok(refused, 'refused although each request carried a new made-up identity');
    assert.ok(accepted <= 10, `at most the limit of two windows got through (${accepted})`);
    assert.equal(refused.json.type, 'urn:webhook-dedup:problem:rate-limited');
    assert.equal(refused.headers.get('retry-after'), '60');
  });
});

test('an IPv6 caller is rate-limited by its /64: rotating addresses inside it does not escape the limit', async (t) => {
  const origin = await startOrigin(() => ({ status: 201, body: 'made' }));
  const worker = await startWorker({
    config: path.join(ROOT, 'tests', 'wrangler.ratelimit.test.toml'),
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, API_ORIGIN_URL: origin.url },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  // Every request a new made-up identity, so only the address limit can stop it (5 per minute).
  const post = (n, address) => call(`${worker.url}/api/v6/${n}`, {
    method: 'POST',
    headers: { 'idempotency-key': `v6-${n}`, authorization: `Bearer made-up-v6-${n}`, 'cf-connecting-ip': address },
    body: 'x',
  });
  // Eight callers in eight networks: each under its own limit, all served (the address the
  // caller presents reaches the worker here).
  for (let n = 0; n < 8; n += 1) {
    const answer = await post(n, `2001:db8:${n + 1}:0::1`);
    assert.equal(answer.status, 201, `network ${n + 1}: ${answer.text}`);
  }
  // One caller rotating through its /64.
  let refusedAt;
  for (let n = 0; n < 12 && refusedAt === undefined; n += 1) {
    const answer = await post(100 + n, `2001:db8:ff:0:${(n + 1).toString(16)}:${(7 * n + 3).toString(16)}::9`);
    if (answer.status === 429) refusedAt = n;
    else assert.equal(answer.status, 201, answer.text);
  }
  assert.ok(refusedAt !== undefined && refusedAt <= 10, `refused within the limit of two windows (${refusedAt})`);
});

test('a captured GitHub or Shopify delivery replayed under made-up ids is bounded by WEBHOOK_REPLAY_LIMITER: 429, nothing written', async (t) => {
  const origin = await startOrigin(() => ({ status: 200 }));
  const worker = await startWorker({
    config: path.join(ROOT, 'tests', 'wrangler.ratelimit.test.toml'),
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: origin.url,
      GITHUB_WEBHOOK_SECRET: 'replay-github-secret', SHOPIFY_WEBHOOK_SECRET: 'replay-shopify-secret',
    },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  // A made-up id in the sender's own form (GitHub's are GUIDs), so only the limiter refuses it.
  const madeUp = (provider, n) => (provider === 'github' ? `00000000-0000-4000-8000-${String(n).padStart(12, '0')}` : `made-up-${provider}-${n}`);
  for (const [provider, secret, idHeader] of [['github', 'replay-github-secret', 'x-github-delivery'], ['shopify', 'replay-shopify-secret', 'x-shopify-event-id']]) {
    // Their signatures cover neither the id nor a time: the captured headers pass under any id.
    const body = JSON.stringify({ captured: provider, at: Date.now() });
    const captured = await signedHeaders(provider, { id: deliveryId(provider), body, secret });
    const send = (id, payload = body, headers = captured) => call(`${worker.url}/webhooks/${provider}`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...headers, [idHeader]: id }, body: payload,
    });
    let refused;
    let refusedId;
    let accepted = 0;
    for (let n = 0; n < 10 && !refused; n += 1) {
      const answer = await send(madeUp(provider, n));
      if (answer.status === 429) {
        refused = answer;
        refusedId = madeUp(provider, n);
        // Past the limit the event's object is still asked (it answers a delivery it knows),
        // and its answer waited for any write it made: read now, its storage is final for this
        // request. The local runtime notes the object's name in a table of its own; that is no
        // storage of the object's. Nothing else is there: no record, no body, no alarm.
        const key = `${provider}:${claimId(provider, refusedId)}`;
        const file = objectNamed(worker.persistDir, key);
        assert.ok(file, `${provider}: the refused delivery's object was asked`);
        assert.deepEqual(databaseRows(file).filter((row) => !row.startsWith('__miniflare_do_name ')), [],
          `${provider}: the refused replay wrote nothing`);
        assert.ok(!storageDump(worker.persistDir).includes(`_cf_KV ${key} `), 'no record of it anywhere');
      } else {
        assert.equal(answer.status, 200, answer.text);
        accepted += 1;
      }
    }
    assert.ok(refused, `${provider}: refused although each replay carried a new id`);
    assert.ok(accepted >= 1 && accepted <= 6, `${provider}: at most the limit of two windows got through (${accepted})`);
    assert.equal(refused.json.error, 'replay_limited');
    assert.equal(refused.headers.get('retry-after'), '60');
    const line = await worker.waitForLog((l) => l.outcome === 'replay_limited' && l.key === `${provider}:${claimId(provider, refusedId)}`);
    assert.ok(line, 'the refusal is logged with its key');
    assert.equal(line.provider, provider);
    assert.match(line.detail, /replay limit/);
    // Past the limit a delivery the worker already knows is still acknowledged as a duplicate:
    // only one that would make a new record is refused.
    const repeat = await send(madeUp(provider, 0));
    assert.equal(repeat.status, 200, repeat.text);
    assert.equal(repeat.json.status, 'duplicate');
    // Another body is counted on its own.
    const other = JSON.stringify({ captured: provider, other: true });
    const fresh = await send(deliveryId(provider), other, await signedHeaders(provider, { id: deliveryId(provider), body: other, secret }));
    assert.equal(fresh.status, 200, fresh.text);
  }
});

test('a captured GitHub body replayed under made-up ids reaches a handler that refuses repeats once per stored record, within the replay limit', async (t) => {
  // The handler remembers bodies: the first time it answers 200, after that 422 (a refusal).
  // Queue mode dead-letters a refused event at once (RETRY_CLIENT_ERRORS unset), so each record
  // the replay limit lets through costs the origin one call, not one per retry.
  const seenBodies = new Set();
  const origin = await startOrigin((req) => {
    const body = req.body.toString('utf8');
    if (seenBodies.has(body)) return { status: 422, body: 'seen this one' };
    seenBodies.add(body);
    return { status: 200 };
  });
  const worker = await startWorker({
    config: path.join(ROOT, 'tests', 'wrangler.ratelimit.test.toml'),
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: origin.url,
      GITHUB_WEBHOOK_SECRET: 'amplify-github-secret',
      ADMIN_TOKEN: 'amplify-admin-token-0123456789',
      RETRY_BASE_SECONDS: '1', RETRY_MAX_DELAY_SECONDS: '1', RETRY_MAX_ATTEMPTS: '5',
    },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const body = JSON.stringify({ captured: 'github', at: Date.now() });
  const captured = await signedHeaders('github', { id: deliveryId('github'), body, secret: 'amplify-github-secret' });
  const accepted = [];
  for (let n = 0; n < 12; n += 1) {
    const id = deliveryId('github');
    const answer = await call(`${worker.url}/webhooks/github`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...captured, 'x-github-delivery': id }, body,
    });
    if (answer.status === 200) accepted.push(id);
    else assert.equal(answer.status, 429, answer.text);
  }
  assert.ok(accepted.length >= 2 && accepted.length <= 6, `the replay limit (3 a minute) let ${accepted.length} through`);
  const auth = { authorization: 'Bearer amplify-admin-token-0123456789' };
  const stateOf = async (id) => (await call(`${worker.url}/admin/deliveries/github/${id}`, { headers: auth })).json?.record?.state;
  for (const id of accepted) {
    await until(async () => ['done', 'dead'].includes(await stateOf(id)), 15_000, `${id} settled`);
  }
  // Longer than the retries would have taken (1 s apart, up to 5 attempts).
  await sleep(5_000);
  const calls = origin.requests.filter((r) => r.body.toString('utf8') === body);
  assert.equal(calls.length, accepted.length, `one origin call per stored record: ${calls.length} calls for ${accepted.length} records`);
  const dead = [];
  for (const id of accepted) if (await stateOf(id) === 'dead') dead.push(id);
  assert.equal(dead.length, accepted.length - 1, 'every replay after the first was refused and dead-lettered at once');
  const line = await worker.waitForLog((l) => l.outcome === 'dead_lettered' && dead.includes(l.key.replace('github:', '')));
  assert.match(line.detail, /origin answered 422/);
});
