#!/usr/bin/env bash
# dupscan.sh REV: counts the near-duplicate pairs (the duplicates tool) in the
# product code at REV: no tests, generated code, migrations or vendored copies.
set -euo pipefail
rev=$1
d=$(mktemp -d)
git -C "$(cd "$(dirname "$0")/.." && pwd)" archive "$rev" | tar -x -C "$d"
cd "$d"
find . -name '*_test.go' -delete
rm -rf third_party internal/argon2 graph/generated.go internal/client/generated.go internal/gid/ids.go web hack/simcluster internal/apitest internal/bench internal/loadrun e2e internal/store/storetest internal/testutil internal/logcheck
find . -path '*/migrations/*' -delete
find . -type f ! -name '*.go' -delete
git init -q . && git add -A >/dev/null 2>&1
duplicates --seconds 120 --most 3 | head -1
rm -rf "$d"
