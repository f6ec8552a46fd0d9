#!/bin/sh
# run.sh BUILD_DIR SRC_DIR [HTTP]: make check-auth.  Installs Node and the
# jose package pinned in tests/auth/package.json (and its lock) into
# BUILD_DIR/.auth-node with npm ci when they are missing or the pins
# changed, has make-tokens.mjs write fresh keys, a JWKS and tokens, and runs
# tests/unit/test_auth on them (MCP_AUTH_VECTORS), which checks each verdict
# and prints the table of statuses and challenges.  With HTTP "yes" (the
# build has the HTTP transport) it then makes fresh vectors again and runs
# tests/http/test_auth_http.py with them against mcp-everything --http over
# real sockets: every token again, sessions bound to their principal,
# scopes, step-up, hijack, the rate limit per principal.
#
# Exits 0 when every case passed, 77 (skip) when npm is missing or the
# registry cannot be reached, 1 or 2 on failures.
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 BUILD_DIR SRC_DIR [HTTP]" >&2
	exit 2
fi
build=$1
src=$2
http=${3:-no}
here="$src/tests/auth"
prefix="$build/.auth-node"
node="$prefix/node_modules/.bin/node"
test_bin="$build/tests/unit/test_auth"

pin() {
	sed -n "s|^[ 	]*\"$1\"[ 	]*:[ 	]*\"\([^\"]*\)\".*|\1|p" "$here/package.json" | head -n 1
}
jose_pin=$(pin jose)
node_pin=$(pin node)
if [ -z "$jose_pin" ] || [ -z "$node_pin" ]; then
	echo "check-auth: no pinned jose and node versions in $here/package.json" >&2
	exit 2
fi
if [ ! -x "$test_bin" ]; then
	echo "check-auth: $test_bin is not built (make check builds it; Check is needed)" >&2
	exit 2
fi

. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit check-auth "$prefix" "$here" node_modules/.bin/node \
	node_modules/jose/package.json

# The script resolves jose from its own location.
cp "$here/make-tokens.mjs" "$prefix/"
vectors="$build/tests/auth/vectors.json"
mkdir -p "$build/tests/auth"
"$node" "$prefix/make-tokens.mjs" >"$vectors"
echo "check-auth: $(grep -c '"name"' "$vectors") cases made by jose $jose_pin; verifying"
rc=0
MCP_AUTH_VECTORS="$vectors" "$test_bin" || rc=1
if [ "$http" = yes ]; then
	# Made again just before: a few cases sit seconds from their limits
	# (a token that expired 30 s ago, within the 60 s skew).
	"$node" "$prefix/make-tokens.mjs" >"$vectors"
	echo "check-auth: the same tokens and more over HTTP (tests/http/test_auth_http.py)"
	MCP_AUTH_VECTORS="$vectors" MCP_EVERYTHING="$build/examples/mcp-everything" \
		python3 "$src/tests/http/test_auth_http.py" || rc=1
fi
exit $rc
