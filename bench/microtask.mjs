// `node bench/microtask.mjs`: what scheduling a microtask costs in workerd, by the two ways
// js-sys can run Rust futures: `queueMicrotask(f)` (a host call into the runtime) and `then(f)`
// on a resolved promise (inside V8). scripts/build.sh makes js-sys take the second; this prints
// the measured cost of each, per call, so that choice can be checked on a new runtime.
import { Miniflare, convertV4MiniflareOptions } from 'miniflare';

import { COMPATIBILITY_DATE } from '../tests/harness.mjs';

const CALLS = 100_000;
const script = `export default {
  async fetch() {
    const noop = () => {};
    const resolved = Promise.resolve();
    const started = performance.now();
    for (let i = 0; i < ${CALLS}; i += 1) queueMicrotask(noop);
    await new Promise((resolve) => queueMicrotask(resolve));
    const between = performance.now();
    for (let i = 0; i < ${CALLS}; i += 1) resolved.then(noop);
    await resolved;
    const ended = performance.now();
    return Response.json({ queueMicrotask: between - started, then: ended - between });
  },
};`;
const mf = new Miniflare(convertV4MiniflareOptions({ modules: true, script, compatibilityDate: COMPATIBILITY_DATE }));
try {
  const runs = [];
  for (let i = 0; i < 5; i += 1) runs.push(await (await mf.dispatchFetch('http://probe/')).json());
  const median = (key) => runs.map((r) => r[key]).sort((a, b) => a - b)[2];
  const perCall = (key) => (median(key) * 1000) / CALLS;
  if (median('queueMicrotask') === 0 && median('then') === 0) {
    console.log('the runtime\'s clock did not advance during the request: no figure');
  } else {
    console.log(`queueMicrotask: ${perCall('queueMicrotask').toFixed(3)} µs a call; then: ${perCall('then').toFixed(3)} µs a call (median of 5 runs of ${CALLS})`);
  }
} finally {
  await mf.dispose();
}
