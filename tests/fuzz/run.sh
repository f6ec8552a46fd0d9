#!/bin/sh
# run.sh - runs libFuzzer targets for a fixed time each (make fuzz,
# make fuzz-smoke) and prints one summary line per target.
#
# usage: run.sh SRC_FUZZ_DIR BUILD_FUZZ_DIR SECONDS "EXTRA_FLAGS" TARGET...
#
# Each target writes new inputs to BUILD_FUZZ_DIR/work/<target> and also
# reads the seeds in SRC_FUZZ_DIR/corpus/<target> (never written), with
# the dictionary SRC_FUZZ_DIR/<target>.dict, or for a variant that has
# none (dispatch-push) the one of the name before its first dash.  A crash,
# leak, sanitizer report or timeout ends that target with a failure; the
# input is saved as BUILD_FUZZ_DIR/work/<target>-crash-* (or leak-,
# timeout-, oom-) and the log as BUILD_FUZZ_DIR/work/<target>.log.
set -u
src=$1
build=$2
secs=$3
extra=$4
shift 4

mkdir -p "$build/work"
# Targets run FUZZ_JOBS at a time (default 2: one per CPU here), each
# writing its report line(s) to work/<target>.report, printed in order
# once all are done.
jobs=${FUZZ_JOBS:-2}

run_one() {
	t=$1
	bin=$build/fuzz-$t
	work=$build/work/$t
	log=$build/work/$t.log
	mkdir -p "$work"
	dict=$src/$t.dict
	[ -f "$dict" ] || dict=$src/${t%%-*}.dict
	# halt_on_error: the first sanitizer report is the bug; detect_leaks
	# checks every input that leaves more allocations than it found.
	# shellcheck disable=SC2086
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=8192 \
		-print_final_stats=1 -dict="$dict" \
		-artifact_prefix="$build/work/$t-" $extra \
		"$work" "$src/corpus/$t" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	corp=$(grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		echo "PASS: fuzz-$t: ${secs}s, ${execs:-?} execs, $cov, $corp" \
		     "($(ls "$work" | wc -l) files in $work, $(ls "$src/corpus/$t" | wc -l) seeds)"
	else
		echo "FAIL: fuzz-$t (exit $rc), see $log:"
		grep -aE 'ERROR|SUMMARY|fuzz-[a-z-]+:|Test unit written' "$log" | head -n 20
	fi
}

lane() {
	i=0
	for t in "$@"; do
		i=$((i + 1))
		[ $((i % jobs)) -eq "$k" ] || continue
		run_one "$t" >"$build/work/$t.report" 2>&1
	done
}

for t in "$@"; do
	rm -f "$build/work/$t.report"
done
k=0
while [ "$k" -lt "$jobs" ]; do
	lane "$@" &
	k=$((k + 1))
done
wait

fail=0
for t in "$@"; do
	if [ -f "$build/work/$t.report" ]; then
		cat "$build/work/$t.report"
		grep -q '^PASS: ' "$build/work/$t.report" || fail=1
	else
		echo "FAIL: fuzz-$t: did not run"
		fail=1
	fi
done
exit $fail
