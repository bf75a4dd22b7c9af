#!/usr/bin/env bash
# `npm run chaos`: builds the release worker, then runs the chaos run (tests/chaos/cli.mjs) with
# the given options, e.g. `npm run chaos -- --events 200 --write`, or `-- --repeat 50` for the
# loop (see docs/testing.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/build.sh
# Its own temporary folder: scripts/e2e.sh empties .wrangler/tmp, which would pull the storage
# from under a chaos run (or a loop of them) going on meanwhile.
export TMPDIR="$ROOT/.wrangler/chaos-tmp"
mkdir -p "$TMPDIR"
node tests/chaos/cli.mjs "$@"
