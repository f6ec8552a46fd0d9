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
limited() {
	if command -v timeout >/dev/null 2>&1; then timeout "$@"; else shift; "$@"; fi
}
installed() {
	[ -x "$prefix/node_modules/.bin/node" ] || return 1
	[ -f "$prefix/node_modules/@modelcontextprotocol/server-everything/package.json" ] || return 1
	cmp -s "$here/package.json" "$prefix/package.json" || return 1
	cmp -s "$here/package-lock.json" "$prefix/package-lock.json.pinned" || return 1
}
if ! installed; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "client: SKIP: npm is not installed"
		exit 77
	fi
	if ! limited 120 npm view @modelcontextprotocol/server-everything version >/dev/null 2>&1; then
		echo "client: SKIP: the npm registry is not reachable"
		exit 77
	fi
	echo "client: installing the pinned Node 22 and MCP packages into $prefix"
	rm -rf "$prefix"
	mkdir -p "$prefix"
	cp "$here/package.json" "$here/package-lock.json" "$prefix/"
	if ! (cd "$prefix" && limited 900 npm ci --no-audit --no-fund --loglevel=error); then
		echo "client: FAIL: npm ci into $prefix failed" >&2
		exit 1
	fi
	cp "$here/package-lock.json" "$prefix/package-lock.json.pinned"
	installed || { echo "client: FAIL: $prefix does not hold the pins after npm ci" >&2; exit 1; }
fi
cp "$here/ts-server.mjs" "$here/ts-sse-server.mjs" "$prefix/"
echo "$prefix"
