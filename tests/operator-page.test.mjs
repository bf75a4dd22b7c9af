// The operator page (GET /admin/) in a real headless Chromium, driven by playwright-core,
// against the real worker in queue mode under `wrangler dev` and a real HTTP origin that fails
// (500) until the test lets it succeed. Two GitHub deliveries, signed by
// @octokit/webhooks-methods, are dead-lettered; the page finds one by its filters, redelivers
// it, and watches its record become `done`. The Origins section pauses the origin (a GitHub
// delivery made meanwhile is held, and reaches the origin once after the resume). The
// Reconciliation section shows a run against a local fake of Stripe's event log, its error,
// then its counts. Along the way: a wrong token is refused in words,
// the token lives in sessionStorage only, the page fits a 375 px phone, and no console error
// or Content-Security-Policy violation occurs (the policy is enforced: bypassCSP stays off).
//
// Screenshots of each screen go to artifacts/operator-page/ (git-ignored); their names are in
// the test output. docs/images/operator-page.png is a copy of 02-dead-letters.png.
// The browser: CHROMIUM_PATH, else `chromium` on PATH (scripts/setup.sh installs Debian's).
import assert from 'node:assert/strict';
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { chromium } from 'playwright-core';

import { ROOT, call, sleep, startOrigin, startWorker, until } from './harness.mjs';
import { deliverAs, deliveryId } from './provider-helpers.mjs';
import { startStripeApi } from './fakes/stripe-api.mjs';

const TOKEN = 'operator-page-token-0123456789abcdef';
const STRIPE_KEY = 'rk_test_operator_page_0123456789';
const SECRET = 'operator-page-github-secret';
const ARTIFACTS = path.join(ROOT, 'artifacts', 'operator-page');
// A zone with a half-hour offset, so that a time filter read as UTC instead of local time
// would be off and seen.
const TIME_ZONE = 'Asia/Kolkata';
const ZONE_OFFSET_MS = 330 * 60_000;

/** The Chromium to drive: CHROMIUM_PATH, else `chromium` (or `chromium-browser`) on PATH. */
function chromiumPath() {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const file = path.join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  throw new Error('no Chromium found: run scripts/setup.sh (Debian: apt-get install chromium), or set CHROMIUM_PATH');
}

/** `ms` as a datetime-local input's value in TIME_ZONE, to the minute. */
const localInput = (ms) => new Date(ms + ZONE_OFFSET_MS).toISOString().slice(0, 16);
const minute = (ms) => Math.floor(ms / 60_000) * 60_000;

describe('the operator page in a real browser', () => {
  let healthy = false;
  let origin;
  let stripeApi;
  let worker;
  let browser;
  let page;
  const consoleErrors = [];
  const requests = [];
  const issues = deliveryId('github'); // the event the page redelivers
  const push = deliveryId('github'); // a dead event of another type, which the filter leaves out
  const started = Date.now();

  const record = async (id) => (await call(`${worker.url}/admin/deliveries/github/${id}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  })).json?.record;

  /** Saves a screenshot of the page as it is now, and names it in the test's output. */
  async function shot(t, name, options = {}) {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true, ...options });
    t.diagnostic(`screenshot: ${path.relative(ROOT, file)}`);
  }

  /** Saves a screenshot of the element `selector` alone, and names it in the test's output. */
  async function shotOf(t, name, selector) {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await page.locator(selector).screenshot({ path: file });
    t.diagnostic(`screenshot: ${path.relative(ROOT, file)}`);
  }

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    origin = await startOrigin(() => (healthy ? { status: 200, body: 'ok' } : { status: 500, body: 'down' }));
    stripeApi = await startStripeApi({ key: STRIPE_KEY });
    worker = await startWorker({
      vars: {
        STRIPE_API_KEY: STRIPE_KEY,
        STRIPE_API_BASE_URL: stripeApi.url,
        STRIPE_WEBHOOK_SECRET: 'whsec_operator_page', // the worker needs it; Stripe events come only by reconciliation
        GITHUB_WEBHOOK_SECRET: SECRET,
        ORIGIN_URL: `${origin.url}/github`,
        ADMIN_TOKEN: TOKEN,
        GITHUB_DELIVERY_MODE: 'queue',
        RETRY_BASE_SECONDS: '1',
        RETRY_MAX_DELAY_SECONDS: '1',
        RETRY_MAX_ATTEMPTS: '2',
        LEASE_SECONDS: '8',
        FORWARD_TIMEOUT_MS: '1000',
        LATE_ANSWER_WAIT_SECONDS: '0',
        QUEUE_FORWARD_TIMEOUT_MS: '3000',
        // An attempt held by an operator's pause comes back after this long (30 s by default),
        // so the held delivery goes out within seconds of the resume. The 4 failures before
        // stay below the breaker's 5 (ORIGIN_BREAKER_FAILURES), so it never opens here.
        ORIGIN_PROBE_SECONDS: '2',
      },
    });
    for (const [id, event] of [[issues, 'issues'], [push, 'push']]) {
      const body = JSON.stringify({ action: 'opened', delivery: id });
      const answer = await deliverAs(worker, 'github', { id, body, secret: SECRET, event });
      assert.equal(answer.json?.status, 'queued', answer.text);
    }
    for (const id of [issues, push]) {
      await until(async () => (await record(id))?.state === 'dead', 30_000, `${id} dead-lettered`);
    }
    // The failure index learns of a dead letter from the event's object, a moment later.
    await until(async () => {
      const list = await call(`${worker.url}/admin/dead-letters?provider=github`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const ids = (list.json?.items ?? []).map((item) => item.id);
      return ids.includes(issues) && ids.includes(push);
    }, 30_000, 'both dead letters in the list');

    browser = await chromium.launch({ executablePath: chromiumPath() });
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, timezoneId: TIME_ZONE, locale: 'en-GB' });
    // Every policy violation the page meets is recorded where the test can read it.
    await context.addInitScript(() => {
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => {
        window.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
      });
    });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`));
    page.on('request', (request) => requests.push({ url: request.url(), authorization: request.headers().authorization }));
    const answer = await page.goto(`${worker.url}/admin/`);
    assert.equal(answer.status(), 200);
  });

  after(async () => {
    await browser?.close();
    await worker?.dispose();
    await origin?.close();
    await stripeApi?.close();
  });

  test('a wrong token is refused in words, not JSON', async (t) => {
    await page.fill('#token-input', 'not-the-token-0123456789');
    await page.click('#token-use');
    await page.locator('#dead-message', { hasText: 'The admin token was not accepted.' }).waitFor();
    await page.locator('#summary-message', { hasText: 'The admin token was not accepted.' }).waitFor();
    await page.locator('#origins-message', { hasText: 'The admin token was not accepted.' }).waitFor();
    await page.locator('#token-status', { hasText: 'This token was not accepted.' }).waitFor();
    const text = await page.locator('body').innerText();
    assert.doesNotMatch(text, /[{}]|"error"|unauthorized/, 'no raw answer on the page');
    await shot(t, '01-wrong-token');
  });

  test('the right token: the summary, and the dead letter found by sender, type and time', async (t) => {
    await page.fill('#token-input', TOKEN);
    await page.click('#token-use');
    await page.locator('#token-status', { hasText: 'A token is set for this tab.' }).waitFor();
    const stored = await page.evaluate(() => ({
      session: sessionStorage.getItem('webhook-dedup.admin-token'),
      local: localStorage.length,
      cookie: document.cookie,
      url: location.href,
    }));
    assert.equal(stored.session, TOKEN, 'the token is kept in sessionStorage');
    assert.equal(stored.local, 0, 'nothing in localStorage');
    assert.equal(stored.cookie, '', 'no cookie');
    assert.equal(await page.inputValue('#token-input'), '', 'the field is cleared once used');

    // The summary counts both dead letters.
    const github = page.locator('#summary li[data-provider=github]');
    await github.waitFor();
    assert.equal(await github.innerText(), 'GitHub: 2 dead');
    assert.match(await page.locator('#summary-total').innerText(), /^2 events .*: 2 dead$/);

    // Filter: GitHub, type issues, within the last and next ten minutes of local time.
    const since = minute(started - 10 * 60_000);
    const untilMs = minute(Date.now() + 10 * 60_000);
    await page.selectOption('#dead-provider', 'github');
    await page.fill('#dead-type', 'issues');
    await page.fill('#dead-since', localInput(since));
    await page.fill('#dead-until', localInput(untilMs));
    await page.selectOption('#dead-state', 'dead');
    const listed = page.waitForResponse((r) => r.url().includes('/admin/dead-letters?') && r.request().method() === 'GET');
    await page.click('#dead-show');
    const query = new URL((await listed).url()).searchParams;
    assert.equal(query.get('provider'), 'github');
    assert.equal(query.get('type'), 'issues');
    assert.equal(query.get('state'), 'dead');
    assert.equal(query.get('since'), new Date(since).toISOString(), 'local time sent as RFC 3339 UTC');
    assert.equal(query.get('until'), new Date(untilMs).toISOString());
    // The click set "Loading…"; the page shows only the answer to its latest request.
    await page.waitForFunction(() => document.getElementById('dead-message').textContent !== 'Loading…');
    const items = await page.locator('#dead-list li.item').allInnerTexts();
    assert.equal(items.length, 1, `only the issues event matches: ${items.join(' | ')}`);
    assert.ok(items[0].includes(issues), 'the issues event');
    assert.match(items[0], /Type\s*issues/);
    assert.match(items[0], /origin answered 500/, 'its last error');
    assert.ok(!items.join(' ').includes(push), 'the push event is filtered out');
    await shot(t, '02-dead-letters');
  });

  test('redeliver from the list after the origin recovers; the lookup watches it become done', async (t) => {
    const before = origin.requests.length;
    healthy = true;
    const row = page.locator('#dead-list li.item', { hasText: issues });
    await row.getByRole('button', { name: 'Redeliver' }).click();
    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor({ state: 'visible' });
    assert.match(await dialog.innerText(), /Redeliver this event\?/);
    await shot(t, '03-confirm-redeliver', { fullPage: false });
    await dialog.getByRole('button', { name: 'Redeliver' }).click();
    await page.locator('#record-state', { hasText: /^done$/ }).waitFor({ timeout: 30_000 });
    assert.equal(await page.innerText('#lookup-message'), 'Delivered.');
    assert.equal(await row.locator('.badge').innerText(), 'redelivered');
    assert.equal((await record(issues)).state, 'done', 'the worker agrees');
    const delivered = origin.requests.slice(before).filter((r) => r.headers['x-github-delivery'] === issues);
    assert.equal(delivered.length, 1, 'one more attempt reached the origin');
    assert.equal(delivered[0].answer.status, 200);
    assert.equal(delivered[0].headers['x-webhook-dedup-attempt'], '3', 'after the two that failed');
    const timeline = await page.locator('#record ol.timeline').innerText();
    for (const step of ['First seen', 'Accepted into the queue', 'Attempt 3 started', 'Delivered']) {
      assert.ok(timeline.includes(step), `the timeline shows "${step}": ${timeline}`);
    }
    assert.equal(await page.locator('#record-attempts').innerText(), '3');
    assert.equal((await record(push)).state, 'dead', 'the other event was left alone');
    // The dead-letter record learns of the delivery from the event's object a moment later.
    const github = page.locator('#summary li[data-provider=github]');
    await until(async () => {
      if ((await github.innerText()) === 'GitHub: 1 dead 1 recovered') return true;
      await page.click('#summary-refresh');
      return false;
    }, 20_000, 'the summary to count the recovery');
    await shot(t, '04-lookup-done');
  });

  test('redeliver all matching: the rest of the filter\'s dead letters, with the counts', async (t) => {
    await page.fill('#dead-type', 'push');
    await page.click('#dead-redeliver-all');
    const dialog = page.locator('dialog#confirm');
    await dialog.waitFor({ state: 'visible' });
    assert.match(await dialog.innerText(), /sender GitHub, type push/);
    const calls = [];
    const onRequest = (request) => {
      if (request.url().includes('/admin/dead-letters/redeliver')) calls.push(new URL(request.url()).searchParams);
    };
    page.on('request', onRequest);
    await dialog.getByRole('button', { name: 'Redeliver all' }).click();
    await page.locator('#bulk-result', { hasText: 'Redelivered 1 event; 0 skipped.' }).waitFor({ timeout: 15_000 });
    page.off('request', onRequest);
    assert.equal(calls.length, 1, 'one call: no next_cursor');
    assert.equal(calls[0].get('type'), 'push');
    assert.equal(calls[0].get('state'), null, 'the worker redelivers dead letters only; no state is sent');
    await until(async () => (await record(push))?.state === 'done', 20_000, 'the push event delivered');
    await shot(t, '05-redeliver-all');
  });

  test('origins: Pause holds a delivery (cancel changes nothing); Resume delivers it once', async (t) => {
    const url = `${origin.url}/github`;
    const listed = async () => (await call(`${worker.url}/admin/origins`, { headers: { authorization: `Bearer ${TOKEN}` } })).json?.items;
    const row = page.locator(`#origins li[data-origin="${url}"]`);
    const state = row.locator('dd.origin-state');
    const dialog = page.locator('dialog#confirm');
    await page.click('#origins-refresh');
    await state.filter({ hasText: /^Delivering$/ }).waitFor();
    assert.equal(await page.locator('#origins li').count(), 1, 'one origin: both senders deliver to ORIGIN_URL');
    assert.equal(await row.locator('.badge').innerText(), 'delivering');
    // The earlier tests' failures may still count in a row: the page shows what the API says.
    const failures = String((await listed())[0].failures_in_a_row);
    for (const [cell, value] of [['in-flight', '0'], ['held', '0'], ['failures', failures]]) {
      assert.equal(await row.locator(`dd.origin-${cell}`).innerText(), value, cell);
    }
    assert.equal(await row.getByRole('button', { name: 'Resume' }).count(), 0, 'no Resume while delivering');

    // Pause, then Cancel: no call is made and nothing changes.
    const changes = [];
    const onRequest = (request) => {
      if (request.url().includes('/admin/origins/')) changes.push(request);
    };
    page.on('request', onRequest);
    await row.getByRole('button', { name: 'Pause' }).click();
    await dialog.waitFor({ state: 'visible' });
    assert.equal(await page.innerText('#confirm-text'),
      `Hold every queued delivery to ${url} until you resume. Events are kept; nothing is lost.`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(changes.length, 0, 'cancelled: no call');
    assert.equal((await listed())[0].state, 'closed');
    assert.equal(await state.innerText(), 'Delivering');

    // Pause, confirmed.
    await row.getByRole('button', { name: 'Pause' }).click();
    await dialog.getByRole('button', { name: 'Pause' }).click();
    await state.filter({ hasText: /^Paused by an operator until resumed$/ }).waitFor();
    await page.locator('#origins-message', { hasText: `Paused ${url}` }).waitFor();
    assert.equal(changes.length, 1);
    assert.equal(changes[0].url(), `${worker.url}/admin/origins/pause`);
    assert.equal(changes[0].headers()['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(changes[0].postData()), { origin: url });
    const paused = (await listed())[0];
    assert.deepEqual([paused.state, paused.paused_by], ['paused', 'operator'], 'the worker agrees');
    assert.equal(await row.getByRole('button', { name: 'Pause' }).count(), 0, 'no Pause while paused by an operator');

    // A delivery made now is held: nothing reaches the origin.
    const held = deliveryId('github');
    const seen = () => origin.requests.filter((r) => r.headers['x-github-delivery'] === held);
    const before = origin.requests.length;
    const body = JSON.stringify({ action: 'opened', delivery: held });
    const answer = await deliverAs(worker, 'github', { id: held, body, secret: SECRET, event: 'issues' });
    assert.equal(answer.json?.status, 'queued', answer.text);
    await until(async () => (await listed())[0].held === 1, 15_000, 'the delivery held');
    await page.click('#origins-refresh');
    await row.locator('dd.origin-held', { hasText: /^1$/ }).waitFor();
    await sleep(4_000); // two more of its comebacks (every ORIGIN_PROBE_SECONDS), each held again
    assert.equal(origin.requests.length, before, 'no request reached the origin during the pause');
    assert.equal((await record(held)).state, 'queued');
    await shotOf(t, '07-origins-paused', '#origins-section');

    // Resume, confirmed: the held delivery reaches the origin once.
    await row.getByRole('button', { name: 'Resume' }).click();
    await dialog.waitFor({ state: 'visible' });
    assert.equal(await page.innerText('#confirm-text'), `Deliver the held events to ${url} again, at the origin's caps.`);
    await dialog.getByRole('button', { name: 'Resume' }).click();
    await state.filter({ hasText: /^Delivering$/ }).waitFor();
    await page.locator('#origins-message', { hasText: `Resumed ${url}` }).waitFor();
    page.off('request', onRequest);
    assert.equal(changes.length, 2);
    assert.equal(changes[1].url(), `${worker.url}/admin/origins/resume`);
    assert.equal((await listed())[0].state, 'closed', 'the worker agrees');
    await until(() => seen().length > 0, 20_000, 'the held delivery at the origin');
    await until(async () => (await record(held))?.state === 'done', 20_000, 'the held delivery done');
    await sleep(2_000);
    assert.equal(seen().length, 1, 'delivered exactly once');
    assert.equal(seen()[0].answer.status, 200);
    assert.equal(seen()[0].headers['x-webhook-dedup-attempt'], '1', 'the held attempts were not counted');
    assert.equal(origin.requests.length, before + 1, 'nothing else reached the origin');
    await page.click('#origins-refresh');
    await row.locator('dd.origin-held', { hasText: /^0$/ }).waitFor();
    await shotOf(t, '08-origins-delivering', '#origins-section');
  });

  test('reconciliation: each sender\'s last run, its counts and its errors', async (t) => {
    const row = page.locator('#reconciliations li[data-provider="stripe"]');
    await page.click('#reconcile-refresh');
    await row.locator('dd.reconcile-last', { hasText: 'never' }).waitFor();
    assert.equal(await page.locator('#reconciliations li').count(), 1, 'only Stripe has its API key set');
    const reconcile = () => call(`${worker.url}/admin/reconcile`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'stripe' }),
    });
    const event = stripeApi.add({ created: Math.floor(Date.now() / 1000) - 60 });
    stripeApi.failNext(1, { status: 500 });
    const failed = await reconcile();
    assert.equal(failed.status, 200, failed.text);
    await page.click('#reconcile-refresh');
    await row.locator('.badge', { hasText: '1 error' }).waitFor();
    assert.match(await row.locator('dd.reconcile-errors').innerText(), /sender_failed: Stripe answered 500/);
    const ran = await reconcile();
    assert.equal(ran.json.delivered, 1, ran.text);
    await page.click('#reconcile-refresh');
    await row.locator('.badge', { hasText: 'ok' }).waitFor();
    assert.match(await row.locator('dd.reconcile-counts').innerText(), /^1 listed, 0 already done, 0 in flight, 0 dead, 1 delivered/);
    assert.match(await row.locator('dd.reconcile-last').innerText(), /\(called\)$/);
    assert.equal(await row.locator('dd.reconcile-errors').innerText(), 'none');
    assert.ok(origin.requests.some((r) => r.headers['x-webhook-dedup-event-id'] === event.id), 'the event reached the origin');
    await shotOf(t, '09-reconciliation', '#reconcile-section');
  });

  test('a refused lookup is explained in words', async () => {
    await page.fill('#lookup-id', 'no such id');
    await page.click('#lookup-form button[type=submit]');
    await page.locator('#lookup-message', { hasText: 'That is not a delivery id' }).waitFor();
    await page.fill('#lookup-id', deliveryId('github'));
    await page.click('#lookup-form button[type=submit]');
    await page.locator('#lookup-message', { hasText: 'No record for this event' }).waitFor();
  });

  test('at 375 px wide the page does not scroll sideways', async (t) => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.reload(); // the token stays: sessionStorage lives as long as the tab
    await page.locator('#dead-message', { hasText: 'Nothing matches these filters.' }).waitFor(); // no dead one left
    await page.selectOption('#dead-provider', '');
    await page.fill('#dead-type', '');
    await page.selectOption('#dead-state', '');
    await page.click('#dead-show');
    await page.locator('#dead-list li.item', { hasText: push }).waitFor();
    await page.locator('#origins li.item').waitFor();
    await page.selectOption('#lookup-provider', 'github');
    await page.fill('#lookup-id', issues);
    await page.click('#lookup-form button[type=submit]');
    await page.locator('#record-state', { hasText: 'done' }).waitFor();
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.equal(await overflow(), 0, 'no horizontal scroll');
    await shot(t, '06-phone');
    // The measure sees overflow when there is some.
    await page.evaluate(() => {
      const wide = document.createElement('div');
      wide.id = 'too-wide';
      wide.style.width = '600px';
      wide.style.height = '1px'; // a box without height adds no overflow
      document.body.append(wide);
    });
    assert.ok(await overflow() > 0, 'a 600 px element is noticed');
    await page.evaluate(() => document.getElementById('too-wide').remove());
  });

  test('forget token: it leaves the tab and what it read leaves the page', async () => {
    await page.click('#token-forget');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.equal(await page.locator('#dead-list li').count(), 0);
    assert.equal(await page.locator('#origins li').count(), 0);
    assert.equal(await page.locator('#record').innerText(), '');
    await page.locator('#token-status', { hasText: 'No token is set.' }).waitFor();
  });

  test('no console error, no policy violation, and the token never in a URL', async () => {
    const violations = await page.evaluate(() => window.cspViolations);
    assert.deepEqual(violations, [], 'no Content-Security-Policy violation');
    // The browser logs each refused call (the wrong token's 401s, the lookups' 400 and 404)
    // as a failed load; anything else is an error of the page.
    const unexpected = consoleErrors.filter((text) => !/^Failed to load resource: the server responded with a status of (400|401|404) /.test(text));
    assert.deepEqual(unexpected, [], 'no console error or warning');
    assert.ok(requests.length > 5);
    for (const request of requests) {
      assert.ok(!request.url.includes(TOKEN) && !request.url.includes('not-the-token'), `no token in ${request.url}`);
      if (/\/admin\/(summary|origins|dead-letters|deliveries)/.test(request.url)) {
        assert.match(request.authorization ?? '', /^Bearer /, `${request.url} carries the token in its header`);
      }
    }
    // The violation listener works: an inline style attribute is refused by the policy.
    await page.evaluate(() => document.body.setAttribute('style', 'color: red'));
    await until(() => page.evaluate(() => window.cspViolations.length > 0), 5_000, 'the provoked violation');
  });
});

// A page the API door serves, in the operator's own tab, tries to read the token the operator
// page keeps in sessionStorage: directly (the tab's storage is the origin's), and through a
// window of the page it opens. Its script reports what it read by calling the API back.
const EVIL_PAGE = `<!doctype html><title>evil</title><p>hello</p><script>
const KEY = 'webhook-dedup.admin-token';
const report = (what, value) => fetch('/api/leak?' + what + '=' + encodeURIComponent(value)).catch(() => {});
document.title = 'ran';
try { report('direct', sessionStorage.getItem(KEY)); } catch (e) { report('direct-refused', e.name); }
const opened = window.open('/admin/');
setTimeout(() => {
  try { report('opened', opened.sessionStorage.getItem(KEY)); } catch (e) { report('opened-refused', e.name); }
}, 1000);
</script>`;

describe('a page the API door serves cannot read the operator page\'s token', () => {
  const PAGE_TOKEN = 'sandbox-page-token-0123456789abcdef';
  let origin;
  let browser;
  const workers = [];
  const leaks = () => origin.requests.filter((r) => r.url.startsWith('/api/leak'));

  before(async () => {
    origin = await startOrigin((req) => (req.url.startsWith('/api/evil.html')
      ? { status: 200, body: EVIL_PAGE, headers: { 'content-type': 'text/html; charset=utf-8' } }
      : { status: 200, body: 'ok' }));
    browser = await chromium.launch({ executablePath: chromiumPath() });
  });
  after(async () => {
    await browser?.close();
    for (const worker of workers) await worker.dispose();
    await origin?.close();
  });

  /** A tab where the operator typed the token at `pageUrl`, then opened `evilUrl` in it. */
  async function operatorThenEvil(pageUrl, evilUrl) {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    assert.equal((await page.goto(pageUrl)).status(), 200);
    await page.fill('#token-input', PAGE_TOKEN);
    await page.click('#token-use');
    await page.locator('#token-status', { hasText: 'A token is set for this tab.' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('webhook-dedup.admin-token')), PAGE_TOKEN);
    const evil = await page.goto(evilUrl);
    await page.waitForTimeout(2_500); // the page's script (if it runs) reports within 1 s
    return { context, page, evil };
  }

  test('by default the door\'s answers are sandboxed: a proxied HTML page runs no script and reads no storage', async () => {
    const worker = await startWorker({
      vars: { STRIPE_WEBHOOK_SECRET: 'whsec_sandbox', ORIGIN_URL: `${origin.url}/hooks`, API_ORIGIN_URL: origin.url, ADMIN_TOKEN: PAGE_TOKEN },
    });
    workers.push(worker);
    const seen = leaks().length;
    const { context, page, evil } = await operatorThenEvil(`${worker.url}/admin/`, `${worker.url}/api/evil.html`);
    assert.equal(evil.status(), 200);
    assert.deepEqual(leaks().slice(seen).map((r) => r.url), [], 'nothing read, nothing reported');
    assert.equal(await page.title(), 'evil', 'its script never ran');
    assert.match(evil.headers()['content-security-policy'] ?? '', /\bsandbox\b/);
    assert.equal(context.pages().length, 1, 'no window opened');
    await context.close();
  });

  test('with ADMIN_PAGE_HOST the page lives on its own host: the API\'s HTML runs elsewhere and reads nothing of it', async () => {
    const worker = await startWorker({
      vars: {
        STRIPE_WEBHOOK_SECRET: 'whsec_sandbox', ORIGIN_URL: `${origin.url}/hooks`, API_ORIGIN_URL: origin.url,
        ADMIN_TOKEN: PAGE_TOKEN, ADMIN_PAGE_HOST: 'localhost',
      },
    });
    workers.push(worker);
    const pageUrl = `http://localhost:${worker.port}/admin/`;
    // The page is on localhost only; on the worker's other host its paths are locked.
    assert.equal((await call(`${worker.url}/admin/`)).status, 401);
    // On the page's own host the door's answers stay sandboxed.
    let seen = leaks().length;
    const own = await operatorThenEvil(pageUrl, `http://localhost:${worker.port}/api/evil.html`);
    assert.match(own.evil.headers()['content-security-policy'] ?? '', /\bsandbox\b/);
    assert.equal(await own.page.title(), 'evil');
    assert.deepEqual(leaks().slice(seen), []);
    await own.context.close();
    // On another host they pass as the API gave them: the script runs (so this probe works),
    // but in another origin, which holds no token and cannot read the page's window.
    seen = leaks().length;
    const other = await operatorThenEvil(pageUrl, `${worker.url}/api/evil.html`);
    assert.equal(other.evil.headers()['content-security-policy'], undefined);
    assert.equal(await other.page.title(), 'ran', 'the API\'s own script ran');
    const reported = await until(() => {
      const urls = leaks().slice(seen).map((r) => r.url);
      return urls.length >= 2 && urls;
    }, 5_000, 'both reports');
    assert.ok(reported.includes('/api/leak?direct=null'), `no token in its own storage: ${reported}`);
    assert.ok(reported.some((url) => url === '/api/leak?opened=null' || url.startsWith('/api/leak?opened-refused=')), `none through the window: ${reported}`);
    assert.ok(reported.every((url) => !url.includes(PAGE_TOKEN)));
    await other.context.close();
  });
});
