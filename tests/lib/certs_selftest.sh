#!/usr/bin/env bash
# certs_selftest.sh -- scripts/certs.sh makes what the TLS tests rely on: a
# server certificate the test CA verifies for localhost and 127.0.0.1, a client
# certificate it verifies, and the bad ones failing for the reason each stands for.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
work_dir pglease_certs
"$ROOT/scripts/certs.sh" "$WORK/c" >/dev/null
C="$WORK/c"
verify() { openssl verify -CAfile "$C/$1" "${@:3}" "$C/$2" 2>&1 || true; }
expect server_verified_for_localhost "$(verify ca.crt server.crt -verify_hostname localhost)" \
	'verify ca.crt server.crt -verify_hostname localhost | grep -q ": OK$"'
expect server_verified_for_127_0_0_1 "$(verify ca.crt server.crt -verify_ip 127.0.0.1)" \
	'verify ca.crt server.crt -verify_ip 127.0.0.1 | grep -q ": OK$"'
expect client_verified "$(verify ca.crt client.crt -purpose sslclient)" \
	'verify ca.crt client.crt -purpose sslclient | grep -q ": OK$"'
expect other_ca_refuses_the_server "$(verify other-ca.crt server.crt)" \
	'verify other-ca.crt server.crt | grep -q "unable to get local issuer certificate"'
expect other_client_refused_by_the_test_ca "$(verify ca.crt other.crt)" \
	'verify ca.crt other.crt | grep -q "unable to get local issuer certificate"'
expect expired_is_expired "$(verify ca.crt expired.crt)" \
	'verify ca.crt expired.crt | grep -q "certificate has expired"'
expect wrong_host_refused_for_localhost "$(verify ca.crt wrong-host.crt -verify_hostname localhost)" \
	'verify ca.crt wrong-host.crt -verify_hostname localhost | grep -q "hostname mismatch"'
expect keys_match_their_certificates "server/client key mismatch" \
	'[ "$(openssl x509 -noout -pubkey -in "$C/server.crt")" = "$(openssl pkey -pubout -in "$C/server.key")" ] &&
	 [ "$(openssl x509 -noout -pubkey -in "$C/client.crt")" = "$(openssl pkey -pubout -in "$C/client.key")" ]'
finish
