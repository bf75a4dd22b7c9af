#!/usr/bin/env bash
# `npm run deploy`: sets up what deploying needs (never a browser or the test tools), builds the
# release worker, then runs the pinned `wrangler deploy` on the Node.js setup chose. Arguments
# go to wrangler: `npm run deploy -- --dry-run` builds and shows the bindings and the upload's
# size without deploying (no Cloudflare account needed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
SKIP_SETUP=1 bash scripts/build.sh
# wrangler.toml ships ORIGIN_URL = "": say so before a real deploy, since every route of such a
# worker answers 500 `misconfigured` (the value may instead be a secret, or given with --var).
if grep -Eq '^ORIGIN_URL = ""' wrangler.toml && [[ " $* " != *" --dry-run "* ]] && [[ " $* " != *"ORIGIN_URL:"* ]]; then
  echo 'deploy: ORIGIN_URL is empty in wrangler.toml: until it is set (there, or as a secret), every route answers 500 misconfigured' >&2
fi
exec wrangler deploy "$@"
