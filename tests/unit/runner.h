/*
 * runner.h - the convention every Check unit test follows: it defines
 * unit_suite() and no main(); tests/unit/runner.c, linked into each test
 * program, runs that suite and reports each test as one TAP line.  See
 * tests/unit/README.md.
 */
#ifndef MCP_TESTS_UNIT_RUNNER_H
#define MCP_TESTS_UNIT_RUNNER_H

#include <check.h>

/* The test program's suite, built once by the runner's main().  It may
 * also set up what the whole program needs (and register its release with
 * atexit). */
Suite *unit_suite(void);

#endif /* MCP_TESTS_UNIT_RUNNER_H */
