/*
 * repro-client-response.c - regression test for what fuzz-client-session
 * found: a server's line {"jsonrpc":"2.0","id":2,"result":{},"error":{}}
 * (both members, and an error without code or message) was routed to the
 * call waiting under id 2, and mcp_client_call_tool() returned
 * MCP_EREMOTE with the "error object" {}, which the header promises holds
 * {code, message}.  Such a line is not a response (JSON-RPC 2.0 section
 * 5): the engine now counts it as invalid and answers the waiting call
 * with its own -32603 that says so.
 *
 * A client over two pipes; a thread here plays the server: it answers
 * initialize, then answers each tools/call with one malformed response
 * (the call must fail at once with MCP_EREMOTE and the -32603 "Invalid
 * response ... (from the peer)"; its timeout is a minute), and the last
 * one with a valid error (MCP_EREMOTE with the server's code and
 * message).
 *
 * And a second finding: a notification {"jsonrpc":"2.0","method":""}
 * reached the host's notification handler with an empty method, which
 * names nothing.  The server thread sends one before its first answer,
 * then a notifications/custom; the handler must see the custom one once
 * and never the empty one.  Exits 0 on success.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mcp/client.h>
#include <mcp/mcp.h>
#include <json-c/json.h>

static const char *const answers[] = {
	"\"result\":{},\"error\":{}",
	"\"error\":{}",
	"\"error\":{\"code\":\"x\",\"message\":\"m\"}",
	"\"error\":{\"code\":-32000}",
	"\"error\":{\"code\":-32000,\"message\":\"refused\"}", /* valid: the last */
};
#define NANSWERS (sizeof answers / sizeof answers[0])

static int srv_in, srv_out;

/* The next request line's id and method (method copied), or -1 at EOF. */
static long long next_request(char *method, size_t msz)
{
	static char buf[8192];
	static size_t len;
	for (;;) {
		char *nl = memchr(buf, '\n', len);
		if (nl) {
			*nl = 0;
			json_object *m = json_tokener_parse(buf), *id = NULL, *me = NULL;
			long long r = -2;
			if (json_object_object_get_ex(m, "id", &id) &&
			    json_object_object_get_ex(m, "method", &me)) {
				r = json_object_get_int64(id);
				snprintf(method, msz, "%s", json_object_get_string(me));
			}
			json_object_put(m);
			size_t used = (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len - used);
			len -= used;
			if (r != -2)
				return r;
			continue;
		}
		ssize_t n = read(srv_in, buf + len, sizeof buf - len);
		if (n <= 0)
			return -1;
		len += (size_t)n;
	}
}

static void *server_main(void *arg)
{
	(void)arg;
	char method[64], line[512];
	size_t k = 0;
	long long id;
	while ((id = next_request(method, sizeof method)) >= 0) {
		int n;
		if (!strcmp(method, "tools/call") && k == 0) {
			static const char notes[] =
				"{\"jsonrpc\":\"2.0\",\"method\":\"\"}\n"
				"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/custom\"}\n";
			if (write(srv_out, notes, sizeof notes - 1) != (ssize_t)(sizeof notes - 1))
				break;
		}
		if (!strcmp(method, "initialize"))
			n = snprintf(line, sizeof line,
				     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":"
				     "{\"protocolVersion\":\"2025-06-18\","
				     "\"capabilities\":{\"tools\":{}},"
				     "\"serverInfo\":{\"name\":\"s\",\"version\":\"1\"}}}\n",
				     id);
		else if (!strcmp(method, "tools/call") && k < NANSWERS)
			n = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%lld,%s}\n",
				     id, answers[k++]);
		else
			continue;
		if (write(srv_out, line, (size_t)n) != n)
			break;
	}
	return NULL;
}

static int seen_custom, seen_empty;

static void on_notify(mcp_client *c, const char *method, json_object *params, void *user)
{
	(void)c;
	(void)params;
	(void)user;
	if (!method || !*method)
		seen_empty++;
	else if (!strcmp(method, "notifications/custom"))
		seen_custom++;
}

int main(void)
{
	int to_client[2], to_server[2];
	signal(SIGPIPE, SIG_IGN);
	if (pipe(to_client) || pipe(to_server))
		return 99;
	srv_in = to_server[0];
	srv_out = to_client[1];
	pthread_t th;
	if (pthread_create(&th, NULL, server_main, NULL))
		return 99;
	mcp_client *c = mcp_client_new("repro", "1");
	if (!c || mcp_client_set_protocol_version(c, "2025-06-18") != MCP_OK ||
	    mcp_client_set_notification_handler(c, on_notify, NULL) != MCP_OK ||
	    mcp_client_connect_fds(c, to_client[0], to_server[1]) != MCP_OK) {
		fprintf(stderr, "FAIL: connect: %s\n", c ? mcp_client_error(c) : "no client");
		return 1;
	}
	int failures = 0;
	for (size_t i = 0; i < NANSWERS; i++) {
		json_object *out = NULL;
		int rc = mcp_client_call_tool(c, "t", NULL, 60000, NULL, &out);
		int last = i + 1 == NANSWERS;
		json_object *code = NULL, *msg = NULL;
		/* Each malformed answer: our own -32603 saying the response
		 * was invalid, at once (the call does not wait out its
		 * timeout); the last: the server's own error. */
		int ok = rc == MCP_EREMOTE && json_object_object_get_ex(out, "code", &code) &&
			 json_object_object_get_ex(out, "message", &msg) &&
			 json_object_is_type(msg, json_type_string);
		if (ok && last)
			ok = json_object_get_int(code) == -32000 &&
			     !strcmp(json_object_get_string(msg), "refused");
		else if (ok)
			ok = json_object_get_int(code) == -32603 &&
			     !strncmp(json_object_get_string(msg), "Invalid response", 16) &&
			     strstr(json_object_get_string(msg), "(from the peer)");
		if (!ok) {
			fprintf(stderr, "FAIL: answer {%s}: rc %d, out %s\n", answers[i], rc,
				out ? json_object_to_json_string(out) : "NULL");
			failures++;
		}
		json_object_put(out);
	}
	/* Both notifications came before the first answer, on the same
	 * reader: handled by now. */
	if (seen_custom != 1 || seen_empty != 0) {
		fprintf(stderr, "FAIL: notifications: custom %d (want 1), empty method %d (want 0)\n",
			seen_custom, seen_empty);
		failures++;
	}
	mcp_client_close(c);
	close(to_client[0]);
	close(to_server[1]);
	pthread_join(th, NULL);
	mcp_client_free(c);
	close(to_client[1]);
	close(to_server[0]);
	if (failures)
		return 1;
	printf("PASS: repro-client-response\n");
	return 0;
}
