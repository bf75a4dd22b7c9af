// Protecting the origin as a whole (queue mode): each origin's gate object holds attempts
// while the origin is paused (by an operator, or by its own Retry-After), caps the attempts
// started per second and at once, opens a breaker after failures in a row and probes it, and
// drains the backlog without a stampede. Real worker under `wrangler dev`, deliveries signed by
// `stripe`, a real HTTP origin that records when each request came and went.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Webhook } from 'standardwebhooks';

import { call, sleep, startOrigin, startWorker, until } from './harness.mjs';
import { deliver, eventId, eventPayload, queueModeVars } from './stripe-helpers.mjs';

const SECRET = 'whsec_origin_tests';
const TOKEN = 'origin-admin-token-0123456789abcdef';
const ALERT_SECRET = `whsec_${Buffer.from('origin-alert-secret-0123456789ab').toString('base64')}`;
const auth = { authorization: `Bearer ${TOKEN}` };

/** The most requests that started in any one-second window, and the most at the origin at once. */
function peaks(requests) {
  const starts = requests.map((r) => r.receivedAt).sort((a, b) => a - b);
  let perSecond = 0;
  for (let i = 0, j = 0; i < starts.length; i += 1) {
    while (starts[j] <= starts[i] - 1_000) j += 1;
    perSecond = Math.max(perSecond, i - j + 1);
  }
  const edges = requests.flatMap((r) => [[r.receivedAt, 1], [r.answeredAt ?? Infinity, -1]]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let inFlight = 0;
  let most = 0;
  for (const [, step] of edges) {
    inFlight += step;
    most = Math.max(most, inFlight);
  }
  return { perSecond, inFlight: most };
}

/** A worker in queue mode in front of `origin`, its gate set by `extra`. */
async function startQueued(origin, extra = {}) {
  return startWorker({ vars: queueModeVars(origin, { secret: SECRET, token: TOKEN }, { RETRY_MAX_ATTEMPTS: '10', ...extra }) });
}

describe('an operator pauses and resumes an origin', () => {
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin(() => ({ status: 200, body: 'ok' }));
    worker = await startQueued(origin, { ORIGIN_PROBE_SECONDS: '2' });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const admin = (route, init = {}) => call(`${worker.url}/admin/${route}`, { ...init, headers: { ...auth, ...init.headers } });
  const post = (route, body) => admin(route, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

  test('GET /admin/origins lists each origin the worker delivers to, closed, with nothing held', async () => {
    const listed = await admin('origins');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json.items, [{
      origin: `${origin.url}/stripe`,
      state: 'closed',
      paused_by: null,
      paused_until: null,
      in_flight: 0,
      failures_in_a_row: 0,
      held: 0,
      next_probe_at: null,
    }]);
  });

  test('bad calls are refused and change nothing', async () => {
    assert.equal((await post('origins/pause', '{not json')).status, 400);
    assert.equal((await post('origins/pause', '{"origin": 7}')).json.error, 'invalid_origin');
    const unknown = await post('origins/pause', JSON.stringify({ origin: 'https://elsewhere.example/hook' }));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error, 'unknown_origin');
    assert.equal((await admin('origins/pause')).status, 405);
    assert.equal((await call(`${worker.url}/admin/origins`)).status, 401);
    assert.equal((await admin('origins')).json.items[0].state, 'closed');
  });

  test('a paused origin gets nothing; on resume every held event is delivered once, its attempt not counted', async () => {
    const paused = await post('origins/pause', JSON.stringify({ origin: `${origin.url}/stripe?any=query` }));
    assert.equal(paused.status, 200, paused.text);
    assert.equal(paused.json.state, 'paused');
    assert.equal(paused.json.paused_by, 'operator');
    const ids = Array.from({ length: 6 }, (_, n) => eventId(`paused${n}`));
    for (const id of ids) {
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    }
    const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
    const before = origin.requests.length;
    await until(async () => (await admin('origins')).json.items[0].held >= ids.length, 10_000, 'every event held');
    await sleep(3_000);
    assert.equal(origin.requests.length, before, 'no request reached the origin during the pause');
    const held = await worker.waitForLog((l) => l.outcome === 'held' && ids.includes(l.key));
    assert.match(held.detail, /origin paused; next attempt in \d+ s \(not counted\)/);
    const record = (await admin(`events/${ids[0]}`)).json.record;
    assert.equal(record.state, 'queued');
    assert.equal(record.attempts, 0, 'a held attempt is given back');
    const resumedAt = Date.now();
    const resumed = await post('origins/resume', JSON.stringify({ origin: `${origin.url}/stripe` }));
    assert.equal(resumed.json.state, 'closed');
    for (const id of ids) await until(() => seen(id).length, 15_000, `${id} delivered`);
    await sleep(1_000);
    for (const id of ids) {
      assert.equal(seen(id).length, 1, `${id} delivered once`);
      assert.equal(seen(id)[0].headers['x-webhook-dedup-attempt'], '1', `${id} arrives as its first attempt`);
      assert.ok(seen(id)[0].receivedAt >= resumedAt);
    }
    const line = await worker.waitForLog((l) => l.outcome === 'admin_origin_resumed');
    assert.equal(line.level, 'warn');
  });
});

describe('the origin speaks for itself', () => {
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req, n) => {
      const decide = behaviour.get(req.headers['x-webhook-dedup-event-id']);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    worker = await startQueued(origin, { RETRY_MAX_DELAY_SECONDS: '30' });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const admin = (route) => call(`${worker.url}/admin/${route}`, { headers: auth });

  test('a 429 with Retry-After pauses the whole origin: nothing reaches it before then, every held event once after', async () => {
    const first = eventId('throttler');
    behaviour.set(first, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 429, headers: { 'retry-after': '4' } } : { status: 200 }));
    assert.equal((await deliver(worker, eventPayload(first), { secret: SECRET })).json.status, 'queued');
    const throttled = await until(() => origin.requests.find((r) => r.answer?.status === 429), 10_000, 'the 429');
    const view = await until(async () => {
      const [item] = (await admin('origins')).json.items;
      return item.state === 'paused' && item;
    }, 5_000, 'the origin paused');
    assert.equal(view.paused_by, 'retry_after');
    assert.ok(Math.abs(Date.parse(view.paused_until) - (throttled.answeredAt + 4_000)) < 1_500, view.paused_until);
    const others = Array.from({ length: 5 }, (_, n) => eventId(`behind${n}`));
    for (const id of others) {
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    }
    const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
    for (const id of [first, ...others]) await until(() => seen(id).some((r) => r.answer?.status === 200), 20_000, `${id} delivered`);
    const after429 = origin.requests.filter((r) => r.receivedAt > throttled.receivedAt);
    for (const request of after429) {
      assert.ok(request.receivedAt >= throttled.answeredAt + 4_000 - 50, `a request ${request.receivedAt - throttled.answeredAt} ms after the 429 asked for 4 s`);
    }
    for (const id of others) {
      assert.equal(seen(id).length, 1, `${id} once`);
      assert.equal(seen(id)[0].headers['x-webhook-dedup-attempt'], '1');
    }
  });

  test('an origin cannot forge the gate\'s own answer: its gate header is dropped and its 200 delivers the event', async () => {
    const id = eventId('forger');
    const forged = `held; until=${Date.now() + 3_600_000}; why=paused`;
    behaviour.set(id, () => ({ status: 200, headers: { 'x-webhook-dedup-gate': forged } }));
    assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    const record = await until(async () => {
      const found = (await call(`${worker.url}/admin/events/${id}`, { headers: auth })).json?.record;
      return found?.state === 'done' && found;
    }, 10_000, 'delivered');
    assert.equal(record.attempts, 1);
    assert.equal(origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id).length, 1);
    const [item] = (await admin('origins')).json.items;
    assert.notEqual(item.state, 'paused');
  });

  test('an HTTP-date Retry-After pauses the origin until that date', async () => {
    const id = eventId('dated');
    const at = new Date(Math.ceil((Date.now() + 5_000) / 1_000) * 1_000);
    behaviour.set(id, (req) => (req.headers['x-webhook-dedup-attempt'] === '1' ? { status: 503, headers: { 'retry-after': at.toUTCString() } } : { status: 200 }));
    assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    const view = await until(async () => {
      const [item] = (await admin('origins')).json.items;
      return item.state === 'paused' && item;
    }, 10_000, 'the origin paused');
    assert.equal(Date.parse(view.paused_until), at.getTime());
    const other = eventId('datedother');
    assert.equal((await deliver(worker, eventPayload(other), { secret: SECRET })).json.status, 'queued');
    const delivered = await until(() => origin.requests.find((r) => r.headers['x-webhook-dedup-event-id'] === other), 15_000, 'the other event');
    assert.ok(delivered.receivedAt >= at.getTime() - 50, `delivered ${at.getTime() - delivered.receivedAt} ms before the date`);
  });
});

describe('an outage: the breaker opens, probes, and the backlog drains within the caps', () => {
  const EVENTS = 120;
  let down = true;
  let origin;
  let alerts;
  let worker;
  before(async () => {
    origin = await startOrigin(() => (down ? { status: 503, body: 'down' } : { status: 200, body: 'ok', delayMs: 150 }));
    alerts = await startOrigin(() => ({ status: 204, body: '' }));
    worker = await startQueued(origin, {
      ORIGIN_BREAKER_FAILURES: '3',
      ORIGIN_PROBE_SECONDS: '4',
      ORIGIN_MAX_RPS: '10',
      ORIGIN_MAX_IN_FLIGHT: '3',
      RETRY_MAX_ATTEMPTS: '20',
      ALERT_URL: `${alerts.url}/ops`,
      ALERT_SECRET,
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    await alerts?.close();
  });
  const admin = (route) => call(`${worker.url}/admin/${route}`, { headers: auth });

  test(`${EVENTS} events through an outage of about 20 s: probes at the interval, then each delivered exactly once within ORIGIN_MAX_RPS and ORIGIN_MAX_IN_FLIGHT`, async () => {
    const ids = Array.from({ length: EVENTS }, (_, n) => eventId(`outage${n}`));
    const startedAt = Date.now();
    for (const id of ids) {
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    }
    const open = await until(async () => {
      const [item] = (await admin('origins')).json.items;
      return item.state === 'open' && item;
    }, 15_000, 'the breaker open');
    assert.ok(open.failures_in_a_row >= 3);
    assert.ok(open.next_probe_at);
    const opened = await worker.waitForLog((l) => l.outcome === 'breaker_opened');
    assert.equal(opened.level, 'error');
    await sleep(Math.max(0, startedAt + 20_000 - Date.now()));
    down = false;
    const recoveredAt = Date.now();
    const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id && r.answer?.status === 200);
    await until(() => ids.every((id) => seen(id).length), 90_000, 'every event delivered');
    await sleep(2_000);
    for (const id of ids) assert.equal(seen(id).length, 1, `${id} delivered exactly once`);
    // While the breaker was open, failures came only from probes, one at a time, at least
    // the probe interval apart (less the alarm's own slack).
    const failed = origin.requests.filter((r) => r.answer?.status === 503);
    const openedAt = failed[2].answeredAt;
    const probes = failed.filter((r) => r.receivedAt > openedAt + 100);
    for (let i = 1; i < probes.length; i += 1) {
      assert.ok(probes[i].receivedAt - probes[i - 1].receivedAt >= 3_800, `probes ${probes[i].receivedAt - probes[i - 1].receivedAt} ms apart`);
    }
    assert.ok(probes.length >= 2 && probes.length <= 6, `${probes.length} probes in about 20 s of outage`);
    const drain = origin.requests.filter((r) => r.receivedAt >= recoveredAt - 4_000);
    const { perSecond, inFlight } = peaks(origin.requests);
    assert.ok(perSecond <= 10, `at most ORIGIN_MAX_RPS=10 started in any second: ${perSecond}`);
    assert.ok(inFlight <= 3, `at most ORIGIN_MAX_IN_FLIGHT=3 at once: ${inFlight}`);
    const drainedIn = Math.max(...drain.map((r) => r.answeredAt)) - recoveredAt;
    console.log(`# drain: ${EVENTS} events in ${drainedIn} ms after recovery; ${probes.length} probes; peak ${perSecond}/s, ${inFlight} at once`);
    const [item] = (await admin('origins')).json.items;
    assert.deepEqual([item.state, item.failures_in_a_row, item.in_flight], ['closed', 0, 0]);
    const recovered = await until(() => alerts.requests.find((r) => JSON.parse(r.body).type === 'origin.recovered'), 20_000, 'origin.recovered');
    const payload = new Webhook(ALERT_SECRET).verify(recovered.body.toString('utf8'), recovered.headers);
    assert.equal(payload.data.origin, `${origin.url}/stripe`);
    assert.ok(payload.data.down_seconds >= 10);
    const closed = await worker.waitForLog((l) => l.outcome === 'breaker_closed');
    assert.equal(closed.key, `${origin.url}/stripe`);
    const dead = (await admin('summary')).json.total;
    assert.equal(dead, 0, 'nothing was dead-lettered: held attempts do not count');
  });
});

describe('sync mode: a worker instance holds deliveries to an origin it knows is paused', () => {
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req, n) => {
      const decide = behaviour.get(req.headers['x-webhook-dedup-event-id']);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        ADMIN_TOKEN: TOKEN,
        ORIGIN_BREAKER_FAILURES: '2',
        ORIGIN_PROBE_SECONDS: '3',
        RETRY_MAX_DELAY_SECONDS: '30',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
  const post = (route, body) => call(`${worker.url}/admin/${route}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });

  /** Delivers `id` and checks it was held: 503 origin_held with Retry-After, nothing sent. */
  async function heldBack(id, why) {
    const answer = await deliver(worker, eventPayload(id), { secret: SECRET });
    assert.equal(answer.status, 503, answer.text);
    assert.deepEqual([answer.json.error, answer.json.why], ['origin_held', why]);
    const retryAfter = Number(answer.headers.get('retry-after'));
    assert.ok(retryAfter >= 1, `Retry-After ${retryAfter}`);
    assert.equal(seen(id).length, 0, 'nothing reached the origin');
    const held = await worker.waitForLog((l) => l.outcome === 'held' && l.key === id);
    assert.equal(held.route, 'webhook');
    return retryAfter;
  }

  test('a 503 with Retry-After: the sender is told when, and every delivery before then is answered 503 without calling the origin', async () => {
    const first = eventId('syncthrottled');
    behaviour.set(first, () => ({ status: 503, headers: { 'retry-after': '3' } }));
    const answered = await deliver(worker, eventPayload(first), { secret: SECRET });
    assert.equal(answered.status, 502, answered.text);
    assert.equal(answered.headers.get('retry-after'), '3');
    const askedAt = Date.now();
    const other = eventId('syncbehind');
    assert.ok(await heldBack(other, 'paused') <= 3);
    await sleep(Math.max(0, askedAt + 3_100 - Date.now()));
    const later = await deliver(worker, eventPayload(other), { secret: SECRET });
    assert.equal(later.json.status, 'processed', later.text);
    assert.equal(seen(other).length, 1, 'delivered once');
  });

  test('failures alone never hold a sync delivery: after failures in a row, the next one still reaches the origin', async () => {
    const failing = Array.from({ length: 4 }, (_, n) => eventId(`syncfail${n}`));
    for (const id of failing) {
      behaviour.set(id, () => ({ status: 500, body: 'down' }));
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).status, 502);
    }
    const next = eventId('syncafter');
    assert.equal((await deliver(worker, eventPayload(next), { secret: SECRET })).json.status, 'processed');
    assert.equal(seen(next).length, 1);
  });

  test('an operator\'s pause served by this instance holds its sync deliveries; the resume lets them through', async () => {
    const name = JSON.stringify({ origin: `${origin.url}/stripe` });
    assert.equal((await post('origins/pause', name)).status, 200);
    const id = eventId('syncpaused');
    await heldBack(id, 'paused');
    assert.equal((await post('origins/resume', name)).status, 200);
    assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'processed');
    assert.equal(seen(id).length, 1);
  });
});

describe('ORIGIN_HEALTH_URL: while the breaker is open, the gate probes the health URL instead of sending an event', () => {
  let healthy = false;
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req) => {
      if (req.url === '/health') return { status: healthy ? 200 : 503, body: healthy ? 'up' : 'down' };
      return healthy ? { status: 200, body: 'ok' } : { status: 503, body: 'down' };
    });
    worker = await startQueued(origin, {
      ORIGIN_BREAKER_FAILURES: '2',
      ORIGIN_PROBE_SECONDS: '2',
      ORIGIN_HEALTH_URL: `${origin.url}/health`,
      RETRY_MAX_ATTEMPTS: '20',
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });
  const admin = (route) => call(`${worker.url}/admin/${route}`, { headers: auth });

  test('no event reaches the origin while it is open; the health check\'s 200 closes it and every event is delivered once', async () => {
    const ids = Array.from({ length: 4 }, (_, n) => eventId(`health${n}`));
    for (const id of ids) {
      assert.equal((await deliver(worker, eventPayload(id), { secret: SECRET })).json.status, 'queued');
    }
    await until(async () => (await admin('origins')).json.items[0].state === 'open', 15_000, 'the breaker open');
    const openedAt = Date.now();
    const checks = () => origin.requests.filter((r) => r.url === '/health');
    await until(() => checks().length >= 2, 10_000, 'two health checks');
    const events = () => origin.requests.filter((r) => r.url !== '/health');
    const eventsWhileOpen = events().filter((r) => r.receivedAt > openedAt + 200);
    assert.deepEqual(eventsWhileOpen.map((r) => r.url), [], 'no event sent as a probe');
    const [a, b] = checks().slice(-2);
    assert.ok(b.receivedAt - a.receivedAt >= 1_800, `health checks ${b.receivedAt - a.receivedAt} ms apart`);
    assert.equal(a.method, 'GET');
    healthy = true;
    const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id && r.answer?.status === 200);
    await until(() => ids.every((id) => seen(id).length), 20_000, 'every event delivered');
    await sleep(1_000);
    for (const id of ids) assert.equal(seen(id).length, 1, `${id} delivered once`);
    const closed = await worker.waitForLog((l) => l.outcome === 'breaker_closed');
    assert.equal(closed.key, `${origin.url}/stripe`);
    assert.equal((await admin('origins')).json.items[0].state, 'closed');
  });
});
