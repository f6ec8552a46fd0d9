/*
 * fuzz-dispatch.c - libFuzzer target for the whole server: a fresh
 * mcp_server with tools, resources, templates and prompts per input,
 * served over the in-memory connection, fed the input as lines.
 *
 * Byte 0 chooses an optional valid initialize (revision and client
 * capabilities) sent first, so the fuzzer starts past the lifecycle, and
 * whether the client answers the server's own requests; the rest is split
 * at newlines, each piece sent as one message; then the input is closed
 * and everything the server wrote is read and checked:
 * strict UTF-8 JSON-RPC lines, no id answered more often than it was
 * used, every handler that started ended once, nothing abandoned.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>

#include "tests/fuzz/fuzz-server.h"
#include "tests/fuzz/wire-check.h"

#define FAILF(...)                                              \
	do {                                                    \
		fprintf(stderr, "fuzz-dispatch: " __VA_ARGS__); \
		fputc('\n', stderr);                            \
		abort();                                        \
	} while (0)

/* ---- one session per input ------------------------------------------------ */

typedef struct tally {
	_Atomic int started, cleanups;
} tally;

static void on_trace(const char *event, const char *id_json, const char *reason, void *user)
{
	(void)id_json;
	(void)reason;
	tally *t = user;
	/* Other events ("invalid_output") come between the two. */
	if (strcmp(event, "started") == 0)
		atomic_fetch_add(&t->started, 1);
	else if (strcmp(event, "cleanup") == 0)
		atomic_fetch_add(&t->cleanups, 1);
}

static mcp_server *new_server(tally *t)
{
	mcp_server *srv = mcp_server_new("fuzz", "1.0");
	if (!srv)
		FAILF("mcp_server_new failed");
	mcp_server_set_workers(srv, 2);
	mcp_server_set_grace_ms(srv, 5000);
	mcp_server_set_max_message(srv, 1024);
	mcp_server_set_max_depth(srv, 16);
	mcp_server_set_max_queue(srv, 64);
	mcp_server_set_max_pending(srv, 4);
	mcp_server_set_page_size(srv, 2);
	mcp_server_set_instructions(srv, "fuzzing");
	mcp_server_set_trace(srv, on_trace, t);
	if (fuzz_server_register(srv, 20, NULL) != MCP_OK)
		FAILF("registering the handlers failed");
	return srv;
}

static const char *const versions[] = { NULL, "2025-03-26", "2025-06-18", "2025-11-25" };

/* FUZZ_VERBOSE=1 in the environment shows the conversation on stderr
 * (for reading what a seed or a crash input does). */
static int verbose = -1;

static void show(const char *dir, const char *s, size_t n)
{
	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "%s %.*s\n", dir, (int)n, s);
}

static void send_line(mcp_memconn *c, const char *s, size_t n, wire_ids *sent)
{
	show(">>", s, n);
	wire_note_sent(s, n, sent);
	if (mcp_memconn_send(c, s, n) != MCP_OK)
		FAILF("mcp_memconn_send failed");
}

/* The client's answer to a server-to-client request: a plausible result
 * for each method, or an error for every third id. */
static void answer_request(mcp_memconn *c, const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *m = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	json_tokener_free(tok);
	char buf[256];
	int n = fuzz_client_answer(m, buf, sizeof buf);
	if (n > 0) {
		show(">>", buf, (size_t)n);
		mcp_memconn_send(c, buf, (size_t)n);
	}
	json_object_put(m);
}

/* Reads and checks one line; returns 0 when the output is closed. */
static int take(mcp_memconn *c, int timeout_ms, int answer, const wire_ids *sent,
		wire_ids *answered, int *quiet)
{
	char *line = NULL;
	size_t len = 0;
	int rc = mcp_memconn_recv(c, timeout_ms, &line, &len);
	*quiet = rc == 0;
	if (rc != 1)
		return rc == 0;
	show("<<", line, len);
	char why[256];
	if (wire_check_line(line, len, sent, answered, why, sizeof why) != 0)
		FAILF("output line %.*s: %s", (int)(len > 300 ? 300 : len), line, why);
	if (answer)
		answer_request(c, line, len);
	free(line);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tally t = { 0 };
	mcp_server *srv = new_server(&t);
	mcp_memconn *c = NULL;
	if (mcp_server_start_memory(srv, &c) != MCP_OK)
		FAILF("mcp_server_start_memory failed");
	wire_ids sent, answered;
	wire_ids_init(&sent);
	wire_ids_init(&answered);

	unsigned cfg = size ? data[0] : 0;
	const char *version = versions[cfg & 3];
	if (version) {
		char init[512];
		int n = snprintf(init, sizeof init,
				 "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\","
				 "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":%s,"
				 "\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}",
				 version,
				 cfg & 4 ? "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}" : "{}");
		send_line(c, init, (size_t)n, &sent);
		if (!(cfg & 8)) {
			static const char done[] =
				"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
			send_line(c, done, sizeof done - 1, &sent);
		}
	}
	const char *p = (const char *)data + (size ? 1 : 0);
	const char *end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		send_line(c, p, n, &sent);
		p += n + (nl ? 1 : 0);
	}
	/* Bit 4: act as a client that answers the server's requests, until
	 * the server has been quiet for 10 ms; then end the input. */
	int quiet = 0;
	if (cfg & 16)
		while (take(c, 10, 1, &sent, &answered, &quiet) && !quiet)
			;
	mcp_memconn_close(c);
	while (take(c, -1, 0, &sent, &answered, &quiet))
		;
	if (mcp_memconn_free(c) != MCP_OK)
		FAILF("the run did not end with MCP_OK");
	char *stats = mcp_server_stats_json(srv);
	if (stats && !strstr(stats, "\"abandoned\":0,"))
		FAILF("a handler was abandoned: %s", stats);
	free(stats);
	if (atomic_load(&t.started) != atomic_load(&t.cleanups))
		FAILF("%d handlers started, %d cleaned up", atomic_load(&t.started),
		      atomic_load(&t.cleanups));
	mcp_server_free(srv);
	wire_ids_free(&sent);
	wire_ids_free(&answered);
	return 0;
}
