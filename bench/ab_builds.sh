# bench/ab_builds.sh -- what the A/B scripts of the extension share (sourced,
# never run): ab_library.sh and ab_instructions.sh.  Needs REPO, WORK and
# LIBDIR set and scripts/lib/common.sh sourced.
#
#   ab_builds REV          build the extension at git revision REV (A: WORK/A.so)
#                          and install this checkout's (B: WORK/B.so); set
#                          VERSION_A and VERSION_B (each build's default_version)
#                          and install REV's script for VERSION_A if this checkout
#                          lacks it.  On exit: the cluster WORK/cluster stopped,
#                          this checkout's library installed again, the worktree gone.
#   ab_databases NRES      on the running cluster: a_db and b_db, each with its
#                          build's version of the extension and NRES resources
#                          acquired and released once

ab_restore_library() {
	"$REPO/scripts/cluster.sh" stop "$WORK/cluster" immediate >/dev/null 2>&1 || true
	[ -f "$WORK/B.so" ] && cp "$WORK/B.so" "$LIBDIR/pg_lease.so"
	git -C "$REPO" worktree remove --force "$WORK/rev" >/dev/null 2>&1 || true
}

ab_version_of() { sed -n "s/^default_version = '\(.*\)'/\1/p" "$1/pg_lease.control"; }

ab_builds() {
	local rev="$1" sharedir
	on_exit ab_restore_library
	"$REPO/scripts/install-extension.sh"
	cp "$LIBDIR/pg_lease.so" "$WORK/B.so"
	git -C "$REPO" worktree add -q --detach "$WORK/rev" "$rev"
	make -s -C "$WORK/rev" >/dev/null
	cp "$WORK/rev/pg_lease.so" "$WORK/A.so"
	VERSION_A="$(ab_version_of "$WORK/rev")"
	VERSION_B="$(ab_version_of "$REPO")"
	sharedir="$(pg_config --sharedir)/extension"
	# REV's install script, where this checkout does not ship that version
	[ -f "$sharedir/pg_lease--$VERSION_A.sql" ] ||
		cp "$WORK/rev/extension/pg_lease--$VERSION_A.sql" "$sharedir/"
}

ab_databases() {
	local nres="$1" build version
	for build in A B; do
		version="VERSION_$build"
		psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE ${build,}_db" >/dev/null
		psql -X -q -v ON_ERROR_STOP=1 -d "${build,}_db" -c "CREATE EXTENSION pg_lease VERSION '${!version}'" \
			-c "SELECT count(lease.release('bench/' || i, lease.acquire('bench/' || i, '30 s'))) FROM generate_series(1, $nres) i" >/dev/null
	done
}
