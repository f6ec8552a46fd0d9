#!/bin/sh
# check-dist-complete.sh - the release tarball holds every file of the tree.
#
#   check-dist-complete.sh SRCDIR TARBALL
#
# Lists the files git tracks in SRCDIR and the files in TARBALL (made by
# make dist), and fails, naming them, when a tracked file is missing from
# the tarball, apart from what is deliberately left out of it:
#   .ci/        this project's own CI script, which clones the repository;
#   .gitignore  meaningless outside git;
#   debian/     the Debian packaging, which a Debian source package keeps
#               beside the upstream tarball, not inside it.
# A test, a corpus, a schema or a script the tests read that is not in
# EXTRA_DIST shows up here, where the tarball's own make check (distcheck)
# would only notice if it ran the test that reads it.  Exit 77 (skip)
# outside a git checkout.
set -eu

srcdir=${1:?usage: check-dist-complete.sh SRCDIR TARBALL}
tarball=${2:?usage: check-dist-complete.sh SRCDIR TARBALL}
if ! git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
	echo "check-dist-complete.sh: $srcdir is not a git checkout: skipped"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dist-complete.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
git -C "$srcdir" ls-files | grep -vE '^(\.ci/|\.gitignore$|debian/)' | LC_ALL=C sort >"$tmp/tree"
# Entries are "libmcp-VERSION/path": the first component goes.
tar -tzf "$tarball" | sed -e 's|^[^/]*/||' -e '/\/$/d' -e '/^$/d' | LC_ALL=C sort >"$tmp/dist"
LC_ALL=C comm -23 "$tmp/tree" "$tmp/dist" >"$tmp/missing"
n_tree=$(wc -l <"$tmp/tree")
n_missing=$(wc -l <"$tmp/missing")
if [ "$n_missing" -gt 0 ]; then
	echo "check-dist-complete.sh: $n_missing of $n_tree tracked files are not in $tarball" \
		"(add them to EXTRA_DIST):"
	sed 's/^/  /' "$tmp/missing" | head -50
	exit 1
fi
echo "check-dist-complete.sh: all $n_tree tracked files are in $tarball" \
	"(left out by design: .ci/, .gitignore, debian/)"
