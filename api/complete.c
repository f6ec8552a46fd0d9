/*
 * complete.c - completion/complete: the values a prompt argument or a
 * resource template's variable may take, from the completion function its
 * prompt or template registered, and the builder that function fills.
 */
#include <string.h>

#include "api/internal.h"

#define MAX_COMPLETIONS 100 /* the spec's cap on values per response */

MCP_EXTERN int mcp_completion_add(mcp_completion *out, const char *value)
{
	if (!out || !value)
		return MCP_EINVAL;
	out->added++;
	if (json_object_array_length(out->values) >= MAX_COMPLETIONS) {
		out->has_more = 1;
		return MCP_OK;
	}
	json_object *v = json_object_new_string(value);
	if (!v || eng_arr_add(out->values, v))
		return MCP_ENOMEM;
	return MCP_OK;
}

MCP_EXTERN void mcp_completion_set_total(mcp_completion *out, int64_t total)
{
	if (out && total >= 0)
		out->total = total;
}

MCP_EXTERN void mcp_completion_set_has_more(mcp_completion *out, int has_more)
{
	if (out)
		out->has_more = has_more != 0;
}

/* ---- completion/complete --------------------------------------------------------- */

void api_complete(eng_req *r)
{
	api_sess *ms = api_sess_of(r->sess);
	mcp_server *srv = ms->srv;
	json_object *params = api_get(r->msg, "params");
	json_object *ref = api_get(params, "ref");
	json_object *arg = api_get(params, "argument");
	const char *type = api_get_str(ref, "type");
	const char *arg_name = api_get_str(arg, "name");
	const char *value = api_get_str(arg, "value");
	if (!type || !arg_name || !value) {
		api_finish_invalid(r, "Invalid params: completion/complete needs ref.type, "
				  "argument.name and argument.value",
			       NULL);
		return;
	}
	api_entry *e = NULL;
	mcp_complete_fn fn = NULL;
	void *user = NULL;
	if (strcmp(type, "ref/prompt") == 0 && api_get_str(ref, "name")) {
		api_prompt_entry *p =
			(api_prompt_entry *)api_registry_find(srv, &srv->prompts, api_get_str(ref, "name"));
		if (p) {
			e = &p->base;
			fn = p->complete;
			user = p->user;
		}
	} else if (strcmp(type, "ref/resource") == 0 && api_get_str(ref, "uri")) {
		api_resource_entry *t = (api_resource_entry *)api_registry_find(
			srv, &srv->templates, api_get_str(ref, "uri"));
		if (t) {
			e = &t->base;
			fn = t->complete;
			user = t->user;
		}
	}
	if (!e) {
		api_finish_invalid(r, "Invalid params: unknown completion reference", NULL);
		return;
	}
	json_object *context = api_get(api_get(params, "context"), "arguments");
	json_object *own_ctx = NULL;
	if (!json_object_is_type(context, json_type_object))
		context = own_ctx = json_object_new_object();
	mcp_ctx ctx;
	api_ctx_begin(&ctx, r, params);
	if (api_ctx_admit(&ctx, strcmp(type, "ref/prompt") == 0 ? MCP_ITEM_PROMPT : MCP_ITEM_TEMPLATE,
			  e->key)) {
		json_object_put(own_ctx);
		api_entry_unref(e);
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
	api_ctx_end(&ctx, rc, result, 0, NULL, NULL);
	json_object_put(out.values);
	json_object_put(own_ctx);
	api_entry_unref(e);
}
