#!/usr/bin/env bash
# run.sh WORKER -- the partition suite (issue 36): network partitions between
# a lease holder and its server, for PostgreSQL, Redis, etcd and ZooKeeper,
# leases and elections.  Each provider's server runs in a network namespace
# of its own (net.sh: srv), two clients of WORKER (worker.cpp) in two
# others (a, b), a router between them.  A cell:
#
#   1. A (in a) takes the lease (TTL PARTITION_TTL_MS, default 2000; an
#      election: campaigns), auto-renewed;
#   2. 0.7 s later the harness cuts A off (net_cut: linkdown, blackhole,
#      a_to_srv, srv_to_a) and starts B (in b, untouched), which tries every
#      20 ms;
#   3. heals: after_ttl, once B was granted (A's TTL is over); or
#      before_deadline, 300 ms before A's local deadline (A may then renew
#      in time and keep the lease: the "kept" outcome);
#   4. 0.5 s after the heal and, if A lost the lease, once B is granted, A
#      makes the calls of a late holder, or releases if it is still valid; B
#      is stopped once granted;
#   5. check.sh judges the history: on_lost once and by the deadline +
#      100 ms, A's belief over before B's grant, B's token higher, A's late
#      calls refused, every call within its bound.
#
# FAULTS_QUICK=1 (make test): blackhole, after_ttl, leases, each provider.
# Otherwise (make faults) every provider x lease, election x the four cuts x
# both heals, and, unless PARTITION_PROVIDERS / _KINDS / _CUTS / _HEALS limit
# the run, the table goes to tests/faults/results/partitions.md and the
# Partitions section of tests/faults/results/matrix.md.  PARTITION_KEEP=DIR
# keeps the work directory (the logs).  Every server takes a free port in
# its namespace; a missing server program fails the run, naming its package.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
HERE="$ROOT/tests/faults/partition"
source "$HERE/net.sh"
source "$HERE/servers.sh"
W="${1:-$ROOT/build/client/pglease_partition_worker}"
QUICK="${FAULTS_QUICK:-0}"
TTL_MS="${PARTITION_TTL_MS:-2000}"
[ -x "$W" ] || { echo "not ok - partition worker missing: build it (cmake --build BUILD --target pglease_partition_worker)"; exit 1; }
work_dir pg_lease_partition
on_exit '[ -z "${PARTITION_KEEP:-}" ] || cp -r "$WORK" "$PARTITION_KEEP"'
on_exit servers_down
WORKER_PIDS=()
on_exit stop_workers
if [ "$QUICK" = 1 ]; then
	PROVIDERS="${PARTITION_PROVIDERS:-pg redis etcd zk}" KINDS="${PARTITION_KINDS:-lease}"
	CUTS="${PARTITION_CUTS:-blackhole}" HEALS="${PARTITION_HEALS:-after_ttl}"
else
	PROVIDERS="${PARTITION_PROVIDERS:-pg redis etcd zk}" KINDS="${PARTITION_KINDS:-lease election}"
	CUTS="${PARTITION_CUTS:-linkdown blackhole a_to_srv srv_to_a}" HEALS="${PARTITION_HEALS:-after_ttl before_deadline}"
fi
servers_check $PROVIDERS
net_up
TABLE="$WORK/table"
: >"$TABLE"

now_us() { date +%s%6N; }
# field_max FILE TYPE COLUMN -- the largest COLUMN of FILE's TYPE lines (0: none)
field_max() { awk -v t="$2" -v c="$3" '$1 == t && $c > m { m = $c } END { printf "%.0f\n", m }' "$1" 2>/dev/null || echo 0; }
# sleep_until US -- sleep until the wall clock reaches US
sleep_until() {
	local left=$(($1 - $(now_us)))
	[ "$left" -le 0 ] || sleep "$(printf '%d.%06d' $((left / 1000000)) $((left % 1000000)))"
}

# heal_at HEAL DIR -- wait for the moment HEAL names
heal_at() {
	local d="$2" deadline
	if [ "$1" = after_ttl ]; then
		wait_line "$d/b.log" "^G " $((TTL_MS / 1000 + 10)) || true
		sleep 0.3
		return
	fi
	# before_deadline: A's deadline may still move (a renewal answered after the cut)
	while :; do
		deadline=$(($(field_max "$d/a.log" G 5) > $(field_max "$d/a.log" D 2) ? $(field_max "$d/a.log" G 5) : $(field_max "$d/a.log" D 2)))
		[ "$(now_us)" -lt $((deadline - 300000)) ] || return 0
		sleep 0.01
	done
}

# start_worker a|b PROV KIND NAME DIR -- the worker in its namespace, its
# pid in DIR/a.pid (ip netns exec may run it as a child of its own: the pid
# of the background job would not be the worker's)
start_worker() {
	net_exec "$1" sh -c 'echo $$ >"$0"; exec "$@"' "$5/$1.pid" \
		"$W" "$1" "$(cat "$WORK/url-$2")" "$3" "$4" "$TTL_MS" "$5" "$5/$1.log" 2>>"$5/$1.err" &
	wait_file "$5/$1.pid" 5 || die "the worker $1 did not start"
	WORKER_PIDS+=("$(cat "$5/$1.pid")")
}
# stop_pid PID SECONDS -- wait for PID to exit, SIGKILL after SECONDS
stop_pid() { wait_gone "$1" "$2" || { kill -9 "$1" 2>/dev/null || true; }; }
# stop_workers -- every worker still running (the exit hook; a pid that is
# no longer a worker's is left alone)
stop_workers() {
	local p
	for p in "${WORKER_PIDS[@]}"; do
		[[ "$({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)" == "$W "* ]] && kill -9 "$p" 2>/dev/null || true
	done
}

# run_cell PROV KIND CUT HEAL -- one run, judged, one table row
run_cell() {
	local prov="$1" kind="$2" cut="$3" heal="$4" name d apid bpid out rc=0
	name="${prov}_${kind}_${cut}_${heal}"
	d="$WORK/cells/$name"
	mkdir -p "$d"
	start_worker a "$prov" "$kind" "$name" "$d"
	apid="$(cat "$d/a.pid")"
	if ! wait_line "$d/a.log" "^G " 10; then
		kill -9 "$apid" 2>/dev/null || true
		not_ok "partition_$name" "A was not granted within 10 s: $(cat "$d/a.log" "$d/a.err" | tr '\n' ' ')"
		echo "| $(label "$prov") | $kind | $cut | $heal | A not granted | | | | FAILED |" >>"$TABLE"
		return
	fi
	sleep 0.7
	net_cut "$cut"
	echo "cut $(now_us) $cut" >"$d/events"
	start_worker b "$prov" "$kind" "$name" "$d"
	bpid="$(cat "$d/b.pid")"
	heal_at "$heal" "$d"
	net_heal "$cut"
	echo "heal $(now_us)" >>"$d/events"
	sleep 0.5
	# A lost the lease: its late calls wait for B's grant (until then the
	# server's grant may still be A's: a cut server->A lets A's renewals in)
	! grep -q '^V ' "$d/a.log" || wait_line "$d/b.log" "^G " $((TTL_MS / 1000 + 10)) || true
	touch "$d/check"
	stop_pid "$apid" 30
	wait_line "$d/b.log" "^G " $((TTL_MS / 1000 + 10)) || true
	kill -TERM "$bpid" 2>/dev/null || true
	stop_pid "$bpid" 10
	out="$("$HERE/check.sh" "$d/events" "$d/a.log" "$d/b.log")" || rc=$?
	expect "partition_$name" "$(tr '\n' ';' <<<"$out")" '[ "$rc" = 0 ]'
	row "$prov" "$kind" "$cut" "$heal" "$out" "$rc"
}

# row PROV KIND CUT HEAL CHECK_OUTPUT RC -- the cell's table row
row() {
	local outcome lost b late verdict=ok
	eval "$(head -1 <<<"$5" | tr ' ' '\n' | sed -n 's/^\(outcome\|cut_to_lost_ms\|cut_to_b_ms\|lost_after_deadline_ms\)=/\1=/p')"
	[ "$6" = 0 ] || verdict="VIOLATION: $(sed -n 's/^violation: //p' <<<"$5" | paste -sd';')"
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(label "$1")" "$2" "$3" "$4" \
		"${outcome:-}" "${cut_to_lost_ms:-}" "${cut_to_b_ms:-}" "${lost_after_deadline_ms:-}" "$verdict" >>"$TABLE"
}

started=$SECONDS
for prov in $PROVIDERS; do
	if ! server_up "$prov" >"$WORK/start-$prov.out" 2>&1; then
		not_ok "partition_${prov}_server" "did not start in $(net_ns srv): $(tail -5 "$WORK/start-$prov.out" | tr '\n' ' ')"
		continue
	fi
	echo "# $(label "$prov"): $(cat "$WORK/url-$prov")"
	for kind in $KINDS; do
		for cut in $CUTS; do
			for heal in $HEALS; do run_cell "$prov" "$kind" "$cut" "$heal"; done
		done
	done
	server_down "$prov"
done
echo "# partitions: $((SECONDS - started)) s"
sed 's/^/# /' "$TABLE"
if [ "$QUICK" != 1 ] && [ -z "${PARTITION_PROVIDERS:-}${PARTITION_KINDS:-}${PARTITION_CUTS:-}${PARTITION_HEALS:-}" ]; then
	"$HERE/report.sh" "$TABLE" "$((SECONDS - started))" "$TTL_MS" >"$ROOT/tests/faults/results/partitions.md"
	"$HERE/report.sh" --into "$ROOT/tests/faults/results/matrix.md" "$ROOT/tests/faults/results/partitions.md"
fi
finish
