/*
 * listen.c - subscriptions/listen (2026-07-28): what a listen request's
 * filter may have (the kinds of list the server serves, URIs it could
 * name, tasks the caller may reach), its acknowledgement, and holding the
 * request open as its stream (notify.c), on the reader or, with request
 * hooks installed, once the hooks let it through on a worker.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

static int filter_flag(json_object *filter, const char *key)
{
	json_object *v = api_get(filter, key);
	return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* A listen request's agreement, before its stream opens: the filter
 * checked, what the server can honour worked out, and a place among the
 * API_MAX_LISTENS taken.  NULL with *out holding the error otherwise. */
static api_listen *agree(eng_session *s, json_object *params, const api_view *v,
			 json_object **agreed_out, api_answer *out)
{
	mcp_server *srv = api_sess_of(s)->srv;
	json_object *filter = api_get(params, "notifications");
	json_object *uris = api_get(filter, "resourceSubscriptions");
	json_object *tids = api_get(filter, "taskIds");
	if (!json_object_is_type(filter, json_type_object) ||
	    (uris && !json_object_is_type(uris, json_type_array)) ||
	    (tids && !json_object_is_type(tids, json_type_array))) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: notifications must be a subscription "
				 "filter object",
				 NULL);
		return NULL;
	}
	/* Task status needs the tasks extension on this very request
	 * (SEP-2663). */
	if (tids && !api_tasks_declared(v ? v->caps : NULL)) {
		api_answer_error(out, API_JSONRPC_MISSING_CAPABILITY,
				 "Missing required client capability", api_tasks_required_data());
		return NULL;
	}
	/* What the server can honour: a kind it serves, URIs it could name,
	 * tasks the caller may reach. */
	json_object *agreed_tids = NULL;
	if (tids) {
		agreed_tids = json_object_new_array();
		const mcp_principal *who = api_authz_current(api_sess_of(s));
		for (size_t i = 0; agreed_tids && i < json_object_array_length(tids); i++) {
			json_object *t = json_object_array_get_idx(tids, i);
			/* With its length: "id\u0000x" is not the task "id". */
			if (json_object_is_type(t, json_type_string) &&
			    strlen(json_object_get_string(t)) ==
				    (size_t)json_object_get_string_len(t) &&
			    api_task_known(srv, json_object_get_string(t), who))
				eng_arr_add(agreed_tids, json_object_get(t));
		}
	}
	api_listen *l = calloc(1, sizeof *l);
	json_object *agreed = json_object_new_object();
	json_object *agreed_uris = json_object_new_array();
	if (!l || !agreed || !agreed_uris || (tids && !agreed_tids)) {
		free(l);
		json_object_put(agreed);
		json_object_put(agreed_uris);
		json_object_put(agreed_tids);
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return NULL;
	}
	static const struct {
		const char *key;
		unsigned kind;
	} kinds[] = { { "toolsListChanged", API_KIND_TOOLS },
		      { "resourcesListChanged", API_KIND_RESOURCES },
		      { "promptsListChanged", API_KIND_PROMPTS } };
	unsigned offered = 0;
	json_object_put(api_capabilities(srv, API_REV_2026_07_28, &offered));
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (filter_flag(filter, kinds[i].key) && (offered & kinds[i].kind)) {
			l->kinds |= kinds[i].kind;
			eng_obj_add(agreed, kinds[i].key, json_object_new_boolean(1));
		}
	size_t nu = uris ? json_object_array_length(uris) : 0;
	for (size_t i = 0; i < nu; i++) {
		json_object *u = json_object_array_get_idx(uris, i);
		if (json_object_is_type(u, json_type_string) &&
		    strlen(json_object_get_string(u)) == (size_t)json_object_get_string_len(u) &&
		    api_uri_valid(json_object_get_string(u)))
			eng_arr_add(agreed_uris, json_object_get(u));
	}
	if (json_object_array_length(agreed_uris) > 0)
		eng_obj_add(agreed, "resourceSubscriptions", json_object_get(agreed_uris));
	if (agreed_tids)
		eng_obj_add(agreed, "taskIds", json_object_get(agreed_tids));
	l->uris = agreed_uris;
	l->task_ids = agreed_tids;
	l->srv = srv;

	if (!api_listen_reserve(srv)) {
		json_object_put(agreed);
		json_object_put(agreed_uris);
		json_object_put(agreed_tids);
		free(l);
		api_answer_error(out, MCP_JSONRPC_SERVER_BUSY,
				 "Server busy: too many open subscriptions", NULL);
		return NULL;
	}
	*agreed_out = agreed;
	return l;
}

/* subscriptions/listen on the reader: the request is held in flight
 * without a worker until its stream ends. */
void api_listen_hold(eng_session *s, json_object *msg, json_object *id, json_object *params,
		     api_view *v)
{
	api_answer a = { 0 };
	json_object *agreed = NULL;
	api_listen *l = agree(s, params, v, &agreed, &a);
	if (!l) {
		api_view_free(v);
		api_answer_send(s, id, &a);
		json_object_put(msg);
		return;
	}
	eng_req *r = eng_session_hold(s, msg, id, v, api_view_free);
	if (!r) {
		api_listen_drop(l, agreed);
		return;
	}
	api_listen_open(l, r, agreed);
}

/* subscriptions/listen between the hooks: the before-hook may refuse it;
 * once let through, the request is handed from the worker to its stream
 * (eng_req_keep), which ends it later without a worker, and the after-hook
 * runs then with the outcome "streaming" (the stream's end, perhaps hours
 * later and on whichever thread ends it, is not reported). */
void api_listen_hooked(eng_req *r)
{
	json_object *params = api_get(r->msg, "params");
	mcp_ctx ctx;
	api_ctx_init(&ctx, r, params);
	if (api_ctx_admit(&ctx, -1, NULL))
		return;
	api_answer a = { 0 };
	json_object *agreed = NULL;
	api_listen *l = agree(r->sess, params, r->proto, &agreed, &a);
	if (!l) {
		api_ctx_end_answer(&ctx, &a);
		return;
	}
	eng_req_keep(r);
	eng_req_ref(r);
	api_authz_after(&ctx, "streaming", 0);
	api_listen_open(l, r, agreed);
}
