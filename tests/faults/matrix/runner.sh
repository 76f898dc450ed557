#!/usr/bin/env bash
# runner.sh -- the safety matrix (issue 14): the same workload (worker.cpp)
# and the same nemeses (nemeses.sh) for every provider, unfenced and fenced,
# judged by one checker (check.sh).  Writes the table to
# tests/faults/results/matrix.md on a full run (FAULTS_QUICK=0) and exits
# non-zero if a provider that claims fencing tokens loses a fenced update
# under a fault it claims to survive, if PostgreSQL, etcd or ZooKeeper show
# any violation, or if an expected anomaly (unfenced lost update under a
# pause; Redlock's "fenced" lost update; Redis's repeated token after an
# async Sentinel failover; Redlock's double grant after a restart) did not
# show within its attempts.  The expected anomalies are negative controls: printed "ok -
# negative control: ..." when they show.
#
# The quick run (FAULTS_QUICK=1, make test) asserts only what is
# deterministic: the fenced cells where no violation is allowed --
# PostgreSQL alone and with a sync standby, etcd and ZooKeeper under all
# three nemeses ("0 violations"), Redis and Redis with appendfsync always
# under a pause, and the latter under a restart ("no fenced loss").  A
# violation there is a bug, however the timing falls.  It leaves to the full
# run (make faults, with its attempts) every cell whose verdict needs the
# timing to fall a certain way: the expected anomalies (an unfenced lost
# update needs the paused holder to have read before it was stopped; Redis's
# repeated token after an async failover needs a grant after the links were
# cut; Redlock's double grant after a restart needs a second grant inside the
# first holder's window) and the
# "reported" cells, which assert nothing; so Redlock has no quick cell.
#
# Ports: every server gets free ones when it starts (servers.sh, free_ports
# of scripts/lib/ports.sh; a start that loses a bind race is retried on new
# ports).  MATRIX_PROVIDERS / MATRIX_NEMESES limit a run (default: all seven,
# all three; a limited run does not rewrite the results); MATRIX_JOBS
# providers run side by side (quick 4, full 3); MATRIX_KEEP=DIR keeps a copy
# of the work directory (worker logs) for a post-mortem.
source "$(dirname "$0")/../lib.sh"
MW="$ROOT/build/client/pglease_matrix_worker"
URLS="$WORK/urls"
mkdir -p "$URLS"
source "$ROOT/tests/faults/matrix/servers.sh"
source "$ROOT/tests/faults/matrix/nemeses.sh"
[ -x "$MW" ] || { echo "not ok - matrix worker missing: build it with 'make client'"; exit 1; }
command -v redis-server >/dev/null && command -v etcd >/dev/null && command -v etcdctl >/dev/null ||
	{ echo "not ok - redis-server/etcd/etcdctl missing: run scripts/install-deps.sh"; exit 1; }
declare -a WPIDS=() LOGS=()
matrix_cleanup() {
	local p
	for p in $(cat "$WORK"/pids-* 2>/dev/null); do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
	servers_cleanup
	[ -z "${MATRIX_KEEP:-}" ] || cp -r "$WORK" "$MATRIX_KEEP"
}
on_exit matrix_cleanup

TTL_MS=2000
WORK_MS=1000
WORKERS=3
# REPEAT: pauses (restarts of a single server) per cell.  ATTEMPTS: runs of
# a cell until its fault lands and, in the full run, its expected anomaly
# (a negative control) shows: it may need more than two on a loaded machine
if [ "$QUICK" = 1 ]; then REPEAT=1 ATTEMPTS=4; else REPEAT=3 ATTEMPTS=4; fi
SHOWN_ORDER="pgsync pg redis redisaof redlock etcd zk"
PROVIDERS="${MATRIX_PROVIDERS:-zk pgsync etcd redlock pg redis redisaof}" # run order: the slow starters first
declare -A LABEL=([pgsync]="PostgreSQL + sync standby" [pg]="PostgreSQL alone" [redis]="Redis single"
	[redisaof]="Redis single, appendfsync always" [redlock]="Redlock ×3" [etcd]="etcd ×3" [zk]="ZooKeeper ×3")
failed_cells=0

store_of() { case "$1" in pg | pgsync) cat "$URLS/$1" ;; *) store_dsn "$1" ;; esac; }

# run_once MODE -- one run of the workload under nemesis $NEM; sets COUNTS, NOTE_OK
run_once() {
	local mode="$1" n p status=0 ttl="$TTL_MS" work="$WORK_MS"
	# Redlock under restarts (a negative control): the second grant needs the
	# two restarted nodes up and reached while the first holder still works;
	# a longer hold keeps that window open on a loaded machine
	if [ "$PROV" = redlock ] && [ "$NEM" = restart ]; then ttl=$((TTL_MS * 2)) work=$((WORK_MS * 3)); fi
	q -d "$(store_of "$PROV")" -c "UPDATE matrix_counter SET v = 0, max_token = 0"
	WPIDS=() LOGS=()
	for n in $(seq 1 "$WORKERS"); do
		LOGS+=("$WORK/$PROV-$NEM-$mode-w$n.log")
		: >"${LOGS[-1]}"
		local store
		case "$PROV" in pg | pgsync) store=lock ;; *) store="$(store_dsn "$PROV")" ;; esac
		"$MW" "w$n" "$URLS/$PROV" "$store" "$mode" "$ttl" "$work" "${LOGS[-1]}" 2>>"$WORK/worker.err" &
		WPIDS+=($!)
		echo $! >>"$WORK/pids-$PROV"
	done
	NOTE_OK=0
	"nemesis_$NEM" && NOTE_OK=1
	sleep 1
	kill -CONT "${WPIDS[@]}" 2>/dev/null || true
	kill -TERM "${WPIDS[@]}" 2>/dev/null || true
	for p in "${WPIDS[@]}"; do
		timeout 15 tail --pid="$p" -f /dev/null || kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || status=$?
	done
	WPIDS=()
	COUNTS="$("$ROOT/tests/faults/matrix/check.sh" "$(q -d "$(store_of "$PROV")" -c "SELECT v FROM matrix_counter WHERE id = 1")" "${LOGS[@]}")"
}

count() { sed -n "s/.*\\b$1=\\(-\\?[0-9]*\\).*/\\1/p" <<<"$COUNTS"; }

# cell_expectation MODE -- "anomaly:WHAT" (must show), "clean" (no violation) or "report"
cell_expectation() {
	local mode="$1" tok dur surv
	read -r tok dur surv <<<"$CAPS"
	[ "$PROV" = redisaof ] && dur=1 # the provider's own note: tokens hold while the node keeps its data
	if [ "$NEM" = pause ] && { [ "$mode" = unfenced ] || [ "$tok" = 0 ]; }; then echo "anomaly:lost"; return; fi
	# Redis: the Sentinels promote a replica that lacks the last grant and INCR
	# (its links were cut): the counter goes back, tokens repeat.  They take
	# longer than the TTL to do it (down-after 1 s, an election), so the
	# holder's local deadline has passed by then: no double grant by the
	# clients' clocks, which only a TTL longer than the failover would show
	if [ "$NEM" = failover ] && [[ "$PROV" == redis* ]]; then echo "anomaly:token_bad"; return; fi
	if [ "$NEM" = restart ] && [ "$PROV" = redlock ]; then echo "anomaly:overlaps"; return; fi
	case "$PROV" in pg | pgsync | etcd | zk) echo clean; return ;; esac
	if [ "$mode" = fenced ] && [ "$tok" = 1 ] && { [ "$NEM" = pause ] || { [ "$NEM" = restart ] && [ "$dur" = 1 ]; } ||
		{ [ "$NEM" = failover ] && [ "$surv" = 1 ]; }; }; then
		echo fenced; return
	fi
	echo report
}

# run_cell MODE -- attempts until the fault lands and the expected anomaly
# shows (bounded), judge, add a table row
run_cell() {
	local mode="$1" exp attempt=0 verdict name violations
	exp="$(cell_expectation "$mode")"
	name="${PROV}_${NEM}_${mode}"
	while [ "$attempt" -lt "$ATTEMPTS" ]; do
		attempt=$((attempt + 1))
		[ "$NEM" != failover ] || { "${PROV}_down"; "${PROV}_up"; }
		run_once "$mode"
		[ "$NOTE_OK" = 1 ] || { echo "# $name: attempt $attempt: fault missed ($SHOWN_NOTE)"; continue; }
		[[ "$exp" == anomaly:* ]] || break
		[ "$(count "${exp#anomaly:}")" -gt 0 ] && break
	done
	violations=$(($(count overlaps) + ($(count token_bad) > 0 ? $(count token_bad) : 0)))
	[ "$mode" = unfenced ] || violations=$((violations + $(count lost)))
	case "$exp" in
	anomaly:*) verdict="shown"; [ "$(count "${exp#anomaly:}")" -gt 0 ] || verdict="NOT SHOWN" ;;
	clean) verdict="0 violations"; [ "$violations" -eq 0 ] || verdict="VIOLATION" ;;
	fenced) verdict="no fenced loss"; [ "$(count lost)" -eq 0 ] || verdict="FENCED LOSS" ;;
	report) verdict="reported (not claimed)" ;;
	esac
	[ "$NOTE_OK" = 1 ] || verdict="FAULT MISSED: $SHOWN_NOTE"
	echo "# $name: $COUNTS attempts=$attempt ($SHOWN_NOTE) -> $verdict"
	if [[ "$exp" == anomaly:* ]]; then
		negative_control "matrix_$name" "${exp#anomaly:} > 0 within $attempt attempts; $COUNTS" \
			'[ "$NOTE_OK" = 1 ] && [ "$verdict" = shown ]'
	else
		expect "matrix_$name" "$verdict; $COUNTS" '[ "$NOTE_OK" = 1 ] && [[ "$verdict" != VIOL* && "$verdict" != FENCED* ]]'
	fi
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${LABEL[$PROV]}" "$NEM" "$mode" \
		"$(count grants)" "$(count acks)" "$(count rejected)" "$(count lost)" "$(count overlaps)" \
		"$(count token_bad | sed 's/^-1$/n\/a/')" "$attempt" "$verdict" >>"$TABLE"
}

# quick_cell MODE -- the cell's verdict is deterministic: fenced, and no
# violation allowed (see the header)
quick_cell() {
	local exp
	exp="$(cell_expectation "$1")"
	[ "$1" = fenced ] && { [ "$exp" = clean ] || [ "$exp" = fenced ]; }
}

# run_provider PROV -- every cell of one provider (in a subshell: output to
# $WORK/out-PROV, rows to $WORK/table-PROV, worker pids to $WORK/pids-PROV)
run_provider() {
	PROV="$1"
	TABLE="$WORK/table-$PROV"
	: >"$TABLE"
	"${PROV}_up"
	CAPS="$("$MW" --capabilities "$(cat "$URLS/$PROV")")"
	echo "# ${LABEL[$PROV]}: capabilities fencing_token durable survives_failover = $CAPS"
	for NEM in ${MATRIX_NEMESES:-pause restart failover}; do
		for mode in unfenced fenced; do
			if [ "$NEM" = failover ] && [ "$PROV" = pg ]; then
				printf '| %s | failover | %s | n/a |||||||no standby |\n' "${LABEL[$PROV]}" "$mode" >>"$TABLE"
				continue
			fi
			if [ "$QUICK" = 1 ] && ! quick_cell "$mode"; then
				echo "# ${PROV}_${NEM}_${mode}: full run only (make faults): $(cell_expectation "$mode")"
				continue
			fi
			run_cell "$mode"
		done
	done
	"${PROV}_down"
	: >"$WORK/done-$PROV"
}

started=$SECONDS
bash "$ROOT/tests/faults/matrix/check_selftest.sh" >"$WORK/out-selftest" 2>&1 || true
store_up $PROVIDERS
# providers run side by side (own ports each), MATRIX_JOBS at a time; the
# slow starters first
if [ "$QUICK" = 1 ]; then JOBS="${MATRIX_JOBS:-4}"; else JOBS="${MATRIX_JOBS:-3}"; fi
declare -a running=()
for PROV in $PROVIDERS; do
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
	(run_provider "$PROV" >"$WORK/out-$PROV" 2>&1) &
done
wait
failures=0
for PROV in selftest $PROVIDERS; do
	cat "$WORK/out-$PROV"
	failures=$((failures + $(grep -c '^not ok' "$WORK/out-$PROV" || true)))
	# a provider's run that stopped (a server that did not start) left cells unrun
	[ "$PROV" = selftest ] || [ -f "$WORK/done-$PROV" ] ||
		not_ok "matrix_${PROV}_ran_to_the_end" "its run stopped before its last cell; see the lines above"
done
echo "# matrix: $((SECONDS - started)) s"
{
	echo "| provider | nemesis | write | grants | acks | rejected | lost | overlaps | token_bad | attempts | verdict |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for PROV in $SHOWN_ORDER; do [ ! -f "$WORK/table-$PROV" ] || cat "$WORK/table-$PROV"; done
} >"$WORK/matrix.table"
sed 's/^/# /' "$WORK/matrix.table"
if [ "$QUICK" != 1 ] && [ -z "${MATRIX_PROVIDERS:-}${MATRIX_NEMESES:-}" ]; then
	"$ROOT/tests/faults/matrix/report.sh" "$WORK/matrix.table" "$((SECONDS - started))" >"$ROOT/tests/faults/results/matrix.md"
fi
finish
