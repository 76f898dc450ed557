#!/usr/bin/env bash
# readme_blocks.sh [ROOT] -- the README shows files and outputs as they are.
# In the README.md of ROOT (by default this checkout) and in each of its
# docs/*.md (the tutorial shows the quick start's files too):
#
#   <!-- file: PATH -->       the next line opens a fenced code block whose
#                             content is the file ROOT/PATH, byte for byte
#   <!-- output: COMMAND -->  the next line opens a fenced code block whose
#                             content is what COMMAND prints (stdout and
#                             stderr), run by bash in ROOT with `pglease` the
#                             built CLI ($PGLEASE_CLI, default
#                             build/client/pglease)
#
# and every ROOT/examples/quickstart/*.cpp is shown under a file: marker of
# one of these pages.
#
# readme_blocks.sh --selftest: plants each kind of mismatch in a copy of a
# small tree and checks that it is reported.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/lib/common.sh"

# blocks README OUT -- each marker's block into OUT/N, and one line per
# marker to stdout: "N LINE file|output|bad ARGUMENT-OR-PROBLEM" (tab-separated)
blocks() {
	awk -v out="$2" '
	function fail(why) { printf "%d\t%d\tbad\t%s\n", n, line, why }
	state == "content" {
		if ($0 == fence) { state = ""; close(out "/" n); next }
		print > (out "/" n); next
	}
	state == "open" {
		state = ""
		if (match($0, /^(```+|~~~+)/)) {
			fence = substr($0, 1, RLENGTH); state = "content"
			printf "" > (out "/" n)
			printf "%d\t%d\t%s\t%s\n", n, line, kind, arg
			next
		}
		fail("the marker is not followed by a fenced code block on the next line")
	}
	/^<!-- (file|output): .* -->$/ {
		n++; line = NR
		kind = ($0 ~ /^<!-- file:/) ? "file" : "output"
		arg = $0; sub(/^<!-- (file|output): /, "", arg); sub(/ -->$/, "", arg)
		state = "open"; next
	}
	END {
		if (state == "open") fail("the marker ends the file")
		if (state == "content") fail("its code block is never closed")
	}' "$1"
}

# command_output COMMAND -- what COMMAND prints in ROOT, pglease being the CLI
command_output() {
	local bin="$WORK/bin"
	if [ ! -e "$bin/pglease" ]; then
		mkdir -p "$bin"
		ln -s "$CLI" "$bin/pglease"
	fi
	(cd "$ROOT" && PATH="$bin:$PATH" bash -c "$1" 2>&1) || true
}

# check_block PAGE N LINE KIND ARGUMENT -- one marker's block of PAGE (a
# path in ROOT) against its source
check_block() {
	local page="$1" n="$2" line="$3" kind="$4" arg="$5" where="$1:$3" blocks="$WORK/blocks/${1//\//_}" expected
	case "$kind" in
	bad)
		not_ok "readme_marker ($where)" "$arg"
		return
		;;
	file)
		if [ ! -f "$ROOT/$arg" ]; then
			not_ok "readme_block_is_file $arg ($where)" "no file $arg"
			return
		fi
		expected="$ROOT/$arg"
		;;
	output)
		if [[ "$arg" == *pglease* ]] && [ ! -x "$CLI" ]; then
			not_ok "readme_block_is_output $arg ($where)" "the CLI $CLI is not built (cmake --build build/client)"
			return
		fi
		expected="$blocks/expected.$n"
		command_output "$arg" >"$expected"
		;;
	esac
	if cmp -s "$expected" "$blocks/$n"; then
		ok "readme_block_is_${kind} $arg ($where)"
	else
		not_ok "readme_block_is_${kind} $arg ($where)" "the block differs from the $kind (diff below: - $page, + $kind)"
		diff -u "$blocks/$n" "$expected" | sed -n '3,25p' || true
	fi
}

# check_page PAGE -- every marker's block of ROOT/PAGE; the files it shows
# are added to SHOWN
check_page() {
	local page="$1" blocks="$WORK/blocks/${1//\//_}" manifest n line kind arg
	mkdir -p "$blocks"
	manifest="$(blocks "$ROOT/$page" "$blocks")"
	[ -n "$manifest" ] || [ "$page" != README.md ] ||
		not_ok readme_has_markers "no <!-- file: --> or <!-- output: --> marker in README.md"
	while IFS=$'\t' read -r n line kind arg; do
		[ -n "$n" ] || continue
		check_block "$page" "$n" "$line" "$kind" "$arg"
		[ "$kind" != file ] || SHOWN+=("$page $arg")
	done <<<"$manifest"
}

check_tree() {
	ROOT="$(cd "$1" && pwd)"
	CLI="$(realpath -m "${PGLEASE_CLI:-$ROOT/build/client/pglease}")" # absolute: linked from a directory of its own
	local page example
	SHOWN=()
	[ -f "$ROOT/README.md" ] || die "no README.md in $ROOT"
	work_dir pglease-readme-blocks
	for page in "$ROOT"/README.md "$ROOT"/docs/*.md; do
		[ -f "$page" ] || continue
		check_page "${page#"$ROOT/"}"
	done
	for example in "$ROOT"/examples/quickstart/*.cpp; do
		[ -f "$example" ] || continue
		example="${example#"$ROOT/"}"
		if printf '%s\n' "${SHOWN[@]}" | grep -q " $example\$"; then
			ok "readme_shows $example"
		else
			not_ok "readme_shows $example" "no <!-- file: $example --> marker in README.md or docs/*.md"
		fi
	done
	finish
}

# ---- selftest: each kind of mismatch is reported ---------------------------

Q=examples/quickstart
DOC=docs/t.md

# plant NAME README-TEXT -- a tree with that README, two examples, a docs
# page ($DOC) showing the second, and a fake CLI
plant() {
	local tree="$SELF/$1"
	mkdir -p "$tree/$Q" "$tree/bin" "$tree/docs"
	printf '<!-- file: %s -->\n```\n// b\nint main() { return 1; }\n```\n' "$Q/b.cpp" >"$tree/$DOC"
	printf 'int main() { return 0; }\n' >"$tree/$Q/a.cpp"
	printf '// b\nint main() { return 1; }\n' >"$tree/$Q/b.cpp"
	printf '#!/bin/sh\necho "fake cli $*"\n' >"$tree/bin/cli"
	chmod +x "$tree/bin/cli"
	printf '%s' "$2" >"$tree/README.md"
	echo "$tree"
}

# verdict TREE -- the checker's exit status and output on TREE
verdict() {
	PGLEASE_CLI="$1/bin/cli" bash "$HERE/readme_blocks.sh" "$1" >"$1/out" 2>&1
}

selftest() {
	local fence='```' good tree
	SELF="$(mktemp -d /tmp/pglease-readme-selftest.XXXXXX)"
	on_exit 'rm -rf "$SELF"'
	good="# t
<!-- file: $Q/a.cpp -->
${fence}cpp
int main() { return 0; }
${fence}
<!-- file: $Q/b.cpp -->
${fence}
// b
int main() { return 1; }
${fence}
<!-- output: pglease --version | tr a-z A-Z -->
${fence}
FAKE CLI --VERSION
${fence}
"
	tree="$(plant good "$good")"
	expect selftest_true_readme_passes "$(cat "$tree/out" 2>/dev/null)" 'verdict "$tree"'
	expect selftest_true_readme_checks_each_block "$(cat "$tree/out")" \
		'[ "$(grep -c "^ok - readme_block_is_" "$tree/out")" = 4 ] && [ "$(grep -c "^ok - readme_shows" "$tree/out")" = 2 ]'
	# name, the README (or the file named fourth) changed by sed, what the report must say
	local -a cases=(
		"file_differs|s/return 1/return 2/|not ok - readme_block_is_file $Q/b.cpp (README.md:6)"
		"output_differs|s/FAKE CLI/REAL CLI/|not ok - readme_block_is_output pglease --version"
		"example_not_shown|/file: .*.a\\.cpp/d|not ok - readme_shows $Q/a.cpp"
		"no_block_after_marker|3i text|not ok - readme_marker (README.md:2): the marker is not followed"
		"missing_file|s/a\\.cpp -->/gone.cpp -->/|not ok - readme_block_is_file $Q/gone.cpp"
		"block_not_closed|\$d|its code block is never closed"
		"docs_page_differs|s/return 1/return 3/|not ok - readme_block_is_file $Q/b.cpp ($DOC:1)|$DOC"
	)
	local c name script want page
	for c in "${cases[@]}"; do
		IFS='|' read -r name script want page <<<"$c"
		tree="$(plant "$name" "$good")"
		[ -n "$page" ] || page=README.md
		sed -i "$script" "$tree/$page"
		if verdict "$tree"; then
			not_ok "selftest_finds_$name" "the check passed on a planted mismatch ($script)"
		else
			expect "selftest_finds_$name" "it failed without saying '$want': $(cat "$tree/out")" \
				'grep -qF -- "$want" "$tree/out"'
		fi
	done
	finish
}

case "${1:-}" in
--selftest) selftest ;;
*) check_tree "${1:-$HERE/../..}" ;;
esac
