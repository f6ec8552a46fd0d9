/*
 * fuzz-framing.c - libFuzzer target for the inbound path below the MCP
 * layer: line framing and UTF-8 checks of the descriptor transport, then
 * JSON parsing and JSON-RPC envelope validation of the engine's reader.
 *
 * Each input is used three ways: the UTF-8 validator is compared with an
 * independent one; the bytes are written through a pipe in input-chosen
 * chunks and the transport's lines are compared with a reference framer
 * (framing must not depend on how the bytes arrive); and the bytes are fed
 * to a real engine session whose protocol hooks only check what reaches
 * them, and whose output is checked line by line.  Each line the reader's
 * fast path would take (eng_json_envelope) is also parsed by json-c, which
 * must read it as the same envelope.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/eng.h"
#include "tests/fuzz/wire-check.h"

#define FAILF(...)                                             \
	do {                                                   \
		fprintf(stderr, "fuzz-framing: " __VA_ARGS__); \
		fputc('\n', stderr);                           \
		abort();                                       \
	} while (0)

/* ---- the input's header -------------------------------------------------- */

/* Byte 0 picks the limits and the session's options, byte 1 seeds the
 * chunking of the pipe writes; the rest is the byte stream. */
typedef struct config {
	size_t max_message;
	int max_depth;
	int batches;
	unsigned seed;
} config;

static const size_t max_choices[4] = { 32, 200, 4096, 1u << 20 };
static const int depth_choices[4] = { 3, 8, 32, 128 };

static config parse_config(const uint8_t *d, size_t n)
{
	config c = { 4096, 128, 0, 1 };
	if (n > 0) {
		c.max_message = max_choices[d[0] & 3];
		c.max_depth = depth_choices[(d[0] >> 2) & 3];
		c.batches = (d[0] >> 4) & 1;
	}
	if (n > 1)
		c.seed = d[1] | 1u;
	return c;
}

/* ---- UTF-8: the transport's validator against wire_utf8_valid ------------ */

static void check_utf8(const uint8_t *d, size_t n)
{
	int a = tp_utf8_valid(d, n), b = wire_utf8_valid(d, n);
	if (a != b)
		FAILF("tp_utf8_valid says %d, the reference %d, on %zu bytes", a, b, n);
}

/* ---- framing: the fd transport against a reference framer ---------------- */

typedef struct event {
	int kind;            /* TP_LINE, TP_BADUTF8, TP_TOOLONG */
	const uint8_t *data; /* into the input, for lines */
	size_t len;
} event;

static int blank(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* What a newline-delimited stream means (README "framing"): a line is the
 * bytes before '\n' less one trailing '\r'; a longer line than the limit
 * is reported once and skipped; blank lines are skipped; a last line
 * without its newline still counts. */
static size_t reference_frame(const uint8_t *d, size_t n, size_t max, event *ev)
{
	size_t k = 0, pos = 0;
	while (pos < n) {
		const uint8_t *nl = memchr(d + pos, '\n', n - pos);
		size_t seg = nl ? (size_t)(nl - (d + pos)) : n - pos;
		const uint8_t *s = d + pos;
		pos += seg + (nl ? 1 : 0);
		size_t len = seg;
		if (len > 0 && s[len - 1] == '\r')
			len--;
		if (len > max) {
			ev[k++] = (event){ TP_TOOLONG, NULL, 0 };
			continue;
		}
		if (blank(s, len))
			continue;
		ev[k++] = (event){ tp_utf8_valid(s, len) ? TP_LINE : TP_BADUTF8, s, len };
	}
	return k;
}

typedef struct feeder {
	int fd;
	const uint8_t *data;
	size_t len;
	unsigned seed;
} feeder;

static void *feed(void *arg)
{
	feeder *f = arg;
	size_t off = 0;
	unsigned x = f->seed;
	while (off < f->len) {
		x = x * 1103515245u + 12345u;
		size_t chunk = 1 + (x >> 16) % 97;
		if ((x >> 8) % 5 == 0)
			chunk = 1 + (x >> 12) % 5000;
		if (chunk > f->len - off)
			chunk = f->len - off;
		ssize_t w = write(f->fd, f->data + off, chunk);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		off += (size_t)w;
	}
	close(f->fd);
	return NULL;
}

static void check_framing(const uint8_t *d, size_t n, const config *c)
{
	event *want = malloc((n + 1) * sizeof *want);
	if (!want)
		return;
	size_t nwant = reference_frame(d, n, c->max_message, want);

	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		free(want);
		return;
	}
	tp_conn *tp = tp_fd_new(p[0], -1, -1, c->max_message);
	if (!tp)
		FAILF("tp_fd_new failed");
	feeder f = { p[1], d, n, c->seed };
	pthread_t th;
	if (pthread_create(&th, NULL, feed, &f) != 0)
		FAILF("pthread_create failed");

	size_t got = 0;
	for (;;) {
		const char *line;
		size_t len;
		int rc = tp->ops->recv(tp, &line, &len);
		if (rc == TP_EOF)
			break;
		if (rc != TP_LINE && rc != TP_BADUTF8 && rc != TP_TOOLONG)
			FAILF("recv returned %d", rc);
		if (got >= nwant)
			FAILF("event %zu (kind %d, %zu bytes) past the %zu expected", got, rc,
			      rc == TP_TOOLONG ? 0 : len, nwant);
		const event *e = &want[got];
		if (rc != e->kind)
			FAILF("event %zu: kind %d, expected %d (limit %zu)", got, rc, e->kind,
			      c->max_message);
		if (rc != TP_TOOLONG) {
			if (len > c->max_message)
				FAILF("event %zu: a %zu-byte line passed the %zu-byte limit", got,
				      len, c->max_message);
			if (len != e->len || memcmp(line, e->data, len) != 0)
				FAILF("event %zu: line differs (%zu bytes, expected %zu)", got, len,
				      e->len);
		}
		got++;
	}
	if (got != nwant)
		FAILF("%zu events, expected %zu", got, nwant);
	pthread_join(th, NULL);
	tp->ops->free(tp);
	close(p[0]);
	free(want);
}

/* ---- the engine's reader over a session --------------------------------- */

static eng_pool pool;
static eng_stats stats;

/* The protocol hooks' state. */
typedef struct seen {
	_Atomic int detach_serial;  /* workers */
} seen;

static int valid_envelope(json_object *msg, json_object *id, const char *method)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(msg, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0)
		return 0;
	if (!json_object_object_get_ex(msg, "method", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), method) != 0)
		return 0;
	if (id && !json_object_is_type(id, json_type_int) &&
	    !json_object_is_type(id, json_type_string))
		return 0;
	if (json_object_object_get_ex(msg, "params", &v) &&
	    !json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array))
		return 0;
	return 1;
}

static json_object *params_of(eng_req *r)
{
	json_object *p = NULL;
	json_object_object_get_ex(r->msg, "params", &p);
	return p;
}

/* Ends a pooled request: silently when its token fired, else with a copy
 * of its params. */
static void finish(eng_req *r)
{
	if (eng_token_reason(&r->token) != MCP_CANCEL_NONE) {
		eng_req_finish_silent(r);
		return;
	}
	json_object *res = json_object_new_object();
	json_object *p = params_of(r);
	if (p)
		json_object_object_add(res, "params", json_object_get(p));
	eng_req_finish_result(r, res);
}

static void run_echo(eng_req *r)
{
	finish(r);
}

/* Blocks until a peer cancel or the close: costs no time, and keeps a
 * request in flight for cancels and duplicate ids. */
static void run_wait(eng_req *r)
{
	eng_token_sleep(&r->token, 60000);
	finish(r);
}

static void run_emit(eng_req *r)
{
	json_object *n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(n, "method", json_object_new_string("notifications/message"));
	eng_req_emit(r, n);
	finish(r);
}

/* A server-to-client request that waits for the fuzz input to answer it
 * (our ids count from 1 per session) or for the close. */
static void run_call(eng_req *r)
{
	json_object *m = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "method", json_object_new_string("roots/list"));
	json_object *answer = NULL;
	int rc = eng_req_call(r, m, -1, &answer);
	if (rc == MCP_OK && !json_object_is_type(answer, json_type_object))
		FAILF("eng_req_call answered with a non-object");
	json_object_put(answer);
	finish(r);
}

static void sink(eng_req *r, json_object *msg, void *arg)
{
	(void)r;
	(void)arg;
	json_object_put(msg);
}

/* Answers at once, then goes on under a private key until the close. */
static void run_detach(eng_req *r)
{
	seen *sn = r->sess->proto_data;
	char key[32];
	snprintf(key, sizeof key, "#%d", atomic_fetch_add(&sn->detach_serial, 1));
	if (eng_req_detach(r, json_object_new_object(), key, sink, NULL) == MCP_OK)
		eng_token_sleep(&r->token, 60000);
	finish(r);
}

static const struct {
	const char *name;
	void (*run)(eng_req *r);
} pooled[] = {
	{ "echo", run_echo }, { "wait", run_wait }, { "emit", run_emit },
	{ "call", run_call }, { "detach", run_detach },
};

static void on_request(eng_session *s, json_object *msg, json_object *id, const char *method,
		       json_object *params)
{
	if (!id || !valid_envelope(msg, id, method))
		FAILF("on_request got an invalid envelope");
	for (size_t i = 0; i < sizeof pooled / sizeof pooled[0]; i++)
		if (strcmp(method, pooled[i].name) == 0) {
			eng_session_submit(s, msg, id, pooled[i].run, NULL, NULL);
			return;
		}
	if (strcmp(method, "fail") == 0) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_PARAMS, "failed",
					  params ? json_object_get(params) : NULL);
	} else if (eng_session_id_in_flight(s, id)) {
		eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST,
					  "id in flight", NULL);
	} else {
		json_object *res = json_object_new_object();
		json_object_object_add(res, "method", json_object_new_string(method));
		eng_session_respond_result(s, id, res);
	}
	json_object_put(msg);
}

static void on_notification(eng_session *s, json_object *msg, const char *method,
			    json_object *params)
{
	json_object *v = NULL;
	if (!valid_envelope(msg, NULL, method) || json_object_object_get_ex(msg, "id", &v))
		FAILF("on_notification got an invalid envelope");
	if (strcmp(method, "notifications/cancelled") == 0 &&
	    json_object_object_get_ex(params, "requestId", &v))
		eng_session_cancel_peer(s, v);
	json_object_put(msg);
}

static int batches_on;

static int batches_allowed(eng_session *s)
{
	(void)s;
	return batches_on;
}

static json_object *cancel_notification(int64_t id, const char *reason)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "requestId", json_object_new_int64(id));
	json_object_object_add(p, "reason", json_object_new_string(reason));
	json_object *n = json_object_new_object();
	json_object_object_add(n, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(n, "method", json_object_new_string("notifications/cancelled"));
	json_object_object_add(n, "params", p);
	return n;
}

static const eng_proto proto = {
	.on_request = on_request,
	.on_notification = on_notification,
	.batches_allowed = batches_allowed,
	.cancel_notification = cancel_notification,
};

static int memfd_with(const uint8_t *d, size_t n)
{
	int fd = memfd_create("fuzz-in", MFD_CLOEXEC);
	if (fd < 0)
		FAILF("memfd_create: %s", strerror(errno));
	size_t off = 0;
	while (off < n) {
		ssize_t w = write(fd, d + off, n - off);
		if (w <= 0)
			FAILF("write to memfd failed");
		off += (size_t)w;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* `sent`: the requests of the input, valid or not (an invalid one with a
 * valid id is answered under it). */
static void check_output(int fd, const wire_ids *sent)
{
	off_t size = lseek(fd, 0, SEEK_END);
	if (size <= 0)
		return;
	char *buf = malloc((size_t)size);
	if (!buf)
		return;
	if (pread(fd, buf, (size_t)size, 0) != size)
		FAILF("short read of the output");
	if (buf[size - 1] != '\n')
		FAILF("the output does not end with a newline");
	wire_ids answered;
	wire_ids_init(&answered);
	char why[256];
	for (char *p = buf, *end = buf + size; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (wire_check_line(p, (size_t)(nl - p), sent, &answered, why, sizeof why) != 0)
			FAILF("output line %.*s: %s", (int)(nl - p > 300 ? 300 : nl - p), p, why);
		p = nl + 1;
	}
	wire_ids_free(&answered);
	free(buf);
}

static void check_session(const uint8_t *d, size_t n, const config *c)
{
	int in = memfd_with(d, n);
	int out = memfd_create("fuzz-out", MFD_CLOEXEC);
	if (out < 0)
		FAILF("memfd_create: %s", strerror(errno));
	tp_conn *tp = tp_fd_new(in, out, -1, c->max_message);
	if (!tp)
		FAILF("tp_fd_new failed");
	seen sn;
	atomic_init(&sn.detach_serial, 0);
	batches_on = c->batches;
	eng_limits lim = { .max_message = c->max_message,
			   .max_depth = c->max_depth,
			   .max_pending = 4,
			   .grace_ms = 5000 };
	eng_session *s = eng_session_new(tp, &pool, &stats, &lim, &proto, &sn);
	if (!s)
		FAILF("eng_session_new failed");
	eng_session_run(s);
	if (atomic_load(&stats.abandoned) || atomic_load(&stats.inflight_left) ||
	    atomic_load(&stats.pending_left))
		FAILF("the shutdown left requests behind");
	eng_session_unref(s);
	wire_ids sent;
	wire_ids_init(&sent);
	for (size_t pos = 0; pos < n;) {
		const uint8_t *nl = memchr(d + pos, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - (d + pos)) : n - pos;
		wire_note_sent((const char *)d + pos, len, &sent);
		pos += len + (nl ? 1 : 0);
	}
	check_output(out, &sent);
	wire_ids_free(&sent);
	close(in);
	close(out);
}

/* ---- the reader's fast path against json-c --------------------------------- */

/* Whatever line eng_json_envelope takes as a plain request, json-c (strict)
 * must read as that very envelope: the fast path may only skip the parse,
 * never change an answer. */
static void check_envelope(const uint8_t *d, size_t n)
{
	size_t pos = 0;
	while (pos < n) {
		const uint8_t *nl = memchr(d + pos, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - (d + pos)) : n - pos;
		const char *line = (const char *)d + pos;
		pos += len + (nl ? 1 : 0);
		eng_envelope env;
		if (!tp_utf8_valid((const unsigned char *)line, len) || !eng_json_envelope(line, len, 128, &env))
			continue;
		json_tokener *tok = json_tokener_new_ex(128);
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
		json_object *v = json_tokener_parse_ex(tok, line, (int)len);
		if (!v || json_tokener_get_error(tok) != json_tokener_success)
			FAILF("the envelope scan took a line json-c refuses: %.*s", (int)len, line);
		json_object *m = NULL, *id = NULL, *j = NULL, *params = NULL;
		if (!json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, "method", &m) ||
		    strcmp(json_object_get_string(m), env.method) != 0 ||
		    !json_object_object_get_ex(v, "jsonrpc", &j) ||
		    strcmp(json_object_get_string(j), "2.0") != 0 ||
		    !json_object_object_get_ex(v, "id", &id) ||
		    !json_object_is_type(id, env.id_is_string ? json_type_string : json_type_int))
			FAILF("the envelope scan misread: %.*s", (int)len, line);
		char *key = eng_json_dup(id, NULL);
		if (!key || strlen(key) != env.id_len || memcmp(key, env.id, env.id_len) != 0)
			FAILF("the envelope scan read id %.*s, json-c %s", (int)env.id_len, env.id,
			      key ? key : "(null)");
		free(key);
		int has_params = json_object_object_get_ex(v, "params", &params);
		if ((has_params && (!json_object_is_type(params, json_type_object) ||
				    json_object_object_get_ex(params, "_meta", NULL))) ||
		    json_object_object_length(v) != 3 + has_params)
			FAILF("the envelope scan took other members or params: %.*s", (int)len, line);
		json_object_put(v);
		json_tokener_free(tok);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (eng_pool_start(&pool, 2, 100000, 0) != MCP_OK)
		FAILF("eng_pool_start failed");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	config c = parse_config(data, size);
	const uint8_t *d = size > 2 ? data + 2 : data + size;
	size_t n = size > 2 ? size - 2 : 0;
	check_utf8(data, size);
	check_envelope(d, n);
	check_framing(d, n, &c);
	check_session(d, n, &c);
	return 0;
}
