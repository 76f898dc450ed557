#!/usr/bin/env bash
# install-extension.sh -- build pg_lease and install it into the local PostgreSQL.
# Installing writes to PostgreSQL's directories: needs root (or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

make -s -j2 all
if [ -w "$(pg_config --sharedir)/extension" ] && [ -w "$(pg_config --pkglibdir)" ]; then
	make -s install >/dev/null
elif command -v sudo >/dev/null 2>&1; then
	sudo make -s install >/dev/null
else
	echo "install-extension: cannot write to $(pg_config --pkglibdir): run as root, or 'sudo make install'" >&2
	exit 1
fi
