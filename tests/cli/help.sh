#!/usr/bin/env bash
# help.sh -- the pglease command's help and messages against its one table
# (client/cli/commands.cpp) and against pglease::connect:
# - every flag of the table (and --dsn, --dsn-file) is in its command's
#   --help, and every flag that --help lists is one the parser takes; the
#   DSN's precedence is in pglease --help and each DSN command's --help;
# - every URL scheme connect() takes (client/src/connect.cpp and the
#   components' register_provider calls) is in `pglease --help`;
# - a PostgreSQL-only command (status) refuses every other scheme with 64
#   and a clear message, connecting to nothing (a listener counts);
# - a database without pg_lease answers with how to install it (a real
#   cluster: the CTest fixture pg_preload, or scripts/cluster.sh here);
# - advise's Strategy line agrees with its explanation on every branch.
#
#   tests/cli/help.sh [PGLEASE]      (default build/client/pglease)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
PGLEASE="${1:-$ROOT/build/client/pglease}"
[ -x "$PGLEASE" ] || die "no $PGLEASE: cmake --build build/client --target pglease_cli"
TABLE="$ROOT/client/cli/commands.cpp"
work_dir pglease-cli-help

# ---- the table, as commands.cpp writes it: "COMMAND DSNUSE" and "COMMAND --FLAG VALUE" lines
awk '
	match($0, /^[ \t]*\{"[a-z]+", DsnUse::[a-z]+,/) {
		split(substr($0, RSTART, RLENGTH), f, "\""); cmd = f[2]
		use = substr($0, RSTART, RLENGTH); sub(/.*DsnUse::/, "", use); sub(/,$/, "", use)
		print "command", cmd, use; next
	}
	cmd != "" && match($0, /^[ \t]*\{"[a-z-]+", "[^"]*", Need::/) {
		split(substr($0, RSTART, RLENGTH), f, "\""); print "flag", cmd, f[2], f[4]
	}' "$TABLE" >"$WORK/table"
mapfile -t COMMANDS < <(awk '$1 == "command" { print $2 }' "$WORK/table")
flag_count=$(grep -c '^flag ' "$WORK/table" || true)
expect table_is_read "commands.cpp gave ${#COMMANDS[@]} commands and $flag_count flags (format changed?)" \
	'[ "${#COMMANDS[@]}" -ge 6 ] && [ "$flag_count" -ge 20 ]'

"$PGLEASE" --help >"$WORK/main_help"
expect main_help_is_short "pglease --help has $(wc -l <"$WORK/main_help") lines" \
	'[ "$(wc -l <"$WORK/main_help")" -le 18 ]'
expect main_help_gives_the_dsn_precedence "no '--dsn, else ... --dsn-file ..., else \$PGLEASE_DSN, else libpq' in pglease --help" \
	'grep -q -- "--dsn, else [^,]*--dsn-file[^,]*, else \$PGLEASE_DSN, else libpq" "$WORK/main_help"'
expect main_help_says_where_to_read_more "no 'pglease COMMAND --help' or docs/ in pglease --help" \
	'grep -q "pglease COMMAND --help" "$WORK/main_help" && grep -q "docs/" "$WORK/main_help"'

# ---- every command and flag of the table in the help ----------------------
for cmd in "${COMMANDS[@]}"; do
	help_ok=0; "$PGLEASE" "$cmd" --help >"$WORK/help.$cmd" 2>&1 || help_ok=$?
	expect "help_of_${cmd}_exits_0" "exit $help_ok" '[ "$help_ok" -eq 0 ]'
	expect "help_of_${cmd}_is_its_own" "$(head -1 "$WORK/help.$cmd")" \
		'head -1 "$WORK/help.$cmd" | grep -q "^usage: pglease $cmd "'
	expect "${cmd}_is_in_main_help" "no '  $cmd ' line in pglease --help" \
		'grep -q "^  $cmd " "$WORK/main_help"'
	# the flags the table gives the command: its own, --dsn and --dsn-file
	# when it takes a DSN, --help
	{
		awk -v c="$cmd" '$1 == "flag" && $2 == c { print $3, $4 }' "$WORK/table"
		awk -v c="$cmd" '$1 == "command" && $2 == c && $3 != "none" { print "dsn DSN"; print "dsn-file PATH" }' \
			"$WORK/table"
		# the TLS files, for the commands that take other providers' DSNs
		awk -v c="$cmd" '$1 == "command" && $2 == c && ($3 == "any" || $3 == "tokens") {
			print "cacert FILE"; print "cert FILE"; print "key FILE" }' "$WORK/table"
		echo help
	} >"$WORK/flags.$cmd"
	missing=""
	while read -r name value; do
		grep -qE -- "^  --$name${value:+ $(printf '%s' "$value" | sed 's/[|]/\\|/g')}  " "$WORK/help.$cmd" ||
			missing+=" --$name"
	done <"$WORK/flags.$cmd"
	expect "every_flag_of_${cmd}_is_in_its_help" "not in '$cmd --help':$missing" '[ -z "$missing" ]'
	# a command that takes a DSN says where it comes from, in this order
	if grep -q '^dsn ' "$WORK/flags.$cmd"; then
		expect "help_of_${cmd}_gives_the_dsn_precedence" "no 'DSN: --dsn, else ... --dsn-file, else \$PGLEASE_DSN, else libpq' in its help" \
			'tr "\n" " " <"$WORK/help.$cmd" | grep -q "DSN: --dsn, else [^,]*--dsn-file, else \$PGLEASE_DSN, else libpq"'
	fi
	# the other way: every flag the help lists is parsed (a value of the
	# wrong kind or a missing required flag is fine; "unknown option" is not)
	unknown=""
	while read -r flag; do
		[ "$flag" = --help ] && continue
		out="$("$PGLEASE" "$cmd" "$flag" memory:x 2>&1 </dev/null)" || true
		case "$out" in *"unknown option"*) unknown+=" $flag" ;; esac
	done < <(sed -n 's/^  \(--[a-z-]*\).*/\1/p' "$WORK/help.$cmd")
	expect "every_flag_in_${cmd}_help_is_parsed" "refused as unknown:$unknown" '[ -z "$unknown" ]'
	rc=0; out="$("$PGLEASE" "$cmd" --bogus x 2>&1)" || rc=$?
	expect "${cmd}_refuses_a_flag_not_in_the_table" "exit $rc: $out" \
		'[ "$rc" -eq 64 ] && [[ "$out" == *"unknown option --bogus"* ]]'
done

# ---- every scheme connect() takes is in pglease --help -----------------------
{
	grep -oE 'rfind\("[a-z]+:(//)?"' "$ROOT/client/src/connect.cpp" | sed -E 's/rfind\("//; s/"$//'
	grep -ohE 'register_provider\("[a-z]+"' "$ROOT"/client/src/*/component.cpp |
		sed -E 's/register_provider\("//; s/"$/:\/\//'
} | sort -u >"$WORK/schemes.all"
# registered only to be refused with a reason (not in the help): zookeepers://,
# TLS that Debian's ZooKeeper C client does not have
REFUSED="zookeepers://"
grep -vxF "$REFUSED" "$WORK/schemes.all" >"$WORK/schemes"
for scheme in $REFUSED; do
	rc=0; out="$("$PGLEASE" --dsn "${scheme}127.0.0.1:1" run --resource r --ttl 5s -- true 2>&1)" || rc=$?
	expect "refused_scheme_says_why_${scheme%%:*}" "exit $rc: $out" \
		'[ "$rc" -eq 64 ] && grep -q "TLS is not available" <<<"$out"'
done
expect connect_schemes_are_read "found $(wc -l <"$WORK/schemes") schemes in client/src (format changed?)" \
	'[ "$(wc -l <"$WORK/schemes")" -ge 7 ]'
missing=""
while read -r scheme; do
	grep -qF -- "$scheme" "$WORK/main_help" || missing+=" $scheme"
done <"$WORK/schemes"
expect every_connect_scheme_is_in_main_help "not in pglease --help:$missing" '[ -z "$missing" ]'

# ---- PostgreSQL-only commands refuse other schemes, before any I/O -----------
# listen PORT STOPFILE -- accept on 127.0.0.1:PORT until STOPFILE exists, then
# print how many connections came (exit 2: the port was taken)
listen() {
	perl -MIO::Socket::INET -MIO::Select -e '
		my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 16,
			ReuseAddr => 1) or exit 2;
		$| = 1; print "listening\n";
		my ($sel, $n) = (IO::Select->new($s), 0);
		until (-e $ARGV[1]) { if ($sel->can_read(0.05)) { $s->accept; $n++ } }
		print "$n\n";' "$1" "$2"
}
# connections_during CMD... -- how many connections a listener on $PORT saw while CMD ran
connections_during() {
	local stop="$WORK/stop.$RANDOM" out="$WORK/listener.$RANDOM"
	listen "$PORT" "$stop" >"$out" &
	local pid=$!
	until grep -q listening "$out" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || { echo "bind"; return; }
		sleep 0.05
	done
	"$@" >/dev/null 2>&1 || true
	touch "$stop"
	wait "$pid" || true
	sed -n 2p "$out"
}
for attempt in 1 2 3; do # a bind race: another port
	PORT="$(free_port)"
	seen="$(connections_during timeout 10 "$PGLEASE" run --dsn "redis://127.0.0.1:$PORT" --resource r \
		--ttl 5s -- true)"
	[ "$seen" = bind ] || break
done
expect listener_sees_a_client_that_connects "a run against redis://127.0.0.1:$PORT made $seen connections" \
	'[ "$seen" != bind ] && [ "$seen" -ge 1 ]'
for cmd in $(awk '$1 == "command" && $3 == "postgres" { print $2 }' "$WORK/table"); do
	for dsn in "redis://127.0.0.1:$PORT" "redlock://127.0.0.1:$PORT,127.0.0.1:$PORT,127.0.0.1:$PORT" \
		"etcd://127.0.0.1:$PORT" "zookeeper://127.0.0.1:$PORT" "memory:x"; do
		scheme="${dsn%%:*}"
		rc=0; err="$("$PGLEASE" "$cmd" --dsn "$dsn" 2>&1)" || rc=$?
		expect "${cmd}_refuses_${scheme}_with_64" "exit $rc: $err" \
			'[ "$rc" -eq 64 ] && [[ "$err" == *"$cmd is PostgreSQL only"* ]]'
		rc=0; err="$("$PGLEASE" --dsn "$dsn" "$cmd" 2>&1)" || rc=$?
		expect "${cmd}_refuses_global_${scheme}_dsn_with_64" "exit $rc: $err" \
			'[ "$rc" -eq 64 ] && [[ "$err" == *"$cmd is PostgreSQL only"* ]]'
		seen="$(connections_during "$PGLEASE" "$cmd" --dsn "$dsn")"
		expect "${cmd}_with_${scheme}_connects_to_nothing" "$seen connections" '[ "$seen" = 0 ]'
	done
done

# ---- a database without pg_lease says how to install it ---------------------
if [ -z "${PGLEASE_CLUSTER:-}" ]; then
	# run by hand: a cluster of our own, on a Unix socket in the work directory
	"$ROOT/scripts/cluster.sh" start "$WORK/pg" preload >/dev/null
	on_exit '"$ROOT/scripts/cluster.sh" stop "$WORK/pg" immediate >/dev/null 2>&1 || true'
	eval "$("$ROOT/scripts/cluster.sh" env "$WORK/pg")"
fi
db="pglease_cli_noext_$$"
psql_q -d postgres -c "CREATE DATABASE $db"
on_exit 'psql_q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true'
for args in "status" "acquire --resource r --ttl 5s" "run --resource r --ttl 5s -- true"; do
	name="${args%% *}"
	rc=0; err="$("$PGLEASE" --dsn "dbname=$db" $args 2>&1)" || rc=$?
	expect "${name}_without_the_extension_says_create_extension" "exit $rc: $err" \
		'[ "$rc" -eq 69 ] && [[ "$err" == *"CREATE EXTENSION pg_lease"* ]]'
done
# an older pg_lease than the client needs: ALTER EXTENSION ... UPDATE
psql_q -d "$db" -c "CREATE EXTENSION pg_lease" \
	-c "UPDATE pg_catalog.pg_extension SET extversion = '0.0.1' WHERE extname = 'pg_lease'"
rc=0; err="$("$PGLEASE" --dsn "dbname=$db" status 2>&1)" || rc=$?
expect status_with_an_older_extension_says_alter_extension "exit $rc: $err" \
	'[ "$rc" -eq 69 ] && [[ "$err" == *"ALTER EXTENSION pg_lease UPDATE"* ]]'

# ---- advise: the Strategy line agrees with the explanation on every branch ----
# The explanation's first "<Provider> <Strategy>" names the four lines' pair;
# "no lease needed" only for Advisory; it gives the TTL and the safety.
pairs='(PostgreSQL|Redis|ZooKeeper|etcd) (Advisory|Lease|Ephemeral|Redlock|Election)'
branches=0
for section in 200ms 2s 30h; do
	for flag in "" --write --strong --failover --one-active; do
		for infra in postgres redis zookeeper etcd postgres,redis redis,zookeeper redis,etcd zookeeper,etcd; do
			rc=0
			"$PGLEASE" advise --resource r --section "$section" --instances 3 --infra "$infra" $flag \
				--explain >"$WORK/advice" 2>/dev/null || rc=$?
			case="${section}_${infra}${flag:+_${flag#--}}"
			if [ "$rc" -eq 65 ]; then # refused: only --strong with Redis alone (a long section)
				expect "advise_${case}_is_refused_only_for_strong_redis" "refused" \
					'[ "$flag" = --strong ] && [ "$infra" = redis ] && [ "$section" != 200ms ]'
				continue
			fi
			branches=$((branches + 1))
			provider="$(sed -n 's/^Provider: //p' "$WORK/advice")"
			strategy="$(sed -n 's/^Strategy: //p' "$WORK/advice")"
			ttl="$(sed -n 's/^TTL: //p' "$WORK/advice")"
			safety="$(sed -n 's/^Safety: //p' "$WORK/advice")"
			named="$(grep '^# ' "$WORK/advice" | grep -oE "$pairs" | head -1 || true)"
			problems=""
			[ "$rc" -eq 0 ] || problems+=" exit $rc;"
			[ "$named" = "$provider $strategy" ] || problems+=" explanation chose '$named';"
			if [ "$strategy" != Advisory ] && grep -q "no lease needed" "$WORK/advice"; then
				problems+=" 'no lease needed' with $strategy;"
			fi
			grep -qE "^# (.* )?TTL $ttl[ :]" "$WORK/advice" || problems+=" no 'TTL $ttl' line;"
			grep -q "^# safety $safety:" "$WORK/advice" || problems+=" no 'safety $safety:' line;"
			expect "advise_${case}_agrees_with_itself" "$provider $strategy:$problems" '[ -z "$problems" ]'
		done
	done
done
expect advise_branches_were_run "only $branches advised" '[ "$branches" -ge 80 ]'
finish
