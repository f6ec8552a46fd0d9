/*
 * mhd.c - opens libmicrohttpd at the first use of the HTTP transport (see
 * mhd.h for why).  The library is never closed: its daemon threads may
 * outlive a server, and a process that served HTTP once keeps it.
 */
#define TP_MHD_IMPL 1
#include "config.h"

#include <pthread.h>

#include "transport/dlib.h"
#include "transport/mhd.h"

struct tp_mhd_api tp_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc = -1;

static void load(void)
{
	struct tp_mhd_api a;
#define SYM(field, name) { (void **)&a.field, name }
	const tp_dlib_sym syms[] = {
		SYM(start_daemon, "MHD_start_daemon"),
		SYM(stop_daemon, "MHD_stop_daemon"),
		SYM(get_daemon_info, "MHD_get_daemon_info"),
		SYM(lookup_connection_value, "MHD_lookup_connection_value"),
		SYM(queue_response, "MHD_queue_response"),
		SYM(create_response_from_buffer, "MHD_create_response_from_buffer"),
		SYM(create_response_from_callback, "MHD_create_response_from_callback"),
		SYM(add_response_header, "MHD_add_response_header"),
		SYM(destroy_response, "MHD_destroy_response"),
		SYM(suspend_connection, "MHD_suspend_connection"),
		SYM(resume_connection, "MHD_resume_connection"),
		SYM(get_connection_values, "MHD_get_connection_values"),
		SYM(get_connection_info, "MHD_get_connection_info"),
	};
#undef SYM
	if (!tp_dlib_open(MCP_MHD_SONAME, "libmicrohttpd.so", syms, sizeof syms / sizeof *syms))
		return;
	tp_mhd = a;
	load_rc = 0;
}

int tp_mhd_load(void)
{
	pthread_once(&once, load);
	return load_rc;
}
