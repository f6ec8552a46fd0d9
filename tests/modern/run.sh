#!/bin/sh
# run.sh BUILD_DIR SRC_DIR: the official MCP TypeScript client v2
# (@modelcontextprotocol/client, pinned in package.json; it speaks the
# stateless 2026-07-28 era and falls back to 2025-11-25) against
# $BUILD_DIR/examples/mcp-everything over stdio and Streamable HTTP, in both
# eras (make check-modern).  Node 22 and the client are installed with npm
# into $BUILD_DIR/.modern-node once, and again only when the pins change.
# Exits 77 (skip) when npm or the registry is not available.
set -eu
build=$1
src=$2
here="$src/tests/modern"
prefix="$build/.modern-node"
. "$src/tests/lib/npm-prefix.sh"
npm_prefix_or_exit check-modern "$prefix" "$here" node_modules/.bin/node
# The script runs from the prefix so that its imports resolve there.
cp "$here/client.mjs" "$prefix/client.mjs"
cd "$prefix"
exec ./node_modules/.bin/node client.mjs "$build/examples/mcp-everything"
