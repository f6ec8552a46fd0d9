/*
 * tools.c - the tool registry: registration, removal and lookup, safe while
 * the server runs, and the tools/list payload for a negotiated revision.
 *
 * Entries are reference-counted so a call keeps its tool alive even if the
 * tool is removed mid-call.
 */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void mcp_tool_entry_unref(mcp_tool_entry *t)
{
	if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
		return;
	free(t->name);
	free(t->title);
	free(t->description);
	json_object_put(t->input_schema);
	json_object_put(t->output_schema);
	free(t);
}

/* Parses a schema text; NULL text gives `dflt` (may be NULL).  Returns
 * MCP_EINVAL unless the text is a JSON object. */
static int parse_schema(const char *text, const char *dflt, json_object **out)
{
	*out = NULL;
	if (!text)
		text = dflt;
	if (!text)
		return MCP_OK;
	json_object *o = json_tokener_parse(text);
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
	atomic_init(&t->refs, 1);
	t->fn = tool->fn;
	t->user = tool->user;
	int rc = parse_schema(tool->input_schema, "{\"type\":\"object\"}", &t->input_schema);
	if (rc == MCP_OK)
		rc = parse_schema(tool->output_schema, NULL, &t->output_schema);
	if (rc == MCP_OK) {
		t->name = strdup(tool->name);
		t->title = dup_or_null(tool->title);
		t->description = dup_or_null(tool->description);
		if (!t->name || (tool->title && !t->title) ||
		    (tool->description && !t->description))
			rc = MCP_ENOMEM;
	}
	if (rc != MCP_OK) {
		mcp_tool_entry_unref(t);
		return rc;
	}

	pthread_rwlock_wrlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->ntools; i++) {
		if (strcmp(srv->tools[i]->name, t->name) == 0) {
			pthread_rwlock_unlock(&srv->reg_lock);
			mcp_tool_entry_unref(t);
			return MCP_EEXIST;
		}
	}
	if (srv->ntools == srv->tools_cap) {
		size_t cap = srv->tools_cap ? srv->tools_cap * 2 : 16;
		mcp_tool_entry **n = realloc(srv->tools, cap * sizeof *n);
		if (!n) {
			pthread_rwlock_unlock(&srv->reg_lock);
			mcp_tool_entry_unref(t);
			return MCP_ENOMEM;
		}
		srv->tools = n;
		srv->tools_cap = cap;
	}
	srv->tools[srv->ntools++] = t;
	pthread_rwlock_unlock(&srv->reg_lock);
	return MCP_OK;
}

MCP_EXTERN int mcp_server_remove_tool(mcp_server *srv, const char *name)
{
	if (!srv || !name)
		return MCP_EINVAL;
	pthread_rwlock_wrlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->ntools; i++) {
		if (strcmp(srv->tools[i]->name, name) == 0) {
			mcp_tool_entry *t = srv->tools[i];
			memmove(&srv->tools[i], &srv->tools[i + 1],
				(srv->ntools - i - 1) * sizeof *srv->tools);
			srv->ntools--;
			pthread_rwlock_unlock(&srv->reg_lock);
			mcp_tool_entry_unref(t);
			return MCP_OK;
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return MCP_ENOENT;
}

mcp_tool_entry *mcp_tools_find(mcp_server *srv, const char *name)
{
	mcp_tool_entry *found = NULL;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->ntools; i++) {
		if (strcmp(srv->tools[i]->name, name) == 0) {
			found = srv->tools[i];
			atomic_fetch_add(&found->refs, 1);
			break;
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return found;
}

json_object *mcp_tools_list_json(mcp_server *srv, int rev)
{
	json_object *arr = json_object_new_array();
	if (!arr)
		return NULL;
	pthread_rwlock_rdlock(&srv->reg_lock);
	for (size_t i = 0; i < srv->ntools; i++) {
		mcp_tool_entry *t = srv->tools[i];
		json_object *o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "name", json_object_new_string(t->name));
		if (t->title && rev >= MCP_REV_2025_06_18)
			json_object_object_add(o, "title", json_object_new_string(t->title));
		if (t->description)
			json_object_object_add(o, "description",
					       json_object_new_string(t->description));
		/* Deep copies: the registry's trees are shared by every
		 * connection's thread, and json-c objects are not thread-safe. */
		json_object *in = NULL;
		json_object_deep_copy(t->input_schema, &in, NULL);
		json_object_object_add(o, "inputSchema", in);
		if (t->output_schema && rev >= MCP_REV_2025_06_18) {
			json_object *outs = NULL;
			json_object_deep_copy(t->output_schema, &outs, NULL);
			json_object_object_add(o, "outputSchema", outs);
		}
		json_object_array_add(arr, o);
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return arr;
}

void mcp_tools_free_all(mcp_server *srv)
{
	for (size_t i = 0; i < srv->ntools; i++)
		mcp_tool_entry_unref(srv->tools[i]);
	free(srv->tools);
	srv->tools = NULL;
	srv->ntools = srv->tools_cap = 0;
}
