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
      { eventId: 'evt_a', receivedAt: 1, takeover: false, status: 500, delivered: true },
      { eventId: 'evt_a', receivedAt: 2, takeover: false, status: 200, delivered: true },
      { eventId: 'evt_b', receivedAt: 3, takeover: false, status: 200, delivered: true },
    ],
    log: [],
    restarts: 0,
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

test('two origin successes without a takeover between fail; with one they pass', () => {
  const h = history();
  h.origin.push({ eventId: 'evt_b', receivedAt: 9, takeover: false, status: 200, delivered: true });
  assert.match(check(h).failures.join('\n'), /evt_b: succeeded at the origin twice without a takeover/);
  h.origin[3].takeover = true;
  assert.deepEqual(check(h).failures, []);
  // A takeover before the first success does not excuse a later second one.
  const early = history();
  early.origin.unshift({ eventId: 'evt_b', receivedAt: 0, takeover: true, status: 500, delivered: true });
  early.origin.push({ eventId: 'evt_b', receivedAt: 9, takeover: false, status: 200, delivered: true });
  assert.equal(check(early).failures.length, 1);
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
