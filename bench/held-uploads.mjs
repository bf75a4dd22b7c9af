// What still bounds concurrent uploads that pass the checks made before the body: a Stripe
// signature header that is well formed and fresh (anyone can write one, without the secret),
// a declared Content-Length within MAX_BODY_BYTES, then part of the body and a stall. Each
// such request is held until its body arrives or BODY_READ_TIMEOUT_MS passes (then 408). For
// `count` requests at once that each send `sent` bytes of a declared `declared`, this prints
// the rise of the runtime process's resident memory (both isolates and the runtime's own
// buffers: an upper bound on one isolate) while they are held, and when they were answered.
// Runs the built worker straight on workerd (Miniflare), as deployed: no dev middleware.
// Linux only (/proc). Usage: node bench/held-uploads.mjs (after a build).
import net from 'node:net';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';

import { builtWorker, sleep, startWorkers } from '../tests/harness.mjs';

const MIB = 1024 * 1024;
const TIMEOUT_MS = 10_000;

/** The pid of the workerd process this process started last. */
function workerdPid() {
  const mine = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((entry) => {
    try {
      const [, comm, rest] = readFileSync(`/proc/${entry}/stat`, 'utf8').trim().match(/^\d+ \((.*)\) (.*)$/);
      return comm.startsWith('workerd') && Number(rest.split(' ')[1]) === process.pid;
    } catch {
      return false;
    }
  });
  return Math.max(...mine.map(Number));
}

/** Resident memory now and at its peak since the last reset, in MiB. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (name) => Number(status.match(new RegExp(`${name}:\\s+(\\d+) kB`))[1]) / 1024;
  return { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

/** Opens one upload: headers, `sent` bytes of a declared `declared`, then a stall. */
function upload(url, declared, sent) {
  const { hostname, port } = new URL(url);
  const t = Math.floor(Date.now() / 1000);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk;
      if (data.includes('\r\n\r\n')) {
        resolve({ status: Number(data.slice(9, 12)), ms: Date.now() - started });
        socket.destroy();
      }
    });
    socket.on('error', () => resolve({ status: 0, ms: Date.now() - started }));
    socket.on('connect', () => {
      socket.write(`POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n`
        + `Stripe-Signature: t=${t},v1=${'ab'.repeat(32)}\r\nContent-Length: ${declared}\r\n\r\n`);
      socket.write(Buffer.alloc(sent, 'x'));
    });
  });
}

async function run(count, declared, sent) {
  const runtime = await startWorkers([builtWorker('held', {
    STRIPE_WEBHOOK_SECRET: 'whsec_held', ORIGIN_URL: 'http://127.0.0.1:9/x',
    MAX_BODY_BYTES: String(4 * MIB), BODY_READ_TIMEOUT_MS: String(TIMEOUT_MS),
  })], { logs: [] });
  try {
    const pid = workerdPid();
    await upload(runtime.url, 10, 10); // warm: one refused at once (the forged MAC)
    await sleep(300);
    const level = memory(pid).rss;
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const answers = [];
    for (let n = 0; n < count; n += 1) answers.push(upload(runtime.url, declared, sent));
    await sleep(Math.min(TIMEOUT_MS - 2_000, 3_000 + count * 5));
    const held = memory(pid).peak - level;
    const done = await Promise.all(answers);
    const statuses = [...new Set(done.map((a) => a.status))].join(',');
    const ms = done.map((a) => a.ms).sort((a, b) => a - b);
    console.log(`| ${count} | ${(declared / MIB).toFixed(0)} MiB | ${sent >= MIB ? `${(sent / MIB).toFixed(0)} MiB` : `${sent} B`} | ${held.toFixed(0)} MiB | ${(held * 1024 / count).toFixed(0)} KiB | ${statuses} after ${ms[0]} to ${ms.at(-1)} ms |`);
  } finally {
    await runtime.dispose();
  }
}

console.log('| uploads at once | declared | sent, then a stall | peak rise while held | per upload | answered |');
console.log('| --- | --- | --- | --- | --- | --- |');
await run(100, 4 * MIB, 20);
await run(500, 4 * MIB, 20);
await run(50, 4 * MIB, MIB);
await run(20, 4 * MIB, 4 * MIB - 1);
process.exit(0);
