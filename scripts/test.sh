#!/usr/bin/env bash
# Everything CI checks, in order: format, lints (host and wasm32), host tests, the release
# wasm build, then the end-to-end tests against the real worker on the real runtime.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh --tests
step() { printf '\n== %s\n' "$*" >&2; }
step "cargo fmt --check"
cargo fmt --check
step "cargo clippy (host)"
cargo clippy --all-targets --locked -- -D warnings
step "cargo clippy (wasm32)"
cargo clippy --target wasm32-unknown-unknown --lib --locked -- -D warnings
step "cargo test"
cargo test --locked
step "release wasm build"
SKIP_SETUP=1 bash scripts/build.sh
step "end-to-end tests"
bash scripts/e2e.sh
