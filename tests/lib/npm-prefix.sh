# npm-prefix.sh - the one way the test and bench scripts install the Node
# packages they pin.  Sourced (". tests/lib/npm-prefix.sh"); POSIX sh.
#
#   npm_prefix NAME PREFIX PKGDIR [MARKER...]
#
# Makes PREFIX (a folder of the build tree) hold exactly what
# PKGDIR/package.json pins, and, when PKGDIR has a package-lock.json, the
# tree that lock file describes (npm ci; without one, npm install).  PREFIX
# is left alone when it already holds those pins (its copy of
# package.json, and of the lock file as package-lock.json.pinned, equal
# PKGDIR's) and every MARKER, a path under PREFIX such as
# node_modules/.bin/node, exists; otherwise it is made again from nothing,
# with one line "NAME: installing ..." on standard output.
#
# Returns 0 when PREFIX is ready; 77 when it cannot be made here (no npm,
# or the registry does not answer npm ping within 120 s); 1 when npm ran
# and failed, or left a marker missing.  Whatever it returns but 0, the
# sentence in $npm_prefix_why says why; the caller prints it (SKIP for 77,
# FAIL for 1), or calls npm_prefix_or_exit, which does and exits.

npm_prefix_why=

# Runs "$@" with a time limit of $1 seconds where timeout(1) exists.
npm_prefix_limited() {
	if command -v timeout >/dev/null 2>&1; then
		timeout "$@"
	else
		shift
		"$@"
	fi
}

# npm_prefix_ready PREFIX PKGDIR [MARKER...]: 0 when PREFIX holds PKGDIR's
# pins and every marker.
npm_prefix_ready() {
	_np_prefix=$1
	_np_dir=$2
	shift 2
	cmp -s "$_np_dir/package.json" "$_np_prefix/package.json" || return 1
	if [ -f "$_np_dir/package-lock.json" ]; then
		cmp -s "$_np_dir/package-lock.json" "$_np_prefix/package-lock.json.pinned" || return 1
	fi
	for _np_m in "$@"; do
		[ -e "$_np_prefix/$_np_m" ] || return 1
	done
	return 0
}

npm_prefix() {
	_np_name=$1
	_np_prefix=$2
	_np_dir=$3
	shift 3
	npm_prefix_why=
	if npm_prefix_ready "$_np_prefix" "$_np_dir" "$@"; then
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		npm_prefix_why="npm is not installed (needed for the packages of $_np_dir/package.json)"
		return 77
	fi
	if ! npm_prefix_limited 120 npm ping >/dev/null 2>&1; then
		npm_prefix_why="the npm registry is not reachable (npm ping failed)"
		return 77
	fi
	echo "$_np_name: installing the packages of $_np_dir/package.json into $_np_prefix"
	rm -rf "$_np_prefix"
	mkdir -p "$_np_prefix"
	cp "$_np_dir/package.json" "$_np_prefix/"
	if [ -f "$_np_dir/package-lock.json" ]; then
		cp "$_np_dir/package-lock.json" "$_np_prefix/"
		if ! (cd "$_np_prefix" &&
			npm_prefix_limited 900 npm ci --no-audit --no-fund --loglevel=error); then
			npm_prefix_why="npm ci into $_np_prefix failed"
			return 1
		fi
		cp "$_np_dir/package-lock.json" "$_np_prefix/package-lock.json.pinned"
	elif ! (cd "$_np_prefix" &&
		npm_prefix_limited 900 npm install --no-audit --no-fund --loglevel=error); then
		npm_prefix_why="npm install into $_np_prefix failed"
		return 1
	fi
	if ! npm_prefix_ready "$_np_prefix" "$_np_dir" "$@"; then
		npm_prefix_why="$_np_prefix does not hold what $_np_dir pins after npm ($*)"
		return 1
	fi
	return 0
}

# npm_prefix_or_exit NAME PREFIX PKGDIR [MARKER...]: npm_prefix, and on
# anything but 0, "NAME: SKIP: why" (exit 77) or "NAME: FAIL: why" on
# standard error (exit 1).
npm_prefix_or_exit() {
	_np_rc=0
	npm_prefix "$@" || _np_rc=$?
	case $_np_rc in
	0) return 0 ;;
	77)
		echo "$1: SKIP: $npm_prefix_why"
		exit 77
		;;
	*)
		echo "$1: FAIL: $npm_prefix_why" >&2
		exit 1
		;;
	esac
}
