// Reads the whole history of a chaos run and decides whether it kept the promise: no event
// lost, none processed twice, no 500. Pure: no I/O.
//
// "Processed twice" is strict: every 2xx the origin answered is a run of the handler, whether
// or not the product received that answer. A second one for the same event is a double
// processing unless the contract allows it: a restart of the runtime (a crash) cut off the
// first run before its outcome could be settled (the restart began before the first was
// answered, or within SETTLE_GRACE_MS after), or the first took longer than the wait horizon
// (sync mode: the forward time-out plus the late-answer wait; queue mode: the attempt's
// time-out), after which the product can no longer learn its answer. No other excuse: a
// restart after the first run was settled excuses nothing.
//
// A send that got no answer at all (a connection error, or the driver's own time-out) is only
// harmless while the runtime restarts: one seen outside a restart window fails the run.
//
// Queue mode (history.mode === 'queue'): every event is acknowledged when stored, so an
// acknowledged event must end delivered (state `done`, one success at the origin) or
// dead-lettered by the rules (state `dead`, after RETRY_MAX_ATTEMPTS attempts).

/**
 * history = {
 *   events: [eventId],
 *   deliveries: [{ eventId, status | undefined, error | undefined,      // every send; `at`
 *                  at | undefined }],                                   // for 5xx and errors
 *   chains: [{ eventId, finished: bool }],                              // Stripe-like retry loops
 *   origin: [{ eventId, attempt, receivedAt, answeredAt | undefined, takeover: bool,
 *              status (undefined: never answered) }],                   // ms on one clock
 *   restartsAt: [{ from, to }],                                         // ms on the same clock
 *   log: [worker log line objects],
 *   leaseMs: number,
 *   horizonMs: number,                                                  // time-out + late wait
 * }
 * Returns { table: [[label, value]], failures: [string] }.
 */
/** How long after the origin's answer its settle may still be under way when a crash comes. */
export const SETTLE_GRACE_MS = 2_000;

/** How far past the wait horizon an answer must come to be surely unlearned (timers run late). */
export const LATE_TIMER_MARGIN_MS = 250;

/** How long after a restart a send may still fail on a connection the restart cut. */
export const RESTART_ERROR_GRACE_MS = 2_000;

export function check(history) {
  const failures = [];
  const restartsAt = history.restartsAt ?? [];
  const byEvent = new Map(history.events.map((id) => [id, { origin: [], chains: [], acknowledged: false }]));
  for (const d of history.deliveries) {
    const e = byEvent.get(d.eventId);
    if (e && d.status >= 200 && d.status < 300) e.acknowledged = true;
  }
  for (const c of history.chains) byEvent.get(c.eventId)?.chains.push(c);
  for (const r of history.origin) byEvent.get(r.eventId)?.origin.push(r);

  const statuses = new Map();
  let connectionErrors = 0;
  for (const d of history.deliveries) {
    if (d.status === undefined) connectionErrors += 1;
    else statuses.set(d.status, (statuses.get(d.status) ?? 0) + 1);
  }
  const duringRestart = (at) => restartsAt.some((x) => at >= x.from && at <= x.to + RESTART_ERROR_GRACE_MS);
  const strayErrors = history.deliveries.filter((d) => d.status === undefined && !(d.at !== undefined && duringRestart(d.at)));
  if (strayErrors.length > 0) {
    const seen = strayErrors.slice(0, 3).map((d) => `${d.eventId} at ${d.at ?? '?'} ms: ${d.error}`);
    failures.push(`${strayErrors.length} sends got no answer outside a restart (restarts from/to ${restartsAt.map((r) => `${Math.round(r.from)}-${Math.round(r.to)}`).join(', ')} ms): ${seen.join(' | ')}`);
  }
  const fiveHundreds = statuses.get(500) ?? 0;
  if (fiveHundreds > 0) {
    const seen = history.deliveries.filter((d) => d.status === 500).slice(0, 3)
      .map((d) => `${d.eventId} at ${d.at ?? '?'} ms: ${d.body ?? ''}`);
    failures.push(`${fiveHundreds} answers were 500 (restarts from/to ${(history.restartsAt ?? []).map((r) => `${Math.round(r.from)}-${Math.round(r.to)}`).join(', ')} ms): ${seen.join(' | ')}`);
  }

  const ok = (r) => r.status >= 200 && r.status < 300;
  const tookMs = (r) => (r.answeredAt ?? Infinity) - r.receivedAt;
  // A restart that cut off this run: it began before the run's outcome could be settled and
  // ended after the run began.
  const cutOff = (run) => restartsAt.some((x) => x.to > run.receivedAt && x.from < (run.answeredAt ?? Infinity) + SETTLE_GRACE_MS);
  const successCounts = new Map();
  let excusedByRestart = 0;
  let excusedBySlowness = 0;
  let afterLostAnswer = 0;
  for (const [id, e] of byEvent) {
    const successes = e.origin.filter(ok).sort((a, b) => a.receivedAt - b.receivedAt);
    // Each claim is one attempt number, used for one forward, in increasing order.
    const byAttempt = new Map();
    for (const r of [...e.origin].sort((a, b) => a.receivedAt - b.receivedAt)) {
      if (byAttempt.has(r.attempt)) failures.push(`${id}: attempt ${r.attempt} was forwarded twice`);
      for (const [attempt] of byAttempt) {
        if (attempt > r.attempt) failures.push(`${id}: attempt ${r.attempt} forwarded after attempt ${attempt}`);
      }
      byAttempt.set(r.attempt, r);
    }
    // An attempt whose answer came too late to be learned (after the wait horizon) leaves the
    // event held until its lease ends: no later attempt may start inside that lease, neither
    // a takeover (sync mode) nor a retry (queue mode), or a slow handler runs alongside itself.
    const inOrder = [...byAttempt.values()];
    for (let i = 1; i < inOrder.length; i += 1) {
      const lost = inOrder[i - 1];
      const next = inOrder[i];
      // Never answered (cut off by a restart) counts as slower than any horizon.
      if (tookMs(lost) <= history.horizonMs + LATE_TIMER_MARGIN_MS) continue;
      afterLostAnswer += 1;
      if (next.receivedAt - lost.receivedAt < history.leaseMs - 1_000) {
        failures.push(`${id}: attempt ${next.attempt} started ${(next.receivedAt - lost.receivedAt).toFixed(0)} ms after attempt ${lost.attempt}, whose answer came after the wait horizon, inside its lease`);
      }
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
    const final = history.finalStates?.[id];
    if (history.mode === 'queue' && e.acknowledged) {
      if (final === 'dead') {
        const made = new Set(e.origin.map((r) => r.attempt)).size;
        if (made < history.retryMaxAttempts) failures.push(`${id}: dead-lettered after ${made} attempts, before RETRY_MAX_ATTEMPTS`);
      } else if (final !== 'done') {
        failures.push(`${id}: acknowledged but ended ${final ?? 'unknown'}, neither delivered nor dead-lettered`);
      }
    }
    if (e.acknowledged && successes.length === 0 && final !== 'dead') failures.push(`${id}: acknowledged to Stripe but never succeeded at the origin`);
    if (final === 'dead') {
      const learnable = successes.find((r) => tookMs(r) <= history.horizonMs && !cutOff(r));
      if (learnable) failures.push(`${id}: dead-lettered although attempt ${learnable.attempt} succeeded within the attempt's time-out`);
    }
    for (let i = 1; i < successes.length; i += 1) {
      const first = successes[i - 1];
      const second = successes[i];
      // A restart that cut off the first run leaves the claim it held until its lease runs out:
      // only an attempt begun after that (a takeover, or in queue mode the retry of an attempt
      // whose answer was lost) may run the handler again.
      const next = inOrder.find((r) => r.attempt > first.attempt);
      const sinceFirst = next ? next.receivedAt - first.receivedAt : Infinity;
      const restarted = cutOff(first) && restartsAt.some((x) => x.from < second.receivedAt);
      if (restarted && sinceFirst >= history.leaseMs - 1_000) {
        excusedByRestart += 1;
      } else if (tookMs(first) > history.horizonMs) {
        excusedBySlowness += 1;
      } else if (restarted) {
        failures.push(`${id}: succeeded at the origin twice (attempts ${first.attempt} and ${second.attempt}); a restart cut off the first, but attempt ${next.attempt} began ${sinceFirst.toFixed(0)} ms after it, inside its lease`);
      } else {
        failures.push(`${id}: succeeded at the origin twice (attempts ${first.attempt} and ${second.attempt}) with no restart cutting off the first, which was answered within the wait horizon`);
      }
    }
  }

  const lateLearned = history.origin.filter((r) => ok(r) && tookMs(r) > (history.forwardTimeoutMs ?? Infinity)
    && tookMs(r) <= history.horizonMs).length;
  const takeovers = history.origin.filter((r) => r.takeover).length;
  const fenceConflicts = history.log.filter((l) => l.settle === 'fence_conflict').length;
  const finals = Object.values(history.finalStates ?? {});
  const table = [
    ['mode', history.mode ?? 'sync'],
    ['events', history.events.length],
    ['deliveries sent', history.deliveries.length],
    ['connection errors while the runtime restarted', connectionErrors],
    ...[...statuses.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => [`answers ${s}`, n]),
    ['origin attempts', history.origin.length],
    ['origin failures answered (non-2xx)', history.origin.filter((r) => r.status !== undefined && !ok(r)).length],
    ['forwards cut off by a restart (never answered)', history.origin.filter((r) => r.status === undefined).length],
    ...[...successCounts.entries()].sort((a, b) => a[0] - b[0]).map(([n, events]) => [`events with ${n} origin success${n === 1 ? '' : 'es'}`, events]),
    ['origin successes after the forward time-out, within the wait horizon (learned late)', lateLearned],
    ['second successes allowed: a restart cut off the first', excusedByRestart],
    ['second successes allowed: the first slower than the wait horizon', excusedBySlowness],
    ['attempts after an answer slower than the wait horizon (none may start inside its lease)', afterLostAnswer],
    ['late answers settled by the claim authority', history.log.filter((l) => l.outcome === 'late_answer').length],
    ...(history.mode === 'queue' ? [
      ['events delivered (done)', finals.filter((f) => f === 'done').length],
      ['events dead-lettered', finals.filter((f) => f === 'dead').length],
      ['retries scheduled', history.log.filter((l) => l.outcome === 'retry_scheduled').length],
    ] : []),
    ['takeovers', takeovers],
    ['fence conflicts refused', fenceConflicts],
    ['runtime restarts', restartsAt.length],
    ['failures', failures.length],
  ];
  return { table, failures };
}

/** The table as aligned text. */
export function format(table) {
  const width = Math.max(...table.map(([label]) => label.length));
  return table.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}
