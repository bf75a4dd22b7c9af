// Writes version `process.argv[2]` everywhere the project keeps its version, and moves the
// changelog's Unreleased section under the new version with today's date (UTC). Used by
// scripts/release.sh; changes files only.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const version = process.argv[2];
const edit = (file, change) => {
  const where = path.join(ROOT, file);
  const before = readFileSync(where, 'utf8');
  const after = change(before);
  if (after === before) throw new Error(`${file}: nothing to change`);
  writeFileSync(where, after);
};

edit('Cargo.toml', (text) => text.replace(/^version = "[^"]+"/m, `version = "${version}"`));
for (const lock of ['Cargo.lock', 'bench/host/Cargo.lock', 'fuzz/Cargo.lock']) {
  edit(lock, (text) => text.replace(/(name = "webhook-dedup"\nversion = )"[^"]+"/, `$1"${version}"`));
}
for (const file of ['package.json', 'package-lock.json']) {
  edit(file, (text) => {
    const json = JSON.parse(text);
    json.version = version;
    if (json.packages?.['']) json.packages[''].version = version;
    return `${JSON.stringify(json, null, 2)}\n`;
  });
}
edit('README.md', (text) => text.replace(/describes version \d+\.\d+\.\d+/, `describes version ${version}`));
edit('CHANGELOG.md', (text) => {
  const [before, rest] = text.split(/^## \[Unreleased\]\n/m);
  if (rest === undefined) throw new Error('CHANGELOG.md has no ## [Unreleased] section');
  const next = rest.search(/^## \[/m);
  const unreleased = next < 0 ? rest : rest.slice(0, next);
  const older = next < 0 ? '' : rest.slice(next);
  // Sections left empty are dropped from the release.
  const sections = unreleased.split(/^(?=### )/m).filter((part) => part.trim() && !/^### \w+\s*$/.test(part.trim()));
  if (!sections.some((part) => part.startsWith('### '))) throw new Error('CHANGELOG.md: nothing under Unreleased to release');
  const today = new Date().toISOString().slice(0, 10);
  const body = sections.map((part) => `${part.trim()}\n`).join('\n');
  return `${before}## [Unreleased]\n\n## [${version}] - ${today}\n\n${body}\n${older}`;
});
