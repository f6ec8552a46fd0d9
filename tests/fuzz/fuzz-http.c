/*
 * fuzz-http.c - libFuzzer target for the HTTP endpoint's request handling
 * (api/http.c and transport/http.c), from the method, the URL, the headers
 * and the body onwards, with no socket: libmicrohttpd is replaced by a
 * fake that this file gives the transport's loader (tp_mhd, transport/
 * mhd.h), so every request goes through the real ladder (Host and Origin,
 * Content-Type and Accept, the session and version headers, the body's
 * size and parse, POST, GET and DELETE, the legacy HTTP+SSE paths), the
 * real session table and SSE streams, and the real worker pool.
 *
 * Two servers run for the whole process, each on its own
 * mcp_server_run_http thread: server 0 keeps sessions and answers with
 * SSE, and serves the legacy HTTP+SSE transport too; server 1 is stateless
 * and answers with JSON.  Byte 0 of an input picks one.
 *
 * Input format (after byte 0): requests separated by lines that begin with
 * "%%", each request
 *
 *     METHOD URL
 *     Name: value            (any number of header lines)
 *                            (an empty line, then the body, if any)
 *     body bytes...
 *     %%flags
 *
 * where the flags after "%%" are letters: 'k' keeps the connection for
 * the next request (HTTP/1.1 keep-alive), 'c' sends the body in pieces of
 * 7 bytes, 'a' hangs up the client's end of the socket while the answer
 * is awaited, 'l' leaves an SSE response open (a GET's stream, to be read
 * again before each later request).  In the URL, the header values and
 * the body, "$SID" stands for the last Mcp-Session-Id a response gave,
 * "$EID" for the last SSE event id read, and "$EP" for the last endpoint
 * a legacy stream announced, so the fuzzer reaches a session's requests
 * without guessing random ids.
 *
 * Checked for every request: libmicrohttpd's own rules (one response per
 * request, queued only from the request's callback; a suspend only from a
 * callback; a resume only of a suspended connection; the whole body
 * taken); an answer always comes (a suspended request is resumed, a
 * stream ends once its client has gone); an error status carries a
 * JSON-RPC error body; every JSON body and every SSE event's data is
 * strict UTF-8 JSON-RPC; no request id is answered more often than it was
 * sent.  After each input every session it opened is deleted, every
 * stream left open is hung up, and then no handler may be left running and
 * every handler the servers traced as started must be traced as cleaned
 * up.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mcp/mcp.h>

#define TP_MHD_IMPL 1 /* the MHD_* names are the real declarations here */
#include "transport/mhd.h"
#include "tests/fuzz/fuzz-server.h"
#include "tests/fuzz/wire-check.h"

#define FAILF(...)                                                 \
	do {                                                       \
		fprintf(stderr, "fuzz-http: " __VA_ARGS__);        \
		fputc('\n', stderr);                               \
		abort();                                           \
	} while (0)

/* A handler's waits are at most MAX_WAIT_MS; a request the target waits
 * on longer than WAIT_LIMIT_MS counts as never answered. */
#define MAX_WAIT_MS 2
#define WAIT_LIMIT_MS 8000
#define SETTLE_LIMIT_MS 8000
#define MAX_REQUESTS 24
#define MAX_LIVE 4
#define MAX_SIDS 16
#define FAKE_PORT 8080

static int verbose;
static _Atomic int handlers_running;
static _Atomic int traced_started, traced_cleanups;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

/* ---- the fake libmicrohttpd --------------------------------------------------- */

/* One daemon per mcp_server_run_http: the callbacks the transport gave. */
typedef struct fake_daemon {
	MHD_AccessHandlerCallback dh;
	void *dh_cls;
	MHD_RequestCompletedCallback completed;
	void *completed_cls;
	MHD_NotifyConnectionCallback connection;
	void *connection_cls;
	_Atomic int stopped;
} fake_daemon;

static fake_daemon daemons[2];
static _Atomic int ndaemons;

typedef struct fake_value {
	enum MHD_ValueKind kind;
	char *key, *value;
} fake_value;

/* Appends one value to a list, taking `key` and `value` (malloc'd; NULL
 * means an allocation failed). */
static void values_add(fake_value **list, size_t *n, enum MHD_ValueKind kind, char *key,
		       char *value)
{
	fake_value *v = key && value ? realloc(*list, (*n + 1) * sizeof *v) : NULL;
	if (!v)
		FAILF("out of memory");
	*list = v;
	v[(*n)++] = (fake_value){ kind, key, value };
}

static void values_free(fake_value **list, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free((*list)[i].key);
		free((*list)[i].value);
	}
	free(*list);
	*list = NULL;
	*n = 0;
}

struct MHD_Response {
	_Atomic int refs;
	char *body;                  /* a buffer response */
	size_t len;
	MHD_ContentReaderCallback crc; /* or a callback one */
	void *crc_cls;
	MHD_ContentReaderFreeCallback crfc;
	size_t block;
	fake_value *headers;
	size_t nheaders;
};

struct MHD_Connection {
	fake_daemon *d;
	int fd[2];                   /* [0] the server's end, [1] the client's */
	void *socket_ctx;
	void *con_cls;
	const char *method;
	char *path;
	fake_value *values;          /* headers and GET arguments */
	size_t nvalues;
	/* Set while one of its callbacks runs (this thread). */
	int in_callback;
	struct MHD_Response *resp;
	unsigned status;
	int queued;                  /* responses queued for this request */
	pthread_mutex_t mu;          /* suspended, resumed */
	pthread_cond_t cv;
	int suspended;
	int resumed;
	union MHD_ConnectionInfo info;
};

static const char *value_of(struct MHD_Connection *c, enum MHD_ValueKind kind, const char *key)
{
	for (size_t i = 0; i < c->nvalues; i++)
		if ((c->values[i].kind & kind) &&
		    (kind == MHD_GET_ARGUMENT_KIND ? strcmp(c->values[i].key, key) == 0
						   : strcasecmp(c->values[i].key, key) == 0))
			return c->values[i].value;
	return NULL;
}

static struct MHD_Daemon *f_start_daemon(unsigned int flags, uint16_t port,
					 MHD_AcceptPolicyCallback apc, void *apc_cls,
					 MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	(void)flags, (void)port, (void)apc, (void)apc_cls;
	int k = atomic_load(&ndaemons);
	if (k >= 2)
		FAILF("a third daemon");
	fake_daemon *d = &daemons[k];
	d->dh = dh;
	d->dh_cls = dh_cls;
	va_list ap;
	va_start(ap, dh_cls);
	for (;;) {
		enum MHD_OPTION o = va_arg(ap, enum MHD_OPTION);
		if (o == MHD_OPTION_END)
			break;
		switch (o) {
		case MHD_OPTION_SOCK_ADDR:
			(void)va_arg(ap, const struct sockaddr *);
			break;
		case MHD_OPTION_THREAD_POOL_SIZE:
		case MHD_OPTION_CONNECTION_LIMIT:
			(void)va_arg(ap, unsigned int);
			break;
		case MHD_OPTION_CONNECTION_MEMORY_LIMIT:
			(void)va_arg(ap, size_t);
			break;
		case MHD_OPTION_NOTIFY_COMPLETED:
			d->completed = va_arg(ap, MHD_RequestCompletedCallback);
			d->completed_cls = va_arg(ap, void *);
			break;
		case MHD_OPTION_NOTIFY_CONNECTION:
			d->connection = va_arg(ap, MHD_NotifyConnectionCallback);
			d->connection_cls = va_arg(ap, void *);
			break;
		default:
			FAILF("the transport passed option %d, which the fake does not know",
			      (int)o);
		}
	}
	va_end(ap);
	if (!d->completed || !d->connection)
		FAILF("a daemon without its completion or connection callback");
	atomic_store(&ndaemons, k + 1);
	return (struct MHD_Daemon *)d;
}

static void f_stop_daemon(struct MHD_Daemon *daemon)
{
	atomic_store(&((fake_daemon *)daemon)->stopped, 1);
}

static const union MHD_DaemonInfo *f_get_daemon_info(struct MHD_Daemon *daemon,
						     enum MHD_DaemonInfoType kind, ...)
{
	static union MHD_DaemonInfo port_info = { .port = FAKE_PORT };
	(void)daemon;
	return kind == MHD_DAEMON_INFO_BIND_PORT ? &port_info : NULL;
}

static const char *f_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
					     const char *key)
{
	return key ? value_of(c, kind, key) : NULL;
}

static enum MHD_Result f_queue_response(struct MHD_Connection *c, unsigned int status,
					struct MHD_Response *r)
{
	if (!c->in_callback)
		FAILF("a response queued outside the request's callback");
	if (c->queued++)
		FAILF("a second response queued for one request (status %u after %u)", status,
		      c->status);
	if (status < 100 || status > 599)
		FAILF("status %u", status);
	atomic_fetch_add(&r->refs, 1);
	c->resp = r;
	c->status = status;
	return MHD_YES;
}

static struct MHD_Response *f_create_response_from_buffer(size_t size, void *buffer,
							  enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = calloc(1, sizeof *r);
	if (!r)
		FAILF("out of memory");
	atomic_init(&r->refs, 1);
	r->body = malloc(size + 1);
	if (!r->body)
		FAILF("out of memory");
	memcpy(r->body, buffer, size);
	r->body[size] = 0;
	r->len = size;
	if (mode == MHD_RESPMEM_MUST_FREE)
		free(buffer);
	return r;
}

static struct MHD_Response *f_create_response_from_callback(uint64_t size, size_t block,
							    MHD_ContentReaderCallback crc,
							    void *crc_cls,
							    MHD_ContentReaderFreeCallback crfc)
{
	(void)size;
	struct MHD_Response *r = calloc(1, sizeof *r);
	if (!r)
		FAILF("out of memory");
	atomic_init(&r->refs, 1);
	r->crc = crc;
	r->crc_cls = crc_cls;
	r->crfc = crfc;
	r->block = block ? block : 4096;
	return r;
}

static enum MHD_Result f_add_response_header(struct MHD_Response *r, const char *key,
					     const char *value)
{
	if (!key || !value || strpbrk(key, "\r\n:") || strpbrk(value, "\r\n"))
		FAILF("a response header that breaks the header block: %s: %s",
		      key ? key : "(null)", value ? value : "(null)");
	values_add(&r->headers, &r->nheaders, MHD_HEADER_KIND, strdup(key), strdup(value));
	return MHD_YES;
}

static void f_destroy_response(struct MHD_Response *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->crfc)
		r->crfc(r->crc_cls);
	values_free(&r->headers, &r->nheaders);
	free(r->body);
	free(r);
}

static void f_suspend_connection(struct MHD_Connection *c)
{
	if (!c->in_callback)
		FAILF("a connection suspended outside its callbacks");
	pthread_mutex_lock(&c->mu);
	if (c->suspended)
		FAILF("a connection suspended twice");
	c->suspended = 1;
	c->resumed = 0;
	pthread_mutex_unlock(&c->mu);
}

static void f_resume_connection(struct MHD_Connection *c)
{
	pthread_mutex_lock(&c->mu);
	if (!c->suspended)
		FAILF("a connection resumed that was not suspended");
	c->resumed = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static int f_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
				   MHD_KeyValueIterator it, void *cls)
{
	int n = 0;
	for (size_t i = 0; i < c->nvalues; i++) {
		if (!(c->values[i].kind & kind))
			continue;
		n++;
		if (it && it(cls, c->values[i].kind, c->values[i].key, c->values[i].value) != MHD_YES)
			break;
	}
	return n;
}

static const union MHD_ConnectionInfo *f_get_connection_info(struct MHD_Connection *c,
							     enum MHD_ConnectionInfoType kind, ...)
{
	/* Each call overwrites the connection's one union: the transport
	 * reads it at once, as it must with libmicrohttpd's. */
	if (kind == MHD_CONNECTION_INFO_CONNECTION_FD)
		c->info.connect_fd = c->fd[0];
	else if (kind == MHD_CONNECTION_INFO_SOCKET_CONTEXT)
		c->info.socket_context = c->socket_ctx;
	else
		return NULL;
	return &c->info;
}

struct tp_mhd_api tp_mhd = {
	.start_daemon = f_start_daemon,
	.stop_daemon = f_stop_daemon,
	.get_daemon_info = f_get_daemon_info,
	.lookup_connection_value = f_lookup_connection_value,
	.queue_response = f_queue_response,
	.create_response_from_buffer = f_create_response_from_buffer,
	.create_response_from_callback = f_create_response_from_callback,
	.add_response_header = f_add_response_header,
	.destroy_response = f_destroy_response,
	.suspend_connection = f_suspend_connection,
	.resume_connection = f_resume_connection,
	.get_connection_values = f_get_connection_values,
	.get_connection_info = f_get_connection_info,
};

int tp_mhd_load(void)
{
	return 0;
}

/* ---- the two servers ------------------------------------------------------------ */

static void on_trace(const char *event, const char *id_json, const char *reason, void *user)
{
	(void)id_json, (void)reason, (void)user;
	if (strcmp(event, "started") == 0)
		atomic_fetch_add(&traced_started, 1);
	else if (strcmp(event, "cleanup") == 0)
		atomic_fetch_add(&traced_cleanups, 1);
}

static mcp_server *servers[2];

static void *serve(void *arg)
{
	mcp_server *s = arg;
	int port = 0;
	int rc = mcp_server_run_http(s, "127.0.0.1:0", &port);
	if (rc != MCP_OK)
		FAILF("mcp_server_run_http: %s", mcp_strerror(rc));
	return NULL;
}

static mcp_server *server_new(int stateless)
{
	mcp_server *s = mcp_server_new("fuzz", "1.0");
	if (!s)
		FAILF("mcp_server_new failed");
	mcp_server_set_workers(s, 2);
	mcp_server_set_grace_ms(s, 1000);
	mcp_server_set_max_message(s, 4096);
	mcp_server_set_max_depth(s, 16);
	mcp_server_set_max_queue(s, 64);
	mcp_server_set_max_pending(s, 4);
	mcp_server_set_page_size(s, 2);
	mcp_server_set_task_ttl(s, 1000, 1000);
	mcp_server_set_max_tasks(s, 64);
	mcp_server_set_max_sessions(s, 32);
	mcp_server_set_max_streams(s, 4);
	mcp_server_set_stream_backlog(s, 16384);
	mcp_server_set_trace(s, on_trace, NULL);
	if (stateless) {
		mcp_server_set_http_stateless(s, 1);
		mcp_server_set_http_json(s, 1);
	} else {
		mcp_server_set_http_legacy_sse(s, 1);
	}
	if (fuzz_server_register(s, MAX_WAIT_MS, &handlers_running) != MCP_OK)
		FAILF("registering the handlers failed");
	return s;
}

static void servers_start(void)
{
	for (int i = 0; i < 2; i++) {
		servers[i] = server_new(i == 1);
		pthread_t t;
		if (pthread_create(&t, NULL, serve, servers[i]) != 0)
			FAILF("pthread_create failed");
		pthread_detach(t);
		/* Each daemon in its slot, in order. */
		int64_t until = now_ms() + 10000;
		while (atomic_load(&ndaemons) <= i) {
			if (now_ms() > until)
				FAILF("the server did not start");
			sleep_us(1000);
		}
	}
}

/* ---- one input ------------------------------------------------------------------ */

typedef struct run {
	wire_ids sent, answered;
	char *sids[MAX_SIDS];        /* every Mcp-Session-Id an answer gave */
	size_t nsids;
	char sid[128];               /* the last one */
	char eid[128];               /* the last SSE event id read */
	char ep[512];                /* the last legacy endpoint */
	struct MHD_Connection *kept; /* a connection kept alive */
	struct MHD_Connection *live[MAX_LIVE]; /* open SSE responses */
	size_t nlive;
	fake_daemon *d;
} run;

/* Replaces $SID, $EID and $EP in s[0..n).  Returns a malloc'd, NUL-ended
 * copy and its length in *out_n. */
static char *expand(const run *r, const char *s, size_t n, size_t *out_n)
{
	size_t cap = n + 1, len = 0;
	char *o = malloc(cap);
	if (!o)
		FAILF("out of memory");
	for (size_t i = 0; i < n;) {
		const char *rep = NULL;
		size_t skip = 0;
		if (s[i] == '$') {
			if (n - i >= 4 && memcmp(s + i, "$SID", 4) == 0)
				rep = r->sid, skip = 4;
			else if (n - i >= 4 && memcmp(s + i, "$EID", 4) == 0)
				rep = r->eid, skip = 4;
			else if (n - i >= 3 && memcmp(s + i, "$EP", 3) == 0)
				rep = r->ep, skip = 3;
		}
		size_t add = rep ? strlen(rep) : 1;
		if (len + add + 1 > cap) {
			cap = (len + add + 1) * 2;
			char *p = realloc(o, cap);
			if (!p)
				FAILF("out of memory");
			o = p;
		}
		if (rep) {
			memcpy(o + len, rep, add);
			i += skip;
		} else {
			o[len] = s[i++];
		}
		len += add;
	}
	o[len] = 0;
	*out_n = len;
	return o;
}

static void clear_values(struct MHD_Connection *c)
{
	values_free(&c->values, &c->nvalues);
	free(c->path);
	c->path = NULL;
}

static int hexval(int ch)
{
	return ch >= '0' && ch <= '9'	? ch - '0'
	       : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	       : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
					: -1;
}

/* Percent-decodes in place, as libmicrohttpd does for GET arguments ('+'
 * is a space). */
static void unescape(char *s)
{
	char *w = s;
	for (char *p = s; *p; p++) {
		if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
			*w++ = (char)(hexval(p[1]) * 16 + hexval(p[2]));
			p += 2;
		} else {
			*w++ = *p == '+' ? ' ' : *p;
		}
	}
	*w = 0;
}

/* The URL's path (the handler's `url`) and its query as GET arguments.
 * A NUL a decoded argument holds ends it, as in C strings. */
static void set_url(struct MHD_Connection *c, const char *url)
{
	const char *q = strchr(url, '?');
	c->path = strndup(url, q ? (size_t)(q - url) : strlen(url));
	if (!c->path)
		FAILF("out of memory");
	if (!q)
		return;
	char *query = strdup(q + 1);
	if (!query)
		FAILF("out of memory");
	char *save = NULL;
	for (char *part = strtok_r(query, "&", &save); part; part = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(part, '=');
		char *key = strndup(part, eq ? (size_t)(eq - part) : strlen(part));
		char *value = eq ? strdup(eq + 1) : NULL;
		if (!key || (eq && !value))
			FAILF("out of memory");
		unescape(key);
		if (value)
			unescape(value);
		values_add(&c->values, &c->nvalues, MHD_GET_ARGUMENT_KIND, key,
			   value ? value : strdup(""));
	}
	free(query);
}

static struct MHD_Connection *conn_open(run *r)
{
	struct MHD_Connection *c = calloc(1, sizeof *c);
	if (!c)
		FAILF("out of memory");
	c->d = r->d;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->fd) != 0)
		FAILF("socketpair: %s", strerror(errno));
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->d->connection(c->d->connection_cls, c, &c->socket_ctx, MHD_CONNECTION_NOTIFY_STARTED);
	return c;
}

static void conn_close(struct MHD_Connection *c)
{
	c->d->connection(c->d->connection_cls, c, &c->socket_ctx, MHD_CONNECTION_NOTIFY_CLOSED);
	if (c->socket_ctx)
		FAILF("the socket context outlived its connection");
	close(c->fd[0]);
	if (c->fd[1] >= 0)
		close(c->fd[1]);
	clear_values(c);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

/* The client hangs up its end (the server's watch sees it). */
static void hang_up(struct MHD_Connection *c)
{
	if (c->fd[1] >= 0) {
		close(c->fd[1]);
		c->fd[1] = -1;
	}
}

static enum MHD_Result call(struct MHD_Connection *c, const char *upload, size_t *size)
{
	c->in_callback = 1;
	enum MHD_Result rc = c->d->dh(c->d->dh_cls, c, c->path, c->method, "HTTP/1.1", upload, size,
				      &c->con_cls);
	c->in_callback = 0;
	return rc;
}

/* Waits for a suspended connection's resume.  0, or -1 past the limit. */
static int wait_resumed(struct MHD_Connection *c)
{
	int rc = 0;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_LIMIT_MS / 1000;
	pthread_mutex_lock(&c->mu);
	while (c->suspended && !c->resumed) {
		if (pthread_cond_timedwait(&c->cv, &c->mu, &until) == ETIMEDOUT) {
			rc = -1;
			break;
		}
	}
	if (rc == 0)
		c->suspended = c->resumed = 0;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int is_suspended(struct MHD_Connection *c)
{
	pthread_mutex_lock(&c->mu);
	int s = c->suspended;
	pthread_mutex_unlock(&c->mu);
	return s;
}

static const char *resp_header(const struct MHD_Response *r, const char *name)
{
	for (size_t i = 0; r && i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].key, name) == 0)
			return r->headers[i].value;
	return NULL;
}

/* One JSON-RPC text the server wrote (a JSON body, an event's data). */
static void check_message(run *r, const char *text, size_t len, const char *where)
{
	char why[256];
	if (wire_check_line(text, len, &r->sent, &r->answered, why, sizeof why) != 0)
		FAILF("%s: %s: %.*s", where, why, (int)(len > 300 ? 300 : len), text);
}

/* An error status's body: a JSON-RPC error. */
static void check_error_body(const struct MHD_Connection *c, const struct MHD_Response *resp)
{
	if (c->status < 400)
		return;
	const char *ct = resp_header(resp, "Content-Type");
	if (!resp->body || resp->len == 0 || !ct || strncmp(ct, "application/json", 16) != 0)
		FAILF("status %u for %s %s without a JSON-RPC body", c->status, c->method,
		      c->path);
	json_object *m = json_tokener_parse(resp->body);
	json_object *err = m ? fuzz_arg(m, "error") : NULL;
	if (!err || !json_object_is_type(fuzz_arg(err, "code"), json_type_int) ||
	    !json_object_is_type(fuzz_arg(err, "message"), json_type_string))
		FAILF("status %u with a body that is no JSON-RPC error: %.300s", c->status,
		      resp->body);
	json_object_put(m);
}

/* What an SSE response has delivered and not yet parsed into events. */
typedef struct sse_buf {
	char *p;
	size_t n, cap;
} sse_buf;

/* Parses the complete events in `b`: each data is a message, each id is
 * kept as $EID, and a legacy stream's endpoint event as $EP. */
static void sse_events(run *r, sse_buf *b)
{
	for (;;) {
		char *end = b->n ? memmem(b->p, b->n, "\n\n", 2) : NULL;
		if (!end)
			return;
		size_t elen = (size_t)(end - b->p) + 2;
		char event[64] = "message";
		char *data = NULL;
		size_t dlen = 0;
		for (char *line = b->p; line < end + 1;) {
			char *nl = memchr(line, '\n', (size_t)(end + 1 - line));
			size_t ll = (size_t)(nl - line);
			if (ll >= 5 && memcmp(line, "data:", 5) == 0) {
				const char *v = line + 5 + (ll > 5 && line[5] == ' ');
				size_t vl = ll - (size_t)(v - line);
				char *d = realloc(data, dlen + vl + 2);
				if (!d)
					FAILF("out of memory");
				data = d;
				if (dlen)
					data[dlen++] = '\n';
				memcpy(data + dlen, v, vl);
				dlen += vl;
				data[dlen] = 0;
			} else if (ll >= 3 && memcmp(line, "id:", 3) == 0) {
				size_t vl = ll - 3 - (ll > 3 && line[3] == ' ');
				if (vl < sizeof r->eid) {
					memcpy(r->eid, line + ll - vl, vl);
					r->eid[vl] = 0;
				}
			} else if (ll >= 6 && memcmp(line, "event:", 6) == 0) {
				size_t vl = ll - 6 - (ll > 6 && line[6] == ' ');
				if (vl < sizeof event) {
					memcpy(event, line + ll - vl, vl);
					event[vl] = 0;
				}
			} else if (ll && line[0] != ':' && memcmp(line, "retry:", 6) != 0) {
				FAILF("an SSE line that is no field: %.*s", (int)ll, line);
			}
			line = nl + 1;
		}
		if (data && strcmp(event, "endpoint") == 0) {
			if (dlen < sizeof r->ep)
				memcpy(r->ep, data, dlen + 1);
		} else if (data && dlen) {
			check_message(r, data, dlen, "SSE data");
		}
		free(data);
		memmove(b->p, b->p + elen, b->n - elen);
		b->n -= elen;
	}
}

/* Per connection with an SSE response open: what it delivered so far. */
static sse_buf live_buf[MAX_LIVE];

/* Reads an SSE response until it ends (1) or parks with nothing to send
 * (0).  `wait`: a parked response is waited for (a POST's, whose answer
 * is due) instead of returned. */
static int sse_read(run *r, struct MHD_Connection *c, sse_buf *b, int wait)
{
	struct MHD_Response *resp = c->resp;
	char *buf = malloc(resp->block);
	if (!buf)
		FAILF("out of memory");
	int spins = 0;
	uint64_t pos = 0;
	for (;;) {
		c->in_callback = 1;
		ssize_t n = resp->crc(resp->crc_cls, pos, buf, resp->block);
		c->in_callback = 0;
		if (n == MHD_CONTENT_READER_END_OF_STREAM || n == MHD_CONTENT_READER_END_WITH_ERROR) {
			free(buf);
			return 1;
		}
		if (n < 0 || (size_t)n > resp->block)
			FAILF("the reader returned %zd for a block of %zu", n, resp->block);
		if (n > 0) {
			pos += (uint64_t)n;
			if (b->n + (size_t)n > b->cap) {
				b->cap = (b->n + (size_t)n) * 2;
				char *p = realloc(b->p, b->cap);
				if (!p)
					FAILF("out of memory");
				b->p = p;
			}
			memcpy(b->p + b->n, buf, (size_t)n);
			b->n += (size_t)n;
			sse_events(r, b);
			continue;
		}
		if (!is_suspended(c)) {
			/* libmicrohttpd calls again at once: a reader that
			 * neither writes nor parks spins the thread. */
			if (++spins > 1000)
				FAILF("the SSE reader returns nothing without parking");
			continue;
		}
		if (!wait) {
			free(buf);
			return 0;
		}
		if (wait_resumed(c) != 0)
			FAILF("a POST's SSE response parked and never resumed");
	}
}

/* The request is over: completion, then the response goes, then the
 * connection closes unless kept. */
static void request_end(run *r, struct MHD_Connection *c, enum MHD_RequestTerminationCode toe,
			int keep)
{
	c->d->completed(c->d->completed_cls, c, &c->con_cls, toe);
	if (c->con_cls)
		FAILF("the request's context outlived its completion");
	f_destroy_response(c->resp);
	c->resp = NULL;
	c->queued = 0;
	c->status = 0;
	if (keep && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && !r->kept) {
		clear_values(c);
		r->kept = c;
	} else {
		conn_close(c);
	}
}

static void note_session(run *r, const struct MHD_Response *resp)
{
	const char *sid = resp_header(resp, "Mcp-Session-Id");
	if (!sid)
		return;
	if (strlen(sid) >= sizeof r->sid)
		FAILF("a session id of %zu bytes", strlen(sid));
	strcpy(r->sid, sid);
	for (size_t i = 0; i < r->nsids; i++)
		if (strcmp(r->sids[i], sid) == 0)
			return;
	if (r->nsids < MAX_SIDS) {
		r->sids[r->nsids] = strdup(sid);
		if (!r->sids[r->nsids])
			FAILF("out of memory");
		r->nsids++;
	}
}

/* The client hangs up an SSE response: parked, the server's watch must
 * wake it; then whatever it still had comes, and its end.  The request
 * then ends as a client's abort. */
static void hang_up_stream(run *r, struct MHD_Connection *c, sse_buf *b)
{
	hang_up(c);
	for (;;) {
		if (is_suspended(c) && wait_resumed(c) != 0)
			FAILF("a stream whose client hung up was never woken");
		if (sse_read(r, c, b, 0))
			break;
	}
	request_end(r, c, MHD_REQUEST_TERMINATED_CLIENT_ABORT, 0);
}

/* Takes live stream i out of the list (its buffer emptied, kept). */
static void live_remove(run *r, size_t i)
{
	live_buf[i].n = 0;
	r->live[i] = r->live[--r->nlive];
	sse_buf t = live_buf[i];
	live_buf[i] = live_buf[r->nlive];
	live_buf[r->nlive] = t;
}

static void live_hang_up(run *r, size_t i)
{
	hang_up_stream(r, r->live[i], &live_buf[i]);
	live_remove(r, i);
}

/* Reads every live stream that has been woken since. */
static void live_poll(run *r)
{
	for (size_t i = 0; i < r->nlive;) {
		struct MHD_Connection *c = r->live[i];
		pthread_mutex_lock(&c->mu);
		int woken = c->resumed;
		if (woken)
			c->suspended = c->resumed = 0;
		pthread_mutex_unlock(&c->mu);
		if (woken && sse_read(r, c, &live_buf[i], 0)) {
			request_end(r, c, MHD_REQUEST_TERMINATED_COMPLETED_OK, 0);
			live_remove(r, i);
			continue;
		}
		i++;
	}
}

/* Sends what is queued of a response: a buffer at once, an SSE response
 * until it ends (or, with `leave` and a GET, until it parks: it stays
 * open, read again later). */
static void deliver(run *r, struct MHD_Connection *c, int keep, int leave, int abort_client)
{
	struct MHD_Response *resp = c->resp;
	note_session(r, resp);
	if (verbose)
		fprintf(stderr, "<< [%lld] %u %s\n", (long long)now_ms(), c->status,
			resp->body ? resp->body : "(stream)");
	if (!resp->crc) {
		check_error_body(c, resp);
		const char *ct = resp_header(resp, "Content-Type");
		if (resp->len && ct && strncmp(ct, "application/json", 16) == 0)
			check_message(r, resp->body, resp->len, "JSON body");
		request_end(r, c, MHD_REQUEST_TERMINATED_COMPLETED_OK, keep);
		return;
	}
	if (c->status != 200)
		FAILF("an SSE response with status %u", c->status);
	if (abort_client) {
		sse_buf b = { 0 };
		hang_up_stream(r, c, &b);
		free(b.p);
		return;
	}
	int is_get = strcmp(c->method, "GET") == 0;
	if (is_get && leave) {
		if (r->nlive == MAX_LIVE)
			live_hang_up(r, 0);
		size_t i = r->nlive;
		if (!sse_read(r, c, &live_buf[i], 0)) {
			r->live[r->nlive++] = c;
			return;
		}
		live_buf[i].n = 0;
		request_end(r, c, MHD_REQUEST_TERMINATED_COMPLETED_OK, 0);
		return;
	}
	sse_buf b = { 0 };
	if (is_get) {
		/* A GET read once, then its client goes. */
		if (!sse_read(r, c, &b, 0)) {
			hang_up_stream(r, c, &b);
			free(b.p);
			return;
		}
	} else {
		sse_read(r, c, &b, 1);
	}
	free(b.p);
	request_end(r, c, MHD_REQUEST_TERMINATED_COMPLETED_OK, keep);
}

typedef struct request {
	const char *text;            /* METHOD URL, headers, body */
	size_t len;
	const char *flags;           /* after "%%", to the end of its line */
	size_t nflags;
} request;

static int has_flag(const request *q, char f)
{
	return q->flags && memchr(q->flags, f, q->nflags) != NULL;
}

static const char *const methods[] = { "GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS", NULL };

/* Runs one request through the daemon's callbacks, as libmicrohttpd would. */
static void do_request(run *r, const request *q)
{
	size_t n;
	char *text = expand(r, q->text, q->len, &n);
	/* The request line.  libmicrohttpd refuses what is not a token and a
	 * target, so only these reach the handler. */
	char *nl = memchr(text, '\n', n);
	char *line_end = nl ? nl : text + n;
	char *sp = memchr(text, ' ', (size_t)(line_end - text));
	if (!sp) {
		free(text);
		return;
	}
	*sp = 0;
	*line_end = 0;
	const char *method = NULL;
	for (int i = 0; methods[i]; i++)
		if (strcmp(text, methods[i]) == 0)
			method = methods[i];
	const char *url = sp + 1;
	if (!method || url[0] != '/' || strpbrk(url, " \r\t") || strlen(url) != (size_t)(line_end - url)) {
		free(text);
		return;
	}
	struct MHD_Connection *c = r->kept ? r->kept : conn_open(r);
	r->kept = NULL;
	c->method = method;
	set_url(c, url);
	/* Headers, to the first empty line; the rest is the body. */
	const char *body = NULL;
	size_t body_len = 0;
	char *p = nl ? nl + 1 : text + n;
	while (p < text + n) {
		char *e = memchr(p, '\n', (size_t)(text + n - p));
		char *le = e ? e : text + n;
		if (le == p) {
			body = p + 1;
			body_len = (size_t)(text + n - body);
			break;
		}
		char *colon = memchr(p, ':', (size_t)(le - p));
		if (colon && colon > p && !memchr(p, 0, (size_t)(le - p))) {
			const char *v = colon + 1;
			while (v < le && (*v == ' ' || *v == '\t'))
				v++;
			char *key = strndup(p, (size_t)(colon - p));
			char *value = strndup(v, (size_t)(le - v));
			if (!key || !value)
				FAILF("out of memory");
			values_add(&c->values, &c->nvalues, MHD_HEADER_KIND, key, value);
		}
		p = le + (e != NULL);
	}
	if (body && body_len) {
		char cl[32];
		snprintf(cl, sizeof cl, "%zu", body_len);
		if (!value_of(c, MHD_HEADER_KIND, "Content-Length") &&
		    !value_of(c, MHD_HEADER_KIND, "Transfer-Encoding"))
			values_add(&c->values, &c->nvalues, MHD_HEADER_KIND, strdup("Content-Length"),
				   strdup(cl));
		if (verbose)
			fprintf(stderr, ">> %s %s %.*s\n", method, url, (int)body_len, body);
		wire_note_sent(body, body_len, &r->sent);
	} else if (verbose) {
		fprintf(stderr, ">> [%lld] %s %s\n", (long long)now_ms(), method, url);
	}
	int keep = has_flag(q, 'k');
	int abort_client = has_flag(q, 'a');
	/* The header is in. */
	size_t zero = 0;
	if (call(c, NULL, &zero) != MHD_YES) {
		request_end(r, c, MHD_REQUEST_TERMINATED_WITH_ERROR, 0);
		free(text);
		return;
	}
	if (c->resp) {
		/* Refused before its body: sent, and the connection closes. */
		deliver(r, c, 0, 0, 0);
		free(text);
		return;
	}
	/* The body, whole or in pieces. */
	size_t piece = has_flag(q, 'c') ? 7 : body_len;
	for (size_t off = 0; body && off < body_len; off += piece) {
		size_t k = body_len - off < piece ? body_len - off : piece;
		size_t left = k;
		if (call(c, body + off, &left) != MHD_YES) {
			request_end(r, c, MHD_REQUEST_TERMINATED_WITH_ERROR, 0);
			free(text);
			return;
		}
		if (left != 0)
			FAILF("the handler left %zu of %zu body bytes", left, k);
		if (c->resp)
			FAILF("a response queued while the body was coming in");
	}
	/* The final call, and again after each resume. */
	for (int calls = 0;; calls++) {
		zero = 0;
		if (call(c, NULL, &zero) != MHD_YES) {
			request_end(r, c, MHD_REQUEST_TERMINATED_WITH_ERROR, 0);
			break;
		}
		if (c->resp) {
			deliver(r, c, keep, has_flag(q, 'l'), abort_client);
			break;
		}
		if (!is_suspended(c))
			FAILF("%s %s: no answer, and the connection was not suspended", method,
			      url);
		if (abort_client) {
			hang_up(c);
			abort_client = 0;
		}
		if (wait_resumed(c) != 0)
			FAILF("%s %s: suspended and never resumed", method, url);
		if (calls > 100)
			FAILF("%s %s: resumed a hundred times without an answer", method, url);
	}
	free(text);
}

/* Deletes the input's sessions (a stateless server gave none), hangs up
 * what is open, and waits until no handler runs. */
static void input_end(run *r)
{
	live_poll(r);
	for (size_t i = 0; i < r->nsids; i++) {
		char req[512];
		int k = snprintf(req, sizeof req,
				 "DELETE /mcp\nHost: localhost:%d\nMcp-Session-Id: %s\n"
				 "MCP-Protocol-Version: 2025-11-25\n",
				 FAKE_PORT, r->sids[i]);
		request q = { req, (size_t)k, NULL, 0 };
		do_request(r, &q);
		free(r->sids[i]);
	}
	r->nsids = 0;
	while (r->nlive)
		live_hang_up(r, r->nlive - 1);
	if (r->kept) {
		conn_close(r->kept);
		r->kept = NULL;
	}
	int64_t until = now_ms() + SETTLE_LIMIT_MS;
	if (verbose)
		fprintf(stderr, "[%lld] settling: %d running, %d started, %d cleaned up\n",
			(long long)now_ms(), atomic_load(&handlers_running), atomic_load(&traced_started),
			atomic_load(&traced_cleanups));
	while (atomic_load(&handlers_running) != 0 ||
	       atomic_load(&traced_started) != atomic_load(&traced_cleanups)) {
		if (now_ms() > until)
			FAILF("after the input: %d handlers running, %d started and %d cleaned up",
			      atomic_load(&handlers_running), atomic_load(&traced_started),
			      atomic_load(&traced_cleanups));
		sleep_us(200);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	const char *v = getenv("FUZZ_VERBOSE");
	verbose = v && *v == '1';
	wire_keep_tokeners(1);
	servers_start();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 16384)
		return 0;
	run r = { 0 };
	wire_ids_init(&r.sent);
	wire_ids_init(&r.answered);
	r.d = &daemons[data[0] & 1];
	const char *s = (const char *)data + 1, *end = (const char *)data + size;
	int nreq = 0;
	while (s < end && nreq < MAX_REQUESTS) {
		/* The request runs to a line that begins with "%%". */
		const char *sep = NULL;
		for (const char *p = s; p + 2 <= end; p++)
			if ((p == s || p[-1] == '\n') && p[0] == '%' && p[1] == '%') {
				sep = p;
				break;
			}
		request q = { s, (size_t)((sep ? sep : end) - s), NULL, 0 };
		if (q.len && q.text[q.len - 1] == '\n' && sep)
			q.len--;
		if (sep) {
			const char *fe = memchr(sep, '\n', (size_t)(end - sep));
			q.flags = sep + 2;
			q.nflags = (size_t)((fe ? fe : end) - q.flags);
			s = fe ? fe + 1 : end;
		} else {
			s = end;
		}
		live_poll(&r);
		do_request(&r, &q);
		nreq++;
	}
	input_end(&r);
	for (size_t i = 0; i < MAX_LIVE; i++) {
		free(live_buf[i].p);
		live_buf[i] = (sse_buf){ 0 };
	}
	wire_ids_free(&r.sent);
	wire_ids_free(&r.answered);
	return 0;
}
