// Where a duplicate's cost goes: the runtime's CPU per request (straight to workerd, 1 KiB
// bodies, the benchmark's concurrency) for a ladder of probes, each doing a little more of a
// duplicate delivery's work, measured in the same run:
//   - a JavaScript Worker that reads the body and answers (answer.js);
//   - the same, plus one log line of the size this worker writes (answer-with-log.js);
//   - the same as the first, plus one RPC call to this project's Rust object, which answers at
//     once (object-request.js);
//   - this worker refusing an unknown path: its entry point, log line and JSON answer;
//   - this worker refusing a delivery with a wrong signature: configuration, body, WebCrypto HMAC;
//   - this worker answering a duplicate: all of the above plus the request to the event's
//     object, which reads the record and answers;
//   - the JavaScript peer answering a duplicate.
// The differences between rungs say what each step costs; BENCHMARKS.md prints them.
import path from 'node:path';

import { COMPATIBILITY_DATE, ROOT } from '../../tests/harness.mjs';
import { drive, summary } from '../load.mjs';

const REPEATS = 3;

/** A JavaScript probe straight on workerd; `withObject` bundles this project's object. */
async function startProbe(file, withObject) {
  const { Miniflare, convertV4MiniflareOptions } = await import('miniflare');
  const modules = [{ type: 'ESModule', path: path.join(ROOT, 'bench', 'anatomy', file) }];
  if (withObject) {
    modules.push(
      { type: 'ESModule', path: path.join(ROOT, 'build', 'index.js') },
      { type: 'CompiledWasm', path: path.join(ROOT, 'build', 'index_bg.wasm') },
    );
  }
  const mf = new Miniflare(convertV4MiniflareOptions({
    compatibilityDate: COMPATIBILITY_DATE,
    host: '127.0.0.1',
    port: 0,
    modulesRoot: ROOT,
    modules,
    ...(withObject ? { durableObjects: { CLAIM_AUTHORITY: { className: 'ClaimAuthority', useSQLite: true } } } : {}),
  }));
  const url = (await mf.ready).toString().replace(/\/$/, '');
  return { url, stop: () => mf.dispose() };
}

/**
 * Measures each rung. `start(kind)` starts this project's worker ('worker') or the peer
 * ('peer') straight on workerd; `signed(ids)` and `forged(ids)` make 1 KiB deliveries of event
 * `ids`, signed with the right and a wrong secret. Returns the rungs in order, each
 * { name, cpu: { median, min, max } (ms per request), statuses }, or null where the runtime's
 * CPU cannot be read.
 */
export async function anatomy({ start, signed, forged, requests, concurrency, log }) {
  const names = Array.from({ length: 20 }, (_, i) => `evt_anatomy${Date.now().toString(36)}${i}`);
  const cycle = (list) => Array.from({ length: requests }, (_, i) => list[i % list.length]);
  const plain = (list) => list.map((name) => ({
    method: 'POST', path: '/webhooks/stripe', headers: { 'content-type': 'application/json', 'x-object-name': name }, body: '{}'.padEnd(1024, ' '),
  }));
  const rungs = [
    { name: 'javascript-answer', runtime: () => startProbe('answer.js', false), make: async () => cycle(plain(names)) },
    { name: 'javascript-answer-and-log', runtime: () => startProbe('answer-with-log.js', false), make: async () => cycle(plain(names)) },
    { name: 'javascript-object-request', runtime: () => startProbe('object-request.js', true), make: async () => cycle(plain(names)) },
    { name: 'worker-unknown-path', runtime: () => start('worker'), make: async () => cycle(plain(names).map((r) => ({ ...r, path: '/anatomy' }))) },
    { name: 'worker-wrong-signature', runtime: () => start('worker'), make: async () => cycle(await forged(names)) },
    { name: 'worker-duplicate', runtime: () => start('worker'), make: async () => cycle(await signed(names)), seed: () => signed(names) },
    { name: 'peer-duplicate', runtime: () => start('peer'), make: async () => cycle(await signed(names)), seed: () => signed(names) },
  ];
  const measured = [];
  for (const rung of rungs) {
    const runtime = await rung.runtime();
    try {
      if (rung.seed) await drive(runtime.url, await rung.seed(), names.length);
      await drive(runtime.url, await rung.make(), concurrency);
      const runs = [];
      for (let i = 0; i < REPEATS; i += 1) runs.push(await drive(runtime.url, await rung.make(), concurrency));
      if (runs.some((r) => r.cpu === undefined)) return null;
      const statuses = Object.keys(Object.assign({}, ...runs.map((r) => r.statuses))).join(', ');
      const cpu = summary(runs.map((r) => r.cpu));
      log(`anatomy ${rung.name}: ${cpu.median.toFixed(3)} ms CPU per request (statuses ${statuses})`);
      measured.push({ name: rung.name, cpu, statuses });
    } finally {
      await runtime.stop();
    }
  }
  return measured;
}
