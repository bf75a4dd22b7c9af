#!/usr/bin/env bash
# `npm run wrangler -- <arguments>`: the project's pinned wrangler, run by the Node.js that
# scripts/setup.sh chose (wrangler needs Node.js 22.12 or later; the machine's may be older).
# Every wrangler command the docs name goes through here: login, secret put, tail, rollback…
#   npm run wrangler -- login
#   npm run wrangler -- secret put STRIPE_WEBHOOK_SECRET
#   npm run wrangler -- tail --format pretty
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
bash scripts/setup.sh
exec wrangler "$@"
