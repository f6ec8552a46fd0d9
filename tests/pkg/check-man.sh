#!/bin/sh
# check-man.sh - the manual pages are complete, consistent and lint-free.
#
#   check-man.sh SRCDIR [BUILDDIR]
#
# (under make check the directories come from AM_TESTS_ENVIRONMENT, and
# MCP_MAN_PAGES lists the pages packaging.mk installs).  Checks:
#   - every MCP_EXTERN function of api/mcp/mcp.h and api/mcp/client.h is
#     named in the NAME section
#     of a section 3 page and appears in that page's SYNOPSIS (.Fn or .Fo);
#   - every function name a page gives is still public API;
#   - every .Xr to a libmcp page resolves to a page or a page's name;
#   - every page in man/ is installed, and every installed page exists;
#   - every option the built programs print in --help is documented in their
#     section 1 page (when they are built);
#   - mandoc -T lint -W warning is silent (exit 77, skip, when mandoc is
#     not installed and everything else passed).
set -eu
me=check-man.sh
srcdir=${1:-${MCP_SRCDIR:-}}
builddir=${2:-${MCP_BUILDDIR:-.}}
if test -z "$srcdir"; then
	echo "usage: $me SRCDIR [BUILDDIR]" >&2
	exit 2
fi
mandir=$srcdir/man
export LC_ALL=C
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

fail=0
problem() {
	echo "$me: $*" >&2
	fail=1
}

sh "$srcdir/tests/pkg/api-list.sh" "$srcdir/api/mcp/mcp.h" "$srcdir/api/mcp/client.h" >"$tmp/api"
for f in "$mandir"/*.[0-9]; do
	test -f "$f" && echo "${f##*/}"
done | sort >"$tmp/pages"
grep '\.3$' "$tmp/pages" | sed "s,^,$mandir/," >"$tmp/pages3"

# ---- every function has a page, and is in its synopsis --------------------
# "page name" for each page's own name and each extra name (mlinks.sh).
{
	sed 's,.*/,,; s,\(.*\)\.3$,\1.3 \1,' "$tmp/pages3"
	# shellcheck disable=SC2046 # one argument per page
	sh "$mandir/mlinks.sh" $(cat "$tmp/pages3")
} | sort -k2 >"$tmp/names"
cut -d' ' -f2 "$tmp/names" | sort >"$tmp/namelist"
uniq -d "$tmp/namelist" >"$tmp/dup"
while read -r name; do
	problem "$name is named by more than one page: $(awk -v n="$name" '$2 == n { printf "%s ", $1 }' "$tmp/names")"
done <"$tmp/dup"
comm -23 "$tmp/api" "$tmp/namelist" >"$tmp/missing"
while read -r fn; do
	problem "$fn (declared in api/mcp/mcp.h) has no manual page: add it to the NAME and SYNOPSIS sections of the man/*.3 page of its group"
done <"$tmp/missing"
comm -13 "$tmp/api" "$tmp/namelist" | grep -vx 'libmcp' >"$tmp/stale" || :
while read -r fn; do
	problem "$fn is named by man/$(awk -v n="$fn" '$2 == n { print $1 }' "$tmp/names") but is not an MCP_EXTERN function of api/mcp/mcp.h"
done <"$tmp/stale"
while read -r page name; do
	awk '/^\.Sh / { in_syn = ($0 == ".Sh SYNOPSIS"); next } in_syn' "$mandir/$page" |
		grep -q "^\\.F[no] $name\\( \\|\$\\)" ||
		! grep -qx "$name" "$tmp/api" ||
		problem "$name is named by man/$page but is missing from its SYNOPSIS (.Fn or .Fo)"
done <"$tmp/names"

# ---- cross references ---------------------------------------------------------
while read -r page; do
	sed -n 's/^\.Xr \([A-Za-z0-9_.-]*\) \([0-9]\).*/\1 \2/p' "$mandir/$page" | sort -u |
		while read -r name sec; do
			case $name in
			libmcp | mcp_* | mcp-*) ;;
			*) continue ;;
			esac
			if test "$sec" = 3; then
				grep -qx "$name" "$tmp/namelist" && continue
			else
				test -f "$mandir/$name.$sec" && continue
			fi
			echo "$me: man/$page refers to $name($sec), which no page documents" >&2
			echo x >>"$tmp/xr-fail"
		done
done <"$tmp/pages"
test -f "$tmp/xr-fail" && fail=1

# ---- installed list -------------------------------------------------------------
if test -n "${MCP_MAN_PAGES:-}"; then
	for p in $MCP_MAN_PAGES; do echo "${p##*/}"; done | sort >"$tmp/installed"
	comm -23 "$tmp/pages" "$tmp/installed" | while read -r p; do
		echo "$me: man/$p is not installed: add it to dist_man_MANS in packaging.mk" >&2
		echo x >>"$tmp/inst-fail"
	done
	comm -13 "$tmp/pages" "$tmp/installed" | while read -r p; do
		echo "$me: packaging.mk installs man/$p, which does not exist" >&2
		echo x >>"$tmp/inst-fail"
	done
	test -f "$tmp/inst-fail" && fail=1
fi

# ---- options of the programs ------------------------------------------------------
for prog in mcp-everything mcp-files mcp-call; do
	bin=$builddir/examples/$prog
	page=$mandir/$prog.1
	test -x "$bin" || continue
	if ! test -f "$page"; then
		problem "$prog is built but man/$prog.1 does not exist"
		continue
	fi
	"$bin" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u >"$tmp/opts" || :
	while read -r opt; do
		grep -q "Fl -${opt#--}\\( \\|\$\\)" "$page" ||
			problem "$prog --help lists $opt, which man/$prog.1 does not document"
	done <"$tmp/opts"
done

# ---- mandoc -T lint ---------------------------------------------------------------
if ! command -v mandoc >/dev/null 2>&1; then
	if test "$fail" = 0; then
		echo "$me: SKIP: mandoc not installed (apt-get install mandoc); other checks passed"
		exit 77
	fi
	exit 1
fi
# shellcheck disable=SC2046
if ! (cd "$mandir" && mandoc -T lint -W warning $(cat "$tmp/pages")) >"$tmp/lint" 2>&1; then
	problem "mandoc -T lint -W warning reports:"
	cat "$tmp/lint" >&2
fi
# Style remarks are shown, not fatal (pages of other projects are often missing).
# shellcheck disable=SC2046
(cd "$mandir" && mandoc -T lint -W style $(cat "$tmp/pages")) 2>&1 |
	grep -v 'referenced manual not found\|mandoc.db' | sed "s/^/$me: note: /" || :

if test "$fail" = 0; then
	echo "$me: $(wc -l <"$tmp/pages" | tr -d ' ') pages document all $(wc -l <"$tmp/api" | tr -d ' ') functions; mandoc -T lint is clean"
fi
exit "$fail"
