/*
 * lists.c - the paged lists of both eras: tools/list, resources/list,
 * resources/templates/list and prompts/list, each a page of its registry
 * as the request's revision describes it, filtered by what the caller's
 * scopes reach, continued by a cursor the server signed (common.c).
 */
#include <stdlib.h>

#include "api/internal.h"

struct list_filter {
	mcp_server *srv;
	const mcp_principal *who;
	int kind;
};

static int list_visible(api_entry *e, void *arg)
{
	struct list_filter *f = arg;
	/* A skill's supporting files are reached through its entry. */
	if (f->kind == MCP_ITEM_RESOURCE && ((api_resource_entry *)e)->unlisted)
		return 0;
	return api_authz_visible(f->srv, f->kind, e->key, f->who);
}

/* One page of list `list` (its cursors say so), answered as `key`: the
 * items of `r` as `describe` makes them for the request's revision. */
static void list_page(eng_session *s, json_object *params, api_answer *out,
		      const char *list, const char *key, api_registry *r,
		      json_object *(*describe)(api_entry *e, int rev), const api_view *v,
		      const char *method)
{
	api_sess *ms = api_sess_of(s);
	int rev = v ? v->rev : ms->rev;
	size_t offset = 0;
	json_object *jc = api_get(params, "cursor");
	if (jc && (!api_str(jc) || api_parse_cursor(ms->srv, api_str(jc), list, &offset) != 0)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: unknown cursor", NULL);
		return;
	}
	size_t total = 0, page = (size_t)ms->srv->page_size, next = 0;
	mcp_server *srv = ms->srv;
	mcp_principal *who = api_authz_current(ms);
	json_object *items;
	if (api_authz_filters(srv, who) || (r == &srv->resources && srv->nskills)) {
		/* Only what the caller's scopes reach (and, for resources,
		 * what is listed); a page may then hold fewer items, and the
		 * cursor continues after the last item looked at. */
		struct list_filter f = { srv, who,
					 r == &srv->tools	? MCP_ITEM_TOOL
					 : r == &srv->resources ? MCP_ITEM_RESOURCE
					 : r == &srv->templates ? MCP_ITEM_TEMPLATE
								: MCP_ITEM_PROMPT };
		items = api_registry_page_if(srv, r, offset, page, describe, rev, list_visible, &f,
					     &next);
	} else {
		items = api_registry_page(srv, r, offset, page, describe, rev, &total);
		next = offset + page < total ? offset + page : 0;
	}
	if (!items) {
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	int bad = 0;
	json_object *res = json_object_new_object();
	eng_obj_set(res, key, items, &bad);
	if (next) {
		char *cursor = api_make_cursor(ms->srv, list, next);
		eng_obj_set(res, "nextCursor", cursor ? json_object_new_string(cursor) : NULL, &bad);
		free(cursor);
	}
	if (!res || bad) {
		json_object_put(res);
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	if (v && v->modern)
		api_modern_decorate(ms->srv, method, res);
	api_answer_result(out, res);
}

void api_list_tools(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	list_page(s, params, out, "tools", "tools", &api_sess_of(s)->srv->tools, api_tool_describe,
		  v, "tools/list");
}

void api_list_resources(eng_session *s, json_object *params, const api_view *v,
			api_answer *out)
{
	list_page(s, params, out, "resources", "resources", &api_sess_of(s)->srv->resources,
		  api_resource_describe, v, "resources/list");
}

void api_list_templates(eng_session *s, json_object *params, const api_view *v,
			api_answer *out)
{
	list_page(s, params, out, "templates", "resourceTemplates",
		  &api_sess_of(s)->srv->templates, api_resource_describe, v,
		  "resources/templates/list");
}

void api_list_prompts(eng_session *s, json_object *params, const api_view *v, api_answer *out)
{
	list_page(s, params, out, "prompts", "prompts", &api_sess_of(s)->srv->prompts,
		  api_prompt_describe, v, "prompts/list");
}
