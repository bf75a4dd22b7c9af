#!/usr/bin/env bash
# Builds the release worker into build/ (the shim, the bundled JS glue and the optimised wasm).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
if [ "${SKIP_SETUP:-}" != "1" ]; then
  bash scripts/setup.sh
fi
worker-build --release
