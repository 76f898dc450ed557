#!/usr/bin/env bash
# install-deps.sh -- install the Debian packages pg_lease builds and tests with.
# Idempotent: installs only what is missing.  Needs root (or passwordless sudo).
# It leaves every service alone: Debian's redis-server and etcd-server
# packages start a system server when they are installed, and that server
# stays as the package set it up: the tests start their own servers, each on
# a port free when it starts, so a system server's port is never theirs.
set -euo pipefail

packages=(
	postgresql-15 postgresql-server-dev-15 postgresql-contrib
	libpq-dev make gcc g++ cmake pkg-config libpqxx-dev libgtest-dev pgbouncer
	redis-server libhiredis-dev libssl-dev openssl
	etcd-server etcd-client libcurl4-openssl-dev nlohmann-json3-dev curl
	zookeeper libzookeeper-mt-dev default-jre-headless default-jdk-headless libcurator-recipes-java
	postgresql-15-auto-failover pg-auto-failover-cli
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo="sudo"
	else
		echo "install-deps: missing packages: ${missing[*]}" >&2
		echo "install-deps: run as root, or: apt-get install ${missing[*]}" >&2
		exit 1
	fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
