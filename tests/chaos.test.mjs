// The reduced chaos run inside `npm test` (about a minute); `npm run chaos` runs the full one.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { keepFailure } from './chaos/artifacts.mjs';
import { check, format } from './chaos/checker.mjs';
import { runChaos } from './chaos/run.mjs';

/**
 * Checks a reduced run's history; on failure its artifacts are kept (as `npm run chaos` keeps
 * them) and the report names them.
 */
function checked(options, history, t) {
  const started = history.startedAt;
  const verdict = check(history);
  let report = `seed ${options.seed}\n${format(verdict.table)}\n${verdict.failures.join('\n')}`;
  if (verdict.failures.length > 0) {
    const kept = keepFailure({
      options, history, verdict, seconds: Math.round((history.endedAt - started) / 1000), machine: {},
      // The reduced runs set options the command line does not take: replayed from run.mjs.
      command: `runChaos(${JSON.stringify(options)}) (tests/chaos/run.mjs; a reduced run of tests/chaos.test.mjs)`,
    });
    report += `\nkept: ${kept.text}\n  timelines: ${kept.json}\n  history: ${kept.history}`;
  }
  for (const line of report.split('\n')) t.diagnostic(line);
  return { ...verdict, report };
}

test('reduced chaos run: no event lost, none processed twice, no 500', { timeout: 240_000 }, async (t) => {
  const { options, history } = await runChaos({
    events: 200, maxDuplicates: 5, concurrency: 32, failureRate: 0.2, slowRate: 0.05, beyondRate: 0.01, restarts: 1,
    // Roomier than the full run's defaults, for a slow shared CI machine.
    leaseSeconds: 8, forwardTimeoutMs: 2_000, lateWaitSeconds: 3,
  });
  const { table, failures, report } = checked(options, history, t);
  assert.deepEqual(failures, [], report);
  assert.equal(history.restartsAt.length, 1, 'the runtime was restarted mid-run');
  const held = history.origin.find((r) => r.held);
  assert.ok(held, 'a claim was held mid-forward when the runtime died');
  assert.ok(history.origin.some((r) => r.eventId === held.eventId && r.takeover), 'and it was taken over');
  assert.ok(history.origin.some((r) => r.status === 500), 'the origin failed some requests');
  assert.ok(history.deliveries.some((d) => d.status === 409), 'duplicates met live claims');
  const learnedLate = history.log.filter((l) => l.outcome === 'late_answer' && l.settle === 'finalized');
  assert.ok(learnedLate.length > 0, 'some answers came after the time-out and were settled on');
});

test('reduced chaos run in queue mode: every event delivered once or dead-lettered by the rules', { timeout: 240_000 }, async (t) => {
  const { options, history } = await runChaos({
    mode: 'queue', events: 150, maxDuplicates: 5, concurrency: 32, failureRate: 0.2, slowRate: 0.05, beyondRate: 0.04,
    restarts: 1, leaseSeconds: 8, forwardTimeoutMs: 2_000, lateWaitSeconds: 3, queueTimeoutMs: 2_000,
  });
  const { table, failures, report } = checked(options, history, t);
  assert.deepEqual(failures, [], report);
  assert.equal(history.restartsAt.length, 1, 'the runtime was restarted mid-run');
  assert.ok(history.deliveries.every((d) => d.status === undefined || d.status === 200), 'every delivery acknowledged at once');
  assert.ok(Object.values(history.finalStates).every((state) => state === 'done' || state === 'dead'));
  assert.ok(history.log.some((l) => l.outcome === 'retry_scheduled'), 'failed attempts were retried');
  const held = history.origin.find((r) => r.held);
  assert.ok(held && history.origin.some((r) => r.eventId === held.eventId && r.takeover), 'the attempt cut off by the restart was taken over');
  const afterLost = table.find(([label]) => label.startsWith('attempts after an answer slower than the wait horizon'))[1];
  assert.ok(afterLost > 0, 'some answers came after the attempt\'s time-out and their events were retried (each after its lease, or the checker fails)');
});

test('reduced chaos run of GitHub deliveries (queue mode, its default): every delivery run once or dead-lettered, every dead letter in the failure index', { timeout: 240_000 }, async (t) => {
  // Two attempts at most and 30% failures: about 9 of the 100 events die (none dying has a
  // chance below 1 in 10,000), so the index is checked against real dead letters.
  const { options, history } = await runChaos({
    provider: 'github', mode: 'queue', events: 100, maxDuplicates: 5, concurrency: 32, failureRate: 0.3, slowRate: 0.05,
    beyondRate: 0, restarts: 0, leaseSeconds: 8, forwardTimeoutMs: 2_000, lateWaitSeconds: 3, queueTimeoutMs: 2_000,
    retryMaxAttempts: 2,
  });
  const { table, failures, report } = checked(options, history, t);
  assert.deepEqual(failures, [], report);
  assert.ok(history.deliveries.every((d) => d.status === undefined || d.status === 200), 'every delivery acknowledged at once');
  assert.ok(Object.values(history.finalStates).every((state) => state === 'done' || state === 'dead'), JSON.stringify(history.finalStates));
  assert.ok(history.log.some((l) => l.provider === 'github' && l.outcome === 'delivered'), 'delivered as GitHub deliveries');
  const dead = Object.values(history.finalStates).filter((state) => state === 'dead').length;
  assert.ok(dead > 0, 'some events were dead-lettered');
  // The checker failed the run if any dead letter was missing from the index; the counts too.
  assert.equal(history.indexedDead?.length, dead, 'the failure index lists each dead letter as dead');
  assert.ok(history.log.some((l) => l.outcome === 'retry_scheduled'), 'failed attempts were retried');
});
