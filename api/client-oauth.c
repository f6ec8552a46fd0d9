/*
 * client-oauth.c - the client gets its own tokens: OAuth 2.1 as the MCP
 * authorization spec asks of a client (discovery, registration, the
 * authorization code grant with PKCE, client credentials, refresh,
 * step-up).  It answers the HTTP transport's challenges on the
 * transport's auth thread, one at a time, and holds the token the
 * transport sends.
 *
 * Lock order: o->mu guards only the token fields the transport thread
 * reads (token_hook); it is never held while calling out (HTTP, the
 * host's callbacks).  Everything else belongs to the auth thread.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sodium.h>

#include "config.h"
#include "api/client-oauth.h"
#include "api/jwt/jwt.h"
#include "engine/eng.h"
#include "mcp/client.h"

#ifdef HAVE_CURL
#include "transport/curl.h"
#include "transport/tp_httpc.h"
#endif

#define DEFAULT_REDIRECT "http://127.0.0.1:8976/callback"
#define REFRESH_SKEW_S 30        /* refresh this long before expiry (Rust SDK's value) */
#define HTTP_TIMEOUT_MS 15000    /* one request to an OAuth endpoint */
#define MAX_BODY (1u << 20)      /* bytes of an OAuth endpoint's answer */
#define MAX_SCOPE 2048

struct client_oauth {
	/* settings, copied; fixed once connected */
	mcp_oauth_grant grant;
	int enabled;
	mcp_oauth_authorize_fn authorize;
	void *authorize_user;
	mcp_oauth_load_fn load;
	mcp_oauth_save_fn save;
	void *store_user;
	mcp_oauth_sign_fn sign;
	void *sign_user;
	char *client_id, *client_secret, *private_key, *scopes, *redirect_uri;
	mcp_oauth_auth_method method;
	/* the connection */
	mcp_client *client;
	char *server_url;
	eng_token cancel;        /* fired at close: the person (as an mcp_token), and
				  * every HTTP request (the flag below) */
	int cancel_ready;
	atomic_int cancelled;
	/* the token (mu) */
	pthread_mutex_t mu;
	char *access;
	int64_t expires_at;      /* seconds since the epoch; 0: unknown */
	int has_refresh;
	/* the auth thread's */
	char *refresh, *granted, *asked;
	char *resource;          /* what the token is for (RFC 8707) */
	char *issuer;
	json_object *as_meta;    /* NULL: the 2025-03-26 defaults */
	char *authz_ep, *token_ep, *reg_ep;
	json_object *prm;
	/* the client registered (or pre-registered, or CIMD) with `reg_issuer` */
	char *reg_issuer, *reg_id, *reg_secret;
	mcp_oauth_auth_method reg_method;
};

/* ---- settings ------------------------------------------------------------------------ */

static client_oauth *settings(client_oauth **slot, int *rc)
{
	*rc = MCP_OK;
	if (!*slot) {
		client_oauth *o = calloc(1, sizeof *o);
		if (!o) {
			*rc = MCP_ENOMEM;
			return NULL;
		}
		pthread_mutex_init(&o->mu, NULL);
		*slot = o;
	}
	return *slot;
}

/* Frees a string that may be a secret, leaving no copy in freed memory
 * (sodium_memzero: a plain memset before free may be optimised away). */
static void free_secret(char **p)
{
	if (*p) {
		sodium_memzero(*p, strlen(*p));
		free(*p);
		*p = NULL;
	}
}

static int set_copy(char **field, const char *v)
{
	if (v && strpbrk(v, "\r\n"))
		return MCP_EINVAL;
	char *copy = v ? strdup(v) : NULL;
	if (v && !copy)
		return MCP_ENOMEM;
	free_secret(field);
	*field = copy;
	return MCP_OK;
}

int client_oauth_set(client_oauth **slot, mcp_oauth_grant grant,
				    mcp_oauth_authorize_fn authorize, void *user)
{
	if (grant != MCP_OAUTH_AUTHORIZATION_CODE && grant != MCP_OAUTH_CLIENT_CREDENTIALS)
		return MCP_EINVAL;
	if (grant == MCP_OAUTH_AUTHORIZATION_CODE && !authorize)
		return MCP_EINVAL;
	int rc;
	client_oauth *o = settings(slot, &rc);
	if (!o)
		return rc;
	o->grant = grant;
	o->authorize = authorize;
	o->authorize_user = user;
	o->enabled = 1;
	return MCP_OK;
}

int client_oauth_set_client(client_oauth **slot, const char *client_id,
					   const char *secret, mcp_oauth_auth_method method)
{
	if (method < MCP_OAUTH_AUTH_AUTO || method > MCP_OAUTH_AUTH_PRIVATE_KEY_JWT)
		return MCP_EINVAL;
	int rc;
	client_oauth *o = settings(slot, &rc);
	if (!o)
		return rc;
	if ((rc = set_copy(&o->client_id, client_id)) || (rc = set_copy(&o->client_secret, secret)))
		return rc;
	o->method = method;
	return MCP_OK;
}

int client_oauth_set_private_key(client_oauth **slot, const char *pem)
{
	int rc;
	client_oauth *o = settings(slot, &rc);
	if (!o)
		return rc;
	if (pem && !auth_pem_key_alg(pem))
		return MCP_EINVAL;
	char *copy = pem ? strdup(pem) : NULL;
	if (pem && !copy)
		return MCP_ENOMEM;
	free_secret(&o->private_key);
	o->private_key = copy;
	return MCP_OK;
}

int client_oauth_set_signer(client_oauth **slot, mcp_oauth_sign_fn sign, void *user)
{
	int rc;
	client_oauth *o = settings(slot, &rc);
	if (!o)
		return rc;
	o->sign = sign;
	o->sign_user = user;
	return MCP_OK;
}

int client_oauth_set_scopes(client_oauth **slot, const char *scopes)
{
	int rc;
	client_oauth *o = settings(slot, &rc);
	return o ? set_copy(&o->scopes, scopes) : rc;
}

int client_oauth_set_redirect_uri(client_oauth **slot, const char *uri)
{
	int rc;
	client_oauth *o = settings(slot, &rc);
	return o ? set_copy(&o->redirect_uri, uri) : rc;
}

int client_oauth_set_store(client_oauth **slot, mcp_oauth_load_fn load,
					  mcp_oauth_save_fn save, void *user)
{
	if (!load != !save)
		return MCP_EINVAL;
	int rc;
	client_oauth *o = settings(slot, &rc);
	if (!o)
		return rc;
	o->load = load;
	o->save = save;
	o->store_user = user;
	return MCP_OK;
}

void client_oauth_free(client_oauth *o)
{
	if (!o)
		return;
	free_secret(&o->client_secret);
	free_secret(&o->private_key);
	free_secret(&o->access);
	free_secret(&o->refresh);
	free_secret(&o->reg_secret);
	free(o->client_id);
	free(o->scopes);
	free(o->redirect_uri);
	free(o->server_url);
	free(o->granted);
	free(o->asked);
	free(o->resource);
	free(o->issuer);
	free(o->authz_ep);
	free(o->token_ep);
	free(o->reg_ep);
	free(o->reg_issuer);
	free(o->reg_id);
	json_object_put(o->as_meta);
	json_object_put(o->prm);
	if (o->cancel_ready)
		eng_token_destroy(&o->cancel);
	pthread_mutex_destroy(&o->mu);
	free(o);
}

/* ---- checks without I/O ----------------------------------------------------------------- */

static void b64url(const unsigned char *bin, size_t len, char *out, size_t outsz)
{
	sodium_bin2base64(out, outsz, bin, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

void coauth_pkce_challenge(const char *verifier, char out[44])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, (const unsigned char *)verifier, strlen(verifier));
	b64url(h, sizeof h, out, 44);
}

void coauth_pkce_verifier(char out[44])
{
	unsigned char r[32];
	randombytes_buf(r, sizeof r);
	b64url(r, sizeof r, out, 44);
}

typedef struct url_parts {
	char scheme[8];
	char host[256];
	int port;
	const char *path; /* into the URL: the path, up to the query */
	size_t path_len;
} url_parts;

/* scheme://host[:port]/path, http or https only, no user info. */
static int url_split(const char *u, url_parts *p)
{
	memset(p, 0, sizeof *p);
	const char *s = strstr(u, "://");
	if (!s || s - u >= (int)sizeof p->scheme)
		return -1;
	for (const char *c = u; c < s; c++)
		p->scheme[c - u] = (char)tolower((unsigned char)*c);
	if (strcmp(p->scheme, "http") && strcmp(p->scheme, "https"))
		return -1;
	const char *a = s + 3, *end = a + strcspn(a, "/?#");
	if (memchr(a, '@', (size_t)(end - a)) || end == a)
		return -1;
	const char *colon = NULL;
	if (*a == '[') {
		const char *rb = memchr(a, ']', (size_t)(end - a));
		if (!rb)
			return -1;
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(a, ':', (size_t)(end - a));
	}
	const char *hend = colon ? colon : end;
	if (hend - a >= (int)sizeof p->host || hend == a)
		return -1;
	for (const char *c = a; c < hend; c++)
		p->host[c - a] = (char)tolower((unsigned char)*c);
	p->port = strcmp(p->scheme, "https") == 0 ? 443 : 80;
	if (colon && colon + 1 < end) {
		p->port = 0;
		for (const char *c = colon + 1; c < end; c++) {
			if (!isdigit((unsigned char)*c) || p->port > 65535)
				return -1;
			p->port = p->port * 10 + (*c - '0');
		}
	}
	p->path = end;
	p->path_len = strcspn(end, "?#");
	return 0;
}

static int host_is_loopback(const char *host)
{
	return strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
	       strcmp(host, "[::1]") == 0;
}

int coauth_url_allowed(const char *url)
{
	url_parts p;
	if (url_split(url, &p))
		return 0;
	return strcmp(p.scheme, "https") == 0 || host_is_loopback(p.host);
}

int coauth_check_resource(const char *resource, const char *server_url, char *why, size_t whysz)
{
	url_parts r, s;
	if (url_split(resource, &r) || url_split(server_url, &s)) {
		snprintf(why, whysz, "the protected resource metadata names resource \"%.200s\", "
				     "which is not an http(s) URL",
			 resource);
		return -1;
	}
	/* RFC 9728 3.3: the resource must be the one asked for.  Like the
	 * TypeScript and C# SDKs, a resource at a parent path of the
	 * server's URL (same origin) is accepted. */
	size_t rl = r.path_len;
	while (rl && r.path[rl - 1] == '/')
		rl--;
	int same = strcmp(r.scheme, s.scheme) == 0 && strcmp(r.host, s.host) == 0 &&
		   r.port == s.port && s.path_len >= rl && memcmp(r.path, s.path, rl) == 0 &&
		   (s.path_len == rl || s.path[rl] == '/');
	if (!same) {
		snprintf(why, whysz,
			 "the protected resource metadata is for \"%.200s\", not for this server "
			 "(%.200s): refused (RFC 9728 section 3.3)",
			 resource, server_url);
		return -1;
	}
	return 0;
}

int coauth_check_issuer(const char *got, const char *expected, char *why, size_t whysz)
{
	if (!got) {
		snprintf(why, whysz, "the authorization server metadata has no issuer");
		return -1;
	}
	if (strcmp(got, expected) != 0) {
		snprintf(why, whysz,
			 "the authorization server metadata names issuer \"%.200s\", not \"%.200s\" "
			 "whose metadata it is: refused (RFC 8414 section 3.3)",
			 got, expected);
		return -1;
	}
	return 0;
}

/* Percent-decodes [s, s+n) into a new string ('+' is a space); NULL for
 * a malformed escape or a NUL. */
static char *form_decode(const char *s, size_t n)
{
	char *o = malloc(n + 1);
	size_t k = 0;
	for (size_t i = 0; o && i < n; i++) {
		if (s[i] == '+') {
			o[k++] = ' ';
		} else if (s[i] == '%') {
			if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
			    !isxdigit((unsigned char)s[i + 2]))
				goto bad;
			char hex[3] = {s[i + 1], s[i + 2], 0};
			int v = (int)strtol(hex, NULL, 16);
			if (v == 0)
				goto bad;
			o[k++] = (char)v;
			i += 2;
		} else {
			o[k++] = s[i];
		}
	}
	if (o)
		o[k] = 0;
	return o;
bad:
	free(o);
	return NULL;
}

/* The value of query parameter `name` of `url` (malloc'd), or NULL;
 * *dup set when it occurs twice. */
static char *query_param(const char *url, const char *name, int *dup)
{
	const char *q = strchr(url, '?');
	char *found = NULL;
	size_t nl = strlen(name);
	while (q) {
		q++;
		size_t len = strcspn(q, "&#");
		if (len > nl && strncmp(q, name, nl) == 0 && q[nl] == '=') {
			if (found) {
				*dup = 1;
				free(found);
				return NULL;
			}
			found = form_decode(q + nl + 1, len - nl - 1);
			if (!found) {
				*dup = 1;
				return NULL;
			}
		}
		q = q[len] == '&' ? q + len : NULL;
	}
	return found;
}

int coauth_check_redirect(const char *redirect, const char *state, const char *issuer,
			  int iss_supported, char **code, char *why, size_t whysz)
{
	*code = NULL;
	int dup = 0;
	char *st = query_param(redirect, "state", &dup);
	char *iss = query_param(redirect, "iss", &dup);
	char *err = query_param(redirect, "error", &dup);
	char *c = query_param(redirect, "code", &dup);
	int rc = -1;
	if (!state || !*state || !issuer) {
		/* Nothing to hold the response against: never a match. */
		snprintf(why, whysz, "no state was sent with the authorization request: refused");
	} else if (dup) {
		snprintf(why, whysz, "the authorization response repeats a parameter or has a "
				     "malformed one: refused");
	} else if (!st || strcmp(st, state) != 0) {
		/* RFC 6749 10.12: a response to a request this client did not
		 * make (or a forged one) carries no or another state. */
		snprintf(why, whysz, "the authorization response %s: refused (CSRF protection, "
				     "RFC 6749 section 10.12)",
			 st ? "has a state that is not the one sent" : "has no state");
	} else if (iss_supported && !iss) {
		snprintf(why, whysz,
			 "the authorization response has no iss, but the authorization server "
			 "advertises authorization_response_iss_parameter_supported: refused "
			 "(RFC 9207 section 2.4)");
	} else if (iss && strcmp(iss, issuer) != 0) {
		/* Compared as plain strings, not normalised (RFC 9207 2.4):
		 * an iss that differs only by a trailing slash is a mix-up. */
		snprintf(why, whysz,
			 "the authorization response comes from issuer \"%.200s\", not \"%.200s\": "
			 "refused (RFC 9207 section 2.4, mix-up protection)",
			 iss, issuer);
	} else if (err) {
		char *desc = query_param(redirect, "error_description", &dup);
		snprintf(why, whysz, "the authorization server refused: %.100s%s%.200s%s", err,
			 desc ? " (" : "", desc ? desc : "", desc ? ")" : "");
		free(desc);
	} else if (!c || !*c) {
		snprintf(why, whysz, "the authorization response has no code");
	} else {
		*code = c;
		c = NULL;
		rc = 0;
	}
	free(st);
	free(iss);
	free(err);
	free(c);
	return rc;
}

int coauth_www_param(const char *www, const char *name, char *out, size_t outsz)
{
	size_t nl = name ? strlen(name) : 0;
	if (outsz)
		out[0] = 0;
	if (!www || !nl || !outsz)
		return 0;
	/* Word by word (RFC 9110 11.6.1): a word without "=" (the scheme, a
	 * token68) is passed over; NAME=VALUE is an auth-param whose value is
	 * a token or a quoted string, so a name inside another parameter's
	 * quoted value is never taken for a parameter.  Every turn moves on. */
	const char *p = www;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		const char *key = p;
		while (*p && *p != '=' && *p != ' ' && *p != '\t' && *p != ',')
			p++;
		size_t klen = (size_t)(p - key);
		const char *q = p;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != '=')
			continue;
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		int match = klen == nl && strncasecmp(key, name, nl) == 0;
		size_t k = 0;
		if (*q == '"') {
			q++;
			while (*q && *q != '"') {
				if (*q == '\\' && q[1])
					q++;
				if (match && k + 1 < outsz)
					out[k++] = *q;
				q++;
			}
			if (*q == '"')
				q++;
		} else {
			while (*q && *q != ',' && *q != ' ' && *q != '\t') {
				if (match && k + 1 < outsz)
					out[k++] = *q;
				q++;
			}
		}
		if (match) {
			out[k] = 0;
			return 1;
		}
		p = q;
	}
	return 0;
}

#ifdef HAVE_CURL
/* ---- HTTP to the OAuth endpoints ------------------------------------------------------------ */

typedef struct hbuf {
	char *buf;
	size_t len;
	int too_big;
} hbuf;

static size_t hb_write(char *p, size_t size, size_t nmemb, void *arg)
{
	hbuf *b = arg;
	size_t n = size * nmemb;
	if (b->len + n > MAX_BODY) {
		b->too_big = 1;
		return 0;
	}
	char *nb = realloc(b->buf, b->len + n + 1);
	if (!nb)
		return 0;
	memcpy(nb + b->len, p, n);
	b->len += n;
	nb[b->len] = 0;
	b->buf = nb;
	return n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a;
	(void)b;
	(void)c;
	(void)d;
	client_oauth *o = arg;
	return atomic_load(&o->cancelled) ? 1 : 0;
}

/* One request to an OAuth endpoint (`what` names it in reasons): a GET
 * (body NULL), or a POST of `body` as `ctype`; `auth` an Authorization
 * header line or NULL.  Redirects are not followed.  *status the HTTP
 * status, *out the JSON object of the body (NULL when it is none).  0, or
 * -1 with the reason (no request made, or no answer). */
static int http_call(client_oauth *o, const char *what, const char *url, const char *body,
		     const char *ctype, const char *auth, int *status, json_object **out, char *why,
		     size_t whysz)
{
	*out = NULL;
	*status = 0;
	if (!coauth_url_allowed(url)) {
		snprintf(why, whysz,
			 "%s %.300s is refused: OAuth needs https (plain http only to a loopback "
			 "host)",
			 what, url);
		return -1;
	}
	if (atomic_load(&o->cancelled)) {
		snprintf(why, whysz, "the client is closing");
		return -1;
	}
	CURL *e = curl_easy_init();
	if (!e) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	hbuf b = {0};
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
	char ct[100];
	if (h && body) {
		snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
		struct curl_slist *n = curl_slist_append(h, ct);
		h = n ? n : (curl_slist_free_all(h), NULL);
	}
	if (h && auth) {
		struct curl_slist *n = curl_slist_append(h, auth);
		h = n ? n : (curl_slist_free_all(h), NULL);
	}
	if (!h) {
		curl_easy_cleanup(e);
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, hb_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)HTTP_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, o);
	if (body) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	CURLcode res = curl_easy_perform(e);
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	int rc = 0;
	if (res != CURLE_OK) {
		snprintf(why, whysz, "%s %.300s: %s", what, url,
			 atomic_load(&o->cancelled) ? "abandoned, the client is closing"
			 : b.too_big ? "the answer is larger than 1 MiB"
				     : curl_easy_strerror(res));
		rc = -1;
	} else {
		*status = (int)code;
		if (b.len) {
			json_tokener *t = json_tokener_new();
			json_object *j = t ? json_tokener_parse_ex(t, b.buf, (int)b.len) : NULL;
			if (t && json_tokener_get_error(t) == json_tokener_success &&
			    json_object_is_type(j, json_type_object))
				*out = j;
			else
				json_object_put(j);
			json_tokener_free(t);
		}
	}
	if (b.buf)
		memset(b.buf, 0, b.len); /* may hold tokens */
	free(b.buf);
	return rc;
}

static const char *jstr(json_object *o, const char *k)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int jbool(json_object *o, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

/* 1 when the array `k` of `o` holds the string `s`. */
static int jlist_has(json_object *o, const char *k, const char *s)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *e = json_object_array_get_idx(v, i);
		if (json_object_is_type(e, json_type_string) && strcmp(json_object_get_string(e), s) == 0)
			return 1;
	}
	return 0;
}

static void set_str(char **f, const char *v)
{
	free(*f);
	*f = v ? strdup(v) : NULL;
}

/* Appends the form field name=value, percent-encoded (RFC 6749 appendix B). */
static void form_add(char **form, const char *name, const char *value)
{
	if (!*form || !value)
		return;
	size_t fl = strlen(*form), need = fl + strlen(name) + 3 * strlen(value) + 3;
	char *n = realloc(*form, need);
	if (!n) {
		free_secret(form);
		return;
	}
	char *p = n + fl;
	if (fl)
		*p++ = '&';
	p += sprintf(p, "%s=", name);
	for (const unsigned char *v = (const unsigned char *)value; *v; v++) {
		if (isalnum(*v) || *v == '-' || *v == '.' || *v == '_' || *v == '~')
			*p++ = (char)*v;
		else
			p += sprintf(p, "%%%02X", *v);
	}
	*p = 0;
	*form = n;
}

/* ---- discovery ---------------------------------------------------------------------------- */

/* The origin of `url` ("scheme://host[:port]") in out. */
static void origin_of(const char *url, char *out, size_t outsz)
{
	const char *s = strstr(url, "://");
	size_t n = s ? (size_t)(s + 3 - url) + strcspn(s + 3, "/?#") : strlen(url);
	snprintf(out, outsz, "%.*s", (int)n, url);
}

/* The path of `url` without a trailing slash ("" for the root). */
static void path_of(const char *url, char *out, size_t outsz)
{
	url_parts p;
	if (url_split(url, &p)) {
		out[0] = 0;
		return;
	}
	size_t n = p.path_len;
	while (n && p.path[n - 1] == '/')
		n--;
	snprintf(out, outsz, "%.*s", (int)n, p.path);
}

/* RFC 9728: the resource's metadata, from the challenge's
 * resource_metadata, else path-aware then at the root. */
static int discover_prm(client_oauth *o, const char *www, char *why, size_t whysz)
{
	char origin[600], path[2048], rm[2048], urls[3][4096];
	int n = 0;
	origin_of(o->server_url, origin, sizeof origin);
	path_of(o->server_url, path, sizeof path);
	if (coauth_www_param(www, "resource_metadata", rm, sizeof rm) && rm[0])
		snprintf(urls[n++], sizeof urls[0], "%s", rm);
	if (path[0])
		snprintf(urls[n++], sizeof urls[0], "%s/.well-known/oauth-protected-resource%s",
			 origin, path);
	snprintf(urls[n++], sizeof urls[0], "%s/.well-known/oauth-protected-resource", origin);
	json_object_put(o->prm);
	o->prm = NULL;
	for (int i = 0; i < n && !o->prm; i++) {
		int st;
		json_object *j;
		if (http_call(o, "the protected resource metadata", urls[i], NULL, NULL, NULL, &st,
			      &j, why, whysz))
			return -1;
		if (st == 200 && j)
			o->prm = j;
		else
			json_object_put(j);
	}
	return 0;
}

static int discover(client_oauth *o, const char *www, char *why, size_t whysz)
{
	if (discover_prm(o, www, why, whysz))
		return -1;
	char issuer[2048];
	if (o->prm) {
		const char *res = jstr(o->prm, "resource");
		if (res && coauth_check_resource(res, o->server_url, why, whysz))
			return -1;
		set_str(&o->resource, res ? res : o->server_url);
		json_object *as = NULL;
		if (!json_object_object_get_ex(o->prm, "authorization_servers", &as) ||
		    !json_object_is_type(as, json_type_array) || json_object_array_length(as) == 0 ||
		    !json_object_is_type(json_object_array_get_idx(as, 0), json_type_string)) {
			snprintf(why, whysz,
				 "the protected resource metadata names no authorization server");
			return -1;
		}
		snprintf(issuer, sizeof issuer, "%s",
			 json_object_get_string(json_object_array_get_idx(as, 0)));
	} else {
		/* 2025-03-26: no resource metadata; the server's origin is
		 * the authorization server. */
		set_str(&o->resource, o->server_url);
		origin_of(o->server_url, issuer, sizeof issuer);
	}
	if (!o->resource) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	/* RFC 8414 3.1 and OpenID Connect discovery, in the order of the
	 * MCP spec (2025-11-25, "Authorization Server Metadata Discovery"). */
	char origin[600], path[2048], urls[3][4096];
	int n = 0;
	origin_of(issuer, origin, sizeof origin);
	path_of(issuer, path, sizeof path);
	if (path[0]) {
		snprintf(urls[n++], sizeof urls[0], "%s/.well-known/oauth-authorization-server%s",
			 origin, path);
		snprintf(urls[n++], sizeof urls[0], "%s/.well-known/openid-configuration%s", origin,
			 path);
		snprintf(urls[n++], sizeof urls[0], "%s%s/.well-known/openid-configuration", origin,
			 path);
	} else {
		snprintf(urls[n++], sizeof urls[0], "%s/.well-known/oauth-authorization-server",
			 origin);
		snprintf(urls[n++], sizeof urls[0], "%s/.well-known/openid-configuration", origin);
	}
	json_object_put(o->as_meta);
	o->as_meta = NULL;
	for (int i = 0; i < n && !o->as_meta; i++) {
		int st;
		json_object *j;
		if (http_call(o, "the authorization server metadata", urls[i], NULL, NULL, NULL,
			      &st, &j, why, whysz))
			return -1;
		if (st == 200 && j)
			o->as_meta = j;
		else
			json_object_put(j);
	}
	set_str(&o->issuer, issuer);
	if (o->as_meta) {
		if (coauth_check_issuer(jstr(o->as_meta, "issuer"), issuer, why, whysz))
			return -1;
		set_str(&o->authz_ep, jstr(o->as_meta, "authorization_endpoint"));
		set_str(&o->token_ep, jstr(o->as_meta, "token_endpoint"));
		set_str(&o->reg_ep, jstr(o->as_meta, "registration_endpoint"));
		json_object *m = NULL;
		if (json_object_object_get_ex(o->as_meta, "code_challenge_methods_supported", &m) &&
		    !jlist_has(o->as_meta, "code_challenge_methods_supported", "S256") &&
		    o->grant == MCP_OAUTH_AUTHORIZATION_CODE) {
			snprintf(why, whysz, "the authorization server does not support PKCE with "
					     "S256 (code_challenge_methods_supported)");
			return -1;
		}
	} else {
		/* 2025-03-26 "Fallbacks for Servers without Metadata
		 * Discovery": only when there is no document at all. */
		char u[4096];
		snprintf(u, sizeof u, "%s/authorize", origin);
		set_str(&o->authz_ep, u);
		snprintf(u, sizeof u, "%s/token", origin);
		set_str(&o->token_ep, u);
		snprintf(u, sizeof u, "%s/register", origin);
		set_str(&o->reg_ep, u);
	}
	if (!o->token_ep || (o->grant == MCP_OAUTH_AUTHORIZATION_CODE && !o->authz_ep)) {
		snprintf(why, whysz, "the authorization server metadata of %.300s names no %s endpoint",
			 issuer, o->token_ep ? "authorization" : "token");
		return -1;
	}
	return 0;
}

/* ---- the client's identity ---------------------------------------------------------------- */

static mcp_oauth_auth_method method_named(const char *s)
{
	if (!s)
		return MCP_OAUTH_AUTH_AUTO;
	if (strcmp(s, "none") == 0)
		return MCP_OAUTH_AUTH_NONE;
	if (strcmp(s, "client_secret_basic") == 0)
		return MCP_OAUTH_AUTH_SECRET_BASIC;
	if (strcmp(s, "client_secret_post") == 0)
		return MCP_OAUTH_AUTH_SECRET_POST;
	if (strcmp(s, "private_key_jwt") == 0)
		return MCP_OAUTH_AUTH_PRIVATE_KEY_JWT;
	return MCP_OAUTH_AUTH_AUTO;
}

static const char *method_name(mcp_oauth_auth_method m)
{
	switch (m) {
	case MCP_OAUTH_AUTH_NONE:
		return "none";
	case MCP_OAUTH_AUTH_SECRET_BASIC:
		return "client_secret_basic";
	case MCP_OAUTH_AUTH_SECRET_POST:
		return "client_secret_post";
	case MCP_OAUTH_AUTH_PRIVATE_KEY_JWT:
		return "private_key_jwt";
	default:
		return NULL;
	}
}

/* AUTO resolved: with a secret, what the server supports (basic first,
 * RFC 6749 2.3.1); without, none. */
static mcp_oauth_auth_method pick_method(client_oauth *o, mcp_oauth_auth_method m,
					 const char *secret)
{
	if (m != MCP_OAUTH_AUTH_AUTO)
		return m;
	if (!secret)
		return MCP_OAUTH_AUTH_NONE;
	if (o->as_meta && !jlist_has(o->as_meta, "token_endpoint_auth_methods_supported",
				     "client_secret_basic") &&
	    jlist_has(o->as_meta, "token_endpoint_auth_methods_supported", "client_secret_post"))
		return MCP_OAUTH_AUTH_SECRET_POST;
	return MCP_OAUTH_AUTH_SECRET_BASIC;
}

static const char *redirect_uri(client_oauth *o)
{
	return o->redirect_uri ? o->redirect_uri : DEFAULT_REDIRECT;
}

/* RFC 7591, at the registration endpoint. */
static int do_register(client_oauth *o, char *why, size_t whysz)
{
	json_object *req = json_object_new_object();
	json_object_object_add(req, "client_name", json_object_new_string("libmcp"));
	json_object *ru = json_object_new_array();
	json_object_array_add(ru, json_object_new_string(redirect_uri(o)));
	json_object_object_add(req, "redirect_uris", ru);
	json_object *gt = json_object_new_array();
	json_object_array_add(gt, json_object_new_string("authorization_code"));
	json_object_array_add(gt, json_object_new_string("refresh_token"));
	json_object_object_add(req, "grant_types", gt);
	json_object *rt = json_object_new_array();
	json_object_array_add(rt, json_object_new_string("code"));
	json_object_object_add(req, "response_types", rt);
	/* SEP-837: a redirect to a loopback host is a native application. */
	url_parts p;
	int native = url_split(redirect_uri(o), &p) == 0 ? host_is_loopback(p.host) : 1;
	json_object_object_add(req, "application_type",
			       json_object_new_string(native ? "native" : "web"));
	const char *m = "none";
	if (o->as_meta && !jlist_has(o->as_meta, "token_endpoint_auth_methods_supported", "none")) {
		json_object *l = NULL;
		if (json_object_object_get_ex(o->as_meta, "token_endpoint_auth_methods_supported", &l))
			m = jlist_has(o->as_meta, "token_endpoint_auth_methods_supported",
				      "client_secret_basic")
				    ? "client_secret_basic"
				    : "client_secret_post";
	}
	json_object_object_add(req, "token_endpoint_auth_method", json_object_new_string(m));
	if (o->scopes)
		json_object_object_add(req, "scope", json_object_new_string(o->scopes));
	int st;
	json_object *res;
	int rc = http_call(o, "the registration endpoint", o->reg_ep,
			   json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN),
			   "application/json", NULL, &st, &res, why, whysz);
	json_object_put(req);
	if (rc)
		return -1;
	const char *id = jstr(res, "client_id");
	if ((st != 200 && st != 201) || !id) {
		snprintf(why, whysz, "client registration at %.300s failed: HTTP %d%s%.100s", o->reg_ep,
			 st, jstr(res, "error") ? ", " : "",
			 jstr(res, "error") ? jstr(res, "error") : "");
		json_object_put(res);
		return -1;
	}
	set_str(&o->reg_issuer, o->issuer);
	set_str(&o->reg_id, id);
	free_secret(&o->reg_secret);
	set_str(&o->reg_secret, jstr(res, "client_secret"));
	o->reg_method = pick_method(o, method_named(jstr(res, "token_endpoint_auth_method")),
				    o->reg_secret);
	json_object_put(res);
	return 0;
}

/* In the order of the spec (client-registration, 2026-07-28): one
 * registered earlier with this issuer, a pre-registered one, a client ID
 * metadata document, dynamic registration. */
static int client_identity(client_oauth *o, char *why, size_t whysz)
{
	if (o->reg_issuer && o->reg_id && strcmp(o->reg_issuer, o->issuer) == 0)
		return 0;
	int cimd = o->client_id && strncmp(o->client_id, "https://", 8) == 0;
	if (o->client_id && !cimd) {
		set_str(&o->reg_issuer, o->issuer);
		set_str(&o->reg_id, o->client_id);
		free_secret(&o->reg_secret);
		set_str(&o->reg_secret, o->client_secret);
		o->reg_method = pick_method(o, o->method, o->client_secret);
		return 0;
	}
	if (cimd && o->as_meta && jbool(o->as_meta, "client_id_metadata_document_supported")) {
		set_str(&o->reg_issuer, o->issuer);
		set_str(&o->reg_id, o->client_id);
		free_secret(&o->reg_secret);
		o->reg_method = o->method == MCP_OAUTH_AUTH_PRIVATE_KEY_JWT ? o->method
									 : MCP_OAUTH_AUTH_NONE;
		return 0;
	}
	if (!o->reg_ep) {
		snprintf(why, whysz,
			 "no client id for %.300s: it offers neither client ID metadata documents "
			 "nor dynamic registration, and none was set (mcp_client_set_oauth_client)",
			 o->issuer);
		return -1;
	}
	return do_register(o, why, whysz);
}

/* ---- client authentication ---------------------------------------------------------------- */

/* An RFC 7523 assertion for the token endpoint: ES256 with an EC key,
 * RS256 with an RSA key. */
static char *sign_assertion(client_oauth *o, char *why, size_t whysz)
{
	if (o->sign) {
		char *jwt = NULL;
		int rc = o->sign(o->client, o->issuer, o->reg_id, &jwt, o->sign_user);
		if (rc != MCP_OK || !jwt) {
			free(jwt);
			snprintf(why, whysz, "the signer refused the client assertion: %s",
				 mcp_strerror(rc != MCP_OK ? rc : MCP_EINVAL));
			return NULL;
		}
		return jwt;
	}
	if (!o->private_key) {
		snprintf(why, whysz, "private_key_jwt needs a key or a signer "
				     "(mcp_client_set_oauth_private_key)");
		return NULL;
	}
	if (!auth_pem_key_alg(o->private_key)) {
		snprintf(why, whysz, "the client's private key does not parse");
		return NULL;
	}
	unsigned char rnd[16];
	char jti[32];
	randombytes_buf(rnd, sizeof rnd);
	b64url(rnd, sizeof rnd, jti, sizeof jti);
	int64_t now = (int64_t)time(NULL);
	json_object *cl = json_object_new_object();
	if (cl) {
		json_object_object_add(cl, "iss", json_object_new_string(o->reg_id));
		json_object_object_add(cl, "sub", json_object_new_string(o->reg_id));
		json_object_object_add(cl, "aud", json_object_new_string(o->issuer));
		json_object_object_add(cl, "iat", json_object_new_int64(now));
		json_object_object_add(cl, "exp", json_object_new_int64(now + 300));
		json_object_object_add(cl, "jti", json_object_new_string(jti));
	}
	char *jwt = cl ? auth_jws_sign_pem(o->private_key, cl) : NULL;
	json_object_put(cl);
	if (!jwt)
		snprintf(why, whysz, "cannot sign the client assertion with the client's key");
	return jwt;
}

/* Adds the client's authentication to the token request: the form's
 * fields, or an Authorization header line in *auth (malloc'd). */
static int client_auth(client_oauth *o, char **form, char **auth, char *why, size_t whysz)
{
	*auth = NULL;
	switch (o->reg_method) {
	case MCP_OAUTH_AUTH_SECRET_BASIC: {
		if (!o->reg_secret) {
			snprintf(why, whysz, "client_secret_basic needs a client secret");
			return -1;
		}
		/* RFC 6749 2.3.1: both form-encoded before base64. */
		char *id = strdup(""), *sec = strdup("");
		form_add(&id, "x", o->reg_id);
		form_add(&sec, "x", o->reg_secret);
		if (!id || !sec) {
			free(id);
			free_secret(&sec);
			snprintf(why, whysz, "out of memory");
			return -1;
		}
		size_t pl = strlen(id + 2) + strlen(sec + 2) + 2;
		char *pair = malloc(pl);
		size_t b64l = sodium_base64_encoded_len(pl, sodium_base64_VARIANT_ORIGINAL);
		*auth = malloc(b64l + 40);
		if (pair && *auth) {
			snprintf(pair, pl, "%s:%s", id + 2, sec + 2);
			strcpy(*auth, "Authorization: Basic ");
			sodium_bin2base64(*auth + strlen(*auth), b64l, (unsigned char *)pair,
					  strlen(pair), sodium_base64_VARIANT_ORIGINAL);
		}
		if (pair)
			memset(pair, 0, pl);
		free(pair);
		free(id);
		free_secret(&sec);
		if (!*auth) {
			snprintf(why, whysz, "out of memory");
			return -1;
		}
		return 0;
	}
	case MCP_OAUTH_AUTH_SECRET_POST:
		if (!o->reg_secret) {
			snprintf(why, whysz, "client_secret_post needs a client secret");
			return -1;
		}
		form_add(form, "client_id", o->reg_id);
		form_add(form, "client_secret", o->reg_secret);
		return 0;
	case MCP_OAUTH_AUTH_PRIVATE_KEY_JWT: {
		char *jwt = sign_assertion(o, why, whysz);
		if (!jwt)
			return -1;
		form_add(form, "client_id", o->reg_id);
		form_add(form, "client_assertion_type",
			 "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
		form_add(form, "client_assertion", jwt);
		free_secret(&jwt);
		return 0;
	}
	default:
		form_add(form, "client_id", o->reg_id);
		return 0;
	}
}

/* ---- tokens -------------------------------------------------------------------------------- */

static void save_record(client_oauth *o)
{
	if (!o->save)
		return;
	json_object *r = json_object_new_object();
	pthread_mutex_lock(&o->mu);
	if (o->access)
		json_object_object_add(r, "access_token", json_object_new_string(o->access));
	json_object_object_add(r, "expires_at", json_object_new_int64(o->expires_at));
	pthread_mutex_unlock(&o->mu);
	if (o->refresh)
		json_object_object_add(r, "refresh_token", json_object_new_string(o->refresh));
	if (o->granted)
		json_object_object_add(r, "scope", json_object_new_string(o->granted));
	if (o->issuer)
		json_object_object_add(r, "issuer", json_object_new_string(o->issuer));
	json_object_object_add(r, "resource", json_object_new_string(o->resource));
	if (o->reg_id && o->reg_issuer) {
		json_object_object_add(r, "client_id", json_object_new_string(o->reg_id));
		json_object_object_add(r, "client_issuer", json_object_new_string(o->reg_issuer));
		if (o->reg_secret)
			json_object_object_add(r, "client_secret",
					       json_object_new_string(o->reg_secret));
		if (method_name(o->reg_method))
			json_object_object_add(r, "token_endpoint_auth_method",
					       json_object_new_string(method_name(o->reg_method)));
	}
	o->save(o->client, o->resource, r, o->store_user);
	json_object_put(r);
}

/* One request to the token endpoint; the new tokens replace the old. */
static int token_request(client_oauth *o, char *form, char *why, size_t whysz)
{
	char *auth = NULL;
	if (client_auth(o, &form, &auth, why, whysz)) {
		free_secret(&form);
		return -1;
	}
	if (!form) {
		free_secret(&auth);
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	int st;
	json_object *res;
	int rc = http_call(o, "the token endpoint", o->token_ep, form,
			   "application/x-www-form-urlencoded", auth, &st, &res, why, whysz);
	free_secret(&form);
	free_secret(&auth);
	if (rc)
		return -1;
	const char *at = jstr(res, "access_token"), *tt = jstr(res, "token_type");
	if (st != 200 || !at || !*at) {
		const char *err = jstr(res, "error"), *desc = jstr(res, "error_description");
		snprintf(why, whysz, "the token endpoint %.300s refused: HTTP %d%s%.80s%s%.200s%s",
			 o->token_ep, st, err ? ", " : "", err ? err : "", desc ? " (" : "",
			 desc ? desc : "", desc ? ")" : "");
		json_object_put(res);
		return -1;
	}
	if (tt && strcasecmp(tt, "bearer") != 0) {
		snprintf(why, whysz, "the token endpoint gave a token of type \"%.40s\", not Bearer",
			 tt);
		json_object_put(res);
		return -1;
	}
	if (strpbrk(at, "\r\n")) {
		snprintf(why, whysz, "the token endpoint gave a malformed access token");
		json_object_put(res);
		return -1;
	}
	json_object *ei = NULL;
	int64_t exp = 0;
	if (json_object_object_get_ex(res, "expires_in", &ei) &&
	    (json_object_is_type(ei, json_type_int) || json_object_is_type(ei, json_type_double))) {
		int64_t s = json_object_get_int64(ei);
		if (s > 0 && s < 10LL * 365 * 86400)
			exp = (int64_t)time(NULL) + s;
	}
	const char *rt = jstr(res, "refresh_token"), *sc = jstr(res, "scope");
	if (rt) {
		free_secret(&o->refresh);
		o->refresh = strdup(rt);
	}
	if (sc)
		set_str(&o->granted, sc);
	pthread_mutex_lock(&o->mu);
	free_secret(&o->access);
	o->access = strdup(at);
	o->expires_at = exp;
	o->has_refresh = o->refresh != NULL;
	pthread_mutex_unlock(&o->mu);
	json_object_put(res);
	if (!o->access) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	save_record(o);
	return 0;
}

static int refresh_grant(client_oauth *o, char *why, size_t whysz)
{
	char *form = strdup("");
	form_add(&form, "grant_type", "refresh_token");
	form_add(&form, "refresh_token", o->refresh);
	form_add(&form, "resource", o->resource);
	return token_request(o, form, why, whysz);
}

/* Adds the words of `add` not yet in `set` (space-separated). */
static void scope_union(char *set, size_t setsz, const char *add)
{
	char w[256];
	while (add && *add) {
		size_t n = strcspn(add, " ");
		if (n && n < sizeof w) {
			memcpy(w, add, n);
			w[n] = 0;
			int have = 0;
			for (const char *s = set; *s && !have;) {
				size_t m = strcspn(s, " ");
				have = m == n && memcmp(s, w, n) == 0;
				s += m;
				while (*s == ' ')
					s++;
			}
			if (!have && strlen(set) + n + 2 < setsz) {
				if (set[0])
					strcat(set, " ");
				strcat(set, w);
			}
		}
		add += n;
		while (*add == ' ')
			add++;
	}
}

/* The scope to ask for (MCP spec, "Scope Selection Strategy"): the
 * challenge's, else the resource's scopes_supported, else the host's,
 * else none; joined with what was asked before (step-up); offline_access
 * only when the authorization server lists it. */
static void choose_scope(client_oauth *o, const char *www, int step_up, char *out, size_t outsz)
{
	char ch[MAX_SCOPE];
	out[0] = 0;
	if (step_up && o->asked)
		scope_union(out, outsz, o->asked);
	if (coauth_www_param(www, "scope", ch, sizeof ch) && ch[0]) {
		scope_union(out, outsz, ch);
	} else if (!out[0]) {
		json_object *ss = NULL;
		if (o->prm && json_object_object_get_ex(o->prm, "scopes_supported", &ss) &&
		    json_object_is_type(ss, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(ss); i++) {
				json_object *e = json_object_array_get_idx(ss, i);
				if (json_object_is_type(e, json_type_string))
					scope_union(out, outsz, json_object_get_string(e));
			}
		}
		if (!out[0] && o->scopes)
			scope_union(out, outsz, o->scopes);
	}
	if (out[0] && o->grant == MCP_OAUTH_AUTHORIZATION_CODE && o->as_meta &&
	    jlist_has(o->as_meta, "scopes_supported", "offline_access"))
		scope_union(out, outsz, "offline_access");
}

static int code_grant(client_oauth *o, const char *scope, char *why, size_t whysz)
{
	char verifier[44], challenge[44], state[44];
	coauth_pkce_verifier(verifier);
	coauth_pkce_challenge(verifier, challenge);
	coauth_pkce_verifier(state);
	char *q = strdup("");
	form_add(&q, "response_type", "code");
	form_add(&q, "client_id", o->reg_id);
	form_add(&q, "redirect_uri", redirect_uri(o));
	form_add(&q, "code_challenge", challenge);
	form_add(&q, "code_challenge_method", "S256");
	form_add(&q, "state", state);
	form_add(&q, "resource", o->resource);
	if (scope[0])
		form_add(&q, "scope", scope);
	if (!q) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	size_t ul = strlen(o->authz_ep) + strlen(q) + 2;
	char *url = malloc(ul);
	if (!url) {
		free(q);
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	snprintf(url, ul, "%s%c%s", o->authz_ep, strchr(o->authz_ep, '?') ? '&' : '?', q);
	free(q);
	if (!coauth_url_allowed(url)) {
		snprintf(why, whysz, "the authorization endpoint %.300s is refused: OAuth needs https "
				     "(plain http only to a loopback host)",
			 o->authz_ep);
		free(url);
		return -1;
	}
	char *redirect = NULL;
	int rc = o->authorize(o->client, url, redirect_uri(o), (mcp_token *)&o->cancel, &redirect,
			      o->authorize_user);
	free(url);
	if (rc != MCP_OK || !redirect) {
		free(redirect);
		snprintf(why, whysz, "the authorization was not completed: %s",
			 rc == MCP_ECANCELED ? "cancelled" : mcp_strerror(rc != MCP_OK ? rc : MCP_EINVAL));
		return -1;
	}
	char *code = NULL;
	int iss_supported = o->as_meta && jbool(o->as_meta, "authorization_response_iss_parameter_supported");
	rc = coauth_check_redirect(redirect, state, o->issuer, iss_supported, &code, why, whysz);
	free_secret(&redirect);
	if (rc)
		return -1;
	set_str(&o->asked, scope);
	char *form = strdup("");
	form_add(&form, "grant_type", "authorization_code");
	form_add(&form, "code", code);
	form_add(&form, "redirect_uri", redirect_uri(o));
	form_add(&form, "code_verifier", verifier);
	form_add(&form, "resource", o->resource);
	free_secret(&code);
	return token_request(o, form, why, whysz);
}

static int credentials_grant(client_oauth *o, const char *scope, char *why, size_t whysz)
{
	char *form = strdup("");
	form_add(&form, "grant_type", "client_credentials");
	if (scope[0])
		form_add(&form, "scope", scope);
	form_add(&form, "resource", o->resource);
	set_str(&o->asked, scope);
	return token_request(o, form, why, whysz);
}

/* ---- the transport's hooks ---------------------------------------------------------------- */

static int token_hook(void *arg, char *buf, size_t bufsz)
{
	client_oauth *o = arg;
	pthread_mutex_lock(&o->mu);
	snprintf(buf, bufsz, "%s", o->access ? o->access : "");
	int stale = o->access && o->has_refresh && o->expires_at &&
		    (int64_t)time(NULL) >= o->expires_at - REFRESH_SKEW_S;
	pthread_mutex_unlock(&o->mu);
	return stale;
}

static int challenge_hook(void *arg, int status, const char *www, const char *used, char *why,
			  size_t whysz)
{
	client_oauth *o = arg;
	char err[64] = "";
	coauth_www_param(www, "error", err, sizeof err);
	pthread_mutex_lock(&o->mu);
	int fresh = o->access && strcmp(o->access, used) != 0 &&
		    (!o->expires_at || (int64_t)time(NULL) < o->expires_at - REFRESH_SKEW_S);
	pthread_mutex_unlock(&o->mu);
	/* Another request's challenge got a new token meanwhile: this one
	 * is sent again with it (one flow for all of them). */
	if (fresh && status != 403)
		return 0;
	if (fresh && status == 403 && o->asked) {
		char ch[MAX_SCOPE], u[MAX_SCOPE];
		snprintf(u, sizeof u, "%s", o->asked);
		size_t before = strlen(u);
		if (coauth_www_param(www, "scope", ch, sizeof ch))
			scope_union(u, sizeof u, ch);
		if (strlen(u) == before)
			return 0; /* a step-up already asked for all of it */
	}
	if (status == 403 && strcmp(err, "insufficient_scope") != 0) {
		snprintf(why, whysz, "the server refused the request: HTTP 403%s%.60s",
			 err[0] ? ", " : "", err);
		return -1;
	}
	/* An expiring token or a 401 with one: refresh first, once (after
	 * discovery when the refresh token came from the store). */
	if (status != 403 && o->refresh && (status == 0 || used[0])) {
		char rwhy[600];
		if ((o->token_ep || discover(o, www, rwhy, sizeof rwhy) == 0) &&
		    refresh_grant(o, rwhy, sizeof rwhy) == 0)
			return 0;
		free_secret(&o->refresh);
		pthread_mutex_lock(&o->mu);
		o->has_refresh = 0;
		pthread_mutex_unlock(&o->mu);
	}
	if (status == 0)
		return 0; /* refresh failed: the request goes as it is, a 401 says more */
	if (discover(o, www, why, whysz) || client_identity(o, why, whysz))
		return -1;
	char scope[MAX_SCOPE];
	choose_scope(o, www, status == 403, scope, sizeof scope);
	if (o->grant == MCP_OAUTH_CLIENT_CREDENTIALS)
		return credentials_grant(o, scope, why, whysz);
	return code_grant(o, scope, why, whysz);
}

static void cancel_hook(void *arg)
{
	client_oauth *o = arg;
	atomic_store(&o->cancelled, 1);
	eng_token_fire(&o->cancel, MCP_CANCEL_SHUTDOWN);
}

int client_oauth_attach(client_oauth *o, mcp_client *c, struct tp_httpc *http, const char *url,
			char *err, size_t errsz)
{
	if (!o->enabled)
		return 0;
	o->client = c;
	set_str(&o->server_url, url);
	if (!o->cancel_ready && eng_token_init(&o->cancel) == 0)
		o->cancel_ready = 1;
	if (!o->server_url || !o->cancel_ready) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	if (o->load) {
		json_object *r = o->load(c, url, o->store_user);
		const char *res = jstr(r, "resource");
		/* A token is sent only to the resource it was issued for. */
		if (r && res && strcmp(res, url) == 0) {
			const char *at = jstr(r, "access_token"), *rt = jstr(r, "refresh_token");
			json_object *e = NULL;
			json_object_object_get_ex(r, "expires_at", &e);
			pthread_mutex_lock(&o->mu);
			if (at && !strpbrk(at, "\r\n"))
				o->access = strdup(at);
			o->expires_at = json_object_get_int64(e);
			pthread_mutex_unlock(&o->mu);
			if (rt)
				o->refresh = strdup(rt);
			o->has_refresh = o->refresh != NULL;
			set_str(&o->resource, res);
			set_str(&o->granted, jstr(r, "scope"));
			set_str(&o->asked, jstr(r, "scope"));
			if (jstr(r, "client_id") && jstr(r, "client_issuer")) {
				set_str(&o->reg_id, jstr(r, "client_id"));
				set_str(&o->reg_issuer, jstr(r, "client_issuer"));
				set_str(&o->reg_secret, jstr(r, "client_secret"));
				o->reg_method = pick_method(
					o, method_named(jstr(r, "token_endpoint_auth_method")),
					o->reg_secret);
			}
		}
		json_object_put(r);
	}
	tp_httpc_auth hooks = {
		.token = token_hook,
		.challenge = challenge_hook,
		.cancel = cancel_hook,
		.arg = o,
	};
	if (tp_httpc_set_auth(http, &hooks)) {
		snprintf(err, errsz, "cannot start the OAuth thread");
		return -1;
	}
	return 0;
}
#endif /* HAVE_CURL */
