/*
 * lifecycle.c - how a connection starts and what the server says it can
 * do: initialize with version negotiation, notifications/initialized,
 * ping, logging/setLevel, and for 2026-07-28 server/discover; the
 * capabilities object of each revision.
 *
 * These methods are answered on the reader: initialize and setLevel order
 * the messages after them, and ping must never wait for a worker.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

/* ---- capabilities ------------------------------------------------------------- */

/* The capabilities object for revision `rev`.  In 2026-07-28 listChanged
 * and subscribe mean delivery on subscriptions/listen streams, and tasks
 * are the io.modelcontextprotocol/tasks extension. */
json_object *api_capabilities(mcp_server *srv, int rev, unsigned *kinds_out)
{
	int modern = rev >= API_REV_LEGACY_COUNT;
	int bad = 0;
	json_object *caps = json_object_new_object();
	eng_obj_set(caps, "logging", json_object_new_object(), &bad);
	unsigned kinds = 0;
	int completions = 0;
	if (api_registry_count(srv, &srv->tools)) {
		json_object *o = json_object_new_object();
		eng_obj_set(o, "listChanged", json_object_new_boolean(1), &bad);
		eng_obj_set(caps, "tools", o, &bad);
		kinds |= API_KIND_TOOLS;
	}
	if (api_registry_count(srv, &srv->resources) || api_registry_count(srv, &srv->templates)) {
		json_object *o = json_object_new_object();
		eng_obj_set(o, "subscribe", json_object_new_boolean(1), &bad);
		eng_obj_set(o, "listChanged", json_object_new_boolean(1), &bad);
		eng_obj_set(caps, "resources", o, &bad);
		kinds |= API_KIND_RESOURCES;
	}
	if (api_registry_count(srv, &srv->prompts)) {
		json_object *o = json_object_new_object();
		eng_obj_set(o, "listChanged", json_object_new_boolean(1), &bad);
		eng_obj_set(caps, "prompts", o, &bad);
		kinds |= API_KIND_PROMPTS;
	}
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->prompts.n && !completions; i++)
		completions = ((api_prompt_entry *)srv->prompts.items[i])->complete != NULL;
	for (size_t i = 0; i < srv->templates.n && !completions; i++)
		completions = ((api_resource_entry *)srv->templates.items[i])->complete != NULL;
	pthread_rwlock_unlock(&srv->reg_lock);
	/* 2024-11-05 has completion/complete but no capability for it: a
	 * client of that revision just asks (the method is served all the
	 * same); "completions" came with 2025-03-26. */
	if (completions && rev >= API_REV_2025_03_26)
		eng_obj_set(caps, "completions", json_object_new_object(), &bad);
	if (rev >= API_REV_2025_11_25 && !modern && api_tasks_offered(srv)) {
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
	if (modern && api_tasks_offered(srv))
		eng_obj_set(ext, API_EXT_TASKS, json_object_new_object(), &bad);
	if (api_apps_offered(srv))
		eng_obj_set(ext, API_EXT_UI, json_object_new_object(), &bad);
	if (api_skills_offered(srv)) {
		/* Skills (SEP-2640), with resources/directory/read. */
		json_object *set = json_object_new_object();
		eng_obj_set(set, "directoryRead", json_object_new_boolean(1), &bad);
		eng_obj_set(ext, API_EXT_SKILLS, set, &bad);
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

/* The capabilities of a connection: exactly what is registered when it
 * initializes.  Remembers which list_changed notifications it was promised. */
static json_object *server_capabilities(api_sess *ms)
{
	unsigned kinds = 0;
	json_object *caps = api_capabilities(ms->srv, ms->rev, &kinds);
	ms->caps_sent = kinds;
	return caps;
}

/* ---- the legacy lifecycle ------------------------------------------------------ */

void api_lifecycle_initialize(eng_session *s, json_object *params, const api_view *v,
			      api_answer *out)
{
	(void)v;
	api_sess *ms = api_sess_of(s);
	if (!json_object_is_type(params, json_type_object)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: initialize needs an object", NULL);
		return;
	}
	const char *asked = api_get_str(params, "protocolVersion");
	if (!asked) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: protocolVersion (string) is required",
				 NULL);
		return;
	}
	json_object *caps = api_get(params, "capabilities");
	if (caps && !json_object_is_type(caps, json_type_object)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: capabilities must be an object", NULL);
		return;
	}
	int expect = API_SESS_NEW;
	if (!atomic_compare_exchange_strong(&ms->state, &expect, API_SESS_INITIALIZING)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_REQUEST,
				 "Invalid Request: initialize was already received", NULL);
		return;
	}
	/* Negotiation: the client's revision when we speak it, else our
	 * newest and the client decides whether to go on. */
	int rev = api_revision_index(asked);
	ms->rev = rev >= 0 && rev < API_REV_LEGACY_COUNT ? rev : API_REV_LEGACY_COUNT - 1;
	ms->client_caps_text = caps ? eng_json_dup(caps, NULL) : strdup("{}");
	/* Published with the state: with request hooks this runs on a
	 * worker, and the threads that read the revision and capabilities
	 * later order themselves after this through `state`. */
	expect = API_SESS_INITIALIZING;
	atomic_compare_exchange_strong(&ms->state, &expect, API_SESS_INITIALIZING);

	mcp_server *srv = ms->srv;
	/* The transport learns what it needs of the revision before the
	 * answer can reach the client (streams opened after it). */
	eng_session_set_transport_features(s, ms->rev >= API_REV_2025_11_25 ? TP_FEATURE_RESUMABLE
									   : 0);
	int bad = !ms->client_caps_text;
	json_object *res = json_object_new_object();
	eng_obj_set(res, "protocolVersion", json_object_new_string(api_revision_names[ms->rev]),
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
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	api_answer_result(out, res);
}

void api_lifecycle_ping(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	(void)s, (void)params, (void)v;
	api_answer_result(out, json_object_new_object());
}

void api_lifecycle_set_level(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out)
{
	(void)v;
	int level = api_log_level_from_name(api_get_str(params, "level"));
	if (level < 0) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: level must be one of debug, info, "
				 "notice, warning, error, critical, alert, emergency",
				 NULL);
		return;
	}
	atomic_store(&api_sess_of(s)->log_level, level);
	api_answer_result(out, json_object_new_object());
}

void api_lifecycle_initialized(api_sess *ms)
{
	int expect = API_SESS_INITIALIZING;
	atomic_compare_exchange_strong(&ms->state, &expect, API_SESS_READY);
}

/* ---- 2026-07-28 ------------------------------------------------------------------- */

/* What initialize was: the versions served from a request's own _meta, the
 * capabilities, the instructions, with no state kept. */
void api_lifecycle_discover(eng_session *s, json_object *params, const api_view *v,
			    api_answer *out)
{
	(void)params, (void)v;
	mcp_server *srv = api_sess_of(s)->srv;
	json_object *res = json_object_new_object();
	eng_obj_add(res, "supportedVersions", api_modern_versions());
	eng_obj_add(res, "capabilities",
			       api_capabilities(srv, API_REV_2026_07_28, NULL));
	if (srv->instructions)
		eng_obj_add(res, "instructions",
				       json_object_new_string(srv->instructions));
	api_modern_decorate(srv, "server/discover", res);
	api_answer_result(out, res);
}

