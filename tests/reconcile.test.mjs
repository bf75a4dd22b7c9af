// Reconciliation: the worker lists the sender's own record of what it sent (Stripe's events,
// GitHub's delivery log of one hook) and heals what never reached it, each event through the
// same claim as a delivery, so nothing runs twice. Real worker under `wrangler dev`; local
// fakes of Stripe's `GET /v1/events` and GitHub's delivery log (tests/fakes/), written from
// their API references; Stripe deliveries signed by the `stripe` package, GitHub's by
// `@octokit/webhooks-methods`; a real HTTP origin that records what it receives.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { call, sleep, startOrigin, startWorker, storageDump, until } from './harness.mjs';
import { startGithubApi } from './fakes/github-api.mjs';
import { startStripeApi, stripeEventId } from './fakes/stripe-api.mjs';
import { handlerVerifies } from './provider-helpers.mjs';
import { deliver, eventPayload, queueModeVars, stripe } from './stripe-helpers.mjs';

const SECRET = 'whsec_reconcile_tests_secret';
const KEY = 'sk_test_reconcile_0123456789abcdef';
const TOKEN = 'reconcile-admin-token-0123456789abcdef';
const GITHUB_SECRET = 'reconcile-github-webhook-secret';
const GITHUB_TOKEN = 'ghp_reconcileFakeToken0123456789abcdef';
const HOOK = 'repos/acme/shop/hooks/42';
const auth = { authorization: `Bearer ${TOKEN}` };
const HOUR = 3_600;

const nowSeconds = () => Math.floor(Date.now() / 1000);
const iso = (seconds) => new Date(seconds * 1000).toISOString();

/** POST /admin/reconcile with `body` (an object, or raw text as is). */
function reconcile(worker, body, headers = auth) {
  return call(`${worker.url}/admin/reconcile`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * Calls reconcile with `first`, then with each answer's `next_cursor` (and `first`'s provider)
 * until it is null; every answer, in order. At most `max` calls.
 */
async function drain(worker, first, max = 20) {
  const answers = [await reconcile(worker, first)];
  for (;;) {
    const last = answers.at(-1);
    assert.equal(last.status, 200, last.text);
    if (last.json.next_cursor === null) return answers;
    assert.equal(typeof last.json.next_cursor, 'string', last.text);
    assert.ok(answers.length < max, `still a next_cursor after ${max} calls`);
    answers.push(await reconcile(worker, { provider: first.provider, cursor: last.json.next_cursor }));
  }
}

/**
 * What the worker's objects hold: every stored row but the local runtime's own note of each
 * object's name, which it writes when an object first starts, whether or not the worker writes
 * anything (a dry run reads each listed event's claim).
 */
const held = (dir) => storageDump(dir).split('\n').filter((row) => row && !row.includes(' __miniflare_do_name ')).join('\n');

const total = (answers, field) => answers.reduce((sum, answer) => sum + (answer.json[field] ?? 0), 0);

/**
 * Windows of Stripe's log, one per test, an hour long each and three hours apart, further back
 * each time: the tests share one fake and one worker, and each reconciles only its own window.
 */
function windows() {
  const start = nowSeconds();
  let n = 0;
  return () => {
    n += 1;
    const until = start - n * 3 * HOUR;
    return { since: until - HOUR, until };
  };
}

/** `count` undelivered events created inside `window`, newest first, stored in `api`. */
function missed(api, window, count, label) {
  return Array.from({ length: count }, (_, i) => api.add({
    id: stripeEventId(label),
    created: window.until - 1 - Math.floor((i * (HOUR - 2)) / Math.max(count, 1)),
  }));
}

/** The body of a reconcile call over `window`. */
const over = (window, extra = {}) => ({ provider: 'stripe', since: iso(window.since), until: iso(window.until), ...extra });

describe('Stripe reconciliation, sync mode', () => {
  const behaviour = new Map();
  let origin;
  let api;
  let worker;
  const nextWindow = windows();
  before(async () => {
    origin = await startOrigin((req, n) => {
      const decide = behaviour.get(req.headers['x-webhook-dedup-event-id']);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    api = await startStripeApi({ key: KEY });
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        ADMIN_TOKEN: TOKEN,
        STRIPE_API_KEY: KEY,
        STRIPE_API_BASE_URL: api.url,
        FORWARD_TIMEOUT_MS: '5000',
        LATE_ANSWER_WAIT_SECONDS: '0',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await api?.close();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('missed events are delivered once each, with a Stripe-Signature the handler verifies; a later real delivery is a duplicate', async () => {
    const window = nextWindow();
    const events = missed(api, window, 3, 'missed');
    const deliveredByStripe = api.add({ id: stripeEventId('stripeok'), created: window.until - 10, delivered: true });
    const asked = api.requests.length;
    const answer = await reconcile(worker, over(window));
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.provider, 'stripe');
    assert.equal(Date.parse(answer.json.since), window.since * 1000);
    assert.equal(Date.parse(answer.json.until), window.until * 1000);
    assert.equal(answer.json.dry_run, false);
    assert.deepEqual(
      [answer.json.listed, answer.json.already_done, answer.json.in_flight, answer.json.dead, answer.json.delivered],
      [3, 0, 0, 0, 3],
      answer.text,
    );
    assert.equal(answer.json.queued, undefined, 'sync mode counts delivered, not queued');
    assert.deepEqual(answer.json.errors, []);
    assert.equal(answer.json.next_cursor, null);
    // What the worker asked Stripe: the window, in whole seconds, under its key.
    const [list] = api.listRequests().filter((r) => api.requests.indexOf(r) >= asked);
    assert.equal(list.headers.authorization, `Bearer ${KEY}`);
    assert.equal(list.query.get('created[gte]'), String(window.since));
    assert.equal(list.query.get('created[lte]'), String(window.until));
    assert.ok(Number(list.query.get('limit') ?? 10) <= 100);
    for (const event of events) {
      const [forwarded, ...more] = seen(event.id);
      assert.ok(forwarded, `${event.id} reached the origin`);
      assert.equal(more.length, 0, `${event.id} reached it once`);
      assert.equal(forwarded.method, 'POST');
      assert.equal(forwarded.url, '/stripe');
      assert.equal(forwarded.headers['x-webhook-dedup-source'], 'reconcile');
      const verified = stripe.webhooks.constructEvent(forwarded.body, forwarded.headers['stripe-signature'], SECRET);
      assert.equal(verified.id, event.id);
      assert.equal(verified.type, event.type);
      assert.equal(verified.delivered, undefined);
      const t = Number(forwarded.headers['stripe-signature'].match(/t=(\d+)/)[1]);
      assert.ok(Math.abs(t - nowSeconds()) <= 60, 'a fresh signature, not one from the event\'s time');
    }
    assert.equal(seen(deliveredByStripe.id).length, 0, 'an event Stripe delivered is not reconciled');
    // Stripe's own retry, arriving later, finds it done.
    const before = origin.requests.length;
    const late = await deliver(worker, JSON.stringify(events[0]), { secret: SECRET });
    assert.equal(late.status, 200, late.text);
    assert.deepEqual(late.json, { status: 'duplicate' });
    assert.equal(origin.requests.length, before);
  });

  test('an event already done is not run again, and a second run changes nothing', async () => {
    const window = nextWindow();
    const [done, lost] = missed(api, window, 2, 'done');
    // Delivered for real (Stripe's record still says pending: its answer may have been lost).
    const first = await deliver(worker, JSON.stringify(done), { secret: SECRET });
    assert.equal(first.json.status, 'processed', first.text);
    assert.equal(seen(done.id).length, 1);
    const answer = await reconcile(worker, over(window));
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual([answer.json.listed, answer.json.already_done, answer.json.delivered], [2, 1, 1], answer.text);
    assert.equal(seen(done.id).length, 1, 'the done event is not forwarded again');
    assert.equal(seen(lost.id).length, 1);
    assert.equal(seen(lost.id)[0].headers['x-webhook-dedup-source'], 'reconcile');
    const before = origin.requests.length;
    const again = await reconcile(worker, over(window));
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(
      [again.json.listed, again.json.already_done, again.json.in_flight, again.json.dead, again.json.delivered],
      [2, 2, 0, 0, 0],
      again.text,
    );
    assert.deepEqual(again.json.errors, []);
    assert.equal(origin.requests.length, before, 'the second run forwarded nothing');
  });

  test('a dry run counts what a run would do, and forwards and stores nothing; a real run then delivers', async () => {
    const window = nextWindow();
    const events = missed(api, window, 2, 'dry');
    const stored = held(worker.persistDir);
    const forwarded = origin.requests.length;
    const asked = api.listRequests().length;
    const dry = await reconcile(worker, over(window, { dry_run: true }));
    assert.equal(dry.status, 200, dry.text);
    assert.equal(dry.json.dry_run, true);
    assert.deepEqual([dry.json.listed, dry.json.already_done, dry.json.delivered], [2, 0, 2], dry.text);
    assert.ok(api.listRequests().length > asked, 'a dry run still reads Stripe\'s list');
    assert.equal(origin.requests.length, forwarded, 'nothing forwarded');
    assert.equal(held(worker.persistDir), stored, 'nothing stored');
    const real = await reconcile(worker, over(window));
    assert.deepEqual([real.json.dry_run, real.json.listed, real.json.delivered], [false, 2, 2], real.text);
    for (const event of events) assert.equal(seen(event.id).length, 1);
  });

  test('more events than a page: next_cursor pages through them all, each delivered once', async () => {
    const window = nextWindow();
    const events = missed(api, window, 150, 'page');
    const asked = api.listRequests().length;
    const answers = await drain(worker, over(window));
    assert.ok(answers.length >= 2, `${answers.length} calls for 150 events`);
    for (const answer of answers.slice(0, -1)) {
      assert.equal(typeof answer.json.next_cursor, 'string');
      assert.deepEqual(answer.json.errors, []);
    }
    assert.equal(total(answers, 'listed'), 150);
    assert.equal(total(answers, 'delivered'), 150);
    assert.equal(total(answers, 'already_done'), 0);
    for (const event of events) assert.equal(seen(event.id).length, 1, `${event.id} once`);
    // Each page starts after the last event of the one before, in Stripe's own cursor.
    const lists = api.listRequests().slice(asked);
    assert.equal(lists.length, answers.length, 'one page of Stripe\'s list per call');
    assert.equal(lists[0].query.get('starting_after'), null);
    for (let i = 0; i < lists.length; i += 1) {
      const limit = Number(lists[i].query.get('limit') ?? 10);
      assert.ok(limit >= 1 && limit <= 100, `limit ${limit}`);
      assert.equal(lists[i].query.get('created[gte]'), String(window.since), 'the cursor keeps the window');
      assert.equal(lists[i].query.get('created[lte]'), String(window.until));
      if (i > 0) assert.equal(lists[i].query.get('starting_after'), lists[i - 1].served.at(-1));
    }
  });

  for (const fault of [
    { name: 'a 429', set: (fake) => fake.failNext(1, { status: 429, retryAfter: 7 }), error: { code: 'sender_rate_limited', retry_after_seconds: 7 } },
    { name: 'a 500', set: (fake) => fake.failAt(1, { status: 500 }), error: { code: 'sender_failed', status: 500 } },
  ]) {
    test(`${fault.name} from Stripe mid-way: that call says so and gives a cursor; what was handed over stays; resuming delivers the rest once`, async () => {
      const window = nextWindow();
      const events = missed(api, window, 120, `fault${fault.error.status ?? 429}`);
      const first = await reconcile(worker, over(window));
      assert.equal(first.status, 200, first.text);
      assert.equal(typeof first.json.next_cursor, 'string', first.text);
      const handed = first.json.delivered;
      assert.ok(handed > 0 && handed < 120, first.text);
      fault.set(api);
      const failedAt = api.requests.length;
      const failed = await reconcile(worker, { provider: 'stripe', cursor: first.json.next_cursor });
      assert.equal(failed.status, 200, failed.text);
      assert.equal(api.requests[failedAt]?.fault?.status, fault.error.status ?? 429, 'the fault was met');
      assert.equal(failed.json.errors.length, 1, failed.text);
      assert.deepEqual(
        Object.fromEntries(Object.keys(fault.error).map((k) => [k, failed.json.errors[0][k]])),
        fault.error,
        failed.text,
      );
      assert.equal(typeof failed.json.errors[0].detail, 'string');
      assert.equal(failed.json.delivered, 0);
      assert.equal(typeof failed.json.next_cursor, 'string', 'a cursor to resume from');
      const delivered = events.filter((e) => seen(e.id).length).map((e) => e.id);
      assert.equal(delivered.length, handed, 'what was handed over before the fault stays');
      const resumedAt = api.listRequests().length;
      const rest = await drain(worker, { provider: 'stripe', cursor: failed.json.next_cursor });
      const resumed = api.listRequests()[resumedAt];
      assert.equal(resumed.query.get('starting_after'), api.listRequests()[resumedAt - 2].served.at(-1),
        'the resumed page starts where the list stopped');
      assert.equal(handed + total(rest, 'delivered'), 120);
      assert.equal(total(rest, 'already_done'), 0, 'nothing listed twice');
      for (const event of events) assert.equal(seen(event.id).length, 1, `${event.id} once`);
    });
  }

  test('a key Stripe refuses: 502 sender_refused_key, naming Stripe and its status; nothing forwarded', async () => {
    const window = nextWindow();
    const [event] = missed(api, window, 1, 'refused');
    const forwarded = origin.requests.length;
    api.setKey('sk_test_rolled_0123456789abcdef');
    try {
      const answer = await reconcile(worker, over(window));
      assert.equal(answer.status, 502, answer.text);
      assert.equal(answer.json.error, 'sender_refused_key');
      assert.match(answer.json.detail, /Stripe/);
      assert.match(answer.json.detail, /401/);
      assert.doesNotMatch(answer.text, new RegExp(KEY), 'the key is not repeated');
      assert.ok(!worker.output.includes(KEY), 'nor written to the log');
    } finally {
      api.setKey(KEY);
    }
    assert.equal(origin.requests.length, forwarded);
    assert.equal(seen(event.id).length, 0);
  });

  test('every bad call is refused with its code, writing nothing and asking Stripe nothing', async () => {
    const window = nextWindow();
    missed(api, window, 1, 'bad');
    const now = nowSeconds();
    const stored = storageDump(worker.persistDir);
    const forwarded = origin.requests.length;
    const asked = api.requests.length;
    const unauthorised = [
      await reconcile(worker, over(window), {}),
      await reconcile(worker, over(window), { authorization: 'Bearer not-the-admin-token-0123456789' }),
      await reconcile(worker, over(window), { authorization: TOKEN }),
      await call(`${worker.url}/admin/reconcile`),
    ];
    for (const answer of unauthorised) assert.equal(answer.status, 401, answer.text);
    const cases = [
      ['{not json', 'invalid_json'],
      ['[]', 'invalid_json'],
      ['"stripe"', 'invalid_json'],
      ['null', 'invalid_json'],
      [{ provider: 'paypal' }, 'unknown_provider'],
      [{ provider: 'shopify' }, 'unknown_provider'],
      [{}, 'unknown_provider'],
      [{ provider: 'stripe', since: 'yesterday' }, 'invalid_time'],
      [{ provider: 'stripe', since: iso(now - HOUR).replace('T', ' at ') }, 'invalid_time'],
      [{ provider: 'stripe', until: '2026-13-01T00:00:00Z' }, 'invalid_time'],
      [{ provider: 'stripe', until: now }, 'invalid_time'],
      [{ provider: 'stripe', since: iso(now - HOUR), until: iso(now - 2 * HOUR) }, 'until_before_since'],
      [{ provider: 'stripe', since: iso(now - 721 * HOUR) }, 'since_too_old'],
      [{ provider: 'stripe', cursor: 'not-a-cursor' }, 'invalid_cursor'],
      [{ provider: 'stripe', cursor: Buffer.from(JSON.stringify({ provider: 'stripe', since: 0, until: 1 })).toString('base64url') }, 'invalid_cursor'],
      [{ provider: 'stripe', dry_run: 'yes' }, 'invalid_field'],
      [{ provider: 'stripe', dry_run: 1 }, 'invalid_field'],
      [{ provider: 'github' }, 'reconcile_off'],
    ];
    for (const [body, code] of cases) {
      const answer = await reconcile(worker, body);
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
      assert.equal(answer.json?.error, code, `${JSON.stringify(body)}: ${answer.text}`);
    }
    assert.equal(api.requests.length, asked, 'Stripe was asked nothing');
    assert.equal(origin.requests.length, forwarded, 'nothing forwarded');
    assert.equal(storageDump(worker.persistDir), stored, 'nothing written');
  });

  test('a reconciled event racing its own real delivery, the origin slow: the origin runs it once', async () => {
    const window = nextWindow();
    const [event] = missed(api, window, 1, 'race');
    behaviour.set(event.id, () => ({ status: 200, body: 'ok', delayMs: 1_500 }));
    const [run, real] = await Promise.all([
      reconcile(worker, over(window)),
      deliver(worker, eventPayload(event.id), { secret: SECRET }),
    ]);
    assert.equal(run.status, 200, run.text);
    assert.equal(run.json.listed, 1, run.text);
    assert.equal(run.json.delivered + run.json.in_flight + run.json.already_done, 1, run.text);
    assert.ok(real.json?.status === 'processed' || real.json?.status === 'duplicate'
      || (real.status === 409 && real.json?.error === 'in_flight'), `${real.status} ${real.text}`);
    assert.ok(run.json.delivered === 1 || real.json?.status === 'processed', `one of them ran it:\n${run.text}\n${real.text}`);
    await sleep(2_000);
    assert.equal(seen(event.id).length, 1, 'the origin ran it once');
    const later = await deliver(worker, eventPayload(event.id), { secret: SECRET });
    assert.deepEqual(later.json, { status: 'duplicate' });
    const again = await reconcile(worker, over(window));
    assert.deepEqual([again.json.already_done, again.json.delivered], [1, 0], again.text);
    assert.equal(seen(event.id).length, 1);
  });
});

describe('Stripe reconciliation, queue mode', () => {
  let origin;
  let api;
  let worker;
  const nextWindow = windows();
  before(async () => {
    origin = await startOrigin(() => ({ status: 200, body: 'ok' }));
    api = await startStripeApi({ key: KEY });
    worker = await startWorker({
      vars: queueModeVars(origin, { secret: SECRET, token: TOKEN }, { STRIPE_API_KEY: KEY, STRIPE_API_BASE_URL: api.url }),
    });
  });
  after(async () => {
    await worker?.dispose();
    await api?.close();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('missed events are queued, then delivered once each by the worker, signed afresh', async () => {
    const window = nextWindow();
    const events = missed(api, window, 3, 'queued');
    const answer = await reconcile(worker, over(window));
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual([answer.json.listed, answer.json.already_done, answer.json.queued], [3, 0, 3], answer.text);
    assert.equal(answer.json.delivered, undefined, 'queue mode counts queued, not delivered');
    assert.deepEqual(answer.json.errors, []);
    assert.equal(answer.json.next_cursor, null);
    for (const event of events) await until(() => seen(event.id).length, 15_000, `${event.id} delivered`);
    await sleep(1_000);
    for (const event of events) {
      assert.equal(seen(event.id).length, 1, `${event.id} once`);
      const [forwarded] = seen(event.id);
      assert.equal(forwarded.headers['x-webhook-dedup-source'], 'reconcile');
      assert.equal(stripe.webhooks.constructEvent(forwarded.body, forwarded.headers['stripe-signature'], SECRET).id, event.id);
    }
    const late = await deliver(worker, JSON.stringify(events[1]), { secret: SECRET });
    assert.deepEqual(late.json, { status: 'duplicate' });
    const again = await reconcile(worker, over(window));
    assert.deepEqual([again.json.already_done, again.json.queued], [3, 0], again.text);
    await sleep(500);
    for (const event of events) assert.equal(seen(event.id).length, 1);
  });

  test('a dry run in queue mode counts queued and queues nothing', async () => {
    const window = nextWindow();
    const events = missed(api, window, 2, 'qdry');
    const stored = held(worker.persistDir);
    const dry = await reconcile(worker, over(window, { dry_run: true }));
    assert.deepEqual([dry.status, dry.json.dry_run, dry.json.queued], [200, true, 2], dry.text);
    await sleep(1_500);
    for (const event of events) assert.equal(seen(event.id).length, 0);
    assert.equal(held(worker.persistDir), stored, 'nothing stored');
  });
});

describe('GitHub reconciliation: failed deliveries redelivered through GitHub', () => {
  let origin;
  let stripeApi;
  let github;
  let worker;
  before(async () => {
    origin = await startOrigin(() => ({ status: 200, body: 'ok' }));
    stripeApi = await startStripeApi({ key: KEY });
    github = await startGithubApi({ token: GITHUB_TOKEN, hook: HOOK, webhookSecret: GITHUB_SECRET });
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        ADMIN_TOKEN: TOKEN,
        STRIPE_API_KEY: KEY,
        STRIPE_API_BASE_URL: stripeApi.url,
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        GITHUB_ORIGIN_URL: `${origin.url}/github`,
        GITHUB_DELIVERY_MODE: 'sync',
        GITHUB_API_TOKEN: GITHUB_TOKEN,
        GITHUB_API_BASE_URL: github.url,
        GITHUB_HOOK: HOOK,
        FORWARD_TIMEOUT_MS: '5000',
        LATE_ANSWER_WAIT_SECONDS: '0',
      },
    });
    github.deliverTo = `${worker.url}/webhooks/github`;
  });
  after(async () => {
    await worker?.dispose();
    await github?.close();
    await stripeApi?.close();
    await origin?.close();
  });
  const seen = (guid) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === guid
    && r.headers['x-webhook-dedup-provider'] === 'github');
  const issue = (action, n) => ({ action, issue: { number: n, title: `issue ${n}` }, repository: { id: 1, full_name: 'acme/shop' }, sender: { login: 'octocat' } });

  test('failed deliveries never stored are redelivered, once; OK ones and stored ones are not asked for', async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const ok = await github.deliver('issues', issue('opened', 1));
    assert.equal(ok.status, 'OK', 'the worker took the first delivery');
    const down = await github.deliver('issues', issue('closed', 2), { send: false, failure: 503 });
    const unreachable = await github.deliver('push', { ref: 'refs/heads/main', after: 'abc123', repository: { id: 1 } }, { send: false, failure: 'connect' });
    assert.equal(unreachable.status_code, 0);
    // The worker stored and forwarded this one, but GitHub gave up waiting for its answer.
    const storedButFailed = await github.deliver('issues', issue('edited', 3), { recordAs: 'timeout' });
    assert.equal(storedButFailed.status, 'timed out');
    assert.equal(seen(storedButFailed.guid).length, 1);
    const forwarded = origin.requests.length;

    const answer = await reconcile(worker, { provider: 'github', since });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.provider, 'github');
    assert.deepEqual(
      [answer.json.listed, answer.json.skipped, answer.json.already_done, answer.json.redelivery_requested],
      [4, 1, 1, 2],
      answer.text,
    );
    assert.deepEqual(answer.json.errors, []);
    assert.equal(answer.json.next_cursor, null);
    const asked = github.redeliveryRequests();
    assert.deepEqual(asked.map((r) => r.path).sort(), [
      `/${HOOK}/deliveries/${down.id}/attempts`,
      `/${HOOK}/deliveries/${unreachable.id}/attempts`,
    ].sort());
    for (const request of [...asked, ...github.listRequests()]) assert.equal(request.headers.authorization, `Bearer ${GITHUB_TOKEN}`);
    // GitHub redelivers them through the webhook door, signed by GitHub, under the same GUID.
    for (const item of [down, unreachable]) {
      await until(() => github.attempts(item.guid).length === 2, 10_000, `${item.guid} redelivered`);
      const [, again] = github.attempts(item.guid);
      assert.deepEqual([again.redelivery, again.status], [true, 'OK']);
      assert.equal(seen(item.guid).length, 1, `${item.guid} reached the origin once`);
      assert.ok(await handlerVerifies('github', seen(item.guid)[0], GITHUB_SECRET));
    }
    assert.equal(seen(ok.guid).length, 1);
    assert.equal(seen(storedButFailed.guid).length, 1);
    assert.equal(origin.requests.length, forwarded + 2);

    // A second run: the newest attempt of each delivery decides. The two redeliveries are OK,
    // so they and the failed attempts before them are skipped; the one stored here is counted
    // by its record. Nothing is asked of GitHub.
    const again = await reconcile(worker, { provider: 'github', since });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(
      [again.json.listed, again.json.redelivery_requested, again.json.already_done, again.json.skipped],
      [6, 0, 1, 5],
      again.text,
    );
    assert.equal(github.redeliveryRequests().length, 2);
    assert.equal(origin.requests.length, forwarded + 2);
  });

  test('a dry run asks GitHub for no redelivery', async () => {
    const since = new Date(Date.now() - 5_000).toISOString();
    const down = await github.deliver('issues', issue('reopened', 4), { send: false });
    const asked = github.redeliveryRequests().length;
    const dry = await reconcile(worker, { provider: 'github', since, dry_run: true });
    assert.equal(dry.status, 200, dry.text);
    assert.deepEqual([dry.json.dry_run, dry.json.redelivery_requested], [true, 1], dry.text);
    await sleep(500);
    assert.equal(github.redeliveryRequests().length, asked);
    assert.equal(github.attempts(down.guid).length, 1);
    const real = await reconcile(worker, { provider: 'github', since });
    assert.equal(real.json.redelivery_requested, 1, real.text);
    await until(() => seen(down.guid).length, 10_000, 'the redelivery');
  });

  test('a token GitHub refuses: 502 sender_refused_key naming GitHub and its status', async () => {
    github.setToken('ghp_rotated0123456789');
    try {
      const answer = await reconcile(worker, { provider: 'github' });
      assert.equal(answer.status, 502, answer.text);
      assert.equal(answer.json.error, 'sender_refused_key');
      assert.match(answer.json.detail, /GitHub/);
      assert.match(answer.json.detail, /401/);
      assert.doesNotMatch(answer.text, new RegExp(GITHUB_TOKEN));
    } finally {
      github.setToken(GITHUB_TOKEN);
    }
  });

  test('a 429 from GitHub: 200, the wait it asked for, and a cursor that resumes', async () => {
    const asked = github.redeliveryRequests().length;
    github.failNext(1, { status: 429, retryAfter: 30 });
    const limited = await reconcile(worker, { provider: 'github' });
    assert.equal(limited.status, 200, limited.text);
    assert.equal(limited.json.errors.length, 1, limited.text);
    assert.equal(limited.json.errors[0].code, 'sender_rate_limited');
    assert.equal(limited.json.errors[0].retry_after_seconds, 30);
    assert.equal(typeof limited.json.next_cursor, 'string');
    assert.equal(github.redeliveryRequests().length, asked);
    const resumed = await drain(worker, { provider: 'github', cursor: limited.json.next_cursor });
    for (const answer of resumed) assert.deepEqual(answer.json.errors, [], answer.text);
  });

  test('a 500 from GitHub: 200 with sender_failed and its status, and a cursor', async () => {
    github.failAt(1, { status: 500 });
    const failed = await reconcile(worker, { provider: 'github' });
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.json.errors[0]?.code, 'sender_failed', failed.text);
    assert.equal(failed.json.errors[0].status, 500);
    assert.equal(typeof failed.json.next_cursor, 'string');
  });

  test('GitHub\'s own refusals: since older than GitHub keeps, a cursor of another provider, and the fakes untouched', async () => {
    // A Stripe cursor, as a Stripe call met by a 429 hands one back.
    stripeApi.failNext(1, { status: 429, retryAfter: 1 });
    const stripeCall = await reconcile(worker, { provider: 'stripe' });
    assert.equal(typeof stripeCall.json.next_cursor, 'string', stripeCall.text);
    const stored = storageDump(worker.persistDir);
    const askedGithub = github.requests.length;
    const askedStripe = stripeApi.requests.length;
    const forwarded = origin.requests.length;
    const now = nowSeconds();
    const cases = [
      [{ provider: 'github', since: iso(now - 73 * HOUR) }, 'since_too_old'],
      [{ provider: 'github', cursor: stripeCall.json.next_cursor }, 'invalid_cursor'],
      [{ provider: 'github', cursor: 'garbage' }, 'invalid_cursor'],
      [{ provider: 'github', dry_run: 'false' }, 'invalid_field'],
    ];
    for (const [body, code] of cases) {
      const answer = await reconcile(worker, body);
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
      assert.equal(answer.json?.error, code, `${JSON.stringify(body)}: ${answer.text}`);
    }
    assert.equal((await reconcile(worker, { provider: 'github' }, {})).status, 401);
    assert.equal(github.requests.length, askedGithub);
    assert.equal(stripeApi.requests.length, askedStripe);
    assert.equal(origin.requests.length, forwarded);
    assert.equal(storageDump(worker.persistDir), stored);
    // Stripe keeps 30 days: a since GitHub refuses is fine for Stripe.
    const stripeOld = await reconcile(worker, { provider: 'stripe', since: iso(now - 100 * HOUR), dry_run: true });
    assert.equal(stripeOld.status, 200, stripeOld.text);
  });
});

describe('scheduled reconciliation (Cron Trigger)', () => {
  let origin;
  let stripeApi;
  let github;
  let worker;
  before(async () => {
    origin = await startOrigin(() => ({ status: 200, body: 'ok' }));
    stripeApi = await startStripeApi({ key: KEY });
    github = await startGithubApi({ token: GITHUB_TOKEN, hook: 'orgs/acme/hooks/7', webhookSecret: GITHUB_SECRET });
    worker = await startWorker({
      scheduled: true,
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        ADMIN_TOKEN: TOKEN,
        STRIPE_API_KEY: KEY,
        STRIPE_API_BASE_URL: stripeApi.url,
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        GITHUB_ORIGIN_URL: `${origin.url}/github`,
        GITHUB_DELIVERY_MODE: 'sync',
        GITHUB_API_TOKEN: GITHUB_TOKEN,
        GITHUB_API_BASE_URL: github.url,
        GITHUB_HOOK: 'orgs/acme/hooks/7',
        RECONCILE_LOOKBACK_HOURS: '1',
        FORWARD_TIMEOUT_MS: '5000',
        LATE_ANSWER_WAIT_SECONDS: '0',
      },
    });
    github.deliverTo = `${worker.url}/webhooks/github`;
  });
  after(async () => {
    await worker?.dispose();
    await github?.close();
    await stripeApi?.close();
    await origin?.close();
  });
  const seen = (id) => origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);
  const status = async () => {
    const answer = await call(`${worker.url}/admin/reconcile`, { headers: auth });
    assert.equal(answer.status, 200, answer.text);
    return Object.fromEntries(answer.json.items.map((item) => [item.provider, item]));
  };
  const fire = () => call(`${worker.url}/__scheduled?cron=*%2F15+*+*+*+*`);

  test('the cron run reconciles each sender\'s lookback window; GET /admin/reconcile shows each run; a second run changes nothing', async () => {
    const now = nowSeconds();
    const recent = [stripeApi.add({ created: now - 600 }), stripeApi.add({ created: now - 300 })];
    const old = stripeApi.add({ created: now - 2 * HOUR });
    // Logged oldest first, as GitHub's ids grow with time.
    const oldDown = await github.deliver('issues', { action: 'opened', issue: { number: 0 } }, { send: false, at: Date.now() - 2 * HOUR * 1000 });
    const down = await github.deliver('issues', { action: 'opened', issue: { number: 1 } }, { send: false });
    assert.equal((await call(`${worker.url}/admin/reconcile`)).status, 401);

    const fired = await fire();
    assert.equal(fired.status, 200, fired.text);
    for (const event of recent) await until(() => seen(event.id).length, 15_000, `${event.id} delivered by the cron run`);
    await until(() => seen(down.guid).length, 15_000, 'the failed GitHub delivery redelivered');
    const line = await worker.waitForLog((l) => l.route === 'reconcile' && l.outcome === 'reconciled', 10_000);
    assert.ok(line, 'a reconciled log line');
    const items = await until(async () => {
      const found = await status();
      return found.stripe?.last_run_at && found.github?.last_run_at && found;
    }, 10_000, 'both senders\' runs recorded');
    const { stripe: stripeRun, github: githubRun } = items;
    for (const item of [stripeRun, githubRun]) {
      assert.ok(Number.isFinite(Date.parse(item.last_run_at)), item.last_run_at);
      const span = Date.parse(item.until) - Date.parse(item.since);
      assert.ok(Math.abs(span - HOUR * 1000) <= 5_000, `a window of RECONCILE_LOOKBACK_HOURS: ${span} ms`);
      assert.ok(Date.parse(item.until) <= Date.parse(item.last_run_at) + 1_000);
      assert.deepEqual(item.errors, []);
      assert.equal(item.next_cursor, null);
    }
    assert.deepEqual([stripeRun.listed, stripeRun.already_done, stripeRun.delivered], [2, 0, 2], JSON.stringify(stripeRun));
    assert.equal(githubRun.redelivery_requested, 1, JSON.stringify(githubRun));
    assert.equal(seen(old.id).length, 0, 'an event older than the lookback is left alone');
    assert.equal(github.attempts(oldDown.guid).length, 1, 'a delivery older than the lookback is not asked for');
    for (const event of recent) {
      const [forwarded] = seen(event.id);
      assert.equal(forwarded.headers['x-webhook-dedup-source'], 'reconcile');
      assert.equal(stripe.webhooks.constructEvent(forwarded.body, forwarded.headers['stripe-signature'], SECRET).id, event.id);
    }

    await sleep(1_100);
    const forwarded = origin.requests.length;
    assert.equal((await fire()).status, 200);
    const second = await until(async () => {
      const found = await status();
      return found.stripe.last_run_at !== stripeRun.last_run_at && found.github.last_run_at !== githubRun.last_run_at && found;
    }, 15_000, 'the second cron run recorded');
    assert.deepEqual([second.stripe.already_done, second.stripe.delivered], [2, 0], JSON.stringify(second.stripe));
    assert.equal(second.github.redelivery_requested, 0, JSON.stringify(second.github));
    await sleep(500);
    assert.equal(origin.requests.length, forwarded, 'the second run forwarded nothing');
    assert.equal(github.redeliveryRequests().length, 1);
  });
});
