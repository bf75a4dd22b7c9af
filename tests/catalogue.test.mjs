// The bad-input catalogue: hostile and malformed requests against every front door (Stripe,
// Standard Webhooks, GitHub, Shopify, Idempotency-Key) and the admin API. Each states its
// expected status; after each, no Durable Object was asked anything, every key and value the
// objects store (and every alarm) is as before (nothing written) and the origin saw nothing.
// First, the well-formed request each family of cases is made from is accepted: the refusals
// are the defects', not the doors'.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { sign as githubSign } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';

import { call, postChunked, startDirect, startOrigin, startWorker, storageDump, until } from './harness.mjs';
import { standardSecret } from './provider-helpers.mjs';
import { deliver, eventId, eventPayload, signatureFor } from './stripe-helpers.mjs';

const SECRET = 'whsec_catalogue';
const TOKEN = 'catalogue-admin-token-0123456789';
const MAX = 8192;
const now = () => Math.floor(Date.now() / 1000);
const sign = (payload, opts = {}) => signatureFor(payload, opts.secret ?? SECRET, opts.timestamp);
const v1Of = (header) => header.split(',').find((p) => p.startsWith('v1='));

/** Sends raw bytes over TCP (for requests fetch will not make) and returns the status. */
function raw(url, text) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(text));
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk;
      const m = data.match(/^HTTP\/1\.1 (\d{3})/);
      if (m) {
        socket.destroy();
        resolve(Number(m[1]));
      }
    });
    socket.on('error', reject);
    socket.setTimeout(10_000, () => { socket.destroy(); reject(new Error('no answer')); });
  });
}

const webhook = (payload, signature, extra = {}) => ({
  path: '/webhooks/stripe', method: 'POST', body: payload,
  headers: { 'content-type': 'application/json', ...(signature === null ? {} : { 'stripe-signature': signature }), ...extra },
});
const signed = (payload, opts) => webhook(payload, sign(payload, opts));
const api = (key, body = '{"amount":1}', extra = {}) => ({
  path: '/api/charges', method: 'POST', body,
  headers: Object.fromEntries(Object.entries({
    'content-type': 'application/json', authorization: 'Bearer client', 'idempotency-key': key, ...extra,
  }).filter(([, value]) => value !== undefined)),
});
// The other senders, all on (a sender without its secret answers as one that refuses: providers test).
const STANDARD_SECRET = standardSecret('catalogue');
const GITHUB_SECRET = 'catalogue-github-secret';
const GITHUB_BODY = '{"zen":"Keep it logically awesome."}';
// GitHub's delivery ids are GUIDs: one the cases attack with, one of the good delivery.
const GITHUB_GUID = '72d3162e-cc78-11e3-81ab-4c9367dc0958';
const GITHUB_GOOD_GUID = '0b9c5f2e-1d2a-11f0-8a3b-2f1e0d9c8b7a';
const GITHUB_SIGNATURE = await githubSign(GITHUB_SECRET, GITHUB_BODY); // no timestamp: valid all run
const standard = (headers, body = '{"a":1}') => ({
  path: '/webhooks/standard', method: 'POST', body,
  headers: Object.fromEntries(Object.entries({ 'content-type': 'application/json', ...headers }).filter(([, v]) => v !== undefined)),
});
const standardSigned = ({ id = 'msg_catalogue', at = new Date(), body = '{"a":1}', secret = STANDARD_SECRET } = {}) => ({
  'webhook-id': id,
  'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
  'webhook-signature': new Webhook(secret).sign(id, at, body),
});
const github = (headers, body = GITHUB_BODY) => ({
  path: '/webhooks/github', method: 'POST', body,
  headers: Object.fromEntries(Object.entries({
    'content-type': 'application/json', 'x-github-event': 'ping', 'x-github-delivery': GITHUB_GUID,
    'x-hub-signature-256': GITHUB_SIGNATURE, ...headers,
  }).filter(([, v]) => v !== undefined)),
});
const SHOPIFY_SECRET = 'shpss_catalogue_secret';
const SHOPIFY_BODY = '{"id":820982911946154508,"email":"jon@example.com"}';
// Shopify's documented signature: base64 of the HMAC-SHA256 of the raw body.
const shopifyMac = (body, secret = SHOPIFY_SECRET) => createHmac('sha256', secret).update(body).digest('base64');
const shopify = (headers, body = SHOPIFY_BODY) => ({
  path: '/webhooks/shopify', method: 'POST', body,
  headers: Object.fromEntries(Object.entries({
    'content-type': 'application/json', 'x-shopify-topic': 'orders/create', 'x-shopify-event-id': 'catalogue-shop-1',
    'x-shopify-hmac-sha256': shopifyMac(SHOPIFY_BODY), ...headers,
  }).filter(([, v]) => v !== undefined)),
});
const admin = (method, suffix, authorization) => ({
  path: `/admin/${suffix}`, method, headers: authorization ? { authorization } : {},
});

function cases() {
  const id = eventId('bad');
  const payload = eventPayload(id);
  const good = sign(payload);
  const t = `t=${now()}`;
  const hex = (n) => 'ab'.repeat(n);
  // Test titles: each row's first string.
  return [
    // Signatures
    ['forged v1', webhook(payload, `${t},v1=${hex(32)}`), 400, 'signature_mismatch'],
    ['wrong secret', signed(payload, { secret: 'whsec_attacker' }), 400, 'signature_mismatch'],
    ['tampered body', webhook(payload.replace('2000', '1'), good), 400, 'signature_mismatch'],
    ['signature of another body', webhook(payload, sign(eventPayload(eventId('other')))), 400, 'signature_mismatch'],
    ['no signature header', webhook(payload, null), 400, 'missing_signature'],
    ['empty signature header', webhook(payload, ''), 400, 'missing_signature'],
    ['duplicated t', webhook(payload, `${good},t=${now()}`), 400, 'malformed_signature'],
    ['no v1', webhook(payload, t), 400, 'no_v1_signature'],
    ['only v0', webhook(payload, `${t},v0=${hex(32)}`), 400, 'no_v1_signature'],
    ['non-hex v1', webhook(payload, `${t},v1=${'zz'.repeat(32)}`), 400, 'malformed_signature'],
    ['v1 too short', webhook(payload, `${t},v1=${hex(31)}`), 400, 'malformed_signature'],
    ['v1 too long', webhook(payload, `${t},v1=${hex(33)}`), 400, 'malformed_signature'],
    ['no t', webhook(payload, v1Of(good)), 400, 'malformed_signature'],
    ['non-numeric t', webhook(payload, `t=yesterday,${v1Of(good)}`), 400, 'malformed_signature'],
    ['negative t', webhook(payload, `t=-1,${v1Of(good)}`), 400, 'malformed_signature'],
    ['part without = and no v1', webhook(payload, `${t},junk`), 400, 'no_v1_signature'],
    ['only malformed v1 entries', webhook(payload, `${t},v1=zz,v1=${hex(31)}`), 400, 'malformed_signature'],
    ['a valid v1 for another timestamp', webhook(payload, `t=${now() - 1},${v1Of(good)}`), 400, 'signature_mismatch'],
    ['huge header', webhook(payload, `${good},x=${'y'.repeat(6000)}`), 400, 'malformed_signature'],
    ['too many v1', webhook(payload, `${t},${Array(17).fill(`v1=${hex(32)}`).join(',')}`), 400, 'malformed_signature'],
    ['expired timestamp', signed(payload, { timestamp: now() - 301 }), 400, 'timestamp_too_old'],
    ['timestamp a day old', signed(payload, { timestamp: now() - 86_400 }), 400, 'timestamp_too_old'],
    ['future timestamp', signed(payload, { timestamp: now() + 120 }), 400, 'timestamp_in_future'],
    // Bodies
    ['body over the cap', signed(eventPayload(eventId('big'), 'x', { pad: 'p'.repeat(MAX) })), 413, 'body_too_large'],
    ['empty body', signed(''), 400, 'invalid_json'],
    ['not JSON', signed('not json at all'), 400, 'invalid_json'],
    ['truncated JSON', signed(payload.slice(0, -5)), 400, 'invalid_json'],
    ['JSON with trailing bytes', signed(`${payload} x`), 400, 'invalid_json'],
    ['JSON array', signed('[1,2,3]'), 400, 'invalid_envelope'],
    ['JSON without id', signed(JSON.stringify({ type: 'x' })), 400, 'invalid_envelope'],
    ['id is a number', signed(JSON.stringify({ id: 7, type: 'x' })), 400, 'invalid_envelope'],
    ['id is null', signed(JSON.stringify({ id: null, type: 'x' })), 400, 'invalid_envelope'],
    ['id is an object', signed(JSON.stringify({ id: { evt: 1 }, type: 'x' })), 400, 'invalid_envelope'],
    ['type missing', signed(JSON.stringify({ id: eventId('notype') })), 400, 'invalid_envelope'],
    ['livemode is a string', signed(JSON.stringify({ id: eventId('lm'), type: 'x', livemode: 'yes' })), 400, 'invalid_envelope'],
    ['object is not an event', signed(JSON.stringify({ id: eventId('obj'), type: 'x', object: 'charge' })), 400, 'invalid_envelope'],
    ['object only looks like an event', signed(JSON.stringify({ id: eventId('obj2'), type: 'x', object: 'v2.core.event_destination' })), 400, 'invalid_envelope'],
    ['created is not a timestamp', signed(JSON.stringify({ id: eventId('cr'), type: 'x', created: 'yesterday' })), 400, 'invalid_envelope'],
    ['id is not a string in an otherwise valid body', signed(`{"id":["${eventId('d1')}"],"type":"x"}`), 400, 'invalid_envelope'],
    ['very long id', signed(JSON.stringify({ id: `evt_${'a'.repeat(300)}`, type: 'x' })), 400, 'invalid_event_id'],
    ['unicode id', signed(JSON.stringify({ id: 'evt_caf\u00e9', type: 'x' })), 400, 'invalid_event_id'],
    ['id with a slash', signed(JSON.stringify({ id: 'evt_a/../b', type: 'x' })), 400, 'invalid_event_id'],
    ['not an event id', signed(JSON.stringify({ id: 'ch_123', type: 'x' })), 400, 'invalid_event_id'],
    ['empty id', signed(JSON.stringify({ id: '', type: 'x' })), 400, 'invalid_event_id'],
    // Methods and paths
    ['GET on the webhook route', { path: '/webhooks/stripe', method: 'GET', headers: {} }, 405, 'method_not_allowed'],
    ['PUT on the webhook route', { ...signed(payload), method: 'PUT' }, 405, 'method_not_allowed'],
    ['DELETE on the webhook route', { path: '/webhooks/stripe', method: 'DELETE', headers: {} }, 405, 'method_not_allowed'],
    ['trailing slash', { ...signed(payload), path: '/webhooks/stripe/' }, 404, 'not_found'],
    ['unknown path', { ...signed(payload), path: '/webhooks/paypal' }, 404, 'not_found'],
    // Standard Webhooks
    ['standard: forged signature', standard({ ...standardSigned(), 'webhook-signature': `v1,${Buffer.alloc(32, 7).toString('base64')}` }), 400, 'signature_mismatch'],
    ['standard: another secret', standard(standardSigned({ secret: standardSecret('attacker') })), 400, 'signature_mismatch'],
    ['standard: tampered body', standard(standardSigned(), '{"a":2}'), 400, 'signature_mismatch'],
    ['standard: signature of another id', standard({ ...standardSigned(), 'webhook-id': 'msg_other' }), 400, 'signature_mismatch'],
    ['standard: timestamp 10 minutes old', standard(standardSigned({ at: new Date(Date.now() - 600_000) })), 400, 'timestamp_too_old'],
    ['standard: timestamp 10 minutes ahead', standard(standardSigned({ at: new Date(Date.now() + 600_000) })), 400, 'timestamp_in_future'],
    ['standard: only an asymmetric v1a signature', standard({ ...standardSigned(), 'webhook-signature': `v1a,${Buffer.alloc(64).toString('base64')}` }), 400, 'malformed_signature'],
    ['standard: no signature', standard({ ...standardSigned(), 'webhook-signature': undefined }), 400, 'missing_signature'],
    ['standard: no webhook-id', standard({ ...standardSigned(), 'webhook-id': undefined }), 400, 'missing_delivery_id'],
    ['standard: webhook-id with a space', standard(standardSigned({ id: 'msg a' })), 400, 'invalid_delivery_id'],
    ['standard: webhook-id of 256 characters', standard(standardSigned({ id: 'm'.repeat(256) })), 400, 'invalid_delivery_id'],
    ['standard: webhook-id of ..', standard(standardSigned({ id: '..' })), 400, 'invalid_delivery_id'],
    ['standard: webhook-id with a dot', standard(standardSigned({ id: 'msg.1' })), 400, 'invalid_delivery_id'],
    ['standard: no timestamp', standard({ ...standardSigned(), 'webhook-timestamp': undefined }), 400, 'missing_timestamp'],
    ['standard: timestamp in milliseconds with a dot', standard({ ...standardSigned(), 'webhook-timestamp': '1796000000.5' }), 400, 'malformed_timestamp'],
    ['standard: body over the cap', standard(standardSigned({ body: 'x'.repeat(MAX + 1) }), 'x'.repeat(MAX + 1)), 413, 'body_too_large'],
    // GitHub
    ['github: forged signature', github({ 'x-hub-signature-256': `sha256=${hex(32)}` }), 400, 'signature_mismatch'],
    ['github: tampered body', github({}, GITHUB_BODY.replace('awesome', 'awful')), 400, 'signature_mismatch'],
    ['github: only the SHA-1 signature', github({ 'x-hub-signature-256': undefined, 'x-hub-signature': `sha1=${'ab'.repeat(20)}` }), 400, 'missing_signature'],
    ['github: sha1= in the SHA-256 header', github({ 'x-hub-signature-256': `sha1=${'ab'.repeat(20)}` }), 400, 'malformed_signature'],
    ['github: signature not hex', github({ 'x-hub-signature-256': `sha256=${'zz'.repeat(32)}` }), 400, 'malformed_signature'],
    ['github: no delivery id', github({ 'x-github-delivery': undefined }), 400, 'missing_delivery_id'],
    ['github: delivery id with a tab', github({ 'x-github-delivery': 'a\tb' }), 400, 'invalid_delivery_id'],
    ['github: a delivery id that is no GUID', github({ 'x-github-delivery': 'catalogue-1' }), 400, 'invalid_delivery_id'],
    ['github: a delivery id of ..', github({ 'x-github-delivery': '..' }), 400, 'invalid_delivery_id'],
    ['github: a link for a delivery id', github({ 'x-github-delivery': '<https://evil.example|ROTATE-ADMIN-TOKEN>' }), 400, 'invalid_delivery_id'],
    ['github: an event name with capitals', github({ 'x-github-event': 'Push' }), 400, 'invalid_event_type'],
    ['github: a link for an event name', github({ 'x-github-event': '<https://evil.example|ROTATE-ADMIN-TOKEN>' }), 400, 'invalid_event_type'],
    ['github: GET', { path: '/webhooks/github', method: 'GET', headers: {} }, 405, 'method_not_allowed'],
    // Shopify
    ['shopify: forged signature', shopify({ 'x-shopify-hmac-sha256': Buffer.alloc(32, 7).toString('base64') }), 400, 'signature_mismatch'],
    ['shopify: another secret', shopify({ 'x-shopify-hmac-sha256': shopifyMac(SHOPIFY_BODY, 'shpss_attacker') }), 400, 'signature_mismatch'],
    ['shopify: tampered body', shopify({}, SHOPIFY_BODY.replace('jon', 'eve')), 400, 'signature_mismatch'],
    ['shopify: signature in hex', shopify({ 'x-shopify-hmac-sha256': createHmac('sha256', SHOPIFY_SECRET).update(SHOPIFY_BODY).digest('hex') }), 400, 'malformed_signature'],
    ['shopify: signature of 16 bytes', shopify({ 'x-shopify-hmac-sha256': Buffer.alloc(16, 7).toString('base64') }), 400, 'malformed_signature'],
    ['shopify: no signature', shopify({ 'x-shopify-hmac-sha256': undefined }), 400, 'missing_signature'],
    ['shopify: no event id', shopify({ 'x-shopify-event-id': undefined }), 400, 'missing_delivery_id'],
    ['shopify: event id with a space', shopify({ 'x-shopify-event-id': 'a b' }), 400, 'invalid_delivery_id'],
    ['shopify: topic with a space', shopify({ 'x-shopify-topic': 'orders create' }), 400, 'invalid_topic'],
    ['shopify: a link for a topic', shopify({ 'x-shopify-topic': '<https://evil.example|x>/y' }), 400, 'invalid_topic'],
    ['shopify: an event id of ..', shopify({ 'x-shopify-event-id': '..' }), 400, 'invalid_delivery_id'],
    ['shopify: a shop outside myshopify.com', shopify({ 'x-shopify-shop-domain': 'shop.evil.example' }), 400, 'invalid_shop_domain'],
    ['shopify: body over the cap', shopify({ 'x-shopify-hmac-sha256': shopifyMac('s'.repeat(MAX + 1)) }, 's'.repeat(MAX + 1)), 413, 'body_too_large'],
    ['shopify: GET', { path: '/webhooks/shopify', method: 'GET', headers: {} }, 405, 'method_not_allowed'],
    // Idempotency-Key front door
    ['empty Idempotency-Key', api(''), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['256-character key', api('k'.repeat(256)), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['key with a tab', api('a\tb'), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['non-ASCII key', api('caf\u00e9'), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['unterminated quoted key', api('"open'), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['quoted key with a bad escape', api('"a\\nb"'), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['text after a quoted key', api('"a"b'), 400, 'urn:webhook-dedup:problem:idempotency-key-invalid'],
    ['required key missing', api(undefined), 400, 'urn:webhook-dedup:problem:idempotency-key-missing'],
    ['keyed body over the cap', api('big-key', 'b'.repeat(MAX + 1)), 413, 'urn:webhook-dedup:problem:body-too-large'],
    ['keyed request without a client identity', api('anon-key', '{}', { authorization: undefined }), 400, 'urn:webhook-dedup:problem:client-identity-missing'],
    ['keyed request with an empty client identity', api('anon-key', '{}', { authorization: '' }), 400, 'urn:webhook-dedup:problem:client-identity-missing'],
    ['keyed request with a blank client identity', api('anon-key', '{}', { authorization: '   ' }), 400, 'urn:webhook-dedup:problem:client-identity-missing'],
    // Admin API
    ['admin without a token', admin('GET', `events/${id}`), 401, 'unauthorized'],
    ['admin with a wrong token', admin('GET', `events/${id}`, 'Bearer wrong-token-wrong-token'), 401, 'unauthorized'],
    ['admin token without Bearer', admin('GET', `events/${id}`, TOKEN), 401, 'unauthorized'],
    ['admin token as Basic', admin('GET', `events/${id}`, `Basic ${TOKEN}`), 401, 'unauthorized'],
    ['admin token with a suffix', admin('DELETE', `events/${id}`, `Bearer ${TOKEN}x`), 401, 'unauthorized'],
    ['admin release with a wrong token', admin('POST', `events/${id}/release`, 'Bearer nope'), 401, 'unauthorized'],
    ['admin with a bad event id', admin('GET', 'events/ch_1', `Bearer ${TOKEN}`), 400, 'invalid_event_id'],
    ['admin with a bad scope', admin('DELETE', 'keys/idem_zz', `Bearer ${TOKEN}`), 400, 'invalid_scope'],
    ['admin unknown route', admin('GET', 'everything', `Bearer ${TOKEN}`), 404, 'not_found'],
    ['admin with a bad delivery id', admin('GET', 'deliveries/github/a%20b', `Bearer ${TOKEN}`), 400, 'invalid_delivery_id'],
    ['admin with an unknown provider', admin('GET', 'deliveries/paypal/1', `Bearer ${TOKEN}`), 404, 'not_found'],
    ['admin deliveries without a token', admin('GET', 'deliveries/github/catalogue-1'), 401, 'unauthorized'],
    // Test routes (on here): guarded by the admin token too
    ['test route claim without a token', { path: `/_test/claims/${eventId('tr')}/claim`, method: 'POST', headers: {} }, 401, 'unauthorized'],
    ['test route read with a wrong token', { path: `/_test/claims/${id}`, method: 'GET', headers: { authorization: 'Bearer wrong-token-wrong-token' } }, 401, 'unauthorized'],
  ];
}

describe('bad-input catalogue', () => {
  let origin;
  let worker;
  let objects;
  let known;
  before(async () => {
    origin = await startOrigin();
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        API_ORIGIN_URL: origin.url,
        IDEMPOTENCY_KEY_REQUIRED: 'true',
        ADMIN_TOKEN: TOKEN,
        ENABLE_TEST_ROUTES: 'true',
        MAX_BODY_BYTES: String(MAX),
        STANDARD_WEBHOOK_SECRET: STANDARD_SECRET,
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        SHOPIFY_WEBHOOK_SECRET: SHOPIFY_SECRET,
        // Each object operation writes a line before it answers: the trace that no object was
        // asked anything (see below).
        LOG_STORAGE_USAGE: 'true',
      },
    });
    objects = worker.persistDir;
    // One real record, so that admin refusals have something to reveal and must not.
    known = eventId('known');
    assert.equal((await deliver(worker, eventPayload(known), { secret: SECRET })).status, 200);
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  const all = cases();

  test('every door the cases attack accepts the well-formed request they are made from', async () => {
    const good = [];
    const stripeEvent = eventPayload(eventId('good'));
    good.push(['stripe', signed(stripeEvent), 200, 'processed']);
    const standardBody = '{"a":"good"}';
    good.push(['standard', standard(standardSigned({ id: 'msg_catalogue_good', body: standardBody }), standardBody), 200, 'processed']);
    good.push(['github', github({ 'x-github-delivery': GITHUB_GOOD_GUID }), 200, 'queued']);
    good.push(['shopify', shopify({ 'x-shopify-event-id': 'catalogue-shop-good' }), 200, 'queued']);
    good.push(['Idempotency-Key', api('good-key'), 200, undefined]);
    good.push(['admin', admin('GET', `events/${known}`, `Bearer ${TOKEN}`), 200, undefined]);
    good.push(['admin deliveries', admin('GET', `deliveries/github/${GITHUB_GOOD_GUID}`, `Bearer ${TOKEN}`), 200, undefined]);
    good.push(['test route', { path: `/_test/claims/${known}`, method: 'GET', headers: { authorization: `Bearer ${TOKEN}` } }, 200, undefined]);
    const seen = origin.requests.length;
    for (const [door, request, status, word] of good) {
      const answer = await call(`${worker.url}${request.path}`, { method: request.method, headers: request.headers, body: request.body });
      assert.equal(answer.status, status, `${door}: ${answer.text}`);
      if (word) assert.equal(answer.json.status, word, `${door}: ${answer.text}`);
    }
    // The queued ones delivered too, so that nothing is left running under the cases below.
    for (const id of [`github/${GITHUB_GOOD_GUID}`, `shopify/${encodeURIComponent('orders/create:catalogue-shop-good')}`]) {
      await until(async () => (await call(`${worker.url}/admin/deliveries/${id}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json?.record?.state === 'done', 10_000, `${id} delivered`);
    }
    assert.equal(origin.requests.length, seen + 5, 'each webhook and the keyed request reached the origin');
    // Object operations are traced (what the cases rely on to show no object was asked).
    const goodId = JSON.parse(stripeEvent).id;
    assert.ok(worker.logLines().some((l) => l.route === 'authority' && l.key === goodId && l.outcome === 'deliver'), 'the delivery\'s object operation is logged');
    // The cases cover every door and the admin API.
    const paths = new Set(all.map(([, request]) => request.path.split('/').slice(0, 3).join('/')));
    for (const door of ['/webhooks/stripe', '/webhooks/standard', '/webhooks/github', '/webhooks/shopify', '/api/charges', '/admin/events', '/_test/claims']) {
      assert.ok(paths.has(door), `a case against ${door}`);
    }
  });

  all.forEach(([name, , status, code], index) => {
    test(name, async () => {
      // Made now, not when the file loaded: signatures carry the current time.
      const [, request] = cases()[index];
      const before = storageDump(objects);
      assert.match(before, /_cf_KV evt_/, 'the dump sees the stored records');
      const seen = origin.requests.length;
      const logged = worker.logLines().length;
      const answer = await call(`${worker.url}${request.path}`, {
        method: request.method, headers: request.headers, body: request.body,
      });
      assert.equal(answer.status, status, answer.text);
      const got = answer.json?.type ?? answer.json?.error;
      assert.equal(got, code, answer.text);
      assert.ok(!answer.text.includes(known), 'no record revealed');
      // Its log line (lines of earlier requests may still be arriving, so look for this one).
      const mine = (l) => l.status === status && (l.outcome === code || code.endsWith(`:${l.outcome}`));
      const deadline = Date.now() + 3_000;
      while (!worker.logLines().slice(logged).some(mine) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const lines = worker.logLines().slice(logged);
      assert.ok(lines.some(mine), `a log line for this refusal:\n${JSON.stringify(lines)}`);
      // The worker writes that line last, after every call to an object it made; each object
      // operation writes its own line (LOG_STORAGE_USAGE) before it answers. None before this
      // one: no object was asked anything, so nothing was written and no forward started,
      // neither now nor in the background (only an object's claim starts one). No pause needed.
      assert.deepEqual(lines.filter((l) => l.route === 'authority'), [], 'no object was asked anything');
      assert.equal(origin.requests.length, seen, 'nothing reached the origin');
      assert.equal(storageDump(objects), before, 'nothing written');
    });
  });

  test('a chunked body over the cap (no Content-Length) is refused', async () => {
    const before = storageDump(objects);
    const answer = { status: await postChunked(`${worker.url}/webhooks/stripe`, Array(10).fill('x'.repeat(1000)), {
      'stripe-signature': `t=${now()},v1=${'ab'.repeat(32)}`,
    }) };
    assert.equal(answer.status, 413);
    assert.equal(storageDump(objects), before);
  });

  // Sent as written (fetch would resolve the dot segments before sending).
  test('paths with dot segments never reach the webhook door or an unguarded admin route', async () => {
    const before = storageDump(objects);
    const seen = origin.requests.length;
    const body = eventPayload(eventId('dots'));
    for (const target of ['/webhooks/../admin/events', '/webhooks/%2e%2e/admin/events', '/webhooks/stripe/..%2f..%2fadmin/events']) {
      const status = await raw(worker.url, `POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nStripe-Signature: ${sign(body)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      assert.ok([401, 404].includes(status), `${target} answered ${status}`);
    }
    assert.equal(origin.requests.length, seen, 'nothing reached the origin');
    assert.equal(storageDump(objects), before, 'nothing written');
  });

  test('the known record is still there and unchanged', async () => {
    const answer = await call(`${worker.url}/admin/events/${known}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(answer.status, 200);
    assert.equal(answer.json.record.state, 'done');
    assert.equal(answer.json.record.attempts, 1);
  });
});

test('a lying Content-Length over the cap is refused before the body is read', async (t) => {
  // Through the dev proxy and straight to the runtime: the worker cancels the body it did not
  // read, so neither waits for the announced body (which never comes) before answering.
  const vars = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/x', MAX_BODY_BYTES: String(MAX) };
  for (const runtime of [await startWorker({ vars }), await startDirect({ vars })]) {
    t.after(() => runtime.dispose());
    const before = storageDump(runtime.persistDir);
    const body = eventPayload(eventId('liar'));
    const status = await raw(runtime.url, `POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nStripe-Signature: ${sign(body)}\r\nContent-Length: 999999\r\n\r\n${body}`);
    assert.equal(status, 413);
    assert.equal(storageDump(runtime.persistDir), before, 'nothing written');
  }
});
