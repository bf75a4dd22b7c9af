// `node bench/split.mjs DIR|peer|floor [...]`: where the runtime's CPU goes per request, for
// builds of this worker (folders holding index.js and index_bg.wasm), the JavaScript peer and
// the floor, straight to workerd, in turns round by round. Two splits of each measured phase:
//   - by thread of the runtime's own workerd process (from /proc; the one this script started,
//     so that other runtimes on the machine are not counted): its main thread, which runs the
//     isolate and the runtime's event loop, against its other threads (V8's compilers and
//     concurrent garbage collector); and the main thread's time in user and in kernel mode;
//   - where `perf` can record the process with the kernel's part (Linux; root, or
//     `perf_event_paranoid` at most 1), the main thread's time by the code it was in: JIT code
//     (WebAssembly and optimised JavaScript: this worker's Rust and glue, or the peer's
//     JavaScript; Miniflare's small entry worker too, alike for every kind), V8's builtins (the
//     interpreter, calls into the runtime, the WebAssembly–JavaScript wrappers), V8's garbage
//     collector and the rest of V8, the runtime's native code (workerd, KJ, Cap'n Proto, SQLite,
//     its allocator), the C library and the kernel.
// Figures are microseconds of CPU per request, medians over rounds (so the parts of a column need
// not add up to its whole); /proc counts in clock ticks (10 ms), so a figure of a few µs per
// request is near what it can resolve. The runtimes are started, warmed and taken in turns as
// compare.mjs's are (bench/turns.mjs): `SPLIT_ROUNDS` (3), `SPLIT_REQUESTS` (6000), `SPLIT_KIB`
// (1), `SPLIT_SCENARIO` (`duplicate` or `unique`) and `SPLIT_WARMUP` (3000) change the load. Run with
// `TMPDIR=/dev/shm` to keep the objects' storage in memory, as the benchmark does. A tool for
// finding a cost, not a benchmark: `perf` takes a little of the machine's CPU itself.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { summary } from './load.mjs';
import { inTurns, settings, storageWhere, timed } from './turns.mjs';

const chosen = settings('SPLIT', { rounds: 3, requests: 6000 },
  'usage: node bench/split.mjs DIR|peer|floor [...]  (SPLIT_SCENARIO=duplicate|unique)');

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** The fields of /proc/<pid>/stat (or a thread's) after the command name, from `state` on. */
function statFields(file) {
  const stat = readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The workerd process this script started (Miniflare spawns it as a child of this process). */
function ownWorkerd() {
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('workerd')) continue;
      if (Number(statFields(`/proc/${pid}/stat`)[1]) === process.pid) return pid;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return undefined;
}

/** CPU ms so far of each thread of process `pid`: `{ user, system }` by thread id. */
function threadCpu(pid) {
  const used = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = statFields(`/proc/${pid}/task/${tid}/stat`);
      // utime and stime are the 14th and 15th fields of stat, the 12th and 13th after the name.
      used.set(tid, { user: (Number(fields[11]) * 1000) / CLOCK_TICKS, system: (Number(fields[12]) * 1000) / CLOCK_TICKS });
    } catch {
      // The thread ended.
    }
  }
  return used;
}

/** True when `perf` may record another process of this user with its kernel part. */
const perfWorks = (() => {
  let paranoid = 2;
  try {
    paranoid = Number(readFileSync('/proc/sys/kernel/perf_event_paranoid', 'utf8'));
  } catch {
    return false;
  }
  if (process.getuid?.() !== 0 && paranoid > 1) return false;
  return spawnSync('perf', ['--version'], { encoding: 'utf8' }).status === 0;
})();

/** What kind of code a `perf report` line is: its shared object, mode (`k` kernel) and symbol. */
function codeKind(dso, mode, symbol) {
  if (mode === 'k' || dso.startsWith('[kernel')) return 'kernel';
  if (dso.startsWith('[JIT]')) return 'JIT code (WebAssembly, optimised JavaScript)';
  if (/^lib(c|m)[.-]/.test(dso) || dso === '[vdso]') return 'C library';
  if (symbol.startsWith('Builtins_')) return 'V8 builtins (interpreter, calls into the runtime, wrappers)';
  if (/^(cppgc|heap::base|v8::internal::(Heap|Scavenger|Mark|Minor|Concurrent|Incremental|GlobalHandles|Sweeper|MemoryAllocator|ExternalEntityTable|PagedSpace|NewSpace|LocalHeap|MainMarking|YoungGeneration))/.test(symbol)) {
    return 'V8 garbage collector and handles';
  }
  if (/^(v8::|v8_)/.test(symbol)) return 'V8 other';
  return 'runtime native code';
}

/** Shares (0–1) of thread `tid`'s own samples in `file`, by kind of code. */
function perfShares(file, tid) {
  const report = spawnSync('perf', ['report', '-i', file, '--tid', String(tid), '--percentage', 'relative',
    '--sort', 'dso,sym', '--stdio', '--percent-limit', '0'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const shares = new Map();
  for (const line of report.stdout.split('\n')) {
    const match = /^\s+([0-9.]+)%\s+(\S+(?: tid \d+)?)\s+\[(.)\]\s+(.*)$/.exec(line);
    if (!match) continue;
    const kind = codeKind(match[2], match[3], match[4]);
    shares.set(kind, (shares.get(kind) ?? 0) + Number(match[1]) / 100);
  }
  return shares;
}

/**
 * Runs `work` while `perf` records process `pid` into `file`; stops it and waits for it however
 * `work` ends. Resolves to `work`'s result and whether the recording covered all of it.
 */
async function recording(pid, file, work) {
  const perf = spawn('perf', ['record', '-q', '-F', '999', '-p', pid, '-o', file], { stdio: 'ignore' });
  const exited = once(perf, 'exit');
  try {
    // perf takes a moment to attach; the measured phase starts after it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const result = await work();
    return { result, recorded: perf.exitCode === null };
  } finally {
    if (perf.exitCode === null) perf.kill('SIGINT');
    await exited;
  }
}

let files = 0;
const results = await inTurns(chosen, async ({ kind, runtime, requests }) => {
  const pid = ownWorkerd();
  if (!pid) throw new Error('the runtime\'s workerd process was not found');
  files += 1;
  const file = path.join(os.tmpdir(), `split-${process.pid}-${files}.data`);
  try {
    const before = threadCpu(pid);
    const measure = async () => {
      const run = await timed(kind, runtime, requests);
      return { run, after: threadCpu(pid) };
    };
    const { result: { run, after }, recorded } = perfWorks
      ? await recording(pid, file, measure)
      : { result: await measure(), recorded: false };
    if (perfWorks && !recorded) console.error(`${kind}: perf stopped before the measured phase ended; its split is left out`);
    const perRequest = (ms) => (ms * 1000) / requests.length;
    const main = { user: 0, system: 0 };
    let others = 0;
    for (const [tid, used] of after) {
      const start = before.get(tid) ?? { user: 0, system: 0 };
      if (tid === pid) {
        main.user = used.user - start.user;
        main.system = used.system - start.system;
      } else {
        others += used.user - start.user + used.system - start.system;
      }
    }
    const shares = recorded ? perfShares(file, pid) : new Map();
    return {
      rps: run.rps,
      main: perRequest(main.user + main.system),
      kernel: perRequest(main.system),
      others: perRequest(others),
      code: new Map([...shares].map(([code, share]) => [code, share * perRequest(main.user + main.system)])),
    };
  } finally {
    rmSync(file, { force: true });
  }
});

const median = (values) => (values.length ? summary(values).median : NaN);
console.log(`${chosen.scenario}s of ${chosen.kib} KiB, ${chosen.requests} per round, ${chosen.rounds} rounds, objects' storage in ${storageWhere()}: µs of CPU per request, median over rounds`);
if (!perfWorks) console.log('(perf cannot record the runtime with its kernel part here: the split by kind of code is left out)');
const codes = [...new Set([...results.values()].flatMap((runs) => runs.flatMap((run) => [...run.code.keys()])))].sort();
console.log(`| | ${chosen.kinds.join(' | ')} |`);
console.log(`| --- |${chosen.kinds.map(() => ' ---: |').join('')}`);
const row = (label, pick) => console.log(`| ${label} | ${chosen.kinds.map((kind) => {
  const value = median(results.get(kind).map(pick).filter((v) => v !== undefined));
  return Number.isNaN(value) ? '—' : value.toFixed(0);
}).join(' | ')} |`);
row('requests/s', (run) => run.rps);
row('main thread', (run) => run.main);
row('main thread, in the kernel (/proc)', (run) => run.kernel);
row('other threads (V8 compilers, concurrent GC)', (run) => run.others);
for (const code of codes) row(`main thread: ${code}`, (run) => run.code.get(code));
process.exit(0);
