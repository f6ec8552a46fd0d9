/*
 * fuzz-client-session.c - libFuzzer target: a whole mcp_client fed what a
 * server sends, in any order: answers with the ids of its requests or
 * others, server-to-client requests (sampling, elicitation, roots, ping,
 * unknown methods), notifications, garbage.
 *
 * Threaded: the client has no entry that is fed bytes on the caller's
 * thread for a descriptor connection (its reader and workers are
 * threads), so each input makes a client over two pipes
 * (mcp_client_connect_fds) and a thread here plays the server.  Slow
 * (about a hundred inputs a second at best): fuzz-client covers the
 * HTTP reader alone, fast.
 *
 * Input: byte 0 chooses the revision the client offers and the server
 * answers (bits 0-1: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25; bit
 * 3 overrides them with 2026-07-28, where the handshake is server/discover
 * and every call carries its _meta, and a call's result may ask for input
 * rounds) and whether the client declares sampling, elicitation and roots
 * handlers (bit 2); the rest is split at newlines, each line written to the
 * client after the handshake, as is, except that a line starting with
 * byte 0x01 becomes an answer to the client's latest request:
 * {"jsonrpc":"2.0","id":<its id>,"result":<the rest>}.  Meanwhile the
 * client calls tools/call and tools/list, 15 ms each at most.
 *
 * Checked beyond ASan, UBSan and LeakSanitizer: the connect succeeds (the
 * handshake is valid); every call ends within its timeout plus ten seconds,
 * with MCP_OK and a result, MCP_EREMOTE and the error object (an integer
 * code and a message string), or another negative code and no result; a
 * notification reaches the handler with its method; the close and free
 * return (nothing hangs: libFuzzer's -timeout).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mcp/client.h>
#include <mcp/mcp.h>

#include "api/internal.h"

#define CALL_MS 15 /* each call's timeout */
#define SLACK_MS 10000 /* what a call may take past it (check_call) */
#define CONNECT_MS 15000 /* the handshake's bound: a valid one, on a busy machine */

static const char *const revisions[] = { "2024-11-05", "2025-03-26", "2025-06-18",
					 "2025-11-25" };
static const char modern_rev[] = "2026-07-28";

typedef struct fake_server {
	int in, out;                 /* reads the client, writes to it */
	const char *rev;
	const uint8_t *lines;
	size_t n;
	char buf[65536];
	size_t len;
	long long last_id;           /* the client's latest request id */
} fake_server;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz-client-session: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put(fake_server *s, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(s->out, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the client has gone */
		p += w;
		n -= (size_t)w;
	}
}

/* Reads what the client sent within `ms`; remembers its request ids, and
 * returns the method of the first complete request line (or NULL). */
static char *take(fake_server *s, int ms)
{
	char *method = NULL;
	struct pollfd p = { s->in, POLLIN, 0 };
	if (poll(&p, 1, ms) > 0 && s->len < sizeof s->buf) {
		ssize_t r = read(s->in, s->buf + s->len, sizeof s->buf - s->len);
		if (r > 0)
			s->len += (size_t)r;
	}
	char *nl;
	while ((nl = memchr(s->buf, '\n', s->len))) {
		*nl = 0;
		json_object *m = json_tokener_parse(s->buf);
		json_object *id = NULL, *meth = NULL;
		if (json_object_object_get_ex(m, "id", &id) &&
		    json_object_is_type(id, json_type_int) &&
		    json_object_object_get_ex(m, "method", &meth)) {
			s->last_id = json_object_get_int64(id);
			if (!method)
				method = strdup(json_object_get_string(meth));
		}
		json_object_put(m);
		size_t used = (size_t)(nl + 1 - s->buf);
		memmove(s->buf, nl + 1, s->len - used);
		s->len -= used;
	}
	if (s->len == sizeof s->buf)
		s->len = 0; /* a line too long to matter */
	return method;
}

static void *server_main(void *arg)
{
	fake_server *s = arg;
	/* The handshake: initialize, answered with the offered revision;
	 * at 2026-07-28, server/discover, answered with it as the one
	 * supported version. */
	int modern = strcmp(s->rev, modern_rev) == 0;
	const char *first = modern ? "server/discover" : "initialize";
	int64_t until = now_ms() + 2000;
	char *m = NULL;
	while (now_ms() < until && !(m && !strcmp(m, first))) {
		free(m);
		m = take(s, 20);
	}
	free(m);
	char line[512];
	int k = modern ? snprintf(line, sizeof line,
				  "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{"
				  "\"supportedVersions\":[\"%s\"],"
				  "\"capabilities\":{\"tools\":{\"listChanged\":true},\"logging\":{}},"
				  "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":"
				  "{\"name\":\"fuzz\",\"version\":\"1\"}}}}\n",
				  s->last_id, s->rev)
		       : snprintf(line, sizeof line,
				  "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"protocolVersion\":\"%s\","
				  "\"capabilities\":{\"tools\":{\"listChanged\":true},\"logging\":{}},"
				  "\"serverInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}\n",
				  s->last_id, s->rev);
	put(s, line, (size_t)k);
	/* Then the input's lines, reading the client in between. */
	const uint8_t *p = s->lines, *end = s->lines + s->n;
	while (p < end) {
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		const uint8_t *le = nl ? nl : end;
		free(take(s, 0));
		if (le > p && p[0] == 1) {
			free(take(s, 5));
			k = snprintf(line, sizeof line,
				     "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":", s->last_id);
			put(s, line, (size_t)k);
			put(s, (const char *)p + 1, (size_t)(le - p - 1));
			put(s, "}\n", 2);
		} else {
			put(s, (const char *)p, (size_t)(le - p));
			put(s, "\n", 1);
		}
		p = nl ? nl + 1 : end;
	}
	/* Reads on until the client is closed (its output ends). */
	for (;;) {
		struct pollfd pf = { s->in, POLLIN, 0 };
		if (poll(&pf, 1, 10) > 0) {
			char sink[4096];
			ssize_t r = read(s->in, sink, sizeof sink);
			if (r <= 0)
				break;
		}
	}
	return NULL;
}

static int on_request(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
		      json_object **result, void *user)
{
	(void)c;
	(void)params;
	(void)tok;
	(void)user;
	if (!method)
		fail("a request handler without a method", NULL);
	*result = json_tokener_parse(
		!strcmp(method, "roots/list")
			? "{\"roots\":[]}"
			: !strcmp(method, "elicitation/create")
				  ? "{\"action\":\"decline\"}"
				  : "{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
				    "\"text\":\"x\"},\"model\":\"m\"}");
	return MCP_OK;
}

static void on_notify(mcp_client *c, const char *method, json_object *params, void *user)
{
	(void)c;
	(void)params;
	(void)user;
	if (!method || !*method)
		fail("a notification without a method", NULL);
}

static void check_call(int rc, json_object *out, int64_t started, const char *what)
{
	/* A hang is what this catches, not a slow call: a loaded machine
	 * (CI runs the sanitizer builds beside each other) can stall a thread
	 * for seconds, so the bound is generous; libFuzzer's -timeout=20
	 * catches what never returns. */
	if (now_ms() - started > CALL_MS + SLACK_MS)
		fail("a call outlived its timeout by ten seconds", what);
	if (rc > 0 || (rc == MCP_OK && !out) || (rc != MCP_OK && rc != MCP_EREMOTE && out))
		fail("a call's code and result disagree", what);
	/* MCP_EREMOTE: *out is the JSON-RPC error object {code, message}. */
	json_object *code = NULL, *msg = NULL;
	if (rc == MCP_EREMOTE && out &&
	    (!json_object_object_get_ex(out, "code", &code) ||
	     !json_object_is_type(code, json_type_int) ||
	     !json_object_object_get_ex(out, "message", &msg) ||
	     !json_object_is_type(msg, json_type_string)))
		fail("a remote error without an integer code and a message",
		     json_object_to_json_string(out));
	json_object_put(out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int to_client[2], to_server[2];
	if (pipe(to_client) || pipe(to_server))
		fail("pipe", strerror(errno));
	fake_server s = { .in = to_server[0], .out = to_client[1], .rev = data[0] & 8 ? modern_rev : revisions[data[0] & 3],
			  .lines = data + 1, .n = size - 1 };
	mcp_client *c = mcp_client_new("fuzz-client-session", "1");
	if (!c || mcp_client_set_protocol_version(c, s.rev) != MCP_OK ||
	    mcp_client_set_grace_ms(c, 20) != MCP_OK ||
	    mcp_client_set_connect_timeout_ms(c, CONNECT_MS) != MCP_OK ||
	    mcp_client_set_notification_handler(c, on_notify, NULL) != MCP_OK)
		fail("cannot configure the client", NULL);
	if (data[0] & 4 &&
	    (mcp_client_set_sampling_handler(c, on_request, NULL) != MCP_OK ||
	     mcp_client_set_elicitation_handler(c, on_request, NULL, MCP_ELICIT_FORM) != MCP_OK ||
	     mcp_client_set_roots_handler(c, on_request, NULL) != MCP_OK))
		fail("cannot set the handlers", NULL);
	pthread_t th;
	if (pthread_create(&th, NULL, server_main, &s) != 0)
		fail("pthread_create", NULL);
	int rc = mcp_client_connect_fds(c, to_client[0], to_server[1]);
	if (rc != MCP_OK)
		fail("the handshake failed", mcp_client_error(c));
	json_object *out = NULL;
	int64_t t0 = now_ms();
	rc = mcp_client_call_tool(c, "echo", NULL, CALL_MS, NULL, &out);
	check_call(rc, out, t0, "tools/call");
	out = NULL;
	t0 = now_ms();
	rc = mcp_client_list_tools(c, CALL_MS, NULL, &out);
	check_call(rc, out, t0, "tools/list");
	mcp_client_close(c);
	/* The fake server may still be writing (EPIPE now, SIGPIPE is
	 * ignored) and reads until its input ends. */
	close(to_client[0]);
	close(to_server[1]);
	pthread_join(th, NULL);
	mcp_client_free(c);
	close(to_client[1]);
	close(to_server[0]);
	return 0;
}
