// The origin gate's promises, judged at the origin (queue mode: `history.gate` holds its keys).
// Pure: no I/O. Every time is on the one clock of the history (see checker.mjs).
//
// - ORIGIN_MAX_RPS: at most that many requests reach the origin in any one second. The gate
//   counts a start for 1.1 s, so that the time between its start and the arrival may vary by
//   0.1 s; no slack is allowed here for it.
// - ORIGIN_MAX_IN_FLIGHT: at most that many requests are at the origin at once. A request is
//   there from its arrival until its answer, or until its time-out ran out, whichever is first.
//   The gate sends each request itself and holds its permit until the answer comes, or its own
//   time-out (QUEUE_FORWARD_TIMEOUT_MS, counted from its send) runs out: a slow handler the
//   origin keeps running past it is not the gate's. The origin cannot see the send, only that it
//   came after the claim and before the arrival: the time-out is counted from the claim, the
//   earliest it can have begun. Counted from the arrival, it would fail a sound gate (seed
//   1881890976: a request let through 2 ms before the time-out counted from an arrival that came
//   22 ms after its claim).
// - While the breaker is open during the outage, requests reach the origin only as probes:
//   one at a time, at least ORIGIN_PROBE_SECONDS apart.
//
// The gate keeps its starts and permits in memory: a restart of the runtime loses them, and
// the stopped runtime's requests die with it. So starts on either side of a restart's
// beginning are not counted together, and a request is at the origin at most until a restart
// begins.

/** Times from the run's start, for messages. */
const relTo = (history) => (at) => (at === undefined ? '?' : Math.round(at - (history.startedAt ?? 0)));

/** The restarts' beginnings, in order. */
const restartStarts = (history) => (history.restartsAt ?? []).map((r) => r.from).sort((a, b) => a - b);

/** How many restarts had begun by `at`: requests with the same number met the same gate. */
const runtimeAt = (starts, at) => starts.filter((from) => from <= at).length;

/** When request `r` stopped being at the origin, as the gate counts it (see above). */
export function leftOrigin(r, timeoutMs, starts) {
  const cut = starts.find((from) => from > r.receivedAt) ?? Infinity;
  return Math.min(r.answeredAt ?? Infinity, (r.claimedAt ?? r.receivedAt) + timeoutMs, cut);
}

/** The most requests that arrived within one second (less than 1,000 ms apart) in one runtime, with where. */
export function peakPerSecond(requests, starts = []) {
  const sorted = [...requests].sort((a, b) => a.receivedAt - b.receivedAt);
  let peak = { count: 0, from: undefined, to: undefined };
  for (let i = 0, j = 0; i < sorted.length; i += 1) {
    const runtime = runtimeAt(starts, sorted[i].receivedAt);
    while (sorted[j].receivedAt <= sorted[i].receivedAt - 1_000 || runtimeAt(starts, sorted[j].receivedAt) !== runtime) j += 1;
    if (i - j + 1 > peak.count) peak = { count: i - j + 1, from: sorted[j].receivedAt, to: sorted[i].receivedAt };
  }
  return peak;
}

/** The most requests at the origin at once, and the arrival where that was reached. */
export function peakInFlight(requests, timeoutMs, starts = []) {
  // An end at the same millisecond as an arrival comes first: they were not there together.
  const edges = requests.flatMap((r) => [[r.receivedAt, 1, r], [leftOrigin(r, timeoutMs, starts), -1, r]]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = { count: 0, at: undefined };
  for (const [at, step] of edges) {
    now += step;
    if (now > peak.count) peak = { count: now, at };
  }
  return peak;
}

/** Each time the rate cap was broken: a request that was more than ORIGIN_MAX_RPS in its second. */
function rateBreaks(requests, most, starts) {
  const sorted = [...requests].sort((a, b) => a.receivedAt - b.receivedAt);
  const breaks = [];
  for (let i = 0, j = 0; i < sorted.length; i += 1) {
    const runtime = runtimeAt(starts, sorted[i].receivedAt);
    while (sorted[j].receivedAt <= sorted[i].receivedAt - 1_000 || runtimeAt(starts, sorted[j].receivedAt) !== runtime) j += 1;
    if (i - j + 1 > most) breaks.push({ request: sorted[i], count: i - j + 1, from: sorted[j].receivedAt });
  }
  return breaks;
}

/** Each arrival that made more than ORIGIN_MAX_IN_FLIGHT at the origin at once. */
function inFlightBreaks(requests, most, timeoutMs, starts) {
  const breaks = [];
  for (const r of requests) {
    const there = requests.filter((o) => o !== r && o.receivedAt <= r.receivedAt && leftOrigin(o, timeoutMs, starts) > r.receivedAt);
    if (there.length + 1 > most) breaks.push({ request: r, there });
  }
  return breaks;
}

/**
 * The span of the outage in which the breaker was open, as its lines show: from the later of
 * the origin going down and the last `breaker_opened` line seen before the origin came back,
 * to the origin coming back. Null when no breaker opened, or a `breaker_closed` line came after
 * that opening and before the origin came back (all outage answers are 5xx, so that close
 * followed an answer given before the outage, and no opening line came after it).
 */
export function openDuring(history) {
  const outage = history.outage;
  if (!outage || outage.to === undefined) return null;
  const gateLines = (outcome) => history.log.filter((l) => l.outcome === outcome && l.seenAt !== undefined && l.seenAt <= outage.to);
  const opened = gateLines('breaker_opened').sort((a, b) => a.seenAt - b.seenAt).at(-1);
  if (!opened) return null;
  if (gateLines('breaker_closed').some((l) => l.seenAt > opened.seenAt)) return null;
  return { openedSeenAt: opened.seenAt, from: Math.max(opened.seenAt, outage.from), to: outage.to };
}

/**
 * The requests the gate let through while the breaker was open during the outage: those that
 * reached the origin in that span and were claimed after the opening line was seen. A request
 * claimed before it may have been let through before the breaker opened (the claim comes before
 * the gate is asked), and is not one of them; nor is one whose claim was not read.
 */
export function probesDuring(history, open) {
  return history.origin
    .filter((r) => r.receivedAt > open.from && r.receivedAt <= open.to && r.claimedAt > open.openedSeenAt)
    .sort((a, b) => a.receivedAt - b.receivedAt);
}

/**
 * True when the breaker was open (or its probe out) as the origin went down: its last
 * `breaker_opened` line before then has no `breaker_closed` line after it.
 */
function openBefore(history) {
  const before = (outcome) => history.log.filter((l) => l.outcome === outcome && l.seenAt < history.outage.from);
  const opened = before('breaker_opened').map((l) => l.seenAt);
  if (opened.length === 0) return false;
  const last = Math.max(...opened);
  return !before('breaker_closed').some((l) => l.seenAt > last);
}

/**
 * The breaker must open once ORIGIN_BREAKER_FAILURES requests failed in a row. Every answer
 * of the outage is a 503, a failure: when that many came, the gate got that many failures in
 * a row, and its `breaker_opened` line must follow (seen when it may, even after the origin
 * came back), unless the breaker was open already. A message, or null.
 */
function notOpened(history, during) {
  const { breakerFailures } = history.gate;
  if (breakerFailures <= 0 || during.length < breakerFailures || openBefore(history)) return null;
  if (history.log.some((l) => l.outcome === 'breaker_opened' && l.seenAt >= history.outage.from)) return null;
  return `breaker not opened: the origin answered ${during.length} requests 503 while down (ORIGIN_BREAKER_FAILURES ${breakerFailures}), and no breaker_opened line followed`;
}

/**
 * The breaker's rules, for the requests let through while it was open: each reached the origin
 * alone, and at least ORIGIN_PROBE_SECONDS after the one let through before it.
 *
 * No tolerance is allowed. The gate lets a probe through only when its own clock has passed
 * the time it set: the opening, or the previous probe's answer (which came after that probe
 * reached the origin), plus ORIGIN_PROBE_SECONDS. That clock is the one the history uses. The
 * alarm that brings a held event back only decides when the event asks: one that fires early
 * is held again, one that fires late only widens the gap. The first probe is measured from the
 * claim of each request that reached the origin before it (those whose claim was read): each
 * was claimed before it was let through, so before the opening, or it was itself a probe
 * answered before the next could go.
 */
function breakerBreaks(history, probes, timeoutMs, starts, rel) {
  const { probeMs } = history.gate;
  const together = [];
  const close = [];
  probes.forEach((r, k) => {
    const there = history.origin.filter((o) => o !== r && o.receivedAt <= r.receivedAt && leftOrigin(o, timeoutMs, starts) > r.receivedAt);
    if (there.length > 0) together.push(`${r.eventId} attempt ${r.attempt} reached it at ${rel(r.receivedAt)} ms while ${there.map((o) => `${o.eventId} attempt ${o.attempt} (from ${rel(o.receivedAt)} ms)`).join(', ')} was there`);
    const before = k > 0 ? { at: probes[k - 1].receivedAt, what: `the probe before it reached the origin` }
      : history.origin.filter((o) => o.receivedAt < r.receivedAt && o.claimedAt !== undefined)
        .reduce((latest, o) => (o.claimedAt > latest.at ? { at: o.claimedAt, what: `${o.eventId} attempt ${o.attempt}, which reached the origin before it, was claimed` } : latest), { at: -Infinity });
    if (r.receivedAt - before.at < probeMs) close.push(`${r.eventId} attempt ${r.attempt} reached it at ${rel(r.receivedAt)} ms, ${r.receivedAt - before.at} ms after ${before.what}`);
  });
  return { together, close };
}

/** The events acknowledged before the origin came back and not settled then, and when the last was. */
export function drain(history) {
  const outage = history.outage;
  const acknowledged = new Map();
  for (const d of history.deliveries) {
    if (d.status >= 200 && d.status < 300 && d.at !== undefined) acknowledged.set(d.eventId, Math.min(acknowledged.get(d.eventId) ?? Infinity, d.at));
  }
  const settled = new Map();
  for (const l of history.log) {
    if ((l.outcome === 'delivered' || l.outcome === 'dead_lettered') && l.key !== undefined && l.seenAt !== undefined) {
      settled.set(l.key, Math.min(settled.get(l.key) ?? Infinity, l.seenAt));
    }
  }
  const keyOf = (id) => history.keys?.[id] ?? id;
  // An event whose line was lost with a stopped runtime, but whose record ended done or dead:
  // settled by its last answer at the origin.
  for (const id of history.events) {
    const ended = history.finalStates?.[id] === 'done' || history.finalStates?.[id] === 'dead';
    const last = Math.max(...history.origin.filter((r) => r.eventId === id && r.answeredAt !== undefined).map((r) => r.answeredAt));
    if (ended && !settled.has(keyOf(id)) && Number.isFinite(last)) settled.set(keyOf(id), last);
  }
  const backlog = history.events.filter((id) => acknowledged.get(id) < outage.to && !(settled.get(keyOf(id)) <= outage.to));
  const until = Math.max(outage.to, ...backlog.map((id) => settled.get(keyOf(id)) ?? Infinity));
  return { backlog: backlog.length, until };
}

/**
 * Judges the gate's promises in `history`; `fail(message, eventIds)` files a failure. Returns
 * the table's rows.
 */
export function checkGate(history, fail) {
  if (!history.gate) return [];
  const rel = relTo(history);
  const { maxRps, maxInFlight, breakerFailures, probeMs } = history.gate;
  const timeoutMs = history.forwardTimeoutMs;
  const starts = restartStarts(history);
  const requests = history.origin;
  const few = (list, say) => list.slice(0, 3).map(say).join(' | ');
  const ids = (list) => list.map((b) => b.request.eventId);
  const rate = maxRps > 0 ? rateBreaks(requests, maxRps, starts) : [];
  if (rate.length > 0) {
    fail(`ORIGIN_MAX_RPS (${maxRps}) broken: ${rate.length} requests reached the origin as more than ${maxRps} in one second: ${few(rate, (b) => `${b.count} from ${rel(b.from)} to ${rel(b.request.receivedAt)} ms`)}`, ids(rate));
  }
  const crowded = maxInFlight > 0 ? inFlightBreaks(requests, maxInFlight, timeoutMs, starts) : [];
  if (crowded.length > 0) {
    fail(`ORIGIN_MAX_IN_FLIGHT (${maxInFlight}) broken: ${crowded.length} requests reached the origin while ${maxInFlight} or more were there: ${few(crowded, (b) => `${b.request.eventId} attempt ${b.request.attempt} at ${rel(b.request.receivedAt)} ms with ${b.there.length} there`)}`, ids(crowded));
  }
  const peaks = `${peakPerSecond(requests, starts).count} a second, ${peakInFlight(requests, timeoutMs, starts).count} at once`;
  const rows = [
    ['gate: ORIGIN_MAX_RPS, ORIGIN_MAX_IN_FLIGHT, ORIGIN_BREAKER_FAILURES, ORIGIN_PROBE_SECONDS', `${maxRps}, ${maxInFlight}, ${breakerFailures}, ${probeMs / 1000}`],
    ['gate: most requests at the origin in any one second, and at once (whole run)', peaks],
    ['gate: attempts held back (not counted)', history.log.filter((l) => l.outcome === 'held').length],
  ];
  return [...rows, ...outageRows(history, fail, { timeoutMs, starts, rel, few })];
}

/** The outage's rules and figures. */
function outageRows(history, fail, { timeoutMs, starts, rel, few }) {
  const outage = history.outage;
  if (!outage || outage.to === undefined) return [['outage', 'none']];
  const during = history.origin.filter((r) => r.outage);
  const open = openDuring(history);
  const probes = open ? probesDuring(history, open) : [];
  const unopened = notOpened(history, during);
  if (unopened) fail(unopened, [...new Set(during.map((r) => r.eventId))]);
  if (open) {
    const { together, close } = breakerBreaks(history, probes, timeoutMs, starts, rel);
    if (together.length > 0) fail(`breaker open: more than one request at the origin at once: ${few(together, (x) => x)}`, probes.map((r) => r.eventId));
    if (close.length > 0) fail(`breaker open: probes less than ORIGIN_PROBE_SECONDS (${history.gate.probeMs} ms) apart: ${few(close, (x) => x)}`, probes.map((r) => r.eventId));
  }
  const sinceDown = (at) => Math.round(at - outage.from);
  const closed = history.log.filter((l) => l.outcome === 'breaker_closed' && l.seenAt > outage.to).sort((a, b) => a.seenAt - b.seenAt)[0];
  const drained = drain(history);
  const inDrain = history.origin.filter((r) => r.receivedAt >= outage.to && r.receivedAt <= drained.until);
  const leftovers = open ? history.origin.filter((r) => r.receivedAt > open.from && r.receivedAt <= open.to && !probes.includes(r)).length : 0;
  return [
    ['outage: origin down, ms from the start of the run (every request answered 503)', `${rel(outage.from)}-${rel(outage.to)} (${Math.round(outage.to - outage.from)} ms, ${during.length} requests)`],
    ['outage: requests the origin held when it went down (connection reset)', history.origin.filter((r) => r.cutByOutage).length],
    ['outage: breaker opened (its line seen), ms after the origin went down', open ? sinceDown(open.openedSeenAt) : 'not while the origin was down'],
    ['outage: requests let through before it opened that reached the origin after', leftovers],
    ['outage: probes while it was open, ms after the origin went down', `${probes.length}${probes.length ? ` (${probes.map((r) => sinceDown(r.receivedAt)).join(', ')})` : ''}`],
    ['outage: breaker closed (its line seen), ms after the origin came back', closed ? Math.round(closed.seenAt - outage.to) : 'never'],
    ['drain: events acknowledged before the origin came back, not settled then', drained.backlog],
    ['drain: ms from the origin coming back until the last of them settled', Number.isFinite(drained.until) ? Math.round(drained.until - outage.to) : 'never'],
    ['drain: most requests at the origin in any one second, and at once', `${peakPerSecond(inDrain, starts).count} a second, ${peakInFlight(inDrain, timeoutMs, starts).count} at once`],
  ];
}
