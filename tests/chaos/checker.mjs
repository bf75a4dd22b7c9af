// Reads the whole history of a chaos run and decides whether it kept the promise: no event
// lost, none processed twice, no 500 of the worker's. Pure: no I/O. It judges the documented
// contract exactly: no band of time, no grace constant, no log line left out.
//
// "Processed twice" is strict: every 2xx the origin's handler gave is a run of it, whether or
// not the product received that answer (behind a gateway's 502/504 or a reset connection the
// handler's own outcome is hidden from the product, not from the checker). A second one for the
// same event is a double unless the first one's outcome was unknown to the product and the
// attempt after it was claimed once the first one's lease had ended, carrying
// `X-Webhook-Dedup-Takeover: true`. An outcome is unknown when: the origin reset the connection
// after the handler ran; a gateway answered 502 or 504 for the handler; the answer came after
// the wait horizon (sync mode: the forward time-out plus the late-answer wait; queue mode: the
// attempt's time-out) measured from the attempt's own claim, or never, and the product did not
// learn it; or a restart of the runtime began after the attempt was claimed, before its lease
// ended and before the product had learned its answer.
//
// What the product learned, and when, is read from its own log lines: a line for the attempt
// that carries the origin's status. A line proves what it says only if it was seen before the
// runtime that printed it was stopped: a line the old runtime printed as a restart began may
// describe a write that the restart lost (seed 1541284132: `finalized` seen 1 ms after a
// restart began, the record still processing after it). Each line carries `runtime`, the start
// of the runtime that printed it (restart `ended` names the start it stopped), and `seenAt`,
// when it arrived. Nothing else about a line's time is assumed.
//
// Leases are judged from claim times, on the product's own clock: each origin record carries
// `claimedAt`, the `claimed_at` of the claim whose forward it is, as the object stored it. Every
// attempt after an unknown outcome must be claimed at or after the unknown attempt's
// `claimedAt` plus the lease, and carry the takeover header; every attempt after a definite
// failure the product learned (any other non-2xx, a 4xx included) must not (the claim was
// released, or in queue mode the attempt failed: nothing is taken over).
//
// A send that got no answer at all (a connection error, or the driver's own time-out), or the
// dev server's own 500, is only harmless when the send was in flight while the runtime
// restarted: one outside a restart fails the run.
//
// Queue mode (history.mode === 'queue'): every event is acknowledged when stored, so an
// acknowledged event must end delivered (state `done`, one success at the origin) or
// dead-lettered by the rules: after RETRY_MAX_ATTEMPTS attempts, or at once after a refusal (a
// 4xx other than 408, 409, 425 and 429, unless RETRY_CLIENT_ERRORS; a 410 Gone always), after
// which no attempt may run. The failure index must have been read, and must list exactly the dead letters.

import { checkGate } from './gate.mjs';

/**
 * history = {
 *   mode: 'sync' | 'queue',
 *   events: [eventId],
 *   keys: { eventId: record key } | undefined,                          // what log lines carry
 *   indexedDead: [eventId] | null | undefined,     // queue mode: the failure index's dead letters
 *   finalStates: { eventId: state } | undefined,   // queue mode: where each event ended
 *   finalAttempts: { eventId: attempts } | undefined,  // queue mode: attempts the record counts
 *   retryMaxAttempts: number, retryClientErrors: bool | undefined,      // queue mode's settings
 *   deliveries: [{ eventId, status | undefined, error | undefined,      // every send; `at` the
 *                  at | undefined, sentAt | undefined, body }],         // answer's time
 *   chains: [{ eventId, finished: bool }],                              // Stripe-like retry loops
 *   origin: [{ eventId, attempt, receivedAt, answeredAt | undefined, takeover: bool,
 *              claimedAt | undefined,                                   // the claim's time
 *              status,              // the handler's own answer (undefined: never answered)
 *              gateway | undefined, // 502 or 504: what a gateway answered instead
 *              reset | undefined }],// true: the connection was reset instead of answered
 *   restartsAt: [{ from, to, ended }],          // ms on the same clock; `ended`: the runtime
 *   stalls: [{ at, probe, sendsWaiting, oldestSentAt }] | undefined,    // the dev server stuck
 *   log: [worker log line objects, with seenAt and runtime],
 *   leaseMs: number,
 *   horizonMs: number,                                                  // time-out + late wait
 *   startedAt: number | undefined,                                      // times are shown from it
 *   gate: { maxRps, maxInFlight, breakerFailures, probeMs } | undefined,  // queue mode's gate keys
 *   outage: { from, to } | null | undefined,     // queue mode: when the origin answered only 503
 * }
 * Origin records of the outage carry `outage: true`; those it cut off, `cutByOutage: true`.
 * The gate's promises are judged in gate.mjs.
 * Returns { table: [[label, value]], failures: [string], failing: [eventId] }: `failing`
 * names every event a failure is about.
 */
/** The 4xx answers that say "later": a failed attempt, retried, even in queue mode. */
export const RETRIED_CLIENT_ERRORS = [408, 409, 425, 429];

/** True when `status` is a refusal: a 4xx other than those that say "later". */
export const isRefusal = (status) => status >= 400 && status < 500 && !RETRIED_CLIENT_ERRORS.includes(status);

/**
 * True when queue mode dead-letters an event at once after `status`: a refusal, unless
 * `retryClientErrors`; a 410 Gone whatever that setting.
 */
export const deadLettersAtOnce = (status, retryClientErrors) => status === 410 || (!retryClientErrors && isRefusal(status));

export function check(history) {
  const failures = [];
  const failing = new Set();
  const fail = (eventId, message) => {
    failures.push(eventId === undefined ? message : `${eventId}: ${message}`);
    if (eventId !== undefined) failing.add(eventId);
  };
  const queue = history.mode === 'queue';
  const restartsAt = [...(history.restartsAt ?? [])].sort((a, b) => a.from - b.from);
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

  // When the runtime that printed a line was stopped: the start of the restart that ended it
  // (restart `ended` names it; else the restarts in order end starts 0, 1, …). A line without
  // its runtime (a history from before lines carried it) is the runtime's that was running
  // when the line was seen, a line seen while a restart went on the stopped one's.
  const stoppedAt = (runtime) => {
    const x = restartsAt.find((r, i) => (r.ended ?? i) === runtime);
    return x ? x.from : Infinity;
  };
  const runtimeOf = (l) => l.runtime ?? restartsAt.filter((x) => x.to < l.seenAt).length;
  // A line proves what it says when it was seen before its runtime was stopped (a line without
  // a time, in a made-up history, proves it).
  const proves = (l) => l.seenAt === undefined || l.seenAt < stoppedAt(runtimeOf(l));
  // The origin statuses the product itself reports having received, by key and attempt, from
  // lines that prove it: a sync delivery's own line (answered within the forward time-out), a
  // late answer's line, a queued attempt's line. The earliest, and when it was seen.
  const learned = new Map();
  const linesOf = new Map(); // every line of a key and attempt
  for (const l of history.log) {
    if (l.key === undefined || l.attempt === undefined) continue;
    const at = `${l.key} ${l.attempt}`;
    if (!linesOf.has(at)) linesOf.set(at, []);
    linesOf.get(at).push(l);
    if (l.origin_status === undefined || !proves(l)) continue;
    const known = learned.get(at);
    if (!known || (l.seenAt ?? -Infinity) < (known.seenAt ?? -Infinity)) learned.set(at, l);
  }
  const learnedLine = (id, r) => learned.get(`${keyOf(id)} ${r.attempt}`);
  // The statuses of an attempt in lines that prove nothing: the product printed that it learned
  // them, but the restart that stopped its runtime may have lost what it wrote.
  const unprovenStatuses = (id, r) => (linesOf.get(`${keyOf(id)} ${r.attempt}`) ?? [])
    .filter((l) => l.origin_status !== undefined && !proves(l)).map((l) => l.origin_status);
  const learnedStatus = (id, r) => learnedLine(id, r)?.origin_status;
  // When the product had recorded each key done, at the latest: the first line that proves it
  // (a `finalized` settle, or `delivered` in queue mode), by the time it arrived. A done record
  // never changes back, restarts included (its storage persists).
  const doneBy = new Map();
  for (const l of history.log) {
    if (l.key === undefined || !(l.settle === 'finalized' || l.outcome === 'delivered') || !proves(l)) continue;
    const at = l.seenAt ?? -Infinity;
    if (!doneBy.has(l.key) || at < (doneBy.get(l.key).seenAt ?? -Infinity)) doneBy.set(l.key, l);
  }
  const statuses = new Map();
  let connectionErrors = 0;
  for (const d of history.deliveries) {
    if (d.status === undefined) connectionErrors += 1;
    else statuses.set(d.status, (statuses.get(d.status) ?? 0) + 1);
  }
  const restarts = () => (restartsAt.length === 0 ? 'none' : restartsAt.map((r) => `${rel(r.from)}-${rel(r.to)}`).join(', '));
  // A send the runtime's restart cut: it was in flight while a restart went on (sent before
  // the restart ended, answered or failed after it began). A send without its sending time (a
  // made-up history) is judged by its answer's time alone.
  const inFlightAcrossRestart = (d) => d.at !== undefined
    && restartsAt.some((x) => (d.sentAt ?? d.at) <= x.to && d.at >= x.from);
  const strayErrors = history.deliveries.filter((d) => d.status === undefined && !inFlightAcrossRestart(d));
  if (strayErrors.length > 0) {
    const seen = strayErrors.slice(0, 3).map((d) => `${d.eventId} sent at ${rel(d.sentAt)} ms, failed at ${rel(d.at)} ms: ${d.error}`);
    fail(undefined, `${strayErrors.length} sends got no answer and were not in flight during a restart (restarts from/to ${restarts()} ms): ${seen.join(' | ')}`);
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
  // retries, and what happens to its event is judged like any other. Such a 500 for a send in
  // flight during a restart is counted, not failed; a worker's own 500, or the dev server's
  // for a send no restart cut, fails the run.
  const devServers = (body) => {
    try {
      return !JSON.parse(body).error;
    } catch {
      return true;
    }
  };
  const whose = (body) => (devServers(body) ? 'not the worker\'s JSON: the dev server\'s' : 'the worker\'s');
  const cutByRestart = (d) => devServers(d.body ?? '') && inFlightAcrossRestart(d);
  const restartFiveHundreds = history.deliveries.filter((d) => d.status === 500 && cutByRestart(d)).length;
  const fiveHundreds = history.deliveries.filter((d) => d.status === 500 && !cutByRestart(d));
  if (fiveHundreds.length > 0) {
    const seen = fiveHundreds.slice(0, 3).map((d) => `${d.eventId} at ${rel(d.at)} ms (${whose(d.body ?? '')}): ${d.body ?? ''}`);
    fail(undefined, `${fiveHundreds.length} answers were 500 (restarts from/to ${restarts()} ms): ${seen.join(' | ')}`);
    for (const d of fiveHundreds) failing.add(d.eventId);
  }
  // A 503 is a store the sender should come back to (`store_unavailable`), or a sync delivery
  // the worker instance held because it knew the origin paused or failing (`origin_held`): a
  // held one sent nothing, so no origin attempt of its event arrived while it was asked. Any
  // other 503 fails the run.
  const fiveOhThrees = history.deliveries.filter((d) => d.status === 503);
  const held = fiveOhThrees.filter((d) => d.answer === 'origin_held');
  for (const d of fiveOhThrees) {
    if (d.answer !== 'origin_held' && d.answer !== 'store_unavailable') {
      fail(d.eventId, `answered 503 ${d.answer ?? '(no code)'} at ${rel(d.at)} ms, neither origin_held nor store_unavailable: ${d.body ?? ''}`);
    }
  }
  for (const d of held) {
    const reached = byEvent.get(d.eventId)?.origin.find((r) => r.receivedAt >= (d.sentAt ?? d.at) && r.receivedAt <= d.at);
    if (reached) {
      fail(d.eventId, `answered 503 origin_held at ${rel(d.at)} ms, yet an attempt of it reached the origin at ${rel(reached.receivedAt)} ms while it was asked: a held delivery sends nothing`);
    }
  }
  // Queue mode: the failure index must have been read, or its check cannot be made.
  if (queue && judgeEnds && !Array.isArray(history.indexedDead)) {
    fail(undefined, 'the failure index was not read (GET /admin/dead-letters gave no list): its dead letters cannot be checked');
  }

  // The handler succeeded (its own answer, whatever went on the wire).
  const ok = (r) => r.status >= 200 && r.status < 300;
  let claimTimesUnknown = 0;
  for (const r of history.origin) if (r.claimedAt === undefined) claimTimesUnknown += 1;
  // When an attempt was claimed. Without its claim time, its arrival at the origin stands in:
  // it is never earlier than the claim, so a lease measured from it ends later (a stricter
  // check of the attempt after it), a duration measured from it is shorter (a smaller
  // excuse), and a restart between the claim and the arrival is not seen (no excuse).
  const claimOf = (r) => r.claimedAt ?? r.receivedAt;
  const leaseEndOf = (r) => claimOf(r) + history.leaseMs;
  // Its answer came after the wait horizon measured from its own claim, or never.
  const afterHorizon = (r) => r.answeredAt === undefined || r.answeredAt - claimOf(r) > history.horizonMs;
  // The restart that cut this attempt off: it began while the attempt's claim was the event's
  // (after it was claimed, before its lease ended and before `next`, the next attempt seen, was
  // claimed), and before the product had learned its answer (by the time of the first line
  // that proves it; never, without one).
  const cutBy = (id, r, next) => {
    const line = learnedLine(id, r);
    const learnedAt = line ? (line.seenAt ?? -Infinity) : Infinity;
    const replacedAt = next ? claimOf(next) : Infinity;
    return restartsAt.find((x) => x.from >= claimOf(r) && x.from < leaseEndOf(r) && x.from < replacedAt && x.from < learnedAt);
  };
  // Why the product could not know the outcome of attempt `r` (followed by `next`, if any), or
  // null when it could: the reason in words, and its kind (for the table).
  const unknownOutcome = (id, r, next) => {
    if (r.reset) return { kind: 'reset', why: `the origin reset the connection after the handler ran (handler ${r.status})` };
    if (r.gateway) return { kind: 'gateway', why: `a gateway answered ${r.gateway} for the handler (handler ${r.status ?? 'never answered'})` };
    const cut = cutBy(id, r, next);
    if (cut) return { kind: 'restart', why: `a restart began at ${rel(cut.from)} ms, before the product had learned its answer${r.answeredAt === undefined ? ' (it never came)' : ` (given at ${rel(r.answeredAt)} ms)`}` };
    if (afterHorizon(r) && learnedLine(id, r) === undefined) {
      return {
        kind: 'horizon',
        why: r.answeredAt === undefined ? 'its answer never came'
          : `its answer came ${(r.answeredAt - claimOf(r)).toFixed(0)} ms after its claim, after the wait horizon, and was not learned`,
      };
    }
    return null;
  };
  // A definite failure: a non-2xx other than a gateway's 502/504 (the Cloudflare codes 520 and
  // 524 never come from this origin). One the product learned, from a line that proves it.
  const isDefiniteFailure = (status) => status !== undefined && !(status >= 200 && status < 300) && status !== 502 && status !== 504;
  const definiteFailure = (id, r) => {
    const status = learnedStatus(id, r);
    return isDefiniteFailure(status) ? status : undefined;
  };
  // Queue mode: the product learned a refusal, which dead-letters the event at once.
  const refusal = (id, r) => {
    const status = definiteFailure(id, r);
    return queue && deadLettersAtOnce(status, history.retryClientErrors) ? status : undefined;
  };
  // An attempt the product claimed that never reached the origin (a restart cut it off before
  // its forward arrived): unknown unless a line that proves it says the product released it or
  // never sent it.
  const missingKnown = (id, attempt) => (linesOf.get(`${keyOf(id)} ${attempt}`) ?? [])
    .some((l) => proves(l) && (l.settle === 'released' || /^request not sent/.test(l.detail ?? '')));
  const successCounts = new Map();
  const excused = { restart: 0, horizon: 0, reset: 0, gateway: 0 };
  const afterUnknown = { restart: 0, horizon: 0, reset: 0, gateway: 0, missing: 0 };
  let releasedBeforeRestart = 0;
  let lateButLearned = 0;
  let afterDefinite = 0;
  let refusals = 0;
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
    const inOrder = [...byAttempt.values()].sort((a, b) => a.attempt - b.attempt);
    const nextOf = (r) => inOrder.find((x) => x.attempt > r.attempt);
    for (let i = 0; i < inOrder.length; i += 1) {
      const prev = inOrder[i - 1]; // undefined before the first attempt seen
      const next = inOrder[i];
      // After an unknown outcome the event is held until the lease of the unknown attempt ends:
      // no later attempt may be claimed inside it, neither a takeover (sync mode) nor a retry
      // (queue mode), or a handler runs alongside itself; and the next attempt is a takeover,
      // marked `X-Webhook-Dedup-Takeover: true`.
      const unknown = prev && unknownOutcome(id, prev, next);
      if (unknown) {
        if (unknown.kind === 'restart' && !next.takeover && unprovenStatuses(id, prev).some(isDefiniteFailure)) {
          // A restart cut it off, but the stopped runtime had printed that it learned a
          // definite failure. If what it wrote was kept, the claim was released, and the next
          // attempt may start at once, not as a takeover: sound either way. (A takeover is
          // judged against the lease below.)
          releasedBeforeRestart += 1;
        } else {
          afterUnknown[unknown.kind] += 1;
          if (claimOf(next) < leaseEndOf(prev)) {
            fail(id, `attempt ${next.attempt} was claimed at ${rel(claimOf(next))} ms, inside the lease of attempt ${prev.attempt} (claimed at ${rel(claimOf(prev))} ms${prev.claimedAt === undefined ? ', its claim time unknown: its arrival at the origin' : ''}, lease until ${rel(leaseEndOf(prev))} ms), whose outcome was unknown: ${unknown.why}`);
          }
          if (!next.takeover) {
            fail(id, `attempt ${next.attempt} followed attempt ${prev.attempt}'s unknown outcome (${unknown.why}) without X-Webhook-Dedup-Takeover: true`);
          }
        }
      } else if (next.attempt > (prev?.attempt ?? 0) + 1 && !missingKnown(id, next.attempt - 1)) {
        // The attempt before it never reached the origin, and the product never said why.
        afterUnknown.missing += 1;
        if (!next.takeover) {
          fail(id, `attempt ${next.attempt} followed attempt ${next.attempt - 1}, which never reached the origin (its outcome unknown), without X-Webhook-Dedup-Takeover: true`);
        }
      } else if (prev && next.attempt === prev.attempt + 1 && definiteFailure(id, prev) !== undefined) {
        // A definite failure the product learned released the claim: nothing to take over.
        afterDefinite += 1;
        if (next.takeover) {
          fail(id, `attempt ${next.attempt} was marked a takeover, but attempt ${prev.attempt}'s ${definiteFailure(id, prev)} was a definite failure the product learned (the claim was released, not held)`);
        }
      }
      // An answer after the horizon that the product still learned (its timer ran late): the
      // handler had finished, and the next attempt may start once it answered, not before.
      if (prev && !unknown && afterHorizon(prev) && prev.answeredAt !== undefined) {
        lateButLearned += 1;
        if (next.receivedAt < prev.answeredAt) {
          fail(id, `attempt ${next.attempt} reached the origin at ${rel(next.receivedAt)} ms, before attempt ${prev.attempt} answered (${rel(prev.answeredAt)} ms)`);
        }
      }
    }
    // Nothing runs after the product recorded the event done.
    const done = doneBy.get(keyOf(id));
    if (done) {
      for (const r of e.origin.filter((x) => done.seenAt === undefined ? x.attempt > done.attempt : x.receivedAt > done.seenAt)) {
        fail(id, `attempt ${r.attempt} reached the origin at ${rel(r.receivedAt)} ms, after the product had recorded the event done (attempt ${done.attempt}'s ${done.settle ?? done.outcome}, logged by ${rel(done.seenAt)} ms)`);
      }
    }
    // A takeover is only legitimate once the claim it replaces had its lease run out.
    for (const r of e.origin.filter((x) => x.takeover)) {
      const previous = byAttempt.get(r.attempt - 1);
      if (previous && claimOf(r) < leaseEndOf(previous)) {
        fail(id, `attempt ${r.attempt} took over at ${rel(claimOf(r))} ms, inside the lease of attempt ${previous.attempt} (claimed at ${rel(claimOf(previous))} ms, lease until ${rel(leaseEndOf(previous))} ms)`);
      }
    }
    successCounts.set(successes.length, (successCounts.get(successes.length) ?? 0) + 1);
    if (judgeEnds && e.chains.some((c) => !c.finished)) fail(id, 'a delivery never got a 2xx within the retry budget');
    const final = history.finalStates?.[id];
    // Queue mode: a refusal dead-letters the event at once; nothing runs after it.
    const refused = inOrder.find((r) => refusal(id, r) !== undefined);
    if (refused) {
      refusals += 1;
      for (const r of inOrder.filter((x) => x.attempt > refused.attempt)) {
        fail(id, `attempt ${r.attempt} ran after attempt ${refused.attempt}'s ${refusal(id, refused)}, a refusal that dead-letters the event at once`);
      }
      if (judgeEnds && final !== 'dead') fail(id, `the origin refused attempt ${refused.attempt} (${refusal(id, refused)}), which dead-letters the event at once, but it ended ${final ?? 'unknown'}`);
    }
    // A refusal the stopped runtime printed as a restart began, on the last attempt: if the
    // event ended dead with nothing after it, what it wrote was kept.
    const lastSeen = inOrder.at(-1);
    const refusedAtEnd = refused || (queue && lastSeen !== undefined
      && unprovenStatuses(id, lastSeen).some((status) => deadLettersAtOnce(status, history.retryClientErrors))
      && (history.finalAttempts?.[id] ?? lastSeen.attempt) === lastSeen.attempt);
    if (judgeEnds && queue && e.acknowledged) {
      if (final === 'dead' && !refusedAtEnd) {
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
        if (made < history.retryMaxAttempts) {
          const last = inOrder.at(-1);
          const lastStatus = last && learnedStatus(id, last);
          fail(id, `dead-lettered after ${made} attempts, before RETRY_MAX_ATTEMPTS (${seen} seen at the origin, ${claimed} claimed${lastStatus !== undefined ? `; the last answered ${lastStatus}, ${isRefusal(lastStatus) ? 'a refusal retried under RETRY_CLIENT_ERRORS' : 'which is retried'}` : ''})`);
        }
      } else if (final !== 'done' && final !== 'dead') {
        fail(id, `acknowledged but ended ${final ?? 'unknown'}, neither delivered nor dead-lettered`);
      }
    }
    if (judgeEnds && e.acknowledged && successes.length === 0 && final !== 'dead') fail(id, 'acknowledged to Stripe but never succeeded at the origin');
    // The failure index (read at the end, in queue mode) lists every dead letter as dead, and
    // nothing else as dead.
    if (Array.isArray(history.indexedDead)) {
      const indexed = history.indexedDead.includes(id);
      if (final === 'dead' && !indexed) fail(id, 'dead-lettered, but not in the failure index as dead');
      if (final !== 'dead' && indexed) fail(id, `in the failure index as dead, but it ended ${final ?? 'unknown'}`);
    }
    if (final === 'dead') {
      // A success the product could know of: its outcome was not unknown, or the product
      // learned its 2xx.
      const learnable = successes.find((r) => !unknownOutcome(id, r, nextOf(r))
        || (learnedStatus(id, r) >= 200 && learnedStatus(id, r) < 300));
      if (learnable) {
        const said = (linesOf.get(`${keyOf(id)} ${learnable.attempt}`) ?? []).find((l) => l.origin_ms !== undefined);
        fail(id, `dead-lettered although attempt ${learnable.attempt} succeeded and the product could know it (answered within the attempt's time-out, or its success was learned)${said ? `; its line: ${said.outcome}, ${said.detail ?? 'no detail'}, origin_ms ${said.origin_ms}` : ''}`);
      }
    }
    for (let i = 1; i < successes.length; i += 1) {
      const first = successes[i - 1];
      const second = successes[i];
      const next = nextOf(first);
      const knownToSucceed = learnedStatus(id, first);
      const unknown = unknownOutcome(id, first, next);
      const twice = `succeeded at the origin twice (attempts ${first.attempt} and ${second.attempt})`;
      if (knownToSucceed !== undefined && knownToSucceed >= 200 && knownToSucceed < 300) {
        fail(id, `${twice}, although the product learned the first's ${knownToSucceed}${learnedLine(id, first).seenAt === undefined ? '' : ` (logged by ${rel(learnedLine(id, first).seenAt)} ms)`}`);
      } else if (unknown && next && claimOf(next) >= leaseEndOf(first) && next.takeover) {
        // The one documented excuse: an unknown outcome, then a takeover after its lease.
        excused[unknown.kind] += 1;
      } else if (unknown) {
        fail(id, `${twice}; the first's outcome was unknown (${unknown.why}), but attempt ${next.attempt} was claimed at ${rel(claimOf(next))} ms${claimOf(next) < leaseEndOf(first) ? `, inside its lease (claimed at ${rel(claimOf(first))} ms, until ${rel(leaseEndOf(first))} ms)` : ''}${next.takeover ? '' : ', without X-Webhook-Dedup-Takeover: true'}`);
      } else {
        // What the product printed about the first instead (a time-out, when its runtime read
        // the answer too late), for the report.
        const said = (linesOf.get(`${keyOf(id)} ${first.attempt}`) ?? []).find((l) => l.origin_ms !== undefined);
        fail(id, `${twice}, the first's outcome known: answered ${first.gateway ?? first.status} ${(first.answeredAt - claimOf(first)).toFixed(0)} ms after its claim, within the wait horizon (${history.horizonMs} ms), no restart cutting it off, and the product did not learn it${said ? ` (its line: ${said.outcome}, ${said.detail ?? 'no detail'}, origin_ms ${said.origin_ms})` : ''}`);
      }
    }
  }

  // The origin gate's promises (queue mode): its caps, and its breaker during the outage.
  const gateRows = checkGate(history, (message, ids) => {
    fail(undefined, message);
    for (const id of ids) failing.add(id);
  });

  const lateLearned = history.origin.filter((r) => ok(r) && r.answeredAt !== undefined
    && r.answeredAt - claimOf(r) > (history.forwardTimeoutMs ?? Infinity) && !afterHorizon(r)).length;
  const takeovers = history.origin.filter((r) => r.takeover).length;
  const fenceConflicts = history.log.filter((l) => l.settle === 'fence_conflict').length;
  const finals = Object.values(history.finalStates ?? {});
  const answered = history.origin.filter((r) => r.status !== undefined && !r.gateway && !r.reset);
  const count = (rows, keep) => rows.filter(keep).length;
  const gateways = history.origin.filter((r) => r.gateway);
  const resets = history.origin.filter((r) => r.reset);
  const sum = (o) => Object.values(o).reduce((x, y) => x + y, 0);
  const lags = history.origin.filter((r) => r.claimedAt !== undefined).map((r) => Math.round(r.receivedAt - r.claimedAt)).sort((a, b) => a - b);
  const table = [
    ['mode', history.mode ?? 'sync'],
    ['events', history.events.length],
    ['deliveries sent', history.deliveries.length],
    ['connection errors while the runtime restarted', connectionErrors],
    ['500 answers of the dev server for requests a restart cut (its proxy lost the worker)', restartFiveHundreds],
    ...[...statuses.entries()].sort((a, b) => a[0] - b[0]).map(([s, n]) => [`answers ${s}`, n]),
    ...(held.length > 0 ? [['answers 503 origin_held (an instance knew the origin failing: nothing sent)', held.length]] : []),
    ['origin attempts', history.origin.length],
    ['origin attempts whose claim time was not read (their arrival stands in)', claimTimesUnknown],
    // How late forwards left a busy runtime: a starved one also reads answers late.
    ['time from claim to arrival at the origin, ms (median, 99th percentile, longest)', lags.length === 0 ? 'none' : `${lags[Math.floor((lags.length - 1) / 2)]}, ${lags[Math.floor((lags.length - 1) * 0.99)]}, ${lags.at(-1)}`],
    ...(history.claimTimesDisagreeing ? [['claim times where storage and log lines disagree', history.claimTimesDisagreeing]] : []),
    ['origin answers 500', count(answered, (r) => r.status === 500)],
    ...(history.outage ? [['origin answers 503 (the outage)', count(answered, (r) => r.outage)]] : []),
    ['origin answers 4xx that refuse (400, 404, 410, 422)', count(answered, (r) => isRefusal(r.status))],
    ['origin answers 4xx that say "later" (408, 409, 425, 429)', count(answered, (r) => RETRIED_CLIENT_ERRORS.includes(r.status))],
    ['origin answers 502 or 504 of a gateway (unknown outcomes; the handler succeeded behind it)', `${gateways.length} (${count(gateways, ok)})`],
    ['origin connections reset after the handler ran (unknown outcomes; the handler succeeded)', `${resets.length} (${count(resets, ok)})`],
    ['forwards cut off by a restart (never answered)', history.origin.filter((r) => r.status === undefined).length],
    ...[...successCounts.entries()].sort((a, b) => a[0] - b[0]).map(([n, events]) => [`events with ${n} origin success${n === 1 ? '' : 'es'}`, events]),
    ['origin successes after the forward time-out, within the wait horizon (learned late)', lateLearned],
    ['second successes allowed: a restart cut off the first before the product learned its answer', excused.restart],
    ['second successes allowed: the first slower than the wait horizon', excused.horizon],
    ['second successes allowed: the first\'s connection reset after the handler ran', excused.reset],
    ['second successes allowed: a gateway answered 502 or 504 for the first', excused.gateway],
    ['attempts after an unknown outcome (each a takeover, claimed once its lease ended)', `${sum(afterUnknown)} (restart ${afterUnknown.restart}, after the horizon ${afterUnknown.horizon}, reset ${afterUnknown.reset}, gateway ${afterUnknown.gateway}, never reached the origin ${afterUnknown.missing})`],
    ['attempts after a definite failure the product learned (none a takeover)', afterDefinite],
    ['attempts at once after a definite failure the stopped runtime printed as a restart began (its release kept)', releasedBeforeRestart],
    ['answers after the wait horizon that the product still learned', lateButLearned],
    ['log lines seen after their runtime was stopped (they prove nothing)', history.log.filter((l) => !proves(l)).length],
    ['late answers settled by the claim authority', history.log.filter((l) => l.outcome === 'late_answer').length],
    ...(queue ? [
      ['events delivered (done)', finals.filter((f) => f === 'done').length],
      ['events dead-lettered', finals.filter((f) => f === 'dead').length],
      ['events dead-lettered at once after a refusal', refusals],
      ['dead letters in the failure index', Array.isArray(history.indexedDead) ? history.indexedDead.length : 'not read'],
      ['retries scheduled', history.log.filter((l) => l.outcome === 'retry_scheduled').length],
    ] : []),
    ...gateRows,
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
