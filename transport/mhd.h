/*
 * mhd.h - libmicrohttpd, loaded when the HTTP transport first runs.
 *
 * A server that only speaks stdio should not pay for libmicrohttpd and
 * what it pulls in (GnuTLS, p11-kit, nettle...: about 2.5 MiB of resident
 * pages at start-up).  libmcp is therefore not linked against it: the
 * first mcp_server_run_http() opens it with dlopen(3) and looks up the
 * few functions transport/http.c uses.  Include this header instead of
 * <microhttpd.h>; the MHD_* calls then go through the table.
 */
#ifndef LIBMCP_TRANSPORT_MHD_H
#define LIBMCP_TRANSPORT_MHD_H

#include <microhttpd.h>

struct tp_mhd_api {
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_get_daemon_info) get_daemon_info;
	__typeof__(&MHD_lookup_connection_value) lookup_connection_value;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_create_response_from_callback) create_response_from_callback;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_destroy_response) destroy_response;
	__typeof__(&MHD_suspend_connection) suspend_connection;
	__typeof__(&MHD_resume_connection) resume_connection;
	__typeof__(&MHD_get_connection_values) get_connection_values;
	__typeof__(&MHD_get_connection_info) get_connection_info;
};

/* Filled by tp_mhd_load(); read-only afterwards. */
extern struct tp_mhd_api tp_mhd;

/* Loads libmicrohttpd once per process (thread-safe).  0, or -1 when the
 * library or one of its functions is missing. */
int tp_mhd_load(void);

#ifndef TP_MHD_IMPL
#define MHD_start_daemon (tp_mhd.start_daemon)
#define MHD_stop_daemon (tp_mhd.stop_daemon)
#define MHD_get_daemon_info (tp_mhd.get_daemon_info)
#define MHD_lookup_connection_value (tp_mhd.lookup_connection_value)
#define MHD_queue_response (tp_mhd.queue_response)
#define MHD_create_response_from_buffer (tp_mhd.create_response_from_buffer)
#define MHD_create_response_from_callback (tp_mhd.create_response_from_callback)
#define MHD_add_response_header (tp_mhd.add_response_header)
#define MHD_destroy_response (tp_mhd.destroy_response)
#define MHD_suspend_connection (tp_mhd.suspend_connection)
#define MHD_resume_connection (tp_mhd.resume_connection)
#define MHD_get_connection_values (tp_mhd.get_connection_values)
#define MHD_get_connection_info (tp_mhd.get_connection_info)
#endif

#endif
