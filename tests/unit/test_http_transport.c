/*
 * test_http_transport.c - unit tests of the Streamable HTTP transport
 * (transport/http.c) through its own interface, tp_http_*, against a real
 * libmicrohttpd daemon on 127.0.0.1 (a port the kernel picks) and plain
 * sockets for clients.
 *
 * The test plays both neighbours of the transport: the layer above (the
 * hooks: a request opens a stream or a GET by the headers it carries, a
 * session's app is a counted object) and the engine (it writes a
 * session's output through its tp_conn's send_routed and closes it with
 * close_output, as a push writer would).
 *
 * What is pinned: the session table (publish, find with a reference, end,
 * the limit, growth past its first buckets, find racing end and close, the
 * references given back through session_gone); expiry of idle sessions and
 * not of busy ones; SSE event ids, the standalone stream, Last-Event-ID
 * replay and its refusals; the backlog that trims what a client that
 * stayed away owes; the cut of a reader that stops reading, and the
 * resumption after it; a JSON POST answered with its answer alone.
 *
 * Waits are for events (a hook's call, a line on a socket), bounded by
 * WAIT_MS to catch a hang; no assertion depends on how long anything
 * takes.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/eng.h"
#include "transport/tp_http.h"
#include "tests/unit/runner.h"

#define WAIT_MS 60000
#define MAX_APPS 512

/* Atomic counters read through functions, so a failed assertion prints
 * the counter's name rather than the expansion of atomic_load. */
static int geti(_Atomic int *p)
{
	return atomic_load(p);
}

/* ---- the layer above: apps and hooks ------------------------------------------ */

typedef struct app {
	_Atomic int refs;    /* the test's, the table's, lookups', requests' */
	int id;
	tp_http_sess *ts;
	_Atomic int expired; /* session_expired calls */
	_Atomic int gone;    /* session_gone calls */
	_Atomic int ended;   /* the test ended it (race test) */
	int published;
} app;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	tp_http *h;
	int port;
	int wake;            /* eventfd that ends tp_http_run */
	pthread_t runner;
	int running;
	int expired, gone;   /* hook calls */
	int done, client_left;
	int ticks;
	int64_t last_tick;
	int posts_opened;
	int last_post_rc, last_get_rc;
	app *apps[MAX_APPS];
	int napps;
} T;

static void app_unref(app *a)
{
	atomic_fetch_sub(&a->refs, 1);
}

static void hook_app_ref(void *arg, void *sess_app)
{
	(void)arg;
	atomic_fetch_add(&((app *)sess_app)->refs, 1);
}

static void note(int *counter)
{
	pthread_mutex_lock(&T.mu);
	(*counter)++;
	pthread_cond_broadcast(&T.cv);
	pthread_mutex_unlock(&T.mu);
}

static void hook_expired(void *arg, void *sess_app)
{
	(void)arg;
	app *a = sess_app;
	atomic_fetch_add(&a->expired, 1);
	/* The layer above ends the session: its engine closes the output. */
	tp_conn *c = tp_http_conn(a->ts);
	c->ops->close_output(c);
	note(&T.expired);
}

static void hook_gone(void *arg, void *sess_app)
{
	(void)arg;
	app *a = sess_app;
	atomic_fetch_add(&a->gone, 1);
	app_unref(a); /* the table's reference */
	note(&T.gone);
}

static void hook_tick(void *arg, int64_t now)
{
	(void)arg;
	pthread_mutex_lock(&T.mu);
	T.ticks++;
	T.last_tick = now;
	pthread_cond_broadcast(&T.cv);
	pthread_mutex_unlock(&T.mu);
}

static void hook_request_done(void *arg, void *req_app, int client_left)
{
	(void)arg;
	app_unref(req_app);
	pthread_mutex_lock(&T.mu);
	T.done++;
	T.client_left += client_left != 0;
	pthread_cond_broadcast(&T.cv);
	pthread_mutex_unlock(&T.mu);
}

static void hook_post_answer(void *arg, void *req_app, const char *line, size_t len, int closed,
			     tp_http_answer *out)
{
	(void)arg;
	(void)req_app;
	out->status = line ? 200 : closed ? 410 : 202;
	out->content_type = "application/json";
	out->body = line ? strndup(line, len) : NULL;
	out->len = line ? len : 0;
}

static unsigned status_of(int rc)
{
	switch (rc) {
	case -EINVAL: return 400;
	case -ENOENT: return 404;
	case -EBUSY:
	case -EEXIST: return 409;
	case -EPIPE: return 410;
	case -EAGAIN: return 429;
	default: return 500;
	}
}

/* Requests carry what the test wants in headers: Mcp-Session-Id names the
 * session; a POST opens the stream of X-Route (X-Mode: json for a JSON
 * answer), a GET opens the standalone stream or, with Last-Event-ID,
 * resumes one. */
static void hook_request(void *arg, tp_http_req *rq)
{
	(void)arg;
	const char *sid = tp_http_req_header(rq, "Mcp-Session-Id");
	app *a = sid ? tp_http_session_find(T.h, sid, 0) : NULL;
	if (!a) {
		tp_http_reply(rq, 404, NULL, NULL, 0, NULL);
		return;
	}
	if (strcmp(tp_http_req_method(rq), "POST") == 0) {
		const char *route = tp_http_req_header(rq, "X-Route");
		const char *mode = tp_http_req_header(rq, "X-Mode");
		unsigned flags = mode && strcmp(mode, "json") == 0 ? 0 : TP_HTTP_SSE;
		int rc = tp_http_post_open(rq, a->ts, route ? route : "r", flags);
		pthread_mutex_lock(&T.mu);
		T.last_post_rc = rc;
		pthread_mutex_unlock(&T.mu);
		if (rc) {
			tp_http_reply(rq, status_of(rc), NULL, NULL, 0, NULL);
			app_unref(a);
			return;
		}
		tp_http_req_set_app(rq, a); /* the lookup's reference, until request_done */
		tp_http_post_respond(rq, 1, NULL);
		note(&T.posts_opened);
		return;
	}
	int rc = tp_http_get(rq, a->ts, tp_http_req_header(rq, "Last-Event-ID"));
	pthread_mutex_lock(&T.mu);
	T.last_get_rc = rc;
	pthread_mutex_unlock(&T.mu);
	if (rc)
		tp_http_reply(rq, status_of(rc), NULL, NULL, 0, NULL);
	app_unref(a);
}

static void *run_thread(void *arg)
{
	(void)arg;
	tp_http_run(T.h, T.wake, INT64_MAX);
	return NULL;
}

/* Starts the daemon and its watch thread. */
static void start(size_t backlog, int64_t idle_ms, unsigned max_sessions)
{
	memset(&T, 0, sizeof T);
	pthread_mutex_init(&T.mu, NULL);
	eng_cond_init(&T.cv);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	tp_http_config cfg = {
		.addr = (struct sockaddr *)&sa,
		.addrlen = sizeof sa,
		.max_message = 1 << 20,
		.max_connections = 64,
		.max_sessions = max_sessions,
		.max_streams = 8,
		.stream_backlog = backlog,
		.session_idle_ms = idle_ms,
		.http_threads = 2,
		.hooks = { .request = hook_request,
			   .post_answer = hook_post_answer,
			   .request_done = hook_request_done,
			   .app_ref = hook_app_ref,
			   .session_expired = hook_expired,
			   .session_gone = hook_gone,
			   .tick = hook_tick },
		.arg = NULL,
	};
	ck_assert_int_eq(tp_http_start(&cfg, &T.h, &T.port), 0);
	ck_assert_int_gt(T.port, 0);
	T.wake = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(T.wake, 0);
	ck_assert_int_eq(pthread_create(&T.runner, NULL, run_thread, NULL), 0);
	T.running = 1;
}

static void stop_watch(void)
{
	if (!T.running)
		return;
	uint64_t one = 1;
	ck_assert_int_eq(write(T.wake, &one, sizeof one), (ssize_t)sizeof one);
	pthread_join(T.runner, NULL);
	T.running = 0;
}

/* A session for the test: its engine reference is the test's, and, when
 * published, the table holds one reference of its app. */
static app *session(int publish)
{
	int err = 0;
	tp_http_sess *ts = tp_http_session_new(T.h, 0, &err);
	ck_assert_msg(ts != NULL, "tp_http_session_new: %d", err);
	app *a = calloc(1, sizeof *a);
	ck_assert_ptr_nonnull(a);
	atomic_init(&a->refs, 1);
	a->ts = ts;
	a->id = T.napps;
	ck_assert_int_lt(T.napps, MAX_APPS);
	T.apps[T.napps++] = a;
	if (publish) {
		atomic_fetch_add(&a->refs, 1);
		a->published = 1;
		tp_http_session_publish(ts, a);
	}
	return a;
}

static tp_conn *conn_of(app *a)
{
	return tp_http_conn(a->ts);
}

/* The engine writes one line (or an end mark with line NULL). */
static void emit(app *a, const char *route, const char *line, int is_response)
{
	char buf[8192];
	size_t n = 0;
	if (line) {
		n = (size_t)snprintf(buf, sizeof buf, "%s\n", line);
		ck_assert_uint_lt(n, sizeof buf);
	}
	tp_out o = { line ? buf : NULL, n, route, is_response };
	tp_conn *c = conn_of(a);
	ck_assert_int_eq(c->ops->send_routed(c, &o, 1, NULL), 0);
}

static void close_output(app *a)
{
	tp_conn *c = conn_of(a);
	c->ops->close_output(c);
}

/* Waits until *counter >= n (a hook's calls). */
static void wait_count(int *counter, int n, const char *what)
{
	int64_t end = eng_now_ns() + WAIT_MS * ENG_NS_PER_MS;
	pthread_mutex_lock(&T.mu);
	while (*counter < n && eng_now_ns() < end) {
		struct timespec ts;
		eng_abstime(eng_now_ns() + 100 * ENG_NS_PER_MS, &ts);
		pthread_cond_timedwait(&T.cv, &T.mu, &ts);
	}
	int got = *counter;
	pthread_mutex_unlock(&T.mu);
	ck_assert_msg(got >= n, "timed out waiting for %s (%d of %d)", what, got, n);
}

static int count_of(int *counter)
{
	pthread_mutex_lock(&T.mu);
	int n = *counter;
	pthread_mutex_unlock(&T.mu);
	return n;
}

static int last_rc(int *rc)
{
	return count_of(rc);
}

/* Ends every session the test made: the output of each published one
 * closes (if not yet), the daemon stops (session_gone for each), and the
 * engine's references go.  Each app is then back to the test's one
 * reference.  (A session never published is only freed, as when its
 * engine session could not be made: the layer above publishes every
 * session it keeps.) */
static void finish(void)
{
	stop_watch();
	for (int i = 0; i < T.napps; i++)
		if (T.apps[i]->published)
			close_output(T.apps[i]);
	tp_http_stop(T.h);
	for (int i = 0; i < T.napps; i++) {
		app *a = T.apps[i];
		conn_of(a)->ops->free(conn_of(a));
		ck_assert_msg(geti(&a->refs) == 1, "app %d: %d references left", a->id,
			      atomic_load(&a->refs));
		ck_assert_int_le(geti(&a->gone), 1);
		free(a);
	}
	close(T.wake);
	pthread_cond_destroy(&T.cv);
	pthread_mutex_destroy(&T.mu);
}

/* ---- a client on a plain socket ------------------------------------------------- */

typedef struct client {
	int fd;
	char *buf;
	size_t len, cap;
	int eof;
} client;

static void client_connect(client *c, int rcvbuf)
{
	memset(c, 0, sizeof *c);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(c->fd, 0);
	if (rcvbuf > 0)
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)T.port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&sa, sizeof sa), 0);
}

static void client_close(client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
}

/* HTTP/1.0: the response ends with the connection, unchunked. */
static void client_send(client *c, const char *method, app *a, const char *extra)
{
	char req[1024];
	int n = snprintf(req, sizeof req,
			 "%s /mcp HTTP/1.0\r\nHost: 127.0.0.1\r\nMcp-Session-Id: %s\r\n%s%s",
			 method, tp_http_session_id(a->ts), extra ? extra : "",
			 strcmp(method, "POST") == 0 ? "Content-Length: 2\r\n\r\n{}" : "\r\n");
	ck_assert_int_lt(n, (int)sizeof req);
	ck_assert_int_eq(write(c->fd, req, (size_t)n), n);
}

/* Reads what is there (waiting up to WAIT_MS for something); 0 at EOF. */
static ssize_t client_read(client *c)
{
	struct pollfd p = { c->fd, POLLIN, 0 };
	int pr = poll(&p, 1, WAIT_MS);
	ck_assert_msg(pr == 1, "the server said nothing for %d ms", WAIT_MS);
	if (c->len + 65536 + 1 > c->cap) {
		c->cap = (c->len + 65536 + 1) * 2;
		c->buf = realloc(c->buf, c->cap);
		ck_assert_ptr_nonnull(c->buf);
	}
	ssize_t n = read(c->fd, c->buf + c->len, 65536);
	if (n < 0 && errno == ECONNRESET)
		n = 0;
	ck_assert_int_ge(n, 0);
	if (n == 0)
		c->eof = 1;
	c->len += (size_t)n;
	c->buf[c->len] = 0;
	return n;
}

static void client_read_until(client *c, const char *text)
{
	while (!strstr(c->buf ? c->buf : "", text)) {
		ck_assert_msg(!c->eof, "the response ended before %s: %s", text,
			      c->buf ? c->buf : "");
		client_read(c);
	}
}

static void client_read_all(client *c)
{
	while (!c->eof)
		client_read(c);
}

static int client_status(client *c)
{
	int st = 0;
	ck_assert_msg(c->buf && sscanf(c->buf, "HTTP/1.%*d %d", &st) == 1, "no status line: %s",
		      c->buf ? c->buf : "");
	return st;
}

static const char *client_body(client *c)
{
	const char *b = c->buf ? strstr(c->buf, "\r\n\r\n") : NULL;
	ck_assert_ptr_nonnull(b);
	return b + 4;
}

/* The complete SSE events of a body: their ids ("S-N", or "" without
 * one) and data. */
typedef struct event {
	char id[32];
	char data[8192];
} event;

static int sse_events(const char *body, event *out, int max)
{
	int n = 0;
	const char *p = body;
	for (;;) {
		const char *end = strstr(p, "\n\n");
		if (!end || n == max)
			return n;
		event *e = &out[n++];
		e->id[0] = e->data[0] = 0;
		for (const char *ln = p; ln < end;) {
			const char *nl = memchr(ln, '\n', (size_t)(end - ln));
			size_t len = nl ? (size_t)(nl - ln) : (size_t)(end - ln);
			if (len > 4 && strncmp(ln, "id: ", 4) == 0)
				snprintf(e->id, sizeof e->id, "%.*s", (int)(len - 4), ln + 4);
			else if (len >= 6 && strncmp(ln, "data: ", 6) == 0)
				snprintf(e->data, sizeof e->data, "%.*s", (int)(len - 6), ln + 6);
			ln += len + 1;
		}
		p = end + 2;
	}
}

static unsigned long long seq_of(const event *e)
{
	const char *dash = strchr(e->id, '-');
	ck_assert_msg(dash != NULL, "event id %s", e->id);
	return strtoull(dash + 1, NULL, 10);
}

/* A GET that resumes after `last`: retried while the stream is still
 * attached to the connection that left (409), which ends on its own. */
static void resume(client *c, app *a, const char *last)
{
	char hdr[128];
	snprintf(hdr, sizeof hdr, "Last-Event-ID: %s\r\n", last);
	for (int tries = 0;; tries++) {
		client_connect(c, 0);
		client_send(c, "GET", a, hdr);
		client_read_until(c, "\r\n\r\n");
		if (client_status(c) != 409)
			return;
		ck_assert_msg(tries < WAIT_MS / 10, "the stream stayed attached");
		client_close(c);
		usleep(10000);
	}
}

static event *events_new(int n)
{
	event *e = calloc((size_t)n, sizeof *e);
	ck_assert_ptr_nonnull(e);
	return e;
}

/* ---- tests ------------------------------------------------------------------------- */

/* Publish, find, end, the limit and the table's growth; the references
 * the lookups take; session_gone for each published session that closes;
 * the places of sessions that never got that far. */
START_TEST(session_table)
{
	start(1 << 16, 600000, 300);
	app *pub[200];
	for (int i = 0; i < 200; i++) /* past the first 64 and 128 buckets */
		pub[i] = session(1);
	for (int i = 0; i < 200; i++) {
		const char *id = tp_http_session_id(pub[i]->ts);
		ck_assert_uint_eq(strlen(id), 32);
		ck_assert_uint_eq(strspn(id, "0123456789abcdef"), 32);
		for (int k = 0; k < i; k++)
			ck_assert_str_ne(id, tp_http_session_id(pub[k]->ts));
	}
	for (int i = 0; i < 200; i++) {
		app *a = tp_http_session_find(T.h, tp_http_session_id(pub[i]->ts), 0);
		ck_assert_ptr_eq(a, pub[i]);
		ck_assert_int_eq(geti(&a->refs), 3); /* test, table, lookup */
		app_unref(a);
	}
	ck_assert_ptr_null(tp_http_session_find(T.h, "0123456789abcdef0123456789abcdef", 0));
	ck_assert_ptr_null(tp_http_session_find(T.h, "0123", 0));
	/* A Streamable HTTP id is no legacy HTTP+SSE id. */
	ck_assert_ptr_null(tp_http_session_find(T.h, tp_http_session_id(pub[0]->ts), 1));
	ck_assert_uint_eq(tp_http_sessions(T.h), 200);

	/* Ended: no longer found, still counted until its output closes. */
	for (int i = 0; i < 200; i += 2)
		tp_http_session_end(pub[i]->ts);
	for (int i = 0; i < 200; i++) {
		app *a = tp_http_session_find(T.h, tp_http_session_id(pub[i]->ts), 0);
		ck_assert_ptr_eq(a, i % 2 ? pub[i] : NULL);
		if (a)
			app_unref(a);
	}
	ck_assert_uint_eq(tp_http_sessions(T.h), 200);

	/* The limit counts places taken, published or not; ephemeral
	 * sessions have their own, and no id. */
	for (int i = 0; i < 99; i++)
		session(0);
	app *unpublished = session(0);
	int err = 0;
	ck_assert_ptr_null(tp_http_session_new(T.h, 0, &err));
	ck_assert_int_eq(err, -EBUSY);
	tp_http_sess *eph = tp_http_session_new(T.h, 1, &err);
	ck_assert_ptr_nonnull(eph);
	ck_assert_str_eq(tp_http_session_id(eph), "");
	ck_assert_uint_eq(tp_http_sessions(T.h), 301);
	/* One whose engine never started gives its place back when freed. */
	T.apps[--T.napps] = NULL;
	conn_of(unpublished)->ops->free(conn_of(unpublished));
	free(unpublished);
	tp_http_sess *again = tp_http_session_new(T.h, 0, &err);
	ck_assert_ptr_nonnull(again);
	tp_http_conn(again)->ops->free(tp_http_conn(again));
	/* An ephemeral one whose output closed leaves at once. */
	tp_http_conn(eph)->ops->close_output(tp_http_conn(eph));
	tp_http_conn(eph)->ops->free(tp_http_conn(eph));
	ck_assert_uint_eq(tp_http_sessions(T.h), 299);

	/* Closed: gone from the table on the watch thread, the table's
	 * reference handed back through session_gone. */
	for (int i = 0; i < 200; i++)
		close_output(pub[i]);
	wait_count(&T.gone, 200, "session_gone for every published session");
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(geti(&pub[i]->gone), 1);
		ck_assert_int_eq(geti(&pub[i]->refs), 1);
		ck_assert_ptr_null(tp_http_session_find(T.h, tp_http_session_id(pub[i]->ts), 0));
	}
	ck_assert_uint_eq(tp_http_sessions(T.h), 99);
	ck_assert_int_eq(count_of(&T.expired), 0);
	finish();
}
END_TEST

/* Lookups racing the end and the close of the sessions they look up: a
 * lookup that begins after the end returned finds nothing, and every
 * reference a lookup took is given back (each app ends with the test's
 * one).  Looped. */
#define FINDERS 3
#define RACE_SESSIONS 16

static _Atomic int race_stop;

static void *finder(void *arg)
{
	app **v = arg;
	unsigned k = 0;
	while (!atomic_load(&race_stop)) {
		app *want = v[k++ % RACE_SESSIONS];
		int ended_before = atomic_load(&want->ended);
		app *a = tp_http_session_find(T.h, tp_http_session_id(want->ts), 0);
		if (a) {
			ck_assert_ptr_eq(a, want);
			ck_assert_msg(!ended_before, "found session %d after its end", want->id);
			app_unref(a);
		}
	}
	return NULL;
}

START_TEST(lookups_race_end_and_close)
{
	for (int round = 0; round < 30; round++) {
		start(1 << 16, 600000, 100);
		app *v[RACE_SESSIONS];
		for (int i = 0; i < RACE_SESSIONS; i++)
			v[i] = session(1);
		atomic_store(&race_stop, 0);
		pthread_t th[FINDERS];
		for (int i = 0; i < FINDERS; i++)
			ck_assert_int_eq(pthread_create(&th[i], NULL, finder, v), 0);
		for (int i = 0; i < RACE_SESSIONS; i++) {
			if (i % 2) {
				tp_http_session_end(v[i]->ts);
				atomic_store(&v[i]->ended, 1);
			}
			close_output(v[i]); /* gone: no longer found either */
			atomic_store(&v[i]->ended, 1);
		}
		wait_count(&T.gone, RACE_SESSIONS, "every session gone");
		atomic_store(&race_stop, 1);
		for (int i = 0; i < FINDERS; i++)
			pthread_join(th[i], NULL);
		finish();
	}
}
END_TEST

/* An idle session expires (and is no longer found); one with a request's
 * stream open does not, however long it stays; once that stream has
 * ended it expires too. */
START_TEST(idle_sessions_expire_busy_ones_stay)
{
	start(1 << 16, 100, 100);
	app *idle = session(1), *busy = session(1);
	client c;
	client_connect(&c, 0);
	client_send(&c, "POST", busy, "X-Route: long\r\n");
	client_read_until(&c, "\r\n\r\n");
	ck_assert_int_eq(client_status(&c), 200);
	wait_count(&T.expired, 1, "the idle session's expiry");
	ck_assert_int_eq(geti(&idle->expired), 1);
	ck_assert_int_eq(geti(&busy->expired), 0);
	ck_assert_ptr_null(tp_http_session_find(T.h, tp_http_session_id(idle->ts), 0));
	wait_count(&T.gone, 1, "the expired session gone");

	/* Three idle periods of ticks later the busy one is still there. */
	pthread_mutex_lock(&T.mu);
	int64_t from = T.last_tick;
	pthread_mutex_unlock(&T.mu);
	for (;;) {
		int n = count_of(&T.ticks);
		wait_count(&T.ticks, n + 1, "a tick");
		pthread_mutex_lock(&T.mu);
		int64_t now = T.last_tick;
		pthread_mutex_unlock(&T.mu);
		if (now - from > 3 * 100 * ENG_NS_PER_MS)
			break;
	}
	ck_assert_int_eq(geti(&busy->expired), 0);
	app *found = tp_http_session_find(T.h, tp_http_session_id(busy->ts), 0);
	ck_assert_ptr_eq(found, busy);
	app_unref(found);

	/* Its request answered and its client gone: it idles, and expires. */
	emit(busy, "long", "{\"answer\":1}", 1);
	client_read_all(&c);
	ck_assert_ptr_nonnull(strstr(client_body(&c), "data: {\"answer\":1}"));
	client_close(&c);
	wait_count(&T.expired, 2, "the formerly busy session's expiry");
	ck_assert_int_eq(geti(&busy->expired), 1);
	wait_count(&T.gone, 2, "both gone");
	finish();
}
END_TEST

/* SSE event ids "S-N", the priming event, the standalone stream, a
 * client that leaves mid-stream and resumes with Last-Event-ID (only what
 * followed), a replay from the start, and the refusals. */
START_TEST(sse_ids_and_last_event_id_replay)
{
	start(1 << 16, 600000, 100);
	app *a = session(1);
	tp_conn *tc = conn_of(a);
	tc->ops->set_features(tc, TP_FEATURE_RESUMABLE);
	client c;
	client_connect(&c, 0);
	client_send(&c, "POST", a, "X-Route: r1\r\n");
	client_read_until(&c, "id: 1-0\nretry: 1000\ndata: \n\n");
	ck_assert_int_eq(client_status(&c), 200);
	ck_assert_ptr_nonnull(strstr(c.buf, "Content-Type: text/event-stream"));
	char line[64];
	for (int i = 1; i <= 3; i++) {
		snprintf(line, sizeof line, "{\"n\":%d}", i);
		emit(a, "r1", line, 0);
	}
	client_read_until(&c, "id: 1-3\n");
	client_read_until(&c, "{\"n\":3}\n\n");
	event ev[16];
	ck_assert_int_eq(sse_events(client_body(&c), ev, 16), 4);
	for (int i = 1; i <= 3; i++) {
		char id[16], data[32];
		snprintf(id, sizeof id, "1-%d", i);
		snprintf(data, sizeof data, "{\"n\":%d}", i);
		ck_assert_str_eq(ev[i].id, id);
		ck_assert_str_eq(ev[i].data, data);
	}
	/* The client leaves; the stream goes on logging. */
	client_close(&c);
	emit(a, "r1", "{\"n\":4}", 0);
	emit(a, "r1", "{\"n\":5}", 0);
	emit(a, "r1", "{\"n\":6,\"answer\":true}", 1);

	resume(&c, a, "1-2");
	ck_assert_int_eq(client_status(&c), 200);
	client_read_all(&c);
	int n = sse_events(client_body(&c), ev, 16);
	ck_assert_int_eq(n, 4);
	for (int i = 0; i < 4; i++) {
		char id[16];
		snprintf(id, sizeof id, "1-%d", i + 3);
		ck_assert_str_eq(ev[i].id, id);
	}
	ck_assert_str_eq(ev[3].data, "{\"n\":6,\"answer\":true}");
	client_close(&c);

	/* From the start: every message, not the priming event. */
	resume(&c, a, "1-0");
	client_read_all(&c);
	ck_assert_int_eq(sse_events(client_body(&c), ev, 16), 6);
	ck_assert_str_eq(ev[0].id, "1-1");
	ck_assert_str_eq(ev[5].id, "1-6");
	client_close(&c);

	/* Refusals: a stream the session never had, an id not of ours. */
	resume(&c, a, "9-1");
	ck_assert_int_eq(client_status(&c), 404);
	ck_assert_int_eq(last_rc(&T.last_get_rc), -ENOENT);
	client_close(&c);
	resume(&c, a, "bogus");
	ck_assert_int_eq(client_status(&c), 400);
	ck_assert_int_eq(last_rc(&T.last_get_rc), -EINVAL);
	client_close(&c);

	/* The standalone stream: lines tied to no request; one reader. */
	client s;
	client_connect(&s, 0);
	client_send(&s, "GET", a, NULL);
	client_read_until(&s, "id: 2-0\n");
	emit(a, NULL, "{\"method\":\"notifications/message\"}", 0);
	client_read_until(&s, "id: 2-1\nevent: message\ndata: {\"method\":\"notifications/message\"}\n\n");
	client second;
	client_connect(&second, 0);
	client_send(&second, "GET", a, NULL);
	client_read_until(&second, "\r\n\r\n");
	ck_assert_int_eq(client_status(&second), 409);
	ck_assert_int_eq(last_rc(&T.last_get_rc), -EBUSY);
	client_close(&second);
	/* The output closes: the standalone stream ends. */
	close_output(a);
	client_read_all(&s);
	client_close(&s);
	finish();
}
END_TEST

/* A client that stays away owes at most the backlog: the oldest events
 * it never got are dropped, and a resumption replays the newest,
 * contiguous, ending with the answer.  `resumable`: the stream starts
 * with the priming event (delivered before the client leaves). */
static void absent_client(size_t backlog, int resumable, int events, int pad)
{
	start(backlog, 600000, 100);
	app *a = session(1);
	if (resumable) {
		tp_conn *tc = conn_of(a);
		tc->ops->set_features(tc, TP_FEATURE_RESUMABLE);
	}
	client c;
	client_connect(&c, 0);
	client_send(&c, "POST", a, "X-Route: r\r\n");
	client_read_until(&c, resumable ? "id: 1-0\n" : "\r\n\r\n");
	client_close(&c);
	/* The transport sees the client leave (its watch), the exchange ends. */
	wait_count(&T.done, 1, "the POST's end");
	ck_assert_int_eq(count_of(&T.client_left), 1);
	char *line = malloc((size_t)pad + 64);
	ck_assert_ptr_nonnull(line);
	for (int i = 1; i <= events; i++) {
		int k = snprintf(line, 64, "{\"seq\":%d,\"pad\":\"", i);
		memset(line + k, 'p', (size_t)pad);
		strcpy(line + k + pad, "\"}");
		emit(a, "r", line, 0);
	}
	free(line);
	emit(a, "r", "{\"answer\":true}", 1);
	resume(&c, a, "1-0");
	ck_assert_int_eq(client_status(&c), 200);
	client_read_all(&c);
	event *ev = events_new(events + 2);
	int n = sse_events(client_body(&c), ev, events + 2);
	ck_assert_int_gt(n, 1);
	ck_assert_int_lt(n, events);
	ck_assert_uint_gt(seq_of(&ev[0]), 1);
	for (int i = 1; i < n; i++)
		ck_assert_uint_eq(seq_of(&ev[i]), seq_of(&ev[i - 1]) + 1);
	ck_assert_uint_eq(seq_of(&ev[n - 1]), (unsigned long long)events + 1);
	ck_assert_str_eq(ev[n - 1].data, "{\"answer\":true}");
	/* What was kept is the backlog, give or take the last event. */
	ck_assert_uint_le(strlen(client_body(&c)), backlog + (size_t)pad + 100);
	free(ev);
	client_close(&c);
	finish();
}

START_TEST(backlog_trims_what_an_absent_client_owes)
{
	/* A small backlog, on a stream without a priming event. */
	absent_client(2048, 0, 100, 100);
	/* A stream that began with its priming event, which the client got
	 * before it left.  The backlog here is past the 256 KiB kept of
	 * delivered events, and it is the bound.  (Below that it is not:
	 * log_trim stops at a delivered event at the head of the log while
	 * the log holds at most 256 KiB, so such a stream keeps up to that
	 * much for an absent client, not the backlog the man page of
	 * mcp_server_run_http promises.  Not pinned here: it is a defect of
	 * http.c, reported to its owner.) */
	absent_client(300 << 10, 1, 700, 1000);
}
END_TEST

/* A reader that stops reading while events pile up is cut off once it
 * owes more than the backlog; the stream stays, and a resumption from
 * the last event it got carries on, contiguous, to the answer. */
START_TEST(slow_reader_is_cut_and_resumes)
{
	const size_t backlog = 64 << 10;
	start(backlog, 600000, 100);
	app *a = session(1);
	tp_conn *tc = conn_of(a);
	tc->ops->set_features(tc, TP_FEATURE_RESUMABLE);
	client c;
	client_connect(&c, 4096);
	client_send(&c, "POST", a, "X-Route: big\r\n");
	client_read_until(&c, "id: 1-0\n");
	/* The client reads no more.  Push until the transport gives up on
	 * it (the exchange ends); far past any socket buffer it cannot. */
	char line[1100];
	memset(line, 'x', sizeof line);
	int seq = 0;
	while (count_of(&T.done) == 0) {
		ck_assert_msg(seq < 64 * 1024, "not cut after %d KiB", seq);
		seq++;
		int k = snprintf(line, sizeof line, "{\"seq\":%d,\"pad\":\"", seq);
		memset(line + k, 'x', 1000);
		snprintf(line + k + 1000, sizeof line - (size_t)k - 1000, "\"}");
		emit(a, "big", line, 0);
	}
	ck_assert_int_eq(count_of(&T.client_left), 1);
	/* What reached it: the events from the first, contiguous, then the
	 * end of the connection. */
	client_read_all(&c);
	event *ev = events_new(70000);
	int n = sse_events(client_body(&c), ev, 70000);
	ck_assert_int_ge(n, 1);
	int got = 0;
	for (int i = 1; i < n; i++) {
		ck_assert_uint_eq(seq_of(&ev[i]), (unsigned long long)i);
		got = i;
	}
	ck_assert_int_lt(got, seq);
	client_close(&c);

	emit(a, "big", "{\"answer\":true}", 1);
	char last[32];
	snprintf(last, sizeof last, "1-%d", got);
	resume(&c, a, last);
	ck_assert_int_eq(client_status(&c), 200);
	client_read_all(&c);
	int m = sse_events(client_body(&c), ev, 70000);
	ck_assert_int_ge(m, 1);
	ck_assert_uint_gt(seq_of(&ev[0]), (unsigned long long)got);
	for (int i = 1; i < m; i++)
		ck_assert_uint_eq(seq_of(&ev[i]), seq_of(&ev[i - 1]) + 1);
	ck_assert_uint_eq(seq_of(&ev[m - 1]), (unsigned long long)seq + 1);
	ck_assert_str_eq(ev[m - 1].data, "{\"answer\":true}");
	free(ev);
	client_close(&c);
	finish();
}
END_TEST

/* A JSON POST is answered with its answer alone (what came before it on
 * its route is not for it); a second request on a route still open is
 * refused; one still waiting when the output closes gets no answer. */
START_TEST(json_post_carries_only_its_answer)
{
	start(1 << 16, 600000, 100);
	app *a = session(1);
	client c, dup;
	client_connect(&c, 0);
	client_send(&c, "POST", a, "X-Route: j\r\nX-Mode: json\r\n");
	wait_count(&T.posts_opened, 1, "the POST's stream");
	client_connect(&dup, 0);
	client_send(&dup, "POST", a, "X-Route: j\r\nX-Mode: json\r\n");
	client_read_all(&dup);
	ck_assert_int_eq(client_status(&dup), 409);
	ck_assert_int_eq(last_rc(&T.last_post_rc), -EEXIST);
	client_close(&dup);
	emit(a, "j", "{\"method\":\"notifications/progress\"}", 0);
	emit(a, "j", "{\"id\":1,\"result\":{}}", 1);
	client_read_all(&c);
	ck_assert_int_eq(client_status(&c), 200);
	ck_assert_str_eq(client_body(&c), "{\"id\":1,\"result\":{}}");
	client_close(&c);

	/* The route is free again; cut off by the close, no answer. */
	client_connect(&c, 0);
	client_send(&c, "POST", a, "X-Route: j\r\nX-Mode: json\r\n");
	wait_count(&T.posts_opened, 2, "the second POST's stream");
	close_output(a);
	client_read_all(&c);
	ck_assert_int_eq(client_status(&c), 410);
	client_close(&c);
	finish();
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("http_transport");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, session_table);
	tcase_add_test(tc, lookups_race_end_and_close);
	tcase_add_test(tc, idle_sessions_expire_busy_ones_stay);
	tcase_add_test(tc, sse_ids_and_last_event_id_replay);
	tcase_add_test(tc, backlog_trims_what_an_absent_client_owes);
	tcase_add_test(tc, slow_reader_is_cut_and_resumes);
	tcase_add_test(tc, json_post_carries_only_its_answer);
	suite_add_tcase(s, tc);
	return s;
}
