# runner.sh -- make test and make faults: ctest over a build's registered
# tests, streamed as they run, then one summary (sourced by common.sh, never
# run).
#
#   run_ctest TITLE BUILD [ctest args...]   ctest -V over BUILD (the args
#                              narrow it: -L, -R, -E, -j...); prints a line as
#                              each test starts and ends (its time, result,
#                              and any "not ok" line as it is printed); every
#                              line of every test goes to one log file; a
#                              failed test's own output is shown and kept in
#                              a file of its own; the summary names every
#                              failed test, the log, and the checks counted
#   count_checks FILE          "OK BAD": the named checks a log shows (ok/not
#                              ok lines, GoogleTest and pg_regress results)
#   count_negative_controls FILE   how many of the ok lines are negative
#                              controls that showed the violation they must
#   negative_control NAME WHAT 'COND'   a check whose run must show a
#                              violation (an anomaly the test provokes on
#                              purpose): "ok - negative control: NAME (WHAT,
#                              the violation it must show)" if COND holds,
#                              else "not ok - negative control: NAME: WHAT
#                              did not show"
#   as_expected_violations     filter: a checker's report on a negative
#                              control's run, as comment lines, its "not ok"
#                              lines (the violations the run must show)
#                              marked "violation shown (expected)"

# The lines of a log that are one check each: "ok - x" / "not ok - x" (the
# shell tests), GoogleTest's per-test result lines, pg_regress's per-test
# lines (isolation's start with spaces).
PGLEASE_CHECK_OK='^(test |     )?[a-z_0-9]+ +\.\.\. ok|^ok - |^\[ +OK \] .* \([0-9]+ ms\)$'
PGLEASE_CHECK_BAD='^(test |     )?[a-z_0-9]+ +\.\.\. FAILED|^not ok - |^\[ +FAILED +\] .* \([0-9]+ ms\)$'
PGLEASE_NEGATIVE_OK='^ok - negative control: '

count_checks() {
	local good bad
	good="$(grep -cE "$PGLEASE_CHECK_OK" "$1" || true)"
	bad="$(grep -cE "$PGLEASE_CHECK_BAD" "$1" || true)"
	echo "$good $bad"
}

count_negative_controls() { grep -cE "$PGLEASE_NEGATIVE_OK" "$1" || true; }

negative_control() {
	local name="$1" what="$2" cond="$3"
	if eval "$cond"; then
		echo "ok - negative control: $name ($what, the violation it must show)"
	else
		echo "not ok - negative control: $name: $what did not show"
		failures=$((failures + 1))
	fi
}

as_expected_violations() { sed -E 's/^not ok - /violation shown (expected) - /; s/^/#   /'; }

# ---- the streamed run --------------------------------------------------------

# ctest_stream LOG DIR -- reads ctest -V's lines (also written to LOG);
# prints the start and end of each test, its "not ok" lines as they come,
# and for a failed test the tail of its output (all of it in DIR/NAME.log);
# appends "RESULT NAME SECONDS" per ended test to DIR/results
ctest_stream() {
	local log="$1" dir="$2" line n name result secs t0="$SECONDS" clock
	local -A names=()
	while IFS= read -r line; do
		printf -v clock '%(%H:%M:%S)T' -1
		if [[ "$line" =~ ^\ *Start\ +([0-9]+):\ (.*)$ ]]; then
			names[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}"
			printf '%s  %5s  start    %s\n' "$clock" "+$((SECONDS - t0))s" "${BASH_REMATCH[2]}"
		elif [[ "$line" =~ ^\ *[0-9]+/[0-9]+\ Test\ +#([0-9]+):\ ([^ ]+)\ .*\ ([0-9.]+)\ sec ]]; then
			n="${BASH_REMATCH[1]}" name="${BASH_REMATCH[2]}" secs="${BASH_REMATCH[3]}"
			case "$line" in
			*" Passed "*) result=passed ;;
			*"***Skipped"* | *"Not Run (Disabled)"*) result=skipped ;;
			*"***Timeout"*) result=TIMEOUT ;;
			*"Not Run"*) result=NOT-RUN ;;
			*) result=FAILED ;;
			esac
			printf '%s  %5s  %-8s %s  %s s\n' "$clock" "+$((SECONDS - t0))s" "$result" "$name" "$secs"
			echo "$result $name $secs" >>"$dir/results"
			case "$result" in passed | skipped) ;; *) show_failed_output "$log" "$n" "$dir/$name.log" ;; esac
		elif [[ "$line" =~ ^([0-9]+):\ (not\ ok\ -\ .*)$ ]]; then
			printf '%s  %5s           %s: %s\n' "$clock" "+$((SECONDS - t0))s" \
				"${names[${BASH_REMATCH[1]}]:-#${BASH_REMATCH[1]}}" "${BASH_REMATCH[2]}"
		fi
	done
}

# show_failed_output LOG N FILE -- test #N's lines of LOG (without ctest's
# "N: " prefix) into FILE, and their last 40 lines to the terminal
show_failed_output() {
	sed -n "s/^$2: //p" "$1" >"$3"
	echo "       ---- the last 40 lines of its output (all $(wc -l <"$3") in $3):"
	tail -n 40 "$3" | sed 's/^/       | /'
	echo "       ----"
}

# run_ctest TITLE BUILD [ctest args...] -- see the header; returns non-zero
# if a test failed, or none ran
run_ctest() {
	local title="$1" build="$2" start="$SECONDS" dir log rc selected registered
	shift 2
	dir="$build/test-logs/$(tr -c 'a-zA-Z0-9\n' - <<<"$title")-$(date +%Y%m%d-%H%M%S)"
	mkdir -p "$dir"
	log="$dir/ctest.log"
	: >"$dir/results"
	selected="$(ctest_count "$build" "$@")"
	registered="$(ctest_count "$build")"
	echo "$title: $selected of the $registered registered tests (ctest -N${*:+ $*}); each test's output" \
		"goes to $log (follow it with: tail -f $log)"
	{
		rc=0
		ctest --test-dir "$build" -V "$@" 2>&1 || rc=$?
		echo "$rc" >"$dir/rc"
	} | tee "$log" |
		grep --line-buffered -E '^ *Start +[0-9]+: |^ *[0-9]+/[0-9]+ Test +#|^[0-9]+: not ok - ' |
		ctest_stream "$log" "$dir" || true
	rc="$(cat "$dir/rc")"
	ctest_summary "$title" "$dir" "$selected" "$((SECONDS - start))"
	[ "$rc" -eq 0 ] && [ -z "$(awk '$1 != "passed" && $1 != "skipped"' "$dir/results")" ] &&
		[ -s "$dir/results" ]
}

# ctest_count BUILD [ctest args...] -- how many tests ctest -N selects
ctest_count() {
	local build="$1"
	shift
	ctest --test-dir "$build" -N "$@" | sed -n 's/^Total Tests: //p'
}

# ctest_summary TITLE DIR SELECTED SECONDS -- the closing lines
ctest_summary() {
	local title="$1" dir="$2" selected="$3" secs="$4" log="$2/ctest.log" checks negative ran passed skipped bad
	# the tests' own lines, without ctest's "N: " prefix
	sed -n 's/^[0-9][0-9]*: //p' "$log" >"$dir/output"
	read -r -a checks <<<"$(count_checks "$dir/output")"
	negative="$(count_negative_controls "$dir/output")"
	ran="$(wc -l <"$dir/results")"
	passed="$(grep -c '^passed ' "$dir/results" || true)"
	skipped="$(awk '$1 == "skipped" { printf "%s%s", s, $2; s = " " }' "$dir/results")"
	bad="$(awk '$1 != "passed" && $1 != "skipped"' "$dir/results")"
	echo
	echo "==== $title: $ran of $selected selected tests ran in $secs s: $passed passed," \
		"$(wc -w <<<"$skipped") skipped${skipped:+ ($skipped)}, $(grep -c . <<<"$bad") failed"
	echo "     checks inside them: ${checks[0]} ok (${negative} of them negative controls that showed" \
		"the violation they must), ${checks[1]} not ok"
	if [ -n "$bad" ]; then
		echo "     FAILED:"
		while read -r result name secs; do
			echo "       $name ($result after $secs s): its output is in $dir/$name.log"
			grep -m 3 -E '^not ok - ' "$dir/$name.log" 2>/dev/null | sed 's/^/         /' || true
		done <<<"$bad"
	fi
	[ "$ran" -eq "$selected" ] || echo "     ($((selected - ran)) selected tests did not report a result: see the log)"
	echo "     full log: $log"
	rm -f "$dir/output"
}
