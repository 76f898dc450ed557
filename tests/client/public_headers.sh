#!/usr/bin/env bash
# public_headers.sh BUILD_DIR -- the installed headers are the public API
# only: `cmake --install` of the client's build into a temporary prefix, then
# every installed header listed, and the test fails on a header under a
# detail/ directory or one that declares a provider class (a class deriving
# from Locker) or names the provider contract (LockerBase, Grant, Granted);
# the opaque types behind a Lease (detail::LeaseEngine, LeaseState,
# LeaseAccess) are only declared, never defined, there.  A negative control plants both in a copy and
# checks that each is found.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/scripts/lib/common.sh"
BUILD="${1:?usage: public_headers.sh BUILD_DIR}"
work_dir pglease_public_headers

# a class deriving from Locker, the contract named, or an opaque type defined
CONTRACT='(:[[:space:]]*public[[:space:]]+(pglease::)?Locker\b)|\b(LockerBase|class Grant|struct Granted)\b|(class|struct)[[:space:]]+(LeaseEngine|LeaseState|LeaseAccess)[[:space:]]*\{'

# violations DIR -- one line per header of DIR/include that breaks the rule
violations() {
	local dir="$1/include" h
	while IFS= read -r h; do
		case "$h" in
		*/detail/*) echo "a detail/ header is installed: ${h#"$dir"/}" ;;
		esac
		if grep -Eq "$CONTRACT" "$h"; then
			echo "a provider class or the provider contract in ${h#"$dir"/}:" \
				"$(grep -En "$CONTRACT" "$h" | head -2 | tr '\n' ' ')"
		fi
	done < <(find "$dir" -type f | sort)
}

cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" 2>&1 ||
	{ echo "not ok - cmake --install $BUILD failed:"; sed 's/^/#   /' "$WORK/install.log"; exit 1; }
[ -d "$WORK/prefix/include/pglease" ] || { echo "not ok - no include/pglease installed"; exit 1; }
echo "# installed headers:"
(cd "$WORK/prefix/include" && find . -type f | sort | sed 's|^\./|#   |')
found="$(violations "$WORK/prefix")"
expect installed_headers_are_the_public_api_only "$found" '[ -z "$found" ]'
expect umbrella_header_installed "pglease/pglease.hpp missing" '[ -f "$WORK/prefix/include/pglease/pglease.hpp" ]'

# negative controls: a detail/ header and a provider class, planted in a copy
cp -a "$WORK/prefix" "$WORK/planted"
mkdir -p "$WORK/planted/include/pglease/detail"
echo "class LockerBase;" >"$WORK/planted/include/pglease/detail/locker_base.hpp"
printf 'namespace pglease {\nclass Client : public Locker {};\n}\n' >"$WORK/planted/include/pglease/client.hpp"
planted="$(violations "$WORK/planted")"
negative_control planted_detail_header_is_found "a detail/ header" '[[ "$planted" == *"detail/ header is installed: pglease/detail/locker_base.hpp"* ]]'
negative_control planted_provider_class_is_found "a class deriving from Locker" '[[ "$planted" == *"provider class or the provider contract in pglease/client.hpp"* ]]'
finish
