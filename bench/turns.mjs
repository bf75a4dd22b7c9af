// What the smaller measuring tools (compare.mjs, split.mjs) share: their settings, and runtimes
// of several kinds measured in turns, round by round, each warmed alike before it is measured.
import os from 'node:os';
import path from 'node:path';
import { readFileSync } from 'node:fs';

import { startDirect } from '../tests/harness.mjs';
import { eventPayload, floorRequest, stripeDelivery } from './deliveries.mjs';
import { drive } from './load.mjs';
import { startOrigin } from './origin-process.mjs';

const CONCURRENCY = 32;
const SECRET = 'whsec_turns_secret';
/** New events sent before unique deliveries are measured: code that repeats never reach. */
const UNIQUE_WARMUP = 500;

/**
 * A tool's settings from `<PREFIX>_ROUNDS`, `_REQUESTS`, `_KIB`, `_SCENARIO` (`duplicate` or
 * `unique`) and `_WARMUP` (duplicates sent to each fresh runtime first; see RUNTIME_WARMUP in
 * bench/run.mjs), over `defaults`; and the kinds named on the command line (a build's folder,
 * `peer` or `floor`). Exits with `usage` when they make no sense.
 */
export function settings(prefix, defaults, usage) {
  const read = (name, fallback) => process.env[`${prefix}_${name}`] ?? fallback;
  const chosen = {
    rounds: Number(read('ROUNDS', defaults.rounds)),
    requests: Number(read('REQUESTS', defaults.requests)),
    kib: Number(read('KIB', 1)),
    scenario: read('SCENARIO', 'duplicate'),
    warmup: Number(read('WARMUP', 3000)),
    kinds: process.argv.slice(2),
  };
  if (chosen.kinds.length === 0 || !['duplicate', 'unique'].includes(chosen.scenario)) {
    console.error(usage);
    process.exit(2);
  }
  return chosen;
}

/**
 * Measures every kind of `chosen.kinds` once per round, in an order that turns round by round,
 * each in a fresh runtime straight to workerd (a build folder, `peer` or `floor`), against one
 * origin. Each runtime is first sent `chosen.warmup` duplicates (and, for unique deliveries,
 * new events); then `measure({ kind, runtime, requests })` gets the requests to time and returns
 * what to keep. Resolves to those results by kind, in the kinds' order.
 */
export async function inTurns(chosen, measure) {
  const { rounds, requests: count, kib, scenario, warmup, kinds } = chosen;
  const origin = await startOrigin();
  const deliveries = (ids) => ids.map((id) => stripeDelivery(eventPayload(id, kib), SECRET));
  const results = new Map(kinds.map((kind) => [kind, []]));
  try {
    for (let round = 0; round < rounds; round += 1) {
      const order = [...kinds.slice(round % kinds.length), ...kinds.slice(0, round % kinds.length)];
      for (const kind of order) {
        const vars = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, API_ORIGIN_URL: origin.url };
        const runtime = ['peer', 'floor'].includes(kind)
          ? await startDirect({ kind, vars })
          : await startDirect({ vars, buildDir: path.resolve(kind) });
        try {
          const make = kind === 'floor' ? (list) => list.map(floorRequest) : deliveries;
          const tag = `evt_${Date.now().toString(36)}t${round}`;
          const ids = (part, n) => Array.from({ length: n }, (_, i) => `${tag}${part}${i}`);
          const seen = ids('d', 20);
          await drive(runtime.url, make(seen), 20);
          await drive(runtime.url, make(Array.from({ length: warmup }, (_, i) => seen[i % 20])), CONCURRENCY);
          let requests;
          if (scenario === 'duplicate') {
            requests = make(Array.from({ length: count }, (_, i) => seen[i % 20]));
          } else {
            await drive(runtime.url, make(ids('w', UNIQUE_WARMUP)), CONCURRENCY);
            requests = make(ids('u', count));
          }
          results.get(kind).push(await measure({ kind, runtime, requests }));
        } finally {
          await runtime.dispose();
        }
      }
    }
  } finally {
    origin.stop();
  }
  return results;
}

/** Sends `requests` to `runtime` at the tools' concurrency; warns when one was not a 200. */
export async function timed(kind, runtime, requests) {
  const run = await drive(runtime.url, requests, CONCURRENCY);
  if (Object.keys(run.statuses).join() !== '200') console.error(`${kind}: statuses ${JSON.stringify(run.statuses)}`);
  return run;
}

/** Where the runtimes keep their objects' storage: the temporary folder and its file system. */
export function storageWhere() {
  let kind = 'file system unknown';
  try {
    const folder = path.resolve(os.tmpdir());
    const mount = readFileSync('/proc/mounts', 'utf8').split('\n').map((line) => line.split(' '))
      .filter(([, point]) => point && (folder === point || folder.startsWith(point === '/' ? '/' : `${point}/`)))
      .sort((a, b) => b[1].length - a[1].length)[0];
    if (mount) kind = `a ${mount[2]} file system`;
  } catch {
    // Not Linux.
  }
  return `${os.tmpdir()} (${kind})`;
}
