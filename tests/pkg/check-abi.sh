#!/bin/sh
# check-abi.sh - the exported ABI of libmcp.so equals the documented API.
#
#   check-abi.sh SRCDIR BUILDDIR   (make check: all the lists below)
#   check-abi.sh --sym-only SRCDIR (the build, before linking libmcp.so)
#
# It compares
#   1. the functions the public headers (api/mcp/mcp.h, api/mcp/client.h)
#      declare with MCP_EXTERN,
#   2. the global: entries of the version script libmcp.sym,
#   3. the functions BUILDDIR/.libs/libmcp.so exports (nm -D: T and W), each
#      of which must carry a version node of libmcp.sym,
#   4. when SRCDIR/debian/libmcp0.symbols exists, its name@NODE lines,
# and fails, naming each difference and where to fix it, on any mismatch:
# an internal name that leaked (eng_*, tp_*, ...), a public function that is
# not exported, a stale entry.  Then
#   5. the layout of the public structs, enumerators and constants against
#      tests/pkg/abi-layout.<machine>.txt (tests/pkg/abi-layout.py).
# Exit 77 (skip) when nm is missing.
set -eu

me=check-abi.sh
sym_only=0
if test "${1:-}" = --sym-only; then
	sym_only=1
	shift
fi
# Under make check the directories come from AM_TESTS_ENVIRONMENT.
srcdir=${1:-${MCP_SRCDIR:-}}
builddir=${2:-${MCP_BUILDDIR:-.}}
if test -z "$srcdir"; then
	echo "usage: $me [--sym-only] SRCDIR [BUILDDIR]" >&2
	exit 2
fi
header=$srcdir/api/mcp/mcp.h
client_header=$srcdir/api/mcp/client.h
script=$srcdir/libmcp.sym
symbols=$srcdir/debian/libmcp0.symbols
so=$builddir/.libs/libmcp.so

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export LC_ALL=C

fail=0
# differ A B what-is-in-A-only what-is-in-B-only: reports both set differences.
differ() {
	comm -23 "$1" "$2" >"$tmp/only"
	if test -s "$tmp/only"; then
		fail=1
		awk -v me="$me" -v what="$3" '{ print me ": " $0 " " what }' "$tmp/only" >&2
	fi
	comm -13 "$1" "$2" >"$tmp/only"
	if test -s "$tmp/only"; then
		fail=1
		awk -v me="$me" -v what="$4" '{ print me ": " $0 " " what }' "$tmp/only" >&2
	fi
}

# ---- 1. the header ------------------------------------------------------
sh "$srcdir/tests/pkg/api-list.sh" "$header" "$client_header" >"$tmp/api"
if ! test -s "$tmp/api"; then
	echo "$me: no MCP_EXTERN declaration found in $header and $client_header" >&2
	exit 1
fi

# ---- 2. the version script: "name NODE" for every global: entry ---------
# Comments are C style; a node is `NAME { global: a; b; local: *; } PARENT;`.
awk '
	# Joins the file, drops multi-line comments, splits into tokens.
	{ text = text " " $0 }
	END {
		while ((s = index(text, "/*")) > 0) {
			rest = substr(text, s + 2)
			e = index(rest, "*/")
			if (!e) { print "ERROR unterminated comment"; exit }
			text = substr(text, 1, s - 1) " " substr(rest, e + 2)
		}
		gsub(/[{};]/, " & ", text)
		gsub(/:/, ": ", text)
		n = split(text, t, /[ \t\n]+/)
		depth = 0; mode = ""; node = ""
		for (i = 1; i <= n; i++) {
			w = t[i]
			if (w == "") continue
			if (w == "{") { depth++; mode = "global"; continue }
			if (w == "}") { depth--; mode = ""; skipparent = 1; continue }
			if (w == ";") { if (depth == 0) skipparent = 0; continue }
			if (depth == 0) {
				if (skipparent) { skipparent = 0; continue }   # inherited node
				node = w; continue
			}
			if (w == "global:") { mode = "global"; continue }
			if (w == "local:") { mode = "local"; continue }
			if (mode == "global") print w, node
		}
	}' "$script" >"$tmp/script-entries"
if grep -q '^ERROR' "$tmp/script-entries"; then
	echo "$me: $script: cannot parse: $(grep '^ERROR' "$tmp/script-entries")" >&2
	exit 1
fi
if grep -q '[*?[]' "$tmp/script-entries"; then
	echo "$me: $script: a wildcard in a global: list exports whatever matches;" \
	     "name each function instead:" >&2
	grep '[*?[]' "$tmp/script-entries" | awk -v me="$me" '{ print me ":   " $1 }' >&2
	fail=1
fi
cut -d' ' -f1 "$tmp/script-entries" | sort >"$tmp/script-all"
sort -u "$tmp/script-all" >"$tmp/script"
uniq -d "$tmp/script-all" >"$tmp/dups"
if test -s "$tmp/dups"; then
	fail=1
	awk -v me="$me" '{ print me ": " $0 " is listed more than once in libmcp.sym" }' "$tmp/dups" >&2
fi
cut -d' ' -f2 "$tmp/script-entries" | sort -u >"$tmp/nodes"

differ "$tmp/api" "$tmp/script" \
	"is declared MCP_EXTERN in api/mcp/mcp.h or client.h but missing from libmcp.sym (add it to a global: list)" \
	"is in libmcp.sym but not declared MCP_EXTERN in api/mcp/mcp.h or client.h (remove it, or declare it)"

# ---- 4. the Debian symbols file, when the tree has one ------------------
if test -f "$symbols"; then
	# " name@NODE MINVER" lines; the version nodes list themselves.
	sed -n 's/^ \([A-Za-z0-9_.]*@[A-Za-z0-9_.]*\) .*/\1/p' "$symbols" | sort -u >"$tmp/deb"
	{
		awk '{ print $1 "@" $2 }' "$tmp/script-entries"
		awk '{ print $1 "@" $1 }' "$tmp/nodes"
	} | sort -u >"$tmp/want-deb"
	differ "$tmp/want-deb" "$tmp/deb" \
		"is exported by libmcp.sym but missing from debian/libmcp0.symbols (add \" name@NODE <first version>\")" \
		"is in debian/libmcp0.symbols but not in libmcp.sym"
fi

if test "$sym_only" = 1; then
	if test "$fail" != 0; then
		echo "$me: api/mcp/mcp.h and libmcp.sym disagree; fix the lines above before linking libmcp.so" >&2
	fi
	exit "$fail"
fi

# ---- 3. what the built library exports ------------------------------------
if ! command -v nm >/dev/null 2>&1; then
	echo "$me: SKIP: nm not found" >&2
	exit 77
fi
if ! test -f "$so"; then
	echo "$me: $so not found (build the library first)" >&2
	exit 1
fi
# nm prints "name@@NODE" (default version) for versioned symbols; the node
# itself is an absolute ("A") symbol, and only T/W are functions.
nm -D --defined-only "$so" >"$tmp/nm"
awk '$2 ~ /^[TW]$/ { print $3 }' "$tmp/nm" | sort >"$tmp/so-versioned"
sed 's/@.*//' "$tmp/so-versioned" | sort -u >"$tmp/so"
differ "$tmp/api" "$tmp/so" \
	"is declared MCP_EXTERN in api/mcp/mcp.h or client.h but not exported by $so (is it defined? compiled with MCP_BUILDING_LIBRARY?)" \
	"is exported by $so but is not public API (an internal name leaked: make it static, or check libmcp.sym's local: *)"

# Every exported function is bound to the version node libmcp.sym gives it
# (this also proves the version script was used at all).
awk '{ print $1 "@@" $2 }' "$tmp/script-entries" | sort -u >"$tmp/want-versioned"
comm -12 "$tmp/want-versioned" "$tmp/so-versioned" | sed 's/@.*//' | sort -u >"$tmp/ok-versioned"
comm -12 "$tmp/api" "$tmp/so" | comm -23 - "$tmp/ok-versioned" >"$tmp/unversioned"
if test -s "$tmp/unversioned"; then
	fail=1
	awk -v me="$me" -v so="$so" '{ print me ": " $0 " is exported by " so \
		" without its libmcp.sym version node (was it linked with -Wl,--version-script?)" }' \
		"$tmp/unversioned" >&2
fi
# Nothing but functions and the version nodes may be defined.
awk '$2 !~ /^[TW]$/ && !($2 == "A" && $3 ~ /^LIBMCP_/) { print $2, $3 }' "$tmp/nm" >"$tmp/other"
if test -s "$tmp/other"; then
	fail=1
	awk -v me="$me" -v so="$so" '{ print me ": " $2 " (nm type " $1 ") is exported by " so \
		" but is not a public function" }' "$tmp/other" >&2
fi

# ---- 5. the layout of the public types ------------------------------------
# Structs, enumerators and constants against the recorded list
# (tests/pkg/abi-layout.<machine>.txt): see abi-layout.py.
layout_rc=0
python3 "$srcdir/tests/pkg/abi-layout.py" "$srcdir" || layout_rc=$?
case $layout_rc in
0 | 77) ;;
*) fail=1 ;;
esac

if test "$fail" = 0; then
	echo "$me: $(wc -l <"$tmp/api" | tr -d ' ') functions: header, libmcp.sym and libmcp.so agree$(test -f "$symbols" && echo ', and debian/libmcp0.symbols')"
fi
exit "$fail"
