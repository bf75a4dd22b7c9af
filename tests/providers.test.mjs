// Beyond Stripe: Standard Webhooks, GitHub and Shopify deliveries through the same claim
// machinery. Real worker under `wrangler dev`, deliveries signed by each sender's own library
// (`standardwebhooks`, `@octokit/webhooks-methods`; Shopify's documented HMAC), a real origin
// that verifies what it receives as the sender's library does.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { adminHeaders, call, objectFiles, startOrigin, startWorker, storageDump, until } from './harness.mjs';
import { claimId, deliveryId, deliverAs, handlerVerifies, send, signedHeaders, standardSecret } from './provider-helpers.mjs';
import { deliver, eventId, eventPayload } from './stripe-helpers.mjs';

const STRIPE_SECRET = 'whsec_providers_stripe';
const SECRETS = {
  standard: [standardSecret('standard-new'), standardSecret('standard-old')],
  github: ['gh-secret-new', 'gh-secret-old'],
  shopify: ['shpss_client_secret'],
};
const QUEUE_TIMINGS = {
  LEASE_SECONDS: '8',
  FORWARD_TIMEOUT_MS: '1000',
  LATE_ANSWER_WAIT_SECONDS: '0',
  QUEUE_FORWARD_TIMEOUT_MS: '3000',
  RETRY_BASE_SECONDS: '1',
  RETRY_MAX_DELAY_SECONDS: '2',
  RETRY_MAX_ATTEMPTS: '3',
};

const body = (provider, id) => JSON.stringify({ sender: provider, delivery: id, note: 'caf\u00e9 \u2603' });

/**
 * An origin whose answer to a delivery id is `behaviour.get(id)` (200 otherwise), and a worker
 * with `vars(origin)` and the queue timings, started before the suite and stopped after it.
 */
function setup(vars) {
  const behaviour = new Map();
  const ctx = { behaviour, origin: null, worker: null };
  before(async () => {
    ctx.origin = await startOrigin((req, n) => {
      const decide = behaviour.get(req.headers['x-webhook-dedup-event-id']);
      return decide ? decide(req, n) : { status: 200, body: 'ok' };
    });
    ctx.worker = await startWorker({
      vars: { STRIPE_WEBHOOK_SECRET: STRIPE_SECRET, ORIGIN_URL: `${ctx.origin.url}/hooks`, ENABLE_TEST_ROUTES: 'true', ...QUEUE_TIMINGS, ...vars(ctx.origin) },
    });
  });
  after(async () => {
    await ctx.worker?.dispose();
    await ctx.origin?.close();
  });
  return ctx;
}

describe('every provider on its defaults (Standard sync; GitHub and Shopify queue)', () => {
  const ctx = setup((origin) => ({
    STANDARD_WEBHOOK_SECRET: SECRETS.standard.join(','),
    GITHUB_WEBHOOK_SECRET: SECRETS.github.join(', '),
    SHOPIFY_WEBHOOK_SECRET: SECRETS.shopify.join(','),
    SHOPIFY_ORIGIN_URL: `${origin.url}/shopify`,
  }));
  const { behaviour } = ctx;
  // By the id each sender's delivery is claimed by (Shopify's: `orders/create:{event id}`).
  const seen = (provider, id) => ctx.origin.requests.filter(
    (r) => r.headers['x-webhook-dedup-event-id'] === claimId(provider, id) && r.headers['x-webhook-dedup-provider'] === provider,
  );
  const inspect = (provider, id) => call(`${ctx.worker.url}/admin/deliveries/${provider}/${encodeURIComponent(claimId(provider, id))}`, { headers: adminHeaders(ctx.worker) });
  const done = async (provider, id) => (await inspect(provider, id)).json?.record?.state === 'done';

  test('/healthz lists the enabled providers and their delivery modes to the operator, never to anyone', async () => {
    const health = await call(`${ctx.worker.url}/healthz`, { headers: adminHeaders(ctx.worker) });
    assert.deepEqual(health.json.providers, { stripe: 'sync', standard: 'sync', github: 'queue', shopify: 'queue' });
    assert.equal((await call(`${ctx.worker.url}/healthz`)).json.providers, undefined);
  });

  for (const provider of ['standard', 'github', 'shopify']) {
    const queued = provider !== 'standard';

    test(`${provider}: a valid delivery is forwarded once, byte for byte, verifiable by the handler; a repeat is a duplicate`, async () => {
      const id = deliveryId(provider);
      const payload = body(provider, id);
      const answer = await deliverAs(ctx.worker, provider, { id, body: payload, secret: SECRETS[provider][0] });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json, queued
        ? { status: 'queued', event_id: claimId(provider, id) }
        : { status: 'processed', event_id: claimId(provider, id), origin_status: 200 });
      const [forwarded] = await until(() => seen(provider, id).length && seen(provider, id), 10_000, 'the forward');
      assert.equal(forwarded.url, provider === 'shopify' ? '/shopify' : '/hooks', 'its own origin, else ORIGIN_URL');
      assert.ok(forwarded.body.equals(Buffer.from(payload)), 'the body as sent');
      assert.equal(forwarded.headers['content-type'], 'application/json');
      assert.equal(forwarded.headers['x-webhook-dedup-attempt'], '1');
      assert.ok(await handlerVerifies(provider, forwarded, SECRETS[provider][0]), 'the sender\'s own headers are kept');
      await until(() => done(provider, id), 5_000, 'the record to be done');

      const repeat = await deliverAs(ctx.worker, provider, { id, body: payload, secret: SECRETS[provider][0] });
      assert.equal(repeat.status, 200);
      assert.deepEqual(repeat.json, { status: 'duplicate' });
      // Ran once: one claim was ever won (each forward follows one), and a done record is
      // never forwarded again.
      const record = (await inspect(provider, id)).json.record;
      assert.equal(record.state, 'done');
      assert.equal(record.attempts, 1, 'one claim');
      assert.equal(seen(provider, id).length, 1, 'ran once');

      assert.equal(record.key, `${provider}:${claimId(provider, id)}`, 'named by provider and id');
      const line = await ctx.worker.waitForLog((l) => l.key === record.key && l.outcome === 'duplicate');
      assert.equal(line.provider, provider);
      const eventType = { standard: undefined, github: 'push', shopify: 'orders/create' }[provider];
      assert.equal(line.event_type, eventType);
    });

    test(`${provider}: forged, tampered, unsigned or unidentified deliveries are refused with a code and store nothing`, async () => {
      const secret = SECRETS[provider][0];
      const cases = [];
      const make = async (label, change) => {
        const id = deliveryId(provider);
        const payload = body(provider, id);
        const headers = await signedHeaders(provider, { id, body: payload, secret });
        const sent = await change({ id, payload, headers });
        cases.push({ label, id, ...sent });
      };
      const signatureHeader = { standard: 'webhook-signature', github: 'x-hub-signature-256', shopify: 'x-shopify-hmac-sha256' }[provider];
      const idHeader = { standard: 'webhook-id', github: 'x-github-delivery', shopify: 'x-shopify-event-id' }[provider];
      await make('signature_mismatch', async ({ id, payload }) => ({
        payload,
        headers: await signedHeaders(provider, { id, body: payload, secret: provider === 'standard' ? standardSecret('forger') : 'forger' }),
      }));
      await make('signature_mismatch', ({ payload, headers }) => ({ payload: payload.replace('caf', 'cap'), headers }));
      await make('missing_signature', ({ payload, headers }) => ({ payload, headers: { ...headers, [signatureHeader]: undefined } }));
      await make('malformed_signature', ({ payload, headers }) => ({ payload, headers: { ...headers, [signatureHeader]: 'not-a-signature' } }));
      await make('missing_delivery_id', ({ payload, headers }) => ({ payload, headers: { ...headers, [idHeader]: undefined } }));
      await make('invalid_delivery_id', async ({ payload }) => ({
        payload,
        headers: await signedHeaders(provider, { id: 'has a space', body: payload, secret }),
      }));
      if (provider === 'standard') {
        const minutes = (n) => new Date(Date.now() + n * 60_000);
        await make('timestamp_too_old', async ({ id, payload }) => ({ payload, headers: await signedHeaders(provider, { id, body: payload, secret, timestamp: minutes(-10) }) }));
        await make('timestamp_in_future', async ({ id, payload }) => ({ payload, headers: await signedHeaders(provider, { id, body: payload, secret, timestamp: minutes(10) }) }));
        await make('missing_timestamp', ({ payload, headers }) => ({ payload, headers: { ...headers, 'webhook-timestamp': undefined } }));
        await make('malformed_timestamp', ({ payload, headers }) => ({ payload, headers: { ...headers, 'webhook-timestamp': 'yesterday' } }));
      }
      // Every refusal, whatever id it carries or lacks: no object is created (each stored
      // delivery has its own), and nothing reaches the origin, also from background work.
      const objectsBefore = objectFiles(ctx.worker.persistDir);
      const logged = ctx.worker.logLines().length;
      for (const { label, payload, headers } of cases) {
        const clean = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined));
        const answer = await send(ctx.worker, provider, payload, clean);
        assert.equal(answer.status, 400, `${label}: ${answer.text}`);
        assert.equal(answer.json.error, label, answer.text);
        assert.ok(answer.json.detail, 'a readable detail');
      }
      // Each refusal's own log line, which the worker writes last, after any call to an object
      // (an object's database is made at its first call): once every one is out, the objects'
      // folder is final for these requests, with no pause.
      const refusals = () => ctx.worker.logLines().slice(logged).filter((l) => l.provider === provider && l.status === 400);
      await until(() => refusals().length >= cases.length, 5_000, 'the refusals\' log lines');
      assert.deepEqual(refusals().map((l) => l.outcome), cases.map((c) => c.label));
      assert.deepEqual(objectFiles(ctx.worker.persistDir), objectsBefore, 'nothing stored');
      assert.equal(cases.filter(({ id }) => seen(provider, id).length).length, 0, 'nothing forwarded');
    });
  }

  test('standard: Svix\'s header names (svix-id, svix-timestamp, svix-signature) are read and forwarded', async () => {
    const id = deliveryId('standard');
    const payload = body('standard', id);
    const signed = await signedHeaders('standard', { id, body: payload, secret: SECRETS.standard[0] });
    const svix = Object.fromEntries(Object.entries(signed).map(([name, value]) => [name.replace('webhook-', 'svix-'), value]));
    const answer = await send(ctx.worker, 'standard', payload, svix);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.status, 'processed');
    const [forwarded] = seen('standard', id);
    assert.equal(forwarded.headers['svix-signature'], svix['svix-signature']);
    assert.equal(forwarded.headers['webhook-signature'], undefined);
    const unbranded = { ...forwarded, headers: Object.fromEntries(Object.entries(forwarded.headers).map(([n, v]) => [n.replace('svix-', 'webhook-'), v])) };
    assert.ok(await handlerVerifies('standard', unbranded, SECRETS.standard[0]));
    const repeat = await send(ctx.worker, 'standard', payload, svix);
    assert.deepEqual(repeat.json, { status: 'duplicate' });
  });

  test('standard: only the header family that was verified reaches the handler (an added svix-* family is dropped)', async () => {
    const id = deliveryId('standard');
    const payload = body('standard', id);
    const signed = await signedHeaders('standard', { id, body: payload, secret: SECRETS.standard[0] });
    // Added on the way: another id and a signature nobody checked, under Svix's names.
    const added = { 'svix-id': 'msg_injected', 'svix-timestamp': signed['webhook-timestamp'], 'svix-signature': `v1,${Buffer.alloc(32, 9).toString('base64')}` };
    const answer = await send(ctx.worker, 'standard', payload, { ...signed, ...added });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.status, 'processed');
    const [forwarded] = seen('standard', id);
    for (const name of Object.keys(added)) assert.equal(forwarded.headers[name], undefined, `${name} not forwarded`);
    assert.equal(forwarded.headers['webhook-id'], id);
    assert.ok(await handlerVerifies('standard', forwarded, SECRETS.standard[0]));
  });

  test('rotation: a delivery signed with any listed secret is accepted', async () => {
    for (const provider of ['standard', 'github']) {
      for (const secret of SECRETS[provider]) {
        const id = deliveryId(provider);
        const answer = await deliverAs(ctx.worker, provider, { id, body: body(provider, id), secret });
        assert.equal(answer.status, 200, `${provider}: ${answer.text}`);
      }
    }
  });

  test('the same id from two providers (and Stripe): separate records, each run once', async () => {
    // A Stripe event id is also a Standard Webhooks and a Shopify id; a GUID is GitHub's and
    // theirs too: each id is sent by every sender whose form it fits.
    const stripeShared = eventId('shared');
    const stripeAnswer = await deliver(ctx.worker, eventPayload(stripeShared), { secret: STRIPE_SECRET });
    assert.equal(stripeAnswer.json.status, 'processed', stripeAnswer.text);
    for (const [shared, providers] of [[stripeShared, ['standard', 'shopify']], [deliveryId('github'), ['standard', 'github', 'shopify']]]) {
      for (const provider of providers) {
        const answer = await deliverAs(ctx.worker, provider, { id: shared, body: body(provider, shared), secret: SECRETS[provider][0] });
        assert.equal(answer.status, 200, `${provider}: ${answer.text}`);
        assert.notEqual(answer.json.status, 'duplicate', provider);
      }
      for (const provider of providers) {
        await until(() => done(provider, shared), 10_000, `${provider}'s record`);
        assert.equal(seen(provider, shared).length, 1, provider);
      }
    }
    assert.equal(seen('stripe', stripeShared).length, 1, 'stripe');
  });

  test('shopify: one merchant action delivered under two topics runs each topic\'s handler once', async () => {
    // X-Shopify-Event-Id is shared by every delivery one action causes; each topic has its own
    // handler, so the claim is the topic and the event id together.
    const id = deliveryId('shopify');
    const secret = SECRETS.shopify[0];
    const topics = ['orders/create', 'orders/paid'];
    for (const event of topics) {
      const answer = await deliverAs(ctx.worker, 'shopify', { id, event, body: body('shopify', id), secret });
      assert.deepEqual(answer.json, { status: 'queued', event_id: `${event}:${id}` }, answer.text);
    }
    const byTopic = (event) => ctx.origin.requests.filter((r) => r.headers['x-shopify-event-id'] === id && r.headers['x-shopify-topic'] === event);
    for (const event of topics) {
      await until(() => byTopic(event).length, 10_000, `${event} forwarded`);
      const url = `${ctx.worker.url}/admin/deliveries/shopify/${encodeURIComponent(`${event}:${id}`)}`;
      await until(async () => (await call(url, { headers: adminHeaders(ctx.worker) })).json?.record?.state === 'done', 5_000, `${event} done`);
    }
    // A second subscription to a topic (another webhook id, the same event id): a duplicate.
    const again = await deliverAs(ctx.worker, 'shopify', { id, event: 'orders/paid', body: body('shopify', id), secret });
    assert.deepEqual(again.json, { status: 'duplicate' });
    // Each topic ran once: one claim ever won, and done.
    for (const event of topics) {
      const url = `${ctx.worker.url}/admin/deliveries/shopify/${encodeURIComponent(`${event}:${id}`)}`;
      const record = (await call(url, { headers: adminHeaders(ctx.worker) })).json.record;
      assert.equal(record.state, 'done', event);
      assert.equal(record.attempts, 1, `${event}: one claim`);
      assert.equal(byTopic(event).length, 1, `${event} ran once`);
    }
  });

  test('Stripe is one provider among them, unchanged: its records keep their names, both admin paths reach them', async () => {
    const id = eventId('providers');
    const answer = await deliver(ctx.worker, eventPayload(id), { secret: STRIPE_SECRET });
    assert.equal(answer.json.status, 'processed', answer.text);
    const [forwarded] = seen('stripe', id);
    assert.ok(forwarded.headers['stripe-signature']);
    const viaEvents = await call(`${ctx.worker.url}/admin/events/${id}`, { headers: adminHeaders(ctx.worker) });
    const viaDeliveries = await inspect('stripe', id);
    assert.equal(viaEvents.json.record.key, id);
    assert.deepEqual(viaDeliveries.json, viaEvents.json);
    const line = await ctx.worker.waitForLog((l) => l.key === id && l.outcome === 'processed');
    assert.equal(line.provider, 'stripe');
  });

  test('github in queue mode: a failing handler is retried with the original signature, then dead-letters and is redelivered', async () => {
    const id = deliveryId('github');
    let healthy = false;
    behaviour.set(id, () => (healthy ? { status: 200 } : { status: 500 }));
    assert.equal((await deliverAs(ctx.worker, 'github', { id, body: body('github', id), secret: SECRETS.github[1] })).json.status, 'queued');
    const dead = await until(async () => {
      const record = (await inspect('github', id)).json?.record;
      return record?.state === 'dead' && record;
    }, 20_000, 'the dead letter');
    assert.equal(dead.attempts, 3);
    for (const attempt of seen('github', id)) {
      assert.ok(await handlerVerifies('github', attempt, SECRETS.github[1]), 'every attempt verifies');
    }
    healthy = true;
    const redelivered = await call(`${ctx.worker.url}/admin/deliveries/github/${id}/redeliver`, { method: 'POST', headers: adminHeaders(ctx.worker) });
    assert.equal(redelivered.status, 200, redelivered.text);
    await until(() => done('github', id), 10_000, 'the redelivery');
    assert.deepEqual(seen('github', id).map((r) => r.headers['x-webhook-dedup-attempt']), ['1', '2', '3', '4']);
    const line = await ctx.worker.waitForLog((l) => l.key === `github:${id}` && l.outcome === 'delivered');
    assert.equal(line.provider, 'github');
  });

  test('admin: a bad delivery id or an unknown provider is refused', async () => {
    const auth = { headers: adminHeaders(ctx.worker) };
    assert.equal((await call(`${ctx.worker.url}/admin/deliveries/github/a%20b`, auth)).json.error, 'invalid_delivery_id');
    assert.equal((await call(`${ctx.worker.url}/admin/deliveries/paypal/1`, auth)).status, 404);
    assert.equal((await call(`${ctx.worker.url}/admin/deliveries/github/${deliveryId('github')}`, auth)).status, 404);
  });
});

describe('each provider picks its mode; a provider without a secret is off', () => {
  const ctx = setup((origin) => ({
    STANDARD_WEBHOOK_SECRET: SECRETS.standard.join(','),
    STANDARD_ORIGIN_URL: `${origin.url}/standard`,
    STANDARD_DELIVERY_MODE: 'queue',
    GITHUB_WEBHOOK_SECRET: SECRETS.github[0],
    GITHUB_DELIVERY_MODE: 'sync',
  }));
  const { behaviour } = ctx;
  const seen = (id) => ctx.origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === id);

  test('a provider without a secret answers a caller without the secret exactly as one that is on and refuses, and stores nothing', async () => {
    // Shopify is off here and GitHub on: the same requests to each get the same answers.
    const before = storageDump(ctx.worker.persistDir);
    const seenBefore = ctx.origin.requests.length;
    const shape = (answer) => ({
      status: answer.status, text: answer.text,
      type: answer.headers.get('content-type'), allow: answer.headers.get('allow'),
    });
    const post = (provider, headers, body = '{}') => call(`${ctx.worker.url}/webhooks/${provider}`, { method: 'POST', headers, body });
    // Unsigned: refused at once, before the body, by either.
    const unsigned = await post('shopify', { 'content-type': 'application/json' });
    assert.deepEqual(shape(unsigned), shape(await post('github', { 'content-type': 'application/json' })));
    assert.equal(unsigned.json.error, 'missing_signature');
    // Signed with a secret the worker does not hold: a mismatch from either.
    const off = await deliverAs(ctx.worker, 'shopify', { id: deliveryId('shopify'), body: '{}', secret: 'any' });
    const on = await deliverAs(ctx.worker, 'github', { id: deliveryId('github'), body: '{}', secret: 'any' });
    assert.deepEqual(shape(off), shape(on));
    assert.equal(off.json.error, 'signature_mismatch');
    assert.doesNotMatch(off.text, /SECRET/, 'callers are not told which key would enable it');
    for (const method of ['GET', 'PUT']) {
      const disabled = await call(`${ctx.worker.url}/webhooks/shopify`, { method });
      const enabled = await call(`${ctx.worker.url}/webhooks/github`, { method });
      assert.deepEqual(shape(disabled), shape(enabled), method);
      assert.equal(disabled.status, 405);
    }
    assert.equal(ctx.origin.requests.length, seenBefore, 'nothing forwarded');
    assert.equal(storageDump(ctx.worker.persistDir), before, 'nothing written');
    const line = await ctx.worker.waitForLog((l) => l.provider === 'shopify' && l.outcome === 'sender_off');
    assert.match(line.detail, /SHOPIFY_WEBHOOK_SECRET is not set/, 'the operator is told, in the log');
    const health = await call(`${ctx.worker.url}/healthz`, { headers: adminHeaders(ctx.worker) });
    assert.deepEqual(health.json.providers, { stripe: 'sync', standard: 'queue', github: 'sync' }, 'and by /healthz');
  });

  test('github in sync mode: a failed handler answers 502 and runs again on the next delivery; then duplicates', async () => {
    const id = deliveryId('github');
    behaviour.set(id, (req, n) => ({ status: seen(id).length === 1 ? 500 : 200 }));
    const payload = body('github', id);
    const first = await deliverAs(ctx.worker, 'github', { id, body: payload, secret: SECRETS.github[0] });
    assert.equal(first.status, 502, first.text);
    assert.equal(first.json.error, 'origin_failed');
    const second = await deliverAs(ctx.worker, 'github', { id, body: payload, secret: SECRETS.github[0] });
    assert.equal(second.status, 200, second.text);
    assert.equal(second.json.status, 'processed');
    const third = await deliverAs(ctx.worker, 'github', { id, body: payload, secret: SECRETS.github[0] });
    assert.deepEqual(third.json, { status: 'duplicate' });
    assert.equal(seen(id).length, 2);
  });

  test('standard in queue mode: each attempt is signed anew, so a late retry verifies at arrival', async () => {
    const id = deliveryId('standard');
    const acceptedMs = Date.now();
    behaviour.set(id, () => (Date.now() - acceptedMs < 1_500 ? { status: 503 } : { status: 200 }));
    const signedAt = new Date(Date.now() - 200_000); // an old (still valid) signature
    // Signed with the second listed secret; each attempt is signed with the first.
    const answer = await deliverAs(ctx.worker, 'standard', { id, body: body('standard', id), secret: SECRETS.standard[1], timestamp: signedAt });
    assert.equal(answer.json.status, 'queued', answer.text);
    await until(() => seen(id).some((r) => r.answer?.status === 200), 15_000, 'the delivery');
    const attempts = seen(id);
    assert.ok(attempts.length >= 2);
    for (const attempt of attempts) {
      assert.equal(attempt.url, '/standard');
      assert.ok(await handlerVerifies('standard', attempt, SECRETS.standard[0]), 'verifies');
      const t = Number(attempt.headers['webhook-timestamp']) * 1000;
      assert.ok(Math.abs(t - attempt.receivedAt) < 5_000, `signed at the attempt (${t}), not at acceptance (${signedAt.getTime()})`);
      assert.equal(attempt.headers['webhook-id'], id, 'the id is kept');
    }
  });
});
