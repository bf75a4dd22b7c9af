// A small load generator: a fixed number of requests at a fixed concurrency over keep-alive
// connections, recording each request's latency.
import http from 'node:http';

/**
 * Sends `requests` (each `{ method, path, headers, body }`) to `base` with `concurrency`
 * requests in flight. Returns { rps, p50, p99, statuses, ms }.
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
  agent.destroy();
  const sorted = Array.from(latencies).sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { rps: requests.length / (ms / 1000), p50: at(0.5), p99: at(0.99), statuses: Object.fromEntries(statuses), ms };
}

/** Median, min and max of numbers. */
export function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1] };
}
