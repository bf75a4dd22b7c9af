// `node bench/compare.mjs DIR [DIR ...]`: the runtime's CPU per request, requests per second and
// p99 of builds of this worker (each a folder holding index.js and index_bg.wasm, as
// `OUT_DIR=... npm run build` writes) and of the JavaScript peer (the word `peer`), straight to
// workerd, interleaved round by round so that the machine's drift falls on all alike. A tool for
// deciding on a change before the full benchmark: `COMPARE_ROUNDS` (5), `COMPARE_REQUESTS`
// (2000), `COMPARE_KIB` (1), `COMPARE_SCENARIO` (`duplicate` or `unique`) and `COMPARE_WARMUP`
// (3000 duplicates sent to each fresh runtime first) change the load.
import path from 'node:path';

import { startDirect } from '../tests/harness.mjs';
import { eventPayload, stripeDelivery } from './deliveries.mjs';
import { startOrigin } from './origin-process.mjs';
import { drive, summary } from './load.mjs';

const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 5);
const REQUESTS = Number(process.env.COMPARE_REQUESTS ?? 2000);
const KIB = Number(process.env.COMPARE_KIB ?? 1);
const SCENARIO = process.env.COMPARE_SCENARIO ?? 'duplicate';
// Duplicates sent to each fresh runtime before anything is measured (see RUNTIME_WARMUP in
// bench/run.mjs).
const WARMUP = Number(process.env.COMPARE_WARMUP ?? 3000);
const CONCURRENCY = 32;
const SECRET = 'whsec_compare_secret';

const kinds = process.argv.slice(2);
if (kinds.length === 0 || !['duplicate', 'unique'].includes(SCENARIO)) {
  console.error('usage: node bench/compare.mjs DIR|peer [DIR|peer ...]  (COMPARE_SCENARIO=duplicate|unique)');
  process.exit(2);
}
const origin = await startOrigin();
const deliveries = (ids) => ids.map((id) => stripeDelivery(eventPayload(id, KIB), SECRET));
const results = new Map(kinds.map((kind) => [kind, []]));
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = [...kinds.slice(round % kinds.length), ...kinds.slice(0, round % kinds.length)];
    for (const kind of order) {
      const vars = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, API_ORIGIN_URL: origin.url };
      const runtime = kind === 'peer'
        ? await startDirect({ kind: 'peer', vars })
        : await startDirect({ vars, buildDir: path.resolve(kind) });
      try {
        const tag = `evt_${Date.now().toString(36)}r${round}`;
        const ids = (part, n) => Array.from({ length: n }, (_, i) => `${tag}${part}${i}`);
        let measured;
        // Each runtime warmed alike with duplicates before it is measured (bench/run.mjs also
        // sends new events in its warm-up; see RUNTIME_WARMUP there).
        const seen = ids('d', 20);
        await drive(runtime.url, deliveries(seen), 20);
        await drive(runtime.url, deliveries(Array.from({ length: WARMUP }, (_, i) => seen[i % 20])), CONCURRENCY);
        if (SCENARIO === 'duplicate') {
          measured = await drive(runtime.url, deliveries(Array.from({ length: REQUESTS }, (_, i) => seen[i % 20])), CONCURRENCY);
        } else {
          await drive(runtime.url, deliveries(ids('w', 50)), CONCURRENCY);
          measured = await drive(runtime.url, deliveries(ids('u', REQUESTS)), CONCURRENCY);
        }
        if (Object.keys(measured.statuses).join() !== '200') console.error(`${kind}: statuses ${JSON.stringify(measured.statuses)}`);
        results.get(kind).push(measured);
      } finally {
        await runtime.dispose();
      }
    }
  }
} finally {
  origin.stop();
}
const range = (s, d) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
console.log(`${SCENARIO}s of ${KIB} KiB, ${REQUESTS} per round, ${ROUNDS} rounds, median (min–max):`);
for (const [kind, runs] of results) {
  console.log(`${kind}: CPU ${range(summary(runs.map((r) => r.cpu)), 3)} ms per request, ${range(summary(runs.map((r) => r.rps)), 0)} requests/s, p99 ${range(summary(runs.map((r) => r.p99)), 1)} ms`);
}
process.exit(0);
