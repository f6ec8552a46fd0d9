/*
 * prompts.c - prompt registration, how prompts are described in
 * prompts/list, the prompts/get result builder, and prompts/get: the
 * arguments checked, the handler run (with its input rounds), its result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/desc.h"
#include "api/internal.h"
#include "api/jschema/jschema.h"

static void prompt_destroy(api_entry *e)
{
	api_prompt_entry *p = (api_prompt_entry *)e;
	for (size_t i = 0; i < p->nargs; i++) {
		free((char *)p->args[i].name);
		free((char *)p->args[i].title);
		free((char *)p->args[i].description);
	}
	free(p->args);
	free(p->title);
	free(p->description);
	jschema_free(p->arg_check);
	free(p);
}

/* The schema of a prompt's arguments: each a string (prompts/get carries
 * {name: string}), the required ones present.  MCP_OK or MCP_ENOMEM. */
static int compile_arg_check(api_prompt_entry *p)
{
	json_object *schema = json_object_new_object();
	json_object *props = json_object_new_object();
	json_object *req = json_object_new_array();
	json_object *str = json_object_new_object();
	int bad = !schema || !props || !req || !str;
	eng_obj_set(str, "type", json_object_new_string("string"), &bad);
	for (size_t i = 0; i < p->nargs && !bad; i++) {
		eng_obj_set(props, p->args[i].name, json_object_get(str), &bad);
		if (p->args[i].required && eng_arr_add(req, json_object_new_string(p->args[i].name)))
			bad = 1;
	}
	eng_obj_set(schema, "type", json_object_new_string("object"), &bad);
	eng_obj_set(schema, "properties", props, &bad);
	eng_obj_set(schema, "required", req, &bad);
	eng_obj_set(schema, "additionalProperties", str, &bad);
	if (bad) {
		json_object_put(schema);
		return MCP_ENOMEM;
	}
	int rc = jschema_compile(schema, NULL, &p->arg_check, NULL);
	json_object_put(schema);
	/* Names are plain strings and the shape is fixed: only memory fails. */
	return rc == JSCHEMA_OK ? MCP_OK : rc == JSCHEMA_ENOMEM ? MCP_ENOMEM : MCP_EINVAL;
}

/* The caller's i-th argument, read through its own struct_size: the
 * array's stride is the size the caller was compiled with, which every
 * element states (MCP_PROMPT_ARG_INIT). */
static int read_arg(const mcp_prompt *prompt, size_t i, mcp_prompt_arg *out)
{
	size_t stride;
	memcpy(&stride, prompt->args, sizeof stride);
	if (stride < DESC_PROMPT_ARG_V1)
		return MCP_EINVAL;
	const unsigned char *at = (const unsigned char *)prompt->args + i * stride;
	size_t own;
	memcpy(&own, at, sizeof own);
	if (own != stride)
		return MCP_EINVAL;
	return desc_read(out, sizeof *out, at, DESC_PROMPT_ARG_V1);
}

MCP_EXTERN int mcp_server_add_prompt(mcp_server *srv, const mcp_prompt *caller)
{
	mcp_prompt desc;
	if (!srv)
		return MCP_EINVAL;
	int drc = desc_read(&desc, sizeof desc, caller, DESC_PROMPT_V1);
	if (drc != MCP_OK)
		return drc;
	const mcp_prompt *prompt = &desc;
	if (!prompt->name || !*prompt->name || !prompt->get || (prompt->nargs && !prompt->args) ||
	    (prompt->flags & ~MCP_PROMPT_NONBLOCKING))
		return MCP_EINVAL;
	for (size_t i = 0; i < prompt->nargs; i++) {
		mcp_prompt_arg a;
		drc = read_arg(prompt, i, &a);
		if (drc != MCP_OK)
			return drc;
		if (!a.name || !*a.name)
			return MCP_EINVAL;
	}
	api_prompt_entry *p = calloc(1, sizeof *p);
	if (!p)
		return MCP_ENOMEM;
	if (api_entry_init(&p->base, prompt->name, prompt_destroy)) {
		free(p);
		return MCP_ENOMEM;
	}
	int failed = 0;
	p->title = api_strdup_opt(prompt->title, &failed);
	p->description = api_strdup_opt(prompt->description, &failed);
	p->get = prompt->get;
	p->complete = prompt->complete;
	p->user = prompt->user;
	if (prompt->nargs) {
		p->args = calloc(prompt->nargs, sizeof *p->args);
		if (!p->args)
			failed = 1;
		else
			p->nargs = prompt->nargs;
	}
	for (size_t i = 0; i < p->nargs; i++) {
		mcp_prompt_arg a;
		read_arg(prompt, i, &a); /* checked above */
		p->args[i].name = api_strdup_opt(a.name, &failed);
		p->args[i].title = api_strdup_opt(a.title, &failed);
		p->args[i].description = api_strdup_opt(a.description, &failed);
		p->args[i].required = a.required;
	}
	int rc = failed ? MCP_ENOMEM : compile_arg_check(p);
	if (rc != MCP_OK) {
		api_entry_unref(&p->base);
		return rc;
	}
	p->base.nonblocking = (prompt->flags & MCP_PROMPT_NONBLOCKING) != 0;
	if (p->base.nonblocking)
		atomic_store(&srv->any_nonblocking, 1);
	return api_registry_add(srv, &srv->prompts, &p->base);
}

MCP_EXTERN int mcp_server_remove_prompt(mcp_server *srv, const char *name)
{
	if (!srv || !name)
		return MCP_EINVAL;
	return api_registry_remove(srv, &srv->prompts, name);
}

json_object *api_prompt_describe(api_entry *e, int rev)
{
	api_prompt_entry *p = (api_prompt_entry *)e;
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_add(o, "name", json_object_new_string(e->key));
	if (rev >= API_REV_2025_06_18)
		api_json_add_str(o, "title", p->title);
	api_json_add_str(o, "description", p->description);
	if (p->nargs) {
		json_object *args = json_object_new_array();
		for (size_t i = 0; i < p->nargs; i++) {
			json_object *a = json_object_new_object();
			eng_obj_add(a, "name", json_object_new_string(p->args[i].name));
			if (rev >= API_REV_2025_06_18)
				api_json_add_str(a, "title", p->args[i].title);
			api_json_add_str(a, "description", p->args[i].description);
			if (p->args[i].required)
				eng_obj_add(a, "required", json_object_new_boolean(1));
			eng_arr_add(args, a);
		}
		eng_obj_add(o, "arguments", args);
	}
	return o;
}

/* ---- prompts/get results ------------------------------------------------- */

MCP_EXTERN int mcp_prompt_set_description(mcp_prompt_result *out, const char *text)
{
	if (!out || !text)
		return MCP_EINVAL;
	char *d = strdup(text);
	if (!d)
		return MCP_ENOMEM;
	free(out->description);
	out->description = d;
	return MCP_OK;
}

MCP_EXTERN int mcp_prompt_add_content(mcp_prompt_result *out, mcp_role role,
				      json_object *block)
{
	if (!out || (role != MCP_ROLE_USER && role != MCP_ROLE_ASSISTANT) ||
	    !json_object_is_type(block, json_type_object)) {
		json_object_put(block);
		return MCP_EINVAL;
	}
	/* A kind the revision lacks arrives as text (api_block_for_rev). */
	block = api_block_for_rev(block, out->rev);
	json_object *m = json_object_new_object();
	if (!block || !m || (!out->messages && !(out->messages = json_object_new_array()))) {
		json_object_put(m);
		json_object_put(block);
		return MCP_ENOMEM;
	}
	eng_obj_add(m, "role",
			       json_object_new_string(role == MCP_ROLE_USER ? "user" : "assistant"));
	eng_obj_add(m, "content", block);
	eng_arr_add(out->messages, m);
	return MCP_OK;
}

static int add_block(mcp_prompt_result *out, mcp_role role, json_object *block)
{
	if (!block)
		return out ? MCP_ENOMEM : MCP_EINVAL;
	return mcp_prompt_add_content(out, role, block);
}

MCP_EXTERN int mcp_prompt_add_text(mcp_prompt_result *out, mcp_role role, const char *text)
{
	if (!text)
		return MCP_EINVAL;
	return add_block(out, role, api_block_text(text, strlen(text)));
}

MCP_EXTERN int mcp_prompt_add_image(mcp_prompt_result *out, mcp_role role,
				    const void *data, size_t len, const char *mime_type)
{
	if (!mime_type || (!data && len))
		return MCP_EINVAL;
	return add_block(out, role, api_block_media("image", data, len, mime_type));
}

MCP_EXTERN int mcp_prompt_add_audio(mcp_prompt_result *out, mcp_role role,
				    const void *data, size_t len, const char *mime_type)
{
	if (!mime_type || (!data && len))
		return MCP_EINVAL;
	return add_block(out, role, api_block_media("audio", data, len, mime_type));
}

MCP_EXTERN int mcp_prompt_add_resource_text(mcp_prompt_result *out, mcp_role role,
					    const char *uri, const char *mime_type,
					    const char *text)
{
	if (!uri || !text)
		return MCP_EINVAL;
	return add_block(out, role,
			 api_block_resource(uri, mime_type, "text", json_object_new_string(text)));
}

MCP_EXTERN int mcp_prompt_set_error(mcp_prompt_result *out, int code, const char *message,
				    json_object *data)
{
	if (!out) {
		json_object_put(data);
		return MCP_EINVAL;
	}
	int rc = api_rpc_error_set(&out->err, code, message, data);
	return rc == MCP_OK ? MCP_ERESULT : rc;
}

/* ---- prompts/get ------------------------------------------------------------ */

struct prompt_run {
	api_prompt_entry *p;
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
	api_rpc_error_clear(&t->out->err);
}

void api_prompts_get(eng_req *r)
{
	api_sess *ms = api_sess_of(r->sess);
	json_object *params = api_get(r->msg, "params");
	const char *name = api_get_str(params, "name");
	json_object *args = api_get(params, "arguments");
	if (!name) {
		api_finish_invalid(r, "Invalid params: prompts/get needs a prompt name (a string without U+0000)", NULL);
		return;
	}
	if (args && !json_object_is_type(args, json_type_object)) {
		api_finish_invalid(r, "Invalid params: arguments must be an object", NULL);
		return;
	}
	api_prompt_entry *p =
		(api_prompt_entry *)api_registry_find(ms->srv, &ms->srv->prompts, name);
	if (!p) {
		char msg[160];
		snprintf(msg, sizeof msg, "Unknown prompt: %.100s", name);
		api_finish_invalid(r, msg, api_data_str("name", name));
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
			json_object *data = api_data_str("path", err.instance);
			eng_obj_add(data, "rule", json_object_new_string(err.keyword));
			api_finish_invalid(r, msg, data);
		}
		json_object_put(own_args);
		api_entry_unref(&p->base);
		return;
	}
	mcp_ctx ctx;
	api_ctx_begin(&ctx, r, params);
	ctx.item = &p->base;
	if (api_ctx_admit(&ctx, MCP_ITEM_PROMPT, name)) {
		json_object_put(own_args);
		api_entry_unref(&p->base);
		return;
	}
	mcp_prompt_result out = { .rev = api_req_rev(r) };
	const char *why = NULL;
	int rc;
	struct prompt_run pr = { p, &ctx, args, &out };
	int resumed = api_mrtr_begin(&ctx, params, "prompts/get", name, args, &why);
	if (resumed < 0)
		rc = MCP_EINVAL;
	else if (resumed == 0)
		rc = api_ctx_run_rounds(&ctx, prompt_invoke, prompt_reset, &pr);
	else
		rc = MCP_OK; /* answered by the parked handler */
	json_object *result = NULL;
	if (resumed > 0) {
		/* nothing more to answer */
	} else if (why) {
		out.err.code = MCP_JSONRPC_INVALID_PARAMS;
		out.err.message = strdup(why);
	} else if (rc == MCP_EINPUT && (result = api_mrtr_input_required(&ctx))) {
		rc = MCP_OK;
	} else if (rc == MCP_OK) {
		result = json_object_new_object();
		api_json_add_str(result, "description", out.description);
		eng_obj_add(result, "messages",
				       out.messages ? out.messages : json_object_new_array());
		out.messages = NULL;
	}
	if (resumed <= 0)
		api_ctx_end(&ctx, rc, result, out.err.code, out.err.message, out.err.data);
	out.err.data = NULL; /* taken by api_ctx_end */
	api_rpc_error_clear(&out.err);
	api_mrtr_end(&ctx);
	json_object_put(out.messages);
	free(out.description);
	json_object_put(own_args);
	api_entry_unref(&p->base);
}
