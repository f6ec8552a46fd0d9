#!/bin/sh
# check-layers.sh - the library's files call each other along its layers only.
#
#   check-layers.sh [BUILDDIR [SRCDIR]]   (make check: MCP_BUILDDIR, MCP_SRCDIR)
#
# The layers, lowest first, are transport/, engine/ and api/.  From each
# object of libmcp-internal.la (nm: the symbols it defines and those it
# needs) it builds the graph "file A uses a symbol file B defines", and
# fails, naming the files and the symbols, when
#   - a file uses a file of a higher layer (transport -> engine or api,
#     engine -> api): a lower layer reaches up only through the function
#     pointers it is given (eng_proto, tp_ops), never by name;
#   - files of one layer use each other in a cycle: each layer must read
#     bottom up, helpers below what calls them (doc/design.md).
# Calls through function pointers and static inline helpers leave no
# symbol and are not seen; that is the intended way up.  Exit 77 (skip)
# when nm or the objects are missing.
set -eu

me=check-layers.sh
builddir=${1:-${MCP_BUILDDIR:-.}}
srcdir=${2:-${MCP_SRCDIR:-$builddir/..}}
export LC_ALL=C

if ! command -v nm >/dev/null 2>&1; then
	echo "$me: SKIP: no nm" >&2
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# One line per symbol: "def|use LAYER/FILE SYMBOL", from the object each
# libtool .lo of libmcp-internal names (PIC or not, whichever was built);
# an object whose source is gone (a file since split or renamed) is stale.
n=0
for layer in transport engine api; do
	for lo in "$builddir/$layer"/libmcp_internal_la-*.lo; do
		test -f "$lo" || continue
		obj=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$lo")
		test "$obj" != none || obj=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$lo")
		obj=$builddir/$layer/$obj
		test -f "$obj" || continue
		file=$layer/$(basename "$lo" .lo | sed 's/^libmcp_internal_la-//')
		test -f "$srcdir/$file.c" || continue
		nm --defined-only -g "$obj" | awk -v f="$file" 'NF == 3 { print "def", f, $3 }'
		nm -u "$obj" | awk -v f="$file" '{ print "use", f, $NF }'
		n=$((n + 1))
	done
done >"$tmp/syms"
if test "$n" -eq 0; then
	echo "$me: SKIP: no libmcp-internal objects under $builddir" >&2
	exit 77
fi

awk -v me="$me" '
function rank(f) { return f ~ /^transport\// ? 0 : f ~ /^engine\// ? 1 : 2 }
$1 == "def" { owner[$3] = $2; files[$2] = 1; next }
$1 == "use" { uses[++nu] = $2 SUBSEP $3; files[$2] = 1 }
END {
	bad = 0
	for (i = 1; i <= nu; i++) {
		split(uses[i], u, SUBSEP)
		from = u[1]; sym = u[2]
		if (!(sym in owner) || owner[sym] == from)
			continue
		to = owner[sym]
		if (rank(to) > rank(from)) {
			printf "%s: %s calls up into %s: %s\n", me, from, to, sym
			bad = 1
		} else if (rank(to) == rank(from)) {
			if (!((from, to) in edge))
				edge[from, to] = sym
			else if (index(" " edge[from, to] " ", " " sym " ") == 0)
				edge[from, to] = edge[from, to] " " sym
		}
	}
	# Reachability within each layer (a few dozen files: the cube is cheap).
	nf = 0
	for (f in files)
		name[++nf] = f
	for (a = 1; a <= nf; a++)
		for (b = 1; b <= nf; b++)
			if ((name[a], name[b]) in edge)
				reach[a, b] = 1
	for (k = 1; k <= nf; k++)
		for (a = 1; a <= nf; a++)
			if ((a, k) in reach)
				for (b = 1; b <= nf; b++)
					if ((k, b) in reach)
						reach[a, b] = 1
	# Each cycle is a strongly connected component of more than one file.
	for (a = 1; a <= nf; a++) {
		if (a in done || !((a, a) in reach))
			continue
		members = ""
		for (b = 1; b <= nf; b++)
			if (b == a || (((a, b) in reach) && ((b, a) in reach))) {
				done[b] = 1
				comp[b] = 1
				members = members " " name[b]
			}
		printf "%s: cycle among%s\n", me, members
		for (x = 1; x <= nf; x++)
			for (y = 1; y <= nf; y++)
				if ((x in comp) && (y in comp) && ((name[x], name[y]) in edge))
					printf "%s:   %s -> %s: %s\n", me, name[x], name[y],
						edge[name[x], name[y]]
		delete comp
		bad = 1
	}
	if (!bad)
		printf "%s: %d files, no call up a layer, no cycle within one\n", me, nf
	exit bad
}' "$tmp/syms"
