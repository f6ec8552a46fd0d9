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

echo
grep -h '^reference-check' "$out/stdio.txt" "$out/http.txt" || :
[ "$fail" = 0 ] || { echo "check-client: FAILED (see $out)"; exit 1; }
echo "check-client: passed"
