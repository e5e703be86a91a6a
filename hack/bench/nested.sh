#!/usr/bin/env bash
# nested.sh: BenchmarkNestedRatio (internal/bench: the nested query against
# the plain handler, PostgreSQL) of this tree and of a baseline commit,
# interleaved run by run so that both see the same machine; prints the
# median and range of each metric for each. The environment (GOGC, …)
# applies to both.
#   BASE=<commit> COUNT=6 bash hack/bench/nested.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${BASE:?BASE=<commit> to compare with}
count=${COUNT:-6}
out=$(mktemp -d)
trap 'git worktree remove --force "$out/base" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

git worktree add --detach "$out/base" "$base" >/dev/null
(cd "$out/base" && go test -c -o "$out/base.test" ./internal/bench)
go test -c -o "$out/head.test" ./internal/bench
for i in $(seq "$count"); do
	for v in base head; do
		(cd internal/bench && "$out/$v.test" -test.run '^$' -test.bench NestedRatio -test.count 1) >>"$out/$v.txt"
	done
	echo "run $i of $count" >&2
done
for v in base head; do
	echo "$v ($([ $v = base ] && echo "$base" || git rev-parse --short HEAD)):"
	awk -f hack/bench/metric-range.awk "$out/$v.txt"
done
