/*
 * test_client.c - the client (api/client.c) against real servers over real
 * pipes: mcp-everything in both eras, an embedded server in-process, and
 * the misbehaving fixture servers of tests/client/fixture.py.  The race
 * tests loop, and run under ThreadSanitizer in a --enable-sanitizer=thread
 * build.  Nothing here asserts on timing: outcomes only (how long the
 * 64-call failure took is printed, not checked).
 */
#include <check.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/eng.h"
#include "mcp/client.h"
#include "tests/unit/runner.h"

static const char *everything(void)
{
	const char *p = getenv("MCP_EVERYTHING");
	return p ? p : "examples/mcp-everything";
}

static const char *fixture(void)
{
	const char *p = getenv("MCP_CLIENT_FIXTURE");
#ifdef MCP_CLIENT_FIXTURE_PATH
	return p ? p : MCP_CLIENT_FIXTURE_PATH;
#else
	return p ? p : "tests/client/fixture.py";
#endif
}

/* Under valgrind (make check-valgrind) the loops run a tenth as often:
 * memcheck needs the paths, not the repetitions, and is 50 times slower.
 * Every other build (plain, TSan, ASan) runs them in full. */
static int loops(int n)
{
	const char *pre = getenv("LD_PRELOAD");
	return pre && strstr(pre, "vgpreload") ? (n + 9) / 10 : n;
}

static mcp_client *spawn(const char *era, char *const argv[])
{
	mcp_client *c = mcp_client_new("test-client", "1.0");
	ck_assert_ptr_nonnull(c);
	if (era)
		ck_assert_int_eq(mcp_client_set_protocol_version(c, era), MCP_OK);
	ck_assert_int_eq(mcp_client_set_kill_grace_ms(c, 2000, 1000), MCP_OK);
	int rc = mcp_client_connect_stdio(c, argv, NULL, NULL);
	if (rc != MCP_OK)
		fprintf(stderr, "connect: %s: %s\n", mcp_strerror(rc), mcp_client_error(c));
	ck_assert_int_eq(rc, MCP_OK);
	return c;
}

static mcp_client *spawn_everything(const char *era)
{
	char *argv[] = { (char *)everything(), NULL };
	return spawn(era, argv);
}

static mcp_client *spawn_fixture(const char *mode, const char *arg)
{
	char *argv[] = { "python3", (char *)fixture(), (char *)mode, (char *)arg, NULL };
	return spawn("2025-11-25", argv);
}

static const char *first_text(json_object *res)
{
	json_object *content = NULL, *text = NULL;
	json_object_object_get_ex(res, "content", &content);
	json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &text);
	return json_object_get_string(text);
}

static json_object *args_of(const char *text)
{
	json_object *o = json_tokener_parse(text);
	ck_assert_ptr_nonnull(o);
	return o;
}

/* ---- both eras against mcp-everything --------------------------------------- */

typedef struct progress_seen {
	int n;
	double last;
} progress_seen;

static void on_progress(mcp_call *call, double progress, double total, const char *message,
			void *user)
{
	progress_seen *p = user;
	(void)call;
	(void)total;
	(void)message;
	ck_assert(progress >= p->last);
	p->last = progress;
	p->n++;
}

static int sample_handler(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
			  json_object **result, void *user)
{
	(void)c;
	(void)params;
	(void)tok;
	(void)user;
	ck_assert_str_eq(method, "sampling/createMessage");
	*result = json_tokener_parse("{\"role\":\"assistant\",\"model\":\"test\","
				     "\"content\":{\"type\":\"text\",\"text\":\"Paris\"}}");
	return MCP_OK;
}

static void everything_round(const char *era, const char *want_version)
{
	mcp_client *c = mcp_client_new("test-client", "1.0");
	if (era)
		mcp_client_set_protocol_version(c, era);
	mcp_client_set_sampling_handler(c, sample_handler, NULL);
	mcp_client_add_root(c, "file:///tmp/root-one", "one");
	char *argv[] = { (char *)everything(), NULL };
	ck_assert_int_eq(mcp_client_connect_stdio(c, argv, NULL, NULL), MCP_OK);
	ck_assert_str_eq(mcp_client_protocol_version(c), want_version);
	ck_assert(mcp_client_connected(c));

	json_object *tools = NULL;
	ck_assert_int_eq(mcp_client_list_tools(c, 10000, NULL, &tools), MCP_OK);
	ck_assert(json_object_array_length(tools) >= 20);
	json_object_put(tools);

	json_object *res = NULL, *args = args_of("{\"text\":\"hello\"}");
	ck_assert_int_eq(mcp_client_call_tool(c, "echo", args, 10000, NULL, &res), MCP_OK);
	ck_assert_str_eq(first_text(res), "hello");
	json_object_put(res);
	json_object_put(args);

	/* Progress reaches the call that asked. */
	progress_seen seen = { 0, 0 };
	args = args_of("{\"steps\":5,\"interval_ms\":1}");
	mcp_call *call = mcp_call_new_tool(c, "progress", args);
	json_object_put(args);
	mcp_call_set_progress(call, on_progress, &seen);
	ck_assert_int_eq(mcp_call_start(call), MCP_OK);
	ck_assert_int_eq(mcp_call_wait(call, 10000, &res), MCP_OK);
	json_object_put(res);
	mcp_call_free(call);
	ck_assert_int_eq(seen.n, 5);

	/* Sampling, answered by the handler on the client's pool: over the
	 * session (legacy) or as an input_required round (2026-07-28). */
	const char *tool = strcmp(want_version, "2026-07-28") == 0
				   ? "test_input_required_result_sampling"
				   : "test_sampling";
	args = args_of("{\"prompt\":\"What is the capital of France?\"}");
	ck_assert_int_eq(mcp_client_call_tool(c, tool, args, 10000, NULL, &res), MCP_OK);
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(res), "Paris"));
	json_object_put(res);
	json_object_put(args);

	/* An unknown tool is the server's error, not a hang. */
	ck_assert_int_eq(mcp_client_call_tool(c, "no_such_tool", NULL, 10000, NULL, &res),
			 MCP_EREMOTE);
	json_object_put(res);

	/* A timeout cancels the call and says so. */
	args = args_of("{\"ms\":60000}");
	ck_assert_int_eq(mcp_client_call_tool(c, "sleep", args, 50, NULL, &res), MCP_ETIMEDOUT);
	ck_assert_ptr_null(res);
	json_object_put(args);
	ck_assert_int_eq(mcp_client_ping(c, 10000, NULL), MCP_OK);
	mcp_client_free(c);
}

START_TEST(everything_legacy)
{
	everything_round("2025-11-25", "2025-11-25");
}
END_TEST

START_TEST(everything_modern_auto)
{
	everything_round(NULL, "2026-07-28");
}
END_TEST

START_TEST(everything_2025_03_26)
{
	mcp_client *c = spawn_everything("2025-03-26");
	ck_assert_str_eq(mcp_client_protocol_version(c), "2025-03-26");
	json_object *res = NULL;
	ck_assert_int_eq(mcp_client_list_prompts(c, 10000, NULL, &res), MCP_OK);
	ck_assert(json_object_array_length(res) >= 4);
	json_object_put(res);
	mcp_client_free(c);
}
END_TEST

/* 2024-11-05, the first revision, asked for by name: the whole round, and
 * a result the server had to downgrade (audio became text). */
START_TEST(everything_2024_11_05)
{
	everything_round("2024-11-05", "2024-11-05");
	mcp_client *c = spawn_everything("2024-11-05");
	ck_assert_str_eq(mcp_client_protocol_version(c), "2024-11-05");
	json_object *caps = mcp_client_server_capabilities(c);
	ck_assert(json_object_object_get_ex(caps, "tools", NULL));
	ck_assert(!json_object_object_get_ex(caps, "completions", NULL));
	json_object *res = NULL;
	ck_assert_int_eq(mcp_client_call_tool(c, "test_audio_content", NULL, 10000, NULL, &res),
			 MCP_OK);
	ck_assert_ptr_nonnull(strstr(first_text(res), "audio/wav"));
	json_object_put(res);
	mcp_client_free(c);
}
END_TEST

/* A server that speaks only `version` (argv[1]): initialize answered with
 * it, every other request with an empty result (tools/list with none). */
static const char old_server[] =
	"import json, sys\n"
	"for line in sys.stdin:\n"
	"    m = json.loads(line)\n"
	"    if 'id' not in m or 'method' not in m:\n"
	"        continue\n"
	"    if m['method'] == 'initialize':\n"
	"        r = {'protocolVersion': sys.argv[1], 'capabilities': {'tools': {}},\n"
	"             'serverInfo': {'name': 'old', 'version': '0'}}\n"
	"    else:\n"
	"        r = {'tools': []} if m['method'] == 'tools/list' else {}\n"
	"    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n";

/* A client that offers its newest legacy revision goes on with a server
 * that answers 2024-11-05 (initialize's rule: the client decides), and
 * still leaves one that answers a revision that does not exist. */
START_TEST(server_answers_2024_11_05)
{
	char *argv[] = { "python3", "-c", (char *)old_server, "2024-11-05", NULL };
	mcp_client *c = spawn("2025-11-25", argv);
	ck_assert_str_eq(mcp_client_protocol_version(c), "2024-11-05");
	json_object *tools = NULL;
	ck_assert_int_eq(mcp_client_list_tools(c, 10000, NULL, &tools), MCP_OK);
	ck_assert_int_eq(json_object_array_length(tools), 0);
	json_object_put(tools);
	ck_assert_int_eq(mcp_client_ping(c, 10000, NULL), MCP_OK);
	mcp_client_free(c);

	char *bad[] = { "python3", "-c", (char *)old_server, "2024-10-07", NULL };
	c = mcp_client_new("test-client", "1.0");
	ck_assert_int_eq(mcp_client_set_kill_grace_ms(c, 2000, 1000), MCP_OK);
	ck_assert_int_eq(mcp_client_connect_stdio(c, bad, NULL, NULL), MCP_EPROTO);
	ck_assert_ptr_nonnull(strstr(mcp_client_error(c), "2024-10-07"));
	mcp_client_free(c);
}
END_TEST

/* A blocking call cancelled from another thread through its token: the
 * server sees notifications/cancelled, the call ends MCP_ECANCELED. */
typedef struct canceller {
	mcp_token *tok;
	int ms;
} canceller;

static void *cancel_later(void *arg)
{
	canceller *k = arg;
	usleep((useconds_t)k->ms * 1000);
	mcp_token_cancel(k->tok);
	return NULL;
}

START_TEST(token_cancels_blocking_call)
{
	mcp_client *c = spawn_everything("2025-11-25");
	mcp_token *tok = mcp_token_new();
	canceller k = { tok, 30 };
	pthread_t th;
	pthread_create(&th, NULL, cancel_later, &k);
	json_object *args = args_of("{\"ms\":60000}"), *res = NULL;
	ck_assert_int_eq(mcp_client_call_tool(c, "sleep", args, -1, tok, &res), MCP_ECANCELED);
	pthread_join(th, NULL);
	json_object_put(args);
	/* The connection is fine afterwards. */
	ck_assert_int_eq(mcp_client_ping(c, 10000, NULL), MCP_OK);
	mcp_token_free(tok);
	mcp_client_free(c);
}
END_TEST

/* ---- an embedded server -------------------------------------------------------- */

static int tool_twice(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	json_object *n = NULL;
	json_object_object_get_ex(args, "n", &n);
	char buf[32];
	snprintf(buf, sizeof buf, "%d", 2 * json_object_get_int(n));
	return mcp_result_add_text(out, buf);
}

START_TEST(memory_connection)
{
	mcp_server *srv = mcp_server_new("embedded", "1.0");
	mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "twice",
					       .input_schema = "{\"type\":\"object\"}",
					       .fn = tool_twice });
	mcp_memconn *conn;
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	for (int era = 0; era < 1; era++) {
		mcp_client *c = mcp_client_new("embedder", "1.0");
		ck_assert_int_eq(mcp_client_connect_memory(c, conn), MCP_OK);
		json_object *args = args_of("{\"n\":21}"), *res = NULL;
		ck_assert_int_eq(mcp_client_call_tool(c, "twice", args, 5000, NULL, &res), MCP_OK);
		ck_assert_str_eq(first_text(res), "42");
		json_object_put(res);
		json_object_put(args);
		mcp_client_free(c);
	}
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}
END_TEST

/* ---- adversarial --------------------------------------------------------------- */

/* The server exits with 64 calls in flight: every call fails with
 * MCP_ECLOSED and the reason, none hangs; the child is reaped. */
START_TEST(server_exits_with_64_in_flight)
{
	for (int round = 0; round < loops(5); round++) {
		mcp_client *c = spawn_fixture("exit-after", "64");
		mcp_call *calls[64];
		for (int i = 0; i < 64; i++) {
			calls[i] = mcp_call_new_tool(c, "anything", NULL);
			ck_assert_int_eq(mcp_call_start(calls[i]), MCP_OK);
		}
		int64_t t0 = eng_now_ns(), first = 0, last = 0;
		for (int i = 0; i < 64; i++) {
			ck_assert_int_eq(mcp_call_wait(calls[i], 30000, NULL), MCP_ECLOSED);
			if (!first)
				first = eng_now_ns();
			/* The reason names the exit when the child was gone
			 * within 10 ms of its end of output (usual), else the
			 * end of output; the status itself is checked below. */
			const char *why = mcp_call_error(calls[i]);
			ck_assert(strstr(why, "exited with status 3") ||
				  strstr(why, "closed its output"));
		}
		last = eng_now_ns();
		for (int i = 0; i < 64; i++)
			mcp_call_free(calls[i]);
		/* Measured, never asserted: the first failure comes when the
		 * server has read the 64 calls and exited; the other 63 are
		 * failed by the same snapshot. */
		printf("server_exits_with_64_in_flight: round %d: first failure %.2f ms after "
		       "the waits began, all 64 within %.3f ms of it\n",
		       round, (double)(first - t0) / 1e6, (double)(last - first) / 1e6);
		ck_assert(!mcp_client_connected(c));
		/* New calls fail at once. */
		ck_assert_int_eq(mcp_client_ping(c, 1000, NULL), MCP_ECLOSED);
		mcp_client_close(c);
		int st;
		ck_assert_int_eq(mcp_client_server_status(c, &st), MCP_OK);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
		mcp_client_free(c);
	}
}
END_TEST

/* Cancel races the answer: each call ends exactly once, OK or
 * cancelled, and whatever answer loses is dropped and counted. */
typedef struct racer {
	mcp_call *call;
	int delay_us;
} racer;

static void *race_cancel(void *arg)
{
	racer *r = arg;
	if (r->delay_us)
		usleep((useconds_t)r->delay_us);
	mcp_call_cancel(r->call);
	return NULL;
}

START_TEST(cancel_races_answer)
{
	mcp_client *c = spawn_everything("2025-11-25");
	json_object *args = args_of("{\"text\":\"x\"}");
	int ok = 0, cancelled = 0;
	for (int i = 0; i < loops(2000); i++) {
		mcp_call *call = mcp_call_new_tool(c, "echo", args);
		ck_assert_int_eq(mcp_call_start(call), MCP_OK);
		racer r = { call, i % 5 == 0 ? 0 : (i * 7) % 60 };
		pthread_t th;
		pthread_create(&th, NULL, race_cancel, &r);
		json_object *res = NULL;
		int rc = mcp_call_wait(call, 30000, &res);
		pthread_join(th, NULL);
		ck_assert(rc == MCP_OK || rc == MCP_ECANCELED);
		if (rc == MCP_OK) {
			ck_assert_str_eq(first_text(res), "x");
			ok++;
		} else {
			ck_assert_ptr_null(res);
			cancelled++;
		}
		json_object_put(res);
		/* A second wait gives the same single outcome. */
		json_object *again = NULL;
		ck_assert_int_eq(mcp_call_wait(call, 0, &again), rc);
		json_object_put(again);
		mcp_call_free(call);
	}
	json_object_put(args);
	/* No answer went to a wrong call: a fresh call still gets its own. */
	json_object *res = NULL, *a2 = args_of("{\"text\":\"fresh\"}");
	ck_assert_int_eq(mcp_client_call_tool(c, "echo", a2, 10000, NULL, &res), MCP_OK);
	ck_assert_str_eq(first_text(res), "fresh");
	json_object_put(res);
	json_object_put(a2);
	char *stats = mcp_client_stats_json(c);
	printf("cancel_races_answer: %d answered, %d cancelled; %s\n", ok, cancelled, stats);
	json_object *st = json_tokener_parse(stats);
	json_object *v;
	json_object_object_get_ex(st, "calls_ok", &v);
	/* initialize, the 2,000 and the fresh call */
	ck_assert_int_eq(json_object_get_int(v), ok + 2);
	json_object_object_get_ex(st, "calls_cancelled", &v);
	ck_assert_int_eq(json_object_get_int(v), cancelled);
	json_object_put(st);
	free(stats);
	mcp_client_free(c);
}
END_TEST

/* Unknown ids, string and null ids, garbage and duplicates: dropped and
 * counted, and every call gets its own answer. */
START_TEST(garbage_and_duplicates)
{
	mcp_client *c = spawn_fixture("garbage", NULL);
	for (int i = 1; i <= 50; i++) {
		json_object *res = NULL;
		ck_assert_int_eq(mcp_client_call_tool(c, "t", NULL, 10000, NULL, &res), MCP_OK);
		char want[32];
		snprintf(want, sizeof want, "ok %d", i);
		ck_assert_str_eq(first_text(res), want);
		json_object_put(res);
	}
	ck_assert(mcp_client_connected(c));
	char *stats = mcp_client_stats_json(c);
	json_object *st = json_tokener_parse(stats), *v;
	json_object_object_get_ex(st, "answers_unmatched", &v);
	/* Unknown id, string id, null id and the duplicate of each call (the
	 * last duplicate may still be on its way). */
	ck_assert_int_ge(json_object_get_int(v), 4 * 50 - 1);
	/* The lines that are not JSON were dropped, not answered. */
	json_object_object_get_ex(st, "invalid_dropped", &v);
	ck_assert_int_ge(json_object_get_int(v), 1);
	printf("garbage_and_duplicates: %s\n", stats);
	json_object_put(st);
	free(stats);
	mcp_client_free(c);
}
END_TEST

/* tests/client/hostile.py, beside the fixture. */
static char *hostile_path(void)
{
	const char *f = fixture();
	const char *slash = strrchr(f, '/');
	size_t dir = slash ? (size_t)(slash - f + 1) : 0;
	char *p = malloc(dir + sizeof "hostile.py");
	ck_assert_ptr_nonnull(p);
	memcpy(p, f, dir);
	strcpy(p + dir, "hostile.py");
	return p;
}

/* A server that answers the handshake under an id never sent: the
 * connect ends at the connect timeout (one deadline for server/discover
 * and whatever follows), and its error names what the server sent; the
 * dropped answer is counted with its reason.  Then a call answered under
 * a wrong id: the client notes it, and a late answer to an id it did send
 * is not held against the server. */
START_TEST(wrong_ids_are_named)
{
	char *path = hostile_path();
	char *argv[] = { "python3", path, "wrong-id", NULL };
	mcp_client *c = mcp_client_new("hostile", "1");
	/* Long enough for Python to start on a loaded machine (8 s was
	 * not, at a load of 9): the answer must come before the deadline
	 * for the error to name it. */
	ck_assert_int_eq(mcp_client_set_connect_timeout_ms(c, 20000), MCP_OK);
	ck_assert_int_eq(mcp_client_set_kill_grace_ms(c, 200, 200), MCP_OK);
	ck_assert_int_eq(mcp_client_connect_stdio(c, argv, NULL, NULL), MCP_ETIMEDOUT);
	printf("wrong_ids_are_named: %s\n", mcp_client_error(c));
	ck_assert_ptr_nonnull(strstr(mcp_client_error(c), "connect timeout of 20000 ms"));
	ck_assert_ptr_nonnull(strstr(mcp_client_error(c), "which this client never sent"));
	char why[300];
	ck_assert_uint_ge(mcp_client_last_dropped(c, why, sizeof why), 1);
	ck_assert_ptr_nonnull(strstr(why, "under id 1000"));
	mcp_client_free(c);

	char *argv2[] = { "python3", path, "call-wrong-id", NULL };
	c = mcp_client_new("hostile", "1");
	ck_assert_int_eq(mcp_client_set_era(c, MCP_ERA_LEGACY), MCP_OK);
	ck_assert_int_eq(mcp_client_connect_stdio(c, argv2, NULL, NULL), MCP_OK);
	ck_assert_uint_eq(mcp_client_last_dropped(c, why, sizeof why), 0);
	ck_assert_str_eq(why, "");
	mcp_call *call = mcp_call_new_tool(c, "echo", NULL);
	ck_assert_int_eq(mcp_call_start(call), MCP_OK);
	int64_t id = mcp_call_request_id(call);
	ck_assert_int_eq(mcp_call_wait(call, 300, NULL), MCP_ETIMEDOUT);
	/* The wrong answer came long before the timeout (or the wait ends
	 * at the guard and the check below fails). */
	for (int i = 0; i < 1000 && mcp_client_last_dropped(c, NULL, 0) == 0; i++)
		usleep(10000);
	ck_assert_uint_eq(mcp_client_last_dropped(c, why, sizeof why), 1);
	char want[80];
	snprintf(want, sizeof want, "under id %lld,", (long long)id + 100000);
	ck_assert_ptr_nonnull(strstr(why, want));
	mcp_call_free(call);
	mcp_client_free(c);
	free(path);
}
END_TEST

/* A flood of notifications: every progress notification reaches its
 * call, in order, and the call still ends. */
static int log_count;
static void on_note(mcp_client *c, const char *method, json_object *params, void *user)
{
	(void)c;
	(void)params;
	(void)user;
	if (strcmp(method, "notifications/message") == 0)
		log_count++;
}

START_TEST(notification_flood)
{
	mcp_client *c = mcp_client_new("flood", "1");
	mcp_client_set_notification_handler(c, on_note, NULL);
	char *argv[] = { "python3", (char *)fixture(), "flood", "20000", NULL };
	int rounds = loops(3);
	ck_assert_int_eq(mcp_client_connect_stdio(c, argv, NULL, NULL), MCP_OK);
	for (int k = 0; k < rounds; k++) {
		progress_seen seen = { 0, 0 };
		mcp_call *call = mcp_call_new_tool(c, "t", NULL);
		mcp_call_set_progress(call, on_progress, &seen);
		ck_assert_int_eq(mcp_call_start(call), MCP_OK);
		ck_assert_int_eq(mcp_call_wait(call, 60000, NULL), MCP_OK);
		mcp_call_free(call);
		ck_assert_int_eq(seen.n, 20000);
	}
	mcp_client_close(c);
	ck_assert_int_eq(log_count, 20000 * rounds);
	mcp_client_free(c);
}
END_TEST

/* The client closes while a sampling handler runs: the handler sees its
 * token fire, close waits for it, and nothing runs after close. */
static _Atomic int in_handler, handler_done, handler_saw_cancel, after_close;
static _Atomic int closed_flag;

static int slow_sample(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
		       json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)params;
	(void)user;
	if (atomic_load(&closed_flag))
		atomic_fetch_add(&after_close, 1);
	atomic_store(&in_handler, 1);
	int rc = mcp_token_sleep(tok, 60000);
	if (rc == MCP_ECANCELED)
		atomic_store(&handler_saw_cancel, 1);
	atomic_store(&handler_done, 1);
	*result = NULL;
	return rc;
}

START_TEST(close_during_sampling)
{
	for (int round = 0; round < 5; round++) {
		atomic_store(&in_handler, 0);
		atomic_store(&handler_done, 0);
		atomic_store(&handler_saw_cancel, 0);
		atomic_store(&closed_flag, 0);
		mcp_client *c = mcp_client_new("sampler", "1");
		mcp_client_set_sampling_handler(c, slow_sample, NULL);
		char *argv[] = { "python3", (char *)fixture(), "sample", NULL };
		ck_assert_int_eq(mcp_client_connect_stdio(c, argv, NULL, NULL), MCP_OK);
		mcp_call *call = mcp_call_new_tool(c, "t", NULL);
		ck_assert_int_eq(mcp_call_start(call), MCP_OK);
		while (!atomic_load(&in_handler))
			usleep(1000);
		mcp_client_close(c);
		atomic_store(&closed_flag, 1);
		ck_assert(atomic_load(&handler_done));
		ck_assert(atomic_load(&handler_saw_cancel));
		ck_assert_int_eq(mcp_call_wait(call, 0, NULL), MCP_ECLOSED);
		mcp_call_free(call);
		mcp_client_free(c);
		ck_assert_int_eq(atomic_load(&after_close), 0);
	}
}
END_TEST

/* Closing with calls in flight against a server that never answers:
 * each fails at once, and the spawned server is gone afterwards. */
START_TEST(close_with_calls_in_flight)
{
	mcp_client *c = spawn_fixture("hang", NULL);
	mcp_call *calls[16];
	for (int i = 0; i < 16; i++) {
		calls[i] = mcp_call_new_tool(c, "t", NULL);
		ck_assert_int_eq(mcp_call_start(calls[i]), MCP_OK);
	}
	mcp_client_close(c);
	for (int i = 0; i < 16; i++) {
		ck_assert_int_eq(mcp_call_wait(calls[i], 0, NULL), MCP_ECLOSED);
		mcp_call_free(calls[i]);
	}
	int st;
	ck_assert_int_eq(mcp_client_server_status(c, &st), MCP_OK);
	mcp_client_free(c);
}
END_TEST


/* ---- Streamable HTTP ------------------------------------------------------------ */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>

extern char **environ;

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	bind(fd, (struct sockaddr *)&a, sizeof a);
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	return ntohs(a.sin_port);
}

/* mcp-everything --http on a free port (with --bearer `bearer` when not
 * NULL); its pid, and the URL in url[]. */
static pid_t start_http_bearer(char *url, size_t sz, const char *bearer)
{
	int port = free_port();
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	char *argv[] = { (char *)everything(), "--http", addr, bearer ? "--bearer" : NULL,
			 (char *)bearer, NULL };
	pid_t pid;
	ck_assert_int_eq(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
	snprintf(url, sz, "http://127.0.0.1:%d/mcp", port);
	for (int i = 0; i < 400; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
		close(fd);
		if (ok)
			return pid;
		usleep(10000);
	}
	ck_abort_msg("mcp-everything --http did not start");
	return -1;
}

static pid_t start_http(char *url, size_t sz)
{
	return start_http_bearer(url, sz, NULL);
}

static void stop_http(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

static mcp_client *connect_http(const char *url, const char *era)
{
	mcp_client *c = mcp_client_new("http-test", "1");
	if (era)
		mcp_client_set_protocol_version(c, era);
	int rc = mcp_client_connect_http(c, url);
	if (rc == MCP_ENOTSUP) {
		mcp_client_free(c);
		return NULL;
	}
	if (rc != MCP_OK)
		fprintf(stderr, "connect_http: %s\n", mcp_client_error(c));
	ck_assert_int_eq(rc, MCP_OK);
	return c;
}

/* The server ends the call's SSE stream mid-call (2025-11-25 polling,
 * test_reconnection): the client resumes with GET and Last-Event-ID after
 * the server's retry, and gets the answer. */
START_TEST(http_stream_dropped_resumes)
{
	char url[128];
	pid_t pid = start_http(url, sizeof url);
	mcp_client *c = connect_http(url, "2025-11-25");
	if (!c) {
		stop_http(pid);
		return; /* built without libcurl */
	}
	for (int i = 0; i < loops(10); i++) {
		json_object *res = NULL;
		ck_assert_int_eq(mcp_client_call_tool(c, "test_reconnection", NULL, 20000, NULL, &res),
				 MCP_OK);
		ck_assert_ptr_nonnull(strstr(first_text(res), "properly reconnected"));
		json_object_put(res);
	}
	mcp_client_free(c);
	stop_http(pid);
}
END_TEST

/* Many calls at once over HTTP in both eras, then the server is killed
 * with calls in flight: every one fails with MCP_ECLOSED, none hangs. */
START_TEST(http_window_and_server_killed)
{
	const char *eras[] = { "2025-11-25", "2026-07-28" };
	for (int e = 0; e < 2; e++) {
		char url[128];
		pid_t pid = start_http(url, sizeof url);
		mcp_client *c = connect_http(url, eras[e]);
		if (!c) {
			stop_http(pid);
			return;
		}
		json_object *args = args_of("{\"text\":\"w\"}");
		mcp_call *calls[16];
		for (int round = 0; round < 10; round++) {
			for (int i = 0; i < 16; i++) {
				calls[i] = mcp_call_new_tool(c, "echo", args);
				ck_assert_int_eq(mcp_call_start(calls[i]), MCP_OK);
			}
			for (int i = 0; i < 16; i++) {
				json_object *res = NULL;
				ck_assert_int_eq(mcp_call_wait(calls[i], 20000, &res), MCP_OK);
				ck_assert_str_eq(first_text(res), "w");
				json_object_put(res);
				mcp_call_free(calls[i]);
			}
		}
		json_object_put(args);
		args = args_of("{\"ms\":60000}");
		for (int i = 0; i < 16; i++) {
			calls[i] = mcp_call_new_tool(c, "sleep", args);
			ck_assert_int_eq(mcp_call_start(calls[i]), MCP_OK);
		}
		usleep(200000);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		for (int i = 0; i < 16; i++) {
			ck_assert_int_eq(mcp_call_wait(calls[i], 20000, NULL), MCP_ECLOSED);
			mcp_call_free(calls[i]);
		}
		json_object_put(args);
		mcp_client_free(c);
	}
}
END_TEST


/* ---- notifications reach their handlers ---------------------------------------- */

static _Atomic int call_logs, other_logs, list_changed;

static void count_call_log(mcp_call *call, mcp_log_level level, const char *logger,
			   json_object *data, void *user)
{
	(void)call;
	(void)level;
	(void)logger;
	(void)user;
	ck_assert(json_object_is_type(data, json_type_string));
	atomic_fetch_add(&call_logs, 1);
}

static void count_notes(mcp_client *c, const char *method, json_object *params, void *user)
{
	(void)c;
	(void)params;
	(void)user;
	if (strcmp(method, "notifications/message") == 0)
		atomic_fetch_add(&other_logs, 1);
	if (strcmp(method, "notifications/tools/list_changed") == 0)
		atomic_fetch_add(&list_changed, 1);
}

/* Log messages reach the call that asked (its HTTP stream, or the one
 * call in flight with a log callback on stdio), list_changed reaches the
 * client's handler, and list helpers follow cursors. */
static void notifications_over(int http)
{
	atomic_store(&call_logs, 0);
	atomic_store(&other_logs, 0);
	atomic_store(&list_changed, 0);
	char url[128];
	pid_t pid = -1;
	mcp_client *c = mcp_client_new("notes", "1");
	mcp_client_set_protocol_version(c, "2025-11-25");
	mcp_client_set_notification_handler(c, count_notes, NULL);
	if (http) {
		pid = start_http(url, sizeof url);
		int rc = mcp_client_connect_http(c, url);
		if (rc == MCP_ENOTSUP) {
			mcp_client_free(c);
			stop_http(pid);
			return;
		}
		ck_assert_int_eq(rc, MCP_OK);
	} else {
		char *argv[] = { (char *)everything(), NULL };
		ck_assert_int_eq(mcp_client_connect_stdio(c, argv, NULL, NULL), MCP_OK);
	}
	ck_assert_int_eq(mcp_client_set_log_level(c, MCP_LOG_DEBUG, 10000, NULL), MCP_OK);
	mcp_call *call = mcp_call_new_tool(c, "test_tool_with_logging", NULL);
	mcp_call_set_log(call, MCP_LOG_DEBUG, count_call_log, NULL);
	ck_assert_int_eq(mcp_call_start(call), MCP_OK);
	ck_assert_int_eq(mcp_call_wait(call, 10000, NULL), MCP_OK);
	mcp_call_free(call);
	ck_assert_int_eq(atomic_load(&call_logs), 3);
	ck_assert_int_eq(atomic_load(&other_logs), 0);
	/* The tool list changes: the handler hears it. */
	json_object *res = NULL;
	ck_assert_int_eq(mcp_client_call_tool(c, "test_trigger_tool_change", NULL, 10000, NULL, &res),
			 MCP_OK);
	json_object_put(res);
	for (int i = 0; i < 1000 && atomic_load(&list_changed) == 0; i++)
		usleep(5000);
	ck_assert_int_ge(atomic_load(&list_changed), 1);
	mcp_client_free(c);
	if (pid > 0)
		stop_http(pid);
}

START_TEST(notifications_stdio)
{
	notifications_over(0);
}
END_TEST

START_TEST(notifications_http)
{
	notifications_over(1);
}
END_TEST

/* A server that pages its lists by 2: the helper follows the cursors. */
static int tool_nop(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_text(out, "nop");
}

START_TEST(list_follows_cursors)
{
	mcp_server *srv = mcp_server_new("paged", "1.0");
	mcp_server_set_page_size(srv, 2);
	char names[7][16];
	for (int i = 0; i < 7; i++) {
		snprintf(names[i], sizeof names[i], "tool%d", i);
		mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = names[i],
						       .input_schema = "{\"type\":\"object\"}",
						       .fn = tool_nop });
	}
	mcp_memconn *conn;
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	mcp_client *c = mcp_client_new("pager", "1.0");
	ck_assert_int_eq(mcp_client_connect_memory(c, conn), MCP_OK);
	json_object *tools = NULL;
	ck_assert_int_eq(mcp_client_list_tools(c, 5000, NULL, &tools), MCP_OK);
	ck_assert_uint_eq(json_object_array_length(tools), 7);
	json_object_put(tools);
	/* One page by hand: a cursor comes back. */
	json_object *page = NULL, *cur = NULL;
	ck_assert_int_eq(mcp_client_request(c, "tools/list", NULL, 5000, NULL, &page), MCP_OK);
	ck_assert(json_object_object_get_ex(page, "nextCursor", &cur));
	json_object_put(page);
	mcp_client_free(c);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}
END_TEST


/* A server that requires a bearer token: refused without it, served with
 * it (mcp_client_set_bearer). */
START_TEST(http_bearer_token)
{
	char url[128];
	pid_t pid = start_http_bearer(url, sizeof url, "s3cret-token");
	/* Refused at once (401), many times: the refusal can come back
	 * before the request is published as the call's, and must fail the
	 * call then too, never leave it to its connect timeout (it did, one
	 * time in three under valgrind). */
	mcp_client *c;
	for (int i = 0; i < 25; i++) {
		c = mcp_client_new("bearer", "1");
		mcp_client_set_connect_timeout_ms(c, 20000);
		int rc = mcp_client_connect_http(c, url);
		if (rc == MCP_ENOTSUP) {
			mcp_client_free(c);
			stop_http(pid);
			return;
		}
		ck_assert_int_ne(rc, MCP_OK);
		ck_assert_msg(strstr(mcp_client_error(c), "HTTP status 401") != NULL,
			      "round %d: the refusal does not show its status: %s", i,
			      mcp_client_error(c));
		mcp_client_free(c);
	}
	c = mcp_client_new("bearer", "1");
	ck_assert_int_eq(mcp_client_set_bearer(c, "s3cret-token"), MCP_OK);
	ck_assert_int_eq(mcp_client_set_bearer(c, "bad\ntoken"), MCP_EINVAL);
	ck_assert_int_eq(mcp_client_connect_http(c, url), MCP_OK);
	json_object *res = NULL, *args = args_of("{\"text\":\"authorized\"}");
	ck_assert_int_eq(mcp_client_call_tool(c, "echo", args, 10000, NULL, &res), MCP_OK);
	ck_assert_str_eq(first_text(res), "authorized");
	json_object_put(res);
	json_object_put(args);
	mcp_client_free(c);
	stop_http(pid);
}
END_TEST


/* 2026-07-28: a tool that needs two input rounds.  The elicitation
 * handler answers each round; the state the server sealed goes back each
 * time; a limit of one round fails the call with MCP_EPROTO. */
static int elicit_answer(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
			 json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)tok;
	(void)user;
	json_object *schema = NULL, *props = NULL;
	json_object_object_get_ex(params, "requestedSchema", &schema);
	json_object_object_get_ex(schema, "properties", &props);
	json_object *content = json_object_new_object();
	json_object_object_foreach(props, key, prop)
	{
		(void)prop;
		json_object_object_add(content, key,
				       json_object_new_string(strcmp(key, "name") == 0 ? "Ada" : "green"));
	}
	*result = json_object_new_object();
	json_object_object_add(*result, "action", json_object_new_string("accept"));
	json_object_object_add(*result, "content", content);
	return MCP_OK;
}

START_TEST(input_rounds_and_their_limit)
{
	for (int limit = 8; limit >= 1; limit -= 7) {
		mcp_client *c = mcp_client_new("rounds", "1");
		mcp_client_set_era(c, MCP_ERA_MODERN);
		mcp_client_set_elicitation_handler(c, elicit_answer, NULL, MCP_ELICIT_FORM);
		mcp_client_set_input_rounds(c, limit);
		char *argv[] = { (char *)everything(), NULL };
		ck_assert_int_eq(mcp_client_connect_stdio(c, argv, NULL, NULL), MCP_OK);
		json_object *res = NULL;
		int rc = mcp_client_call_tool(c, "test_input_required_result_multi_round", NULL, 10000,
					      NULL, &res);
		if (limit == 8) {
			ck_assert_int_eq(rc, MCP_OK);
			ck_assert_str_eq(first_text(res), "Ada likes green");
		} else {
			ck_assert_int_eq(rc, MCP_EPROTO);
		}
		json_object_put(res);
		mcp_client_free(c);
	}
}
END_TEST

/* The same rounds over Streamable HTTP, many times: the answer that asks
 * for input settles the request, and the end of the response that
 * carried it may be read before the worker has sent the retry.  That
 * moment must not fail the call as "a response without the answer" (it
 * did, every time, against the conformance suite's MRTR server). */
START_TEST(input_rounds_over_http)
{
	char url[128];
	pid_t pid = start_http(url, sizeof url);
	mcp_client *c = mcp_client_new("rounds-http", "1");
	mcp_client_set_era(c, MCP_ERA_MODERN);
	mcp_client_set_elicitation_handler(c, elicit_answer, NULL, MCP_ELICIT_FORM);
	int rc = mcp_client_connect_http(c, url);
	if (rc == MCP_ENOTSUP) {
		mcp_client_free(c);
		stop_http(pid);
		return;
	}
	ck_assert_int_eq(rc, MCP_OK);
	for (int i = 0; i < loops(30); i++) {
		json_object *res = NULL;
		rc = mcp_client_call_tool(c, "test_input_required_result_multi_round", NULL, 10000,
					  NULL, &res);
		ck_assert_msg(rc == MCP_OK, "round trip %d: %s", i, mcp_strerror(rc));
		ck_assert_str_eq(first_text(res), "Ada likes green");
		json_object_put(res);
	}
	mcp_client_free(c);
	stop_http(pid);
}
END_TEST

/* SEP-2243 against a server that checks: mcp-everything's
 * test_custom_header declares "x-mcp-header": "Region", and at 2026-07-28
 * over HTTP refuses a call whose Mcp-Param-Region header is missing or
 * differs from the argument (-32020).  After tools/list the client sends
 * it, plain and Base64-encoded; a client that never listed the tool sends
 * none and is refused. */
START_TEST(http_param_headers)
{
	char url[128];
	pid_t pid = start_http(url, sizeof url);
	mcp_client *c = connect_http(url, "2026-07-28");
	if (!c) {
		stop_http(pid);
		return;
	}
	json_object *res = NULL, *args = args_of("{\"region\":\"eu-west-1\"}");
	ck_assert_int_eq(mcp_client_call_tool(c, "test_custom_header", args, 10000, NULL, &res),
			 MCP_EREMOTE);
	ck_assert_int_eq(json_object_get_int(json_object_object_get(res, "code")), -32020);
	json_object_put(res);
	json_object *tools = NULL;
	ck_assert_int_eq(mcp_client_list_tools(c, 10000, NULL, &tools), MCP_OK);
	ck_assert_uint_eq(mcp_client_tools_rejected(c, NULL, 0), 0);
	json_object_put(tools);
	res = NULL;
	ck_assert_int_eq(mcp_client_call_tool(c, "test_custom_header", args, 10000, NULL, &res),
			 MCP_OK);
	ck_assert_str_eq(first_text(res), "Region: eu-west-1");
	json_object_put(res);
	json_object_put(args);
	/* Non-ASCII and a space at the end: sent as =?base64?...?=, which
	 * the server decodes and finds equal. */
	args = args_of("{\"region\":\"Z\u00fcrich \"}");
	res = NULL;
	ck_assert_int_eq(mcp_client_call_tool(c, "test_custom_header", args, 10000, NULL, &res),
			 MCP_OK);
	ck_assert_str_eq(first_text(res), "Region: Z\xc3\xbcrich ");
	json_object_put(res);
	json_object_put(args);
	mcp_client_free(c);
	stop_http(pid);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, everything_legacy);
	tcase_add_test(tc, everything_modern_auto);
	tcase_add_test(tc, everything_2025_03_26);
	tcase_add_test(tc, everything_2024_11_05);
	tcase_add_test(tc, server_answers_2024_11_05);
	tcase_add_test(tc, token_cancels_blocking_call);
	tcase_add_test(tc, memory_connection);
	tcase_add_test(tc, server_exits_with_64_in_flight);
	tcase_add_test(tc, cancel_races_answer);
	tcase_add_test(tc, garbage_and_duplicates);
	tcase_add_test(tc, wrong_ids_are_named);
	tcase_add_test(tc, notification_flood);
	tcase_add_test(tc, close_during_sampling);
	tcase_add_test(tc, close_with_calls_in_flight);
	tcase_add_test(tc, http_stream_dropped_resumes);
	tcase_add_test(tc, http_window_and_server_killed);
	tcase_add_test(tc, notifications_stdio);
	tcase_add_test(tc, notifications_http);
	tcase_add_test(tc, list_follows_cursors);
	tcase_add_test(tc, http_bearer_token);
	tcase_add_test(tc, input_rounds_and_their_limit);
	tcase_add_test(tc, input_rounds_over_http);
	tcase_add_test(tc, http_param_headers);
	suite_add_tcase(s, tc);
	return s;
}
