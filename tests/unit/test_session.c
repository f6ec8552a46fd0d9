/*
 * test_session.c - in-process tests of a whole server over the in-memory
 * transport: lifecycle, id rules, peer cancel, P1 end of input, shutdown
 * with handlers blocked on unanswered server-to-client requests.
 *
 * The same behaviours are tested over real pipes by the scenario harness;
 * these run fast enough to loop hundreds of times under the sanitizers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/internal.h"
#include "tests/unit/runner.h"

typedef struct fixture {
	mcp_server *srv;
	tp_mem *mem;
	pthread_t thread;
	int rc;
	_Atomic int cleanups;
	_Atomic int handler_saw_cancel;
	char *_Atomic nonblocking_event; /* the last nonblocking_* trace */
} fixture;

static fixture *current;

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
	int rc = mcp_ctx_sleep(ctx, ms ? json_object_get_int64(ms) : 0);
	if (rc != MCP_OK) {
		atomic_fetch_add(&current->handler_saw_cancel, 1);
		return rc;
	}
	return mcp_result_add_text(out, "slept");
}

/* Blocks on roots/list and deliberately never polls its token: only the
 * pending table being failed can wake it on close. */
static int t_roots(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *res = NULL;
	int rc = mcp_ctx_list_roots(ctx, -1, &res);
	json_object_put(res);
	if (rc == MCP_OK)
		return mcp_result_add_text(out, "roots");
	atomic_fetch_add(&current->handler_saw_cancel, 1);
	return rc == MCP_ECLOSED ? MCP_ECANCELED : rc;
}

static int t_roots_timeout(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *res = NULL;
	int rc = mcp_ctx_list_roots(ctx, 100, &res);
	json_object_put(res);
	return mcp_result_add_text(out, mcp_strerror(rc));
}

/* Logs at three levels and reports progress, then answers: everything it
 * emits must reach the client before its answer (P10). */
static int t_chatty(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	mcp_ctx_log_text(ctx, MCP_LOG_DEBUG, "unit", "debug line");
	mcp_ctx_log_text(ctx, MCP_LOG_INFO, "unit", "info line");
	mcp_ctx_log_text(ctx, MCP_LOG_ERROR, "unit", "error line");
	ck_assert_int_eq(mcp_ctx_progress(ctx, 1, 2, "half"), MCP_OK);
	ck_assert_int_eq(mcp_ctx_progress(ctx, 1, 2, NULL), MCP_EINVAL); /* not increasing */
	ck_assert_int_eq(mcp_ctx_progress(ctx, 2, 2, NULL), MCP_OK);
	return mcp_result_add_text(out, "chatty done");
}

/* MCP_TOOL_NONBLOCKING tools: each notes the thread it ran on; "waits"
 * also what its sleep returned, "overruns" spins past the fixture's
 * budget (HERE_BUDGET_MS, set by start_hooked). */
#define HERE_BUDGET_MS 300
static _Atomic pthread_t here_thread;
static _Atomic int here_sleep_rc;

static int t_here(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	atomic_store(&here_thread, pthread_self());
	return mcp_result_add_text(out, "here");
}

static int t_here_waits(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	atomic_store(&here_thread, pthread_self());
	atomic_store(&here_sleep_rc, mcp_ctx_sleep(ctx, 1));
	return mcp_result_add_text(out, "woke");
}

static int t_here_overruns(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	atomic_store(&here_thread, pthread_self());
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) <
	       2 * HERE_BUDGET_MS * 1000000LL);
	return mcp_result_add_text(out, "spun");
}

/* A non-blocking prompt, and a resource template that tries to sleep. */
static int p_here(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	atomic_store(&here_thread, pthread_self());
	return mcp_prompt_add_text(out, MCP_ROLE_USER, "here");
}

static int r_here_waits(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			void *user)
{
	(void)vars;
	(void)user;
	atomic_store(&here_thread, pthread_self());
	atomic_store(&here_sleep_rc, mcp_ctx_sleep(ctx, 1));
	return mcp_contents_add_text(out, uri, "text/plain", "woke");
}

static void on_trace(const char *event, const char *id, const char *reason, void *user)
{
	(void)id;
	fixture *f = user;
	if (strcmp(event, "cleanup") == 0)
		atomic_fetch_add(&f->cleanups, 1);
	if (strncmp(event, "nonblocking_", 12) == 0) {
		/* The event and the tool it names, once each. */
		char *line = NULL;
		if (asprintf(&line, "%s %s", event, reason) >= 0) {
			char *old = atomic_exchange(&f->nonblocking_event, line);
			ck_assert_ptr_null(old);
		}
	}
}

static void *run_server(void *arg)
{
	fixture *f = arg;
	f->rc = api_server_run_tp(f->srv, tp_mem_server(f->mem));
	return NULL;
}

/* A fixture's server, running; with `hooked`, request hooks that let all through. */
static fixture *start_hooked(int workers, int hooked);

static fixture *start(int workers)
{
	return start_hooked(workers, 0);
}

static int allow_all(mcp_ctx *ctx, void *user)
{
	(void)ctx;
	(void)user;
	return MCP_OK;
}

static fixture *start_hooked(int workers, int hooked)
{
	fixture *f = calloc(1, sizeof *f);
	current = f;
	f->srv = mcp_server_new("unit", "1.0");
	ck_assert_ptr_nonnull(f->srv);
	mcp_server_set_workers(f->srv, workers);
	mcp_server_set_grace_ms(f->srv, 5000);
	mcp_server_set_trace(f->srv, on_trace, f);
	/* Honest non-blocking calls stay far below it even under valgrind;
	 * t_here_overruns spins past it. */
	ck_assert_int_eq(mcp_server_set_nonblocking_budget_ms(f->srv, 0), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_nonblocking_budget_ms(f->srv, 60001), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_nonblocking_budget_ms(f->srv, HERE_BUDGET_MS), MCP_OK);
	if (hooked)
		ck_assert_int_eq(mcp_server_set_request_hooks(f->srv, allow_all, NULL, NULL),
				 MCP_OK);
	mcp_tool tools[] = {
		{ MCP_TOOL_INIT, .name = "echo", .fn = t_echo },
		{ MCP_TOOL_INIT, .name = "here", .fn = t_here, .flags = MCP_TOOL_NONBLOCKING },
		{ MCP_TOOL_INIT, .name = "sleep", .fn = t_sleep },
		{ MCP_TOOL_INIT, .name = "roots", .fn = t_roots },
		{ MCP_TOOL_INIT, .name = "roots_timeout", .fn = t_roots_timeout },
		{ MCP_TOOL_INIT, .name = "chatty", .fn = t_chatty },
	};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		ck_assert_int_eq(mcp_server_add_tool(f->srv, &tools[i]), MCP_OK);
	f->mem = tp_mem_new(1 << 20);
	pthread_create(&f->thread, NULL, run_server, f);
	return f;
}

static void finish(fixture *f)
{
	pthread_join(f->thread, NULL);
	ck_assert_int_eq(f->rc, MCP_OK);
	mcp_server_free(f->srv);
	tp_mem_free(f->mem);
	free(f);
	current = NULL;
}

static void send_line(fixture *f, const char *s)
{
	ck_assert_int_eq(tp_mem_client_send(f->mem, s, strlen(s)), 0);
}

/* Next message from the server, parsed; NULL at end of output. */
static json_object *recv_msg(fixture *f)
{
	char *line;
	size_t len;
	int rc = tp_mem_client_recv(f->mem, 10000, &line, &len);
	ck_assert_msg(rc != 0, "timed out waiting for the server");
	if (rc < 0)
		return NULL;
	json_object *m = json_tokener_parse(line);
	ck_assert_msg(m != NULL, "not JSON: %s", line);
	free(line);
	return m;
}

static json_object *field(json_object *o, const char *k)
{
	json_object *v = NULL;
	json_object_object_get_ex(o, k, &v);
	return v;
}

static const char *id_text(json_object *m)
{
	return json_object_to_json_string_ext(field(m, "id"), JSON_C_TO_STRING_PLAIN);
}

static void initialize(fixture *f, const char *caps)
{
	char buf[512];
	snprintf(buf, sizeof buf,
		 "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\",\"params\":"
		 "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":%s,"
		 "\"clientInfo\":{\"name\":\"unit\",\"version\":\"1\"}}}",
		 caps);
	send_line(f, buf);
	json_object *m = recv_msg(f);
	ck_assert_str_eq(id_text(m), "\"init\"");
	ck_assert_str_eq(json_object_get_string(field(field(m, "result"), "protocolVersion")),
			 "2025-06-18");
	json_object_put(m);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void drain_to_end(fixture *f, int *answers)
{
	json_object *m;
	while ((m = recv_msg(f))) {
		if (field(m, "id") && !field(m, "method"))
			(*answers)++;
		json_object_put(m);
	}
}

/* The parser every transport uses (eng_json_parse_message): a line past
 * the value bound is refused (-32600, the limit and its value named)
 * before json-c builds it; an integer beyond 64 bits is read as the
 * nearest double, not saturated. */
START_TEST(parse_message_bounds_values_and_widens_integers)
{
	size_t cap = 3 * 5000 + 64, k = 0;
	char *big = malloc(cap);
	ck_assert_ptr_nonnull(big);
	k += (size_t)snprintf(big, cap, "{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":[");
	for (int i = 0; i < 5000; i++) {
		memcpy(big + k, i ? ",{}" : "{}", i ? 3 : 2);
		k += i ? 3 : 2;
	}
	big[k++] = ']';
	big[k++] = '}';
	unsigned pre;
	int code = 0;
	char why[160];
	json_object *v = NULL;
	ck_assert_int_eq(eng_json_parse_message(big, k, 128, 1000, &pre, &v, &code, why,
						sizeof why),
			 -1);
	ck_assert_int_eq(code, MCP_JSONRPC_INVALID_REQUEST);
	ck_assert_ptr_null(v);
	ck_assert_msg(strstr(why, "more than 1000 JSON values"), "%s", why);
	/* 5000 objects count 40000; the message object 8, params 2, the two
	 * strings 2: 40012 in all, refused one below, parsed at it. */
	ck_assert_int_eq(eng_json_parse_message(big, k, 128, 40011, &pre, &v, &code, why,
						sizeof why),
			 -1);
	ck_assert_int_eq(eng_json_parse_message(big, k, 128, 40012, &pre, &v, &code, why,
						sizeof why),
			 0);
	ck_assert_uint_eq(json_object_array_length(api_get(v, "params")), 5000);
	json_object_put(v);
	free(big);

	const char *t = "{\"a\":100000000000000000000,\"b\":-18446744073709551616}";
	ck_assert_int_eq(eng_json_parse_message(t, strlen(t), 128, 0, &pre, &v, &code, why,
						sizeof why),
			 0);
	ck_assert_uint_eq(pre, ENG_JSON_BIG_INT);
	ck_assert(json_object_get_double(api_get(v, "a")) == 1e20);
	ck_assert(json_object_get_double(api_get(v, "b")) == -18446744073709551616.0);
	json_object_put(v);
}
END_TEST

START_TEST(version_negotiation)
{
	fixture *f = start(2);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	json_object *m = recv_msg(f);
	ck_assert_int_eq(json_object_get_int(field(field(m, "error"), "code")), -32600);
	json_object_put(m);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"1999-01-01\",\"capabilities\":{}}}");
	m = recv_msg(f);
	ck_assert_str_eq(json_object_get_string(field(field(m, "result"), "protocolVersion")),
			 MCP_PROTOCOL_LATEST);
	json_object_put(m);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{}}}");
	m = recv_msg(f);
	ck_assert_int_eq(json_object_get_int(field(field(m, "error"), "code")), -32600);
	json_object_put(m);
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	ck_assert_int_eq(answers, 0);
	finish(f);
}
END_TEST

/* Calls `tool` with id `id` and checks it answered with `text`; the
 * thread it ran on is then in here_thread. */
static void call_here(fixture *f, int id, const char *tool, const char *text)
{
	char buf[256];
	snprintf(buf, sizeof buf,
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"%s\"}}",
		 id, tool);
	atomic_store(&here_thread, (pthread_t)0);
	send_line(f, buf);
	json_object *m = recv_msg(f);
	ck_assert_int_eq(json_object_get_int(field(m, "id")), id);
	json_object *c = json_object_array_get_idx(field(field(m, "result"), "content"), 0);
	ck_assert_str_eq(json_object_get_string(field(c, "text")), text);
	json_object_put(m);
}

/* MCP_TOOL_NONBLOCKING (issue 29): the call runs on the thread that read
 * it (here the run_server thread, the memory connection's reader), in
 * flight like any other; a handler that tries to wait is refused
 * MCP_ESTATE, one that runs past the budget is reported, and either
 * loses the privilege for good; request hooks send every call to a
 * worker; registration refuses the flag on a tool that may be a task. */
START_TEST(nonblocking_tools_run_where_read_until_they_wait)
{
	fixture *f = start(2);
	mcp_tool tools[] = {
		{ MCP_TOOL_INIT, .name = "waits", .fn = t_here_waits,
		  .flags = MCP_TOOL_NONBLOCKING },
		{ MCP_TOOL_INIT, .name = "overruns", .fn = t_here_overruns,
		  .flags = MCP_TOOL_NONBLOCKING },
	};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		ck_assert_int_eq(mcp_server_add_tool(f->srv, &tools[i]), MCP_OK);
	mcp_tool task = { MCP_TOOL_INIT, .name = "task", .fn = t_here,
			  .flags = MCP_TOOL_NONBLOCKING, .task_support = MCP_TASKS_OPTIONAL };
	char why[256];
	ck_assert_int_eq(mcp_server_add_tool(f->srv, &task), MCP_EINVAL);
	ck_assert_int_eq(mcp_tool_check(&task, why, sizeof why), MCP_EINVAL);
	ck_assert_msg(strstr(why, "MCP_TOOL_NONBLOCKING"), "%s", why);
	initialize(f, "{}");
	eng_stats *st = &f->srv->stats;
	ck_assert_int_eq(mcp_server_set_nonblocking_budget_ms(f->srv, 5), MCP_ESTATE); /* running */

	call_here(f, 1, "here", "here");
	ck_assert(pthread_equal(atomic_load(&here_thread), f->thread));
	ck_assert_uint_eq(atomic_load(&st->ran_here), 1);
	call_here(f, 2, "echo", ""); /* not declared: a worker */
	ck_assert(!pthread_equal(atomic_load(&here_thread), f->thread));

	/* Tries to sleep: refused at once, reported, demoted. */
	call_here(f, 3, "waits", "woke");
	ck_assert(pthread_equal(atomic_load(&here_thread), f->thread));
	ck_assert_int_eq(atomic_load(&here_sleep_rc), MCP_ESTATE);
	ck_assert_uint_eq(atomic_load(&st->ran_here_refused), 1);
	char *ev = atomic_exchange(&f->nonblocking_event, NULL);
	ck_assert_str_eq(ev, "nonblocking_refused waits");
	free(ev);
	call_here(f, 4, "waits", "woke");
	ck_assert(!pthread_equal(atomic_load(&here_thread), f->thread));
	ck_assert_int_eq(atomic_load(&here_sleep_rc), MCP_OK);

	/* Runs twice its budget: answered, reported, demoted. */
	call_here(f, 5, "overruns", "spun");
	ck_assert(pthread_equal(atomic_load(&here_thread), f->thread));
	/* Timed after the answer went out: reported as soon as the reader
	 * is back from the call, before it reads the next. */
	for (int i = 0; i < 10000 && !atomic_load(&f->nonblocking_event); i++)
		usleep(1000);
	ck_assert_uint_eq(atomic_load(&st->ran_here_overran), 1);
	ev = atomic_exchange(&f->nonblocking_event, NULL);
	ck_assert_str_eq(ev, "nonblocking_overran overruns");
	free(ev);
	call_here(f, 6, "overruns", "spun");
	ck_assert(!pthread_equal(atomic_load(&here_thread), f->thread));
	ck_assert_uint_eq(atomic_load(&st->ran_here), 3);

	ck_assert_ptr_null(atomic_load(&f->nonblocking_event));
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	ck_assert_int_eq(answers, 0);
	finish(f);

	/* Hooks are application code that may wait: a worker runs them. */
	f = start_hooked(2, 1);
	initialize(f, "{}");
	call_here(f, 1, "here", "here");
	ck_assert(!pthread_equal(atomic_load(&here_thread), f->thread));
	ck_assert_uint_eq(atomic_load(&f->srv->stats.ran_here), 0);
	tp_mem_client_close(f->mem);
	drain_to_end(f, &answers);
	finish(f);
}
END_TEST

/* The same for a prompt (MCP_PROMPT_NONBLOCKING) and a resource template
 * (MCP_RESOURCE_NONBLOCKING): run on the reader; the template's read tries
 * to sleep, is refused, and its next read runs on a worker.  Flags the
 * library does not know are refused at registration. */
START_TEST(nonblocking_prompts_and_resources_too)
{
	fixture *f = start(2);
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "here_prompt", .get = p_here,
			 .flags = MCP_PROMPT_NONBLOCKING };
	ck_assert_int_eq(mcp_server_add_prompt(f->srv, &p), MCP_OK);
	mcp_resource_template t = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "mem://here/{x}",
				    .name = "here", .read = r_here_waits,
				    .flags = MCP_RESOURCE_NONBLOCKING };
	ck_assert_int_eq(mcp_server_add_resource_template(f->srv, &t), MCP_OK);
	mcp_prompt bad = p;
	bad.name = "bad";
	bad.flags = 0x2;
	ck_assert_int_eq(mcp_server_add_prompt(f->srv, &bad), MCP_EINVAL);
	mcp_resource badr = { MCP_RESOURCE_INIT, .uri = "mem://bad", .name = "bad",
			      .read = r_here_waits, .flags = 0x80 };
	ck_assert_int_eq(mcp_server_add_resource(f->srv, &badr), MCP_EINVAL);
	initialize(f, "{}");

	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\","
		     "\"params\":{\"name\":\"here_prompt\"}}");
	json_object *m = recv_msg(f);
	ck_assert_ptr_nonnull(field(m, "result"));
	json_object_put(m);
	ck_assert(pthread_equal(atomic_load(&here_thread), f->thread));

	for (int i = 2; i <= 3; i++) {
		char buf[160];
		snprintf(buf, sizeof buf,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"resources/read\","
			 "\"params\":{\"uri\":\"mem://here/%d\"}}",
			 i, i);
		send_line(f, buf);
		m = recv_msg(f);
		json_object *c = json_object_array_get_idx(field(field(m, "result"), "contents"), 0);
		ck_assert_str_eq(json_object_get_string(field(c, "text")), "woke");
		json_object_put(m);
		/* First where read and refused; then a worker, where it sleeps. */
		ck_assert(pthread_equal(atomic_load(&here_thread), f->thread) == (i == 2));
		ck_assert_int_eq(atomic_load(&here_sleep_rc), i == 2 ? MCP_ESTATE : MCP_OK);
	}
	char *ev = atomic_exchange(&f->nonblocking_event, NULL);
	ck_assert_str_eq(ev, "nonblocking_refused mem://here/{x}");
	free(ev);
	ck_assert_uint_eq(atomic_load(&f->srv->stats.ran_here), 2);
	ck_assert_uint_eq(atomic_load(&f->srv->stats.ran_here_refused), 1);
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	ck_assert_int_eq(answers, 0);
	finish(f);
}
END_TEST

START_TEST(peer_cancel_running_writes_nothing)
{
	fixture *f = start(2);
	initialize(f, "{}");
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"sleep\",\"arguments\":{\"ms\":60000}}}");
	/* Wait until it runs: a ping round trip does not prove that, so poll
	 * the counter. */
	while (atomic_load(&f->srv->stats.started) < 1)
		usleep(1000);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		     "\"params\":{\"requestId\":7}}");
	/* The id may be reused once the handler returned (P5). */
	while (atomic_load(&f->cleanups) < 1)
		usleep(1000);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"echo\",\"arguments\":{\"text\":\"again\"}}}");
	json_object *m = recv_msg(f);
	ck_assert_str_eq(id_text(m), "7");
	ck_assert_ptr_nonnull(field(m, "result"));
	json_object_put(m);
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	ck_assert_int_eq(answers, 0);
	ck_assert_int_eq(atomic_load(&f->handler_saw_cancel), 1);
	ck_assert_uint_eq(atomic_load(&f->srv->stats.cancelled_peer), 1);
	finish(f);
}
END_TEST

START_TEST(eof_answers_queued_work_and_drops_cancelled)
{
	/* P1: echo calls already read are answered after EOF; the sleeping
	 * handler sees transport_closed and writes nothing. */
	fixture *f = start(1);
	initialize(f, "{}");
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"sleep\",\"arguments\":{\"ms\":60000}}}");
	for (int i = 2; i <= 5; i++) {
		char buf[200];
		snprintf(buf, sizeof buf,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
			 "{\"name\":\"echo\",\"arguments\":{\"text\":\"e%d\"}}}",
			 i, i);
		send_line(f, buf);
	}
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	ck_assert_int_eq(answers, 4);
	ck_assert_int_eq(atomic_load(&f->handler_saw_cancel), 1);
	ck_assert_uint_eq(atomic_load(&f->srv->stats.abandoned), 0);
	finish(f);
}
END_TEST

START_TEST(eof_wakes_handlers_blocked_on_roots)
{
	/* Two handlers wait on roots/list the client never answers, without
	 * polling their tokens; EOF must wake both through the pending table.
	 * Looped: the shutdown's swap races the waiters' self-removal. */
	for (int iter = 0; iter < 200; iter++) {
		fixture *f = start(2);
		initialize(f, "{\"roots\":{}}");
		send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"roots\"}}");
		send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
			     "{\"name\":\"roots\"}}");
		int requests = 0;
		while (requests < 2) {
			json_object *m = recv_msg(f);
			ck_assert_ptr_nonnull(m);
			if (field(m, "method") &&
			    strcmp(json_object_get_string(field(m, "method")), "roots/list") == 0)
				requests++;
			json_object_put(m);
		}
		tp_mem_client_close(f->mem);
		int answers = 0;
		drain_to_end(f, &answers);
		ck_assert_int_eq(answers, 0);
		ck_assert_int_eq(atomic_load(&f->handler_saw_cancel), 2);
		/* Woken by the token (step 2) or by the failed table (step 3),
		 * whichever comes first; test_tables covers step 3 alone. */
		uint64_t failed = atomic_load(&f->srv->stats.pending_failed);
		ck_assert_uint_le(failed, 2);
		ck_assert_uint_eq(atomic_load(&f->srv->stats.abandoned), 0);
		ck_assert_uint_eq(atomic_load(&f->srv->stats.pending_left), 0);
		finish(f);
	}
}
END_TEST

static void *shutdown_later(void *arg)
{
	usleep(20000);
	mcp_server_shutdown(arg);
	return NULL;
}

START_TEST(shutdown_from_another_thread)
{
	fixture *f = start(2);
	initialize(f, "{\"roots\":{}}");
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"sleep\",\"arguments\":{\"ms\":60000}}}");
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"roots\"}}");
	json_object *m = recv_msg(f); /* the roots/list request */
	json_object_put(m);
	pthread_t th;
	pthread_create(&th, NULL, shutdown_later, f->srv);
	int answers = 0;
	drain_to_end(f, &answers);
	pthread_join(th, NULL);
	ck_assert_int_eq(answers, 0);
	ck_assert_int_eq(atomic_load(&f->handler_saw_cancel), 2);
	finish(f);
}
END_TEST

START_TEST(cancel_races_completion)
{
	/* Zero or one answer per id, never two, whatever the interleaving. */
	fixture *f = start(2);
	initialize(f, "{}");
	enum { N = 2000 };
	for (int i = 0; i < N; i++) {
		char buf[256];
		snprintf(buf, sizeof buf,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
			 "{\"name\":\"%s\",\"arguments\":{\"text\":\"x\",\"ms\":%d}}}",
			 i, i % 2 ? "echo" : "sleep", i % 3);
		send_line(f, buf);
		snprintf(buf, sizeof buf,
			 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			 "\"params\":{\"requestId\":%d}}",
			 i);
		send_line(f, buf);
	}
	tp_mem_client_close(f->mem);
	int *seen = calloc(N, sizeof *seen);
	json_object *m;
	while ((m = recv_msg(f))) {
		json_object *id = field(m, "id");
		ck_assert_ptr_nonnull(id);
		int i = json_object_get_int(id);
		ck_assert(i >= 0 && i < N);
		seen[i]++;
		ck_assert_int_le(seen[i], 1);
		json_object_put(m);
	}
	free(seen);
	finish(f);
}
END_TEST

START_TEST(embedded_memconn_roundtrip)
{
	/* The public embedding API: the same engine, no pipes. */
	mcp_server *srv = mcp_server_new("embedded", "1.0");
	mcp_tool echo = { MCP_TOOL_INIT, .name = "echo", .fn = t_echo };
	ck_assert_int_eq(mcp_server_add_tool(srv, &echo), MCP_OK);
	mcp_memconn *c;
	ck_assert_int_eq(mcp_server_start_memory(srv, &c), MCP_OK);
	mcp_memconn *again;
	const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			   "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}";
	const char *call = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
			   "{\"name\":\"echo\",\"arguments\":{\"text\":\"inside\"}}}";
	ck_assert_int_eq(mcp_memconn_send(c, init, strlen(init)), MCP_OK);
	ck_assert_int_eq(mcp_memconn_send(c, call, strlen(call)), MCP_OK);
	mcp_memconn_close(c);
	ck_assert_int_eq(mcp_memconn_send(c, call, strlen(call)), MCP_ECLOSED);
	char *msg;
	size_t len;
	ck_assert_int_eq(mcp_memconn_recv(c, 10000, &msg, &len), 1);
	ck_assert_ptr_nonnull(strstr(msg, "\"id\":1"));
	free(msg);
	ck_assert_int_eq(mcp_memconn_recv(c, 10000, &msg, &len), 1);
	ck_assert_ptr_nonnull(strstr(msg, "inside"));
	free(msg);
	ck_assert_int_eq(mcp_memconn_recv(c, 10000, &msg, &len), MCP_ECLOSED);
	ck_assert_int_eq(mcp_memconn_free(c), MCP_OK);
	/* A server runs once. */
	ck_assert_int_eq(mcp_server_start_memory(srv, &again), MCP_ESTATE);
	mcp_server_free(srv);
}
END_TEST

START_TEST(log_level_and_ordering)
{
	fixture *f = start(2);
	initialize(f, "{}");
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\","
		     "\"params\":{\"level\":\"warning\"}}");
	json_object *m = recv_msg(f);
	ck_assert_ptr_nonnull(field(m, "result"));
	json_object_put(m);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\","
		     "\"params\":{\"level\":\"loud\"}}");
	m = recv_msg(f);
	ck_assert_int_eq(json_object_get_int(field(field(m, "error"), "code")), -32602);
	json_object_put(m);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"chatty\",\"_meta\":{\"progressToken\":\"pt\"}}}");
	/* Only the error-level log passes the filter; both progress values,
	 * increasing; then the answer. */
	const char *expect[] = { "notifications/message", "notifications/progress",
				 "notifications/progress", NULL };
	for (int i = 0; i < 4; i++) {
		m = recv_msg(f);
		if (expect[i]) {
			ck_assert_str_eq(json_object_get_string(field(m, "method")), expect[i]);
			if (i == 0)
				ck_assert_str_eq(json_object_get_string(
							 field(field(m, "params"), "level")),
						 "error");
		} else {
			ck_assert_str_eq(id_text(m), "3");
		}
		json_object_put(m);
	}
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	finish(f);
}
END_TEST

START_TEST(server_requests_timeout_cancel_and_stray_answers)
{
	fixture *f = start(2);
	initialize(f, "{\"roots\":{}}");
	/* Timeout: the request is cancelled on the wire, a late answer is
	 * ignored, and the handler sees MCP_ETIMEDOUT. */
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"roots_timeout\"}}");
	json_object *req = recv_msg(f);
	ck_assert_str_eq(json_object_get_string(field(req, "method")), "roots/list");
	int64_t sid = json_object_get_int64(field(req, "id"));
	json_object_put(req);
	json_object *m = recv_msg(f);
	ck_assert_str_eq(json_object_get_string(field(m, "method")), "notifications/cancelled");
	ck_assert_int_eq(json_object_get_int64(field(field(m, "params"), "requestId")), sid);
	json_object_put(m);
	m = recv_msg(f);
	ck_assert_str_eq(id_text(m), "1");
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(m), mcp_strerror(MCP_ETIMEDOUT)));
	json_object_put(m);
	char buf[256];
	snprintf(buf, sizeof buf,
		 "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"roots\":[]}}", (long long)sid);
	send_line(f, buf); /* late: ignored, never answered */
	/* A client request id equal to our outbound id is a different
	 * namespace (P7): a response with string id "1" resolves nothing. */
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}");
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":999,\"error\":{\"code\":1,\"message\":\"x\"}}");

	/* Peer cancel while the handler waits on the client: the waiting
	 * server-to-client request gets its own notifications/cancelled, and
	 * nothing is written for the cancelled call. */
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"roots\"}}");
	req = recv_msg(f);
	ck_assert_str_eq(json_object_get_string(field(req, "method")), "roots/list");
	int64_t sid2 = json_object_get_int64(field(req, "id"));
	json_object_put(req);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		     "\"params\":{\"requestId\":2}}");
	m = recv_msg(f);
	ck_assert_str_eq(json_object_get_string(field(m, "method")), "notifications/cancelled");
	ck_assert_int_eq(json_object_get_int64(field(field(m, "params"), "requestId")), sid2);
	json_object_put(m);
	send_line(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	m = recv_msg(f);
	ck_assert_str_eq(id_text(m), "3");
	json_object_put(m);
	tp_mem_client_close(f->mem);
	int answers = 0;
	drain_to_end(f, &answers);
	ck_assert_int_eq(answers, 0);
	finish(f);
}
END_TEST

/* ---- one request at a time, over real pipes ------------------------------ */

typedef struct pipe_server {
	mcp_server *srv;
	int in[2], out[2]; /* the server reads in[0] and writes out[1] */
	pthread_t thread;
	int rc;
	char buf[65536];   /* the client's read buffer */
	size_t have;
} pipe_server;

static void *run_pipe_server(void *arg)
{
	pipe_server *ps = arg;
	ps->rc = mcp_server_run_fds(ps->srv, ps->in[0], ps->out[1]);
	return NULL;
}

static void pipe_send(pipe_server *ps, const char *line)
{
	size_t len = strlen(line);
	ck_assert_int_eq(write(ps->in[1], line, len), (ssize_t)len);
	ck_assert_int_eq(write(ps->in[1], "\n", 1), 1);
}

/* The next line from the server, parsed; NULL at end of output. */
static json_object *pipe_recv(pipe_server *ps)
{
	for (;;) {
		char *nl = memchr(ps->buf, '\n', ps->have);
		if (nl) {
			*nl = '\0';
			json_object *m = json_tokener_parse(ps->buf);
			ck_assert_msg(m != NULL, "not JSON: %s", ps->buf);
			size_t used = (size_t)(nl - ps->buf) + 1;
			memmove(ps->buf, nl + 1, ps->have - used);
			ps->have -= used;
			return m;
		}
		ck_assert_uint_lt(ps->have, sizeof ps->buf);
		ssize_t n = read(ps->out[0], ps->buf + ps->have, sizeof ps->buf - ps->have);
		ck_assert_int_ge(n, 0);
		if (n == 0) {
			ck_assert_uint_eq(ps->have, 0); /* no torn line */
			return NULL;
		}
		ps->have += (size_t)n;
	}
}

static uint64_t stat_of(json_object *stats, const char *key)
{
	json_object *v = NULL;
	ck_assert_msg(json_object_object_get_ex(stats, key, &v), "no %s in the stats", key);
	return (uint64_t)json_object_get_int64(v);
}

/* Blocks for args.ms milliseconds where the library cannot see it (a
 * plain nanosleep: no token, no engine wait). */
static int t_block(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	json_object *ms = NULL;
	json_object_object_get_ex(args, "ms", &ms);
	int64_t v = ms ? json_object_get_int64(ms) : 0;
	struct timespec ts = { (time_t)(v / 1000), (long)(v % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
	return mcp_result_add_text(out, "blocked");
}

/* A server with the echo and block tools running on its own thread over
 * a pair of pipes, initialized.  `max_queue` 0 keeps the default. */
static pipe_server *pipe_start(int workers, int max_queue, int poll_us)
{
	pipe_server *ps = calloc(1, sizeof *ps);
	ck_assert_ptr_nonnull(ps);
	ps->srv = mcp_server_new("pipes", "1.0");
	mcp_tool echo = { MCP_TOOL_INIT, .name = "echo", .fn = t_echo };
	mcp_tool block = { MCP_TOOL_INIT, .name = "block", .fn = t_block };
	ck_assert_int_eq(mcp_server_add_tool(ps->srv, &echo), MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(ps->srv, &block), MCP_OK);
	ck_assert_int_eq(mcp_server_set_workers(ps->srv, workers), MCP_OK);
	if (max_queue > 0)
		ck_assert_int_eq(mcp_server_set_max_queue(ps->srv, max_queue), MCP_OK);
	if (poll_us >= 0)
		ck_assert_int_eq(mcp_server_set_idle_poll_us(ps->srv, poll_us), MCP_OK);
	ck_assert_int_eq(pipe(ps->in), 0);
	ck_assert_int_eq(pipe(ps->out), 0);
	ck_assert_int_eq(pthread_create(&ps->thread, NULL, run_pipe_server, ps), 0);

	pipe_send(ps, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
		      "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
	json_object *m = pipe_recv(ps);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(id_text(m), "0");
	ck_assert_ptr_nonnull(field(m, "result"));
	json_object_put(m);
	pipe_send(ps, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	return ps;
}

/* Closes the server's input, waits for its exit, checks that nothing more
 * was written, and returns its stats. */
static json_object *pipe_stop(pipe_server *ps)
{
	close(ps->in[1]);
	pthread_join(ps->thread, NULL);
	ck_assert_int_eq(ps->rc, MCP_OK);
	close(ps->out[1]); /* the server leaves its descriptors to us */
	ck_assert_ptr_null(pipe_recv(ps)); /* nothing more was written */
	char *text = mcp_server_stats_json(ps->srv);
	ck_assert_ptr_nonnull(text);
	json_object *stats = json_tokener_parse(text);
	free(text);
	ck_assert_ptr_nonnull(stats);
	close(ps->in[0]);
	close(ps->out[0]);
	mcp_server_free(ps->srv);
	free(ps);
	return stats;
}

/* Writes several lines with one write(2), so that the server's reader
 * reads them in one go (and holds the requests among them together). */
static void pipe_send_all(pipe_server *ps, const char *const *lines, int n)
{
	char buf[4096];
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		ck_assert_uint_lt(len + l + 1, sizeof buf); /* under PIPE_BUF: atomic */
		memcpy(buf + len, lines[i], l);
		buf[len + l] = '\n';
		len += l + 1;
	}
	ck_assert_int_eq(write(ps->in[1], buf, len), (ssize_t)len);
}

/* Runs `n` echo calls one at a time over pipes, each sent only once the
 * previous answer arrived, and checks every answer; `poll_us` < 0 keeps the
 * default.  Returns the server's stats. */
static json_object *one_at_a_time(int poll_us, int n)
{
	pipe_server *ps = pipe_start(2, 0, poll_us);
	json_object *m;
	for (int i = 1; i <= n; i++) {
		char line[256], want[32], id[32];
		snprintf(want, sizeof want, "call %d", i);
		snprintf(id, sizeof id, "%d", i);
		snprintf(line, sizeof line,
			 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
			 "{\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}}}",
			 i, want);
		pipe_send(ps, line);
		m = pipe_recv(ps);
		ck_assert_ptr_nonnull(m);
		ck_assert_str_eq(id_text(m), id);
		json_object *content = field(field(m, "result"), "content");
		ck_assert_int_eq(json_object_array_length(content), 1);
		ck_assert_str_eq(json_object_get_string(field(json_object_array_get_idx(content, 0),
							      "text")),
				 want);
		json_object_put(m);
	}
	json_object *stats = pipe_stop(ps);
	ck_assert_uint_eq(stat_of(stats, "completed"), (uint64_t)n);
	ck_assert_uint_eq(stat_of(stats, "responses_written"), (uint64_t)n + 1);
	ck_assert_uint_le(stat_of(stats, "idle_poll_hits"), stat_of(stats, "idle_polls"));
	return stats;
}

START_TEST(one_at_a_time_polls_only_when_asked)
{
	/* Polling off: every request is handed to a sleeping worker. */
	json_object *st = one_at_a_time(0, 40);
	ck_assert_uint_eq(stat_of(st, "idle_polls"), 0);
	json_object_put(st);
	/* The default: a worker answering inline, one request at a time,
	 * polls for the next; the answers are the same. */
	st = one_at_a_time(-1, 200);
	ck_assert_uint_gt(stat_of(st, "idle_polls"), 0);
	json_object_put(st);
}
END_TEST

#define CALL_FMT "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":" \
	"{\"name\":\"%s\",\"arguments\":{\"ms\":%d,\"text\":\"t%d\"}}}"

START_TEST(requests_read_together_do_not_wait_behind_blocked_ones)
{
	/* As many handlers as CPUs, and one more, block where the library
	 * cannot see it; they and an echo arrive in one read, so the reader
	 * hands them to the pool together.  The workers past the runnable
	 * limit come from the pool's monitor: the echo must be answered
	 * while every block still runs. */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nblock = (int)(ncpu < 1 ? 1 : ncpu > 8 ? 8 : ncpu) + 1;
	pipe_server *ps = pipe_start(nblock + 2, 0, -1);
	char lines[10][256];
	const char *ptrs[10];
	int n = 0;
	for (; n < nblock; n++)
		snprintf(lines[n], sizeof lines[n], CALL_FMT, 100 + n, "block", 3000, n);
	snprintf(lines[n], sizeof lines[n], CALL_FMT, 1, "echo", 0, 1);
	n++;
	for (int i = 0; i < n; i++)
		ptrs[i] = lines[i];
	pipe_send_all(ps, ptrs, n);
	json_object *m = pipe_recv(ps);
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(strcmp(id_text(m), "1") == 0,
		      "the echo was answered only after a blocked call (%s)", id_text(m));
	json_object_put(m);
	for (int i = 0; i < nblock; i++) {
		m = pipe_recv(ps);
		ck_assert_ptr_nonnull(m);
		ck_assert_ptr_nonnull(field(m, "result"));
		json_object_put(m);
	}
	json_object *st = pipe_stop(ps);
	ck_assert_uint_eq(stat_of(st, "completed"), (uint64_t)nblock + 1);
	json_object_put(st);
}
END_TEST

START_TEST(held_requests_refused_busy_except_the_cancelled)
{
	/* One worker, a queue of 2.  A blocking call, four echoes and a
	 * cancel of the last echo arrive in one read: the reader holds the
	 * five requests and sees the cancel before it hands them over.  The
	 * pool takes two (the block and echo 2); echoes 3 and 4 are refused
	 * "busy"; the cancelled echo 5 gets nothing at all (P2). */
	pipe_server *ps = pipe_start(1, 2, -1);
	char lines[6][256];
	const char *ptrs[6];
	snprintf(lines[0], sizeof lines[0], CALL_FMT, 1, "block", 300, 1);
	for (int i = 2; i <= 5; i++)
		snprintf(lines[i - 1], sizeof lines[i - 1], CALL_FMT, i, "echo", 0, i);
	snprintf(lines[5], sizeof lines[5],
		 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		 "\"params\":{\"requestId\":5}}");
	for (int i = 0; i < 6; i++)
		ptrs[i] = lines[i];
	pipe_send_all(ps, ptrs, 6);
	int busy = 0, answered = 0;
	for (int k = 0; k < 4; k++) {
		json_object *m = pipe_recv(ps);
		ck_assert_ptr_nonnull(m);
		const char *id = id_text(m);
		json_object *err = field(m, "error");
		if (err) {
			ck_assert_msg(strcmp(id, "3") == 0 || strcmp(id, "4") == 0,
				      "busy answer for id %s", id);
			ck_assert_int_eq(json_object_get_int(field(err, "code")),
					 MCP_JSONRPC_SERVER_BUSY);
			busy++;
		} else {
			ck_assert_msg(strcmp(id, "1") == 0 || strcmp(id, "2") == 0,
				      "answer for id %s", id);
			answered++;
		}
		json_object_put(m);
	}
	ck_assert_int_eq(busy, 2);
	ck_assert_int_eq(answered, 2);
	json_object *st = pipe_stop(ps); /* and nothing for id 5 */
	ck_assert_uint_eq(stat_of(st, "rejected"), 2);
	ck_assert_uint_eq(stat_of(st, "completed"), 2);
	ck_assert_uint_eq(stat_of(st, "responses_written"), 5); /* with initialize */
	json_object_put(st);
}
END_TEST

START_TEST(idle_poll_setter_range)
{
	mcp_server *srv = mcp_server_new("range", "1.0");
	ck_assert_int_eq(mcp_server_set_idle_poll_us(srv, -1), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_idle_poll_us(srv, 10001), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_idle_poll_us(srv, 0), MCP_OK);
	ck_assert_int_eq(mcp_server_set_idle_poll_us(srv, 10000), MCP_OK);
	mcp_server_free(srv);
}
END_TEST


/* ---- local requests (eng_session_submit_local) ------------------------------ */

/* A bare engine session with a protocol that refuses every request: only
 * the local requests below run on its pool. */
static void lp_request(eng_session *s, json_object *msg, json_object *id, const char *method,
		       json_object *params)
{
	(void)method;
	(void)params;
	eng_session_respond_error(s, id, MCP_JSONRPC_METHOD_NOT_FOUND, "no", NULL);
	json_object_put(msg);
}
static void lp_note(eng_session *s, json_object *msg, const char *method, json_object *params)
{
	(void)s;
	(void)method;
	(void)params;
	json_object_put(msg);
}
static int lp_batches(eng_session *s)
{
	(void)s;
	return 0;
}
static json_object *lp_cancel(int64_t id, const char *reason)
{
	(void)id;
	(void)reason;
	return NULL;
}
static const eng_proto local_proto = { .on_request = lp_request, .on_notification = lp_note,
				       .batches_allowed = lp_batches,
				       .cancel_notification = lp_cancel };

static _Atomic int local_sinks, local_sink_msgs, local_saw_reason, local_started;

static void local_sink(eng_req *r, json_object *msg, void *arg)
{
	(void)r;
	(void)arg;
	atomic_fetch_add(&local_sinks, 1);
	if (msg)
		atomic_fetch_add(&local_sink_msgs, 1);
	json_object_put(msg);
}

static void local_answers(eng_req *r)
{
	eng_req_finish_result(r, json_object_new_object());
}

static void local_waits(eng_req *r)
{
	atomic_fetch_add(&local_started, 1);
	if (eng_token_sleep(&r->token, 60000) == MCP_ECANCELED)
		atomic_store(&local_saw_reason, eng_token_reason(&r->token));
	eng_req_finish_silent(r);
}

static void *run_session(void *arg)
{
	eng_session_run(arg);
	return NULL;
}

/* Local work runs on the pool, ends through its sink exactly once, writes
 * nothing, and obeys the shutdown: its token fires at end of input and
 * the shutdown waits for it. */
START_TEST(local_requests_obey_the_shutdown)
{
	for (int round = 0; round < 20; round++) {
		atomic_store(&local_sinks, 0);
		atomic_store(&local_sink_msgs, 0);
		atomic_store(&local_saw_reason, 0);
		atomic_store(&local_started, 0);
		eng_pool pool = { 0 };
		eng_stats stats = { 0 };
		ck_assert_int_eq(eng_pool_start(&pool, 2, 100, 0), MCP_OK);
		tp_mem *mem = tp_mem_new(1 << 20);
		eng_limits lim = { .max_message = 1 << 20, .max_depth = 64, .max_pending = 16,
				   .grace_ms = 5000 };
		eng_session *s = eng_session_new(tp_mem_server(mem), &pool, &stats, &lim,
						 &local_proto, NULL);
		ck_assert_ptr_nonnull(s);
		pthread_t th;
		pthread_create(&th, NULL, run_session, s);
		ck_assert_int_eq(eng_session_submit_local(s, "no-hash", local_answers, NULL, NULL,
							  local_sink, NULL),
				 MCP_EINVAL);
		ck_assert_int_eq(eng_session_submit_local(s, "#answers", local_answers, NULL, NULL,
							  local_sink, NULL),
				 MCP_OK);
		ck_assert_int_eq(eng_session_submit_local(s, "#waits", local_waits, NULL, NULL,
							  local_sink, NULL),
				 MCP_OK);
		while (atomic_load(&local_started) == 0 || atomic_load(&local_sinks) == 0)
			usleep(1000);
		tp_mem_client_close(mem); /* end of input: the shutdown runs */
		pthread_join(th, NULL);
		/* The shutdown waited for the local request and fired it. */
		ck_assert_int_eq(atomic_load(&local_sinks), 2);
		ck_assert_int_eq(atomic_load(&local_sink_msgs), 1);
		ck_assert_int_eq(atomic_load(&local_saw_reason), MCP_CANCEL_TRANSPORT_CLOSED);
		ck_assert_uint_eq(atomic_load(&stats.abandoned), 0);
		/* Nothing of either was written. */
		char *line = NULL;
		size_t len = 0;
		ck_assert_int_eq(tp_mem_client_recv(mem, 1000, &line, &len), -1);
		/* After the shutdown a local request is refused. */
		ck_assert_int_eq(eng_session_submit_local(s, "#late", local_answers, NULL, NULL,
							  local_sink, NULL),
				 MCP_ECLOSED);
		eng_session_unref(s);
		eng_pool_stop(&pool, ENG_NO_DEADLINE);
		tp_mem_free(mem);
	}
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, version_negotiation);
	tcase_add_test(tc, nonblocking_tools_run_where_read_until_they_wait);
	tcase_add_test(tc, nonblocking_prompts_and_resources_too);
	tcase_add_test(tc, peer_cancel_running_writes_nothing);
	tcase_add_test(tc, eof_answers_queued_work_and_drops_cancelled);
	tcase_add_test(tc, eof_wakes_handlers_blocked_on_roots);
	tcase_add_test(tc, shutdown_from_another_thread);
	tcase_add_test(tc, cancel_races_completion);
	tcase_add_test(tc, embedded_memconn_roundtrip);
	tcase_add_test(tc, log_level_and_ordering);
	tcase_add_test(tc, server_requests_timeout_cancel_and_stray_answers);
	tcase_add_test(tc, one_at_a_time_polls_only_when_asked);
	tcase_add_test(tc, idle_poll_setter_range);
	tcase_add_test(tc, requests_read_together_do_not_wait_behind_blocked_ones);
	tcase_add_test(tc, held_requests_refused_busy_except_the_cancelled);
	tcase_add_test(tc, local_requests_obey_the_shutdown);
	tcase_add_test(tc, parse_message_bounds_values_and_widens_integers);
	suite_add_tcase(s, tc);
	return s;
}
