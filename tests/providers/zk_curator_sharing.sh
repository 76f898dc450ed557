#!/usr/bin/env bash
# zk_curator_sharing.sh SHARE_PGLEASE -- ZooKeeper shared leases and
# semaphores beside Apache Curator's InterProcessReadWriteLock and
# InterProcessSemaphoreV2 (Debian's libcurator-recipes-java 5.4), on the
# same paths, both ways (docs/shared-leases.md, "ZooKeeper"): a Curator
# process (tests/providers/curator/ShareCurator.java, compiled here with
# javac against the Debian jars) and pglease processes
# (tests/providers/curator/share_pglease.cpp) wait for each other.
#   1. Curator's write lock held: a pglease reader and a pglease writer
#      wait, and are granted when Curator releases.
#   2. Curator's read lock held: a pglease reader shares it, a pglease
#      writer waits until both readers leave.
#   3. a pglease writer (a plain lease) held: Curator's read and write
#      locks wait, and are granted when it releases.
#   4. a pglease reader held: Curator's write lock waits, Curator's read
#      lock shares it.
#   5. a semaphore of 2 on one path: Curator's two leases make a pglease
#      permit wait, pglease's two permits make Curator wait; a pglease
#      permit with another limit is refused (LS003) while pglease holds.
#   6. three Curator and three pglease processes take permits of that
#      semaphore of 2 in turns: never more than 2 holders at once.
# Its own standalone ZooKeeper server (scripts/zookeeper.sh) on a free port.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
SHARE="${1:?usage: zk_curator_sharing.sh PATH/share_pglease}"
ZK="$ROOT/scripts/zookeeper.sh"
JARS=/usr/share/java
failures=0

[ -x "$SHARE" ] || die "no $SHARE (cmake --build build/client --target share_pglease)"
command -v javac >/dev/null 2>&1 ||
	die "javac not found: apt-get install default-jdk-headless (scripts/install-deps.sh)"
[ -f "$JARS/curator-recipes.jar" ] ||
	die "$JARS/curator-recipes.jar not found: apt-get install libcurator-recipes-java (scripts/install-deps.sh)"

work_dir pglease_zk_curator_sharing
on_exit 'for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
	"$ZK" kill "$WORK/zk" >/dev/null 2>&1 || true'

# the Debian jars name their dependencies in their manifests' Class-Path
javac -cp "$JARS/curator-recipes.jar" -d "$WORK/classes" "$ROOT/tests/providers/curator/ShareCurator.java"
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
# curator RESOURCE KIND WAIT_MS TAG -- Curator on /pglease/RESOURCE, in the background
curator() {
	java -cp "$CP" ShareCurator "$addr" "/pglease/$1" "$2" "$3" "$WORK/stop-$4" >"$WORK/$4.out" 2>"$WORK/$4.err" &
}
# pglease RESOURCE KIND WAIT_MS TAG -- share_pglease on RESOURCE, in the background
pglease() {
	"$SHARE" "$URL" "$1" "$2" "$3" "$WORK/stop-$4" >"$WORK/$4.out" 2>&1 &
}
# settle SECONDS -- let a waiter join the queue
settle() { sleep "$1"; }
out() { cat "$WORK/$1.out" 2>/dev/null; }
granted() { grep -qE '^(curator-)?granted' "$WORK/$1.out" 2>/dev/null; }
# release TAG -- end a holder and wait for its release line
release() {
	touch "$WORK/stop-$1"
	wait_line "$WORK/$1.out" '^(curator-)?released$' 15 || true
}

# ---- 1. Curator's write lock held: pglease readers and writers wait ------------
curator rw1 write 10000 c1
wait_line "$WORK/c1.out" '^curator-granted$' 30 || true
expect "curator_write_lock_granted" "$(out c1; cat "$WORK/c1.err")" 'granted c1'
pglease rw1 shared 20000 p1r
settle 1 # queued first
pglease rw1 exclusive 20000 p1w
settle 1.5
expect "pglease_reader_and_writer_wait_behind_curator_writer" "$(out p1r; out p1w)" '! granted p1r && ! granted p1w'
release c1
wait_line "$WORK/p1r.out" '^granted' 10 || true
expect "pglease_reader_granted_after_curator_writer" "$(out c1; out p1r)" 'granted p1r'
expect "pglease_writer_still_waits_behind_pglease_reader" "$(out p1w)" '! granted p1w'
release p1r
wait_line "$WORK/p1w.out" '^granted' 10 || true
expect "pglease_writer_granted_after_reader_leaves" "$(out p1w)" 'granted p1w'
release p1w

# ---- 2. Curator's read lock held: a pglease reader shares, a writer waits ------
curator rw2 read 10000 c2
wait_line "$WORK/c2.out" '^curator-granted$' 30 || true
pglease rw2 shared 0 p2r
wait_line "$WORK/p2r.out" '^(granted|timeout|error)' 10 || true
expect "pglease_reader_shares_curator_read_lock" "$(out c2; out p2r)" 'granted c2 && granted p2r'
pglease rw2 exclusive 20000 p2w
settle 1.5
expect "pglease_writer_waits_behind_curator_and_pglease_readers" "$(out p2w)" '! granted p2w'
release c2
settle 1
expect "pglease_writer_waits_for_the_last_reader" "$(out p2w)" '! granted p2w'
release p2r
wait_line "$WORK/p2w.out" '^granted' 10 || true
expect "pglease_writer_granted_after_both_readers" "$(out p2w)" 'granted p2w'
release p2w

# ---- 3. a pglease writer held: Curator's read and write locks wait --------------
pglease rw3 exclusive 0 p3w
wait_line "$WORK/p3w.out" '^(granted|timeout|error)' 10 || true
expect "pglease_writer_granted" "$(out p3w)" 'granted p3w'
curator rw3 read 500 c3t
wait_line "$WORK/c3t.out" '^curator-' 30 || true
expect "curator_read_lock_times_out_behind_pglease_writer" "$(out c3t; cat "$WORK/c3t.err")" \
	'grep -qx curator-timeout "$WORK/c3t.out"'
curator rw3 read 20000 c3r
settle 3 # queued first (a JVM starts in about a second)
curator rw3 write 20000 c3w
settle 3
expect "curator_read_and_write_locks_wait_behind_pglease_writer" "$(out c3r; out c3w)" '! granted c3r && ! granted c3w'
release p3w
wait_line "$WORK/c3r.out" '^curator-granted$' 10 || true
expect "curator_read_lock_granted_after_pglease_writer" "$(out c3r)" 'granted c3r'
release c3r
wait_line "$WORK/c3w.out" '^curator-granted$' 10 || true
expect "curator_write_lock_granted_after_reader" "$(out c3w)" 'granted c3w'
pglease rw3 shared 500 p3t
wait_line "$WORK/p3t.out" '^(granted|timeout|error)' 10 || true
expect "pglease_reader_times_out_behind_curator_writer" "$(out p3t)" 'grep -qx timeout "$WORK/p3t.out"'
release c3w

# ---- 4. a pglease reader held: Curator's writer waits, Curator's reader shares --
pglease rw4 shared 0 p4r
wait_line "$WORK/p4r.out" '^(granted|timeout|error)' 10 || true
curator rw4 read 5000 c4r
wait_line "$WORK/c4r.out" '^curator-' 30 || true
expect "curator_read_lock_shares_pglease_reader" "$(out p4r; out c4r)" 'granted p4r && granted c4r'
release c4r
curator rw4 write 20000 c4w
settle 3
expect "curator_write_lock_waits_behind_pglease_reader" "$(out c4w)" '! granted c4w'
release p4r
wait_line "$WORK/c4w.out" '^curator-granted$' 10 || true
expect "curator_write_lock_granted_after_pglease_reader" "$(out c4w)" 'granted c4w'
release c4w

# ---- 5. a semaphore of 2: each side's two permits make the other wait ---------
curator sem5 permit:2 10000 c5a
curator sem5 permit:2 10000 c5b
wait_line "$WORK/c5a.out" '^curator-granted$' 30 || true
wait_line "$WORK/c5b.out" '^curator-granted$' 30 || true
expect "curator_two_leases_granted" "$(out c5a; out c5b)" 'granted c5a && granted c5b'
pglease sem5 permit:2 20000 p5a
settle 1.5
expect "pglease_permit_waits_behind_two_curator_leases" "$(out p5a)" '! granted p5a'
release c5a
wait_line "$WORK/p5a.out" '^granted' 10 || true
expect "pglease_permit_granted_when_a_curator_lease_returns" "$(out p5a)" 'granted p5a'
release c5b
pglease sem5 permit:2 0 p5b
wait_line "$WORK/p5b.out" '^(granted|timeout|error)' 10 || true
expect "second_pglease_permit_granted" "$(out p5b)" 'granted p5b'
curator sem5 permit:2 500 c5t
wait_line "$WORK/c5t.out" '^curator-' 30 || true
expect "curator_lease_times_out_behind_two_pglease_permits" "$(out c5t; cat "$WORK/c5t.err")" \
	'grep -qx curator-timeout "$WORK/c5t.out"'
pglease sem5 permit:3 2000 p5x
wait_line "$WORK/p5x.out" '^(granted|timeout|error)' 10 || true
expect "pglease_permit_with_another_limit_refused_ls003" "$(out p5x)" \
	'grep -q "^error invalid_argument LS003: " "$WORK/p5x.out"'
curator sem5 permit:2 20000 c5c
settle 3
expect "curator_lease_waits_behind_two_pglease_permits" "$(out c5c)" '! granted c5c'
release p5a
wait_line "$WORK/c5c.out" '^curator-granted$' 10 || true
expect "curator_lease_granted_when_a_pglease_permit_returns" "$(out c5c)" 'granted c5c'
release p5b
release c5c

# ---- 6. Curator and pglease holders in turns: never more than 2 ---------------
for i in 1 2 3; do
	java -cp "$CP" ShareCurator "$addr" /pglease/sem6 permit:2 loop 8 150 >"$WORK/l-c$i.out" 2>"$WORK/l-c$i.err" &
	"$SHARE" "$URL" sem6 permit:2 loop 8 150 >"$WORK/l-p$i.out" 2>&1 &
done
for ((i = 0; i < 120 * 10; i++)); do
	done_count=$(cat "$WORK"/l-*.out 2>/dev/null | grep -c '^held ' || true)
	[ "$done_count" -ge 48 ] && break
	grep -q '^error' "$WORK"/l-p*.out 2>/dev/null && break
	sleep 0.1
done
rounds=$(cat "$WORK"/l-*.out | grep -c '^held ' || true)
# the most holders at once: +1 at each FROM, -1 at each TO (a TO before a
# FROM of the same millisecond)
most=$(for f in "$WORK"/l-*.out; do sed -n 's/^held \([0-9]*\) \([0-9]*\)$/\1 1\n\2 0/p' "$f"; done |
	sort -k1,1n -k2,2n | awk '{ n += ($2 == 1) ? 1 : -1; if (n > m) m = n } END { print m + 0 }')
both=$(cat "$WORK"/l-c*.out | grep -c '^held ' || true)
expect "mixed_semaphore_all_48_rounds_done" "$rounds rounds; $(cat "$WORK"/l-p*.out | grep -v '^held' || true)" \
	'[ "$rounds" -eq 48 ] && [ "$both" -eq 24 ]'
expect "mixed_semaphore_never_more_than_2_holders" "at most $most holders at once" '[ "$most" -le 2 ]'
expect "mixed_semaphore_was_full_at_times" "at most $most holders at once" '[ "$most" -eq 2 ]'
finish
