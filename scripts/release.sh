#!/usr/bin/env bash
# `npm run release -- X.Y.Z`: releases version X.Y.Z. It writes the version everywhere it is
# kept (Cargo.toml and the Cargo.lock files, package.json and package-lock.json, the README),
# moves the changelog's Unreleased section under `## [X.Y.Z] - <today>`, then commits and tags
# `vX.Y.Z`. Run it on a clean tree, after `npm test` passed; push the tag with the commit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
version=${1:-}
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "release: usage: npm run release -- X.Y.Z (a semantic version)" >&2
  exit 2
fi
if [ -n "$(git status --porcelain)" ]; then
  echo "release: the tree has uncommitted changes; commit them first" >&2
  exit 1
fi
if git rev-parse -q --verify "refs/tags/v$version" >/dev/null; then
  echo "release: the tag v$version exists already" >&2
  exit 1
fi
current=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
if [ "$(printf '%s\n%s\n' "$current" "$version" | sort -V | tail -n 1)" != "$version" ] || [ "$current" = "$version" ]; then
  echo "release: $version is not newer than the current version $current" >&2
  exit 1
fi
node scripts/release-files.mjs "$version"
git add -A
git commit -q -m "Release $version"
git tag -a "v$version" -m "webhook-dedup $version (see CHANGELOG.md)"
echo "release: committed and tagged v$version; push both: git push && git push origin v$version" >&2
