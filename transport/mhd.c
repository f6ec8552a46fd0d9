/*
 * mhd.c - opens libmicrohttpd at the first use of the HTTP transport (see
 * mhd.h for why).  The library is never closed: its daemon threads may
 * outlive a server, and a process that served HTTP once keeps it.
 */
#define TP_MHD_IMPL 1
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>

#include "transport/mhd.h"

struct tp_mhd_api tp_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = -1;

static void *sym(void *h, const char *name, int *missing)
{
	void *p = dlsym(h, name);
	if (!p)
		*missing = 1;
	return p;
}

static void load(void)
{
	/* The soname configure found (the versioned file the runtime package
	 * ships), then the development symlink. */
	void *h = dlopen(MCP_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libmicrohttpd.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	int missing = 0;
	struct tp_mhd_api a;
#define LOAD(field, name) *(void **)&a.field = sym(h, name, &missing)
	LOAD(start_daemon, "MHD_start_daemon");
	LOAD(stop_daemon, "MHD_stop_daemon");
	LOAD(get_daemon_info, "MHD_get_daemon_info");
	LOAD(lookup_connection_value, "MHD_lookup_connection_value");
	LOAD(queue_response, "MHD_queue_response");
	LOAD(create_response_from_buffer, "MHD_create_response_from_buffer");
	LOAD(create_response_from_callback, "MHD_create_response_from_callback");
	LOAD(add_response_header, "MHD_add_response_header");
	LOAD(destroy_response, "MHD_destroy_response");
	LOAD(suspend_connection, "MHD_suspend_connection");
	LOAD(resume_connection, "MHD_resume_connection");
	LOAD(get_connection_values, "MHD_get_connection_values");
	LOAD(get_connection_info, "MHD_get_connection_info");
#undef LOAD
	if (missing) {
		dlclose(h);
		return;
	}
	tp_mhd = a;
	load_rc = 0;
}

int tp_mhd_load(void)
{
	pthread_once(&once, load);
	return load_rc;
}
