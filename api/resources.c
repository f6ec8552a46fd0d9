/*
 * resources.c - static resources and URI templates: registration, matching
 * a URI against the templates (RFC 6570 level 1), the resources/read
 * contents builder and resources/read itself, the subscriptions of the
 * legacy revisions (resources/subscribe, unsubscribe) and the update
 * notifications sent for them (and, through notify.c, to listen streams).
 */
#include <stdlib.h>
#include <string.h>

#include "api/desc.h"
#include "api/internal.h"

static void resource_destroy(api_entry *e)
{
	api_resource_entry *r = (api_resource_entry *)e;
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

static api_resource_entry *entry_new(const char *key, const char *name, const char *title,
				     const char *description, const char *mime_type,
				     mcp_resource_fn read, void *user)
{
	api_resource_entry *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	if (api_entry_init(&r->base, key, resource_destroy)) {
		free(r);
		return NULL;
	}
	int failed = 0;
	r->name = api_strdup_opt(name, &failed);
	r->title = api_strdup_opt(title, &failed);
	r->description = api_strdup_opt(description, &failed);
	r->mime_type = api_strdup_opt(mime_type, &failed);
	r->read = read;
	r->user = user;
	if (failed) {
		api_entry_unref(&r->base);
		return NULL;
	}
	return r;
}

/* MCP_RESOURCE_NONBLOCKING, before the entry can be found. */
static void set_nonblocking(mcp_server *srv, api_resource_entry *r, unsigned flags)
{
	r->base.nonblocking = (flags & MCP_RESOURCE_NONBLOCKING) != 0;
	if (r->base.nonblocking)
		atomic_store(&srv->any_nonblocking, 1);
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
	if (!res->uri || !*res->uri || !res->name || !res->read || res->size < 0 ||
	    (res->flags & ~MCP_RESOURCE_NONBLOCKING))
		return MCP_EINVAL;
	api_resource_entry *r = entry_new(res->uri, res->name, res->title, res->description,
					  res->mime_type, res->read, res->user);
	if (!r)
		return MCP_ENOMEM;
	r->size = res->size;
	set_nonblocking(srv, r, res->flags);
	return api_registry_add(srv, &srv->resources, &r->base);
}

int api_resource_add_owned(mcp_server *srv, const char *uri, const char *name,
			   const char *title, const char *description, const char *mime_type,
			   int64_t size, mcp_resource_fn read, void *user,
			   void (*free_user)(void *), json_object *meta, int unlisted)
{
	api_resource_entry *r = entry_new(uri, name, title, description, mime_type, read, user);
	if (!r) {
		free_user(user);
		json_object_put(meta);
		return MCP_ENOMEM;
	}
	r->free_user = free_user;
	r->meta = meta;
	r->size = size;
	r->unlisted = unlisted;
	return api_registry_add(srv, &srv->resources, &r->base);
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
	    !template_valid(tpl->uri_template) || (tpl->flags & ~MCP_RESOURCE_NONBLOCKING))
		return MCP_EINVAL;
	api_resource_entry *r = entry_new(tpl->uri_template, tpl->name, tpl->title,
					  tpl->description, tpl->mime_type, tpl->read, tpl->user);
	if (!r)
		return MCP_ENOMEM;
	r->is_template = 1;
	r->complete = tpl->complete;
	set_nonblocking(srv, r, tpl->flags);
	return api_registry_add(srv, &srv->templates, &r->base);
}

MCP_EXTERN int mcp_server_remove_resource(mcp_server *srv, const char *uri)
{
	if (!srv || !uri)
		return MCP_EINVAL;
	return api_registry_remove(srv, &srv->resources, uri);
}

MCP_EXTERN int mcp_server_remove_resource_template(mcp_server *srv, const char *uri_template)
{
	if (!srv || !uri_template)
		return MCP_EINVAL;
	return api_registry_remove(srv, &srv->templates, uri_template);
}

json_object *api_resource_describe(api_entry *e, int rev)
{
	api_resource_entry *r = (api_resource_entry *)e;
	json_object *o = json_object_new_object();
	if (!o)
		return NULL;
	eng_obj_add(o, r->is_template ? "uriTemplate" : "uri",
			       json_object_new_string(e->key));
	eng_obj_add(o, "name", json_object_new_string(r->name));
	if (rev >= API_REV_2025_06_18)
		api_json_add_str(o, "title", r->title);
	api_json_add_str(o, "description", r->description);
	api_json_add_str(o, "mimeType", r->mime_type);
	if (!r->is_template && r->size > 0)
		eng_obj_add(o, "size", json_object_new_int64(r->size));
	if (r->meta) /* a copy: listings are built on many threads */
		eng_obj_add(o, "_meta", api_json_copy(r->meta));
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

static int match_entry(api_entry *e, void *arg)
{
	struct tmatch *m = arg;
	return match_template(e->key, m->uri, NULL);
}

api_resource_entry *api_template_match(mcp_server *srv, const char *uri, json_object **vars)
{
	struct tmatch m = { uri };
	*vars = NULL;
	api_entry *e = api_registry_match(srv, &srv->templates, match_entry, &m);
	if (!e)
		return NULL;
	json_object *v = json_object_new_object();
	if (!v) {
		api_entry_unref(e);
		return NULL;
	}
	match_template(e->key, uri, v);
	*vars = v;
	return (api_resource_entry *)e;
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
	api_json_add_str(c, "mimeType", mime_type);
	eng_obj_add(c, key, value);
	if (!out->items && !(out->items = json_object_new_array())) {
		json_object_put(c);
		return MCP_ENOMEM;
	}
	eng_arr_add(out->items, c);
	return MCP_OK;
}

int api_contents_add_item(mcp_contents *out, const char *uri, const char *mime_type,
			  const void *data, size_t len, int text, json_object *meta)
{
	json_object *v;
	if (text) {
		v = json_object_new_string_len(data, (int)len);
	} else {
		char *b64 = api_base64(data, len);
		v = b64 ? json_object_new_string(b64) : NULL;
		free(b64);
	}
	int rc = add_contents(out, uri, mime_type, text ? "text" : "blob", v);
	if (rc == MCP_OK && meta) {
		size_t n = json_object_array_length(out->items);
		eng_obj_add(json_object_array_get_idx(out->items, n - 1), "_meta",
			    api_json_copy(meta));
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
	char *b64 = api_base64(data, len);
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
	int rc = api_rpc_error_set(&out->err, code, message, data);
	return rc == MCP_OK ? MCP_ERESULT : rc;
}

/* ---- resources/read ------------------------------------------------------------ */

struct read_run {
	api_resource_entry *res;
	mcp_ctx *ctx;
	const char *uri;
	json_object *vars;
	mcp_contents *out;
};

static int read_invoke(void *arg)
{
	struct read_run *t = arg;
	return t->res->read(t->ctx, t->uri, t->vars, t->out, t->res->user);
}

static void read_reset(void *arg)
{
	struct read_run *t = arg;
	json_object_put(t->out->items);
	api_rpc_error_clear(&t->out->err);
	t->out->items = json_object_new_array();
}

void api_resources_read(eng_req *r)
{
	api_sess *ms = api_sess_of(r->sess);
	mcp_server *srv = ms->srv;
	json_object *params = api_get(r->msg, "params");
	const char *uri = api_get_str(params, "uri");
	if (!uri || !api_uri_valid(uri)) {
		api_finish_invalid(r, "Invalid params: uri must be a URI string (without U+0000)", NULL);
		return;
	}
	json_object *vars = NULL;
	api_resource_entry *res = (api_resource_entry *)api_registry_find(srv, &srv->resources, uri);
	if (res)
		vars = json_object_new_object();
	else
		res = api_template_match(srv, uri, &vars);
	/* 2026-07-28 standardizes on -32602 for an unknown resource. */
	int not_found_code = api_req_modern(r) ? MCP_JSONRPC_INVALID_PARAMS
					   : MCP_JSONRPC_RESOURCE_NOT_FOUND;
	if (!res) {
		eng_req_finish_error(r, not_found_code, "Resource not found", api_data_str("uri", uri));
		return;
	}
	mcp_ctx ctx;
	api_ctx_begin(&ctx, r, params);
	ctx.target = uri; /* the URI read, not the template it matched */
	ctx.item = &res->base;
	if (api_ctx_admit(&ctx, res->is_template ? MCP_ITEM_TEMPLATE : MCP_ITEM_RESOURCE,
			  res->base.key)) {
		json_object_put(vars);
		api_entry_unref(&res->base);
		return;
	}
	mcp_contents out = { .items = json_object_new_array() };
	const char *why = NULL;
	int resumed = api_mrtr_begin(&ctx, params, "resources/read", uri, NULL, &why);
	if (resumed != 0) {
		if (resumed < 0)
			api_ctx_end(&ctx, MCP_EINVAL, NULL, MCP_JSONRPC_INVALID_PARAMS, why, NULL);
		api_mrtr_end(&ctx);
		json_object_put(out.items);
		json_object_put(vars);
		api_entry_unref(&res->base);
		return;
	}
	struct read_run rr = { res, &ctx, uri, vars, &out };
	int rc = out.items ? api_ctx_run_rounds(&ctx, read_invoke, read_reset, &rr) : MCP_ENOMEM;
	json_object *result = NULL;
	if (rc == MCP_EINPUT && (result = api_mrtr_input_required(&ctx))) {
		rc = MCP_OK;
	} else if (rc == MCP_OK) {
		result = json_object_new_object();
		eng_obj_add(result, "contents", out.items);
		out.items = NULL;
	}
	if (rc == MCP_ENOENT && !out.err.code)
		api_ctx_end(&ctx, rc, NULL, not_found_code, "Resource not found",
			    api_data_str("uri", uri));
	else
		api_ctx_end(&ctx, rc, result, out.err.code, out.err.message, out.err.data);
	out.err.data = NULL; /* taken by api_ctx_end */
	api_rpc_error_clear(&out.err);
	api_mrtr_end(&ctx);
	json_object_put(out.items);
	json_object_put(vars);
	api_entry_unref(&res->base);
}

/* ---- subscriptions (the legacy revisions) ----------------------------------------- */

static void not_found(api_answer *out, const char *uri)
{
	json_object *data = json_object_new_object();
	eng_obj_add(data, "uri", json_object_new_string(uri));
	api_answer_error(out, MCP_JSONRPC_RESOURCE_NOT_FOUND, "Resource not found",
			 data);
}

static int resource_exists(mcp_server *srv, const char *uri)
{
	api_entry *e = api_registry_find(srv, &srv->resources, uri);
	if (e) {
		api_entry_unref(e);
		return 1;
	}
	json_object *vars;
	api_resource_entry *t = api_template_match(srv, uri, &vars);
	json_object_put(vars);
	if (t)
		api_entry_unref(&t->base);
	return t != NULL;
}

void api_resources_subscribe(eng_session *s, json_object *params, const api_view *v,
			     api_answer *out)
{
	(void)v;
	api_sess *ms = api_sess_of(s);
	const char *uri = api_get_str(params, "uri");
	if (!uri || !api_uri_valid(uri)) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: uri must be a URI string (without U+0000)", NULL);
		return;
	}
	if (!resource_exists(ms->srv, uri)) {
		not_found(out, uri);
		return;
	}
	pthread_mutex_lock(&ms->mu);
	int have = 0;
	for (size_t i = 0; i < ms->nsubs && !have; i++)
		have = strcmp(ms->subs[i], uri) == 0;
	int rc = MCP_OK;
	if (!have) {
		if (ms->nsubs == ms->subs_cap) {
			size_t cap = ms->subs_cap ? ms->subs_cap * 2 : 8;
			char **n = realloc(ms->subs, cap * sizeof *n);
			if (n) {
				ms->subs = n;
				ms->subs_cap = cap;
			}
		}
		char *d = ms->nsubs < ms->subs_cap ? strdup(uri) : NULL;
		if (d)
			ms->subs[ms->nsubs++] = d;
		else
			rc = MCP_ENOMEM;
	}
	pthread_mutex_unlock(&ms->mu);
	if (rc != MCP_OK)
		api_answer_error(out, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	else
		api_answer_result(out, json_object_new_object());
}

void api_resources_unsubscribe(eng_session *s, json_object *params, const api_view *v,
			       api_answer *out)
{
	(void)v;
	api_sess *ms = api_sess_of(s);
	const char *uri = api_get_str(params, "uri");
	if (!uri) {
		api_answer_error(out, MCP_JSONRPC_INVALID_PARAMS,
				 "Invalid params: uri (a string without U+0000) is required", NULL);
		return;
	}
	pthread_mutex_lock(&ms->mu);
	for (size_t i = 0; i < ms->nsubs; i++) {
		if (strcmp(ms->subs[i], uri) == 0) {
			free(ms->subs[i]);
			ms->subs[i] = ms->subs[--ms->nsubs];
			break;
		}
	}
	pthread_mutex_unlock(&ms->mu);
	api_answer_result(out, json_object_new_object());
}

void api_resource_updated_here(mcp_server *srv, const char *uri)
{
	pthread_mutex_lock(&srv->sess_mu);
	for (api_sess *ms = srv->sessions; ms; ms = ms->next) {
		if (atomic_load(&ms->state) != API_SESS_READY)
			continue;
		int subscribed = 0;
		pthread_mutex_lock(&ms->mu);
		for (size_t i = 0; i < ms->nsubs && !subscribed; i++)
			subscribed = strcmp(ms->subs[i], uri) == 0;
		pthread_mutex_unlock(&ms->mu);
		if (subscribed) {
			json_object *p = json_object_new_object();
			eng_obj_add(p, "uri", json_object_new_string(uri));
			eng_session_notify(ms->es, api_notification("notifications/resources/updated", p));
		}
	}
	pthread_mutex_unlock(&srv->sess_mu);
	api_listen_resource_updated(srv, uri);
}

MCP_EXTERN int mcp_server_resource_updated(mcp_server *srv, const char *uri)
{
	if (!srv || !uri)
		return MCP_EINVAL;
	api_resource_updated_here(srv, uri);
	/* And to the subscribers of every process sharing a store. */
	if (srv->tstore)
		api_tstore_broadcast_updated(srv->tstore, uri);
	return MCP_OK;
}
