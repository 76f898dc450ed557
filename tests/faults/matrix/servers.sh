# servers.sh -- the matrix's servers (sourced by runner.sh): for each
# provider P, P_up (start its servers, write its lock URL to $URLS/P),
# P_down (stop them), and the data it needs.  Ports from $MP (the matrix's
# base port): store +0, pg +10, pgsync +20/+21, redis +30/+31, redisaof
# +33/+34, a dead port +39, redlock +40..+42, etcd +50/+52/+54 (peer +1),
# ZooKeeper +70..+72 (quorum +10, election +20).
REDIS="$ROOT/scripts/redis.sh"
ETCD="$ROOT/scripts/etcd.sh"
ZK="$ROOT/scripts/zookeeper.sh"
export ZK_PEER_OFFSET=10
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
	start_cluster "$WORK/store" "$MP" nopreload >/dev/null
	for p in "$@"; do
		q -h "$WORK/store/sock" -p "$MP" -U postgres -d postgres -c "CREATE DATABASE matrix_$p"
		q -d "$(store_dsn "$p")" -c "$COUNTER_SQL" >/dev/null
	done
}
store_dsn() { echo "host=$WORK/store/sock port=$MP dbname=matrix_$1 user=postgres"; }

pg_up() { pg_db "$WORK/pg" $((MP + 10)); pg_dsn "$WORK/pg" $((MP + 10)) >"$URLS/pg"; }
pg_down() { PGLEASE_TEST_PORT=$((MP + 10)) "$CLUSTER" stop "$WORK/pg" immediate >/dev/null 2>&1 || true; rm -rf "$WORK/pg"; }

# pgsync: a primary and a synchronous standby (as tests/faults/failover.sh)
pgsync_up() {
	local P="$WORK/pgsync-p" S="$WORK/pgsync-s" sport=$((MP + 21)) i bindir
	bindir="$(pg_config --bindir)"
	pg_db "$P" $((MP + 20))
	mkdir -p "$S/sock" && chown -R postgres: "$S" && chmod 755 "$S"
	(cd / && runuser -u postgres -- "$bindir/pg_basebackup" -D "$S/data" -R -X stream -c fast -h "$P/sock" -p $((MP + 20)) -U postgres)
	printf '%s\n' "port = $sport" "unix_socket_directories = '$S/sock'" >>"$S/data/postgresql.conf"
	echo preload >"$S/mode"
	CLEANUP_CLUSTERS+=("$sport:$S")
	PGLEASE_TEST_PORT=$sport "$CLUSTER" start "$S" preload >/dev/null
	q -h "$P/sock" -p $((MP + 20)) -U postgres -d postgres \
		-c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
	for i in $(seq 1 200); do
		[ "$(q -h "$P/sock" -p $((MP + 20)) -U postgres -d postgres -c "SELECT sync_state FROM pg_stat_replication")" = sync ] && break
		sleep 0.05
	done
	pg_dsn "$P" $((MP + 20)) >"$URLS/pgsync"
}
pgsync_down() {
	local d
	for d in pgsync-p:$((MP + 20)) pgsync-s:$((MP + 21)); do
		PGLEASE_TEST_PORT="${d#*:}" "$CLUSTER" stop "$WORK/${d%%:*}" immediate >/dev/null 2>&1 || true
		rm -rf "${WORK:?}/${d%%:*}"
	done
}

# redis, redisaof: a primary and an asynchronous replica (for failover)
redis_pair_up() { # NAME PORT [persist]
	"$REDIS" start "$WORK/$1-p" "$2" ${3:-} >/dev/null
	"$REDIS" start "$WORK/$1-r" $(($2 + 1)) ${3:-} >/dev/null
	redis-cli -p $(($2 + 1)) REPLICAOF 127.0.0.1 "$2" >/dev/null
	local i
	for i in $(seq 1 100); do
		redis-cli -p $(($2 + 1)) INFO replication | grep -q 'master_link_status:up' && break
		sleep 0.05
	done
	echo "redis://127.0.0.1:$2" >"$URLS/$1"
}
redis_pair_down() { "$REDIS" kill "$WORK/$1-p" >/dev/null 2>&1 || true; "$REDIS" kill "$WORK/$1-r" >/dev/null 2>&1 || true; rm -rf "${WORK:?}/$1-p" "${WORK:?}/$1-r"; }
redis_up() { redis_pair_up redis $((MP + 30)); }
redis_down() { redis_pair_down redis; }
redisaof_up() { redis_pair_up redisaof $((MP + 33)) persist; }
redisaof_down() { redis_pair_down redisaof; }

redlock_up() {
	local n url=""
	for n in 0 1 2; do
		"$REDIS" start "$WORK/redlock-$n" $((MP + 40 + n)) >/dev/null
		url="${url:+$url,}127.0.0.1:$((MP + 40 + n))"
	done
	echo "redlock://$url" >"$URLS/redlock"
}
redlock_down() { local n; for n in 0 1 2; do "$REDIS" kill "$WORK/redlock-$n" >/dev/null 2>&1 || true; done; }

etcd_up() {
	local spec="$((MP + 50)),$((MP + 52)),$((MP + 54))" n pids=()
	for n in 0 1 2; do
		"$ETCD" start "$WORK/etcd-$n" $((MP + 50 + 2 * n)) "$spec" >/dev/null &
		pids+=($!)
	done
	for n in "${pids[@]}"; do wait "$n"; done
	echo "etcd://127.0.0.1:$((MP + 50)),127.0.0.1:$((MP + 52)),127.0.0.1:$((MP + 54))" >"$URLS/etcd"
}
etcd_down() { local n; for n in 0 1 2; do "$ETCD" kill "$WORK/etcd-$n" >/dev/null 2>&1 || true; done; }

zk_up() {
	local ens="$((MP + 70)),$((MP + 71)),$((MP + 72))" n i
	for n in 0 1 2; do
		"$ZK" start "$WORK/zk-$n" $((MP + 70 + n)) "$ens" $((n + 1)) >/dev/null
	done
	for i in $(seq 1 300); do
		[ "$(for n in 0 1 2; do "$ZK" mode "$WORK/zk-$n" 2>/dev/null; done | grep -c -E 'leader|follower')" = 3 ] && break
		sleep 0.1
	done
	echo "zookeeper://127.0.0.1:$((MP + 70)),127.0.0.1:$((MP + 71)),127.0.0.1:$((MP + 72))" >"$URLS/zk"
}
zk_down() { local n; for n in 0 1 2; do "$ZK" kill "$WORK/zk-$n" >/dev/null 2>&1 || true; done; }

# servers_cleanup -- stop every server of the matrix (started in subshells:
# found by their directories)
servers_cleanup() {
	local d
	for d in "$WORK"/redis-? "$WORK"/redisaof-? "$WORK"/redlock-?; do [ ! -d "$d" ] || "$REDIS" kill "$d" >/dev/null 2>&1 || true; done
	for d in "$WORK"/etcd-?; do [ ! -d "$d" ] || "$ETCD" kill "$d" >/dev/null 2>&1 || true; done
	for d in "$WORK"/zk-?; do [ ! -d "$d" ] || "$ZK" kill "$d" >/dev/null 2>&1 || true; done
	for d in pg:$((MP + 10)) pgsync-p:$((MP + 20)) pgsync-s:$((MP + 21)); do
		[ ! -d "$WORK/${d%%:*}" ] || PGLEASE_TEST_PORT="${d#*:}" "$CLUSTER" stop "$WORK/${d%%:*}" immediate >/dev/null 2>&1 || true
	done
}
