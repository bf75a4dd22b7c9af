#!/usr/bin/env bash
# Installs everything the project needs, pinned, into the project itself. Idempotent: when all
# is in place it only checks versions (well under 2 s).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

say() { printf 'setup: %s\n' "$*" >&2; }

# 1. The WebAssembly target for the toolchain rust-toolchain/rustup selects here.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    say "adding rustup component $component"
    rustup component add "$component"
  fi
done

# 2. The wasm-bindgen CLI must be the library's version in Cargo.lock.
locked=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$locked" != "$WASM_BINDGEN_VERSION" ]; then
  echo "setup: Cargo.lock has wasm-bindgen $locked but scripts/env.sh pins the CLI at $WASM_BINDGEN_VERSION; make them equal" >&2
  exit 1
fi

# 3. Pinned cargo tools in .tools/ (git-ignored), installed only when missing or of another version.
install_tool() { # crate version binary
  local crate=$1 version=$2 binary=$3 have=""
  if [ -x "$TOOLS/bin/$binary" ]; then
    have=$("$TOOLS/bin/$binary" --version 2>/dev/null | awk '{print $NF}' | sed 's/^v//')
  fi
  if [ "$have" != "$version" ]; then
    say "installing $crate $version into .tools (a few minutes, once)"
    cargo install "$crate" --version "$version" --locked --root "$TOOLS" --force
  fi
}
install_tool worker-build "$WORKER_BUILD_VERSION" worker-build
install_tool wasm-bindgen-cli "$WASM_BINDGEN_VERSION" wasm-bindgen

# 4. npm packages, exactly as locked; re-installed when package-lock.json changed.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi
