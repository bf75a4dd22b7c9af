// The claim authority on the real runtime: one Durable Object per key serialises every claim,
// leases run out into takeovers, fences refuse late attempts, the alarm enforces retention,
// and records survive a restart of the runtime. Reached through the /_test/ routes, and, for
// "exactly one wins", also through the production path: signed deliveries to
// POST /webhooks/stripe forwarded to a real HTTP origin.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { adminHeaders, call, sleep, startOrigin, startWorker, until } from './harness.mjs';
import { deliver, eventId, eventPayload } from './stripe-helpers.mjs';

const TOKEN = 'claims-admin-token-0123456789abcdef';
const BASE_VARS = {
  STRIPE_WEBHOOK_SECRET: 'whsec_claims',
  ORIGIN_URL: 'http://127.0.0.1:9/origin',
  ENABLE_TEST_ROUTES: 'true',
  ADMIN_TOKEN: TOKEN,
};
const auth = { authorization: `Bearer ${TOKEN}` };

const post = (url, body) => call(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json', ...auth },
  body: body === undefined ? undefined : JSON.stringify(body),
});
const get = (url) => call(url, { headers: auth });

test('200 concurrent claims of one key: exactly one wins', async (t) => {
  const worker = await startWorker({ vars: BASE_VARS });
  t.after(() => worker.dispose());
  const answers = await Promise.all(
    Array.from({ length: 200 }, () => post(`${worker.url}/_test/claims/evt_race/claim`)),
  );
  const outcomes = answers.map((a) => `${a.status} ${a.json?.outcome}`);
  assert.equal(outcomes.filter((o) => o === '200 claimed').length, 1, outcomes.join(', '));
  assert.equal(outcomes.filter((o) => o === '200 duplicate_inflight').length, 199);
  const record = (await get(`${worker.url}/_test/claims/evt_race`)).json.record;
  assert.equal(record.state, 'processing');
  assert.equal(record.attempts, 1);
});

test('50 keys x 20 concurrent claims: exactly one winner per key', async (t) => {
  const worker = await startWorker({ vars: BASE_VARS });
  t.after(() => worker.dispose());
  const keys = Array.from({ length: 50 }, (_, i) => `evt_many_${i}`);
  const requests = keys.flatMap((key) => Array.from({ length: 20 }, () => key));
  // Keep at most 200 in flight through the dev proxy.
  const results = [];
  for (let i = 0; i < requests.length; i += 200) {
    const batch = requests.slice(i, i + 200);
    results.push(...await Promise.all(batch.map(async (key) => ({
      key, answer: await post(`${worker.url}/_test/claims/${key}/claim`),
    }))));
  }
  assert.ok(results.every((r) => r.answer.status === 200), 'no store errors');
  const winners = results.filter((r) => r.answer.json.outcome === 'claimed');
  assert.equal(winners.length, 50);
  assert.deepEqual(new Set(winners.map((w) => w.key)), new Set(keys));
});

test('production path: 150 concurrent signed deliveries of one event, exactly one reaches the origin; the rest 409 in_flight or 200 duplicate', async (t) => {
  const SECRET = 'whsec_claims_production';
  const id = eventId('race');
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  // The origin holds the one forward it gets until every concurrent delivery has its answer, so
  // each of them meets the live claim; it records every request it receives.
  const origin = await startOrigin(async () => {
    await held;
    return { status: 200, body: 'ok' };
  });
  const worker = await startWorker({ vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook`, ENABLE_TEST_ROUTES: 'true' } });
  t.after(async () => {
    release();
    await worker.dispose();
    await origin.close();
  });
  const payload = eventPayload(id);
  const early = [];
  const sends = Array.from({ length: 150 }, () => deliver(worker, payload, { secret: SECRET }).then((answer) => {
    early.push(answer);
    return answer;
  }));
  // Every delivery but the forwarded one is answered while the forward is held.
  await until(() => early.length >= 149, 20_000, '149 answers while one forward is held');
  assert.equal(early.length, 149, 'the forwarded one is not answered while its forward is held');
  assert.ok(early.every((a) => a.status === 409 && a.json.error === 'in_flight'), early.map((a) => `${a.status} ${a.text}`).join('\n'));
  assert.equal(origin.requests.length, 1, 'one forward reached the origin');
  release();
  const answers = await Promise.all(sends);
  const processed = answers.filter((a) => a.status === 200 && a.json.status === 'processed');
  assert.equal(processed.length, 1, 'exactly one delivery won and was processed');
  // After it, more deliveries of the same event: every one a duplicate, none forwarded.
  const later = await Promise.all(Array.from({ length: 50 }, () => deliver(worker, payload, { secret: SECRET })));
  assert.ok(later.every((a) => a.status === 200 && a.json.status === 'duplicate'), later.map((a) => a.text).join('\n'));
  assert.equal(origin.requests.length, 1, 'forwarded once');
  assert.equal(origin.requests[0].headers['x-webhook-dedup-attempt'], '1');
  assert.equal(origin.requests[0].headers['x-webhook-dedup-takeover'], 'false');
  assert.ok(origin.requests[0].body.equals(Buffer.from(payload)));
  const record = (await call(`${worker.url}/_test/claims/${id}`, { headers: adminHeaders(worker) })).json.record;
  assert.equal(record.state, 'done');
  assert.equal(record.attempts, 1, 'one claim was ever won');
});

test('production path: 40 events x 15 concurrent signed deliveries, each forwarded exactly once', async (t) => {
  const SECRET = 'whsec_claims_production';
  const origin = await startOrigin(() => ({ status: 200, body: 'ok', delayMs: 50 }));
  const worker = await startWorker({ vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook`, ENABLE_TEST_ROUTES: 'true' } });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const ids = Array.from({ length: 40 }, () => eventId('many'));
  const payloads = new Map(ids.map((id) => [id, eventPayload(id)]));
  const answers = await Promise.all(ids.flatMap((id) => Array.from({ length: 15 }, async () => ({
    id, answer: await deliver(worker, payloads.get(id), { secret: SECRET }),
  }))));
  for (const id of ids) {
    const mine = answers.filter((a) => a.id === id).map((a) => a.answer);
    const words = mine.map((a) => `${a.status} ${a.json?.status ?? a.json?.error}`);
    assert.equal(words.filter((w) => w === '200 processed').length, 1, `${id}: ${words.join(', ')}`);
    assert.ok(words.every((w) => ['200 processed', '409 in_flight', '200 duplicate'].includes(w)), `${id}: ${words.join(', ')}`);
    const forwards = origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
    assert.equal(forwards.length, 1, `${id} forwarded once`);
    assert.equal(forwards[0].headers['x-webhook-dedup-attempt'], '1');
  }
  assert.equal(origin.requests.length, ids.length);
});

test('a lease that runs out is taken over, and the late holder is fenced off', async (t) => {
  const worker = await startWorker({
    vars: { ...BASE_VARS, LEASE_SECONDS: '2', FORWARD_TIMEOUT_MS: '1000', LATE_ANSWER_WAIT_SECONDS: '0' },
  });
  t.after(() => worker.dispose());
  const url = `${worker.url}/_test/claims/evt_lease`;
  const first = (await post(`${url}/claim`)).json;
  assert.equal(first.outcome, 'claimed');
  const during = (await post(`${url}/claim`)).json;
  assert.equal(during.outcome, 'duplicate_inflight');
  assert.equal(during.lease_expires_at, first.lease_expires_at);

  await sleep(first.lease_expires_at - Date.now() + 300);
  const second = (await post(`${url}/claim`)).json;
  assert.equal(second.outcome, 'claimed');
  assert.equal(second.takeover, true);
  assert.equal(second.attempt, 2);
  assert.notEqual(second.fence, first.fence);

  const lateFinalize = await post(`${url}/finalize`, { fence: first.fence });
  assert.equal(lateFinalize.json.outcome, 'not_owner');
  const lateRelease = await post(`${url}/release`, { fence: first.fence, reason: 'origin answered 503' });
  assert.equal(lateRelease.json.outcome, 'not_owner');
  let record = (await get(url)).json.record;
  assert.equal(record.state, 'processing', 'the late attempt changed nothing');
  assert.equal(record.fence, second.fence);

  const finalize = await post(`${url}/finalize`, { fence: second.fence });
  assert.equal(finalize.json.outcome, 'finalized');
  assert.equal(finalize.json.already, false);
  const again = await post(`${url}/finalize`, { fence: second.fence });
  assert.equal(again.json.already, true);
  assert.equal((await post(`${url}/claim`)).json.outcome, 'duplicate_processed');
  const releaseDone = await post(`${url}/release`, { fence: second.fence, reason: 'origin answered 500' });
  assert.equal(releaseDone.json.outcome, 'already_done');
  record = (await get(url)).json.record;
  assert.equal(record.state, 'done');
});

test('a released claim is claimed again at once and keeps its history', async (t) => {
  const worker = await startWorker({ vars: BASE_VARS });
  t.after(() => worker.dispose());
  const url = `${worker.url}/_test/claims/evt_release`;
  const first = (await post(`${url}/claim`)).json;
  const release = await post(`${url}/release`, { fence: first.fence, reason: 'origin answered 500' });
  assert.equal(release.json.outcome, 'released');
  const second = (await post(`${url}/claim`)).json;
  assert.equal(second.outcome, 'claimed');
  assert.equal(second.takeover, false);
  assert.equal(second.attempt, 2);
  const record = (await get(url)).json.record;
  assert.equal(record.last_release_reason, 'origin answered 500');
  assert.equal(record.attempts, 2);
});

test('the alarm deletes a record when its retention ends', async (t) => {
  const worker = await startWorker({
    vars: {
      ...BASE_VARS,
      LEASE_SECONDS: '2',
      FORWARD_TIMEOUT_MS: '500',
      LATE_ANSWER_WAIT_SECONDS: '0',
      RETENTION_HOURS: '0.001', // 3.6 s
      ALLOW_SHORT_RETENTION: 'true',
      SIGNATURE_TOLERANCE_SECONDS: '1', // the record outlives every replay it accepts
    },
  });
  t.after(() => worker.dispose());
  const url = `${worker.url}/_test/claims/evt_retention`;
  const claim = (await post(`${url}/claim`)).json;
  const finalize = (await post(`${url}/finalize`, { fence: claim.fence })).json;
  assert.equal(finalize.outcome, 'finalized');
  const record = (await get(url)).json.record;
  assert.equal(record.expires_at, finalize.finished_at + 3_600);
  // The alarm was set at claim time; it fires, finds the record extended, re-arms, then deletes.
  const deadline = Date.now() + 20_000;
  let stored = record;
  while (stored && Date.now() < deadline) {
    await sleep(500);
    stored = (await get(url)).json.record;
  }
  assert.equal(stored, null, `the record is gone\n${worker.output}`);
  assert.ok(Date.now() >= record.expires_at, 'not before its retention ended');
  await worker.waitForLog((l) => l.route === 'alarm' && l.key === 'evt_retention');
  const expiredLines = worker.logLines().filter((l) => l.route === 'alarm' && l.key === 'evt_retention');
  assert.equal(expiredLines.length, 1, worker.output);
  assert.equal(expiredLines[0].outcome, 'expired');
  // The emptied object deleted its whole storage: its database is back to one empty page.
  const dir = path.join(worker.persistDir, 'v3', 'do', 'webhook-dedup-test-ClaimAuthority');
  const objects = readdirSync(dir).filter((f) => /^[0-9a-f]{64}\.sqlite$/.test(f));
  assert.equal(objects.length, 1);
  // The runtime truncates the file and drops its write-ahead log once the object has closed
  // it, which may take a moment: waited for, not slept on. It may also remove the file
  // altogether (seen once under load: listed, then gone before it was read): nothing is left.
  const size = () => {
    try {
      return statSync(path.join(dir, objects[0])).size;
    } catch (error) {
      if (error.code === 'ENOENT') return 0;
      throw error;
    }
  };
  const emptied = () => size() <= 4096 && !readdirSync(dir).includes(`${objects[0]}-wal`);
  await until(emptied, 5_000, 'the emptied database').catch(() => {});
  assert.ok(size() <= 4096, 'nothing left in its database');
  assert.ok(!readdirSync(dir).includes(`${objects[0]}-wal`), 'no write-ahead log left');
});

test('a claim survives a restart of the runtime (persisted storage)', async (t) => {
  const worker = await startWorker({ vars: BASE_VARS });
  t.after(() => worker.dispose());
  const url = `${worker.url}/_test/claims/evt_restart`;
  const claim = (await post(`${url}/claim`)).json;
  assert.equal(claim.outcome, 'claimed');
  await worker.restart();
  const record = (await get(url)).json.record;
  assert.equal(record.state, 'processing');
  assert.equal(record.fence, claim.fence);
  assert.equal((await post(`${url}/claim`)).json.outcome, 'duplicate_inflight');
  const finalize = (await post(`${url}/finalize`, { fence: claim.fence })).json;
  assert.equal(finalize.outcome, 'finalized', 'the fence still holds after the restart');
});
