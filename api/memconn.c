/*
 * memconn.c - embedding a server in-process: one connection over the
 * in-memory transport, served on a background reader thread.
 *
 * The client end is a thin wrapper over the transport's client calls, so an
 * embedded server runs the exact engine code a stdio server runs.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "api/internal.h"
#include "transport/sigpipe.h"

struct mcp_memconn {
	mcp_server *srv;
	tp_mem *mem;
	pthread_t thread;
	int rc;
};

static void *serve(void *arg)
{
	mcp_memconn *c = arg;
	c->rc = api_server_run_tp(c->srv, tp_mem_server(c->mem));
	return NULL;
}

MCP_EXTERN int mcp_server_start_memory(mcp_server *srv, mcp_memconn **out)
{
	if (!srv || !out)
		return MCP_EINVAL;
	*out = NULL;
	if (atomic_load(&srv->has_run))
		return MCP_ESTATE;
	mcp_memconn *c = calloc(1, sizeof *c);
	if (!c)
		return MCP_ENOMEM;
	c->srv = srv;
	c->mem = tp_mem_new(srv->max_message);
	if (!c->mem) {
		free(c);
		return MCP_ENOMEM;
	}
	if (tp_thread_create(&c->thread, NULL, serve, c)) {
		tp_mem_free(c->mem);
		free(c);
		return MCP_ESYS;
	}
	*out = c;
	return MCP_OK;
}

tp_mem *api_memconn_mem(mcp_memconn *c)
{
	return c ? c->mem : NULL;
}

MCP_EXTERN int mcp_memconn_send(mcp_memconn *c, const char *msg, size_t len)
{
	if (!c || (!msg && len))
		return MCP_EINVAL;
	int rc = tp_mem_client_send(c->mem, msg ? msg : "", len);
	return rc == 0 ? MCP_OK : rc == -EPIPE ? MCP_ECLOSED : MCP_ENOMEM;
}

MCP_EXTERN int mcp_memconn_recv(mcp_memconn *c, int64_t timeout_ms, char **msg, size_t *len)
{
	if (!c || !msg || !len)
		return MCP_EINVAL;
	*msg = NULL;
	*len = 0;
	/* Past INT_MAX ms (24 days) is as good as forever. */
	int wait = timeout_ms < 0 ? -1 : timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
	int rc = tp_mem_client_recv(c->mem, wait, msg, len);
	return rc < 0 ? MCP_ECLOSED : rc;
}

MCP_EXTERN void mcp_memconn_close(mcp_memconn *c)
{
	if (c)
		tp_mem_client_close(c->mem);
}

MCP_EXTERN int mcp_memconn_free(mcp_memconn *c)
{
	if (!c)
		return MCP_EINVAL;
	tp_mem_client_close(c->mem);
	pthread_join(c->thread, NULL);
	int rc = c->rc;
	/* An abandoned handler's session may still hold the transport: keep
	 * it alive with the rest of what such a handler can reach. */
	if (atomic_load(&c->srv->stats.abandoned) == 0 && c->srv->pool.detached == 0)
		tp_mem_free(c->mem);
	free(c);
	return rc;
}
