#!/usr/bin/env bash
# check.sh COUNTER WORKER_LOG... -- the matrix's one checker, the same for
# every provider.  COUNTER is the store's final counter value; the logs are
# the workers' (worker.cpp: G/A/R/E/L/U lines, CLOCK_MONOTONIC microseconds).
# Prints one line of counts:
#   grants=N acks=N rejected=N errors=N lost=N overlaps=N token_bad=N
#
# lost: acknowledged increments minus the counter (each acknowledged write
#   wrote the value it read + 1, so with no lost update the counter equals
#   the number of acknowledged writes; a write whose outcome is unknown (E)
#   can only make the counter larger, never hide a loss).
# overlaps: two holders at once, counted conservatively from the clients'
#   clocks.  Grant A is surely held from its receive time until the earlier
#   of its local deadline (the lease's own conservative deadline: send time
#   + TTL - drift) and the send time of its release.  Grant B (another
#   worker) overlaps A when B was surely granted inside that interval: B's
#   acquire was sent after A's grant was received and B's grant was received
#   before A's interval ended.
# token_bad: a grant B surely after grant A (B sent after A received) whose
#   token is not higher than A's (every acquire has its own holder name, so
#   no grant is an idempotent re-grant).  Providers without tokens (all 0):
#   reported as -1.
set -euo pipefail
counter="$1"
shift
awk -v counter="$counter" '
$1 == "G" { n++; gf[n] = FILENAME; gt[n] = $2; gs[n] = $3; gr[n] = $4; ge[n] = $5; last[FILENAME] = n
	if ($2 != 0) tokens = 1 }
$1 == "L" { i = last[FILENAME]; if (i && gt[i] == $2 && $3 < ge[i]) ge[i] = $3 }
$1 == "A" { acks++ }
$1 == "R" { rejected++ }
$1 == "E" { errors++ }
END {
	overlaps = 0; bad = 0
	for (a = 1; a <= n; a++)
		for (b = 1; b <= n; b++) {
			if (a == b || gs[b] < gr[a]) continue
			if (gf[a] != gf[b] && gr[b] <= ge[a]) overlaps++
			if (tokens && gt[b] <= gt[a]) bad++
		}
	lost = acks - counter
	if (lost < 0) lost = 0
	printf "grants=%d acks=%d rejected=%d errors=%d lost=%d overlaps=%d token_bad=%d\n",
		n, acks, rejected, errors, lost, overlaps, tokens ? bad : -1
}' "$@"
