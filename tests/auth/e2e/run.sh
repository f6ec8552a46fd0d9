#!/bin/sh
# run.sh BUILD_DIR SRC_DIR: make check-auth-e2e.  Installs Node and the
# packages pinned in tests/auth/e2e/package.json and package-lock.json (the
# MCP TypeScript SDK and oauth2-mock-server) into BUILD_DIR/.auth-e2e-node
# with npm ci when they are missing or the pins changed, then runs
# client.mjs, which starts the authorization server and mcp-everything
# --http --auth-* on loopback ports the OS picks and drives the SDK client's
# OAuth flow through them (see the top of client.mjs), then rotation.mjs,
# which rotates the authorization server's key mid-run, then mcp-call.mjs,
# which drives the real mcp-call --oauth headless against the same peers
# (first use, cache, refresh, step-up, revoked refresh token, a token kept
# for another resource).
#
# Exits 0 when every step passed, 77 (skip) when npm is missing or the
# registry cannot be reached, 1 or 2 on failures.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD_DIR SRC_DIR" >&2
	exit 2
fi
build=$1
src=$2
here="$src/tests/auth/e2e"
prefix="$build/.auth-e2e-node"
node="$prefix/node_modules/.bin/node"
bin="$build/examples/mcp-everything"
call="$build/examples/mcp-call"

pin() {
	sed -n "s|^[ 	]*\"$1\"[ 	]*:[ 	]*\"\([^\"]*\)\".*|\1|p" "$here/package.json" | head -n 1
}
sdk_pin=$(pin '@modelcontextprotocol/sdk')
mock_pin=$(pin oauth2-mock-server)
node_pin=$(pin node)
if [ -z "$sdk_pin" ] || [ -z "$mock_pin" ] || [ -z "$node_pin" ]; then
	echo "check-auth-e2e: no pinned SDK, oauth2-mock-server and node versions in $here/package.json" >&2
	exit 2
fi
if [ ! -x "$bin" ]; then
	echo "check-auth-e2e: $bin is not built" >&2
	exit 2
fi

. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit check-auth-e2e "$prefix" "$here" node_modules/.bin/node \
	node_modules/@modelcontextprotocol/sdk/package.json \
	node_modules/oauth2-mock-server/package.json

# The scripts resolve their packages from their own location.
cp "$here/common.mjs" "$here/client.mjs" "$here/rotation.mjs" "$here/mcp-call.mjs" "$prefix/"
log="$build/tests/auth/e2e-server.log"
mkdir -p "$build/tests/auth"
# Bounded: every wait inside is bounded too; this is the backstop.
rc=0
npm_prefix_limited 300 "$node" "$prefix/client.mjs" --server "$bin" --log "$log" || rc=$?
# The key rotation at the authorization server, seen with no reload
# (mcp-everything --auth-jwks-discover).
echo
echo "check-auth-e2e: key rotation (rotation.mjs)"
npm_prefix_limited 300 "$node" "$prefix/rotation.mjs" --server "$bin" || rc=$?
# mcp-call --oauth itself, the person played by the script.  It waits for
# tokens to expire twice (about 110 s in all), hence the larger backstop.
echo
echo "check-auth-e2e: mcp-call --oauth (mcp-call.mjs)"
if ! grep -q '^#define HAVE_CURL 1' "$build/config.h" 2>/dev/null; then
	echo "check-auth-e2e: SKIP: mcp-call.mjs (built without libcurl: no OAuth in mcp-call)"
elif [ ! -x "$call" ]; then
	echo "check-auth-e2e: FAIL: $call is not built" >&2
	rc=1
else
	npm_prefix_limited 400 "$node" "$prefix/mcp-call.mjs" --server "$bin" --mcp-call "$call" \
		--log "$build/tests/auth/e2e-mcp-call-server.log" || rc=$?
fi
exit $rc
