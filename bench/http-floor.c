/*
 * http-floor.c - the floor of the HTTP benchmarks: libmicrohttpd with the
 * options libmcp's transport uses (an epoll thread pool of two, suspend and
 * resume allowed, the same connection and memory limits), and for each POST
 * the json-c work any JSON-RPC server does: parse the body (strict, depth
 * limit 128), build the answer of `echo` in mcp-everything's shape, and
 * serialise it.  No MCP, no session, no worker pool, no cancellation: what
 * is left of a stateless request once everything libmcp adds is removed.
 *
 * Usage: http-floor HOST:PORT    (port 0: a free one, printed on stdout)
 * Runs until SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "scan.h"

struct body {
	char *p;
	size_t len, cap;
};

static __thread json_tokener *tok;

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* The answer to a tools/call echo, as mcp-everything writes it. */
static char *answer(const char *text, size_t len, size_t *out_len)
{
	if (!tok) {
		tok = json_tokener_new_ex(128);
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	}
	json_tokener_reset(tok);
	json_object *m = json_tokener_parse_ex(tok, text, (int)len);
	if (!m || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(m);
		return NULL;
	}
	json_object *args = get(get(m, "params"), "arguments");
	json_object *r = json_object_new_object();
	json_object_object_add(r, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(r, "id", json_object_get(get(m, "id")));
	json_object *res = json_object_new_object();
	json_object *content = json_object_new_array();
	json_object *block = json_object_new_object();
	json_object_object_add(block, "type", json_object_new_string("text"));
	json_object_object_add(block, "text", json_object_get(get(args, "text")));
	json_object_array_add(content, block);
	json_object_object_add(res, "content", content);
	json_object_object_add(r, "result", res);
	size_t n;
	const char *s = json_object_to_json_string_length(
		r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	char *copy = malloc(n + 1);
	if (copy) {
		memcpy(copy, s, n + 1);
		*out_len = n;
	}
	json_object_put(r);
	json_object_put(m);
	return copy;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	(void)cls;
	(void)url;
	(void)version;
	struct body *b = *con_cls;
	if (!b) {
		if (!(b = calloc(1, sizeof *b)))
			return MHD_NO;
		*con_cls = b;
		return MHD_YES;
	}
	if (*upload_size) {
		if (b->len + *upload_size + 1 > b->cap) {
			size_t cap = (b->len + *upload_size + 1) * 2;
			char *p = realloc(b->p, cap);
			if (!p)
				return MHD_NO;
			b->p = p;
			b->cap = cap;
		}
		memcpy(b->p + b->len, upload, *upload_size);
		b->len += *upload_size;
		*upload_size = 0;
		return MHD_YES;
	}
	size_t n = 0;
	char *out = strcmp(method, "POST") == 0 && b->p ? answer(b->p, b->len, &n) : NULL;
	struct MHD_Response *r = MHD_create_response_from_buffer(
		out ? n : 0, out ? out : (void *)"", out ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(out);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result rc = MHD_queue_response(conn, out ? MHD_HTTP_OK : MHD_HTTP_BAD_REQUEST, r);
	MHD_destroy_response(r);
	return rc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	struct body *b = *con_cls;
	if (b) {
		free(b->p);
		free(b);
	}
	*con_cls = NULL;
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc != 2 || !strchr(argv[1], ':')) {
		fprintf(stderr, "usage: http-floor HOST:PORT\n");
		return 2;
	}
	struct sockaddr_in sa;
	if (scan_ipv4_target("http-floor", argv[1], &sa) != 0)
		return 2;
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, NULL,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
		(unsigned int)2, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(4096 + 64),
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024), MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "http-floor: cannot listen on %s\n", argv[1]);
		return 1;
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("%u\n", info ? info->port : 0);
	fflush(stdout);
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = on_signal;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	while (!stop)
		pause();
	MHD_stop_daemon(d);
	return 0;
}
