#!/usr/bin/env bash
# Runs the worker locally on 127.0.0.1:8787 with local Durable Object storage, together with a
# small demo origin that prints every event forwarded to it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
if [ ! -f .dev.vars ]; then
  cp .dev.vars.example .dev.vars
  echo "dev: created .dev.vars from .dev.vars.example (local development settings)" >&2
fi
SKIP_SETUP=1 bash scripts/build.sh
node scripts/demo-origin.mjs &
origin=$!
trap 'kill $origin 2>/dev/null || true' EXIT INT TERM
# The demo origin moved (DEMO_ORIGIN_PORT): events that .dev.vars sends to it follow it.
demo_url=$(node -e "import('./scripts/dev-vars.mjs').then(({ devVar }) => console.log(devVar('ORIGIN_URL') ?? ''))")
if [ -n "${DEMO_ORIGIN_PORT:-}" ] && [[ "$demo_url" == http://127.0.0.1:8788/* ]]; then
  set -- --var "ORIGIN_URL:http://127.0.0.1:${DEMO_ORIGIN_PORT}/${demo_url#http://127.0.0.1:8788/}" "$@"
fi
wrangler dev --ip 127.0.0.1 --port "${PORT:-8787}" "$@"
