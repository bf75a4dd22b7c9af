// Counts what a frozen baseline's Durable Object is billed for, without changing its code: each
// call to the object (an RPC method, `fetch` or `alarm`) is one request, and each storage call
// is counted in SQLite rows as Cloudflare bills them (one per key read, one per key put or
// deleted, one per `setAlarm`). Each count is written as one JSON log line, `{"level", "units": kind,
// "op", "requests", "rows_read", "rows_written"}`, which the benchmark sums.

/** Rows a storage call reads and writes, by method and arguments. */
function rowsOf(method, args) {
  const keys = (value) => (Array.isArray(value) ? value.length : 1);
  switch (method) {
    case 'get': return [keys(args[0]), 0];
    case 'put': return [0, typeof args[0] === 'string' ? 1 : Object.keys(args[0] ?? {}).length];
    case 'delete': return [0, keys(args[0])];
    case 'setAlarm': return [0, 1];
    case 'deleteAll': return [0, 1];
    default: return [0, 0];
  }
}

function log(kind, op, requests, read, written) {
  console.log(JSON.stringify({ level: 'info', units: kind, op, requests, rows_read: read, rows_written: written }));
}

/** `api` (storage, or its synchronous `kv`) with every call counted. */
function counting(kind, api) {
  return new Proxy(api, {
    get(target, name) {
      if (name === 'kv') return counting(kind, target.kv);
      const value = Reflect.get(target, name);
      if (typeof value !== 'function') return value;
      return (...args) => {
        const [read, written] = rowsOf(name, args);
        if (read + written > 0) log(kind, name, 0, read, written);
        return value.apply(target, args);
      };
    },
  });
}

/**
 * A subclass of the Durable Object class `Frozen` whose storage calls and requests are
 * counted under `kind`.
 */
export function counted(kind, Frozen) {
  class Counted extends Frozen {
    constructor(ctx, env) {
      super(ctx, env);
      // The runtime checks the state it is given, so the counting view of it is put in place
      // afterwards, where the frozen class reads it (`this.ctx`).
      const storage = counting(kind, ctx.storage);
      const view = new Proxy(ctx, {
        get: (target, name) => (name === 'storage' ? storage : Reflect.get(target, name)),
      });
      Object.defineProperty(this, 'ctx', { value: view });
    }
  }
  for (const name of Object.getOwnPropertyNames(Frozen.prototype)) {
    const method = Frozen.prototype[name];
    if (name === 'constructor' || typeof method !== 'function') continue;
    Counted.prototype[name] = function request(...args) {
      log(kind, name, 1, 0, 0);
      return method.apply(this, args);
    };
  }
  return Counted;
}
