/*
 * test_tasks.c - unit tests of api/tasks.c over in-process connections:
 * 2025-11-25 tasks (a tools/call with params.task answered at once with
 * the task; tasks/get, tasks/list, tasks/result with the related-task
 * _meta, tasks/cancel reaching the handler's token; unknown ids; a tool
 * that cannot be a task; the table's cap) and 2026-07-28 tasks (created
 * for a request that declares the extension, tasks/get inlining the
 * result, the -32021 of a request that does not declare it, the
 * idempotent cancel, input asked inside a task and given by tasks/update).
 */
#include "runner.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

#define TASKS_EXT "{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}"

/* ---- the handlers -------------------------------------------------------------------- */

static int quick(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx, (void)args, (void)user;
	return mcp_result_add_text(out, "done");
}

/* Sleeps until cancelled, or 60 s. */
static int slow(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	int rc = mcp_ctx_sleep(ctx, 60000);
	return rc == MCP_OK ? mcp_result_add_text(out, "slept") : rc;
}

/* Asks for one input by name, as a request would. */
static int asks(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	json_object *resp = mcp_ctx_input_response(ctx, "q");
	if (!resp) {
		json_object *p = json_tokener_parse("{\"message\":\"ok?\",\"requestedSchema\":"
						    "{\"type\":\"object\"}}");
		int rc = mcp_ctx_require_input(ctx, "q", "elicitation/create", p);
		json_object_put(p);
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	return mcp_result_add_text(out, api_get_str(resp, "action"));
}

/* ---- a client over an in-process connection ------------------------------------------ */

static mcp_memconn *conn;

static json_object *next_msg(void)
{
	char *line;
	size_t len;
	ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
	json_object *m = json_tokener_parse(line);
	ck_assert_ptr_nonnull(m);
	free(line);
	return m;
}

/* Sends request `id` (`method`, `params` JSON text) and returns its answer
 * (caller owns), skipping notifications. */
static json_object *rpc(int id, const char *method, const char *params)
{
	char buf[2048];
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
		 id, method, params);
	ck_assert_int_eq(mcp_memconn_send(conn, buf, strlen(buf)), MCP_OK);
	for (;;) {
		json_object *m = next_msg();
		json_object *jid = api_get(m, "id");
		if (!api_get(m, "method") && jid && json_object_get_int(jid) == id)
			return m;
		json_object_put(m);
	}
}

static json_object *result_of(json_object *a)
{
	json_object *r = api_get(a, "result");
	ck_assert_msg(r, "not a result: %s", json_object_to_json_string(a));
	return r;
}

static int error_of(json_object *a)
{
	return json_object_get_int(api_get(api_get(a, "error"), "code"));
}

/* The status of task `tid` by tasks/get, legacy or 2026-07-28 (`meta`). */
static char *status_of(int id, const char *tid, const char *meta)
{
	char params[512];
	snprintf(params, sizeof params, "{\"taskId\":\"%s\"%s%s}", tid, meta ? ",\"_meta\":" : "",
		 meta ? meta : "");
	json_object *a = rpc(id, "tasks/get", params);
	char *s = strdup(api_get_str(result_of(a), "status"));
	json_object_put(a);
	return s;
}

/* Polls tasks/get until the task has `want` (10 s at most). */
static void wait_status(int *id, const char *tid, const char *meta, const char *want)
{
	for (int i = 0; i < 1000; i++) {
		char *s = status_of((*id)++, tid, meta);
		int done = strcmp(s, want) == 0;
		free(s);
		if (done)
			return;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	ck_abort_msg("task %s never became %s", tid, want);
}

static mcp_server *server(void)
{
	mcp_server *srv = mcp_server_new("t", "1");
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "quick", .fn = quick,
								.task_support =
									MCP_TASKS_OPTIONAL }),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "slow", .fn = slow,
								.task_support =
									MCP_TASKS_OPTIONAL }),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "asks", .fn = asks,
								.task_support =
									MCP_TASKS_OPTIONAL }),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "plain", .fn = quick }),
			 MCP_OK);
	return srv;
}

static void start(mcp_server *srv, const char *version)
{
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	if (!version)
		return;
	char params[256];
	snprintf(params, sizeof params,
		 "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
		 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}",
		 version);
	json_object_put(rpc(0, "initialize", params));
	const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	ck_assert_int_eq(mcp_memconn_send(conn, note, strlen(note)), MCP_OK);
}

static void finish(mcp_server *srv)
{
	mcp_memconn_close(conn);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}

/* The taskId of a CreateTaskResult (caller frees). */
static char *created(json_object *a, int modern)
{
	json_object *r = result_of(a);
	json_object *t = modern ? r : api_get(r, "task");
	if (modern)
		ck_assert_str_eq(api_get_str(r, "resultType"), "task");
	const char *tid = api_get_str(t, "taskId");
	ck_assert_ptr_nonnull(tid);
	return strdup(tid);
}

/* ---- 2025-11-25 --------------------------------------------------------------------- */

START_TEST(legacy_task_life)
{
	mcp_server *srv = server();
	start(srv, "2025-11-25");
	int id = 10;
	json_object *a = rpc(id++, "tools/call",
			     "{\"name\":\"quick\",\"arguments\":{},\"task\":{\"ttl\":60000}}");
	char *t1 = created(a, 0);
	json_object_put(a);
	wait_status(&id, t1, NULL, "completed");
	char params[256];
	snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", t1);
	a = rpc(id++, "tasks/result", params);
	json_object *r = result_of(a);
	ck_assert_str_eq(api_get_str(json_object_array_get_idx(api_get(r, "content"), 0), "text"),
			 "done");
	ck_assert_str_eq(api_get_str(api_get(api_get(r, "_meta"),
					     "io.modelcontextprotocol/related-task"),
				     "taskId"),
			 t1);
	json_object_put(a);

	/* A running task: listed, then cancelled into its handler's token. */
	a = rpc(id++, "tools/call", "{\"name\":\"slow\",\"arguments\":{},\"task\":{}}");
	char *t2 = created(a, 0);
	json_object_put(a);
	char *s = status_of(id++, t2, NULL);
	ck_assert_str_eq(s, "working");
	free(s);
	a = rpc(id++, "tasks/list", "{}");
	json_object *tasks = api_get(result_of(a), "tasks");
	ck_assert_int_eq((int)json_object_array_length(tasks), 2);
	json_object_put(a);
	snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", t2);
	a = rpc(id++, "tasks/cancel", params);
	ck_assert_str_eq(api_get_str(result_of(a), "status"), "cancelled");
	json_object_put(a);
	wait_status(&id, t2, NULL, "cancelled");
	a = rpc(id++, "tasks/result", params);
	ck_assert_int_eq(error_of(a), MCP_JSONRPC_INTERNAL_ERROR);
	json_object_put(a);

	/* Unknown ids; a tool that cannot be a task. */
	a = rpc(id++, "tasks/get", "{\"taskId\":\"no-such\"}");
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	a = rpc(id++, "tools/call", "{\"name\":\"plain\",\"arguments\":{},\"task\":{}}");
	ck_assert_int_eq(error_of(a), -32601);
	json_object_put(a);
	free(t1);
	free(t2);
	finish(srv);
}
END_TEST

START_TEST(the_table_is_capped)
{
	mcp_server *srv = server();
	ck_assert_int_eq(mcp_server_set_max_tasks(srv, 1), MCP_OK);
	start(srv, "2025-11-25");
	json_object *a = rpc(1, "tools/call", "{\"name\":\"slow\",\"arguments\":{},\"task\":{}}");
	char *t = created(a, 0);
	json_object_put(a);
	a = rpc(2, "tools/call", "{\"name\":\"slow\",\"arguments\":{},\"task\":{}}");
	ck_assert_int_eq(error_of(a), MCP_JSONRPC_SERVER_BUSY);
	json_object_put(a);
	char params[256];
	snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", t);
	json_object_put(rpc(3, "tasks/cancel", params));
	free(t);
	finish(srv);
}
END_TEST

/* ---- 2026-07-28 --------------------------------------------------------------------- */

#define META(caps)                                                                             \
	"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                         \
	"\"io.modelcontextprotocol/clientCapabilities\":" caps "}"

START_TEST(modern_task_life)
{
	mcp_server *srv = server();
	start(srv, NULL);
	int id = 1;
	const char *meta = META(TASKS_EXT);
	json_object *a = rpc(id++, "tools/call",
			     "{\"name\":\"quick\",\"arguments\":{},\"_meta\":" META(TASKS_EXT) "}");
	char *tid = created(a, 1);
	json_object_put(a);
	wait_status(&id, tid, meta, "completed");
	char params[512];
	snprintf(params, sizeof params, "{\"taskId\":\"%s\",\"_meta\":%s}", tid, meta);
	a = rpc(id++, "tasks/get", params);
	json_object *r = result_of(a);
	ck_assert_str_eq(api_get_str(json_object_array_get_idx(api_get(api_get(r, "result"),
								       "content"),
							       0),
				     "text"),
			 "done");
	ck_assert_str_eq(api_get_str(r, "resultType"), "complete");
	json_object_put(a);

	/* A request that does not declare the extension may not reach the
	 * task: -32021 naming it (the method table's check). */
	snprintf(params, sizeof params, "{\"taskId\":\"%s\",\"_meta\":" META("{}") "}", tid);
	const char *methods[] = { "tasks/get", "tasks/update", "tasks/cancel" };
	for (int i = 0; i < 3; i++) {
		a = rpc(id++, methods[i], params);
		ck_assert_int_eq(error_of(a), -32021);
		ck_assert_ptr_nonnull(api_get(api_get(api_get(api_get(api_get(a, "error"), "data"),
								  "requiredCapabilities"),
							  "extensions"),
					      API_EXT_TASKS));
		json_object_put(a);
	}
	/* Cancelling a finished task is acknowledged all the same. */
	snprintf(params, sizeof params, "{\"taskId\":\"%s\",\"_meta\":%s}", tid, meta);
	a = rpc(id++, "tasks/cancel", params);
	ck_assert_str_eq(api_get_str(result_of(a), "resultType"), "complete");
	json_object_put(a);
	char *s = status_of(id++, tid, meta);
	ck_assert_str_eq(s, "completed");
	free(s);
	a = rpc(id++, "tasks/get", "{\"taskId\":\"no-such\",\"_meta\":" META(TASKS_EXT) "}");
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	free(tid);
	finish(srv);
}
END_TEST

START_TEST(modern_input_inside_a_task)
{
	mcp_server *srv = server();
	start(srv, NULL);
	int id = 1;
	const char *meta = META("{\"elicitation\":{},\"extensions\":"
				"{\"io.modelcontextprotocol/tasks\":{}}}");
	char params[512];
	snprintf(params, sizeof params, "{\"name\":\"asks\",\"arguments\":{},\"_meta\":%s}", meta);
	json_object *a = rpc(id++, "tools/call", params);
	char *tid = created(a, 1);
	json_object_put(a);
	wait_status(&id, tid, meta, "input_required");
	/* The outstanding request is in tasks/get, under a key of the task's. */
	snprintf(params, sizeof params, "{\"taskId\":\"%s\",\"_meta\":%s}", tid, meta);
	a = rpc(id++, "tasks/get", params);
	json_object *reqs = api_get(result_of(a), "inputRequests");
	ck_assert_int_eq(json_object_object_length(reqs), 1);
	char key[128];
	json_object_object_foreach(reqs, k, v)
	{
		snprintf(key, sizeof key, "%s", k);
		ck_assert_str_eq(api_get_str(v, "method"), "elicitation/create");
	}
	json_object_put(a);
	/* tasks/update needs its inputResponses; then the handler goes on. */
	a = rpc(id++, "tasks/update", params);
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	snprintf(params, sizeof params,
		 "{\"taskId\":\"%s\",\"inputResponses\":{\"%s\":{\"action\":\"accept\"}},"
		 "\"_meta\":%s}",
		 tid, key, meta);
	a = rpc(id++, "tasks/update", params);
	ck_assert_str_eq(api_get_str(result_of(a), "resultType"), "complete");
	json_object_put(a);
	wait_status(&id, tid, meta, "completed");
	snprintf(params, sizeof params, "{\"taskId\":\"%s\",\"_meta\":%s}", tid, meta);
	a = rpc(id++, "tasks/get", params);
	ck_assert_str_eq(api_get_str(json_object_array_get_idx(
					     api_get(api_get(result_of(a), "result"), "content"), 0),
				     "text"),
			 "accept");
	json_object_put(a);
	free(tid);
	finish(srv);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("tasks");
	TCase *tc = tcase_create("tasks");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, legacy_task_life);
	tcase_add_test(tc, the_table_is_capped);
	tcase_add_test(tc, modern_task_life);
	tcase_add_test(tc, modern_input_inside_a_task);
	suite_add_tcase(s, tc);
	return s;
}

