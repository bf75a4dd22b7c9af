// After a Rust panic the worker goes on: the next request runs on a fresh WebAssembly instance
// (src/entry.mjs and the glue's reset), and an object made before the panic gets a fresh Rust
// core, which reads its record from storage as before. A panic is asked for through the test
// route POST /_test/panic.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { adminHeaders, call, startOrigin, startWorker } from './harness.mjs';
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
