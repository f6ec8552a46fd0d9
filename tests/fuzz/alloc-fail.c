/*
 * alloc-fail.c - allocation-failure injection over a request's whole life:
 * the Nth allocation fails, for N = 1, 2, ... until a run needs no more,
 * and the server must neither crash, hang, leak nor answer wrongly.
 *
 * failmalloc.c interposes the allocator for the whole process, json-c
 * included.  The client side of the test runs on exempt threads: only the
 * server's threads (reader, writer, workers) see failures, except in the
 * set-up pass, which fails the server's construction on the test thread.
 *
 * Passes (the scenario is the same in each: initialize, tools/call echo, a
 * call cancelled while it runs, tools/list, a call cut off by the close):
 *   one   the Nth allocation fails, every N in turn;
 *   from  the Nth and every later one fails until the run ends, for a
 *         spread of N (the shutdown must still complete, bounded);
 *   setup mcp_server_new .. mcp_server_start_memory with the Nth failing.
 * Checked every time: no crash (else the test dies), no hang (a watchdog
 * alarm; the shutdown within 5 s), the heap back to its baseline (live
 * allocations counted by failmalloc), every output line a JSON-RPC
 * message, no id answered twice, no answer for the cancelled and the
 * cut-off calls, and for initialize, echo and tools/list either the right
 * answer or an error.  An answer that never comes while the run itself
 * succeeds is counted and reported; ALLOC_FAIL_STRICT=1 makes it a failure.
 * ALLOC_FAIL_VERBOSE=1 prints each run and the failed allocation's stack;
 * ALLOC_FAIL_ONLY=N runs the one case N (-N: every allocation from N on).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mcp/mcp.h>

#include "tests/fuzz/failmalloc.h"
#include "tests/fuzz/wire-check.h"

/* Sanitizer runtimes that clang links statically define malloc in the
 * executable themselves: interposing there would clash.  GCC's sanitizers
 * are shared libraries and sit behind RTLD_NEXT like libc. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define NO_INTERPOSE 1
#endif
#endif

#ifndef NO_INTERPOSE

/* ---- the scenario ------------------------------------------------------------ */

/* The ids of the scenario, as the client sends them. */
enum { ID_INIT = 1, ID_ECHO, ID_CANCELLED, ID_LIST, ID_CUT, NIDS };
static const char *const id_names[NIDS] = { "", "initialize", "echo", "cancelled call",
					    "tools/list", "call cut off by close" };

typedef struct run {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started[NIDS];      /* trace "started" seen per id */
	int cleanups[NIDS];
	int other_events;
	/* outcome per id: 0 none, 1 right result, 2 error (code), 3 wrong result */
	int outcome[NIDS];
	int code[NIDS];
	int run_rc;             /* what the connection's run returned */
	int bad;                /* a check failed: the message */
	char why[512];
} run;

static void on_trace(const char *event, const char *id_json, const char *reason, void *user)
{
	(void)reason;
	run *r = user;
	int id = atoi(id_json);
	pthread_mutex_lock(&r->mu);
	if (id > 0 && id < NIDS) {
		if (strcmp(event, "started") == 0)
			r->started[id]++;
		else if (strcmp(event, "cleanup") == 0)
			r->cleanups[id]++;
	} else {
		r->other_events++;
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static int t_echo(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	json_object *t = NULL;
	json_object_object_get_ex(args, "text", &t);
	return mcp_result_add_text(out, t ? json_object_get_string(t) : "");
}

static int t_sleep(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	json_object *ms = NULL;
	json_object_object_get_ex(args, "ms", &ms);
	int rc = mcp_ctx_sleep(ctx, json_object_get_int64(ms));
	if (rc != MCP_OK)
		return rc;
	return mcp_result_add_text(out, "slept");
}

static const mcp_tool tools[] = {
	{ MCP_TOOL_INIT, .name = "echo", .description = "echoes text",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}",
	  .fn = t_echo },
	{ MCP_TOOL_INIT, .name = "sleep", .fn = t_sleep },
};

static void fail_check(run *r, const char *fmt, const char *a, const char *b)
{
	if (!r->bad) {
		r->bad = 1;
		snprintf(r->why, sizeof r->why, fmt, a, b);
	}
}

/* Whether `line` is the right result for `id`. */
static int right_result(int id, const char *line)
{
	switch (id) {
	case ID_INIT:
		return strstr(line, "\"protocolVersion\":\"2025-11-25\"") &&
		       strstr(line, "\"serverInfo\"") != NULL;
	case ID_ECHO:
		return strstr(line, "{\"type\":\"text\",\"text\":\"hello\"}") != NULL;
	case ID_LIST:
		return strstr(line, "\"name\":\"echo\"") && strstr(line, "\"name\":\"sleep\"") &&
		       strstr(line, "\"inputSchema\"") != NULL;
	default:
		return 0;
	}
}

static void take_line(run *r, const char *line, size_t len, const wire_ids *sent,
		      wire_ids *answered)
{
	char why[200];
	if (wire_check_line(line, len, sent, answered, why, sizeof why) != 0) {
		fail_check(r, "bad output line (%s): %.150s", why, line);
		return;
	}
	for (int id = 1; id < NIDS; id++) {
		char key[8];
		int code = 0;
		snprintf(key, sizeof key, "%d", id);
		int a = wire_answer_of(line, len, key, &code);
		if (!a)
			continue;
		pthread_mutex_lock(&r->mu);
		if (a == 1) {
			r->outcome[id] = right_result(id, line) ? 1 : 3;
		} else {
			r->outcome[id] = 2;
			r->code[id] = code;
		}
		pthread_cond_broadcast(&r->cv);
		pthread_mutex_unlock(&r->mu);
	}
}

static void client_send(mcp_memconn *c, const char *s, wire_ids *sent)
{
	wire_note_sent(s, strlen(s), sent);
	mcp_memconn_send(c, s, strlen(s));
}

/* Reads what is there for up to ms, until `id` started or was answered. */
static void pump_until_started(run *r, mcp_memconn *c, int id, int ms, const wire_ids *sent,
			       wire_ids *answered)
{
	for (int waited = 0; waited < ms; waited += 5) {
		pthread_mutex_lock(&r->mu);
		int done = r->started[id] || r->outcome[id];
		pthread_mutex_unlock(&r->mu);
		if (done)
			return;
		char *line = NULL;
		size_t len = 0;
		int rc = mcp_memconn_recv(c, 5, &line, &len);
		if (rc == 1)
			take_line(r, line, len, sent, answered);
		free(line);
		if (rc < 0)
			return;
	}
}

static int workers = 2;

static mcp_server *make_server(run *r, int *rc_out)
{
	int rc = MCP_ENOMEM;
	mcp_server *srv = mcp_server_new("alloc-fail", "1.0");
	if (srv) {
		rc = mcp_server_set_workers(srv, workers);
		if (rc == MCP_OK)
			rc = mcp_server_set_grace_ms(srv, 1000);
		if (rc == MCP_OK)
			rc = mcp_server_set_trace(srv, on_trace, r);
		for (size_t i = 0; rc == MCP_OK && i < sizeof tools / sizeof tools[0]; i++)
			rc = mcp_server_add_tool(srv, &tools[i]);
	}
	*rc_out = rc;
	return srv;
}

/* One whole scenario.  `setup_fails`: the test thread is not exempt while
 * the server is built and started.  Returns 0, or -1 with r->why set. */
static int scenario(run *r, int setup_fails, long at, int from, int *missing)
{
	wire_ids sent, answered;
	wire_ids_init(&sent);
	wire_ids_init(&answered);
	*missing = 0;

	failmalloc_exempt(!setup_fails);
	failmalloc_arm(at, from);

	int rc;
	mcp_server *srv = make_server(r, &rc);
	mcp_memconn *c = NULL;
	if (rc == MCP_OK)
		rc = mcp_server_start_memory(srv, &c);
	failmalloc_exempt(1);
	if (rc != MCP_OK) {
		/* Set-up failed: it must say so cleanly and leave nothing. */
		if (!setup_fails)
			fail_check(r, "server set-up failed (%s)%s", mcp_strerror(rc), "");
		else if (rc != MCP_ENOMEM && rc != MCP_ESYS)
			fail_check(r, "set-up failed with %s, not MCP_ENOMEM/MCP_ESYS%s",
				   mcp_strerror(rc), "");
		mcp_server_free(srv);
		failmalloc_disarm();
		wire_ids_free(&sent);
		wire_ids_free(&answered);
		return r->bad ? -1 : 0;
	}

	client_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"alloc-fail\",\"version\":\"1\"}}}", &sent);
	client_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &sent);
	client_send(c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}", &sent);
	client_send(c, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"sleep\",\"arguments\":{\"ms\":30000}}}", &sent);
	pump_until_started(r, c, ID_CANCELLED, 300, &sent, &answered);
	client_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
		"{\"requestId\":3,\"reason\":\"test\"}}", &sent);
	client_send(c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}", &sent);
	client_send(c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"sleep\",\"arguments\":{\"ms\":30000}}}", &sent);
	pump_until_started(r, c, ID_CUT, 300, &sent, &answered);
	mcp_memconn_close(c);

	/* Everything the server still writes, until it closes its output; the
	 * shutdown is bounded by the grace period (1 s). */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		char *line = NULL;
		size_t len = 0;
		int got = mcp_memconn_recv(c, 10000, &line, &len);
		if (got == 1)
			take_line(r, line, len, &sent, &answered);
		free(line);
		if (got < 0)
			break;
		if (got == 0) {
			fail_check(r, "the server did not close its output within 10 s%s%s", "", "");
			break;
		}
	}
	r->run_rc = mcp_memconn_free(c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (t1.tv_sec - t0.tv_sec > 5)
		fail_check(r, "the shutdown took more than 5 s (grace: 1 s)%s%s", "", "");
	if (r->run_rc != MCP_OK && r->run_rc != MCP_ENOMEM && r->run_rc != MCP_ESYS)
		fail_check(r, "the run failed with %s, not MCP_ENOMEM/MCP_ESYS%s",
			   mcp_strerror(r->run_rc), "");
	char *stats = mcp_server_stats_json(srv);
	if (stats && !strstr(stats, "\"abandoned\":0,"))
		fail_check(r, "a handler was abandoned at the deadline: %s%s", stats, "");
	free(stats);
	mcp_server_free(srv);
	failmalloc_disarm();

	/* Answers: right or an error for 1, 2, 4; never a result for 3, 5.  A
	 * run that could not start (its result says why) answers nothing. */
	for (int id = 1; id < NIDS; id++) {
		int o = r->outcome[id];
		if (id == ID_CANCELLED || id == ID_CUT) {
			if (o == 1 || o == 3)
				fail_check(r, "a result for the %s%s", id_names[id], "");
			continue;
		}
		if (o == 3)
			fail_check(r, "a wrong result for %s%s", id_names[id], "");
		if (o == 0 && r->run_rc == MCP_OK)
			(*missing)++;
	}
	for (int id = 1; id < NIDS; id++)
		if (r->started[id] != r->cleanups[id])
			fail_check(r, "a handler started and ended a different number of times (%s)%s",
				   id_names[id], "");
	wire_ids_free(&sent);
	wire_ids_free(&answered);
	return r->bad ? -1 : 0;
}

/* ---- the driver ---------------------------------------------------------- */

static int verbose;

static void describe_run(const char *pass, long at, const run *r, int missing)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf, "%s N=%ld:", pass, at);
	for (int id = 1; id < NIDS; id++) {
		static const char *const o[] = { "none", "ok", "err", "WRONG" };
		if (r->outcome[id] == 2)
			n += snprintf(buf + n, sizeof buf - (size_t)n, " %d=err(%d)", id, r->code[id]);
		else
			n += snprintf(buf + n, sizeof buf - (size_t)n, " %d=%s", id, o[r->outcome[id]]);
	}
	fprintf(stderr, "%s%s%s%s%s%s\n", buf, r->run_rc ? "  [run: " : "",
		r->run_rc ? mcp_strerror(r->run_rc) : "", r->run_rc ? "]" : "",
		missing ? "  [missing answer]" : "", r->bad ? "  [FAIL]" : "");
	if (verbose) {
		failmalloc_print_stack();
		fputc('\n', stderr);
	}
}

static long heap_baseline(void)
{
	/* Freed thread stacks and their TLS come back a little after a join:
	 * give the heap a moment to settle before reading it. */
	long a = failmalloc_live(), b;
	for (int i = 0; i < 50; i++) {
		usleep(2000);
		b = failmalloc_live();
		if (a == b)
			return b;
		a = b;
	}
	return a;
}

typedef struct totals {
	long runs, failed, missing, injected_none;
} totals;

static int one_run(const char *pass, int setup_fails, long at, int from, long base,
		   totals *t)
{
	run r;
	memset(&r, 0, sizeof r);
	pthread_mutex_init(&r.mu, NULL);
	pthread_cond_init(&r.cv, NULL);
	alarm(60); /* a hang kills the test: SIGALRM's default action */
	int missing = 0;
	int rc = scenario(&r, setup_fails, at, from, &missing);
	long after = heap_baseline();
	if (rc == 0 && base >= 0 && after != base) {
		char a[32], b[32];
		snprintf(a, sizeof a, "%ld", after);
		snprintf(b, sizeof b, "%ld", base);
		fail_check(&r, "leak: %s live allocations after the run, %s before", a, b);
		rc = -1;
	}
	t->runs++;
	t->missing += missing > 0;
	if (failmalloc_injected() == 0)
		t->injected_none++;
	if (rc != 0) {
		t->failed++;
		fprintf(stderr, "FAIL: %s N=%ld: %s\n", pass, at, r.why);
	}
	if (verbose || rc != 0)
		describe_run(pass, at, &r, missing);
	pthread_cond_destroy(&r.cv);
	pthread_mutex_destroy(&r.mu);
	return rc;
}

int main(void)
{
	verbose = getenv("ALLOC_FAIL_VERBOSE") != NULL;
	int strict = getenv("ALLOC_FAIL_STRICT") != NULL;
	failmalloc_exempt(1);

	/* A first run without failures warms up what the process keeps
	 * (stack caches, stdio) and tells how many allocations a run makes. */
	totals t = { 0 };
	if (one_run("warm-up", 0, 0, 0, -1, &t) != 0) {
		fprintf(stderr, "FAIL: the scenario fails without injected failures\n");
		return 1;
	}
	long base = heap_baseline();
	long count = 0;
	for (int i = 0; i < 3; i++) {
		one_run("clean", 0, 0, 0, base, &t);
		long n = failmalloc_count();
		count = n > count ? n : count;
		base = heap_baseline();
	}
	if (t.failed) {
		fprintf(stderr, "FAIL: the scenario fails without injected failures\n");
		return 1;
	}
	fprintf(stderr, "a clean run makes up to %ld allocations on the server's threads\n", count);

	/* ALLOC_FAIL_ONLY=N (or -N for "from N on") reruns a single case. */
	const char *only = getenv("ALLOC_FAIL_ONLY");
	if (only) {
		long n = atol(only);
		totals o = { 0 };
		verbose = 1;
		one_run(n < 0 ? "from" : "one", 0, n < 0 ? -n : n, n < 0, base, &o);
		return o.failed ? 1 : 0;
	}

	/* one: each allocation fails alone, N = 1 .. count and a margin (the
	 * count varies a little with thread timing). */
	totals one = { 0 };
	for (long n = 1; n <= count + 20; n++) {
		one_run("one", 0, n, 0, base, &one);
		base = heap_baseline();
	}
	/* from: everything fails from N on, for 40 values of N. */
	totals from = { 0 };
	long step = count / 40 > 0 ? count / 40 : 1;
	for (long n = 1; n <= count; n += step) {
		one_run("from", 0, n, 1, base, &from);
		base = heap_baseline();
	}
	/* setup: the construction and start of the server, on this thread. */
	totals setup = { 0 };
	long setup_count = 0;
	{
		run r;
		memset(&r, 0, sizeof r);
		pthread_mutex_init(&r.mu, NULL);
		pthread_cond_init(&r.cv, NULL);
		failmalloc_exempt(0);
		failmalloc_arm(0, 0);
		int rc;
		mcp_server *srv = make_server(&r, &rc);
		mcp_memconn *c = NULL;
		if (rc == MCP_OK)
			mcp_server_start_memory(srv, &c);
		setup_count = failmalloc_count();
		failmalloc_disarm();
		failmalloc_exempt(1);
		mcp_memconn_free(c);
		mcp_server_free(srv);
		base = heap_baseline();
	}
	for (long n = 1; n <= setup_count + 2; n++) {
		one_run("setup", 1, n, 0, base, &setup);
		base = heap_baseline();
	}

	fprintf(stderr,
		"one:   %ld runs, %ld failed, %ld with an answer missing\n"
		"from:  %ld runs, %ld failed, %ld with an answer missing\n"
		"setup: %ld runs (%ld allocations in set-up), %ld failed\n"
		"spared: %ld failures json-c or a sanitizer could not survive (see failmalloc.c)\n",
		one.runs, one.failed, one.missing, from.runs, from.failed, from.missing, setup.runs,
		setup_count, setup.failed, failmalloc_spared());
	if (one.failed || from.failed || setup.failed)
		return 1;
	if (strict && (one.missing || from.missing)) {
		fprintf(stderr, "FAIL: answers went missing (ALLOC_FAIL_STRICT)\n");
		return 1;
	}
	return 0;
}

#else /* NO_INTERPOSE */

int main(void)
{
	fprintf(stderr, "SKIP: alloc-fail cannot interpose malloc under clang's sanitizers\n");
	return 77;
}

#endif
