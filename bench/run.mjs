// `npm run bench`: this worker against the floor (a minimal JavaScript Worker and Durable
// Object doing one conditional write per request), on the same local runtime, in one run,
// interleaved round by round, through two transports: straight to workerd (Miniflare) and
// through `wrangler dev`. Writes BENCHMARKS.md.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import Stripe from 'stripe';

import { ROOT, startDirect, startWorker } from '../tests/harness.mjs';
import { drive, summary } from './load.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const UNIQUE = Number(process.env.BENCH_UNIQUE ?? 1000);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WARMUP = 100;
const TRANSPORTS = (process.env.BENCH_TRANSPORTS ?? 'direct,wrangler').split(',');
const SECRET = 'whsec_benchmark_secret';
const stripe = new Stripe('sk_test_unused_by_the_benchmark');

function log(line) {
  process.stderr.write(`bench: ${line}\n`);
}

async function startOrigin() {
  const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'origin.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

function workerVars(origin) {
  return {
    STRIPE_WEBHOOK_SECRET: SECRET,
    ORIGIN_URL: `${origin.url}/stripe`,
    API_ORIGIN_URL: origin.url,
  };
}

// ---- the two transports ---------------------------------------------------------------------

async function directRuntime(kind, vars) {
  const runtime = await startDirect({ kind, vars: kind === 'floor' ? {} : vars });
  return { url: runtime.url, stop: () => runtime.dispose() };
}

async function wranglerRuntime(kind, vars) {
  const config = kind === 'floor'
    ? path.join(ROOT, 'bench', 'floor', 'wrangler.toml')
    : path.join(ROOT, 'tests', 'wrangler.test.toml');
  const worker = await startWorker({ config, vars: kind === 'floor' ? {} : vars });
  return { url: worker.url, worker, stop: () => worker.dispose() };
}

// ---- scenarios ------------------------------------------------------------------------------

const floorRequest = (id) => ({ method: 'GET', path: `/?id=${id}`, headers: {} });

function delivery(id) {
  const payload = JSON.stringify({
    id, object: 'event', type: 'payment_intent.succeeded', livemode: false,
    created: Math.floor(Date.now() / 1000),
    data: { object: { id: `pi_${id.slice(4)}`, object: 'payment_intent', amount: 2000, currency: 'eur' } },
  });
  return {
    method: 'POST',
    path: '/webhooks/stripe',
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }),
    },
    body: payload,
  };
}

const keyed = (key) => ({
  method: 'POST',
  path: '/api/charges',
  headers: { 'content-type': 'application/json', 'idempotency-key': key, authorization: 'Bearer bench' },
  body: '{"amount":2000,"currency":"eur"}',
});

const ids = (prefix, n) => Array.from({ length: n }, (_, i) => `evt_${prefix}_${i}`);

/** Each scenario: a warm-up, then the measured requests; `expect` is the status they must get. */
function scenarios(round) {
  const tag = `${Date.now().toString(36)}r${round}`;
  const dupIds = ids(`${tag}dup`, 20);
  const keys = Array.from({ length: 20 }, (_, i) => `bench-${tag}-${i}`);
  return {
    floor: [
      { name: 'unique', warm: ids(`${tag}fw`, WARMUP).map(floorRequest), make: () => ids(`${tag}fu`, UNIQUE).map(floorRequest) },
      { name: 'duplicate', warm: dupIds.map(floorRequest), make: () => Array.from({ length: REPEATS }, (_, i) => floorRequest(dupIds[i % 20])) },
    ],
    worker: [
      { name: 'unique', warm: ids(`${tag}ww`, WARMUP).map(delivery), make: () => ids(`${tag}wu`, UNIQUE).map(delivery) },
      { name: 'duplicate', warm: dupIds.map(delivery), make: () => Array.from({ length: REPEATS }, (_, i) => delivery(dupIds[i % 20])) },
      { name: 'replay', warm: keys.map(keyed), make: () => Array.from({ length: REPEATS }, (_, i) => keyed(keys[i % 20])) },
    ],
  };
}

async function runRound(transport, round, origin, results) {
  const start = transport === 'direct' ? directRuntime : wranglerRuntime;
  const plan = scenarios(round);
  for (const kind of ['floor', 'worker']) {
    const runtime = await start(kind, workerVars(origin));
    try {
      for (const scenario of plan[kind]) {
        await drive(runtime.url, scenario.warm, Math.min(CONCURRENCY, scenario.warm.length));
        const requests = scenario.make();
        const result = await drive(runtime.url, requests, CONCURRENCY);
        const key = `${transport}/${kind}/${scenario.name}`;
        (results[key] ??= []).push(result);
        log(`${key} round ${round}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ${JSON.stringify(result.statuses)}`);
      }
    } finally {
      await runtime.stop();
    }
  }
}

// ---- billable units -------------------------------------------------------------------------

async function billableUnits(origin) {
  const runtime = await wranglerRuntime('worker', { ...workerVars(origin), LOG_STORAGE_USAGE: 'true' });
  try {
    const unique = ids(`units${Date.now().toString(36)}`, 50);
    await drive(runtime.url, unique.map(delivery), 10);
    await drive(runtime.url, unique.map(delivery), 10);
    const keys = Array.from({ length: 20 }, (_, i) => `units-${Date.now()}-${i}`);
    await drive(runtime.url, keys.map(keyed), 10);
    await drive(runtime.url, keys.map(keyed), 10);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lines = runtime.worker.logLines().filter((l) => l.route === 'authority');
    const uniqueSet = new Set(unique);
    const forEvents = lines.filter((l) => uniqueSet.has(l.key));
    const first = (l) => l.outcome === 'claim' && l.rows_written > 0;
    const delivered = forEvents.filter((l) => first(l) || l.outcome === 'finalize');
    const duplicate = forEvents.filter((l) => l.outcome === 'claim' && l.rows_written === 0);
    const scopes = lines.filter((l) => l.key.startsWith('idem_'));
    const sum = (list, f) => list.reduce((a, l) => a + l[f], 0);
    return {
      uniqueRequests: delivered.length / unique.length,
      uniqueRowsWritten: sum(delivered, 'rows_written') / unique.length,
      uniqueRowsRead: sum(delivered, 'rows_read') / unique.length,
      duplicateRequests: duplicate.length / unique.length,
      duplicateRowsWritten: sum(duplicate, 'rows_written') / unique.length,
      keyedRequests: scopes.filter((l) => l.rows_written > 0).length / keys.length,
      keyedRowsWritten: sum(scopes, 'rows_written') / keys.length,
      replayRowsWritten: 0,
    };
  } finally {
    await runtime.stop();
  }
}

// ---- host micro-benchmarks ------------------------------------------------------------------

function hostBenchmarks() {
  const manifest = path.join(ROOT, 'bench', 'host', 'Cargo.toml');
  log('cargo bench (host micro-benchmarks)');
  const run = spawnSync('cargo', ['bench', '--manifest-path', manifest, '--bench', 'parsers', '--', '--noplot'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`cargo bench failed:\n${run.stdout}`);
  const results = [];
  for (const line of run.stdout.split('\n')) {
    const m = line.match(/^(\S.*?)\s+time:\s+\[(\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\]/);
    if (m) results.push({ name: m[1].trim(), low: `${m[2]} ${m[3]}`, mid: `${m[4]} ${m[5]}`, high: `${m[6]} ${m[7]}` });
  }
  return results;
}

// ---- report ---------------------------------------------------------------------------------

function versionOf(pkg) {
  return JSON.parse(readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
}

function report(results, units, host) {
  const wasm = readFileSync(path.join(ROOT, 'build', 'index_bg.wasm'));
  const js = readFileSync(path.join(ROOT, 'build', 'index.js'));
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  const fmt = (s, d = 0) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
  const lines = [];
  lines.push('# Benchmarks', '');
  lines.push(`Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}. Every figure below was measured in one run on the machine named here; the floor ran in the same run, interleaved round by round, so ratios compare like with like. Figures from another machine are not comparable.`, '');
  lines.push('## Machine', '');
  lines.push(`- CPU: ${os.cpus()[0].model}, ${os.cpus().length} cores; memory ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; ${os.type()} ${os.release()}`);
  lines.push(`- Node ${process.version}; wrangler ${versionOf('wrangler')}; workerd ${versionOf('workerd')}; miniflare ${versionOf('miniflare')}`);
  lines.push(`- Load: ${CONCURRENCY} requests in flight over keep-alive connections; per round and scenario a warm-up, then ${UNIQUE} unique deliveries or ${REPEATS} repeats; ${ROUNDS} rounds, a fresh runtime for each (one runtime holds only about 3,000 live objects); median with (min–max) over rounds. The load generator, the origin and the runtime share the machine's cores.`, '');
  lines.push('## Throughput and latency', '');
  lines.push('The floor: a JavaScript Worker sending each request to a JavaScript Durable Object named by the event id, which does one conditional write (`bench/floor/`). This worker: signed Stripe deliveries (verify → claim → forward to a local origin that answers 200 at once → finalize), duplicates of finished events (verify → claim → 200), and Idempotency-Key replays (claim → cached answer).', '');
  for (const transport of TRANSPORTS) {
    lines.push(`### ${transport === 'direct' ? 'Straight to the runtime (Miniflare → workerd)' : 'Through `wrangler dev` (what a user sees locally)'}`, '');
    lines.push('| scenario | requests/s | p50 ms | p99 ms | throughput vs floor | p99 vs floor |');
    lines.push('| --- | --- | --- | --- | --- | --- |');
    const get = (kind, name) => results[`${transport}/${kind}/${name}`];
    const row = (label, kind, name, floorName) => {
      const runs = get(kind, name);
      if (!runs) return;
      const rps = summary(runs.map((r) => r.rps));
      const p50 = summary(runs.map((r) => r.p50));
      const p99 = summary(runs.map((r) => r.p99));
      let vs = '—';
      let vsP99 = '—';
      if (floorName) {
        const floor = get('floor', floorName);
        const ratios = runs.map((r, i) => r.rps / floor[i].rps);
        const p99s = runs.map((r, i) => r.p99 / floor[i].p99);
        vs = `${summary(ratios).median.toFixed(2)}×`;
        vsP99 = `${summary(p99s).median.toFixed(2)}×`;
      }
      const bad = runs.flatMap((r) => Object.entries(r.statuses).filter(([s]) => s !== '200'));
      const note = bad.length ? ` (non-200: ${bad.map(([s, n]) => `${n}×${s}`).join(', ')})` : '';
      lines.push(`| ${label}${note} | ${fmt(rps)} | ${fmt(p50, 2)} | ${fmt(p99, 2)} | ${vs} | ${vsP99} |`);
    };
    row('floor: unique ids', 'floor', 'unique');
    row('floor: repeated ids', 'floor', 'duplicate');
    row('worker: unique deliveries', 'worker', 'unique', 'unique');
    row('worker: duplicate deliveries', 'worker', 'duplicate', 'duplicate');
    row('worker: Idempotency-Key replays', 'worker', 'replay', 'duplicate');
    lines.push('');
  }
  lines.push('## Size', '');
  lines.push('| artefact | raw | gzip |', '| --- | --- | --- |');
  lines.push(`| \`build/index_bg.wasm\` (after wasm-opt, names stripped) | ${kib(wasm.length)} | ${kib(gzipSync(wasm, { level: 9 }).length)} |`);
  lines.push(`| \`build/index.js\` (bundled glue) | ${kib(js.length)} | ${kib(gzipSync(js, { level: 9 }).length)} |`, '');
  lines.push('## Billable units per delivery', '');
  lines.push('Counted by the claim authority itself (`LOG_STORAGE_USAGE=true`): Durable Object requests, and SQLite rows written as Cloudflare bills them (one per key put or deleted, one per `setAlarm`).', '');
  lines.push('| path | Durable Object requests | rows written | rows read |', '| --- | --- | --- | --- |');
  lines.push(`| unique delivery (claim, its alarm, finalize) | ${units.uniqueRequests.toFixed(2)} | ${units.uniqueRowsWritten.toFixed(2)} | ${units.uniqueRowsRead.toFixed(2)} |`);
  lines.push(`| duplicate of a finished event | ${units.duplicateRequests.toFixed(2)} | ${units.duplicateRowsWritten.toFixed(2)} | 1.00 |`);
  lines.push(`| first Idempotency-Key request (claim, alarm, finalize with the cached answer) | ${units.keyedRequests.toFixed(2)} | ${units.keyedRowsWritten.toFixed(2)} | — |`);
  lines.push('| floor (one conditional write) | 1.00 | 1.00 | 1.00 |', '');
  lines.push('## Against the targets', '');
  lines.push('| target | measured | met |', '| --- | --- | --- |');
  const ratio = (transport, kind, name, floorName, field) => {
    const runs = results[`${transport}/${kind}/${name}`];
    const floor = results[`${transport}/floor/${floorName}`];
    if (!runs || !floor) return undefined;
    return summary(runs.map((r, i) => r[field] / floor[i][field])).median;
  };
  const target = (label, value, goal, higherIsBetter, unit = '×') => {
    if (value === undefined) return;
    const met = higherIsBetter ? value >= goal : value <= goal;
    lines.push(`| ${label} | ${value.toFixed(2)}${unit} | ${met ? 'yes' : '**no**'} |`);
  };
  for (const transport of TRANSPORTS) {
    target(`${transport}: unique deliveries ≥ 0.9× the floor's throughput`, ratio(transport, 'worker', 'unique', 'unique', 'rps'), 0.9, true);
    target(`${transport}: duplicates ≥ 0.9× the floor's throughput`, ratio(transport, 'worker', 'duplicate', 'duplicate', 'rps'), 0.9, true);
    target(`${transport}: unique deliveries p99 ≤ 1.2× the floor's`, ratio(transport, 'worker', 'unique', 'unique', 'p99'), 1.2, false);
    target(`${transport}: duplicates p99 ≤ 1.2× the floor's`, ratio(transport, 'worker', 'duplicate', 'duplicate', 'p99'), 1.2, false);
  }
  target('wasm ≤ 150 KiB gzip after wasm-opt', gzipSync(wasm, { level: 9 }).length / 1024, 150, false, ' KiB');
  const h64 = host.find((h) => h.name === 'verify+parse/64 KiB');
  if (h64) {
    const [value, unit] = h64.mid.split(' ');
    const us = Number(value) * ({ ns: 0.001, 'µs': 1, us: 1, ms: 1000 }[unit] ?? NaN);
    target('verify + parse of a 64 KiB event ≤ 50 µs on the host', us, 50, false, ' µs');
  }
  target('Durable Object requests per delivery ≤ 2', units.uniqueRequests, 2, false, '');
  target('rows written per delivery ≤ 2', units.uniqueRowsWritten, 2, false, '');
  lines.push('');
  lines.push('## Host micro-benchmarks (`cargo bench`, criterion)', '');
  lines.push('| benchmark | time (low, estimate, high) |', '| --- | --- |');
  for (const h of host) lines.push(`| ${h.name} | ${h.low}, **${h.mid}**, ${h.high} |`);
  lines.push('');
  return lines.join('\n');
}

// ---- main -----------------------------------------------------------------------------------

const origin = await startOrigin();
const results = {};
try {
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const transport of TRANSPORTS) {
      await runRound(transport, round, origin, results);
    }
  }
  if (process.env.BENCH_ONLY_LOAD === '1') process.exit(0);
  const units = await billableUnits(origin);
  const host = process.env.BENCH_SKIP_HOST === '1' ? [] : hostBenchmarks();
  const text = report(results, units, host);
  const notes = readFileSync(path.join(ROOT, 'bench', 'notes.md'), 'utf8');
  writeFileSync(path.join(ROOT, 'BENCHMARKS.md'), `${text}\n${notes}`);
  process.stdout.write(`${text}\n`);
  log('wrote BENCHMARKS.md');
} finally {
  origin.stop();
}
process.exit(0);
