#!/bin/sh
# staged-greeter.sh - builds and runs tests/pkg/greeter.c against a libmcp
# installed into a staging root, using nothing but pkg-config.
#
#   staged-greeter.sh SRCDIR ROOT LIBDIR
#
# ROOT is a DESTDIR (make install) or a dpkg -x root; LIBDIR is the library
# directory as installed (/usr/local/lib, /usr/lib/x86_64-linux-gnu), so the
# .pc file is ROOT/LIBDIR/pkgconfig/libmcp.pc.  pkg-config's sysroot maps the
# .pc file's paths into ROOT.  Then the greeter (C, -std=c99 -pedantic
# -Werror) and a C++ program that includes <mcp/mcp.h> are built and run;
# the dynamic loader must find libmcp.so.0 under ROOT.  CC, CXX, CFLAGS and
# LDFLAGS (sanitizer builds) are honoured.
set -eu
me=staged-greeter.sh
srcdir=${1:?usage: staged-greeter.sh SRCDIR ROOT LIBDIR}
root=${2:?}
libdir=${3:?}
CC=${CC:-cc}
CXX=${CXX:-c++}

if ! command -v pkg-config >/dev/null 2>&1; then
	echo "$me: pkg-config not found" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/staged-greeter.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# Only the staged .pc directory plus the system's (json-c): no source tree.
PKG_CONFIG_PATH=$root$libdir/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
if ! test -f "$root$libdir/pkgconfig/libmcp.pc"; then
	echo "$me: $root$libdir/pkgconfig/libmcp.pc is not installed" >&2
	exit 1
fi
flags=$(pkg-config --cflags --libs libmcp)
echo "$me: pkg-config --cflags --libs libmcp: $flags"
case " $flags " in
*" -I$root"*" -L$root"*) ;;
*)
	echo "$me: the flags do not point into $root" >&2
	exit 1
	;;
esac

# The installed header must be self-sufficient and warning-free.
# shellcheck disable=SC2086 # $flags, $CFLAGS and $LDFLAGS are word lists
$CC -std=c99 -pedantic -Wall -Wextra -Werror ${CFLAGS:-} \
	-o "$tmp/greeter" "$srcdir/tests/pkg/greeter.c" $flags ${LDFLAGS:-}
echo "$me: built greeter"

LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
# The library the loader picks must be the staged one, not another install.
loaded=$(ldd "$tmp/greeter" | awk '$1 == "libmcp.so.0" { print $3 }')
case $loaded in
"$root"/*) echo "$me: libmcp.so.0 => $loaded" ;;
*)
	echo "$me: greeter loads libmcp.so.0 from '${loaded:-nowhere}', not from $root" >&2
	ldd "$tmp/greeter" >&2
	exit 1
	;;
esac

sh "$srcdir/tests/pkg/run-server.sh" "$tmp/greeter" greet '{"name":"packager"}' 'Hello, packager!'

# C++: the header's extern "C" block and its types must compile as C++.
if command -v "$CXX" >/dev/null 2>&1; then
	cat >"$tmp/cxx.cc" <<'EOF'
#include <mcp/mcp.h>
#include <mcp/client.h>
#include <cstdio>
#include <cstring>
int main()
{
	mcp_server *srv = mcp_server_new("cxx", "1");
	if (!srv || !mcp_protocol_supported(MCP_PROTOCOL_LATEST))
		return 1;
	mcp_client *cl = mcp_client_new("cxx", "1");
	if (!cl || mcp_client_set_era(cl, MCP_ERA_LEGACY) != MCP_OK)
		return 1;
	mcp_client_free(cl);
	std::printf("%s\n", mcp_strerror(MCP_EINVAL));
	mcp_server_free(srv);
	return std::strcmp(mcp_cancel_reason_name(MCP_CANCEL_PEER), "peer_cancelled") != 0;
}
EOF
	# shellcheck disable=SC2086
	$CXX -Wall -Wextra -Werror ${CXXFLAGS:-${CFLAGS:-}} -o "$tmp/cxx" "$tmp/cxx.cc" $flags ${LDFLAGS:-}
	"$tmp/cxx" >/dev/null
	echo "$me: C++ program built and ran"
else
	echo "$me: $CXX not found; C++ check skipped"
fi
