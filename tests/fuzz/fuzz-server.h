/*
 * fuzz-server.h - the handlers the dispatch fuzz targets register (see
 * fuzz-server.c).  Test code; nothing here is in libmcp.
 */
#ifndef MCP_FUZZ_SERVER_H
#define MCP_FUZZ_SERVER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <mcp/mcp.h>

/* The member `key` of object `args` (borrowed), or NULL. */
json_object *fuzz_arg(json_object *args, const char *key);

/* The client's answer to `m` when it is a server-to-client request (an
 * object with an integer id and a method): a plausible result for each
 * method, or an error for every third id, written to `buf` (`size`
 * bytes).  Returns its length, or 0 when `m` is no such request. */
int fuzz_client_answer(json_object *m, char *buf, size_t size);

/* Adds the tools, resources, templates and prompt to `srv` (the caller's,
 * not yet serving).  Every handler waits at most `wait_ms` (a sleep, or a
 * request to the client); with `handlers_running` not NULL, each raises it
 * on entry and lowers it on return.  The two settings are the process's,
 * for every server registered since.  MCP_OK, or MCP_EINVAL when `srv`
 * refused a registration.  The thread that sets the server up. */
int fuzz_server_register(mcp_server *srv, int64_t wait_ms, _Atomic int *handlers_running);

#endif
