/*
 * tools.c - tool registration and removal (with the checks that keep a
 * client from refusing the server's tools), how a tool is described in
 * tools/list for a negotiated revision, what a call's arguments and
 * result are checked against (the tool's schemas, compiled once here),
 * and tools/call itself: a call, a task, or the rounds of input between.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/desc.h"
#include "api/internal.h"
#include "api/jschema/jschema.h"

static void tool_destroy(api_entry *e)
{
	api_tool_entry *t = (api_tool_entry *)e;
	free(t->title);
	free(t->description);
	json_object_put(t->input_schema);
	json_object_put(t->output_schema);
	json_object_put(t->annotations);
	jschema_free(t->in_check);
	jschema_free(t->out_check);
	free(t);
}

__attribute__((format(printf, 3, 4))) static int refuse(char *why, size_t whylen,
							 const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return MCP_EINVAL;
}

/* Parses a JSON object text (schema, annotations); NULL text gives `dflt`
 * (may be NULL).  Returns MCP_EINVAL unless the text is a JSON object,
 * MCP_ENOMEM when parsing ran out of memory (json-c says so only through
 * errno). */
static int parse_object(const char *what, const char *text, const char *dflt, json_object **out,
			char *why, size_t whylen)
{
	*out = NULL;
	if (!text)
		text = dflt;
	if (!text)
		return MCP_OK;
	errno = 0;
	json_object *o = json_tokener_parse(text);
	if (!o && errno == ENOMEM)
		return MCP_ENOMEM;
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return refuse(why, whylen, "%s: not the text of a JSON object", what);
	}
	*out = o;
	return MCP_OK;
}

/* The tool name rule of MCP 2025-11-25 (and what clients enforce): 1 to
 * 128 characters of A-Z, a-z, 0-9, '_', '-' and '.'. */
static int name_ok(const char *name)
{
	size_t n = 0;
	for (const char *p = name; *p; p++, n++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return 0;
	return n >= 1 && n <= 128;
}

/* A tool's schema: an object whose "type" is "object" (clients refuse any
 * other, and one bad schema makes some drop every tool), compiled as
 * JSON Schema 2020-12.  *out gets the compiled form when `keep`. */
static int compile_schema(const char *what, json_object *schema, int formats, int keep,
			  jschema **out, char *why, size_t whylen)
{
	*out = NULL;
	json_object *type = api_get(schema, "type");
	if (!json_object_is_type(type, json_type_string) ||
	    strcmp(json_object_get_string(type), "object") != 0)
		return refuse(why, whylen,
			      "%s: \"type\" must be \"object\" (MCP clients refuse other tool "
			      "schemas)",
			      what);
	jschema_opts opts = { .formats = formats };
	jschema_error err;
	jschema *c = NULL;
	int rc = jschema_compile(schema, &opts, &c, &err);
	if (rc == JSCHEMA_ENOMEM)
		return MCP_ENOMEM;
	if (rc != JSCHEMA_OK)
		return refuse(why, whylen, "%s: %s", what, err.message);
	if (keep)
		*out = c;
	else
		jschema_free(c);
	return MCP_OK;
}

/* Checks a description and, with `t`, fills the entry from it. */
static int prepare(const mcp_tool *tool, api_tool_entry *t, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (!tool)
		return refuse(why, whylen, "no tool description");
	if (!tool->name || !name_ok(tool->name))
		return refuse(why, whylen,
			      "name \"%.60s\": a tool name is 1 to 128 characters of A-Z, a-z, "
			      "0-9, '_', '-' and '.'",
			      tool->name ? tool->name : "(null)");
	if (!tool->fn)
		return refuse(why, whylen, "%s: fn (the handler) is required", tool->name);
	if (tool->task_support < MCP_TASKS_FORBIDDEN || tool->task_support > MCP_TASKS_REQUIRED)
		return refuse(why, whylen, "%s: task_support is not an mcp_task_support value",
			      tool->name);
	if ((tool->flags & MCP_TOOL_NONBLOCKING) &&
	    (tool->task_support != MCP_TASKS_FORBIDDEN || (tool->flags & MCP_TOOL_TASK_BY_HANDLER)))
		return refuse(why, whylen,
			      "%s: MCP_TOOL_NONBLOCKING is for tools that never run as a task "
			      "(task_support MCP_TASKS_FORBIDDEN, no MCP_TOOL_TASK_BY_HANDLER)",
			      tool->name);
	api_tool_entry scratch = { 0 };
	api_tool_entry *e = t ? t : &scratch;
	int rc = parse_object("input_schema", tool->input_schema, "{\"type\":\"object\"}",
			      &e->input_schema, why, whylen);
	if (rc == MCP_OK)
		rc = parse_object("output_schema", tool->output_schema, NULL, &e->output_schema,
				  why, whylen);
	if (rc == MCP_OK)
		rc = parse_object("annotations", tool->annotations, NULL, &e->annotations, why,
				  whylen);
	/* Compiled even when the check is off: clients compile them too. */
	if (rc == MCP_OK)
		rc = compile_schema("input_schema", e->input_schema,
				    (tool->flags & MCP_TOOL_CHECK_FORMATS) != 0,
				    t && !(tool->flags & MCP_TOOL_UNCHECKED_ARGS), &e->in_check, why,
				    whylen);
	if (rc == MCP_OK && e->output_schema)
		rc = compile_schema("output_schema", e->output_schema, 0,
				    t && !(tool->flags & MCP_TOOL_UNCHECKED_OUTPUT), &e->out_check,
				    why, whylen);
	if (!t) {
		json_object_put(scratch.input_schema);
		json_object_put(scratch.output_schema);
		json_object_put(scratch.annotations);
	}
	if (rc == MCP_ENOMEM && why && whylen)
		snprintf(why, whylen, "out of memory");
	return rc;
}

MCP_EXTERN int mcp_tool_check(const mcp_tool *caller, char *why, size_t whylen)
{
	if (!why && whylen)
		return MCP_EINVAL;
	if (!caller)
		return prepare(NULL, NULL, why, whylen);
	mcp_tool tool;
	int rc = desc_read(&tool, sizeof tool, caller, DESC_TOOL_V1);
	if (rc != MCP_OK) {
		refuse(why, whylen, "%s", desc_why(rc));
		return rc;
	}
	return prepare(&tool, NULL, why, whylen);
}

MCP_EXTERN int mcp_server_add_tool(mcp_server *srv, const mcp_tool *caller)
{
	mcp_tool desc;
	if (!srv)
		return MCP_EINVAL;
	int drc = desc_read(&desc, sizeof desc, caller, DESC_TOOL_V1);
	if (drc != MCP_OK)
		return drc;
	const mcp_tool *tool = &desc;
	if (!tool->name)
		return MCP_EINVAL;
	api_tool_entry *t = calloc(1, sizeof *t);
	if (!t)
		return MCP_ENOMEM;
	if (api_entry_init(&t->base, tool->name, tool_destroy)) {
		free(t);
		return MCP_ENOMEM;
	}
	t->fn = tool->fn;
	t->user = tool->user;
	t->task_support = tool->task_support;
	t->flags = tool->flags;
	t->srv = srv;
	int failed = 0;
	t->title = api_strdup_opt(tool->title, &failed);
	t->description = api_strdup_opt(tool->description, &failed);
	int rc = failed ? MCP_ENOMEM : prepare(tool, t, NULL, 0);
	if (rc != MCP_OK) {
		api_entry_unref(&t->base);
		return rc;
	}
	/* Before the tool can be found: its calls must be routed from their
	 * tree from the start (dispatch.c). */
	t->base.nonblocking = (t->flags & MCP_TOOL_NONBLOCKING) != 0;
	if (t->base.nonblocking)
		atomic_store(&srv->any_nonblocking, 1);
	return api_registry_add(srv, &srv->tools, &t->base);
}

/* ---- checking a call ------------------------------------------------------- */

json_object *api_tool_check_args(api_tool_entry *t, json_object *args, int rev, int *oom)
{
	*oom = 0;
	if (!t->in_check)
		return NULL;
	jschema_error err;
	int rc = jschema_validate(t->in_check, args, &err);
	if (rc == JSCHEMA_OK)
		return NULL;
	if (rc == JSCHEMA_ENOMEM) {
		*oom = 1;
		return NULL;
	}
	/* SEP-1303: a tool error the model reads, not a JSON-RPC error. */
	mcp_result res;
	api_result_init(&res, rev);
	json_object *result = NULL;
	if (mcp_result_tool_error(&res, "Input validation error: %s", err.message) == MCP_OK)
		result = api_result_to_json(&res);
	api_result_clear(&res);
	*oom = result == NULL;
	return result;
}

int api_tool_outcome(mcp_ctx *ctx, api_tool_entry *t, mcp_result *res, int rc,
		     json_object **result)
{
	*result = NULL;
	if (rc == MCP_ECANCELED || rc == MCP_ECLOSED)
		return rc;
	if (res->err_code)
		return MCP_ERESULT; /* an error set on the result is the answer */
	if (rc == MCP_EINVAL) {
		/* Not -32602: the tool refused what it was given, and the
		 * model should read why (SEP-1303). */
		if (res->content && json_object_array_length(res->content) > 0)
			res->is_error = 1;
		else if (mcp_result_tool_error(res, "The tool refused its arguments.") != MCP_OK)
			return MCP_ENOMEM;
		rc = MCP_OK;
	}
	if (rc == MCP_ERESULT)
		rc = MCP_OK; /* nothing set: what is on the result */
	if (rc != MCP_OK)
		return rc;
	if (t->out_check && !res->is_error) {
		jschema_error err;
		const char *fault = NULL;
		if (!res->structured) {
			fault = "the tool has an outputSchema but returned no structuredContent";
		} else {
			int v = jschema_validate(t->out_check, res->structured, &err);
			if (v == JSCHEMA_ENOMEM)
				return MCP_ENOMEM;
			if (v != JSCHEMA_OK)
				fault = err.message;
		}
		if (fault) {
			/* The server's fault: clients would reject the result
			 * anyway, so say it plainly and leave a trace. */
			mcp_server *srv = ctx->sess->srv;
			if (srv->trace)
				srv->trace("invalid_output", eng_req_client_key(ctx->req), fault,
					   srv->trace_user);
			char msg[JSCHEMA_MSG_MAX + 96];
			snprintf(msg, sizeof msg,
				 "Internal error: the tool's result does not match its outputSchema: %s",
				 fault);
			int src = mcp_result_set_error(res, MCP_JSONRPC_INTERNAL_ERROR, msg, NULL);
			return src == MCP_ERESULT ? MCP_ERESULT : MCP_ENOMEM;
		}
	}
	*result = api_result_to_json(res);
	return MCP_OK;
}

MCP_EXTERN int mcp_server_remove_tool(mcp_server *srv, const char *name)
{
	if (!srv || !name)
		return MCP_EINVAL;
	return api_registry_remove(srv, &srv->tools, name);
}

json_object *api_tool_describe(api_entry *e, int rev)
{
	api_tool_entry *t = (api_tool_entry *)e;
	int bad = 0;
	json_object *o = json_object_new_object();
	eng_obj_set(o, "name", json_object_new_string(e->key), &bad);
	if (rev >= API_REV_2025_06_18 && t->title)
		eng_obj_set(o, "title", json_object_new_string(t->title), &bad);
	if (t->description)
		eng_obj_set(o, "description", json_object_new_string(t->description), &bad);
	/* Deep copies: the registry's trees are read by every connection's
	 * thread, and json-c objects are not thread-safe to share. */
	eng_obj_set(o, "inputSchema", api_json_copy(t->input_schema), &bad);
	if (t->output_schema && rev >= API_REV_2025_06_18)
		eng_obj_set(o, "outputSchema", api_json_copy(t->output_schema), &bad);
	/* Tool annotations came with 2025-03-26; a 2024-11-05 client gets the
	 * tool without its hints (they only advise, the tool is the same). */
	if (t->annotations && rev >= API_REV_2025_03_26)
		eng_obj_set(o, "annotations", api_json_copy(t->annotations), &bad);
	/* MCP Apps: the tool's UI (reg_lock is held while lists are built). */
	json_object *ui = t->srv ? api_tool_ui_meta(t->srv, e->key) : NULL;
	if (ui) {
		json_object *meta = json_object_new_object();
		eng_obj_set(meta, "ui", ui, &bad);
		eng_obj_set(o, "_meta", meta, &bad);
	}
	if (t->task_support != MCP_TASKS_FORBIDDEN && rev >= API_REV_2025_11_25) {
		json_object *ex = json_object_new_object();
		eng_obj_set(ex, "taskSupport",
			    json_object_new_string(t->task_support == MCP_TASKS_REQUIRED
							   ? "required"
							   : "optional"),
			    &bad);
		eng_obj_set(o, "execution", ex, &bad);
	}
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* ---- tools/call ---------------------------------------------------------------- */

/* One call of a handler, for api_ctx_run_rounds (which may call it again). */
struct tool_run {
	api_tool_entry *tool;
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
	api_result_clear(t->res);
	api_result_init(t->res, t->rev);
}

void api_tools_call(eng_req *r)
{
	api_sess *ms = api_sess_of(r->sess);
	int rev = api_req_rev(r);
	json_object *params = api_get(r->msg, "params");
	const char *name = api_get_str(params, "name");
	json_object *args = api_get(params, "arguments");

	if (!name) {
		api_finish_invalid(r, "Invalid params: tools/call needs a tool name (a string without U+0000)", NULL);
		return;
	}
	if (args && !json_object_is_type(args, json_type_object)) {
		api_finish_invalid(r, "Invalid params: arguments must be an object", NULL);
		return;
	}
	api_tool_entry *tool = (api_tool_entry *)api_registry_find(ms->srv, &ms->srv->tools, name);
	if (!tool) {
		char msg[160];
		snprintf(msg, sizeof msg, "Unknown tool: %.100s", name);
		api_finish_invalid(r, msg, api_data_str("name", name));
		return;
	}
	json_object *own_args = NULL;
	if (!args)
		args = own_args = json_object_new_object();
	/* The arguments come from a model: checked before any handler (or
	 * task) sees them, and a mismatch is a tool error (SEP-1303). */
	int oom = !args;
	json_object *refusal = args ? api_tool_check_args(tool, args, rev, &oom) : NULL;
	if (refusal || oom) {
		if (refusal && api_req_modern(r))
			api_modern_decorate(ms->srv, "tools/call", refusal);
		if (refusal)
			eng_req_finish_result(r, refusal);
		else
			eng_req_finish_error(r, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}

	/* Tasks.  2025-11-25: the client asks with params.task, per the
	 * tool's taskSupport.  2026-07-28 (SEP-2663): the server decides, for
	 * requests that declare the extension; a legacy params.task is
	 * ignored, and a tool that only runs as a task is refused to a request
	 * that cannot take one. */
	int modern = api_req_modern(r);
	int declared = modern && api_tasks_declared(((const api_view *)r->proto)->caps);
	json_object *task = rev >= API_REV_2025_11_25 && !modern ? api_get(params, "task") : NULL;
	if (modern && !declared && tool->task_support == MCP_TASKS_REQUIRED) {
		eng_req_finish_error(r, API_JSONRPC_MISSING_CAPABILITY,
				     "Missing required client capability: this tool runs only as a "
				     "task (io.modelcontextprotocol/tasks)",
				     api_tasks_required_data());
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}
	if (!modern && ((task && tool->task_support == MCP_TASKS_FORBIDDEN) ||
			(!task && tool->task_support == MCP_TASKS_REQUIRED &&
			 rev >= API_REV_2025_11_25))) {
		eng_req_finish_error(r, MCP_JSONRPC_METHOD_NOT_FOUND,
				     task ? "This tool cannot run as a task"
					  : "This tool runs only as a task (send params.task)",
				     api_data_str("name", name));
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}
	/* Made a task before the handler runs, unless the handler decides
	 * when (MCP_TOOL_TASK_BY_HANDLER: after gathering input, say). */
	int up_front = task || (declared && tool->task_support != MCP_TASKS_FORBIDDEN &&
				!(tool->flags & MCP_TOOL_TASK_BY_HANDLER));
	if (task && !json_object_is_type(task, json_type_object)) {
		api_finish_invalid(r, "Invalid params: task must be an object with an optional "
				  "non-negative integer ttl",
			       NULL);
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}
	mcp_ctx ctx;
	api_ctx_begin(&ctx, r, params);
	ctx.tool = tool;
	ctx.item = &tool->base;
	if (api_ctx_admit(&ctx, MCP_ITEM_TOOL, name)) {
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}
	const char *why = NULL;
	int resumed = api_mrtr_begin(&ctx, params, "tools/call", name, args, &why);
	if (resumed != 0) {
		if (resumed < 0)
			api_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS, why, NULL);
		api_mrtr_end(&ctx);
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}
	int rc = up_front ? api_task_start(&ctx, task) : MCP_OK;
	if (rc != MCP_OK) {
		if (rc == MCP_EINVAL)
			api_ctx_end(&ctx, rc, NULL, MCP_JSONRPC_INVALID_PARAMS,
				    "Invalid params: task must be an object with an optional "
				    "non-negative integer ttl",
				    NULL);
		else if (rc == MCP_EBUSY)
			api_ctx_end(&ctx, rc, NULL, MCP_JSONRPC_SERVER_BUSY,
				    ctx.task_refusal[0] ? ctx.task_refusal
							: "Server busy: too many tasks",
				    NULL);
		else if (rc == MCP_ESYS && ctx.sess->srv->tstore)
			api_ctx_end(&ctx, rc, NULL, MCP_JSONRPC_INTERNAL_ERROR,
				    api_task_store_failure(ctx.sess->srv), NULL);
		else
			api_ctx_end(&ctx, rc == MCP_ECLOSED ? MCP_ECANCELED : rc, NULL, 0, NULL,
				    NULL);
		api_mrtr_end(&ctx);
		json_object_put(own_args);
		api_entry_unref(&tool->base);
		return;
	}
	mcp_result res;
	api_result_init(&res, rev);
	struct tool_run tr = { tool, &ctx, args, &res, rev };
	rc = api_ctx_run_rounds(&ctx, tool_invoke, tool_reset, &tr);
	if (ctx.task && modern)
		rc = api_task_rounds(&ctx, rc, tool_invoke, tool_reset, &tr);
	json_object *result = NULL;
	if (rc == MCP_EINPUT && !ctx.task && (result = api_mrtr_input_required(&ctx)))
		rc = MCP_OK;
	else
		rc = api_tool_outcome(&ctx, tool, &res, rc, &result);
	if (result)
		api_task_decorate(&ctx, result);
	api_ctx_end(&ctx, rc, result, res.err_code, res.err_message, res.err_data);
	res.err_data = NULL;
	api_result_clear(&res);
	api_mrtr_end(&ctx);
	json_object_put(own_args);
	api_entry_unref(&tool->base);
}
