#!/bin/sh
# run.sh BUILD_DIR SRC_DIR (make check-client): libmcp's client against
# servers not written here.
#   1. @modelcontextprotocol/server-everything over stdio, then over
#      Streamable HTTP: tests/client/reference-check calls every tool,
#      reads every resource and template, gets every prompt, each asserted.
#   2. the TypeScript SDK server (ts-server.mjs) through mcp-call: a call
#      cancelled with SIGINT (mcp-call exits 130, the server reports the
#      abort), and a server killed with SIGKILL mid-call (mcp-call fails at
#      once with the signal named, exit 3).
#   3. the TypeScript SDK's HTTP+SSE server of 2024-11-05 (ts-sse-server.mjs):
#      mcp-call --http URL/sse falls back to it by itself, --transport sse
#      forces it, --era 2024-11-05 agrees on that revision with it,
#      --transport streamable fails clearly; tests/client/sse-check
#      drives mcp_client itself (calls, notifications, a cancelled call, the
#      stream ended and the server killed mid-call); the bearer token on
#      every request and in no message; a refused endpoint; a server that is
#      down fails without a fallback.  And the Streamable HTTP reference
#      server of step 1 is never taken for a legacy one.
# Exits 77 (skip) when npm cannot provide the packages.
set -eu
build=$1
src=$2
rc=0
prefix=$(sh "$src/tests/client/install.sh" "$build" "$src" | tail -n 1) || rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
node="$prefix/node_modules/.bin/node"
everything="$prefix/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
check="$build/tests/client/reference-check"
call="$build/examples/mcp-call"
out="$build/check-client"
rm -rf "$out"
mkdir -p "$out"
fail=0

echo "=== the reference server over stdio"
if ! "$check" --stdio "$node" "$everything" stdio >"$out/stdio.txt" 2>"$out/stdio.err"; then
	fail=1
fi
grep -v '^ok  ' "$out/stdio.txt" || :

echo "=== the reference server over Streamable HTTP"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PORT=$port "$node" "$everything" streamableHttp >"$out/http-server.log" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || :' EXIT
i=0
until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 200 ] || { echo "check-client: the HTTP reference server did not start"; exit 1; }
	sleep 0.05
done
if ! "$check" --http "http://127.0.0.1:$port/mcp" >"$out/http.txt" 2>"$out/http.err"; then
	fail=1
fi
grep -v '^ok  ' "$out/http.txt" || :
# The fallback to HTTP+SSE must leave a Streamable HTTP server alone.
if "$build/tests/client/sse-check" --expect-streamable "http://127.0.0.1:$port/mcp" \
	>"$out/http-streamable.txt" 2>&1 &&
	"$call" --verbose --http "http://127.0.0.1:$port/mcp" ping >/dev/null 2>"$out/http-verbose.err" &&
	grep -q 'connected over Streamable HTTP' "$out/http-verbose.err"; then
	echo "ok   the Streamable HTTP server stays on Streamable HTTP (mcp_client and mcp-call)"
else
	echo "FAIL the Streamable HTTP server: $(cat "$out/http-streamable.txt" "$out/http-verbose.err")"
	fail=1
fi
kill $spid 2>/dev/null || :
wait $spid 2>/dev/null || :
trap - EXIT

echo "=== the TypeScript SDK server: a cancelled call"
ts="$prefix/ts-server.mjs"
pidfile="$out/ts.pid"
TS_SERVER_PIDFILE=$pidfile "$call" --stdio "'$node' '$ts' 2>'$out/ts-cancel.err'" \
	call slow '{"ms":60000}' >"$out/cancel.out" 2>"$out/cancel.err" &
cpid=$!
i=0
until grep -q '^started' "$out/ts-cancel.err" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 400 ] || { echo "check-client: the TS server never started the call"; fail=1; break; }
	sleep 0.05
done
kill -INT $cpid
status=0
wait $cpid || status=$?
id=$(sed -n 's/^started //p' "$out/ts-cancel.err" | head -n 1)
i=0
until grep -q "^aborted $id\$" "$out/ts-cancel.err" 2>/dev/null || [ $i -ge 100 ]; do
	i=$((i + 1))
	sleep 0.05
done
if [ "$status" = 130 ] && grep -q "^aborted $id\$" "$out/ts-cancel.err"; then
	echo "ok   cancelled: mcp-call exited 130, the TS server aborted request $id"
else
	echo "FAIL cancelled: exit $status; server said: $(cat "$out/ts-cancel.err")"
	fail=1
fi

echo "=== the TypeScript SDK server: killed mid-call"
rm -f "$pidfile" "$out/ts-kill.err"
TS_SERVER_PIDFILE=$pidfile "$call" --stdio "'$node' '$ts' 2>'$out/ts-kill.err'" \
	call slow '{"ms":60000}' >"$out/kill.out" 2>"$out/kill.err" &
cpid=$!
i=0
until grep -q '^started' "$out/ts-kill.err" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 400 ] || { echo "check-client: the TS server never started the call"; fail=1; break; }
	sleep 0.05
done
kill -KILL "$(cat "$pidfile")"
status=0
wait $cpid || status=$?
if [ "$status" = 3 ] && grep -q 'killed by signal 9' "$out/kill.err"; then
	echo "ok   killed: mcp-call failed the call: $(cat "$out/kill.err")"
else
	echo "FAIL killed: exit $status; $(cat "$out/kill.err")"
	fail=1
fi

echo "=== the TypeScript SDK server over HTTP+SSE (2024-11-05)"
sse_server="$prefix/ts-sse-server.mjs"
sse="$build/tests/client/sse-check"
sse_passed=0
sse_failed=0
# (a condition is `COND && r=0 || r=1`: under set -e a failing COND must
# not end the script)
verdict() { # verdict 0|1 WHAT: one line, counted
	if [ "$1" = 0 ]; then
		echo "ok   $2"
		sse_passed=$((sse_passed + 1))
	else
		echo "FAIL $2"
		sse_failed=$((sse_failed + 1))
		fail=1
	fi
}
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# start_sse NAME [VAR=VALUE...]: the server in the background ($sse_pid,
# $sse_url), ready when it says "listening".
start_sse() {
	name=$1
	shift
	p=$(free_port)
	env "$@" PORT="$p" "$node" "$sse_server" >"$out/$name.log" 2>"$out/$name.err" &
	sse_pid=$!
	sse_url="http://127.0.0.1:$p"
	i=0
	until grep -q '^listening' "$out/$name.log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "check-client: the HTTP+SSE server did not start"; exit 1; }
		sleep 0.05
	done
}
stop_sse() {
	kill "$sse_pid" 2>/dev/null || :
	wait "$sse_pid" 2>/dev/null || :
}
trap 'kill $sse_pid 2>/dev/null || :' EXIT

start_sse sse
st=0
"$sse" "$sse_url/sse" >"$out/sse-check.txt" 2>&1 || st=$?
sed 's/^/    /' "$out/sse-check.txt"
verdict $st "sse-check: mcp_client over HTTP+SSE, reached by the fallback"
cancelled=$(sed -n 's/^cancelled request //p' "$out/sse-check.txt")
i=0
until grep -q "^aborted $cancelled\$" "$out/sse.err" 2>/dev/null || [ $i -ge 100 ]; do
	i=$((i + 1))
	sleep 0.05
done
grep -q "^aborted $cancelled\$" "$out/sse.err" && r=0 || r=1
verdict $r "the TS server aborted the cancelled request $cancelled"

st=0
"$call" --verbose --http "$sse_url/sse" call echo '{"text":"by fallback"}' \
	>"$out/sse-auto.out" 2>"$out/sse-auto.err" || st=$?
[ $st = 0 ] && grep -q 'by fallback' "$out/sse-auto.out" &&
	grep -q 'connected over HTTP+SSE' "$out/sse-auto.err" && r=0 || r=1
verdict $r "mcp-call --http URL/sse: falls back to HTTP+SSE (exit $st: $(cat "$out/sse-auto.err"))"

st=0
"$call" --verbose --era 2024-11-05 --http "$sse_url/sse" call echo '{"text":"first revision"}' \
	>"$out/sse-2024.out" 2>"$out/sse-2024.err" || st=$?
[ $st = 0 ] && grep -q 'first revision' "$out/sse-2024.out" &&
	grep -q 'connected over HTTP+SSE.*protocol 2024-11-05' "$out/sse-2024.err" && r=0 || r=1
verdict $r "mcp-call --era 2024-11-05: the SDK server agrees on 2024-11-05 over HTTP+SSE (exit $st: $(cat "$out/sse-2024.err"))"

st=0
"$call" --verbose --transport sse --http "$sse_url/sse" call progress '{"steps":2}' \
	>"$out/sse-forced.out" 2>"$out/sse-forced.err" || st=$?
[ $st = 0 ] && grep -q 'done 2' "$out/sse-forced.out" && grep -q 'progress 2/2' "$out/sse-forced.err" &&
	grep -q 'did 2 steps' "$out/sse-forced.err" && r=0 || r=1
verdict $r "mcp-call --transport sse: progress and log messages shown (exit $st)"

st=0
"$call" --transport streamable --http "$sse_url/sse" ping >/dev/null 2>"$out/sse-streamable.err" || st=$?
[ $st = 3 ] && grep -q 'HTTP status 405' "$out/sse-streamable.err" &&
	! grep -q 'HTTP+SSE' "$out/sse-streamable.err" && r=0 || r=1
verdict $r "mcp-call --transport streamable: fails, naming the 405 (exit $st: $(cat "$out/sse-streamable.err"))"

st=0
"$call" --transport sse --http "$sse_url/evil/sse" ping >/dev/null 2>"$out/sse-evil.err" || st=$?
[ $st = 3 ] && grep -q 'another origin' "$out/sse-evil.err" && r=0 || r=1
verdict $r "an endpoint of another origin is refused (exit $st: $(cat "$out/sse-evil.err"))"

st=0
"$call" --transport sse --http "$sse_url/broken/sse" ping >/dev/null 2>"$out/sse-broken.err" || st=$?
[ $st = 3 ] && grep -q 'HTTP status 404 for the POST to the endpoint (not found)' "$out/sse-broken.err" && r=0 || r=1
verdict $r "a POST refused with 404 fails its request, naming it (exit $st: $(cat "$out/sse-broken.err"))"
stop_sse

start_sse sse404 TS_SSE_POST_STATUS=404
st=0
"$call" --verbose --http "$sse_url/sse" ping >/dev/null 2>"$out/sse-404.err" || st=$?
[ $st = 0 ] && grep -q 'connected over HTTP+SSE' "$out/sse-404.err" && r=0 || r=1
verdict $r "a 404 to the Streamable HTTP POST falls back too (exit $st)"
stop_sse

token=s3cret-sse-token-$$
start_sse sse-bearer TS_SSE_BEARER=$token
st=0
"$sse" --bearer "$token" "$sse_url/sse" >"$out/sse-bearer.txt" 2>&1 || st=$?
verdict $st "sse-check with a bearer token on the GET and every POST"
st=0
"$call" --http "$sse_url/sse" ping >/dev/null 2>"$out/sse-nobearer.err" || st=$?
[ $st = 3 ] && grep -q 'HTTP status 401' "$out/sse-nobearer.err" &&
	! grep -q 'HTTP+SSE' "$out/sse-nobearer.err" && r=0 || r=1
verdict $r "without the token: 401, and no fallback (exit $st: $(cat "$out/sse-nobearer.err"))"
st=0
"$call" --transport sse --http "$sse_url/sse" ping >/dev/null 2>"$out/sse-nobearer-get.err" || st=$?
[ $st = 3 ] && grep -q 'HTTP 401' "$out/sse-nobearer-get.err" && r=0 || r=1
verdict $r "without the token, forced: the GET's 401 is named (exit $st: $(cat "$out/sse-nobearer-get.err"))"
! grep -l -e "$token" "$out"/sse* >/dev/null && r=0 || r=1
verdict $r "the bearer token appears in no output"
stop_sse

start_sse sse-kill
st=0
"$sse" --kill "$sse_pid" "$sse_url/sse" >"$out/sse-kill.txt" 2>&1 || st=$?
sed 's/^/    /' "$out/sse-kill.txt"
verdict $st "sse-check --kill: the server killed mid-call fails every waiting call"
wait "$sse_pid" 2>/dev/null || :

down="http://127.0.0.1:$(free_port)/sse"
st=0
"$call" --http "$down" ping >/dev/null 2>"$out/sse-down.err" || st=$?
[ $st = 3 ] && grep -qi "couldn't connect" "$out/sse-down.err" && ! grep -q 'HTTP+SSE' "$out/sse-down.err" && r=0 || r=1
verdict $r "a server that is down fails at once, without a fallback (exit $st: $(cat "$out/sse-down.err"))"
trap - EXIT
echo "HTTP+SSE: $sse_passed passed, $sse_failed failed"

echo
grep -h '^reference-check' "$out/stdio.txt" "$out/http.txt" || :
[ "$fail" = 0 ] || { echo "check-client: FAILED (see $out)"; exit 1; }
echo "check-client: passed"
