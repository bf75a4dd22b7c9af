// `node bench/split.mjs DIR|peer|floor [...]`: where the runtime's CPU goes per request, for
// builds of this worker (folders holding index.js and index_bg.wasm), the JavaScript peer and
// the floor, straight to workerd, in turns round by round. Two splits of each measured phase:
//   - by thread of the workerd process (from /proc): the thread that runs the isolate and the
//     runtime's event loop, and V8's background threads (its compilers and concurrent GC);
//   - where `perf` can record the process (Linux; root, or `perf_event_paranoid` at most 1),
//     by the code the runtime's own thread was in: JIT code (WebAssembly and optimised
//     JavaScript: this worker's Rust and glue, or the peer's JavaScript), V8's interpreter and
//     builtins, V8's garbage collector and handles, the runtime's native code (workerd, KJ,
//     Cap'n Proto, SQLite, its allocator), the C library and the kernel.
// Figures are microseconds of CPU per request, medians over rounds. `SPLIT_ROUNDS` (3),
// `SPLIT_REQUESTS` (6000), `SPLIT_KIB` (1), `SPLIT_SCENARIO` (`duplicate` or `unique`) and
// `SPLIT_WARMUP` (3000 duplicates sent to each fresh runtime first) change the load. A tool
// for finding a cost, not a benchmark: `perf` takes a little CPU of its own from the machine.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startDirect } from '../tests/harness.mjs';
import { eventPayload, stripeDelivery } from './deliveries.mjs';
import { drive, summary } from './load.mjs';
import { startOrigin } from './origin-process.mjs';

const ROUNDS = Number(process.env.SPLIT_ROUNDS ?? 3);
const REQUESTS = Number(process.env.SPLIT_REQUESTS ?? 6000);
const KIB = Number(process.env.SPLIT_KIB ?? 1);
const SCENARIO = process.env.SPLIT_SCENARIO ?? 'duplicate';
const WARMUP = Number(process.env.SPLIT_WARMUP ?? 3000);
const CONCURRENCY = 32;
const SECRET = 'whsec_split_secret';

const kinds = process.argv.slice(2);
if (kinds.length === 0 || !['duplicate', 'unique'].includes(SCENARIO)) {
  console.error('usage: node bench/split.mjs DIR|peer|floor [...]  (SPLIT_SCENARIO=duplicate|unique)');
  process.exit(2);
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU ms so far of each thread of every workerd process, keyed `tid name`. */
function threadCpu() {
  const used = new Map();
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('workerd')) continue;
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        used.set(`${tid} ${name}`, ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS);
      }
    } catch {
      // The process or thread ended between the listing and the read.
    }
  }
  return used;
}

/** The workerd process serving this runtime (the newest one). */
function workerdPid() {
  let newest;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('workerd') && (!newest || Number(pid) > Number(newest))) newest = pid;
    } catch {
      // Gone.
    }
  }
  return newest;
}

const perfWorks = (() => {
  const file = path.join(os.tmpdir(), `split-probe-${process.pid}.data`);
  const probe = spawnSync('perf', ['record', '-q', '-o', file, '--', 'true'], { encoding: 'utf8' });
  rmSync(file, { force: true });
  return probe.status === 0;
})();

/** What kind of code a `perf report` symbol line is. */
function codeKind(dso, symbol) {
  if (dso.startsWith('[JIT]')) return 'JIT code (WebAssembly, optimised JavaScript)';
  if (dso.startsWith('[kernel')) return 'kernel';
  if (dso.startsWith('libc') || dso.startsWith('libm') || dso === '[vdso]') return 'C library';
  if (symbol.startsWith('Builtins_')) return 'V8 interpreter and builtins';
  if (/^(cppgc|v8::internal::(Heap|Scavenger|Mark|Minor|Concurrent|GlobalHandles|Sweeper|MemoryAllocator|ExternalEntityTable))/.test(symbol)) {
    return 'V8 garbage collector and handles';
  }
  if (/^(v8::|v8_)/.test(symbol)) return 'V8 other';
  return 'runtime native code';
}

/** Shares (0–1) of the samples of thread `tid` in `file`, by kind of code. */
function perfShares(file, tid) {
  const report = spawnSync('perf', ['report', '-i', file, '--tid', String(tid), '--sort', 'dso,sym', '--stdio', '--percent-limit', '0'], {
    encoding: 'utf8', maxBuffer: 256 * 1024 * 1024,
  });
  const shares = new Map();
  for (const line of report.stdout.split('\n')) {
    const match = /^\s+([0-9.]+)%\s+(\S+(?: tid \d+)?)\s+\[.\]\s+(.*)$/.exec(line);
    if (!match) continue;
    const kind = codeKind(match[2], match[3]);
    shares.set(kind, (shares.get(kind) ?? 0) + Number(match[1]) / 100);
  }
  return shares;
}

const origin = await startOrigin();
const deliveries = (ids) => ids.map((id) => stripeDelivery(eventPayload(id, KIB), SECRET));
const floorRequests = (ids) => ids.map((id) => ({ method: 'GET', path: `/?id=${id}`, headers: {} }));
const results = new Map(kinds.map((kind) => [kind, []]));
try {
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = [...kinds.slice(round % kinds.length), ...kinds.slice(0, round % kinds.length)];
    for (const kind of order) {
      const vars = { STRIPE_WEBHOOK_SECRET: SECRET, ORIGIN_URL: `${origin.url}/stripe`, API_ORIGIN_URL: origin.url };
      const runtime = ['peer', 'floor'].includes(kind)
        ? await startDirect({ kind, vars })
        : await startDirect({ vars, buildDir: path.resolve(kind) });
      try {
        const make = kind === 'floor' ? floorRequests : deliveries;
        const tag = `evt_${Date.now().toString(36)}s${round}`;
        const ids = (part, n) => Array.from({ length: n }, (_, i) => `${tag}${part}${i}`);
        const seen = ids('d', 20);
        await drive(runtime.url, make(seen), 20);
        await drive(runtime.url, make(Array.from({ length: WARMUP }, (_, i) => seen[i % 20])), CONCURRENCY);
        const measured = SCENARIO === 'duplicate'
          ? make(Array.from({ length: REQUESTS }, (_, i) => seen[i % 20]))
          : make(ids('u', REQUESTS));
        const pid = workerdPid();
        const file = path.join(os.tmpdir(), `split-${process.pid}-${kind.replace(/\W/g, '_')}-${round}.data`);
        const perf = perfWorks && pid
          ? spawn('perf', ['record', '-q', '-F', '999', '-p', pid, '-o', file], { stdio: 'ignore' })
          : undefined;
        const before = threadCpu();
        const run = await drive(runtime.url, measured, CONCURRENCY);
        const after = threadCpu();
        if (perf) {
          const ended = new Promise((resolve) => perf.on('exit', resolve));
          perf.kill('SIGINT');
          await ended;
        }
        if (Object.keys(run.statuses).join() !== '200') console.error(`${kind}: statuses ${JSON.stringify(run.statuses)}`);
        const perRequest = (ms) => (ms * 1000) / measured.length;
        let main = 0;
        let background = 0;
        let mainTid;
        for (const [thread, ms] of after) {
          const used = ms - (before.get(thread) ?? 0);
          // The runtime's own thread carries the process's name; the others are V8's.
          if (thread.split(' ')[0] === pid) {
            main += used;
            mainTid = pid;
          } else {
            background += used;
          }
        }
        const shares = perf ? perfShares(file, mainTid) : new Map();
        rmSync(file, { force: true });
        results.get(kind).push({
          rps: run.rps,
          main: perRequest(main),
          background: perRequest(background),
          code: new Map([...shares].map(([code, share]) => [code, share * perRequest(main)])),
        });
      } finally {
        await runtime.dispose();
      }
    }
  }
} finally {
  origin.stop();
}

const median = (values) => (values.length ? summary(values).median : 0);
console.log(`${SCENARIO}s of ${KIB} KiB, ${REQUESTS} per round, ${ROUNDS} rounds: µs of CPU per request, median over rounds`);
const columns = ['requests/s', 'runtime thread', 'V8 background threads'];
const codes = [...new Set([...results.values()].flatMap((runs) => runs.flatMap((run) => [...run.code.keys()])))].sort();
if (!perfWorks) console.log('(perf cannot record here: the split by kind of code is left out)');
console.log(`| | ${kinds.join(' | ')} |`);
console.log(`| --- |${kinds.map(() => ' ---: |').join('')}`);
const row = (label, pick, digits = 0) => console.log(`| ${label} | ${kinds.map((kind) => median(results.get(kind).map(pick)).toFixed(digits)).join(' | ')} |`);
row(columns[0], (run) => run.rps);
row(columns[1], (run) => run.main);
row(columns[2], (run) => run.background);
for (const code of codes) row(`runtime thread: ${code}`, (run) => run.code.get(code) ?? 0);
process.exit(0);
