/*
 * dispatch.c - the one table of MCP methods, for both eras, and the hooks
 * by which the engine hands this layer every message of a connection
 * (api_protocol): which row serves a request, on which thread, and how
 * request hooks wrap it.
 *
 * A request whose _meta names its protocol version (or any request of an
 * HTTP exchange without a session) is a 2026-07-28 one: it passes the
 * checks of modern.c and is served by the table's rows of that era with
 * its own view; any other is served by the rows of the legacy era under
 * its connection's lifecycle.  What each method does lives in the file of
 * its feature; this file only routes.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

/* ---- the method table ----------------------------------------------------------
 *
 * Where a method runs:
 *  - ON_READER: answered at once on the reader (or the thread feeding a
 *    push session): cheap, or its effect orders later messages
 *    (initialize, setLevel), or it must never wait for a worker (ping).
 *    With request hooks installed it runs on a worker instead, between
 *    them (run_hooked), so that the reader never waits for application
 *    code, a hook that blocks is cancelled like a handler, and a refusal
 *    is answered like a handler's.  Without hooks nothing changes: one
 *    atomic load per such request decides.
 *  - ON_WORKER: a handler on the pool; the hooks run around it there
 *    (api_ctx_admit).
 *  - HELD: subscriptions/listen, held open without a worker; with hooks,
 *    `run` lets it through on a worker first (api_listen_hooked). */

enum { ON_READER, ON_WORKER, HELD };
enum { LEGACY = 1, MODERN = 2, BOTH = LEGACY | MODERN };
/* Legacy: served before initialize. */
#define BEFORE_INIT 1
/* Reads the state store when the server has one: then on a worker (its
 * calls block up to the store's timeout), never on the reader. */
#define VIA_STORE 2

typedef struct method_row {
	const char *name;
	unsigned eras;               /* LEGACY, MODERN or BOTH */
	/* 2026-07-28: the extension (capabilities.extensions) a request
	 * must declare to use the method, else -32021; NULL for none. */
	const char *needs;
	unsigned flags;              /* BEFORE_INIT, VIA_STORE */
	int where;                   /* ON_READER, ON_WORKER, HELD */
	api_inline_fn answer;        /* ON_READER */
	void (*run)(eng_req *r);     /* ON_WORKER; HELD: between the hooks */
	void (*hold)(eng_session *s, json_object *msg, json_object *id, json_object *params,
		     api_view *v);   /* HELD */
} method_row;

#define READER(n, e, need, fl, fn) { n, e, need, fl, ON_READER, fn, NULL, NULL }
#define WORKER(n, e, fn) { n, e, NULL, 0, ON_WORKER, NULL, fn, NULL }

static const method_row methods[] = {
	/* the lifecycle (lifecycle.c) */
	READER("initialize", LEGACY, NULL, BEFORE_INIT, api_lifecycle_initialize),
	READER("ping", LEGACY, NULL, BEFORE_INIT, api_lifecycle_ping),
	READER("logging/setLevel", LEGACY, NULL, 0, api_lifecycle_set_level),
	READER("server/discover", MODERN, NULL, 0, api_lifecycle_discover),
	/* tools (lists.c, tools.c) */
	READER("tools/list", BOTH, NULL, 0, api_list_tools),
	WORKER("tools/call", BOTH, api_tools_call),
	/* resources (lists.c, resources.c) */
	READER("resources/list", BOTH, NULL, 0, api_list_resources),
	READER("resources/templates/list", BOTH, NULL, 0, api_list_templates),
	WORKER("resources/read", BOTH, api_resources_read),
	READER("resources/subscribe", LEGACY, NULL, 0, api_resources_subscribe),
	READER("resources/unsubscribe", LEGACY, NULL, 0, api_resources_unsubscribe),
	/* prompts and completion (lists.c, prompts.c, complete.c) */
	READER("prompts/list", BOTH, NULL, 0, api_list_prompts),
	WORKER("prompts/get", BOTH, api_prompts_get),
	WORKER("completion/complete", BOTH, api_complete),
	/* 2026-07-28 notifications (listen.c) */
	{ "subscriptions/listen", MODERN, NULL, VIA_STORE, HELD, NULL, api_listen_hooked,
	  api_listen_hold },
	/* tasks: 2025-11-25's, a connection's own; 2026-07-28's, the
	 * extension's, reached by id (tasks.c) */
	READER("tasks/get", LEGACY, NULL, 0, api_tasks_get),
	READER("tasks/list", LEGACY, NULL, 0, api_tasks_list),
	READER("tasks/cancel", LEGACY, NULL, 0, api_tasks_cancel),
	WORKER("tasks/result", LEGACY, api_tasks_result),
	READER("tasks/get", MODERN, API_EXT_TASKS, VIA_STORE, api_tasks_modern_get),
	READER("tasks/update", MODERN, API_EXT_TASKS, VIA_STORE, api_tasks_modern_update),
	READER("tasks/cancel", MODERN, API_EXT_TASKS, VIA_STORE, api_tasks_modern_cancel),
	/* skills (skills.c) */
	READER("skills/list", BOTH, NULL, 0, api_skills_list),
	READER("skills/get", BOTH, NULL, 0, api_skills_get),
	READER("resources/directory/read", BOTH, NULL, 0, api_skills_read_dir),
};

static const method_row *find_method(const char *name, unsigned era)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if ((methods[i].eras & era) && strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

static json_object *method_data(const char *name)
{
	json_object *data = json_object_new_object();
	eng_obj_add(data, "method", json_object_new_string(name));
	return data;
}

int api_request_check(const char *method, json_object *params, const char *header_version,
		      const char **message, json_object **data)
{
	int code = api_modern_check(params, header_version, message, data);
	if (code)
		return code;
	if (!find_method(method, MODERN)) {
		*message = "Method not found";
		*data = method_data(method);
		return MCP_JSONRPC_METHOD_NOT_FOUND;
	}
	return 0;
}

/* Runs a row's answer (on the reader, or on a worker between the hooks),
 * after the extension it needs. */
static void answer(const method_row *m, eng_session *s, json_object *params, const api_view *v,
		   api_answer *out)
{
	if (m->needs && v && !api_ext_declared(v->caps, m->needs)) {
		api_answer_error(out, API_JSONRPC_MISSING_CAPABILITY,
				 "Missing required client capability",
				 api_ext_required_data(m->needs));
		return;
	}
	m->answer(s, params, v, out);
}

/* A method served without a handler, between the request hooks. */
static void run_hooked(eng_req *r)
{
	json_object *params = api_get(r->msg, "params");
	const method_row *m =
		find_method(api_get_str(r->msg, "method"), api_req_modern(r) ? MODERN : LEGACY);
	mcp_ctx ctx;
	api_ctx_init(&ctx, r, params);
	if (api_ctx_admit(&ctx, -1, NULL))
		return;
	api_answer a = { 0 };
	answer(m, r->sess, params, r->proto, &a);
	api_ctx_end_answer(&ctx, &a);
}

/* ---- calls run where they were read (MCP_*_NONBLOCKING) ----------------------------
 *
 * A tool, prompt or resource declared non-blocking runs on the thread that
 * read its request (eng_session_run_here): no hand-off to the pool.  The
 * library holds it to the promise: a wait it tries is refused (ctx.c,
 * api_ctx_here_refuses), a run past the server's budget is reported here
 * (10 ms by default: far above an honest handler's tens of microseconds,
 * so that a preempted one on a busy machine is not blamed), and
 * either sends the item to the workers for good (api_entry_demote).  With
 * request hooks (application code, which may wait) nothing runs here. */

enum { HERE_NONE, HERE_TOOL, HERE_PROMPT, HERE_RESOURCE };

/* Which kind of item the method of row m runs, if any. */
static int here_kind(const method_row *m)
{
	if (m->run == api_tools_call)
		return HERE_TOOL;
	if (m->run == api_prompts_get)
		return HERE_PROMPT;
	return m->run == api_resources_read ? HERE_RESOURCE : HERE_NONE;
}

/* The item a request of kind `kind` names in `params` (a counted
 * reference), or NULL. */
static api_entry *here_item(mcp_server *srv, int kind, json_object *params)
{
	if (kind == HERE_TOOL || kind == HERE_PROMPT) {
		const char *name = api_get_str(params, "name");
		return name ? api_registry_find(srv, kind == HERE_TOOL ? &srv->tools : &srv->prompts,
						name)
			    : NULL;
	}
	const char *uri = api_get_str(params, "uri");
	if (!uri)
		return NULL;
	api_entry *e = api_registry_find(srv, &srv->resources, uri);
	if (!e) {
		json_object *vars = NULL;
		api_resource_entry *t = api_template_match(srv, uri, &vars);
		json_object_put(vars);
		e = t ? &t->base : NULL;
	}
	return e;
}

/* Runs r with `run` and reports a run past the budget. */
static void run_timed(eng_req *r, void (*run)(eng_req *), int kind)
{
	mcp_server *srv = api_sess_of(r->sess)->srv;
	int64_t t0 = eng_now_ns();
	run(r);
	if (eng_now_ns() - t0 <= srv->nonblocking_budget_ms * 1000000)
		return;
	atomic_fetch_add(&srv->stats.ran_here_overran, 1);
	api_entry *e = here_item(srv, kind, api_get(r->msg, "params"));
	if (e) {
		api_entry_demote(srv, e, r, "nonblocking_overran");
		api_entry_unref(e);
	}
}

static void tools_call_here(eng_req *r)
{
	run_timed(r, api_tools_call, HERE_TOOL);
}

static void prompts_get_here(eng_req *r)
{
	run_timed(r, api_prompts_get, HERE_PROMPT);
}

static void resources_read_here(eng_req *r)
{
	run_timed(r, api_resources_read, HERE_RESOURCE);
}

/* The run of a request of row m that may run where it was read, or NULL
 * when it goes to a worker.  On the reader. */
static void (*run_here_fn(mcp_server *srv, const method_row *m, json_object *params))(eng_req *)
{
	int kind = here_kind(m);
	if (!kind || !atomic_load_explicit(&srv->any_nonblocking, memory_order_relaxed) ||
	    api_authz_hooked(srv))
		return NULL;
	api_entry *e = here_item(srv, kind, params);
	int here = e && e->nonblocking && !atomic_load(&e->demoted);
	if (e)
		api_entry_unref(e);
	if (!here)
		return NULL;
	return kind == HERE_TOOL ? tools_call_here
	       : kind == HERE_PROMPT ? prompts_get_here : resources_read_here;
}

/* ---- the engine's hooks ---------------------------------------------------------- */

static int is_modern(eng_session *s, json_object *params)
{
	json_object *meta = api_get(params, "_meta");
	return api_sess_of(s)->stateless_only || api_get(meta, API_META_VERSION) ||
	       api_get(meta, API_META_CAPS);
}

static void on_request(eng_session *s, json_object *msg, json_object *id, const char *name,
		       json_object *params)
{
	api_sess *ms = api_sess_of(s);
	int modern = is_modern(s, params);
	const char *message = NULL;
	json_object *data = NULL;
	int code = 0;
	const method_row *m = NULL;
	if (modern) {
		code = api_request_check(name, params, NULL, &message, &data);
		if (!code)
			m = find_method(name, MODERN);
	} else if (!(m = find_method(name, LEGACY))) {
		code = MCP_JSONRPC_METHOD_NOT_FOUND;
		message = "Method not found";
		data = method_data(name);
	} else if (!(m->flags & BEFORE_INIT) && atomic_load(&ms->state) == API_SESS_NEW) {
		code = MCP_JSONRPC_INVALID_REQUEST;
		message = "Invalid Request: the server is not initialized (send initialize first)";
	}
	if (code) {
		eng_session_respond_error(s, id, code, message, data);
		json_object_put(msg);
		return;
	}
	/* A 2026-07-28 request carries its view: revision, capabilities, log
	 * level, from its own _meta. */
	api_view *v = NULL;
	if (modern && !(v = api_view_new(params))) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		json_object_put(msg);
		return;
	}
	void (*free_v)(void *) = v ? api_view_free : NULL;
	void (*here)(eng_req *) = run_here_fn(ms->srv, m, params);
	if (here) {
		eng_session_run_here(s, msg, id, here, v, free_v);
		return;
	}
	if (m->where == ON_WORKER) {
		eng_session_submit(s, msg, id, m->run, v, free_v);
		return;
	}
	if (api_authz_hooked(ms->srv) || ((m->flags & VIA_STORE) && ms->srv->tstore)) {
		eng_session_submit(s, msg, id, m->where == HELD ? m->run : run_hooked, v, free_v);
		return;
	}
	if (m->where == HELD) {
		m->hold(s, msg, id, params, v);
		return;
	}
	/* Answered now, but a duplicate of an id in flight is still a
	 * duplicate (P5), answered under its id as the engine does. */
	if (eng_session_id_in_flight(s, id)) {
		json_object *d = json_object_new_object();
		eng_obj_add(d, "id", json_object_get(id));
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_REQUEST,
					  "Invalid Request: id is already in flight", d);
	} else {
		api_answer a = { 0 };
		answer(m, s, params, v, &a);
		api_answer_send(s, id, &a);
	}
	if (v)
		api_view_free(v);
	json_object_put(msg);
}

/* A plain request routed from its raw line (no "_meta" in its params, so
 * not a 2026-07-28 request): what on_request would submit, or NULL when
 * on_request must see it. */
static void (*raw_route(eng_session *s, const char *name))(eng_req *r)
{
	api_sess *ms = api_sess_of(s);
	if (ms->stateless_only)
		return NULL;
	const method_row *m = find_method(name, LEGACY);
	if (!m || m->where != ON_WORKER)
		return NULL;
	/* Whether a call may run here depends on its item's name. */
	if (here_kind(m) && atomic_load_explicit(&ms->srv->any_nonblocking, memory_order_relaxed))
		return NULL;
	if (!(m->flags & BEFORE_INIT) && atomic_load(&ms->state) == API_SESS_NEW)
		return NULL;
	return m->run;
}

static void on_notification(eng_session *s, json_object *msg, const char *name,
			    json_object *params)
{
	if (strcmp(name, "notifications/cancelled") == 0)
		eng_session_cancel_peer(s, api_get(params, "requestId"));
	else if (strcmp(name, "notifications/initialized") == 0)
		api_lifecycle_initialized(api_sess_of(s));
	/* Anything else (roots/list_changed, progress, unknown ones) needs no
	 * action and is never answered. */
	json_object_put(msg);
}

static int batches_allowed(eng_session *s)
{
	api_sess *ms = api_sess_of(s);
	return atomic_load(&ms->state) != API_SESS_NEW && ms->rev == API_REV_2025_03_26;
}

static json_object *cancel_notification(int64_t id, const char *reason)
{
	json_object *p = json_object_new_object();
	eng_obj_add(p, "requestId", json_object_new_int64(id));
	eng_obj_add(p, "reason", json_object_new_string(reason));
	return api_notification("notifications/cancelled", p);
}

static void on_free(eng_session *s)
{
	api_sess *ms = api_sess_of(s);
	api_tasks_free(ms);
	api_sess_free(ms);
}

const eng_proto api_protocol = {
	.on_request = on_request,
	.raw_route = raw_route,
	.on_notification = on_notification,
	.batches_allowed = batches_allowed,
	.cancel_notification = cancel_notification,
	.on_free = on_free,
};
