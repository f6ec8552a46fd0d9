/*
 * repro-nonfinite.c - regression test: mcp_ctx_progress() with a value that
 * is not a finite number must not put invalid JSON on the wire.
 *
 * json-c writes a NaN double as NaN and an infinite one as Infinity, which
 * no JSON parser accepts; the library passed the handler's numbers
 * through, so {"progress":NaN,"total":Infinity} reached the client.  The
 * call must fail with MCP_EINVAL instead, and every line stay JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>

#include "tests/fuzz/wire-check.h"

static int calls_refused;

static int t_report(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	calls_refused += mcp_ctx_progress(ctx, NAN, 2, NULL) == MCP_EINVAL;
	calls_refused += mcp_ctx_progress(ctx, 1, INFINITY, NULL) == MCP_EINVAL;
	calls_refused += mcp_ctx_progress(ctx, -INFINITY, 0, NULL) == MCP_EINVAL;
	mcp_ctx_progress(ctx, 1, 2, "a finite step still goes out");
	return mcp_result_add_text(out, "done");
}

int main(void)
{
	mcp_server *srv = mcp_server_new("repro", "1.0");
	mcp_tool tool = { MCP_TOOL_INIT, .name = "report", .fn = t_report };
	mcp_memconn *c = NULL;
	if (!srv || mcp_server_add_tool(srv, &tool) != MCP_OK ||
	    mcp_server_start_memory(srv, &c) != MCP_OK) {
		fprintf(stderr, "repro-nonfinite: cannot start a server\n");
		return 99;
	}
	static const char *const lines[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"report\",\"_meta\":{\"progressToken\":\"p\"}}}",
	};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		mcp_memconn_send(c, lines[i], strlen(lines[i]));
	int rc = 0, answered = 0;
	char *line = NULL, why[256];
	size_t len = 0;
	while (!answered && mcp_memconn_recv(c, 5000, &line, &len) == 1) {
		if (wire_check_line(line, len, NULL, NULL, why, sizeof why) != 0) {
			fprintf(stderr, "repro-nonfinite: %s: %s\n", why, line);
			rc = 1;
		}
		answered = strstr(line, "\"id\":2") != NULL;
		free(line);
	}
	mcp_memconn_free(c);
	mcp_server_free(srv);
	if (!answered || calls_refused != 3) {
		fprintf(stderr, "repro-nonfinite: %s, %d of 3 non-finite values refused\n",
			answered ? "answered" : "no answer", calls_refused);
		rc = 1;
	}
	return rc;
}
