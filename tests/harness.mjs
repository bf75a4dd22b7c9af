// Test harness: the real worker under `wrangler dev` (workerd with local Durable Object
// storage) on a free loopback port, and a real HTTP origin that records what it receives.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import v8 from 'node:v8';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const WRANGLER = path.join(ROOT, 'node_modules', '.bin', 'wrangler');
const TEST_CONFIG = path.join(ROOT, 'tests', 'wrangler.test.toml');
const running = new Set();

/** The compatibility date of the project's wrangler.toml: one date for every way it runs. */
export const COMPATIBILITY_DATE = readFileSync(path.join(ROOT, 'wrangler.toml'), 'utf8')
  .match(/^compatibility_date = "([0-9-]+)"/m)[1];

process.on('exit', () => {
  for (const child of running) killGroup(child);
});

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** True when a server could listen on `port` of 127.0.0.1 right now. */
function portFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `predicate` every 100 ms until it returns something truthy (returned) or `ms` have
 * passed (an error naming `what`). Checked once more after the deadline.
 */
export async function until(predicate, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * The admin token a test worker gets when it turns the test routes on without naming one (the
 * test routes need ADMIN_TOKEN), and the headers that present a worker's token.
 */
export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
function withTestToken(vars) {
  return vars.ENABLE_TEST_ROUTES === 'true' && !vars.ADMIN_TOKEN ? { ...vars, ADMIN_TOKEN: TEST_ADMIN_TOKEN } : vars;
}
export const adminHeaders = (worker) => ({ authorization: `Bearer ${worker.adminToken}` });

/**
 * A frozen copy of the build for one runtime: build/ copied into a folder of its own, with a
 * copy of `config` whose `main` points at it and `no_bundle = true`. Run so, `wrangler dev`
 * neither bundles (its esbuild watch covers wrangler's own templates in node_modules, and a
 * rebuild there mid-run, say while node_modules is reinstalled, reloads the worker or, when the
 * rebuild fails, hangs wrangler: esbuild's formatMessagesSync never returns) nor sees a new
 * build written meanwhile: nothing outside the folder can reload it. Its own log folder too.
 */
function frozenCopy(config) {
  const folder = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-frozen-'));
  cpSync(path.join(ROOT, 'build'), path.join(folder, 'build'), { recursive: true });
  const text = readFileSync(config, 'utf8');
  if (!/^main = "\.\.\/build\/index\.js"$/m.test(text)) throw new Error(`${config}: main is not ../build/index.js`);
  const frozen = path.join(folder, 'wrangler.toml');
  writeFileSync(frozen, text.replace(/^main = .*$/m, 'main = "build/index.js"\nno_bundle = true'));
  return { folder, config: frozen, logs: path.join(folder, 'logs') };
}

/**
 * Starts the built worker with `wrangler dev`, exactly as on the command line, with `vars`
 * given as --var flags and its own persistence folder. Resolves once /healthz answers.
 * `worker.restart()` stops and starts the runtime on the same port and storage. With
 * `frozen`, it runs a frozen copy of the build (see [frozenCopy]; its wrangler logs in
 * `worker.logDir`). With `scheduled`, wrangler runs with `--test-scheduled`.
 */
export async function startWorker({ vars: given = {}, persistDir, config: givenConfig = TEST_CONFIG, frozen = false, scheduled = false } = {}) {
  const vars = withTestToken(given);
  const port = await freePort();
  const dir = persistDir ?? mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-state-'));
  const copy = frozen ? frozenCopy(givenConfig) : null;
  const config = copy ? copy.config : givenConfig;
  const worker = {
    url: `http://127.0.0.1:${port}`,
    adminToken: vars.ADMIN_TOKEN,
    port,
    persistDir: dir,
    logDir: copy?.logs,
    output: '',
    // When each chunk of `output` arrived (Date.now() ms), and which start of the runtime
    // printed it (0 for the first, 1 after the first restart, …), as [end offset, time, start]
    // triples, so a log line can be given the time it was written (to within the pipe's delay)
    // and the runtime that wrote it.
    outputTimes: [],
    starts: 0,
    child: null,
    async start() {
      const generation = this.starts;
      this.starts += 1;
      const inspector = await freePort();
      const mark = this.output.length;
      const args = ['dev', '--config', config, '--ip', '127.0.0.1', '--port', String(this.port),
        '--inspector-port', String(inspector), '--persist-to', dir];
      for (const [key, value] of Object.entries(vars)) args.push('--var', `${key}:${value}`);
      if (scheduled) args.push('--test-scheduled'); // GET /__scheduled fires the Cron Trigger
      const child = spawn(WRANGLER, args, {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false',
          ...(copy ? { WRANGLER_LOG_PATH: copy.logs } : {}),
        },
      });
      running.add(child);
      this.child = child;
      const take = (chunk) => {
        this.output += chunk;
        this.outputTimes.push([this.output.length, Date.now(), generation]);
      };
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      this.exited = exited;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        if (child.exitCode !== null) break;
        // Only wrangler's own word that it listens on our port counts (another server may
        // have taken the port), then the worker must answer there.
        if (!this.output.slice(mark).includes(`Ready on ${this.url}`)) {
          await sleep(100);
          continue;
        }
        try {
          const response = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2_000) });
          await response.arrayBuffer();
          return this;
        } catch {
          await sleep(200);
        }
      }
      await this.stop();
      throw new Error(`wrangler dev did not start on ${this.url}:\n${this.output}`);
    },
    async stop() {
      const child = this.child;
      if (!child) return;
      this.child = null;
      if (child.exitCode === null) {
        try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
        const timer = setTimeout(() => killGroup(child), 5_000);
        await this.exited;
        clearTimeout(timer);
      }
      running.delete(child);
    },
    async restart() {
      await this.stop();
      // The runtime's own process can outlive wrangler's by a moment and still hold the port:
      // starting then fails with "Address already in use".
      await until(() => portFree(this.port), 10_000, `port ${this.port} to be free`);
      await this.start();
    },
    /** Stops the runtime and deletes its storage folder (unless the caller supplied it). */
    async dispose() {
      await this.stop();
      if (!persistDir) rmSync(dir, { recursive: true, force: true });
      if (copy) rmSync(copy.folder, { recursive: true, force: true });
    },
    /** Waits (up to `ms`) for a log line that satisfies `predicate`, and returns it. */
    async waitForLog(predicate, ms = 5_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const line = this.logLines().find(predicate);
        if (line || Date.now() > deadline) return line;
        await sleep(50);
      }
    },
    /**
     * Every line of the runtime's output so far, each with `at`, the time (Date.now() ms) its
     * chunk arrived, and `runtime`, the start of the runtime that printed it (0 for the first,
     * 1 after the first restart, …): `{ at, runtime, text, json }`, `json` the parsed log line
     * when it is one.
     */
    timedLines() {
      const lines = [];
      let start = 0;
      let chunk = 0;
      const times = this.outputTimes;
      while (start < this.output.length) {
        const end = this.output.indexOf('\n', start);
        if (end === -1) break; // a line still being written
        while (chunk < times.length - 1 && times[chunk][0] <= end) chunk += 1;
        const text = this.output.slice(start, end);
        const brace = text.indexOf('{');
        let json;
        if (brace !== -1 && text.startsWith('{"level"', brace)) {
          try { json = JSON.parse(text.slice(brace)); } catch { /* not a whole log line */ }
        }
        lines.push({ at: times[chunk]?.[1], runtime: times[chunk]?.[2], text, json });
        start = end + 1;
      }
      return lines;
    },
    /** The JSON log lines the worker wrote so far. */
    logLines() {
      return this.output
        .split('\n')
        .map((line) => line.slice(line.indexOf('{')))
        .filter((line) => line.startsWith('{"level"'))
        .flatMap((line) => {
          try {
            return [JSON.parse(line)];
          } catch {
            return []; // a line still being written
          }
        });
    },
  };
  // A free port can be taken by someone else (wrangler's own helper servers among them)
  // before wrangler binds it: on a failed first start, try again on other ports.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await worker.start();
    } catch (error) {
      if (attempt === 3) throw error;
      worker.port = await freePort();
      worker.url = `http://127.0.0.1:${worker.port}`;
      worker.output = '';
      worker.outputTimes = [];
      worker.starts = 0;
    }
  }
}

/**
 * Starts a worker straight on workerd through Miniflare's API, without the `wrangler dev`
 * proxy: the built worker (`kind: 'worker'`, with `vars`), or the benchmark's floor
 * (`kind: 'floor'`) or JavaScript peer (`kind: 'peer'`). Durable Objects are SQLite-backed and
 * persisted in a temporary folder. `buildDir` runs another build of the worker (build/ by
 * default); `inspectorPort` opens the runtime's DevTools inspector there.
 */
export function startDirect({ kind = 'worker', vars = {}, buildDir, inspectorPort } = {}) {
  const javascript = {
    floor: { file: path.join(ROOT, 'bench', 'floor', 'worker.js'), binding: 'FLOOR', className: 'FloorObject' },
    peer: { file: path.join(ROOT, 'bench', 'peer', 'worker.js'), binding: 'PEER', className: 'PeerClaims' },
  }[kind];
  const worker = javascript
    ? {
      name: kind,
      compatibilityDate: COMPATIBILITY_DATE,
      modules: [{ type: 'ESModule', path: javascript.file }],
      durableObjects: { [javascript.binding]: { className: javascript.className, useSQLite: true } },
      bindings: withTestToken(vars),
    }
    : builtWorker(kind, vars, { build: buildDir });
  return startWorkers([worker], { inspectorPort });
}

/**
 * This project's built worker (from `build`, build/ by default) as Miniflare options for
 * [startWorkers], named `name`, with `bindings` (and the test admin token when they turn the
 * test routes on); `objects` says where its CLAIM_AUTHORITY objects live (`{ scriptName }` for
 * another worker's), its own by default.
 */
export function builtWorker(name, bindings, { build = path.join(ROOT, 'build'), objects = {} } = {}) {
  return {
    name,
    compatibilityDate: COMPATIBILITY_DATE,
    modulesRoot: build,
    modules: [
      { type: 'ESModule', path: path.join(build, 'index.js') },
      { type: 'CompiledWasm', path: path.join(build, 'index_bg.wasm') },
    ],
    bindings: withTestToken(bindings),
    durableObjects: {
      CLAIM_AUTHORITY: { className: 'ClaimAuthority', useSQLite: true, ...objects },
      FAILURE_INDEX: { className: 'FailureIndex', useSQLite: true, ...objects },
      ORIGIN_GATE: { className: 'OriginGate', useSQLite: true, ...objects },
    },
  };
}

/**
 * Several Workers in one runtime, straight to workerd through Miniflare: `workers` in Miniflare's
 * options, the first one serving requests (its ADMIN_TOKEN is the runtime's `adminToken`), the
 * last one's Durable Objects persisted in a temporary folder (`persistDir`). With `logs`, the
 * runtime's log lines are appended to it instead of printed; `inspectorPort` opens the runtime's
 * DevTools inspector there.
 */
export async function startWorkers(workers, { logs, inspectorPort } = {}) {
  const { Miniflare, convertV4MiniflareOptions } = await import('miniflare');
  const persist = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-workers-'));
  const last = workers.length - 1;
  const mf = new Miniflare(convertV4MiniflareOptions({
    host: '127.0.0.1',
    port: 0,
    ...(logs ? { handleStructuredLogs: (log) => logs.push(log.message) } : {}),
    ...(inspectorPort ? { inspectorPort } : {}),
    workers: workers.map((worker, i) => (i === last ? { ...worker, resourcePersistencePath: persist } : worker)),
  }));
  let url;
  try {
    url = (await mf.ready).toString().replace(/\/$/, '');
  } catch (error) {
    // A runtime that failed to start still holds its process: end it, or the test file hangs.
    await mf.dispose().catch(() => {});
    rmSync(persist, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    adminToken: workers[0].bindings?.ADMIN_TOKEN,
    persistDir: persist,
    async dispose() {
      await mf.dispose();
      rmSync(persist, { recursive: true, force: true });
    },
  };
}

/**
 * A real HTTP origin on a free loopback port. `behave(request, n)` decides each answer:
 * `{ status, body, headers, delayMs, hang, stallAfter }` (`stallAfter`: send the head and this
 * much of the body, then stall); `n` counts requests from 1. Every request and
 * answer is recorded in `origin.requests`.
 */
export async function startOrigin(behave = () => ({ status: 200, body: 'ok' })) {
  const requests = [];
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', async () => {
      const record = {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      requests.push(record);
      const answer = { status: 200, body: 'ok', headers: {}, ...(await behave(record, requests.length)) };
      record.answer = answer;
      if (answer.hang) return; // never answers; the socket is destroyed on close()
      if (answer.delayMs) await sleep(answer.delayMs);
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      record.answeredAt = Date.now();
      if (answer.stallAfter !== undefined) {
        res.write(answer.stallAfter); // the head and part of the body, then nothing more
        return;
      }
      res.end(answer.body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * POSTs `chunks` with chunked transfer encoding (no Content-Length) and resolves with the
 * answer's status as soon as it arrives. A server that answers before reading the whole body
 * (as for a body over the cap) may close the connection under the rest: that is not an error.
 */
export function postChunked(url, chunks, headers = {}) {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST',
      headers: { ...headers, 'transfer-encoding': 'chunked' },
    }, (res) => {
      answered = true;
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', (error) => { if (!answered) reject(error); });
    (async () => {
      for (const chunk of chunks) {
        if (answered || req.destroyed) return;
        req.write(chunk);
        await sleep(5);
      }
      req.end();
    })();
  });
}

/** The SQLite files of every Durable Object (and the alarm table) under a persist folder, sorted. */
export function objectFiles(dir) {
  if (!existsSync(dir)) return [];
  const files = [];
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const full = path.join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.sqlite') && full.split(path.sep).includes('do')) files.push(full);
    }
  };
  walk(dir);
  return files.sort();
}

/**
 * Opens one object's SQLite database the way a well-behaved second client must: with a busy
 * timeout. The runtime keeps these databases in WAL mode and holds a lock on one now and then
 * (opening it, checkpointing, closing it); a reader without a timeout fails at once with
 * "database is locked" instead of waiting the few milliseconds the runtime needs.
 */
export function openObjectDatabase(file, { readOnly = true } = {}) {
  const db = new DatabaseSync(file, { readOnly });
  db.exec('PRAGMA busy_timeout = 10000');
  return db;
}

/**
 * A reader of the claim records the objects under a runtime's persistence folder hold, for
 * watching a running runtime without asking it anything: `read(key)` returns the record of
 * `key` as stored now (`{ key, attempts, lease: { claimed_at, until, … }, … }`), or undefined
 * when it is not (yet) readable. Which object's database holds a key is learned by reading each
 * database once and remembered. Reads are read-only, with a short busy time-out (the runtime
 * holds a lock now and then): a read that meets one gives up and returns undefined.
 */
export function claimReader(dir) {
  const fileOf = new Map(); // key -> database file
  const scanned = new Set(); // files whose key is known
  let folders = []; // the folders of the objects' databases, found once
  const databases = () => {
    if (folders.length === 0) folders = [...new Set(objectFiles(dir).map((f) => path.dirname(f)))];
    return folders.flatMap((folder) => readdirSync(folder)
      .filter((name) => /^[0-9a-f]{64}\.sqlite$/.test(name))
      .map((name) => path.join(folder, name)));
  };
  const open = (file) => {
    const db = new DatabaseSync(file, { readOnly: true });
    db.exec('PRAGMA busy_timeout = 50');
    return db;
  };
  const valueOf = (file, key) => {
    const db = open(file);
    try {
      if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = '_cf_KV'").get()) return undefined;
      // A record's key; a stored body's key starts with U+0001.
      return key === undefined ? db.prepare("SELECT key, value FROM _cf_KV WHERE key NOT LIKE char(1) || '%' LIMIT 1").get()
        : db.prepare('SELECT key, value FROM _cf_KV WHERE key = ?').get(key);
    } finally {
      db.close();
    }
  };
  const parse = (row) => {
    const stored = JSON.parse(v8.deserialize(row.value));
    return stored.record;
  };
  return {
    read(key) {
      try {
        const known = fileOf.get(key);
        if (known) {
          const row = valueOf(known, key);
          return row ? parse(row) : undefined;
        }
        for (const file of databases()) {
          if (scanned.has(file)) continue;
          const row = valueOf(file);
          if (!row) continue;
          scanned.add(file);
          fileOf.set(row.key, file);
          if (row.key === key) return parse(row);
        }
      } catch {
        // locked, or a database being made: not readable now
      }
      return undefined;
    },
  };
}

/**
 * Everything the Durable Objects under a runtime's persistence folder store, read logically: for
 * every SQLite database in its `do` folders (each object's, and the runtime's alarm table), every
 * row of every table,
 * values as hex, in order. Comparing two dumps tells whether anything was written, whatever
 * the files' sizes do.
 */
export function storageDump(dir) {
  return objectFiles(dir).sort()
    .flatMap((file) => databaseRows(file).map((row) => `${path.relative(dir, file)} ${row}`))
    .join('\n');
}

/** Every row of every table of one object's database, as `{table} {values as hex}`, in order. */
export function databaseRows(file) {
  const show = (value) => (value instanceof Uint8Array ? Buffer.from(value).toString('hex') : String(value));
  const dump = [];
  const db = openObjectDatabase(file);
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    for (const { name } of tables) {
      const rows = db.prepare(`SELECT * FROM "${name}" ORDER BY 1`);
      rows.setReadBigInts(true);
      for (const row of rows.all()) dump.push(`${name} ${Object.values(row).map(show).join(' ')}`);
    }
  } finally {
    db.close();
  }
  return dump;
}

/**
 * The database of the object named `name` (the key the worker addresses it by) under a
 * persistence folder, or undefined when no such object was ever called: the local runtime
 * writes each named object's name in a table of its own when the object starts.
 */
export function objectNamed(dir, name) {
  for (const file of objectFiles(dir)) {
    const db = openObjectDatabase(file);
    try {
      const named = db.prepare("SELECT 1 FROM sqlite_master WHERE name = '__miniflare_do_name'").get();
      if (named && db.prepare('SELECT name FROM __miniflare_do_name WHERE id = 1').get()?.name === name) return file;
    } finally {
      db.close();
    }
  }
  return undefined;
}

/** fetch that returns { status, headers, text, json }. */
export async function call(url, init = {}) {
  const response = await fetch(url, init);
  const text = await response.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: response.status, headers: response.headers, text, json };
}
