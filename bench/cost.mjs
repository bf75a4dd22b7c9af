// What the worker costs, from one source: the billable units `npm run bench` measured (written
// to bench/units.json by the same run as BENCHMARKS.md) and Cloudflare's prices and limits, kept
// once in docs/capacity.md's table. Every cost figure of the documents is written from here,
// between `<!-- NAME:begin … -->` and `<!-- NAME:end -->` markers, so none is copied by hand:
//   node bench/cost.mjs            prints the figures
//   node bench/cost.mjs --write    rewrites the marked blocks (npm run bench does it too)
//   node bench/cost.mjs --check    fails when a marked block differs from what it would write
// tests/docs.test.mjs runs the check in `npm test`.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** What each figure assumes, beyond the measured units. */
export const ASSUMPTIONS = {
  /** How long the handler takes to answer: the object waits for it, billed as duration. */
  originMs: 100,
  /** How long a record is kept: the default `RETENTION_HOURS`, 720 (30 days). */
  retentionDays: 30,
  /** The shortest retention without `ALLOW_SHORT_RETENTION`: 72 hours. */
  shortRetentionDays: 3,
  /**
   * Storage held by one event while it is kept: an object's SQLite database takes about 12 KB
   * even when nearly empty (Cloudflare's Durable Objects FAQ), plus the record itself (about
   * 400 bytes). A queued event also holds its body until it is delivered (a few seconds when
   * the handler is healthy), which is left out.
   */
  storageBytes: 12_500,
  /** A Durable Object is billed for duration at 128 MB. */
  objectGb: 0.125,
  /** Days in a month, as Cloudflare bills storage per GB-month. */
  daysPerMonth: 30,
};

/** The monthly volumes the cost table shows: up to 10,000 events per second. */
export const VOLUMES = [10_000, 1_000_000, 100_000_000, 10_000 * 86_400 * 30];

/**
 * Cloudflare's prices and limits, read from docs/capacity.md's table: per unit, the Workers
 * Free plan's daily limit, the Workers Paid plan's monthly inclusion and its price per million
 * beyond (storage: per GB-month), and the Paid plan's monthly base.
 */
export function prices(root = ROOT) {
  const text = readFileSync(path.join(root, 'docs', 'capacity.md'), 'utf8');
  const row = (unit) => {
    const line = text.split('\n').find((l) => l.startsWith(`| ${unit} |`));
    if (!line) throw new Error(`docs/capacity.md's price table has no row "${unit}"`);
    const [, free, included, beyond] = line.split('|').slice(1, -1).map((cell) => cell.trim());
    const number = (cell) => {
      const found = cell.replace(/,/g, '').match(/([0-9.]+)( million| billion)?/);
      if (!found) return Infinity;
      return Number(found[1]) * ({ ' million': 1e6, ' billion': 1e9 }[found[2]] ?? 1);
    };
    const price = beyond.match(/\$([0-9.]+)/);
    if (!price) throw new Error(`docs/capacity.md: no price in the row "${unit}"`);
    return { free: number(free), included: number(included), price: Number(price[1]) };
  };
  const base = text.match(/Workers Paid plan costs \$([0-9.]+) a month/);
  if (!base) throw new Error('docs/capacity.md does not say what the Workers Paid plan costs a month');
  return {
    base: Number(base[1]),
    workerRequests: row('Worker requests'),
    cpuMs: row('Worker CPU time'),
    objectRequests: row('Durable Object requests'),
    gbSeconds: row('Durable Object duration'),
    rowsRead: row('SQLite rows read'),
    rowsWritten: row('SQLite rows written'),
    storage: row('SQLite stored data'),
  };
}

/** The units measured by the last `npm run bench` (bench/units.json). */
export function measured(root = ROOT) {
  return JSON.parse(readFileSync(path.join(root, 'bench', 'units.json'), 'utf8'));
}

/**
 * What one event uses over its whole life, in `mode` (`sync` or `queue`): one Worker request,
 * the runtime CPU measured for it, the object requests and rows the object counted from its
 * delivery to its expiry, and its object's duration while it waits for the handler.
 */
export function perEvent(units, mode, a = ASSUMPTIONS) {
  const life = units[mode];
  return {
    workerRequests: 1,
    cpuMs: life.cpuMs,
    objectRequests: life.requests,
    gbSeconds: ((a.originMs + units.objectOwnMs) / 1000) * a.objectGb,
    rowsRead: life.rowsRead,
    rowsWritten: life.rowsWritten,
  };
}

/** A duplicate delivery of an event already done: one Worker request, one object request. */
export function perDuplicate(units) {
  return {
    workerRequests: 1,
    cpuMs: units.duplicate.cpuMs,
    objectRequests: units.duplicate.requests,
    gbSeconds: 0,
    rowsRead: units.duplicate.rowsRead,
    rowsWritten: units.duplicate.rowsWritten,
  };
}

const METERED = ['workerRequests', 'cpuMs', 'objectRequests', 'gbSeconds', 'rowsRead', 'rowsWritten'];

/** GB-months of storage held by `events` a month, each kept `days`. */
function gbMonths(events, days, a = ASSUMPTIONS) {
  return (events * a.storageBytes * (days / a.daysPerMonth)) / 1e9;
}

/** Dollars per million events beyond every inclusion, item by item, storage included. */
export function perMillion(event, p, a = ASSUMPTIONS) {
  const items = Object.fromEntries(METERED.map((unit) => [unit, event[unit] * p[unit].price]));
  items.storage = gbMonths(1e6, a.retentionDays, a) * p.storage.price;
  return { items, total: Object.values(items).reduce((x, y) => x + y, 0) };
}

/** The Workers Paid bill for `events` a month: the base, then what exceeds each inclusion. */
export function monthly(events, event, p, a = ASSUMPTIONS) {
  let total = p.base;
  for (const unit of METERED) {
    total += (Math.max(0, events * event[unit] - p[unit].included) / 1e6) * p[unit].price;
  }
  total += Math.max(0, gbMonths(events, a.retentionDays, a) - p.storage.included) * p.storage.price;
  return total;
}

/**
 * How many events a day the Workers Free plan carries with records kept `days`, and which
 * limit binds: each daily limit divided by what one event uses, and the storage held by `days`
 * of events against the plan's whole storage.
 */
export function freeCapacity(event, p, days, a = ASSUMPTIONS) {
  const limits = METERED.filter((unit) => unit !== 'cpuMs' && Number.isFinite(p[unit].free))
    .map((unit) => ({ unit, events: p[unit].free / event[unit] }));
  limits.push({ unit: 'storage', events: (p.storage.free * 1e9) / (a.storageBytes * days) });
  return limits.reduce((low, next) => (next.events < low.events ? next : low));
}

/** The unit of each measure, in the units table. */
const UNIT = { workerRequests: '', cpuMs: ', ms', objectRequests: '', gbSeconds: ', GB-s', rowsRead: '', rowsWritten: '' };

const WHAT = {
  workerRequests: 'Worker requests',
  cpuMs: 'Worker CPU',
  objectRequests: 'Durable Object requests (alarm runs included)',
  gbSeconds: 'Durable Object duration',
  rowsRead: 'rows read',
  rowsWritten: 'rows written',
  storage: 'storage',
};

/** `n` rounded to two significant figures, with separators: 13,000; 1.2 million. */
function roughly(n) {
  if (n >= 1e9) return `${Number((n / 1e9).toPrecision(2))} billion`;
  if (n >= 1e6) return `${Number((n / 1e6).toPrecision(2))} million`;
  return Number(n.toPrecision(2)).toLocaleString('en-US');
}

/** Dollars: cents below $100, whole dollars with separators above. */
function dollars(x) {
  return x < 100 ? `$${x.toFixed(2)}` : `$${Math.round(x).toLocaleString('en-US')}`;
}

function volume(n) {
  return n === VOLUMES[3] ? `${roughly(n)} (10,000 a second)` : roughly(n);
}

/** The figures every block is written from. */
export function figures(root = ROOT) {
  const p = prices(root);
  const units = measured(root);
  const sync = perEvent(units, 'sync');
  const queue = perEvent(units, 'queue');
  return {
    p,
    units,
    sync,
    queue,
    duplicate: perDuplicate(units),
    perSecondOfHandler: ASSUMPTIONS.objectGb * p.gbSeconds.price,
    free: freeCapacity(sync, p, ASSUMPTIONS.retentionDays),
    freeShort: freeCapacity(sync, p, ASSUMPTIONS.shortRetentionDays),
  };
}

const LIMIT_NAME = {
  workerRequests: 'Worker requests',
  objectRequests: 'Durable Object requests',
  gbSeconds: 'Durable Object duration',
  rowsRead: 'rows read',
  rowsWritten: 'rows written',
  storage: 'the 5 GB of storage',
};

/** The marked blocks, by name. */
export function blocks(root = ROOT) {
  const f = figures(root);
  const a = ASSUMPTIONS;
  const [small, million, hundred] = VOLUMES.map((n) => monthly(n, f.sync, f.p));
  const cost = [
    `**Plan and cost.** The Workers Free plan is enough for about ${roughly(f.free.events)} events a day with the`,
    `default ${a.retentionDays}-day retention. Beyond that, the Workers Paid plan ($${f.p.base} a month) costs about ${dollars(small)} a`,
    `month for ${roughly(VOLUMES[0])} events, ${dollars(million)} for ${roughly(VOLUMES[1])} and ${dollars(hundred)} for ${roughly(VOLUMES[2])}, with a handler that`,
    `answers in ${a.originMs} ms. [Capacity and cost](docs/capacity.md#what-it-costs) shows the sums.`,
  ];
  const plans = [
    `- **Workers Free** carries about ${roughly(f.free.events)} events a day with the default retention of ${a.retentionDays} days`,
    `  (${LIMIT_NAME[f.free.unit]} runs out first), and about ${roughly(f.freeShort.events)} a day with \`RETENTION_HOURS=72\``,
    `  (then ${LIMIT_NAME[f.freeShort.unit]}). Past a daily limit, requests fail until 00:00 UTC: Stripe retries`,
    '  them, but plan for the Paid plan before you get there.',
    `- **Workers Paid** costs $${f.p.base} a month with generous inclusions. With a handler that answers in ${a.originMs} ms:`,
    '',
    '  | events a month | sync mode | queue mode |',
    '  | --- | --- | --- |',
    ...VOLUMES.map((n) => `  | ${volume(n)} | ${dollars(monthly(n, f.sync, f.p))} | ${dollars(monthly(n, f.queue, f.p))} |`),
    '',
    `- Each second your handler takes adds ${dollars(f.perSecondOfHandler)} per million events: the event's object`,
    '  waits for its answer, and is billed for that time.',
  ];
  const syncCost = perMillion(f.sync, f.p);
  const queueCost = perMillion(f.queue, f.p);
  const dupCost = perMillion(f.duplicate, f.p);
  dupCost.total -= dupCost.items.storage;
  dupCost.items.storage = 0;
  const unit = (e, u) => (u === 'gbSeconds' ? e[u].toFixed(4) : e[u].toFixed(2));
  const capacity = [
    `From the units measured by the last \`npm run bench\` (${f.units.date}; [BENCHMARKS.md](../BENCHMARKS.md#billable-units-per-delivery))`,
    `and the prices in the table above. A handler that answers in ${a.originMs} ms; records kept ${a.retentionDays} days, each holding`,
    `about ${(a.storageBytes / 1000).toFixed(1)} KB (an object's SQLite database, about 12 KB even when nearly empty, and the record).`,
    '',
    '| one event, over its whole life | sync mode | queue mode | a duplicate delivery |',
    '| --- | --- | --- | --- |',
    ...METERED.map((u) => `| ${WHAT[u]}${UNIT[u]} | ${unit(f.sync, u)} | ${unit(f.queue, u)} | ${unit(f.duplicate, u)} |`),
    '',
    '| per million events, beyond the inclusions | sync mode | queue mode | a duplicate delivery |',
    '| --- | --- | --- | --- |',
    ...[...METERED, 'storage'].map((u) => `| ${WHAT[u]} | ${dollars(syncCost.items[u])} | ${dollars(queueCost.items[u])} | ${dollars(dupCost.items[u])} |`),
    `| **total** | **${dollars(syncCost.total)}** | **${dollars(queueCost.total)}** | **${dollars(dupCost.total)}** |`,
    '',
    `Each second your handler takes adds ${dollars(f.perSecondOfHandler)} per million events (the object's duration).`,
    '',
    '| events a month, Workers Paid | sync mode | queue mode |',
    '| --- | --- | --- |',
    ...VOLUMES.map((n) => `| ${volume(n)} | ${dollars(monthly(n, f.sync, f.p))} | ${dollars(monthly(n, f.queue, f.p))} |`),
    '',
    `On the Workers Free plan, sync mode carries about ${roughly(f.free.events)} events a day with records kept ${a.retentionDays} days`,
    `(${LIMIT_NAME[f.free.unit]} runs out first), and about ${roughly(f.freeShort.events)} with records kept ${a.shortRetentionDays} days (${LIMIT_NAME[f.freeShort.unit]}).`,
  ];
  return {
    'README.md': { cost },
    'docs/deploying.md': { plans },
    'docs/capacity.md': { 'what-it-costs': capacity },
  };
}

/** `text` with the block `name` replaced by `lines`; throws when its markers are missing. */
export function replaceBlock(text, name, lines, file) {
  const pattern = new RegExp(`(<!-- ${name}:begin[^\\n]*-->\\n)[\\s\\S]*?(<!-- ${name}:end -->)`);
  if (!pattern.test(text)) throw new Error(`${file} has no block <!-- ${name}:begin … --> … <!-- ${name}:end -->`);
  return text.replace(pattern, (_, begin, end) => `${begin}${lines.join('\n')}\n${end}`);
}

/** The files whose blocks differ from what would be written (empty when all are current). */
export function stale(root = ROOT) {
  const differ = [];
  for (const [file, named] of Object.entries(blocks(root))) {
    const text = readFileSync(path.join(root, file), 'utf8');
    let next = text;
    for (const [name, lines] of Object.entries(named)) next = replaceBlock(next, name, lines, file);
    if (next !== text) differ.push(file);
  }
  return differ;
}

/** Rewrites every marked block. */
export function write(root = ROOT) {
  for (const [file, named] of Object.entries(blocks(root))) {
    const where = path.join(root, file);
    let text = readFileSync(where, 'utf8');
    for (const [name, lines] of Object.entries(named)) text = replaceBlock(text, name, lines, file);
    writeFileSync(where, text);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const option = process.argv[2];
  if (option === '--write') {
    write();
  } else if (option === '--check') {
    const differ = stale();
    if (differ.length) {
      console.error(`cost figures out of date in ${differ.join(', ')}: run node bench/cost.mjs --write`);
      process.exit(1);
    }
  } else if (option === undefined) {
    for (const [file, named] of Object.entries(blocks())) {
      for (const [name, lines] of Object.entries(named)) console.log(`${file} (${name}):\n${lines.join('\n')}\n`);
    }
  } else {
    console.error('usage: node bench/cost.mjs [--write | --check]');
    process.exit(2);
  }
}
