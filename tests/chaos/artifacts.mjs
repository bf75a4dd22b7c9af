// What a failed chaos run keeps, so that the failure can be replayed and explained: the seed
// and options, the checker's verdict, and for every failing event its whole timeline (every
// send with its answer and times, every origin call with its claim, receive and answer times
// and its attempt and takeover headers, the runtime's log lines for its key, the 5xx bodies),
// the restarts, what the runtime printed besides its log lines, and what else ran on the
// machine meanwhile. Written as <name>.json, a short <name>.txt, and the whole history as
// <name>.history.json.gz (the checker can be run on it again: `--check <file>`).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';

import { ROOT } from '../harness.mjs';

/** Where failed runs are kept (git-ignored, with the rest of .wrangler/), and runs that passed. */
export const FAILURES_DIR = path.join(ROOT, '.wrangler', 'chaos-failures');
export const RUNS_DIR = path.join(ROOT, '.wrangler', 'chaos-runs');

/** The timeline of `eventId` in `history`: its entries in time order, times from the run's start. */
export function timeline(history, eventId) {
  const t0 = history.startedAt ?? 0;
  const rel = (at) => (at === undefined ? undefined : Math.round(at - t0));
  const key = history.keys?.[eventId] ?? eventId;
  const entries = [];
  history.deliveries.forEach((d, n) => {
    if (d.eventId !== eventId) return;
    entries.push({
      at: rel(d.sentAt ?? d.at), kind: 'send', send: n, answeredAt: rel(d.at), status: d.status, answer: d.answer, error: d.error, body: d.body,
    });
  });
  for (const r of history.origin) {
    if (r.eventId !== eventId) continue;
    entries.push({
      at: rel(r.receivedAt), kind: 'origin', attempt: r.attempt, takeover: r.takeover, claimedAt: rel(r.claimedAt),
      leaseUntil: rel(r.leaseUntil), answeredAt: rel(r.answeredAt), status: r.status, gateway: r.gateway, reset: r.reset ?? false,
      delayMs: Math.round(r.delayMs ?? 0), held: r.held ?? false,
    });
  }
  for (const l of history.log) {
    if (l.key !== key) continue;
    const { seenAt, runtime, ...line } = l;
    entries.push({ at: rel(seenAt), kind: 'log', runtime, line });
  }
  for (const r of history.restartsAt ?? []) {
    entries.push({ at: rel(r.from), kind: 'restart', until: rel(r.to), ended: r.ended });
  }
  for (const o of history.runtimeOutput ?? []) {
    if (o.text.includes(key)) entries.push({ at: rel(o.at), kind: 'runtime', text: o.text });
  }
  entries.sort((a, b) => (a.at ?? Infinity) - (b.at ?? Infinity));
  return { eventId, key, finalState: history.finalStates?.[eventId], entries };
}

/** One entry as a line of text. */
function describe(e) {
  const ms = (at) => (at === undefined ? '?' : `${at}`);
  switch (e.kind) {
    case 'send':
      return `send #${e.send} → ${e.status ?? e.error} ${e.answer ?? ''} (answered at ${ms(e.answeredAt)})${e.body ? ` ${e.body}` : ''}`;
    case 'origin':
      return `origin attempt ${e.attempt}${e.takeover ? ' (takeover)' : ''}, claimed at ${ms(e.claimedAt)}, lease until ${ms(e.leaseUntil)}: `
        + `${e.held ? 'held, never answered (restart)' : `${e.reset ? 'reset the connection' : `answered ${e.gateway ? `${e.gateway} (a gateway)` : (e.status ?? 'never')}`} at ${ms(e.answeredAt)} (delay ${e.delayMs} ms${e.reset || e.gateway ? `; the handler's own answer ${e.status}` : ''})`}`;
    case 'log':
      return `log${e.runtime === undefined ? '' : ` (runtime ${e.runtime})`} ${JSON.stringify(e.line)}`;
    case 'restart':
      return `RESTART of the runtime${e.ended === undefined ? '' : ` (stops runtime ${e.ended})`}, until ${ms(e.until)}`;
    default:
      return `runtime: ${e.text}`;
  }
}

/** The artifacts of a failed run as { json, text }. */
export function explain({ options, history, verdict, seconds, machine, command }) {
  const events = verdict.failing.map((id) => timeline(history, id));
  const json = {
    seed: options.seed,
    options,
    command,
    startedAt: new Date(history.startedAt).toISOString(),
    seconds,
    failures: verdict.failures,
    table: verdict.table,
    restarts: (history.restartsAt ?? []).map((r) => ({ from: r.from - history.startedAt, to: r.to - history.startedAt })),
    machine,
    stalls: (history.stalls ?? []).map((x) => ({ ...x, at: x.at - history.startedAt, oldestSentAt: x.oldestSentAt - history.startedAt })),
    devServerLogs: history.devServerLogs ?? [],
    runtimeOutput: (history.runtimeOutput ?? []).map((o) => ({ at: o.at - history.startedAt, text: o.text })),
    events,
  };
  const text = [
    `chaos run failed: seed ${options.seed}, ${options.mode} mode, ${options.provider}, started ${json.startedAt}, ${seconds} s`,
    `replay: ${command}`,
    'times are milliseconds from the start of the run',
    '',
    ...verdict.failures.map((f) => `FAIL ${f}`),
    '',
    `machine (sampled every 2 s; all samples in the .json): ${JSON.stringify({ ...machine, samples: undefined })}`,
    '',
    ...(history.devServerLogs ?? []).flatMap((l) => [
      `dev server log ${l.name} (${l.lines} lines), last lines:`,
      ...l.tail.split('\n').slice(-12).map((line) => `  | ${line.slice(0, 200)}`),
      '',
    ]),
    ...events.slice(0, 20).flatMap((e) => [
      `== ${e.eventId} (key ${e.key}${e.finalState ? `, ended ${e.finalState}` : ''})`,
      ...e.entries.map((entry) => `  ${String(entry.at ?? '?').padStart(7)}  ${describe(entry)}`),
      '',
    ]),
    ...(events.length > 20 ? [`(${events.length - 20} more failing events in the .json)`] : []),
  ].join('\n');
  return { json, text };
}

/** Writes a failed run's artifacts and returns the paths written. */
export function keepFailure(run, dir = run.verdict.failures.length > 0 ? FAILURES_DIR : RUNS_DIR) {
  mkdirSync(dir, { recursive: true });
  const stamp = new Date(run.history.startedAt).toISOString().replace(/[:.]/g, '-');
  const base = path.join(dir, `${stamp}-${run.options.mode}-${run.options.seed}`);
  const { json, text } = explain(run);
  writeFileSync(`${base}.json`, `${JSON.stringify(json, null, 1)}\n`);
  writeFileSync(`${base}.txt`, `${text}\n`);
  writeFileSync(`${base}.history.json.gz`, gzipSync(JSON.stringify({ options: run.options, history: run.history })));
  return { json: `${base}.json`, text: `${base}.txt`, history: `${base}.history.json.gz` };
}

/** A history kept by [keepFailure], read back: { options, history }. */
export function readHistory(file) {
  const bytes = readFileSync(file);
  return JSON.parse((file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8'));
}
