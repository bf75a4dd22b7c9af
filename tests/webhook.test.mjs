// The Stripe webhook front door on the real runtime, with deliveries signed by the `stripe`
// package and a real HTTP origin behind it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { adminHeaders, call, objectFiles, postChunked, sleep, startDirect, startOrigin, startWorker, storageDump, until } from './harness.mjs';
import { deliver, eventId, eventPayload, record, signatureFor, stripe } from './stripe-helpers.mjs';

const SECRET = 'whsec_webhook_tests_secret';

function vars(origin, extra = {}) {
  return {
    STRIPE_WEBHOOK_SECRET: SECRET,
    ORIGIN_URL: `${origin.url}/stripe`,
    ENABLE_TEST_ROUTES: 'true',
    ...extra,
  };
}

describe('webhook deliveries', () => {
  // One origin whose behaviour each test sets per event id, and one worker.
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req, n) => {
      const id = req.headers['x-webhook-dedup-event-id'];
      const decide = behaviour.get(id);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    worker = await startWorker({ vars: vars(origin, { FORWARD_TIMEOUT_MS: '1500', LATE_ANSWER_WAIT_SECONDS: '3', LEASE_SECONDS: '60' }) });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('a failed first delivery stays reprocessable: retry forwarded, then duplicate', async () => {
    const id = eventId('regression');
    let calls = 0;
    behaviour.set(id, () => {
      calls += 1;
      return calls === 1 ? { status: 500, body: 'customer not linked yet' } : { status: 200, body: 'done' };
    });
    const payload = eventPayload(id, 'customer.subscription.created');

    const first = await deliver(worker, payload, { secret: SECRET });
    assert.equal(first.status, 502);
    assert.equal(first.json.error, 'origin_failed');
    assert.equal(first.json.origin_status, 500);
    assert.equal((await record(worker, id)).state, 'released');

    const retry = await deliver(worker, payload, { secret: SECRET });
    assert.equal(retry.status, 200);
    assert.equal(retry.json.status, 'processed');
    const stored = await record(worker, id);
    assert.equal(stored.state, 'done');
    assert.equal(stored.attempts, 2);
    assert.equal(stored.last_release_reason, 'origin answered 500');

    const third = await deliver(worker, payload, { secret: SECRET });
    assert.equal(third.status, 200);
    assert.deepEqual(third.json, { status: 'duplicate' });

    const attempts = seen(id);
    assert.equal(attempts.length, 2, 'the origin saw two attempts');
    assert.equal(attempts.filter((r) => r.answer.status === 200).length, 1, 'and one success');
    assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2']);
  });

  test('the origin gets the raw body byte for byte and can verify it as Stripe sent it', async () => {
    const id = eventId('raw');
    // Unusual spacing and non-ASCII text: any re-serialisation would change the bytes.
    const payload = `{ "id" : "${id}", "object":"event", "type":"invoice.paid",\n "note":"caf\u00e9 \u2603 \\u00e9" ,"data":{"object":{}}}`;
    const answer = await deliver(worker, payload, { secret: SECRET });
    assert.equal(answer.status, 200);
    const [forwarded] = seen(id);
    assert.equal(forwarded.method, 'POST');
    assert.equal(forwarded.url, '/stripe');
    assert.ok(forwarded.body.equals(Buffer.from(payload)), 'body unchanged');
    assert.equal(forwarded.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(forwarded.headers['x-webhook-dedup-takeover'], 'false');
    const event = stripe.webhooks.constructEvent(forwarded.body, forwarded.headers['stripe-signature'], SECRET);
    assert.equal(event.id, id);
  });

  test('concurrent duplicates while the origin is slow: one forward, the rest 409', async () => {
    const id = eventId('concurrent');
    behaviour.set(id, () => ({ status: 200, delayMs: 500 })); // well inside the 1.5 s time-out
    const payload = eventPayload(id);
    const answers = await Promise.all(Array.from({ length: 20 }, () => deliver(worker, payload, { secret: SECRET })));
    const summary = answers.map((a) => `${a.status} ${a.text}`).join('\n');
    // Exactly one is processed; the others met the live claim (409), or, on a slow machine,
    // arrived after it finished (200 duplicate). Never a second forward.
    assert.equal(answers.filter((a) => a.json?.status === 'processed').length, 1, summary);
    assert.ok(answers.every((a) => a.json?.status === 'processed' || a.status === 409
      || (a.status === 200 && a.json?.status === 'duplicate')), summary);
    assert.ok(answers.some((a) => a.status === 409), `some copies met the live claim:\n${summary}`);
    for (const a of answers.filter((x) => x.status === 409)) {
      assert.equal(a.json.error, 'in_flight');
      assert.ok(Number(a.headers.get('retry-after')) >= 1);
    }
    assert.equal(seen(id).length, 1);
    const later = await deliver(worker, payload, { secret: SECRET });
    assert.deepEqual(later.json, { status: 'duplicate' });
  });

  test('an origin that never answers: 504, the claim held while its answer is awaited', async () => {
    const id = eventId('hang');
    behaviour.set(id, () => ({ hang: true }));
    const payload = eventPayload(id);
    const started = Date.now();
    const first = await deliver(worker, payload, { secret: SECRET });
    assert.equal(first.status, 504);
    assert.equal(first.json.error, 'origin_timeout');
    assert.ok(Date.now() - started >= 1_400, 'waited for the forward time-out');
    const stored = await record(worker, id);
    assert.equal(stored.state, 'processing', 'a time-out is ambiguous: the claim is kept');
    assert.equal(stored.wait_ends_at - stored.claimed_at, 1_500 + 3_000, 'time-out plus the late-answer wait');
    const second = await deliver(worker, payload, { secret: SECRET });
    assert.equal(second.status, 409);
    assert.ok(Number(second.headers.get('retry-after')) <= 5, 'come back when the wait ends, not at the lease end');
    assert.equal(seen(id).length, 1, 'never forwarded twice');
  });

  test('an origin that refuses connections: 502, and the claim kept (the runtime cannot tell a refusal from a reset)', async () => {
    const closed = await startOrigin();
    const url = closed.url;
    await closed.close();
    const down = await startWorker({
      vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: url, ENABLE_TEST_ROUTES: 'true', LEASE_SECONDS: '3', FORWARD_TIMEOUT_MS: '1000', LATE_ANSWER_WAIT_SECONDS: '0' },
    });
    try {
      const id = eventId('down');
      const answer = await deliver(down, eventPayload(id), { secret: SECRET });
      assert.equal(answer.status, 502);
      assert.equal(answer.json.error, 'origin_unreachable');
      const held = await record(down, id);
      assert.equal(held.state, 'processing', 'held until its lease ends: the request may have been sent');
      const line = await down.waitForLog((l) => l.key === id);
      assert.equal(line.outcome, 'origin_unreachable');
      assert.equal(line.settle, 'held');
      assert.equal(line.detail, 'reset after send', 'a classified reason, never the runtime text');
      assert.ok(!down.output.includes('Network connection lost'), 'raw error text is not logged');
      await sleep(held.lease_expires_at - Date.now() + 200);
      const retried = await deliver(down, eventPayload(id), { secret: SECRET });
      assert.equal(retried.status, 502, 'after the lease the next delivery runs it again');
      assert.equal((await record(down, id)).attempts, 2);
    } finally {
      await down.dispose();
    }
  });

  test("a gateway's 504 or 502 in front of the handler is ambiguous: the claim is held, the handler not run again", async () => {
    // The handler may still be running behind a gateway that gave up on it (nginx, a load
    // balancer): at once (504), or after the forward time-out, while its answer is awaited (502).
    const atOnce = eventId('gateway_504');
    const late = eventId('gateway_502_late');
    behaviour.set(atOnce, () => ({ status: 504, body: 'upstream timed out' }));
    behaviour.set(late, () => ({ status: 502, body: 'upstream prematurely closed', delayMs: 2_000 }));
    const first = await deliver(worker, eventPayload(atOnce), { secret: SECRET });
    assert.equal(first.status, 502);
    assert.equal(first.json.origin_status, 504);
    assert.match(first.json.detail, /kept until its lease ends/);
    const lateFirst = await deliver(worker, eventPayload(late), { secret: SECRET });
    assert.equal(lateFirst.status, 504, 'the forward timed out before the gateway answered');
    const lateLine = await worker.waitForLog((l) => l.key === late && l.outcome === 'late_answer', 10_000);
    assert.equal(lateLine.origin_status, 502);
    assert.equal(lateLine.settle, 'held', 'a late 502 is no failure: the claim is kept');
    for (const id of [atOnce, late]) {
      const held = await record(worker, id);
      assert.equal(held.state, 'processing', `${id}: held until its lease ends`);
      assert.equal(held.last_release_reason ?? null, null, `${id}: never released`);
      const repeat = await deliver(worker, eventPayload(id), { secret: SECRET });
      assert.equal(repeat.status, 409, `${id}: ${repeat.text}`);
      assert.ok(held.wait_ends_at <= Date.now(), `${id}: no answer is awaited any more`);
      const retryAfter = Number(repeat.headers.get('retry-after'));
      assert.ok(retryAfter > 30, `${id}: come back when the 60 s lease ends, not when a wait ends (Retry-After ${retryAfter})`);
      assert.equal(seen(id).length, 1, `${id}: the handler was not run again`);
    }
    const line = await worker.waitForLog((l) => l.key === atOnce && l.status === 502);
    assert.equal(line.settle, 'held');
    assert.equal(line.detail, 'origin answered 504');
  });

  test('an origin redirect is an answer, never followed: 502, released, nothing sent elsewhere', async () => {
    const elsewhere = await startOrigin();
    try {
      const id = eventId('redirect');
      let calls = 0;
      behaviour.set(id, () => {
        calls += 1;
        return calls === 1
          ? { status: 301, headers: { location: `${elsewhere.url}/moved` }, body: '' }
          : { status: 200 };
      });
      const payload = eventPayload(id);
      const first = await deliver(worker, payload, { secret: SECRET });
      assert.equal(first.status, 502);
      assert.equal(first.json.origin_status, 301);
      assert.equal((await record(worker, id)).state, 'released');
      assert.equal(elsewhere.requests.length, 0, 'the signed event went nowhere else');
      assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'processed');
    } finally {
      await elsewhere.close();
    }
  });

  test('wrong method and unknown paths', async () => {
    const get = await call(`${worker.url}/webhooks/stripe`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    const unknown = await call(`${worker.url}/webhooks/stripe/extra`, { method: 'POST' });
    assert.equal(unknown.status, 404);
  });

  test('one JSON log line per delivery, without payload or secret', async () => {
    const id = eventId('log');
    const payload = eventPayload(id, 'charge.refunded', { secret_note: 'payload-marker-7731' });
    await deliver(worker, payload, { secret: SECRET });
    await deliver(worker, payload, { secret: SECRET });
    await worker.waitForLog((l) => l.key === id && l.outcome === 'duplicate');
    const lines = worker.logLines().filter((l) => l.key === id);
    assert.equal(lines.length, 2);
    assert.equal(lines[0].route, 'webhook');
    assert.equal(lines[0].event_type, 'charge.refunded');
    assert.equal(lines[0].outcome, 'processed');
    assert.equal(lines[0].settle, 'finalized');
    assert.equal(lines[0].attempt, 1);
    assert.equal(lines[0].origin_status, 200);
    assert.equal(typeof lines[0].duration_ms, 'number');
    assert.equal(typeof lines[0].origin_ms, 'number');
    assert.equal(lines[1].outcome, 'duplicate');
    assert.ok(!worker.output.includes('payload-marker-7731'), 'no payload in the logs');
    assert.ok(!worker.output.includes(SECRET), 'no secret in the logs');
  });
});

describe('signature verification: each refusal answered, nothing stored, nothing forwarded', () => {
  const OLD = 'whsec_rotating_old';
  const NEW = 'whsec_rotating_new';
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({
      vars: { STRIPE_WEBHOOK_SECRET: `${OLD},${NEW}`, ORIGIN_URL: `${origin.url}/stripe`, ENABLE_TEST_ROUTES: 'true', MAX_BODY_BYTES: '4096' },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  test('valid with each of two rotated secrets', async () => {
    for (const secret of [OLD, NEW]) {
      const id = eventId('rotated');
      const answer = await deliver(worker, eventPayload(id), { secret });
      assert.equal(answer.status, 200, answer.text);
      assert.equal((await record(worker, id)).state, 'done');
    }
  });

  const now = () => Math.floor(Date.now() / 1000);
  const v1 = (header) => header.split(',').find((p) => p.startsWith('v1='));
  // Test titles: each row's first string.
  const cases = [
    ['wrong secret', (p) => ({ secret: 'whsec_someone_else' }), 400, 'signature_mismatch'],
    ['tampered body', (p) => ({ signature: stripe.webhooks.generateTestHeaderString({ payload: p.replace('2000', '1'), secret: NEW }) }), 400, 'signature_mismatch'],
    ['no header', () => ({ signature: null }), 400, 'missing_signature'],
    ['empty header', () => ({ signature: '' }), 400, 'missing_signature'],
    ['v0 only', (p) => ({ signature: `t=${now()},v0=${'ab'.repeat(32)}` }), 400, 'no_v1_signature'],
    ['t only', () => ({ signature: `t=${now()}` }), 400, 'no_v1_signature'],
    ['no t', (p) => ({ signature: v1(stripe.webhooks.generateTestHeaderString({ payload: p, secret: NEW })) }), 400, 'malformed_signature'],
    ['duplicated t', (p) => {
      const h = stripe.webhooks.generateTestHeaderString({ payload: p, secret: NEW });
      return { signature: `${h},t=${now()}` };
    }, 400, 'malformed_signature'],
    ['non-numeric t', (p) => ({ signature: `t=soon,${v1(stripe.webhooks.generateTestHeaderString({ payload: p, secret: NEW }))}` }), 400, 'malformed_signature'],
    ['non-hex v1', () => ({ signature: `t=${now()},v1=${'zz'.repeat(32)}` }), 400, 'malformed_signature'],
    ['short v1', () => ({ signature: `t=${now()},v1=abcd` }), 400, 'malformed_signature'],
    ['huge header', () => ({ signature: `t=${now()},v1=${'ab'.repeat(32)},x=${'y'.repeat(5000)}` }), 400, 'malformed_signature'],
    ['expired timestamp', (p) => ({ secret: NEW, timestamp: now() - 301 }), 400, 'timestamp_too_old'],
    ['future timestamp', (p) => ({ secret: NEW, timestamp: now() + 120 }), 400, 'timestamp_in_future'],
  ];
  for (const [name, make, status, code] of cases) {
    test(name, async () => {
      const id = eventId('refused');
      const payload = eventPayload(id);
      const answer = await deliver(worker, payload, make(payload));
      assert.equal(answer.status, status, answer.text);
      assert.equal(answer.json.error, code);
      assert.equal(typeof answer.json.detail, 'string');
      assert.equal(await record(worker, id), null, 'nothing stored');
      assert.equal(origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id).length, 0);
    });
  }

  test('bodies that are not events are refused after verification, nothing stored', async () => {
    const bodies = [
      ['not json', 'hello', 'invalid_json'],
      ['no id', JSON.stringify({ type: 'x' }), 'invalid_envelope'],
      ['numeric id', JSON.stringify({ id: 7, type: 'x' }), 'invalid_envelope'],
      ['not an event id', JSON.stringify({ id: 'ch_123', type: 'x' }), 'invalid_event_id'],
    ];
    // Other tests' objects may still settle in the background: no new object may appear.
    const objectsBefore = objectFiles(worker.persistDir);
    const seen = origin.requests.length;
    const logged = worker.logLines().length;
    for (const [name, body, code] of bodies) {
      const answer = await deliver(worker, body, { secret: NEW });
      assert.equal(answer.status, 400, name);
      assert.equal(answer.json.error, code, name);
    }
    // Each refusal's own log line, which the worker writes last, after any call to an object
    // (an object's database is made at its first call): once every one is out, the objects'
    // folder is final for these requests, with no pause.
    const refusals = () => worker.logLines().slice(logged).filter((l) => l.route === 'webhook' && l.status === 400);
    await until(() => refusals().length >= bodies.length, 5_000, 'the refusals\' log lines');
    assert.deepEqual(refusals().map((l) => l.outcome), bodies.map(([, , code]) => code));
    assert.deepEqual(objectFiles(worker.persistDir), objectsBefore, 'no object was created');
    assert.equal(origin.requests.length, seen, 'nothing reached the origin');
    // Looked up last: reading a record creates its object's (empty) database.
    assert.equal(await record(worker, 'ch_123'), null);
  });

  test('a body over MAX_BODY_BYTES is 413, also when sent without a length', async () => {
    const id = eventId('big');
    const payload = eventPayload(id, 'x', { padding: 'p'.repeat(5000) });
    const answer = await deliver(worker, payload, { secret: NEW });
    assert.equal(answer.status, 413);
    assert.equal(answer.json.error, 'body_too_large');
    // Streamed in chunks with no Content-Length: the cap still holds.
    const chunked = { status: await postChunked(`${worker.url}/webhooks/stripe`, Array(10).fill('x'.repeat(1000)), {
      'stripe-signature': `t=${now()},v1=${'ab'.repeat(32)}`,
    }) };
    assert.equal(chunked.status, 413);
    assert.equal(await record(worker, id), null);
  });
});

test('a crashed attempt is taken over when its lease runs out, and its fence is dead', async (t) => {
  const behaviour = { first: true };
  const origin = await startOrigin(() => {
    if (behaviour.first) {
      behaviour.first = false;
      return { hang: true };
    }
    return { status: 200 };
  });
  const worker = await startWorker({
    vars: vars(origin, { LEASE_SECONDS: '20', FORWARD_TIMEOUT_MS: '2500', LATE_ANSWER_WAIT_SECONDS: '5' }), // a lease a slow restart fits in
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const id = eventId('crash');
  const payload = eventPayload(id);
  // The first delivery reaches the origin, which hangs; the runtime dies mid-forward.
  const pending = deliver(worker, payload, { secret: SECRET }).catch((error) => error);
  const deadline = Date.now() + 30_000;
  while (origin.requests.length === 0 && Date.now() < deadline) await sleep(50);
  assert.equal(origin.requests.length, 1, 'the first delivery reached the origin');
  const held = await record(worker, id);
  assert.equal(held.state, 'processing');
  await worker.restart();
  assert.ok((await pending) instanceof Error, 'the first sender lost its connection');

  assert.ok(Date.now() < held.lease_expires_at - 500, 'the restart took less than the lease');
  const early = await deliver(worker, payload, { secret: SECRET });
  assert.equal(early.status, 409, 'the crashed claim is honoured until its lease ends');
  await sleep(held.lease_expires_at - Date.now() + 300);
  const takeover = await deliver(worker, payload, { secret: SECRET });
  assert.equal(takeover.status, 200);
  assert.equal(origin.requests.length, 2);
  assert.equal(origin.requests[1].headers['x-webhook-dedup-attempt'], '2');
  assert.equal(origin.requests[1].headers['x-webhook-dedup-takeover'], 'true');
  const line = await worker.waitForLog((l) => l.key === id && l.takeover === true);
  assert.ok(line, 'the takeover is logged');

  // The dead attempt's fence can neither finalize nor release the new record.
  const late = await call(`${worker.url}/_test/claims/${id}/finalize`, {
    method: 'POST', headers: adminHeaders(worker), body: JSON.stringify({ fence: held.fence }),
  });
  assert.equal(late.json.outcome, 'not_owner');
  const lateRelease = await call(`${worker.url}/_test/claims/${id}/release`, {
    method: 'POST', headers: adminHeaders(worker), body: JSON.stringify({ fence: held.fence, reason: 'origin answered 503' }),
  });
  assert.equal(lateRelease.json.outcome, 'not_owner');
  assert.equal((await record(worker, id)).state, 'done');
});

test('a missing secret or origin: every delivery 500 naming the key, nothing stored', async (t) => {
  const worker = await startWorker({ vars: { ENABLE_TEST_ROUTES: 'true' } });
  t.after(() => worker.dispose());
  const id = eventId('unconfigured');
  const answer = await deliver(worker, eventPayload(id), { secret: SECRET });
  assert.equal(answer.status, 500);
  assert.equal(answer.json.error, 'misconfigured');
  assert.match(answer.json.detail, /STRIPE_WEBHOOK_SECRET/);
  assert.match(answer.json.detail, /ORIGIN_URL/);
  const line = await worker.waitForLog((l) => l.route === 'webhook');
  assert.match(line.detail, /STRIPE_WEBHOOK_SECRET: missing/);
  const health = await call(`${worker.url}/healthz`);
  assert.equal(health.status, 503);
  assert.equal(storageDump(worker.persistDir), '', 'no object was written');
});

// The local runtime keeps a handler running after its client disconnects, so this checks the
// promise (the claim is settled) but cannot show that `waitUntil` is what keeps it so in
// production, where a disconnect cancels a handler's unfinished work.
test('forward and settle finish even when the sender hangs up mid-forward', async (t) => {
  const origin = await startOrigin(() => ({ status: 200, delayMs: 1_500 }));
  const runtime = await startDirect({
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, ENABLE_TEST_ROUTES: 'true' },
  });
  t.after(async () => {
    await runtime.dispose();
    await origin.close();
  });
  const id = eventId('hangup');
  const payload = eventPayload(id);
  const controller = new AbortController();
  const sent = fetch(`${runtime.url}/webhooks/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(payload, SECRET) },
    body: payload,
    signal: controller.signal,
  }).catch((error) => error);
  const deadline = Date.now() + 20_000;
  while (origin.requests.length === 0 && Date.now() < deadline) await sleep(20);
  assert.equal(origin.requests.length, 1, 'the delivery reached the origin');
  controller.abort(); // Stripe gives up while the origin is still working
  assert.ok((await sent) instanceof Error);
  let stored = null;
  while (Date.now() < deadline) {
    stored = (await call(`${runtime.url}/_test/claims/${id}`, { headers: adminHeaders(runtime) })).json.record;
    if (stored?.state === 'done') break;
    await sleep(200);
  }
  assert.equal(stored?.state, 'done', 'the claim was finalized after the sender left');
  const resend = await call(`${runtime.url}/webhooks/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(payload, SECRET) },
    body: payload,
  });
  assert.deepEqual(resend.json, { status: 'duplicate' });
  assert.equal(origin.requests.length, 1);
});

test('LOG_STORAGE_USAGE=true logs the rows each claim-authority operation read and wrote', async (t) => {
  const origin = await startOrigin(() => ({ status: 200, body: 'ok' }));
  const worker = await startWorker({ vars: vars(origin, { LOG_STORAGE_USAGE: 'true' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const id = eventId('usage');
  const payload = eventPayload(id);
  assert.equal((await deliver(worker, payload, { secret: SECRET })).status, 200);
  assert.deepEqual((await deliver(worker, payload, { secret: SECRET })).json, { status: 'duplicate' });
  await worker.waitForLog((l) => l.route === 'authority' && l.key === id && l.outcome === 'settle');
  const lines = worker.logLines().filter((l) => l.route === 'authority' && l.key === id);
  const written = lines.reduce((sum, l) => sum + l.rows_written, 0);
  // The claim, its alarm and the finalize; the duplicate reads and writes nothing new.
  assert.equal(written, 3, JSON.stringify(lines));
  assert.ok(lines.some((l) => l.outcome === 'deliver' && l.rows_written === 0 && l.rows_read === 1), JSON.stringify(lines));
});
