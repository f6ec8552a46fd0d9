/*
 * http-none.c - the Streamable HTTP entry point of a build without
 * libmicrohttpd: the symbol exists (a stable ABI), the transport does not.
 */
#include "api/internal.h"

MCP_EXTERN int mcp_server_run_http(mcp_server *srv, const char *address, int *bound_port)
{
	(void)srv;
	(void)address;
	(void)bound_port;
	return MCP_ENOTSUP;
}
