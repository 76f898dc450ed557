# common.sh -- the one helper library of the project's scripts and tests
# (sourced, never run).  Everything a script would otherwise write again:
#
#   die MESSAGE...             print "SCRIPT: MESSAGE" to stderr, exit 1
#   psql_q [psql args...]      psql for scripts: no psqlrc, quiet, unaligned
#                              tuples only, stop at the first error; bounded
#                              by PSQL_TIMEOUT seconds when set; PSQL names
#                              the binary (default psql)
#   now_ms                     wall clock in milliseconds
#   on_exit 'COMMAND'          run COMMAND when the script exits (the last
#                              registered first), also after INT and TERM
#   ok NAME / not_ok NAME WHY  one named check, counted in $failures
#   expect NAME WHY 'COND'     ok if the eval'd condition holds, else not ok
#   finish                     exit non-zero if any check failed
#   count_checks FILE          "OK BAD": the named checks a log shows
#   negative_control NAME WHAT 'COND'   a check that a provoked violation showed
#   as_expected_violations     filter: a checker's report on a negative control
#   run_ctest TITLE BUILD [ctest args...]   the registered tests of a build,
#                              streamed, then one summary (scripts/lib/runner.sh)
#   alive, pid_of, wait_gone, claim   the pidfile plumbing of the throwaway
#                              servers (scripts/redis.sh, etcd.sh, zookeeper.sh)
#   wait_until SECONDS CMD...  until a command succeeds; and wait_file,
#                              wait_lines, wait_line: until a file is written,
#                              has N lines, has a line matching a pattern
#   started                    after `cmd &`: $! killed at exit (BACKGROUND)
#   wait_workers SECONDS PID...   wait for workers to exit, never longer: a
#                              hung one's stacks printed, killed, not ok
#   free_port, free_ports N    loopback ports free now, below the ephemeral
#                              range (scripts/lib/ports.sh)
#
# Sourcing it twice is harmless: the exit hooks and counts are kept.

if [ -z "${PGLEASE_COMMON_SH:-}" ]; then
	PGLEASE_COMMON_SH=1
	failures=0
	PGLEASE_EXIT_HOOKS=()
	BACKGROUND=()
fi

die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

psql_q() {
	local -a bound=()
	[ -z "${PSQL_TIMEOUT:-}" ] || bound=(timeout "$PSQL_TIMEOUT")
	"${bound[@]}" "${PSQL:-psql}" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- exit hooks: one EXIT trap for every library and script that sources this

# run_exit_hooks -- the EXIT trap: each hook once, the last registered first;
# a failing hook neither stops the others nor changes the exit status
run_exit_hooks() {
	local i
	for ((i = ${#PGLEASE_EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
		eval "${PGLEASE_EXIT_HOOKS[i]}" || true
	done
	PGLEASE_EXIT_HOOKS=()
}

on_exit() {
	PGLEASE_EXIT_HOOKS+=("$1")
	trap run_exit_hooks EXIT
	# a signal exits through the EXIT trap, so the hooks run then too
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# ---- named checks: "ok - name" or "not ok - name: why" ---------------------

ok() { echo "ok - $1"; }

not_ok() {
	echo "not ok - $1: $2"
	failures=$((failures + 1))
}

expect() {
	local name="$1" why="$2" cond="$3"
	if eval "$cond"; then
		ok "$name"
	else
		not_ok "$name" "$why"
	fi
}

finish() { exit $((failures > 0)); }

# count_checks, run_ctest and the negative controls' lines: scripts/lib/runner.sh
source "$(dirname "${BASH_SOURCE[0]}")/runner.sh"

# ---- throwaway servers: each a daemon whose pid is kept in a pidfile -------

# alive PID -- the process exists and has not exited.  A daemonized server is
# the child of init, which may take a second or two to reap it: a zombie has
# closed its port and files already, so it counts as gone.
alive() {
	local state
	state="$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# pid_of PIDFILE -- the server's pid if its pidfile names a live process
pid_of() {
	local pid
	[ -f "$1" ] || return 1
	pid="$(cat "$1")"
	[[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" || return 1
	echo "$pid"
}

# wait_until SECONDS COMMAND [ARGS...] -- run COMMAND every 20 ms until it
# succeeds (0) or SECONDS (whole) have passed (1)
wait_until() {
	local i n=$(($1 * 50))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.02
	done
	return 1
}

# wait_gone PID SECONDS -- wait until the process has exited
wait_gone() { wait_until "$2" gone "$1"; }
gone() { ! alive "$1"; }

# wait_file FILE SECONDS -- wait until FILE exists and is not empty
wait_file() { wait_until "$2" test -s "$1"; }

# wait_lines FILE SECONDS [N] -- wait until FILE has at least N lines (default 1)
wait_lines() { wait_until "$2" has_lines "$1" "${3:-1}"; }
has_lines() { [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }

# wait_line FILE PATTERN SECONDS -- wait until a line of FILE matches the
# extended regular expression PATTERN
wait_line() { wait_until "$3" grep -Eqs "$2" "$1"; }

# ---- background processes ----------------------------------------------------

# started -- call right after `COMMAND &`: $! joins BACKGROUND, whose
# processes are killed at exit (SIGCONT first: one may be frozen)
started() {
	BACKGROUND+=("$!")
	if [ -z "${PGLEASE_BACKGROUND_HOOK:-}" ]; then
		PGLEASE_BACKGROUND_HOOK=1
		on_exit 'for p in "${BACKGROUND[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done; true'
	fi
}

# wait_workers SECONDS PID... -- wait for these children of this shell to
# exit, SECONDS at most for all of them (not in a subshell: only this shell
# may wait for them).  One still running then is a hang: its threads' stacks
# (gdb) are printed as comment lines, it is killed (SIGKILL), and a "not ok"
# line says so.  Returns 0 if every one exited 0 in time, else the last
# non-zero exit status (137 for a killed hang); never blocks for long.
wait_workers() {
	local deadline=$((SECONDS + $1)) limit="$1" p rc status=0
	shift
	for p in "$@"; do
		while alive "$p" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
		if alive "$p"; then
			echo "# worker $p still running after $limit s: its threads' stacks"
			worker_stacks "$p" 2>&1 | sed 's/^/#   /'
			kill -CONT "$p" 2>/dev/null || true
			kill -KILL "$p" 2>/dev/null || true
			not_ok "worker_${p}_exits_within_${limit}s" "it hung (stacks above); killed with SIGKILL"
			wait_gone "$p" 5 || { status=137 && continue; } # unkillable: never wait for it
		fi
		rc=0
		wait "$p" 2>/dev/null || rc=$?
		[ "$rc" -eq 0 ] || status="$rc"
	done
	return "$status"
}

# worker_stacks PID -- every thread's backtrace of a running process (gdb, 60 s at most)
worker_stacks() {
	command -v gdb >/dev/null || { echo "no gdb to show them (apt-get install gdb)"; return 0; }
	timeout 60 gdb -batch -nx -p "$1" -ex 'thread apply all bt' </dev/null |
		grep -E '^(Thread|#[0-9])' || echo "gdb showed no stack"
}

# claim PIDFILE PORT... -- before a start: no server of this directory is
# running, and nothing listens on the ports (a server left by a crashed test
# would answer for the new one)
claim() {
	local pidfile="$1" pid p
	shift
	if pid="$(pid_of "$pidfile")"; then
		die "a server from $(dirname "$pidfile") is already running (pid $pid)"
	fi
	for p in "$@"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			die "port $p is in use already (a server left by a crashed test? see the pidfiles under /tmp/pglease-*test.*)"
		fi
	done
}

# work_dir PREFIX -- WORK: a new directory /tmp/PREFIX.XXXXXX that the
# unprivileged cluster owner can enter, removed at exit
work_dir() {
	WORK="$(mktemp -d "/tmp/$1.XXXXXX")"
	chmod 755 "$WORK"
	on_exit 'rm -rf "$WORK"'
}

# ---- ports of the throwaway servers (free_port, free_ports) -----------------
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"
