# servers.sh -- the partition suite's servers (sourced by run.sh after
# net.sh): one of each provider, started inside the server namespace on its
# address NET_SRV (PGLEASE_LISTEN_HOST of scripts/cluster.sh, redis.sh,
# etcd.sh, zookeeper.sh) and a port free there; its URL in $WORK/url-PROV.
#
#   servers_check PROV...   every program they need is installed, or not ok naming it
#   server_up PROV          start it (pg: a preloaded cluster as postgres, TCP on
#                           NET_SRV trusted for NET_SUBNET, database part with the
#                           extension and the fenced writes' table partition_ledger)
#   server_down PROV        stop it; servers_down: every one (the exit hook)
#   label PROV              its name in the tables
CLUSTER="$ROOT/scripts/cluster.sh"
declare -A PG_PORT=()

label() {
	case "$1" in
	pg) echo PostgreSQL ;; redis) echo Redis ;; etcd) echo etcd ;; zk) echo ZooKeeper ;; *) echo "$1" ;;
	esac
}

servers_check() {
	local p missing=""
	for p in "$@"; do
		case "$p" in
		pg) command -v pg_config >/dev/null && [ -f "$(pg_config --sharedir)/extension/pg_lease.control" ] ||
			missing+=" PostgreSQL with pg_lease (scripts/install-deps.sh, scripts/install-extension.sh)" ;;
		redis) command -v redis-server >/dev/null || missing+=" redis-server (scripts/install-deps.sh)" ;;
		etcd) command -v etcd >/dev/null || missing+=" etcd (scripts/install-deps.sh)" ;;
		zk) [ -f /usr/share/java/zookeeper.jar ] || missing+=" zookeeper (scripts/install-deps.sh)" ;;
		*) missing+=" (unknown provider $p: pg, redis, etcd, zk)" ;;
		esac
	done
	[ -z "$missing" ] || { not_ok partition_servers "missing:$missing"; finish; }
}

# in_srv CMD... -- CMD in the server namespace, listening on its address
in_srv() { net_exec srv env PGLEASE_LISTEN_HOST="$NET_SRV" PGLEASE_LISTEN_CLIENTS="$NET_SUBNET" "$@"; }

server_up() {
	local addr port
	case "$1" in
	pg)
		port="$(net_exec srv bash -c "source '$ROOT/scripts/lib/common.sh'; free_port")"
		PG_PORT[pg]="$port"
		in_srv env PGLEASE_TEST_PORT="$port" "$CLUSTER" start "$WORK/pg" preload
		psql_q -h "$WORK/pg/sock" -p "$port" -U postgres -d postgres -c "CREATE DATABASE part"
		psql_q -h "$WORK/pg/sock" -p "$port" -U postgres -d part -c "CREATE EXTENSION pg_lease" \
			-c "CREATE TABLE partition_ledger (token bigint NOT NULL)"
		echo "postgresql://postgres@$NET_SRV:$port/part" >"$WORK/url-pg"
		;;
	redis) addr="$(in_srv "$ROOT/scripts/redis.sh" start "$WORK/redis")" && echo "redis://$addr" >"$WORK/url-redis" ;;
	etcd) addr="$(in_srv "$ROOT/scripts/etcd.sh" start "$WORK/etcd")" && echo "etcd://$addr" >"$WORK/url-etcd" ;;
	zk) addr="$(in_srv "$ROOT/scripts/zookeeper.sh" start "$WORK/zk")" && echo "zookeeper://$addr" >"$WORK/url-zk" ;;
	esac
}

server_down() {
	case "$1" in
	pg) [ ! -d "$WORK/pg" ] || PGLEASE_TEST_PORT="${PG_PORT[pg]}" "$CLUSTER" stop "$WORK/pg" immediate >/dev/null 2>&1 || true ;;
	redis) [ ! -d "$WORK/redis" ] || "$ROOT/scripts/redis.sh" kill "$WORK/redis" >/dev/null 2>&1 || true ;;
	etcd) [ ! -d "$WORK/etcd" ] || "$ROOT/scripts/etcd.sh" kill "$WORK/etcd" >/dev/null 2>&1 || true ;;
	zk) [ ! -d "$WORK/zk" ] || "$ROOT/scripts/zookeeper.sh" kill "$WORK/zk" >/dev/null 2>&1 || true ;;
	esac
}

servers_down() {
	local p
	for p in pg redis etcd zk; do server_down "$p"; done
}
