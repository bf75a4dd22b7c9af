// The reduced chaos runs inside `npm test` (about a minute each); `npm run chaos` runs the full
// one. Each run prints its seed and the command that replays it: `CHAOS_SEED=<seed>` gives every
// reduced run that seed (with `--test-name-pattern` to pick one run), as in
//   CHAOS_SEED=42 npm run test:e2e -- --test-name-pattern='^reduced chaos run in queue mode' tests/chaos.test.mjs
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { test } from 'node:test';

import { keepFailure } from './chaos/artifacts.mjs';
import { check, format } from './chaos/checker.mjs';
import { runChaos } from './chaos/run.mjs';

/** The seed of a reduced run: CHAOS_SEED when set, else a fresh one. */
function seedOf() {
  const given = process.env.CHAOS_SEED;
  if (given === undefined || given === '') return randomInt(2 ** 31 - 1);
  const seed = Number(given);
  if (!Number.isInteger(seed) || seed < 0) throw new Error(`CHAOS_SEED must be a whole number, not ${given}`);
  return seed;
}

/** The command that replays the reduced run named by `pattern` with `seed`. */
const replay = (seed, pattern) => `CHAOS_SEED=${seed} npm run test:e2e -- --test-name-pattern='${pattern}' tests/chaos.test.mjs`;

/** Runs a reduced run with `options` and a seed (printed first, with its replay command). */
async function reduced(t, pattern, options) {
  const seed = seedOf();
  const command = replay(seed, pattern);
  t.diagnostic(`seed ${seed}; replay: ${command}`);
  process.stdout.write(`# ${t.name}: seed ${seed}; replay: ${command}\n`);
  const { options: used, history } = await runChaos({ ...options, seed });
  return { ...checked(used, history, t, command), history };
}

/**
 * Checks a reduced run's history; on failure its artifacts are kept (as `npm run chaos` keeps
 * them) and the report names them.
 */
function checked(options, history, t, command) {
  const started = history.startedAt;
  const verdict = check(history);
  let report = `seed ${options.seed} (replay: ${command})\n${format(verdict.table)}\n${verdict.failures.join('\n')}`;
  if (verdict.failures.length > 0) {
    const kept = keepFailure({
      options, history, verdict, seconds: Math.round((history.endedAt - started) / 1000), machine: {}, command,
    });
    report += `\nkept: ${kept.text}\n  timelines: ${kept.json}\n  history: ${kept.history}`;
  }
  for (const line of report.split('\n')) t.diagnostic(line);
  return { ...verdict, report };
}

// The origin's rates of 502/504, resets and 4xx: about 10 of each in a reduced run (of some
// 200 forwards), so that one of them not showing up has a chance of about 1 in 10,000.
const UNKNOWN_AND_4XX = { gatewayRate: 0.05, resetRate: 0.05, clientErrorRate: 0.05 };

/** Asserts that the origin gave each of its answers, and that the checker saw the takeovers. */
function assertOriginVariety(history, table) {
  assert.ok(history.origin.some((r) => r.status === 500 && !r.gateway && !r.reset), 'the origin failed some requests');
  assert.ok(history.origin.some((r) => r.gateway), 'a gateway answered 502 or 504 for some');
  assert.ok(history.origin.some((r) => r.reset), 'the origin reset some connections after the handler ran');
  assert.ok(history.origin.some((r) => !r.gateway && !r.reset && r.status >= 400 && r.status < 500), 'the origin answered some 4xx');
  const after = table.find(([label]) => label.startsWith('attempts after an unknown outcome'))[1];
  assert.ok(Number.parseInt(after, 10) > 0, `attempts followed unknown outcomes, each a takeover after the lease (else the checker fails): ${after}`);
}

test('reduced chaos run: no event lost, none processed twice, no 500', { timeout: 240_000 }, async (t) => {
  const { table, failures, report, history } = await reduced(t, '^reduced chaos run:', {
    events: 200, maxDuplicates: 5, concurrency: 32, failureRate: 0.2, ...UNKNOWN_AND_4XX, slowRate: 0.05, beyondRate: 0.02, restarts: 1,
    // Roomier than the full run's defaults, for a slow shared CI machine.
    leaseSeconds: 8, forwardTimeoutMs: 2_000, lateWaitSeconds: 3,
  });
  assert.deepEqual(failures, [], report);
  assertOriginVariety(history, table);
  assert.equal(history.restartsAt.length, 1, 'the runtime was restarted mid-run');
  const held = history.origin.find((r) => r.held);
  assert.ok(held, 'a claim was held mid-forward when the runtime died');
  assert.ok(history.origin.some((r) => r.eventId === held.eventId && r.takeover), 'and it was taken over');
  assert.ok(history.deliveries.some((d) => d.status === 409), 'duplicates met live claims');
  const learnedLate = history.log.filter((l) => l.outcome === 'late_answer' && l.settle === 'finalized');
  assert.ok(learnedLate.length > 0, 'some answers came after the time-out and were settled on');
});

test('reduced chaos run in queue mode: every event delivered once or dead-lettered by the rules', { timeout: 240_000 }, async (t) => {
  const { table, failures, report, history } = await reduced(t, '^reduced chaos run in queue mode', {
    mode: 'queue', events: 150, maxDuplicates: 5, concurrency: 32, failureRate: 0.2, ...UNKNOWN_AND_4XX, slowRate: 0.05, beyondRate: 0.04,
    restarts: 1, leaseSeconds: 8, forwardTimeoutMs: 2_000, lateWaitSeconds: 3, queueTimeoutMs: 2_000,
  });
  assert.deepEqual(failures, [], report);
  assertOriginVariety(history, table);
  assert.equal(history.restartsAt.length, 1, 'the runtime was restarted mid-run');
  assert.ok(history.deliveries.every((d) => d.status === undefined || d.status === 200), 'every delivery acknowledged at once');
  assert.ok(Object.values(history.finalStates).every((state) => state === 'done' || state === 'dead'));
  assert.ok(history.log.some((l) => l.outcome === 'retry_scheduled'), 'failed attempts were retried');
  const held = history.origin.find((r) => r.held);
  assert.ok(held && history.origin.some((r) => r.eventId === held.eventId && r.takeover), 'the attempt cut off by the restart was taken over');
  const afterLost = table.find(([label]) => label.startsWith('attempts after an unknown outcome'))[1];
  assert.match(afterLost, /after the horizon [1-9]/, 'some answers came after the attempt\'s time-out and their events were retried (each after its lease, or the checker fails)');
  assertOutage(history, table);
});

/** Asserts that the outage opened the breaker, that it probed at least twice, and that the backlog drained. */
function assertOutage(history, table) {
  const value = (label) => table.find(([l]) => l === label)?.[1];
  assert.ok(history.outage?.to > history.outage?.from, 'the origin went down and came back');
  assert.equal(typeof value('outage: breaker opened (its line seen), ms after the origin went down'), 'number', 'the breaker opened while the origin was down');
  const probes = value('outage: probes while it was open, ms after the origin went down');
  assert.ok(Number.parseInt(probes, 10) >= 2, `the breaker let at least two probes through: ${probes}`);
  assert.equal(typeof value('outage: breaker closed (its line seen), ms after the origin came back'), 'number', 'the breaker closed');
  assert.equal(typeof value('drain: ms from the origin coming back until the last of them settled'), 'number', 'the backlog drained');
}

test('reduced chaos run of GitHub deliveries (queue mode, its default): every delivery run once or dead-lettered, every dead letter in the failure index', { timeout: 240_000 }, async (t) => {
  // Two attempts at most and 30% failures: about 9 of the 100 events die (none dying has a
  // chance below 1 in 10,000), so the index is checked against real dead letters.
  const { table, failures, report, history } = await reduced(t, '^reduced chaos run of GitHub', {
    provider: 'github', mode: 'queue', events: 100, maxDuplicates: 5, concurrency: 32, failureRate: 0.3, slowRate: 0.05,
    beyondRate: 0, restarts: 0, leaseSeconds: 8, forwardTimeoutMs: 2_000, lateWaitSeconds: 3, queueTimeoutMs: 2_000,
    retryMaxAttempts: 2,
  });
  assert.deepEqual(failures, [], report);
  assert.ok(history.deliveries.every((d) => d.status === undefined || d.status === 200), 'every delivery acknowledged at once');
  assert.ok(Object.values(history.finalStates).every((state) => state === 'done' || state === 'dead'), JSON.stringify(history.finalStates));
  assert.ok(history.log.some((l) => l.provider === 'github' && l.outcome === 'delivered'), 'delivered as GitHub deliveries');
  const dead = Object.values(history.finalStates).filter((state) => state === 'dead').length;
  assert.ok(dead > 0, 'some events were dead-lettered');
  // The checker failed the run if any dead letter was missing from the index; the counts too.
  assert.equal(history.indexedDead?.length, dead, 'the failure index lists each dead letter as dead');
  assert.ok(history.log.some((l) => l.outcome === 'retry_scheduled'), 'failed attempts were retried');
  assertOutage(history, table);
});
