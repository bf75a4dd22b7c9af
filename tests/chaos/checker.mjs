// Reads the whole history of a chaos run and decides whether it kept the promise: no event
// lost, none processed twice, no 500 of the worker's. Pure: no I/O.
//
// "Processed twice" is strict: every 2xx the origin answered is a run of the handler, whether
// or not the product received that answer. A second one for the same event is a double
// processing unless the contract allows it: a restart of the runtime (a crash) cut off the
// first run before its outcome could be settled (the restart began before the first was
// answered, or within SETTLE_GRACE_MS after) and the next attempt was claimed only once the
// first one's lease had run out; or the first answered after the wait horizon (sync mode: the
// forward time-out plus the late-answer wait; queue mode: the attempt's time-out) measured
// from its own claim, and the product did not learn that answer anyway. No other excuse: a
// restart after the first run was settled excuses nothing.
//
// Leases are judged from claim times, on the product's own clock: each origin record carries
// `claimedAt`, the `claimed_at` of the claim whose forward it is, as the object stored it. A
// takeover, and any attempt after one whose answer came after its horizon (or never) and that
// the product did not learn, must be claimed at or after the replaced claim's `claimedAt` plus
// the lease. No slack and no margin: an answer after the horizon that the product still learned
// (its timer ran late) is recognised from the product's own log line for that attempt (it
// carries the origin's status), not from a band of time.
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
 *   keys: { eventId: record key } | undefined,                          // what log lines carry
 *   indexedDead: [eventId] | null | undefined,     // queue mode: the failure index's dead letters
 *   finalAttempts: { eventId: attempts } | undefined,  // queue mode: attempts the record counts
 *   deliveries: [{ eventId, status | undefined, error | undefined,      // every send; `at` the
 *                  at | undefined, sentAt | undefined, body }],         // answer's time
 *   chains: [{ eventId, finished: bool }],                              // Stripe-like retry loops
 *   origin: [{ eventId, attempt, receivedAt, answeredAt | undefined, takeover: bool,
 *              claimedAt | undefined,                                   // the claim's time
 *              status (undefined: never answered) }],                   // ms on one clock
 *   restartsAt: [{ from, to }],                                         // ms on the same clock
 *   stalls: [{ at, probe, sendsWaiting, oldestSentAt }] | undefined,    // the dev server stuck
 *   log: [worker log line objects],
 *   leaseMs: number,
 *   horizonMs: number,                                                  // time-out + late wait
 *   startedAt: number | undefined,                                      // times are shown from it
 * }
 * Returns { table: [[label, value]], failures: [string], failing: [eventId] }: `failing`
 * names every event a failure is about.
 */
/** How long after the origin's answer its settle may still be under way when a crash comes. */
export const SETTLE_GRACE_MS = 2_000;

/** How long after a restart a send may still fail on a connection the restart cut. */
export const RESTART_ERROR_GRACE_MS = 2_000;

export function check(history) {
  const failures = [];
  const failing = new Set();
  const fail = (eventId, message) => {
    failures.push(eventId === undefined ? message : `${eventId}: ${message}`);
    if (eventId !== undefined) failing.add(eventId);
  };
  const restartsAt = history.restartsAt ?? [];
  const t0 = history.startedAt ?? 0;
  const rel = (at) => (at === undefined ? '?' : Math.round(at - t0));
  const keyOf = (id) => history.keys?.[id] ?? id;
  const byEvent = new Map(history.events.map((id) => [id, { origin: [], chains: [], acknowledged: false }]));
  for (const d of history.deliveries) {
    const e = byEvent.get(d.eventId);
    if (e && d.status >= 200 && d.status < 300) e.acknowledged = true;
  }
  for (const c of history.chains) byEvent.get(c.eventId)?.chains.push(c);
  for (const r of history.origin) byEvent.get(r.eventId)?.origin.push(r);
  // The origin statuses the product itself reports having received, by key and attempt: a
  // sync delivery's own line (answered within the forward time-out), a late answer's line, a
  // queued attempt's line. An attempt without one was not learned (or its line was lost).
  const learned = new Map();
  for (const l of history.log) {
    if (l.key === undefined || l.attempt === undefined || l.origin_status === undefined) continue;
    learned.set(`${l.key} ${l.attempt}`, l);
  }
  const learnedStatus = (id, r) => learned.get(`${keyOf(id)} ${r.attempt}`)?.origin_status;
  // When the product had recorded each key done, at the latest: the first log line saying so
  // (a `finalized` settle, or `delivered` in queue mode), by the time it arrived. A done record
  // never changes back, restarts included (its storage persists), but the line is written when
  // the write is made, not when it is durable: a restart that began within SETTLE_GRACE_MS of
  // it may have lost the write (seed 1541284132: `finalized` logged 1 ms after a restart
  // began, the record still processing after it). Such a line proves nothing.
  const doneBy = new Map();
  const nearRestart = (at) => restartsAt.some((x) => Math.abs(x.from - at) <= SETTLE_GRACE_MS);
  // Learned and settled for good: its line came well away from any restart.
  const learnedDurably = (id, r) => {
    const line = learned.get(`${keyOf(id)} ${r.attempt}`);
    return line !== undefined && (line.seenAt === undefined || !nearRestart(line.seenAt));
  };
  for (const l of history.log) {
    if (l.key === undefined || l.seenAt === undefined || !(l.settle === 'finalized' || l.outcome === 'delivered')) continue;
    if (nearRestart(l.seenAt)) continue;
    if (!doneBy.has(l.key) || l.seenAt < doneBy.get(l.key).seenAt) doneBy.set(l.key, l);
  }

  const statuses = new Map();
  let connectionErrors = 0;
  for (const d of history.deliveries) {
    if (d.status === undefined) connectionErrors += 1;
    else statuses.set(d.status, (statuses.get(d.status) ?? 0) + 1);
  }
  const restarts = () => (restartsAt.length === 0 ? 'none' : restartsAt.map((r) => `${rel(r.from)}-${rel(r.to)}`).join(', '));
  const duringRestart = (at) => restartsAt.some((x) => at >= x.from && at <= x.to + RESTART_ERROR_GRACE_MS);
  const strayErrors = history.deliveries.filter((d) => d.status === undefined && !(d.at !== undefined && duringRestart(d.at)));
  if (strayErrors.length > 0) {
    const seen = strayErrors.slice(0, 3).map((d) => `${d.eventId} at ${rel(d.at)} ms: ${d.error}`);
    fail(undefined, `${strayErrors.length} sends got no answer outside a restart (restarts from/to ${restarts()} ms): ${seen.join(' | ')}`);
    for (const d of strayErrors) failing.add(d.eventId);
  }
  // The dev server (wrangler) itself stopped answering: the sends above time out, but no
  // answer of the worker's is the reason. Named as the harness's failure.
  for (const stall of history.stalls ?? []) {
    fail(undefined, `the dev server stopped answering at ${rel(stall.at)} ms (${stall.probe}; ${stall.sendsWaiting} sends waiting, the oldest sent at ${rel(stall.oldestSentAt)} ms): a failure of the runtime's wrapper, not an answer of the worker; its log is in the artifacts${stall.cutShortAt ? `. The run was cut short at ${rel(stall.cutShortAt)} ms: whether its events were lost cannot be judged` : ''}`);
  }
  // A run cut short: what happened is still checked (doubles, leases, 500s), not how events ended.
  const judgeEnds = !history.cutShort;
  // The worker answers JSON; a body that is not is the dev server's own: its proxy lost the
  // worker. A request the restart cut gets that 500 ("Network connection lost"), as a sender
  // gets a 5xx from Cloudflare when a Worker's process dies under its request; the sender
  // retries, and what happens to its event is judged like any other. Such a 500 inside a
  // restart window is counted, not failed; a worker's own 500, or the dev server's outside a
  // restart, fails the run.
  const devServers = (body) => {
    try {
      return !JSON.parse(body).error;
    } catch {
      return true;
    }
  };
  const whose = (body) => (devServers(body) ? 'not the worker\'s JSON: the dev server\'s' : 'the worker\'s');
  const cutByRestart = (d) => devServers(d.body ?? '') && d.at !== undefined && duringRestart(d.at);
  const restartFiveHundreds = history.deliveries.filter((d) => d.status === 500 && cutByRestart(d)).length;
  const fiveHundreds = history.deliveries.filter((d) => d.status === 500 && !cutByRestart(d));
  if (fiveHundreds.length > 0) {
    const seen = fiveHundreds.slice(0, 3).map((d) => `${d.eventId} at ${rel(d.at)} ms (${whose(d.body ?? '')}): ${d.body ?? ''}`);
    fail(undefined, `${fiveHundreds.length} answers were 500 (restarts from/to ${restarts()} ms): ${seen.join(' | ')}`);
    for (const d of fiveHundreds) failing.add(d.eventId);
  }

  const ok = (r) => r.status >= 200 && r.status < 300;
  let claimTimesUnknown = 0;
  for (const r of history.origin) if (r.claimedAt === undefined) claimTimesUnknown += 1;
  // When an attempt was claimed. Without its claim time, its arrival at the origin stands in:
  // it is never earlier than the claim, so a lease measured from it ends later (a stricter
  // check of the attempt after it) and a duration measured from it is shorter (a smaller
  // excuse).
  const claimOf = (r) => r.claimedAt ?? r.receivedAt;
  // Its answer came after the wait horizon measured from its own claim, or never.
  const afterHorizon = (r) => r.answeredAt === undefined || r.answeredAt - claimOf(r) > history.horizonMs;
  // A restart that cut off this run: it began before the run's outcome could be settled and
  // ended after the run began.
  const cutOff = (run) => restartsAt.some((x) => x.to > run.receivedAt && x.from < (run.answeredAt ?? Infinity) + SETTLE_GRACE_MS);
  const leaseEndOf = (r) => claimOf(r) + history.leaseMs;
  const startOf = (r) => r.claimedAt ?? r.receivedAt;
  const successCounts = new Map();
  let excusedByRestart = 0;
  let excusedBySlowness = 0;
  let afterLostAnswer = 0;
  let lateButLearned = 0;
  for (const [id, e] of byEvent) {
    const successes = e.origin.filter(ok).sort((a, b) => a.receivedAt - b.receivedAt);
    // Each claim is one attempt number, used for one forward, in increasing order.
    const byAttempt = new Map();
    for (const r of [...e.origin].sort((a, b) => a.receivedAt - b.receivedAt)) {
      if (byAttempt.has(r.attempt)) fail(id, `attempt ${r.attempt} was forwarded twice`);
      for (const [attempt] of byAttempt) {
        if (attempt > r.attempt) fail(id, `attempt ${r.attempt} forwarded after attempt ${attempt}`);
      }
      byAttempt.set(r.attempt, r);
    }
    // An attempt whose answer came after its wait horizon (or never), and which the product did
    // not learn, leaves the event held until its lease ends: no later attempt may be claimed
    // inside that lease, neither a takeover (sync mode) nor a retry (queue mode), or a slow
    // handler runs alongside itself.
    const inOrder = [...byAttempt.values()];
    for (let i = 1; i < inOrder.length; i += 1) {
      const lost = inOrder[i - 1];
      const next = inOrder[i];
      if (!afterHorizon(lost)) continue;
      if (lost.answeredAt !== undefined && learnedStatus(id, lost) !== undefined) {
        // Its timer ran late and the answer was learned: the handler had finished.
        lateButLearned += 1;
        if (next.receivedAt < lost.answeredAt) {
          fail(id, `attempt ${next.attempt} reached the origin at ${rel(next.receivedAt)} ms, before attempt ${lost.attempt} answered (${rel(lost.answeredAt)} ms)`);
        }
        continue;
      }
      afterLostAnswer += 1;
      if (startOf(next) < leaseEndOf(lost)) {
        fail(id, `attempt ${next.attempt} was claimed at ${rel(startOf(next))} ms, inside the lease of attempt ${lost.attempt} (claimed at ${rel(claimOf(lost))} ms${lost.claimedAt === undefined ? ', its claim time unknown: its arrival at the origin' : ''}, lease until ${rel(leaseEndOf(lost))} ms), whose answer ${lost.answeredAt === undefined ? 'never came' : `came ${(lost.answeredAt - claimOf(lost)).toFixed(0)} ms after its claim, after the wait horizon,`} and was not learned`);
      }
    }
    // Nothing runs after the product recorded the event done.
    const done = doneBy.get(keyOf(id));
    if (done) {
      for (const r of e.origin.filter((x) => x.receivedAt > done.seenAt)) {
        fail(id, `attempt ${r.attempt} reached the origin at ${rel(r.receivedAt)} ms, after the product had recorded the event done (attempt ${done.attempt}'s ${done.settle ?? done.outcome}, logged by ${rel(done.seenAt)} ms)`);
      }
    }
    // A takeover is only legitimate once the claim it replaces had its lease run out.
    for (const r of e.origin.filter((x) => x.takeover)) {
      const previous = byAttempt.get(r.attempt - 1);
      if (previous && startOf(r) < leaseEndOf(previous)) {
        fail(id, `attempt ${r.attempt} took over at ${rel(startOf(r))} ms, inside the lease of attempt ${previous.attempt} (claimed at ${rel(claimOf(previous))} ms, lease until ${rel(leaseEndOf(previous))} ms)`);
      }
    }
    successCounts.set(successes.length, (successCounts.get(successes.length) ?? 0) + 1);
    if (judgeEnds && e.chains.some((c) => !c.finished)) fail(id, 'a delivery never got a 2xx within the retry budget');
    const final = history.finalStates?.[id];
    if (judgeEnds && history.mode === 'queue' && e.acknowledged) {
      if (final === 'dead') {
        // An attempt the product claimed whose forward a restart cut off before it reached the
        // origin is an attempt too (the product cannot know it never arrived): each attempt
        // number the origin never saw counts only when a restart began between the arrival of
        // the seen attempt before it and that of the seen attempt after it (if any).
        const arrived = new Map();
        for (const r of e.origin) arrived.set(r.attempt, Math.min(arrived.get(r.attempt) ?? Infinity, r.receivedAt));
        const seen = arrived.size;
        const claimed = history.finalAttempts?.[id] ?? seen;
        let made = seen;
        for (let n = 1; n <= claimed; n += 1) {
          if (arrived.has(n)) continue;
          const times = (keep) => [...arrived].filter(([a]) => keep(a)).map(([, at]) => at);
          const after = Math.max(0, ...times((a) => a < n));
          const before = Math.min(Infinity, ...times((a) => a > n));
          if (restartsAt.some((x) => x.from >= after && x.from <= before)) made += 1;
        }
        if (made < history.retryMaxAttempts) fail(id, `dead-lettered after ${made} attempts, before RETRY_MAX_ATTEMPTS (${seen} seen at the origin, ${claimed} claimed)`);
      } else if (final !== 'done') {
        fail(id, `acknowledged but ended ${final ?? 'unknown'}, neither delivered nor dead-lettered`);
      }
    }
    if (judgeEnds && e.acknowledged && successes.length === 0 && final !== 'dead') fail(id, 'acknowledged to Stripe but never succeeded at the origin');
    // The failure index (when the run read it) lists every dead letter as dead, and nothing
    // else as dead.
    if (history.indexedDead) {
      const indexed = history.indexedDead.includes(id);
      if (final === 'dead' && !indexed) fail(id, 'dead-lettered, but not in the failure index as dead');
      if (final !== 'dead' && indexed) fail(id, `in the failure index as dead, but it ended ${final ?? 'unknown'}`);
    }
    if (final === 'dead') {
      const learnable = successes.find((r) => (!afterHorizon(r) && !cutOff(r)) || learnedDurably(id, r));
      if (learnable) fail(id, `dead-lettered although attempt ${learnable.attempt} succeeded within the attempt's time-out, or its success was learned`);
    }
    for (let i = 1; i < successes.length; i += 1) {
      const first = successes[i - 1];
      const second = successes[i];
      // A restart that cut off the first run leaves the claim it held until its lease runs out:
      // only an attempt claimed after that (a takeover, or in queue mode the retry of an
      // attempt whose answer was lost) may run the handler again.
      const next = inOrder.find((r) => r.attempt > first.attempt);
      const restarted = cutOff(first) && restartsAt.some((x) => x.from < second.receivedAt);
      const knownToSucceed = learnedStatus(id, first);
      const twice = `succeeded at the origin twice (attempts ${first.attempt} and ${second.attempt})`;
      if (restarted && next && startOf(next) >= leaseEndOf(first)) {
        excusedByRestart += 1;
      } else if (afterHorizon(first) && knownToSucceed === undefined) {
        excusedBySlowness += 1;
      } else if (knownToSucceed !== undefined && knownToSucceed >= 200 && knownToSucceed < 300) {
        fail(id, `${twice}, although the product learned the first's ${knownToSucceed}`);
      } else if (restarted) {
        fail(id, `${twice}; a restart cut off the first, but attempt ${next.attempt} was claimed at ${rel(startOf(next))} ms, inside its lease (claimed at ${rel(claimOf(first))} ms, until ${rel(leaseEndOf(first))} ms)`);
      } else {
        fail(id, `${twice} with no restart cutting off the first, which was answered ${(first.answeredAt - claimOf(first)).toFixed(0)} ms after its claim, within the wait horizon (${history.horizonMs} ms)`);
      }
    }
  }

  const lateLearned = history.origin.filter((r) => ok(r) && r.answeredAt !== undefined
    && r.answeredAt - claimOf(r) > (history.forwardTimeoutMs ?? Infinity) && !afterHorizon(r)).length;
  const takeovers = history.origin.filter((r) => r.takeover).length;
  const fenceConflicts = history.log.filter((l) => l.settle === 'fence_conflict').length;
  const finals = Object.values(history.finalStates ?? {});
  const table = [
    ['mode', history.mode ?? 'sync'],
    ['events', history.events.length],
    ['deliveries sent', history.deliveries.length],
    ['connection errors while the runtime restarted', connectionErrors],
    ['500 answers of the dev server for requests a restart cut (its proxy lost the worker)', restartFiveHundreds],
    ...[...statuses.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => [`answers ${s}`, n]),
    ['origin attempts', history.origin.length],
    ['origin attempts whose claim time was not read (their arrival stands in)', claimTimesUnknown],
    ...(history.claimTimesDisagreeing ? [['claim times where storage and log lines disagree', history.claimTimesDisagreeing]] : []),
    ['origin failures answered (non-2xx)', history.origin.filter((r) => r.status !== undefined && !ok(r)).length],
    ['forwards cut off by a restart (never answered)', history.origin.filter((r) => r.status === undefined).length],
    ...[...successCounts.entries()].sort((a, b) => a[0] - b[0]).map(([n, events]) => [`events with ${n} origin success${n === 1 ? '' : 'es'}`, events]),
    ['origin successes after the forward time-out, within the wait horizon (learned late)', lateLearned],
    ['second successes allowed: a restart cut off the first', excusedByRestart],
    ['second successes allowed: the first slower than the wait horizon', excusedBySlowness],
    ['attempts after an answer slower than the wait horizon (none may start inside its lease)', afterLostAnswer],
    ['answers after the wait horizon that the product still learned', lateButLearned],
    ['late answers settled by the claim authority', history.log.filter((l) => l.outcome === 'late_answer').length],
    ...(history.mode === 'queue' ? [
      ['events delivered (done)', finals.filter((f) => f === 'done').length],
      ['events dead-lettered', finals.filter((f) => f === 'dead').length],
      ...(history.indexedDead ? [['dead letters in the failure index', history.indexedDead.length]] : [['the failure index', 'not read']]),
      ['retries scheduled', history.log.filter((l) => l.outcome === 'retry_scheduled').length],
    ] : []),
    ['takeovers', takeovers],
    ['fence conflicts refused', fenceConflicts],
    ['runtime restarts', restartsAt.length],
    ['failures', failures.length],
  ];
  return { table, failures, failing: [...failing] };
}

/** The table as aligned text. */
export function format(table) {
  const width = Math.max(...table.map(([label]) => label.length));
  return table.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}
