#!/bin/sh
# run.sh BUILD_DIR SRC_DIR: runs the official MCP conformance suite
# (@modelcontextprotocol/conformance 0.1.16, every scenario including the
# pending ones) against mcp-everything --http on a free loopback port
# (make check-conformance).  Node 22 and the suite are installed from npm
# into the build tree once.  Exits 77 (skip) when npm cannot provide them.
set -eu
build=$1
src=$2

if ! command -v npm >/dev/null 2>&1; then
	echo "check-conformance: npm is needed to install the suite"
	exit 77
fi
prefix="$build/.conformance-node"
if [ ! -x "$prefix/node_modules/.bin/conformance" ] ||
   ! cmp -s "$src/tests/conformance/package.json" "$prefix/package.json"; then
	mkdir -p "$prefix"
	cp "$src/tests/conformance/package.json" "$prefix/package.json"
	if ! (cd "$prefix" && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1); then
		echo "check-conformance: npm install failed (is the registry reachable?)"
		exit 77
	fi
fi
PATH="$prefix/node_modules/.bin:$PATH"
export PATH

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/examples/mcp-everything" --http "127.0.0.1:$port" 2>"$build/conformance-server.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
i=0
until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "check-conformance: server did not start"; exit 1; }
	sleep 0.05
done

out="$build/conformance.out"
rc=0
conformance server --url "http://127.0.0.1:$port/mcp" --suite all >"$out" 2>&1 || rc=$?
grep -E '^(✓|✗)|^Total' "$out" || true
kill -TERM $pid
wait $pid || { echo "check-conformance: server did not exit cleanly"; rc=1; }
trap - EXIT
total=$(grep '^Total' "$out" || true)
case "$total" in
*" 0 failed"*) [ $rc -eq 0 ] || { echo "suite exit status $rc"; exit 1; } ;;
*) echo "check-conformance: failures (see $out)"; exit 1 ;;
esac
