#!/usr/bin/env bash
# citations.sh -- every file that code, scripts and documents cite must be
# in the repository: a person who clones it must be able to follow each
# reference.  Prints "ok - ..." or one "not ok - ..." per broken citation
# (FILE:LINE and what it cites) and exits non-zero if there is one.
#
#   tests/lib/citations.sh [ROOT]      (ROOT: the repository, default this one)
#
# What counts as a citation, in the repository's files of source, script,
# build and document kinds (see scanned_files):
# - a name with an extension of source or documents (.md, .c, .h, .cpp,
#   .hpp, .sh, .sql, .spec, .cmake, .txt, each optionally .in):
#   "docs/design.md", "see space.cpp", "(lease_spi.c)";
# - a path from a top folder of the repository: expected/stats_1.out,
#   client/src/detail/ (a folder written with its trailing slash);
# - a markdown link target, [text](path) or [text](path#section), in .md files;
# - <name>.md#<section> anywhere: the section must be a heading of that file.
# A name resolves when it is a file or directory relative to the citing file
# or to ROOT, or the tail of one (etcd/gateway.hpp, pglease/pglease.hpp);
# NAME is also fine when NAME.in is (CMake's configured files) or when ROOT's
# .gitignore ignores it (a build output).  A markdown link resolves relative
# to its own file only, as the repository's web view reads it.  A path that
# climbs out of ROOT, or an absolute one outside the system's directories,
# is always broken: the repository must stand alone.
# Not citations: #include lines (the compiler checks those), computed paths
# ($ROOT/..., "$(dirname "$0")/..."), URLs, and the names of
# tests/lib/citations.allow.
set -euo pipefail

ROOT="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)"
cd "$ROOT"

# Names that cite no file of the repository on purpose: "FILE TOKEN" lines
# (FILE the citing file, or * for any), each with its reason.
ALLOWED="$ROOT/tests/lib/citations.allow"

# scanned_files -- the repository's files (tracked, or new and not ignored)
# of the kinds that cite others
scanned_files() {
	repo_files | grep -E '\.(md|c|h|cpp|hpp|sh|sql|spec|cmake|txt|in)$|(^|/)Makefile$|^\.ci/'
}

repo_files() {
	if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$ROOT" ls-files --cached --others --exclude-standard
	else
		find . -type f ! -path './.git/*' | sed 's|^\./||'
	fi
}

source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
work_dir citations
work="$WORK"
repo_files | sort -u >"$work/files"
scanned_files | sort -u >"$work/scanned"

# One line per broken citation: FILE:LINE <tab> TOKEN <tab> WHY <tab> ROOTED
# (1: a path from ROOT that .gitignore may name as a build output); last,
# "checked N".
xargs -d '\n' awk -v list="$work/files" -f "$(dirname "${BASH_SOURCE[0]}")/citations.awk" \
	<"$work/scanned" | awk -F '\t' '!seen[$1 FS $2]++' >"$work/found"

broken=0
checked=0
while IFS=$'\t' read -r where token why rooted; do
	if [ "$where" = "checked" ]; then
		checked="$token"
		continue
	fi
	file="${where%:*}"
	if [ -f "$ALLOWED" ] && sed 's/[[:space:]]*#.*//' "$ALLOWED" | grep -qxF -e "$file $token" -e "* $token"; then
		continue
	fi
	if [ "$rooted" = 1 ] && git -C "$ROOT" check-ignore -q --no-index "$token" 2>/dev/null; then
		continue
	fi
	echo "not ok - citation $where cites $token: $why"
	broken=$((broken + 1))
done <"$work/found"

if [ "$broken" -gt 0 ]; then
	echo "# $broken broken of $checked citations in $(wc -l <"$work/scanned") files"
	exit 1
fi
echo "ok - citations: all $checked citations in $(wc -l <"$work/scanned") files name files of the repository"
