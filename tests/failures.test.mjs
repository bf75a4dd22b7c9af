// The failure index (issue 30): dead letters listed and filtered, bulk redelivery through each
// event's own object, counts, and operational notifications signed as Standard Webhooks and
// verified here with the `standardwebhooks` package. Real worker under `wrangler dev`, real
// origin, GitHub deliveries signed by @octokit/webhooks-methods, Stripe's by `stripe`.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Webhook } from 'standardwebhooks';

import { call, sleep, startOrigin, startWorker, until } from './harness.mjs';
import { deliverAs, deliveryId, standardSecret } from './provider-helpers.mjs';
import { deliver, eventId, eventPayload } from './stripe-helpers.mjs';

const TOKEN = 'failures-admin-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}` };
const GITHUB_SECRET = 'github-failures-secret';
const STRIPE_SECRET = 'whsec_failures_tests';
const ALERT_SECRET = standardSecret('failures-alerts');

describe('the failure index', () => {
  // Which delivery ids the origin fails (500) for now.
  const failing = new Set();
  let origin;
  let alerts;
  // The alert receiver answers 500 to the first notification it sees, so one retry is proved.
  let refusedFirst = false;
  let worker;
  before(async () => {
    origin = await startOrigin((req) => {
      const id = req.headers['x-webhook-dedup-event-id'];
      return failing.has(id) ? { status: 500, body: 'down' } : { status: 200, body: 'ok' };
    });
    alerts = await startOrigin(() => {
      if (!refusedFirst) {
        refusedFirst = true;
        return { status: 500 };
      }
      return { status: 204, body: '' };
    });
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
        ORIGIN_URL: `${origin.url}/hooks`,
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        ADMIN_TOKEN: TOKEN,
        DELIVERY_MODE: 'queue',
        RETRY_BASE_SECONDS: '1',
        RETRY_MAX_DELAY_SECONDS: '1',
        RETRY_MAX_ATTEMPTS: '2',
        LEASE_SECONDS: '8',
        FORWARD_TIMEOUT_MS: '1000',
        LATE_ANSWER_WAIT_SECONDS: '0',
        QUEUE_FORWARD_TIMEOUT_MS: '3000',
        // These tests make many events fail in a row on purpose, to dead-letter them: the
        // origin's breaker would hold them instead (tests/origins.test.mjs tests it).
        ORIGIN_BREAKER_FAILURES: '0',
        ALERT_URL: `${alerts.url}/ops`,
        ALERT_SECRET,
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    await alerts?.close();
  });

  const admin = (route, init = {}) => call(`${worker.url}/admin/${route}`, { ...init, headers: { ...auth, ...init.headers } });
  const inspect = async (provider, id) => (await admin(`deliveries/${provider}/${encodeURIComponent(id)}`)).json?.record;
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
  const notifications = () => alerts.requests.filter((r) => r.answer?.status === 204);
  const indexDir = () => path.join(worker.persistDir, 'v3', 'do', 'webhook-dedup-test-FailureIndex');
  // Sends a GitHub delivery of `event`; with `fail`, the origin fails it from the first attempt.
  const github = async (event, { fail = false } = {}) => {
    const id = deliveryId('github');
    if (fail) failing.add(id);
    const body = JSON.stringify({ action: 'opened', zen: `event ${id}` });
    const answer = await deliverAs(worker, 'github', { id, body, secret: GITHUB_SECRET, event });
    assert.equal(answer.status, 200, answer.text);
    return id;
  };

  // Filled by the dead-letter test, used by the ones after it.
  const dead = { github: [], stripe: null };

  test('a healthy delivery never touches the index', async () => {
    const id = await github('push');
    const stripeId = eventId('healthy');
    assert.equal((await deliver(worker, eventPayload(stripeId), { secret: STRIPE_SECRET })).status, 200);
    await until(async () => (await inspect('github', id))?.state === 'done', 10_000, 'delivered');
    await until(async () => (await inspect('stripe', stripeId))?.state === 'done', 10_000, 'delivered');
    // The runtime may make the class's folder; an object's own database is a file named by its
    // 64-hex id.
    const objects = existsSync(indexDir()) ? readdirSync(indexDir()).filter((name) => /^[0-9a-f]{64}\.sqlite$/.test(name)) : [];
    assert.deepEqual(objects, [], `no failure index object was even made (${existsSync(indexDir()) ? readdirSync(indexDir()) : 'no folder'})`);
    const summary = await admin('summary');
    assert.equal(summary.status, 200);
    assert.deepEqual(summary.json, { total: 0, by_state: { dead: 0, redelivered: 0, recovered: 0, forgotten: 0 }, by_provider: {} });
  });

  test('dead letters are listed newest first, filtered, paged, counted and notified once each', async () => {
    for (const event of ['push', 'issues', 'push']) {
      dead.github.push({ id: await github(event, { fail: true }), event });
    }
    dead.stripe = eventId('deadstripe');
    failing.add(dead.stripe);
    assert.equal((await deliver(worker, eventPayload(dead.stripe, 'invoice.paid'), { secret: STRIPE_SECRET })).status, 200);
    const all = [...dead.github.map((d) => ['github', d.id]), ['stripe', dead.stripe]];
    for (const [provider, id] of all) {
      await until(async () => (await inspect(provider, id))?.state === 'dead', 20_000, `${provider} ${id} dead-lettered`);
    }
    const listed = await until(async () => {
      const answer = await admin('dead-letters');
      return answer.json?.items?.length === 4 && answer;
    }, 10_000, 'the index lists the four dead letters');
    assert.equal(listed.status, 200);
    const items = listed.json.items;
    assert.equal(listed.json.next_cursor, null);
    const times = items.map((item) => Date.parse(item.dead_at));
    assert.deepEqual(times, [...times].sort((a, b) => b - a), 'newest first');
    const push = items.find((item) => item.id === dead.github[0].id);
    assert.equal(push.provider, 'github');
    assert.equal(push.event_type, 'push');
    assert.equal(push.state, 'dead');
    assert.equal(push.attempts, 2);
    assert.equal(push.last_reason, 'origin answered 500');
    assert.ok(Date.parse(push.first_seen_at) <= Date.parse(push.dead_at));
    const stripeItem = items.find((item) => item.id === dead.stripe);
    assert.equal(stripeItem.event_type, 'invoice.paid', 'read from the stored body');

    const githubPush = await admin('dead-letters?provider=github&type=push');
    assert.deepEqual(githubPush.json.items.map((i) => i.id).sort(), [dead.github[0].id, dead.github[2].id].sort());
    const since = new Date(times[1]).toISOString();
    const recent = await admin(`dead-letters?since=${encodeURIComponent(since)}`);
    assert.deepEqual(recent.json.items.map((i) => i.id), items.filter((i) => Date.parse(i.dead_at) >= times[1]).map((i) => i.id));
    const until_ = new Date(times[2]).toISOString();
    const older = await admin(`dead-letters?until=${encodeURIComponent(until_)}`);
    assert.ok(older.json.items.every((i) => Date.parse(i.dead_at) <= times[2]));
    assert.ok(older.json.items.length >= 2);

    // One at a time, by cursor, the same four in the same order.
    const paged = [];
    let cursor = null;
    do {
      const page = await admin(`dead-letters?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(page.status, 200, page.text);
      paged.push(...page.json.items.map((i) => i.id));
      cursor = page.json.next_cursor;
    } while (cursor);
    assert.deepEqual(paged, items.map((i) => i.id));

    const summary = await admin('summary');
    assert.equal(summary.json.total, 4);
    assert.equal(summary.json.by_state.dead, 4);
    assert.equal(summary.json.by_provider.github.dead, 3);
    assert.equal(summary.json.by_provider.stripe.dead, 1);

    // One delivery.dead_lettered per event, signed so the Standard Webhooks library verifies
    // it; the first send was refused (500) and retried with the same webhook-id.
    const deadLetters = await until(() => {
      const found = notifications().filter((r) => JSON.parse(r.body).type === 'delivery.dead_lettered');
      return found.length === 4 && found;
    }, 20_000, 'four dead-letter notifications');
    const hook = new Webhook(ALERT_SECRET);
    for (const request of deadLetters) {
      const payload = hook.verify(request.body.toString('utf8'), request.headers);
      assert.equal(payload.type, 'delivery.dead_lettered');
      assert.ok(['github', 'stripe'].includes(payload.data.provider));
      assert.equal(payload.data.attempts, 2);
      assert.equal(payload.data.last_reason, 'origin answered 500');
      assert.ok(!Number.isNaN(Date.parse(payload.timestamp)));
    }
    assert.deepEqual(deadLetters.map((r) => JSON.parse(r.body).data.id).sort(), all.map(([, id]) => id).sort());
    const refused = alerts.requests.find((r) => r.answer?.status === 500);
    assert.ok(refused, 'one send was refused');
    // The refused send may be any kind (a dead letter, or the origin.failing below, whichever
    // was made first): it comes again after its back-off, with the same webhook-id.
    await until(() => notifications().some((r) => r.headers['webhook-id'] === refused.headers['webhook-id']), 20_000, 'the refused send, sent again with the same webhook-id');
    const ids = deadLetters.map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, 4, 'one webhook-id per transition');

    // Three events failed at one origin within minutes: one origin.failing, no more.
    const failingOrigin = await until(() => notifications().find((r) => JSON.parse(r.body).type === 'origin.failing'), 20_000, 'origin.failing');
    const payload = hook.verify(failingOrigin.body.toString('utf8'), failingOrigin.headers);
    assert.equal(payload.data.origin, origin.url);
    assert.ok(payload.data.failed_events >= 3);
    await sleep(1_000);
    assert.equal(notifications().filter((r) => JSON.parse(r.body).type === 'origin.failing').length, 1, 'at most one per ALERT_MIN_INTERVAL_SECONDS');
  });

  test('bad filters, dates, cursors and limits get 400 with a clear code; nothing is redelivered', async () => {
    const cases = [
      ['provider=paypal', 'invalid_provider'],
      ['type=two%20words', 'invalid_type'],
      ['since=last-friday', 'invalid_time'],
      ['until=2026-12-02', 'invalid_time'],
      ['since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z', 'invalid_range'],
      ['limit=0', 'invalid_limit'],
      ['limit=501', 'invalid_limit'],
      ['cursor=abc', 'invalid_cursor'],
      ['state=lost', 'invalid_state'],
      ['sort=asc', 'unknown_parameter'],
    ];
    const before_ = seen(dead.github[0].id).length;
    for (const [query, code] of cases) {
      for (const [route, method] of [['dead-letters', 'GET'], ['dead-letters/redeliver', 'POST']]) {
        const answer = await admin(`${route}?${query}`, { method });
        assert.equal(answer.status, 400, `${method} ${route}?${query}: ${answer.text}`);
        assert.equal(answer.json.error, code, query);
        assert.ok(answer.json.detail.length > 10, 'in words');
      }
    }
    assert.equal((await admin('dead-letters', { method: 'POST' })).status, 405);
    assert.equal((await admin('dead-letters/redeliver')).status, 405);
    const anonymous = await call(`${worker.url}/admin/dead-letters`);
    assert.equal(anonymous.status, 401);
    assert.equal((await call(`${worker.url}/admin/summary`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401);
    await sleep(1_500);
    assert.equal(seen(dead.github[0].id).length, before_, 'nothing was redelivered');
    assert.equal((await inspect('github', dead.github[0].id)).state, 'dead');
  });

  test('bulk redelivery goes through each event\'s object, is safe to repeat, and recoveries are indexed and notified', async () => {
    for (const { id } of dead.github) failing.delete(id);
    const attemptsBefore = new Map(dead.github.map(({ id }) => [id, seen(id).length]));
    const first = await admin('dead-letters/redeliver?provider=github', { method: 'POST' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.redelivered, 3);
    assert.deepEqual(first.json.skipped, []);
    assert.equal(first.json.next_cursor, null);
    // At once again: each event's object refuses what is already under way, or the index no
    // longer lists it as dead; nothing runs twice.
    const again = await admin('dead-letters/redeliver?provider=github', { method: 'POST' });
    assert.equal(again.status, 200, again.text);
    for (const { id } of dead.github) {
      await until(async () => (await inspect('github', id))?.state === 'done', 20_000, `${id} delivered`);
    }
    await sleep(1_500);
    for (const { id } of dead.github) {
      assert.equal(seen(id).length - attemptsBefore.get(id), 1, `${id} ran exactly once after the redelivery`);
    }
    const recovered = await until(async () => {
      const answer = await admin('dead-letters?provider=github&state=recovered');
      return answer.json?.items?.length === 3 && answer;
    }, 10_000, 'three recovered entries');
    const timeline = recovered.json.items[0].history.map((h) => h.transition);
    assert.deepEqual(timeline, ['dead_lettered', 'redelivered', 'recovered']);
    const notes = await until(() => {
      const found = notifications().filter((r) => JSON.parse(r.body).type === 'delivery.recovered');
      return found.length === 3 && found;
    }, 20_000, 'three recovery notifications');
    const hook = new Webhook(ALERT_SECRET);
    for (const request of notes) hook.verify(request.body.toString('utf8'), request.headers);
    const thrice = await admin('dead-letters/redeliver?provider=github', { method: 'POST' });
    assert.deepEqual(thrice.json, { redelivered: 0, skipped: [], next_cursor: null }, 'no dead GitHub letter is left');
    const summary = await admin('summary');
    assert.equal(summary.json.by_provider.github.recovered, 3);
    assert.equal(summary.json.by_provider.stripe.dead, 1);
  });

  test('forgetting a dead event marks it forgotten; a bulk redelivery skips what cannot be redelivered, saying why', async () => {
    const forgotten = await admin(`events/${dead.stripe}`, { method: 'DELETE' });
    assert.equal(forgotten.status, 200, forgotten.text);
    const entry = await until(async () => {
      const answer = await admin('dead-letters?provider=stripe');
      return answer.json?.items?.[0]?.state === 'forgotten' && answer.json.items[0];
    }, 5_000, 'the entry forgotten');
    assert.equal(entry.id, dead.stripe);
    assert.equal((await admin('summary')).json.by_provider.stripe.forgotten, 1);

    // A dead letter whose redelivery is refused by its object: one whose handler is under way.
    const slowId = await github('deployment', { fail: true });
    await until(async () => (await inspect('github', slowId))?.state === 'dead', 20_000, 'dead');
    await until(async () => (await admin('dead-letters?state=dead&provider=github')).json?.items?.length === 1, 10_000, 'indexed');
    failing.delete(slowId);
    const redelivered = await admin(`deliveries/github/${slowId}/redeliver`, { method: 'POST' });
    assert.equal(redelivered.status, 200);
    await until(async () => (await inspect('github', slowId))?.state === 'done', 20_000, 'delivered');
    // The index may still say dead if its report is on its way; either way a bulk call runs
    // nothing twice.
    const bulk = await admin('dead-letters/redeliver?provider=github', { method: 'POST' });
    assert.equal(bulk.status, 200);
    for (const skipped of bulk.json.skipped) assert.ok(['no_body', 'lease_live'].includes(skipped.reason), JSON.stringify(skipped));
    await sleep(1_000);
    assert.equal(seen(slowId).filter((r) => r.answer.status === 200).length, 1);
  });
});

test('sync mode: failures the sender was told of in time still count against the origin, one origin.failing', async (t) => {
  const origin = await startOrigin(() => ({ status: 500, body: 'down' }));
  const alerts = await startOrigin(() => ({ status: 204, body: '' }));
  const worker = await startWorker({
    vars: {
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      ORIGIN_URL: `${origin.url}/hooks`,
      ADMIN_TOKEN: TOKEN,
      ALERT_URL: `${alerts.url}/ops`,
      ALERT_SECRET,
    },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
    await alerts.close();
  });
  for (const n of [1, 2, 3]) {
    const answer = await deliver(worker, eventPayload(eventId(`syncfail${n}`)), { secret: STRIPE_SECRET });
    assert.ok(answer.status >= 500, `the sender is told of the failure (${answer.status})`);
  }
  const failing = await until(() => alerts.requests.find((r) => JSON.parse(r.body).type === 'origin.failing'), 20_000, 'origin.failing');
  const payload = new Webhook(ALERT_SECRET).verify(failing.body.toString('utf8'), failing.headers);
  assert.equal(payload.data.origin, origin.url);
  assert.equal(payload.data.failed_events, 3);
  await sleep(1_000);
  assert.equal(alerts.requests.filter((r) => JSON.parse(r.body).type === 'origin.failing').length, 1);
  // A sync failure is the sender's to retry: nothing is dead, nothing else is notified.
  const summary = await call(`${worker.url}/admin/summary`, { headers: auth });
  assert.equal(summary.json.total, 0);
  assert.deepEqual(alerts.requests.map((r) => JSON.parse(r.body).type), ['origin.failing']);
});
