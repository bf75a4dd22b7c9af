// A local fake of Stripe's `GET /v1/events` ("List all events"), written from Stripe's API
// reference: a node:http server on a free loopback port that answers the list as Stripe does
// (newest first, cursor pagination by `starting_after` / `ending_before`, `created[...]` and
// `delivery_success` filters, `limit` 1 to 100, default 10), refuses a wrong key with Stripe's
// error shape, and fails on cue (429 with Retry-After, 500 on the k-th request) for tests.
// Every request is recorded.
import { randomBytes } from 'node:crypto';
import http from 'node:http';

export const STRIPE_API_VERSION = '2024-06-20';

let counter = 0;

/** A fresh Stripe-style event id. */
export function stripeEventId(label = 'rc') {
  counter += 1;
  return `evt_${label}_${Date.now().toString(36)}${process.pid.toString(36)}${counter.toString(36)}${randomBytes(3).toString('hex')}`;
}

/**
 * A full Stripe event object: `id`, `created` (Unix seconds), `type` and `object` (the event's
 * `data.object`) may be given; the rest is as Stripe renders an event.
 */
export function stripeEvent({ id = stripeEventId(), created = Math.floor(Date.now() / 1000), type = 'payment_intent.succeeded', object } = {}) {
  return {
    id,
    object: 'event',
    api_version: STRIPE_API_VERSION,
    created,
    data: {
      object: object ?? {
        id: `pi_${id.slice(4)}`,
        object: 'payment_intent',
        amount: 2000,
        currency: 'eur',
        status: 'succeeded',
        livemode: false,
      },
    },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

const newestFirst = (a, b) => b.created - a.created || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

const KNOWN = new Set([
  'created', 'created[gt]', 'created[gte]', 'created[lt]', 'created[lte]', 'delivery_success',
  'ending_before', 'limit', 'starting_after', 'type', 'types[]', 'expand[]',
]);

function masked(key) {
  return key.length > 8 ? `${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` : key;
}

/**
 * Starts the fake. Returns:
 * - `url`: its base URL (`http://127.0.0.1:port`, Stripe's `https://api.stripe.com`);
 * - `requests`: every request, `{ method, url, path, query: URLSearchParams, headers,
 *   receivedAt, status, fault }` (`status` and `fault` set once answered);
 * - `listRequests()`: the `GET /v1/events` requests among them;
 * - `events`: the stored events, as served (without the fake's own `delivered` flag);
 * - `add(event)`: stores an event (a whole one, or fields for [stripeEvent]; `delivered: true`
 *   marks Stripe's own delivery of it as succeeded) and returns the event as served;
 * - `markDelivered(id, delivered = true)`: sets an event's `delivered` flag (what
 *   `delivery_success` filters on) and its `pending_webhooks` (0 when delivered);
 * - `isDelivered(id)`;
 * - `failNext(n, fault)`: the next `n` requests answer `fault` (default `{ status: 429,
 *   retryAfter: 1 }`); `failAt(k, fault)`: the k-th request from now (1 = the next one) answers
 *   `fault` (default `{ status: 500 }`). A fault is `{ status, retryAfter, body, headers }`;
 *   a wrong key is refused before any fault;
 * - `setKey(key)`: the key the fake accepts from now on (to refuse the worker's);
 * - `close()`.
 */
export async function startStripeApi({ key } = {}) {
  if (!key) throw new Error('startStripeApi needs the key it accepts');
  let acceptedKey = key;
  const requests = [];
  const stored = []; // { event, delivered }
  const byId = new Map();
  const faults = new Map(); // request number (from 1) -> fault
  const sockets = new Set();

  const send = (res, record, status, body, headers = {}) => {
    record.status = status;
    res.writeHead(status, {
      'content-type': 'application/json',
      'request-id': `req_${randomBytes(7).toString('hex')}`,
      'stripe-version': STRIPE_API_VERSION,
      ...headers,
    });
    res.end(JSON.stringify(body));
  };
  const invalid = (res, record, message, param, status = 400, code) => send(res, record, status, {
    error: { ...(code ? { code } : {}), message, ...(param ? { param } : {}), type: 'invalid_request_error' },
  });

  /** The key the request presents (Bearer, or Basic with the key as user name), or null. */
  const presented = (req) => {
    const header = req.headers.authorization ?? '';
    const bearer = header.match(/^Bearer\s+(.+)$/i);
    if (bearer) return bearer[1].trim();
    const basic = header.match(/^Basic\s+(.+)$/i);
    if (basic) return Buffer.from(basic[1], 'base64').toString('utf8').split(':')[0];
    return null;
  };

  const list = (res, record, query) => {
    for (const name of query.keys()) {
      if (!KNOWN.has(name)) return invalid(res, record, `Received unknown parameter: ${name}`, name);
    }
    let limit = 10;
    if (query.has('limit')) {
      const raw = query.get('limit');
      if (!/^\d+$/.test(raw)) return invalid(res, record, `Invalid integer: ${raw}`, 'limit');
      limit = Number(raw);
      if (limit < 1 || limit > 100) {
        return invalid(res, record, 'This value must be greater than or equal to 1 and less than or equal to 100.', 'limit');
      }
    }
    const bounds = {};
    for (const op of ['gt', 'gte', 'lt', 'lte']) {
      const name = `created[${op}]`;
      if (!query.has(name)) continue;
      const raw = query.get(name);
      if (!/^\d+$/.test(raw)) return invalid(res, record, `Invalid integer: ${raw}`, name);
      bounds[op] = Number(raw);
    }
    if (query.has('created')) {
      const raw = query.get('created');
      if (!/^\d+$/.test(raw)) return invalid(res, record, `Invalid integer: ${raw}`, 'created');
      bounds.gte = Number(raw);
      bounds.lte = Number(raw);
    }
    let success;
    if (query.has('delivery_success')) {
      const raw = query.get('delivery_success');
      if (raw !== 'true' && raw !== 'false') return invalid(res, record, `Invalid boolean: ${raw}`, 'delivery_success');
      success = raw === 'true';
    }
    const types = query.getAll('types[]');
    if (query.has('type') && types.length) {
      return invalid(res, record, 'You may only specify one of these parameters: type, types.', 'type');
    }
    const typeMatches = (type) => {
      if (types.length) return types.includes(type);
      if (!query.has('type')) return true;
      const wanted = query.get('type');
      return wanted.endsWith('.*') ? type.startsWith(wanted.slice(0, -1)) : type === wanted;
    };
    if (query.has('starting_after') && query.has('ending_before')) {
      return invalid(res, record, 'You may only specify one of these parameters: ending_before, starting_after.', 'ending_before');
    }
    const matching = stored
      .filter(({ event, delivered }) => (bounds.gt === undefined || event.created > bounds.gt)
        && (bounds.gte === undefined || event.created >= bounds.gte)
        && (bounds.lt === undefined || event.created < bounds.lt)
        && (bounds.lte === undefined || event.created <= bounds.lte)
        && (success === undefined || delivered === success)
        && typeMatches(event.type))
      .map(({ event }) => event)
      .sort(newestFirst);
    // A cursor is a position in the newest-first order, whether or not its event passes the
    // filters now (it may have been delivered since the page that named it).
    let page;
    let hasMore;
    for (const param of ['starting_after', 'ending_before']) {
      if (query.has(param) && !byId.has(query.get(param))) {
        return invalid(res, record, `No such event: '${query.get(param)}'`, param, 404, 'resource_missing');
      }
    }
    if (query.has('starting_after')) {
      const anchor = byId.get(query.get('starting_after')).event;
      const after = matching.filter((event) => newestFirst(anchor, event) < 0);
      page = after.slice(0, limit);
      hasMore = after.length > limit;
    } else if (query.has('ending_before')) {
      const anchor = byId.get(query.get('ending_before')).event;
      const before = matching.filter((event) => newestFirst(event, anchor) < 0);
      page = before.slice(Math.max(0, before.length - limit));
      hasMore = before.length > limit;
    } else {
      page = matching.slice(0, limit);
      hasMore = matching.length > limit;
    }
    record.served = page.map((event) => event.id);
    return send(res, record, 200, { object: 'list', data: page, has_more: hasMore, url: '/v1/events' });
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
      const given = presented(req);
      if (!given) {
        return send(res, record, 401, {
          error: {
            message: 'You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. \'Authorization: Bearer YOUR_SECRET_KEY\').',
            type: 'invalid_request_error',
          },
        }, { 'www-authenticate': 'Bearer realm="Stripe"' });
      }
      if (given !== acceptedKey) {
        return send(res, record, 401, {
          error: { message: `Invalid API Key provided: ${masked(given)}`, type: 'invalid_request_error' },
        }, { 'www-authenticate': 'Bearer realm="Stripe"' });
      }
      const fault = faults.get(number);
      if (fault) {
        faults.delete(number);
        record.fault = fault;
        const headers = { ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}), ...fault.headers };
        const body = fault.body ?? (fault.status === 429
          ? { error: { code: 'rate_limit', message: 'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.', type: 'invalid_request_error' } }
          : { error: { message: 'An unknown error occurred', type: 'api_error' } });
        if (fault.status >= 500) headers['stripe-should-retry'] = 'true';
        return send(res, record, fault.status, body, headers);
      }
      if (parsed.pathname === '/v1/events' && req.method === 'GET') return list(res, record, parsed.searchParams);
      const one = parsed.pathname.match(/^\/v1\/events\/([^/]+)$/);
      if (one && req.method === 'GET') {
        const found = byId.get(decodeURIComponent(one[1]));
        if (!found) return invalid(res, record, `No such event: '${decodeURIComponent(one[1])}'`, 'id', 404, 'resource_missing');
        return send(res, record, 200, found.event);
      }
      return invalid(res, record, `Unrecognized request URL (${req.method}: ${parsed.pathname}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`, undefined, 404);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();

  const api = {
    url: `http://127.0.0.1:${port}`,
    requests,
    get events() {
      return stored.map(({ event }) => event);
    },
    listRequests() {
      return requests.filter((r) => r.method === 'GET' && r.path === '/v1/events');
    },
    add(given = {}) {
      const { delivered = false, ...fields } = given;
      const event = fields.object === 'event' && fields.data ? { ...fields } : stripeEvent(fields);
      if (byId.has(event.id)) throw new Error(`event ${event.id} already added`);
      if (delivered) event.pending_webhooks = 0;
      const entry = { event, delivered };
      stored.push(entry);
      byId.set(event.id, entry);
      return event;
    },
    markDelivered(id, delivered = true) {
      const entry = byId.get(id);
      if (!entry) throw new Error(`no event ${id}`);
      entry.delivered = delivered;
      entry.event.pending_webhooks = delivered ? 0 : 1;
    },
    isDelivered(id) {
      return byId.get(id)?.delivered;
    },
    failNext(n, fault = { status: 429, retryAfter: 1 }) {
      for (let i = 1; i <= n; i += 1) faults.set(requests.length + i, fault);
    },
    failAt(k, fault = { status: 500 }) {
      faults.set(requests.length + k, fault);
    },
    setKey(next) {
      acceptedKey = next;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return api;
}
