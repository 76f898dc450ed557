# servers.sh -- the matrix's servers (sourced by runner.sh): for each
# provider P, P_up (start its servers, write its lock URL to $URLS/P),
# P_down (stop them), and the data it needs.  The PostgreSQL clusters listen
# on Unix sockets only, each in its own directory: their port numbers below
# only name the socket.  Redis, Redlock, etcd and ZooKeeper listen on
# loopback TCP ports that are free when they start (free_ports,
# scripts/lib/ports.sh), kept in PORTS_OF[P] of the provider's subshell for
# its nemeses and its next start (a cluster's data names its members' ports:
# the failover cells stop and start it again on the same ones); a start that
# loses a bind race (another process took a port between the check and the
# server's bind) is retried on new ports, its directories wiped
# (up_retrying).
REDIS="$ROOT/scripts/redis.sh"
SENTINEL="$ROOT/scripts/sentinel.sh"
ETCD="$ROOT/scripts/etcd.sh"
ZK="$ROOT/scripts/zookeeper.sh"
export ZK_PEER_OFFSET=10 # a member's quorum port is its client port + 10, election + 20
# the socket names of the PostgreSQL clusters (not TCP ports)
SOCK_STORE=25400 SOCK_PG=25410 SOCK_SYNC=25420 SOCK_SYNC_S=25421
declare -A PORTS_OF=()

# pick_ports PROVIDER N [OFFSET...] -- PORTS_OF[PROVIDER]: N free ports (each
# with PORT + OFFSET free too), unless it has its ports already
pick_ports() {
	local prov="$1"
	shift
	[ -n "${PORTS_OF[$prov]:-}" ] || PORTS_OF[$prov]="$(spaced_ports "$@")" || return 1
}
# port_of PROVIDER I -- its I-th port (from 0)
port_of() { local p; read -r -a p <<<"${PORTS_OF[$1]}"; echo "${p[$2]}"; }
# url_hosts PROVIDER -- "127.0.0.1:P1,127.0.0.1:P2,..."
url_hosts() { sed 's/\([0-9][0-9]*\)/127.0.0.1:\1/g; s/ /,/g' <<<"${PORTS_OF[$1]}"; }
COUNTER_SQL="CREATE TABLE IF NOT EXISTS matrix_counter (id int PRIMARY KEY, v bigint NOT NULL, max_token bigint NOT NULL);
INSERT INTO matrix_counter VALUES (1, 0, 0) ON CONFLICT (id) DO NOTHING"

q() { psql_q "$@"; }
pg_dsn() { echo "host=$1/sock port=$2 dbname=matrix user=postgres"; }

# pg_db DIR PORT [preload|nopreload] -- a cluster with database matrix and the counter
pg_db() {
	start_cluster "$1" "$2" "${3:-preload}" >/dev/null
	q -h "$1/sock" -p "$2" -U postgres -d postgres -c "CREATE DATABASE matrix"
	[ "${3:-preload}" = nopreload ] || q -d "$(pg_dsn "$1" "$2")" -c "CREATE EXTENSION pg_lease"
	q -d "$(pg_dsn "$1" "$2")" -c "$COUNTER_SQL" >/dev/null
}

# store_up PROVIDER... -- the counter store of the non-PostgreSQL providers:
# one database each (matrix_PROVIDER), as they run side by side
store_up() {
	local p
	start_cluster "$WORK/store" "$SOCK_STORE" nopreload >/dev/null
	for p in "$@"; do
		q -h "$WORK/store/sock" -p "$SOCK_STORE" -U postgres -d postgres -c "CREATE DATABASE matrix_$p"
		q -d "$(store_dsn "$p")" -c "$COUNTER_SQL" >/dev/null
	done
}
store_dsn() { echo "host=$WORK/store/sock port=$SOCK_STORE dbname=matrix_$1 user=postgres"; }

pg_up() { pg_db "$WORK/pg" $SOCK_PG; pg_dsn "$WORK/pg" $SOCK_PG >"$URLS/pg"; }
pg_down() { PGLEASE_TEST_PORT=$SOCK_PG "$CLUSTER" stop "$WORK/pg" immediate >/dev/null 2>&1 || true; rm -rf "$WORK/pg"; }

# pgsync: a primary and a synchronous standby (as tests/faults/failover.sh)
pgsync_up() {
	local P="$WORK/pgsync-p" S="$WORK/pgsync-s" sport=$SOCK_SYNC_S i bindir
	bindir="$(pg_config --bindir)"
	pg_db "$P" $SOCK_SYNC
	mkdir -p "$S/sock" && chown -R postgres: "$S" && chmod 755 "$S"
	(cd / && runuser -u postgres -- "$bindir/pg_basebackup" -D "$S/data" -R -X stream -c fast -h "$P/sock" -p $SOCK_SYNC -U postgres)
	printf '%s\n' "port = $sport" "unix_socket_directories = '$S/sock'" >>"$S/data/postgresql.conf"
	echo preload >"$S/mode"
	CLEANUP_CLUSTERS+=("$sport:$S")
	PGLEASE_TEST_PORT=$sport "$CLUSTER" start "$S" preload >/dev/null
	q -h "$P/sock" -p $SOCK_SYNC -U postgres -d postgres \
		-c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
	for i in $(seq 1 200); do
		[ "$(q -h "$P/sock" -p $SOCK_SYNC -U postgres -d postgres -c "SELECT sync_state FROM pg_stat_replication")" = sync ] && break
		sleep 0.05
	done
	pg_dsn "$P" $SOCK_SYNC >"$URLS/pgsync"
}
pgsync_down() {
	local d
	for d in pgsync-p:$SOCK_SYNC pgsync-s:$SOCK_SYNC_S; do
		PGLEASE_TEST_PORT="${d#*:}" "$CLUSTER" stop "$WORK/${d%%:*}" immediate >/dev/null 2>&1 || true
		rm -rf "${WORK:?}/${d%%:*}"
	done
}

# redis, redisaof: a primary and an asynchronous replica for the pause and
# restart cells; for the failover cells (NEM=failover) a Sentinel deployment
# instead (scripts/sentinel.sh: a master, two replicas, three Sentinels) and
# a redis+sentinel:// URL, so that the clients follow a real failover
redis_pair_up() { # NAME PRIMARY_PORT REPLICA_PORT [persist]
	"$REDIS" start "$WORK/$1-p" "$2" ${4:-} >/dev/null || return 1
	"$REDIS" start "$WORK/$1-r" "$3" ${4:-} >/dev/null || return 1
	redis-cli -p "$3" REPLICAOF 127.0.0.1 "$2" >/dev/null
	local i
	for i in $(seq 1 100); do
		redis-cli -p "$3" INFO replication | grep -q 'master_link_status:up' && break
		sleep 0.05
	done
	echo "redis://127.0.0.1:$2" >"$URLS/$1"
}
redis_sentinel_up() { # NAME [persist]
	local out="$WORK/$1-sentinel.out"
	"$SENTINEL" start "$WORK/$1-sentinel" ${2:-} >"$out" || { cat "$out"; return 1; }
	sed -n 's/^url //p' "$out" >"$URLS/$1"
}
# sentinel_dir PROVIDER -- the Sentinel deployment of redis's (redisaof's) failover cells
sentinel_dir() { echo "$WORK/$1-sentinel"; }
redis_pair_down() {
	"$REDIS" kill "$WORK/$1-p" >/dev/null 2>&1 || true; "$REDIS" kill "$WORK/$1-r" >/dev/null 2>&1 || true
	[ ! -d "$WORK/$1-sentinel" ] || "$SENTINEL" kill "$WORK/$1-sentinel" >/dev/null 2>&1 || true
	rm -rf "${WORK:?}/$1-p" "${WORK:?}/$1-r" "${WORK:?}/$1-sentinel"
}
redis_start() {
	if [ "${NEM:-}" = failover ]; then redis_sentinel_up redis; return; fi
	pick_ports redis 2 && redis_pair_up redis ${PORTS_OF[redis]}
}
redis_up() { up_retrying redis; }
redis_down() { redis_pair_down redis; }
redisaof_start() {
	if [ "${NEM:-}" = failover ]; then redis_sentinel_up redisaof persist; return; fi
	pick_ports redisaof 2 && redis_pair_up redisaof ${PORTS_OF[redisaof]} persist
}
redisaof_up() { up_retrying redisaof; }
redisaof_down() { redis_pair_down redisaof; }

redlock_start() {
	local n
	pick_ports redlock 3 || return 1
	for n in 0 1 2; do
		"$REDIS" start "$WORK/redlock-$n" "$(port_of redlock "$n")" >/dev/null || return 1
	done
	echo "redlock://$(url_hosts redlock)" >"$URLS/redlock"
}
redlock_up() { up_retrying redlock; }
redlock_down() { local n; for n in 0 1 2; do "$REDIS" kill "$WORK/redlock-$n" >/dev/null 2>&1 || true; done; }

etcd_start() {
	local spec n pids=() rc=0
	pick_ports etcd 3 1 || return 1 # peer port: client port + 1
	spec="$(tr ' ' , <<<"${PORTS_OF[etcd]}")"
	for n in 0 1 2; do
		"$ETCD" start "$WORK/etcd-$n" "$(port_of etcd "$n")" "$spec" >/dev/null &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n" || rc=1; done
	echo "etcd://$(url_hosts etcd)" >"$URLS/etcd"
	return "$rc"
}
etcd_up() { up_retrying etcd; }
etcd_down() { local n; for n in 0 1 2; do "$ETCD" kill "$WORK/etcd-$n" >/dev/null 2>&1 || true; done; }

zk_start() {
	local ens n i
	pick_ports zk 3 "$ZK_PEER_OFFSET" $((2 * ZK_PEER_OFFSET)) || return 1
	ens="$(tr ' ' , <<<"${PORTS_OF[zk]}")"
	for n in 0 1 2; do
		"$ZK" start "$WORK/zk-$n" "$(port_of zk "$n")" "$ens" $((n + 1)) >/dev/null || return 1
	done
	for i in $(seq 1 300); do
		[ "$(for n in 0 1 2; do "$ZK" mode "$WORK/zk-$n" 2>/dev/null; done | grep -c -E 'leader|follower')" = 3 ] && break
		sleep 0.1
	done
	echo "zookeeper://$(url_hosts zk)" >"$URLS/zk"
}
zk_up() { up_retrying zk; }

# spaced_ports N OFFSET... -- N free ports P, each with P + OFFSET free too
# (the peer ports of a cluster member), none of them shared
spaced_ports() {
	local n="$1" p o ok picked=() all=" " tries=0
	shift
	while [ "${#picked[@]}" -lt "$n" ]; do
		tries=$((tries + 1))
		[ "$tries" -le 100 ] || { echo "servers.sh: no $n spaced free ports after 100 tries" >&2; return 1; }
		p="$(free_port)" || return 1
		ok=1
		for o in 0 "$@"; do
			[[ "$all" != *" $((p + o)) "* ]] && { [ "$o" = 0 ] || port_is_free $((p + o)); } || ok=0
		done
		[ "$ok" = 1 ] || continue
		picked+=("$p")
		for o in 0 "$@"; do all+="$((p + o)) "; done
	done
	echo "${picked[*]}"
}

# up_retrying PROVIDER -- PROVIDER_start (on its ports, new free ones the
# first time) until it did not lose a bind race (3 tries, new ports and
# fresh directories each); any other failure stops at once
up_retrying() {
	local try out="$WORK/start-$1.out"
	for try in 1 2 3; do
		if "${1}_start" >"$out" 2>&1; then return 0; fi
		if ! grep -qiE 'address already in use|in use already' "$out" "$WORK/$1"-*/*.log 2>/dev/null; then
			sed 's/^/# /' "$out"
			return 1
		fi
		echo "# $1: a port was taken before its server bound it (try $try), starting again on new ports"
		"${1}_down"
		rm -rf "${WORK:?}/$1"-*
		PORTS_OF[$1]=""
	done
	sed 's/^/# /' "$out"
	return 1
}
zk_down() { local n; for n in 0 1 2; do "$ZK" kill "$WORK/zk-$n" >/dev/null 2>&1 || true; done; }

# servers_cleanup -- stop every server of the matrix (started in subshells:
# found by their directories)
servers_cleanup() {
	local d
	for d in "$WORK"/redis-? "$WORK"/redisaof-? "$WORK"/redlock-?; do [ ! -d "$d" ] || "$REDIS" kill "$d" >/dev/null 2>&1 || true; done
	for d in "$WORK"/redis-sentinel "$WORK"/redisaof-sentinel; do [ ! -d "$d" ] || "$SENTINEL" kill "$d" >/dev/null 2>&1 || true; done
	for d in "$WORK"/etcd-?; do [ ! -d "$d" ] || "$ETCD" kill "$d" >/dev/null 2>&1 || true; done
	for d in "$WORK"/zk-?; do [ ! -d "$d" ] || "$ZK" kill "$d" >/dev/null 2>&1 || true; done
	for d in pg:$SOCK_PG pgsync-p:$SOCK_SYNC pgsync-s:$SOCK_SYNC_S; do
		[ ! -d "$WORK/${d%%:*}" ] || PGLEASE_TEST_PORT="${d#*:}" "$CLUSTER" stop "$WORK/${d%%:*}" immediate >/dev/null 2>&1 || true
	done
}
