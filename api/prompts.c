/*
 * prompts.c - prompt registration, how prompts are described in
 * prompts/list, the prompts/get result builder, and the completion result
 * builder shared by prompts and resource templates.
 */
#include <stdlib.h>
#include <string.h>

#include "api/desc.h"
#include "api/internal.h"
#include "api/jschema.h"

static void prompt_destroy(mcp_entry *e)
{
	mcp_prompt_entry *p = (mcp_prompt_entry *)e;
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
static int compile_arg_check(mcp_prompt_entry *p)
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
	if (!prompt->name || !*prompt->name || !prompt->get || (prompt->nargs && !prompt->args))
		return MCP_EINVAL;
	for (size_t i = 0; i < prompt->nargs; i++) {
		mcp_prompt_arg a;
		drc = read_arg(prompt, i, &a);
		if (drc != MCP_OK)
			return drc;
		if (!a.name || !*a.name)
			return MCP_EINVAL;
	}
	mcp_prompt_entry *p = calloc(1, sizeof *p);
	if (!p)
		return MCP_ENOMEM;
	if (mcp_entry_init(&p->base, prompt->name, prompt_destroy)) {
		free(p);
		return MCP_ENOMEM;
	}
	int failed = 0;
	p->title = mcp_strdup_opt(prompt->title, &failed);
	p->description = mcp_strdup_opt(prompt->description, &failed);
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
		p->args[i].name = mcp_strdup_opt(a.name, &failed);
		p->args[i].title = mcp_strdup_opt(a.title, &failed);
		p->args[i].description = mcp_strdup_opt(a.description, &failed);
		p->args[i].required = a.required;
	}
	int rc = failed ? MCP_ENOMEM : compile_arg_check(p);
	if (rc != MCP_OK) {
		mcp_entry_unref(&p->base);
		return rc;
	}
	return mcp_registry_add(srv, &srv->prompts, &p->base);
}

MCP_EXTERN int mcp_server_remove_prompt(mcp_server *srv, const char *name)
{
	if (!srv || !name)
		return MCP_EINVAL;
	return mcp_registry_remove(srv, &srv->prompts, name);
}

json_object *mcp_prompt_describe(mcp_entry *e, int rev)
{
	mcp_prompt_entry *p = (mcp_prompt_entry *)e;
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_add(o, "name", json_object_new_string(e->key));
	if (rev >= MCP_REV_2025_06_18)
		mcp_json_add_str(o, "title", p->title);
	mcp_json_add_str(o, "description", p->description);
	if (p->nargs) {
		json_object *args = json_object_new_array();
		for (size_t i = 0; i < p->nargs; i++) {
			json_object *a = json_object_new_object();
			eng_obj_add(a, "name", json_object_new_string(p->args[i].name));
			if (rev >= MCP_REV_2025_06_18)
				mcp_json_add_str(a, "title", p->args[i].title);
			mcp_json_add_str(a, "description", p->args[i].description);
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
	json_object *m = json_object_new_object();
	if (!m || (!out->messages && !(out->messages = json_object_new_array()))) {
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
	return add_block(out, role, mcp_block_text(text, strlen(text)));
}

MCP_EXTERN int mcp_prompt_add_image(mcp_prompt_result *out, mcp_role role,
				    const void *data, size_t len, const char *mime_type)
{
	if (!mime_type || (!data && len))
		return MCP_EINVAL;
	return add_block(out, role, mcp_block_media("image", data, len, mime_type));
}

MCP_EXTERN int mcp_prompt_add_audio(mcp_prompt_result *out, mcp_role role,
				    const void *data, size_t len, const char *mime_type)
{
	if (!mime_type || (!data && len))
		return MCP_EINVAL;
	return add_block(out, role, mcp_block_media("audio", data, len, mime_type));
}

MCP_EXTERN int mcp_prompt_add_resource_text(mcp_prompt_result *out, mcp_role role,
					    const char *uri, const char *mime_type,
					    const char *text)
{
	if (!uri || !text)
		return MCP_EINVAL;
	return add_block(out, role,
			 mcp_block_resource(uri, mime_type, "text", json_object_new_string(text)));
}

MCP_EXTERN int mcp_prompt_set_error(mcp_prompt_result *out, int code, const char *message,
				    json_object *data)
{
	if (!out) {
		json_object_put(data);
		return MCP_EINVAL;
	}
	int rc = mcp_rpc_error_set(&out->err, code, message, data);
	return rc == MCP_OK ? MCP_ERESULT : rc;
}

/* ---- completion results -------------------------------------------------- */

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
