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

/**
 * Every path of the repository the document `file` names in code spans (`src/…`, `tests/…`,
 * `scripts/…`, `bench/…`, `site/…`) that does not exist. A span with a wildcard or a
 * placeholder (`*`, `<…>`, `{…}`) names no one file and is left alone.
 */
export function missingPaths(file, root = ROOT) {
  const missing = [];
  prose(readFileSync(path.join(root, file), 'utf8')).forEach((line, index) => {
    for (const match of line.matchAll(/`((?:src|tests|scripts|bench|site)\/[^`\s]*)`/g)) {
      const named = match[1].replace(/:\d+$/, '');
      if (/[*<>{}]/.test(named)) continue;
      if (!existsSync(path.join(root, named))) missing.push(`${file}:${index + 1}: ${named}`);
    }
  });
  return missing;
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
 * tests as a file and quoted titles (`tests/x.test.mjs` “title” “title”), host tests as Rust
 * paths (`module::tests::name`). A file named with no title after it is kept as such, so the
 * rule can refuse it.
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
      if (m[1]) {
        file = m[1];
        named.push({ file, title: null });
      } else if (m[2] && file) {
        if (named.at(-1)?.file === file && named.at(-1).title === null) named.pop();
        named.push({ file, title: m[2] });
      } else if (m[3]) named.push({ rust: m[3] });
    }
    return { threat, cells: cells.length, named };
  });
}

/** The marker above a table whose rows' first strings are test titles (a per-case pattern). */
export const CASE_TITLES_MARKER = "// Test titles: each row's first string.";

/**
 * Every test title of the test file `source` (its text): the first argument of each `test(`,
 * `it(` and `describe(` call that is a string literal (a template literal's `${x}` kept as
 * `{x}`), and each per-case title: the first string of each row of a table marked with
 * [CASE_TITLES_MARKER], in a file that names a test by a variable (`test(name, …)`).
 */
export function testTitles(source) {
  const titles = new Set();
  const call = /\b(?:test|it|describe)(?:\.(?:skip|only|todo))?\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/gs;
  for (const m of source.matchAll(call)) {
    const raw = m[2].replace(/\\(['"`\\])/g, '$1');
    titles.add(m[1] === '`' ? raw.replace(/\$\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}/g, '{$1}') : raw);
  }
  if (/\b(?:test|it)\(\s*[A-Za-z_][A-Za-z0-9_]*\s*,/.test(source)) {
    const lines = source.split('\n');
    lines.forEach((line, at) => {
      if (line.trim() !== CASE_TITLES_MARKER) return;
      for (const row of lines.slice(at + 1)) {
        if (/^\s*\];/.test(row)) break;
        const first = row.match(/^\s*\[\s*(['"])((?:\\.|(?!\1)[^\\])*)\1\s*,/);
        if (first) titles.add(first[2].replace(/\\(['"\\])/g, '$1'));
      }
    });
  }
  return titles;
}

/** `text` with Rust comments and string and character literals blanked (lines kept). */
function rustCode(text) {
  return text.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|r(#*)"[\s\S]*?"\1|b?"(?:\\[\s\S]|[^"\\])*"|b?'(?:\\.|[^'\\\n])'/g,
    (found) => found.replace(/[^\n]/g, ' '));
}

/**
 * The full module path of every `#[test]` function under `root`/src, as `a::b::tests::name`:
 * each file's module path from where it lies (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`),
 * then the inline modules (`mod x { … }`) around the function.
 */
const rustTestsOf = new Map();
export function rustTests(root = ROOT) {
  if (rustTestsOf.has(root)) return rustTestsOf.get(root);
  const found = new Set();
  rustTestsOf.set(root, found);
  const src = path.join(root, 'src');
  for (const file of readdirSync(src, { recursive: true }).filter((f) => f.endsWith('.rs'))) {
    const parts = file.replace(/\.rs$/, '').split(path.sep);
    if (parts.at(-1) === 'mod' || parts.at(-1) === 'lib') parts.pop();
    const code = rustCode(readFileSync(path.join(src, file), 'utf8'));
    const open = []; // inline modules: [name, depth of their braces]
    let depth = 0;
    const token = /\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{|\bfn\s+([A-Za-z_][A-Za-z0-9_]*)|[{}]/g;
    for (const m of code.matchAll(token)) {
      if (m[1]) {
        depth += 1;
        open.push([m[1], depth]);
      } else if (m[2]) {
        // The attributes before it, back to the previous item's end.
        const before = code.slice(Math.max(0, m.index - 400), m.index).replace(/\s*(?:pub(?:\([^)]*\))?\s+|async\s+|const\s+|unsafe\s+)*$/, '');
        const attributes = before.match(/(?:#\[[^\]]*\]\s*)+$/)?.[0] ?? '';
        if (/#\[\s*test\s*\]/.test(attributes)) found.add([...parts, ...open.map(([name]) => name), m[2]].join('::'));
      } else if (m[0] === '{') {
        depth += 1;
      } else {
        if (open.at(-1)?.[1] === depth) open.pop();
        depth -= 1;
      }
    }
  }
  return found;
}

/**
 * What is wrong with the tests a threat's row names, under the exact rule: a named file must
 * exist and be followed by at least one title; each title must be one of that file's test
 * titles (see [testTitles]); each Rust path must be a `#[test]` function at that module path
 * under src/ (see [rustTests]).
 */
export function namedTestProblems(named, root = ROOT) {
  const problems = [];
  const titles = new Map();
  for (const n of named) {
    if (n.rust) {
      if (!rustTests(root).has(n.rust)) problems.push(`no #[test] fn ${n.rust} under src/`);
      continue;
    }
    if (!existsSync(path.join(root, n.file))) {
      problems.push(`no file ${n.file}`);
      continue;
    }
    if (n.title === null) {
      problems.push(`${n.file} is named without a test title`);
      continue;
    }
    if (!titles.has(n.file)) titles.set(n.file, testTitles(readFileSync(path.join(root, n.file), 'utf8')));
    if (!titles.get(n.file).has(n.title)) problems.push(`no test “${n.title}” in ${n.file}`);
  }
  return problems;
}

test('every threat in SECURITY.md names tests that exist', () => {
  const rows = threatRows();
  assert.ok(rows.length >= 20, `${rows.length} rows read`);
  const problems = [];
  for (const { threat, cells, named } of rows) {
    if (cells !== 4) problems.push(`${threat}: ${cells} cells, not 4`);
    if (!named.some((n) => n.file)) problems.push(`${threat}: names no end-to-end test`);
    for (const problem of namedTestProblems(named)) problems.push(`${threat}: ${problem}`);
  }
  assert.deepEqual(problems, []);
});

test('the rule is exact: a title must be a test\'s, a file must exist, a Rust test must be a #[test] at its path', () => {
  const source = [
    "test('a plain title', () => {});",
    "describe(\"a group's title\", () => {});",
    'test(`a ${provider} template`, () => {});',
    "assert.equal(x, 1, 'an assertion message, no test');",
    `  ${CASE_TITLES_MARKER}`,
    '  const cases = [',
    "    ['a case', 1],",
    '  ];',
    "  const other = [['not marked', 2]];",
    '  for (const [name] of cases) test(name, () => {});',
  ].join('\n');
  const titles = testTitles(source);
  for (const title of ['a plain title', "a group's title", 'a {provider} template', 'a case']) assert.ok(titles.has(title), title);
  for (const title of ['an assertion message, no test', 'not marked', 'a plain', 'a {x} template']) assert.ok(!titles.has(title), title);
  const rust = rustTests();
  assert.ok(rust.has('admin::tests::the_token_is_compared_through_the_constant_time_primitive'));
  assert.ok(rust.has('providers::stripe::tests::fuzz::a_header_is_accepted_exactly_when_a_fresh_signature_matches'), 'an inline module');
  assert.ok(!rust.has('admin::authorized'), 'a function that is no test');
  assert.ok(!rust.has('failures::tests::config'), 'a helper in a test module');
  assert.ok(!rust.has('tests::the_token_is_compared_through_the_constant_time_primitive'), 'the wrong module path');
  assert.deepEqual(namedTestProblems([{ file: 'tests/none.test.mjs', title: 'x' }]), ['no file tests/none.test.mjs']);
  assert.deepEqual(namedTestProblems([{ file: 'tests/docs.test.mjs', title: null }]), ['tests/docs.test.mjs is named without a test title']);
  assert.deepEqual(namedTestProblems([{ file: 'tests/docs.test.mjs', title: 'GitHub heading' }]), ['no test “GitHub heading” in tests/docs.test.mjs']);
  assert.deepEqual(namedTestProblems([{ rust: 'mac::hmac_sha256' }]), ['no #[test] fn mac::hmac_sha256 under src/']);
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

test('every source path the documents name exists', () => {
  const missing = documents().flatMap((file) => missingPaths(file));
  assert.deepEqual(missing, [], `paths that do not exist:\n  ${missing.join('\n  ')}`);
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
