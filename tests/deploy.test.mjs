// The README's deploy path, run as written up to where a Cloudflare account is needed: on the
// machine's own Node.js (which may be older than wrangler needs) and with no browser, the
// project's own scripts set up, build and run the pinned wrangler. `npm run deploy -- --dry-run`
// must print the bindings the configuration reference lists and an upload within the gzip
// budget of package.json (`config.uploadGzipBudgetKiB`, the one place it is written).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from './harness.mjs';

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

/** PATH as the machine has it: without the project's own tools that scripts/env.sh puts first. */
const machinePath = process.env.PATH.split(path.delimiter).filter((dir) => !dir.startsWith(ROOT)).join(path.delimiter);

/** No browser anywhere: setup must not look for one on the deploy path. */
const NO_BROWSER = '/nonexistent/chromium';

/** The environment of a user's shell: the machine's PATH, no browser, none of env.sh's settings. */
function userEnv() {
  const env = { ...process.env, PATH: machinePath, CHROMIUM_PATH: NO_BROWSER };
  for (const name of ['ROOT', 'TOOLS', 'WRANGLER_LOG_PATH', 'WRANGLER_SEND_METRICS', 'CLOUDFLARE_CF_FETCH_ENABLED', 'TMPDIR']) delete env[name];
  return env;
}

function run(command, args, env = userEnv()) {
  const result = spawnSync(command, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 900_000 });
  return { status: result.status, out: `${result.stdout}\n${result.stderr}`, stdout: result.stdout };
}

/** The bindings `wrangler deploy --dry-run` prints, as `NAME (detail): kind`. */
export function printedBindings(output) {
  const start = output.indexOf('Your Worker has access to the following bindings:');
  assert.ok(start >= 0, `no bindings in the dry run's output:\n${output}`);
  const found = [];
  for (const line of output.slice(start).split('\n').slice(1)) {
    const m = line.match(/^\s*env\.([A-Z0-9_]+)(?: \(([^)]*)\))?\s{2,}(.+?)\s*$/);
    if (m) found.push({ name: m[1], detail: m[2] ?? '', kind: m[3] });
    else if (found.length && line.trim() === '') break;
  }
  return found;
}

/** The bindings of docs/configuration.md's table, each with whether it is optional (commented out). */
function documentedBindings() {
  const text = readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
  const table = text.split('## Bindings')[1].split('\n## ')[0];
  return table.split('\n').filter((line) => /^\| `[A-Z_]+` \|/.test(line)).map((line) => ({
    name: line.match(/^\| `([A-Z_]+)`/)[1],
    optional: /commented out/.test(line),
  }));
}

test('the machine\'s own Node.js, whatever its version, runs the pinned wrangler through npm run wrangler', () => {
  const machineNode = run('node', ['--version']).stdout.trim();
  const { status, out } = run('npm', ['run', '--silent', 'wrangler', '--', '--version']);
  assert.equal(status, 0, `npm run wrangler -- --version on Node.js ${machineNode}:\n${out}`);
  assert.match(out, new RegExp(pkg.devDependencies.wrangler.replace(/\./g, '\\.')), out);
});

test('npm run deploy -- --dry-run works without a browser on the machine\'s Node.js: the documented bindings, the upload within its gzip budget', () => {
  const outdir = mkdtempSync(path.join(os.tmpdir(), 'deploy-dry-run-'));
  try {
    const { status, out } = run('npm', ['run', 'deploy', '--', '--dry-run', '--outdir', outdir]);
    assert.equal(status, 0, out);
    const printed = printedBindings(out);
    const objects = printed.filter((b) => b.kind === 'Durable Object').map((b) => `${b.name} (${b.detail})`);
    assert.deepEqual(objects.sort(), ['CLAIM_AUTHORITY (ClaimAuthority)', 'FAILURE_INDEX (FailureIndex)', 'ORIGIN_GATE (OriginGate)']);
    // Every binding the dry run prints (vars aside) is in the configuration reference, and
    // every binding the reference lists as always there is printed.
    const documented = documentedBindings();
    const names = printed.filter((b) => !/Environment Variable/i.test(b.kind)).map((b) => b.name);
    for (const name of names) assert.ok(documented.some((d) => d.name === name), `docs/configuration.md lists no binding ${name}`);
    for (const d of documented.filter((b) => !b.optional)) assert.ok(names.includes(d.name), `the dry run shows no ${d.name}, which docs/configuration.md lists`);
    const upload = out.match(/Total Upload: ([0-9.]+) KiB \/ gzip: ([0-9.]+) KiB/);
    assert.ok(upload, `no upload size in the dry run's output:\n${out}`);
    const budget = pkg.config.uploadGzipBudgetKiB;
    assert.ok(Number(upload[2]) <= budget, `the upload is ${upload[2]} KiB gzip, over its budget of ${budget} KiB (package.json config.uploadGzipBudgetKiB)`);
    process.stdout.write(`# upload ${upload[1]} KiB, gzip ${upload[2]} KiB (budget ${budget} KiB)\n`);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

test('setup looks for a browser only for the tests: pointed at none, setup --tests refuses with a clear message', () => {
  const plain = run('bash', ['scripts/setup.sh']);
  assert.equal(plain.status, 0, plain.out);
  const forTests = run('bash', ['scripts/setup.sh', '--tests']);
  assert.equal(forTests.status, 1, forTests.out);
  assert.match(forTests.out, /CHROMIUM_PATH is \/nonexistent\/chromium, which is not an executable file/);
});
