#!/bin/sh
# deb-install.sh - the built Debian packages install, and a program builds
# and runs against them.
#
#   deb-install.sh [--dpkg] SRCDIR DEB...
#
# By default the packages are unpacked with dpkg -x into a scratch root
# (no root privileges, the system is untouched); their contents are checked,
# tests/pkg/greeter.c is built with pkg-config from that root and run, and
# the packaged mcp-everything and mcp-files answer a call.  With --dpkg they
# are installed for real with dpkg -i (as root), the same is done against
# the system, and they are purged again afterwards.
set -eu
me='deb-install.sh'
mode=extract
if test "${1:-}" = --dpkg; then
	mode=dpkg
	shift
fi
srcdir=${1:?usage: deb-install.sh [--dpkg] SRCDIR DEB...}
shift
test $# -gt 0 || { echo "usage: $me [--dpkg] SRCDIR DEB..." >&2; exit 2; }
srcdir=$(cd "$srcdir" && pwd)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch

tmp=$(mktemp -d "${TMPDIR:-/tmp}/deb-install.XXXXXX")
installed=
cleanup() {
	if test -n "$installed"; then
		# shellcheck disable=SC2086
		dpkg --purge $installed >/dev/null || :
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

fail=0
problem() {
	echo "$me: $*" >&2
	fail=1
}

# ---- what each package holds -----------------------------------------------
dev='' lib='' tools=''
for deb in "$@"; do
	case $(dpkg-deb -f "$deb" Package) in
	libmcp0) lib=$deb ;;
	libmcp-dev) dev=$deb ;;
	libmcp-tools) tools=$deb ;;
	esac
done
test -n "$lib" || problem "no libmcp0 package among: $*"
test -n "$dev" || problem "no libmcp-dev package among: $*"
test -n "$tools" || problem "no libmcp-tools package among: $*"
test "$fail" = 0 || exit 1

has() { # has DEB PATH: the package contains PATH (a file or a link)
	dpkg-deb -c "$1" | awk '{ print $6 }' | sed 's,^\.,,' | grep -qx "$2"
}
has "$lib" "$libdir/libmcp.so.0" || problem "libmcp0 lacks $libdir/libmcp.so.0"
if dpkg-deb -c "$lib" | awk '{ print $6 }' | grep -q '/include/\|\.so$\|/man[0-9]/\|/bin/'; then
	problem "libmcp0 holds files that belong in libmcp-dev or libmcp-tools:"
	dpkg-deb -c "$lib" | awk '{ print $6 }' | grep '/include/\|\.so$\|/man[0-9]/\|/bin/' >&2
fi
dpkg-deb -I "$lib" symbols >/dev/null 2>&1 || problem "libmcp0 has no symbols control file"
has "$dev" /usr/include/mcp/mcp.h || problem "libmcp-dev lacks /usr/include/mcp/mcp.h"
has "$dev" /usr/include/mcp/client.h || problem "libmcp-dev lacks /usr/include/mcp/client.h"
has "$dev" "$libdir/libmcp.so" || problem "libmcp-dev lacks $libdir/libmcp.so"
has "$dev" "$libdir/pkgconfig/libmcp.pc" || problem "libmcp-dev lacks the .pc file"
for fn in libmcp $(sh "$srcdir/tests/pkg/api-list.sh" "$srcdir/api/mcp/mcp.h" "$srcdir/api/mcp/client.h"); do
	has "$dev" "/usr/share/man/man3/$fn.3.gz" || problem "libmcp-dev lacks the manual page $fn(3)"
done
for p in mcp-everything mcp-files mcp-call; do
	has "$tools" "/usr/bin/$p" || problem "libmcp-tools lacks /usr/bin/$p"
	has "$tools" "/usr/share/man/man1/$p.1.gz" || problem "libmcp-tools lacks $p(1)"
done
test "$fail" = 0 || exit 1
echo "$me: package contents are as expected"

# ---- install -----------------------------------------------------------------
if test "$mode" = dpkg; then
	if test "$(id -u)" != 0; then
		echo "$me: --dpkg needs root" >&2
		exit 1
	fi
	if dpkg-query -W -f '${Status}' libmcp0 2>/dev/null | grep -q installed; then
		echo "$me: libmcp0 is already installed; refusing to replace and purge it" >&2
		exit 1
	fi
	installed="libmcp-tools libmcp-dev libmcp0"
	dpkg -i "$lib" "$dev" "$tools"
	root=
else
	root=$tmp/root
	for deb in "$lib" "$dev" "$tools"; do
		dpkg -x "$deb" "$root"
	done
	# The -dev link must lead to the library of libmcp0.
	target=$(readlink -f "$root$libdir/libmcp.so")
	case $target in
	"$root$libdir"/libmcp.so.0*) test -f "$target" || problem "libmcp.so leads to missing $target" ;;
	*) problem "libmcp.so leads to $target, outside libmcp0" ;;
	esac
	test "$fail" = 0 || exit 1
fi

# ---- build and run against them ------------------------------------------
if test "$mode" = dpkg; then
	dir=$tmp/greeter
	mkdir "$dir"
	# shellcheck disable=SC2046
	${CC:-cc} -std=c99 -pedantic -Wall -Wextra -Werror -o "$dir/greeter" \
		"$srcdir/tests/pkg/greeter.c" $(pkg-config --cflags --libs libmcp)
	sh "$srcdir/tests/pkg/run-server.sh" "$dir/greeter" greet '{"name":"packager"}' 'Hello, packager!'
else
	sh "$srcdir/tests/pkg/staged-greeter.sh" "$srcdir" "$root" "$libdir"
	LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
sh "$srcdir/tests/pkg/run-server.sh" "$root/usr/bin/mcp-everything" \
	echo '{"text":"from the package"}' 'from the package'
mkdir "$tmp/files"
echo 'needle in a haystack' >"$tmp/files/hay.txt"
printf '%s\n' '#!/bin/sh' "exec \"$root/usr/bin/mcp-files\" \"$tmp/files\"" >"$tmp/mcp-files"
chmod +x "$tmp/mcp-files"
sh "$srcdir/tests/pkg/run-server.sh" "$tmp/mcp-files" \
	search '{"query":"needle"}' 'hay.txt:1'
echo "$me: PASS ($mode)"
