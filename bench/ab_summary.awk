# ab_summary.awk -- bench/ab_client.sh's table: input lines "SIDE REP JSONLINE"
# (SIDE A or B, REP the repetition, JSONLINE one run of the driver's JSON
# "runs" array); per (scenario, point, system): the median rate of A and of B
# over the repetitions and the median of the per-repetition ratios B/A.
function field(line, name,    m) {
	if (match(line, "\"" name "\": (\"[^\"]*\"|[-0-9.e+]+)")) {
		m = substr(line, RSTART + length(name) + 4, RLENGTH - length(name) - 4)
		gsub(/"/, "", m)
		return m
	}
	return ""
}
function median(list,    n, v, i, j, t) {
	n = split(list, v, " ")
	for (i = 2; i <= n; i++)	# insertion sort: a handful of values
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{
	side = $1; rep = $2
	line = $0
	key = field(line, "scenario") " " field(line, "point") " " field(line, "system")
	rate = field(line, "rate")
	if (rate == "" || field(line, "errors") + 0 > 0) { failed[key] = 1; next }
	if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
	r[side, key, rep] = rate
	reps[rep] = 1
}
END {
	print "| scenario | point | system | A /s (median) | B /s (median) | B/A (median of per-repetition ratios) |"
	print "|---|---:|---|---:|---:|---:|"
	for (k = 1; k <= nkeys; k++) {
		key = order[k]
		la = lb = lr = ""
		for (rep in reps) {
			if ((("A", key, rep) in r) && (("B", key, rep) in r)) {
				la = la " " r["A", key, rep]; lb = lb " " r["B", key, rep]
				lr = lr " " r["B", key, rep] / r["A", key, rep]
			}
		}
		split(key, kk, " ")
		if (lr == "")
			printf "| %s | %s | %s | — | — | no pair of runs%s |\n", kk[1], kk[2], kk[3], (key in failed) ? " (a run failed)" : ""
		else
			printf "| %s | %s | %s | %.0f | %.0f | %.3f%s |\n", kk[1], kk[2], kk[3], median(la), median(lb), median(lr),
			       (key in failed) ? " (a run failed)" : ""
	}
}
