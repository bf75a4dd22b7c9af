// The chaos checker on made-up histories: it must fail each broken promise, and pass a sound
// history, or the chaos run could not catch anything.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { check } from './chaos/checker.mjs';

function history(overrides = {}) {
  return {
    events: ['evt_a', 'evt_b'],
    deliveries: [
      { eventId: 'evt_a', status: 502 },
      { eventId: 'evt_a', status: 200 },
      { eventId: 'evt_b', status: 200 },
      { eventId: 'evt_b', status: 200 },
    ],
    chains: [{ eventId: 'evt_a', finished: true }, { eventId: 'evt_b', finished: true }, { eventId: 'evt_b', finished: true }],
    origin: [
      { eventId: 'evt_a', attempt: 1, receivedAt: 1, takeover: false, status: 500, delivered: true },
      { eventId: 'evt_a', attempt: 2, receivedAt: 2, takeover: false, status: 200, delivered: true },
      { eventId: 'evt_b', attempt: 1, receivedAt: 3, takeover: false, status: 200, delivered: true },
    ],
    log: [],
    restarts: 0,
    leaseMs: 3_000,
    ...overrides,
  };
}

const row = (table, label) => table.find(([l]) => l === label)?.[1];

test('a sound history passes and is counted', () => {
  const { table, failures } = check(history());
  assert.deepEqual(failures, []);
  assert.equal(row(table, 'events'), 2);
  assert.equal(row(table, 'deliveries sent'), 4);
  assert.equal(row(table, 'answers 200'), 3);
  assert.equal(row(table, 'origin attempts'), 3);
  assert.equal(row(table, 'events with 1 origin success'), 2);
});

test('an event acknowledged but never successful at the origin is lost', () => {
  const h = history();
  h.origin = h.origin.filter((r) => r.eventId !== 'evt_b');
  assert.match(check(h).failures.join('\n'), /evt_b: acknowledged to Stripe but never succeeded/);
});

test('a success the worker never received does not count as processed', () => {
  const h = history();
  h.origin[2].delivered = false;
  const { table, failures } = check(h);
  assert.match(failures.join('\n'), /evt_b: acknowledged to Stripe but never succeeded/);
  assert.equal(row(table, 'late origin successes (answered after the worker timed out)'), 1);
});

test('a delivery that never got a 2xx within its budget is lost', () => {
  const h = history();
  h.chains.push({ eventId: 'evt_a', finished: false });
  assert.match(check(h).failures.join('\n'), /evt_a: a delivery never got a 2xx/);
});

test('two origin successes without a takeover between fail; with a genuine one they pass', () => {
  const h = history();
  h.origin.push({ eventId: 'evt_b', attempt: 2, receivedAt: 5_000, takeover: false, status: 200, delivered: true });
  assert.match(check(h).failures.join('\n'), /evt_b: succeeded at the origin twice without a takeover/);
  h.origin[3].takeover = true;
  assert.deepEqual(check(h).failures, []);
  // A takeover before the first success does not excuse a later second one.
  const early = history();
  early.origin.unshift({ eventId: 'evt_b', attempt: 0, receivedAt: 0, takeover: true, status: 500, delivered: true });
  early.origin.push({ eventId: 'evt_b', attempt: 2, receivedAt: 9_000, takeover: false, status: 200, delivered: true });
  assert.deepEqual(check(early).failures, ['evt_b: succeeded at the origin twice without a takeover between']);
});

test('a takeover inside the replaced claim\'s lease is not believed', () => {
  const h = history();
  h.origin.push({ eventId: 'evt_b', attempt: 2, receivedAt: 500, takeover: true, status: 200, delivered: true });
  h.origin.sort((a, b) => a.receivedAt - b.receivedAt);
  h.origin.find((r) => r.eventId === 'evt_b' && r.attempt === 1).receivedAt = 3;
  assert.match(check(h).failures.join('\n'), /evt_b: attempt 2 took over .* inside its lease/);
});

test('an attempt number forwarded twice, or out of order, fails', () => {
  const twice = history();
  twice.origin.push({ eventId: 'evt_a', attempt: 2, receivedAt: 9, takeover: false, status: 500, delivered: true });
  assert.match(check(twice).failures.join('\n'), /evt_a: attempt 2 was forwarded twice/);
  const backwards = history();
  backwards.origin.push({ eventId: 'evt_a', attempt: 1, receivedAt: 9, takeover: false, status: 500, delivered: true });
  assert.match(check(backwards).failures.join('\n'), /evt_a: attempt 1 (was forwarded twice|forwarded after attempt 2)/);
});

test('an answer the worker gave up on is a late success, not a success', () => {
  const h = history({ log: [{ route: 'webhook', key: 'evt_b', attempt: 1, outcome: 'origin_timeout' }] });
  const { table, failures } = check(h);
  assert.equal(row(table, 'late origin successes (answered after the worker timed out)'), 1);
  assert.match(failures.join('\n'), /evt_b: acknowledged to Stripe but never succeeded/);
});

test('any 500 answer fails the run', () => {
  const h = history();
  h.deliveries.push({ eventId: 'evt_a', status: 500 });
  assert.match(check(h).failures.join('\n'), /1 answers were 500/);
});

test('connection errors and fence conflicts are counted, not failures', () => {
  const h = history({ log: [{ settle: 'fence_conflict' }, { settle: 'finalized' }], restarts: 1 });
  h.deliveries.push({ eventId: 'evt_a', error: 'ECONNREFUSED' });
  const { table, failures } = check(h);
  assert.deepEqual(failures, []);
  assert.equal(row(table, 'connection errors (runtime restarting)'), 1);
  assert.equal(row(table, 'fence conflicts refused'), 1);
  assert.equal(row(table, 'runtime restarts'), 1);
});
