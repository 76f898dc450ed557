#!/usr/bin/env bash
# common_selftest.sh -- the shell library (scripts/lib/common.sh) does what
# every script relies on: die's message and status, exit hooks run in reverse
# on a normal exit, a failure and a signal without changing the status, the
# psql wrapper's flags, the clock, the counting of checks, the waits, and
# that a hung worker never blocks wait_workers.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LIB="$ROOT/scripts/lib/common.sh"
source "$LIB"
T="$(mktemp -d)"
NL=$'\n'
on_exit 'rm -rf "$T"'

# in_script BODY -- run BODY as a script of its own (named probe.sh) that
# sourced the library; its stdout+stderr, then "rc=N"
in_script() {
	printf 'set -euo pipefail\nsource %q\n%s\n' "$LIB" "$1" >"$T/probe.sh"
	local rc=0 out
	out="$(bash "$T/probe.sh" 2>&1)" || rc=$?
	printf '%s\nrc=%s' "$out" "$rc"
}

out="$(in_script 'die "no server"')"
expect die_names_the_script_and_exits_1 "got '$out'" '[ "$out" = "probe.sh: no server${NL}rc=1" ]'

out="$(in_script 'on_exit "echo first"; on_exit "echo second"; echo body')"
expect exit_hooks_run_last_registered_first "got '$out'" \
	'[ "$out" = "body${NL}second${NL}first${NL}rc=0" ]'

out="$(in_script 'on_exit "false"; on_exit "echo hook"; exit 3')"
expect exit_hooks_keep_the_exit_status "got '$out'" '[ "$out" = "hook${NL}rc=3" ]'

out="$(in_script 'on_exit "echo hook"; false; echo not reached')"
expect exit_hooks_run_after_a_failed_command "got '$out'" '[ "$out" = "hook${NL}rc=1" ]'

out="$(in_script 'on_exit "echo hook"; kill -TERM $$; sleep 5')"
expect exit_hooks_run_on_sigterm "got '$out'" '[ "$out" = "hook${NL}rc=143" ]'

out="$(in_script 'source "'"$LIB"'"; on_exit "echo a"; source "'"$LIB"'"; on_exit "echo b"')"
expect sourcing_twice_keeps_the_hooks "got '$out'" '[ "$out" = "b${NL}a${NL}rc=0" ]'

out="$(PSQL=echo psql_q -d db -c 'SELECT 1')"
expect psql_q_flags "got '$out'" '[ "$out" = "-X -q -A -t -v ON_ERROR_STOP=1 -d db -c SELECT 1" ]'
rc=0
PSQL=sleep PSQL_TIMEOUT=0.2 psql_q 5 2>/dev/null || rc=$?
expect psql_q_bounded_by_PSQL_TIMEOUT "exit $rc" '[ "$rc" -ne 0 ]'

a="$(now_ms)"
sleep 0.05
b="$(now_ms)"
expect now_ms_counts_milliseconds "$a then $b" '[ $((b - a)) -ge 40 ] && [ $((b - a)) -lt 2000 ]'

out="$(in_script 'ok one; not_ok two "why"; expect three "false" false; echo "failures=$failures"; finish')"
expect checks_counted_and_finish_fails "got '$out'" \
	'[ "$out" = "ok - one${NL}not ok - two: why${NL}not ok - three: false${NL}failures=2${NL}rc=1" ]'

cat >"$T/log" <<'LOG'
ok - a
not ok - b: why
[       OK ] Suite.Passes (12 ms)
[  FAILED  ] Suite.Fails (3 ms)
[  FAILED  ] Suite.Fails
test basic                        ... ok           25 ms
     fence_orders_acquire         ... FAILED       40 ms
# ok - a comment
LOG
out="$(count_checks "$T/log")"
expect count_checks_counts_tap_gtest_and_pg_regress "got '$out'" '[ "$out" = "3 3" ]'

out="$(in_script 'work_dir pglease_selftest; echo "$WORK" >'"$T"'/work; [ -d "$WORK" ] && stat -c %a "$WORK"')"
expect work_dir_made_755_and_removed_at_exit "got '$out', left: $(cat "$T/work")" \
	'[ "$out" = "755${NL}rc=0" ] && [ ! -e "$(cat "$T/work")" ]'
# ports: distinct, below the ephemeral range, free; a port someone listens on is never handed out
read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
ports="$(free_ports 20)"
expect free_ports_gives_20_distinct "got '$ports'" '[ "$(tr " " "\n" <<<"$ports" | sort -u | wc -l)" = 20 ]'
expect free_ports_below_the_ephemeral_range "got '$ports', range starts at $lo" \
	'for p in $ports; do [ "$p" -ge 1024 ] && [ "$p" -lt "$lo" ] || exit 1; done'
expect free_ports_are_free "one of '$ports' is taken" 'for p in $ports; do port_is_free "$p" || exit 1; done'
# hold one port, then ask for ports from a range of that one alone: it must be refused
held="$(free_port)"
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 1) or die; sleep 30' "$held" &
holder=$!
for _ in $(seq 50); do port_is_free "$held" || break; sleep 0.05; done
expect port_is_free_sees_a_listener "port $held held by pid $holder" '! port_is_free "$held"'
out="$(port_range() { echo "$held $held"; }; free_ports 1 2>&1)" && rc=0 || rc=$?
expect free_ports_never_hands_out_a_taken_port "got '$out' rc=$rc" '[ "$rc" = 1 ] && [[ "$out" == *"no free port"* ]]'
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
out="$(in_script 'negative_control shown "x > 0" true; negative_control missed "y > 0" false; echo "failures=$failures"; finish')"
expect negative_control_ok_when_shown_not_ok_when_missing "got '$out'" \
	'[ "$out" = "ok - negative control: shown (x > 0, the violation it must show)${NL}not ok - negative control: missed: y > 0 did not show${NL}failures=1${NL}rc=1" ]'
out="$(printf 'ok - a\nnot ok - b: why\n' | as_expected_violations)"
expect as_expected_violations_marks_the_not_ok_lines "got '$out'" \
	'[ "$out" = "#   ok - a${NL}#   violation shown (expected) - b: why" ]'
# wait_workers: a worker that exits is waited for and its status returned; a
# hung one (a sleep here, never told to stop) is not waited for past the
# bound: its stacks printed, killed, a not ok line, a non-zero status.  (The
# fault tests did `timeout 60 tail --pid=P; wait P`, which blocks on a hang.)
out="$(in_script 'sh -c "exit 3" & w=$!; sleep 10 & s=$!; kill $s; rc=0; wait_workers 5 $w $s || rc=$?; echo "status=$rc failures=$failures"')"
expect wait_workers_returns_the_exit_status "got '$out'" '[ "$out" = "status=143 failures=0${NL}rc=0" ]'
out="$(in_script 'sh -c "exit 3" & w=$!; rc=0; wait_workers 5 $w || rc=$?; echo "status=$rc"')"
expect wait_workers_returns_a_failed_workers_status "got '$out'" '[ "$out" = "status=3${NL}rc=0" ]'
started_at="$(now_ms)"
out="$(in_script 'sleep 300 >/dev/null 2>&1 & h=$!; on_exit "kill $h 2>/dev/null"; echo $h >'"$T"'/hung
	rc=0; wait_workers 1 $h || rc=$?; echo "status=$rc failures=$failures"')"
took=$(($(now_ms) - started_at))
hung="$(cat "$T/hung")"
expect wait_workers_never_blocks_on_a_hung_worker "took $took ms: $out" \
	'[ "$took" -lt 45000 ] && [[ "$out" == *"status=137 failures=1${NL}rc=0" ]] && ! alive "$hung"'
expect wait_workers_prints_a_hung_workers_stacks_and_a_not_ok "got '$out'" \
	'grep -q "^#   Thread 1 " <<<"$out" && grep -q "^#   #0 " <<<"$out" && grep -q "^not ok - worker_${hung}_exits_within_1s: " <<<"$out"'
out="$(in_script 'sleep 300 >/dev/null 2>&1 & started; echo $! >'"$T"'/bg; exit 0')"
# (bash may report the killed job on stderr as it exits: only the status counts)
expect started_processes_are_killed_at_exit "got '$out'" '[[ "$out" == *"${NL}rc=0" ]] && ! alive "$(cat "$T/bg")"'
printf 'line one\nline two\n' >"$T/lines"
expect wait_lines_and_wait_line_see_the_file "no" 'wait_lines "$T/lines" 1 2 && wait_line "$T/lines" "^line t" 1'
expect wait_lines_and_wait_line_time_out "no" '! wait_lines "$T/lines" 1 3 && ! wait_line "$T/lines" "^three" 1'
printf 'ok - negative control: n (v, the violation it must show)\nok - plain\n' >"$T/neg"
expect count_negative_controls_counts_them "got '$(count_checks "$T/neg") $(count_negative_controls "$T/neg")'" \
	'[ "$(count_checks "$T/neg") $(count_negative_controls "$T/neg")" = "2 0 1" ]'
finish
