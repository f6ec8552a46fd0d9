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
node="$prefix/node_modules/.bin/node"
sdk_json="$prefix/node_modules/@modelcontextprotocol/sdk/package.json"

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

# Is what the prefix holds exactly what is pinned?
installed() {
	[ -x "$node" ] || return 1
	[ "$("$node" --version 2>/dev/null || :)" = "v$node_pin" ] || return 1
	[ -f "$sdk_json" ] || return 1
	have=$(sed -n 's|^[ 	]*"version"[ 	]*:[ 	]*"\([^"]*\)".*|\1|p' "$sdk_json" | head -n 1)
	[ "$have" = "$sdk_pin" ] || return 1
	cmp -s "$here/package.json" "$prefix/package.json" || return 1
	if [ -f "$here/package-lock.json" ]; then
		cmp -s "$here/package-lock.json" "$prefix/package-lock.json.pinned" || return 1
	fi
	return 0
}

# Runs its arguments with a time limit when timeout(1) is there.
limited() {
	if command -v timeout >/dev/null 2>&1; then
		timeout "$@"
	else
		shift
		"$@"
	fi
}

if ! installed; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "interop: SKIP: npm is not installed (needed to install Node $node_pin and @modelcontextprotocol/sdk $sdk_pin)"
		exit 77
	fi
	if ! limited 120 npm view "@modelcontextprotocol/sdk@$sdk_pin" version >/dev/null 2>&1; then
		echo "interop: SKIP: the npm registry is not reachable (npm view @modelcontextprotocol/sdk@$sdk_pin failed; offline, or that version is not there)"
		exit 77
	fi
	echo "interop: installing Node $node_pin and @modelcontextprotocol/sdk $sdk_pin into $prefix"
	rm -rf "$prefix"
	mkdir -p "$prefix"
	cp "$here/package.json" "$prefix/package.json"
	if [ -f "$here/package-lock.json" ]; then
		cp "$here/package-lock.json" "$prefix/package-lock.json"
		npm_cmd=ci
	else
		npm_cmd=install
	fi
	if ! (cd "$prefix" && limited 900 npm "$npm_cmd" --no-audit --no-fund --loglevel=error); then
		echo "interop: FAIL: npm $npm_cmd into $prefix failed" >&2
		exit 1
	fi
	# npm may rewrite the lock it installed from; keep the pinned one to compare.
	if [ -f "$here/package-lock.json" ]; then
		cp "$here/package-lock.json" "$prefix/package-lock.json.pinned"
	fi
	if ! installed; then
		echo "interop: FAIL: after npm $npm_cmd, $prefix does not hold Node $node_pin and SDK $sdk_pin" >&2
		exit 1
	fi
fi

cp "$here/stdio-client.mjs" "$here/surface-client.mjs" "$here/http-client.mjs" \
	"$here/sse-client.mjs" "$prefix/"
echo "$prefix"
