# Sourced by every script: where the project's tools live and how local runs behave.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
TOOLS="$ROOT/.tools"
export TOOLS
# Pinned versions. WASM_BINDGEN_VERSION must equal the wasm-bindgen library in Cargo.lock.
WORKER_BUILD_VERSION="0.8.7"
WASM_BINDGEN_VERSION="0.2.129"
export PATH="$TOOLS/bin:$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# worker-build would download these from GitHub; point it at the pinned local ones instead.
export WASM_BINDGEN_BIN="$TOOLS/bin/wasm-bindgen"
export ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
# Local runs send nothing to Cloudflare.
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_LOG_PATH="$ROOT/.wrangler/logs"
