/*
 * runner.c - the one main() of the Check unit tests (tests/unit/README.md).
 *
 * Runs the program's suite (unit_suite(), defined by its test_*.c) and
 * prints each test's verdict as a TAP line on standard output, which is
 * what make check reads (Automake's TAP driver, through
 * tests/lib/log-driver.sh): one result per test, named
 * "FILE:TCASE:TEST".  Check's own report goes to standard output too, so a
 * failure also shows its file and line.
 *
 * Check's environment applies: CK_FORK=no runs the tests in this process
 * (make check-valgrind does, so valgrind sees them), CK_RUN_CASE /
 * CK_RUN_SUITE / CK_INCLUDE_TAGS pick tests, CK_VERBOSITY=verbose lists
 * every test, CK_TIMEOUT_MULTIPLIER stretches every tcase's timeout.
 *
 * Exit status: 0 when every test passed, 1 otherwise; under make check's
 * TAP driver (MCP_TAP_DRIVER=1) the verdicts travel in the TAP lines, and
 * the status is 0 unless the program itself went wrong (a crash without
 * fork, a leak report at exit), which the driver reports as an error.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/runner.h"

int main(void)
{
	/* Check's fork mode, and tests that start processes, need SIGCHLD
	 * as the default: a test harness may have set it ignored. */
	signal(SIGCHLD, SIG_DFL);
	SRunner *sr = srunner_create(unit_suite());
	/* "-" is standard output (unbuffered from here on, so the TAP lines
	 * and what the tests print stay in order, and a forked test never
	 * inherits unwritten output). */
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	const char *driver = getenv("MCP_TAP_DRIVER");
	if (driver && *driver && strcmp(driver, "0") != 0)
		return EXIT_SUCCESS;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
