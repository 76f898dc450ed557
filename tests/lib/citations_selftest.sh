#!/usr/bin/env bash
# citations_selftest.sh -- tests/lib/citations.sh passes a small tree whose
# citations all resolve, fails naming FILE:LINE and the name for each kind of
# broken citation planted in it (one at a time), lets through what it must
# (allowed names, build outputs), and passes this repository.
#
# The planted names are built from variables (${upper}.md, $guide), so that
# this file itself cites nothing that is missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
CHECK="$ROOT/tests/lib/citations.sh"

work_dir citations_selftest
work="$WORK"
tree="$work/tree"
upper=DESIGN
page=guide
guide="docs/$page.md"
code="src/$page.cpp"
outside="../.."
gone=nosuch

# make_tree -- a README, a guide and a source file citing each other rightly
make_tree() {
	rm -rf "$tree"
	mkdir -p "$tree/docs" "$tree/src" "$tree/tests/lib"
	printf '# Top\n\n## Usage\n\nRead [the guide](%s#details) and %s.\n' "$guide" "$code" >"$tree/README.md"
	printf '# Guide\n\n## Details\n\nBack to [the top](../%s#usage).\n' README.md >"$tree/$guide"
	printf '// %s -- see %s#details and README %s\nint main() { return 0; }\n' \
		"${code#src/}" "$guide" '"Usage"' >"$tree/$code"
	printf '/build/\n' >"$tree/.gitignore"
	git -C "$tree" init -q
}

# run_check -- citations.sh on the tree; its output in $out, its status in $rc
run_check() {
	rc=0
	out="$("$CHECK" "$tree" 2>&1)" || rc=$?
}

# plant NAME FILE LINE EXPECTED -- with LINE added to FILE of a clean tree,
# the check fails and names FILE:<its last line> and EXPECTED
plant() {
	local name="$1" file="$2" line="$3" expected="$4" at
	make_tree
	printf '%s\n' "$line" >>"$tree/$file"
	at="$file:$(wc -l <"$tree/$file")"
	run_check
	expect "$name" "status $rc, output: $out" \
		'[ "$rc" -ne 0 ] && printf "%s\n" "$out" | grep -qF "not ok - citation $at cites $expected"'
}

make_tree
run_check
expect "a tree whose citations resolve passes" "status $rc, output: $out" '[ "$rc" -eq 0 ]'

plant "a missing design document is named" "$code" "// the contract (${upper}.md §6b)" "${upper}.md"
plant "a path out of the repository is named" "$code" "// the brief: $outside/shared/${upper}.md" \
	"$outside/shared/${upper}.md: a path outside the repository"
plant "an absolute path to a document is named" "$code" "// /home/someone/${upper}.md" \
	"/home/someone/${upper}.md"
plant "a link to a missing page is named" README.md "[gone](docs/$gone.md)" "docs/$gone.md"
plant "a link to a missing section is named" README.md "[x]($guide#$gone)" "$guide#$gone"
plant "a section cited from code that is missing is named" "$code" "// $guide#$gone" "$guide#$gone"
plant "a README section that is missing is named" "$code" "// (README \"No such section\")" \
	"README \"No such section\""
plant "a see-comment naming a missing file is named" "$code" "// see $gone.cpp" "$gone.cpp"
plant "a folder from the top that is missing is named" "$code" "// under src/$gone/" "src/$gone/"

make_tree
printf '// a build output: build/%s.txt; a system header: sysexits.h\n' "$gone" >>"$tree/$code"
printf '%s sysexits.h  # named for its exit codes\n' "$code" >"$tree/tests/lib/citations.allow"
run_check
expect "allowed names and ignored build outputs pass" "status $rc, output: $out" '[ "$rc" -eq 0 ]'

rc=0
out="$("$CHECK" "$ROOT" 2>&1)" || rc=$?
expect "this repository's citations resolve" "$out" '[ "$rc" -eq 0 ]'

finish
