// Peak memory of the runtime while it serves bodies near MAX_BODY_BYTES: for each size and
// number of concurrent requests, the rise of the workerd process's peak resident memory
// (VmHWM, reset before each run) over its level before, for a Stripe webhook (verified,
// parsed, forwarded), a GitHub webhook (verified, forwarded) and a keyed API request
// (fingerprinted, forwarded, its answer kept). The whole process is measured: the worker's
// isolate, the claim objects' isolate and the runtime's own buffers, so it is an upper bound on
// what one isolate holds. Each run starts a fresh runtime (WebAssembly memory never shrinks, so
// a runtime reused would hide what a run needs). Linux only. Usage: node bench/body-memory.mjs [MiB…] (after a build).
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

import { sign as githubSign } from '@octokit/webhooks-methods';

import { builtWorker, call, sleep, startOrigin, startWorkers } from '../tests/harness.mjs';
import { eventId, signatureFor } from '../tests/stripe-helpers.mjs';

const SECRET = 'whsec_body_memory';
const GITHUB_SECRET = 'body-memory-github';
const MIB = 1024 * 1024;
const CAP = 25 * MIB;

/** The pid of the workerd process this process started. */
function workerdPid() {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8').trim();
      const [, comm, rest] = stat.match(/^\d+ \((.*)\) (.*)$/);
      const ppid = Number(rest.split(' ')[1]);
      if (comm.startsWith('workerd') && ppid === process.pid) return Number(entry);
    } catch { /* gone */ }
  }
  throw new Error('no workerd child found');
}

/** The process's resident memory now and at its peak since the last reset, in MiB. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+) kB`))[1]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Resets the peak resident memory to the current level. */
function resetPeak(pid) {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** A Stripe event of about `bytes` bytes. */
function stripeBody(bytes) {
  const head = { id: eventId('mem'), object: 'event', type: 'payment_intent.succeeded', created: 1, livemode: false };
  const text = JSON.stringify({ ...head, data: { object: { padding: '' } } });
  return text.replace('"padding":""', `"padding":"${'p'.repeat(Math.max(0, bytes - text.length))}"`);
}

/** One request of `kind` with a body of `bytes` bytes. */
async function request(url, kind, bytes, n) {
  if (kind === 'stripe') {
    const body = stripeBody(bytes);
    return call(`${url}/webhooks/stripe`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signatureFor(body, SECRET) }, body,
    });
  }
  const body = JSON.stringify({ n, at: Date.now(), padding: 'g'.repeat(bytes - 60) });
  if (kind === 'github') {
    return call(`${url}/webhooks/github`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': randomUUID(),
        'x-hub-signature-256': await githubSign(GITHUB_SECRET, body),
      },
      body,
    });
  }
  return call(`${url}/api/mem/${n}`, {
    method: 'POST', headers: { authorization: `Bearer mem-${n}`, 'idempotency-key': `mem-${Date.now()}-${n}` }, body,
  });
}

const sizes = process.argv.slice(2).map(Number);
const mibs = sizes.length ? sizes : [1, 4, 8, 16, 25];
const VARS = {
  STRIPE_WEBHOOK_SECRET: SECRET, GITHUB_WEBHOOK_SECRET: GITHUB_SECRET, GITHUB_DELIVERY_MODE: 'sync',
  MAX_BODY_BYTES: String(CAP), IDEMPOTENCY_MAX_RESPONSE_BYTES: '2', FORWARD_TIMEOUT_MS: '25000',
};

/**
 * One run on a fresh runtime: `concurrent` requests of `kind` with bodies of `mib` MiB; the
 * peak resident memory over the level after one small request.
 */
async function measure(origin, kind, mib, concurrent) {
  const runtime = await startWorkers([builtWorker('memory', {
    ...VARS, ORIGIN_URL: `${origin.url}/hook`, API_ORIGIN_URL: origin.url,
  })], { logs: [] });
  try {
    const pid = workerdPid();
    await request(runtime.url, kind, 1024, 0);
    await sleep(300);
    const before = memory(pid);
    resetPeak(pid);
    const bytes = Math.min(mib * MIB, CAP);
    const answers = await Promise.all(Array.from({ length: concurrent }, (_, n) => request(runtime.url, kind, bytes, n + 1)));
    const after = memory(pid);
    origin.requests.length = 0;
    const rise = after.peak - before.rss;
    return { kind, mib, concurrent, statuses: answers.map((a) => a.status).join(','), before: Math.round(before.rss), rise: Math.round(rise), perRequestPerMib: (rise / concurrent / mib).toFixed(1) };
  } finally {
    await runtime.dispose();
  }
}

const origin = await startOrigin(() => ({ status: 200, body: 'ok' }));
const rows = [];
try {
  for (const kind of ['stripe', 'github', 'api']) {
    for (const mib of mibs) {
      for (const concurrent of [1, 4]) {
        rows.push(await measure(origin, kind, mib, concurrent));
        console.log(JSON.stringify(rows.at(-1)));
      }
    }
  }
} finally {
  await origin.close();
}
console.log('\n| request | body MiB | concurrent | answers | resident before, MiB | peak rise, MiB | rise per request per body MiB |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.kind} | ${r.mib} | ${r.concurrent} | ${r.statuses} | ${r.before} | ${r.rise} | ${r.perRequestPerMib} |`);
