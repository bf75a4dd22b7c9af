// Queue mode: Stripe is acknowledged once the event is stored; the event's Durable Object
// delivers it from its alarm, retries with back-off, dead-letters, and redelivers on request.
// Real worker under `wrangler dev` with persisted storage, deliveries signed by `stripe`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import { after, before, describe, test } from 'node:test';

import { call, objectFiles, openObjectDatabase, sleep, startOrigin, startWorker, until } from './harness.mjs';
import { deliver, eventId, eventPayload, queueModeVars, stripe } from './stripe-helpers.mjs';

const SECRET = 'whsec_queue_tests';
const TOKEN = 'queue-admin-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };

function queueVars(origin, extra = {}) {
  return queueModeVars(origin, { secret: `${SECRET},whsec_queue_old`, token: TOKEN }, extra);
}

describe('queue mode', () => {
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req, n) => {
      const decide = behaviour.get(req.headers['x-webhook-dedup-event-id']);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    worker = await startWorker({ vars: queueVars(origin) });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
  const inspect = async (id) => (await call(`${worker.url}/admin/events/${id}`, { headers: auth })).json?.record;

  test('accepted once stored, delivered once, byte for byte, with a signature that verifies on arrival', async () => {
    const id = eventId('queued');
    const payload = eventPayload(id, 'invoice.paid', { note: 'caf\u00e9 \u2603' });
    const started = Date.now();
    const answer = await deliver(worker, payload, { secret: SECRET });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json, { status: 'queued', event_id: id });
    assert.ok(Date.now() - started < 2_000, 'acknowledged without waiting for the origin');
    const [forwarded] = await until(() => seen(id).length && seen(id), 10_000, 'the delivery');
    assert.ok(forwarded.body.equals(Buffer.from(payload)), 'the stored bytes, unchanged');
    assert.equal(forwarded.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(forwarded.headers['x-webhook-dedup-attempt'], '1');
    const event = stripe.webhooks.constructEvent(forwarded.body, forwarded.headers['stripe-signature'], SECRET);
    assert.equal(event.id, id);
    const repeat = await deliver(worker, payload, { secret: SECRET });
    assert.deepEqual(repeat.json, { status: 'duplicate' });
    await until(async () => (await inspect(id))?.state === 'done', 5_000, 'done');
    const record = await inspect(id);
    assert.equal(record.queue.body_held, false, 'the body is dropped once delivered');
    // Delivered once: one attempt was ever claimed (each forward follows a claim, which counts
    // in `attempts`), and a done record is never attempted again.
    assert.equal(record.attempts, 1, 'one attempt claimed');
    assert.equal(seen(id).length, 1);
    const line = await worker.waitForLog((l) => l.key === id && l.outcome === 'delivered');
    assert.equal(line.attempt, 1);
  });

  test('an origin failing twice then succeeding: three attempts, one success, back-off between', async () => {
    const id = eventId('retried');
    behaviour.set(id, () => (seen(id).length <= 2 ? { status: 503 } : { status: 200 }));
    assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    await until(async () => (await inspect(id))?.state === 'done', 20_000, 'delivery after retries');
    const attempts = seen(id);
    assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2', '3']);
    assert.deepEqual(attempts.map((r) => r.answer.status), [503, 503, 200]);
    const gaps = attempts.slice(1).map((r, i) => r.receivedAt - attempts[i].receivedAt);
    assert.ok(gaps[0] >= 700 && gaps[1] >= 1_400, `back-off 1 s then 2 s (less a quarter at most): ${gaps}`);
    const retryLine = await worker.waitForLog((l) => l.key === id && l.outcome === 'retry_scheduled');
    assert.match(retryLine.detail, /origin answered 503/);
  });

  test('an attempt whose answer is lost (its time-out, a gateway\'s 504) is retried only once its lease ends, so two runs of a slow handler never overlap', async () => {
    // LEASE_SECONDS 8, QUEUE_FORWARD_TIMEOUT_MS 3000, back-off 1 s: a handler that takes 5 s
    // is still running when its attempt times out; a retry after the back-off alone would run
    // it a second time alongside the first.
    const slow = eventId('lostslow');
    const gateway = eventId('lost504');
    behaviour.set(slow, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 200, delayMs: 5_000 } : { status: 200 }));
    behaviour.set(gateway, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 504 } : { status: 200 }));
    const definite = eventId('definite503');
    behaviour.set(definite, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 503 } : { status: 200 }));
    for (const id of [slow, gateway, definite]) {
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    }
    const waiting = await until(async () => {
      const record = await inspect(gateway);
      return record?.state === 'queued' && record.attempts === 1 && record;
    }, 10_000, 'the 504 settled');
    assert.equal(waiting.queue.last_error, 'origin answered 504');
    const refused = await call(`${worker.url}/admin/events/${gateway}/redeliver`, { method: 'POST', headers: auth });
    assert.equal(refused.status, 409, 'an operator\'s redelivery waits for the lease too');
    assert.equal(refused.json.error, 'lease_live');
    const kept = await call(`${worker.url}/admin/events/${gateway}`, { method: 'DELETE', headers: auth });
    assert.equal(kept.status, 409, 'nor is it deleted while its handler may still run');
    assert.equal(kept.json.error, 'processing');
    assert.equal(kept.json.lease_expires_at, waiting.lease_expires_at, 'it says until when');
    const first = seen(gateway)[0];
    assert.ok(waiting.queue.next_attempt_at >= first.receivedAt + 6_000, `the next attempt waits for the lease: ${waiting.queue.next_attempt_at - first.receivedAt} ms after the first`);
    for (const id of [slow, gateway, definite]) {
      await until(async () => (await inspect(id))?.state === 'done', 20_000, `${id} delivered`);
    }
    for (const id of [slow, gateway]) {
      const [one, two] = seen(id);
      assert.equal(seen(id).length, 2);
      assert.ok(two.receivedAt - one.receivedAt >= 6_000, `${id}: the second attempt came ${two.receivedAt - one.receivedAt} ms after the first, inside its 8 s lease`);
    }
    const [run, rerun] = seen(slow);
    assert.ok(run.answeredAt <= rerun.receivedAt, 'the slow handler had finished before it was run again');
    for (const id of [slow, gateway]) {
      assert.equal(seen(id)[1].headers['x-webhook-dedup-takeover'], 'true', `${id}: the retry after a lost answer says the handler may have run`);
    }
    const [failed, retried] = seen(definite);
    assert.ok(retried.receivedAt - failed.receivedAt < 5_000, 'a definite failure waits for the back-off only');
    assert.equal(retried.headers['x-webhook-dedup-takeover'], 'false', 'after a definite failure, no takeover');
    const line = await worker.waitForLog((l) => l.key === slow && l.outcome === 'retry_scheduled');
    assert.match(line.detail, /^time-out; next attempt in [3-5] s$/);
  });

  test('an origin that always fails: dead after RETRY_MAX_ATTEMPTS, visible, then redelivered once', async () => {
    const id = eventId('dead');
    let healthy = false;
    behaviour.set(id, () => (healthy ? { status: 200 } : { status: 500 }));
    const payload = eventPayload(id);
    assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'queued');
    const dead = await until(async () => {
      const record = await inspect(id);
      return record?.state === 'dead' && record;
    }, 20_000, 'the dead letter');
    assert.equal(dead.attempts, 3);
    assert.equal(dead.queue.body_held, true, 'a dead event keeps its body');
    assert.equal(dead.queue.last_error, 'origin answered 500');
    assert.equal(dead.queue.next_attempt_at, null);
    const line = await worker.waitForLog((l) => l.key === id && l.outcome === 'dead_lettered');
    assert.equal(line.level, 'error');
    assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'duplicate', 'Stripe is not asked to retry');
    // No attempt after the last: none is scheduled, and the redelivery below is attempt 4 (an
    // attempt in between would have taken that number).
    assert.equal(seen(id).length, 3);

    healthy = true;
    const redelivered = await call(`${worker.url}/admin/events/${id}/redeliver`, { method: 'POST', headers: auth });
    assert.equal(redelivered.status, 200, redelivered.text);
    assert.equal(redelivered.json.status, 'queued');
    await until(async () => (await inspect(id))?.state === 'done', 10_000, 'the redelivery');
    assert.deepEqual(seen(id).map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2', '3', '4'], 'no attempt while it was dead');
    assert.equal(seen(id)[3].headers['x-webhook-dedup-takeover'], 'false', 'every earlier attempt was answered: no takeover');
    assert.equal((await inspect(id)).attempts, 4);
    const again = await call(`${worker.url}/admin/events/${id}/redeliver`, { method: 'POST', headers: auth });
    assert.equal(again.status, 404, 'a delivered event holds no body');
    const unknown = await call(`${worker.url}/admin/events/${eventId('never')}/redeliver`, { method: 'POST', headers: auth });
    assert.equal(unknown.status, 404);
  });

  test('a 429 or 503 with Retry-After (seconds or an HTTP date) puts the next attempt off to the time asked, not the back-off', async () => {
    // The back-off after a first failure is 0.75 to 1 s here; each origin asks for 2 s (the
    // longest back-off, RETRY_MAX_DELAY_SECONDS, which caps what it may ask).
    const inSeconds = eventId('throttled');
    const asDate = eventId('throttledbydate');
    behaviour.set(inSeconds, () => (seen(inSeconds).length === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
    behaviour.set(asDate, () => {
      if (seen(asDate).length > 1) return { status: 200 };
      // An HTTP date has whole seconds: the next whole second at least 2 s from now.
      const at = new Date(Math.ceil((Date.now() + 2_000) / 1_000) * 1_000);
      return { status: 503, headers: { 'retry-after': at.toUTCString() } };
    });
    for (const id of [inSeconds, asDate]) {
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    }
    for (const id of [inSeconds, asDate]) {
      await until(async () => (await inspect(id))?.state === 'done', 15_000, `${id} delivered`);
      const [first, second] = seen(id);
      assert.equal(seen(id).length, 2, 'one attempt put off, then one delivered');
      const gap = second.receivedAt - first.receivedAt;
      assert.ok(gap >= 1_900, `the next attempt waited for the time asked: ${gap} ms`);
      const line = await worker.waitForLog((l) => l.key === id && l.outcome === 'retry_scheduled');
      assert.match(line.detail, /origin answered (429|503)/);
    }
  });

  test('redeliver while an attempt holds the lease is 409', async () => {
    const id = eventId('busy');
    behaviour.set(id, () => ({ status: 200, delayMs: 2_000 }));
    await deliver(worker, eventPayload(id), { secret: SECRET });
    await until(() => seen(id).length, 10_000, 'the attempt');
    const refused = await call(`${worker.url}/admin/events/${id}/redeliver`, { method: 'POST', headers: auth });
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error, 'lease_live');
  });

  test('concurrent duplicates while queued: one delivery', async () => {
    const id = eventId('dupes');
    const payload = eventPayload(id);
    const answers = await Promise.all(Array.from({ length: 12 }, () => deliver(worker, payload, { secret: SECRET })));
    assert.ok(answers.every((a) => a.status === 200), answers.map((a) => a.text).join('\n'));
    assert.equal(answers.filter((a) => a.json.status === 'queued').length, 1);
    await until(async () => (await inspect(id))?.state === 'done', 10_000, 'the delivery');
    // One delivery: one attempt was ever claimed, and a done record is never attempted again.
    assert.equal((await inspect(id)).attempts, 1, 'one attempt claimed');
    assert.equal(seen(id).length, 1);
  });

  test('each attempt is signed anew: a retry long after acceptance still verifies at arrival', async () => {
    const id = eventId('fresh');
    // The origin refuses the first two attempts; the third comes at least 0.75 + 1.5 s after
    // the first (the back-off, jitter included), so a signature made at acceptance would carry
    // an older time than the one the handler gets.
    const acceptedMs = Date.now();
    behaviour.set(id, (req) => {
      if (Number(req.headers['x-webhook-dedup-attempt']) < 3) return { status: 503 };
      try {
        stripe.webhooks.constructEvent(req.body, req.headers['stripe-signature'], SECRET);
      } catch {
        return { status: 400, body: 'bad signature' };
      }
      return { status: 200 };
    });
    const original = await deliver(worker, eventPayload(id), { secret: SECRET });
    assert.equal(original.json.status, 'queued', original.text);
    await until(async () => (await inspect(id))?.state === 'done', 20_000, 'the delivery');
    const attempts = seen(id);
    assert.deepEqual(attempts.map((r) => r.answer?.status), [503, 503, 200], 'the third attempt verified');
    const t = Number(attempts[2].headers['stripe-signature'].match(/t=(\d+)/)[1]);
    const atAcceptance = Math.floor(acceptedMs / 1000);
    assert.ok(t >= Math.floor((acceptedMs + 2_250) / 1000) && t > atAcceptance, `signed at the attempt (t=${t}), not at acceptance (${atAcceptance})`);
  });
});

test('queue mode: a restart while the origin holds a delivery; the alarm delivers it after the lease', { timeout: 120_000 }, async (t) => {
  let hold = true;
  const origin = await startOrigin(() => (hold ? { hang: true } : { status: 200 }));
  // An attempt's time-out longer than a restart takes, so the hung attempt dies with the
  // runtime and is taken over, rather than failing on its own first.
  const worker = await startWorker({ vars: queueVars(origin, { LEASE_SECONDS: '12', QUEUE_FORWARD_TIMEOUT_MS: '10000' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const id = eventId('restart');
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
  await until(() => origin.requests.length, 10_000, 'the first attempt');
  hold = false;
  await worker.restart(); // the attempt dies mid-forward; its claim stays processing
  await until(() => origin.requests.some((r) => r.headers['x-webhook-dedup-attempt'] === '2'), 30_000, 'the takeover');
  const attempts = origin.requests.map((r) => r.headers['x-webhook-dedup-attempt']);
  assert.deepEqual(attempts.slice(0, 2), ['1', '2'], `attempt numbers increase: ${attempts}`);
  assert.equal(origin.requests[1].headers['x-webhook-dedup-takeover'], 'true');
  assert.ok(origin.requests[1].receivedAt - origin.requests[0].receivedAt >= 10_000, 'not before the lease ended');
  const record = (await call(`${worker.url}/admin/events/${id}`, { headers: auth })).json.record;
  assert.equal(record.state, 'done');
});

/**
 * No two origin requests for one event overlap in time: each is received only after the one
 * before it was answered (`answeredAt`, when its handler finished, whether or not anyone still
 * listened). A request never answered overlaps everything after it.
 */
function assertNoOverlap(requests, label) {
  const sorted = [...requests].sort((a, b) => a.receivedAt - b.receivedAt);
  for (let i = 1; i < sorted.length; i += 1) {
    const before = sorted[i - 1];
    const next = sorted[i];
    assert.ok(before.answeredAt !== undefined && next.receivedAt >= before.answeredAt,
      `${label}: attempt ${next.headers['x-webhook-dedup-attempt']} reached the origin at ${next.receivedAt}, while attempt ${before.headers['x-webhook-dedup-attempt']} (received ${before.receivedAt}) was still running (answered ${before.answeredAt ?? 'never'})`);
  }
}

test('switching modes over the same storage: no event dropped, none delivered twice at once', { timeout: 180_000 }, async (t) => {
  // A held request is a handler still running: it finishes (answers 200, to whoever still
  // listens) when the test lets it go, never on its own.
  let hold = true;
  let letGo;
  let going = new Promise((resolve) => { letGo = resolve; });
  const holdAgain = () => {
    hold = true;
    going = new Promise((resolve) => { letGo = resolve; });
  };
  const finish = () => {
    hold = false;
    letGo();
  };
  const origin = await startOrigin(async () => {
    if (hold) await going;
    return { status: 200 };
  });
  const dir = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-switch-'));
  let worker;
  t.after(async () => {
    finish();
    await worker?.dispose();
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Leases long enough to outlast a restart of the runtime on a loaded machine.
  const run = async (mode) => {
    await worker?.dispose();
    worker = await startWorker({
      persistDir: dir,
      vars: queueVars(origin, { DELIVERY_MODE: mode, LEASE_SECONDS: '15', QUEUE_FORWARD_TIMEOUT_MS: '10000' }),
    });
  };
  const record = async (id) => (await call(`${worker.url}/admin/events/${id}`, { headers: auth })).json?.record;

  // Sync → queue while a forward made in sync mode still holds the event (the runtime stopped
  // with it): the sender is told to come back, not that the event is a duplicate.
  await run('sync');
  const id = eventId('switch');
  const payload = eventPayload(id);
  assert.equal((await deliver(worker, payload, { secret: SECRET })).status, 504);
  await run('queue');
  const held = await deliver(worker, payload, { secret: SECRET });
  assert.equal(held.status, 409, held.text);
  assert.equal(held.json.error, 'in_flight');
  assert.ok(Number(held.headers.get('retry-after')) >= 1);
  // Once that claim's lease has run out, the event is stored and delivered, attempts continuing
  // (repeats answered in flight meanwhile store nothing, so asking again is safe). Its first
  // handler finishes now, well inside that lease.
  finish();
  const stored = await until(async () => {
    const answer = await deliver(worker, payload, { secret: SECRET });
    if (answer.json?.error !== 'in_flight') return answer;
    await sleep(500);
    return false;
  }, 40_000, 'the end of the sync claim\'s lease');
  assert.deepEqual(stored.json, { status: 'queued', event_id: id }, stored.text);
  await until(async () => (await record(id))?.state === 'done', 10_000, 'the delivery');
  const attempts = origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
  assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2']);
  assert.equal(attempts[1].headers['x-webhook-dedup-takeover'], 'true', 'the sync forward\'s outcome was unknown: the queue\'s attempt says its handler may have run');
  assertNoOverlap(attempts, id);

  // An attempt of queue mode is never released by an operator, even forced: the sender was
  // told `queued` and will not send the event again.
  holdAgain();
  const other = eventId('switchback');
  assert.equal((await deliver(worker, eventPayload(other), { secret: SECRET })).json.status, 'queued');
  await until(() => origin.requests.some((r) => r.headers['x-webhook-dedup-event-id'] === other), 10_000, 'the attempt');
  const release = await call(`${worker.url}/admin/events/${other}/release?force=true`, { method: 'POST', headers: auth });
  assert.equal(release.status, 409, release.text);
  assert.equal(release.json.error, 'queued_delivery');
  assert.equal((await record(other)).state, 'processing');

  // Queue → sync while that attempt holds the event: a duplicate, never a second forward. Its
  // handler finishes once the runtime has restarted, inside its lease.
  await run('sync');
  finish();
  const again = await deliver(worker, eventPayload(other), { secret: SECRET });
  assert.deepEqual(again.json, { status: 'duplicate' }, again.text);
  await until(async () => (await record(other))?.state === 'done', 60_000, 'the takeover by the queue');
  // Only the queue forwarded it: its attempt numbers, each once, in order (how many depends on
  // how long the restart took; the sync door added none).
  const others = origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === other);
  const numbers = others.map((r) => Number(r.headers['x-webhook-dedup-attempt']));
  assert.deepEqual(numbers, numbers.map((_, i) => i + 1), `attempts ${numbers}`);
  assert.ok(numbers.length >= 2, 'taken over after the restart');
  // None delivered twice at once: no two of its origin requests overlapped in time.
  assertNoOverlap(others, other);
});

test('queue mode refuses a body cap that cannot be stored: 500 misconfigured', async (t) => {
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/x', DELIVERY_MODE: 'queue', MAX_BODY_BYTES: '3000000' },
  });
  t.after(() => worker.dispose());
  const answer = await deliver(worker, eventPayload(eventId('big')), { secret: SECRET });
  assert.equal(answer.status, 500);
  assert.equal(answer.json.error, 'misconfigured');
  assert.match(answer.json.detail, /MAX_BODY_BYTES/);
});

test('queue mode: an alarm whose work fails sets itself again a minute later, rather than being dropped after the runtime\'s few retries; the event is delivered once its record reads again', { timeout: 180_000 }, async (t) => {
  let healthy = false;
  const origin = await startOrigin(() => (healthy ? { status: 200 } : { status: 503 }));
  const worker = await startWorker({ vars: queueVars(origin, { RETRY_BASE_SECONDS: '3', RETRY_MAX_DELAY_SECONDS: '3', RETRY_MAX_ATTEMPTS: '20' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const id = eventId('alarm_fails');
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).status, 200);
  assert.ok(await worker.waitForLog((l) => l.key === id && l.outcome === 'retry_scheduled', 10_000), 'a first attempt failed');
  await worker.stop();
  // The record made unreadable while the runtime is down (as by a storage fault): the alarm,
  // due in seconds, cannot do its work.
  const file = objectFiles(worker.persistDir).find((f) => {
    const db = openObjectDatabase(f);
    try { return db.prepare("SELECT 1 FROM sqlite_master WHERE name = '_cf_KV'").get() && db.prepare('SELECT 1 FROM _cf_KV WHERE key = ?').get(id); } finally { db.close(); }
  });
  assert.ok(file, 'the event object\'s storage');
  const db = openObjectDatabase(file, { readOnly: false });
  const original = db.prepare('SELECT value FROM _cf_KV WHERE key = ?').get(id).value;
  db.prepare('UPDATE _cf_KV SET value = ? WHERE key = ?').run(v8.serialize('not a record'), id);
  db.close();
  await worker.start();
  const failed = await worker.waitForLog((l) => l.route === 'alarm' && l.outcome === 'alarm_failed', 20_000);
  assert.ok(failed, `the failed alarm is logged:\n${worker.output.slice(-3000)}`);
  const failedAt = Date.now();
  assert.equal(failed.level, 'error');
  assert.match(failed.detail, /runs again at \d+/);
  await worker.stop();
  // Its own alarm, about a minute ahead (stored in nanoseconds).
  const meta = openObjectDatabase(file, { readOnly: false });
  const alarmRow = meta.prepare('SELECT value FROM _cf_METADATA WHERE key = 1');
  alarmRow.setReadBigInts(true);
  const alarmAt = Number(alarmRow.get().value / 1_000_000n);
  assert.ok(alarmAt > failedAt + 40_000 && alarmAt < failedAt + 61_000, `alarm ${alarmAt - failedAt} ms after the failure`);
  // The record readable again, the origin healthy: that alarm delivers the event.
  meta.prepare('UPDATE _cf_KV SET value = ? WHERE key = ?').run(original, id);
  meta.close();
  healthy = true;
  await worker.start();
  const delivered = await worker.waitForLog((l) => l.key === id && l.outcome === 'delivered', 75_000);
  assert.ok(delivered, `delivered by the alarm it set itself:\n${worker.output.slice(-3000)}`);
  const succeeded = origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id && r.answer?.status === 200);
  assert.equal(succeeded.length, 1, 'delivered once');
});

test('queue mode: a 410 Gone dead-letters the event after one attempt, even with RETRY_CLIENT_ERRORS, and says "gone"', async (t) => {
  const gone = eventId('gone');
  const refused = eventId('refused');
  const origin = await startOrigin((req) => {
    const id = req.headers['x-webhook-dedup-event-id'];
    if (id === gone) return { status: 410, body: 'this endpoint is gone' };
    if (id === refused && origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id).length === 1) return { status: 404 };
    return { status: 200 };
  });
  const worker = await startWorker({ vars: queueVars(origin, { RETRY_CLIENT_ERRORS: 'true' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
  const inspect = async (id) => (await call(`${worker.url}/admin/events/${id}`, { headers: auth })).json?.record;
  for (const id of [gone, refused]) {
    assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
  }
  const dead = await until(async () => {
    const record = await inspect(gone);
    return record?.state === 'dead' && record;
  }, 10_000, 'the dead letter');
  assert.equal(dead.attempts, 1, 'never retried');
  assert.equal(dead.queue.last_error, 'gone');
  const line = await worker.waitForLog((l) => l.key === gone && l.outcome === 'dead_lettered');
  assert.match(line.detail, /gone/);
  const listed = await until(async () => {
    const page = await call(`${worker.url}/admin/dead-letters`, { headers: auth });
    return page.json?.items?.find((item) => item.id === gone);
  }, 10_000, 'the failure index lists it');
  assert.equal(listed.last_reason, 'gone');
  // The setting is on: a 404 is retried, and the retry succeeds.
  await until(async () => (await inspect(refused))?.state === 'done', 15_000, 'the refused event retried');
  assert.deepEqual(seen(refused).map((r) => r.answer.status), [404, 200]);
  await sleep(1_500);
  assert.equal(seen(gone).length, 1, 'no attempt after the 410');
});
