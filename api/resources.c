/*
 * resources.c - static resources and URI templates: registration, matching
 * a URI against the templates (RFC 6570 level 1), the resources/read
 * contents builder, and update notifications to subscribed connections.
 */
#include <stdlib.h>
#include <string.h>

#include "api/desc.h"
#include "api/internal.h"

static void resource_destroy(mcp_entry *e)
{
	mcp_resource_entry *r = (mcp_resource_entry *)e;
	free(r->name);
	free(r->title);
	free(r->description);
	free(r->mime_type);
	if (r->free_user)
		r->free_user(r->user);
	json_object_put(r->meta);
	free(r);
}

/* A level-1 template: literal text and {name} expressions, names made of
 * letters, digits, '_' and '.', no two expressions side by side (the split
 * between them would be ambiguous). */
static int template_valid(const char *t)
{
	int prev_expr = 0, nexpr = 0;
	for (const char *p = t; *p; p++) {
		if (*p == '}')
			return 0;
		if (*p != '{') {
			prev_expr = 0;
			continue;
		}
		if (prev_expr)
			return 0;
		const char *q = ++p;
		while (*q && *q != '}') {
			if (!(*q == '_' || *q == '.' || (*q >= '0' && *q <= '9') ||
			      (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
				return 0;
			q++;
		}
		if (*q != '}' || q == p)
			return 0;
		p = q;
		prev_expr = 1;
		nexpr++;
	}
	return nexpr > 0;
}

static mcp_resource_entry *entry_new(const char *key, const char *name, const char *title,
				     const char *description, const char *mime_type,
				     mcp_resource_fn read, void *user)
{
	mcp_resource_entry *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	if (mcp_entry_init(&r->base, key, resource_destroy)) {
		free(r);
		return NULL;
	}
	int failed = 0;
	r->name = mcp_strdup_opt(name, &failed);
	r->title = mcp_strdup_opt(title, &failed);
	r->description = mcp_strdup_opt(description, &failed);
	r->mime_type = mcp_strdup_opt(mime_type, &failed);
	r->read = read;
	r->user = user;
	if (failed) {
		mcp_entry_unref(&r->base);
		return NULL;
	}
	return r;
}

MCP_EXTERN int mcp_server_add_resource(mcp_server *srv, const mcp_resource *caller)
{
	mcp_resource desc;
	if (!srv)
		return MCP_EINVAL;
	int drc = desc_read(&desc, sizeof desc, caller, DESC_RESOURCE_V1);
	if (drc != MCP_OK)
		return drc;
	const mcp_resource *res = &desc;
	if (!res->uri || !*res->uri || !res->name || !res->read || res->size < 0)
		return MCP_EINVAL;
	mcp_resource_entry *r = entry_new(res->uri, res->name, res->title, res->description,
					  res->mime_type, res->read, res->user);
	if (!r)
		return MCP_ENOMEM;
	r->size = res->size;
	return mcp_registry_add(srv, &srv->resources, &r->base);
}

int mcp_resource_add_owned(mcp_server *srv, const char *uri, const char *name,
			   const char *title, const char *description, const char *mime_type,
			   int64_t size, mcp_resource_fn read, void *user,
			   void (*free_user)(void *), json_object *meta, int unlisted)
{
	mcp_resource_entry *r = entry_new(uri, name, title, description, mime_type, read, user);
	if (!r) {
		free_user(user);
		json_object_put(meta);
		return MCP_ENOMEM;
	}
	r->free_user = free_user;
	r->meta = meta;
	r->size = size;
	r->unlisted = unlisted;
	return mcp_registry_add(srv, &srv->resources, &r->base);
}

MCP_EXTERN int mcp_server_add_resource_template(mcp_server *srv,
						const mcp_resource_template *caller)
{
	mcp_resource_template desc;
	if (!srv)
		return MCP_EINVAL;
	int drc = desc_read(&desc, sizeof desc, caller, DESC_TEMPLATE_V1);
	if (drc != MCP_OK)
		return drc;
	const mcp_resource_template *tpl = &desc;
	if (!tpl->uri_template || !tpl->name || !tpl->read ||
	    !template_valid(tpl->uri_template))
		return MCP_EINVAL;
	mcp_resource_entry *r = entry_new(tpl->uri_template, tpl->name, tpl->title,
					  tpl->description, tpl->mime_type, tpl->read, tpl->user);
	if (!r)
		return MCP_ENOMEM;
	r->is_template = 1;
	r->complete = tpl->complete;
	return mcp_registry_add(srv, &srv->templates, &r->base);
}

MCP_EXTERN int mcp_server_remove_resource(mcp_server *srv, const char *uri)
{
	if (!srv || !uri)
		return MCP_EINVAL;
	return mcp_registry_remove(srv, &srv->resources, uri);
}

MCP_EXTERN int mcp_server_remove_resource_template(mcp_server *srv, const char *uri_template)
{
	if (!srv || !uri_template)
		return MCP_EINVAL;
	return mcp_registry_remove(srv, &srv->templates, uri_template);
}

json_object *mcp_resource_describe(mcp_entry *e, int rev)
{
	mcp_resource_entry *r = (mcp_resource_entry *)e;
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_add(o, r->is_template ? "uriTemplate" : "uri",
			       json_object_new_string(e->key));
	eng_obj_add(o, "name", json_object_new_string(r->name));
	if (rev >= MCP_REV_2025_06_18)
		mcp_json_add_str(o, "title", r->title);
	mcp_json_add_str(o, "description", r->description);
	mcp_json_add_str(o, "mimeType", r->mime_type);
	if (!r->is_template && r->size > 0)
		eng_obj_add(o, "size", json_object_new_int64(r->size));
	if (r->meta) /* a copy: listings are built on many threads */
		eng_obj_add(o, "_meta", mcp_json_copy(r->meta));
	return o;
}

/* Matches `uri` against a template; on success fills `vars`. */
static int match_template(const char *t, const char *uri, json_object *vars)
{
	while (*t) {
		if (*t != '{') {
			if (*uri != *t)
				return 0;
			t++;
			uri++;
			continue;
		}
		const char *name = t + 1;
		const char *close = strchr(name, '}');
		t = close + 1;
		/* The variable runs to the next literal character of the
		 * template (or to the end), never across '/', '?' or '#'. */
		const char *end = uri;
		while (*end && *end != '/' && *end != '?' && *end != '#' && (!*t || *end != *t))
			end++;
		if (end == uri)
			return 0;
		if (vars) {
			char key[128];
			size_t kn = (size_t)(close - name);
			if (kn >= sizeof key)
				return 0;
			memcpy(key, name, kn);
			key[kn] = 0;
			eng_obj_add(vars, key,
					       json_object_new_string_len(uri, (int)(end - uri)));
		}
		uri = end;
	}
	return *uri == 0;
}

struct tmatch {
	const char *uri;
};

static int match_entry(mcp_entry *e, void *arg)
{
	struct tmatch *m = arg;
	return match_template(e->key, m->uri, NULL);
}

mcp_resource_entry *mcp_template_match(mcp_server *srv, const char *uri, json_object **vars)
{
	struct tmatch m = { uri };
	*vars = NULL;
	mcp_entry *e = mcp_registry_match(srv, &srv->templates, match_entry, &m);
	if (!e)
		return NULL;
	json_object *v = json_object_new_object();
	if (!v) {
		mcp_entry_unref(e);
		return NULL;
	}
	match_template(e->key, uri, v);
	*vars = v;
	return (mcp_resource_entry *)e;
}

static int add_contents(mcp_contents *out, const char *uri, const char *mime_type,
			const char *key, json_object *value)
{
	json_object *c = json_object_new_object();
	if (!c || !value) {
		json_object_put(c);
		json_object_put(value);
		return MCP_ENOMEM;
	}
	eng_obj_add(c, "uri", json_object_new_string(uri));
	mcp_json_add_str(c, "mimeType", mime_type);
	eng_obj_add(c, key, value);
	if (!out->items && !(out->items = json_object_new_array())) {
		json_object_put(c);
		return MCP_ENOMEM;
	}
	eng_arr_add(out->items, c);
	return MCP_OK;
}

int mcp_contents_add_item(mcp_contents *out, const char *uri, const char *mime_type,
			  const void *data, size_t len, int text, json_object *meta)
{
	json_object *v;
	if (text) {
		v = json_object_new_string_len(data, (int)len);
	} else {
		char *b64 = mcp_base64(data, len);
		v = b64 ? json_object_new_string(b64) : NULL;
		free(b64);
	}
	int rc = add_contents(out, uri, mime_type, text ? "text" : "blob", v);
	if (rc == MCP_OK && meta) {
		size_t n = json_object_array_length(out->items);
		eng_obj_add(json_object_array_get_idx(out->items, n - 1), "_meta",
			    mcp_json_copy(meta));
	}
	return rc;
}

MCP_EXTERN int mcp_contents_add_text(mcp_contents *out, const char *uri,
				     const char *mime_type, const char *text)
{
	if (!out || !uri || !text)
		return MCP_EINVAL;
	return add_contents(out, uri, mime_type, "text", json_object_new_string(text));
}

MCP_EXTERN int mcp_contents_add_blob(mcp_contents *out, const char *uri,
				     const char *mime_type, const void *data, size_t len)
{
	if (!out || !uri || (!data && len))
		return MCP_EINVAL;
	char *b64 = mcp_base64(data, len);
	if (!b64)
		return MCP_ENOMEM;
	json_object *v = json_object_new_string(b64);
	free(b64);
	return add_contents(out, uri, mime_type, "blob", v);
}

MCP_EXTERN int mcp_contents_set_error(mcp_contents *out, int code, const char *message,
				      json_object *data)
{
	if (!out) {
		json_object_put(data);
		return MCP_EINVAL;
	}
	int rc = mcp_rpc_error_set(&out->err, code, message, data);
	return rc == MCP_OK ? MCP_ERESULT : rc;
}
