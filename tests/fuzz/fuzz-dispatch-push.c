/*
 * fuzz-dispatch-push.c - libFuzzer target for the server's dispatch
 * through the engine's push entry (eng_session_feed), as Streamable HTTP
 * drives it: one mcp_server and its worker pool for the whole run, and
 * per input a push session that is fed the input's messages on this
 * thread and closed where the input says.  No thread is made per input.
 *
 * Byte 0 chooses the era and what comes first (see "Input format" below
 * and tests/fuzz/README.md); the rest is split at newlines, each piece
 * one message, except control lines (first byte 0x01-0x03) that cancel a
 * request, wait for the session to settle, or close it there, so the
 * close races the handlers still running.  Checked after each input:
 * every line the session wrote is strict UTF-8 JSON-RPC, no id has more
 * outcomes (answers and ended routes) than the client used it, nothing
 * is written after the output closed or fed after the close, the close
 * completes, no handler is left running or abandoned, and every handler
 * the server traced as started was traced as cleaned up.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mcp/mcp.h>

#include "api/internal.h"
#include "tests/fuzz/fuzz-server.h"
#include "tests/fuzz/wire-check.h"

#define FAILF(...)                                                   \
	do {                                                         \
		fprintf(stderr, "fuzz-dispatch-push: " __VA_ARGS__); \
		fputc('\n', stderr);                                 \
		abort();                                             \
	} while (0)

/* A handler's waits (sleep, a request to the client) are at most
 * MAX_WAIT_MS: long enough for the close and cancels to meet running
 * handlers, short enough for thousands of inputs a second (fuzz-dispatch
 * allows 20 ms).  The longest any wait of the target itself lasts before
 * it counts as a hang is CLOSE_LIMIT_MS (the grace is 2 s). */
#define MAX_WAIT_MS 2
#define SETTLE_MS 200
#define CLOSE_LIMIT_MS 4000

/* FUZZ_VERBOSE=1 in the environment shows the conversation on stderr. */
static int verbose;

/* Handlers running now, over every session (the task host's included):
 * raised on entry, lowered on return. */
static _Atomic int handlers_running;

/* ---- the server, made once ------------------------------------------------- */

static _Atomic int traced_started, traced_cleanups;

static void on_trace(const char *event, const char *id_json, const char *reason, void *user)
{
	(void)id_json;
	(void)reason;
	(void)user;
	/* Other events ("invalid_output") come between the two. */
	if (strcmp(event, "started") == 0)
		atomic_fetch_add(&traced_started, 1);
	else if (strcmp(event, "cleanup") == 0)
		atomic_fetch_add(&traced_cleanups, 1);
}

static mcp_server *srv;

static void server_init(void)
{
	srv = mcp_server_new("fuzz", "1.0");
	if (!srv)
		FAILF("mcp_server_new failed");
	mcp_server_set_workers(srv, 2);
	mcp_server_set_grace_ms(srv, 2000);
	mcp_server_set_max_message(srv, 1024);
	mcp_server_set_max_depth(srv, 16);
	mcp_server_set_max_queue(srv, 64);
	mcp_server_set_max_pending(srv, 4);
	mcp_server_set_page_size(srv, 2);
	mcp_server_set_instructions(srv, "fuzzing");
	/* Tasks outlive their input (the table is the server's): the
	 * shortest TTL and a small table keep what one input leaves for
	 * the next small. */
	mcp_server_set_task_ttl(srv, 1000, 1000);
	mcp_server_set_max_tasks(srv, 64);
	mcp_server_set_trace(srv, on_trace, NULL);
	if (fuzz_server_register(srv, MAX_WAIT_MS, &handlers_running) != MCP_OK)
		FAILF("registering the handlers failed");
	/* What mcp_server_run_http does before it serves: the worker pool
	 * (and the task store, none here) start once, for every session. */
	if (api_server_begin(srv) != MCP_OK)
		FAILF("api_server_begin failed");
}

/* ---- the transport: a push sink that keeps every line ---------------------- */

/* What the session wrote, in order.  Written by whichever thread produced
 * a line (under the session's writer lock and `mu`), read by the fuzzing
 * thread under `mu`. */
typedef struct capture {
	pthread_mutex_t mu;
	char **lines;
	size_t *lens;
	size_t n, cap;
	wire_ids ended;              /* routes that ended without an answer */
	int closed;                  /* close_output was called */
	int done;                    /* eng_session_close_poll returned 1 */
} capture;

static capture out = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void capture_reset(void)
{
	for (size_t i = 0; i < out.n; i++)
		free(out.lines[i]);
	out.n = 0;
	wire_ids_free(&out.ended);
	wire_ids_init(&out.ended);
	out.closed = 0;
	out.done = 0;
}

static int sink_send_routed(tp_conn *c, const tp_out *o, int n, const _Atomic int64_t *dl)
{
	(void)c;
	(void)dl;
	pthread_mutex_lock(&out.mu);
	if (out.closed)
		FAILF("a line was written after the output was closed");
	for (int i = 0; i < n; i++)
		if (out.done && o[i].data)
			FAILF("a line was written after the close completed: %.*s",
			      (int)(o[i].len > 300 ? 300 : o[i].len), o[i].data);
	for (int i = 0; i < n; i++) {
		if (!o[i].data) {
			if (!o[i].is_response)
				FAILF("an end of route that is not a request's end");
			if (verbose)
				fprintf(stderr, "<< (end of route %s)\n",
					o[i].route ? o[i].route : "(none)");
			if (o[i].route && wire_ids_add(&out.ended, o[i].route) != 0)
				FAILF("out of memory");
			continue;
		}
		if (o[i].len == 0 || o[i].data[o[i].len - 1] != '\n')
			FAILF("a line without its newline");
		if (out.n == out.cap) {
			size_t cap = out.cap ? out.cap * 2 : 64;
			char **l = realloc(out.lines, cap * sizeof *l);
			size_t *k = l ? realloc(out.lens, cap * sizeof *k) : NULL;
			if (l)
				out.lines = l;
			if (!k)
				FAILF("out of memory");
			out.lens = k;
			out.cap = cap;
		}
		char *copy = malloc(o[i].len);
		if (!copy)
			FAILF("out of memory");
		memcpy(copy, o[i].data, o[i].len - 1);
		copy[o[i].len - 1] = '\0';
		out.lines[out.n] = copy;
		out.lens[out.n] = o[i].len - 1;
		out.n++;
	}
	pthread_mutex_unlock(&out.mu);
	return 0;
}

static int sink_send(tp_conn *c, const struct iovec *iov, int n, const _Atomic int64_t *dl)
{
	(void)c, (void)iov, (void)n, (void)dl;
	FAILF("a push session wrote without its route");
}

static int sink_recv(tp_conn *c, const char **line, size_t *len)
{
	(void)c, (void)line, (void)len;
	FAILF("a push session read from its transport");
}

static void sink_wake(tp_conn *c)
{
	(void)c;
}

static void sink_close_output(tp_conn *c)
{
	(void)c;
	pthread_mutex_lock(&out.mu);
	out.closed = 1;
	pthread_mutex_unlock(&out.mu);
}

/* Set when the session of the input is destroyed (its last reference
 * gone, the transport freed with it). */
static _Atomic int sink_freed;

static void sink_free(tp_conn *c)
{
	free(c);
	atomic_store(&sink_freed, 1);
}

static const struct tp_ops sink_ops = {
	.recv = sink_recv,
	.send = sink_send,
	.send_routed = sink_send_routed,
	.wake = sink_wake,
	.close_output = sink_close_output,
	.free = sink_free,
};

/* ---- one push session per input -------------------------------------------- */

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

typedef struct run {
	eng_session *es;
	unsigned cfg;
	int closed;                  /* eng_session_close was called */
	size_t seen;                 /* output lines looked at for requests */
	wire_ids sent;
	char **ids;                  /* request ids in the order sent */
	size_t nids, capids;
} run;

/* Whether wire_note_sent could find a request in `line`: its lenient
 * parse with a tokener of depth 4096 (128 KiB, an mmap under ASan) is
 * needed only for a line that parses, or is too deep, for a small one of
 * the same grammar; and the kept tokener is dropped at every failure. */
static int may_hold_ids(const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return 1;
	json_object *v = json_tokener_parse_ex(tok, line, (int)len);
	enum json_tokener_error e = json_tokener_get_error(tok);
	json_tokener_free(tok);
	json_object_put(v);
	return e == json_tokener_success || e == json_tokener_error_depth;
}

static void note_ids(run *r, const char *line, size_t len)
{
	size_t before = r->sent.n;
	if (may_hold_ids(line, len))
		wire_note_sent(line, len, &r->sent);
	/* New keys only: a reused id is cancelled under its first place. */
	for (size_t i = before; i < r->sent.n; i++) {
		if (r->nids == r->capids) {
			size_t cap = r->capids ? r->capids * 2 : 16;
			char **p = realloc(r->ids, cap * sizeof *p);
			if (!p)
				FAILF("out of memory");
			r->ids = p;
			r->capids = cap;
		}
		r->ids[r->nids++] = r->sent.keys[i];
	}
}

/* Feeds one message as the HTTP transport would: a body that is not UTF-8
 * or holds a NUL never reaches the session (400), nor does one over the
 * size limit (413). */
static void feed(run *r, const char *line, size_t len)
{
	if (len > srv->max_message || memchr(line, '\0', len) ||
	    !tp_utf8_valid((const unsigned char *)line, len))
		return;
	if (verbose)
		fprintf(stderr, ">> %.*s\n", (int)len, line);
	/* A message fed after the close is refused: its id is not counted
	 * as used, so an answer to it fails the check of the lines. */
	if (!r->closed)
		note_ids(r, line, len);
	int rc = eng_session_feed(r->es, line, len, NULL, 0, NULL, NULL);
	if (r->closed && rc != MCP_ECLOSED)
		FAILF("a message was taken after the close");
	if (!r->closed && rc != MCP_OK)
		FAILF("eng_session_feed failed (%d) before the close", rc);
}

/* The client capabilities of byte 0 bit 2, in 2026-07-28 terms. */
static const char full_caps[] = "{\"roots\":{},\"sampling\":{},\"elicitation\":{},"
				"\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}";

/* Byte 0 bit 3: every message with a method gets the 2026-07-28 _meta
 * (kept where the input has its own), so the fuzzer reaches the modern
 * dispatch without spelling it in every line. */
static void feed_modern(run *r, const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *m = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	int whole = tok && json_tokener_get_error(tok) == json_tokener_success &&
		    json_tokener_get_parse_end(tok) == len;
	json_tokener_free(tok);
	json_object *params = fuzz_arg(m, "params");
	if (!whole || !json_object_is_type(m, json_type_object) || !fuzz_arg(m, "method") ||
	    (params && !json_object_is_type(params, json_type_object))) {
		json_object_put(m);
		feed(r, line, len);
		return;
	}
	if (!params) {
		params = json_object_new_object();
		json_object_object_add(m, "params", params);
	}
	json_object *meta = fuzz_arg(params, "_meta");
	if (!meta) {
		meta = json_object_new_object();
		json_object_object_add(params, "_meta", meta);
	}
	if (json_object_is_type(meta, json_type_object)) {
		if (!fuzz_arg(meta, API_META_VERSION))
			json_object_object_add(meta, API_META_VERSION,
					       json_object_new_string("2026-07-28"));
		if (!fuzz_arg(meta, API_META_CAPS))
			json_object_object_add(meta, API_META_CAPS,
					       json_tokener_parse(r->cfg & 4 ? full_caps : "{}"));
	}
	size_t n = 0;
	const char *text = json_object_to_json_string_length(
		m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (text)
		feed(r, text, n);
	json_object_put(m);
}

static void send_message(run *r, const char *line, size_t len)
{
	if (r->cfg & 8)
		feed_modern(r, line, len);
	else
		feed(r, line, len);
}

/* Byte 0 bit 7: the client answers the server's requests written since
 * the last look, with a plausible result per method, or an error for
 * every third id. */
static void answer_requests(run *r)
{
	for (;;) {
		pthread_mutex_lock(&out.mu);
		/* Parsed under the lock: a worker may grow the array. */
		json_object *m = r->seen < out.n ? json_tokener_parse(out.lines[r->seen]) : NULL;
		int more = r->seen < out.n;
		r->seen += more;
		pthread_mutex_unlock(&out.mu);
		if (!more)
			return;
		char buf[256];
		int n = fuzz_client_answer(m, buf, sizeof buf);
		if (n > 0 && !r->closed)
			feed(r, buf, (size_t)n);
		json_object_put(m);
	}
}

/* Control line 0x02, and the end of an input that answers: waits (at most
 * SETTLE_MS) until nothing of the session is in flight. */
static void settle(run *r)
{
	int64_t until = eng_now_ns() + SETTLE_MS * ENG_NS_PER_MS;
	for (int spins = 0; atomic_load(&r->es->inflight_n) > 0 && eng_now_ns() < until; spins++) {
		if (r->cfg & 128)
			answer_requests(r);
		if (spins < 64)
			sched_yield();
		else
			sleep_us(50);
	}
	if (r->cfg & 128)
		answer_requests(r);
}

static const int close_reasons[] = { MCP_CANCEL_TRANSPORT_CLOSED, MCP_CANCEL_SESSION_DELETED,
				     MCP_CANCEL_SHUTDOWN, MCP_CANCEL_SESSION_EXPIRED };

/* A control line: 0x01 K cancels the K-th request id sent (mod their
 * number; the last without K), 0x02 settles, 0x03 R closes the session
 * here with reason R.  Returns 0 when the line is a message. */
static int control(run *r, const unsigned char *p, size_t n)
{
	if (n == 0 || p[0] < 1 || p[0] > 3)
		return 0;
	if (p[0] == 1) {
		if (r->nids == 0)
			return 1;
		const char *key = r->ids[n > 1 ? p[1] % r->nids : r->nids - 1];
		char buf[512];
		int k = snprintf(buf, sizeof buf,
				 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
				 "\"params\":{\"requestId\":%s,\"reason\":\"fuzz\"}}",
				 key);
		if (k > 0 && (size_t)k < sizeof buf)
			send_message(r, buf, (size_t)k);
	} else if (p[0] == 2) {
		settle(r);
	} else if (!r->closed) {
		eng_session_close(r->es, close_reasons[n > 1 ? p[1] & 3 : 0]);
		r->closed = 1;
	}
	return 1;
}

static const char *const versions[] = { "2025-03-26", "2025-06-18", "2025-11-25", "2025-11-25" };
static const int preset_revs[] = { API_REV_2025_03_26, API_REV_2025_06_18, API_REV_2025_11_25,
				   API_REV_2025_11_25 };

/* Byte 0, bits 0-1: the session as HTTP opens it.  0: a session whose
 * client has not initialized (the input may); 1: the same after a valid
 * initialize (the revision of bits 5-6; notifications/initialized unless
 * bit 4); 2: a legacy session-less one, ready at the revision of bits 5-6;
 * 3: a 2026-07-28 session-less one (modern requests only; its tasks move
 * to the server's task host).  Bit 2: the client declares roots, sampling
 * and elicitation (and, modern, the tasks extension). */
static eng_session *open_session(run *r)
{
	tp_conn *tp = calloc(1, sizeof *tp);
	if (!tp)
		FAILF("out of memory");
	tp->ops = &sink_ops;
	tp->max_message = srv->max_message;
	unsigned mode = r->cfg & 3, rev = (r->cfg >> 5) & 3;
	int preset = mode == 2 ? preset_revs[rev] : mode == 3 ? API_REV_2026_07_28 : -1;
	r->es = api_server_open_session(srv, tp, preset, 1);
	if (!r->es)
		FAILF("api_server_open_session failed");
	if (mode == 1) {
		char init[512];
		int n = snprintf(init, sizeof init,
				 "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\","
				 "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":%s,"
				 "\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}",
				 versions[rev],
				 r->cfg & 4 ? "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}" : "{}");
		feed(r, init, (size_t)n);
		if (!(r->cfg & 16)) {
			static const char done[] =
				"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
			feed(r, done, sizeof done - 1);
		}
	}
	return r->es;
}

/* Waits until pred(arg) holds, at most `ms`: a few yields first (most
 * handlers end within microseconds), then 50 us naps.  Returns pred(arg). */
static int wait_until(int (*pred)(void *), void *arg, int ms)
{
	int64_t until = eng_now_ns() + (int64_t)ms * ENG_NS_PER_MS;
	for (int spins = 0; !pred(arg) && eng_now_ns() < until; spins++)
		if (spins < 64)
			sched_yield();
		else
			sleep_us(50);
	return pred(arg);
}

static int close_done(void *arg)
{
	return eng_session_close_poll(arg, eng_now_ns());
}

static int host_idle(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&srv->task_mu);
	eng_session *host = srv->task_host;
	int idle = !host || atomic_load(&host->inflight_n) == 0;
	pthread_mutex_unlock(&srv->task_mu);
	return idle;
}

static int output_closed(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&out.mu);
	int closed = out.closed;
	pthread_mutex_unlock(&out.mu);
	return closed;
}

static int session_freed(void *arg)
{
	(void)arg;
	return atomic_load(&sink_freed);
}

static int traces_paired(void *arg)
{
	(void)arg;
	return atomic_load(&traced_started) == atomic_load(&traced_cleanups);
}

static void close_and_check(run *r)
{
	if (!r->closed) {
		eng_session_close(r->es, MCP_CANCEL_TRANSPORT_CLOSED);
		r->closed = 1;
	}
	/* As api/http.c's tick: polled until the handlers are done, which
	 * they must be well within the grace (they honour their token). */
	if (!wait_until(close_done, r->es, CLOSE_LIMIT_MS))
		FAILF("the close did not complete in %d ms", CLOSE_LIMIT_MS);
	pthread_mutex_lock(&out.mu);
	out.done = 1;
	pthread_mutex_unlock(&out.mu);
	if (atomic_load(&srv->stats.abandoned) != 0)
		FAILF("a handler was abandoned at the close");
	/* A complete close has closed the output (it once said complete
	 * while another thread was still closing it: see the README). */
	if (!output_closed(NULL))
		FAILF("the close completed with the output still open");
	/* The 2026-07-28 tasks of a session-less request run on in the
	 * task host (by design); they end by themselves within 3 x MAX_WAIT_MS. */
	if (!wait_until(host_idle, NULL, CLOSE_LIMIT_MS))
		FAILF("the task host's handlers did not end");
	int running = atomic_load(&handlers_running);
	if (running != 0)
		FAILF("%d handlers still running after the close", running);
	/* "cleanup" is traced by the worker just after the request left the
	 * in-flight count, so it may trail the close by a moment. */
	if (!wait_until(traces_paired, NULL, 1000))
		FAILF("%d handlers traced as started, %d cleaned up",
		      atomic_load(&traced_started), atomic_load(&traced_cleanups));
	api_server_drop_session(srv, r->es);
	r->es = NULL;
	/* The last reference may be a request's, let go on its worker just
	 * after it ended.  Waited for, so that what the input allocated is
	 * freed within it (libFuzzer runs a whole-heap leak scan after each
	 * new input whose allocations and frees do not balance), and a
	 * reference never let go is found here. */
	if (!wait_until(session_freed, NULL, 1000))
		FAILF("the session was not freed: a reference to it is left");

	/* The lines, now that nothing can be added. */
	wire_ids answered;
	wire_ids_init(&answered);
	for (size_t i = 0; i < out.n; i++) {
		char why[256];
		if (verbose)
			fprintf(stderr, "<< %.*s\n", (int)out.lens[i], out.lines[i]);
		if (wire_check_line(out.lines[i], out.lens[i], &r->sent, &answered, why,
				    sizeof why) != 0)
			FAILF("output line %.*s: %s", (int)(out.lens[i] > 300 ? 300 : out.lens[i]),
			      out.lines[i], why);
	}
	/* One outcome per use of an id: an answer or an ended route. */
	for (size_t i = 0; i < out.ended.n; i++) {
		const char *key = out.ended.keys[i];
		size_t used = wire_ids_count(&r->sent, key);
		size_t outcomes = out.ended.counts[i] + wire_ids_count(&answered, key);
		if (used && outcomes > used)
			FAILF("id %s used %zu times, %zu outcomes", key, used, outcomes);
	}
	wire_ids_free(&answered);
}

/* ASan's defaults for this target (ASAN_OPTIONS still overrides them): a
 * 16 MiB quarantine instead of 256.  Every input makes and frees many
 * json-c objects; with the large quarantine each allocation lands on
 * memory not touched for a while, and page faults dominated (measured on
 * two loaded CPUs: 2,900 against 9,300 exec/s for an input with no
 * message, 142 against 299 on the grown corpus).  A use after free of
 * the last 16 MiB freed is still caught. */
const char *__asan_default_options(void);

const char *__asan_default_options(void)
{
	return "quarantine_size_mb=16";
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	wire_ids_init(&out.ended);
	/* Only this thread checks lines. */
	wire_keep_tokeners(1);
	server_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run r = { .cfg = size ? data[0] : 0 };
	wire_ids_init(&r.sent);
	capture_reset();
	atomic_store(&sink_freed, 0);
	open_session(&r);
	const char *p = (const char *)data + (size ? 1 : 0);
	const char *end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (!control(&r, (const unsigned char *)p, n))
			send_message(&r, p, n);
		p += n + (nl ? 1 : 0);
	}
	if ((r.cfg & 128) && !r.closed)
		settle(&r);
	close_and_check(&r);
	free(r.ids);
	wire_ids_free(&r.sent);
	return 0;
}
