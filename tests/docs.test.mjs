// The documents' links and commands: every relative link and `#anchor` in README.md,
// SECURITY.md, RELIABILITY.md, BENCHMARKS.md and docs/*.md resolves (anchors as GitHub makes
// them from headings), every `npm run <script>` they name exists in package.json, and every
// row of SECURITY.md's threat table names tests that exist. Reads files only: no worker is
// started.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stale as staleCostFigures } from '../bench/cost.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The documents checked, relative to the repository's root. */
export function documents(root = ROOT) {
  const top = ['README.md', 'SECURITY.md', 'RELIABILITY.md', 'BENCHMARKS.md', 'CHANGELOG.md'];
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return [...top, ...docs];
}

/** The text of `markdown` outside fenced code blocks, line by line (fenced lines blanked). */
function prose(markdown) {
  let fence = null;
  return markdown.split('\n').map((line) => {
    const open = line.match(/^\s*(```+|~~~+)/);
    if (fence) {
      if (open && open[1][0] === fence[0] && open[1].length >= fence.length) fence = null;
      return '';
    }
    if (open) {
      fence = open[1];
      return '';
    }
    return line;
  });
}

/**
 * The anchor GitHub gives a heading: its text as rendered (inline code, emphasis and links
 * reduced to their text), lower-cased, with every character that is not a letter, a mark, a
 * digit, a connector (`_`), a space or a hyphen removed, then spaces made hyphens.
 */
export function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/(\*\*|__|\*)/g, '')
    .trim();
  return text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Every anchor of `markdown`'s headings, repeats numbered as GitHub numbers them (-1, -2…). */
export function anchors(markdown) {
  const seen = new Map();
  const found = new Set();
  for (const line of prose(markdown)) {
    const heading = line.match(/^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/);
    if (!heading) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** Every link target of `markdown` outside code, with its line number. */
export function links(markdown) {
  const found = [];
  prose(markdown).forEach((line, index) => {
    const text = line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
    for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      found.push({ target: match[1], line: index + 1 });
    }
    for (const match of text.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)) {
      found.push({ target: match[1], line: index + 1 });
    }
  });
  return found;
}

/** Every broken relative link or anchor of the document `file` (relative to `root`). */
export function brokenLinks(file, root = ROOT) {
  const source = path.join(root, file);
  const broken = [];
  for (const { target, line } of links(readFileSync(source, 'utf8'))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check
    const [rawPath, anchor] = target.split('#');
    const linked = rawPath === '' ? source : path.resolve(path.dirname(source), decodeURIComponent(rawPath));
    const where = `${file}:${line}: ${target}`;
    if (!linked.startsWith(root)) {
      broken.push(`${where} (outside the repository)`);
      continue;
    }
    if (!existsSync(linked)) {
      broken.push(`${where} (no file ${path.relative(root, linked)})`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(linked).isDirectory() || !linked.endsWith('.md')) {
      broken.push(`${where} (an anchor into ${path.relative(root, linked)}, which has no headings)`);
      continue;
    }
    if (!anchors(readFileSync(linked, 'utf8')).has(anchor)) {
      broken.push(`${where} (no heading of ${path.relative(root, linked)} has the anchor #${anchor})`);
    }
  }
  return broken;
}

/** Every `npm run <script>` (and `npm test`) of the document `file` whose script is missing. */
export function missingScripts(file, root = ROOT) {
  const { scripts } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const missing = [];
  readFileSync(path.join(root, file), 'utf8').split('\n').forEach((text, index) => {
    for (const match of text.matchAll(/\bnpm\s+(?:run(?:-script)?\s+([A-Za-z0-9:._-]+)|(test|start)\b)/g)) {
      const script = match[1] ?? match[2];
      if (!Object.hasOwn(scripts, script)) missing.push(`${file}:${index + 1}: npm run ${script}`);
    }
  });
  return missing;
}

/**
 * The rows of SECURITY.md's threat table, each with the tests its last cell names: end-to-end
 * tests as a file and quoted titles (`tests/x.test.mjs` “title”), host tests as Rust paths
 * (`module::tests::name`).
 */
export function threatRows(root = ROOT) {
  const text = readFileSync(path.join(root, 'SECURITY.md'), 'utf8');
  const table = text.split('## Threats and defences')[1].split('\n## ')[0];
  return table.split('\n').filter((line) => line.startsWith('| **')).map((line) => {
    const cells = line.slice(2, -2).split(' | ');
    const threat = cells[0].match(/\*\*(.*?)\*\*/)[1];
    const named = [];
    let file = null;
    for (const m of cells.at(-1).matchAll(/`(tests\/[a-z-]+\.test\.mjs)`|“([^”]+)”|`([a-z_]+(?:::[a-z_0-9]+)+)`/g)) {
      if (m[1]) file = m[1];
      else if (m[2] && file) named.push({ file, title: m[2] });
      else if (m[3]) named.push({ rust: m[3] });
    }
    return { threat, cells: cells.length, named };
  });
}

/** True when `file` holds a test (or a case of one) titled `title`; `{x}` and `…` match anything. */
function hasTitle(file, title) {
  const source = readFileSync(path.join(ROOT, file), 'utf8').replace(/\\'/g, "'");
  const pattern = title.split(/\{[a-z]+\}|…/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  return new RegExp(`['"\`]${pattern}`).test(source);
}

/** True when a Rust test function named as `path`'s last segment exists under src/. */
function hasRustTest(rust) {
  const name = rust.split('::').at(-1);
  const files = readdirSync(path.join(ROOT, 'src'), { recursive: true }).filter((f) => f.endsWith('.rs'));
  return files.some((f) => readFileSync(path.join(ROOT, 'src', f), 'utf8').includes(`fn ${name}(`));
}

test('every threat in SECURITY.md names tests that exist', () => {
  const rows = threatRows();
  assert.ok(rows.length >= 20, `${rows.length} rows read`);
  const problems = [];
  for (const { threat, cells, named } of rows) {
    if (cells !== 4) problems.push(`${threat}: ${cells} cells, not 4`);
    if (!named.some((n) => n.file)) problems.push(`${threat}: names no end-to-end test`);
    for (const n of named) {
      if (n.file && !hasTitle(n.file, n.title)) problems.push(`${threat}: no test “${n.title}” in ${n.file}`);
      if (n.rust && !hasRustTest(n.rust)) problems.push(`${threat}: no Rust test ${n.rust}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('GitHub heading anchors', () => {
  assert.equal(slug('Slow handlers and late answers'), 'slow-handlers-and-late-answers');
  assert.equal(slug("Where the worker differs from Stripe's library"), 'where-the-worker-differs-from-stripes-library');
  assert.equal(slug('Admin API (off unless `ADMIN_TOKEN` is set)'), 'admin-api-off-unless-admin_token-is-set');
  assert.equal(slug('Queue mode: acknowledge once stored'), 'queue-mode-acknowledge-once-stored');
  assert.equal(slug('Other senders: Standard Webhooks, GitHub, Shopify'), 'other-senders-standard-webhooks-github-shopify');
  assert.equal(slug('The [claim](x.md) **record**'), 'the-claim-record');
  assert.deepEqual([...anchors('# A\n## A\n```\n# B\n```\n### A b\n')], ['a', 'a-1', 'a-b']);
});

test('every relative link and anchor in the documents resolves', () => {
  const files = documents();
  assert.ok(files.includes('docs/configuration.md'), 'docs/ is read');
  const broken = files.flatMap((file) => brokenLinks(file));
  assert.deepEqual(broken, [], `broken links:\n  ${broken.join('\n  ')}`);
});

test('every npm script the documents name exists in package.json', () => {
  const missing = documents().flatMap((file) => missingScripts(file));
  assert.deepEqual(missing, [], `scripts missing from package.json:\n  ${missing.join('\n  ')}`);
});

test('README.md stays short and leads to the deploy steps, the headers and the settings', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const lines = readme.split('\n');
  assert.ok(lines.length <= 251, `README.md has ${lines.length} lines; keep it to 250 and move the rest to docs/`);
  const firstScreen = lines.slice(0, 15).join('\n');
  for (const target of ['#deploy-it', '#what-your-handler-receives', 'docs/configuration.md']) {
    assert.ok(firstScreen.includes(`(${target})`), `README.md's first screen links ${target}`);
  }
});

test('no document tells a user to run npx wrangler, which runs on the machine\'s Node.js', () => {
  const found = documents().flatMap((file) => readFileSync(path.join(ROOT, file), 'utf8').split('\n')
    .map((text, index) => (/\bnpx wrangler [a-z]/.test(text) ? `${file}:${index + 1}` : null)).filter(Boolean));
  assert.deepEqual(found, [], 'use npm run deploy or npm run wrangler -- … instead');
});

/** The first cell and the default cell of each row of a markdown table whose rows start with a key. */
function defaultsOf(markdown, column) {
  return new Map(markdown.split('\n').filter((line) => /^\| `[A-Z_]+` \|/.test(line)).map((line) => {
    const cells = line.slice(1, -1).split(' | ').map((cell) => cell.trim());
    return [cells[0], cells[column]];
  }));
}

test('the README\'s settings table gives the defaults of the configuration reference', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('## The ten settings most users touch')[1].split('\n## ')[0];
  const reference = defaultsOf(readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8'), 1);
  const rows = defaultsOf(readme, 1);
  assert.equal(rows.size, 10, 'ten settings');
  const first = (cell) => cell.split(/[\s:(]/)[0];
  for (const [key, cell] of rows) {
    assert.ok(reference.has(key), `README lists ${key}, which docs/configuration.md does not`);
    assert.equal(first(cell), first(reference.get(key)), `${key}: README says "${cell}", docs/configuration.md "${reference.get(key)}"`);
  }
});

test('every cost figure is the one bench/cost.mjs computes from the last benchmark and the price table', () => {
  assert.deepEqual(staleCostFigures(), [], 'run node bench/cost.mjs --write (npm run bench does it)');
});

test('one version everywhere: Cargo.toml, package.json, the changelog\'s latest and the README', () => {
  const cargo = readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8').match(/^version = "([^"]+)"/m)[1];
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
  const changelog = readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8');
  const released = [...changelog.matchAll(/^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$/gm)].map((m) => m[1]);
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8').match(/describes version (\d+\.\d+\.\d+)/);
  assert.equal(pkg, cargo, 'package.json and Cargo.toml');
  assert.equal(released[0], cargo, 'the changelog\'s latest version and Cargo.toml');
  assert.ok(readme, 'the README says which version it describes');
  assert.equal(readme[1], cargo, 'the README\'s version and Cargo.toml');
  // Newest first, each version once, each heading in Keep a Changelog's form.
  const ordered = [...released].sort((a, b) => b.localeCompare(a, 'en', { numeric: true }));
  assert.deepEqual(released, ordered, 'the changelog lists versions newest first');
  assert.equal(new Set(released).size, released.length, 'each version once');
  assert.match(changelog, /^## \[Unreleased\]$/m, 'an Unreleased section for changes not yet released');
  for (const heading of changelog.matchAll(/^### (.*)$/gm)) {
    assert.ok(['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'].includes(heading[1]), `changelog section "${heading[1]}"`);
  }
});
