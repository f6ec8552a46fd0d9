/*
 * authz.c - authorization on the server: its configuration (the protected
 * resource, the verifier, scopes per item, request hooks), the principal
 * of each request and what it may reach, and the one entry point the HTTP
 * transport calls per request.
 *
 * The configuration lives in one block the server points to, made at the
 * first setter and never moved, so readers on any thread need no lock for
 * what is fixed before a run; the scope table changes while serving and is
 * guarded by the registries' lock, which every list and call already
 * takes; the key set swaps inside the verifier (api/jwt/jwt.c), which the
 * key fetcher (api/auth-keys.c) feeds from its own thread; the
 * introspection cache (api/auth-introspect.c) has its own lock.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/auth.h"
#include "api/internal.h"

/* Principals a session may see in turn (its token refreshed, or stepped up
 * to more scopes); past this the session must be started again. */
#define MAX_BINDINGS 256

typedef struct scope_rule {
	int kind;                   /* mcp_item_kind */
	char *key;
	char **scopes;
	size_t n;
} scope_rule;

struct auth_conf {
	char *resource;             /* NULL: authorization off */
	char **servers;
	size_t nservers;
	char **supported;
	size_t nsupported;
	char **required;            /* every token must hold these */
	size_t nrequired;
	char *name, *documentation;
	char *issuer;
	int64_t skew_ms;
	int strict_typ;
	auth_jwt *jwt;
	int jwt_keys;               /* a key set was given (text, file or URL) */
	/* The fetched key set (api/auth-keys.c): its settings, then the
	 * fetcher once mcp_server_set_auth_jwks_url ran. */
	auth_keysrc_conf fetch;
	auth_keysrc *keysrc;
	auth_introspect *introspect;
	mcp_auth_verify_fn verify;
	void *verify_user;
	mcp_before_fn before;
	mcp_after_fn after;
	void *hook_user;
	/* Under srv->reg_lock: */
	scope_rule *rules;
	size_t nrules;
};

struct auth_binding {
	mcp_principal *current;     /* the latest; counted in `all` */
	mcp_principal **all;        /* every one bound, kept for the session's
				       life: handlers borrow them */
	size_t n;
};

static struct auth_conf *conf_of(mcp_server *srv)
{
	return atomic_load(&srv->auth);
}

/* The configuration block, made on first use.  Made by compare-and-swap so
 * that two threads setting scopes at once agree on one block. */
static struct auth_conf *conf_get(mcp_server *srv)
{
	struct auth_conf *c = atomic_load(&srv->auth);
	if (c)
		return c;
	struct auth_conf *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->skew_ms = 60000;
	n->fetch = (auth_keysrc_conf){ .miss_interval_ms = 60000, .miss_wait_ms = 3000,
				       .ttl_min_ms = 300000, .ttl_default_ms = 3600000,
				       .ttl_max_ms = 86400000, .timeout_ms = 10000 };
	n->jwt = auth_jwt_new();
	if (!n->jwt) {
		free(n);
		return NULL;
	}
	if (!atomic_compare_exchange_strong(&srv->auth, &c, n)) {
		auth_jwt_free(n->jwt);
		free(n);
		return c;
	}
	return n;
}

/* For the setters that only work before a run. */
static int conf_for_setting(mcp_server *srv, struct auth_conf **out)
{
	if (!srv)
		return MCP_EINVAL;
	if (atomic_load(&srv->running))
		return MCP_ESTATE;
	*out = conf_get(srv);
	return *out ? MCP_OK : MCP_ENOMEM;
}

void api_authz_free(mcp_server *srv)
{
	struct auth_conf *c = conf_of(srv);
	if (!c)
		return;
	free(c->resource);
	auth_strv_free(c->servers, c->nservers);
	auth_strv_free(c->supported, c->nsupported);
	auth_strv_free(c->required, c->nrequired);
	free(c->name);
	free(c->documentation);
	free(c->issuer);
	/* The fetcher writes into the verifier: it goes first. */
	auth_keysrc_free(c->keysrc);
	auth_introspect_free(c->introspect);
	auth_jwt_free(c->jwt);
	for (size_t i = 0; i < c->nrules; i++) {
		free(c->rules[i].key);
		auth_strv_free(c->rules[i].scopes, c->rules[i].n);
	}
	free(c->rules);
	free(c);
	atomic_store(&srv->auth, NULL);
}

/* ---- configuration ----------------------------------------------------------- */

static int replace_str(char **slot, const char *value)
{
	char *d = NULL;
	if (value && !(d = strdup(value)))
		return MCP_ENOMEM;
	free(*slot);
	*slot = d;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_resource(mcp_server *srv, const char *uri)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (!auth_resource_uri_valid(uri))
		return MCP_EINVAL;
	return replace_str(&c->resource, uri);
}

MCP_EXTERN int mcp_server_add_auth_server(mcp_server *srv, const char *issuer_url)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (!auth_resource_uri_valid(issuer_url))
		return MCP_EINVAL;
	for (size_t i = 0; i < c->nservers; i++)
		if (strcmp(c->servers[i], issuer_url) == 0)
			return MCP_OK;
	char *d = strdup(issuer_url);
	char **g = d ? realloc(c->servers, (c->nservers + 1) * sizeof *g) : NULL;
	if (!g) {
		free(d);
		return MCP_ENOMEM;
	}
	g[c->nservers++] = d;
	c->servers = g;
	return MCP_OK;
}

static int set_scope_list(mcp_server *srv, const char *scopes, int required)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	char **v;
	size_t n;
	if ((rc = auth_scopes_parse(scopes, &v, &n)) != MCP_OK)
		return rc;
	char ***slot = required ? &c->required : &c->supported;
	size_t *count = required ? &c->nrequired : &c->nsupported;
	auth_strv_free(*slot, *count);
	*slot = v;
	*count = n;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_scopes_supported(mcp_server *srv, const char *scopes)
{
	return set_scope_list(srv, scopes, 0);
}

MCP_EXTERN int mcp_server_set_auth_required_scopes(mcp_server *srv, const char *scopes)
{
	return set_scope_list(srv, scopes, 1);
}

MCP_EXTERN int mcp_server_set_auth_resource_info(mcp_server *srv, const char *name,
						 const char *documentation_url)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (documentation_url && !auth_resource_uri_valid(documentation_url))
		return MCP_EINVAL;
	char *n = NULL, *d = NULL;
	if ((name && !(n = strdup(name))) || (documentation_url && !(d = strdup(documentation_url)))) {
		free(n);
		return MCP_ENOMEM;
	}
	free(c->name);
	free(c->documentation);
	c->name = n;
	c->documentation = d;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_issuer(mcp_server *srv, const char *issuer)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (issuer && !*issuer)
		return MCP_EINVAL;
	return replace_str(&c->issuer, issuer);
}

MCP_EXTERN int mcp_server_set_auth_clock_skew_ms(mcp_server *srv, int64_t ms)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (ms < 0 || ms > 600000)
		return MCP_EINVAL;
	c->skew_ms = ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_strict_typ(mcp_server *srv, int strict)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	c->strict_typ = strict != 0;
	return MCP_OK;
}

/* The key setters work while running (rotation), but the block that holds
 * the verifier must exist before the run: readers load it without a lock. */
static int conf_for_keys(mcp_server *srv, struct auth_conf **out)
{
	if (!srv)
		return MCP_EINVAL;
	*out = conf_of(srv);
	if (*out)
		return MCP_OK;
	return conf_for_setting(srv, out);
}

MCP_EXTERN int mcp_server_set_auth_jwks_text(mcp_server *srv, const char *jwks)
{
	struct auth_conf *c;
	int rc = conf_for_keys(srv, &c);
	if (rc)
		return rc;
	if (!jwks)
		return MCP_EINVAL;
	rc = auth_jwt_set_jwks(c->jwt, jwks, strlen(jwks), NULL);
	/* Written once, before a run: a rotation while running finds it set. */
	if (rc == MCP_OK && !c->jwt_keys)
		c->jwt_keys = 1;
	return rc;
}

MCP_EXTERN int mcp_server_set_auth_jwks_file(mcp_server *srv, const char *path)
{
	struct auth_conf *c;
	int rc = conf_for_keys(srv, &c);
	if (rc == MCP_OK && (rc = auth_jwt_set_jwks_file(c->jwt, path, NULL)) == MCP_OK &&
	    !c->jwt_keys)
		c->jwt_keys = 1;
	return rc;
}

MCP_EXTERN int mcp_server_set_auth_jwks_url(mcp_server *srv, const char *url)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (c->keysrc || (!url && !c->issuer))
		return MCP_ESTATE;
	if (url && !auth_fetch_url_allowed(url)) {
		char why[600];
		snprintf(why, sizeof why,
			 "%s is not an https URL (plain http only to a loopback host)", url);
		auth_jwt_note_error(c->jwt, why);
		return MCP_EINVAL;
	}
#ifndef HAVE_CURL
	return MCP_ENOTSUP;
#else
	auth_keysrc_conf kc = c->fetch;
	kc.jwks_url = url;
	kc.issuer = c->issuer;
	rc = auth_keysrc_start(c->jwt, &kc, &c->keysrc);
	if (c->keysrc)
		c->jwt_keys = 1;
	/* A refused document is a bad argument to the caller; a failed
	 * exchange keeps its own code. */
	return rc == MCP_EBUSY ? MCP_EINVAL : rc;
#endif
}

MCP_EXTERN int mcp_server_set_auth_jwks_refresh(mcp_server *srv, int64_t min_interval_ms,
						int64_t wait_ms)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (c->keysrc)
		return MCP_ESTATE;
	if (min_interval_ms < 1000 || min_interval_ms > 86400000 || wait_ms < 0 || wait_ms > 10000)
		return MCP_EINVAL;
	c->fetch.miss_interval_ms = min_interval_ms;
	c->fetch.miss_wait_ms = wait_ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_jwks_lifetime(mcp_server *srv, int64_t min_ms,
						 int64_t default_ms, int64_t max_ms)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (c->keysrc)
		return MCP_ESTATE;
	if (min_ms < 1000 || default_ms < min_ms || max_ms < default_ms || max_ms > 604800000)
		return MCP_EINVAL;
	c->fetch.ttl_min_ms = min_ms;
	c->fetch.ttl_default_ms = default_ms;
	c->fetch.ttl_max_ms = max_ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_keys_notify(mcp_server *srv, mcp_auth_keys_fn fn, void *user)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (c->keysrc)
		return MCP_ESTATE;
	c->fetch.notify = fn;
	c->fetch.notify_user = fn ? user : NULL;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_introspection(mcp_server *srv, const char *url,
						 const char *client_id,
						 const char *client_secret)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (!auth_fetch_url_allowed(url) || (client_id && !*client_id) ||
	    (client_secret && !client_id))
		return MCP_EINVAL;
	auth_introspect *ai = auth_introspect_new(url, client_id, client_secret);
	if (!ai)
		return MCP_ENOMEM;
	auth_introspect_free(c->introspect);
	c->introspect = ai;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_introspection_cache(mcp_server *srv, size_t max_entries,
						       int64_t max_ttl_ms)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	if (!c->introspect)
		return MCP_ESTATE;
	if (max_entries < 1 || max_entries > 1000000 || max_ttl_ms < 0 || max_ttl_ms > 86400000)
		return MCP_EINVAL;
	auth_introspect_set_cache(c->introspect, max_entries, max_ttl_ms);
	return MCP_OK;
}

MCP_EXTERN int mcp_server_reload_auth_keys(mcp_server *srv)
{
	if (!srv)
		return MCP_EINVAL;
	struct auth_conf *c = conf_of(srv);
	return c ? auth_jwt_reload(c->jwt, NULL) : MCP_ENOENT;
}

MCP_EXTERN int mcp_server_auth_keys_error(mcp_server *srv, char *buf, size_t bufsz)
{
	if (!srv || !buf || !bufsz)
		return MCP_EINVAL;
	struct auth_conf *c = conf_of(srv);
	buf[0] = 0;
	if (c)
		auth_jwt_error(c->jwt, buf, bufsz);
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_auth_verifier(mcp_server *srv, mcp_auth_verify_fn fn, void *user)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	c->verify = fn;
	c->verify_user = fn ? user : NULL;
	return MCP_OK;
}

MCP_EXTERN int mcp_server_set_request_hooks(mcp_server *srv, mcp_before_fn before,
					    mcp_after_fn after, void *user)
{
	struct auth_conf *c;
	int rc = conf_for_setting(srv, &c);
	if (rc)
		return rc;
	c->before = before;
	c->after = after;
	c->hook_user = user;
	return MCP_OK;
}

/* ---- the principal, from a verifier ------------------------------------------- */

static int principal_str(mcp_principal *p, char **slot, const char *value)
{
	if (!p || !value || !*value)
		return MCP_EINVAL;
	if (p->frozen)
		return MCP_ESTATE;
	return replace_str(slot, value);
}

MCP_EXTERN int mcp_principal_set_subject(mcp_principal *p, const char *subject)
{
	return principal_str(p, p ? &p->subject : NULL, subject);
}

MCP_EXTERN int mcp_principal_set_client_id(mcp_principal *p, const char *client_id)
{
	return principal_str(p, p ? &p->client_id : NULL, client_id);
}

MCP_EXTERN int mcp_principal_set_issuer(mcp_principal *p, const char *issuer)
{
	return principal_str(p, p ? &p->issuer : NULL, issuer);
}

MCP_EXTERN int mcp_principal_add_scope(mcp_principal *p, const char *scope)
{
	if (scope && strchr(scope, ' '))
		return MCP_EINVAL;
	return auth_principal_add_scope(p, scope);
}

MCP_EXTERN int mcp_principal_add_audience(mcp_principal *p, const char *audience)
{
	return auth_principal_add_audience(p, audience);
}

MCP_EXTERN int mcp_principal_set_expiry(mcp_principal *p, int64_t expires_at)
{
	if (!p || expires_at < 0)
		return MCP_EINVAL;
	if (p->frozen)
		return MCP_ESTATE;
	p->expires_at = expires_at;
	return MCP_OK;
}

/* ---- sessions and their principals ---------------------------------------------- */

int api_authz_bind(api_sess *ms, mcp_principal *p)
{
	if (!ms || !p)
		return MCP_EINVAL;
	int rc = MCP_OK;
	pthread_mutex_lock(&ms->mu);
	struct auth_binding *b = ms->auth;
	if (!b && !(b = ms->auth = calloc(1, sizeof *b))) {
		rc = MCP_ENOMEM;
	} else if (b->current == p) {
		/* the same token again */
	} else if (b->current && !auth_principal_same_party(b->current, p)) {
		rc = MCP_ENOENT; /* another party's session: unknown to it */
	} else if (b->n >= MAX_BINDINGS) {
		rc = MCP_EBUSY;
	} else {
		mcp_principal **g = realloc(b->all, (b->n + 1) * sizeof *g);
		if (!g) {
			rc = MCP_ENOMEM;
		} else {
			b->all = g;
			b->all[b->n++] = auth_principal_ref(p);
			b->current = p;
		}
	}
	pthread_mutex_unlock(&ms->mu);
	return rc;
}

mcp_principal *api_authz_current(api_sess *ms)
{
	pthread_mutex_lock(&ms->mu);
	mcp_principal *p = ms->auth ? ms->auth->current : NULL;
	pthread_mutex_unlock(&ms->mu);
	return p;
}

void api_authz_sess_free(api_sess *ms)
{
	struct auth_binding *b = ms->auth;
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		auth_principal_unref(b->all[i]);
	free(b->all);
	free(b);
	ms->auth = NULL;
}

/* ---- scopes per item ------------------------------------------------------------- */

MCP_EXTERN int mcp_server_set_scopes(mcp_server *srv, mcp_item_kind kind, const char *key,
				     const char *scopes)
{
	if (!srv || !key || !*key || kind < MCP_ITEM_TOOL || kind > MCP_ITEM_PROMPT)
		return MCP_EINVAL;
	char **v;
	size_t n;
	int rc = auth_scopes_parse(scopes, &v, &n);
	if (rc)
		return rc;
	struct auth_conf *c = n ? conf_get(srv) : conf_of(srv);
	if (!c) {
		auth_strv_free(v, n);
		return n ? MCP_ENOMEM : MCP_OK;
	}
	char *k = n ? strdup(key) : NULL;
	if (n && !k) {
		auth_strv_free(v, n);
		return MCP_ENOMEM;
	}
	pthread_rwlock_wrlock(&srv->reg_lock);
	size_t i = 0;
	while (i < c->nrules && !(c->rules[i].kind == (int)kind && strcmp(c->rules[i].key, key) == 0))
		i++;
	if (i < c->nrules) {
		/* Replace or remove the rule in place. */
		auth_strv_free(c->rules[i].scopes, c->rules[i].n);
		if (n) {
			c->rules[i].scopes = v;
			c->rules[i].n = n;
			free(k);
		} else {
			free(c->rules[i].key);
			c->rules[i] = c->rules[--c->nrules];
		}
	} else if (n) {
		scope_rule *g = realloc(c->rules, (c->nrules + 1) * sizeof *g);
		if (!g) {
			rc = MCP_ENOMEM;
			auth_strv_free(v, n);
			free(k);
		} else {
			c->rules = g;
			c->rules[c->nrules++] = (scope_rule){ (int)kind, k, v, n };
		}
	}
	pthread_rwlock_unlock(&srv->reg_lock);
	return rc;
}

/* The rule for an item; with reg_lock held. */
static const scope_rule *rule_for(struct auth_conf *c, int kind, const char *key)
{
	for (size_t i = 0; c && key && i < c->nrules; i++)
		if (c->rules[i].kind == kind && strcmp(c->rules[i].key, key) == 0)
			return &c->rules[i];
	return NULL;
}

int api_authz_visible(mcp_server *srv, int kind, const char *key, const mcp_principal *p)
{
	if (!p)
		return 1;
	const scope_rule *r = rule_for(conf_of(srv), kind, key);
	return !r || !auth_principal_missing(p, r->scopes, r->n);
}

int api_authz_filters(mcp_server *srv, const mcp_principal *p)
{
	struct auth_conf *c = conf_of(srv);
	return p && c && c->nrules > 0;
}

/* Appends each of v not yet in *out. */
static int strv_merge(char ***out, size_t *n, char *const *v, size_t nv)
{
	for (size_t i = 0; i < nv; i++) {
		int have = 0;
		for (size_t j = 0; j < *n && !have; j++)
			have = strcmp((*out)[j], v[i]) == 0;
		if (have)
			continue;
		char *d = strdup(v[i]);
		char **g = d ? realloc(*out, (*n + 1) * sizeof **out) : NULL;
		if (!g) {
			free(d);
			return MCP_ENOMEM;
		}
		g[(*n)++] = d;
		*out = g;
	}
	return MCP_OK;
}

/* The scopes a step-up should ask for: those needed, then those already
 * granted, so that the new token loses nothing (the MCP specification
 * 2025-11-25, scope challenge handling). */
static int stepup_scopes(char *const *need, size_t nneed, char *const *need2, size_t nneed2,
			 const mcp_principal *p, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	int rc = strv_merge(out, n, need, nneed);
	if (rc == MCP_OK)
		rc = strv_merge(out, n, need2, nneed2);
	if (rc == MCP_OK && p)
		rc = strv_merge(out, n, p->scopes, p->nscopes);
	if (rc != MCP_OK) {
		auth_strv_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static json_object *forbidden_data(const char *error, char *const *scopes, size_t n)
{
	json_object *d = json_object_new_object();
	eng_obj_add(d, "error", json_object_new_string(error));
	if (n) {
		size_t len = 1;
		for (size_t i = 0; i < n; i++)
			len += strlen(scopes[i]) + 1;
		char *s = calloc(1, len);
		for (size_t i = 0; s && i < n; i++) {
			if (i)
				strcat(s, " ");
			strcat(s, scopes[i]);
		}
		if (s)
			eng_obj_add(d, "scope", json_object_new_string(s));
		free(s);
	}
	return d;
}

/* ---- around a request -------------------------------------------------------------- */

static const char *get_str(json_object *o, const char *key)
{
	json_object *v = api_get(o, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

int api_authz_admit(mcp_ctx *ctx, int kind, const char *key, api_denial *out)
{
	mcp_server *srv = ctx->sess->srv;
	struct auth_conf *c = conf_of(srv);
	if (!ctx->target)
		ctx->target = key;
	/* Nothing configured: no principal can have been bound (the transport
	 * binds only when authorization is on), and the session lock is not
	 * taken on this path that every call goes through. */
	if (!c)
		return 0;
	ctx->principal = api_authz_current(ctx->sess);
	if (c->before || c->after) {
		ctx->hooked = 1;
		ctx->hook_start_ns = eng_now_ns();
	}
	if (ctx->principal) {
		char **ask = NULL;
		size_t nask = 0;
		int missing = 0, rc = MCP_OK;
		pthread_rwlock_rdlock(&srv->reg_lock);
		const scope_rule *r = kind >= 0 ? rule_for(c, kind, key) : NULL;
		missing = auth_principal_missing(ctx->principal, c->required, c->nrequired) ||
			  (r && auth_principal_missing(ctx->principal, r->scopes, r->n));
		if (missing)
			rc = stepup_scopes(r ? r->scopes : NULL, r ? r->n : 0, c->required,
					   c->nrequired, ctx->principal, &ask, &nask);
		pthread_rwlock_unlock(&srv->reg_lock);
		if (missing) {
			ctx->refused = 1;
			*out = (api_denial){ rc ? rc : MCP_ESTATE, MCP_JSONRPC_FORBIDDEN,
					     "Forbidden: insufficient scope",
					     forbidden_data("insufficient_scope", ask, nask) };
			auth_strv_free(ask, nask);
			return 1;
		}
	}
	if (!c->before) {
		eng_req_admitted(ctx->req);
		return 0;
	}
	int rc = c->before(ctx, c->hook_user);
	if (rc == MCP_OK) {
		free(ctx->refusal_message); /* a refusal the hook took back */
		ctx->refusal_message = NULL;
		ctx->refusal = 0;
		eng_req_admitted(ctx->req);
		return 0;
	}
	if (eng_token_reason(&ctx->req->token) != MCP_CANCEL_NONE) {
		/* The request was cancelled while the hook waited (it used
		 * mcp_ctx_sleep or the like): it ends like a cancelled handler,
		 * with nothing written and the cancellation as its outcome. */
		free(ctx->refusal_message);
		ctx->refusal_message = NULL;
		*out = (api_denial){ MCP_ECANCELED, 0, NULL, NULL };
		return 1;
	}
	ctx->refused = 1;
	if (ctx->refusal == 1 + MCP_REFUSE_RATE_LIMITED) {
		json_object *d = json_object_new_object();
		eng_obj_add(d, "error", json_object_new_string("rate_limited"));
		eng_obj_add(d, "retryAfterMs", json_object_new_int64(ctx->retry_after_ms));
		*out = (api_denial){ MCP_EBUSY, MCP_JSONRPC_SERVER_BUSY,
				     ctx->refusal_message ? ctx->refusal_message : "Too many requests",
				     d };
	} else {
		*out = (api_denial){ MCP_EBUSY, MCP_JSONRPC_FORBIDDEN,
				     ctx->refusal_message ? ctx->refusal_message : "Forbidden",
				     forbidden_data("forbidden", NULL, 0) };
	}
	return 1;
}

void api_authz_after(mcp_ctx *ctx, const char *why, int code)
{
	/* mcp_ctx_refuse called outside a before-hook is ignored. */
	free(ctx->refusal_message);
	ctx->refusal_message = NULL;
	if (!ctx->hooked)
		return;
	ctx->hooked = 0;
	struct auth_conf *c = conf_of(ctx->sess->srv);
	if (!c || !c->after)
		return;
	const char *outcome = ctx->refused			       ? "refused"
			      : code && strcmp(why, "completed") == 0 ? "error"
								       : why;
	int64_t us = (eng_now_ns() - ctx->hook_start_ns) / 1000;
	c->after(ctx, outcome, code, us, c->hook_user);
}

MCP_EXTERN int mcp_ctx_refuse(mcp_ctx *ctx, mcp_refusal kind, const char *message,
			      int64_t retry_after_ms)
{
	if (!ctx)
		return MCP_EBUSY;
	if (kind != MCP_REFUSE_FORBIDDEN && kind != MCP_REFUSE_RATE_LIMITED)
		kind = MCP_REFUSE_FORBIDDEN;
	ctx->refusal = 1 + (int)kind;
	ctx->retry_after_ms = retry_after_ms > 0 ? retry_after_ms : 0;
	free(ctx->refusal_message);
	ctx->refusal_message = message ? strdup(message) : NULL;
	return MCP_EBUSY;
}

int api_authz_hooked(mcp_server *srv)
{
	struct auth_conf *c = conf_of(srv);
	return c && (c->before || c->after);
}

int api_authz_may_refuse(mcp_server *srv)
{
	struct auth_conf *c = conf_of(srv);
	return c && (c->resource || c->before);
}

/* ---- the handler's view ----------------------------------------------------------------- */

MCP_EXTERN int mcp_ctx_authenticated(const mcp_ctx *ctx)
{
	return ctx && ctx->principal;
}

MCP_EXTERN const char *mcp_ctx_auth_subject(const mcp_ctx *ctx)
{
	return ctx && ctx->principal ? ctx->principal->subject : NULL;
}

MCP_EXTERN const char *mcp_ctx_auth_client_id(const mcp_ctx *ctx)
{
	return ctx && ctx->principal ? ctx->principal->client_id : NULL;
}

MCP_EXTERN const char *const *mcp_ctx_auth_scopes(const mcp_ctx *ctx, size_t *n)
{
	const mcp_principal *p = ctx ? ctx->principal : NULL;
	if (n)
		*n = p ? p->nscopes : 0;
	return p && p->nscopes ? (const char *const *)p->scopes : NULL;
}

MCP_EXTERN int mcp_ctx_auth_has_scope(const mcp_ctx *ctx, const char *scope)
{
	return ctx && auth_principal_has_scope(ctx->principal, scope);
}

MCP_EXTERN const char *mcp_ctx_method(const mcp_ctx *ctx)
{
	return ctx ? get_str(ctx->req->msg, "method") : NULL;
}

MCP_EXTERN const char *mcp_ctx_target(const mcp_ctx *ctx)
{
	return ctx ? ctx->target : NULL;
}

MCP_EXTERN json_object *mcp_ctx_meta(const mcp_ctx *ctx)
{
	json_object *m = ctx ? api_get(api_get(ctx->req->msg, "params"), "_meta") : NULL;
	return json_object_is_type(m, json_type_object) ? m : NULL;
}

/* ---- for the HTTP transport ---------------------------------------------------------- */

int api_authz_enabled(mcp_server *srv)
{
	struct auth_conf *c = conf_of(srv);
	return c && c->resource;
}

int api_authz_metadata(mcp_server *srv, const char *path, const char *endpoint, char **json)
{
	*json = NULL;
	struct auth_conf *c = conf_of(srv);
	if (!c || !c->resource || !auth_is_metadata_path(path, c->resource, endpoint))
		return 0;
	auth_metadata m = { c->resource, c->servers, c->nservers, c->supported, c->nsupported,
			    c->name, c->documentation };
	*json = auth_metadata_json(&m);
	return *json ? 1 : -1;
}

/* What the library checks of a principal it did not make itself (an
 * application verifier's, an introspection answer's): expiry, audience. */
static auth_verdict principal_checks(struct auth_conf *c, const mcp_principal *p, int64_t now,
				     const char **reason)
{
	if (p->expires_at && now - c->skew_ms / 1000 >= p->expires_at) {
		/* The skew is taken from now, ours and small: the application
		 * may set any expiry, INT64_MAX for "never", and
		 * expires_at + skew overflowed (fuzz-jwt, UBSan). */
		*reason = "the token has expired";
		return AUTH_INVALID_TOKEN;
	}
	if (p->naudiences) {
		int ok = 0;
		for (size_t i = 0; i < p->naudiences && !ok; i++)
			ok = auth_audience_matches(p->audiences[i], c->resource);
		if (!ok) {
			*reason = "the token is not meant for this resource (aud)";
			return AUTH_INVALID_TOKEN;
		}
	}
	return AUTH_OK;
}

/* Runs the application's verifier, then the checks the library adds. */
static auth_verdict verify_custom(struct auth_conf *c, const char *token, int64_t now,
				  mcp_principal **out, const char **reason)
{
	mcp_principal *p = auth_principal_new();
	if (!p) {
		*reason = "out of memory";
		return AUTH_SERVER_ERROR;
	}
	int rc = c->verify(token, c->resource, p, c->verify_user);
	p->frozen = 1;
	auth_verdict v = AUTH_OK;
	if (rc < 0) {
		v = AUTH_SERVER_ERROR;
		*reason = "the token could not be verified";
	} else if (rc == MCP_AUTH_INSUFFICIENT_SCOPE) {
		v = AUTH_INSUFFICIENT_SCOPE;
		*reason = "the token does not grant access to this server";
	} else if (rc != MCP_AUTH_OK) {
		v = AUTH_INVALID_TOKEN;
		*reason = "the token is not valid";
	} else {
		v = principal_checks(c, p, now, reason);
	}
	if (v == AUTH_OK)
		*out = p;
	else
		auth_principal_unref(p);
	return v;
}

/* A compact JWS has exactly two dots; an opaque token (RFC 7662) is
 * anything else. */
static int jws_shaped(const char *token)
{
	const char *d1 = strchr(token, '.');
	const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	return d2 && !strchr(d2 + 1, '.');
}

/* The JWT verifier; a key id it does not know (or no set yet) may ask the
 * fetcher for the issuer's current set, and the token is checked again
 * with what came. */
static auth_verdict verify_jwt(struct auth_conf *c, const char *token, int64_t now,
			       mcp_principal **p, const char **reason)
{
	auth_jwt_rules rules = { c->issuer, c->resource, c->skew_ms / 1000, c->strict_typ };
	auth_verdict v = auth_jwt_verify(c->jwt, &rules, token, now, p, reason);
	int no_keys = v == AUTH_SERVER_ERROR && *reason == auth_reason_no_keys;
	if (!c->keysrc || !(no_keys || (v == AUTH_INVALID_TOKEN &&
					 *reason == auth_reason_unknown_kid)))
		return v;
	const char *why;
	if (auth_keysrc_kid_miss(c->keysrc, &why))
		return auth_jwt_verify(c->jwt, &rules, token, now, p, reason);
	if (!no_keys)
		*reason = why;
	return v;
}

int api_authz_http(mcp_server *srv, const char *url, const char *authorization, int64_t now,
		   mcp_principal **principal, char **www_authenticate, char **body)
{
	*principal = NULL;
	*www_authenticate = NULL;
	*body = NULL;
	struct auth_conf *c = conf_of(srv);
	if (!c || !c->resource)
		return 0;
	const char *token = NULL, *reason = NULL;
	size_t len = 0;
	auth_verdict v = auth_bearer_token(authorization, &token, &len);
	if (v == AUTH_INVALID_REQUEST)
		reason = "the Authorization header is not \"Bearer\" and one token";
	/* MCP: tokens travel in the Authorization header only, never in the
	 * URI, where logs and referrers would keep them. */
	if (auth_url_has_query_token(url)) {
		v = AUTH_INVALID_REQUEST;
		reason = "access tokens are not accepted in the query string";
	}
	mcp_principal *p = NULL;
	char *copy = NULL;
	if (v == AUTH_OK) {
		copy = strndup(token, len);
		if (!copy) {
			v = AUTH_SERVER_ERROR;
			reason = "out of memory";
		} else if (c->verify) {
			v = verify_custom(c, copy, now, &p, &reason);
		} else if (c->introspect && (!c->jwt_keys || !jws_shaped(copy))) {
			v = auth_introspect_verify(c->introspect, copy, c->issuer, now,
						   c->skew_ms / 1000, &p, &reason);
			if (v == AUTH_OK && (v = principal_checks(c, p, now, &reason)) != AUTH_OK) {
				auth_principal_unref(p);
				p = NULL;
			}
		} else {
			v = verify_jwt(c, copy, now, &p, &reason);
		}
		free(copy);
	}
	char **ask = NULL;
	size_t nask = 0;
	if (v == AUTH_OK && auth_principal_missing(p, c->required, c->nrequired)) {
		v = AUTH_INSUFFICIENT_SCOPE;
		reason = "the token lacks a scope this server requires";
	}
	if (v == AUTH_OK) {
		*principal = p;
		return 0;
	}
	if (v == AUTH_INSUFFICIENT_SCOPE)
		stepup_scopes(c->required, c->nrequired, NULL, 0, p, &ask, &nask);
	auth_principal_unref(p);
	char *meta = auth_metadata_url(c->resource);
	char *const *scopes = v == AUTH_INSUFFICIENT_SCOPE ? ask : c->required;
	size_t nscopes = v == AUTH_INSUFFICIENT_SCOPE ? nask : c->nrequired;
	if (v != AUTH_SERVER_ERROR)
		*www_authenticate = auth_challenge(v, scopes, nscopes, meta, reason);
	*body = auth_error_body(v, reason, scopes, nscopes);
	free(meta);
	auth_strv_free(ask, nask);
	return auth_verdict_status(v);
}

int api_authz_http_invalid(mcp_server *srv, const char *reason, char **www_authenticate,
			   char **body)
{
	struct auth_conf *c = conf_of(srv);
	*www_authenticate = NULL;
	*body = NULL;
	if (!c || !c->resource)
		return 500;
	char *meta = auth_metadata_url(c->resource);
	*www_authenticate = auth_challenge(AUTH_INVALID_TOKEN, c->required, c->nrequired, meta,
					   reason);
	*body = auth_error_body(AUTH_INVALID_TOKEN, reason, c->required, c->nrequired);
	free(meta);
	return 401;
}

char *api_authz_forbidden_challenge(mcp_server *srv, json_object *data)
{
	struct auth_conf *c = conf_of(srv);
	if (!c || !c->resource)
		return NULL;
	const char *scope = get_str(data, "scope");
	char **v = NULL;
	size_t n = 0;
	if (auth_scopes_parse(scope, &v, &n) != MCP_OK)
		return NULL;
	const char *error = get_str(data, "error");
	char *meta = auth_metadata_url(c->resource);
	char *h = NULL;
	if (error && strcmp(error, "insufficient_scope") == 0)
		h = auth_challenge(AUTH_INSUFFICIENT_SCOPE, v, n, meta,
				   "the token lacks a scope this request needs");
	free(meta);
	auth_strv_free(v, n);
	return h;
}

int64_t api_authz_now(void)
{
	return (int64_t)time(NULL);
}
