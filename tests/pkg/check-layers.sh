#!/bin/sh
# check-layers.sh - the library's files call each other along its layers only.
#
#   check-layers.sh [BUILDDIR [SRCDIR]]   (make check: MCP_BUILDDIR, MCP_SRCDIR)
#
# The layers, lowest first, are transport/, engine/ and api/ (with ranked
# folders inside api/, api_ranks below).  From each object of
# libmcp-internal.la, in whatever folder under them (nm: the symbols it
# defines and those it needs), it builds the graph "file A uses a symbol
# file B defines", and
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
# The folders inside api/ and their ranks ("FOLDER RANK ...", ranks from 2
# up to 3; "." is the files left in api/ itself, 2 unless given): a
# folder may use a folder of a lower rank, never one of a higher.  Empty
# while api/ is flat (issue 26 fills it as the files move: the helpers
# lowest, the front and the client highest).
api_ranks=${MCP_API_RANKS:-""}
builddir=${1:-${MCP_BUILDDIR:-.}}
srcdir=${2:-${MCP_SRCDIR:-$builddir/..}}
export LC_ALL=C

if ! command -v nm >/dev/null 2>&1; then
	echo "$me: SKIP: no nm" >&2
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# The objects this build links into libmcp-internal.la, as its Makefile
# lists them (conditional sources resolved): the walk below must find
# every one, so that an object moved into a folder the walk missed fails
# the check instead of leaving the graph unseen.
printf 'print-lo:\n\t@echo $(libmcp_internal_la_OBJECTS)\n' >"$tmp/print.mk"
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$builddir" -f Makefile \
	-f "$tmp/print.mk" print-lo >"$tmp/listed.raw" 2>"$tmp/listed.err"; then
	echo "$me: SKIP: cannot ask $builddir/Makefile for the library's objects" >&2
	exit 77
fi
tr ' ' '\n' <"$tmp/listed.raw" | sed -n 's/\.lo$//p' | sort >"$tmp/listed"

# One line per symbol: "def|use DIR/FILE SYMBOL", from the object each
# libtool .lo of libmcp-internal names (PIC or not, whichever was built),
# in every folder under the three layers; an object whose source is gone
# (a file since split or renamed) is stale.
: >"$tmp/found"
for layer in transport engine api; do
	test -d "$builddir/$layer" || continue
	find "$builddir/$layer" -name 'libmcp_internal_la-*.lo' | sort
done >"$tmp/los"
while read -r lo; do
	dir=$(dirname "$lo")
	rel=${dir#"$builddir"/}
	obj=$(sed -n "s/^pic_object='\(.*\)'$/\1/p" "$lo")
	test "$obj" != none || obj=$(sed -n "s/^non_pic_object='\(.*\)'$/\1/p" "$lo")
	obj=$dir/$obj
	test -f "$obj" || continue
	base=$(basename "$lo" .lo)
	file=$rel/${base#libmcp_internal_la-}
	test -f "$srcdir/$file.c" || continue
	echo "$rel/$base" >>"$tmp/found"
	nm --defined-only -g "$obj" | awk -v f="$file" 'NF == 3 { print "def", f, $3 }'
	nm -u "$obj" | awk -v f="$file" '{ print "use", f, $NF }'
done <"$tmp/los" >"$tmp/syms"
sort -o "$tmp/found" "$tmp/found"
n=$(wc -l <"$tmp/found")
if test "$n" -eq 0; then
	echo "$me: SKIP: no libmcp-internal objects under $builddir" >&2
	exit 77
fi
# Both lists are sorted sets: any line in one only is an object out of
# sight (or a stale one read).
comm -3 "$tmp/listed" "$tmp/found" >"$tmp/unmatched"
if test -s "$tmp/unmatched"; then
	echo "$me: the build links $(wc -l <"$tmp/listed") objects into" \
		"libmcp-internal.la, the walk read $n:" >&2
	sed "s/^\t/  read but not listed: /; s/^\([^ \t]\)/  listed but not read: \1/" "$tmp/unmatched" >&2
	exit 1
fi

awk -v me="$me" -v api_ranks="$api_ranks" '
# transport 0, engine 1, api 2; a folder inside api/ has its own rank
# between 2 and 3 (api_ranks: "folder rank ..."), lowest for the parts
# that use no other: a folder with none is an error, so that a new one is
# placed on purpose.
BEGIN {
	n = split(api_ranks, r, " ")
	for (i = 1; i + 1 <= n; i += 2)
		sub_rank[r[i] == "." ? "." : "api/" r[i] "/"] = r[i + 1]
}
function rank(f,   d) {
	if (f ~ /^transport\//)
		return 0
	if (f ~ /^engine\//)
		return 1
	if (f !~ /^api\/[^\/]*\//)
		return "." in sub_rank ? sub_rank["."] : 2
	d = f
	sub(/[^\/]*$/, "", d)
	if (!(d in sub_rank)) {
		if (!(d in told))
			printf "%s: %s has no rank: add it to api_ranks in check-layers.sh\n", me, d
		told[d] = 1
		unranked = 1
		return 2
	}
	return sub_rank[d]
}
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
	if (unranked)
		bad = 1
	if (!bad)
		printf "%s: %d files, no call up a layer, no cycle within one\n", me, nf
	exit bad
}' "$tmp/syms"
