#!/bin/sh
# install.sh BUILD_DIR SRC_DIR: makes BUILD_DIR/.client-node hold exactly the
# Node and packages pinned in tests/client/package.json and package-lock.json
# (npm ci, redone when the pins change), and copies the scripts there (they
# resolve the packages from their own location: VPATH builds).  Prints the
# prefix as the last line.  Exits 77 when npm or the registry is missing.
set -eu
build=$1
src=$2
here="$src/tests/client"
prefix="$build/.client-node"
. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit client "$prefix" "$here" node_modules/.bin/node \
	node_modules/@modelcontextprotocol/server-everything/package.json
cp "$here/ts-server.mjs" "$here/ts-sse-server.mjs" "$prefix/"
echo "$prefix"
