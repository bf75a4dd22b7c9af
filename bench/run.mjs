// `npm run bench`: this worker against two baselines measured in the same run, interleaved
// round by round, through two transports (straight to workerd through Miniflare, and through
// `wrangler dev`):
//   - the floor (`bench/floor/`): one conditional write per request to an object named by the
//     event id, the least any one-object-per-event design must do;
//   - the JavaScript peer (`bench/peer/`): the same protocol in plain JavaScript.
// Event bodies of 1, 16 and 256 KiB, unique and duplicate deliveries; Idempotency-Key replays;
// the time Stripe waits for a queued answer. Also the module's size, cold start, billable units
// per delivery and host micro-benchmarks. Writes BENCHMARKS.md.
// BENCH_PROVIDER=standard|github|shopify sends the worker's deliveries (not the peer's, which
// speaks Stripe only) to that sender's route, signed by its library; such a run prints its
// report and writes bench/results-<provider>.md instead of BENCHMARKS.md.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import { ROOT, startDirect, startWorker } from '../tests/harness.mjs';
import { startStripeApi } from '../tests/fakes/stripe-api.mjs';
import { signedHeaders, standardSecret } from '../tests/provider-helpers.mjs';
import { anatomy } from './anatomy/measure.mjs';
import { prices as costPrices, write as writeCostBlocks } from './cost.mjs';
import { eventPayload, floorRequest, stripeDelivery } from './deliveries.mjs';
import { startOrigin } from './origin-process.mjs';
import { drive, summary } from './load.mjs';
import { storageWhere } from './turns.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const UNIQUE = Number(process.env.BENCH_UNIQUE ?? 400);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 800);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const COLD_STARTS = Number(process.env.BENCH_COLD_STARTS ?? 7);
const WARMUP = 50;
// Every fresh runtime is warmed before anything of it is measured, the same for every kind. V8
// runs WebAssembly first in its baseline tier and optimises each hot function only once it has
// run a while: for this worker's module that takes a few thousand requests, where a JavaScript
// worker settles within its first hundreds (successive windows of 1,000 duplicates on one
// runtime: 0.80, 0.66, 0.57, then 0.39-0.44 ms of CPU each for the worker; 0.33-0.41 throughout
// for the peer). Without it the first scenarios would time that warm-up rather than the steady
// state. The warm-up's first 1,000 duplicates are measured and reported on their own, so its
// cost stays in view. BENCH_RUNTIME_WARMUP=0 turns it off.
const RUNTIME_WARMUP = Number(process.env.BENCH_RUNTIME_WARMUP ?? 3000);
const WARMUP_MEASURED = Math.min(1000, RUNTIME_WARMUP);
const SIZES = (process.env.BENCH_SIZES ?? '1,16,256').split(',').map(Number);
const TRANSPORTS = (process.env.BENCH_TRANSPORTS ?? 'direct,wrangler').split(',');
const SECRET = 'whsec_benchmark_secret';
const PROVIDER = process.env.BENCH_PROVIDER ?? 'stripe';
// An earlier build of this worker (a folder with its index.js and index_bg.wasm) measured in the
// same run, straight to workerd: 1 KiB unique deliveries and duplicates, and its cold start.
const BASELINE = process.env.BENCH_BASELINE_BUILD ? path.resolve(process.env.BENCH_BASELINE_BUILD) : undefined;
const SENDERS = {
  stripe: { key: 'STRIPE_WEBHOOK_SECRET', secret: SECRET },
  standard: { key: 'STANDARD_WEBHOOK_SECRET', secret: standardSecret('benchmark') },
  github: { key: 'GITHUB_WEBHOOK_SECRET', secret: 'benchmark-github-secret' },
  shopify: { key: 'SHOPIFY_WEBHOOK_SECRET', secret: 'benchmark-shopify-secret' },
};
if (!SENDERS[PROVIDER]) throw new Error(`BENCH_PROVIDER is one of ${Object.keys(SENDERS).join(', ')}`);

function log(line) {
  process.stderr.write(`bench: ${line}\n`);
}

/** The variables of each kind of runtime. */
function varsOf(kind, origin) {
  const worker = {
    STRIPE_WEBHOOK_SECRET: SECRET,
    [SENDERS[PROVIDER].key]: SENDERS[PROVIDER].secret,
    ORIGIN_URL: `${origin.url}/stripe`,
    API_ORIGIN_URL: origin.url,
  };
  return {
    floor: {},
    peer: { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe` },
    worker: { ...worker, DELIVERY_MODE: 'sync' },
    baseline: { ...worker, DELIVERY_MODE: 'sync' },
    queue: { ...worker, DELIVERY_MODE: 'queue' },
  }[kind];
}

// ---- the two transports ---------------------------------------------------------------------

async function directRuntime(kind, vars) {
  const runtime = kind === 'baseline'
    ? await startDirect({ vars, buildDir: BASELINE })
    : await startDirect({ kind: kind === 'queue' ? 'worker' : kind, vars });
  return { url: runtime.url, stop: () => runtime.dispose() };
}

async function wranglerRuntime(kind, vars) {
  const config = {
    floor: path.join(ROOT, 'bench', 'floor', 'wrangler.toml'),
    peer: path.join(ROOT, 'bench', 'peer', 'wrangler.toml'),
    // The same, unchanged, with their objects' units counted (bench/units/).
    'floor-counted': path.join(ROOT, 'bench', 'units', 'floor.wrangler.toml'),
    'peer-counted': path.join(ROOT, 'bench', 'units', 'peer.wrangler.toml'),
  }[kind] ?? path.join(ROOT, 'tests', 'wrangler.test.toml');
  const worker = await startWorker({ config, vars });
  return { url: worker.url, worker, stop: () => worker.dispose() };
}

// ---- requests -------------------------------------------------------------------------------

/**
 * A signed delivery of event `id` whose body is about `kib` KiB, from `provider` (the run's
 * BENCH_PROVIDER by default): Stripe's signed by the `stripe` package (with `secret`, the
 * run's own unless a test of refusal gives another), the others by their sender's library,
 * with the same body.
 */
async function delivery(id, kib = 1, provider = PROVIDER, secret = SECRET) {
  const payload = eventPayload(id, kib);
  if (provider === 'stripe') return stripeDelivery(payload, secret);
  return {
    method: 'POST',
    path: `/webhooks/${provider}`,
    headers: { 'content-type': 'application/json', ...await signedHeaders(provider, { id, body: payload, secret: SENDERS[provider].secret }) },
    body: payload,
  };
}

/** Each of `ids` as a delivery of `kib` KiB from `provider`. */
const deliveries = (list, kib, provider) => Promise.all(list.map((id) => delivery(id, kib, provider)));

const keyed = (key) => ({
  method: 'POST',
  path: '/api/charges',
  headers: { 'content-type': 'application/json', 'idempotency-key': key, authorization: 'Bearer bench' },
  body: '{"amount":2000,"currency":"eur"}',
});

const ids = (prefix, n) => Array.from({ length: n }, (_, i) => `evt_${prefix}_${i}`);

/** Each scenario: a warm-up, then the measured requests. */
function scenarios(round) {
  const tag = `${Date.now().toString(36)}r${round}`;
  const keys = Array.from({ length: 20 }, (_, i) => `bench-${tag}-${i}`);
  // The peer speaks Stripe only; the worker's deliveries come from the run's provider.
  const sized = (prefix, provider) => SIZES.flatMap((kib) => {
    const dup = ids(`${tag}${prefix}d${kib}`, 20);
    return [
      { name: `unique-${kib}`, warm: () => deliveries(ids(`${tag}${prefix}w${kib}`, WARMUP), kib, provider), make: () => deliveries(ids(`${tag}${prefix}u${kib}`, UNIQUE), kib, provider) },
      { name: `duplicate-${kib}`, warm: () => deliveries(dup, kib, provider), make: () => deliveries(Array.from({ length: REPEATS }, (_, i) => dup[i % 20]), kib, provider) },
    ];
  });
  const floorDup = ids(`${tag}fd`, 20);
  return {
    floor: [
      { name: 'unique', warm: () => ids(`${tag}fw`, WARMUP).map(floorRequest), make: () => ids(`${tag}fu`, UNIQUE).map(floorRequest) },
      { name: 'duplicate', warm: () => floorDup.map(floorRequest), make: () => Array.from({ length: REPEATS }, (_, i) => floorRequest(floorDup[i % 20])) },
    ],
    worker: [
      ...sized('w', PROVIDER),
      { name: 'replay', warm: () => keys.map(keyed), make: () => Array.from({ length: REPEATS }, (_, i) => keyed(keys[i % 20])) },
    ],
    peer: sized('p', 'stripe'),
    baseline: sized('b', PROVIDER).filter((scenario) => scenario.name.endsWith('-1')),
    queue: [
      { name: 'queued-1', warm: () => deliveries(ids(`${tag}qw`, WARMUP), 1, PROVIDER), make: () => deliveries(ids(`${tag}qu`, UNIQUE), 1, PROVIDER) },
    ],
  };
}

/**
 * Warms a fresh runtime of `kind` with RUNTIME_WARMUP requests of 1 KiB: duplicates of 20
 * events, the first WARMUP_MEASURED of which are measured and returned, then a tenth of the rest
 * new events (but in queue mode) and the others duplicates again (so that the forward and settle
 * are warm too).
 */
async function warmRuntime(kind, url, tag) {
  if (RUNTIME_WARMUP === 0) return undefined;
  const provider = kind === 'peer' ? 'stripe' : PROVIDER;
  const make = async (list) => (kind === 'floor' ? list.map(floorRequest) : deliveries(list, 1, provider));
  const seen = ids(`${tag}${kind}warm`, 20);
  const repeats = (n) => make(Array.from({ length: n }, (_, i) => seen[i % 20]));
  await drive(url, await make(seen), 20);
  const first = await drive(url, await repeats(WARMUP_MEASURED), CONCURRENCY);
  const rest = RUNTIME_WARMUP - WARMUP_MEASURED;
  // Queue mode delivers new events from their alarms, which would still be running during its
  // measured phase: it is warmed with duplicates only.
  const fresh = kind === 'queue' ? 0 : Math.ceil(rest / 10);
  if (fresh > 0) await drive(url, await make(ids(`${tag}${kind}warmnew`, fresh)), CONCURRENCY);
  if (rest - fresh > 0) await drive(url, await repeats(rest - fresh), CONCURRENCY);
  return first;
}

async function runRound(transport, round, origin, results) {
  const start = transport === 'direct' ? directRuntime : wranglerRuntime;
  const plan = scenarios(round);
  // The order of the kinds turns each round, so none always runs on a warmer machine.
  const kinds = ['floor', 'worker', 'peer', 'queue', ...(BASELINE && transport === 'direct' ? ['baseline'] : [])];
  const order = [...kinds.slice(round % kinds.length), ...kinds.slice(0, round % kinds.length)];
  for (const kind of order) {
    const runtime = await start(kind, varsOf(kind, origin));
    try {
      const warmed = await warmRuntime(kind, runtime.url, `${Date.now().toString(36)}r${round}`);
      if (warmed) {
        (results[`${transport}/${kind}/warm-up`] ??= []).push(warmed);
        log(`${transport}/${kind}/warm-up round ${round}: first ${WARMUP_MEASURED} duplicates ${warmed.rps.toFixed(0)} req/s, CPU ${warmed.cpu?.toFixed(3)} ms per request`);
      }
      for (const scenario of plan[kind]) {
        const warm = await scenario.warm();
        await drive(runtime.url, warm, Math.min(CONCURRENCY, warm.length));
        const result = await drive(runtime.url, await scenario.make(), CONCURRENCY);
        const key = `${transport}/${kind}/${scenario.name}`;
        (results[key] ??= []).push(result);
        log(`${key} round ${round}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ${JSON.stringify(result.statuses)}`);
      }
    } finally {
      await runtime.stop();
    }
  }
}

// ---- cold start -----------------------------------------------------------------------------

/**
 * The first delivery's latency on a fresh runtime (straight to workerd) for each of `kinds`,
 * the kinds taking turns start by start; median of the starts, per kind.
 */
async function coldStarts(kinds, origin) {
  const times = Object.fromEntries(kinds.map((kind) => [kind, []]));
  for (let i = 0; i < COLD_STARTS; i += 1) {
    for (const kind of kinds) {
      const runtime = await directRuntime(kind, varsOf(kind, origin));
      try {
        const request = await delivery(`evt_cold${Date.now().toString(36)}${i}`, 1, kind === 'peer' ? 'stripe' : PROVIDER);
        const result = await drive(runtime.url, [request], 1);
        times[kind].push(result.p50);
      } finally {
        await runtime.stop();
      }
    }
  }
  return Object.fromEntries(kinds.map((kind) => [kind, summary(times[kind])]));
}

// ---- billable units -------------------------------------------------------------------------

async function billableUnits(origin) {
  const runtime = await wranglerRuntime('worker', { ...varsOf('worker', origin), LOG_STORAGE_USAGE: 'true' });
  try {
    const unique = ids(`units${Date.now().toString(36)}`, 50);
    await drive(runtime.url, await deliveries(unique, 1), 10);
    await drive(runtime.url, await deliveries(unique, 1), 10);
    const keys = Array.from({ length: 20 }, (_, i) => `units-${Date.now()}-${i}`);
    await drive(runtime.url, keys.map(keyed), 10);
    await drive(runtime.url, keys.map(keyed), 10);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lines = runtime.worker.logLines().filter((l) => l.route === 'authority');
    const uniqueSet = new Set(unique.map((id) => (PROVIDER === 'stripe' ? id : `${PROVIDER}:${id}`)));
    const forEvents = lines.filter((l) => uniqueSet.has(l.key));
    // A delivery is one request to the object; its claim and its settle each log their rows.
    const delivered = forEvents.filter((l) => l.outcome === 'deliver');
    const settles = forEvents.filter((l) => l.outcome === 'settle');
    const firstDeliveries = delivered.filter((l) => l.rows_written > 0);
    const duplicates = delivered.filter((l) => l.rows_written === 0);
    const scopes = lines.filter((l) => l.key.startsWith('idem_'));
    const sum = (list, f) => list.reduce((a, l) => a + l[f], 0);
    // The event's object is active, and billed for duration, while it serves the worker's request
    // (and after, while a late answer is awaited): the worker's duration gives the usual case.
    const webhook = runtime.worker.logLines().filter((l) => l.route === 'webhook' && uniqueSet.has(l.key));
    const medianOf = (list, f) => summary(list.filter((l) => typeof l[f] === 'number').map((l) => l[f])).median;
    const processed = webhook.filter((l) => l.outcome === 'processed');
    const repeated = webhook.filter((l) => l.outcome === 'duplicate');
    const queued = await queuedUnits(origin);
    return {
      ...queued,
      reconcile: await reconcileUnits(origin),
      life: await lifeUnits(origin),
      peer: await baselineUnits('peer', origin),
      floor: await baselineUnits('floor', origin),
      syncIndexRequests: runtime.worker.logLines().filter((l) => l.route === 'index').length / unique.length,
      uniqueMs: medianOf(processed, 'duration_ms'),
      uniqueOriginMs: medianOf(processed, 'origin_ms'),
      duplicateMs: medianOf(repeated, 'duration_ms'),
      uniqueRequests: firstDeliveries.length / unique.length,
      uniqueRowsWritten: (sum(firstDeliveries, 'rows_written') + sum(settles, 'rows_written')) / unique.length,
      uniqueRowsRead: (sum(firstDeliveries, 'rows_read') + sum(settles, 'rows_read')) / unique.length,
      duplicateRequests: duplicates.length / unique.length,
      duplicateRowsWritten: sum(duplicates, 'rows_written') / unique.length,
      duplicateRowsRead: sum(duplicates, 'rows_read') / unique.length,
      keyedRequests: scopes.filter((l) => l.outcome === 'deliver' && l.rows_written > 0).length / keys.length,
      keyedRowsWritten: sum(scopes, 'rows_written') / keys.length,
    };
  } finally {
    await runtime.stop();
  }
}

/**
 * The units of the peer's or the floor's object, counted as the worker's are (bench/units/):
 * per unique delivery and per duplicate, each side the sum of its objects' requests and rows.
 */
async function baselineUnits(kind, origin) {
  const runtime = await wranglerRuntime(`${kind}-counted`, varsOf(kind, origin));
  try {
    const unique = ids(`${kind}units${Date.now().toString(36)}`, 50);
    const make = async (list) => (kind === 'floor' ? list.map(floorRequest) : deliveries(list, 1, 'stripe'));
    const counted = () => runtime.worker.logLines().filter((l) => l.units === kind);
    const sums = (lines) => ({
      requests: lines.reduce((a, l) => a + l.requests, 0) / unique.length,
      rowsWritten: lines.reduce((a, l) => a + l.rows_written, 0) / unique.length,
      rowsRead: lines.reduce((a, l) => a + l.rows_read, 0) / unique.length,
    });
    const first = await drive(runtime.url, await make(unique), 10);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const afterFirst = counted().length;
    const again = await drive(runtime.url, await make(unique), 10);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const lines = counted();
    for (const [what, result] of [['unique', first], ['duplicate', again]]) {
      if (Object.keys(result.statuses).some((status) => status !== '200')) throw new Error(`${kind} ${what} deliveries answered ${JSON.stringify(result.statuses)}`);
    }
    return { unique: sums(lines.slice(0, afterFirst)), duplicate: sums(lines.slice(afterFirst)) };
  } finally {
    await runtime.stop();
  }
}

/**
 * What one healthy event costs in queue mode, notifications on: the rows its object reads and
 * writes from storing it to delivering it, and the failure index's requests (none expected: the
 * index hears only of dead letters, redeliveries and recoveries).
 */
async function queuedUnits(origin) {
  const alerts = { ALERT_URL: `${origin.url}/alerts`, ALERT_SECRET: 'whsec_YmVuY2gtYWxlcnRzLWJlbmNoLWFsZXJ0cy1iZW5jaC0=' };
  const runtime = await wranglerRuntime('queue', { ...varsOf('queue', origin), ...alerts, ...UNCAPPED, LOG_STORAGE_USAGE: 'true' });
  try {
    const unique = ids(`queued${Date.now().toString(36)}`, 50);
    const keys = new Set(unique.map((id) => (PROVIDER === 'stripe' ? id : `${PROVIDER}:${id}`)));
    await drive(runtime.url, await deliveries(unique, 1), 10);
    const deadline = Date.now() + 60_000;
    const delivered = () => runtime.worker.logLines().filter((l) => l.outcome === 'delivered' && keys.has(l.key)).length;
    while (delivered() < unique.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    if (delivered() < unique.length) throw new Error(`queue mode delivered ${delivered()} of ${unique.length}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // the alarms' last re-arm
    const lines = runtime.worker.logLines();
    const mine = lines.filter((l) => l.route === 'authority' && keys.has(l.key));
    const sum = (f) => mine.reduce((a, l) => a + l[f], 0);
    return {
      queuedRequests: mine.filter((l) => l.outcome === 'enqueue').length / unique.length,
      queuedGateRequests: attempts(lines, keys) / unique.length,
      queuedRowsWritten: sum('rows_written') / unique.length,
      queuedRowsRead: sum('rows_read') / unique.length,
      queuedIndexRequests: lines.filter((l) => l.route === 'index').length / unique.length,
    };
  } finally {
    await runtime.stop();
  }
}

/**
 * The gate's caps off: the units of a healthy event are those of an attempt the gate lets
 * through. (Fifty events stored at once would otherwise be held at the default 20 a second,
 * and each held attempt costs its event one more alarm and settle: the price of protecting
 * the origin from a burst, not of a healthy event.)
 */
const UNCAPPED = { ORIGIN_MAX_RPS: '0', ORIGIN_MAX_IN_FLIGHT: '0' };

/**
 * The queued attempts of `keys` in `lines`: each one request to its origin's gate (sent on, or
 * held). The gate writes nothing while its origin is healthy, so its rows are not counted.
 */
function attempts(lines, keys) {
  const ends = new Set(['delivered', 'retry_scheduled', 'dead_lettered', 'held']);
  return lines.filter((l) => l.route === 'webhook' && keys.has(l.key) && ends.has(l.outcome)).length;
}

/**
 * What one healthy event uses over its whole life, in sync and in queue mode: every request
 * to its object (the delivery, or the acceptance and the attempt, and each alarm run,
 * `LOG_STORAGE_USAGE=true` logging one line per operation) and the rows they read and wrote,
 * from its first delivery until its alarm deleted it. A short lease and retention make the
 * life last seconds; the work done is the same as with the defaults.
 */
async function lifeUnits(origin) {
  const short = {
    LOG_STORAGE_USAGE: 'true',
    LEASE_SECONDS: '3',
    FORWARD_TIMEOUT_MS: '1000',
    LATE_ANSWER_WAIT_SECONDS: '0',
    QUEUE_FORWARD_TIMEOUT_MS: '1000',
    SIGNATURE_TOLERANCE_SECONDS: '10',
    RETENTION_HOURS: '0.006',
    ALLOW_SHORT_RETENTION: 'true',
  };
  const life = {};
  for (const mode of ['sync', 'queue']) {
    const runtime = await wranglerRuntime(mode === 'sync' ? 'worker' : 'queue', { ...varsOf(mode === 'sync' ? 'worker' : 'queue', origin), ...short, ...UNCAPPED });
    try {
      const unique = ids(`life${mode}${Date.now().toString(36)}`, 20);
      const keys = new Set(unique.map((id) => (PROVIDER === 'stripe' ? id : `${PROVIDER}:${id}`)));
      const result = await drive(runtime.url, await deliveries(unique, 1), 10);
      if (Object.keys(result.statuses).some((status) => status !== '200')) throw new Error(`${mode} deliveries answered ${JSON.stringify(result.statuses)}`);
      const expired = () => runtime.worker.logLines().filter((l) => l.outcome === 'expired' && keys.has(l.key)).length;
      const deadline = Date.now() + 90_000;
      while (expired() < unique.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
      if (expired() < unique.length) throw new Error(`${mode}: ${expired()} of ${unique.length} events expired within 90 s`);
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // the last alarm's usage line
      const mine = runtime.worker.logLines().filter((l) => l.route === 'authority' && keys.has(l.key));
      const sum = (f) => mine.reduce((a, l) => a + l[f], 0);
      // One object request per delivery (or acceptance) that wrote, and one per alarm run.
      const entry = mode === 'sync' ? 'deliver' : 'enqueue';
      // In queue mode each attempt is also one request to its origin's gate.
      const gate = mode === 'queue' ? attempts(runtime.worker.logLines(), keys) : 0;
      const requests = mine.filter((l) => (l.outcome === entry && l.rows_written > 0) || l.outcome === 'alarm').length + gate;
      life[mode] = {
        requests: requests / unique.length,
        rowsWritten: sum('rows_written') / unique.length,
        rowsRead: sum('rows_read') / unique.length,
      };
    } finally {
      await runtime.stop();
    }
  }
  return life;
}

/**
 * What reconciliation costs per 1,000 events listed, in sync mode against a local fake of
 * Stripe's event log (tests/fakes/stripe-api.mjs): every request to the events' objects and
 * the rows they read and wrote (`LOG_STORAGE_USAGE=true`), the failure index's requests, and
 * the requests to the fake API; first with every event unknown, then again with every event
 * done.
 */
async function reconcileUnits(origin) {
  const key = 'rk_test_bench_0123456789abcdef';
  const api = await startStripeApi({ key });
  const EVENTS = 200;
  const created = Math.floor(Date.now() / 1000) - 60;
  for (let i = 0; i < EVENTS; i += 1) api.add({ created });
  const token = 'bench-reconcile-token-0123456789';
  const vars = { ...varsOf('worker', origin), ADMIN_TOKEN: token, STRIPE_API_KEY: key, STRIPE_API_BASE_URL: api.url, LOG_STORAGE_USAGE: 'true' };
  const runtime = await wranglerRuntime('worker', vars);
  try {
    const since = new Date((created - 60) * 1000).toISOString();
    const pass = async () => {
      const mark = runtime.worker.logLines().length;
      const apiMark = api.requests.length;
      let body = { provider: 'stripe', since };
      let calls = 0;
      let listed = 0;
      for (;;) {
        const answer = await fetch(`${runtime.url}/admin/reconcile`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const json = await answer.json();
        if (answer.status !== 200 || json.error_count) throw new Error(`reconcile answered ${answer.status} ${JSON.stringify(json)}`);
        calls += 1;
        listed += json.listed;
        if (!json.next_cursor) break;
        body = { provider: 'stripe', cursor: json.next_cursor };
      }
      if (listed !== EVENTS) throw new Error(`reconcile listed ${listed} of ${EVENTS}`);
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // the last usage lines
      const lines = runtime.worker.logLines().slice(mark);
      // One usage line per request: each event's claim, and the failure index's note of each
      // call's run.
      const usage = lines.filter((l) => l.route === 'authority' || l.route === 'index');
      const sum = (f) => usage.reduce((a, l) => a + l[f], 0);
      const per = 1000 / EVENTS;
      const requests = usage.filter((l) => l.outcome === 'deliver' || l.route === 'index').length;
      return { calls, requests: requests * per, rowsWritten: sum('rows_written') * per, rowsRead: sum('rows_read') * per, api: (api.requests.length - apiMark) * per };
    };
    const first = await pass();
    const again = await pass();
    log(`reconcile per 1000 listed: first ${JSON.stringify(first)}; again ${JSON.stringify(again)}`);
    return { events: EVENTS, calls: first.calls, page: Math.ceil(EVENTS / first.calls), first, again };
  } finally {
    await runtime.stop();
    await api.close();
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

// ---- cost per million events --------------------------------------------------------------

/** The origin's answer time the cost comparison assumes, as the performance issue asks. */
const COST_ORIGIN_MS = 100;

/**
 * The prices of docs/capacity.md's table, in dollars per million of each unit beyond the
 * included amounts: read from the document by bench/cost.mjs, so the benchmark, the cost
 * figures and the docs cannot disagree.
 */
function prices() {
  const p = costPrices();
  return {
    workerRequest: p.workerRequests.price,
    cpuMs: p.cpuMs.price,
    objectRequest: p.objectRequests.price,
    gbSecond: p.gbSeconds.price,
    rowRead: p.rowsRead.price,
    rowWritten: p.rowsWritten.price,
  };
}

/**
 * What a million unique deliveries and a million duplicates cost the worker and the peer,
 * beyond the included amounts, from the units this run counted: one Worker request each, the
 * runtime CPU measured straight to workerd (1 KiB), the object requests and rows counted, and
 * the object's duration at 128 MB. The worker's object is active while the origin answers
 * (COST_ORIGIN_MS) plus its own time (the delivery's duration less the origin's); the peer's
 * object is idle during its forward and its own time is not counted, which favours the peer.
 * Storage is the same for both (one object per event) and left out.
 */
function costPerMillion(units, runs) {
  const cpu = (kind, name) => runs('direct', kind, name) && summary(runs('direct', kind, name).map((r) => r.cpu)).median;
  const p = prices();
  const bill = ({ cpuMs, requests, rowsWritten, rowsRead, activeMs }) => {
    const items = {
      'Worker requests': p.workerRequest,
      'Worker CPU': cpuMs * p.cpuMs,
      'object requests': requests * p.objectRequest,
      'object duration': (activeMs / 1000) * 0.125 * p.gbSecond,
      'rows written': rowsWritten * p.rowWritten,
      'rows read': rowsRead * p.rowRead,
    };
    return { items, total: Object.values(items).reduce((a, b) => a + b, 0) };
  };
  const workerCpu = { unique: cpu('worker', 'unique-1'), duplicate: cpu('worker', 'duplicate-1') };
  const peerCpu = { unique: cpu('peer', 'unique-1'), duplicate: cpu('peer', 'duplicate-1') };
  if ([...Object.values(workerCpu), ...Object.values(peerCpu)].some((v) => v === undefined)) return undefined;
  const own = Math.max(0, units.uniqueMs - units.uniqueOriginMs);
  return {
    worker: {
      unique: bill({ cpuMs: workerCpu.unique, requests: units.uniqueRequests, rowsWritten: units.uniqueRowsWritten, rowsRead: units.uniqueRowsRead, activeMs: COST_ORIGIN_MS + own }),
      duplicate: bill({ cpuMs: workerCpu.duplicate, requests: units.duplicateRequests, rowsWritten: units.duplicateRowsWritten, rowsRead: units.duplicateRowsRead, activeMs: 0 }),
    },
    peer: {
      unique: bill({ cpuMs: peerCpu.unique, ...units.peer.unique, activeMs: 0 }),
      duplicate: bill({ cpuMs: peerCpu.duplicate, ...units.peer.duplicate, activeMs: 0 }),
    },
    ownMs: own,
  };
}

/** The cost section of the report: per million events, the worker beside the peer. */
function costLines(units, runs) {
  const cost = costPerMillion(units, runs);
  if (!cost) return [];
  const lines = ['## Cost per million events', ''];
  lines.push(`From the units above, the runtime CPU measured straight to workerd (1 KiB) and the prices in [docs/capacity.md](docs/capacity.md) (beyond the included amounts), with an origin that answers in ${COST_ORIGIN_MS} ms. The worker's object is active while the origin answers plus its own ${cost.ownMs.toFixed(1)} ms; the peer's object is idle during its forward, and its own time is not counted (which favours the peer). Storage is the same for both and left out.`, '');
  lines.push('| item | worker: unique | peer: unique | worker: duplicate | peer: duplicate |', '| --- | --- | --- | --- | --- |');
  const money = (v) => `$${v.toFixed(3)}`;
  for (const item of Object.keys(cost.worker.unique.items)) {
    lines.push(`| ${item} | ${money(cost.worker.unique.items[item])} | ${money(cost.peer.unique.items[item])} | ${money(cost.worker.duplicate.items[item])} | ${money(cost.peer.duplicate.items[item])} |`);
  }
  lines.push(`| **total** | **${money(cost.worker.unique.total)}** | **${money(cost.peer.unique.total)}** | **${money(cost.worker.duplicate.total)}** | **${money(cost.peer.duplicate.total)}** |`);
  // Where a unique delivery costs the same: the object's duration that makes up the difference.
  const { items } = cost.worker.unique;
  const withoutDuration = cost.worker.unique.total - items['object duration'];
  const evenMs = ((cost.peer.unique.total - withoutDuration) / (0.125 * prices().gbSecond)) * 1000 - cost.ownMs;
  lines.push('', evenMs > 0
    ? `A unique delivery costs the same for both when the origin answers in about ${evenMs.toFixed(0)} ms; with a faster origin this worker costs less, with a slower one more (its object waits for the origin, where the peer makes a second object request).`
    : 'This worker\'s unique delivery costs more than the peer\'s at any origin speed in this run: its Worker CPU and object requests alone come to more than the peer\'s whole delivery.');
  return lines;
}

// ---- report ---------------------------------------------------------------------------------

function versionOf(pkg) {
  return JSON.parse(readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
}

function report(results, units, host, cold, parts) {
  const wasm = readFileSync(path.join(ROOT, 'build', 'index_bg.wasm'));
  const js = readFileSync(path.join(ROOT, 'build', 'index.js'));
  const wasmGzip = gzipSync(wasm, { level: 9 }).length;
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  const fmt = (s, d = 0) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
  const runs = (transport, kind, name) => results[`${transport}/${kind}/${name}`];
  const ratio = (transport, kind, name, baseKind, baseName, field) => {
    const a = runs(transport, kind, name);
    const b = runs(transport, baseKind, baseName);
    if (!a || !b) return undefined;
    return summary(a.map((r, i) => r[field] / b[i][field])).median;
  };
  const lines = [];
  lines.push(PROVIDER === 'stripe' ? '# Benchmarks' : `# Benchmarks: ${PROVIDER} deliveries`, '');
  lines.push(`Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}. Every figure below was measured in one run on the machine named here; the baselines ran in the same run, interleaved round by round (each round starts a fresh runtime for each kind, in a turning order), so ratios compare like with like. Figures from another machine are not comparable.`, '');
  lines.push('## Machine', '');
  lines.push(`- CPU: ${os.cpus()[0].model}, ${os.cpus().length} cores; memory ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; ${os.type()} ${os.release()}`);
  lines.push(`- Node ${process.version}; wrangler ${versionOf('wrangler')}; workerd ${versionOf('workerd')}; miniflare ${versionOf('miniflare')}`);
  lines.push(`- Load: ${CONCURRENCY} requests in flight over keep-alive connections; each fresh runtime first warmed with ${RUNTIME_WARMUP} deliveries of 1 KiB (see "Warm-up" below), then per scenario a short warm-up of its own and ${UNIQUE} unique deliveries or ${REPEATS} repeats at every body size; ${ROUNDS} rounds; median with (min–max) over rounds. The load generator, the origin and the runtime share the machine's cores.`);
  lines.push('- Runtime CPU: the user and system time of the workerd processes over the measured phase (read from `/proc`), divided by its requests: what Cloudflare bills as CPU time, without the load generator\'s or the origin\'s own work. Straight to workerd it includes Miniflare\'s entry worker, the same for every kind; through `wrangler dev` also the proxy workers wrangler runs in workerd, so only the first table\'s figures approach what a deployment is billed.');
  lines.push(`- Storage: the runtimes keep their Durable Objects' SQLite files in ${storageWhere()}, chosen by \`BENCH_TMPDIR\` or by \`scripts/bench.sh\` (a memory file system where there is one). On a disk, creating each new object's files adds the file system's own cost to every unique delivery, alike for every kind and not CPU that Cloudflare bills a Worker for (see the notes below).`, '');
  lines.push('## Throughput and latency', '');
  lines.push('- **floor** (`bench/floor/`): a JavaScript Worker sending each request to a JavaScript Durable Object named by the event id, which does one conditional write.');
  lines.push('- **peer** (`bench/peer/`): the same protocol as this worker in plain JavaScript: WebCrypto HMAC (keys imported once per isolate), `JSON.parse`, an object per event id with `storage.get`/`put`, lease, fence and retention alarm, claim → forward → finalize inside `waitUntil` (two object requests per delivery, over RPC).');
  if (PROVIDER !== 'stripe') lines.push(`- **worker** deliveries in this run are ${PROVIDER} deliveries (\`/webhooks/${PROVIDER}\`, signed by the sender's library, bodies of the same sizes); the peer's are Stripe's.`);
  lines.push('- **worker**: this project: signed Stripe deliveries (verify → one request to the event\'s object, which claims, forwards to a local origin that answers 200 at once, and finalizes), duplicates of finished events, Idempotency-Key replays, and in queue mode the time until Stripe\'s `200 queued`.', '');
  for (const transport of TRANSPORTS) {
    lines.push(`### ${transport === 'direct' ? 'Straight to the runtime (Miniflare → workerd)' : 'Through `wrangler dev` (what a user sees locally)'}`, '');
    lines.push('| scenario | requests/s | p50 ms | p99 ms | runtime CPU ms per request | throughput vs peer | p99 vs peer | throughput vs floor |');
    lines.push('| --- | --- | --- | --- | --- | --- | --- | --- |');
    const row = (label, kind, name, peerName, floorName) => {
      const measured = runs(transport, kind, name);
      if (!measured) return;
      const rps = summary(measured.map((r) => r.rps));
      const p50 = summary(measured.map((r) => r.p50));
      const p99 = summary(measured.map((r) => r.p99));
      const x = (v) => (v === undefined ? '—' : `${v.toFixed(2)}×`);
      const bad = measured.flatMap((r) => Object.entries(r.statuses).filter(([s]) => s !== '200'));
      const note = bad.length ? ` (non-200: ${bad.map(([s, n]) => `${n}×${s}`).join(', ')})` : '';
      const cpu = measured.every((r) => r.cpu !== undefined) ? fmt(summary(measured.map((r) => r.cpu)), 3) : '—';
      lines.push(`| ${label}${note} | ${fmt(rps)} | ${fmt(p50, 2)} | ${fmt(p99, 2)} | ${cpu} | ${peerName ? x(ratio(transport, kind, name, 'peer', peerName, 'rps')) : '—'} | ${peerName ? x(ratio(transport, kind, name, 'peer', peerName, 'p99')) : '—'} | ${floorName ? x(ratio(transport, kind, name, 'floor', floorName, 'rps')) : '—'} |`);
    };
    row('floor: unique ids', 'floor', 'unique');
    row('floor: repeated ids', 'floor', 'duplicate');
    for (const kib of SIZES) {
      row(`peer: unique, ${kib} KiB`, 'peer', `unique-${kib}`, null, kib === 1 ? 'unique' : null);
      row(`peer: duplicates, ${kib} KiB`, 'peer', `duplicate-${kib}`, null, kib === 1 ? 'duplicate' : null);
      row(`**worker: unique, ${kib} KiB**`, 'worker', `unique-${kib}`, `unique-${kib}`, kib === 1 ? 'unique' : null);
      row(`**worker: duplicates, ${kib} KiB**`, 'worker', `duplicate-${kib}`, `duplicate-${kib}`, kib === 1 ? 'duplicate' : null);
    }
    row('earlier build (`BENCH_BASELINE_BUILD`): unique, 1 KiB', 'baseline', 'unique-1', 'unique-1', 'unique');
    row('earlier build (`BENCH_BASELINE_BUILD`): duplicates, 1 KiB', 'baseline', 'duplicate-1', 'duplicate-1', 'duplicate');
    row('worker: Idempotency-Key replays', 'worker', 'replay', null, 'duplicate');
    row('worker, queue mode: until Stripe\'s `200 queued` (1 KiB)', 'queue', 'queued-1', null, 'unique');
    lines.push('');
  }
  const warmRows = [['floor', 'floor', 'duplicate'], ['peer', 'peer', 'duplicate-1'], ['**worker**', 'worker', 'duplicate-1'], ['earlier build (`BENCH_BASELINE_BUILD`)', 'baseline', 'duplicate-1']];
  if (TRANSPORTS.some((transport) => warmRows.some(([, kind]) => runs(transport, kind, 'warm-up')))) {
    lines.push('## Warm-up', '');
    lines.push(`Every runtime above was warmed with ${RUNTIME_WARMUP} deliveries of 1 KiB before its first measured scenario, the same for every kind. V8 runs WebAssembly first in its baseline tier and optimises each function once it has run a while, which for this module takes a few thousand requests; a JavaScript worker settles sooner. What that costs, measured on the first ${WARMUP_MEASURED} duplicates of 1 KiB that each fresh runtime served, beside the same kind's steady duplicates of 1 KiB measured after the warm-up:`, '');
    lines.push('| transport | kind | first duplicates: requests/s | throughput vs the peer\'s first | runtime CPU ms per request | steady duplicates: runtime CPU ms per request | first against steady (CPU) |', '| --- | --- | --- | --- | --- | --- | --- |');
    for (const transport of TRANSPORTS) {
      for (const [label, kind, steadyName] of warmRows) {
        const first = runs(transport, kind, 'warm-up');
        const steady = runs(transport, kind, steadyName);
        if (!first || !steady || !first.every((r) => r.cpu !== undefined)) continue;
        const over = summary(first.map((r, i) => r.cpu / steady[i].cpu)).median;
        const againstPeer = kind === 'peer' ? undefined : ratio(transport, kind, 'warm-up', 'peer', 'warm-up', 'rps');
        lines.push(`| ${transport} | ${label} | ${fmt(summary(first.map((r) => r.rps)))} | ${againstPeer === undefined ? '—' : `${againstPeer.toFixed(2)}×`} | ${fmt(summary(first.map((r) => r.cpu)), 3)} | ${fmt(summary(steady.map((r) => r.cpu)), 3)} | ${over.toFixed(2)}× |`);
      }
    }
    lines.push('', 'A low-traffic endpoint whose isolates rarely serve thousands of requests runs mostly in that first regime; the tables above and the targets below are the steady state.', '');
  }
  lines.push('## Size and cold start', '');
  lines.push('| artefact | raw | gzip |', '| --- | --- | --- |');
  lines.push(`| \`build/index_bg.wasm\` (after wasm-opt, names stripped) | ${kib(wasm.length)} | ${kib(wasmGzip)} |`);
  lines.push(`| \`build/index.js\` (the entry bundled with the glue) | ${kib(js.length)} | ${kib(gzipSync(js, { level: 9 }).length)} |`);
  if (BASELINE) {
    const earlier = readFileSync(path.join(BASELINE, 'index_bg.wasm'));
    lines.push(`| the earlier build's \`index_bg.wasm\` (\`BENCH_BASELINE_BUILD\`) | ${kib(earlier.length)} | ${kib(gzipSync(earlier, { level: 9 }).length)} |`);
  }
  lines.push('');
  const coldOf = (c) => `${c.median.toFixed(1)} ms (${c.min.toFixed(1)}–${c.max.toFixed(1)})`;
  lines.push(`Cold start: the first signed delivery on a fresh runtime (straight to workerd, module compiled and instantiated, object created), median of ${COLD_STARTS} starts, the kinds taking turns: worker **${coldOf(cold.worker)}**, peer ${coldOf(cold.peer)}${cold.baseline ? `, earlier build (\`BENCH_BASELINE_BUILD\`) ${coldOf(cold.baseline)}` : ''}.`, '');
  if (parts) {
    const at = Object.fromEntries(parts.map((p) => [p.name, p.cpu.median]));
    const what = {
      'javascript-answer': 'a JavaScript Worker reads the body and answers (`bench/anatomy/answer.js`)',
      'javascript-answer-and-log': 'the same, plus one log line of the size this worker writes for a duplicate (`bench/anatomy/answer-with-log.js`)',
      'javascript-object-request': 'the first, plus one RPC call to this project\'s object, which answers an empty frame at once (`bench/anatomy/object-request.js`)',
      'worker-unknown-path': 'this worker refuses an unknown path: entry point, routing, log line, JSON answer',
      'worker-wrong-signature': 'this worker refuses a delivery signed with another secret: plus configuration, body, WebCrypto HMAC',
      'worker-duplicate': 'this worker answers a duplicate: plus the envelope, the request to the event\'s object, which reads the record',
      'peer-duplicate': 'the JavaScript peer answers a duplicate',
    };
    lines.push('## Where a duplicate\'s cost goes', '');
    lines.push('The runtime\'s CPU per request for a ladder of probes, each doing more of a duplicate delivery\'s work (straight to workerd, 1 KiB bodies, the same concurrency, median of 3 runs; `bench/anatomy/`):', '');
    lines.push('| probe | what it does | runtime CPU ms per request |', '| --- | --- | --- |');
    for (const p of parts) lines.push(`| ${p.name} | ${what[p.name]} | ${p.cpu.median.toFixed(3)} (${p.cpu.min.toFixed(3)}–${p.cpu.max.toFixed(3)}) |`);
    const step = (a, b) => (at[a] - at[b]).toFixed(3);
    lines.push('');
    lines.push(`- One log line: ${step('javascript-answer-and-log', 'javascript-answer')} ms (the peer writes none; this worker writes one per request).`);
    lines.push(`- This worker's entry point, log line and answer: ${step('worker-unknown-path', 'javascript-answer')} ms more than a JavaScript Worker's answer.`);
    lines.push(`- Configuration, body and signature: ${step('worker-wrong-signature', 'worker-unknown-path')} ms.`);
    lines.push(`- The envelope, the request to the event's object and the object's work: ${step('worker-duplicate', 'worker-wrong-signature')} ms; one request to the same object from JavaScript costs ${step('javascript-object-request', 'javascript-answer')} ms.`);
    lines.push(`- The peer's whole duplicate beyond a JavaScript answer: ${step('peer-duplicate', 'javascript-answer')} ms; this worker's: ${step('worker-duplicate', 'javascript-answer')} ms.`);
    lines.push('- A step within about 0.03 ms of zero is within the spread between runs.');
    const floorDuplicate = runs('direct', 'floor', 'duplicate');
    const peerDuplicate = at['peer-duplicate'];
    const bound = at['worker-unknown-path'] + at['javascript-object-request'] - at['javascript-answer'];
    const floorCpu = floorDuplicate?.every((r) => r.cpu !== undefined) ? summary(floorDuplicate.map((r) => r.cpu)).median : undefined;
    lines.push(`- A lower bound for a duplicate through this worker (its unknown-path answer plus one object request as cheap as JavaScript's): ${bound.toFixed(3)} ms. If throughput follows the runtime's CPU, matching the peer's needs at most ${peerDuplicate.toFixed(3)} ms per duplicate${floorCpu === undefined ? '' : ` (the floor's is ${floorCpu.toFixed(3)} ms)`}.`, '');
  }
  lines.push('## Billable units per delivery', '');
  lines.push('Counted by the claim authority itself (`LOG_STORAGE_USAGE=true`): Durable Object requests, and SQLite rows as Cloudflare bills them (one per key put or deleted, one per `setAlarm`).', '');
  lines.push('| path | Durable Object requests | rows written | rows read |', '| --- | --- | --- | --- |');
  lines.push(`| unique delivery (one request: claim, its alarm, forward, finalize) | ${units.uniqueRequests.toFixed(2)} | ${units.uniqueRowsWritten.toFixed(2)} | ${units.uniqueRowsRead.toFixed(2)} |`);
  lines.push(`| duplicate of a finished event | ${units.duplicateRequests.toFixed(2)} | ${units.duplicateRowsWritten.toFixed(2)} | ${units.duplicateRowsRead.toFixed(2)} |`);
  lines.push(`| first Idempotency-Key request (claim, alarm, finalize with the cached answer) | ${units.keyedRequests.toFixed(2)} | ${units.keyedRowsWritten.toFixed(2)} | — |`);
  lines.push(`| queue mode: one healthy event, stored then delivered by its alarm (its rows from store to delivery) | ${units.queuedRequests.toFixed(2)} | ${units.queuedRowsWritten.toFixed(2)} | ${units.queuedRowsRead.toFixed(2)} |`);
  lines.push(`| queue mode: its attempt through the origin's gate (no row: the gate writes only when its pause or breaker changes) | ${units.queuedGateRequests.toFixed(2)} | — | — |`);
  lines.push(`| sync mode: one healthy event over its whole life (the delivery, then its alarms until its expiry deletes it) | ${units.life.sync.requests.toFixed(2)} | ${units.life.sync.rowsWritten.toFixed(2)} | ${units.life.sync.rowsRead.toFixed(2)} |`);
  lines.push(`| queue mode: one healthy event over its whole life (stored, delivered by its alarm through its origin's gate, then expired) | ${units.life.queue.requests.toFixed(2)} | ${units.life.queue.rowsWritten.toFixed(2)} | ${units.life.queue.rowsRead.toFixed(2)} |`);
  lines.push(`| failure index, per healthy event (sync; queue mode with \`ALERT_URL\` set) | ${units.syncIndexRequests.toFixed(2)}; ${units.queuedIndexRequests.toFixed(2)} | — | — |`);
  const counted = (label, u) => lines.push(`| ${label} | ${u.requests.toFixed(2)} | ${u.rowsWritten.toFixed(2)} | ${u.rowsRead.toFixed(2)} |`);
  counted('peer, unique delivery (counted: claim and settle requests)', units.peer.unique);
  counted('peer, duplicate (counted)', units.peer.duplicate);
  counted('floor, new id (counted: one conditional write)', units.floor.unique);
  counted('floor, repeated id (counted)', units.floor.duplicate);
  lines.push('', 'The peer\'s and the floor\'s rows are counted by wrapping their objects\' storage, their code unchanged (`bench/units/`); the worker counts its own.', '');
  lines.push('The queue-mode rows are measured with the gate\'s caps off (`ORIGIN_MAX_RPS=0`, `ORIGIN_MAX_IN_FLIGHT=0`), so that no attempt is held: their events are stored fifty at once, faster than the default 20 a second. A held attempt sends nothing and costs its event one more alarm, one more request to the gate and the rows of one settle. Sync mode and the Idempotency-Key door do not pass through the gate.', '');
  const r = units.reconcile;
  lines.push(`Reconciliation (\`POST /admin/reconcile\`, sync mode, a local fake of Stripe's event log), per 1,000 events listed, ${r.events} events over ${r.calls} calls of ${r.page} each:`, '');
  lines.push('| run | Durable Object requests | rows written | rows read | requests to the sender\'s API |', '| --- | --- | --- | --- | --- |');
  lines.push(`| every event unknown: each delivered through its claim | ${r.first.requests.toFixed(0)} | ${r.first.rowsWritten.toFixed(0)} | ${r.first.rowsRead.toFixed(0)} | ${r.first.api.toFixed(0)} |`);
  lines.push(`| again: every event already done | ${r.again.requests.toFixed(0)} | ${r.again.rowsWritten.toFixed(0)} | ${r.again.rowsRead.toFixed(0)} | ${r.again.api.toFixed(0)} |`);
  lines.push('', 'The Durable Object requests count each event\'s claim and the failure index\'s note of each call\'s run (one per call), and the rows are theirs. A scheduled run is one such call per sender every 15 minutes; one that lists nothing costs one request to the index and one to the sender\'s API.', '');
  lines.push(`Duration: the event's object is active, and billed for duration, while it serves the worker's request, and its forward can keep it active after replying while a late answer is awaited. The worker's own duration of each request gives the usual case (medians from the same run, a local origin that answers at once, 10 requests in flight): a unique delivery ${units.uniqueMs} ms, of which the origin's answer ${units.uniqueOriginMs} ms; a duplicate ${units.duplicateMs} ms. The object waits for the origin itself, so an origin that takes 300 ms adds about 300 ms of the object's duration to each unique delivery; the peer's object is idle during its forward (see docs/capacity.md).`, '');
  lines.push(...costLines(units, runs), '');
  lines.push('## Against the targets', '');
  lines.push(`The performance issue's targets, straight to workerd, from the steady-state table above (each runtime warmed with ${RUNTIME_WARMUP} deliveries first), median over ${ROUNDS} rounds. A ratio that misses its goal but whose spread across rounds crosses it is reported as within the spread, with the spread.`, '');
  lines.push('The last column says in a few words why a missed target stands where it does; its link leads to what was tried, with the figures of the runs that measured it.', '');
  lines.push('| target | measured | | when missed: why |', '| --- | --- | --- | --- |');
  const verdict = (s, goal, higherIsBetter) => {
    if (higherIsBetter ? s.median >= goal : s.median <= goal) return 'met';
    if (s.min <= goal && goal <= s.max) return `within the spread (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
    return '**not met**';
  };
  const row = (label, measured, met, why) => lines.push(`| ${label} | ${measured} | ${met} | ${met === 'met' ? '—' : why} |`);
  const target = (label, values, goal, higherIsBetter, why, unit = '×') => {
    if (!values || values.length === 0 || values.some((v) => v === undefined || Number.isNaN(v))) return;
    const s = summary(values);
    row(label, `${s.median.toFixed(2)}${unit}`, verdict(s, goal, higherIsBetter), why);
  };
  const perRound = (kind, name, baseName, field) => {
    const a = runs('direct', kind, name);
    const b = runs('direct', 'peer', baseName);
    return a && b ? a.map((r, i) => r[field] / b[i][field]) : undefined;
  };
  for (const kib of SIZES) {
    for (const [what, name] of [['unique deliveries', `unique-${kib}`], ['duplicates', `duplicate-${kib}`]]) {
      target(`${kib} KiB ${what}: throughput ≥ 1.0× the peer's`, perRound('worker', name, name, 'rps'), 1, true, WHY.steady);
      target(`${kib} KiB ${what}: runtime CPU per request ≤ 1.0× the peer's`, perRound('worker', name, name, 'cpu'), 1, false, WHY.steady);
    }
  }
  const coldRatio = cold.worker.median / cold.peer.median;
  row(`the first signed delivery on a fresh runtime ≤ 1.5× the peer's (median of ${COLD_STARTS} starts${COLD_STARTS < 7 ? ', fewer than the 7 the target asks' : ''})`, `${coldRatio.toFixed(2)}× (${cold.worker.median.toFixed(1)} ms against ${cold.peer.median.toFixed(1)} ms)`, coldRatio <= 1.5 ? 'met' : '**not met**', WHY.cold);
  target(`the first ${WARMUP_MEASURED} duplicates of a fresh runtime: throughput ≥ 0.9× the peer's first`, perRound('worker', 'warm-up', 'warm-up', 'rps'), 0.9, true, WHY.young);
  target('the module (`build/index_bg.wasm`) ≤ 220 KiB gzip', [wasmGzip / 1024], 220, false, WHY.size, ' KiB');
  const cost = costPerMillion(units, runs);
  if (cost) {
    for (const [what, key] of [['a unique delivery', 'unique'], ['a duplicate', 'duplicate']]) {
      const ratioOf = cost.worker[key].total / cost.peer[key].total;
      row(`cost per million events, ${what}: at most the peer's`, `$${cost.worker[key].total.toFixed(2)} against $${cost.peer[key].total.toFixed(2)} (${ratioOf.toFixed(2)}×)`, ratioOf <= 1 ? 'met' : '**not met**', WHY[`cost_${key}`]);
    }
  }
  lines.push('');
  // The floor is the least any one-object-per-event design does: its own ratio to the peer
  // bounds what any such design can reach.
  const floorOverPeer = (transport, floorName, peerName) => ratio(transport, 'floor', floorName, 'peer', peerName, 'rps');
  for (const transport of TRANSPORTS) {
    const unique = floorOverPeer(transport, 'unique', 'unique-1');
    const duplicate = floorOverPeer(transport, 'duplicate', 'duplicate-1');
    if (unique === undefined || duplicate === undefined) continue;
    lines.push(`The floor itself, ${transport === 'direct' ? 'straight to workerd' : 'through `wrangler dev`'}, 1 KiB: ${unique.toFixed(2)}× the peer's throughput on unique deliveries, ${duplicate.toFixed(2)}× on duplicates.`);
  }
  lines.push('');
  lines.push('## Host micro-benchmarks (`cargo bench`, criterion)', '');
  lines.push('| benchmark | time (low, estimate, high) |', '| --- | --- |');
  for (const h of host) lines.push(`| ${h.name} | ${h.low}, **${h.mid}**, ${h.high} |`);
  lines.push('');
  return lines.join('\n');
}

/**
 * Why each kind of target stands where it does when it is missed, and what was tried, in a few
 * words and no figures (those go stale at the next run); each links to its part of the notes.
 */
const NOTES = 'bench/notes.md';
const WHY = {
  steady: `its own WebAssembly and glue, and its log line, on top of the calls the peer makes too ([why, and what was tried](${NOTES}#steady-state-throughput-and-cpu))`,
  cold: `compiling its WebAssembly on first use; a delivery rehearsed at start-up did not shorten it ([why, and what was tried](${NOTES}#the-first-delivery-on-a-fresh-runtime))`,
  young: `V8 optimises its large async functions late ([why, and what was tried](${NOTES}#the-first-duplicates-of-a-fresh-runtime))`,
  size: `serde's readers and writers of about thirty types, and the async tasks ([why, and what was tried](${NOTES}#the-modules-size))`,
  cost_unique: `its object is billed while it waits for the origin, where the peer makes a second object request; see the break-even origin time under the cost table ([why](${NOTES}#cost-per-million-events))`,
  cost_duplicate: `the same units; only the Worker's CPU differs ([why](${NOTES}#cost-per-million-events))`,
};

/**
 * What bench/cost.mjs computes every cost figure from (bench/units.json): per healthy event
 * over its whole life in each mode, and per duplicate, the object requests and rows counted
 * here, with the runtime CPU measured straight to workerd (1 KiB; queue mode: until the
 * sender's answer, its alarm's work not included), and the object's own active time.
 */
function costInputs(results, units) {
  const runs = (kind, name) => results[`direct/${kind}/${name}`];
  const cpu = (kind, name) => runs(kind, name) && Number(summary(runs(kind, name).map((r) => r.cpu)).median.toFixed(3));
  return {
    date: new Date().toISOString().slice(0, 10),
    objectOwnMs: Math.max(0, units.uniqueMs - units.uniqueOriginMs),
    sync: { ...units.life.sync, cpuMs: cpu('worker', 'unique-1') },
    queue: { ...units.life.queue, cpuMs: cpu('queue', 'queued-1') ?? cpu('worker', 'unique-1') },
    duplicate: { requests: units.duplicateRequests, rowsWritten: units.duplicateRowsWritten, rowsRead: units.duplicateRowsRead, cpuMs: cpu('worker', 'duplicate-1') },
  };
}

// ---- main -----------------------------------------------------------------------------------

// The host micro-benchmarks are compiled first, so a run does not spend its load phase only to
// fail at the end.
if (process.env.BENCH_SKIP_HOST !== '1') {
  const built = spawnSync('cargo', ['bench', '--manifest-path', path.join(ROOT, 'bench', 'host', 'Cargo.toml'), '--bench', 'parsers', '--no-run'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the host micro-benchmarks do not build');
}
const origin = await startOrigin();
const results = {};
try {
  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const transport of TRANSPORTS) {
      await runRound(transport, round, origin, results);
    }
  }
  if (process.env.BENCH_ONLY_LOAD === '1') {
    origin.stop();
    process.exit(0);
  }
  const cold = await coldStarts(['worker', 'peer', ...(BASELINE ? ['baseline'] : [])], origin);
  log(`cold start: ${Object.entries(cold).map(([kind, c]) => `${kind} ${c.median.toFixed(1)} ms`).join(', ')}`);
  const parts = TRANSPORTS.includes('direct') && PROVIDER === 'stripe' && process.env.BENCH_SKIP_ANATOMY !== '1'
    ? await anatomy({
      start: async (kind) => directRuntime(kind, varsOf(kind, origin)),
      signed: (list) => deliveries(list, 1, 'stripe'),
      forged: (list) => Promise.all(list.map((id) => delivery(id, 1, 'stripe', 'whsec_not_the_benchmark_secret'))),
      requests: REPEATS * 5,
      concurrency: CONCURRENCY,
      log,
    })
    : null;
  const units = await billableUnits(origin);
  const host = process.env.BENCH_SKIP_HOST === '1' ? [] : hostBenchmarks();
  const text = report(results, units, host, cold, parts);
  process.stdout.write(`${text}\n`);
  if (PROVIDER === 'stripe') {
    // The hand-kept notes quote figures of the runs they name; they stay in bench/notes.md.
    const pointer = '## Notes\n\nWhat was tried, and why each target stands where it does, with the figures of the runs it names: [bench/notes.md](bench/notes.md). Every figure above is from this run.\n';
    writeFileSync(path.join(ROOT, 'BENCHMARKS.md'), `${text}\n${pointer}`);
    log('wrote BENCHMARKS.md');
    writeFileSync(path.join(ROOT, 'bench', 'units.json'), `${JSON.stringify(costInputs(results, units), null, 2)}\n`);
    writeCostBlocks();
    log('wrote bench/units.json and the cost figures of the documents (bench/cost.mjs)');
  } else {
    writeFileSync(path.join(ROOT, 'bench', `results-${PROVIDER}.md`), `${text}\n`);
    log(`wrote bench/results-${PROVIDER}.md`);
  }
} finally {
  origin.stop();
}
process.exit(0);
