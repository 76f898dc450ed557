# ports.sh -- loopback ports for the throwaway test servers (sourced by
# common.sh, never run).  No server of a test or script listens on a fixed
# port: each asks for ports that are free when it starts.
#
#   free_port                  one port, free on 127.0.0.1 now
#   free_ports N               N distinct ports, each free now
#
# A port is drawn at random from below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, 32768-60999 by default) and above
# PGLEASE_PORT_FLOOR (default 10000), and kept only if a bind to
# 127.0.0.1:PORT succeeds.  Below the ephemeral range, no outgoing connection
# is ever given the port as its local one, so a suite run on a machine with
# thousands of client sockets does not lose its ports to them; another server
# that binds the same port between the check and the test server's own bind
# (a bind race) is still possible: whoever starts a server retries with a new
# port when it fails with "address already in use" (scripts/redis.sh,
# etcd.sh and zookeeper.sh do; tests/client/support.hpp does the same in C++).

# port_range -- "LOW HIGH" of the ports free_port draws from
port_range() {
	local lo _hi floor="${PGLEASE_PORT_FLOOR:-10000}"
	read -r lo _hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
	[ "$lo" -gt $((floor + 1000)) ] || floor=1024
	echo "$floor $((lo - 1))"
}

# port_is_free PORT -- a listening socket can be bound to 127.0.0.1:PORT now
port_is_free() {
	perl -MIO::Socket::INET -e \
		'exit(IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 1, ReuseAddr => 1) ? 0 : 1)' \
		"$1"
}

free_ports() {
	local want="${1:-1}" low high port tries=0 picked=() p dup
	read -r low high <<<"$(port_range)"
	while [ "${#picked[@]}" -lt "$want" ]; do
		tries=$((tries + 1))
		if [ "$tries" -gt 100 ]; then
			echo "ports.sh: no free port found in $low-$high after 100 tries" >&2
			return 1
		fi
		port=$((low + (RANDOM * 32768 + RANDOM) % (high - low + 1)))
		dup=0
		for p in "${picked[@]}"; do [ "$p" != "$port" ] || dup=1; done
		[ "$dup" = 0 ] && port_is_free "$port" && picked+=("$port")
	done
	echo "${picked[*]}"
}

free_port() { free_ports 1; }
