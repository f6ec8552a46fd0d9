#!/bin/sh
# run.sh BUILD_DIR SRC_DIR [SERVER_ARGS...]: the official MCP TypeScript SDK
# client drives $BUILD_DIR/examples/mcp-everything over stdio, over
# Streamable HTTP and over the legacy HTTP+SSE transport, and so does the MCP
# Inspector CLI over HTTP+SSE (make check-interop).
#
# Node 22 and the SDK, at the versions pinned in tests/interop/package.json
# (and package-lock.json), are installed with npm into $BUILD_DIR/.interop-node
# once by install.sh, and reinstalled only when the pins change.  Exits 77
# (skip) when npm is missing or the registry cannot be reached.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 BUILD_DIR SRC_DIR [SERVER_ARGS...]" >&2
	exit 2
fi
build=$1
src=$2
shift 2

here="$src/tests/interop"
server="$build/examples/mcp-everything"

if [ ! -f "$here/stdio-client.mjs" ] || [ ! -f "$here/http-client.mjs" ]; then
	echo "check-interop: $here does not hold the interop clients" >&2
	exit 2
fi
if [ ! -x "$server" ]; then
	echo "check-interop: $server is not built" >&2
	exit 1
fi

rc=0
out=$(sh "$here/install.sh" "$build" "$src") || rc=$?
if [ $rc -ne 0 ]; then
	printf '%s\n' "$out" | sed 's/^interop:/check-interop:/'
	exit $rc
fi
printf '%s\n' "$out" | sed -n '$!p' | sed 's/^interop:/check-interop:/'
prefix=$(printf '%s\n' "$out" | tail -n 1)
node="$prefix/node_modules/.bin/node"

sdk_version=$(sed -n 's|^[ 	]*"version"[ 	]*:[ 	]*"\([^"]*\)".*|\1|p' \
	"$prefix/node_modules/@modelcontextprotocol/sdk/package.json" | head -n 1)
echo "check-interop: Node $("$node" --version), @modelcontextprotocol/sdk $sdk_version, server $server"
MCP_EVERYTHING=$server
export MCP_EVERYTHING
# The core client over stdio (tools, progress, cancel, close), the rest of
# the surface over stdio (resources, prompts, completion, logging, sampling,
# elicitation, roots), then the core client over Streamable HTTP (SSE and
# JSON-only servers, sessions, DELETE), then the legacy HTTP+SSE transport
# (the SDK's client and the Inspector CLI); all must pass.
rc=0
echo "# stdio: stdio-client.mjs"
"$node" "$prefix/stdio-client.mjs" "$server" "$@" || rc=1
echo "# stdio: surface-client.mjs"
"$node" "$prefix/surface-client.mjs" "$server" || rc=1
echo "# Streamable HTTP: http-client.mjs"
"$node" "$prefix/http-client.mjs" "$server" "$@" || rc=1
# The legacy HTTP+SSE transport (2024-11-05): the SDK's SSEClientTransport,
# then the MCP Inspector CLI with --transport sse.
inspector_version=$(sed -n 's|^[ 	]*"version"[ 	]*:[ 	]*"\([^"]*\)".*|\1|p' \
	"$prefix/node_modules/@modelcontextprotocol/inspector-cli/package.json" | head -n 1)
echo "# HTTP+SSE: sse-client.mjs (SDK $sdk_version, @modelcontextprotocol/inspector-cli $inspector_version)"
"$node" "$prefix/sse-client.mjs" "$server" "$@" || rc=1
exit $rc
