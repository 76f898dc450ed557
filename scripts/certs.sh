#!/usr/bin/env bash
# certs.sh -- throwaway TLS material for the tests (openssl), never for production.
#
#   certs.sh DIR      make (once) in DIR:
#     ca.crt, ca.key            the test CA
#     server.crt, server.key    signed by it, for localhost, 127.0.0.1 and ::1
#                               (subjectAltName), server and client use
#     client.crt, client.key    signed by it, CN "pglease-client", client use
#     other-ca.crt              a second CA that signed nothing here: a client
#                               trusting only it must refuse the server
#     other.crt, other.key      signed by the second CA (a client certificate
#                               the servers must refuse)
#     expired.crt, expired.key  signed by the test CA, expired (validity in the past)
#     wrong-host.crt, wrong-host.key   signed by the test CA for "elsewhere.invalid" only
#   Keys are RSA 2048, mode 0644 so that the servers' unprivileged users
#   (postgres, the ZooKeeper/etcd/redis processes) can read them; DIR is a
#   test's own temporary directory.  Prints DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh" # die
dir="${1:?usage: certs.sh DIR}"
command -v openssl >/dev/null || die "openssl not found: apt-get install openssl"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
[ ! -f "$dir/wrong-host.crt" ] || { echo "$dir"; exit 0; }

ossl() { openssl "$@" 2>>"$dir/openssl.log" || die "openssl $1 failed (log: $dir/openssl.log)"; }

# ca NAME CN -- a self-signed CA
ca() {
	ossl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/$1.key" -out "$dir/$1.crt" -days 30 \
		-subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# leaf NAME CA CN SAN USAGE [DAYS_START DAYS_END] -- a key and a certificate signed by CA
leaf() {
	local name="$1" ca="$2" cn="$3" san="$4" usage="$5" ext="$dir/$1.ext"
	ossl req -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$cn"
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usage"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$ext"
	if [ -n "${6:-}" ]; then # an expired certificate: openssl x509 -days cannot start in the past, ca can
		mkdir -p "$dir/ca-db"
		: >"$dir/ca-db/index.txt"
		printf '%s\n' 1000 >"$dir/ca-db/serial"
		cat >"$dir/ca-db/ca.cnf" <<-CNF
			[ ca ]
			default_ca = test
			[ test ]
			database = $dir/ca-db/index.txt
			serial = $dir/ca-db/serial
			new_certs_dir = $dir/ca-db
			default_md = sha256
			policy = any
			[ any ]
			commonName = supplied
		CNF
		ossl ca -batch -config "$dir/ca-db/ca.cnf" -cert "$dir/$ca.crt" -keyfile "$dir/$ca.key" \
			-in "$dir/$name.csr" -out "$dir/$name.crt" -extfile "$ext" -notext \
			-startdate "$6" -enddate "$7"
	else
		ossl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.crt" -CAkey "$dir/$ca.key" -CAcreateserial \
			-out "$dir/$name.crt" -days 30 -extfile "$ext"
	fi
	rm -f "$dir/$name.csr" "$ext"
}

ca ca "pglease test CA"
ca other-ca "pglease other CA"
leaf server ca localhost "DNS:localhost,IP:127.0.0.1,IP:::1" "serverAuth,clientAuth"
leaf client ca pglease-client "" clientAuth
leaf other other-ca pglease-client "" clientAuth
leaf expired ca localhost "DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth" 20200101000000Z 20200201000000Z
leaf wrong-host ca elsewhere.invalid "DNS:elsewhere.invalid" "serverAuth,clientAuth"
chmod 0644 "$dir"/*.key "$dir"/*.crt
chmod 0755 "$dir"
echo "$dir"
