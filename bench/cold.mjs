// The first signed delivery on a fresh runtime, for several builds (and the peer) in turns:
// `node bench/cold.mjs DIR [DIR...] [peer]`, `COLD_STARTS` starts of each (9 by default).
// Prints each kind's median and range, in milliseconds, and the time its runtime took to start.
// Run it with `TMPDIR=/dev/shm`, as the benchmark keeps its objects' storage.
import path from 'node:path';

import { startDirect } from '../tests/harness.mjs';
import { eventPayload, stripeDelivery } from './deliveries.mjs';
import { drive, summary } from './load.mjs';
import { startOrigin } from './origin-process.mjs';

const SECRET = 'whsec_cold_secret';
const STARTS = Number(process.env.COLD_STARTS ?? 9);
const kinds = process.argv.slice(2);
if (kinds.length === 0) {
  console.error('usage: node bench/cold.mjs DIR [DIR...] [peer]');
  process.exit(2);
}

const origin = await startOrigin();
const times = Object.fromEntries(kinds.map((kind) => [kind, { first: [], start: [] }]));
try {
  for (let i = 0; i < STARTS; i += 1) {
    for (const kind of kinds) {
      const vars = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe` };
      const began = performance.now();
      const runtime = kind === 'peer'
        ? await startDirect({ kind, vars })
        : await startDirect({ vars: { ...vars, DELIVERY_MODE: 'sync' }, buildDir: path.resolve(kind) });
      times[kind].start.push(performance.now() - began);
      try {
        const id = `evt_cold${Date.now().toString(36)}${i}`;
        const result = await drive(runtime.url, [stripeDelivery(eventPayload(id, 1), SECRET)], 1);
        if (!result.statuses[200]) throw new Error(`${kind}: the first delivery was answered ${JSON.stringify(result.statuses)}`);
        times[kind].first.push(result.p50);
      } finally {
        await runtime.dispose();
      }
    }
  }
} finally {
  origin.stop();
}
const show = (s) => `${s.median.toFixed(1)} ms (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
for (const kind of kinds) {
  console.log(`${kind}: first delivery ${show(summary(times[kind].first))}; runtime start ${show(summary(times[kind].start))}`);
}
