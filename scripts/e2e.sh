#!/usr/bin/env bash
# Runs the end-to-end tests (tests/*.test.mjs) against the already built worker in build/.
# Pass file names to run only those: npm run test:e2e -- tests/health.test.mjs
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
if [ ! -f build/index.js ]; then
  echo "e2e: build/index.js is missing; run npm run build first" >&2
  exit 1
fi
export TMPDIR="$ROOT/.wrangler/tmp"
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
if [ "$#" -eq 0 ]; then
  set -- tests/*.test.mjs
fi
# A test that hangs fails after ten minutes, and a file whose tests are done exits even if a
# runtime it started is still alive, so one stuck test cannot hold CI.
node --test --test-concurrency=1 --test-timeout=600000 --test-force-exit "$@"
