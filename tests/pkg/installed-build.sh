#!/bin/sh
# installed-build.sh - make check-installed: install into a scratch DESTDIR,
# check what was installed, build the greeter against it with pkg-config
# only and run it, run the installed mcp-everything, then uninstall and
# check that nothing is left.
#
#   installed-build.sh SRCDIR BUILDDIR
#
# The installation directories come from the environment, as configure set
# them (the make target passes them): MCP_LIBDIR, MCP_INCLUDEDIR, MCP_BINDIR,
# MCP_MANDIR, MCP_DOCDIR; MAKE is the make to call.
set -eu
me=installed-build.sh
srcdir=${1:?usage: installed-build.sh SRCDIR BUILDDIR}
builddir=${2:?}
: "${MCP_LIBDIR:?}" "${MCP_INCLUDEDIR:?}" "${MCP_BINDIR:?}" "${MCP_MANDIR:?}" "${MCP_DOCDIR:?}"
MAKE=${MAKE:-make}
srcdir=$(cd "$srcdir" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-installed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
root=$tmp/root

echo "$me: make install DESTDIR=$root"
if ! $MAKE -C "$builddir" install DESTDIR="$root" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	echo "$me: make install failed" >&2
	exit 1
fi

fail=0
problem() {
	echo "$me: $*" >&2
	fail=1
}

# ---- what is installed ----------------------------------------------------
test -f "$root$MCP_INCLUDEDIR/mcp/mcp.h" || problem "$MCP_INCLUDEDIR/mcp/mcp.h not installed"
headers=$(cd "$root" && find ".$MCP_INCLUDEDIR" -type f | sed 's,^\.,,' | sort)
if test "$headers" != "$(printf '%s\n' "$MCP_INCLUDEDIR/mcp/client.h" "$MCP_INCLUDEDIR/mcp/mcp.h")"; then
	problem "headers other than <mcp/mcp.h> and <mcp/client.h> are installed (private headers must not be):"
	printf '%s\n' "$headers" | sed 's/^/  /' >&2
fi
for f in libmcp.so libmcp.so.0 pkgconfig/libmcp.pc; do
	test -e "$root$MCP_LIBDIR/$f" || problem "$MCP_LIBDIR/$f not installed"
done
for p in mcp-everything mcp-files mcp-call; do
	test -x "$root$MCP_BINDIR/$p" || problem "$MCP_BINDIR/$p not installed"
	test -f "$root$MCP_MANDIR/man1/$p.1" || problem "$MCP_MANDIR/man1/$p.1 not installed"
done
test -f "$root$MCP_MANDIR/man3/libmcp.3" || problem "$MCP_MANDIR/man3/libmcp.3 not installed"
for d in README.md design.md packaging.md auth.md client.md; do
	test -f "$root$MCP_DOCDIR/$d" || problem "$MCP_DOCDIR/$d not installed (libmcp(3) points to it)"
done
for fn in $(sh "$srcdir/tests/pkg/api-list.sh" "$srcdir/api/mcp/mcp.h" "$srcdir/api/mcp/client.h"); do
	test -f "$root$MCP_MANDIR/man3/$fn.3" || problem "no installed man page $MCP_MANDIR/man3/$fn.3"
done
if command -v man >/dev/null 2>&1; then
	# The .so link pages must resolve: man renders the page they name.
	if ! MANPATH=$root$MCP_MANDIR MANWIDTH=80 man 3 mcp_ctx_sleep 2>"$tmp/man.err" |
		grep -q 'mcp_ctx_cancel_fd'; then
		problem "man 3 mcp_ctx_sleep does not render its group page: $(cat "$tmp/man.err")"
	fi
fi
test "$fail" = 0 || exit 1
echo "$me: installed files are complete"

# ---- a program built against it ------------------------------------------
sh "$srcdir/tests/pkg/staged-greeter.sh" "$srcdir" "$root" "$MCP_LIBDIR"

# ---- the installed example server -------------------------------------------
LD_LIBRARY_PATH=$root$MCP_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	sh "$srcdir/tests/pkg/run-server.sh" "$root$MCP_BINDIR/mcp-everything" \
	echo '{"text":"installed"}' installed

# ---- make uninstall leaves nothing ----------------------------------------
if ! $MAKE -C "$builddir" uninstall DESTDIR="$root" >"$tmp/uninstall.log" 2>&1; then
	cat "$tmp/uninstall.log" >&2
	echo "$me: make uninstall failed" >&2
	exit 1
fi
left=$(cd "$root" && find . ! -type d)
if test -n "$left"; then
	echo "$me: make uninstall left files behind:" >&2
	printf '%s\n' "$left" | sed 's/^/  /' >&2
	exit 1
fi
echo "$me: make uninstall removed everything"
echo "$me: PASS"
