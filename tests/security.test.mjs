// The defences of issue 31 on the real runtime, each against a real HTTP origin that records
// what reaches it: a body read deadline (a sender that trickles its body), one answer for every
// admin or test-route request without the token whatever the configuration, /healthz without
// sender details for an anonymous caller, rate limiters that fail open and say so, the API
// door's forwarding headers and paths, no runtime error text to a client, the limits of the
// senders' unsigned headers, and the largest body cap.
import assert from 'node:assert/strict';
import net from 'node:net';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Webhook } from 'standardwebhooks';

import { ROOT, call, sleep, startDirect, startOrigin, startWorker, storageDump, until } from './harness.mjs';
import { deliverAs, deliveryId, send, signedHeaders, standardSecret } from './provider-helpers.mjs';
import { eventId, eventPayload, signatureFor } from './stripe-helpers.mjs';

const SECRET = 'whsec_security_tests';
const GITHUB_SECRET = 'github-security-secret';
const TOKEN = 'security-admin-token-0123456789';
const bearer = (token = TOKEN) => ({ authorization: `Bearer ${token}` });

/**
 * Sends `head` (the request line and headers, without the blank line) on a raw socket, then
 * `body` in `pieces` pieces, one every `everyMs`, and resolves with the answer's status, its
 * body and the milliseconds it took, as soon as the answer is complete (by its length, or the
 * last chunk of a chunked one; the rest of the body is never sent once an answer has come).
 */
function trickle(url, head, body, { pieces = 1, everyMs = 0 } = {}) {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let data = '';
    let answered = false;
    socket.on('data', (chunk) => {
      data += chunk;
      const end = data.indexOf('\r\n\r\n');
      const status = data.match(/^HTTP\/1\.1 (\d{3})/);
      const length = data.match(/\r\ncontent-length: (\d+)/i);
      if (status && end >= 0 && length && data.length >= end + 4 + Number(length[1])) {
        answered = true;
        socket.destroy();
        resolve({ status: Number(status[1]), text: data.slice(end + 4), ms: Date.now() - started });
      } else if (status && end >= 0 && /\r\ntransfer-encoding: chunked/i.test(data.slice(0, end)) && data.endsWith('\r\n0\r\n\r\n')) {
        answered = true;
        socket.destroy();
        resolve({ status: Number(status[1]), text: dechunk(data.slice(end + 4)), ms: Date.now() - started });
      }
    });
    // An answer without a length (chunked) ends with the connection.
    socket.on('close', () => {
      const status = data.match(/^HTTP\/1\.1 (\d{3})/);
      if (answered) return;
      if (!status) reject(new Error('the connection closed without an answer'));
      answered = true;
      const text = data.slice(data.indexOf('\r\n\r\n') + 4);
      resolve({ status: Number(status[1]), text: dechunk(text), ms: Date.now() - started });
    });
    socket.on('error', (error) => { if (!answered) reject(error); });
    socket.setTimeout(15_000, () => { socket.destroy(); reject(new Error(`no whole answer: ${JSON.stringify(data)}`)); });
    socket.on('connect', async () => {
      socket.write(`${head}\r\n\r\n`);
      const size = Math.ceil(body.length / pieces);
      for (let at = 0; at < body.length && !answered && !socket.destroyed; at += size) {
        socket.write(body.slice(at, at + size));
        await new Promise((r) => setTimeout(r, everyMs));
      }
    });
  });
}

/** The payload of a chunked body as received (unchanged when it is not chunked). */
function dechunk(text) {
  if (!/^[0-9a-f]+\r\n/i.test(text)) return text;
  let out = '';
  let rest = text;
  for (;;) {
    const line = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, line), 16);
    if (!size) return out;
    out += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}

/** A raw request line and headers for `method` `target` on `url`'s host. */
const headLines = (method, target, headers) => [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1',
  ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)].join('\r\n');

describe('admin on, test routes off, the API door on (BODY_READ_TIMEOUT_MS=1500)', () => {
  const behaviour = new Map();
  let origin;
  let worker;
  before(async () => {
    origin = await startOrigin((req) => (behaviour.get(req.url.split('?')[0]) ?? (() => ({ status: 200, body: 'ok' })))(req));
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/stripe`,
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
        API_ORIGIN_URL: `${origin.url}/v1`,
        ADMIN_TOKEN: TOKEN,
        BODY_READ_TIMEOUT_MS: '1500',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
  });

  for (const [name, framing] of [['Content-Length', 'length'], ['chunked', 'chunked']]) {
    test(`a webhook body that trickles past the deadline (${name}) is 408 body_timeout, nothing written, nothing forwarded`, async () => {
      const before = storageDump(worker.persistDir);
      const seen = origin.requests.length;
      const payload = eventPayload(eventId('slow'));
      const headers = { 'Content-Type': 'application/json', 'Stripe-Signature': signatureFor(payload, SECRET) };
      // 20 pieces, one every 400 ms: 8 s in all, far past the 1.5 s deadline.
      let body = payload;
      if (framing === 'length') {
        headers['Content-Length'] = Buffer.byteLength(payload);
      } else {
        headers['Transfer-Encoding'] = 'chunked';
        const size = Math.ceil(payload.length / 20);
        body = '';
        for (let at = 0; at < payload.length; at += size) {
          const piece = payload.slice(at, at + size);
          body += `${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`;
        }
        body += '0\r\n\r\n';
      }
      const answer = await trickle(worker.url, headLines('POST', '/webhooks/stripe', headers), body, { pieces: 20, everyMs: 400 });
      assert.equal(answer.status, 408, answer.text);
      assert.equal(JSON.parse(answer.text).error, 'body_timeout');
      assert.ok(answer.ms >= 1_400 && answer.ms < 5_000, `answered after ${answer.ms} ms`);
      assert.equal(origin.requests.length, seen, 'nothing reached the origin');
      assert.equal(storageDump(worker.persistDir), before, 'nothing written');
      const line = await worker.waitForLog((l) => l.route === 'webhook' && l.outcome === 'body_timeout');
      assert.equal(line?.status, 408);
    });
  }

  test('a keyed API body that trickles past the deadline is 408 body-timeout, nothing written, nothing forwarded', async () => {
    const before = storageDump(worker.persistDir);
    const seen = origin.requests.length;
    const body = JSON.stringify({ amount: 100, note: 'x'.repeat(200) });
    const headers = {
      'Content-Type': 'application/json', 'Content-Length': body.length,
      Authorization: 'Bearer slow-client', 'Idempotency-Key': `slow-${Date.now()}`,
    };
    const answer = await trickle(worker.url, headLines('POST', '/api/charges', headers), body, { pieces: 20, everyMs: 400 });
    assert.equal(answer.status, 408, answer.text);
    assert.equal(JSON.parse(answer.text).type, 'urn:webhook-dedup:problem:body-timeout');
    assert.equal(origin.requests.length, seen, 'nothing reached the origin');
    assert.equal(storageDump(worker.persistDir), before, 'nothing written');
  });

  test('a body sent in pieces that ends within the deadline is served', async () => {
    const id = eventId('pieces');
    const payload = eventPayload(id);
    const headers = {
      'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload),
      'Stripe-Signature': signatureFor(payload, SECRET), Connection: 'close',
    };
    const answer = await trickle(worker.url, headLines('POST', '/webhooks/stripe', headers), payload, { pieces: 3, everyMs: 300 });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(JSON.parse(answer.text).status, 'processed');
  });

  test('an event id given twice is de-duplicated on the last, the one the handler\'s JSON.parse reads', async () => {
    const first = eventId('first');
    const last = eventId('last');
    const payload = `{"id":"${first}","object":"event","id":"${last}","type":"payment_intent.succeeded","created":1,"livemode":false,"data":{"object":{}}}`;
    const headers = { 'content-type': 'application/json', 'stripe-signature': signatureFor(payload, SECRET) };
    const answer = await call(`${worker.url}/webhooks/stripe`, { method: 'POST', headers, body: payload });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.event_id, last);
    assert.equal(JSON.parse(payload).id, last);
    const again = await call(`${worker.url}/webhooks/stripe`, { method: 'POST', headers, body: payload });
    assert.equal(again.json.status, 'duplicate', 'the repeat is a duplicate of the last id');
  });

  test('a signed body that is not a usable event is refused without a fragment of it', async () => {
    const seen = origin.requests.length;
    for (const [body, code] of [
      ['{"id":"evt_quoted", cus_secret@example.com}', 'invalid_json'],
      ['cus_secret@example.com', 'invalid_json'],
      ['{"id":"evt_quoted","type":"x","livemode":"cus_secret@example.com"}', 'invalid_envelope'],
      ['{"id":"cus_secret@example.com","type":"x"}', 'invalid_event_id'],
    ]) {
      const answer = await call(`${worker.url}/webhooks/stripe`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(body, SECRET) }, body,
      });
      assert.equal(answer.status, 400, body);
      assert.equal(answer.json.error, code, body);
      assert.doesNotMatch(answer.text, /cus_secret/, body);
      const line = await worker.waitForLog((l) => l.route === 'webhook' && l.outcome === code);
      assert.doesNotMatch(JSON.stringify(line), /cus_secret/, body);
    }
    assert.equal(origin.requests.length, seen, 'nothing forwarded');
  });

  test('/healthz shows an anonymous caller its status, not which senders are on; the operator sees them', async () => {
    const anonymous = await call(`${worker.url}/healthz`);
    assert.equal(anonymous.status, 200);
    assert.deepEqual(Object.keys(anonymous.json).sort(), ['name', 'status', 'version']);
    assert.equal(anonymous.json.status, 'ok');
    assert.doesNotMatch(anonymous.text, /github|stripe|sync|queue/);
    const wrong = await call(`${worker.url}/healthz`, { headers: bearer('wrong-token-wrong-token') });
    assert.deepEqual(wrong.json, anonymous.json, 'a wrong token sees what anyone sees');
    const operator = await call(`${worker.url}/healthz`, { headers: bearer() });
    assert.deepEqual(operator.json.providers, { stripe: 'sync', github: 'queue' });
  });

  test('the API origin never sees a client-chosen address, host or scheme (keyed and pass-through)', async () => {
    const spoof = {
      'cf-connecting-ip': '203.0.113.7',
      'x-real-ip': '6.6.6.6',
      'x-forwarded-for': '6.6.6.6',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-prefix': '/admin',
      forwarded: 'for=6.6.6.6;proto=http;host=evil.example',
      'true-client-ip': '6.6.6.6',
      // What a deny-list let through: headers origins and their frameworks read as the URL, the
      // host or the address.
      'x-original-url': '/admin',
      'x-rewrite-url': '/admin',
      'x-host': 'evil.example',
      'fastly-client-ip': '6.6.6.6',
      'x-originating-ip': '6.6.6.6',
      'x-some-new-proxy-header': 'evil',
    };
    const target = `/api/address/${Date.now()}`;
    const keyed = await call(`${worker.url}${target}`, {
      method: 'POST', headers: { ...spoof, authorization: 'Bearer alice', 'idempotency-key': `addr-${Date.now()}` }, body: '{}',
    });
    assert.equal(keyed.status, 200, keyed.text);
    assert.equal((await call(`${worker.url}${target}`, { headers: spoof })).status, 200);
    const seen = origin.requests.filter((r) => r.url === `/v1${target}`);
    assert.equal(seen.length, 2);
    for (const request of seen) {
      assert.equal(request.headers['x-forwarded-for'], '203.0.113.7', request.method);
      assert.equal(request.headers['x-real-ip'], '203.0.113.7', request.method);
      for (const name of ['forwarded', 'true-client-ip', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-prefix',
        'x-original-url', 'x-rewrite-url', 'x-host', 'fastly-client-ip', 'x-originating-ip', 'x-some-new-proxy-header']) {
        assert.equal(request.headers[name], undefined, `${request.method} ${name}`);
      }
      assert.equal(request.headers.authorization, request.method === 'POST' ? 'Bearer alice' : undefined, 'the request\'s own headers pass');
    }
  });

  test('encoded slashes and dot-segments in an /api/ path are refused (400 path-refused): nothing reaches the origin', async () => {
    const before = storageDump(worker.persistDir);
    const seen = origin.requests.length;
    for (const [method, target] of [
      ['GET', '/api/a/..%2F..%2Fadmin'],
      ['GET', '/api/a%2fb'],
      ['GET', '/api/a%5Cb'],
      ['GET', '/api/a%252Fb'],
      ['POST', '/api/x/%2e%2e%2f%2e%2e%2fadmin'],
      ['POST', '/api/%2E%2E%5C%2E%2E%5Cadmin'],
    ]) {
      const body = method === 'POST' ? '{}' : '';
      const headers = { authorization: 'Bearer alice', 'idempotency-key': `path-${Date.now()}`, 'Content-Length': body.length, Connection: 'close' };
      const answer = await trickle(worker.url, headLines(method, target, headers), body);
      assert.equal(answer.status, 400, `${target}: ${answer.text}`);
      assert.equal(JSON.parse(answer.text).type, 'urn:webhook-dedup:problem:path-refused', target);
    }
    assert.equal(origin.requests.length, seen, 'nothing reached the origin');
    assert.equal(storageDump(worker.persistDir), before, 'nothing written');
    // Dot-segments the runtime resolves before the worker sees them never leave the door's
    // own path: what is left is refused, or an /api/ path, or another route.
    for (const target of ['/api/a/%2e%2e/%2e%2e/admin', '/api/a/../../admin', '/api/./x/..']) {
      const answer = await trickle(worker.url, headLines('GET', target, { Connection: 'close', 'Content-Length': 0 }), '');
      assert.notEqual(answer.status, 500, `${target}: ${answer.text}`);
    }
    for (const request of origin.requests.slice(seen)) assert.match(request.url, /^\/v1\/api\//);
    const fine = await call(`${worker.url}/api/search/a.b?q=a%2Fb%2F..%2F`);
    assert.equal(fine.status, 200, 'a query may hold them, and a dot inside a segment is no dot-segment');
    assert.equal(origin.requests.at(-1).url, '/v1/api/search/a.b?q=a%2Fb%2F..%2F');
  });

  test('a ; path parameter, or a dot-segment in any encoding, in an /api/ path is refused (400 path-refused): nothing reaches the origin', async () => {
    const before = storageDump(worker.persistDir);
    const seen = origin.requests.length;
    // Each as the table in src/idempotency/path.rs explains: what Tomcat, Jetty, older Spring,
    // IIS or a double-decoding proxy read as a dot-segment, a separator or a parameter.
    const forms = [
      '/api/..;/..;/admin', '/api/.;/admin', '/api/x/..;jsessionid=1/admin', '/api/%2e%2e;/admin',
      '/api/%2E%2E%3B/admin', '/api/items;v=2', '/api/%252e./admin',
      '/api/%25252e%25252e/admin', '/api/%u002e%u002e/admin', '/api/%c0%ae%c0%ae/admin',
      '/api/%e0%80%ae%e0%80%ae/admin', '/api/x%c0%afadmin', '/api/..%5cadmin', '/api/..%255cadmin',
      '/api/x%00.json', '/api/x%zz',
    ];
    for (const target of forms) {
      for (const method of ['GET', 'POST']) {
        const body = method === 'POST' ? '{}' : '';
        const headers = { authorization: 'Bearer alice', 'idempotency-key': `param-${Date.now()}`, 'Content-Length': body.length, Connection: 'close' };
        const answer = await trickle(worker.url, headLines(method, target, headers), body);
        assert.equal(answer.status, 400, `${method} ${target}: ${answer.text}`);
        assert.equal(JSON.parse(answer.text).type, 'urn:webhook-dedup:problem:path-refused', target);
      }
    }
    assert.equal(origin.requests.length, seen, 'nothing reached the origin');
    assert.equal(storageDump(worker.persistDir), before, 'nothing written');
    // Paths no origin reads as another still pass.
    for (const target of ['/api/files/a.b', '/api/files/...', '/api/search/100%25', '/api/caf%C3%A9']) {
      const answer = await trickle(worker.url, headLines('GET', target, { Connection: 'close', 'Content-Length': 0 }), '');
      assert.equal(answer.status, 200, `${target}: ${answer.text}`);
      assert.equal(origin.requests.at(-1).url, `/v1${target}`);
    }
  });

  test('an early refusal reaches the client before its body: headers and a few bytes, then a stall, on every door', async () => {
    const before = storageDump(worker.persistDir);
    const seen = origin.requests.length;
    const t = Math.floor(Date.now() / 1000);
    const forged = `t=${t},v1=${'ab'.repeat(32)}`; // well formed and fresh: its body would be read
    const big = { 'Content-Type': 'application/json', 'Content-Length': 1_000_000 };
    const small = { 'Content-Type': 'application/json', 'Content-Length': 900 };
    const cases = [
      ['POST', '/webhooks/stripe', big, 400, 'missing_signature'],
      ['POST', '/webhooks/stripe', { ...small, 'Stripe-Signature': `t=${t - 3600},v1=${'ab'.repeat(32)}` }, 400, 'timestamp_too_old'],
      ['POST', '/webhooks/stripe', { ...big, 'Stripe-Signature': forged }, 413, 'body_too_large'],
      ['POST', '/webhooks/github', small, 400, 'missing_signature'],
      ['POST', '/webhooks/github', { ...small, 'X-Hub-Signature-256': `sha256=${'ab'.repeat(32)}`, 'X-GitHub-Delivery': '..' }, 400, 'invalid_delivery_id'],
      ['POST', '/webhooks/github', { ...big, 'X-Hub-Signature-256': `sha256=${'ab'.repeat(32)}`, 'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' }, 413, 'body_too_large'],
      ['POST', '/webhooks/shopify', small, 400, 'missing_signature'], // a sender that is off
      ['PUT', '/webhooks/stripe', big, 405, 'method_not_allowed'],
      ['POST', '/api/charges', { ...big, Authorization: 'Bearer alice', 'Idempotency-Key': `early-${Date.now()}` }, 413, 'urn:webhook-dedup:problem:body-too-large'],
      ['POST', '/api/..;/admin', big, 400, 'urn:webhook-dedup:problem:path-refused'],
      ['POST', '/admin/events/evt_early/release', small, 401, 'unauthorized'],
      ['POST', '/healthz', small, 405, 'method_not_allowed'],
      ['POST', '/nowhere', small, 404, 'not_found'],
    ];
    const times = [];
    for (const [method, target, headers, status, code] of cases) {
      // Twenty bytes of the body, then nothing: the answer must not wait for the rest.
      const answer = await trickle(worker.url, headLines(method, target, headers), '{"id":"evt_early"...');
      assert.equal(answer.status, status, `${method} ${target}: ${answer.text}`);
      const json = JSON.parse(answer.text);
      assert.equal(json.type ?? json.error, code, target);
      assert.ok(answer.ms < 1_000, `${method} ${target}: answered after ${answer.ms} ms, before the 1.5 s body deadline`);
      times.push(answer.ms);
    }
    assert.equal(origin.requests.length, seen, 'nothing reached the origin');
    assert.equal(storageDump(worker.persistDir), before, 'nothing written');
    process.stdout.write(`# early refusals answered in ${Math.min(...times)} to ${Math.max(...times)} ms\n`);
  });

  test('admin answers are never cached nor sniffed, the 401 included', async () => {
    for (const [headers, status] of [[bearer(), 200], [{}, 401]]) {
      const answer = await call(`${worker.url}/admin/summary`, { headers });
      assert.equal(answer.status, status);
      assert.equal(answer.headers.get('cache-control'), 'no-store');
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    }
  });

  test('a replay keeps the CORS and browser-safety headers, never Set-Cookie', async () => {
    const target = `/api/cors/${Date.now()}`;
    const kept = {
      'access-control-allow-origin': 'https://app.example',
      'access-control-allow-credentials': 'true',
      'access-control-expose-headers': 'Request-Id',
      'content-security-policy': "default-src 'none'",
      'x-content-type-options': 'nosniff',
      vary: 'Origin',
    };
    behaviour.set(`/v1${target}`, () => ({ status: 201, body: '{"id":1}', headers: { ...kept, 'set-cookie': 'session=never-replayed' } }));
    const send = () => call(`${worker.url}${target}`, {
      method: 'POST', headers: { authorization: 'Bearer browser', 'idempotency-key': 'cors-1', origin: 'https://app.example' }, body: '{}',
    });
    const first = await send();
    assert.equal(first.status, 201);
    const replay = await send();
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    for (const [name, value] of Object.entries(kept)) {
      // The door adds its own sandbox policy beside the origin's (a browser enforces both).
      const expected = name === 'content-security-policy' ? `${value}, sandbox` : value;
      assert.equal(replay.headers.get(name), expected, name);
    }
    assert.equal(replay.headers.get('set-cookie'), null);
  });
});

describe('unsigned headers, and a flood of dead letters (GitHub, Shopify, Standard Webhooks on; 2 dead-letter notifications per sender per 10 s)', () => {
  const SHOPIFY_SECRET = 'flood-shopify-secret';
  const STANDARD_SECRET = standardSecret('flood-standard');
  const ALERT_SECRET = standardSecret('flood-alerts');
  let origin;
  let alerts;
  let worker;
  before(async () => {
    // The handler refuses every GitHub delivery (422): each is dead-lettered at its first attempt.
    origin = await startOrigin((req) => (req.headers['x-github-event'] ? { status: 422, body: 'seen before' } : { status: 200 }));
    alerts = await startOrigin(() => ({ status: 204, body: '' }));
    worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: origin.url,
        GITHUB_WEBHOOK_SECRET: GITHUB_SECRET, SHOPIFY_WEBHOOK_SECRET: SHOPIFY_SECRET, STANDARD_WEBHOOK_SECRET: STANDARD_SECRET,
        ADMIN_TOKEN: TOKEN,
        ALERT_URL: `${alerts.url}/ops`, ALERT_SECRET, // plain http to a loopback host: allowed for local runs
        ALERT_DEAD_LETTER_LIMIT: '2', ALERT_DEAD_LETTER_INTERVAL_SECONDS: '10',
      },
    });
  });
  after(async () => {
    await worker?.dispose();
    await origin?.close();
    await alerts?.close();
  });

  test('unsigned headers outside each sender\'s alphabet are refused with a code, even under a valid signature, and nothing is written', async () => {
    const before = storageDump(worker.persistDir);
    const seen = origin.requests.length;
    const link = '<https://evil.example|ROTATE-ADMIN-TOKEN>';
    const secrets = { github: GITHUB_SECRET, shopify: SHOPIFY_SECRET, standard: STANDARD_SECRET };
    const cases = [
      ['github', { id: '..' }, {}, 'invalid_delivery_id'],
      ['github', { id: '.' }, {}, 'invalid_delivery_id'],
      ['github', { id: link }, {}, 'invalid_delivery_id'],
      ['github', { id: 'made-up-1' }, {}, 'invalid_delivery_id'],
      ['github', {}, { 'x-github-event': link }, 'invalid_event_type'],
      ['github', {}, { 'x-github-event': 'Push' }, 'invalid_event_type'],
      ['shopify', { id: '..' }, {}, 'invalid_delivery_id'],
      ['shopify', {}, { 'x-shopify-topic': `${link}/x` }, 'invalid_topic'],
      ['shopify', {}, { 'x-shopify-topic': '../admin' }, 'invalid_topic'],
      ['shopify', {}, { 'x-shopify-shop-domain': 'shop.evil.example' }, 'invalid_shop_domain'],
      ['shopify', {}, { 'x-shopify-shop-domain': `${link}.myshopify.com` }, 'invalid_shop_domain'],
      ['standard', { id: '..' }, {}, 'invalid_delivery_id'],
      ['standard', { id: '.' }, {}, 'invalid_delivery_id'],
      ['standard', { id: 'msg.1' }, {}, 'invalid_delivery_id'],
    ];
    for (const [provider, opts, extra, code] of cases) {
      const id = opts.id ?? deliveryId(provider);
      const body = JSON.stringify({ flood: provider, id });
      // Signed with the worker's own secret: only the alphabet can refuse it.
      const answer = await deliverAs(worker, provider, { id, body, secret: secrets[provider], headers: extra });
      assert.equal(answer.status, 400, `${provider} ${JSON.stringify({ id, ...extra })}: ${answer.text}`);
      assert.equal(answer.json.error, code, `${provider} ${JSON.stringify(extra)}`);
      assert.doesNotMatch(answer.text, /evil\.example/, 'the refusal does not echo the header');
    }
    assert.equal(origin.requests.length, seen, 'nothing forwarded');
    assert.equal(storageDump(worker.persistDir), before, 'nothing written');
  });

  test('a flood of dead letters from one sender costs two notifications and one digest per interval; each carries only text in the sender\'s alphabet', async () => {
    const started = Date.now();
    const ids = [];
    for (let n = 0; n < 5; n += 1) {
      const id = deliveryId('github');
      ids.push(id);
      const answer = await deliverAs(worker, 'github', { id, body: JSON.stringify({ replayed: n }), secret: GITHUB_SECRET, event: 'push' });
      assert.equal(answer.json?.status, 'queued', answer.text);
    }
    const verified = () => alerts.requests.map((r) => new Webhook(ALERT_SECRET).verify(r.body.toString('utf8'), r.headers));
    const ofType = (type) => verified().filter((n) => n.type === type);
    const digest = await until(() => ofType('delivery.dead_lettered_digest')[0], 30_000, 'the digest at the end of the interval');
    const single = ofType('delivery.dead_lettered');
    assert.equal(single.length, 2, 'two notified one by one');
    assert.equal(digest.data.provider, 'github');
    assert.equal(digest.data.count, 3, 'the three others counted');
    assert.equal(digest.data.notified, 2);
    assert.equal(digest.data.interval_seconds, 10);
    assert.ok(Date.now() - started >= 9_000, 'sent when the interval ended');
    for (const notification of single) {
      assert.match(notification.data.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a GUID, nothing else');
      assert.match(notification.data.event_type, /^[a-z_]+$/);
      assert.ok(ids.includes(notification.data.id));
    }
    // The digest's link is the list of those dead letters, as the operator reads it.
    assert.match(digest.data.list, /^\/admin\/dead-letters\?provider=github&state=dead&since=/);
    const listed = await call(`${worker.url}${digest.data.list}`, { headers: bearer() });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json.items.map((i) => i.id).sort(), [...ids].sort(), 'the five, by the digest\'s link');
    await sleep(1_000);
    // The origin's failures across events make one origin.failing besides (its own interval).
    assert.deepEqual(verified().map((n) => n.type).filter((type) => type.startsWith('delivery.')).sort(),
      ['delivery.dead_lettered', 'delivery.dead_lettered', 'delivery.dead_lettered_digest'], 'nothing more');
  });
});

test('ALERT_URL must be https (http only to a loopback host) and ALERT_SECRET 24 to 64 bytes: /healthz names each', async (t) => {
  const short = `whsec_${Buffer.alloc(16, 7).toString('base64')}`;
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/x', ALERT_URL: 'http://alerts.example/ops', ALERT_SECRET: short },
  });
  t.after(() => worker.dispose());
  const health = await call(`${worker.url}/healthz`);
  assert.equal(health.status, 503);
  assert.deepEqual(health.json.problems.map((p) => p.key), ['ALERT_URL', 'ALERT_SECRET']);
  assert.match(health.json.problems[0].problem, /https/);
  assert.match(health.json.problems[1].problem, /24 to 64 bytes/);
  assert.doesNotMatch(health.text, /alerts\.example|whsec_/, 'never a value');
});

/** Every way a request without the token can reach an admin or test route. */
const LOCKED = [
  ['GET', '/admin/events/evt_locked'],
  ['DELETE', '/admin/events/evt_locked'],
  ['POST', '/admin/events/evt_locked/release'],
  ['GET', '/admin/dead-letters'],
  ['GET', '/admin/summary'],
  ['GET', '/admin/no-such-route'],
  ['HEAD', '/admin/'],
  ['GET', '/_test/claims/evt_locked'],
  ['POST', '/_test/signature'],
  ['POST', '/_test/error'],
  ['GET', '/_test/no-such-route'],
];

/** The answers `worker` gives to every locked request, without a token and with a wrong one. */
async function lockedAnswers(worker) {
  const answers = [];
  for (const headers of [{}, bearer('wrong-token-wrong-token'), { authorization: TOKEN }]) {
    for (const [method, target] of LOCKED) {
      const answer = await call(`${worker.url}${target}`, { method, headers });
      answers.push({
        request: `${method} ${target} ${JSON.stringify(headers)}`,
        status: answer.status,
        text: method === 'HEAD' ? null : answer.text,
        contentType: answer.headers.get('content-type'),
        authenticate: answer.headers.get('www-authenticate'),
      });
    }
  }
  return answers;
}

describe('one answer without the token, whatever the configuration', () => {
  const workers = {};
  before(async () => {
    const base = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/x' };
    workers.on = await startWorker({ vars: { ...base, ADMIN_TOKEN: TOKEN, ENABLE_TEST_ROUTES: 'true' } });
    workers.testRoutesOff = await startWorker({ vars: { ...base, ADMIN_TOKEN: TOKEN } });
    workers.off = await startWorker({ vars: base });
    workers.misconfigured = await startWorker({ vars: { ...base, ADMIN_TOKEN: TOKEN, ENABLE_TEST_ROUTES: 'true', LEASE_SECONDS: 'soon' } });
    workers.brokenNoToken = await startWorker({ vars: { ...base, ADMIN_TOKEN: 'short', ENABLE_TEST_ROUTES: 'true' } });
  });
  after(async () => {
    for (const worker of Object.values(workers)) await worker.dispose();
  });

  test('every admin and test route answers 401 alike, in every configuration', async () => {
    const reference = await lockedAnswers(workers.on);
    const [first] = reference;
    assert.deepEqual([first.status, JSON.parse(first.text), first.authenticate],
      [401, { error: 'unauthorized', detail: 'a valid admin bearer token is required' }, 'Bearer']);
    for (const answer of reference) {
      assert.equal(answer.status, 401, answer.request);
      if (answer.text !== null) assert.equal(answer.text, first.text, answer.request);
      assert.equal(answer.contentType, first.contentType, answer.request);
      assert.equal(answer.authenticate, 'Bearer', answer.request);
    }
    for (const [name, worker] of Object.entries(workers)) {
      assert.deepEqual(await lockedAnswers(worker), reference, name);
      const line = await worker.waitForLog((l) => (l.route === 'admin' || l.route === 'test') && l.outcome === 'unauthorized');
      assert.ok(line?.detail, `${name}: the log line says why`);
    }
  });

  test('the operator page loads without a token wherever a usable token is set, and is 401 elsewhere', async () => {
    for (const [name, expected] of [['on', 200], ['testRoutesOff', 200], ['misconfigured', 200], ['off', 401], ['brokenNoToken', 401]]) {
      for (const asset of ['', 'page.css', 'page.js']) {
        const answer = await call(`${workers[name].url}/admin/${asset}`);
        assert.equal(answer.status, expected, `${name} /admin/${asset}`);
      }
    }
  });

  test('past the gate, the operator is told what is wrong', async () => {
    const off = await call(`${workers.testRoutesOff.url}/_test/claims/evt_x`, { headers: bearer() });
    assert.deepEqual([off.status, off.json.error], [404, 'not_found'], 'test routes off');
    for (const target of ['/admin/events/evt_x', '/_test/claims/evt_x']) {
      const broken = await call(`${workers.misconfigured.url}${target}`, { headers: bearer() });
      assert.deepEqual([broken.status, broken.json.error], [500, 'misconfigured'], target);
    }
  });

  test('a runtime error reaches the log line, never the answer', async () => {
    const answer = await call(`${workers.on.url}/_test/error`, { method: 'POST', headers: bearer() });
    assert.equal(answer.status, 500);
    assert.doesNotMatch(answer.text, /secret|runtime error/);
    assert.deepEqual(answer.json, { error: 'internal_error', detail: "an internal error; the service's log says more" });
    const line = await workers.on.waitForLog((l) => l.route === 'test' && l.outcome === 'internal_error');
    assert.match(line?.detail ?? '', /a runtime error asked for by POST \/_test\/error/);
  });

  test('/healthz on a broken configuration names each key to anyone, never a value', async () => {
    const health = await call(`${workers.misconfigured.url}/healthz`);
    assert.equal(health.status, 503);
    assert.deepEqual(health.json.problems.map((p) => p.key), ['LEASE_SECONDS']);
    assert.doesNotMatch(health.text, /soon|providers/);
  });
});

test('a rate limiter that fails lets requests through, with a rate_limit_failed log line', async (t) => {
  const origin = await startOrigin();
  // A var under each limiter's binding name: a binding of the wrong kind, as a misedited
  // wrangler.toml would make, so every check of the limiter fails.
  const worker = await startWorker({
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET,
      ORIGIN_URL: `${origin.url}/hook`,
      GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
      API_ORIGIN_URL: origin.url,
      IDEMPOTENCY_RATE_LIMITER: 'not-a-limiter',
      WEBHOOK_REPLAY_LIMITER: 'not-a-limiter',
    },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  const keyed = await call(`${worker.url}/api/limited`, {
    method: 'POST', headers: { authorization: 'Bearer alice', 'idempotency-key': 'limited-1' }, body: '{}',
  });
  assert.equal(keyed.status, 200, keyed.text);
  const api = await worker.waitForLog((l) => l.outcome === 'rate_limit_failed' && l.route === 'idempotency');
  assert.ok(api, 'the keyed request logged the failed limiter');
  assert.equal(api.level, 'error');
  assert.match(api.detail, /IDEMPOTENCY_RATE_LIMITER: the binding is not a rate limiter/);
  const id = deliveryId('github');
  const delivered = await deliverAs(worker, 'github', { id, body: JSON.stringify({ zen: 'x' }), secret: GITHUB_SECRET });
  assert.equal(delivered.status, 200, delivered.text);
  const webhook = await worker.waitForLog((l) => l.outcome === 'rate_limit_failed' && l.route === 'webhook');
  assert.match(webhook?.detail ?? '', /WEBHOOK_REPLAY_LIMITER/);
});

test('anonymous keyed callers share one rate-limit bucket (IDEMPOTENCY_ALLOW_ANONYMOUS=true)', async (t) => {
  const origin = await startOrigin();
  const worker = await startWorker({
    config: path.join(ROOT, 'tests', 'wrangler.ratelimit.test.toml'),
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET,
      ORIGIN_URL: `${origin.url}/hook`,
      API_ORIGIN_URL: origin.url,
      IDEMPOTENCY_ALLOW_ANONYMOUS: 'true',
    },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  // Each from its own address, so only the shared anonymous bucket (5 a minute) can stop them.
  const statuses = [];
  for (let n = 0; n < 7; n += 1) {
    const answer = await call(`${worker.url}/api/anon/${n}`, {
      method: 'POST', headers: { 'idempotency-key': `anon-${n}`, 'cf-connecting-ip': `198.51.100.${n + 1}` }, body: '{}',
    });
    statuses.push(answer.status);
  }
  assert.ok(statuses.includes(429), `one caller's use spends every anonymous caller's: ${statuses}`);
  const named = await call(`${worker.url}/api/anon/named`, {
    method: 'POST', headers: { 'idempotency-key': 'anon-named', authorization: 'Bearer carol', 'cf-connecting-ip': '198.51.100.50' }, body: '{}',
  });
  assert.equal(named.status, 200, 'a caller that names itself has its own bucket');
});

// The senders' schemes leave these headers unsigned, so the worker cannot refuse a forged one:
// this pins what SECURITY.md tells handlers (the headers reach them as sent) and the bound the
// worker does keep (every resend of one signed body spends that body's replay budget).
test('a captured Shopify orders/create body resent as shop/redact for another shop is a new record and reaches the handler as sent; each resend spends the body\'s replay budget', async (t) => {
  const origin = await startOrigin(() => ({ status: 200 }));
  const worker = await startWorker({
    config: path.join(ROOT, 'tests', 'wrangler.ratelimit.test.toml'),
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: origin.url,
      SHOPIFY_WEBHOOK_SECRET: 'shopify-app-secret', GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
    },
  });
  t.after(async () => {
    await worker.dispose();
    await origin.close();
  });
  // Shop A's genuine delivery, captured. One app secret signs every shop's webhooks.
  const id = deliveryId('shopify');
  const body = JSON.stringify({ id: 820982911946154500, email: 'jon@example.com', total_price: '10.00' });
  const captured = await signedHeaders('shopify', { id, body, secret: 'shopify-app-secret', event: 'orders/create' });
  captured['x-shopify-shop-domain'] = 'shop-a.myshopify.com';
  assert.deepEqual((await send(worker, 'shopify', body, captured)).json, { status: 'queued', event_id: `orders/create:${id}` });
  // The same bytes and signature, under another topic and another shop: it verifies.
  const forged = { ...captured, 'x-shopify-topic': 'shop/redact', 'x-shopify-shop-domain': 'shop-b.myshopify.com' };
  const answer = await send(worker, 'shopify', body, forged);
  assert.deepEqual(answer.json, { status: 'queued', event_id: `shop/redact:${id}` }, 'a new record');
  const redact = await until(() => origin.requests.find((r) => r.headers['x-shopify-topic'] === 'shop/redact'), 10_000, 'the forged topic forwarded');
  assert.equal(redact.headers['x-shopify-shop-domain'], 'shop-b.myshopify.com', 'the forged shop reaches the handler');
  assert.equal(redact.body.toString(), body, 'with shop A\'s order as its body');
  // GitHub: the event header is as unsigned; a push body resent as another event verifies.
  const push = JSON.stringify({ ref: 'refs/heads/main', after: 'abc', repository: { full_name: 'o/r' } });
  const pushed = await signedHeaders('github', { id: deliveryId('github'), body: push, secret: GITHUB_SECRET, event: 'push' });
  assert.equal((await send(worker, 'github', push, pushed)).status, 200);
  const renamed = await send(worker, 'github', push, { ...pushed, 'x-github-delivery': deliveryId('github'), 'x-github-event': 'delete' });
  assert.equal(renamed.status, 200, renamed.text);
  await until(() => origin.requests.find((r) => r.headers['x-github-event'] === 'delete'), 10_000, 'the renamed event forwarded');
  // The bound: each topic is a new record, and every one spends the same body's budget (3 a
  // minute here): it runs out within a window and a half, and the refused one writes nothing.
  const statuses = [];
  for (const topic of ['orders/paid', 'orders/updated', 'orders/cancelled', 'orders/fulfilled', 'refunds/create']) {
    const resend = await send(worker, 'shopify', body, { ...forged, 'x-shopify-topic': topic });
    statuses.push(resend.status);
    if (resend.status === 429) {
      assert.equal(resend.json.error, 'replay_limited');
      break;
    }
    await sleep(200);
  }
  assert.ok(statuses.includes(429), `topic-switched resends are bounded by the replay limiter: ${statuses}`);
});

test('an ORIGIN_URL with credentials: its password reaches neither the answer, nor the record, nor a log line', async (t) => {
  const PASSWORD = 'hunter2-origin-password';
  // Queue mode, so that the failed attempts' reasons are kept in the record and logged.
  const worker = await startWorker({
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `http://deploy-user:${PASSWORD}@127.0.0.1:9/hook`,
      ADMIN_TOKEN: TOKEN, STRIPE_DELIVERY_MODE: 'queue',
    },
  });
  t.after(() => worker.dispose());
  const id = eventId('credentials');
  const payload = eventPayload(id);
  const answer = await call(`${worker.url}/webhooks/stripe`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(payload, SECRET) }, body: payload,
  });
  assert.equal(answer.status, 200, answer.text);
  const record = await until(async () => {
    const seen = await call(`${worker.url}/admin/events/${id}`, { headers: bearer() });
    return seen.json?.record?.last_release_reason ? seen : null;
  }, 10_000, 'a failed attempt');
  assert.doesNotMatch(record.text, new RegExp(PASSWORD));
  const lines = worker.logLines();
  assert.ok(lines.some((l) => l.key === id && l.outcome === 'retry_scheduled'), 'the failed attempt was logged');
  for (const line of lines) assert.doesNotMatch(JSON.stringify(line), new RegExp(PASSWORD));
});

/** The pids of the workerd processes this test process started. */
function workerdChildren() {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((entry) => {
    try {
      const [, comm, rest] = readFileSync(`/proc/${entry}/stat`, 'utf8').trim().match(/^\d+ \((.*)\) (.*)$/);
      return comm.startsWith('workerd') && Number(rest.split(' ')[1]) === process.pid;
    } catch {
      return false; // gone
    }
  }).map(Number);
}

/** A process's resident memory now and at its peak since the last reset, in MiB. */
function residentMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+) kB`))[1]) / 1024;
  return { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

// The isolate's 128 MB is not enforced by the local runtime, so the limit is checked by
// measurement: the rise of the runtime process's peak resident memory (both isolates and the
// runtime's own buffers: an upper bound on one isolate) while three Stripe events at the cap
// are served at once, on a fresh runtime (WebAssembly memory never shrinks), as
// bench/body-memory.mjs measures it. Linux only (/proc).
test('MAX_BODY_BYTES is at most 4 MiB: three requests at that cap at once keep the runtime under an isolate\'s 128 MiB, and four of each door are all served', { skip: process.platform !== 'linux' && 'measured through /proc (Linux only)' }, async (t) => {
  const origin = await startOrigin(() => ({ status: 200 }));
  t.after(() => origin.close());
  const vars = {
    STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: origin.url, GITHUB_WEBHOOK_SECRET: GITHUB_SECRET,
    GITHUB_DELIVERY_MODE: 'sync', API_ORIGIN_URL: origin.url,
  };
  const over = await startWorker({ vars: { ...vars, MAX_BODY_BYTES: String(4 * 1024 * 1024 + 1) } });
  try {
    const health = await call(`${over.url}/healthz`);
    assert.equal(health.status, 503);
    assert.deepEqual(health.json.problems.map((p) => p.key), ['MAX_BODY_BYTES']);
  } finally {
    await over.dispose();
  }
  const CAP = 4 * 1024 * 1024;
  const before = new Set(workerdChildren());
  const worker = await startDirect({ vars: { ...vars, MAX_BODY_BYTES: String(CAP) } });
  t.after(() => worker.dispose());
  const [pid] = workerdChildren().filter((child) => !before.has(child));
  assert.ok(pid, 'the runtime\'s process is found');
  const stripeBody = () => {
    const text = eventPayload(eventId('cap'), 'payment_intent.succeeded', { padding: '' });
    return text.replace('"padding":""', `"padding":"${'p'.repeat(CAP - text.length)}"`);
  };
  const stripe = (body) => call(`${worker.url}/webhooks/stripe`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(body, SECRET) }, body,
  });
  const small = eventPayload(eventId('warm'));
  assert.equal((await stripe(small)).status, 200, 'warmed up');
  await sleep(300);
  const level = residentMemory(pid).rss;
  writeFileSync(`/proc/${pid}/clear_refs`, '5'); // the peak starts again from now
  const three = await Promise.all([stripeBody(), stripeBody(), stripeBody()].map(stripe));
  assert.deepEqual(three.map((answer) => answer.status), [200, 200, 200]);
  const rise = residentMemory(pid).peak - level;
  t.diagnostic(`three 4 MiB Stripe events at once: the runtime's peak rose ${rise.toFixed(0)} MiB`);
  assert.ok(rise < 128, `three requests at the cap took ${rise.toFixed(0)} MiB, over an isolate's 128 MiB`);
  // Four of each door at once are all served.
  const sends = [];
  for (let n = 0; n < 4; n += 1) {
    const body = stripeBody();
    assert.equal(Buffer.byteLength(body), CAP);
    sends.push(stripe(body));
    sends.push(call(`${worker.url}/api/cap/${n}`, {
      method: 'POST', headers: { authorization: `Bearer cap-${n}`, 'idempotency-key': `cap-${n}` }, body: 'k'.repeat(CAP),
    }));
  }
  const statuses = (await Promise.all(sends)).map((answer) => answer.status);
  assert.deepEqual(statuses, Array(8).fill(200));
  // One byte over: refused before it is read (a raw request, as the worker answers before the
  // body has all arrived and closes the connection).
  const over1 = `${stripeBody()} `;
  const head = headLines('POST', '/webhooks/stripe', {
    'Content-Type': 'application/json', 'Stripe-Signature': signatureFor(over1, SECRET), 'Content-Length': Buffer.byteLength(over1),
  });
  const refused = await trickle(worker.url, head, over1.slice(0, 1024));
  assert.equal(refused.status, 413);
});
