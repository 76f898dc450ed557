#!/usr/bin/env bash
# Renew and release by the place this backend last wrote the grant's row
# (extension/lease_where.c, a TID scan) change exactly what the statements by
# the resource's index would: a grant another session renewed meanwhile (its
# row moved), one whose acquire rolled back, one broken and collected with
# its row's place taken since, each end as before; a renewal moves the place
# and the next renew and release find it.
source "$(dirname "$0")/lib.sh"
fresh_db shell_release_by_place

# a (the session under test) -- one psql session: its lines, each result on a line;
# \! runs another session's statement in between
NL=$'\n'
a() {
	local line
	for line in "$@"; do
		case "$line" in \\* | *'\gset') echo "$line" ;; *) echo "$line;" ;; esac
	done | q 2>&1 || true
}
# released rows first: an acquire takes them in place, remembering where
q -c "SELECT lease.release('p/' || i, lease.acquire('p/' || i, '1 min')) FROM generate_series(1, 4) i" >/dev/null

out="$(a "SELECT lease.acquire('p/1', '1 min') AS t \gset" \
	"\! psql -X -q -At -d $TESTDB -c \"SELECT lease.renew('p/1', (SELECT token FROM lease.grants WHERE resource = 'p/1'), '2 min')\"" \
	"SELECT lease.release('p/1', :t)" \
	"SELECT count(*) FROM lease.leases WHERE resource = 'p/1'")"
expect release_after_another_sessions_renew "got '$out'" '[ "$out" = "t${NL}t${NL}0" ]'

out="$(a "BEGIN" "SELECT lease.acquire('p/2', '1 min') AS t \gset" "ROLLBACK" \
	"\! psql -X -q -At -d $TESTDB -c \"SELECT lease.acquire('p/2', '1 min') IS NOT NULL\"" \
	"SELECT lease.release('p/2', :t)" "SELECT lease.renew('p/2', :t, '1 min')" \
	"SELECT count(*) FROM lease.leases WHERE resource = 'p/2'")"
expect rolled_back_grant_neither_released_nor_renewed "got '$out'" '[ "$out" = "t${NL}f${NL}f${NL}1" ]'

out="$(a "SELECT lease.acquire('p/3', '1 min') AS t \gset" \
	"\! psql -X -q -At -d $TESTDB -c \"SELECT lease.break('p/3') IS NOT NULL\" -c \"SELECT lease.gc('0')\" -c \"VACUUM lease.grants\" -c \"SELECT lease.acquire('p/new' || i, '1 min') IS NULL FROM generate_series(1, 3) i\"" \
	"SELECT lease.release('p/3', :t)" \
	"SELECT count(*) FROM lease.leases WHERE resource LIKE 'p/new%'")"
expect collected_grant_released_is_false_others_kept "got '$out'" \
	'[ "$(tail -2 <<<"$out")" = "f${NL}3" ]'

out="$(a "SELECT lease.acquire('p/4', '1 min') AS t \gset" \
	"SELECT lease.renew('p/4', :t, '2 min')" "SELECT lease.renew('p/4', :t, '3 min')" \
	"SELECT remaining > '2 min' FROM lease.leases WHERE resource = 'p/4'" \
	"SELECT lease.release('p/4', :t)" "SELECT lease.release('p/4', :t)" \
	"SELECT count(*) FROM lease.leases WHERE resource = 'p/4'")"
expect renewals_then_release_by_place "got '$out'" '[ "$out" = "t${NL}t${NL}t${NL}t${NL}f${NL}0" ]'
finish
