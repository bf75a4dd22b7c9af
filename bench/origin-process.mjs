// The benchmark's origin (bench/origin.mjs) in a process of its own, so its work does not count
// against the load generator's.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Starts the origin; resolves to { url, stop }. */
export async function startOrigin() {
  const child = spawn(process.execPath, [path.join(HERE, 'origin.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}
