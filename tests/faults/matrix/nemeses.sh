# nemeses.sh -- the matrix's faults (sourced by runner.sh), scheduled on
# what the workers log so that each lands where it matters:
#   pause     SIGSTOP a worker while it holds (its last line is a grant),
#             until another worker has written, then SIGCONT
#   restart   kill -9 and restart the server while a worker holds; for a
#             cluster each node in turn, the holder's grant taken while
#             another node was stopped (SIGSTOP), so that the restarted node
#             is in the holder's bare majority (Kleppmann's Redlock case)
#   failover  kill -9 the primary/leader while a worker holds: PostgreSQL
#             promotes its synchronous standby; Redis's Sentinels promote
#             one of its asynchronous replicas (scripts/sentinel.sh; the
#             workers follow through redis+sentinel://), whose links were
#             cut before the grant (the lag async replication allows);
#             Redlock loses a node of the holder's majority; etcd and
#             ZooKeeper elect a new leader
# Each nemesis sets SHOWN_NOTE (what happened) and returns non-zero if it
# could not land (the cell then fails: a fault that missed shows nothing).

# mark -- the workers' log sizes now (events after the mark are "new")
mark() { local f; MARK=(); for f in "${LOGS[@]}"; do MARK+=("$(wc -l <"$f")"); done; }

# wait_holding SECONDS -- index of a worker whose last line is a grant whose
# acquire was sent after the mark (another line of it was logged after the
# mark, before the grant)
wait_holding() {
	local end=$((SECONDS + $1)) i
	while [ "$SECONDS" -lt "$end" ]; do
		for i in "${!LOGS[@]}"; do
			if [ "$(wc -l <"${LOGS[$i]}")" -gt "$((MARK[$i] + 1))" ] && [ "$(tail -1 "${LOGS[$i]}" | cut -c1)" = G ]; then
				echo "$i"
				return 0
			fi
		done
		sleep 0.01
	done
	return 1
}

# wait_other_event I KIND SECONDS -- a worker other than I logs KIND (A, G, ...) after the mark
wait_other_event() {
	local end=$((SECONDS + $3)) i
	while [ "$SECONDS" -lt "$end" ]; do
		for i in "${!LOGS[@]}"; do
			[ "$i" != "$1" ] || continue
			tail -n +"$((MARK[$i] + 1))" "${LOGS[$i]}" | grep -q "^$2 " && return 0
		done
		sleep 0.02
	done
	return 1
}

# wait_new_write SECONDS -- some worker was granted after the mark and wrote
# (Redlock is not fair: the worker that releases may win every time)
wait_new_write() {
	local end=$((SECONDS + $1)) i
	while [ "$SECONDS" -lt "$end" ]; do
		for i in "${!LOGS[@]}"; do
			tail -n +"$((MARK[$i] + 1))" "${LOGS[$i]}" | awk '$1 == "G" { g = 1 } $1 == "A" && g { f = 1 } END { exit !f }' && return 0
		done
		sleep 0.02
	done
	return 1
}

nemesis_pause() {
	local k i
	for k in $(seq 1 "$REPEAT"); do
		mark
		i="$(wait_holding 30)" || { SHOWN_NOTE="no grant to pause"; return 1; }
		kill -STOP "${WPIDS[$i]}"
		mark
		wait_other_event "$i" A $((TTL_MS * 4 / 1000 + 10)) || { kill -CONT "${WPIDS[$i]}"; SHOWN_NOTE="nobody wrote while paused"; return 1; }
		kill -CONT "${WPIDS[$i]}"
		sleep $((WORK_MS * 2))e-3
	done
	SHOWN_NOTE="$REPEAT pauses of a holder"
}

# kill_restart PROVIDER -- kill -9 a single server and start it again
kill_restart() {
	case "$1" in
	pg) kill -9 "$(postmaster_pid "$WORK/pg")"; restart_after_crash "$WORK/pg" $SOCK_PG >/dev/null ;;
	pgsync) kill -9 "$(postmaster_pid "$WORK/pgsync-p")"; restart_after_crash "$WORK/pgsync-p" $SOCK_SYNC >/dev/null ;;
	redis | redisaof) kill -9 "$(cat "$WORK/$1-p/redis.pid")"; "$REDIS" kill "$WORK/$1-p"; "$REDIS" restart "$WORK/$1-p" >/dev/null ;;
	esac
}

# node_pid PROVIDER NODE -- the process of one cluster node
node_pid() {
	case "$1" in
	redlock) cat "$WORK/redlock-$2/redis.pid" ;;
	etcd) cat "$WORK/etcd-$2/etcd.pid" ;;
	zk) cat "$WORK/zk-$2/zookeeper.pid" ;;
	esac
}

# node_start PROVIDER NODE -- start a killed cluster node again
node_start() {
	case "$1" in
	redlock) "$REDIS" kill "$WORK/redlock-$2"; "$REDIS" restart "$WORK/redlock-$2" >/dev/null ;;
	etcd) "$ETCD" kill "$WORK/etcd-$2"; "$ETCD" restart "$WORK/etcd-$2" >/dev/null ;;
	zk) "$ZK" kill "$WORK/zk-$2"; "$ZK" restart "$WORK/zk-$2" >/dev/null ;;
	esac
}

# restart_cluster_node K -- node J = K+1 is down while a worker is granted
# (so K is in the holder's bare majority), then K is killed too, and both
# are started again
restart_cluster_node() {
	local k="$1" j=$((($1 + 1) % 3)) i
	kill -9 "$(node_pid "$PROV" "$j")"
	mark
	i="$(wait_holding 60)" || { node_start "$PROV" "$j"; SHOWN_NOTE="no grant while node $j was down"; return 1; }
	kill -9 "$(node_pid "$PROV" "$k")"
	mark
	node_start "$PROV" "$k" &
	node_start "$PROV" "$j"
	wait $!
	wait_other_event "$i" G 30 || { SHOWN_NOTE="no grant after restarting node $k"; return 1; }
}

nemesis_restart() {
	local k i nodes
	case "$PROV" in redlock | etcd | zk) nodes="0 1 2" ;; *) nodes="$(seq -s " " 0 $((REPEAT - 1)))" ;; esac
	[ "$QUICK" != 1 ] || nodes=0
	for k in $nodes; do
		case "$PROV" in
		redlock | etcd | zk) restart_cluster_node "$k" || return 1 ;;
		*)
			mark
			i="$(wait_holding 30)" || { SHOWN_NOTE="no grant to crash"; return 1; }
			mark
			kill_restart "$PROV" "$k"
			wait_other_event "$i" G 30 || { SHOWN_NOTE="no grant after the restart"; return 1; }
			;;
		esac
		sleep 0.5
	done
	SHOWN_NOTE="restarts: node(s) $nodes"
}

# leader_node PROVIDER -- the node index of the etcd/ZooKeeper leader
leader_node() {
	local n
	for n in 0 1 2; do
		case "$1" in
		etcd) ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:$(port_of etcd "$n") endpoint status -w json 2>/dev/null |
			grep -q '"member_id":\([0-9]*\),.*"leader":\1[,}]' && { echo "$n"; return 0; } ;;
		zk) [ "$("$ZK" mode "$WORK/zk-$n" 2>/dev/null)" = leader ] && { echo "$n"; return 0; } ;;
		esac
	done
	return 1
}

# replica_links PROVIDER cut|mend -- the replication links of redis's
# (redisaof's) Sentinel deployment: cut, each replica AUTHs to its master
# with a password the master refuses (the link stays down, writes are not
# replicated); mended, no password again
replica_links() {
	local r auth=""
	[ "$2" = mend ] || auth=pglease-matrix-cut-link
	for r in $(cat "$(sentinel_dir "$1")/replicas"); do
		redis-cli -p "${r##*:}" CONFIG SET masterauth "$auth" >/dev/null
		[ "$2" = mend ] || redis-cli -p "${r##*:}" CLIENT KILL TYPE master >/dev/null
	done
}

nemesis_failover() {
	local i n old
	mark
	case "$PROV" in redis | redisaof) replica_links "$PROV" cut ;; esac
	i="$(wait_holding 30)" || { SHOWN_NOTE="no grant to fail over"; return 1; }
	mark
	case "$PROV" in
	pgsync)
		kill -9 "$(postmaster_pid "$WORK/pgsync-p")"
		(cd / && runuser -u postgres -- "$(pg_config --bindir)/pg_ctl" -D "$WORK/pgsync-s/data" -w promote >/dev/null)
		pg_dsn "$WORK/pgsync-s" $SOCK_SYNC_S >"$URLS/pgsync" ;;
	redis | redisaof)
		old="$("$SENTINEL" kill-master "$(sentinel_dir "$PROV")")"
		replica_links "$PROV" mend # the master is gone: the grant is lost to them
		"$SENTINEL" wait-new-master "$(sentinel_dir "$PROV")" "$old" 30 >/dev/null ||
			{ SHOWN_NOTE="the Sentinels named no new master"; return 1; } ;;
	redlock) kill -9 "$(node_pid redlock 0)"; n=0 ;;
	etcd | zk)
		n="$(leader_node "$PROV")" || { SHOWN_NOTE="no leader found"; return 1; }
		kill -9 "$(node_pid "$PROV" "$n")" ;;
	esac
	wait_new_write 30 || { SHOWN_NOTE="no write after the failover"; return 1; }
	sleep 1
	case "$PROV" in redlock | etcd | zk) node_start "$PROV" "$n" ;; esac
	SHOWN_NOTE="failover${n:+ (node $n killed)}"
}
