#!/usr/bin/env bash
# install-deps.sh -- install the Debian packages pg_lease builds and tests with.
# Idempotent: installs only what is missing.  Needs root (or passwordless sudo).
set -euo pipefail

packages=(
	postgresql-15 postgresql-server-dev-15 postgresql-contrib
	libpq-dev make gcc g++ cmake pkg-config libpqxx-dev libgtest-dev pgbouncer
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
