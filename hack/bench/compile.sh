#!/usr/bin/env bash
# compile.sh: BenchmarkCompile (internal/desired) of this tree against a
# baseline commit, interleaved run by run so that both see the same machine;
# prints benchstat's comparison and each benchmark's median and range.
#   BASE=<commit> COUNT=8 bash hack/bench/compile.sh
count=${COUNT:-8}
source "$(dirname "$0")/interleave.sh"

interleave internal/desired -test.run '^$' -test.bench Compile -test.benchmem
go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da \
	-filter '.unit:(sec/op OR B/op OR allocs/op)' base="$out/base.txt" head="$out/head.txt"
for v in base head; do
	echo "$v ($(label $v)):"
	awk -f hack/bench/median-range.awk "$out/$v.txt"
done
