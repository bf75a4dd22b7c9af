// After a Rust panic, or a WebAssembly trap without one, the worker goes on: the next call runs
// on a fresh WebAssembly instance (src/entry.mjs and the glue's reset), and an object made before
// gets a fresh Rust core, which reads its record from storage as before. Panics and traps are
// asked for through the test routes: POST /_test/panic (in the worker), POST
// /_test/claims/{key}/panic and …/trap (in that key's object).
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  ROOT, adminHeaders, builtWorker, call, sleep, startOrigin, startWorker, startWorkers, until,
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
  // The 500 is the panic's: the runtime reports it with its message.
  await until(() => worker.output.includes('Rust panic: panicked at'), 5_000, 'the panic reported by the runtime')
    .catch(() => assert.fail(`the runtime reported no panic:\n${worker.output.slice(-3000)}`));

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
 * object calls: there the first call after a trap is an object's. With `logs`, the runtime's
 * log lines are kept there; `build` is another build's folder.
 */
function startSplit(vars, { logs, build } = {}) {
  return startWorkers([
    builtWorker('front', vars, { build, objects: { scriptName: 'objects' } }),
    builtWorker('objects', vars, { build }),
  ], { logs });
}

/**
 * A copy of the release build in a folder of its own whose entry says each time it makes an
 * object's Rust core: `fresh core for {object id} on instance {n}`, `n` the WebAssembly
 * instance it belongs to (src/entry.mjs, `coreOf`). Nothing else changes.
 */
function buildThatNamesCores() {
  const build = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-build-'));
  const glue = readFileSync(path.join(ROOT, 'build', 'index.js'), 'utf8');
  // The bundled (minified) form of `held = { core: new rust.ClaimAuthorityCore(object.ctx,
  // object.env), instance: init.instanceId }`.
  const made = /\w+=\{core:new \w+\((\w+)\.ctx,\1\.env\),instance:(\w+)\.instanceId\}/g;
  assert.equal(glue.match(made)?.length, 1, 'the entry makes an object\'s core in one place');
  writeFileSync(path.join(build, 'index.js'), glue.replace(made, (m, object, init) => `(console.log("fresh core for "+${object}.ctx.id.toString()+" on instance "+${init}.instanceId),${m})`));
  copyFileSync(path.join(ROOT, 'build', 'index_bg.wasm'), path.join(build, 'index_bg.wasm'));
  return build;
}

/** The cores made in `lines` (log lines), as { object, instance }. */
const coresIn = (lines) => lines.flatMap((line) => {
  const m = /^fresh core for ([0-9a-f]+) on instance (\d+)$/.exec(line);
  return m ? [{ object: m[1], instance: Number(m[2]) }] : [];
});

test('a panic or a trap in an object: its next call, the first into that isolate, gets a fresh core', async (t) => {
  const origin = await startOrigin();
  t.after(() => origin.close());
  const build = buildThatNamesCores();
  t.after(() => rmSync(build, { recursive: true, force: true }));
  const logs = [];
  const runtime = await startSplit({ STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook`, ENABLE_TEST_ROUTES: 'true' }, { logs, build });
  t.after(() => runtime.dispose());

  for (const how of ['trap', 'panic']) {
    const payload = eventPayload(eventId(how));
    const id = JSON.parse(payload).id;
    let mark = logs.length;
    const first = await deliver(runtime, payload, { secret: SECRET });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.status, 'processed');
    // The event's object got its core on the instance running now.
    const [before] = await until(() => coresIn(logs.slice(mark)).length && coresIn(logs.slice(mark)), 5_000, 'the object\'s first core');
    // The object stops mid-call: its caller is not answered (the test gives up waiting) or, when
    // the worker sends the call again and finds the object gone, answered with a 5xx. A refusal
    // (a 4xx: the route not reached) would leave nothing to recover from.
    mark = logs.length;
    const stopped = await fetch(`${runtime.url}/_test/claims/${id}/${how}`, {
      method: 'POST', headers: adminHeaders(runtime), signal: AbortSignal.timeout(2_000),
    }).then((answer) => answer.status, (error) => error.name);
    assert.ok(stopped === 'TimeoutError' || stopped >= 500, `the ${how} stopped the call (got ${stopped})`);
    if (how === 'panic') {
      // The runtime reports the panic, with the message the test route panics with.
      assert.ok(logs.slice(mark).some((line) => line.includes('Rust panic: panicked at') && line.includes('a panic asked for by the test routes')),
        `the runtime reported the panic:\n${logs.slice(mark).join('\n')}`);
    }
    // The same object again: its record read by a fresh core, the handler not run again.
    const repeat = await deliver(runtime, payload, { secret: SECRET });
    assert.equal(repeat.status, 200, `after a ${how}: ${repeat.text}`);
    assert.equal(repeat.json.status, 'duplicate', `after a ${how}`);
    // The proof that the call trapped (or panicked): the object's next call ran on a fresh
    // WebAssembly instance, which the entry starts only after a panic and the glue only after
    // a trap. The object is the same, its core a new one.
    const after = coresIn(logs.slice(mark));
    assert.equal(after.length, 1, `one fresh core after the ${how}: ${JSON.stringify(after)}\n${logs.slice(mark).join('\n')}`);
    assert.equal(after[0].object, before.object, 'the same object');
    assert.ok(after[0].instance > before.instance, `on a fresh instance (${before.instance}, then ${after[0].instance})`);
  }
  const after = await deliver(runtime, eventPayload(eventId('after')), { secret: SECRET });
  assert.equal(after.status, 200, after.text);
  assert.equal(after.json.status, 'processed');
  assert.equal(origin.requests.length, 3, 'each event forwarded once');
});

test('a trap while another call in the isolate awaits its origin: that call\'s callback, the first call into the module after the trap, is refused rather than run on the fresh instance', async (t) => {
  const held = eventId('held');
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  const origin = await startOrigin(async (request) => {
    if (request.headers['x-webhook-dedup-event-id'] === held) await answered;
    return { status: 200 };
  });
  t.after(() => origin.close());
  // The release build, its glue made to say when it refuses a closure of an earlier instance
  // (the refusal is thrown inside a promise callback, where the runtime reports nothing).
  const build = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-build-'));
  t.after(() => rmSync(build, { recursive: true, force: true }));
  const refusal = 'throw new Error("Cannot invoke closure from previous WASM instance")';
  const glue = readFileSync(path.join(ROOT, 'build', 'index.js'), 'utf8');
  assert.equal(glue.split(refusal).length, 2, 'the glue refuses stale closures in one place');
  writeFileSync(path.join(build, 'index.js'), glue.replace(refusal, 'throw (console.log("stale closure refused"), new Error("Cannot invoke closure from previous WASM instance"))'));
  copyFileSync(path.join(ROOT, 'build', 'index_bg.wasm'), path.join(build, 'index_bg.wasm'));
  const logs = [];
  const runtime = await startSplit({ STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook`, ENABLE_TEST_ROUTES: 'true' }, { logs, build });
  t.after(() => runtime.dispose());

  // A delivery whose object awaits its origin: a Rust future with a promise callback pending.
  const first = deliver(runtime, eventPayload(held), { secret: SECRET }).catch((error) => error);
  await until(() => origin.requests.some((r) => r.headers['x-webhook-dedup-event-id'] === held), 10_000, 'the held forward');
  // Another object traps. Its own call is left unanswered (nothing sends it again), so nothing
  // enters the module until the origin answers the held forward.
  const stopped = await fetch(`${runtime.url}/_test/claims/${eventId('trap')}/trap`, {
    method: 'POST', headers: adminHeaders(runtime), signal: AbortSignal.timeout(2_000),
  }).then((answer) => answer.status, (error) => error.name);
  assert.equal(stopped, 'TimeoutError', 'the trapping call is not answered');
  const before = logs.length;
  release();
  // The held call's callback comes in first: refused, never run against the fresh instance.
  // Without the guard first (scripts/build.sh), the fresh instance would be started inside the
  // callback's call and the old closure run against its memory, with nothing said.
  const refused = () => logs.slice(before).includes('stale closure refused');
  await until(refused, 10_000, 'the stale callback to be refused').catch(() => {});
  assert.ok(refused(), `the stale callback refused; the runtime said:\n${logs.slice(before).join('\n')}`);

  // The held event was neither finalized by the dead call nor run again: its claim waits for its
  // lease, as after a crash.
  const repeat = await deliver(runtime, eventPayload(held), { secret: SECRET });
  assert.equal(repeat.status, 409, repeat.text);
  const record = await call(`${runtime.url}/admin/events/${held}`, { headers: adminHeaders(runtime) });
  assert.equal(record.status, 200, record.text);
  assert.equal(record.json.record.state, 'processing');
  assert.equal(record.json.record.attempts, 1);
  // The fresh instance serves new events as before.
  const after = await deliver(runtime, eventPayload(eventId('after')), { secret: SECRET });
  assert.equal(after.status, 200, after.text);
  assert.equal(after.json.status, 'processed');
  assert.equal(origin.requests.filter((r) => r.headers['x-webhook-dedup-event-id'] === held).length, 1, 'the held event forwarded once');
  // Every call since the refusal ran on the fresh instance and none trapped: the runtime
  // reported no trap (the calls above are the barrier, not a pause).
  assert.ok(!logs.slice(before).some((line) => /RuntimeError|unreachable|out of bounds/.test(line)),
    `no trap after the fresh instance started:\n${logs.slice(before).join('\n')}`);
  // Its caller is never told "processed" by a call that died; Stripe's retry meets the claim.
  // Looked at now, after every call above: unanswered, or a failure.
  const outcome = await Promise.race([first, Promise.resolve('unanswered')]);
  assert.ok(outcome === 'unanswered' || outcome instanceof Error || outcome.status >= 500, `the held delivery answered ${outcome.status}`);
});
