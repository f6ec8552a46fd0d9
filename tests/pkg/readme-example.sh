#!/bin/sh
# readme-example.sh - the README's "A first server" compiles and works.
#
#   readme-example.sh SRCDIR BUILDDIR   (make check: from the environment)
#
# Takes the first ```c block after that heading, compiles it against the
# source tree's headers and the built libmcp.so (C99 -pedantic -Werror, as
# a user would), and runs it over pipes with tests/pkg/run-server.sh: the
# greet tool must answer "Hello,".  So the example a newcomer copies first
# cannot go stale when the API changes.
set -eu
me=readme-example.sh
srcdir=${1:-${MCP_SRCDIR:-}}
builddir=${2:-${MCP_BUILDDIR:-.}}
if test -z "$srcdir"; then
	echo "usage: $me SRCDIR [BUILDDIR]" >&2
	exit 2
fi
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "$me: SKIP: no C compiler ($cc)"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/readme-example.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

awk '/^## A first server/ { want = 1; next }
     want && /^```c$/ { inblock = 1; next }
     inblock && /^```$/ { exit }
     inblock { print }' "$srcdir/README.md" >"$tmp/greet.c"
if ! test -s "$tmp/greet.c"; then
	echo "$me: no \`\`\`c block after \"## A first server\" in README.md" >&2
	exit 1
fi
lines=$(wc -l <"$tmp/greet.c" | tr -d ' ')
# shellcheck disable=SC2046
# A sanitizer build's library needs the program linked with the sanitizer.
if ! "$cc" -std=c99 -pedantic -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L \
	${MCP_SAN_CFLAGS:-} -I"$srcdir/api" $(pkg-config --cflags json-c) -o "$tmp/greet" \
	"$tmp/greet.c" -L"$builddir/.libs" -lmcp $(pkg-config --libs json-c) \
	${MCP_SAN_LDFLAGS:-} 2>"$tmp/cc.err"; then
	cat "$tmp/cc.err" >&2
	echo "$me: the README's example ($lines lines) does not compile" >&2
	exit 1
fi
LD_LIBRARY_PATH=$builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	sh "$srcdir/tests/pkg/run-server.sh" "$tmp/greet" greet '{"name":"reader"}' 'Hello,'
echo "$me: the README's example ($lines lines) compiles and answers"
