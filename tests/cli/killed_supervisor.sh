#!/usr/bin/env bash
# killed_supervisor.sh -- a killed pglease takes its command's process group
# with it (issue 36, item 3), against a redis-server of its own (a free port,
# scripts/redis.sh).
#
# `pglease run` and `pglease elect` each run a shell that starts two sleeps
# in the background and waits; the shell writes its pid, its process group
# and the sleeps' pids to a file.  Then pglease gets SIGKILL.  Before, the
# command was re-parented to PID 1 and ran on without a lease (the next copy
# would start beside it after the TTL); now, within 1.5 s of the kill, none
# of those pids is alive and no process is left in the command's group, and
# that group is not the test's own (the command runs in a group of its own:
# killing it must not reach pglease's caller).  Then the lease-loss path: a
# pglease frozen with SIGSTOP past its TTL finds its lease lost on SIGCONT and
# sends SIGTERM to the whole group, not only to the shell.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
PGLEASE="${PGLEASE_CLI:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || { echo "not ok - killed_supervisor: no $PGLEASE"; exit 1; }
work_dir pglease-cli-killed
REDIS="$ROOT/scripts/redis.sh"
on_exit '"$REDIS" kill "$WORK/r" >/dev/null 2>&1 || true'
DSN=(--dsn "redis://$("$REDIS" start "$WORK/r")")

# every process a command wrote down (not line 2, its group), and every
# pglease started, killed at exit
on_exit 'for f in "$WORK"/*.pids; do [ -f "$f" ] && kill -KILL $(sed 2d "$f") 2>/dev/null; done; true'
BACKGROUND=()
on_exit 'for p in "${BACKGROUND[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done; true'

# The command: two sleeps in the background, their pids, the shell's pid and
# its process group written to $0 (one per line: shell, group, sleep, sleep),
# then it waits for them
COMMAND='sleep 100 & a=$!; sleep 100 & b=$!; read -r _ _ _ _ g _ </proc/$$/stat; printf "%s\n" $$ $g $a $b >"$0.tmp"; mv "$0.tmp" "$0"; wait'

# alive_in_group GROUP -- the pids of the live (not zombie) processes of GROUP
alive_in_group() { ps -e -o pid=,pgid=,stat= | awk -v g="$1" '$2 == g && $3 !~ /^[ZX]/ { print $1 }'; }

# killed NAME SUBCOMMAND ARGS... -- pglease SUBCOMMAND with COMMAND, SIGKILLed
# once the command has written its pids: all of them gone within 1.5 s
killed() {
	local name="$1" pids="$WORK/$1.pids" pglease pid left gone_ms killed_at
	shift
	"$PGLEASE" "$1" "${DSN[@]}" "${@:2}" -- sh -c "$COMMAND" "$pids" 2>"$WORK/$name.err" &
	pglease=$!
	BACKGROUND+=("$pglease")
	wait_file "$pids" 10 || true
	local -a p=()
	mapfile -t p <"$pids" 2>/dev/null || true
	expect "${name}_command_started" "no pids in $pids; stderr: $(tr '\n' ' ' <"$WORK/$name.err")" '[ "${#p[@]}" -eq 4 ]'
	[ "${#p[@]}" -eq 4 ] || return 0
	expect "${name}_command_runs_in_a_process_group_of_its_own" \
		"its group ${p[1]} is the test's own ($(ps -o pgid= -p $$ | tr -d ' ')) or pglease's ($(ps -o pgid= -p "$pglease" | tr -d ' '))" \
		'[ "${p[1]}" != "$(ps -o pgid= -p $$ | tr -d " ")" ] && [ "${p[1]}" != "$(ps -o pgid= -p "$pglease" | tr -d " ")" ]'
	killed_at=$(now_ms)
	kill -KILL "$pglease"
	wait "$pglease" 2>/dev/null || true
	for (( ; ; )); do
		left=""
		for pid in "${p[0]}" "${p[2]}" "${p[3]}"; do alive "$pid" && left+="$pid "; done
		# the test's own group is no command's: a command that shares it
		# failed the check above
		[ "${p[1]}" = "$(ps -o pgid= -p $$ | tr -d ' ')" ] || left+="$(alive_in_group "${p[1]}" | tr '\n' ' ')"
		gone_ms=$(($(now_ms) - killed_at))
		[ -n "$left" ] && [ "$gone_ms" -le 1500 ] || break
		sleep 0.05
	done
	[ -n "$left" ] || echo "# $name: the command's group gone $gone_ms ms after pglease's SIGKILL"
	expect "killed_${name}_takes_its_command_group_with_it" \
		"still alive $gone_ms ms after pglease's SIGKILL: $left(shell ${p[0]}, group ${p[1]}, sleeps ${p[2]} ${p[3]}: $(ps -o pid,ppid,pgid,stat,args -p "${p[0]},${p[2]},${p[3]}" | tr '\n' '|'))" \
		'[ -z "$left" ]'
}

killed run run --resource "killed/run/$$" --ttl 30s
killed elect elect --name "killed/elect/$$" --value v --ttl 30s

# ---- the watcher killed first: the command's own process still dies with pglease
# (PR_SET_PDEATHSIG); what it started in the background is the watcher's to end
"$PGLEASE" run "${DSN[@]}" --resource "killed/watcher/$$" --ttl 30s -- sh -c "$COMMAND" "$WORK/watcher.pids" \
	2>"$WORK/watcher.err" &
PGL=$!
BACKGROUND+=("$PGL")
wait_file "$WORK/watcher.pids" 10 || true
mapfile -t p <"$WORK/watcher.pids" 2>/dev/null || true
own_group="$(ps -o pgid= -p $$ | tr -d ' ')"
if [ "${#p[@]}" -eq 4 ] && [ "${p[1]}" != "$own_group" ]; then
	kill -KILL "${p[1]}" # the group's leader: the watcher
	sleep 0.2
	kill -KILL "$PGL"
	wait "$PGL" 2>/dev/null || true
	killed_at=$(now_ms)
	while alive "${p[0]}" && [ $(($(now_ms) - killed_at)) -le 1500 ]; do sleep 0.05; done
fi
expect "command_dies_with_pglease_without_its_watcher" \
	"pids '${p[*]:-}' (the test's group $own_group); the command's shell still alive" \
	'[ "${#p[@]}" -eq 4 ] && [ "${p[1]}" != "$own_group" ] && ! alive "${p[0]}"'
kill -KILL "${p[2]:-0}" "${p[3]:-0}" 2>/dev/null || true

# ---- a lost lease: SIGTERM reaches the whole group --------------------------------
# the command traps nothing: the sleeps end only if the group gets the signal
"$PGLEASE" run "${DSN[@]}" --resource "killed/lost/$$" --ttl 1s --grace 10s -- sh -c "$COMMAND" "$WORK/lost.pids" \
	2>"$WORK/lost.err" &
LOST=$!
BACKGROUND+=("$LOST")
wait_file "$WORK/lost.pids" 10 || true
mapfile -t p <"$WORK/lost.pids" 2>/dev/null || true
kill -STOP "$LOST"
sleep 2 # past the TTL: on SIGCONT the lease is past its local deadline
kill -CONT "$LOST"
rc=0
wait_gone "$LOST" 5 || rc=running
[ "$rc" = running ] || wait "$LOST" || rc=$?
left=""
for pid in "${p[@]:2}"; do alive "$pid" && left+="$pid "; done
expect "lost_lease_stops_the_whole_command_group" \
	"exit $rc; background sleeps still alive: '$left'; stderr: $(tr '\n' ' ' <"$WORK/lost.err")" \
	'[ "${#p[@]}" -eq 4 ] && [ "$rc" = 76 ] && [ -z "$left" ]'
# ---- at a terminal: the command's group of its own keeps job control working ----
# an interactive bash on a pseudo-terminal (python3's pty): ^C reaches the
# command, ^Z stops it and fg resumes it, a command that reads the terminal
# gets it (before, they shared pglease's group; now pglease passes these on)
command -v python3 >/dev/null || { not_ok terminal_checks "no python3 (apt-get install python3)"; finish; }
python3 - "$PGLEASE" "${DSN[1]}" "terminal/$$" >"$WORK/terminal.out" 2>&1 <<'PY' || true
import os, pty, re, select, sys, time
pglease, dsn, resource = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.environ["PS1"] = "$ "
    os.environ["INPUTRC"] = "/dev/null"
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
seen = ""
def until(pattern, seconds=10):
    """read the terminal until pattern shows (True) or seconds pass"""
    global seen
    end = time.time() + seconds
    while time.time() < end:
        m = re.search(pattern, seen)
        if m:
            seen = seen[m.end():]
            return True
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                seen += os.read(fd, 4096).decode(errors="replace").replace("\r", "")
            except OSError:
                break
    return False
def send(text):
    os.write(fd, text.encode())
def check(name, ok):
    print(("ok - " if ok else "not ok - ") + name + ("" if ok else ": the terminal showed " + repr(seen[-300:])), flush=True)
run = pglease + " run --dsn " + dsn + " --resource " + resource + " --ttl 30s -- "
# each marker the commands print is written split by '' in the command line,
# so that the terminal's echo of the line does not show it
send("echo RE''ADY\n")
until("READY\n")
send(run + "sh -c 'trap \"echo GOT-''INT; exit 3\" INT; echo STAR''TED; sleep 30 & wait'; echo rc=$?\n")
check("terminal_ctrl_c_reaches_the_command", until("STARTED") and not send("\x03") and until("GOT-INT\nrc=3"))
send(run + "sh -c 'echo STAR''TED; sleep 1; echo RESU''MED'; echo rc=$?\n")
stopped = until("STARTED") and not send("\x1a") and until("Stopped")
check("terminal_ctrl_z_stops_the_command_and_pglease", stopped)
send("fg >/dev/null\n")
check("terminal_fg_resumes_the_command", stopped and until("RESUMED"))
send(run + "sh -c 'echo ASK''ING; read x; echo GOT-$x'; echo rc=$?\n")
check("terminal_command_reading_it_gets_it", until("ASKING") and not send("hello\n") and until("GOT-hello\nrc=0"))
os.kill(pid, 9)
PY
while read -r line; do # the python's lines, its not ok ones counted here
	case "$line" in
	"ok - "*) echo "$line" ;;
	"not ok - "*)
		line="${line#not ok - }"
		not_ok "${line%%:*}" "${line#*: }"
		;;
	esac
done <"$WORK/terminal.out"
expect terminal_checks_all_ran "python3 printed: $(tr '\n' ' ' <"$WORK/terminal.out")" \
	'[ "$(grep -c "^\(not \)\?ok - terminal_" "$WORK/terminal.out")" -eq 4 ]'
finish
