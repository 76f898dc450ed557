#!/usr/bin/env bash
# install-deps.sh -- install the Debian packages pg_lease builds and tests with.
# Idempotent: installs only what is missing.  Needs root (or passwordless sudo).
set -euo pipefail

packages=(
	postgresql-15 postgresql-server-dev-15 postgresql-contrib
	libpq-dev make gcc g++ cmake pkg-config libpqxx-dev libgtest-dev pgbouncer
	redis-server libhiredis-dev libssl-dev openssl
	etcd-server etcd-client libcurl4-openssl-dev nlohmann-json3-dev curl
	zookeeper libzookeeper-mt-dev default-jre-headless default-jdk-headless libcurator-recipes-java
	postgresql-15-auto-failover pg-auto-failover-cli
)

# Debian's redis-server package starts a system service on 6379 when it is
# installed.  Tests start their own servers (scripts/redis.sh) on other ports,
# so the service is stopped and kept from starting at boot; idempotent.
stop_system_redis() {
	dpkg-query -W -f='${Status}' redis-server 2>/dev/null | grep -q 'install ok installed' || return 0
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$sudo systemctl disable --now redis-server >/dev/null 2>&1 || true
	else
		$sudo service redis-server stop >/dev/null 2>&1 || true
		$sudo update-rc.d redis-server disable >/dev/null 2>&1 || true
	fi
}

# etcd-server likewise starts a system etcd on 2379/2380; scripts/etcd.sh
# starts the tests' own members on other ports.
stop_system_etcd() {
	dpkg-query -W -f='${Status}' etcd-server 2>/dev/null | grep -q 'install ok installed' || return 0
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		$sudo systemctl disable --now etcd >/dev/null 2>&1 || true
	else
		$sudo service etcd stop >/dev/null 2>&1 || true
		$sudo update-rc.d etcd disable >/dev/null 2>&1 || true
	fi
}

# Debian's zookeeper package ships an init script (zookeeper-server is the
# separate package that runs it); stop and disable it if one is running, as
# for Redis: tests start their own servers (scripts/zookeeper.sh).
stop_system_zookeeper() {
	local svc
	for svc in zookeeper zookeeperd; do
		[ -e "/etc/init.d/$svc" ] || [ -e "/lib/systemd/system/$svc.service" ] || continue
		if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
			$sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true
		else
			$sudo service "$svc" stop >/dev/null 2>&1 || true
			$sudo update-rc.d "$svc" disable >/dev/null 2>&1 || true
		fi
	done
}

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
stop_system_redis
stop_system_etcd
stop_system_zookeeper
