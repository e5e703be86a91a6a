#!/usr/bin/env bash
# Time to first render of the console's deployment page on `nebula dev`
# (docs/benchmarks.md): starts bin/nebula dev on a free loopback port in a
# throwaway directory, then web/test/firstrender.mjs signs in with the
# console link it printed, deploys the demo service and opens its
# deployment page RUNS times in headless Chromium (NEBULA_BIN: another
# nebula binary to measure, for a comparison). Needs Node 20 and
# Debian's chromium (as the browser tests do).
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${RUNS:-6}"
root="$PWD"
dir="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
(cd "$dir" && NEBULA_ADDR="127.0.0.1:$port" NEBULA_LOG_LEVEL=warn exec "${NEBULA_BIN:-$root/bin/nebula}" dev >"$dir/out" 2>"$dir/err") &
pid=$!
for _ in $(seq 1 120); do
  grep -q 'subscription { buildLog' "$dir/out" 2>/dev/null && break
  sleep 0.5 # waiting for nebula dev to start
done
grep -q 'subscription { buildLog' "$dir/out" || { cat "$dir/out" "$dir/err"; echo "nebula dev did not start"; exit 1; }
ids="$(grep -o 'serviceId: "[^"]*", environmentId: "[^"]*",$' "$dir/out" | head -1)"
test -d web/node_modules/playwright-core || (cd web && npm ci --no-audit --no-fund --loglevel=error)
cd web
NEBULA_URL="http://127.0.0.1:$port" NEBULA_RUNS="$RUNS" CHROMIUM="${CHROMIUM:-$(command -v chromium)}" \
  NEBULA_TOKEN="$(grep -o 'nbt_[A-Za-z0-9]*' "$dir/out" | head -1)" \
  NEBULA_CONSOLE_LINK="$(grep -o 'http://[^ ]*/invitation#nbi_[A-Za-z0-9_-]*' "$dir/out" | head -1)" \
  NEBULA_SERVICE="$(sed -E 's/serviceId: "([^"]*)".*/\1/' <<<"$ids")" \
  NEBULA_ENVIRONMENT="$(sed -E 's/.*environmentId: "([^"]*)".*/\1/' <<<"$ids")" \
  node test/firstrender.mjs
