#!/bin/sh
# log-driver.sh - make check's driver for the tests whose name has no
# extension (the C programs and the shell scripts): it picks, by the test's
# name, the driver that reads its verdicts.
#
#   tests/unit/test_*   Check unit tests: they print TAP, one line per test
#                       (tests/unit/runner.c), read by Automake's
#                       tap-driver.sh, so make check counts and names each
#                       test;
#   anything else       one verdict from the exit status (0 pass, 77 skip,
#                       99 hard error), read by Automake's test-driver.
#
# Usage, as LOG_DRIVER:
#   log-driver.sh SHELL AUX_DIR [driver options] --test-name NAME ... -- PROGRAM
# (Automake's options are the same for both drivers.  tap-driver.sh needs
# AM_TAP_AWK in the environment.)
shell=$1
aux=$2
shift 2
name=
prev=
for arg in "$@"; do
	if test "x$prev" = x--test-name; then
		name=$arg
		break
	fi
	prev=$arg
done
case $name in
tests/unit/test_*) exec "$shell" "$aux/tap-driver.sh" "$@" ;;
*) exec "$shell" "$aux/test-driver" "$@" ;;
esac
