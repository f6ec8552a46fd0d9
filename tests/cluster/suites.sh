#!/bin/sh
# suites.sh BUILD_DIR SRC_DIR: the task and HTTP suites again, every server
# they start sharing one redis-server (make check-cluster): the
# 2026-07-28 tasks of tests/scenarios/test_adv_tasks.py and everything of
# tests/http/test_http.py must behave the same when their records live in
# Redis.  The redis-server is this script's own, on a free loopback port.
# Prints the suites' TAP and "N passed, M failed"; exits 77 (skip) when
# redis-server is missing.
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
if ! command -v redis-server >/dev/null 2>&1; then
	echo "check-cluster: SKIP: redis-server is not installed (apt-get install redis-server)"
	exit 77
fi
. "$src/tests/cluster/lib.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/mcp-suites.XXXXXX")
port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >"$dir/redis.log" 2>&1 &
rpid=$!
trap 'kill "$rpid" 2>/dev/null || :; wait "$rpid" 2>/dev/null || :; rm -rf "$dir"' EXIT INT TERM
wait_listening "$port" || { echo "check-cluster: redis-server did not start"; exit 1; }
MCP_EVERYTHING="$build/examples/mcp-everything"
MCP_EVERYTHING_ARGS="--store redis://127.0.0.1:$port/0"
export MCP_EVERYTHING MCP_EVERYTHING_ARGS
passed=0
failed=0
for t in tests/scenarios/test_adv_tasks.py tests/http/test_http.py; do
	out=$(python3 "$src/$t" 2>&1) || :
	printf '%s\n' "$out" | sed "s|^|$t: |"
	p=$(printf '%s\n' "$out" | grep -c '^ok ') || :
	f=$(printf '%s\n' "$out" | grep '^not ok ' | grep -vc '# TODO') || :
	# A suite that printed no test point failed as a whole.
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	passed=$((passed + p))
	failed=$((failed + f))
done
echo "$passed passed, $failed failed (the task and HTTP suites with $MCP_EVERYTHING_ARGS)"
[ "$failed" -eq 0 ]
