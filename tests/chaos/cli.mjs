// `npm run chaos`: the full chaos run (1,000 events by default); prints the checker's table,
// writes RELIABILITY.md with --write, and exits non-zero when the checker finds a failure.
//   npm run chaos -- --events 200 --restarts 1 --seed 42
//   npm run chaos -- --provider github --mode queue --write
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { ROOT } from '../harness.mjs';
import { check, format } from './checker.mjs';
import { runChaos } from './run.mjs';

const { values } = parseArgs({
  options: {
    provider: { type: 'string', default: 'stripe' },
    mode: { type: 'string', default: 'sync' },
    events: { type: 'string', default: '1000' },
    'max-duplicates': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '64' },
    'failure-rate': { type: 'string', default: '0.2' },
    'slow-rate': { type: 'string', default: '0.05' },
    'beyond-rate': { type: 'string' }, // default: 0.02 in queue mode, 0 in sync mode
    restarts: { type: 'string', default: '2' },
    seed: { type: 'string' },
    write: { type: 'boolean', default: false },
  },
});
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
  slowRate: Number(values['slow-rate']),
  beyondRate: Number(values['beyond-rate'] ?? (values.mode === 'queue' ? '0.02' : '0')),
  restarts: Number(values.restarts),
  ...(values.seed ? { seed: Number(values.seed) } : {}),
};
const started = Date.now();
const { options: used, history } = await runChaos(options);
const { table, failures } = check(history);
const seconds = ((Date.now() - started) / 1000).toFixed(0);
const text = format(table);
process.stdout.write(`chaos run (seed ${used.seed}, ${seconds} s)\n${text}\n`);
for (const failure of failures.slice(0, 50)) process.stdout.write(`FAIL ${failure}\n`);
if (values.write) {
  const queue = used.mode === 'queue';
  const stripe = used.provider === 'stripe';
  const marker = stripe ? used.mode : `${used.provider}-${used.mode}`;
  const flags = `${stripe ? '' : `--provider ${used.provider} `}${queue ? '--mode queue ' : ''}`;
  const section = [
    `<!-- ${marker} -->`,
    `## ${stripe ? '' : `${TITLES[used.provider]}, `}${queue ? `${stripe ? 'Queue' : 'queue'} mode (\`DELIVERY_MODE=queue\`)` : `${stripe ? 'Sync' : 'sync'} mode${stripe ? ' (the default)' : ''}`}`,
    '',
    `Written by \`npm run chaos -- ${flags}--write\` on ${new Date().toISOString().slice(0, 10)}: the real worker under \`wrangler dev\` with persisted storage, deliveries to \`/webhooks/${used.provider}\` signed by ${SIGNED_BY[used.provider]}, a recording origin that fails ${used.failureRate * 100}% of requests, answers ${used.slowRate * 100}% ${queue ? 'slowly but within the attempt\'s time-out' : 'between the forward time-out and the end of the late-answer wait'}${used.beyondRate ? ` and ${used.beyondRate * 100}% only after ${queue ? 'that time-out' : 'it'}` : ''}, and ${used.restarts} restarts of the runtime in the middle of the run, each while the origin holds a forward. Every delivery is re-sent with back-off, as Stripe does, until it gets a 2xx (at most ${used.maxSends} sends).`,
    '',
    `Parameters: ${used.events} events, each delivered 1 to ${used.maxDuplicates} times (some copies at once, some later), ${used.concurrency} requests in flight, lease ${used.leaseSeconds} s, ${queue ? `attempt time-out ${used.queueTimeoutMs} ms, retries from 1 s doubling to 2 s, ${used.retryMaxAttempts} attempts at most` : `forward time-out ${used.forwardTimeoutMs} ms, late-answer wait ${used.lateWaitSeconds} s`}, seed ${used.seed}. Machine: ${os.cpus()[0].model}, ${os.cpus().length} cores. Took ${seconds} s.`,
    '',
    '| | |',
    '| --- | --- |',
    ...table.map(([label, value]) => `| ${label} | ${value} |`),
    '',
    failures.length === 0 ? 'Result: **passed**.' : `Result: **failed** (${failures.length}):\n\n${failures.slice(0, 50).map((f) => `- ${f}`).join('\n')}`,
    '',
    queue
      ? 'Each event is acknowledged once stored; its object delivers it, retrying failed attempts with back-off. An attempt cut off by a restart is taken over when its lease runs out; an answer slower than the attempt\'s time-out counts as a failed attempt and is retried once that attempt\'s lease has ended, the retry marked as a takeover (so the takeovers below count both): like an answer lost to a broken connection or a restart, it is a case the contract lets run twice.'
      : 'A time-out does not release the claim: the claim authority keeps waiting for the answer and settles on it, so the answers learned late are processed once. The takeovers come from the restarts (and from answers slower than the wait horizon, when the run has them), whose claims are taken over when their lease runs out; those are the only cases the contract lets run twice.',
    `<!-- /${marker} -->`,
  ].join('\n');
  const file = path.join(ROOT, 'RELIABILITY.md');
  const header = [
    '# Reliability',
    '',
    'Figures of the full chaos runs (`npm run chaos`), one section per delivery mode (and per sender, for the runs with `--provider`). The checker (`tests/chaos/checker.mjs`) reads the whole history of a run and fails it when an event is lost (acknowledged to Stripe but never succeeded at the origin, or never acknowledged within the budget; in queue mode, acknowledged but neither delivered nor dead-lettered by the rules), when an event succeeded at the origin twice (every 2xx the origin answered counts, whether or not the worker received it) unless a restart of the runtime cut off the first (it began before the first was answered, or within 2 s after, before its outcome could be settled) and the attempt after it began only once its lease had run out, or the first took longer than the wait horizon (sync: forward time-out plus late-answer wait; queue: the attempt\'s time-out), when a queue event is dead-lettered although an attempt succeeded in time, when a takeover came inside the lease of the claim it replaced, when any attempt started inside the lease of one whose answer came after the wait horizon (a retry in queue mode, a takeover in sync mode: a slow handler run alongside itself), when one attempt number was forwarded twice or out of order, when a send got no answer at all outside a restart, or when any answer is a 500.',
    '',
    'The runtime: these runs use wrangler 4.164.0 (workerd 2026-11-17, compatibility date 2026-11-17) on Node.js 24. When the toolchain moved there from wrangler 4.86.0 (workerd 2026-04-26) on Node.js 20, the same full run with the same protocol and checker was made on both (commits a35b195 and 470f80c): no failure either way, 77 s and 79 s, 60 and 54 origin answers after the time-out, 4 and 3 takeovers; nothing the checker counts changed with the runtime. The runs below also include the later changes (late answers, queue mode, other senders).',
    '',
  ].join('\n');
  const old = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const markers = PROVIDERS.flatMap((p) => ['sync', 'queue'].map((mode) => (p === 'stripe' ? mode : `${p}-${mode}`)));
  const sections = markers.map((name) => {
    if (name === marker) return section;
    const found = old.match(new RegExp(`<!-- ${name} -->[\\s\\S]*?<!-- /${name} -->`));
    return found ? found[0] : '';
  }).filter(Boolean);
  writeFileSync(file, `${header}\n${sections.join('\n\n')}\n`);
  process.stdout.write('wrote RELIABILITY.md\n');
}
process.exit(failures.length === 0 ? 0 : 1);
