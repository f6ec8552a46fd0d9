/*
 * tools.c - tool registration and removal, and how a tool is described in
 * tools/list for a negotiated revision.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

static void tool_destroy(mcp_entry *e)
{
	mcp_tool_entry *t = (mcp_tool_entry *)e;
	free(t->title);
	free(t->description);
	json_object_put(t->input_schema);
	json_object_put(t->output_schema);
	json_object_put(t->annotations);
	free(t);
}

/* Parses a JSON object text (schema, annotations); NULL text gives `dflt`
 * (may be NULL).  Returns MCP_EINVAL unless the text is a JSON object,
 * MCP_ENOMEM when parsing ran out of memory (json-c says so only through
 * errno). */
static int parse_schema(const char *text, const char *dflt, json_object **out)
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
		return MCP_EINVAL;
	}
	*out = o;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_add_tool(mcp_server *srv, const mcp_tool *tool)
{
	if (!srv || !tool || !tool->name || !*tool->name || !tool->fn)
		return MCP_EINVAL;
	mcp_tool_entry *t = calloc(1, sizeof *t);
	if (!t)
		return MCP_ENOMEM;
	if (mcp_entry_init(&t->base, tool->name, tool_destroy)) {
		free(t);
		return MCP_ENOMEM;
	}
	t->fn = tool->fn;
	t->user = tool->user;
	t->task_support = tool->task_support;
	if (tool->task_support < MCP_TASKS_FORBIDDEN || tool->task_support > MCP_TASKS_REQUIRED) {
		mcp_entry_unref(&t->base);
		return MCP_EINVAL;
	}
	int failed = 0;
	t->title = mcp_strdup_opt(tool->title, &failed);
	t->description = mcp_strdup_opt(tool->description, &failed);
	int rc = failed ? MCP_ENOMEM : MCP_OK;
	if (rc == MCP_OK)
		rc = parse_schema(tool->input_schema, "{\"type\":\"object\"}", &t->input_schema);
	if (rc == MCP_OK)
		rc = parse_schema(tool->output_schema, NULL, &t->output_schema);
	if (rc == MCP_OK)
		rc = parse_schema(tool->annotations, NULL, &t->annotations);
	if (rc != MCP_OK) {
		mcp_entry_unref(&t->base);
		return rc;
	}
	return mcp_registry_add(srv, &srv->tools, &t->base);
}

MCP_EXTERN int mcp_server_remove_tool(mcp_server *srv, const char *name)
{
	if (!srv || !name)
		return MCP_EINVAL;
	return mcp_registry_remove(srv, &srv->tools, name);
}

json_object *mcp_tool_describe(mcp_entry *e, int rev)
{
	mcp_tool_entry *t = (mcp_tool_entry *)e;
	int bad = 0;
	json_object *o = json_object_new_object();
	eng_obj_set(o, "name", json_object_new_string(e->key), &bad);
	if (rev >= MCP_REV_2025_06_18 && t->title)
		eng_obj_set(o, "title", json_object_new_string(t->title), &bad);
	if (t->description)
		eng_obj_set(o, "description", json_object_new_string(t->description), &bad);
	/* Deep copies: the registry's trees are read by every connection's
	 * thread, and json-c objects are not thread-safe to share. */
	eng_obj_set(o, "inputSchema", mcp_json_copy(t->input_schema), &bad);
	if (t->output_schema && rev >= MCP_REV_2025_06_18)
		eng_obj_set(o, "outputSchema", mcp_json_copy(t->output_schema), &bad);
	if (t->annotations)
		eng_obj_set(o, "annotations", mcp_json_copy(t->annotations), &bad);
	if (t->task_support != MCP_TASKS_FORBIDDEN && rev >= MCP_REV_2025_11_25) {
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
