#!/usr/bin/env bash
# Builds the release worker into build/ (the shim, the bundled JS glue and the optimised wasm).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
if [ "${SKIP_SETUP:-}" != "1" ]; then
  bash scripts/setup.sh
fi
worker-build --release
# worker-build keeps the names section (function names for stack traces), a fifth of the
# module; drop it unless KEEP_WASM_NAMES=1. Same feature set as worker-build's own wasm-opt run.
if [ "${KEEP_WASM_NAMES:-}" != "1" ]; then
  wasm-opt build/index_bg.wasm -o build/index_bg.wasm --strip-debug --strip-producers \
    --enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int \
    --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling
fi
