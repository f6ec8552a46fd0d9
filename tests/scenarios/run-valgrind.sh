#!/bin/sh
# run-valgrind.sh BUILDDIR SRCDIR [HTTP yes|no] - make check-valgrind-scenarios: a
# representative subset of the adversarial scenarios with mcp-everything
# under valgrind memcheck, and the in-memory soak under valgrind.  Passes
# when every scenario passes and every valgrind log shows zero errors and
# nothing definitely lost.
set -u
builddir=$1
srcdir=$2
http=${3:-yes}
out=$builddir/tests/scenarios/valgrind
rm -rf "$out"
mkdir -p "$out/logs"

command -v valgrind >/dev/null 2>&1 || { echo "SKIP: valgrind not installed"; exit 77; }

# valgrind runs one thread at a time; --fair-sched=yes hands the lock
# round-robin, so a spinning handler cannot starve the reader for its whole
# run (with the default, unfair lock, cancel_handler_ignoring_token saw its
# spin end before the reader read the next request).
VG_OPTS="-q --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
--show-leak-kinds=definite --num-callers=30"

# The wrapper the scenarios start as "the fixture binary": libtool finds
# the real program and its uninstalled libmcp.so.
# Under valgrind the server runs 20 to 50 times slower (the scenarios'
# time scale is 20): its HTTP header and body time limits (5 s and 30 s)
# would refuse the scenarios' own well-behaved requests, so they get ten
# minutes; the limits themselves are tested by tests/http/test_hostile_http.py.
cat >"$out/mcp-everything" <<EOF
#!/bin/sh
exec "$builddir/libtool" --mode=execute valgrind $VG_OPTS \
  --log-file="$out/logs/everything.%p.log" "$builddir/examples/mcp-everything" \
  --header-timeout-ms 600000 --body-timeout-ms 600000 "\$@"
EOF
chmod +x "$out/mcp-everything"

MCP_EVERYTHING=$out/mcp-everything
MCP_ADV_VALGRIND=1
MCP_ADV_SANITIZER=no
export MCP_EVERYTHING MCP_ADV_VALGRIND MCP_ADV_SANITIZER

fail=0
run() {
	file=$1
	shift
	echo "== valgrind: $file $*"
	if ! python3 "$srcdir/tests/scenarios/$file" "$@" 2>&1 | tee "$out/$file.log"; then
		fail=1
	fi
	# tee hides the exit status; the summary line tells (tests/lib/tap.py
	# ends with "# N passed, M failed, ...").
	grep -q ", 0 failed," "$out/$file.log" || fail=1
}

run test_adv_close.py eof_with_many_handlers_running eof_queued_requests_still_dispatched \
	eof_with_handlers_blocked_on_client_requests eof_noncancellable_handler_answer_still_written \
	eof_with_late_notifications eof_midline_and_without_newline eof_before_initialized \
	epipe_with_stdin_still_open sigint_with_running_queued_and_blocked \
	repeated_signals_during_shutdown several_triggers_at_once parent_killed_no_orphan
run test_adv_cancel.py cancel_running_sleep_and_progress cancel_handler_ignoring_token \
	cancel_queued_never_runs cancel_racing_completion_thousands cancel_with_malformed_params \
	cancel_of_initialize cancel_while_waiting_on_client cancel_inside_2025_03_26_batch \
	s2c_timeout_then_late_answer s2c_duplicate_answers s2c_answers_with_wrong_id_types \
	s2c_answer_racing_close s2c_cancel_racing_answer s2c_request_after_close \
	s2c_routing_under_concurrency
run test_adv_input.py ids_exact_echo_of_every_valid_form ids_invalid_forms_rejected \
	ids_duplicate_in_flight_on_every_path ids_separate_namespaces_both_directions \
	malformed_invalid_json_variants malformed_invalid_utf8_inside_and_outside_strings \
	framing_byte_at_a_time framing_hundreds_of_messages_in_one_write \
	limits_oversized_lines_at_and_past_the_limit limits_deep_nesting malformed_duplicate_keys \
	envelope_violations_of_every_kind batches_in_2025_03_26_every_shape \
	parse_error_flood_is_rate_limited lifecycle_out_of_order
run test_adv_load.py load_cancel_storm_with_timeouts_and_close
if [ "$http" = yes ]; then
	ADV_SOAK_SESSIONS=50 run test_adv_soak_http.py
fi

echo "== valgrind: soak_memory (SOAK_N=30)"
if ! SOAK_N=30 SOAK_NO_RSS=1 "$builddir/libtool" --mode=execute valgrind $VG_OPTS \
	--log-file="$out/logs/soak_memory.%p.log" "$builddir/tests/scenarios/soak_memory"; then
	fail=1
fi

# Every valgrind log: no error, nothing definitely lost.
nlogs=0
for log in "$out"/logs/*.log; do
	[ -e "$log" ] || continue
	nlogs=$((nlogs + 1))
	if grep -q "ERROR SUMMARY: [1-9]\|definitely lost: [1-9]\|Invalid \|uninitialised\|== *at 0x" "$log"; then
		echo "FAIL: valgrind report in $log:"
		head -60 "$log"
		fail=1
	fi
done
echo "== valgrind: $nlogs server processes checked, logs in $out/logs"
# Repeated last, where a CI log's tail shows it.
grep -h "^not ok" "$out"/*.py.log 2>/dev/null | grep -v "# TODO" | sed 's/^/== failed: /'

[ "$nlogs" -gt 0 ] || fail=1
if [ $fail -eq 0 ]; then echo "PASS: check-valgrind-scenarios"; else echo "FAIL: check-valgrind-scenarios"; fi
exit $fail
