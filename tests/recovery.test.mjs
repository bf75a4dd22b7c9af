// After a Rust panic, or a WebAssembly trap without one, the worker goes on: the next call runs
// on a fresh WebAssembly instance (src/entry.mjs and the glue's reset), and an object made before
// gets a fresh Rust core, which reads its record from storage as before. Panics and traps are
// asked for through the test routes: POST /_test/panic (in the worker), POST
// /_test/claims/{key}/panic and …/trap (in that key's object).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  COMPATIBILITY_DATE, ROOT, TEST_ADMIN_TOKEN, adminHeaders, call, startOrigin, startWorker,
} from './harness.mjs';
import { deliver, eventId, eventPayload } from './stripe-helpers.mjs';

const SECRET = 'whsec_recovery';

test('a panic costs its own request only: the worker and the objects made before it go on', async (t) => {
  const origin = await startOrigin();
  t.after(() => origin.close());
  const worker = await startWorker({
    vars: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook`, ENABLE_TEST_ROUTES: 'true' },
  });
  t.after(() => worker.dispose());

  const before = eventPayload(eventId('before'));
  assert.equal((await deliver(worker, before, { secret: SECRET })).status, 200);

  const panicked = await call(`${worker.url}/_test/panic`, { method: 'POST', headers: adminHeaders(worker) });
  assert.equal(panicked.status, 500, panicked.text);

  // The object of the event delivered before the panic: a duplicate, its handler not run again.
  const repeat = await deliver(worker, before, { secret: SECRET });
  assert.equal(repeat.status, 200, repeat.text);
  assert.equal(repeat.json.status, 'duplicate');
  // A new event after it: claimed, forwarded and finalized.
  const after = await deliver(worker, eventPayload(eventId('after')), { secret: SECRET });
  assert.equal(after.status, 200, after.text);
  assert.equal(after.json.status, 'processed');
  assert.equal(origin.requests.length, 2, 'each event forwarded once');
});

/**
 * The built worker with its objects in an isolate of their own (a second Worker of the same
 * build, bound by script name), as in production, where an object's isolate often serves only
 * object calls: there the first call after a trap is an object's.
 */
async function startSplit(vars) {
  const { Miniflare, convertV4MiniflareOptions } = await import('miniflare');
  const persist = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-split-'));
  const build = path.join(ROOT, 'build');
  const modules = [
    { type: 'ESModule', path: path.join(build, 'index.js') },
    { type: 'CompiledWasm', path: path.join(build, 'index_bg.wasm') },
  ];
  const bindings = { ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...vars };
  const mf = new Miniflare(convertV4MiniflareOptions({
    host: '127.0.0.1',
    port: 0,
    workers: [
      {
        name: 'front', compatibilityDate: COMPATIBILITY_DATE, modulesRoot: build, modules, bindings,
        durableObjects: { CLAIM_AUTHORITY: { className: 'ClaimAuthority', scriptName: 'objects', useSQLite: true } },
      },
      {
        name: 'objects', compatibilityDate: COMPATIBILITY_DATE, modulesRoot: build, modules, bindings,
        durableObjects: { CLAIM_AUTHORITY: { className: 'ClaimAuthority', useSQLite: true } },
        resourcePersistencePath: persist,
      },
    ],
  }));
  const url = (await mf.ready).toString().replace(/\/$/, '');
  return {
    url,
    adminToken: TEST_ADMIN_TOKEN,
    async dispose() {
      await mf.dispose();
      rmSync(persist, { recursive: true, force: true });
    },
  };
}

test('a panic or a trap in an object: its next call, the first into that isolate, gets a fresh core', async (t) => {
  const origin = await startOrigin();
  t.after(() => origin.close());
  const runtime = await startSplit({ STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook`, ENABLE_TEST_ROUTES: 'true' });
  t.after(() => runtime.dispose());

  for (const how of ['trap', 'panic']) {
    const payload = eventPayload(eventId(how));
    const id = JSON.parse(payload).id;
    const first = await deliver(runtime, payload, { secret: SECRET });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.status, 'processed');
    // The object stops mid-call: its caller is not answered (the test gives up waiting) or, when
    // the worker sends the call again and finds the object gone, answered with a 5xx. A refusal
    // (a 4xx: the route not reached) would leave nothing to recover from.
    const stopped = await fetch(`${runtime.url}/_test/claims/${id}/${how}`, {
      method: 'POST', headers: adminHeaders(runtime), signal: AbortSignal.timeout(2_000),
    }).then((answer) => answer.status, (error) => error.name);
    assert.ok(stopped === 'TimeoutError' || stopped >= 500, `the ${how} reached the object and stopped it (got ${stopped})`);
    // The same object again: its record read by a fresh core, the handler not run again.
    const repeat = await deliver(runtime, payload, { secret: SECRET });
    assert.equal(repeat.status, 200, `after a ${how}: ${repeat.text}`);
    assert.equal(repeat.json.status, 'duplicate', `after a ${how}`);
  }
  const after = await deliver(runtime, eventPayload(eventId('after')), { secret: SECRET });
  assert.equal(after.status, 200, after.text);
  assert.equal(after.json.status, 'processed');
  assert.equal(origin.requests.length, 3, 'each event forwarded once');
});
