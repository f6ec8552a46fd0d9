#!/bin/sh
# mlinks.sh - the extra names of grouped manual pages.
#
#   mlinks.sh PAGE...
#
# For each mdoc page, prints "PAGE NAME" for every .Nm in its NAME section
# other than the page's own name (mcp_server_new.3 also documents
# mcp_server_free, ...).  make install writes one ".so" page per such name,
# and check-man.sh uses the same list, so a name is added in one place: the
# page's NAME section.
set -eu
for page in "$@"; do
	base=${page##*/}
	self=${base%.*}
	awk -v base="$base" -v self="$self" '
		/^\.Sh / { inname = ($0 == ".Sh NAME"); next }
		inname && /^\.Nm / {
			name = $2
			sub(/[ ,]+$/, "", name)
			if (name != self) print base, name
		}' "$page"
done
