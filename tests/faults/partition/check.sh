#!/usr/bin/env bash
# check.sh EVENTS A_LOG B_LOG -- the partition suite's checker: one run's
# history (worker.cpp's lines; EVENTS is the harness's "cut US KIND" and
# "heal US"; every time CLOCK_REALTIME in us) against what the suite
# promises.  Prints one line of figures,
#   outcome=lost|kept cut_to_lost_ms=N cut_to_b_ms=N lost_after_deadline_ms=N
# then a "violation: ..." line for each broken promise, and exits 1 if any.
#
# outcome lost (A's lease ended while it was cut off):
#   - on_lost fired exactly once, no later than A's local deadline + 100 ms
#     (the deadline A last logged: its grant's or its last renewal's);
#   - A's belief ended before B was granted: its local deadline, valid()
#     seen false and on_lost all come before B's grant was received (B was
#     surely granted by then: a grant received earlier is a double holder);
#   - B was granted, with a token above A's (an election: a higher term, and
#     leader() after the heal names it);
#   - after the heal and B's grant A's renew, token renew, token release,
#     proclaim and fenced write are refused by the server: false or lost (the
#     worker tries again a call answered unavailable, for up to 5 s); an
#     election's leader() names B's term.
# outcome kept (A was still valid when asked after the heal: the heal came
#   before its deadline and a renewal got through): on_lost never fired and
#   B was not granted before A released, then was, with a higher token.
# Every run: A granted; every call within its bound -- an acquire within
#   wait + statement_grace + 0.5 s + connect_timeout (docs/limits.md, the
#   largest of the providers' bounds), every other call within the same
#   without the wait, each + 300 ms for a loaded machine.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: check.sh EVENTS A_LOG B_LOG" >&2; exit 64; }
awk '
FNR == 1 { part++ }
part == 1 && $1 == "cut" { cut = $2 }
part == 1 && $1 == "heal" { heal = $2 }
part == 2 && $1 == "P" { bound = ($4 + 500 + $5 + 300) * 1000; abound = bound + $3 * 1000 }
part == 2 && $1 == "G" { a_tok = $2; a_call = $4 - $3; deadline = $5 }
part == 2 && $1 == "D" { if ($2 > deadline) deadline = $2 }
part == 2 && $1 == "F" { a_failed = $2 }
part == 2 && $1 == "V" { valid_end = $2 }
part == 2 && $1 == "O" { lost_n++; if (lost_n == 1) lost_at = $3 }
part == 2 && $1 == "K" { kept = $2 }
part == 2 && $1 == "Q" { asked = $2 }
part == 2 && $1 == "C" { calls++; call[calls] = $2; res[$2] = $3; ms[calls] = $4 }
part == 3 && $1 == "G" { b_tok = $2; b_send = $3; b_recv = $4 }
part == 3 && $1 == "T" { b_slowest = $3 }
function bad(what) { v[++nv] = what }
function ms_(us) { return sprintf("%.0f", us / 1000) }
# refused NAME ANSWERS -- the late call NAME, if made, answered one of ANSWERS
# ("false lost": the server refused it; "ok", "true", "unavailable" did not)
function refused(name, answers) {
	if (!(name in res)) return
	if (index(" " answers " ", " " res[name] " ") == 0)
		bad("after the heal A'"'"'s " name " answered " res[name] ", not " answers)
}
END {
	if (cut == "") bad("no cut in the events")
	if (a_tok == "") { bad("A was not granted (" a_failed ")"); report(); exit }
	if (a_call > abound) bad("A'"'"'s acquire took " ms_(a_call) " ms, bound " ms_(abound))
	for (i = 1; i <= calls; i++)
		if (ms[i] * 1000 > bound) bad("A'"'"'s " call[i] " took " ms[i] " ms, bound " ms_(bound))
	if (b_slowest * 1000 > bound) bad("a try of B took " b_slowest " ms, bound " ms_(bound))
	if (b_tok == "") bad("B was never granted")
	else if (b_tok + 0 <= a_tok + 0) bad("B'"'"'s token " b_tok " is not above A'"'"'s " a_tok)
	if (kept != "") check_kept(); else check_lost()
	report()
}
function check_kept() {
	outcome = "kept"
	if (lost_n > 0) bad("on_lost fired " lost_n " time(s) although A was still valid at the check")
	if (b_recv != "" && b_recv < kept) bad("B was granted " ms_(kept - b_recv) " ms before A, still valid, released")
}
function check_lost() {
	outcome = "lost"
	if (lost_n != 1) bad("on_lost fired " lost_n + 0 " times, not once")
	if (lost_n > 0 && lost_at > deadline + 100000)
		bad("on_lost fired " ms_(lost_at - deadline) " ms after the local deadline (at most 100)")
	if (valid_end == "") bad("valid() was never seen false")
	if (b_recv != "") {
		if (deadline > b_recv) bad("B was granted " ms_(deadline - b_recv) " ms before A'"'"'s local deadline")
		if (valid_end != "" && valid_end > b_recv) bad("B was granted " ms_(valid_end - b_recv) " ms before A saw valid() false")
		if (lost_n > 0 && lost_at > b_recv) bad("B was granted " ms_(lost_at - b_recv) " ms before A'"'"'s on_lost")
	}
	if (!("renew" in res)) bad("A made no call after the heal")
	# the server answers for its grant: until B is granted it may still be
	# the one of A (a cut server->A lets its renewals in), so the calls come after
	if (asked == "" || (b_recv != "" && asked < b_recv)) bad("A'"'"'s calls after the heal came before B'"'"'s grant (the harness waits for it)")
	refused("renew", "lost"); refused("token_renew", "false lost"); refused("token_release", "false lost")
	refused("proclaim", "lost"); refused("fenced", "lost")
	if (("leader_term" in res) && b_tok != "" && res["leader_term"] != b_tok)
		bad("after the heal leader() named term " res["leader_term"] ", not B'"'"'s " b_tok)
}
function report() {
	printf "outcome=%s cut_to_lost_ms=%s cut_to_b_ms=%s lost_after_deadline_ms=%s\n", outcome,
		lost_n ? ms_(lost_at - cut) : "-", b_recv != "" ? ms_(b_recv - cut) : "-",
		lost_n ? ms_(lost_at - deadline) : "-"
	for (i = 1; i <= nv; i++) print "violation: " v[i]
	exit nv > 0
}' "$@"
