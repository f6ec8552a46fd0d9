/*
 * failmalloc.c - the allocator of the allocation-failure test: malloc and
 * friends defined in the test executable, so every allocation in the
 * process (the library's, and json-c's through its PLT) passes a counter
 * here before going on to the real allocator found with RTLD_NEXT (libc's,
 * or the sanitizer runtime's in a GCC ASan/TSan build).
 *
 * Built without sanitizer instrumentation: its functions also run while a
 * sanitizer runtime is starting, before shadow memory exists.  Until the
 * executable's constructors run, requests are served from a static arena
 * (never freed), so nothing here calls into a half-initialised runtime.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json_c_version.h>

#include "tests/fuzz/failmalloc.h"

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);

static _Alignas(16) char boot_arena[256 * 1024];
static _Atomic size_t boot_used;
static _Atomic int ready;          /* our constructor ran: resolve on demand */
static _Thread_local int resolving;

static _Atomic int armed;          /* counting and failing enabled */
static _Atomic long seq;           /* counted allocations since arming */
static _Atomic long fail_at;       /* the first counted allocation to fail */
static _Atomic int fail_from;      /* every one after fail_at fails too */
static _Atomic long injected;      /* failures handed out since arming */
static _Atomic long spared;        /* failures withheld, in all */
static _Atomic long live;          /* allocations not yet freed */
static _Thread_local int exempt;

static void *fail_stack[32];
static _Atomic int fail_depth;

__attribute__((constructor)) static void failmalloc_init(void)
{
	/* backtrace() loads libgcc on first use, which allocates: do it while
	 * nothing is armed, so later calls from inside malloc do not. */
	void *prime[2];
	backtrace(prime, 2);
	atomic_store(&ready, 1);
}

static void *boot_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	size_t at = atomic_fetch_add(&boot_used, n);
	if (at + n > sizeof boot_arena)
		return NULL;
	return boot_arena + at; /* static storage: already zero */
}

static int from_boot(const void *p)
{
	return (const char *)p >= boot_arena && (const char *)p < boot_arena + sizeof boot_arena;
}

/* Whether requests must still go to the arena; resolves the real
 * functions on the first call after start-up. */
static int early(void)
{
	if (real_malloc)
		return 0;
	if (!atomic_load(&ready) || resolving)
		return 1;
	resolving = 1;
	real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	void *m = dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
	if (!m || !real_calloc || !real_realloc || !real_free) {
		static const char msg[] = "failmalloc: cannot find the real allocator\n";
		ssize_t w = write(2, msg, sizeof msg - 1);
		(void)w;
		_exit(99);
	}
	real_malloc = (void *(*)(size_t))m; /* last: the others are set */
	return 0;
}

/* Allocations that are not failed, because the code making them cannot
 * survive it and is not libmcp's:
 *  - json-c before 0.18 while it parses: json_tokener_parse_ex stores an
 *    object key from strdup() without a NULL check (then crashes in
 *    json_object_object_add_ex) and ignores a failed
 *    json_object_object_add_ex (leaking the value).  Fixed upstream;
 *  - a sanitizer runtime (GCC's libasan, libtsan, ...), directly or through
 *    libc: it aborts when, say, pthread_getattr_np cannot allocate while it
 *    sets up a thread.
 * Such allocations are spared and counted.  backtrace() was primed at
 * start-up, so it does not allocate here. */
static int in_object(const void *pc, const char *name)
{
	Dl_info info;
	return dladdr(pc, &info) && info.dli_fname && strstr(info.dli_fname, name);
}

static int cannot_fail(const void *caller)
{
	void *frames[24];
	int n = backtrace(frames, 24);
#if JSON_C_VERSION_NUM < ((0 << 16) | (18 << 8))
	for (int i = 0; i < n; i++) {
		Dl_info info;
		if (dladdr(frames[i], &info) && info.dli_sname &&
		    strcmp(info.dli_sname, "json_tokener_parse_ex") == 0)
			return 1;
	}
#endif
	/* The allocating code: the caller, or past libc when libc allocates
	 * on someone's behalf.  (A thread's own stack always ends in the
	 * runtime's thread start, so only the nearest caller counts.) */
	int k = 0;
	while (k < n && frames[k] != caller)
		k++;
	if (k == n)
		return in_object(caller, "san.so");
	while (k < n && in_object(frames[k], "/libc.so"))
		k++;
	return k < n && in_object(frames[k], "san.so");
}

/* Whether this allocation, made by code at `caller`, is to fail. */
static int should_fail(const void *caller)
{
	if (!atomic_load_explicit(&armed, memory_order_relaxed) || exempt)
		return 0;
	long n = atomic_fetch_add(&seq, 1) + 1;
	long at = atomic_load(&fail_at);
	if (at <= 0 || n < at || (n > at && !atomic_load(&fail_from)))
		return 0;
	int saved = exempt;
	exempt = 1;
	int spare = cannot_fail(caller);
	if (spare)
		atomic_fetch_add(&spared, 1);
	else if (atomic_fetch_add(&injected, 1) == 0)
		atomic_store(&fail_depth, backtrace(fail_stack, 32));
	exempt = saved;
	return !spare;
}

static void *alloc_n(size_t n, const void *caller)
{
	if (early())
		return boot_alloc(n);
	if (should_fail(caller)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = real_malloc(n);
	if (p)
		atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	return p;
}

void *malloc(size_t n)
{
	return alloc_n(n, __builtin_return_address(0));
}

void *calloc(size_t n, size_t size)
{
	if (early())
		return size && n > sizeof boot_arena / size ? NULL : boot_alloc(n * size);
	if (should_fail(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = real_calloc(n, size);
	if (p)
		atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
	return p;
}

void free(void *p)
{
	if (!p || from_boot(p))
		return;
	atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
	real_free(p);
}

void *realloc(void *p, size_t n)
{
	if (!p)
		return alloc_n(n, __builtin_return_address(0));
	if (n == 0) {
		free(p);
		return NULL;
	}
	if (from_boot(p)) {
		/* Arena blocks have no recorded size: copy what may be there. */
		size_t room = (size_t)(boot_arena + sizeof boot_arena - (char *)p);
		void *q = alloc_n(n, __builtin_return_address(0));
		if (q)
			memcpy(q, p, n < room ? n : room);
		return q;
	}
	if (early())
		return NULL;
	if (should_fail(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return real_realloc(p, n);
}

/* strdup and strndup allocate through malloc() here, so a sanitizer's own
 * strdup cannot bypass the counter. */
char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = alloc_n(n, __builtin_return_address(0));
	if (d)
		memcpy(d, s, n);
	return d;
}

char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *d = alloc_n(n + 1, __builtin_return_address(0));
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

/* ---- control ----------------------------------------------------------- */

void failmalloc_arm(long at, int from)
{
	atomic_store(&armed, 0);
	atomic_store(&seq, 0);
	atomic_store(&injected, 0);
	atomic_store(&fail_depth, 0);
	atomic_store(&fail_at, at);
	atomic_store(&fail_from, from);
	atomic_store(&armed, 1);
}

void failmalloc_disarm(void)
{
	atomic_store(&armed, 0);
}

void failmalloc_exempt(int e)
{
	exempt = e;
}

long failmalloc_count(void)
{
	return atomic_load(&seq);
}

long failmalloc_injected(void)
{
	return atomic_load(&injected);
}

long failmalloc_spared(void)
{
	return atomic_load(&spared);
}

long failmalloc_live(void)
{
	return atomic_load(&live);
}

void failmalloc_print_stack(void)
{
	int n = atomic_load(&fail_depth);
	if (n > 0) {
		int saved = exempt;
		exempt = 1;
		backtrace_symbols_fd(fail_stack, n, 2);
		exempt = saved;
	}
}
