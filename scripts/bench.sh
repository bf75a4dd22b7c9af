#!/usr/bin/env bash
# `npm run bench`: builds the release worker, then measures it against the floor and writes
# BENCHMARKS.md (see bench/run.mjs). BENCH_ROUNDS, BENCH_UNIQUE, BENCH_REPEATS and
# BENCH_CONCURRENCY change the load; BENCH_TRANSPORTS=direct (or wrangler) measures one
# transport; BENCH_SKIP_HOST=1 skips the host micro-benchmarks, BENCH_SKIP_ANATOMY=1 the probes
# of where a duplicate's cost goes (bench/anatomy/); BENCH_TMPDIR (below) where the runtimes keep
# their objects' storage.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/build.sh
# The runtimes' Durable Object storage (each object's SQLite files) and other temporary files go
# to a memory file system where there is one with room (1 GiB free): on a disk, creating each new
# object's files puts the file system's own cost (inode allocation, fsync) on every unique
# delivery, alike for every kind measured and not CPU that Cloudflare bills a Worker for (see
# BENCHMARKS.md). BENCH_TMPDIR chooses the folder instead (e.g. BENCH_TMPDIR=.wrangler/tmp to
# measure with the disk). The folder chosen here is removed after the run.
if [ -z "${BENCH_TMPDIR:-}" ]; then
  BENCH_TMPDIR="$ROOT/.wrangler/tmp"
  if [ -d /dev/shm ] && [ -w /dev/shm ] \
    && [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge 1048576 ]; then
    BENCH_TMPDIR=$(mktemp -d /dev/shm/webhook-dedup-bench.XXXXXX)
    trap 'rm -rf "$BENCH_TMPDIR"' EXIT
  fi
fi
export TMPDIR="$BENCH_TMPDIR"
mkdir -p "$TMPDIR"
node bench/run.mjs
