#!/usr/bin/env bash
# Builds the release worker into build/: index.js (src/entry.mjs bundled with wasm-bindgen's
# glue) and index_bg.wasm (optimised by wasm-opt). The steps are the SDK's own (cargo,
# wasm-bindgen with the SDK's panic-recovery flags, wasm-opt, esbuild), with this project's
# entry in place of the generated one (see src/entry.mjs for why).
#   KEEP_WASM_NAMES=1  a build to profile: keeps the wasm names section (function names in stack
#                      traces and profiles) and leaves the JavaScript unminified.
#   WASM_OPT_LEVEL     wasm-opt's optimisation flag, -Oz by default (see BENCHMARKS.md).
#   OUT_DIR            where to write, build/ by default.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
if [ "${SKIP_SETUP:-}" != "1" ]; then
  bash scripts/setup.sh
fi
say() { printf 'build: %s\n' "$*" >&2; }

say "cargo build (wasm32, release)"
cargo build --release --locked --target wasm32-unknown-unknown --lib
wasm=${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/webhook_dedup.wasm

out=${OUT_DIR:-build}
mkdir -p "$out"
staging=$out/.staging
rm -rf "$staging"
mkdir -p "$staging"
# --target module: the glue imports the module itself (a compiled WebAssembly.Module, as
# workerd gives it) and instantiates it; the two flags let it start a fresh instance after a
# panic, as the SDK's own build does.
say "wasm-bindgen $WASM_BINDGEN_VERSION"
wasm-bindgen "$wasm" --out-dir "$staging" --out-name glue --target module --no-typescript \
  --experimental-reset-state-function --force-enable-abort-handler
# workerd imports a .wasm module as a compiled module by a plain import.
sed -i.bak -e 's#^import source wasmModule from "./glue_bg.wasm";#import wasmModule from "./index_bg.wasm";#' \
  "$staging/glue.js"
if ! grep -q '^import wasmModule from "./index_bg.wasm";' "$staging/glue.js"; then
  echo "build: wasm-bindgen's glue no longer imports its module as expected; see scripts/build.sh" >&2
  exit 1
fi
# js-sys runs Rust futures from a microtask, scheduled with `queueMicrotask` when the global has
# one, else with `then` on a resolved promise. In workerd the first is a host call costing about
# 55 times the second (`node bench/microtask.mjs`), made several times per request; the
# glue's answer to "is there a queueMicrotask?" is made "no", so js-sys takes the promise.
perl -0pi -e 's/(__wbg_queueMicrotask_[0-9a-f]+: function\(arg0\) \{\n\s*const ret = )arg0\.queueMicrotask;/${1}undefined;/' \
  "$staging/glue.js"
if ! perl -0ne 'exit(/__wbg_queueMicrotask_[0-9a-f]+: function\(arg0\) \{\n\s*const ret = undefined;/ ? 0 : 1)' \
  "$staging/glue.js"; then
  echo "build: wasm-bindgen's glue no longer asks for queueMicrotask as expected; see scripts/build.sh" >&2
  exit 1
fi
# After a trap (a Rust panic ends in one too) the glue starts a fresh instance at the next call
# into it, in its guard. A closure's wrapper (a Rust future's promise callback) compares its
# instance with the current one before that guard runs: when such a callback is the first call
# after the trap (another call of the isolate was awaiting its origin, say), the check passes,
# the guard starts the fresh instance, and the old closure's pointers would run against the new
# instance's memory. The guard is run first, so the check sees the fresh instance and the stale
# callback throws ("Cannot invoke closure from previous WASM instance") without touching it.
perl -0pi -e 's/(const real = \(\.\.\.args\) => \{\n)(\s*\n)?(\s*)(if \(state\.instance !== __wbg_instance_id\) \{)/${1}${3}__wbg_call_guard();\n${3}${4}/' \
  "$staging/glue.js"
wrappers=$(grep -c 'const real = (...args) => {' "$staging/glue.js" || true)
guarded=$(perl -0ne 'my $n = () = /const real = \(\.\.\.args\) => \{\n\s*__wbg_call_guard\(\);\n\s*if \(state\.instance !== __wbg_instance_id\) \{/g; print $n' \
  "$staging/glue.js")
if [ "$wrappers" = 0 ] || [ "$wrappers" != "$guarded" ]; then
  echo "build: wasm-bindgen's closure wrapper no longer reads as expected ($guarded of $wrappers guarded); see scripts/build.sh" >&2
  exit 1
fi
cp src/entry.mjs "$staging/entry.mjs"

say "wasm-opt"
strip=(--strip-debug --strip-producers)
minify=(--minify)
if [ "${KEEP_WASM_NAMES:-}" = "1" ]; then
  strip=(--debuginfo)
  minify=()
fi
# The features workerd supports, named one by one (as the SDK does) so that no newer encoding
# is emitted before the runtime reads it.
wasm-opt "$staging/glue_bg.wasm" -o "$staging/index_bg.wasm" "${WASM_OPT_LEVEL:--Oz}" "${strip[@]}" \
  --enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int \
  --enable-bulk-memory --enable-multivalue --enable-reference-types --enable-exception-handling

say "esbuild"
esbuild "$staging/entry.mjs" --bundle --format=esm "${minify[@]}" --log-level=warning \
  --external:./index_bg.wasm --external:cloudflare:workers --outfile="$staging/index.js"

# Replace the previous build only once every step has succeeded.
mv "$staging/index.js" "$out/index.js"
mv "$staging/index_bg.wasm" "$out/index_bg.wasm"
rm -rf "$staging" "$out/worker" "$out/package.json"
say "$out/index.js $(wc -c < "$out/index.js") bytes, $out/index_bg.wasm $(wc -c < "$out/index_bg.wasm") bytes"
