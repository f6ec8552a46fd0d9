#!/bin/sh
# conformance.sh BUILD_DIR SRC_DIR (make check-client-conformance): the
# official MCP conformance suite's client scenarios, 0.2.0-alpha.12 (pinned
# in tests/conformance/alpha/package.json, installed by npm into the build
# tree as tests/conformance/run.sh does), against
# tests/client/conformance-client, scored by the suite itself:
#   - every scenario `--requirements 2026-07-28` scores, then every one
#     `--requirements 2025-11-25` scores;
#   - by name, the extension scenarios auth/client-credentials-jwt,
#     auth/client-credentials-basic and the skills scenarios
#     sep-2640-client-* (those the suite has), and
#     json-schema-2020-12-preservation, which came after 2026-07-28 was
#     frozen and so is scored by neither revision.
# Each run gets tests/client/expected-failures.yml as its baseline: it
# fails on a failure not listed there, and on a listed scenario that
# passes (the suite calls that a stale entry).  The suite's totals are
# printed per run.  Exits 77 when npm cannot provide the suite.
set -eu
build=$1
src=$2
prefix="$build/.conformance-alpha-node"
baseline="$src/tests/client/expected-failures.yml"
. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit client-conformance "$prefix" "$src/tests/conformance/alpha" \
	node_modules/.bin/conformance
PATH="$prefix/node_modules/.bin:$PATH"
export PATH
client="$build/tests/client/conformance-client"
out="$build/client-conformance"
rm -rf "$out"
mkdir -p "$out"

failed=""
# run NAME ARGS...: one run of the suite against the baseline; prints its
# scenario lines, its totals and its verdict on the baseline.
run() {
	name=$1
	shift
	log="$out/$(echo "$name" | tr / _).txt"
	rc=0
	conformance client --command "$client" --expected-failures "$baseline" \
		-o "$out/$(echo "$name" | tr / _)" "$@" >"$log" 2>&1 || rc=$?
	echo "== $name (exit $rc; $log)"
	# A run of many scenarios prints a summary; a run of one prints its
	# checks.  Either way the lines that say what passed and what did not.
	if grep -q '^=== SUITE SUMMARY ===' "$log"; then
		# The suite runs, and totals, the scenarios a revision does not
		# score too (extensions, later additions); its baseline verdict
		# reads only the scored ones.  So each line says which it is,
		# and the scored ones are counted apart.
		sed -n '/^=== SUITE SUMMARY ===/,$p' "$log" | grep -E '^[✓✗] |^Total:' |
			awk -v scored="$scored" '
			BEGIN { n = split(scored, s, " "); for (i = 1; i <= n; i++) want[s[i]] = 1 }
			/^Total:/ { total = $0; next }
			{
				name = $2; sub(/:$/, "", name)
				if (name in want) { ns++; if ($1 == "✓") np++; else nf++; print "  " $0 }
				else print "  " $0 "  (not scored)"
			}
			END {
				print "  suite " total
				printf "  scored: %d scenarios, %d passed, %d failed\n", ns, np, nf
			}' || :
	else
		grep -E '^Passed: ' "$log" || :
		# A scenario whose every check is SKIPPED exits 0 having checked
		# nothing (the skills ones, for a client that never lists
		# skills): that is a failure here, not a pass.
		if grep -q '^Passed: 0/0' "$log"; then
			echo "   nothing was checked: $(sed 's/\x1b\[[0-9;]*m//g' "$log" |
				grep -c ' SKIPPED ') check(s) SKIPPED"
			rc=1
		fi
	fi
	sed 's/\x1b\[[0-9;]*m//g' "$log" |
		sed -n '/^Expected failures (in baseline)/,$p' | grep -vE '^  ~ ' | grep -v '^$' || :
	if [ $rc -ne 0 ]; then
		failed="$failed $name"
		grep -E '✗ |Unexpected|Stale|Error|error' "$log" | grep -v '^  ~ ' | head -n 40 || :
	fi
}

for rev in 2026-07-28 2025-11-25; do
	scored=$(conformance list --requirements "$rev" 2>/dev/null |
		sed -n '/^Client scenarios/,/^$/s/^  - //p' | tr '\n' ' ')
	run "requirements $rev" --requirements "$rev"
done
scored=""
conformance list >"$out/list.txt" 2>&1 || :
extensions="auth/client-credentials-jwt auth/client-credentials-basic $(
	sed -n '/^Client scenarios/,/^$/p' "$out/list.txt" | sed -n 's/^  - \(sep-2640-client-[^ ]*\).*/\1/p')"
for s in $extensions; do
	run "$s" --scenario "$s"
done
# Added after 2026-07-28 was frozen, so no requirement set judges it.
run "json-schema-2020-12-preservation" --scenario json-schema-2020-12-preservation \
	--spec-version 2026-07-28
if [ -n "$failed" ]; then
	echo "client conformance: FAILED:$failed"
	exit 1
fi
echo "client conformance: every run matches tests/client/expected-failures.yml"
