/*
 * auth-introspect.c - RFC 7662 token introspection for opaque tokens: the
 * request to the authorization server's endpoint, the principal made of
 * its answer, and a cache of answers so that a client's every request
 * does not cost one more exchange.
 *
 * The cache is keyed by the token's SHA-256: a dump of this process's
 * memory shows no token it has not just been given.  The client secret is
 * kept only to be sent, and no message here ever names it or a token.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "api/auth.h"
#include "api/internal.h"

/* An introspection answer is a small JSON object. */
#define ANSWER_MAX (64u << 10)
#define EXCHANGE_MS 10000L

typedef struct answer {
	unsigned char hash[32];
	int64_t until_ms;          /* wall-clock ms; reuse while now is before */
	mcp_principal *p;          /* counted; NULL: inactive */
} answer;

struct auth_introspect {
	char *url;
	char *user, *password;     /* form-urlencoded already, or NULL */
	pthread_mutex_t mu;        /* the fields below */
	size_t max_entries;
	int64_t max_ttl_ms;
	answer *cache;
	size_t n, cap;
	unsigned long requests;
};

auth_introspect *auth_introspect_new(const char *url, const char *client_id,
				     const char *client_secret)
{
	auth_introspect *ai = calloc(1, sizeof *ai);
	if (!ai)
		return NULL;
	ai->max_entries = 10000;
	ai->max_ttl_ms = 60000;
	ai->url = strdup(url);
	ai->user = client_id ? auth_form_encode(client_id) : NULL;
	ai->password = client_id && client_secret ? auth_form_encode(client_secret) : NULL;
	if (!ai->url || (client_id && !ai->user) || (client_id && client_secret && !ai->password) ||
	    pthread_mutex_init(&ai->mu, NULL) != 0) {
		free(ai->url);
		free(ai->user);
		free(ai->password);
		free(ai);
		return NULL;
	}
	return ai;
}

static void drop_at(auth_introspect *ai, size_t i)
{
	auth_principal_unref(ai->cache[i].p);
	ai->cache[i] = ai->cache[--ai->n];
}

void auth_introspect_free(auth_introspect *ai)
{
	if (!ai)
		return;
	while (ai->n)
		drop_at(ai, 0);
	free(ai->cache);
	free(ai->url);
	free(ai->user);
	if (ai->password) /* not left in freed memory */
		sodium_memzero(ai->password, strlen(ai->password));
	free(ai->password);
	pthread_mutex_destroy(&ai->mu);
	free(ai);
}

void auth_introspect_set_cache(auth_introspect *ai, size_t max_entries, int64_t max_ttl_ms)
{
	pthread_mutex_lock(&ai->mu);
	ai->max_entries = max_entries;
	ai->max_ttl_ms = max_ttl_ms;
	while (ai->n > max_entries)
		drop_at(ai, ai->n - 1);
	pthread_mutex_unlock(&ai->mu);
}

unsigned long auth_introspect_requests(auth_introspect *ai)
{
	pthread_mutex_lock(&ai->mu);
	unsigned long n = ai->requests;
	pthread_mutex_unlock(&ai->mu);
	return n;
}

/* 1 with *p (a new reference, or NULL for inactive) when the cache has a
 * live answer for `hash`; expired answers met on the way are dropped. */
static int cache_find(auth_introspect *ai, const unsigned char *hash, int64_t now_ms,
		      mcp_principal **p)
{
	int found = 0;
	pthread_mutex_lock(&ai->mu);
	for (size_t i = 0; i < ai->n;) {
		if (now_ms >= ai->cache[i].until_ms) {
			drop_at(ai, i);
			continue;
		}
		if (!found && memcmp(ai->cache[i].hash, hash, 32) == 0) {
			*p = ai->cache[i].p ? auth_principal_ref(ai->cache[i].p) : NULL;
			found = 1;
		}
		i++;
	}
	pthread_mutex_unlock(&ai->mu);
	return found;
}

static void cache_put(auth_introspect *ai, const unsigned char *hash, int64_t until_ms,
		      mcp_principal *p)
{
	pthread_mutex_lock(&ai->mu);
	if (ai->max_ttl_ms > 0 && ai->max_entries > 0) {
		size_t slot = ai->n;
		for (size_t i = 0; i < ai->n; i++)
			if (memcmp(ai->cache[i].hash, hash, 32) == 0)
				slot = i; /* two requests asked at once */
		if (slot == ai->n && ai->n >= ai->max_entries) {
			/* Full: the answer nearest its end makes room. */
			slot = 0;
			for (size_t i = 1; i < ai->n; i++)
				if (ai->cache[i].until_ms < ai->cache[slot].until_ms)
					slot = i;
		}
		if (slot == ai->n && ai->n == ai->cap) {
			size_t cap = ai->cap ? ai->cap * 2 : 16;
			answer *g = realloc(ai->cache, cap * sizeof *g);
			if (!g)
				goto out; /* not cached: asked again next time */
			ai->cache = g;
			ai->cap = cap;
		}
		if (slot == ai->n)
			ai->cache[ai->n++] = (answer){ { 0 }, 0, NULL };
		auth_principal_unref(ai->cache[slot].p);
		memcpy(ai->cache[slot].hash, hash, 32);
		ai->cache[slot].until_ms = until_ms;
		ai->cache[slot].p = p ? auth_principal_ref(p) : NULL;
	}
out:
	pthread_mutex_unlock(&ai->mu);
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v = api_get(o, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The principal an active answer describes; NULL when out of memory.
 * *exp gets its exp (0: none). */
static mcp_principal *principal_of(json_object *o, int64_t *exp)
{
	mcp_principal *p = auth_principal_new();
	if (!p)
		return NULL;
	int rc = MCP_OK;
	const char *sub = str_of(o, "sub"), *cid = str_of(o, "client_id"), *iss = str_of(o, "iss");
	if (sub && *sub && !(p->subject = strdup(sub)))
		rc = MCP_ENOMEM;
	if (cid && *cid && !(p->client_id = strdup(cid)))
		rc = MCP_ENOMEM;
	if (iss && *iss && !(p->issuer = strdup(iss)))
		rc = MCP_ENOMEM;
	const char *scope = str_of(o, "scope");
	char **v = NULL;
	size_t n = 0;
	/* Scope tokens only; a malformed list grants nothing. */
	if (scope && auth_scopes_parse(scope, &v, &n) == MCP_OK) {
		for (size_t i = 0; i < n && rc == MCP_OK; i++)
			rc = auth_principal_add_scope(p, v[i]);
		auth_strv_free(v, n);
	}
	json_object *aud = api_get(o, "aud");
	if (json_object_is_type(aud, json_type_string)) {
		rc = rc ? rc : auth_principal_add_audience(p, json_object_get_string(aud));
	} else if (json_object_is_type(aud, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(aud) && rc == MCP_OK; i++) {
			json_object *a = json_object_array_get_idx(aud, i);
			if (json_object_is_type(a, json_type_string))
				rc = auth_principal_add_audience(p, json_object_get_string(a));
		}
	}
	/* A NumericDate (RFC 7662 section 2.2); some servers write it with a
	 * fraction.  Out of range or not a number: no expiry is known, and
	 * the cache's own limit holds. */
	json_object *e = api_get(o, "exp");
	*exp = 0;
	if (json_object_is_type(e, json_type_int) && json_object_get_int64(e) > 0)
		*exp = json_object_get_int64(e);
	else if (json_object_is_type(e, json_type_double) && json_object_get_double(e) >= 1 &&
		 json_object_get_double(e) < 9e15)
		*exp = (int64_t)json_object_get_double(e);
	p->expires_at = *exp;
	p->frozen = 1;
	if (rc != MCP_OK) {
		auth_principal_unref(p);
		return NULL;
	}
	return p;
}

auth_verdict auth_introspect_verify(auth_introspect *ai, const char *token, const char *issuer,
				    int64_t now, int64_t skew_s, mcp_principal **out,
				    const char **reason)
{
	*out = NULL;
	/* The cache's key: libsodium's SHA-256, which cannot fail. */
	unsigned char hash[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(hash, (const unsigned char *)token, strlen(token));
	int64_t now_ms = now * 1000;
	mcp_principal *p = NULL;
	if (!cache_find(ai, hash, now_ms, &p)) {
		char *enc = auth_form_encode(token);
		size_t flen = enc ? strlen(enc) + 64 : 0;
		char *form = enc ? malloc(flen) : NULL;
		if (!form) {
			free(enc);
			*reason = "out of memory";
			return AUTH_SERVER_ERROR;
		}
		snprintf(form, flen, "token=%s&token_type_hint=access_token", enc);
		free(enc);
		auth_fetch f = { .url = ai->url, .form = form, .user = ai->user,
				 .password = ai->password, .max_bytes = ANSWER_MAX,
				 .timeout_ms = EXCHANGE_MS };
		char why[300];
		int rc = auth_fetch_run(&f, why, sizeof why);
		sodium_memzero(form, strlen(form));
		free(form);
		pthread_mutex_lock(&ai->mu);
		ai->requests++;
		pthread_mutex_unlock(&ai->mu);
		json_object *o = NULL;
		if (rc != MCP_OK || f.status != 200 || !(o = json_tokener_parse(f.body)) ||
		    !json_object_is_type(o, json_type_object) ||
		    !json_object_is_type(api_get(o, "active"), json_type_boolean)) {
			/* Not cached: the next request asks again. */
			json_object_put(o);
			auth_fetch_clear(&f);
			*reason = rc != MCP_OK || f.status != 200
					  ? "the token introspection endpoint could not be reached"
					  : "the token introspection endpoint gave no valid answer";
			return AUTH_SERVER_ERROR;
		}
		auth_fetch_clear(&f);
		int64_t exp = 0;
		int64_t until = now_ms + ai->max_ttl_ms;
		if (json_object_get_boolean(api_get(o, "active"))) {
			p = principal_of(o, &exp);
			if (!p) {
				json_object_put(o);
				*reason = "out of memory";
				return AUTH_SERVER_ERROR;
			}
			/* Never past the time the expiry check refuses it. */
			if (exp && exp < INT64_MAX / 1000 - skew_s && (exp + skew_s) * 1000 < until)
				until = (exp + skew_s) * 1000;
		}
		json_object_put(o);
		cache_put(ai, hash, until, p);
	}
	if (!p) {
		*reason = "the token is not active (introspection)";
		return AUTH_INVALID_TOKEN;
	}
	if (issuer && p->issuer && strcmp(issuer, p->issuer) != 0) {
		auth_principal_unref(p);
		*reason = "the token was issued by another issuer (introspection)";
		return AUTH_INVALID_TOKEN;
	}
	*out = p;
	return AUTH_OK;
}
