// `npm run dev` exactly as a user runs it: sets up, builds, starts the demo origin and
// `wrangler dev` with the repository's wrangler.toml; then `npm run send-events` shows
// de-duplication against it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { devVar } from '../scripts/dev-vars.mjs';
import { ROOT, claimReader, freePort, sleep, until } from './harness.mjs';

test('npm run dev serves /healthz and de-duplicates sample events', { timeout: 300_000 }, async (t) => {
  const port = await freePort();
  const originPort = await freePort();
  const persist = mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'wd-dev-'));
  const hadDevVars = existsSync(path.join(ROOT, '.dev.vars'));
  // DEMO_ORIGIN_PORT alone moves the demo origin and the events .dev.vars sends to it (as
  // made from .dev.vars.example); a developer's own .dev.vars sending elsewhere is overridden.
  const ownOrigin = devVar('ORIGIN_URL');
  const mine = ownOrigin !== undefined && !ownOrigin.startsWith('http://127.0.0.1:8788/');
  if (mine) t.diagnostic('.dev.vars sends elsewhere: ORIGIN_URL given explicitly, the port move not exercised');
  const child = spawn('npm', ['run', 'dev', '--', '--persist-to', persist,
    ...(mine ? ['--var', `ORIGIN_URL:http://127.0.0.1:${originPort}/stripe`] : []),
    '--var', 'STRIPE_WEBHOOK_SECRET:whsec_dev_test', '--inspector-port', String(await freePort())], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: String(port), DEMO_ORIGIN_PORT: String(originPort), STRIPE_WEBHOOK_SECRET: 'whsec_dev_test' },
  });
  let output = '';
  child.stdout.on('data', (c) => { output += c; });
  child.stderr.on('data', (c) => { output += c; });
  t.after(async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    await sleep(500);
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    rmSync(persist, { recursive: true, force: true });
    if (!hadDevVars) rmSync(path.join(ROOT, '.dev.vars'), { force: true });
  });

  const deadline = Date.now() + 240_000;
  let health;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      health = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) });
      break;
    } catch {
      await sleep(500);
    }
  }
  assert.ok(health, `npm run dev did not serve /healthz:\n${output}`);
  assert.equal(health.status, 200, output);
  assert.equal((await health.json()).name, 'webhook-dedup');

  // PORT tells send-events where the worker listens, as it tells npm run dev.
  const sent = spawnSync('node', ['scripts/send-events.mjs',
    '--events', '2', '--duplicates', '3', '--secret', 'whsec_dev_test'],
  { cwd: ROOT, encoding: 'utf8', env: { ...process.env, PORT: String(port) } });
  assert.equal(sent.status, 0, sent.stdout + sent.stderr);
  const answers = sent.stdout.split('\n').filter((l) => l.startsWith('  '));
  assert.equal(answers.length, 8);
  assert.equal(answers.filter((a) => a.includes('"processed"')).length, 2, sent.stdout);
  const processed = () => output.split('\n').filter((l) => l.includes('[demo origin] processed'));
  await until(() => processed().length >= 2, 5_000, 'the demo origin to print both events').catch(() => {});
  assert.equal(processed().length, 2, `each event reached the demo origin:\n${output}`);
  assert.ok(processed().every((l) => l.includes(', attempt 1')), processed().join('\n'));
  // Once: each event's record, read from the objects' storage, is done after one claim (each
  // forward follows a claim, and a done record is never forwarded again).
  const ids = sent.stdout.split('\n').filter((l) => l.startsWith('evt_'));
  assert.equal(ids.length, 2, sent.stdout);
  const records = claimReader(persist);
  for (const id of ids) {
    const stored = records.read(id);
    assert.equal(stored?.attempts, 1, `${id}: ${JSON.stringify(stored)}`);
    assert.ok(stored.stage?.claim?.done, `${id} done: ${JSON.stringify(stored.stage)}`);
  }
});
