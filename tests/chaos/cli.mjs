// `npm run chaos`: the full chaos run (1,000 events by default); prints the checker's table,
// writes RELIABILITY.md with --write, and exits non-zero when the checker finds a failure. A
// failed run keeps its artifacts (seed, options, each failing event's timeline, the whole
// history) under .wrangler/chaos-failures/ and prints their paths.
//   npm run chaos -- --events 200 --restarts 1 --seed 42
//   npm run chaos -- --provider github --mode queue --write
//   npm run chaos -- --mode queue --repeat 50     # fresh seeds, stops at the first failure
//   node tests/chaos/cli.mjs --check .wrangler/chaos-failures/<name>.history.json.gz
import { randomInt } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { ROOT } from '../harness.mjs';
import { keepFailure, readHistory } from './artifacts.mjs';
import { check, format } from './checker.mjs';
import { runChaos } from './run.mjs';

const { values } = parseArgs({
  options: {
    provider: { type: 'string', default: 'stripe' },
    mode: { type: 'string', default: 'sync' },
    events: { type: 'string', default: '1000' },
    'max-duplicates': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '64' },
    'failure-rate': { type: 'string', default: '0.2' }, // 500
    'gateway-rate': { type: 'string', default: '0.02' }, // 502 or 504 of a gateway
    'reset-rate': { type: 'string', default: '0.02' }, // the connection reset after the handler ran
    'client-error-rate': { type: 'string', default: '0.02' }, // a 4xx, half of them refusals
    'slow-rate': { type: 'string', default: '0.05' },
    'beyond-rate': { type: 'string', default: '0.02' }, // answers after the wait horizon
    restarts: { type: 'string', default: '2' },
    // Queue mode: attempts before an event is dead-lettered. Three, so that about 1% of the
    // events die and the failure index is checked against real dead letters.
    'retry-max-attempts': { type: 'string', default: '3' },
    'retry-client-errors': { type: 'boolean', default: false }, // queue mode: retry refusals too
    seed: { type: 'string' },
    write: { type: 'boolean', default: false },
    repeat: { type: 'string' }, // run this many times, each with a fresh seed; stop at a failure
    keep: { type: 'boolean', default: false }, // keep the artifacts of a passing run too
    check: { type: 'string' }, // run the checker again on a kept history, and explain it
  },
});
if (values.check) {
  // A kept history, checked again (say, after a fix of the checker).
  const { options, history } = readHistory(values.check);
  const verdict = check(history);
  process.stdout.write(`history of seed ${options.seed} (${options.mode}) checked again\n${format(verdict.table)}\n`);
  for (const failure of verdict.failures.slice(0, 50)) process.stdout.write(`FAIL ${failure}\n`);
  process.exit(verdict.failures.length === 0 ? 0 : 1);
}
const PROVIDERS = ['stripe', 'standard', 'github', 'shopify'];
if (!PROVIDERS.includes(values.provider) || !['sync', 'queue'].includes(values.mode)) {
  process.stderr.write(`--provider is one of ${PROVIDERS.join(', ')}; --mode is sync or queue\n`);
  process.exit(2);
}
const SIGNED_BY = {
  stripe: 'the `stripe` package',
  standard: 'the `standardwebhooks` package',
  github: '`@octokit/webhooks-methods`',
  shopify: 'Shopify\'s documented HMAC',
};
const TITLES = { stripe: 'Stripe', standard: 'Standard Webhooks', github: 'GitHub', shopify: 'Shopify' };
const options = {
  provider: values.provider,
  mode: values.mode,
  events: Number(values.events),
  maxDuplicates: Number(values['max-duplicates']),
  concurrency: Number(values.concurrency),
  failureRate: Number(values['failure-rate']),
  gatewayRate: Number(values['gateway-rate']),
  resetRate: Number(values['reset-rate']),
  clientErrorRate: Number(values['client-error-rate']),
  slowRate: Number(values['slow-rate']),
  beyondRate: Number(values['beyond-rate']),
  restarts: Number(values.restarts),
  retryMaxAttempts: Number(values['retry-max-attempts']),
  retryClientErrors: values['retry-client-errors'],
  ...(values.seed ? { seed: Number(values.seed) } : {}),
};

// What else ran on the machine during a run: sampled every 2 s, the load and how many
// compilers (rustc, cargo, clippy) and runtimes (workerd) were running, ours included.
const WATCHED = ['rustc', 'cargo', 'clippy-driver', 'wasm-opt', 'workerd'];
function sampleMachine() {
  const sample = { at: Date.now(), load: Number(os.loadavg()[0].toFixed(2)) };
  for (const pid of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(pid)) continue;
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (WATCHED.includes(comm)) sample[comm] = (sample[comm] ?? 0) + 1;
    } catch {
      // gone meanwhile
    }
  }
  return sample;
}
function summariseMachine(samples) {
  const compiling = samples.filter((s) => s.rustc || s.cargo || s['clippy-driver']);
  return {
    maxLoad: Math.max(0, ...samples.map((s) => s.load)),
    compiling: compiling.length === 0 ? null
      : { from: new Date(compiling[0].at).toISOString(), to: new Date(compiling.at(-1).at).toISOString(), samples: compiling.length },
    maxWorkerd: Math.max(0, ...samples.map((s) => s.workerd ?? 0)),
    samples,
  };
}

/** A rate as a percentage, for the text. */
const pct = (rate) => `${Number((rate * 100).toFixed(2))}%`;

/** The command that runs `used` again. */
function replayCommand(used) {
  const flags = [`--mode ${used.mode}`, `--provider ${used.provider}`, `--events ${used.events}`, `--max-duplicates ${used.maxDuplicates}`,
    `--concurrency ${used.concurrency}`, `--failure-rate ${used.failureRate}`, `--gateway-rate ${used.gatewayRate}`,
    `--reset-rate ${used.resetRate}`, `--client-error-rate ${used.clientErrorRate}`, `--slow-rate ${used.slowRate}`,
    `--beyond-rate ${used.beyondRate}`, `--restarts ${used.restarts}`, `--retry-max-attempts ${used.retryMaxAttempts}`,
    ...(used.retryClientErrors ? ['--retry-client-errors'] : []), `--seed ${used.seed}`];
  return `npm run chaos -- ${flags.join(' ')}`;
}

/** One chaos run with `seed` (or a fresh one): checked, printed, its artifacts kept on failure. */
async function runOnce(seed) {
  const samples = [sampleMachine()];
  const sampler = setInterval(() => samples.push(sampleMachine()), 2_000);
  const started = Date.now();
  let result;
  try {
    result = await runChaos({ ...options, ...(seed === undefined ? {} : { seed }) });
  } finally {
    clearInterval(sampler);
  }
  const { options: used, history } = result;
  const verdict = check(history);
  const seconds = Math.round((Date.now() - started) / 1000);
  const machine = summariseMachine(samples);
  process.stdout.write(`chaos run (seed ${used.seed}, ${seconds} s)\n${format(verdict.table)}\n`);
  for (const failure of verdict.failures.slice(0, 50)) process.stdout.write(`FAIL ${failure}\n`);
  let kept;
  if (verdict.failures.length > 0 || values.keep) {
    kept = keepFailure({ options: used, history, verdict, seconds, machine, command: replayCommand(used) });
    process.stdout.write(`${verdict.failures.length > 0 ? 'failed run kept' : 'run kept'}: ${kept.text}\n  timelines: ${kept.json}\n  history: ${kept.history}\n`);
  }
  return { used, verdict, seconds, started, machine, kept, table: verdict.table, failures: verdict.failures };
}

if (values.repeat) {
  // The loop: fresh seeds, stopped at the first failure (whose artifacts are kept), a line per
  // run in .wrangler/chaos-loops/, and a summary.
  const runs = Number(values.repeat);
  const dir = path.join(ROOT, '.wrangler', 'chaos-loops');
  mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${options.mode}.jsonl`);
  process.stdout.write(`chaos loop: up to ${runs} runs (${options.mode} mode, ${options.provider}), one line each in ${logFile}\n`);
  const done = [];
  let failed;
  for (let i = 0; i < runs; i += 1) {
    const seed = values.seed && i === 0 ? Number(values.seed) : randomInt(2 ** 31 - 1);
    process.stdout.write(`\n=== run ${i + 1}/${runs}: seed ${seed}, ${new Date().toISOString()}\n`);
    const run = await runOnce(seed);
    const line = {
      run: i + 1, seed: run.used.seed, mode: run.used.mode, provider: run.used.provider, passed: run.failures.length === 0,
      seconds: run.seconds, startedAt: new Date(run.started).toISOString(), endedAt: new Date().toISOString(),
      maxLoad: run.machine.maxLoad, compiling: run.machine.compiling, maxWorkerd: run.machine.maxWorkerd,
      takeovers: run.table.find(([l]) => l === 'takeovers')?.[1], failures: run.failures.length, kept: run.kept?.text,
    };
    appendFileSync(logFile, `${JSON.stringify(line)}\n`);
    done.push(line);
    if (!line.passed) {
      failed = line;
      break;
    }
  }
  const secs = done.map((d) => d.seconds);
  process.stdout.write([
    '',
    `chaos loop summary (${options.mode} mode, ${options.provider}): ${done.filter((d) => d.passed).length} of ${done.length} runs passed${failed ? `; run ${failed.run} failed (seed ${failed.seed}): ${failed.kept}` : ''}`,
    `seeds: ${done.map((d) => d.seed).join(', ')}`,
    `durations: shortest ${Math.min(...secs)} s, longest ${Math.max(...secs)} s, mean ${Math.round(secs.reduce((a, b) => a + b, 0) / secs.length)} s`,
    `runs while a compiler ran: ${done.filter((d) => d.compiling).map((d) => `${d.run} (${d.passed ? 'passed' : 'failed'})`).join(', ') || 'none'}; highest load ${Math.max(...done.map((d) => d.maxLoad))}`,
    `per-run lines: ${logFile}`,
    '',
  ].join('\n'));
  process.exit(failed ? 1 : 0);
}

const { used, table, failures, seconds } = await runOnce(options.seed);
if (values.write) {
  const queue = used.mode === 'queue';
  const stripe = used.provider === 'stripe';
  const marker = stripe ? used.mode : `${used.provider}-${used.mode}`;
  const flags = `${stripe ? '' : `--provider ${used.provider} `}${queue ? '--mode queue ' : ''}`;
  const section = [
    `<!-- ${marker} -->`,
    `## ${stripe ? '' : `${TITLES[used.provider]}, `}${queue ? `${stripe ? 'Queue' : 'queue'} mode (\`DELIVERY_MODE=queue\`)` : `${stripe ? 'Sync' : 'sync'} mode${stripe ? ' (the default)' : ''}`}`,
    '',
    `Written by \`npm run chaos -- ${flags}--write\` on ${new Date().toISOString().slice(0, 10)}: the real worker under \`wrangler dev\` with persisted storage, and deliveries to \`/webhooks/${used.provider}\` signed by ${SIGNED_BY[used.provider]}. The recording origin answers ${pct(used.failureRate)} of requests with 500. It answers ${pct(used.gatewayRate)} as a gateway in front of the handler does when it gives up: 502 at once, or 504 after a wait; the handler behind it succeeded half the time. It resets the connection for ${pct(used.resetRate)}, after the handler ran (a success half the time). It answers ${pct(used.clientErrorRate)} with a 4xx: half refusals (400, 404, 410, 422), half 408, 409, 425 or 429. It answers ${pct(used.slowRate)} ${queue ? 'slowly but within the attempt\'s time-out' : 'between the forward time-out and the end of the late-answer wait'}, and ${pct(used.beyondRate)} only after ${queue ? 'that time-out' : 'the wait'}. The runtime is restarted ${used.restarts} times in the middle of the run, each time while the origin holds a forward.${queue && used.outageAt > 0 ? ` Once ${pct(used.outageAt)} of the events have been sent and the restarts are over, the origin goes down for ${used.outageSeconds} s: it answers every request 503 at once, and resets the connections of the requests it still held, while the rest of the events keep arriving. Then it comes back and the backlog drains.` : ''} Every delivery is re-sent with back-off, as Stripe does, until it gets a 2xx (at most ${used.maxSends} sends).`,
    '',
    `Parameters: ${used.events} events, each delivered 1 to ${used.maxDuplicates} times (some copies at once, some later), ${used.concurrency} requests in flight, lease ${used.leaseSeconds} s, ${queue ? `attempt time-out ${used.queueTimeoutMs} ms, retries from 1 s doubling to 2 s, ${used.retryMaxAttempts} attempts at most, ORIGIN_MAX_RPS ${used.maxRps}, ORIGIN_MAX_IN_FLIGHT ${used.maxInFlight}, ORIGIN_BREAKER_FAILURES ${used.breakerFailures}, ORIGIN_PROBE_SECONDS ${used.probeSeconds}` : `forward time-out ${used.forwardTimeoutMs} ms, late-answer wait ${used.lateWaitSeconds} s`}, seed ${used.seed}. Machine: ${os.cpus()[0].model}, ${os.cpus().length} cores. Took ${seconds} s.`,
    '',
    '| | |',
    '| --- | --- |',
    ...table.map(([label, value]) => `| ${label} | ${value} |`),
    '',
    failures.length === 0 ? 'Result: **passed**.' : `Result: **failed** (${failures.length}):\n\n${failures.slice(0, 50).map((f) => `- ${f}`).join('\n')}`,
    '',
    queue
      ? 'Each event is acknowledged once stored; its object delivers it, retrying failed attempts with back-off. A refusal dead-letters the event at once. An attempt whose outcome is unknown (cut off by a restart, a reset connection, a gateway\'s 502 or 504, an answer slower than the attempt\'s time-out) is retried only once its lease has ended, the retry marked as a takeover. Those are the only cases the contract lets run twice. Every attempt passes through the origin\'s gate. The checker holds the gate to its caps at the origin in every one-second window and at every arrival (a request is there from its arrival until its answer, or the attempt\'s time-out after its claim). While the breaker is open in the outage, requests reach the origin only as probes, one at a time, at least ORIGIN_PROBE_SECONDS apart.'
      : 'A time-out does not release the claim: the claim authority keeps waiting for the answer and settles on it, so the answers learned late are processed once. A 4xx, like a 500, is a definite failure: the claim is released and the sender\'s retry runs at once. The takeovers follow the unknown outcomes: a restart, a reset connection, a gateway\'s 502 or 504, an answer after the wait horizon. Each claim is taken over when its lease runs out, marked as a takeover. Those are the only cases the contract lets run twice.',
    `<!-- /${marker} -->`,
  ].join('\n');
  const file = path.join(ROOT, 'RELIABILITY.md');
  const header = [
    '# Reliability',
    '',
    'Figures of the full chaos runs (`npm run chaos`), one section per delivery mode (and per sender, for the runs with `--provider`), and of the same runs repeated in a loop.',
    '',
    'The checker (`tests/chaos/checker.mjs`) reads the whole history of a run. All its times are on one clock, the one the Durable Objects use for their claims. Each attempt\'s claim time is read from its object\'s storage when its forward reaches the origin. The checker has no band of time, no grace constant and drops no log line.',
    '',
    'What the product learned comes from its own log lines. A line for an attempt that carries the origin\'s status says the product learned that answer. A line proves what it says only if it was seen before the runtime that printed it was stopped. A line the stopped runtime printed as a restart began may describe a write the restart lost.',
    '',
    'An attempt\'s outcome is unknown to the product when:',
    '',
    '- the origin reset the connection after the handler ran;',
    '- a gateway answered 502 or 504 for the handler;',
    '- the answer came after the wait horizon, measured from the attempt\'s own claim, or never, and the product did not learn it. The horizon is the forward time-out plus the late-answer wait in sync mode, the attempt\'s time-out in queue mode;',
    '- or a restart began while the attempt held the claim (after its claim, before its lease ended, before the next attempt was claimed) and before the product had learned its answer.',
    '',
    'The checker fails the run when:',
    '',
    '- an event is lost: acknowledged but never succeeded at the origin, or never acknowledged within the send budget; in queue mode, acknowledged but neither delivered nor dead-lettered by the rules;',
    '- an event succeeded at the origin twice. Every 2xx of the handler counts, whether or not the worker received it (behind a gateway\'s 502 or 504, or a reset, the handler succeeded half the time). One case is allowed: the first one\'s outcome was unknown, and the next attempt was claimed once its lease had ended, as a takeover. A success the product learned is never excused, restart or not;',
    '- an attempt after an unknown outcome was claimed before the unknown attempt\'s lease ended, or does not carry `X-Webhook-Dedup-Takeover: true`. An attempt after one that never reached the origin must carry it too, unless the product logged that it released that one;',
    '- an attempt after a definite failure the product learned (any other non-2xx, a 4xx included) carries the takeover header: the claim was released, not held;',
    '- a queue event is dead-lettered although an attempt succeeded and the product could know it; or before `RETRY_MAX_ATTEMPTS` attempts (those the origin saw, plus each one its record counts that a restart cut off before it arrived: a restart began between the arrivals of the seen attempts around it), unless the product learned a refusal;',
    '- in queue mode, an attempt ran after a refusal the product learned, or the refused event did not end dead. A refusal is a 4xx other than 408, 409, 425 and 429, unless `RETRY_CLIENT_ERRORS` is set. In sync mode a 4xx is a definite failure: released, and the sender retries;',
    '- in queue mode, the failure index was not read at the end (`GET /admin/dead-letters`), a dead letter is missing from it, or it lists as dead an event that is not;',
    '- an attempt reached the origin after a line that proves the event done (a `finalized` settle, or `delivered`). A done record never changes back, restarts included;',
    '- a takeover was claimed before the lease of the claim it replaced had ended;',
    '- an attempt reached the origin before the attempt before it answered, when the product learned that answer only after the horizon (its timer ran late);',
    '- one attempt number was forwarded twice or out of order;',
    '- a send got no answer at all, and was not in flight while the runtime restarted (sent before a restart ended, failed after it began). Each send uses a fresh connection, so none is lost to a reused one the server just closed;',
    '- the dev server (wrangler) stopped answering: a failure of the harness, named as such;',
    '- any answer is a 500, except the dev server\'s own 500 for a send in flight while the runtime restarted (its proxy lost the worker: the local form of the 5xx Cloudflare answers when a Worker\'s process dies; the sender retries, and the event is judged like any other). Those are counted.',
    '',
    'Leases are measured from claim times, to the millisecond. A failed run keeps what it takes to replay and explain it (see [testing](docs/testing.md#when-a-chaos-run-fails)).',
    '',
    'The runtime: these runs use wrangler 4.164.0 (workerd 2026-11-17, compatibility date 2026-11-17) on Node.js 24. When the toolchain moved there from wrangler 4.86.0 (workerd 2026-04-26) on Node.js 20, the same full run with the same protocol and checker was made on both (commits a35b195 and 470f80c): no failure either way, 77 s and 79 s, 60 and 54 origin answers after the time-out, 4 and 3 takeovers; nothing the checker counts changed with the runtime. The runs below also include the later changes (late answers, queue mode, other senders). Each run starts `wrangler dev` on a frozen, unbundled copy of the build, so nothing else on the machine can reload it mid-run (see [testing](docs/testing.md#when-a-chaos-run-fails)).',
    '',
  ].join('\n');
  const old = existsSync(file) ? readFileSync(file, 'utf8') : '';
  // The sections of each run, then the repeated runs' (written by hand from `--repeat`'s
  // summaries), kept as they are.
  const markers = [...PROVIDERS.flatMap((p) => ['sync', 'queue'].map((mode) => (p === 'stripe' ? mode : `${p}-${mode}`))), 'repeated'];
  const sections = markers.map((name) => {
    if (name === marker) return section;
    const found = old.match(new RegExp(`<!-- ${name} -->[\\s\\S]*?<!-- /${name} -->`));
    return found ? found[0] : '';
  }).filter(Boolean);
  writeFileSync(file, `${header}\n${sections.join('\n\n')}\n`);
  process.stdout.write('wrote RELIABILITY.md\n');
}
process.exit(failures.length === 0 ? 0 : 1);
