// The chaos driver: signs deliveries as their sender does (the `stripe` package by default;
// `provider: 'standard' | 'github' | 'shopify'` signs with that sender's library) and sends
// them to the real worker under `wrangler dev` with persisted storage, while a recording origin fails and
// stalls at random and the runtime is restarted; it redelivers as Stripe does until each
// delivery got a 2xx or its retry budget is spent. Returns the whole history.
//
// Every time in the history is Date.now() milliseconds: the clock the runtime's objects use
// for their claims, so an attempt's claim time (read from its object's storage when its
// forward reaches the origin) compares with the origin's and the driver's own times.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { claimReader, sleep, startWorker } from '../harness.mjs';
import { claimId, signedHeaders, standardSecret } from '../provider-helpers.mjs';
import { eventPayload, signatureFor } from '../stripe-helpers.mjs';

const SECRET = 'whsec_chaos';
const SENDERS = {
  stripe: { secretKey: 'STRIPE_WEBHOOK_SECRET', secret: SECRET },
  standard: { secretKey: 'STANDARD_WEBHOOK_SECRET', secret: standardSecret('chaos') },
  github: { secretKey: 'GITHUB_WEBHOOK_SECRET', secret: 'chaos-github-secret' },
  shopify: { secretKey: 'SHOPIFY_WEBHOOK_SECRET', secret: 'chaos-shopify-secret' },
};

/** The headers `provider` sends with `payload` for delivery `id`, signed now. */
async function headersFor(provider, id, payload) {
  if (provider === 'stripe') return { 'stripe-signature': signatureFor(payload, SECRET) };
  return signedHeaders(provider, { id, body: payload, secret: SENDERS[provider].secret });
}
const ADMIN_TOKEN = 'chaos-admin-token-0123456789abcdef';

/** A seeded random number generator (mulberry32), so a failing run can be repeated. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The clock of every time in the history (see above). */
const now = () => Date.now();

/** The 4xx answers the origin gives: refusals (a queued event is dead-lettered at once), then
 * the four that say "later" (408, 409, 425, 429: a failed attempt like any other). */
export const REFUSALS = [400, 404, 410, 422];
export const LATER = [408, 409, 425, 429];

/**
 * The recording origin. Of its requests it answers `failureRate` 500; `gatewayRate` 502 or 504
 * as a gateway in front of the handler does when it gives up on it (the 504 after a wait:
 * after the forward time-out in sync mode); `resetRate` by resetting the connection after the
 * handler ran, with no answer; `clientErrorRate` a 4xx (half refusals, half of the four that
 * say "later"); `slowRate` after a delay between the forward time-out and the end of the wait
 * horizon (queue mode: within the attempt's time-out); `beyondRate` only after the horizon;
 * the rest 200 at once. Behind a gateway or a reset the handler's own outcome (`status`) is
 * hidden from the worker: 200 or 500, half each, so that an unknown outcome sometimes hides a
 * success that must not run again inside its lease. Every outcome it decides on is recorded as
 * the handler's (it ran), whether or not anyone was still listening: `status` the handler's
 * answer, `gateway` the status a gateway answered instead, `reset` when the connection was
 * reset instead. `keyOf(req)` names the
 * claim record a request belongs to; once `origin.claims` is set (a [claimReader]), each
 * request's claim time is read from its object's storage as it arrives: the record then holds
 * the claim whose forward this is (the claim is written before the forward leaves, and no
 * other claim can replace it before the forward is answered or its lease runs out).
 */
async function startRecordingOrigin({
  rand, failureRate, gatewayRate = 0, resetRate = 0, clientErrorRate = 0, slowRate, beyondRate, horizonMs, slowFrom, keyOf,
}) {
  const records = [];
  let hold = null; // { resolve }: the next request is held (never answered) and reported
  let claims = null;
  // The claim of `record` as its object stores it, when that is still the claim of this
  // attempt (its fence starts with the attempt number); tried again a few times, shortly, when
  // the database is busy.
  const readClaim = (record, tries = 0) => {
    if (!claims) return;
    const stored = claims.read(record.key);
    if (stored?.lease?.fence?.startsWith(`${record.attempt}.`)) {
      record.claimedAt = stored.lease.claimed_at;
      record.leaseUntil = stored.lease.until;
    } else if ((stored === undefined || stored.attempts < record.attempt) && tries < 10) {
      setTimeout(() => readClaim(record, tries + 1), 20);
    }
  };
  // A delay between the forward time-out and the horizon, with a margin on each side: 300 ms
  // for timers after the time-out, 1.5 s before the horizon, which the claim authority counts
  // from the claim (before the forward reached the origin) and which the answer must reach.
  const slowDelay = () => slowFrom + 300 + rand() * Math.max(0, horizonMs - slowFrom - 1_800);
  const bands = [
    ['failure', failureRate], ['gateway', gatewayRate], ['reset', resetRate], ['clientError', clientErrorRate],
    ['slow', slowRate], ['beyond', beyondRate],
  ];

  // The outage: while `down` is set, every request is answered 503 at once (no Retry-After:
  // the product reads a 503 with one as "paused", not as the origin failing), and the handler
  // never runs. When the origin goes down, the requests it still holds are cut: their
  // connections reset, as when its process dies mid-request (`cutByOutage`).
  let down = false;
  const pending = new Map(); // record -> { timer, req }: answers not given yet
  const outageAnswer = (req, res, receivedAt) => {
    const record = {
      eventId: req.headers['x-shopify-event-id'] ?? req.headers['x-webhook-dedup-event-id'],
      key: keyOf(req),
      takeover: req.headers['x-webhook-dedup-takeover'] === 'true',
      attempt: Number(req.headers['x-webhook-dedup-attempt']),
      receivedAt,
      status: 503,
      delayMs: 0,
      outage: true,
    };
    records.push(record);
    readClaim(record);
    record.answeredAt = now();
    res.writeHead(503).end('down');
  };

  const server = http.createServer((req, res) => {
    // A request arrives when its headers do: the first the origin sees of it (its body, a
    // kilobyte, follows at once). The gate's caps are judged from this time.
    const receivedAt = now();
    req.resume();
    req.on('end', () => {
      if (down) {
        outageAnswer(req, res, receivedAt);
        return;
      }
      let roll = rand();
      let kind = 'ok';
      for (const [name, rate] of bands) {
        if (roll < rate) {
          kind = name;
          break;
        }
        roll -= rate;
      }
      const record = {
        // The sender's own id (a Shopify delivery is claimed as `{topic}:{event id}`; each
        // event here has one topic).
        eventId: req.headers['x-shopify-event-id'] ?? req.headers['x-webhook-dedup-event-id'],
        key: keyOf(req),
        takeover: req.headers['x-webhook-dedup-takeover'] === 'true',
        attempt: Number(req.headers['x-webhook-dedup-attempt']),
        receivedAt,
        status: 200,
        delayMs: 0,
      };
      if (kind === 'failure') record.status = 500;
      if (kind === 'gateway' || kind === 'reset') record.status = rand() < 0.5 ? 200 : 500;
      if (kind === 'gateway') {
        record.gateway = rand() < 0.5 ? 502 : 504;
        if (record.gateway === 504) record.delayMs = slowDelay();
      }
      if (kind === 'reset') record.reset = true;
      if (kind === 'clientError') {
        const codes = rand() < 0.5 ? REFUSALS : LATER;
        record.status = codes[Math.floor(rand() * codes.length)];
      }
      if (kind === 'slow') record.delayMs = slowDelay();
      if (kind === 'beyond') record.delayMs = horizonMs + 500 + rand() * 1_000;
      records.push(record);
      readClaim(record);
      if (hold) {
        // Held for a restart: the worker dies while this claim waits on the origin.
        const { resolve } = hold;
        hold = null;
        record.held = true;
        record.status = undefined; // it never answers
        delete record.gateway;
        delete record.reset;
        record.delayMs = 0;
        resolve(record);
        return;
      }
      const answer = () => {
        pending.delete(record);
        record.answeredAt = now(); // the handler finished, listened to or not
        if (req.socket.destroyed) return; // the claim authority stopped waiting, or died
        if (record.reset) {
          req.socket.resetAndDestroy(); // no answer: the connection is reset (RST) after the handler ran
          return;
        }
        const status = record.gateway ?? record.status;
        res.writeHead(status).end(status === 200 ? 'ok' : 'failed');
      };
      if (record.delayMs) pending.set(record, { timer: setTimeout(answer, record.delayMs), req });
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  const sockets = new Set();
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    records,
    /** Starts reading claim times with `reader` (a [claimReader] of the runtime's storage). */
    readClaimsWith(reader) {
      claims = reader;
    },
    /** Holds the next forward unanswered; resolves with its record when it arrives. */
    holdNext() {
      return new Promise((resolve) => { hold = { resolve }; });
    },
    /**
     * The origin goes down: every request from now on is answered 503 at once, and those it
     * still holds are cut (reset, the handler's own outcome hidden). Returns when it went down.
     */
    goDown() {
      down = true;
      const at = now();
      for (const [record, { timer, req }] of pending) {
        clearTimeout(timer);
        record.answeredAt = at;
        record.reset = true;
        record.cutByOutage = true;
        delete record.gateway;
        if (!req.socket.destroyed) req.socket.resetAndDestroy();
      }
      pending.clear();
      return at;
    },
    /** The origin is back; returns when. */
    comeBack() {
      down = false;
      return now();
    },
    /** Gives up a hold not met yet: its promise resolves with null. */
    cancelHold() {
      hold?.resolve(null);
      hold = null;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Runs one chaos run. Options: events, maxDuplicates, concurrency, failureRate (500),
 * gatewayRate (502 or 504), resetRate (the connection reset after the handler ran),
 * clientErrorRate (a 4xx), slowRate (answers between the time-out and the horizon), beyondRate
 * (answers after the horizon), restarts, leaseSeconds, forwardTimeoutMs, lateWaitSeconds,
 * maxSends (retry budget per delivery), retryClientErrors (queue mode), seed.
 * Queue mode also sets the origin gate's keys (maxRps, maxInFlight, breakerFailures,
 * probeSeconds) and has an outage: once `outageAt` of the events have been started (a share,
 * 0 for none) and the restarts are over, the origin answers every request 503 for
 * `outageSeconds`, while the rest of the events keep arriving, spread over the outage.
 */
export async function runChaos(options) {
  const o = {
    provider: 'stripe', mode: 'sync', events: 1000, maxDuplicates: 10, concurrency: 64, failureRate: 0.2, gatewayRate: 0, resetRate: 0,
    clientErrorRate: 0, slowRate: 0.05, beyondRate: 0,
    restarts: 2, leaseSeconds: 6, forwardTimeoutMs: 1000, lateWaitSeconds: 3, maxSends: 25, seed: Date.now() % 2 ** 31,
    queueTimeoutMs: 2000, retryMaxAttempts: 8, retryClientErrors: false,
    // The gate: 20 starts a second and 3 at once bind through the whole run (about 1,400
    // attempts at 20 a second; most answers come at once, the slow ones hold a place). Five
    // failures in a row open the breaker in the outage's first seconds (0.1 to 2.1 s so far);
    // a probe every 3 s gives three or four probes in a 13 s outage, and 3 s exceeds the
    // attempt's 2 s time-out, so a probe never meets a request that started before the breaker
    // opened.
    maxRps: 20, maxInFlight: 3, breakerFailures: 5, probeSeconds: 3, outageAt: 0.75, outageSeconds: 13,
    ...options,
  };
  const queue = o.mode === 'queue';
  const sender = SENDERS[o.provider];
  if (!sender) throw new Error(`unknown provider ${o.provider}`);
  // The horizon: how long after a forward began its answer can still be learned. In queue
  // mode an answer later than the attempt's time-out counts as a failed attempt.
  const horizonMs = queue ? o.queueTimeoutMs : o.forwardTimeoutMs + o.lateWaitSeconds * 1000;
  const rand = random(o.seed);
  // The record key of a forward (what log lines carry): the claim id, after `{provider}:` for
  // every sender but Stripe.
  const keyOfRequest = (req) => {
    const id = req.headers['x-webhook-dedup-event-id'];
    return o.provider === 'stripe' ? id : `${o.provider}:${id}`;
  };
  const origin = await startRecordingOrigin({
    rand: random(o.seed + 1), failureRate: o.failureRate, gatewayRate: o.gatewayRate, resetRate: o.resetRate,
    clientErrorRate: o.clientErrorRate, slowRate: o.slowRate, beyondRate: o.beyondRate,
    horizonMs, slowFrom: queue ? 0 : o.forwardTimeoutMs, keyOf: keyOfRequest,
  });
  const startedAt = now();
  // A frozen copy of the build, unbundled: nothing written outside the run's folder (a new
  // build, a reinstall of node_modules) can reload or hang the dev server mid-run.
  const worker = await startWorker({
    frozen: true,
    vars: {
      STRIPE_WEBHOOK_SECRET: SECRET,
      [sender.secretKey]: sender.secret,
      ORIGIN_URL: `${origin.url}/stripe`,
      DELIVERY_MODE: o.mode,
      LEASE_SECONDS: String(o.leaseSeconds),
      FORWARD_TIMEOUT_MS: String(o.forwardTimeoutMs),
      LATE_ANSWER_WAIT_SECONDS: String(o.lateWaitSeconds),
      ADMIN_TOKEN: ADMIN_TOKEN,
      ...(queue ? {
        RETRY_BASE_SECONDS: '1',
        RETRY_MAX_DELAY_SECONDS: '2',
        RETRY_MAX_ATTEMPTS: String(o.retryMaxAttempts),
        QUEUE_FORWARD_TIMEOUT_MS: String(o.queueTimeoutMs),
        RETRY_CLIENT_ERRORS: String(o.retryClientErrors),
        ORIGIN_MAX_RPS: String(o.maxRps),
        ORIGIN_MAX_IN_FLIGHT: String(o.maxInFlight),
        ORIGIN_BREAKER_FAILURES: String(o.breakerFailures),
        ORIGIN_PROBE_SECONDS: String(o.probeSeconds),
      } : {}),
    },
  });
  origin.readClaimsWith(claimReader(worker.persistDir));
  const run = `${Date.now().toString(36)}${o.seed}`;
  // Each sender's ids in its own form: GitHub's are GUIDs (the run's time and seed, then the
  // event's number, in hexadecimal); the others take the Stripe-like name.
  const guid = (i) => {
    const hex = createHash('sha256').update(run).digest('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${i.toString(16).padStart(12, '0')}`;
  };
  const events = Array.from({ length: o.events }, (_, i) => (o.provider === 'github' ? guid(i) : `evt_chaos_${run}_${i}`));
  // The record key of an event (what log lines carry), and how the admin API addresses it.
  const keyOf = (id) => (o.provider === 'stripe' ? id : `${o.provider}:${claimId(o.provider, id)}`);
  const deliveries = [];
  const chains = [];
  let inFlight = 0;
  const waiting = [];
  const acquire = async () => {
    while (inFlight >= o.concurrency) await new Promise((resolve) => waiting.push(resolve));
    inFlight += 1;
  };
  const releaseSlot = () => {
    inFlight -= 1;
    waiting.shift()?.();
  };
  // A fresh connection for every send. The dev server closes a connection idle for 15 s and
  // does not say so (no Keep-Alive header), so a kept-alive one can be reused just as it
  // closes: the send is reset before reaching the worker (seed 1396692589, ECONNRESET 16 s after
  // a restart). Without reuse that race cannot happen, and a send with no answer stays a failure.
  const agent = new http.Agent({ keepAlive: false, maxSockets: o.concurrency });
  let restarting = Promise.resolve();
  let isRestarting = false;

  // The watchdog: when sends have waited long (the worker answers a delivery within its
  // forward time-out, or at once in queue mode) and the dev server does not answer /healthz
  // either, the runtime's wrapper has stalled, not the worker: recorded as such.
  // A stall that lasts 30 s with no answer at all cuts the run short (else its sends, 30 s
  // each, would go on for hours): no more sends, and what happened so far is checked.
  const outstanding = new Set(); // { sentAt } of each send in flight
  const stalls = [];
  let stalled = null;
  let lastAnswerAt = now();
  let aborted = false;
  const watchdog = setInterval(async () => {
    // A stall lasts until a send gets an answer (sends that time out are sent again).
    if (stalled && lastAnswerAt > stalled.at) stalled = null;
    const oldest = Math.min(...[...outstanding].map((x) => x.sentAt));
    if (stalled) {
      if (!aborted && lastAnswerAt < stalled.at && now() - stalled.at > 30_000) {
        aborted = true;
        stalled.cutShortAt = now();
        origin.cancelHold();
        agent.destroy(); // the sends in flight fail at once
      }
      return;
    }
    if (isRestarting || outstanding.size === 0 || now() - oldest < 15_000) return;
    const probe = await fetch(`${worker.url}/healthz`, { signal: AbortSignal.timeout(3_000) })
      .then((r) => `healthz ${r.status}`, (error) => `healthz: ${error.name}`);
    if (probe === 'healthz 200' || isRestarting) return;
    stalled = { at: now(), sendsWaiting: outstanding.size, oldestSentAt: oldest, probe };
    stalls.push(stalled);
  }, 5_000);

  // Every send: when it left and when its answer (or error) came, the status, and the answer's
  // word (`processed`, `duplicate`, `in_flight`, …) or, for a 5xx, its body.
  const send = async (eventId, payload) => {
    await restarting;
    await acquire();
    if (aborted) {
      releaseSlot();
      return undefined;
    }
    const sentAt = now();
    const token = { sentAt };
    outstanding.add(token);
    let sent;
    try {
      const signed = await headersFor(o.provider, eventId, payload);
      let body = '';
      const status = await new Promise((resolve, reject) => {
        const url = new URL(`${worker.url}/webhooks/${o.provider}`);
        const req = http.request({
          host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent,
          headers: { 'content-type': 'application/json', ...signed },
          timeout: 30_000,
        }, (res) => {
          // The body is kept (a 5xx's whole, so a failed run says which part answered it and why).
          res.on('data', (chunk) => { if (body.length < 600) body += chunk; });
          res.on('end', () => resolve(res.statusCode));
          res.on('error', reject);
        });
        sent = req;
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
        req.end(payload);
      });
      let word;
      try {
        const json = JSON.parse(body);
        word = json.status ?? json.error;
      } catch {
        word = undefined;
      }
      deliveries.push({ eventId, sentAt, at: now(), status, answer: word, ...(status >= 500 ? { body: body.slice(0, 300) } : {}) });
      lastAnswerAt = now();
      return status;
    } catch (error) {
      deliveries.push({ eventId, sentAt, at: now(), error: error.code ?? error.message, reusedSocket: sent?.reusedSocket ?? false });
      return undefined;
    } finally {
      outstanding.delete(token);
      releaseSlot();
    }
  };

  // One Stripe delivery: sent, then re-sent with back-off until a 2xx or the budget is spent.
  let active = 0;
  const idle = [];
  const chain = async (eventId, payload, startDelay) => {
    const record = { eventId, finished: false };
    chains.push(record);
    active += 1;
    try {
      if (startDelay) await sleep(startDelay);
      for (let n = 0; n < o.maxSends; n += 1) {
        if (aborted) {
          record.cutShort = true;
          return;
        }
        const status = await send(eventId, payload);
        if (status >= 200 && status < 300) {
          record.finished = true;
          return;
        }
        await sleep(Math.min(200 * 2 ** n, 2_000) * (0.5 + rand()));
      }
    } finally {
      active -= 1;
      idle.shift()?.();
    }
  };

  const restartAt = new Set(Array.from({ length: o.restarts }, (_, i) => Math.floor(((i + 1) * o.events) / (o.restarts + 1))));
  const restartsAt = [];
  const restartJobs = [];
  const all = [];
  // Queue mode's outage (see above): from event `outageFrom` on, once the restarts are over.
  const outageFrom = queue && o.outageAt > 0 && o.outageSeconds > 0 ? Math.floor(o.events * o.outageAt) : Infinity;
  let outage = null; // { from, to }
  // The events left when the outage begins arrive spread over its first four fifths.
  const outagePace = (o.outageSeconds * 800) / Math.max(1, o.events - outageFrom);
  for (let i = 0; i < events.length; i += 1) {
    // Start events as earlier ones finish, so that the load stays near the concurrency.
    while (active >= o.concurrency) await new Promise((resolve) => idle.push(resolve));
    if (aborted) break;
    if (i === outageFrom) {
      await Promise.all(restartJobs);
      if (aborted) break;
      outage = { from: origin.goDown() };
      all.push(sleep(o.outageSeconds * 1000).then(() => { outage.to = origin.comeBack(); }));
    }
    if (i > outageFrom && outage.to === undefined) await sleep(outagePace);
    if (restartAt.has(i)) {
      // Kill the runtime while a claim is held mid-forward: the origin holds the next forward,
      // and when it arrives the runtime is restarted on the same storage. Sends wait for it;
      // those in flight fail and are retried; the held claim is taken over when its lease ends.
      const job = origin.holdNext().then(async (held) => {
        if (held === null) return; // the run was cut short
        const from = now();
        const ended = worker.starts - 1; // the start of the runtime this restart ends
        isRestarting = true;
        restarting = worker.restart().then(() => {
          restartsAt.push({ from, to: now(), ended });
          isRestarting = false;
        });
        await restarting;
      });
      restartJobs.push(job);
      all.push(job);
    }
    const payload = eventPayload(events[i]);
    const copies = 1 + Math.floor(rand() * o.maxDuplicates);
    for (let c = 0; c < copies; c += 1) {
      // Some copies at once (overlapping retries), some later.
      const later = c > 0 && rand() < 0.5;
      all.push(chain(events[i], payload, later ? 200 + rand() * 3_000 : 0));
    }
  }
  await Promise.all(all);
  // Queue mode: every event was acknowledged at once; wait until its object settled it
  // (delivered or dead-lettered), then read where each one ended.
  const finalStates = {};
  const finalAttempts = {};
  if (queue && !aborted) {
    // An event settled as a restart began may have lost its line with the stopped runtime:
    // those without a line are asked for, every 5 s, whether their record says done or dead.
    const settledByRecord = new Set();
    let askedAt = Date.now();
    const settled = async () => {
      const ended = new Set(worker.logLines()
        .filter((l) => l.outcome === 'delivered' || l.outcome === 'dead_lettered')
        .map((l) => l.key));
      const left = events.filter((id) => !ended.has(keyOf(id)) && !settledByRecord.has(id));
      if (left.length === 0) return true;
      if (left.length > 5 || Date.now() - askedAt < 5_000) return false;
      askedAt = Date.now();
      for (const id of left) {
        const answer = await fetch(`${worker.url}/admin/deliveries/${o.provider}/${encodeURIComponent(claimId(o.provider, id))}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        const state = answer.status === 200 ? (await answer.json()).record?.state : undefined;
        if (state === 'done' || state === 'dead') settledByRecord.add(id);
      }
      return left.every((id) => settledByRecord.has(id));
    };
    const deadline = Date.now() + 180_000;
    while (!(await settled()) && Date.now() < deadline) await sleep(500);
    for (const id of events) {
      const answer = await fetch(`${worker.url}/admin/deliveries/${o.provider}/${encodeURIComponent(claimId(o.provider, id))}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      const record = answer.status === 200 ? (await answer.json()).record : undefined;
      finalStates[id] = record ? record.state : `absent (${answer.status})`;
      if (record) finalAttempts[id] = record.attempts;
    }
  }
  // Queue mode: the failure index's dead letters, read once it has caught up with the dead
  // events (or after 30 s), to count against the dead letters the run saw.
  let indexedDead = null;
  if (queue && !aborted) {
    // The index names an event by the id its record is kept under; the run's ids, back again.
    const eventOf = new Map(events.map((id) => [claimId(o.provider, id), id]));
    const dead = events.filter((id) => finalStates[id] === 'dead');
    const readIndex = async () => {
      const ids = [];
      let cursor = null;
      do {
        const query = `state=dead&limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const answer = await fetch(`${worker.url}/admin/dead-letters?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        if (answer.status !== 200) return null;
        const page = await answer.json();
        ids.push(...page.items.filter((item) => item.provider === o.provider).map((item) => eventOf.get(item.id) ?? item.id));
        cursor = page.next_cursor;
      } while (cursor);
      return ids;
    };
    const indexDeadline = Date.now() + 30_000;
    do {
      indexedDead = await readIndex();
      if (indexedDead && dead.every((id) => indexedDead.includes(id))) break;
      await sleep(1_000);
    } while (Date.now() < indexDeadline);
  }
  await sleep(500);
  clearInterval(watchdog);
  agent.destroy();
  // The dev server's own logs (wrangler's, one file per start): the last lines of each, and
  // all of them when it stalled.
  const devServerLogs = [];
  for (const name of (worker.logDir ? readdirSync(worker.logDir).sort() : [])) {
    const lines = readFileSync(path.join(worker.logDir, name), 'utf8').split('\n');
    devServerLogs.push({ name, lines: lines.length, tail: lines.slice(stalls.length > 0 ? -400 : -40).join('\n') });
  }
  // The runtime's log lines, each with the time it arrived (`seenAt`) and the start of the
  // runtime that printed it (`runtime`: 0 for the first, 1 after the first restart, …; restart
  // `ended` names the start it stopped), and the rest of what it
  // printed (errors, stack traces), but not the dev proxy's line per request.
  const lines = worker.timedLines();
  const log = lines.filter((l) => l.json).map((l) => ({ ...l.json, seenAt: l.at, runtime: l.runtime }));
  const runtimeOutput = lines
    .filter((l) => !l.json && l.text.trim() !== '' && !/^\[wrangler:info\] (GET|POST|HEAD|PUT|DELETE) /.test(l.text))
    .map((l) => ({ at: l.at, text: l.text.slice(0, 2_000) }));
  // Claim times the log lines carry, if the product writes them (`claimed_at`, by key and
  // attempt): they fill a storage read that missed, and any disagreement is counted.
  const loggedClaims = new Map();
  for (const l of log) {
    if (l.key !== undefined && l.attempt !== undefined && l.claimed_at !== undefined) loggedClaims.set(`${l.key} ${l.attempt}`, l.claimed_at);
  }
  let claimTimesDisagreeing = 0;
  for (const r of origin.records) {
    const logged = loggedClaims.get(`${r.key} ${r.attempt}`);
    if (logged === undefined) continue;
    if (r.claimedAt === undefined) r.claimedAt = logged;
    else if (r.claimedAt !== logged) claimTimesDisagreeing += 1;
  }
  await worker.dispose();
  await origin.close();
  return {
    options: o,
    history: {
      provider: o.provider, mode: o.mode, events, keys: Object.fromEntries(events.map((id) => [id, keyOf(id)])),
      startedAt, endedAt: now(), deliveries, chains, origin: origin.records, log, runtimeOutput, restartsAt, finalStates, finalAttempts, indexedDead, stalls, devServerLogs,
      cutShort: aborted, claimTimesDisagreeing,
      leaseMs: o.leaseSeconds * 1000, forwardTimeoutMs: queue ? o.queueTimeoutMs : o.forwardTimeoutMs, horizonMs,
      retryMaxAttempts: o.retryMaxAttempts, retryClientErrors: queue ? o.retryClientErrors : undefined,
      // Queue mode: the gate's keys, and when the origin was down (on the same clock).
      ...(queue ? {
        gate: { maxRps: o.maxRps, maxInFlight: o.maxInFlight, breakerFailures: o.breakerFailures, probeMs: o.probeSeconds * 1000 },
        outage,
      } : {}),
    },
  };
}
