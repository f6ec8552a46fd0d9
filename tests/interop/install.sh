#!/bin/sh
# install.sh BUILD_DIR SRC_DIR: makes $BUILD_DIR/.interop-node hold exactly
# the Node and @modelcontextprotocol/sdk pinned in tests/interop/package.json
# (and package-lock.json), installing them with npm when they are missing or
# the pins changed, and copies the client scripts next to node_modules (they
# resolve the SDK from their own location, and the source tree may be
# elsewhere: VPATH builds).  Used by run.sh (make check-interop) and by
# tests/nginx/run.sh.
#
# Exits 0 when ready, 77 (skip) when npm is missing or the registry cannot
# be reached, 1 or 2 on other failures.  The prefix is printed as the last
# line of standard output.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD_DIR SRC_DIR" >&2
	exit 2
fi
build=$1
src=$2

here="$src/tests/interop"
prefix="$build/.interop-node"

if [ ! -f "$here/package.json" ]; then
	echo "interop: $here holds no package.json" >&2
	exit 2
fi

# The pinned versions, read from package.json ("name": "version" lines).
pin() {
	sed -n "s|^[ 	]*\"$1\"[ 	]*:[ 	]*\"\([^\"]*\)\".*|\1|p" "$here/package.json" | head -n 1
}
sdk_pin=$(pin '@modelcontextprotocol/sdk')
node_pin=$(pin node)
if [ -z "$sdk_pin" ] || [ -z "$node_pin" ]; then
	echo "interop: no pinned @modelcontextprotocol/sdk and node versions in $here/package.json" >&2
	exit 2
fi

. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit interop "$prefix" "$here" node_modules/.bin/node \
	node_modules/@modelcontextprotocol/sdk/package.json

cp "$here/stdio-client.mjs" "$here/surface-client.mjs" "$here/http-client.mjs" \
	"$here/sse-client.mjs" "$prefix/"
echo "$prefix"
