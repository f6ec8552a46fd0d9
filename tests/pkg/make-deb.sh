#!/bin/sh
# make-deb.sh - make deb: builds the Debian packages from a scratch copy of
# the source tree, checks them with lintian and tests them.
#
#   make-deb.sh SRCDIR WORKDIR [BUILDDIR]
#
# WORKDIR is emptied and receives the copy (WORKDIR/libmcp-VERSION), the
# .deb, .changes and .buildinfo files, dpkg-buildpackage.log and
# lintian.log.  The copy holds what git knows of SRCDIR (tracked files and
# untracked ones that are not ignored, minus BUILDDIR when it lies inside
# SRCDIR), so build trees and generated files stay out; without git, SRCDIR
# is copied whole.  Fails when the build fails, when lintian reports an
# error, or when deb-install.sh fails.
# Extra options for dpkg-buildpackage may be given in DEB_BUILD_FLAGS, and
# DEB_BUILD_OPTIONS (nocheck, parallel=N) is honoured as usual.
set -eu
me=make-deb.sh
srcdir=${1:?usage: make-deb.sh SRCDIR WORKDIR}
work=${2:?usage: make-deb.sh SRCDIR WORKDIR}
srcdir=$(cd "$srcdir" && pwd)
builddir=${3:-}
if test -n "$builddir"; then builddir=$(cd "$builddir" && pwd); fi

if ! test -f "$srcdir/debian/control"; then
	echo "$me: $srcdir has no debian/ directory; the release tarball does not ship" \
	     "one, so run make deb from a build of a source checkout" >&2
	exit 1
fi
missing=
for tool in dpkg-buildpackage dpkg-parsechangelog lintian fakeroot; do
	command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if test -n "$missing"; then
	echo "$me: missing:$missing (apt-get install build-essential devscripts debhelper lintian fakeroot)" >&2
	exit 1
fi

version=$(dpkg-parsechangelog -l "$srcdir/debian/changelog" -S Version)
upstream=${version%-*}
name=$(dpkg-parsechangelog -l "$srcdir/debian/changelog" -S Source)
case $work/ in
"$srcdir"/*)
	if ! git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
		echo "$me: $work is inside $srcdir, which is not a git checkout: use a WORKDIR outside it" >&2
		exit 1
	fi
	;;
esac
case $work in
/ | "$srcdir" | "$srcdir"/ | "$HOME" | "$HOME"/)
	echo "$me: refusing to empty $work" >&2
	exit 1
	;;
esac
rm -rf "$work"
tree=$work/$name-$upstream
mkdir -p "$tree"
work=$(cd "$work" && pwd)

# ---- a scratch copy of the source tree -----------------------------------------
if git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$srcdir" && git ls-files -co --exclude-standard) | while IFS= read -r f; do
		# Tracked files deleted in the work tree are skipped, and so is a
		# build tree inside the source tree.
		if test -n "$builddir" && test "$builddir" != "$srcdir"; then
			case $srcdir/$f in "$builddir"/*) continue ;; esac
		fi
		if test -e "$srcdir/$f" || test -L "$srcdir/$f"; then printf '%s\n' "$f"; fi
	done >"$work/files"
	(cd "$srcdir" && tar -cf - -T "$work/files") | (cd "$tree" && tar -xf -)
	echo "$me: copied $(wc -l <"$work/files" | tr -d ' ') files of $srcdir into $tree"
else
	cp -a "$srcdir/." "$tree/"
	echo "$me: copied $srcdir into $tree"
fi

# ---- build ----------------------------------------------------------------------
echo "$me: dpkg-buildpackage -us -uc -b ${DEB_BUILD_FLAGS:-} (log: $work/dpkg-buildpackage.log)"
# shellcheck disable=SC2086 # DEB_BUILD_FLAGS is a list of options
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b ${DEB_BUILD_FLAGS:-}) \
	>"$work/dpkg-buildpackage.log" 2>&1; then
	tail -n 80 "$work/dpkg-buildpackage.log" >&2
	echo "$me: dpkg-buildpackage failed; the whole log is $work/dpkg-buildpackage.log" >&2
	exit 1
fi
changes=$(ls "$work"/*.changes)
ls -l "$work"/*.deb

# ---- lintian --------------------------------------------------------------------
# Errors fail; warnings and the rest are listed.
rc=0
lintian --fail-on error --display-info "$changes" >"$work/lintian.log" 2>&1 || rc=$?
errors=$(grep -c '^E: ' "$work/lintian.log" || :)
warnings=$(grep -c '^W: ' "$work/lintian.log" || :)
infos=$(grep -c '^[IP]: ' "$work/lintian.log" || :)
echo "$me: lintian: $errors errors, $warnings warnings, $infos info (log: $work/lintian.log)"
cat "$work/lintian.log"
if test "$rc" != 0 || test "$errors" != 0; then
	echo "$me: lintian reports errors" >&2
	exit 1
fi

# ---- install and use them ---------------------------------------------------------
set --
for deb in "$work"/*.deb; do
	case $deb in
	*-dbgsym_*) ;;
	*) set -- "$@" "$deb" ;;
	esac
done
sh "$srcdir/tests/pkg/deb-install.sh" "$srcdir" "$@"
echo "$me: PASS: packages in $work"
