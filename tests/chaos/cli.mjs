// `npm run chaos`: the full chaos run (1,000 events by default); prints the checker's table,
// writes RELIABILITY.md with --write, and exits non-zero when the checker finds a failure.
//   npm run chaos -- --events 200 --restarts 1 --seed 42
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { ROOT } from '../harness.mjs';
import { check, format } from './checker.mjs';
import { runChaos } from './run.mjs';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000' },
    'max-duplicates': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '64' },
    'failure-rate': { type: 'string', default: '0.2' },
    'slow-rate': { type: 'string', default: '0.05' },
    'beyond-rate': { type: 'string', default: '0' },
    restarts: { type: 'string', default: '2' },
    seed: { type: 'string' },
    write: { type: 'boolean', default: false },
  },
});
const options = {
  events: Number(values.events),
  maxDuplicates: Number(values['max-duplicates']),
  concurrency: Number(values.concurrency),
  failureRate: Number(values['failure-rate']),
  slowRate: Number(values['slow-rate']),
  beyondRate: Number(values['beyond-rate']),
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
  const md = [
    '# Reliability',
    '',
    `Written by \`npm run chaos -- --write\` on ${new Date().toISOString().slice(0, 10)}: the real worker under \`wrangler dev\` with persisted storage, deliveries signed by the \`stripe\` package, a recording origin that fails ${used.failureRate * 100}% of requests, answers ${used.slowRate * 100}% between the forward time-out and the end of the late-answer wait${used.beyondRate ? ` and ${used.beyondRate * 100}% only after it` : ''}, and ${used.restarts} restarts of the runtime in the middle of the run. Every delivery is re-sent with back-off, as Stripe does, until it gets a 2xx (at most ${used.maxSends} sends).`,
    '',
    `Parameters: ${used.events} events, each delivered 1 to ${used.maxDuplicates} times (some copies at once, some later), ${used.concurrency} requests in flight, lease ${used.leaseSeconds} s, forward time-out ${used.forwardTimeoutMs} ms, late-answer wait ${used.lateWaitSeconds} s, seed ${used.seed}. Machine: ${os.cpus()[0].model}, ${os.cpus().length} cores. Took ${seconds} s.`,
    '',
    'The checker (`tests/chaos/checker.mjs`) reads the whole history and fails the run when an event is lost (acknowledged to Stripe but never succeeded at the origin, or never acknowledged within the budget), when an event succeeded at the origin twice (every 2xx the origin answered counts, whether or not the worker received it) unless a restart of the runtime happened between the two or the first took longer than the wait horizon (forward time-out plus late-answer wait), when a takeover came inside the lease of the claim it replaced, when one attempt number was forwarded twice or out of order, or when any answer is a 500.',
    '',
    '| | |',
    '| --- | --- |',
    ...table.map(([label, value]) => `| ${label} | ${value} |`),
    '',
    failures.length === 0 ? 'Result: **passed**.' : `Result: **failed** (${failures.length}):\n\n${failures.slice(0, 50).map((f) => `- ${f}`).join('\n')}`,
    '',
    'A time-out does not release the claim: the claim authority keeps waiting for the answer and settles on it, so the answers learned late are processed once. The takeovers come from the restarts (and from answers slower than the wait horizon, when the run has them), whose claims are taken over when their lease runs out; those are the only cases the contract lets run twice.',
    '',
  ].join('\n');
  writeFileSync(path.join(ROOT, 'RELIABILITY.md'), md);
  process.stdout.write('wrote RELIABILITY.md\n');
}
process.exit(failures.length === 0 ? 0 : 1);
