#!/usr/bin/env bash
# zk_curator.sh ELECT_PGLEASE PGLEASE_CLI -- ZooKeeper elections beside
# Apache Curator's LeaderSelector (Debian's libcurator-recipes-java 5.4), on
# one election path, both ways (docs/election.md "ZooKeeper"): a Curator participant
# (tests/providers/curator/ElectCurator.java, compiled here with javac
# against the Debian jars) and pglease candidates and followers
# (tests/providers/curator/elect_pglease.cpp) see and respect each other.
#   1. Curator leads: pglease's leader() names its id, a pglease candidate
#      waits; the Curator process ends -> the candidate is elected with a
#      higher term; a pglease observer saw both, in order.
#   2. pglease leads: the Curator participant waits, its getLeader() names
#      the pglease value and then the proclaimed one; the pglease leader
#      resigns -> Curator leads, and leader() names it with a higher term.
#   3. a Curator leader killed (SIGKILL, 2 s session): the pglease candidate
#      is elected once the server expires the session.
#   4. locks: Curator's InterProcessMutex (LockCurator.java) on
#      /pglease/<resource> and `pglease run --resource <resource>` exclude
#      each other, both ways (docs/providers.md, ZooKeeper).
# Its own standalone ZooKeeper server (scripts/zookeeper.sh) on a free port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
ELECT="${1:?usage: zk_curator.sh PATH/elect_pglease PATH/pglease}"
PGLEASE="${2:?usage: zk_curator.sh PATH/elect_pglease PATH/pglease}"
ZK="$ROOT/scripts/zookeeper.sh"
JARS=/usr/share/java
failures=0

[ -x "$ELECT" ] || die "no $ELECT (cmake --build build/client --target elect_pglease)"
[ -x "$PGLEASE" ] || die "no $PGLEASE (cmake --build build/client --target pglease_cli)"
command -v javac >/dev/null 2>&1 ||
	die "javac not found: apt-get install default-jdk-headless (scripts/install-deps.sh)"
[ -f "$JARS/curator-recipes.jar" ] ||
	die "$JARS/curator-recipes.jar not found: apt-get install libcurator-recipes-java (scripts/install-deps.sh)"

work_dir pglease_zk_curator
on_exit 'for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	"$ZK" kill "$WORK/zk" >/dev/null 2>&1 || true'

# The Debian jars name their dependencies in their manifests' Class-Path
# (curator-framework, curator-client, zookeeper, zookeeper-jute, guava,
# slf4j-api, ...); slf4j-nop keeps the Curator log quiet.
javac -cp "$JARS/curator-recipes.jar" -d "$WORK/classes" "$ROOT/tests/providers/curator/ElectCurator.java" \
	"$ROOT/tests/providers/curator/LockCurator.java"
CP="$WORK/classes:$JARS/curator-recipes.jar:$JARS/slf4j-nop.jar"

addr="$("$ZK" start "$WORK/zk")"
URL="zookeeper://$addr"

# wait_line FILE REGEX SECONDS -- until a line of FILE matches (0) or time is up (1)
wait_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# term_of FILE REGEX -- the term=N of the first line matching
term_of() { grep -E "$2" "$1" | head -1 | sed -n 's/.*term=\([0-9]*\).*/\1/p'; }
# curator NAME ID TAG [SESSION_MS] -- a Curator participant of NAME's path, in the background
curator() {
	java -cp "$CP" ElectCurator "$addr" "/pglease/.election/$1" "$2" "$WORK/stop-$3" ${4:+"$4"} \
		>"$WORK/$3.out" 2>"$WORK/$3.err" &
}

# ---- 1. Curator leads, pglease waits, then takes over ---------------------------
curator interop-1 curator-1 c1
wait_line "$WORK/c1.out" '^curator-leading$' 30 || true
expect "curator_participant_leads" "$(cat "$WORK/c1.out" "$WORK/c1.err")" 'grep -qx curator-leading "$WORK/c1.out"'
"$ELECT" "$URL" interop-1 leader >"$WORK/l1.out" 2>&1 || true
t1="$(term_of "$WORK/l1.out" '^leader ')"
expect "pglease_leader_names_curator" "$(cat "$WORK/l1.out")" 'grep -qx "leader term=[0-9]* value=curator-1" "$WORK/l1.out"'
"$ELECT" "$URL" interop-1 observe 30000 >"$WORK/o1.out" 2>&1 &
"$ELECT" "$URL" interop-1 campaign pg-1 3000 "$WORK/stop-p1" >"$WORK/p1.out" 2>&1 &
sleep 2
expect "pglease_candidate_waits_behind_curator" "$(cat "$WORK/p1.out")" '! grep -q elected "$WORK/p1.out"'
expect "curator_still_leads" "$(cat "$WORK/c1.out")" '[ "$(grep -c curator-leading "$WORK/c1.out")" -eq 1 ]'
touch "$WORK/stop-c1"
wait_line "$WORK/p1.out" '^elected ' 10 || true
t2="$(term_of "$WORK/p1.out" '^elected ')"
wait_line "$WORK/c1.out" '^curator-closed$' 10 || true
expect "pglease_elected_after_curator_ends" "curator term ${t1:-?}, $(cat "$WORK/p1.out" "$WORK/c1.out")" \
	'[ -n "$t2" ] && [ -n "$t1" ] && [ "$t2" -gt "$t1" ] && grep -qx curator-closed "$WORK/c1.out"'
wait_line "$WORK/o1.out" "^view term=$t2 value=pg-1\$" 5 || true
expect "pglease_observer_saw_curator_then_pglease" "$(cat "$WORK/o1.out")" \
	'[ "$(grep -E "^view term=" "$WORK/o1.out" | tr "\n" "|")" = "view term=$t1 value=curator-1|view term=$t2 value=pg-1|" ]'
touch "$WORK/stop-p1"
wait_line "$WORK/p1.out" '^resigned$' 5 || true
expect "pglease_leader_resigns" "$(cat "$WORK/p1.out")" 'grep -qx resigned "$WORK/p1.out"'

# ---- 2. pglease leads, Curator waits and sees it, then takes over ----------------
"$ELECT" "$URL" interop-2 campaign pg-2 3000 "$WORK/stop-p2" pg-2b >"$WORK/p2.out" 2>&1 &
wait_line "$WORK/p2.out" '^elected ' 10 || true
t3="$(term_of "$WORK/p2.out" '^elected ')"
expect "pglease_candidate_elected" "$(cat "$WORK/p2.out")" '[ -n "$t3" ]'
curator interop-2 curator-2 c2
wait_line "$WORK/c2.out" '^curator-sees pg-2b$' 30 || true
expect "curator_getleader_names_pglease_then_proclaimed_value" "$(cat "$WORK/c2.out" "$WORK/c2.err")" \
	'grep -qx "curator-sees pg-2b" "$WORK/c2.out" && grep -qx "proclaimed pg-2b" "$WORK/p2.out"'
sleep 1
expect "curator_waits_behind_pglease" "$(cat "$WORK/c2.out")" '! grep -q curator-leading "$WORK/c2.out"'
touch "$WORK/stop-p2"
wait_line "$WORK/c2.out" '^curator-leading$' 10 || true
expect "curator_leads_after_pglease_resigns" "$(cat "$WORK/p2.out" "$WORK/c2.out")" \
	'grep -qx resigned "$WORK/p2.out" && grep -qx curator-leading "$WORK/c2.out"'
"$ELECT" "$URL" interop-2 leader >"$WORK/l2.out" 2>&1 || true
t4="$(term_of "$WORK/l2.out" '^leader ')"
expect "pglease_leader_names_curator_with_higher_term" "pglease term $t3, $(cat "$WORK/l2.out")" \
	'grep -q "value=curator-2$" "$WORK/l2.out" && [ -n "$t4" ] && [ "$t4" -gt "$t3" ]'
touch "$WORK/stop-c2"
wait_line "$WORK/c2.out" '^curator-closed$' 10 || true
"$ELECT" "$URL" interop-2 leader >"$WORK/l3.out" 2>&1 || true
expect "no_leader_after_curator_closes" "$(cat "$WORK/l3.out")" 'grep -qx "leader none" "$WORK/l3.out"'

# ---- 3. a Curator leader killed: elected once its session expires ---------------
curator interop-3 curator-3 c3 2000
c3=$!
wait_line "$WORK/c3.out" '^curator-leading$' 30 || true
"$ELECT" "$URL" interop-3 campaign pg-3 3000 "$WORK/stop-p3" >"$WORK/p3.out" 2>&1 &
sleep 1
expect "pglease_waits_behind_curator_3" "$(cat "$WORK/c3.out" "$WORK/p3.out")" \
	'grep -qx curator-leading "$WORK/c3.out" && ! grep -q elected "$WORK/p3.out"'
{ kill -KILL "$c3" && wait "$c3"; } 2>/dev/null || true # no "Killed" line from bash
killed=$(now_ms)
wait_line "$WORK/p3.out" '^elected ' 10 || true
took=$(($(now_ms) - killed))
expect "pglease_elected_after_killed_curator_session_expires" "after $took ms: $(cat "$WORK/p3.out")" \
	'grep -q "^elected " "$WORK/p3.out" && [ "$took" -lt 6000 ]'
touch "$WORK/stop-p3"
wait_line "$WORK/p3.out" '^resigned$' 5 || true

# ---- 4. locks: InterProcessMutex and `pglease run` on one resource --------------
java -cp "$CP" LockCurator "$addr" /pglease/shared-lock 10000 "$WORK/stop-k1" >"$WORK/k1.out" 2>&1 &
wait_line "$WORK/k1.out" '^curator-locked$' 30 || true
rc=0
"$PGLEASE" run --dsn "$URL" --resource shared-lock --ttl 5s --wait 500ms -- true 2>/dev/null || rc=$?
expect "pglease_run_held_by_curator_mutex_exits_75" "exit $rc; $(cat "$WORK/k1.out")" \
	'grep -qx curator-locked "$WORK/k1.out" && [ "$rc" -eq 75 ]'
"$PGLEASE" run --dsn "$URL" --resource shared-lock --ttl 5s --wait 20s -- sh -c 'echo "ran $PGLEASE_TOKEN"' \
	>"$WORK/r1.out" 2>&1 &
sleep 1
expect "pglease_run_waits_behind_curator_mutex" "$(cat "$WORK/r1.out")" '! grep -q ran "$WORK/r1.out"'
touch "$WORK/stop-k1"
wait_line "$WORK/r1.out" '^ran [0-9]+$' 10 || true
wait_line "$WORK/k1.out" '^curator-released$' 10 || true
expect "pglease_run_after_curator_releases" "$(cat "$WORK/r1.out" "$WORK/k1.out")" \
	'grep -qE "^ran [0-9]+$" "$WORK/r1.out" && grep -qx curator-released "$WORK/k1.out"'
"$PGLEASE" run --dsn "$URL" --resource shared-lock --ttl 5s -- sh -c 'echo running; sleep 4' >"$WORK/r2.out" 2>&1 &
wait_line "$WORK/r2.out" '^running$' 10 || true
java -cp "$CP" LockCurator "$addr" /pglease/shared-lock 500 "$WORK/stop-k2" >"$WORK/k2.out" 2>&1 || true
expect "curator_mutex_times_out_behind_pglease_run" "$(cat "$WORK/r2.out" "$WORK/k2.out")" \
	'grep -qx running "$WORK/r2.out" && grep -qx curator-timeout "$WORK/k2.out"'
java -cp "$CP" LockCurator "$addr" /pglease/shared-lock 20000 "$WORK/stop-k3" >"$WORK/k3.out" 2>&1 &
sleep 1
expect "curator_mutex_waits_behind_pglease_run" "$(cat "$WORK/k3.out")" '! grep -q curator-locked "$WORK/k3.out"'
wait_line "$WORK/k3.out" '^curator-locked$' 15 || true
expect "curator_mutex_after_pglease_run_ends" "$(cat "$WORK/k3.out")" 'grep -qx curator-locked "$WORK/k3.out"'
touch "$WORK/stop-k3"
wait_line "$WORK/k3.out" '^curator-released$' 10 || true
finish
