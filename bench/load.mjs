// A small load generator: a fixed number of requests at a fixed concurrency over keep-alive
// connections, recording each request's latency; and the runtime's CPU time, read from /proc.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';

/**
 * Sends `requests` (each `{ method, path, headers, body }`) to `base` with `concurrency`
 * requests in flight. Returns { rps, p50, p99, statuses, ms, cpu }, `rps` counting 2xx answers
 * only, `cpu` being the runtime's
 * CPU ms per request (see `cpuBetween`), or undefined where it cannot be read.
 */
export async function drive(base, requests, concurrency) {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies = new Float64Array(requests.length);
  const statuses = new Map();
  let next = 0;
  const one = (request) => new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = http.request({
      host: url.hostname, port: url.port, agent,
      method: request.method, path: request.path, headers: request.headers,
    }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ns: process.hrtime.bigint() - started }));
    });
    req.on('error', reject);
    req.end(request.body);
  });
  const cpuBefore = runtimeCpuMs();
  const started = process.hrtime.bigint();
  const worker = async () => {
    while (next < requests.length) {
      const i = next;
      next += 1;
      const { status, ns } = await one(requests[i]);
      latencies[i] = Number(ns) / 1e6;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const cpuAfter = runtimeCpuMs();
  const used = cpuBetween(cpuBefore, cpuAfter);
  const cpu = used === undefined ? undefined : used / requests.length;
  agent.destroy();
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  // Throughput counts the answers that did the work (2xx) only; the others are in `statuses`.
  const ok = [...statuses].filter(([status]) => status >= 200 && status < 300).reduce((a, [, n]) => a + n, 0);
  return { rps: ok / (ms / 1000), p50: at(0.5), p99: at(0.99), statuses: Object.fromEntries(statuses), ms, cpu };
}

/** Median, min and max of numbers. */
export function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1] };
}

const CLOCK_TICKS = (() => {
  const run = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  return Number(run.stdout?.trim()) || 100;
})();

/**
 * The CPU time (user + system, in ms) used so far by each workerd process on this machine, by
 * process id, or `undefined` where /proc cannot tell (not Linux).
 */
export function runtimeCpuMs() {
  const used = new Map();
  let entries;
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const pid of entries) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('workerd')) continue;
      // Fields after the command name: utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      used.set(pid, ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return used;
}

/**
 * The CPU the workerd processes used between two readings of `runtimeCpuMs`: each process's
 * growth, a process started in between counted whole. A process gone in between (a runtime of
 * an earlier scenario finishing its exit) is left out. The benchmark runs one runtime at a
 * time, so divided by the requests served this is the runtime's CPU per request: what
 * Cloudflare bills, free of the load generator's and the origin's own work.
 */
export function cpuBetween(before, after) {
  if (!before || !after) return undefined;
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}
