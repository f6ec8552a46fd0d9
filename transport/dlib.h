/*
 * dlib.h - the one way the library opens an optional shared library at
 * run time (libmicrohttpd, libcurl, hiredis: see mhd.h, curl.h and
 * store-redis.c for why each is not linked).
 */
#ifndef LIBMCP_TRANSPORT_DLIB_H
#define LIBMCP_TRANSPORT_DLIB_H

#include <stddef.h>

/* One function to look up, and where its address goes (a field of the
 * caller's table, cast to void **). */
typedef struct tp_dlib_sym {
	void **slot;
	const char *name;
} tp_dlib_sym;

/* Opens the library by `soname` (the versioned file its runtime package
 * ships, as configure found it), else by `devname` (the development
 * symlink), with RTLD_NOW | RTLD_LOCAL, and looks up every one of the `n`
 * symbols into its slot.  Returns the handle, which the caller keeps for
 * the life of the process (never closed: threads of the library may
 * outlive any one use); NULL when the library or any symbol is missing,
 * the library closed again (slots may then hold partial results: fill a
 * local table and copy it on success).  Not thread-safe by itself: call
 * it under a pthread_once. */
void *tp_dlib_open(const char *soname, const char *devname, const tp_dlib_sym *syms, size_t n);

#endif /* LIBMCP_TRANSPORT_DLIB_H */
