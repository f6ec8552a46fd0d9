/*
 * greeter.c - the README's small server, built by the packaging tests
 * against an *installed* libmcp (make check-installed, make deb) with
 * nothing but `pkg-config --cflags --libs libmcp`.
 *
 * One tool, greet {name?}: reports progress, sleeps briefly in a way that
 * honours cancellation, and answers "Hello, <name>!".  SIGTERM and SIGINT
 * ask for the orderly shutdown.
 */
#define _POSIX_C_SOURCE 200809L /* sigaction under -std=c99 */

#include <mcp/mcp.h>
#include <mcp/client.h> /* compiled -std=c99 -pedantic too; not used */

#include <signal.h>
#include <stdio.h>
#include <string.h>

static mcp_server *srv;

/* Runs on a worker thread; `args` is borrowed and matches the input schema
 * (the library checked it), `out` belongs to the library. */
static int greet(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	const char *name = "world";
	char text[256];

	(void)user;
	mcp_args_string(args, "name", &name);
	mcp_ctx_progress(ctx, 1, 2, "thinking");
	if (mcp_ctx_sleep(ctx, 20) == MCP_ECANCELED)
		return MCP_ECANCELED; /* nothing is written for this request */
	snprintf(text, sizeof text, "Hello, %s!", name);
	return mcp_result_add_text(out, text);
}

static void on_signal(int sig)
{
	(void)sig;
	mcp_server_shutdown_from_signal(srv);
}

int main(void)
{
	mcp_tool tool;
	struct sigaction sa;
	int rc;

	/* The installed header and the installed library are one release. */
	if (mcp_version() != MCP_VERSION_NUM ||
	    strcmp(mcp_version_string(), MCP_VERSION_STRING) != 0) {
		fprintf(stderr, "greeter: built with libmcp %s, runs with %s\n",
			MCP_VERSION_STRING, mcp_version_string());
		return 1;
	}
	srv = mcp_server_new("greeter", "1.0.0");
	if (!srv) {
		fputs("greeter: out of memory\n", stderr);
		return 1;
	}
	memset(&tool, 0, sizeof tool);
	tool.struct_size = sizeof tool; /* what MCP_TOOL_INIT sets */
	tool.name = "greet";
	tool.description = "Says hello";
	tool.input_schema = "{\"type\":\"object\",\"properties\":"
			    "{\"name\":{\"type\":\"string\"}}}";
	tool.fn = greet;
	rc = mcp_server_add_tool(srv, &tool);
	if (rc != MCP_OK) {
		fprintf(stderr, "greeter: add_tool: %s\n", mcp_strerror(rc));
		mcp_server_free(srv);
		return 1;
	}

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	rc = mcp_server_run_stdio(srv); /* returns after the orderly shutdown */
	if (rc != MCP_OK)
		fprintf(stderr, "greeter: %s\n", mcp_strerror(rc));
	mcp_server_free(srv);
	return rc == MCP_OK ? 0 : 1;
}
