// `node bench/profile.mjs [DIR|peer]`: a V8 CPU profile of the runtime's user isolate (the
// worker and its objects) while it answers duplicate deliveries, taken through workerd's
// DevTools inspector. Prints the functions with the most samples of their own and how the
// samples split between JavaScript, WebAssembly and the runtime's native functions, and writes
// the whole profile to .wrangler/profile.cpuprofile (open it in Chrome's DevTools).
// `PROFILE_SCENARIO=unique` profiles unique deliveries instead (each a new object, a forward and
// a finalize). Build with
// `KEEP_WASM_NAMES=1 OUT_DIR=... npm run build` for Rust function names and readable glue.
// A profile slows what it watches; compare shares between builds, never its times.
// `PROFILE_REQUESTS` (3000), `PROFILE_INTERVAL_US` (400) and `PROFILE_TOP` (30) change it.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { ROOT, freePort, startDirect } from '../tests/harness.mjs';
import { eventPayload, stripeDelivery } from './deliveries.mjs';
import { drive } from './load.mjs';
import { startOrigin } from './origin-process.mjs';

const REQUESTS = Number(process.env.PROFILE_REQUESTS ?? 3000);
const INTERVAL = Number(process.env.PROFILE_INTERVAL_US ?? 400);
const TOP = Number(process.env.PROFILE_TOP ?? 30);
const SCENARIO = process.env.PROFILE_SCENARIO ?? 'duplicate';
if (!['duplicate', 'unique'].includes(SCENARIO)) {
  console.error('PROFILE_SCENARIO is duplicate or unique');
  process.exit(2);
}
const SECRET = 'whsec_profile_secret';
const target = process.argv[2] ?? path.join(ROOT, 'build');

/** A DevTools protocol session over the inspector's WebSocket. */
async function session(url) {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve);
    socket.addEventListener('error', reject);
  });
  let next = 0;
  const pending = new Map();
  socket.addEventListener('message', (message) => {
    const data = JSON.parse(message.data);
    pending.get(data.id)?.(data);
    pending.delete(data.id);
  });
  return {
    send: (method, params = {}) => new Promise((resolve) => {
      next += 1;
      pending.set(next, resolve);
      socket.send(JSON.stringify({ id: next, method, params }));
    }),
    close: () => socket.close(),
  };
}

/** Samples of each function's own, and per kind of code. */
function shares(profile) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const own = new Map();
  const kinds = new Map();
  for (const id of profile.samples) {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    const name = `${functionName || '(anonymous)'} ${url.split('/').pop()}:${lineNumber}`;
    own.set(name, (own.get(name) ?? 0) + 1);
    const kind = /wasm/.test(url) ? 'WebAssembly'
      : url.endsWith('.js') || url.endsWith('.mjs') ? 'JavaScript (glue and entry)'
        : ['(idle)', '(program)', '(garbage collector)'].includes(functionName) ? functionName
          : 'runtime (native functions)';
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  return { own, kinds, total: profile.samples.length };
}

const origin = await startOrigin();
const inspectorPort = await freePort();
const vars = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe` };
const runtime = target === 'peer'
  ? await startDirect({ kind: 'peer', vars, inspectorPort })
  : await startDirect({ vars, buildDir: path.resolve(target), inspectorPort });
try {
  const ids = Array.from({ length: 20 }, (_, i) => `evt_profile${Date.now().toString(36)}${i}`);
  const deliveries = (list) => list.map((id) => stripeDelivery(eventPayload(id, 1), SECRET));
  await drive(runtime.url, deliveries(ids), 20);
  // Warmed as bench/run.mjs warms each runtime, so that the profile is of optimised code.
  await drive(runtime.url, deliveries(Array.from({ length: 3000 }, (_, i) => ids[i % 20])), 32);
  const targets = await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json();
  const user = targets.find((t) => t.title.includes('core:user'));
  if (!user) throw new Error(`no user isolate among ${targets.map((t) => t.title).join(', ')}`);
  const devtools = await session(user.webSocketDebuggerUrl);
  await devtools.send('Profiler.enable');
  await devtools.send('Profiler.setSamplingInterval', { interval: INTERVAL });
  await devtools.send('Profiler.start');
  const measuredIds = SCENARIO === 'unique'
    ? Array.from({ length: REQUESTS }, (_, i) => `${ids[0]}u${i}`)
    : Array.from({ length: REQUESTS }, (_, i) => ids[i % 20]);
  const measured = await drive(runtime.url, deliveries(measuredIds), 32);
  const { result } = await devtools.send('Profiler.stop');
  devtools.close();
  mkdirSync(path.join(ROOT, '.wrangler'), { recursive: true });
  writeFileSync(path.join(ROOT, '.wrangler', 'profile.cpuprofile'), JSON.stringify(result.profile));
  const { own, kinds, total } = shares(result.profile);
  const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
  console.log(`${REQUESTS} ${SCENARIO} deliveries (statuses ${JSON.stringify(measured.statuses)}), ${total} samples every ${INTERVAL} µs (${(total / REQUESTS).toFixed(2)} per request)`);
  for (const [kind, n] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`${pct(n)} ${kind}`);
  console.log('');
  for (const [name, n] of [...own].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`${pct(n)} ${name}`);
} finally {
  await runtime.dispose();
  origin.stop();
}
process.exit(0);
