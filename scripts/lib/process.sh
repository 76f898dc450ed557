# process.sh -- what the scripts of the tests' throwaway servers share
# (scripts/redis.sh, etcd.sh, zookeeper.sh; sourced): each server is a daemon
# whose pid is kept in a pidfile in its directory.

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

# wait_gone PID SECONDS -- wait until the process has exited
wait_gone() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		alive "$1" || return 0
		sleep 0.05
	done
	return 1
}

# claim PIDFILE PORT... -- before a start: no server of this directory is
# running, and nothing listens on the ports (a server left by a crashed test
# would answer for the new one).  Needs the caller's die.
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
