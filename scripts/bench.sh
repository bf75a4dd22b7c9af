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
# to a memory file system where there is one: on this machine's disk, creating each new object's
# files costs the kernel about 4 ms per object (inode allocation, fsync), most of a unique
# delivery's CPU, alike for every kind measured, and not what Cloudflare bills. BENCH_TMPDIR
# chooses the folder (e.g. BENCH_TMPDIR="$ROOT/.wrangler/tmp" to measure with the disk).
if [ -z "${BENCH_TMPDIR:-}" ]; then
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    BENCH_TMPDIR=/dev/shm/webhook-dedup-bench
  else
    BENCH_TMPDIR="$ROOT/.wrangler/tmp"
  fi
fi
export TMPDIR="$BENCH_TMPDIR"
mkdir -p "$TMPDIR"
node bench/run.mjs
