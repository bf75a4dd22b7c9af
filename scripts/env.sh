# Sourced by every script: where the project's tools live and how local runs behave.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
TOOLS="$ROOT/.tools"
export TOOLS
# Pinned versions. WASM_BINDGEN_VERSION must equal the wasm-bindgen library in Cargo.lock.
WASM_BINDGEN_VERSION="0.2.129"
# The project's JavaScript tools (wrangler 4.164 and its workerd, and the tests' node:sqlite) need Node.js >= NODE_MIN_VERSION.
# When the machine's own Node.js is older, scripts/setup.sh installs NODE_VERSION (the current
# Node.js 24 LTS) from the npm registry's platform package into .tools/node, used from then on.
NODE_MIN_VERSION="22.13.0"
NODE_VERSION="24.22.3"
export PATH="$TOOLS/node/bin:$TOOLS/bin:$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# Local runs send nothing to Cloudflare.
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_LOG_PATH="$ROOT/.wrangler/logs"
