// Queue mode's safety rules at their edges, each shown on the real runtime: the takeover flag
// when a dead letter whose last attempt timed out or was cut off is redelivered, each stored
// event's own fence, an alarm lost and set again by the next request, and an attempt's lease
// after the lease setting was shortened.
// Real worker under `wrangler dev` with persisted storage, deliveries signed by `stripe`.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { call, objectFiles, openObjectDatabase, sleep, startOrigin, startWorker, until } from './harness.mjs';
import { deliver, eventId, eventPayload, queueModeVars, record } from './stripe-helpers.mjs';

const SECRET = 'whsec_queue_safety_tests';
const TOKEN = 'queue-safety-admin-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };

function queueVars(origin, extra = {}) {
  return queueModeVars(origin, { secret: SECRET, token: TOKEN }, { ENABLE_TEST_ROUTES: 'true', ...extra });
}

/** An origin that answers each event's requests as `behaviour` (by event id) says, else 200. */
async function originWith(behaviour) {
  return startOrigin((req, n) => {
    const decide = behaviour.get(req.headers['x-webhook-dedup-event-id']);
    return decide ? decide(req, n) : { status: 200, body: 'ok' };
  });
}

const seenBy = (origin, id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
const inspect = async (worker, id) => (await call(`${worker.url}/admin/events/${id}`, { headers: auth })).json?.record;

test('a dead letter whose last attempt timed out is redelivered as a takeover: its handler may have run', { timeout: 90_000 }, async (t) => {
  const behaviour = new Map();
  const origin = await originWith(behaviour);
  const worker = await startWorker({ vars: queueVars(origin) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  // Two definite failures, then a handler slower than the attempt's 3 s time-out: the third
  // and last attempt times out, so the event is dead with its outcome unknown.
  const id = eventId('timedout');
  let healthy = false;
  behaviour.set(id, (req) => {
    if (healthy) return { status: 200 };
    return req.headers['x-webhook-dedup-attempt'] === '3' ? { status: 200, delayMs: 5_000 } : { status: 503 };
  });
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
  const dead = await until(async () => {
    const record = await inspect(worker, id);
    return record?.state === 'dead' && record;
  }, 30_000, 'the dead letter');
  assert.equal(dead.attempts, 3);
  assert.match(dead.queue.last_error, /time-out|timed out/);
  healthy = true;
  // The operator redelivers once the timed-out attempt's lease has ended.
  const redelivered = await until(async () => {
    const answer = await call(`${worker.url}/admin/events/${id}/redeliver`, { method: 'POST', headers: auth });
    if (answer.json?.error === 'lease_live') {
      await sleep(500);
      return false;
    }
    return answer;
  }, 20_000, 'the end of the timed-out attempt\'s lease');
  assert.equal(redelivered.status, 200, redelivered.text);
  await until(async () => (await inspect(worker, id))?.state === 'done', 15_000, 'the redelivery');
  const attempts = seenBy(origin, id);
  assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2', '3', '4']);
  assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-takeover']), ['false', 'false', 'false', 'true'],
    'only the attempt after the timed-out one says its handler may have run');
});

test('a dead letter whose only attempt a restart cut off is redelivered as a takeover', { timeout: 120_000 }, async (t) => {
  let hold = true;
  const origin = await startOrigin(() => (hold ? { hang: true } : { status: 200 }));
  // One attempt per budget, and a time-out longer than a restart: the attempt dies with the
  // runtime, and the alarm at its lease's end finds it cut off and dead-letters the event.
  const worker = await startWorker({ vars: queueVars(origin, { RETRY_MAX_ATTEMPTS: '1', LEASE_SECONDS: '12', QUEUE_FORWARD_TIMEOUT_MS: '10000' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const id = eventId('restartdead');
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
  await until(() => seenBy(origin, id).length, 10_000, 'the attempt');
  hold = false;
  await worker.restart();
  const dead = await until(async () => {
    const record = await inspect(worker, id);
    return record?.state === 'dead' && record;
  }, 40_000, 'the dead letter at the lease\'s end');
  assert.equal(dead.attempts, 1);
  assert.match(dead.queue.last_error, /cut off/);
  const redelivered = await call(`${worker.url}/admin/events/${id}/redeliver`, { method: 'POST', headers: auth });
  assert.equal(redelivered.status, 200, redelivered.text);
  await until(async () => (await inspect(worker, id))?.state === 'done', 15_000, 'the redelivery');
  const attempts = seenBy(origin, id);
  assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2']);
  assert.equal(attempts[1].headers['x-webhook-dedup-takeover'], 'true', 'the cut-off attempt\'s handler may have run');
});

test('an operator\'s delete that read an earlier record never deletes the event its sender sent again', { timeout: 60_000 }, async (t) => {
  const origin = await originWith(new Map());
  // A budget of well under a millisecond: each stored event is dead-lettered by its first
  // alarm, before any attempt, so its record keeps the fence it was stored with.
  const worker = await startWorker({ vars: queueVars(origin, { RETRY_MAX_AGE_HOURS: '0.0000001' }) });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const id = eventId('refenced');
  const payload = eventPayload(id);
  const testRoute = `${worker.url}/_test/claims/${id}`;
  const dead = async () => (await inspect(worker, id))?.state === 'dead';
  assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'queued');
  await until(dead, 10_000, 'the dead letter');
  // Two operators read the dead letter; the first deletes it, and the sender sends it again.
  const { fence: readEarlier } = await record(worker, id);
  const forgotten = await call(`${worker.url}/admin/events/${id}`, { method: 'DELETE', headers: auth });
  assert.equal(forgotten.json.status, 'forgotten', forgotten.text);
  assert.equal((await deliver(worker, payload, { secret: SECRET })).json.status, 'queued');
  await until(dead, 10_000, 'the second dead letter');
  const resent = await record(worker, id);
  assert.equal(resent.attempts, 0, 'neither record had an attempt');
  // The second operator's delete, fenced with what it read before, changes nothing.
  const stale = await call(`${testRoute}/forget`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ fence: readEarlier }) });
  assert.equal(stale.status, 200, stale.text);
  assert.equal(stale.json.outcome, 'not_owner');
  const kept = await inspect(worker, id);
  assert.equal(kept?.state, 'dead', 'the acknowledged event is still kept');
  assert.equal(kept.queue.body_held, true, 'its body with it');
  assert.notEqual(resent.fence, readEarlier, 'the new record has a fence of its own');
  assert.equal(seenBy(origin, id).length, 0);
});

/** Removes every trace of the alarm of the object that stores `id`, with its runtime stopped. */
function loseAlarm(dir, id) {
  let found = 0;
  for (const file of objectFiles(dir)) {
    const db = openObjectDatabase(file, { readOnly: false });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name);
      if (tables.includes('_cf_KV') && db.prepare('SELECT 1 FROM _cf_KV WHERE key = ?').get(id)) {
        found += db.prepare('DELETE FROM _cf_METADATA WHERE key = 1').run().changes;
      }
      // The runtime's own table of scheduled alarms, when it keeps one beside the objects.
      for (const table of tables.filter((name) => /alarm/i.test(name))) {
        db.prepare(`DELETE FROM ${table}`).run();
      }
    } finally {
      db.close();
    }
  }
  return found;
}

test('a stored event whose alarm was lost is delivered once any request reaches its object', { timeout: 120_000 }, async (t) => {
  const behaviour = new Map();
  const origin = await originWith(behaviour);
  const dir = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-lost-alarm-'));
  // The retry due 9 to 12 s after the first attempt: time enough to stop the runtime first.
  const vars = queueVars(origin, { RETRY_BASE_SECONDS: '12', RETRY_MAX_DELAY_SECONDS: '12' });
  let worker = await startWorker({ persistDir: dir, vars });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const id = eventId('lostalarm');
  behaviour.set(id, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 503 } : { status: 200 }));
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
  assert.ok(await worker.waitForLog((l) => l.key === id && l.outcome === 'retry_scheduled', 10_000), 'the first attempt failed');
  const { queue: { next_attempt_at: due } } = await inspect(worker, id);
  // The runtime stops before that retry is due, and the alarm is lost while it is down.
  await worker.stop();
  assert.equal(seenBy(origin, id).length, 1, 'stopped before the retry');
  assert.equal(loseAlarm(dir, id), 1, 'the object had an alarm');
  worker = await startWorker({ persistDir: dir, vars });
  // With no alarm, nothing happens, well past the retry's time.
  await sleep(Math.max(0, due - Date.now()) + 4_000);
  assert.equal(seenBy(origin, id).length, 1, 'the lost alarm did not fire');
  // An operator's look is a request to the object: it sets the alarm again, and the event is
  // delivered.
  assert.equal((await inspect(worker, id)).state, 'queued');
  await until(async () => (await inspect(worker, id))?.state === 'done', 15_000, 'the delivery after the look');
  assert.deepEqual(seenBy(origin, id).map((r) => r.answer?.status), [503, 200]);
});

test('events stored before every sender went sync with a shorter lease are attempted under a lease that outlasts the attempt\'s wait', { timeout: 120_000 }, async (t) => {
  const behaviour = new Map();
  const origin = await originWith(behaviour);
  const dir = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-short-lease-'));
  let worker;
  t.after(async () => {
    await worker?.dispose();
    await origin.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Queue mode, 15 s lease, 5 s attempts: the first attempt fails, the retry is due in 9 to
  // 12 s, after the runtime has been stopped and started again with the new settings.
  const queued = queueVars(origin, { LEASE_SECONDS: '15', QUEUE_FORWARD_TIMEOUT_MS: '5000', RETRY_BASE_SECONDS: '12', RETRY_MAX_DELAY_SECONDS: '12' });
  worker = await startWorker({ persistDir: dir, vars: queued });
  const id = eventId('shortlease');
  // The retry's handler takes 4 s: inside the attempt's 5 s wait, beyond the new 2 s lease.
  behaviour.set(id, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 503 } : { status: 200, delayMs: 4_000 }));
  assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
  assert.ok(await worker.waitForLog((l) => l.key === id && l.outcome === 'retry_scheduled', 10_000), 'the first attempt failed');
  // Every sender switched to sync and the lease cut to 2 s: the configuration no longer
  // compares the lease with QUEUE_FORWARD_TIMEOUT_MS, which still bounds the stored event's
  // attempts.
  await worker.dispose();
  assert.equal(seenBy(origin, id).length, 1, 'stopped before the retry');
  worker = await startWorker({
    persistDir: dir,
    vars: { ...queued, DELIVERY_MODE: 'sync', LEASE_SECONDS: '2', FORWARD_TIMEOUT_MS: '500', RETRY_BASE_SECONDS: '1', RETRY_MAX_DELAY_SECONDS: '1' },
  });
  await until(() => seenBy(origin, id).length >= 2, 30_000, 'the retry');
  const during = await inspect(worker, id);
  assert.equal(during.state, 'processing');
  assert.ok(during.lease_expires_at - during.claimed_at >= 5_000,
    `the attempt's lease ends ${during.lease_expires_at - during.claimed_at} ms after its claim: at least its 5 s wait`);
  assert.equal(during.attempts, 2, 'the record read is the retry\'s');
  await until(async () => (await inspect(worker, id))?.state === 'done', 20_000, 'the delivery');
  const attempts = seenBy(origin, id);
  assert.deepEqual(attempts.map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2'], 'no takeover while the handler ran');
});
