# metric-range.awk: the median and range of each custom metric that a
# benchmark reports (b.ReportMetric: time-ratio, graphql-ns/op, …) over
# several -count runs, in `go test -bench` output.
#   awk -f hack/bench/metric-range.awk runs.txt
/^Benchmark/ {
	for (i = 3; i < NF; i += 2) {
		u = $(i+1)
		if (!(u in n)) order[++k] = u
		n[u]++; v[u, n[u]] = $i
	}
}
END {
	for (j = 1; j <= k; j++) {
		u = order[j]; m = n[u]
		for (x = 1; x <= m; x++) s[x] = v[u, x]
		for (x = 2; x <= m; x++) for (y = x; y > 1 && s[y-1] > s[y]; y--) { t = s[y]; s[y] = s[y-1]; s[y-1] = t }
		med = (m % 2) ? s[(m+1)/2] : (s[m/2] + s[m/2+1]) / 2
		printf "  %-24s n=%d  median %.4g  range %.4g–%.4g\n", u, m, med, s[1], s[m]
	}
}
