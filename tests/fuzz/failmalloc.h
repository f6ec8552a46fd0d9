/*
 * failmalloc.h - a malloc that fails on request, for allocation-failure
 * tests: linked into a test executable, it interposes malloc, calloc,
 * realloc, free, strdup and strndup for the whole process (json-c included)
 * and makes the Nth counted allocation fail, or every one from the Nth on.
 *
 * Test code only.  Counting covers the threads that are not exempt; a
 * thread starts not exempt.
 */
#ifndef MCP_FUZZ_FAILMALLOC_H
#define MCP_FUZZ_FAILMALLOC_H

/* Starts counting from zero; the `at`th counted allocation fails (0: none)
 * and, with `from`, every later one too. */
void failmalloc_arm(long at, int from);
void failmalloc_disarm(void);
/* The calling thread's allocations are (not) counted. */
void failmalloc_exempt(int exempt);

long failmalloc_count(void);    /* counted allocations since arming */
long failmalloc_injected(void); /* failures handed out since arming */
long failmalloc_spared(void);   /* failures withheld (json-c), in all */
long failmalloc_live(void);     /* allocations not yet freed, in all */
/* Writes the stack of the first failure since arming to fd 2. */
void failmalloc_print_stack(void);

#endif /* MCP_FUZZ_FAILMALLOC_H */
