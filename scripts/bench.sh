#!/usr/bin/env bash
# `npm run bench`: builds the release worker, then measures it against the floor and writes
# BENCHMARKS.md (see bench/run.mjs). BENCH_ROUNDS, BENCH_UNIQUE, BENCH_REPEATS and
# BENCH_CONCURRENCY change the load; BENCH_TRANSPORTS=direct (or wrangler) measures one
# transport; BENCH_SKIP_HOST=1 skips the host micro-benchmarks, BENCH_SKIP_ANATOMY=1 the probes
# of where a duplicate's cost goes (bench/anatomy/).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/build.sh
export TMPDIR="$ROOT/.wrangler/tmp"
mkdir -p "$TMPDIR"
node bench/run.mjs
