// `node bench/compare.mjs DIR [DIR ...]`: the runtime's CPU per request, requests per second and
// p99 of builds of this worker (each a folder holding index.js and index_bg.wasm, as
// `OUT_DIR=... npm run build` writes), of the JavaScript peer (the word `peer`) and of the floor
// (`floor`), straight to workerd, interleaved round by round so that the machine's drift falls on
// all alike. A tool for deciding on a change before the full benchmark: `COMPARE_ROUNDS` (5),
// `COMPARE_REQUESTS` (2000), `COMPARE_KIB` (1), `COMPARE_SCENARIO` (`duplicate` or `unique`) and
// `COMPARE_WARMUP` (3000 duplicates sent to each fresh runtime first; unique deliveries are
// warmed with new events too) change the load (see bench/turns.mjs).
import { summary } from './load.mjs';
import { inTurns, settings, storageWhere, timed } from './turns.mjs';

const chosen = settings('COMPARE', { rounds: 5, requests: 2000 },
  'usage: node bench/compare.mjs DIR|peer|floor [...]  (COMPARE_SCENARIO=duplicate|unique)');
const results = await inTurns(chosen, ({ kind, runtime, requests }) => timed(kind, runtime, requests));
const range = (s, d) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
console.log(`${chosen.scenario}s of ${chosen.kib} KiB, ${chosen.requests} per round, ${chosen.rounds} rounds, objects' storage in ${storageWhere()}, median (min–max):`);
for (const [kind, runs] of results) {
  console.log(`${kind}: CPU ${range(summary(runs.map((r) => r.cpu)), 3)} ms per request, ${range(summary(runs.map((r) => r.rps)), 0)} requests/s, p99 ${range(summary(runs.map((r) => r.p99)), 1)} ms`);
}
process.exit(0);
