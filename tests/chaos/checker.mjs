// Reads the whole history of a chaos run and decides whether it kept the promise: no event
// lost, none processed twice without a takeover between, no 500. Pure: no I/O.

/**
 * history = {
 *   events: [eventId],
 *   deliveries: [{ eventId, status | undefined, error | undefined }],   // every send
 *   chains: [{ eventId, finished: bool }],                              // Stripe-like retry loops
 *   origin: [{ eventId, receivedAt, takeover: bool, status (undefined: never answered), delivered: bool }],
 *   log: [worker log line objects],
 *   restarts: number,
 *   leaseMs: number,
 * }
 * Returns { table: [[label, value]], failures: [string] }.
 */
export function check(history) {
  const failures = [];
  const byEvent = new Map(history.events.map((id) => [id, { origin: [], chains: [], acknowledged: false }]));
  for (const d of history.deliveries) {
    const e = byEvent.get(d.eventId);
    if (e && d.status >= 200 && d.status < 300) e.acknowledged = true;
  }
  for (const c of history.chains) byEvent.get(c.eventId)?.chains.push(c);
  for (const r of history.origin) byEvent.get(r.eventId)?.origin.push(r);
  // What the worker itself saw of each forward (event id + attempt → outcome), to tell an
  // answer the worker received from one written after it had given up.
  const seenByWorker = new Map();
  for (const l of history.log) {
    if (l.route === 'webhook' && l.attempt !== undefined) seenByWorker.set(`${l.key}#${l.attempt}`, l.outcome);
  }
  const gaveUp = (r) => ['origin_timeout', 'origin_unreachable'].includes(seenByWorker.get(`${r.eventId}#${r.attempt}`));

  const statuses = new Map();
  let connectionErrors = 0;
  for (const d of history.deliveries) {
    if (d.status === undefined) connectionErrors += 1;
    else statuses.set(d.status, (statuses.get(d.status) ?? 0) + 1);
  }
  const fiveHundreds = statuses.get(500) ?? 0;
  if (fiveHundreds > 0) failures.push(`${fiveHundreds} answers were 500`);

  const successCounts = new Map();
  let lateSuccesses = 0;
  for (const [id, e] of byEvent) {
    const ok = (r) => r.status >= 200 && r.status < 300;
    const successes = e.origin
      .filter((r) => ok(r) && r.delivered && !gaveUp(r))
      .sort((a, b) => a.receivedAt - b.receivedAt);
    lateSuccesses += e.origin.filter((r) => ok(r) && (!r.delivered || gaveUp(r))).length;
    // Each claim is one attempt number, used for one forward, in increasing order.
    const byAttempt = new Map();
    for (const r of [...e.origin].sort((a, b) => a.receivedAt - b.receivedAt)) {
      if (byAttempt.has(r.attempt)) failures.push(`${id}: attempt ${r.attempt} was forwarded twice`);
      for (const [attempt] of byAttempt) {
        if (attempt > r.attempt) failures.push(`${id}: attempt ${r.attempt} forwarded after attempt ${attempt}`);
      }
      byAttempt.set(r.attempt, r);
    }
    // A takeover is only legitimate once the claim it replaces had its lease run out.
    for (const r of e.origin.filter((x) => x.takeover)) {
      const previous = byAttempt.get(r.attempt - 1);
      if (previous && r.receivedAt - previous.receivedAt < history.leaseMs - 1_000) {
        failures.push(`${id}: attempt ${r.attempt} took over ${(r.receivedAt - previous.receivedAt).toFixed(0)} ms after attempt ${previous.attempt}, inside its lease`);
      }
    }
    successCounts.set(successes.length, (successCounts.get(successes.length) ?? 0) + 1);
    if (e.chains.some((c) => !c.finished)) failures.push(`${id}: a delivery never got a 2xx within the retry budget`);
    if (e.acknowledged && successes.length === 0) failures.push(`${id}: acknowledged to Stripe but never succeeded at the origin`);
    for (let i = 1; i < successes.length; i += 1) {
      const from = successes[i - 1].receivedAt;
      const to = successes[i].receivedAt;
      const takeover = e.origin.some((r) => r.takeover && r.receivedAt > from && r.receivedAt <= to);
      if (!takeover) failures.push(`${id}: succeeded at the origin twice without a takeover between`);
    }
  }

  const takeovers = history.origin.filter((r) => r.takeover).length;
  const fenceConflicts = history.log.filter((l) => l.settle === 'fence_conflict').length;
  const table = [
    ['events', history.events.length],
    ['deliveries sent', history.deliveries.length],
    ['connection errors (runtime restarting)', connectionErrors],
    ...[...statuses.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => [`answers ${s}`, n]),
    ['origin attempts', history.origin.length],
    ['origin failures answered (non-2xx)', history.origin.filter((r) => r.status !== undefined && (r.status < 200 || r.status >= 300)).length],
    ['forwards cut off by a restart (never answered)', history.origin.filter((r) => r.status === undefined).length],
    ...[...successCounts.entries()].sort((a, b) => a[0] - b[0]).map(([n, events]) => [`events with ${n} origin success${n === 1 ? '' : 'es'}`, events]),
    ['late origin successes (answered after the worker timed out)', lateSuccesses],
    ['takeovers', takeovers],
    ['fence conflicts refused', fenceConflicts],
    ['runtime restarts', history.restarts],
    ['failures', failures.length],
  ];
  return { table, failures };
}

/** The table as aligned text. */
export function format(table) {
  const width = Math.max(...table.map(([label]) => label.length));
  return table.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}
