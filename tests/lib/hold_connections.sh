#!/usr/bin/env bash
# hold_connections.sh N SECONDS -- a load generator for the port tests: it
# starts a listener on 127.0.0.1 (a port the kernel picks), opens N client TCP
# connections to it and holds them (both ends) for SECONDS, or until killed.
# The kernel gives each client socket a local port from its ephemeral range
# (net.ipv4.ip_local_port_range), so while it runs N of those ports are
# taken: run a suite meanwhile to show its servers do not depend on them.
# Prints one line once all N are open ("holding N connections to
# 127.0.0.1:PORT, local ports LOW-HIGH"), and exits non-zero if it could not
# open them all (raise `ulimit -n`: it needs 2N+10 descriptors).
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib/common.sh" # die
[ $# -eq 2 ] && [[ "$1" =~ ^[1-9][0-9]*$ ]] && [[ "$2" =~ ^[0-9]+$ ]] ||
	die "usage: hold_connections.sh N SECONDS"
need=$((2 * $1 + 10))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
	ulimit -n "$need" 2>/dev/null || die "$1 connections need $need descriptors; ulimit -n allows $(ulimit -n)"
fi
exec perl -MIO::Socket::INET -e '
	my ($n, $seconds) = @ARGV;
	my $listener = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 1024, ReuseAddr => 1)
		or die "hold_connections.sh: listen: $!\n";
	my $port = $listener->sockport;
	my (@held, $low, $high);
	for my $i (1 .. $n) {
		my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Proto => "tcp")
			or die "hold_connections.sh: connection $i of $n: $!\n";
		my $s = $listener->accept or die "hold_connections.sh: accept $i: $!\n";
		my $local = $c->sockport;
		$low = $local if !defined $low || $local < $low;
		$high = $local if !defined $high || $local > $high;
		push @held, $c, $s;
	}
	$| = 1;
	print "holding $n connections to 127.0.0.1:$port, local ports $low-$high\n";
	sleep $seconds;
' "$1" "$2"
