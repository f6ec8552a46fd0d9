/*
 * tasks.c - tasks in both eras: one server-wide table, one TTL, and one
 * cancellation path into the handler's token.
 *
 *  - 2025-11-25 (client-directed): a tools/call with params.task becomes a
 *    task of its session; tasks/get, tasks/list, tasks/cancel and
 *    tasks/result are answered to that session only, status changes go to
 *    it as notifications/tasks/status, and the task ends with it.
 *  - 2026-07-28 (the io.modelcontextprotocol/tasks extension, SEP-2663;
 *    server-directed): a tools/call whose request declares the extension
 *    may be answered with a CreateTaskResult (resultType "task"); the task
 *    belongs to no connection and is reached by its id from any request
 *    that declares the extension (tasks/get inlines its result, tasks/update
 *    delivers input, tasks/cancel), with status changes on
 *    subscriptions/listen streams that asked for its id.
 *
 * A task is the request that started it, detached from the client's id:
 * the engine keeps it in flight (so a shutdown cancels it and waits for it
 * like any request), the client's request is answered at once, and the
 * handler's final answer comes here instead of the wire.  A 2026-07-28
 * request over HTTP without a session has an ephemeral session that ends
 * with its answer: its task moves to the server's task host, an internal
 * session with no client, which only the server's shutdown ends.
 *
 * Input inside a 2026-07-28 task: the handler asks as it would in a
 * request (mcp_ctx_require_input, or the blocking client calls); the task
 * goes input_required with the requests under keys unique over its life,
 * its worker waits on the request's token for tasks/update to answer all
 * of them (or for tasks/cancel, the shutdown, or the end of the task's
 * TTL), and the handler goes on.
 *
 * Locks: srv->task_mu guards the table and every task's fields; it is
 * taken before srv->sess_mu (listen streams) and before a request token's
 * mutex, never after them.  Tokens are fired outside it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/auth.h"
#include "api/internal.h"

enum { T_WORKING = 0, T_INPUT_REQUIRED, T_COMPLETED, T_FAILED, T_CANCELLED };
static const char *const status_names[] = {
	"working", "input_required", "completed", "failed", "cancelled",
};

#define POLL_INTERVAL_MS 500
#define RELATED_TASK "io.modelcontextprotocol/related-task"

typedef struct api_task {
	eng_idnode node;            /* srv->tasks, key = id */
	struct api_task *next, *prev; /* srv->task_list, oldest first */
	char id[API_TASK_ID_MAX];
	int modern;                 /* 2026-07-28 shapes and rules */
	api_sess *owner;            /* 2025-11-25: its session; NULL otherwise */
	/* Whose task it is for the cap per principal: the session that
	 * created it when it had no principal and outlives the request
	 * (never dereferenced), else NULL; `who` when there is one. */
	const api_sess *party;
	mcp_principal *who;         /* counted: who may reach it, or NULL */
	int status;
	char *status_message;
	int64_t created_ms, updated_ms; /* wall clock */
	int64_t ttl_ms;
	int64_t created_ns, expires_ns; /* monotonic; kept at least until then */
	json_object *answer;        /* the final response message, owned */
	eng_req *req;               /* counted while the handler runs */
	mcp_server *srv;
	/* 2026-07-28 input: the requests outstanding (wire key -> request)
	 * and the answers gathered for them this round; the round numbers
	 * the keys, so none is reused over the task's life. */
	json_object *asked, *answered;
	int round;
	int input_ready;            /* under req->token.mu: the round whose
				       answers are all in (a late update of
				       an earlier round wakes nobody) */
} api_task;

static void sync_record(struct api_task *t);
static int record_reachable(json_object *rec, const mcp_principal *who);

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

const char *api_task_id(const api_task *t)
{
	return t->id;
}

MCP_EXTERN const char *mcp_ctx_task_id(const mcp_ctx *ctx)
{
	return ctx && ctx->task ? ctx->task->id : NULL;
}

int api_tasks_offered(mcp_server *srv)
{
	int offered = 0;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->tools.n && !offered; i++)
		offered = ((api_tool_entry *)srv->tools.items[i])->task_support != MCP_TASKS_FORBIDDEN;
	pthread_rwlock_unlock(&srv->reg_lock);
	return offered;
}

int api_tasks_declared(json_object *caps)
{
	return api_ext_declared(caps, API_EXT_TASKS);
}

json_object *api_tasks_required_data(void)
{
	return api_ext_required_data(API_EXT_TASKS);
}

/* ---- the table ---------------------------------------------------------- */

int api_tasks_init(mcp_server *srv)
{
	if (eng_idtable_init(&srv->tasks) != 0)
		return MCP_ENOMEM;
	pthread_mutex_init(&srv->task_mu, NULL);
	pthread_cond_init(&srv->task_cv, NULL);
	srv->max_tasks = 10000;
	srv->max_tasks_per_principal = 1000;
	return MCP_OK;
}

static void task_free(api_task *t)
{
	json_object_put(t->answer);
	json_object_put(t->asked);
	json_object_put(t->answered);
	free(t->status_message);
	if (t->who)
		auth_principal_unref(t->who);
	free(t);
}

/* Under task_mu. */
static void task_unlink(mcp_server *srv, api_task *t)
{
	eng_idtable_del(&srv->tasks, &t->node);
	if (t->prev)
		t->prev->next = t->next;
	else
		srv->task_list = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		srv->task_tail = t->prev;
	srv->ntasks--;
}

void api_tasks_destroy(mcp_server *srv)
{
	api_task *t = srv->task_list;
	while (t) {
		api_task *n = t->next;
		task_free(t);
		t = n;
	}
	srv->task_list = srv->task_tail = NULL;
	eng_idtable_destroy(&srv->tasks);
	pthread_mutex_destroy(&srv->task_mu);
	pthread_cond_destroy(&srv->task_cv);
}

/* A finished task whose TTL has passed is forgotten.  Under task_mu. */
static int expired(const api_task *t, int64_t now)
{
	return terminal(t->status) && !t->req && now >= t->expires_ns;
}

static void purge(mcp_server *srv)
{
	int64_t now = eng_now_ns();
	for (api_task *t = srv->task_list; t;) {
		api_task *n = t->next;
		if (expired(t, now)) {
			task_unlink(srv, t);
			task_free(t);
		}
		t = n;
	}
}

/* Whether `who` (NULL: no principal) may reach `t`: the same party that
 * created it, or neither had a principal.  An id is a bearer secret, but
 * not across principals (SEP-2663, auth binding). */
static int reachable(const api_task *t, const mcp_principal *who)
{
	if (!t->who || !who)
		return !t->who && !who;
	return auth_principal_same_party(t->who, who);
}

/* The task `id` as `who` may see it in the era of the asking request
 * (and, for 2025-11-25, of its session), or NULL.  Under task_mu. */
static api_task *find(mcp_server *srv, const char *id, int modern, const api_sess *owner,
		      const mcp_principal *who)
{
	api_task *t = (api_task *)eng_idtable_get(&srv->tasks, id);
	if (!t || t->modern != modern || (!modern && t->owner != owner) || !reachable(t, who))
		return NULL;
	if (expired(t, eng_now_ns())) {
		task_unlink(srv, t);
		task_free(t);
		return NULL;
	}
	return t;
}

int api_task_known(mcp_server *srv, const char *id, const mcp_principal *who)
{
	pthread_mutex_lock(&srv->task_mu);
	int known = find(srv, id, 1, NULL, who) != NULL;
	pthread_mutex_unlock(&srv->task_mu);
	if (!known && srv->tstore) {
		/* Another process's task (on a worker: listen goes there when
		 * a store is set). */
		json_object *rec = NULL;
		uint64_t ver;
		known = api_tstore_read(srv->tstore, id, &rec, &ver) == MCP_OK &&
			record_reachable(rec, who);
		json_object_put(rec);
	}
	return known;
}

void api_tasks_free(api_sess *ms)
{
	/* The session's tasks end with it: nothing can ask for them. */
	mcp_server *srv = ms->srv;
	pthread_mutex_lock(&srv->task_mu);
	for (api_task *t = srv->task_list; t;) {
		api_task *n = t->next;
		if (t->owner == ms) {
			task_unlink(srv, t);
			task_free(t);
		}
		t = n;
	}
	pthread_mutex_unlock(&srv->task_mu);
}

MCP_EXTERN int mcp_server_set_max_tasks(mcp_server *srv, int n)
{
	if (!srv || n < 1 || n > 10000000)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	srv->max_tasks = n;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_max_tasks_per_principal(mcp_server *srv, int n)
{
	if (!srv || n < 1 || n > 10000000)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	srv->max_tasks_per_principal = n;
	return MCP_OK;
}

/* Tasks kept for the same party as `t`: its principal's, or without one
 * its session's.  Under task_mu.  A scan: the table is bounded
 * (max_tasks), and this runs once per task created. */
static size_t party_tasks(mcp_server *srv, const api_task *t)
{
	size_t n = 0;
	for (const api_task *o = srv->task_list; o; o = o->next) {
		if (t->who ? o->who && auth_principal_same_party(o->who, t->who)
			   : !o->who && o->party == t->party)
			n++;
	}
	return n;
}

MCP_EXTERN int mcp_server_set_instance_id(mcp_server *srv, const char *tag)
{
	if (!srv)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	size_t n = tag ? strlen(tag) : 0;
	/* What a proxy can match in a header with a plain pattern, and short
	 * enough to leave the id its 32 random digits. */
	if (n > API_INSTANCE_ID_MAX)
		return MCP_EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = tag[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return MCP_EINVAL;
	}
	snprintf(srv->instance, sizeof srv->instance, "%s", n ? tag : "");
	return MCP_OK;
}

/* ---- shapes ---------------------------------------------------------------- */

/* The 2025-11-25 Task object.  Under task_mu. */
static json_object *describe_legacy(const api_task *t)
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
		json_object *err = api_get(t->answer, "error");
		json_object *msg = api_get(err, "message");
		eng_obj_add(o, "statusMessage",
			    json_object_new_string(msg ? json_object_get_string(msg)
						       : "the tool reported an error"));
	}
	return o;
}

/* The 2026-07-28 Task, and with `detailed` the DetailedTask of tasks/get
 * and notifications/tasks: the outstanding input requests, the result or
 * the error.  Under task_mu. */
static json_object *describe_modern(const api_task *t, int detailed)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_add(o, "taskId", json_object_new_string(t->id));
	eng_obj_add(o, "status", json_object_new_string(status_names[t->status]));
	if (t->status_message)
		eng_obj_add(o, "statusMessage", json_object_new_string(t->status_message));
	eng_obj_add(o, "createdAt", iso8601(t->created_ms));
	eng_obj_add(o, "lastUpdatedAt", iso8601(t->updated_ms));
	eng_obj_add(o, "ttlMs", json_object_new_int64(t->ttl_ms));
	eng_obj_add(o, "pollIntervalMs", json_object_new_int(POLL_INTERVAL_MS));
	if (!detailed)
		return o;
	if (t->status == T_INPUT_REQUIRED)
		eng_obj_add(o, "inputRequests",
			    t->asked ? api_json_copy(t->asked) : json_object_new_object());
	json_object *res = api_get(t->answer, "result"), *err = api_get(t->answer, "error");
	if (t->status == T_COMPLETED && res)
		eng_obj_add(o, "result", api_json_copy(res));
	else if (t->status == T_FAILED && err)
		eng_obj_add(o, "error", api_json_copy(err));
	return o;
}

/* Changes the status and tells whoever listens: the session of a
 * 2025-11-25 task, the listen streams that asked for a 2026-07-28 one.
 * Under task_mu; the deliveries only queue lines. */
static void set_status(api_task *t, int status, const char *message)
{
	if (terminal(t->status) || (t->status == status && !message))
		return;
	t->status = status;
	t->updated_ms = wall_ms();
	if (message) {
		free(t->status_message);
		t->status_message = strdup(message);
	}
	if (terminal(status)) {
		/* Kept its TTL from creation, and at least min(TTL, 1 min)
		 * after it ended: a task that ends at its TTL (its input never
		 * came) still shows how it ended. */
		int64_t keep = t->ttl_ms < 60000 ? t->ttl_ms : 60000;
		int64_t until = eng_now_ns() + keep * ENG_NS_PER_MS;
		if (until > t->expires_ns)
			t->expires_ns = until;
		pthread_cond_broadcast(&t->srv->task_cv);
	}
	if (t->modern && t->srv->tstore) {
		/* Told to every process's streams, this one's included, by
		 * whoever writes the shared record (sync_record, shared()). */
	} else if (t->modern) {
		json_object *p = describe_modern(t, 1);
		if (p)
			api_listen_task_status(t->srv, t->id, p);
	} else if (t->owner) {
		json_object *p = describe_legacy(t);
		if (p)
			eng_session_notify(t->owner->es,
					   api_notification("notifications/tasks/status", p));
	}
}

void api_task_set_input_required(api_task *t, int waiting)
{
	pthread_mutex_lock(&t->srv->task_mu);
	set_status(t, waiting ? T_INPUT_REQUIRED : T_WORKING, NULL);
	pthread_mutex_unlock(&t->srv->task_mu);
	if (t->modern && t->srv->tstore)
		sync_record(t);
}

/* ---- the shared record (a state store is set) -------------------------------
 *
 * A 2026-07-28 task lives in the store (tasks-store.c) as well as here:
 * this table keeps what only the running process has (the handler's
 * request, its token, the input it waits for), the record what every
 * process answers from.  tasks/get, tasks/update and tasks/cancel read and
 * write the record wherever they land; a cancel or an input reaches the
 * handler through its process's channel. */

/* Who may reach a task, as a string every process compares alike: the
 * rules of reachable() (auth_principal_same_party) over the wire.  NULL
 * for no principal; "!" for a principal no one can match. */
static char *party_of(const mcp_principal *p)
{
	char *out = NULL;
	if (!p)
		return NULL;
	if (p->subject) {
		if (asprintf(&out, "s\n%s\n%s", p->issuer ? p->issuer : "", p->subject) < 0)
			out = NULL;
	} else if (p->client_id) {
		if (asprintf(&out, "c\n%s\n%s", p->issuer ? p->issuer : "", p->client_id) < 0)
			out = NULL;
	} else {
		out = strdup("!");
	}
	return out;
}

static int record_reachable(json_object *rec, const mcp_principal *who)
{
	const char *stored = api_get_str(rec, "p");
	char *mine = party_of(who);
	int ok = (!stored && !who) ||
		 (stored && mine && strcmp(stored, "!") != 0 && strcmp(stored, mine) == 0);
	free(mine);
	return ok;
}

static int record_status(json_object *rec)
{
	int st = json_object_get_int(api_get(rec, "s"));
	return st >= T_WORKING && st <= T_CANCELLED ? st : T_FAILED;
}

/* How long the store keeps a record: its TTL from creation and the
 * minute (at most the TTL) a finished task stays readable after.  A
 * record not yet finished is kept that minute past its TTL too: a task
 * ended at its TTL (its input never came) is ended then, and the record
 * must still be there to take, and show, how it ended. */
static int64_t record_ttl(json_object *rec)
{
	int64_t ttl = json_object_get_int64(api_get(rec, "ttl"));
	int64_t keep = ttl < 60000 ? ttl : 60000;
	int64_t until = json_object_get_int64(api_get(rec, "c")) + ttl;
	if (!terminal(record_status(rec)))
		until += keep;
	else if (wall_ms() + keep > until)
		until = wall_ms() + keep;
	int64_t left = until - wall_ms();
	return left > 1000 ? left : 1000;
}

/* The Task or DetailedTask of a record, as describe_modern makes it of a
 * task of this process. */
static json_object *describe_record(json_object *rec, const char *id, int detailed)
{
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	int st = record_status(rec);
	eng_obj_add(o, "taskId", json_object_new_string(id));
	eng_obj_add(o, "status", json_object_new_string(status_names[st]));
	if (api_get_str(rec, "m"))
		eng_obj_add(o, "statusMessage", json_object_new_string(api_get_str(rec, "m")));
	eng_obj_add(o, "createdAt", iso8601(json_object_get_int64(api_get(rec, "c"))));
	eng_obj_add(o, "lastUpdatedAt", iso8601(json_object_get_int64(api_get(rec, "u"))));
	eng_obj_add(o, "ttlMs", json_object_new_int64(json_object_get_int64(api_get(rec, "ttl"))));
	eng_obj_add(o, "pollIntervalMs", json_object_new_int(POLL_INTERVAL_MS));
	if (!detailed)
		return o;
	json_object *ir = api_get(rec, "ir"), *a = api_get(rec, "a");
	if (st == T_INPUT_REQUIRED)
		eng_obj_add(o, "inputRequests", ir ? api_json_copy(ir) : json_object_new_object());
	json_object *res = api_get(a, "result"), *err = api_get(a, "error");
	if (st == T_COMPLETED && res)
		eng_obj_add(o, "result", api_json_copy(res));
	else if (st == T_FAILED && err)
		eng_obj_add(o, "error", api_json_copy(err));
	return o;
}

static void set_field(json_object *rec, const char *key, json_object *v)
{
	json_object_object_del(rec, key);
	if (v)
		eng_obj_add(rec, key, v);
}

/* The record of a task of this process, new.  Under task_mu. */
static json_object *record_new(const api_task *t)
{
	json_object *rec = json_object_new_object();
	char *party = party_of(t->who);
	if (!rec || (t->who && !party)) {
		json_object_put(rec);
		free(party);
		return NULL;
	}
	eng_obj_add(rec, "s", json_object_new_int(t->status));
	eng_obj_add(rec, "c", json_object_new_int64(t->created_ms));
	eng_obj_add(rec, "u", json_object_new_int64(t->updated_ms));
	eng_obj_add(rec, "ttl", json_object_new_int64(t->ttl_ms));
	eng_obj_add(rec, "o", json_object_new_string(api_tstore_owner(t->srv->tstore)));
	if (party)
		eng_obj_add(rec, "p", json_object_new_string(party));
	free(party);
	return rec;
}

/* Writes `rec` (read at `ver`) back and tells every process's listen
 * streams; MCP_ESTATE when another process wrote first. */
static int record_commit(mcp_server *srv, const char *id, uint64_t ver, json_object *rec)
{
	int rc = api_tstore_write(srv->tstore, id, ver, rec, record_ttl(rec));
	if (rc == MCP_OK) {
		json_object *p = describe_record(rec, id, 1);
		if (p)
			api_tstore_announce(srv->tstore, id, p);
		json_object_put(p);
	}
	return rc;
}

/* Brings the record of `t`, a task this process runs, up to its state here:
 * the owner's fields only, by compare-and-set, and not past a final status
 * (a cancel or a lapsed lease another process wrote stays).  Without
 * task_mu; t is pinned by t->req. */
static void sync_record(api_task *t)
{
	mcp_server *srv = t->srv;
	for (int tries = 0; tries < 16; tries++) {
		json_object *rec = NULL;
		uint64_t ver;
		if (api_tstore_read(srv->tstore, t->id, &rec, &ver) != MCP_OK)
			return; /* gone (expired, or the store restarted empty) or away */
		if (terminal(record_status(rec))) {
			json_object_put(rec);
			return;
		}
		pthread_mutex_lock(&srv->task_mu);
		set_field(rec, "s", json_object_new_int(t->status));
		set_field(rec, "m", t->status_message ? json_object_new_string(t->status_message) : NULL);
		set_field(rec, "u", json_object_new_int64(t->updated_ms));
		set_field(rec, "ir", t->status == T_INPUT_REQUIRED && t->asked ? api_json_copy(t->asked)
									 : NULL);
		set_field(rec, "r", json_object_new_int(t->round));
		/* The responses of a round are the owner's once it asks again
		 * or goes on: never handed twice. */
		set_field(rec, "rs", NULL);
		set_field(rec, "a", terminal(t->status) && t->answer ? api_json_copy(t->answer) : NULL);
		pthread_mutex_unlock(&srv->task_mu);
		int rc = record_commit(srv, t->id, ver, rec);
		json_object_put(rec);
		if (rc != MCP_ESTATE)
			return;
	}
}

/* A modern task of this process by id, whoever asks.  Under task_mu. */
static api_task *local_modern(mcp_server *srv, const char *id)
{
	api_task *t = (api_task *)eng_idtable_get(&srv->tasks, id);
	return t && t->modern ? t : NULL;
}

static eng_req *cancel_locked(api_task *t);
static void fire_cancel(eng_req *r);
static int take_responses(api_task *t, json_object *responses);

/* The store's hooks: on its threads, they only fire tokens and queue. */
static void hook_cancel(mcp_server *srv, const char *id)
{
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = local_modern(srv, id);
	eng_req *r = t && !terminal(t->status) ? cancel_locked(t) : NULL;
	pthread_mutex_unlock(&srv->task_mu);
	fire_cancel(r);
}

static void hook_input(mcp_server *srv, const char *id, json_object *responses)
{
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = local_modern(srv, id);
	if (t)
		take_responses(t, responses);
	pthread_mutex_unlock(&srv->task_mu);
}

static void hook_lost(mcp_server *srv, const char *id)
{
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = local_modern(srv, id);
	eng_req *r = t ? t->req : NULL;
	if (r)
		eng_req_ref(r);
	pthread_mutex_unlock(&srv->task_mu);
	if (r) {
		/* Its lease lapsed (this process stalled past it, or the store
		 * lost it): another process may have failed the task, so this
		 * handler's work can no longer reach anyone. */
		eng_token_fire(&r->token, MCP_CANCEL_TIMEOUT);
		eng_req_unref(r);
	}
}

static void hook_status(mcp_server *srv, const char *id, json_object *params)
{
	api_listen_task_status(srv, id, params);
}

void api_tasks_store_hooks(api_tstore_hooks *h)
{
	h->cancel = hook_cancel;
	h->input = hook_input;
	h->lost = hook_lost;
	h->status = hook_status;
}

const char *api_task_store_failure(mcp_server *srv)
{
	static __thread char msg[400];
	const char *why = api_tstore_error(srv->tstore);
	snprintf(msg, sizeof msg, "Task store unavailable: %s", why[0] ? why : "the store failed");
	return msg;
}

static void store_failed(mcp_server *srv, api_answer *out)
{
	api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, api_task_store_failure(srv), NULL);
}

/* ---- the task host ------------------------------------------------------------
 *
 * An engine session with no client: the 2026-07-28 tasks whose own session
 * ends with its HTTP answer move here.  Nothing is ever fed to it and
 * nothing it writes goes anywhere (a task's answer goes to its sink). */

static int null_send(tp_conn *c, const struct iovec *iov, int n, const _Atomic int64_t *dl)
{
	(void)c, (void)iov, (void)n, (void)dl;
	return 0;
}

static int null_send_routed(tp_conn *c, const tp_out *out, int n, const _Atomic int64_t *dl)
{
	(void)c, (void)out, (void)n, (void)dl;
	return 0;
}

static int null_recv(tp_conn *c, const char **line, size_t *len)
{
	(void)c, (void)line, (void)len;
	return TP_EOF;
}

static void null_noop(tp_conn *c)
{
	(void)c;
}

static void null_free(tp_conn *c)
{
	free(c);
}

static const struct tp_ops null_ops = {
	.recv = null_recv,
	.send = null_send,
	.send_routed = null_send_routed,
	.wake = null_noop,
	.close_output = null_noop,
	.free = null_free,
};

/* The host, made at the first task that needs it; NULL without memory.
 * Under task_mu. */
static eng_session *task_host(mcp_server *srv)
{
	if (srv->task_host)
		return srv->task_host;
	tp_conn *tp = calloc(1, sizeof *tp);
	if (!tp)
		return NULL;
	tp->ops = &null_ops;
	tp->max_message = srv->max_message;
	srv->task_host = api_server_open_session(srv, tp, -1, 1);
	return srv->task_host;
}

void api_task_host_end(mcp_server *srv)
{
	pthread_mutex_lock(&srv->task_mu);
	eng_session *host = srv->task_host;
	srv->task_host = NULL;
	pthread_mutex_unlock(&srv->task_mu);
	if (!host)
		return;
	/* Usually closed already (an HTTP server's shutdown closes every
	 * session it knows); waited for up to its grace, as any session. */
	eng_session_close(host, MCP_CANCEL_SHUTDOWN);
	while (!eng_session_close_poll(host, eng_now_ns())) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	api_server_drop_session(srv, host);
}

/* ---- starting a task ------------------------------------------------------- */

/* The engine hands the handler's final answer here (msg taken; NULL when
 * it stopped because it was cancelled or cut off). */
static void task_sink(eng_req *r, json_object *msg, void *arg)
{
	api_task *t = arg;
	mcp_server *srv = t->srv;
	pthread_mutex_lock(&srv->task_mu);
	t->answer = msg;
	int status = T_CANCELLED;
	const char *why = NULL;
	if (msg) {
		json_object *res = api_get(msg, "result"), *is_error = api_get(res, "isError");
		/* 2025-11-25 reports a tool error as failed; SEP-2663 keeps
		 * failed for JSON-RPC errors and a tool error is completed. */
		if (!res)
			status = T_FAILED;
		else if (!t->modern && json_object_get_boolean(is_error))
			status = T_FAILED;
		else
			status = T_COMPLETED;
		if (status == T_FAILED && t->modern)
			why = json_object_get_string(api_get(api_get(msg, "error"), "message"));
	} else {
		int reason = eng_token_reason(&r->token);
		why = reason != MCP_CANCEL_NONE ? mcp_cancel_reason_name((mcp_cancel_reason)reason)
						 : NULL;
	}
	json_object_put(t->asked);
	t->asked = NULL;
	set_status(t, status, t->modern ? why : NULL);
	int shared = t->modern && srv->tstore;
	if (!shared)
		t->req = NULL;
	pthread_mutex_unlock(&srv->task_mu);
	if (shared) {
		/* The outcome in the record before the lease goes: a reader
		 * never sees a finished task as one whose process died. */
		sync_record(t);
		api_tstore_release(srv->tstore, t->id, 1);
		pthread_mutex_lock(&srv->task_mu);
		t->req = NULL;
		pthread_mutex_unlock(&srv->task_mu);
	}
	eng_req_unref(r);
}

int api_task_start(mcp_ctx *ctx, json_object *task_params)
{
	eng_req *r = ctx->req;
	api_sess *ms = ctx->sess;
	mcp_server *srv = ms->srv;
	int modern = ctx->view.modern;
	if (ctx->task)
		return MCP_OK;
	int64_t ttl = srv->task_ttl_default;
	json_object *jttl = api_get(task_params, "ttl");
	if (!modern && jttl) {
		if (!json_object_is_type(jttl, json_type_int) || json_object_get_int64(jttl) < 0)
			return MCP_EINVAL;
		ttl = json_object_get_int64(jttl);
		if (ttl > srv->task_ttl_max)
			ttl = srv->task_ttl_max;
	}
	api_task *t = calloc(1, sizeof *t);
	if (!t)
		return MCP_ENOMEM;
	char hex[33];
	api_random_hex(hex);
	/* A tagged id names the process that holds the task, for a proxy
	 * in front of several (README, "Running more than one process"). */
	if (srv->instance[0])
		snprintf(t->id, sizeof t->id, "%s.%s", srv->instance, hex);
	else
		snprintf(t->id, sizeof t->id, "%s", hex);
	t->node.key = t->id;
	t->node.hash = eng_idhash(t->id);
	t->modern = modern;
	t->owner = modern ? NULL : ms;
	/* A stateless request has no session that lasts: without a
	 * principal, nothing tells its client from another's, and only the
	 * server's cap applies. */
	t->party = ms->stateless_only ? NULL : ms;
	t->srv = srv;
	t->status = T_WORKING;
	t->created_ms = t->updated_ms = wall_ms();
	t->ttl_ms = ttl;
	t->created_ns = eng_now_ns();
	t->expires_ns = t->created_ns + ttl * ENG_NS_PER_MS;
	if (ctx->principal)
		t->who = auth_principal_ref(ctx->principal);
	eng_req_ref(r);
	t->req = r;

	pthread_mutex_lock(&srv->task_mu);
	purge(srv);
	int busy = 0;
	if (srv->ntasks >= (size_t)srv->max_tasks) {
		snprintf(ctx->task_refusal, sizeof ctx->task_refusal,
			 "Server busy: too many tasks (the server keeps at most %d)",
			 srv->max_tasks);
		busy = 1;
	} else if ((t->who || t->party) &&
		   party_tasks(srv, t) >= (size_t)srv->max_tasks_per_principal) {
		snprintf(ctx->task_refusal, sizeof ctx->task_refusal,
			 "Server busy: too many tasks of this %s (at most %d each)",
			 t->who ? "principal" : "session", srv->max_tasks_per_principal);
		busy = 1;
	}
	if (busy) {
		pthread_mutex_unlock(&srv->task_mu);
		eng_req_unref(r);
		task_free(t);
		return MCP_EBUSY;
	}
	/* A 2026-07-28 request of an HTTP POST without a session: its session
	 * ends with this answer, the task must not. */
	eng_session *to = modern && ms->stateless_only ? task_host(srv) : NULL;
	if (modern && ms->stateless_only && !to) {
		pthread_mutex_unlock(&srv->task_mu);
		eng_req_unref(r);
		task_free(t);
		return MCP_ENOMEM;
	}
	/* In the table before the client hears of it: a tasks/get sent the
	 * moment the CreateTaskResult arrives finds it (SEP-2663, durable
	 * creation). */
	eng_idtable_put(&srv->tasks, &t->node);
	t->prev = srv->task_tail;
	if (srv->task_tail)
		srv->task_tail->next = t;
	else
		srv->task_list = t;
	srv->task_tail = t;
	srv->ntasks++;
	json_object *created;
	if (modern) {
		created = describe_modern(t, 0);
		eng_obj_add(created, "resultType", json_object_new_string("task"));
	} else {
		created = json_object_new_object();
		eng_obj_add(created, "task", describe_legacy(t));
	}
	json_object *rec = modern && srv->tstore ? record_new(t) : NULL;
	pthread_mutex_unlock(&srv->task_mu);
	if (modern && srv->tstore) {
		/* Durable before the client hears of it (SEP-2663): any
		 * process's tasks/get finds it from the first moment. */
		int src = rec ? MCP_OK : MCP_ENOMEM;
		if (src == MCP_OK)
			src = api_tstore_create(srv->tstore, t->id, rec, record_ttl(rec));
		json_object_put(rec);
		if (src != MCP_OK) {
			json_object_put(created);
			pthread_mutex_lock(&srv->task_mu);
			task_unlink(srv, t);
			pthread_mutex_unlock(&srv->task_mu);
			eng_req_unref(r);
			task_free(t);
			return src == MCP_ENOMEM ? MCP_ENOMEM : MCP_ESYS;
		}
	}
	if (modern && created)
		api_modern_decorate(srv, "tools/call", created);

	char key[API_TASK_ID_MAX + 8];
	snprintf(key, sizeof key, "#task:%s", t->id);
	int rc = created ? eng_req_detach_to(r, to, created, key, task_sink, t) : MCP_ENOMEM;
	if (rc != MCP_OK) {
		if (modern && srv->tstore)
			api_tstore_release(srv->tstore, t->id, 1);
		pthread_mutex_lock(&srv->task_mu);
		task_unlink(srv, t);
		pthread_mutex_unlock(&srv->task_mu);
		eng_req_unref(r);
		task_free(t);
		return rc;
	}
	ctx->task = t;
	if (to) {
		/* The handler now runs for the host; the principal it had was
		 * its old session's, the task's own reference replaces it. */
		ctx->sess = to->proto_data;
	}
	ctx->principal = t->who;
	if (modern)
		ctx->progress_token = NULL; /* SEP-2663: no progress for a task */
	return MCP_OK;
}

MCP_EXTERN int mcp_ctx_become_task(mcp_ctx *ctx)
{
	if (!ctx)
		return MCP_EINVAL;
	if (ctx->task)
		return MCP_OK;
	/* Only a 2026-07-28 tools/call of a tool that may be a task, from a
	 * request that declared the extension: the server decides then.  A
	 * 2025-11-25 client decides itself, with params.task. */
	if (!ctx->view.modern || !ctx->tool || ctx->tool->task_support == MCP_TASKS_FORBIDDEN ||
	    !api_tasks_declared(ctx->view.caps))
		return MCP_ENOTSUP;
	if (eng_token_reason(&ctx->req->token) != MCP_CANCEL_NONE)
		return MCP_ECANCELED;
	return api_task_start(ctx, NULL);
}

/* ---- input inside a 2026-07-28 task -------------------------------------------- */

/* Adds the request's trace context to an input request's params. */
static json_object *with_trace(mcp_ctx *ctx, json_object *req)
{
	json_object *params = api_get(req, "params");
	if (json_object_is_type(params, json_type_object))
		api_trace_meta_add(ctx, params);
	return req;
}

/* Publishes `requests` (key -> {method, params}; borrowed) as the task's
 * outstanding input under keys unique over its life, then waits for all
 * of them to be answered.  *answers gets key -> result (caller owns).
 * MCP_OK, MCP_ECANCELED (the token fired: a tasks/cancel, the shutdown, a
 * close, or the TTL ran out while waiting), MCP_ETIMEDOUT (`timeout_ms`
 * passed), MCP_ENOMEM. */
static int ask_and_wait(mcp_ctx *ctx, json_object *requests, int64_t timeout_ms,
			json_object **answers)
{
	api_task *t = ctx->task;
	mcp_server *srv = t->srv;
	eng_token *tok = &ctx->req->token;
	*answers = NULL;
	json_object *asked = json_object_new_object();
	json_object *answered = json_object_new_object();
	if (!asked || !answered) {
		json_object_put(asked);
		json_object_put(answered);
		return MCP_ENOMEM;
	}
	pthread_mutex_lock(&srv->task_mu);
	int round = ++t->round;
	json_object_object_foreach(requests, key, req)
	{
		char wire[256];
		snprintf(wire, sizeof wire, "%d.%.200s", round, key);
		eng_obj_add(asked, wire, with_trace(ctx, api_json_copy(req)));
	}
	json_object_put(t->asked);
	json_object_put(t->answered);
	t->asked = asked;
	t->answered = answered;
	set_status(t, T_INPUT_REQUIRED, NULL);
	pthread_mutex_unlock(&srv->task_mu);
	if (srv->tstore)
		sync_record(t); /* the input requests, for every process */

	/* Bounded by the task's TTL: a client that never answers must not
	 * hold a worker forever. */
	int64_t deadline = t->expires_ns;
	int by_timeout = 0;
	if (timeout_ms >= 0 && eng_now_ns() + timeout_ms * ENG_NS_PER_MS < deadline) {
		deadline = eng_now_ns() + timeout_ms * ENG_NS_PER_MS;
		by_timeout = 1;
	}
	struct timespec ts;
	eng_abstime(deadline, &ts);
	int ready = 0, timed_out = 0;
	eng_pool_blocking();
	pthread_mutex_lock(&tok->mu);
	while (t->input_ready != round && atomic_load(&tok->reason) == MCP_CANCEL_NONE)
		if (pthread_cond_timedwait(&tok->cv, &tok->mu, &ts) == ETIMEDOUT) {
			timed_out = t->input_ready != round;
			break;
		}
	ready = t->input_ready == round;
	pthread_mutex_unlock(&tok->mu);
	eng_pool_unblocked();

	pthread_mutex_lock(&srv->task_mu);
	json_object *got = t->answered;
	t->answered = NULL;
	json_object_put(t->asked);
	t->asked = NULL;
	if (ready && atomic_load(&tok->reason) == MCP_CANCEL_NONE)
		set_status(t, T_WORKING, NULL);
	pthread_mutex_unlock(&srv->task_mu);
	if (srv->tstore && ready)
		sync_record(t);
	if (!ready) {
		json_object_put(got);
		if (timed_out && !by_timeout) {
			/* The TTL ran out: the task ends as a request whose
			 * deadline passed. */
			eng_token_fire(tok, MCP_CANCEL_TIMEOUT);
			return MCP_ECANCELED;
		}
		return timed_out ? MCP_ETIMEDOUT : MCP_ECANCELED;
	}
	/* Back to the handler's own keys. */
	json_object *out = json_object_new_object();
	char prefix[24];
	int plen = snprintf(prefix, sizeof prefix, "%d.", round);
	json_object_object_foreach(got, wire, value)
	{
		if (strncmp(wire, prefix, (size_t)plen) == 0)
			eng_obj_add(out, wire + plen, json_object_get(value));
	}
	json_object_put(got);
	if (!out)
		return MCP_ENOMEM;
	*answers = out;
	return MCP_OK;
}

int api_task_rounds(mcp_ctx *ctx, int rc, int (*invoke)(void *arg), void (*reset)(void *arg),
		    void *arg)
{
	while (rc == MCP_EINPUT && ctx->input_requests) {
		json_object *answers = NULL;
		json_object *requests = ctx->input_requests;
		ctx->input_requests = NULL;
		int wrc = ask_and_wait(ctx, requests, -1, &answers);
		json_object_put(requests);
		if (wrc != MCP_OK)
			return wrc;
		json_object_put(ctx->input_responses);
		ctx->input_responses = answers;
		free(ctx->state_in);
		ctx->state_in = ctx->state_out;
		ctx->state_out = NULL;
		reset(arg);
		rc = invoke(arg);
	}
	if (rc == MCP_EINPUT) /* asked for nothing: nothing can ever answer */
		rc = MCP_ESTATE;
	return rc;
}

int api_task_ask(mcp_ctx *ctx, const char *method, json_object *params, int64_t timeout_ms,
		 json_object **result)
{
	json_object *requests = json_object_new_object();
	json_object *one = json_object_new_object();
	if (!params)
		params = json_object_new_object();
	if (!requests || !one || !params) {
		json_object_put(requests);
		json_object_put(one);
		json_object_put(params);
		return MCP_ENOMEM;
	}
	eng_obj_add(one, "method", json_object_new_string(method));
	eng_obj_add(one, "params", params);
	eng_obj_add(requests, "input", one);
	json_object *answers = NULL;
	int rc = ask_and_wait(ctx, requests, timeout_ms, &answers);
	json_object_put(requests);
	if (rc != MCP_OK)
		return rc;
	json_object *v = api_get(answers, "input");
	rc = MCP_EPROTO;
	if (json_object_is_type(v, json_type_object)) {
		*result = json_object_get(v);
		rc = MCP_OK;
	}
	json_object_put(answers);
	return rc;
}

void api_task_decorate(mcp_ctx *ctx, json_object *result)
{
	/* 2025-11-25: messages about a task carry its id.  SEP-2663 drops
	 * the key: the id is at the root of tasks/get. */
	if (!ctx->task || ctx->task->modern || !json_object_is_type(result, json_type_object))
		return;
	json_object *meta = api_get(result, "_meta");
	if (!json_object_is_type(meta, json_type_object)) {
		meta = json_object_new_object();
		eng_obj_add(result, "_meta", meta);
	}
	json_object *rel = json_object_new_object();
	eng_obj_add(rel, "taskId", json_object_new_string(ctx->task->id));
	eng_obj_add(meta, RELATED_TASK, rel);
}

/* ---- 2025-11-25 methods ------------------------------------------------------- */

static const char *task_id_param(json_object *params, api_answer *out)
{
	json_object *v = api_get(params, "taskId");
	if (!json_object_is_type(v, json_type_string)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: taskId (string) is required", NULL);
		return NULL;
	}
	if (!api_get_str(params, "taskId")) {
		/* Looked up as a C string, it would find the task it begins with. */
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: taskId holds U+0000 (\\u0000)", NULL);
		return NULL;
	}
	return json_object_get_string(v);
}

static void unknown_task(api_answer *out, const char *task_id)
{
	json_object *data = json_object_new_object();
	eng_obj_add(data, "taskId", json_object_new_string(task_id));
	api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
			 "Invalid params: unknown task", data);
}

void api_tasks_get(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	(void)v;
	api_sess *ms = s->proto_data;
	mcp_server *srv = ms->srv;
	const char *tid = task_id_param(params, out);
	if (!tid)
		return;
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = find(srv, tid, 0, ms, api_authz_current(ms));
	json_object *res = t ? describe_legacy(t) : NULL;
	pthread_mutex_unlock(&srv->task_mu);
	if (t)
		api_answer_result(out, res);
	else
		unknown_task(out, tid);
}

/* Cancels `t`: cancelled at once, as SEP-2663 and 2025-11-25 both let a
 * client observe.  Under task_mu; returns the handler's request (counted)
 * for the caller to fire outside the lock, as a client's cancel of a
 * request would, or NULL when no handler runs. */
static eng_req *cancel_locked(api_task *t)
{
	eng_req *r = t->req;
	if (r)
		eng_req_ref(r);
	set_status(t, T_CANCELLED, t->modern ? "cancelled by the client" : NULL);
	return r;
}

static void fire_cancel(eng_req *r)
{
	if (r) {
		eng_token_fire(&r->token, MCP_CANCEL_PEER);
		eng_req_unref(r);
	}
}

void api_tasks_cancel(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	(void)v;
	api_sess *ms = s->proto_data;
	mcp_server *srv = ms->srv;
	const char *tid = task_id_param(params, out);
	if (!tid)
		return;
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = find(srv, tid, 0, ms, api_authz_current(ms));
	if (!t) {
		pthread_mutex_unlock(&srv->task_mu);
		unknown_task(out, tid);
		return;
	}
	if (terminal(t->status)) {
		pthread_mutex_unlock(&srv->task_mu);
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: the task has already finished", NULL);
		return;
	}
	eng_req *r = cancel_locked(t);
	json_object *res = describe_legacy(t);
	pthread_mutex_unlock(&srv->task_mu);
	fire_cancel(r);
	api_answer_result(out, res);
}

void api_tasks_list(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	(void)v;
	api_sess *ms = s->proto_data;
	mcp_server *srv = ms->srv;
	size_t offset = 0;
	json_object *jc = api_get(params, "cursor");
	if (jc && (!api_str(jc) || api_parse_cursor(srv, api_str(jc), "tasks", &offset) != 0)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: unknown cursor", NULL);
		return;
	}
	size_t page = (size_t)srv->page_size, i = 0;
	json_object *arr = json_object_new_array();
	int more = 0;
	const mcp_principal *who = api_authz_current(ms);
	pthread_mutex_lock(&srv->task_mu);
	purge(srv);
	/* Newest first, as clients show them. */
	for (api_task *t = srv->task_tail; t; t = t->prev) {
		if (t->modern || t->owner != ms || !reachable(t, who))
			continue;
		if (i++ < offset)
			continue;
		if (i > offset + page) {
			more = 1;
			break;
		}
		eng_arr_add(arr, describe_legacy(t));
	}
	pthread_mutex_unlock(&srv->task_mu);
	json_object *res = json_object_new_object();
	eng_obj_add(res, "tasks", arr);
	if (more) {
		char *c = api_make_cursor(srv, "tasks", offset + page);
		if (c)
			eng_obj_add(res, "nextCursor", json_object_new_string(c));
		free(c);
	}
	api_answer_result(out, res);
}

/* tasks/result blocks until the task ends, so it runs on a worker and
 * waits on the table's condition variable, woken by its own token too.
 * It runs no handler, but passes the request hooks like one. */
void api_tasks_result(eng_req *r)
{
	api_sess *ms = r->sess->proto_data;
	mcp_server *srv = ms->srv;
	json_object *params = api_get(r->msg, "params");
	mcp_ctx ctx;
	api_ctx_init(&ctx, r, params);
	if (api_ctx_admit(&ctx, -1, NULL))
		return;
	json_object *v = api_get(params, "taskId");
	if (!json_object_is_type(v, json_type_string)) {
		api_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS,
			    "Invalid params: taskId (string) is required", NULL);
		return;
	}
	if (!api_get_str(params, "taskId")) {
		api_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS,
			    "Invalid params: taskId holds U+0000 (\\u0000)", NULL);
		return;
	}
	const char *tid = json_object_get_string(v);
	const mcp_principal *who = api_authz_current(ms);
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = find(srv, tid, 0, ms, who);
	int rc = MCP_OK;
	while (t && !terminal(t->status) && rc == MCP_OK) {
		rc = eng_token_wait_external(&r->token, &srv->task_cv, &srv->task_mu, -1);
		t = find(srv, tid, 0, ms, who); /* it may have expired meanwhile */
	}
	json_object *answer = t && t->answer ? api_json_copy(t->answer) : NULL;
	int status = t ? t->status : -1;
	pthread_mutex_unlock(&srv->task_mu);

	if (rc == MCP_ECANCELED) {
		/* Its token fired: nothing is written. */
		json_object_put(answer);
		api_ctx_end(&ctx, MCP_ECANCELED, NULL, 0, NULL, NULL);
		return;
	}
	if (!t) {
		json_object *data = json_object_new_object();
		eng_obj_add(data, "taskId", json_object_new_string(tid));
		api_ctx_end(&ctx, MCP_ENOENT, NULL, MCP_JSONRPC_INVALID_PARAMS,
			    "Invalid params: unknown task", data);
		return;
	}
	/* Exactly what the underlying request would have returned; a
	 * cancelled task never has an answer to give. */
	json_object *res = api_get(answer, "result"), *err = api_get(answer, "error");
	if (status == T_CANCELLED) {
		api_ctx_end(&ctx, MCP_EPROTO, NULL, MCP_JSONRPC_INTERNAL_ERROR,
			    "The task was cancelled", NULL);
	} else if (res) {
		api_ctx_end(&ctx, MCP_OK, json_object_get(res), 0, NULL, NULL);
	} else if (err) {
		json_object *data = api_get(err, "data");
		api_ctx_end(&ctx, MCP_EPROTO, NULL, json_object_get_int(api_get(err, "code")),
			    json_object_get_string(api_get(err, "message")),
			    data ? json_object_get(data) : NULL);
	} else {
		api_ctx_end(&ctx, MCP_EPROTO, NULL, MCP_JSONRPC_INTERNAL_ERROR,
			    "The task ended without a result", NULL);
	}
	json_object_put(answer);
}

/* ---- 2026-07-28 methods (SEP-2663) ------------------------------------------ */

/* The empty acknowledgement of tasks/update and tasks/cancel. */
static void ack(mcp_server *srv, const char *method, api_answer *out)
{
	json_object *res = json_object_new_object();
	if (!res) {
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	api_modern_decorate(srv, method, res);
	api_answer_result(out, res);
}

/* tasks/update: the answers for keys outstanding now are kept (others are
 * ignored, as SEP-2663 asks); once every key has its answer the handler
 * waiting for them is woken.  Called with task_mu held; releases it. */
/* Keeps the answers of `responses` for keys outstanding now; once every key
 * has its answer, wakes the handler waiting for them.  Returns whether it
 * did.  Under task_mu. */
static int take_responses(api_task *t, json_object *responses)
{
	int complete = 0;
	if (t->status == T_INPUT_REQUIRED && t->asked && t->answered) {
		json_object_object_foreach(responses, key, value)
		{
			if (!api_get(t->asked, key) || api_get(t->answered, key))
				continue;
			if (!json_object_is_type(value, json_type_object))
				continue; /* not a result: never handed to a handler */
			eng_obj_add(t->answered, key, api_json_copy(value));
			json_object_object_del(t->asked, key);
		}
		complete = json_object_object_length(t->asked) == 0;
	}
	if (complete) {
		/* Observable at once: the handler takes the answers next.  Its
		 * wait is on its token (taken after task_mu, never before). */
		set_status(t, T_WORKING, NULL);
		if (t->req) {
			eng_token *tok = &t->req->token;
			pthread_mutex_lock(&tok->mu);
			t->input_ready = t->round;
			pthread_cond_broadcast(&tok->cv);
			pthread_mutex_unlock(&tok->mu);
		}
	}
	return complete;
}

/* tasks/update of a task of this process, without a store.  Called with
 * task_mu held; releases it. */
static void modern_update(api_task *t, json_object *responses, api_answer *out)
{
	mcp_server *srv = t->srv;
	take_responses(t, responses);
	pthread_mutex_unlock(&srv->task_mu);
	ack(srv, "tasks/update", out);
}

/* A working task whose lease lapsed lost its process (killed, or cut off
 * from the store past the lease): it fails, so no client polls it forever.
 * Returns the record to describe (taken), re-read when another process
 * wrote first. */
static json_object *fail_if_orphaned(mcp_server *srv, const char *id, json_object *rec,
				     uint64_t ver)
{
	for (int tries = 0; tries < 16 && !terminal(record_status(rec)); tries++) {
		int alive = api_tstore_lease_alive(srv->tstore, id);
		if (alive != 0)
			break; /* alive, or the store cannot tell: as it was */
		set_field(rec, "s", json_object_new_int(T_FAILED));
		set_field(rec, "m", json_object_new_string(
					    "the process running the task stopped (its lease expired)"));
		set_field(rec, "u", json_object_new_int64(wall_ms()));
		set_field(rec, "ir", NULL);
		if (record_commit(srv, id, ver, rec) != MCP_ESTATE)
			break;
		json_object_put(rec);
		rec = NULL;
		if (api_tstore_read(srv->tstore, id, &rec, &ver) != MCP_OK)
			break;
	}
	return rec;
}

/* tasks/get, tasks/update and tasks/cancel when a store holds the tasks:
 * answered from the record, whichever process runs the task.  On a worker
 * (the method table puts them there when a store is set). */
static void shared(eng_session *s, const char *method, const char *tid, json_object *responses,
		   api_answer *out)
{
	api_sess *ms = s->proto_data;
	mcp_server *srv = ms->srv;
	const mcp_principal *who = api_authz_current(ms);
	api_tstore *ts = srv->tstore;
	int is_get = strcmp(method, "tasks/get") == 0;
	int is_update = strcmp(method, "tasks/update") == 0;
	json_object *sent = NULL; /* the responses this update added */
	const char *owner = NULL;
	char owner_buf[128] = "";
	for (int tries = 0;; tries++) {
		json_object *rec = NULL;
		uint64_t ver;
		int rc = api_tstore_read(ts, tid, &rec, &ver);
		if (rc == MCP_ENOENT || (rc == MCP_OK && !record_reachable(rec, who))) {
			json_object_put(rec);
			unknown_task(out, tid);
			return;
		}
		if (rc != MCP_OK || tries >= 16) {
			json_object_put(rec);
			store_failed(srv, out);
			return;
		}
		if (is_get) {
			rec = fail_if_orphaned(srv, tid, rec, ver);
			json_object *res = rec ? describe_record(rec, tid, 1) : NULL;
			json_object_put(rec);
			if (!res) {
				store_failed(srv, out);
				return;
			}
			api_modern_decorate(srv, method, res);
			api_answer_result(out, res);
			return;
		}
		snprintf(owner_buf, sizeof owner_buf, "%s", api_get_str(rec, "o") ? api_get_str(rec, "o") : "");
		owner = owner_buf;
		int st = record_status(rec);
		if (terminal(st)) { /* idempotent: the same ack */
			json_object_put(rec);
			break;
		}
		if (is_update) {
			json_object *ir = api_get(rec, "ir"), *rs = api_get(rec, "rs");
			json_object_put(sent);
			sent = json_object_new_object();
			if (!json_object_is_type(rs, json_type_object)) {
				rs = json_object_new_object();
				eng_obj_add(rec, "rs", rs);
			}
			/* The answers for keys outstanding now; others are
			 * ignored, as SEP-2663 asks. */
			json_object_object_foreach(responses, key, value)
			{
				if (st != T_INPUT_REQUIRED || !api_get(ir, key) || api_get(rs, key) ||
				    !json_object_is_type(value, json_type_object))
					continue;
				eng_obj_add(rs, key, api_json_copy(value));
				eng_obj_add(sent, key, api_json_copy(value));
				json_object_object_del(ir, key);
			}
			if (json_object_object_length(sent) == 0) {
				json_object_put(rec);
				break;
			}
			if (json_object_object_length(ir) == 0) {
				set_field(rec, "s", json_object_new_int(T_WORKING));
				set_field(rec, "ir", NULL);
			}
		} else {
			set_field(rec, "s", json_object_new_int(T_CANCELLED));
			set_field(rec, "m", json_object_new_string("cancelled by the client"));
			set_field(rec, "x", json_object_new_boolean(1));
			set_field(rec, "ir", NULL);
		}
		set_field(rec, "u", json_object_new_int64(wall_ms()));
		rc = record_commit(srv, tid, ver, rec);
		json_object_put(rec);
		if (rc == MCP_ESTATE)
			continue; /* another process wrote first: read again */
		if (rc != MCP_OK) {
			json_object_put(sent);
			store_failed(srv, out);
			return;
		}
		/* The record holds it now; the message only hurries the
		 * owner (its lease thread reads the record anyway). */
		if (owner[0])
			api_tstore_send(ts, owner, is_update ? "input" : "cancel", tid, sent);
		break;
	}
	json_object_put(sent);
	ack(srv, method, out);
}

/* tasks/get, tasks/update and tasks/cancel of a request that declared the
 * extension (the method table checks it). */
static void modern(eng_session *s, const char *method, json_object *params, api_answer *out)
{
	api_sess *ms = s->proto_data;
	mcp_server *srv = ms->srv;
	const char *tid = task_id_param(params, out);
	if (!tid)
		return;
	json_object *responses = api_get(params, "inputResponses");
	if (strcmp(method, "tasks/update") == 0 &&
	    !json_object_is_type(responses, json_type_object)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: inputResponses (object) is required", NULL);
		return;
	}
	if (srv->tstore) {
		shared(s, method, tid, responses, out);
		return;
	}
	pthread_mutex_lock(&srv->task_mu);
	api_task *t = find(srv, tid, 1, NULL, api_authz_current(ms));
	if (!t) {
		pthread_mutex_unlock(&srv->task_mu);
		unknown_task(out, tid);
		return;
	}
	if (strcmp(method, "tasks/get") == 0) {
		json_object *res = describe_modern(t, 1);
		pthread_mutex_unlock(&srv->task_mu);
		if (res) {
			api_modern_decorate(srv, method, res);
			api_answer_result(out, res);
		} else {
			api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		}
	} else if (strcmp(method, "tasks/update") == 0) {
		modern_update(t, responses, out);
	} else {
		/* Idempotent: a finished task's cancel gets the same ack. */
		eng_req *r = terminal(t->status) ? NULL : cancel_locked(t);
		pthread_mutex_unlock(&srv->task_mu);
		fire_cancel(r);
		ack(srv, method, out);
	}
}

void api_tasks_modern_get(eng_session *s, json_object *params, const api_view *v,
			  api_answer *out)
{
	(void)v;
	modern(s, "tasks/get", params, out);
}

void api_tasks_modern_update(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out)
{
	(void)v;
	modern(s, "tasks/update", params, out);
}

void api_tasks_modern_cancel(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out)
{
	(void)v;
	modern(s, "tasks/cancel", params, out);
}
