# median-range.awk: the median and range of ns/op per benchmark in `go test
# -bench` output (several -count runs, or several files), in milliseconds.
#   awk -f hack/bench/median-range.awk old.txt new.txt
/^Benchmark/ {
	for (i = 3; i <= NF; i++) if ($(i+1) == "ns/op") { n[$1]++; v[$1, n[$1]] = $i / 1e6 }
	if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 }
}
END {
	for (j = 1; j <= k; j++) {
		b = order[j]; m = n[b]
		for (x = 1; x <= m; x++) s[x] = v[b, x]
		for (x = 2; x <= m; x++) for (y = x; y > 1 && s[y-1] > s[y]; y--) { t = s[y]; s[y] = s[y-1]; s[y-1] = t }
		med = (m % 2) ? s[(m+1)/2] : (s[m/2] + s[m/2+1]) / 2
		printf "%-48s n=%d  median %.2f ms  range %.2f–%.2f ms\n", b, m, med, s[1], s[m]
	}
}
