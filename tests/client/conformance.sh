#!/bin/sh
# conformance.sh BUILD_DIR SRC_DIR (make check-client-conformance): the
# official MCP conformance suite's client scenarios, 0.2.0-alpha.12 (pinned
# in tests/conformance/alpha/package.json, installed by npm into the build
# tree as tests/conformance/run.sh does), against
# tests/client/conformance-client.  The scenarios libmcp's client builds
# must all pass; the auth/* scenarios (OAuth flows the client does not
# build) are listed and counted, not run.  Exits 77 when npm cannot
# provide the suite.
set -eu
build=$1
src=$2
prefix="$build/.conformance-alpha-node"
pins="$src/tests/conformance/alpha/package.json"
if [ ! -x "$prefix/node_modules/.bin/conformance" ] || ! cmp -s "$pins" "$prefix/package.json"; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "client-conformance: SKIP: npm is needed to install the suite"
		exit 77
	fi
	mkdir -p "$prefix"
	cp "$pins" "$prefix/package.json"
	if ! (cd "$prefix" && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
		echo "client-conformance: SKIP: npm install failed (is the registry reachable?)"
		exit 77
	fi
fi
PATH="$prefix/node_modules/.bin:$PATH"
export PATH
client="$build/tests/client/conformance-client"
out="$build/client-conformance"
rm -rf "$out"
mkdir -p "$out"

scenarios="initialize tools_call elicitation-sep1034-client-defaults sse-retry request-metadata"
pass=0
fail=0
for s in $scenarios; do
	rc=0
	conformance client --command "$client" --scenario "$s" -o "$out/$s" >"$out/$s.txt" 2>&1 || rc=$?
	# A scenario passes when the suite exits 0 and reports no failed or
	# warned check.
	if [ $rc -eq 0 ] && ! grep -qE '(^|[^0-9])[1-9][0-9]* (failed|warnings?)' "$out/$s.txt"; then
		pass=$((pass + 1))
		echo "ok   $s: $(grep -E 'passed|Passed' "$out/$s.txt" | tail -n 1)"
	else
		fail=$((fail + 1))
		echo "FAIL $s (exit $rc; see $out/$s.txt)"
		grep -E '✗|FAIL|WARN' "$out/$s.txt" | head -n 20 || :
	fi
done
conformance list >"$out/list.txt" 2>&1 || :
auth=$(sed -n '/^Client scenarios/,/^$/p' "$out/list.txt" | grep -c '^  - auth/' || :)
echo "auth/* client scenarios not built (OAuth client flows): $auth"
sed -n '/^Client scenarios/,/^$/p' "$out/list.txt" | grep '^  - auth/' | sed 's/^  - /  /'
echo "client conformance: $pass passed, $fail failed"
[ $fail -eq 0 ]
