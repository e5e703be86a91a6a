#!/usr/bin/env bash
# compile.sh: BenchmarkCompile (internal/desired) of this tree against a
# baseline commit, interleaved run by run so that both see the same machine;
# prints benchstat's comparison and each benchmark's median and range.
#   BASE=<commit> COUNT=8 bash hack/bench/compile.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${BASE:?BASE=<commit> to compare with}
count=${COUNT:-8}
out=$(mktemp -d)
trap 'git worktree remove --force "$out/base" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

git worktree add --detach "$out/base" "$base" >/dev/null
(cd "$out/base" && go test -c -o "$out/base.test" ./internal/desired)
go test -c -o "$out/head.test" ./internal/desired
for i in $(seq "$count"); do
	for v in base head; do
		(cd internal/desired && "$out/$v.test" -test.run '^$' -test.bench Compile -test.benchmem -test.count 1) >>"$out/$v.txt"
	done
	echo "run $i of $count" >&2
done
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da \
	-filter '.unit:(sec/op OR B/op OR allocs/op)' base="$out/base.txt" head="$out/head.txt"
for v in base head; do
	echo "$v ($([ $v = base ] && echo "$base" || git rev-parse --short HEAD)):"
	awk -f hack/bench/median-range.awk "$out/$v.txt"
done
