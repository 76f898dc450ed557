#!/usr/bin/env bash
# pg_tls.sh [PGLEASE [PROBE]] -- PostgreSQL over verified TLS with SCRAM
# password authentication, through the library (PROBE,
# tests/providers/pg_tls_probe.cpp: pglease::connect and pglease::Client) and
# through the CLI, and the CLI's DSN sources:
# - a cluster of its own (scripts/cluster.sh) listening on 127.0.0.1 at a
#   free port with ssl = on (scripts/certs.sh's server certificate), pg_hba
#   allowing TCP only over TLS and only with scram-sha-256;
# - sslmode=verify-full with the test CA works (the connection is encrypted);
#   with another CA, against a server showing a wrong-host or an expired
#   certificate, with a wrong password, or without TLS: Errc::permission
#   (CLI exit 77), not retryable, fast; a missing sslrootcert file:
#   invalid_argument (64);
# - the CLI takes the DSN from --dsn, else --dsn-file's first line, else
#   PGLEASE_DSN, else libpq's environment; an unreadable or empty --dsn-file
#   is 64; run's command does not get the DSN or its password, nor the
#   PGLEASE_DSN pglease read;
# - no output line of any of it (errors, status, run, advise, malformed DSNs)
#   holds the password.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
PGLEASE="${1:-$ROOT/build/client/pglease}"
PROBE="${2:-$ROOT/build/client/pg_tls_probe}"
CLUSTER="$ROOT/scripts/cluster.sh"
for bin in "$PGLEASE" "$PROBE"; do
	[ -x "$bin" ] || die "no $bin: cmake --build build/client --target pglease_cli pg_tls_probe"
done
command -v pg_config >/dev/null || die "no pg_config: install postgresql-15 (scripts/install-deps.sh)"
# only what this script sets reaches libpq: no PG* of the caller, no ~/.pgpass
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE PGSSLMODE PGSSLROOTCERT PGLEASE_DSN
work_dir pglease-pg-tls
export PGPASSFILE="$WORK/no-pgpass" HOME="$WORK/home"
mkdir -p "$WORK/out" "$HOME"
OUT="$WORK/out"
CERTS="$("$ROOT/scripts/certs.sh" "$WORK/certs")"
PG="$WORK/pg"
DB=pglease_tls
PW="Scram-pw-$RANDOM$RANDOM-secret" # the password no output may show
PW2="p@ss/w:rd-$RANDOM$RANDOM"      # one that must be %-encoded in a URL
PW2_URL="$(printf '%s' "$PW2" | sed 's/%/%25/g; s/@/%40/g; s#/#%2F#g; s/:/%3A/g')"

# as_pg CMD... -- as the cluster's owner (scripts/cluster.sh runs it as postgres under root)
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}
admin() { psql_q -h "$PG/sock" -p "$PORT" -U postgres "$@"; }

# ---- the server: TLS on 127.0.0.1, SCRAM ---------------------------------------
"$CLUSTER" start "$PG" preload >/dev/null
on_exit '"$CLUSTER" stop "$PG" immediate >/dev/null 2>&1 || true'
as_pg sed -i '1i hostnossl all all 127.0.0.1/32 reject\nhostssl all all 127.0.0.1/32 scram-sha-256' \
	"$PG/data/pg_hba.conf"
printf '%s\n' "listen_addresses = '127.0.0.1'" "ssl_cert_file = 'server.crt'" "ssl_key_file = 'server.key'" \
	"password_encryption = 'scram-sha-256'" | as_pg tee -a "$PG/data/postgresql.conf" >/dev/null

# serve NAME SSL -- restart the server showing certificate NAME (of certs.sh;
# the key copied into the cluster, owned by postgres, mode 0600), ssl = SSL,
# on a new free port (another on a bind race); sets PORT
serve() {
	as_pg install -m 0644 "$CERTS/$1.crt" "$PG/data/server.crt"
	as_pg install -m 0600 "$CERTS/$1.key" "$PG/data/server.key"
	local attempt
	for attempt in 1 2 3; do
		PORT="$(free_port)"
		printf '%s\n' "port = $PORT" "ssl = $2" | as_pg tee -a "$PG/data/postgresql.conf" >/dev/null
		"$CLUSTER" restart "$PG" >/dev/null 2>&1 && return 0
		grep -q "could not bind" "$PG/server.log" || break
	done
	tail -20 "$PG/server.log" >&2
	die "the server did not restart with certificate $1, ssl = $2"
}
serve server on
admin -d postgres -c "CREATE ROLE pglease_tls LOGIN PASSWORD '$PW'" \
	-c "CREATE ROLE pglease_tls2 LOGIN PASSWORD '$PW2'" -c "CREATE DATABASE $DB"
admin -d "$DB" -c "CREATE EXTENSION pg_lease"
scram="$(admin -d postgres -c "SELECT string_agg(rolname, ' ' ORDER BY rolname) FROM pg_catalog.pg_authid
	WHERE rolname LIKE 'pglease_tls%' AND rolpassword LIKE 'SCRAM-SHA-256\$%'")"
expect passwords_are_scram_verifiers "SCRAM verifiers for '$scram'" '[ "$scram" = "pglease_tls pglease_tls2" ]'

# url [USER:PASSWORD] [HOST] [QUERY] -- a DSN of the test database
url() {
	echo "postgresql://${1:-pglease_tls:$PW}@${2:-127.0.0.1}:$PORT/$DB?${3:-sslmode=verify-full&sslrootcert=$CERTS/ca.crt}"
}

# probe NAME DSN -- the library on DSN; its output in $OUT/probe.NAME, sets rc and took (ms)
probe() {
	local start
	start=$(now_ms)
	rc=0
	timeout 60 "$PROBE" "$2" "tls/$1" >"$OUT/probe.$1" 2>&1 || rc=$?
	took=$(($(now_ms) - start))
}
# cli NAME CMD... -- run CMD (pglease, or env ... pglease); both streams in $OUT/NAME; sets rc and took
cli() {
	local name="$1" start
	shift
	start=$(now_ms)
	rc=0
	timeout 60 "$@" >"$OUT/$name" 2>&1 </dev/null || rc=$?
	took=$(($(now_ms) - start))
}
said() { tr '\n' ' ' <"$OUT/$1"; }

# ---- the library ----------------------------------------------------------------------
for host in 127.0.0.1 localhost; do
	probe "verified_$host" "$(url "" "$host")"
	expect "library_verify_full_via_${host}_works_encrypted" "exit $rc: $(said "probe.verified_$host")" \
		'[ "$rc" -eq 0 ] && grep -q "^fenced: ok ssl=true TLSv1" "$OUT/probe.verified_$host" &&
		 grep -q "^status: ok" "$OUT/probe.verified_$host" && grep -q "^release: ok" "$OUT/probe.verified_$host"'
done
probe encoded_password "$(url "pglease_tls2:$PW2_URL")"
expect library_percent_encoded_password_works "exit $rc: $(said probe.encoded_password)" '[ "$rc" -eq 0 ]'

# refused NAME ERRC -- the probe failed at its first call with ERRC, not retryable, within 3 s
refused() {
	case_name="$1" errc="$2" # globals: expect evals its condition in its own function
	expect "library_$1_is_$2_fast" "exit $rc after $took ms: $(said "probe.$1")" \
		'[ "$rc" -eq 2 ] && grep -q "^acquire: $errc retryable=0 " "$OUT/probe.$case_name" && [ "$took" -lt 3000 ]'
}
probe other_ca "$(url "" "" "sslmode=verify-full&sslrootcert=$CERTS/other-ca.crt")"
refused other_ca permission
probe wrong_password "$(url "pglease_tls:not-$PW")"
refused wrong_password permission
probe no_tls "$(url "" "" "sslmode=disable")"
refused no_tls permission
probe missing_root_cert "$(url "" "" "sslmode=verify-full&sslrootcert=$WORK/none.crt")"
refused missing_root_cert invalid_argument
probe default_root_cert "$(url "" "" "sslmode=verify-full")" # ~/.postgresql/root.crt: none
refused default_root_cert invalid_argument

# ---- the CLI, on every DSN source -------------------------------------------------------
URL="$(url)"
DSN_FILE="$WORK/dsn"
printf '%s\n# a comment line, never read\n' "$URL" >"$DSN_FILE"
chmod 600 "$DSN_FILE"
P="$PGLEASE"
# a held lease through the CLI: acquire, status shows it, renew, release
cli acquire "$P" acquire --dsn "$URL" --resource cli/tok --ttl 30s --holder cli-tls --reclaim
token="$(cat "$OUT/acquire")"
expect cli_acquire_over_tls "exit $rc: $(said acquire)" '[ "$rc" -eq 0 ] && [ "$token" -gt 0 ]'
cli status "$P" --dsn-file "$DSN_FILE" status
expect cli_status_via_dsn_file_lists_it "exit $rc: $(said status)" \
	'[ "$rc" -eq 0 ] && grep -q "^cli/tok .* $token " "$OUT/status"'
cli renew env PGLEASE_DSN="$URL" "$P" renew --resource cli/tok --token "$token" --holder cli-tls --ttl 30s
expect cli_renew_via_pglease_dsn "exit $rc: $(said renew)" '[ "$rc" -eq 0 ]'
cli release "$P" release --dsn-file "$DSN_FILE" --resource cli/tok --token "$token" --holder cli-tls
expect cli_release_via_dsn_file "exit $rc: $(said release)" '[ "$rc" -eq 0 ]'
# run: the command gets its token, and neither the DSN nor its password
cli run "$P" run --dsn-file "$DSN_FILE" --resource cli/run --ttl 5s -- env
expect cli_run_via_dsn_file "exit $rc: $(grep PGLEASE_TOKEN "$OUT/run" || true)" \
	'[ "$rc" -eq 0 ] && grep -q "^PGLEASE_TOKEN=[1-9]" "$OUT/run"'
expect run_command_gets_no_dsn "its environment: $(grep -E "PGLEASE_DSN|PGPASSWORD|pglease_tls" "$OUT/run" || true)" \
	'! grep -qE "PGLEASE_DSN|PGPASSWORD|pglease_tls" "$OUT/run"'
# PGLEASE_DSN is pglease's (issue 36): read, and not passed on
cli run_env env PGLEASE_DSN="$URL" "$P" run --resource cli/run --ttl 5s -- sh -c 'echo "${PGLEASE_DSN:-none}"'
expect run_command_gets_no_pglease_dsn_pglease_read "exit $rc: $(said run_env)" \
	'[ "$rc" -eq 0 ] && [ "$(cat "$OUT/run_env")" = none ]'
cli global_file "$P" --dsn-file "$DSN_FILE" run --resource cli/run --ttl 5s -- true
expect cli_global_dsn_file "exit $rc: $(said global_file)" '[ "$rc" -eq 0 ]'
# libpq's environment, when no other source is given
cli libpq_env env PGHOST=127.0.0.1 PGPORT="$PORT" PGUSER=pglease_tls PGPASSWORD="$PW" PGDATABASE="$DB" \
	PGSSLMODE=verify-full PGSSLROOTCERT="$CERTS/ca.crt" "$P" run --resource cli/run --ttl 5s -- true
expect cli_libpq_environment_last "exit $rc: $(said libpq_env)" '[ "$rc" -eq 0 ]'

# precedence: --dsn, then --dsn-file, then PGLEASE_DSN, then libpq's environment;
# the losers are refused credentials (or an unreadable file) that would fail
BAD_URL="$(url "pglease_tls:not-$PW")"
printf '%s\n' "$BAD_URL" >"$WORK/bad-dsn"
cli dsn_beats_file "$P" run --dsn "$URL" --dsn-file "$WORK/none" --resource cli/run --ttl 5s -- true
expect dsn_wins_over_dsn_file "exit $rc: $(said dsn_beats_file)" '[ "$rc" -eq 0 ]'
cli global_dsn_beats_file "$P" --dsn "$URL" --dsn-file "$WORK/none" run --resource cli/run --ttl 5s -- true
expect global_dsn_wins_over_dsn_file "exit $rc: $(said global_dsn_beats_file)" '[ "$rc" -eq 0 ]'
cli file_beats_env env PGLEASE_DSN="$BAD_URL" "$P" run --dsn-file "$DSN_FILE" --resource cli/run --ttl 5s -- true
expect dsn_file_wins_over_pglease_dsn "exit $rc: $(said file_beats_env)" '[ "$rc" -eq 0 ]'
cli env_beats_libpq env PGLEASE_DSN="$URL" PGHOST="$WORK/nowhere" PGUSER=nobody PGPASSWORD=x \
	"$P" run --resource cli/run --ttl 5s -- true
expect pglease_dsn_wins_over_libpq_environment "exit $rc: $(said env_beats_libpq)" '[ "$rc" -eq 0 ]'
cli env_used env PGLEASE_DSN="$BAD_URL" "$P" run --resource cli/run --ttl 5s -- true
expect pglease_dsn_is_read "exit $rc (its wrong password should give 77): $(said env_used)" '[ "$rc" -eq 77 ]'
cli file_used "$P" run --dsn-file "$WORK/bad-dsn" --resource cli/run --ttl 5s -- true
expect dsn_file_is_read "exit $rc (its wrong password should give 77): $(said file_used)" '[ "$rc" -eq 77 ]'

# an unreadable or empty --dsn-file: 64, naming the file
: >"$WORK/empty"
mkdir -p "$WORK/a-directory"
for f in none empty a-directory; do
	cli "dsn_file_$f" "$P" status --dsn-file "$WORK/$f"
	expect "dsn_file_${f}_is_64" "exit $rc: $(said "dsn_file_$f")" \
		'[ "$rc" -eq 64 ] && grep -q "dsn-file .*$WORK/$f" "$OUT/dsn_file_$f"'
done
cli dsn_file_no_value "$P" --dsn-file
expect dsn_file_without_a_value_is_64 "exit $rc: $(said dsn_file_no_value)" '[ "$rc" -eq 64 ]'

# refused credentials and certificates through the CLI: 77, fast
for case in "other_ca|$(url "" "" "sslmode=verify-full&sslrootcert=$CERTS/other-ca.crt")" \
	"wrong_password|$BAD_URL" "no_tls|$(url "" "" "sslmode=disable")"; do
	name="${case%%|*}" dsn="${case#*|}"
	for cmd in acquire status; do
		args=(--resource cli/x --ttl 5s)
		[ "$cmd" = status ] && args=()
		cli "cli_${name}_$cmd" "$P" "$cmd" --dsn "$dsn" "${args[@]}"
		expect "cli_${name}_${cmd}_exits_77_fast" "exit $rc after $took ms: $(said "cli_${name}_$cmd")" \
			'[ "$rc" -eq 77 ] && [ "$took" -lt 3000 ]'
	done
done
cli cli_missing_root_cert "$P" run --dsn "$(url "" "" "sslmode=verify-full&sslrootcert=$WORK/none.crt")" \
	--resource cli/x --ttl 5s -- true
expect cli_missing_root_cert_exits_64 "exit $rc: $(said cli_missing_root_cert)" '[ "$rc" -eq 64 ]'

# malformed DSNs holding the password: a clear refusal, the password never shown
i=0
for dsn in "postgresql:/pglease_tls:$PW@127.0.0.1:$PORT/$DB" "postgresql://pglease_tls:$PW@127.0.0.1:port/$DB" \
	"postgresql://pglease_tls:$PW@127.0.0.1:$PORT/$DB?sslmode=bogus" \
	"host=127.0.0.1 port=$PORT password=$PW sslmode=bogus" "host=127.0.0.1 password='$PW" \
	"pglease_tls:$PW@127.0.0.1:$PORT/$DB"; do
	i=$((i + 1))
	for cmd in run status; do
		args=(--resource cli/x --ttl 5s -- true)
		[ "$cmd" = status ] && args=()
		cli "malformed_${i}_$cmd" "$P" "$cmd" --dsn "$dsn" "${args[@]}"
		expect "malformed_dsn_${i}_${cmd}_refused_64" "exit $rc: $(said "malformed_${i}_$cmd")" \
			'[ "$rc" -eq 64 ] && [ -s "$OUT/malformed_${i}_$cmd" ]'
	done
	printf '%s\n' "$dsn" >"$WORK/malformed"
	cli "malformed_${i}_file" "$P" acquire --dsn-file "$WORK/malformed" --resource cli/x --ttl 5s
	expect "malformed_dsn_${i}_from_file_refused_64" "exit $rc: $(said "malformed_${i}_file")" '[ "$rc" -eq 64 ]'
done
cli advise "$P" --dsn "$URL" advise --resource r --section 2s --instances 3 --infra postgres --explain --emit cpp
expect cli_advise_with_a_dsn "exit $rc" '[ "$rc" -eq 0 ]'

# ---- the server's certificate: another host's name, then expired ------------------------
serve wrong-host on
probe wrong_host "$(url)"
refused wrong_host permission
expect wrong_host_message_names_the_host "$(said probe.wrong_host)" \
	'grep -q "elsewhere.invalid" "$OUT/probe.wrong_host"'
probe wrong_host_verify_ca "$(url "" "" "sslmode=verify-ca&sslrootcert=$CERTS/ca.crt")"
expect library_verify_ca_ignores_the_host_name "exit $rc: $(said probe.wrong_host_verify_ca)" '[ "$rc" -eq 0 ]'
cli cli_wrong_host "$P" run --dsn "$(url)" --resource cli/x --ttl 5s -- true
expect cli_wrong_host_exits_77_fast "exit $rc after $took ms: $(said cli_wrong_host)" \
	'[ "$rc" -eq 77 ] && [ "$took" -lt 3000 ]'
serve expired on
probe expired "$(url)"
refused expired permission
# no TLS at all on the server, sslmode=require
serve server off
probe server_without_tls "$(url "" "" "sslmode=require")"
refused server_without_tls permission

# ---- no output of any of it shows a password ---------------------------------------------
shown="$(grep -rlF -e "$PW" -e "$PW2" -e "$PW2_URL" "$OUT" || true)"
expect no_output_shows_a_password "in: $shown" '[ -z "$shown" ]'
outputs=$(find "$OUT" -type f | wc -l)
expect outputs_were_checked "only $outputs outputs" '[ "$outputs" -ge 50 ]'
finish
