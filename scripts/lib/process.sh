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
