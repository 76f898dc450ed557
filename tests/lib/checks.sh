# checks.sh -- the named checks of every shell-driven test (sourced).
# Each check prints "ok - name" or "not ok - name: why"; finish exits
# non-zero if any failed.
failures=0

# expect NAME WHY 'SHELL-CONDITION' -- the condition (eval'd) must hold
expect() {
	local name="$1" why="$2" cond="$3"
	if eval "$cond"; then
		echo "ok - $name"
	else
		echo "not ok - $name: $why"
		failures=$((failures + 1))
	fi
}

finish() { exit $((failures > 0)); }
