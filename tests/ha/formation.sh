# shellcheck shell=bash
# formation.sh -- a pg_auto_failover formation on loopback (sourced by the
# HA tests): a monitor, node1 and node2 on loopback TCP ports free when the
# formation starts (HA_PORTS: "MONITOR NODE1 NODE2", from free_ports of
# scripts/lib/ports.sh; ha_formation_up starts again on new ports when a
# server lost a bind race), each run by its own `pg_autoctl run` as the
# postgres user, pg_lease preloaded on both data nodes.  Every node runs in
# its own process group, so a node can be lost the way a machine is lost:
# keeper and Postgres killed together.
#
# Needs HA_DIR (a fresh directory).  ha_cleanup kills every process group it
# started and removes HA_DIR.
set -euo pipefail

HA_BINDIR="$(pg_config --bindir)"
HA_NODES=(node1 node2)
command -v pg_autoctl >/dev/null ||
	{ echo "not ok - pg_autoctl missing: run scripts/install-deps.sh (pg-auto-failover-cli, postgresql-15-auto-failover)"; exit 1; }
[ -f "$(pg_config --pkglibdir)/pgautofailover.so" ] ||
	{ echo "not ok - pgautofailover.so missing: run scripts/install-deps.sh (postgresql-15-auto-failover)"; exit 1; }

# as the postgres user, pg_autoctl's state files under HA_DIR (not ~postgres, not /tmp/pg_autoctl)
HA_ENV=(runuser -u postgres -- env -i -C / HOME="$HA_DIR" PATH="$HA_BINDIR:/usr/bin:/bin"
	XDG_CONFIG_HOME="$HA_DIR/config" XDG_DATA_HOME="$HA_DIR/share" XDG_RUNTIME_DIR="$HA_DIR/run")
ha_as_pg() { "${HA_ENV[@]}" "$@"; }

ha_port() { # NAME -> its port
	local p
	read -r -a p <<<"$HA_PORTS"
	case "$1" in monitor) echo "${p[0]}" ;; node1) echo "${p[1]}" ;; node2) echo "${p[2]}" ;; esac
}
ha_monitor_url() { echo "postgres://autoctl_node@127.0.0.1:$(ha_port monitor)/pg_auto_failover?sslmode=disable"; }

# ha_conninfo DBNAME -- what clients use: both nodes, the writable one wins
ha_conninfo() {
	echo "host=127.0.0.1,127.0.0.1 port=$(ha_port node1),$(ha_port node2) dbname=$1 user=postgres target_session_attrs=read-write"
}

ha_monitor_sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$(ha_port monitor)" -U postgres -d pg_auto_failover -c "$1"; }

# ha_node_start NAME -- `pg_autoctl run` in a new session (its process group)
ha_node_start() {
	local pid
	setsid "${HA_ENV[@]}" pg_autoctl run --pgdata "$HA_DIR/$1" >>"$HA_DIR/$1.log" 2>&1 </dev/null &
	pid=$!
	disown "$pid" # no "Killed" line from bash when the node is lost
	sleep 0.2
	# setsid made the process a session (and group) leader without forking
	[ "$(ps -o sid= -p "$pid" | tr -d ' ')" = "$pid" ] || { echo "# $1: pg_autoctl run did not start"; return 1; }
	echo "$pid" >"$HA_DIR/$1.pgid"
}

# ha_node_kill NAME -- lose the node as a machine is lost: its keeper,
# Postgres and every backend stopped at one instant, then SIGKILLed; sets
# HA_KILLED_AT (µs since the epoch).  (Each
# Postgres child runs in a session of its own, so the group alone would leave
# orphaned backends answering on their open connections.)
ha_node_kill() {
	local g pids children
	g="$(cat "$HA_DIR/$1.pgid" 2>/dev/null || true)"
	rm -f "$HA_DIR/$1.pgid"
	[ -n "$g" ] || return 0
	# only a group that is still ours (its processes name our directory)
	local args
	args="$(ps -o args= -g "$g" 2>/dev/null || true)"
	grep -qF "$HA_DIR/$1" <<<"$args" || { echo "# process group $g is not node $1's"; return 1; }
	kill -STOP -- "-$g" 2>/dev/null || true # nothing forks from here on
	pids="$(ps -o pid= -g "$g" | tr -s ' \n' ' ')"
	children="$(ps -eo pid=,ppid= | awk -v p=" $pids " 'index(p, " " $2 " ") { print $1 }' | tr '\n' ' ')"
	# shellcheck disable=SC2086
	kill -STOP $children 2>/dev/null || true
	# shellcheck disable=SC2086
	kill -KILL $pids $children 2>/dev/null || true
	HA_KILLED_AT="$(date +%s%6N)" # every process of the node is stopped by now
}

ha_cleanup() {
	local n
	for n in "${HA_NODES[@]}" monitor; do ha_node_kill "$n" >/dev/null || true; done
	sleep 0.5
	rm -rf "$HA_DIR"
}

# ha_state NAME -- "reported/assigned" state of a data node, per the monitor
ha_state() {
	ha_monitor_sql "SELECT reportedstate || '/' || goalstate FROM pgautofailover.node WHERE nodename = '$1'"
}

# ha_wait_state NAME STATE SECONDS -- until the node reports and is assigned STATE
ha_wait_state() {
	local i
	for i in $(seq 1 $(($3 * 5))); do
		[ "$(ha_state "$1" 2>/dev/null || true)" = "$2/$2" ] && return 0
		sleep 0.2
	done
	echo "# $1 did not reach $2 within $3 s (now $(ha_state "$1" 2>/dev/null || echo '?'))"
	return 1
}

# ha_primary -- the node the monitor holds as primary (or wait_primary)
ha_primary() {
	ha_monitor_sql "SELECT nodename FROM pgautofailover.node
	                 WHERE reportedstate IN ('primary', 'wait_primary') AND goalstate = reportedstate"
}

# ha_fast_timeouts -- health checks every second, failover after 2 s of
# silence, 5 s for a lost primary to demote itself (defaults: 5 s, 20 s, 30 s);
# each keeper's own partition timeout stays below the demote timeout, so a
# primary cut off from the monitor and its standby stops taking writes before
# the standby is promoted, as with the defaults (20 s < 30 s)
ha_fast_timeouts() {
	ha_monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" >/dev/null
	ha_monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" >/dev/null
	ha_monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" >/dev/null
	ha_monitor_sql "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" >/dev/null
	ha_monitor_sql "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 2000" >/dev/null
	ha_monitor_sql "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 5000" >/dev/null
	ha_monitor_sql "SELECT pg_reload_conf()" >/dev/null
}

# ha_create_node NAME -- register a data node; the first becomes primary,
# the second its synchronous secondary (pg_basebackup of the first, which
# copies postgresql.conf and so the preload)
ha_create_node() {
	ha_as_pg pg_autoctl create postgres --pgdata "$HA_DIR/$1" --pgport "$(ha_port "$1")" \
		--listen 127.0.0.1 --hostname 127.0.0.1 --name "$1" --auth trust --no-ssl \
		--dbname "$HA_DB" --monitor "$(ha_monitor_url)" >>"$HA_DIR/$1.log" 2>&1 ||
		{ tail -20 "$HA_DIR/$1.log" | sed 's/^/#   /'; return 1; }
	if [ "$1" = node1 ]; then
		# postgresql.conf includes pg_autoctl's file first, so what follows wins
		echo "shared_preload_libraries = 'pg_stat_statements,pg_lease'" |
			ha_as_pg tee -a "$HA_DIR/$1/postgresql.conf" >/dev/null || return 1
	fi
	if [ "$HA_TIMEOUTS" != default ]; then
		ha_as_pg pg_autoctl config set --pgdata "$HA_DIR/$1" timeout.network_partition_timeout 3 >/dev/null || return 1
	fi
	ha_node_start "$1"
}

# ha_wait_sql SECONDS -- until the writable node takes a connection (its
# keeper may still be restarting it after `single` is reported)
ha_wait_sql() {
	local i
	for i in $(seq 1 $(($1 * 5))); do
		psql -X -q -d "$(ha_conninfo "$HA_DB") connect_timeout=2" -c "SELECT 1" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "# no writable node within $1 s"
	return 1
}

# ha_formation_start SCHEMA_SQL -- monitor, node1 (primary, SCHEMA_SQL run in
# HA_DB), node2 (synchronous secondary); returns when both are in place.
# Callers test its status, which turns set -e off inside: every step checks.
ha_formation_start() {
	mkdir -p "$HA_DIR/run" && chown -R postgres: "$HA_DIR" && chmod 755 "$HA_DIR" && chmod 700 "$HA_DIR/run"
	ha_as_pg pg_autoctl create monitor --pgdata "$HA_DIR/monitor" --pgport "$(ha_port monitor)" \
		--hostname 127.0.0.1 --auth trust --no-ssl >>"$HA_DIR/monitor.log" 2>&1 ||
		{ tail -20 "$HA_DIR/monitor.log" | sed 's/^/#   /'; return 1; }
	ha_as_pg pg_autoctl config set --pgdata "$HA_DIR/monitor" postgresql.listen_addresses 127.0.0.1 >/dev/null || return 1
	ha_node_start monitor || return 1
	local i
	for i in $(seq 1 100); do ha_monitor_sql "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
	if [ "$HA_TIMEOUTS" != default ]; then ha_fast_timeouts || return 1; fi
	ha_create_node node1 && ha_wait_state node1 single 60 && ha_wait_sql 60 || return 1
	psql -X -q -v ON_ERROR_STOP=1 -d "$(ha_conninfo "$HA_DB")" -f "$1" >/dev/null || return 1
	ha_create_node node2 && ha_wait_state node2 secondary 120 && ha_wait_state node1 primary 60
}

# ha_formation_up SCHEMA_SQL -- ha_formation_start on three free ports; when
# it fails because a port was taken before its server bound it (a bind
# race), everything is stopped and it starts again on new ports (3 tries)
ha_formation_up() {
	local try
	for try in 1 2 3; do
		HA_PORTS="$(free_ports 3)" || return 1
		ha_formation_start "$1" && return 0
		grep -rqsiE --include='*.log' 'address already in use' "$HA_DIR" || return 1
		echo "# a port of $HA_PORTS was taken before its server bound it (try $try): starting again on new ports"
		local n
		for n in "${HA_NODES[@]}" monitor; do ha_node_kill "$n" >/dev/null || true; done
		sleep 0.5
		find "$HA_DIR" -mindepth 1 -delete
	done
	return 1
}
