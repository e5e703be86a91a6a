#!/usr/bin/env bash
# nested.sh: BenchmarkNestedRatio (internal/bench: the nested query against
# the plain handler, PostgreSQL) of this tree and of a baseline commit,
# interleaved run by run so that both see the same machine; prints the
# median and range of each metric for each. The environment (GOGC, …)
# applies to both.
#   BASE=<commit> COUNT=6 bash hack/bench/nested.sh
#   BASE=<commit> COUNT=6 RAW=runs.txt bash hack/bench/nested.sh   (keeps the raw runs)
count=${COUNT:-6}
source "$(dirname "$0")/interleave.sh"

interleave internal/bench -test.run '^$' -test.bench NestedRatio
for v in base head; do
	echo "$v ($(label $v)):"
	awk -f hack/bench/metric-range.awk "$out/$v.txt"
done
