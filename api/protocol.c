/*
 * protocol.c - the MCP methods of a connection: the lifecycle (initialize,
 * version negotiation, initialized), ping, logging/setLevel, cancellation,
 * tools/list and tools/call, routed through one table of handlers.
 *
 * Cheap methods whose effect orders later messages (initialize, setLevel)
 * or that must never wait for a worker (ping) are answered on the reader
 * thread; tool calls go to the pool.  With request hooks installed every
 * method runs on the pool, so that the hooks never run on the reader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "api/jschema.h"

/* ---- inline methods (the reader; a worker between request hooks) -------- */

typedef void (*inline_fn)(eng_session *s, json_object *params, mcp_answer *out);

/* The capabilities of a connection: exactly what is registered when it
 * initializes.  Remembers which list_changed notifications it was promised. */
static json_object *build_capabilities(mcp_server *srv, int rev, unsigned *kinds_out);

static json_object *server_capabilities(mcp_sess *ms)
{
	unsigned kinds = 0;
	json_object *caps = build_capabilities(ms->srv, ms->rev, &kinds);
	ms->caps_sent = kinds;
	return caps;
}

/* The capabilities object for revision `rev`.  In 2026-07-28 listChanged
 * and subscribe mean delivery on subscriptions/listen streams, and tasks
 * are the io.modelcontextprotocol/tasks extension. */
static json_object *build_capabilities(mcp_server *srv, int rev, unsigned *kinds_out)
{
	int modern = rev >= MCP_REV_LEGACY_COUNT;
	int bad = 0;
	json_object *caps = json_object_new_object();
	eng_obj_set(caps, "logging", json_object_new_object(), &bad);
	unsigned kinds = 0;
	int completions = 0;
	if (mcp_registry_count(srv, &srv->tools)) {
		json_object *o = json_object_new_object();
		eng_obj_set(o, "listChanged", json_object_new_boolean(1), &bad);
		eng_obj_set(caps, "tools", o, &bad);
		kinds |= MCP_KIND_TOOLS;
	}
	if (mcp_registry_count(srv, &srv->resources) || mcp_registry_count(srv, &srv->templates)) {
		json_object *o = json_object_new_object();
		eng_obj_set(o, "subscribe", json_object_new_boolean(1), &bad);
		eng_obj_set(o, "listChanged", json_object_new_boolean(1), &bad);
		eng_obj_set(caps, "resources", o, &bad);
		kinds |= MCP_KIND_RESOURCES;
	}
	if (mcp_registry_count(srv, &srv->prompts)) {
		json_object *o = json_object_new_object();
		eng_obj_set(o, "listChanged", json_object_new_boolean(1), &bad);
		eng_obj_set(caps, "prompts", o, &bad);
		kinds |= MCP_KIND_PROMPTS;
	}
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->prompts.n && !completions; i++)
		completions = ((mcp_prompt_entry *)srv->prompts.items[i])->complete != NULL;
	for (size_t i = 0; i < srv->templates.n && !completions; i++)
		completions = ((mcp_resource_entry *)srv->templates.items[i])->complete != NULL;
	pthread_rwlock_unlock(&srv->reg_lock);
	if (completions)
		eng_obj_set(caps, "completions", json_object_new_object(), &bad);
	if (rev >= MCP_REV_2025_11_25 && !modern && mcp_tasks_offered(srv)) {
		json_object *t = json_object_new_object();
		json_object *req = json_object_new_object();
		json_object *tools = json_object_new_object();
		eng_obj_set(tools, "call", json_object_new_object(), &bad);
		eng_obj_set(req, "tools", tools, &bad);
		eng_obj_set(t, "list", json_object_new_object(), &bad);
		eng_obj_set(t, "cancel", json_object_new_object(), &bad);
		eng_obj_set(t, "requests", req, &bad);
		eng_obj_set(caps, "tasks", t, &bad);
	}
	/* Extensions (SEP-2133): settings objects under their ids.  Tasks are
	 * one for 2026-07-28 only (2025-11-25 has them in core); MCP Apps and
	 * skills in every revision, while one is registered. */
	json_object *ext = json_object_new_object();
	if (modern && mcp_tasks_offered(srv))
		eng_obj_set(ext, MCP_EXT_TASKS, json_object_new_object(), &bad);
	if (mcp_apps_offered(srv))
		eng_obj_set(ext, MCP_EXT_UI, json_object_new_object(), &bad);
	if (mcp_skills_offered(srv)) {
		/* Skills (SEP-2640), with resources/directory/read. */
		json_object *set = json_object_new_object();
		eng_obj_set(set, "directoryRead", json_object_new_boolean(1), &bad);
		eng_obj_set(ext, MCP_EXT_SKILLS, set, &bad);
	}
	if (!ext)
		bad = 1;
	else if (json_object_object_length(ext) > 0)
		eng_obj_set(caps, "extensions", ext, &bad);
	else
		json_object_put(ext);
	if (kinds_out)
		*kinds_out = kinds;
	if (bad) {
		json_object_put(caps);
		return NULL;
	}
	return caps;
}

static void m_initialize(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_sess *ms = mcp_sess_of(s);
	if (!json_object_is_type(params, json_type_object)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: initialize needs an object", NULL);
		return;
	}
	const char *asked = mcp_get_str(params, "protocolVersion");
	if (!asked) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: protocolVersion (string) is required",
				 NULL);
		return;
	}
	json_object *caps = mcp_get(params, "capabilities");
	if (caps && !json_object_is_type(caps, json_type_object)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: capabilities must be an object", NULL);
		return;
	}
	int expect = MCP_SESS_NEW;
	if (!atomic_compare_exchange_strong(&ms->state, &expect, MCP_SESS_INITIALIZING)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_REQUEST,
				 "Invalid Request: initialize was already received", NULL);
		return;
	}
	/* Negotiation: the client's revision when we speak it, else our
	 * newest and the client decides whether to go on. */
	int rev = mcp_revision_index(asked);
	ms->rev = rev >= 0 && rev < MCP_REV_LEGACY_COUNT ? rev : MCP_REV_LEGACY_COUNT - 1;
	ms->client_caps_text = caps ? eng_json_dup(caps, NULL) : strdup("{}");
	/* Published with the state: with request hooks this runs on a
	 * worker, and the threads that read the revision and capabilities
	 * later order themselves after this through `state`. */
	expect = MCP_SESS_INITIALIZING;
	atomic_compare_exchange_strong(&ms->state, &expect, MCP_SESS_INITIALIZING);

	mcp_server *srv = ms->srv;
	/* The transport learns what it needs of the revision before the
	 * answer can reach the client (streams opened after it). */
	eng_session_set_transport_features(s, ms->rev >= MCP_REV_2025_11_25 ? TP_FEATURE_RESUMABLE
									   : 0);
	int bad = !ms->client_caps_text;
	json_object *res = json_object_new_object();
	eng_obj_set(res, "protocolVersion", json_object_new_string(mcp_revision_names[ms->rev]),
		    &bad);
	eng_obj_set(res, "capabilities", server_capabilities(ms), &bad);
	json_object *si = json_object_new_object();
	eng_obj_set(si, "name", json_object_new_string(srv->name), &bad);
	eng_obj_set(si, "version", json_object_new_string(srv->version), &bad);
	eng_obj_set(res, "serverInfo", si, &bad);
	if (srv->instructions)
		eng_obj_set(res, "instructions", json_object_new_string(srv->instructions), &bad);
	if (!res || bad) {
		json_object_put(res);
		mcp_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	mcp_answer_result(out, res);
}

static void m_ping(eng_session *s, json_object *params, mcp_answer *out)
{
	(void)params;
	mcp_answer_result(out, json_object_new_object());
}

static void m_set_level(eng_session *s, json_object *params, mcp_answer *out)
{
	int level = mcp_log_level_from_name(mcp_get_str(params, "level"));
	if (level < 0) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: level must be one of debug, info, "
				 "notice, warning, error, critical, alert, emergency",
				 NULL);
		return;
	}
	atomic_store(&mcp_sess_of(s)->log_level, level);
	mcp_answer_result(out, json_object_new_object());
}

/* ---- paged lists (their cursors: cursor.c) ---------------------------- */

struct list_filter {
	mcp_server *srv;
	const mcp_principal *who;
	int kind;
};

static int list_visible(mcp_entry *e, void *arg)
{
	struct list_filter *f = arg;
	/* A skill's supporting files are reached through its entry. */
	if (f->kind == MCP_ITEM_RESOURCE && ((mcp_resource_entry *)e)->unlisted)
		return 0;
	return mcp_authz_visible(f->srv, f->kind, e->key, f->who);
}

static void list_page_view(eng_session *s, json_object *params, mcp_answer *out,
			   const char *list, const char *key, mcp_registry *r,
			   json_object *(*describe)(mcp_entry *e, int rev), const mcp_view *v,
			   const char *method)
{
	mcp_sess *ms = mcp_sess_of(s);
	int rev = v ? v->rev : ms->rev;
	size_t offset = 0;
	json_object *jc = mcp_get(params, "cursor");
	if (jc && (!json_object_is_type(jc, json_type_string) ||
		   mcp_parse_cursor(ms->srv, json_object_get_string(jc), list, &offset) != 0)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: unknown cursor", NULL);
		return;
	}
	size_t total = 0, page = (size_t)ms->srv->page_size, next = 0;
	mcp_server *srv = ms->srv;
	mcp_principal *who = mcp_authz_current(ms);
	json_object *items;
	if (mcp_authz_filters(srv, who) || (r == &srv->resources && srv->nskills)) {
		/* Only what the caller's scopes reach (and, for resources,
		 * what is listed); a page may then hold fewer items, and the
		 * cursor continues after the last item looked at. */
		struct list_filter f = { srv, who,
					 r == &srv->tools	? MCP_ITEM_TOOL
					 : r == &srv->resources ? MCP_ITEM_RESOURCE
					 : r == &srv->templates ? MCP_ITEM_TEMPLATE
								: MCP_ITEM_PROMPT };
		items = mcp_registry_page_if(srv, r, offset, page, describe, rev, list_visible, &f,
					     &next);
	} else {
		items = mcp_registry_page(srv, r, offset, page, describe, rev, &total);
		next = offset + page < total ? offset + page : 0;
	}
	if (!items) {
		mcp_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	int bad = 0;
	json_object *res = json_object_new_object();
	eng_obj_set(res, key, items, &bad);
	if (next) {
		char *cursor = mcp_make_cursor(ms->srv, list, next);
		eng_obj_set(res, "nextCursor", cursor ? json_object_new_string(cursor) : NULL, &bad);
		free(cursor);
	}
	if (!res || bad) {
		json_object_put(res);
		mcp_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	if (v && v->modern)
		mcp_modern_decorate(ms->srv, method, res);
	mcp_answer_result(out, res);
}

static void list_page(eng_session *s, json_object *params, mcp_answer *out, const char *list,
		      const char *key, mcp_registry *r,
		      json_object *(*describe)(mcp_entry *e, int rev))
{
	list_page_view(s, params, out, list, key, r, describe, NULL, NULL);
}

static void m_tools_list(eng_session *s, json_object *params, mcp_answer *out)
{
	list_page(s, params, out, "tools", "tools", &mcp_sess_of(s)->srv->tools, mcp_tool_describe);
}

static void m_resources_list(eng_session *s, json_object *params, mcp_answer *out)
{
	list_page(s, params, out, "resources", "resources", &mcp_sess_of(s)->srv->resources,
		  mcp_resource_describe);
}

static void m_templates_list(eng_session *s, json_object *params, mcp_answer *out)
{
	list_page(s, params, out, "templates", "resourceTemplates", &mcp_sess_of(s)->srv->templates,
		  mcp_resource_describe);
}

static void m_prompts_list(eng_session *s, json_object *params, mcp_answer *out)
{
	list_page(s, params, out, "prompts", "prompts", &mcp_sess_of(s)->srv->prompts,
		  mcp_prompt_describe);
}

/* ---- resource subscriptions -------------------------------------------- */

static void not_found(mcp_answer *out, const char *uri)
{
	json_object *data = json_object_new_object();
	eng_obj_add(data, "uri", json_object_new_string(uri));
	mcp_answer_error(out, MCP_JSONRPC_RESOURCE_NOT_FOUND, "Resource not found",
			 data);
}

/* An RFC 3986 URI as far as its characters go: a scheme, a colon, and only
 * unreserved, reserved or percent-encoded characters.  Anything else cannot
 * name a resource and would make the answer invalid. */
static int uri_valid(const char *uri)
{
	const char *p = uri;
	if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
		return 0;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '+' || *p == '-' || *p == '.')
		p++;
	if (*p != ':')
		return 0;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~:/?#[]@!$&'()*+,;=%{}", c))
			continue;
		return 0;
	}
	return 1;
}

static int resource_exists(mcp_server *srv, const char *uri)
{
	mcp_entry *e = mcp_registry_find(srv, &srv->resources, uri);
	if (e) {
		mcp_entry_unref(e);
		return 1;
	}
	json_object *vars;
	mcp_resource_entry *t = mcp_template_match(srv, uri, &vars);
	json_object_put(vars);
	if (t)
		mcp_entry_unref(&t->base);
	return t != NULL;
}

static void m_subscribe(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_sess *ms = mcp_sess_of(s);
	const char *uri = mcp_get_str(params, "uri");
	if (!uri || !uri_valid(uri)) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: uri must be a URI string", NULL);
		return;
	}
	if (!resource_exists(ms->srv, uri)) {
		not_found(out, uri);
		return;
	}
	pthread_mutex_lock(&ms->mu);
	int have = 0;
	for (size_t i = 0; i < ms->nsubs && !have; i++)
		have = strcmp(ms->subs[i], uri) == 0;
	int rc = MCP_OK;
	if (!have) {
		if (ms->nsubs == ms->subs_cap) {
			size_t cap = ms->subs_cap ? ms->subs_cap * 2 : 8;
			char **n = realloc(ms->subs, cap * sizeof *n);
			if (n) {
				ms->subs = n;
				ms->subs_cap = cap;
			}
		}
		char *d = ms->nsubs < ms->subs_cap ? strdup(uri) : NULL;
		if (d)
			ms->subs[ms->nsubs++] = d;
		else
			rc = MCP_ENOMEM;
	}
	pthread_mutex_unlock(&ms->mu);
	if (rc != MCP_OK)
		mcp_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	else
		mcp_answer_result(out, json_object_new_object());
}

static void m_unsubscribe(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_sess *ms = mcp_sess_of(s);
	const char *uri = mcp_get_str(params, "uri");
	if (!uri) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: uri (string) is required", NULL);
		return;
	}
	pthread_mutex_lock(&ms->mu);
	for (size_t i = 0; i < ms->nsubs; i++) {
		if (strcmp(ms->subs[i], uri) == 0) {
			free(ms->subs[i]);
			ms->subs[i] = ms->subs[--ms->nsubs];
			break;
		}
	}
	pthread_mutex_unlock(&ms->mu);
	mcp_answer_result(out, json_object_new_object());
}

/* ---- subscriptions/listen (2026-07-28) ------------------------------------
 *
 * A listen request stays in flight, held by the engine without a worker,
 * until its client cancels it (nothing more is written), the connection
 * closes (no answer) or the server shuts down (the listen result ends it).
 * The change events that legacy sessions get as plain notifications reach
 * each listen stream whose filter asked for them, tagged with its id. */

static void view_free(void *p);

typedef struct mcp_listen {
	struct mcp_listen *next;     /* srv->listens, under srv->sess_mu */
	eng_req *r;                  /* counted */
	mcp_server *srv;
	unsigned kinds;              /* MCP_KIND_* agreed */
	json_object *uris;           /* array of resource URIs agreed */
	json_object *task_ids;       /* array of task ids agreed (tasks extension) */
} mcp_listen;

/* Sends `method` (params taken, may be NULL) on a listen stream, tagged.
 * Never blocks: the engine's queue takes it. */
static void listen_emit(eng_req *r, const char *method, json_object *params)
{
	if (!params)
		params = json_object_new_object();
	json_object *meta = json_object_new_object();
	eng_obj_add(meta, "io.modelcontextprotocol/subscriptionId",
			       json_object_get(r->id));
	eng_obj_add(params, "_meta", meta);
	json_object *n = mcp_notification(method, params);
	size_t len;
	char *line = atomic_load(&r->outcome) == ENG_OUT_NONE ? eng_json_dup(n, &len) : NULL;
	json_object_put(n);
	if (line)
		eng_writer_push(&r->sess->writer, line, len, r, 0);
}

/* The listen request's token fired: peer cancel, close or shutdown. */
static void listen_end(mcp_cancel_reason reason, void *arg)
{
	mcp_listen *l = arg;
	mcp_server *srv = l->srv;
	pthread_mutex_lock(&srv->sess_mu);
	for (mcp_listen **pp = &srv->listens; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			srv->nlistens--;
			break;
		}
	pthread_mutex_unlock(&srv->sess_mu);
	if (reason == MCP_CANCEL_SHUTDOWN) {
		json_object *res = json_object_new_object();
		json_object *meta = json_object_new_object();
		eng_obj_add(meta, "io.modelcontextprotocol/subscriptionId",
				       json_object_get(l->r->id));
		eng_obj_add(res, "_meta", meta);
		mcp_modern_decorate(srv, "subscriptions/listen", res);
		eng_req_finish_result(l->r, res);
	} else {
		eng_req_finish_silent(l->r);
	}
	eng_req_unref(l->r);
	json_object_put(l->uris);
	json_object_put(l->task_ids);
	free(l);
}

static int filter_flag(json_object *filter, const char *key)
{
	json_object *v = mcp_get(filter, key);
	return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* A listen request's agreement, before its stream opens: the filter
 * checked, what the server can honour worked out, and a place among the
 * MCP_MAX_LISTENS taken.  NULL with *out holding the error otherwise. */
static mcp_listen *listen_new(eng_session *s, json_object *params, const mcp_view *v,
			      json_object **agreed_out, mcp_answer *out)
{
	mcp_server *srv = mcp_sess_of(s)->srv;
	json_object *filter = mcp_get(params, "notifications");
	json_object *uris = mcp_get(filter, "resourceSubscriptions");
	json_object *tids = mcp_get(filter, "taskIds");
	if (!json_object_is_type(filter, json_type_object) ||
	    (uris && !json_object_is_type(uris, json_type_array)) ||
	    (tids && !json_object_is_type(tids, json_type_array))) {
		mcp_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: notifications must be a subscription "
				 "filter object",
				 NULL);
		return NULL;
	}
	/* Task status needs the tasks extension on this very request
	 * (SEP-2663). */
	if (tids && !mcp_tasks_declared(v ? v->caps : NULL)) {
		mcp_answer_error(out, MCP_JSONRPC_MISSING_CAPABILITY,
				 "Missing required client capability", mcp_tasks_required_data());
		return NULL;
	}
	/* What the server can honour: a kind it serves, URIs it could name,
	 * tasks the caller may reach. */
	json_object *agreed_tids = NULL;
	if (tids) {
		agreed_tids = json_object_new_array();
		const mcp_principal *who = mcp_authz_current(mcp_sess_of(s));
		for (size_t i = 0; agreed_tids && i < json_object_array_length(tids); i++) {
			json_object *t = json_object_array_get_idx(tids, i);
			if (json_object_is_type(t, json_type_string) &&
			    mcp_task_known(srv, json_object_get_string(t), who))
				eng_arr_add(agreed_tids, json_object_get(t));
		}
	}
	mcp_listen *l = calloc(1, sizeof *l);
	json_object *agreed = json_object_new_object();
	json_object *agreed_uris = json_object_new_array();
	if (!l || !agreed || !agreed_uris || (tids && !agreed_tids)) {
		free(l);
		json_object_put(agreed);
		json_object_put(agreed_uris);
		json_object_put(agreed_tids);
		mcp_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return NULL;
	}
	static const struct {
		const char *key;
		unsigned kind;
	} kinds[] = { { "toolsListChanged", MCP_KIND_TOOLS },
		      { "resourcesListChanged", MCP_KIND_RESOURCES },
		      { "promptsListChanged", MCP_KIND_PROMPTS } };
	unsigned offered = 0;
	json_object_put(build_capabilities(srv, MCP_REV_2026_07_28, &offered));
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (filter_flag(filter, kinds[i].key) && (offered & kinds[i].kind)) {
			l->kinds |= kinds[i].kind;
			eng_obj_add(agreed, kinds[i].key, json_object_new_boolean(1));
		}
	size_t nu = uris ? json_object_array_length(uris) : 0;
	for (size_t i = 0; i < nu; i++) {
		json_object *u = json_object_array_get_idx(uris, i);
		if (json_object_is_type(u, json_type_string) && uri_valid(json_object_get_string(u)))
			eng_arr_add(agreed_uris, json_object_get(u));
	}
	if (json_object_array_length(agreed_uris) > 0)
		eng_obj_add(agreed, "resourceSubscriptions", json_object_get(agreed_uris));
	if (agreed_tids)
		eng_obj_add(agreed, "taskIds", json_object_get(agreed_tids));
	l->uris = agreed_uris;
	l->task_ids = agreed_tids;
	l->srv = srv;

	pthread_mutex_lock(&srv->sess_mu);
	int full = srv->nlistens >= MCP_MAX_LISTENS;
	if (!full)
		srv->nlistens++; /* the place is taken before the request is held */
	pthread_mutex_unlock(&srv->sess_mu);
	if (full) {
		json_object_put(agreed);
		json_object_put(agreed_uris);
		json_object_put(agreed_tids);
		free(l);
		mcp_answer_error(out, MCP_JSONRPC_SERVER_BUSY,
				 "Server busy: too many open subscriptions", NULL);
		return NULL;
	}
	*agreed_out = agreed;
	return l;
}

/* Gives back a listen's place when its request could not be held. */
static void listen_drop(mcp_listen *l, json_object *agreed)
{
	pthread_mutex_lock(&l->srv->sess_mu);
	l->srv->nlistens--;
	pthread_mutex_unlock(&l->srv->sess_mu);
	json_object_put(agreed);
	json_object_put(l->uris);
	json_object_put(l->task_ids);
	free(l);
}

/* Opens the stream of `l` on its request `r` (a counted reference, which
 * the listen keeps): the acknowledgement, then the events. */
static void listen_start(mcp_listen *l, eng_req *r, json_object *agreed)
{
	mcp_server *srv = l->srv;
	l->r = r;
	/* The acknowledgement is the first message of the stream: it is
	 * queued under the lock that lists the stream, so a change event
	 * (queued by whoever finds the stream in the list) comes after it,
	 * and none from the moment it is listed is missed. */
	json_object *ack = json_object_new_object();
	eng_obj_add(ack, "notifications", agreed);
	pthread_mutex_lock(&srv->sess_mu);
	l->next = srv->listens;
	srv->listens = l;
	listen_emit(r, "notifications/subscriptions/acknowledged", ack);
	pthread_mutex_unlock(&srv->sess_mu);
	/* Runs at once when the token already fired. */
	if (eng_token_on_cancel(&r->token, listen_end, l, NULL) != MCP_OK) {
		listen_end(MCP_CANCEL_SHUTDOWN, l);
	}
}

/* subscriptions/listen on the reader: the request is held in flight
 * without a worker until its stream ends. */
static void m_listen(eng_session *s, json_object *msg, json_object *id, json_object *params,
		     mcp_view *v)
{
	mcp_answer a = { 0 };
	json_object *agreed = NULL;
	mcp_listen *l = listen_new(s, params, v, &agreed, &a);
	if (!l) {
		view_free(v);
		mcp_answer_send(s, id, &a);
		json_object_put(msg);
		return;
	}
	eng_req *r = eng_session_hold(s, msg, id, v, view_free);
	if (!r) {
		listen_drop(l, agreed);
		return;
	}
	listen_start(l, r, agreed);
}

/* The listen streams that want an event, each counted, for delivery
 * outside the lock. */
static eng_req **listeners(mcp_server *srv, unsigned kind, const char *uri, size_t *n)
{
	*n = 0;
	pthread_mutex_lock(&srv->sess_mu);
	eng_req **out = srv->nlistens ? malloc(srv->nlistens * sizeof *out) : NULL;
	for (mcp_listen *l = srv->listens; out && l; l = l->next) {
		int want = kind ? (l->kinds & kind) != 0 : 0;
		for (size_t i = 0; uri && !want && i < json_object_array_length(l->uris); i++)
			want = strcmp(json_object_get_string(json_object_array_get_idx(l->uris, i)),
				      uri) == 0;
		if (want) {
			eng_req_ref(l->r);
			out[(*n)++] = l->r;
		}
	}
	pthread_mutex_unlock(&srv->sess_mu);
	return out;
}

void mcp_listen_task_status(mcp_server *srv, const char *task_id, json_object *params)
{
	size_t n = 0;
	pthread_mutex_lock(&srv->sess_mu);
	eng_req **out = srv->nlistens ? malloc(srv->nlistens * sizeof *out) : NULL;
	for (mcp_listen *l = srv->listens; out && l; l = l->next) {
		int want = 0;
		size_t nt = l->task_ids ? json_object_array_length(l->task_ids) : 0;
		for (size_t i = 0; !want && i < nt; i++)
			want = strcmp(json_object_get_string(
					      json_object_array_get_idx(l->task_ids, i)),
				      task_id) == 0;
		if (want) {
			eng_req_ref(l->r);
			out[n++] = l->r;
		}
	}
	pthread_mutex_unlock(&srv->sess_mu);
	for (size_t i = 0; i < n; i++) {
		json_object *p = i + 1 < n ? mcp_json_copy(params) : json_object_get(params);
		if (p)
			listen_emit(out[i], "notifications/tasks", p);
		eng_req_unref(out[i]);
	}
	free(out);
	json_object_put(params);
}

void mcp_notify_list_changed(mcp_server *srv, int kind)
{
	const char *method = kind == MCP_KIND_TOOLS	  ? "notifications/tools/list_changed"
			     : kind == MCP_KIND_RESOURCES ? "notifications/resources/list_changed"
							  : "notifications/prompts/list_changed";
	/* Built once for every session (thousands of HTTP streams may wait
	 * for it). */
	json_object *note = mcp_notification(method, NULL);
	size_t len = 0;
	const char *text = note ? eng_json_text(note, &len) : NULL;
	pthread_mutex_lock(&srv->sess_mu);
	for (mcp_sess *ms = srv->sessions; text && ms; ms = ms->next)
		if (atomic_load(&ms->state) == MCP_SESS_READY && (ms->caps_sent & (unsigned)kind))
			eng_session_notify_text(ms->es, text, len);
	pthread_mutex_unlock(&srv->sess_mu);
	json_object_put(note);
	size_t n;
	eng_req **ls = listeners(srv, (unsigned)kind, NULL, &n);
	for (size_t i = 0; i < n; i++) {
		listen_emit(ls[i], method, NULL);
		eng_req_unref(ls[i]);
	}
	free(ls);
}

MCP_EXTERN int mcp_server_resource_updated(mcp_server *srv, const char *uri)
{
	if (!srv || !uri)
		return MCP_EINVAL;
	pthread_mutex_lock(&srv->sess_mu);
	for (mcp_sess *ms = srv->sessions; ms; ms = ms->next) {
		if (atomic_load(&ms->state) != MCP_SESS_READY)
			continue;
		int subscribed = 0;
		pthread_mutex_lock(&ms->mu);
		for (size_t i = 0; i < ms->nsubs && !subscribed; i++)
			subscribed = strcmp(ms->subs[i], uri) == 0;
		pthread_mutex_unlock(&ms->mu);
		if (subscribed) {
			json_object *p = json_object_new_object();
			eng_obj_add(p, "uri", json_object_new_string(uri));
			eng_session_notify(ms->es, mcp_notification("notifications/resources/updated", p));
		}
	}
	pthread_mutex_unlock(&srv->sess_mu);
	size_t n;
	eng_req **ls = listeners(srv, 0, uri, &n);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_new_object();
		eng_obj_add(p, "uri", json_object_new_string(uri));
		listen_emit(ls[i], "notifications/resources/updated", p);
		eng_req_unref(ls[i]);
	}
	free(ls);
	return MCP_OK;
}

/* ---- pooled methods (worker threads) ----------------------------------- */

/* One call of a handler, for mcp_ctx_run_rounds (which may call it again). */
struct tool_run {
	mcp_tool_entry *tool;
	mcp_ctx *ctx;
	json_object *args;
	mcp_result *res;
	int rev;
};

static int tool_invoke(void *arg)
{
	struct tool_run *t = arg;
	return t->tool->fn(t->ctx, t->args, t->res, t->tool->user);
}

static void tool_reset(void *arg)
{
	struct tool_run *t = arg;
	mcp_result_clear(t->res);
	mcp_result_init(t->res, t->rev);
}

static void run_tools_call(eng_req *r)
{
	mcp_sess *ms = mcp_sess_of(r->sess);
	int rev = mcp_req_rev(r);
	json_object *params = mcp_get(r->msg, "params");
	const char *name = mcp_get_str(params, "name");
	json_object *args = mcp_get(params, "arguments");

	if (!name) {
		mcp_finish_invalid(r, "Invalid params: tools/call needs a tool name", NULL);
		return;
	}
	if (args && !json_object_is_type(args, json_type_object)) {
		mcp_finish_invalid(r, "Invalid params: arguments must be an object", NULL);
		return;
	}
	mcp_tool_entry *tool = (mcp_tool_entry *)mcp_registry_find(ms->srv, &ms->srv->tools, name);
	if (!tool) {
		char msg[160];
		snprintf(msg, sizeof msg, "Unknown tool: %.100s", name);
		mcp_finish_invalid(r, msg, mcp_data_str("name", name));
		return;
	}
	json_object *own_args = NULL;
	if (!args)
		args = own_args = json_object_new_object();
	/* The arguments come from a model: checked before any handler (or
	 * task) sees them, and a mismatch is a tool error (SEP-1303). */
	int oom = !args;
	json_object *refusal = args ? mcp_tool_check_args(tool, args, rev, &oom) : NULL;
	if (refusal || oom) {
		if (refusal && mcp_req_modern(r))
			mcp_modern_decorate(ms->srv, "tools/call", refusal);
		if (refusal)
			eng_req_finish_result(r, refusal);
		else
			eng_req_finish_error(r, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}

	/* Tasks.  2025-11-25: the client asks with params.task, per the
	 * tool's taskSupport.  2026-07-28 (SEP-2663): the server decides, for
	 * requests that declare the extension; a legacy params.task is
	 * ignored, and a tool that only runs as a task is refused to a request
	 * that cannot take one. */
	int modern = mcp_req_modern(r);
	int declared = modern && mcp_tasks_declared(((const mcp_view *)r->proto)->caps);
	json_object *task = rev >= MCP_REV_2025_11_25 && !modern ? mcp_get(params, "task") : NULL;
	if (modern && !declared && tool->task_support == MCP_TASKS_REQUIRED) {
		eng_req_finish_error(r, MCP_JSONRPC_MISSING_CAPABILITY,
				     "Missing required client capability: this tool runs only as a "
				     "task (io.modelcontextprotocol/tasks)",
				     mcp_tasks_required_data());
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}
	if (!modern && ((task && tool->task_support == MCP_TASKS_FORBIDDEN) ||
			(!task && tool->task_support == MCP_TASKS_REQUIRED &&
			 rev >= MCP_REV_2025_11_25))) {
		eng_req_finish_error(r, MCP_JSONRPC_METHOD_NOT_FOUND,
				     task ? "This tool cannot run as a task"
					  : "This tool runs only as a task (send params.task)",
				     mcp_data_str("name", name));
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}
	/* Made a task before the handler runs, unless the handler decides
	 * when (MCP_TOOL_TASK_BY_HANDLER: after gathering input, say). */
	int up_front = task || (declared && tool->task_support != MCP_TASKS_FORBIDDEN &&
				!(tool->flags & MCP_TOOL_TASK_BY_HANDLER));
	if (task && !json_object_is_type(task, json_type_object)) {
		mcp_finish_invalid(r, "Invalid params: task must be an object with an optional "
				  "non-negative integer ttl",
			       NULL);
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}
	mcp_ctx ctx;
	mcp_ctx_begin(&ctx, r, params);
	ctx.tool = tool;
	if (mcp_ctx_admit(&ctx, MCP_ITEM_TOOL, name)) {
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}
	const char *why = NULL;
	int resumed = mcp_mrtr_begin(&ctx, params, "tools/call", name, args, &why);
	if (resumed != 0) {
		if (resumed < 0)
			mcp_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS, why, NULL);
		mcp_mrtr_end(&ctx);
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}
	int rc = up_front ? mcp_task_start(&ctx, task) : MCP_OK;
	if (rc != MCP_OK) {
		if (rc == MCP_EINVAL)
			mcp_ctx_end(&ctx, rc, NULL, MCP_JSONRPC_INVALID_PARAMS,
				    "Invalid params: task must be an object with an optional "
				    "non-negative integer ttl",
				    NULL);
		else if (rc == MCP_EBUSY)
			mcp_ctx_end(&ctx, rc, NULL, MCP_JSONRPC_SERVER_BUSY,
				    "Server busy: too many tasks", NULL);
		else
			mcp_ctx_end(&ctx, rc == MCP_ECLOSED ? MCP_ECANCELED : rc, NULL, 0, NULL,
				    NULL);
		mcp_mrtr_end(&ctx);
		json_object_put(own_args);
		mcp_entry_unref(&tool->base);
		return;
	}
	mcp_result res;
	mcp_result_init(&res, rev);
	struct tool_run tr = { tool, &ctx, args, &res, rev };
	rc = mcp_ctx_run_rounds(&ctx, tool_invoke, tool_reset, &tr);
	if (ctx.task && modern)
		rc = mcp_task_rounds(&ctx, rc, tool_invoke, tool_reset, &tr);
	json_object *result = NULL;
	if (rc == MCP_EINPUT && !ctx.task && (result = mcp_mrtr_input_required(&ctx)))
		rc = MCP_OK;
	else
		rc = mcp_tool_outcome(&ctx, tool, &res, rc, &result);
	if (result)
		mcp_task_decorate(&ctx, result);
	mcp_ctx_end(&ctx, rc, result, res.err_code, res.err_message, res.err_data);
	res.err_data = NULL;
	mcp_result_clear(&res);
	mcp_mrtr_end(&ctx);
	json_object_put(own_args);
	mcp_entry_unref(&tool->base);
}

struct read_run {
	mcp_resource_entry *res;
	mcp_ctx *ctx;
	const char *uri;
	json_object *vars;
	mcp_contents *out;
};

static int read_invoke(void *arg)
{
	struct read_run *t = arg;
	return t->res->read(t->ctx, t->uri, t->vars, t->out, t->res->user);
}

static void read_reset(void *arg)
{
	struct read_run *t = arg;
	json_object_put(t->out->items);
	mcp_rpc_error_clear(&t->out->err);
	t->out->items = json_object_new_array();
}

static void run_resources_read(eng_req *r)
{
	mcp_sess *ms = mcp_sess_of(r->sess);
	mcp_server *srv = ms->srv;
	json_object *params = mcp_get(r->msg, "params");
	const char *uri = mcp_get_str(params, "uri");
	if (!uri || !uri_valid(uri)) {
		mcp_finish_invalid(r, "Invalid params: uri must be a URI string", NULL);
		return;
	}
	json_object *vars = NULL;
	mcp_resource_entry *res = (mcp_resource_entry *)mcp_registry_find(srv, &srv->resources, uri);
	if (res)
		vars = json_object_new_object();
	else
		res = mcp_template_match(srv, uri, &vars);
	/* 2026-07-28 standardizes on -32602 for an unknown resource. */
	int not_found_code = mcp_req_modern(r) ? MCP_JSONRPC_INVALID_PARAMS
					   : MCP_JSONRPC_RESOURCE_NOT_FOUND;
	if (!res) {
		eng_req_finish_error(r, not_found_code, "Resource not found", mcp_data_str("uri", uri));
		return;
	}
	mcp_ctx ctx;
	mcp_ctx_begin(&ctx, r, params);
	ctx.target = uri; /* the URI read, not the template it matched */
	if (mcp_ctx_admit(&ctx, res->is_template ? MCP_ITEM_TEMPLATE : MCP_ITEM_RESOURCE,
			  res->base.key)) {
		json_object_put(vars);
		mcp_entry_unref(&res->base);
		return;
	}
	mcp_contents out = { .items = json_object_new_array() };
	const char *why = NULL;
	int resumed = mcp_mrtr_begin(&ctx, params, "resources/read", uri, NULL, &why);
	if (resumed != 0) {
		if (resumed < 0)
			mcp_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS, why, NULL);
		mcp_mrtr_end(&ctx);
		json_object_put(out.items);
		json_object_put(vars);
		mcp_entry_unref(&res->base);
		return;
	}
	struct read_run rr = { res, &ctx, uri, vars, &out };
	int rc = out.items ? mcp_ctx_run_rounds(&ctx, read_invoke, read_reset, &rr) : MCP_ENOMEM;
	json_object *result = NULL;
	if (rc == MCP_EINPUT && (result = mcp_mrtr_input_required(&ctx))) {
		rc = MCP_OK;
	} else if (rc == MCP_OK) {
		result = json_object_new_object();
		eng_obj_add(result, "contents", out.items);
		out.items = NULL;
	}
	if (rc == MCP_ENOENT && !out.err.code)
		mcp_ctx_end(&ctx, rc, NULL, not_found_code, "Resource not found",
			    mcp_data_str("uri", uri));
	else
		mcp_ctx_end(&ctx, rc, result, out.err.code, out.err.message, out.err.data);
	out.err.data = NULL; /* taken by mcp_ctx_end */
	mcp_rpc_error_clear(&out.err);
	mcp_mrtr_end(&ctx);
	json_object_put(out.items);
	json_object_put(vars);
	mcp_entry_unref(&res->base);
}

struct prompt_run {
	mcp_prompt_entry *p;
	mcp_ctx *ctx;
	json_object *args;
	mcp_prompt_result *out;
};

static int prompt_invoke(void *arg)
{
	struct prompt_run *t = arg;
	return t->p->get(t->ctx, t->args, t->out, t->p->user);
}

static void prompt_reset(void *arg)
{
	struct prompt_run *t = arg;
	json_object_put(t->out->messages);
	t->out->messages = NULL;
	free(t->out->description);
	t->out->description = NULL;
	mcp_rpc_error_clear(&t->out->err);
}

static void run_prompts_get(eng_req *r)
{
	mcp_sess *ms = mcp_sess_of(r->sess);
	json_object *params = mcp_get(r->msg, "params");
	const char *name = mcp_get_str(params, "name");
	json_object *args = mcp_get(params, "arguments");
	if (!name) {
		mcp_finish_invalid(r, "Invalid params: prompts/get needs a prompt name", NULL);
		return;
	}
	if (args && !json_object_is_type(args, json_type_object)) {
		mcp_finish_invalid(r, "Invalid params: arguments must be an object", NULL);
		return;
	}
	mcp_prompt_entry *p =
		(mcp_prompt_entry *)mcp_registry_find(ms->srv, &ms->srv->prompts, name);
	if (!p) {
		char msg[160];
		snprintf(msg, sizeof msg, "Unknown prompt: %.100s", name);
		mcp_finish_invalid(r, msg, mcp_data_str("name", name));
		return;
	}
	json_object *own_args = NULL;
	if (!args)
		args = own_args = json_object_new_object();
	/* Prompt arguments are strings, the required ones present; prompts/get
	 * has no tool error, so a mismatch is -32602 naming path and rule. */
	jschema_error err;
	int check = args ? jschema_validate(p->arg_check, args, &err) : JSCHEMA_ENOMEM;
	if (check != JSCHEMA_OK) {
		if (check == JSCHEMA_ENOMEM) {
			eng_req_finish_error(r, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		} else {
			char msg[JSCHEMA_MSG_MAX + 32];
			snprintf(msg, sizeof msg, "Invalid params: %s", err.message);
			json_object *data = mcp_data_str("path", err.instance);
			eng_obj_add(data, "rule", json_object_new_string(err.keyword));
			mcp_finish_invalid(r, msg, data);
		}
		json_object_put(own_args);
		mcp_entry_unref(&p->base);
		return;
	}
	mcp_ctx ctx;
	mcp_ctx_begin(&ctx, r, params);
	if (mcp_ctx_admit(&ctx, MCP_ITEM_PROMPT, name)) {
		json_object_put(own_args);
		mcp_entry_unref(&p->base);
		return;
	}
	mcp_prompt_result out = { .rev = mcp_req_rev(r) };
	const char *why = NULL;
	int rc;
	struct prompt_run pr = { p, &ctx, args, &out };
	int resumed = mcp_mrtr_begin(&ctx, params, "prompts/get", name, args, &why);
	if (resumed < 0)
		rc = MCP_EINVAL;
	else if (resumed == 0)
		rc = mcp_ctx_run_rounds(&ctx, prompt_invoke, prompt_reset, &pr);
	else
		rc = MCP_OK; /* answered by the parked handler */
	json_object *result = NULL;
	if (resumed > 0) {
		/* nothing more to answer */
	} else if (why) {
		out.err.code = MCP_JSONRPC_INVALID_PARAMS;
		out.err.message = strdup(why);
	} else if (rc == MCP_EINPUT && (result = mcp_mrtr_input_required(&ctx))) {
		rc = MCP_OK;
	} else if (rc == MCP_OK) {
		result = json_object_new_object();
		mcp_json_add_str(result, "description", out.description);
		eng_obj_add(result, "messages",
				       out.messages ? out.messages : json_object_new_array());
		out.messages = NULL;
	}
	if (resumed <= 0)
		mcp_ctx_end(&ctx, rc, result, out.err.code, out.err.message, out.err.data);
	out.err.data = NULL; /* taken by mcp_ctx_end */
	mcp_rpc_error_clear(&out.err);
	mcp_mrtr_end(&ctx);
	json_object_put(out.messages);
	free(out.description);
	json_object_put(own_args);
	mcp_entry_unref(&p->base);
}

static void run_complete(eng_req *r)
{
	mcp_sess *ms = mcp_sess_of(r->sess);
	mcp_server *srv = ms->srv;
	json_object *params = mcp_get(r->msg, "params");
	json_object *ref = mcp_get(params, "ref");
	json_object *arg = mcp_get(params, "argument");
	const char *type = mcp_get_str(ref, "type");
	const char *arg_name = mcp_get_str(arg, "name");
	const char *value = mcp_get_str(arg, "value");
	if (!type || !arg_name || !value) {
		mcp_finish_invalid(r, "Invalid params: completion/complete needs ref.type, "
				  "argument.name and argument.value",
			       NULL);
		return;
	}
	mcp_entry *e = NULL;
	mcp_complete_fn fn = NULL;
	void *user = NULL;
	if (strcmp(type, "ref/prompt") == 0 && mcp_get_str(ref, "name")) {
		mcp_prompt_entry *p =
			(mcp_prompt_entry *)mcp_registry_find(srv, &srv->prompts, mcp_get_str(ref, "name"));
		if (p) {
			e = &p->base;
			fn = p->complete;
			user = p->user;
		}
	} else if (strcmp(type, "ref/resource") == 0 && mcp_get_str(ref, "uri")) {
		mcp_resource_entry *t = (mcp_resource_entry *)mcp_registry_find(
			srv, &srv->templates, mcp_get_str(ref, "uri"));
		if (t) {
			e = &t->base;
			fn = t->complete;
			user = t->user;
		}
	}
	if (!e) {
		mcp_finish_invalid(r, "Invalid params: unknown completion reference", NULL);
		return;
	}
	json_object *context = mcp_get(mcp_get(params, "context"), "arguments");
	json_object *own_ctx = NULL;
	if (!json_object_is_type(context, json_type_object))
		context = own_ctx = json_object_new_object();
	mcp_ctx ctx;
	mcp_ctx_begin(&ctx, r, params);
	if (mcp_ctx_admit(&ctx, strcmp(type, "ref/prompt") == 0 ? MCP_ITEM_PROMPT : MCP_ITEM_TEMPLATE,
			  e->key)) {
		json_object_put(own_ctx);
		mcp_entry_unref(e);
		return;
	}
	mcp_completion out = { .values = json_object_new_array(), .total = -1 };
	int rc = out.values ? MCP_OK : MCP_ENOMEM;
	if (rc == MCP_OK && fn)
		rc = fn(&ctx, arg_name, value, context, &out, user);
	json_object *result = NULL;
	if (rc == MCP_OK) {
		json_object *c = json_object_new_object();
		int64_t total = out.total >= 0 ? out.total : (int64_t)out.added;
		size_t sent = json_object_array_length(out.values);
		eng_obj_add(c, "values", out.values);
		out.values = NULL;
		eng_obj_add(c, "total", json_object_new_int64(total));
		eng_obj_add(c, "hasMore",
				       json_object_new_boolean(out.has_more || (size_t)total > sent));
		result = json_object_new_object();
		eng_obj_add(result, "completion", c);
	}
	mcp_ctx_end(&ctx, rc, result, 0, NULL, NULL);
	json_object_put(out.values);
	json_object_put(own_ctx);
	mcp_entry_unref(e);
}

/* ---- 2026-07-28: stateless requests ---------------------------------------
 *
 * A request whose _meta names its protocol version is served from its own
 * envelope, beside the connection's legacy traffic, through the same
 * handlers: its view (revision, capabilities, log level) travels with it
 * as the engine request's protocol data. */

static const char *const modern_methods[] = {
	"server/discover", "tools/list",	  "tools/call", "resources/list",
	"resources/templates/list", "resources/read", "prompts/list", "prompts/get",
	"completion/complete", "subscriptions/listen", "tasks/get", "tasks/update",
	"tasks/cancel", "skills/list", "skills/get", "resources/directory/read",
};

int mcp_modern_method(const char *method)
{
	for (size_t i = 0; i < sizeof modern_methods / sizeof modern_methods[0]; i++)
		if (strcmp(modern_methods[i], method) == 0)
			return 1;
	return 0;
}

/* The revisions served from a request's own _meta (the 2025 ones are
 * negotiated by initialize, never advertised here). */
static json_object *modern_versions(void)
{
	json_object *a = json_object_new_array();
	for (int i = MCP_REV_LEGACY_COUNT; i < MCP_REV_COUNT; i++)
		eng_arr_add(a, json_object_new_string(mcp_revision_names[i]));
	return a;
}

int mcp_modern_check(const char *method, json_object *params, const char *header_version,
		     const char **message, json_object **data)
{
	*data = NULL;
	json_object *meta = mcp_get(params, "_meta");
	json_object *pv = mcp_get(meta, MCP_META_VERSION);
	json_object *caps = mcp_get(meta, MCP_META_CAPS);
	json_object *level = mcp_get(meta, MCP_META_LOG);
	if (!json_object_is_type(pv, json_type_string) ||
	    !json_object_is_type(caps, json_type_object)) {
		*message = "Invalid params: a request without a session needs _meta with "
			   "\"" MCP_META_VERSION "\" (a string) and \"" MCP_META_CAPS
			   "\" (an object)";
		return MCP_JSONRPC_INVALID_PARAMS;
	}
	const char *version = json_object_get_string(pv);
	if (header_version && strcmp(header_version, version) != 0) {
		*message = "Header mismatch: the MCP-Protocol-Version header must equal "
			   "_meta \"" MCP_META_VERSION "\"";
		return MCP_JSONRPC_HEADER_MISMATCH;
	}
	if (mcp_revision_index(version) < MCP_REV_LEGACY_COUNT) {
		*message = "Unsupported protocol version";
		*data = json_object_new_object();
		eng_obj_add(*data, "supported", modern_versions());
		eng_obj_add(*data, "requested", json_object_new_string(version));
		return MCP_JSONRPC_UNSUPPORTED_VERSION;
	}
	if (level && mcp_log_level_from_name(json_object_is_type(level, json_type_string)
						 ? json_object_get_string(level)
						 : "") < 0) {
		*message = "Invalid params: _meta \"" MCP_META_LOG "\" must be a log level";
		return MCP_JSONRPC_INVALID_PARAMS;
	}
	if (!mcp_modern_method(method)) {
		*message = "Method not found";
		*data = json_object_new_object();
		eng_obj_add(*data, "method", json_object_new_string(method));
		return MCP_JSONRPC_METHOD_NOT_FOUND;
	}
	return 0;
}

static void view_free(void *p)
{
	mcp_view *v = p;
	json_object_put(v->caps);
	free(v);
}

/* The view of a request that passed mcp_modern_check. */
static mcp_view *view_new(json_object *params)
{
	mcp_view *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	json_object *meta = mcp_get(params, "_meta");
	v->modern = 1;
	v->rev = MCP_REV_2026_07_28;
	v->caps = json_object_get(mcp_get(meta, MCP_META_CAPS));
	const char *level = mcp_get_str(meta, MCP_META_LOG);
	v->log_level = level ? mcp_log_level_from_name(level) : -1;
	return v;
}

static void m_discover(eng_session *s, mcp_answer *out)
{
	mcp_server *srv = mcp_sess_of(s)->srv;
	json_object *res = json_object_new_object();
	eng_obj_add(res, "supportedVersions", modern_versions());
	eng_obj_add(res, "capabilities",
			       build_capabilities(srv, MCP_REV_2026_07_28, NULL));
	if (srv->instructions)
		eng_obj_add(res, "instructions",
				       json_object_new_string(srv->instructions));
	mcp_modern_decorate(srv, "server/discover", res);
	mcp_answer_result(out, res);
}

/* The 2026-07-28 methods served without a handler. */
static void modern_inline(eng_session *s, const char *name, json_object *params,
			  const mcp_view *v, mcp_answer *out)
{
	mcp_server *srv = mcp_sess_of(s)->srv;
	if (strcmp(name, "server/discover") == 0)
		m_discover(s, out);
	else if (strncmp(name, "tasks/", 6) == 0)
		mcp_tasks_modern(s, name, params, v, out);
	else if (strcmp(name, "skills/list") == 0)
		mcp_skills_list(s, params, v, out);
	else if (strcmp(name, "skills/get") == 0)
		mcp_skills_get(s, params, v, out);
	else if (strcmp(name, "resources/directory/read") == 0)
		mcp_skills_read_dir(s, params, v, out);
	else if (strcmp(name, "tools/list") == 0)
		list_page_view(s, params, out, "tools", "tools", &srv->tools, mcp_tool_describe, v,
			       name);
	else if (strcmp(name, "resources/list") == 0)
		list_page_view(s, params, out, "resources", "resources", &srv->resources,
			       mcp_resource_describe, v, name);
	else if (strcmp(name, "resources/templates/list") == 0)
		list_page_view(s, params, out, "templates", "resourceTemplates", &srv->templates,
			       mcp_resource_describe, v, name);
	else
		list_page_view(s, params, out, "prompts", "prompts", &srv->prompts,
			       mcp_prompt_describe, v, name);
}

static void run_tools_call(eng_req *r);
static void run_resources_read(eng_req *r);
static void run_prompts_get(eng_req *r);
static void run_complete(eng_req *r);
static void run_hooked(eng_req *r);
static void run_listen_hooked(eng_req *r);

static void modern_request(eng_session *s, json_object *msg, json_object *id,
			   const char *name, json_object *params)
{
	const char *message = NULL;
	json_object *data = NULL;
	int code = mcp_modern_check(name, params, NULL, &message, &data);
	if (code) {
		eng_session_respond_error(s, id, code, message, data);
		json_object_put(msg);
		return;
	}
	void (*run)(eng_req *) = strcmp(name, "tools/call") == 0	? run_tools_call
				 : strcmp(name, "resources/read") == 0 ? run_resources_read
				 : strcmp(name, "prompts/get") == 0	? run_prompts_get
				 : strcmp(name, "completion/complete") == 0 ? run_complete
									     : NULL;
	mcp_view *v = view_new(params);
	if (!v) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		json_object_put(msg);
		return;
	}
	int listen = strcmp(name, "subscriptions/listen") == 0;
	if (!run && mcp_authz_hooked(mcp_sess_of(s)->srv))
		/* Served on a worker, between the request hooks. */
		run = listen ? run_listen_hooked : run_hooked;
	if (run) {
		eng_session_submit(s, msg, id, run, v, view_free);
		return;
	}
	if (listen) {
		m_listen(s, msg, id, params, v);
		return;
	}
	/* Answered on the reader, but still subject to P5. */
	if (eng_session_id_in_flight(s, id)) {
		json_object *d = json_object_new_object();
		eng_obj_add(d, "id", json_object_get(id));
		eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST,
					  "Invalid Request: id is already in flight", d);
	} else {
		mcp_answer a = { 0 };
		modern_inline(s, name, params, v, &a);
		mcp_answer_send(s, id, &a);
	}
	view_free(v);
	json_object_put(msg);
}

/* Skills (SEP-2640) for sessions of the earlier revisions. */
static void m_skills_list(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_skills_list(s, params, NULL, out);
}

static void m_skills_get(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_skills_get(s, params, NULL, out);
}

static void m_read_dir(eng_session *s, json_object *params, mcp_answer *out)
{
	mcp_skills_read_dir(s, params, NULL, out);
}

/* ---- the method table --------------------------------------------------- */

enum {
	M_ANY_STATE = 1, /* allowed before initialize */
};

typedef struct method {
	const char *name;
	inline_fn on_reader;        /* answered on the reader thread */
	void (*on_worker)(eng_req *r);
	int flags;
} method;

static const method methods[] = {
	{ "initialize", m_initialize, NULL, M_ANY_STATE },
	{ "ping", m_ping, NULL, M_ANY_STATE },
	{ "logging/setLevel", m_set_level, NULL, 0 },
	{ "tools/list", m_tools_list, NULL, 0 },
	{ "tools/call", NULL, run_tools_call, 0 },
	{ "resources/list", m_resources_list, NULL, 0 },
	{ "resources/templates/list", m_templates_list, NULL, 0 },
	{ "resources/read", NULL, run_resources_read, 0 },
	{ "resources/subscribe", m_subscribe, NULL, 0 },
	{ "resources/unsubscribe", m_unsubscribe, NULL, 0 },
	{ "prompts/list", m_prompts_list, NULL, 0 },
	{ "prompts/get", NULL, run_prompts_get, 0 },
	{ "completion/complete", NULL, run_complete, 0 },
	{ "tasks/get", mcp_tasks_get, NULL, 0 },
	{ "tasks/list", mcp_tasks_list, NULL, 0 },
	{ "tasks/cancel", mcp_tasks_cancel, NULL, 0 },
	{ "tasks/result", NULL, mcp_tasks_result, 0 },
	{ "skills/list", m_skills_list, NULL, 0 },
	{ "skills/get", m_skills_get, NULL, 0 },
	{ "resources/directory/read", m_read_dir, NULL, 0 },
};

static const method *find_method(const char *name)
{
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

static void on_request(eng_session *s, json_object *msg, json_object *id,
		       const char *method_name, json_object *params)
{
	json_object *meta = mcp_get(params, "_meta");
	if (mcp_sess_of(s)->stateless_only || mcp_get(meta, MCP_META_VERSION) || mcp_get(meta, MCP_META_CAPS)) {
		modern_request(s, msg, id, method_name, params);
		return;
	}
	const method *m = find_method(method_name);
	if (!m) {
		json_object *data = json_object_new_object();
		eng_obj_add(data, "method", json_object_new_string(method_name));
		eng_session_respond_error(s, id, MCP_JSONRPC_METHOD_NOT_FOUND,
					  "Method not found", data);
		json_object_put(msg);
		return;
	}
	if (!(m->flags & M_ANY_STATE) && atomic_load(&mcp_sess_of(s)->state) == MCP_SESS_NEW) {
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_REQUEST,
					  "Invalid Request: the server is not initialized "
					  "(send initialize first)",
					  NULL);
		json_object_put(msg);
		return;
	}
	if (m->on_reader && mcp_authz_hooked(mcp_sess_of(s)->srv)) {
		/* Served on a worker, between the request hooks. */
		eng_session_submit(s, msg, id, run_hooked, NULL, NULL);
		return;
	}
	if (m->on_reader) {
		/* Answered now, but a duplicate of an id in flight is still a
		 * duplicate (P5). */
		if (eng_session_id_in_flight(s, id)) {
			json_object *data = json_object_new_object();
			eng_obj_add(data, "id", json_object_get(id));
			eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST,
						  "Invalid Request: id is already in flight", data);
		} else {
			mcp_answer a = { 0 };
			m->on_reader(s, params, &a);
			mcp_answer_send(s, id, &a);
		}
		json_object_put(msg);
		return;
	}
	eng_session_submit(s, msg, id, m->on_worker, NULL, NULL);
}

/* ---- request hooks around the reader's methods ------------------------------
 *
 * With request hooks installed, the methods otherwise answered on the
 * reader (initialize, ping, setLevel, the lists, subscriptions, tasks/get,
 * list and cancel; server/discover and the lists of 2026-07-28) run on a
 * worker instead, so that the hooks run where handlers do: the reader
 * never waits for application code, a hook that blocks is cancelled like
 * a handler, and a refusal is answered like a handler's.  Without hooks
 * nothing changes: one atomic load per such request decides. */

/* Ends a hooked request with the answer its method gave. */
static void answer_end(mcp_ctx *ctx, mcp_answer *a)
{
	if (a->code)
		mcp_ctx_end(ctx, MCP_EPROTO, NULL, a->code, a->message, a->data);
	else
		mcp_ctx_end(ctx, a->result ? MCP_OK : MCP_ENOMEM, a->result, 0, NULL, NULL);
	*a = (mcp_answer){ 0 };
}

static void run_hooked(eng_req *r)
{
	json_object *params = mcp_get(r->msg, "params");
	const char *name = mcp_get_str(r->msg, "method");
	mcp_ctx ctx;
	mcp_ctx_init(&ctx, r, params);
	if (mcp_ctx_admit(&ctx, -1, NULL))
		return;
	mcp_answer a = { 0 };
	if (mcp_req_modern(r)) {
		modern_inline(r->sess, name, params, r->proto, &a);
	} else {
		const method *m = find_method(name);
		m->on_reader(r->sess, params, &a);
	}
	answer_end(&ctx, &a);
}

/* subscriptions/listen between the hooks: the before-hook may refuse it;
 * once let through, the request is handed from the worker to its stream
 * (eng_req_keep), which ends it later without a worker, and the after-hook
 * runs then with the outcome "streaming" (the stream's end, perhaps hours
 * later and on whichever thread ends it, is not reported). */
static void run_listen_hooked(eng_req *r)
{
	json_object *params = mcp_get(r->msg, "params");
	mcp_ctx ctx;
	mcp_ctx_init(&ctx, r, params);
	if (mcp_ctx_admit(&ctx, -1, NULL))
		return;
	mcp_answer a = { 0 };
	json_object *agreed = NULL;
	mcp_listen *l = listen_new(r->sess, params, r->proto, &agreed, &a);
	if (!l) {
		answer_end(&ctx, &a);
		return;
	}
	eng_req_keep(r);
	eng_req_ref(r);
	mcp_authz_after(&ctx, "streaming", 0);
	listen_start(l, r, agreed);
}

/* A plain request routed from its raw line (no "_meta" in its params, so
 * not a 2026-07-28 request): what on_request would submit, or NULL when
 * on_request must see it. */
static void (*raw_route(eng_session *s, const char *method_name))(eng_req *r)
{
	if (mcp_sess_of(s)->stateless_only)
		return NULL;
	const method *m = find_method(method_name);
	if (!m || m->on_reader || !m->on_worker)
		return NULL;
	if (!(m->flags & M_ANY_STATE) && atomic_load(&mcp_sess_of(s)->state) == MCP_SESS_NEW)
		return NULL;
	return m->on_worker;
}

static void on_notification(eng_session *s, json_object *msg, const char *name,
			    json_object *params)
{
	mcp_sess *ms = mcp_sess_of(s);
	if (strcmp(name, "notifications/cancelled") == 0) {
		eng_session_cancel_peer(s, mcp_get(params, "requestId"));
	} else if (strcmp(name, "notifications/initialized") == 0) {
		int expect = MCP_SESS_INITIALIZING;
		atomic_compare_exchange_strong(&ms->state, &expect, MCP_SESS_READY);
	}
	/* Anything else (roots/list_changed, progress, unknown ones) needs no
	 * action and is never answered. */
	json_object_put(msg);
}

static int batches_allowed(eng_session *s)
{
	mcp_sess *ms = mcp_sess_of(s);
	return atomic_load(&ms->state) != MCP_SESS_NEW && ms->rev == MCP_REV_2025_03_26;
}

static json_object *cancel_notification(int64_t id, const char *reason)
{
	json_object *n = json_object_new_object();
	json_object *p = json_object_new_object();
	eng_obj_add(n, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(n, "method", json_object_new_string("notifications/cancelled"));
	eng_obj_add(p, "requestId", json_object_new_int64(id));
	eng_obj_add(p, "reason", json_object_new_string(reason));
	eng_obj_add(n, "params", p);
	return n;
}

static void on_free(eng_session *s)
{
	mcp_sess *ms = mcp_sess_of(s);
	mcp_tasks_free(ms);
	mcp_sess_free(ms);
}

const eng_proto mcp_protocol = {
	.on_request = on_request,
	.raw_route = raw_route,
	.on_notification = on_notification,
	.batches_allowed = batches_allowed,
	.cancel_notification = cancel_notification,
	.on_free = on_free,
};

