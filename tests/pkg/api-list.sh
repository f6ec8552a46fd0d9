#!/bin/sh
# api-list.sh - prints the public API of libmcp, one function name a line,
# sorted: every declaration in the headers that starts with MCP_EXTERN.
#
#   api-list.sh path/to/api/mcp/mcp.h [path/to/api/mcp/client.h ...]
#
# The header is the source of truth for the ABI checks (check-abi.sh) and
# the man page checks (check-man.sh), so a function added there is missed
# nowhere.  A declaration may span lines; its name is the last identifier
# before the first '(' (or before ';' / '[' for an object).
set -eu
test $# -gt 0 || { echo "usage: api-list.sh HEADER..." >&2; exit 2; }
for header in "$@"; do
	test -r "$header" || { echo "api-list.sh: cannot read $header" >&2; exit 2; }
done
names=$(LC_ALL=C awk '
	# Each file starts outside any comment or declaration.
	FNR == 1 { incomment = 0; decl = 0 }
	# Strip comments first, so a MCP_EXTERN mentioned in prose is ignored.
	{
		line = $0
		while (1) {
			if (incomment) {
				e = index(line, "*/")
				if (!e) { line = ""; break }
				line = substr(line, e + 2); incomment = 0
			}
			s = index(line, "/*")
			if (!s) break
			rest = substr(line, s + 2)
			e = index(rest, "*/")
			if (e) line = substr(line, 1, s - 1) " " substr(rest, e + 2)
			else { line = substr(line, 1, s - 1); incomment = 1 }
		}
		sub(/\/\/.*/, "", line)
	}
	!decl && line ~ /^[ \t]*MCP_EXTERN[ \t]/ { decl = 1; buf = "" }
	decl {
		buf = buf " " line
		if (index(line, ";")) {
			decl = 0
			sub(/[(;[].*/, "", buf)
			n = split(buf, w, /[^A-Za-z0-9_]+/)
			name = ""
			for (i = n; i >= 1; i--) if (w[i] != "") { name = w[i]; break }
			if (name == "" || name == "MCP_EXTERN") {
				print "api-list.sh: cannot find the name in:" buf > "/dev/stderr"
				bad = 1
			} else print name
		}
	}
	END { if (decl) { print "api-list.sh: unterminated declaration:" buf > "/dev/stderr"; bad = 1 }
	      exit bad }
' "$@") || exit 1
printf '%s\n' "$names" | LC_ALL=C sort -u
