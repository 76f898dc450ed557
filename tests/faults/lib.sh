# lib.sh -- shared by the fault tests (sourced).  Each test starts its own
# clusters, on Unix sockets in its own work directory (listen_addresses is
# empty: the port, FAULTS_PORT or the script's default below 32768, only
# names the socket), records what happened, and runs check_history.sh.  FAULTS_QUICK=1: the reduced run of
# make test; otherwise the full run of make faults.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
CLUSTER="$ROOT/scripts/cluster.sh"
WORKER="$ROOT/build/client/pglease_fault_worker"
QUICK="${FAULTS_QUICK:-0}"
work_dir pg_lease_faults
declare -a CLEANUP_CLUSTERS=()
declare -a WORKER_PIDS=()

[ -x "$WORKER" ] || { echo "not ok - fault worker missing: build it with 'make client'"; exit 1; }
command -v pg_config >/dev/null || { echo "not ok - pg_config not found: run scripts/install-deps.sh"; exit 1; }
[ -f "$(pg_config --sharedir)/extension/pg_lease.control" ] ||
	{ echo "not ok - pg_lease is not installed: run scripts/install-extension.sh"; exit 1; }

faults_cleanup() {
	for p in "${WORKER_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
	for c in "${CLEANUP_CLUSTERS[@]}"; do
		port="${c%%:*}" dir="${c#*:}"
		PGLEASE_TEST_PORT="$port" "$CLUSTER" stop "$dir" immediate >/dev/null 2>&1 || true
	done
}
on_exit faults_cleanup

# start_cluster DIR PORT [preload|nopreload] -- and remember to stop it
start_cluster() {
	CLEANUP_CLUSTERS+=("$2:$1")
	PGLEASE_TEST_PORT="$2" "$CLUSTER" start "$1" "${3:-preload}"
}

# use_cluster DIR PORT -- point libpq's environment at it
use_cluster() { eval "$(PGLEASE_TEST_PORT="$2" "$CLUSTER" env "$1")"; }

# restart_after_crash DIR PORT -- start again, retrying while orphaned
# backends of the crashed server still hold its shared memory (30 s at most)
restart_after_crash() {
	local i
	for i in $(seq 1 60); do
		if PGLEASE_TEST_PORT="$2" "$CLUSTER" start "$1" "$(cat "$1/mode")" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	echo "not ok - cluster $1 did not come back after a crash"
	tail -20 "$1/server.log" | sed 's/^/#   /'
	return 1
}

postmaster_pid() { head -1 "$1/data/postmaster.pid"; }


# log_is_clean DIR -- no PANIC, assertion failure or backend crash in the log
log_is_clean() { ! grep -E 'PANIC|TRAP:|was terminated by signal (6|11)' "$1/server.log" >/dev/null; }

