#!/usr/bin/env bash
# reserve-test-ports.sh -- add the loopback ports the test and benchmark
# servers listen on to net.ipv4.ip_local_reserved_ports, so that no outgoing
# connection is given one of them as its local port (they lie inside Linux's
# ephemeral range, 32768-60999).  Needs root; without it, says so and does
# nothing (the suites still run; a port taken by a client socket then shows as
# "address already in use" in a server's log).
#
#   54300-54500  PostgreSQL test, fault and benchmark clusters
#   56300-57300  Redis, etcd and ZooKeeper servers of the client suites (ZooKeeper
#                ensembles: quorum and election ports at +100 and +200)
#   58000-60199  HA cluster, fault matrix, benchmark servers
#   64300-64500  PgBouncer of the fault suite, the benchmark's Redis
set -euo pipefail
RANGES="54300-54500,56300-57300,58000-60199,64300-64500"
FILE=/proc/sys/net/ipv4/ip_local_reserved_ports
if [ ! -w "$FILE" ]; then
	echo "reserve-test-ports.sh: $FILE not writable (not root): test ports not reserved" >&2
	exit 0
fi
current="$(cat "$FILE")"
echo "${current:+$current,}$RANGES" >"$FILE"
echo "reserve-test-ports.sh: reserved $(cat "$FILE")"
