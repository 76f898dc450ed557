#!/usr/bin/env bash
# test-under-load.sh [N] [ctest args...] -- make test on a busy machine: while
# it runs, N client TCP connections are held open (default 5000:
# tests/lib/hold_connections.sh, so N local ports of the kernel's ephemeral
# range are taken), 100 other listening servers sit on ports the kernel picks
# free, and another redis-server, not the tests', runs on a Unix socket in
# this script's private directory.
# Then scripts/test.sh with the remaining arguments; its exit status is this
# script's.  What a user's machine with other servers looks like to the suite
# (docs/tests.md).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/lib/common.sh" # die, on_exit, work_dir
n=5000
if [[ "${1:-}" =~ ^[1-9][0-9]*$ ]]; then
	n="$1"
	shift
fi
command -v redis-server >/dev/null || "$ROOT/scripts/install-deps.sh"
work_dir pglease-load

# the connections, held for at most a day (killed at exit)
"$ROOT/tests/lib/hold_connections.sh" "$n" 86400 >"$WORK/hold.out" 2>&1 &
hold=$!
on_exit "kill $hold 2>/dev/null || true"

# other servers' listening sockets, one perl process for all: each on a port
# the kernel picks free (port 0)
perl -MIO::Socket::INET -e '
	my @held;
	for (1 .. 100) {
		my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 16)
			or die "test-under-load: listen: $!\n";
		push @held, $s;
	}
	$| = 1;
	print scalar(@held), " other listeners held\n";
	sleep 86400;
' >"$WORK/ports.out" 2>&1 &
listeners=$!
on_exit "kill $listeners 2>/dev/null || true"

# a redis-server of someone else's
redis-server --port 0 --unixsocket "$WORK/other.sock" --save "" --daemonize no >"$WORK/other-redis.log" 2>&1 &
other=$!
on_exit "kill $other 2>/dev/null || true"

for _ in $(seq 600); do
	grep -q '^holding' "$WORK/hold.out" && grep -q 'held' "$WORK/ports.out" && [ -S "$WORK/other.sock" ] && break
	kill -0 "$hold" 2>/dev/null || die "the load generator failed: $(cat "$WORK/hold.out")"
	sleep 0.1
done
grep -q '^holding' "$WORK/hold.out" || die "the load generator did not open $n connections in 60 s"
grep -q 'held' "$WORK/ports.out" || die "the other listeners did not start: $(cat "$WORK/ports.out")"
echo "test-under-load: $(cat "$WORK/hold.out"); $(cat "$WORK/ports.out"); another redis-server on $WORK/other.sock"
status=0
"$ROOT/scripts/test.sh" "$@" || status=$?
echo "test-under-load: make test exited $status with $n connections held"
exit "$status"
