// During a deploy, workers and objects of two releases meet: the release before this one reached
// its object with `fetch` (its object class had no RPC method). Both directions must answer a
// retryable 503, claiming and forwarding nothing, so that the sender comes back once the deploy
// is done. The previous release is stood in for by small JavaScript scripts that do what it did;
// this release is the real build, on the real runtime.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { COMPATIBILITY_DATE, builtWorker, call, startOrigin, startWorkers, storageDump } from './harness.mjs';
import { deliver, eventId, eventPayload } from './stripe-helpers.mjs';

const SECRET = 'whsec_mixed_release';
test('a worker of the previous release meets this release\'s object: 503, a retryable failure in the old form, nothing stored', async (t) => {
  // The previous release's worker sent its frame to the object by fetch and read the reply
  // from the x-authority-reply header.
  const previousWorker = {
    name: 'front',
    compatibilityDate: COMPATIBILITY_DATE,
    modules: true,
    script: `export default {
      async fetch(request, env) {
        const stub = env.CLAIM_AUTHORITY.get(env.CLAIM_AUTHORITY.idFromName('evt_previous_release'));
        const answer = await stub.fetch('https://claim-authority/', { method: 'POST', body: 'a frame of the previous release' });
        return Response.json({ status: answer.status, reply: answer.headers.get('x-authority-reply') });
      },
    };`,
    durableObjects: { CLAIM_AUTHORITY: { className: 'ClaimAuthority', scriptName: 'objects', useSQLite: true } },
  };
  const runtime = await startWorkers([previousWorker, builtWorker('objects', { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: 'http://127.0.0.1:9/unused' })]);
  t.after(() => runtime.dispose());

  const answer = await call(runtime.url);
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json.status, 503);
  const reply = JSON.parse(answer.json.reply);
  assert.equal(reply.reply, 'store_failed');
  assert.equal(reply.retryable, true);
  assert.match(reply.detail, /newer release/);
  // The object answered (the reply above is its own) and wrote no record.
  const stored = storageDump(runtime.persistDir).split('\n').filter((row) => row && !row.includes(' __miniflare_do_name '));
  assert.deepEqual(stored, [], 'nothing claimed');
});

test('this release\'s worker meets an object of the previous release (no RPC method): 503 with Retry-After, nothing forwarded', async (t) => {
  const origin = await startOrigin();
  t.after(() => origin.close());
  // The previous release's object: a class that is not a DurableObject, reached only by fetch.
  const previousObjects = {
    name: 'objects',
    compatibilityDate: COMPATIBILITY_DATE,
    modules: true,
    script: `export class ClaimAuthority {
      constructor(state, env) { this.state = state; }
      async fetch() { return new Response(null, { status: 200 }); }
    }
    // The failure index's class arrives with this release's migration; the binding needs it.
    export class FailureIndex {
      constructor(state, env) { this.state = state; }
      async fetch() { return new Response(null, { status: 404 }); }
    }
    // So does the origin gates' class.
    export class OriginGate {
      constructor(state, env) { this.state = state; }
      async fetch() { return new Response(null, { status: 404 }); }
    }
    export default { fetch() { return new Response('objects only', { status: 404 }); } };`,
    durableObjects: {
      CLAIM_AUTHORITY: { className: 'ClaimAuthority', useSQLite: true },
      FAILURE_INDEX: { className: 'FailureIndex', useSQLite: true },
      ORIGIN_GATE: { className: 'OriginGate', useSQLite: true },
    },
  };
  const worker = builtWorker('front', { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/hook` }, { objects: { scriptName: 'objects' } });
  const runtime = await startWorkers([worker, previousObjects]);
  t.after(() => runtime.dispose());

  const answer = await deliver(runtime, eventPayload(eventId('mixed')), { secret: SECRET });
  assert.equal(answer.status, 503, answer.text);
  assert.ok(Number(answer.headers.get('retry-after')) >= 1, 'Retry-After');
  assert.equal(answer.json.error, 'store_unavailable', answer.text);
  assert.equal(origin.requests.length, 0, 'nothing forwarded');
});
