#!/bin/sh
# run-server.sh - one short MCP session with a server binary over real pipes.
#
#   run-server.sh SERVER TOOL ARGS_JSON EXPECTED_TEXT
#
# Sends initialize, notifications/initialized and tools/call TOOL ARGS_JSON,
# keeps standard input open until the call is answered (end of input would
# cancel a running handler), then closes it and checks: the initialize answer
# names the latest revision, the call's answer is a result whose text
# contains EXPECTED_TEXT, standard output holds only those JSON-RPC lines
# (progress notifications aside), and the server exits 0 after its orderly
# shutdown.  The environment (LD_LIBRARY_PATH, ...) is passed through.
set -eu
me=run-server.sh
server=${1:?usage: run-server.sh SERVER TOOL ARGS_JSON EXPECTED_TEXT}
tool=${2:?}
args=${3:?}
expect=${4:?}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run-server.XXXXXX")
pid=
cleanup() {
	if test -n "$pid"; then kill "$pid" 2>/dev/null || :; fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

mkfifo "$tmp/in"
"$server" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" &
pid=$!
exec 3>"$tmp/in"
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"run-server.sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"$tool\",\"arguments\":$args,\"_meta\":{\"progressToken\":\"p\"}}}" >&3

# Up to 20 s for the answer to id 2.
i=0
while ! grep -q '"id": *2[,}]' "$tmp/out"; do
	i=$((i + 1))
	if test "$i" -gt 200 || ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
exec 3>&-
rc=0
wait "$pid" || rc=$?
pid=

fail=0
problem() {
	echo "$me: $server: $*" >&2
	fail=1
}
if ! grep -q '"id": *1,.*"result".*"protocolVersion": *"2025-11-25"' "$tmp/out"; then
	problem "no initialize result for 2025-11-25"
fi
answer=$(grep '"id": *2[,}]' "$tmp/out" || :)
if test -z "$answer"; then
	problem "no answer to tools/call $tool"
elif ! printf '%s\n' "$answer" | grep -q '"result"'; then
	problem "tools/call $tool failed: $answer"
elif ! printf '%s\n' "$answer" | grep -qF "$expect"; then
	problem "tools/call $tool: \"$expect\" not in $answer"
fi
if grep -v '^{"jsonrpc": *"2.0",' "$tmp/out" >"$tmp/junk"; then
	problem "standard output carries more than JSON-RPC lines:"
	cat "$tmp/junk" >&2
fi
if test "$rc" != 0; then
	problem "exit status $rc after end of input"
fi
if test "$fail" != 0; then
	echo "$me: standard output:" >&2
	cat "$tmp/out" >&2
	echo "$me: standard error:" >&2
	cat "$tmp/err" >&2
	exit 1
fi
echo "$me: $server: $tool answered: $(printf '%s\n' "$answer" | cut -c1-200)"
