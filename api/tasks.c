/*
 * tasks.c - task-augmented tools/call (2025-11-25): the per-connection task
 * store, tasks/get, tasks/list, tasks/cancel and tasks/result, status
 * notifications and ttl expiry.
 *
 * A task is the same request detached from the client's id: the engine
 * keeps it in flight (so shutdown cancels and waits for it as for any
 * request) and hands its final answer to the task instead of the wire.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"

enum { T_WORKING = 0, T_INPUT_REQUIRED, T_COMPLETED, T_FAILED, T_CANCELLED };
static const char *const status_names[] = {
	"working", "input_required", "completed", "failed", "cancelled",
};

#define POLL_INTERVAL_MS 500
#define RELATED_TASK "io.modelcontextprotocol/related-task"

typedef struct mcp_task {
	struct mcp_task *next;      /* ms->tasks, under ms->mu */
	char id[33];
	int status;                 /* under ms->mu */
	int64_t created_ms, updated_ms; /* wall clock */
	int64_t ttl_ms;
	int64_t expires_ns;         /* monotonic; kept at least this long */
	json_object *answer;        /* the final response message, owned */
	eng_req *req;               /* counted while the handler runs */
	mcp_sess *ms;
} mcp_task;

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_object *iso8601(int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char buf[40], out[48];
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, sizeof out, "%s.%03dZ", buf, (int)(ms % 1000));
	return json_object_new_string(out);
}

static int terminal(int status)
{
	return status >= T_COMPLETED;
}

const char *mcp_task_id(const mcp_task *t)
{
	return t->id;
}

int mcp_tasks_offered(mcp_server *srv)
{
	int offered = 0;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->tools.n && !offered; i++)
		offered = ((mcp_tool_entry *)srv->tools.items[i])->task_support != MCP_TASKS_FORBIDDEN;
	pthread_rwlock_unlock(&srv->reg_lock);
	return offered;
}

/* The Task object; under ms->mu. */
static json_object *describe(const mcp_task *t)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_add(o, "taskId", json_object_new_string(t->id));
	eng_obj_add(o, "status", json_object_new_string(status_names[t->status]));
	eng_obj_add(o, "createdAt", iso8601(t->created_ms));
	eng_obj_add(o, "lastUpdatedAt", iso8601(t->updated_ms));
	eng_obj_add(o, "ttl", json_object_new_int64(t->ttl_ms));
	eng_obj_add(o, "pollInterval", json_object_new_int(POLL_INTERVAL_MS));
	if (t->status == T_FAILED && t->answer) {
		json_object *err = NULL;
		if (json_object_object_get_ex(t->answer, "error", &err))
			eng_obj_add(o, "statusMessage",
					       json_object_new_string(json_object_get_string(
						       json_object_object_get(err, "message"))));
		else
			eng_obj_add(o, "statusMessage",
					       json_object_new_string("the tool reported an error"));
	}
	return o;
}

/* Changes the status under ms->mu and tells the client.  Called with the
 * lock held; the notification only queues a line, it never blocks. */
static void set_status(mcp_task *t, int status)
{
	if (t->status == status || terminal(t->status))
		return;
	t->status = status;
	t->updated_ms = wall_ms();
	if (terminal(status))
		pthread_cond_broadcast(&t->ms->task_cv);
	json_object *p = describe(t);
	if (p)
		eng_session_notify(t->ms->es, mcp_notification("notifications/tasks/status", p));
}

void mcp_task_set_input_required(mcp_task *t, int waiting)
{
	pthread_mutex_lock(&t->ms->mu);
	set_status(t, waiting ? T_INPUT_REQUIRED : T_WORKING);
	pthread_mutex_unlock(&t->ms->mu);
}

/* Drops expired, finished tasks.  Under ms->mu. */
static void purge(mcp_sess *ms)
{
	int64_t now = eng_now_ns();
	for (mcp_task **pp = &ms->tasks; *pp;) {
		mcp_task *t = *pp;
		if (terminal(t->status) && !t->req && now >= t->expires_ns) {
			*pp = t->next;
			json_object_put(t->answer);
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

/* Under ms->mu. */
static mcp_task *find(mcp_sess *ms, const char *id)
{
	purge(ms);
	for (mcp_task *t = ms->tasks; t; t = t->next)
		if (strcmp(t->id, id) == 0)
			return t;
	return NULL;
}

/* The engine hands the handler's final answer here (msg taken; NULL when
 * the handler stopped because it was cancelled). */
static void task_sink(eng_req *r, json_object *msg, void *arg)
{
	mcp_task *t = arg;
	mcp_sess *ms = t->ms;
	pthread_mutex_lock(&ms->mu);
	t->answer = msg;
	int status = T_CANCELLED;
	if (msg) {
		json_object *res = NULL, *is_error = NULL;
		status = T_FAILED;
		if (json_object_object_get_ex(msg, "result", &res))
			status = json_object_object_get_ex(res, "isError", &is_error) &&
						 json_object_get_boolean(is_error)
					 ? T_FAILED
					 : T_COMPLETED;
	}
	if (!terminal(t->status))
		set_status(t, status);
	t->req = NULL;
	pthread_mutex_unlock(&ms->mu);
	eng_req_unref(r);
}

int mcp_task_run_tool(eng_req *r, mcp_ctx *ctx, mcp_tool_entry *tool, json_object *args,
		      json_object *task_params)
{
	mcp_sess *ms = ctx->sess;
	mcp_server *srv = ms->srv;
	int64_t ttl = srv->task_ttl_default;
	json_object *jttl = NULL;
	if (json_object_object_get_ex(task_params, "ttl", &jttl)) {
		if (!json_object_is_type(jttl, json_type_int) || json_object_get_int64(jttl) < 0)
			return -1;
		ttl = json_object_get_int64(jttl);
		if (ttl > srv->task_ttl_max)
			ttl = srv->task_ttl_max;
	}
	mcp_task *t = calloc(1, sizeof *t);
	if (!t)
		return -1;
	mcp_random_hex(t->id);
	t->ms = ms;
	t->status = T_WORKING;
	t->created_ms = t->updated_ms = wall_ms();
	t->ttl_ms = ttl;
	t->expires_ns = eng_now_ns() + ttl * ENG_NS_PER_MS;
	eng_req_ref(r);
	t->req = r;

	pthread_mutex_lock(&ms->mu);
	purge(ms);
	t->next = ms->tasks;
	ms->tasks = t;
	json_object *created = json_object_new_object();
	eng_obj_add(created, "task", describe(t));
	pthread_mutex_unlock(&ms->mu);

	char key[48];
	snprintf(key, sizeof key, "#task:%s", t->id);
	if (eng_req_detach(r, created, key, task_sink, t) != MCP_OK) {
		/* Cancelled before the task could start: it ends at once. */
		pthread_mutex_lock(&ms->mu);
		set_status(t, T_CANCELLED);
		t->req = NULL;
		pthread_mutex_unlock(&ms->mu);
		eng_req_unref(r);
		mcp_ctx_end(ctx, MCP_ECANCELED, NULL, 0, NULL, NULL);
		return 0;
	}
	ctx->task = t;
	mcp_result res;
	mcp_result_init(&res, ms->rev);
	json_object *result = NULL;
	int rc = mcp_tool_outcome(ctx, tool, &res, tool->fn(ctx, args, &res, tool->user), &result);
	if (result) {
		/* Messages about a task carry its id (related-task _meta). */
		json_object *meta = json_object_new_object();
		json_object *rel = json_object_new_object();
		eng_obj_add(rel, "taskId", json_object_new_string(t->id));
		eng_obj_add(meta, RELATED_TASK, rel);
		eng_obj_add(result, "_meta", meta);
	}
	mcp_ctx_end(ctx, rc, result, res.err_code, res.err_message, res.err_data);
	res.err_data = NULL;
	mcp_result_clear(&res);
	return 0;
}

static const char *task_id_param(json_object *params, mcp_answer *out)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(params, "taskId", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: taskId (string) is required", NULL);
		return NULL;
	}
	return json_object_get_string(v);
}

static void unknown_task(mcp_answer *out, const char *task_id)
{
	json_object *data = json_object_new_object();
	eng_obj_add(data, "taskId", json_object_new_string(task_id));
	mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
			 "Invalid params: unknown task", data);
}

void mcp_tasks_get(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_sess *ms = s->proto_data;
	const char *tid = task_id_param(params, out);
	if (!tid)
		return;
	pthread_mutex_lock(&ms->mu);
	mcp_task *t = find(ms, tid);
	json_object *res = t ? describe(t) : NULL;
	pthread_mutex_unlock(&ms->mu);
	if (t)
		mcp_answer_result(out, res);
	else
		unknown_task(out, tid);
}

void mcp_tasks_cancel(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_sess *ms = s->proto_data;
	const char *tid = task_id_param(params, out);
	if (!tid)
		return;
	pthread_mutex_lock(&ms->mu);
	mcp_task *t = find(ms, tid);
	if (!t) {
		pthread_mutex_unlock(&ms->mu);
		unknown_task(out, tid);
		return;
	}
	if (terminal(t->status)) {
		pthread_mutex_unlock(&ms->mu);
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: the task has already finished", NULL);
		return;
	}
	eng_req *r = t->req;
	if (r)
		eng_req_ref(r);
	set_status(t, T_CANCELLED);
	json_object *res = describe(t);
	pthread_mutex_unlock(&ms->mu);
	/* Fired outside the store's lock: callbacks may run. */
	if (r) {
		eng_token_fire(&r->token, MCP_CANCEL_PEER);
		eng_req_unref(r);
	}
	mcp_answer_result(out, res);
}

void mcp_tasks_list(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_sess *ms = s->proto_data;
	size_t offset = 0;
	json_object *jc = NULL;
	if (json_object_object_get_ex(params, "cursor", &jc) &&
	    (!json_object_is_type(jc, json_type_string) ||
	     mcp_parse_cursor(ms->srv, json_object_get_string(jc), "tasks", &offset) != 0)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: unknown cursor", NULL);
		return;
	}
	size_t page = (size_t)ms->srv->page_size, i = 0;
	json_object *arr = json_object_new_array();
	int more = 0;
	pthread_mutex_lock(&ms->mu);
	purge(ms);
	for (mcp_task *t = ms->tasks; t; t = t->next, i++) {
		if (i < offset)
			continue;
		if (i >= offset + page) {
			more = 1;
			break;
		}
		eng_arr_add(arr, describe(t));
	}
	pthread_mutex_unlock(&ms->mu);
	json_object *res = json_object_new_object();
	eng_obj_add(res, "tasks", arr);
	if (more) {
		char *c = mcp_make_cursor(ms->srv, "tasks", offset + page);
		if (c)
			eng_obj_add(res, "nextCursor", json_object_new_string(c));
		free(c);
	}
	mcp_answer_result(out, res);
}

/* tasks/result blocks until the task ends, so it runs on a worker and
 * waits on the store's condition variable, woken by its own token too.  It
 * runs no handler, but passes the request hooks like one. */
void mcp_tasks_result(eng_req *r)
{
	mcp_sess *ms = r->sess->proto_data;
	json_object *params = NULL, *v = NULL;
	json_object_object_get_ex(r->msg, "params", &params);
	mcp_ctx ctx;
	mcp_ctx_init(&ctx, r, params);
	if (mcp_ctx_admit(&ctx, -1, NULL))
		return;
	if (!json_object_object_get_ex(params, "taskId", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		mcp_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS,
			    "Invalid params: taskId (string) is required", NULL);
		return;
	}
	const char *tid = json_object_get_string(v);
	pthread_mutex_lock(&ms->mu);
	mcp_task *t = find(ms, tid);
	int rc = MCP_OK;
	while (t && !terminal(t->status) && rc == MCP_OK) {
		rc = eng_token_wait_external(&r->token, &ms->task_cv, &ms->mu, -1);
		t = find(ms, tid); /* it may have expired meanwhile */
	}
	json_object *answer = t && t->answer ? mcp_json_copy(t->answer) : NULL;
	int status = t ? t->status : -1;
	pthread_mutex_unlock(&ms->mu);

	if (rc == MCP_ECANCELED) {
		/* Its token fired: nothing is written. */
		json_object_put(answer);
		mcp_ctx_end(&ctx, MCP_ECANCELED, NULL, 0, NULL, NULL);
		return;
	}
	if (!t) {
		json_object *data = json_object_new_object();
		eng_obj_add(data, "taskId", json_object_new_string(tid));
		mcp_ctx_end(&ctx, MCP_ENOENT, NULL, MCP_JSONRPC_INVALID_PARAMS,
			    "Invalid params: unknown task", data);
		return;
	}
	/* Exactly what the underlying request would have returned; a
	 * cancelled task never has an answer to give. */
	json_object *res = NULL, *err = NULL;
	if (status == T_CANCELLED) {
		mcp_ctx_end(&ctx, MCP_EPROTO, NULL, MCP_JSONRPC_INTERNAL_ERROR,
			    "The task was cancelled", NULL);
	} else if (answer && json_object_object_get_ex(answer, "result", &res)) {
		mcp_ctx_end(&ctx, MCP_OK, json_object_get(res), 0, NULL, NULL);
	} else if (answer && json_object_object_get_ex(answer, "error", &err)) {
		json_object *code = json_object_object_get(err, "code");
		json_object *msg = json_object_object_get(err, "message");
		json_object *data = json_object_object_get(err, "data");
		mcp_ctx_end(&ctx, MCP_EPROTO, NULL, json_object_get_int(code),
			    json_object_get_string(msg), data ? json_object_get(data) : NULL);
	} else {
		mcp_ctx_end(&ctx, MCP_EPROTO, NULL, MCP_JSONRPC_INTERNAL_ERROR,
			    "The task ended without a result", NULL);
	}
	json_object_put(answer);
}

void mcp_tasks_free(mcp_sess *ms)
{
	mcp_task *t = ms->tasks;
	while (t) {
		mcp_task *n = t->next;
		json_object_put(t->answer);
		free(t);
		t = n;
	}
	ms->tasks = NULL;
}
