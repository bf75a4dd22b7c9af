#!/usr/bin/env bash
# `npm run chaos`: builds the release worker, then runs the chaos run (tests/chaos/cli.mjs) with
# the given options, e.g. `npm run chaos -- --events 200 --write`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/build.sh
export TMPDIR="$ROOT/.wrangler/tmp"
mkdir -p "$TMPDIR"
node tests/chaos/cli.mjs "$@"
