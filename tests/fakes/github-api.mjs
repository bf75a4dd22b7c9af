// A local fake of GitHub's webhook delivery log for one hook, written from GitHub's REST
// reference ("List deliveries for a repository webhook", "Get a delivery for a repository
// webhook", "Redeliver a delivery for a repository webhook"; the organization endpoints have
// the same shape under `orgs/{org}/hooks/{hook_id}`). It also plays GitHub's sending side:
// `deliver()` POSTs a delivery to the worker as GitHub does (signed with `X-Hub-Signature-256`
// by `@octokit/webhooks-methods`) and logs the outcome, or logs a failure without sending ("the
// worker was down"); a redelivery request really sends the stored payload again, with the same
// GUID, and logs the new attempt. Faults on cue (429 / 403 rate limits, 500 on the k-th
// request); every request is recorded.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';

import { sign } from '@octokit/webhooks-methods';

const DOCS = 'https://docs.github.com/rest';

/** GitHub's own form of a time: ISO 8601, whole seconds, `Z`. */
const githubTime = (ms) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** GitHub's delivery-log status for an HTTP answer. */
function statusFor(code) {
  return code >= 200 && code < 300 ? 'OK' : `Invalid HTTP Response: ${code}`;
}

/**
 * Starts the fake for `hook` (`repos/{owner}/{repo}/hooks/{id}` or `orgs/{org}/hooks/{id}`).
 * `deliverTo` is where deliveries and redeliveries are POSTed (the worker's
 * `/webhooks/github`); it may be set later as `api.deliverTo` (the worker's URL is known only
 * after it starts, and it needs this fake's URL to start). Returns:
 * - `url`: the API's base URL (GitHub's `https://api.github.com`);
 * - `requests`: every request to the API, `{ method, url, path, query, headers, body,
 *   receivedAt, status, fault }`; `listRequests()` and `redeliveryRequests()` pick the
 *   list and the redelivery requests out of them;
 * - `log`: the delivery log, oldest first, each item as the API shows it (`payload` and the
 *   request headers are kept apart, in `payloadOf(id)`);
 * - `deliver(event, payload, { send = true, action, failure, recordAs, at, guid })`: a new
 *   delivery of `payload` (an object or JSON text). `send: true` POSTs it to `deliverTo` and
 *   logs the answer (`OK` / `Invalid HTTP Response: N`; `failed to connect to host` with
 *   `status_code` 0 when the connection fails; `timed out` after 10 s); `recordAs` then logs
 *   this outcome instead of the real one (`'timeout'`, `'connect'` or a status code), as when
 *   GitHub gave up waiting on an answer the worker did act on. `send: false` sends nothing and
 *   logs `failure` (a status code, 503 by default, or `'connect'` or `'timeout'`). `at`
 *   (ms) sets `delivered_at` (ids grow in the order deliveries are made, as GitHub's grow with
 *   time: give older `at`s first). Resolves with the logged item;
 * - `attempts(guid)`: the log items of one GUID, oldest first; `sent`: every POST made to
 *   `deliverTo`, `{ guid, id, redelivery, headers, body, status, at }`;
 * - `redeliveries()`: promises of the redeliveries under way (await them to settle);
 * - `failNext(n, fault)` (default `{ status: 429, retryAfter: 1 }`, sent with
 *   `x-ratelimit-remaining: 0`), `failAt(k, fault)` (default `{ status: 500 }`), as in the
 *   Stripe fake; a bad token is refused before any fault;
 * - `setToken(token)`; `close()`.
 */
export async function startGithubApi({ token, hook = 'repos/acme/shop/hooks/42', webhookSecret, deliverTo, repositoryId = 1, installationId = null } = {}) {
  if (!token) throw new Error('startGithubApi needs the token it accepts');
  if (!webhookSecret) throw new Error('startGithubApi needs the webhook secret it signs with');
  if (!/^(repos\/[^/]+\/[^/]+|orgs\/[^/]+)\/hooks\/\d+$/.test(hook)) throw new Error(`not a hook path: ${hook}`);
  const hookId = Number(hook.split('/').pop());
  const target = hook.startsWith('orgs/') ? 'organization' : 'repository';
  let acceptedToken = token;
  const requests = [];
  const log = []; // oldest first
  const kept = new Map(); // id -> { payload (text), event, action }
  const faults = new Map();
  const sockets = new Set();
  const sent = [];
  const pending = new Set();
  let nextId = 10_000 + Math.floor(Math.random() * 1_000);
  let base;

  const api = {
    url: '',
    deliverTo,
    requests,
    log,
    sent,
  };

  /** POSTs one delivery to `deliverTo` as GitHub does; resolves `{ status, status_code, duration }`. */
  async function post({ guid, event, payloadText, redelivery, id }) {
    if (!api.deliverTo) throw new Error('github fake: deliverTo is not set');
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/fake',
      'x-github-delivery': guid,
      'x-github-event': event,
      'x-github-hook-id': String(hookId),
      'x-github-hook-installation-target-type': target,
      'x-github-hook-installation-target-id': String(repositoryId),
      'x-hub-signature': `sha1=${createHmac('sha1', webhookSecret).update(payloadText).digest('hex')}`,
      'x-hub-signature-256': await sign(webhookSecret, payloadText),
    };
    const started = Date.now();
    const record = { guid, id, redelivery, headers, body: payloadText, at: started };
    sent.push(record);
    try {
      const response = await fetch(api.deliverTo, {
        method: 'POST', headers, body: payloadText, signal: AbortSignal.timeout(10_000),
      });
      record.answer = await response.text();
      record.status = response.status;
      return { status: statusFor(response.status), status_code: response.status, duration: (Date.now() - started) / 1000 };
    } catch (error) {
      const timedOut = error.name === 'TimeoutError';
      record.status = 0;
      record.error = String(error);
      return { status: timedOut ? 'timed out' : 'failed to connect to host', status_code: 0, duration: (Date.now() - started) / 1000 };
    }
  }

  function outcome(kind) {
    if (kind === 'connect') return { status: 'failed to connect to host', status_code: 0 };
    if (kind === 'timeout') return { status: 'timed out', status_code: 0 };
    const code = Number(kind);
    return { status: statusFor(code), status_code: code };
  }

  function logItem({ guid, event, action, payloadText, redelivery, at, result }) {
    nextId += 1 + Math.floor(Math.random() * 5); // ids grow, with gaps, as GitHub's do
    const item = {
      id: nextId,
      guid,
      delivered_at: githubTime(at),
      redelivery,
      duration: Number((result.duration ?? 0.1).toFixed(2)),
      status: result.status,
      status_code: result.status_code,
      event,
      action: action ?? null,
      installation_id: installationId,
      repository_id: target === 'repository' ? repositoryId : null,
      throttled_at: null,
    };
    log.push(item);
    kept.set(item.id, { payloadText, event, action });
    return item;
  }

  api.deliver = async (event, payload, { send = true, action, failure = 503, recordAs, at, guid = randomUUID() } = {}) => {
    const payloadText = typeof payload === 'string' ? payload : JSON.stringify(payload);
    const actionOf = action ?? (() => { try { return JSON.parse(payloadText).action; } catch { return undefined; } })();
    const when = at ?? Date.now();
    let result;
    if (send) {
      result = await post({ guid, event, payloadText, redelivery: false });
      if (recordAs !== undefined) result = { ...outcome(recordAs), duration: result.duration };
    } else {
      result = { ...outcome(failure), duration: failure === 'timeout' ? 10 : 0.01 };
    }
    return logItem({ guid, event, action: actionOf, payloadText, redelivery: false, at: when, result });
  };
  api.payloadOf = (id) => kept.get(id)?.payloadText;
  api.attempts = (guid) => log.filter((item) => item.guid === guid);
  api.redeliveries = () => [...pending];
  api.listRequests = () => requests.filter((r) => r.method === 'GET' && r.path === `/${hook}/deliveries`);
  api.redeliveryRequests = () => requests.filter((r) => r.method === 'POST' && /\/deliveries\/\d+\/attempts$/.test(r.path));
  api.failNext = (n, fault = { status: 429, retryAfter: 1 }) => {
    for (let i = 1; i <= n; i += 1) faults.set(requests.length + i, fault);
  };
  api.failAt = (k, fault = { status: 500 }) => {
    faults.set(requests.length + k, fault);
  };
  api.setToken = (next) => {
    acceptedToken = next;
  };

  const send = (res, record, status, body, headers = {}) => {
    record.status = status;
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'x-github-media-type': 'github.v3; format=json',
      'x-github-request-id': randomBytes(8).toString('hex').toUpperCase(),
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': '4999',
      'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600),
      'x-ratelimit-resource': 'core',
      ...headers,
    });
    res.end(body === undefined ? '' : JSON.stringify(body));
  };

  // The cursor is opaque to clients: the id the next page starts below, wrapped.
  const cursorFor = (id) => Buffer.from(`fake-gh:${id}:${randomBytes(4).toString('hex')}`).toString('base64url');
  const cursorId = (cursor) => {
    const match = Buffer.from(cursor, 'base64url').toString('utf8').match(/^fake-gh:(\d+):[0-9a-f]{8}$/);
    return match ? Number(match[1]) : null;
  };

  const listDeliveries = (res, record, query) => {
    let perPage = 30;
    if (query.has('per_page')) {
      const raw = query.get('per_page');
      if (!/^\d+$/.test(raw)) return send(res, record, 400, { message: 'Bad Request', documentation_url: DOCS, status: '400' });
      perPage = Math.min(100, Math.max(1, Number(raw)));
    }
    let below = Infinity;
    if (query.has('cursor') && query.get('cursor') !== '') {
      const id = cursorId(query.get('cursor'));
      if (id === null) return send(res, record, 400, { message: 'Invalid cursor', documentation_url: DOCS, status: '400' });
      below = id;
    }
    let items = log.filter((item) => item.id < below).sort((a, b) => b.id - a.id);
    if (query.has('redelivery')) items = items.filter((item) => item.redelivery === (query.get('redelivery') === 'true'));
    if (query.has('status')) {
      const wanted = query.get('status');
      items = items.filter((item) => (wanted === 'success' ? item.status === 'OK' : item.status !== 'OK'));
    }
    const page = items.slice(0, perPage);
    const headers = {};
    if (items.length > perPage) {
      const next = new URLSearchParams({ per_page: String(perPage), cursor: cursorFor(page[page.length - 1].id) });
      headers.link = `<${base}/${hook}/deliveries?${next}>; rel="next"`;
    }
    record.served = page.map((item) => item.id);
    return send(res, record, 200, page, headers);
  };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const parsed = new URL(req.url, 'http://127.0.0.1');
      const record = {
        method: req.method,
        url: req.url,
        path: parsed.pathname,
        query: parsed.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      requests.push(record);
      const number = requests.length;
      const auth = (req.headers.authorization ?? '').match(/^(?:Bearer|token)\s+(.+)$/i);
      if (!auth || auth[1].trim() !== acceptedToken) {
        return send(res, record, 401, { message: 'Bad credentials', documentation_url: DOCS, status: '401' });
      }
      const fault = faults.get(number);
      if (fault) {
        faults.delete(number);
        record.fault = fault;
        const limited = fault.status === 429 || fault.status === 403;
        const headers = {
          ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
          ...(limited ? { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + (fault.retryAfter ?? 60)) } : {}),
          ...fault.headers,
        };
        const body = fault.body ?? (limited
          ? { message: 'API rate limit exceeded for user ID 1.', documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api', status: String(fault.status) }
          : { message: 'Server Error', status: String(fault.status) });
        return send(res, record, fault.status, body, headers);
      }
      const prefix = `/${hook}/deliveries`;
      if (parsed.pathname === prefix && req.method === 'GET') return listDeliveries(res, record, parsed.searchParams);
      const one = parsed.pathname.startsWith(`${prefix}/`) ? parsed.pathname.slice(prefix.length + 1).match(/^(\d+)(\/attempts)?$/) : null;
      if (!one) return send(res, record, 404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
      const id = Number(one[1]);
      const item = log.find((entry) => entry.id === id);
      if (!item) return send(res, record, 404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
      if (!one[2] && req.method === 'GET') {
        const { payloadText } = kept.get(id);
        let payload;
        try { payload = JSON.parse(payloadText); } catch { payload = payloadText; }
        return send(res, record, 200, {
          ...item,
          url: api.deliverTo ?? null,
          request: { headers: { 'X-GitHub-Delivery': item.guid, 'X-GitHub-Event': item.event }, payload },
          response: { headers: {}, payload: null },
        });
      }
      if (one[2] && req.method === 'POST') {
        if (Date.now() - Date.parse(item.delivered_at) > 3 * 24 * 3600 * 1000) {
          return send(res, record, 422, { message: 'Validation Failed', documentation_url: DOCS, status: '422' });
        }
        send(res, record, 202, {});
        const { payloadText, event, action } = kept.get(id);
        const redelivery = (async () => {
          const result = await post({ guid: item.guid, event, payloadText, redelivery: true, id });
          logItem({ guid: item.guid, event, action, payloadText, redelivery: true, at: Date.now(), result });
        })();
        pending.add(redelivery);
        redelivery.finally(() => pending.delete(redelivery));
        return undefined;
      }
      return send(res, record, 404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  api.url = base;
  api.close = async () => {
    await Promise.allSettled([...pending]);
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return api;
}
