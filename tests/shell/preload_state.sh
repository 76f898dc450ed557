#!/usr/bin/env bash
# The cluster runs in the mode the harness asked for, so the alternative
# outputs of sql/ (stats_1.out) cannot hide a preload that silently failed.
source "$(dirname "$0")/lib.sh"
fresh_db shell_preload

if [ "$(cat "$PGLEASE_CLUSTER/mode")" = preload ]; then
	check "preloaded_cluster_lists_pg_lease" \
		"SELECT current_setting('shared_preload_libraries') LIKE '%pg_lease%'"
	check "preloaded_stats_work" "SELECT grants >= 0 FROM lease.stats()"
else
	check "plain_cluster_has_no_preload" \
		"SELECT current_setting('shared_preload_libraries') NOT LIKE '%pg_lease%'"
	state="$(sqlstate_of "SELECT * FROM lease.stats()")"
	expect "plain_stats_refused_55000" "got SQLSTATE '$state'" '[ "$state" = 55000 ]'
fi
finish
