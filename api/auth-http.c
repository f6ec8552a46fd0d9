/*
 * auth-http.c - what an OAuth 2.1 protected resource says over HTTP, as
 * pure functions: the bearer token of an Authorization header, the
 * Protected Resource Metadata document and where it lives, the
 * WWW-Authenticate challenges and the JSON-RPC bodies of refusals.
 *
 * Nothing here does I/O or keeps state, so the HTTP transport calls it
 * with header values and writes out what comes back, and the tests call it
 * directly.  The rules are RFC 6750 (bearer tokens), RFC 9728 (metadata),
 * RFC 8707 (resource indicators) and the MCP authorization specification
 * (2025-06-18 and 2025-11-25).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/auth.h"
#include "api/internal.h"

int auth_verdict_status(auth_verdict v)
{
	switch (v) {
	case AUTH_OK: return 200;
	case AUTH_NO_TOKEN: return 401;
	case AUTH_INVALID_REQUEST: return 400;
	case AUTH_INVALID_TOKEN: return 401;
	case AUTH_INSUFFICIENT_SCOPE: return 403;
	case AUTH_SERVER_ERROR: return 500;
	}
	return 500;
}

const char *auth_verdict_error(auth_verdict v)
{
	switch (v) {
	case AUTH_INVALID_REQUEST: return "invalid_request";
	case AUTH_INVALID_TOKEN: return "invalid_token";
	case AUTH_INSUFFICIENT_SCOPE: return "insufficient_scope";
	default: return NULL;
	}
}

/* ---- the token of a request ------------------------------------------------ */

static int token68_char(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

/* How many credentials an Authorization value holds.  Several field lines
 * reach us joined by commas (RFC 9110 section 5.3), and a comma also
 * separates the auth-params of one credential (`Digest a="1", b="2"`), so
 * an element counts as a credential when it begins with a scheme: a token
 * followed by a space or nothing, where an auth-param's name is followed
 * by '='.  Commas inside quoted strings separate nothing. */
static int credential_count(const char *v)
{
	int n = 0;
	const char *p = v;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			return n;
		const char *t = p;
		while (*p && *p != ' ' && *p != '\t' && *p != ',' && *p != '=')
			p++;
		const char *after = p;
		while (*after == ' ' || *after == '\t')
			after++;
		if (p > t && *after != '=')
			n++;
		/* To the end of this element. */
		int quoted = 0;
		for (; *p && (quoted || *p != ','); p++) {
			if (quoted && *p == '\\' && p[1])
				p++;
			else if (*p == '"')
				quoted = !quoted;
		}
	}
}

auth_verdict auth_bearer_token(const char *header, const char **token, size_t *len)
{
	*token = NULL;
	*len = 0;
	if (!header)
		return AUTH_NO_TOKEN;
	/* RFC 6750 section 3.1: a request with more than one credential
	 * (two Authorization headers, whatever their schemes) is
	 * invalid_request, never served as the first one. */
	if (strchr(header, ',') && credential_count(header) > 1)
		return AUTH_INVALID_REQUEST;
	/* HTTP strips the field value's surrounding whitespace; a server
	 * that hands it over unstripped must not make a token invalid. */
	while (*header == ' ' || *header == '\t')
		header++;
	size_t end = strlen(header);
	while (end > 0 && (header[end - 1] == ' ' || header[end - 1] == '\t'))
		end--;
	if (end == 0)
		return AUTH_NO_TOKEN;
	/* The scheme is case-insensitive (RFC 9110 section 11.1); another
	 * scheme is no bearer token at all, so the client gets the plain
	 * challenge. */
	size_t scheme = strcspn(header, " \t");
	if (scheme > end)
		scheme = end;
	if (scheme != 6 || strncasecmp(header, "Bearer", 6) != 0)
		return AUTH_NO_TOKEN;
	/* RFC 6750 section 2.1: "Bearer" 1*SP b64token.  Exactly one space
	 * is what every client sends, and anything else makes the value
	 * ambiguous to intermediaries that split it again. */
	if (end < 8 || header[6] != ' ')
		return AUTH_INVALID_REQUEST;
	const char *t = header + 7;
	size_t n = end - 7, i = 0;
	while (i < n && token68_char((unsigned char)t[i]))
		i++;
	if (i == 0)
		return AUTH_INVALID_REQUEST;
	while (i < n && t[i] == '=')
		i++;
	if (i != n)
		return AUTH_INVALID_REQUEST;
	*token = t;
	*len = n;
	return AUTH_OK;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int auth_url_has_query_token(const char *url)
{
	const char *q = url ? strchr(url, '?') : NULL;
	if (!q)
		return 0;
	q++;
	while (*q && *q != '#') {
		/* The parameter's name, percent-decoded: access%5Ftoken is the
		 * same parameter to every form decoder. */
		char name[16];
		size_t n = 0;
		int overflow = 0;
		while (*q && *q != '=' && *q != '&' && *q != ';' && *q != '#') {
			int c = (unsigned char)*q++;
			if (c == '%' && hexval(q[0]) >= 0 && hexval(q[1]) >= 0) {
				c = hexval(q[0]) * 16 + hexval(q[1]);
				q += 2;
			} else if (c == '+') {
				c = ' ';
			}
			if (n + 1 < sizeof name)
				name[n++] = (char)c;
			else
				overflow = 1;
		}
		name[n] = 0;
		if (!overflow && strcmp(name, "access_token") == 0)
			return 1;
		while (*q && *q != '&' && *q != ';' && *q != '#')
			q++;
		if (*q == '&' || *q == ';')
			q++;
	}
	return 0;
}

/* ---- resource identifiers and the metadata's place ------------------------ */

#define WELL_KNOWN "/.well-known/oauth-protected-resource"

/* The resource's path without its trailing '/', borrowed; *n its length. */
static const char *resource_path(const char *resource, size_t *n)
{
	size_t origin;
	if (!auth_resource_uri_valid(resource) || !auth_uri_origin(resource, &origin))
		return NULL;
	const char *path = resource + origin;
	*n = strlen(path);
	if (*n > 0 && path[*n - 1] == '/')
		(*n)--;
	return path;
}

char *auth_metadata_path(const char *resource)
{
	size_t n;
	const char *path = resource ? resource_path(resource, &n) : NULL;
	if (!path)
		return NULL;
	char *out = NULL;
	return asprintf(&out, WELL_KNOWN "%.*s", (int)n, path) < 0 ? NULL : out;
}

char *auth_metadata_url(const char *resource)
{
	size_t n, origin;
	const char *path = resource ? resource_path(resource, &n) : NULL;
	if (!path || !auth_uri_origin(resource, &origin))
		return NULL;
	char *out = NULL;
	return asprintf(&out, "%.*s" WELL_KNOWN "%.*s", (int)origin, resource, (int)n, path) < 0
		       ? NULL
		       : out;
}

int auth_is_metadata_path(const char *path, const char *resource, const char *endpoint)
{
	if (!path)
		return 0;
	size_t wl = strlen(WELL_KNOWN);
	if (strncmp(path, WELL_KNOWN, wl) != 0)
		return 0;
	const char *rest = path + wl;
	if (*rest == 0)
		return 1;
	size_t n;
	const char *rp = resource ? resource_path(resource, &n) : NULL;
	if (rp && n > 0 && strlen(rest) == n && strncmp(rest, rp, n) == 0)
		return 1;
	if (endpoint && endpoint[0] == '/') {
		size_t el = strlen(endpoint);
		if (el > 0 && endpoint[el - 1] == '/')
			el--;
		if (el > 0 && strlen(rest) == el && strncmp(rest, endpoint, el) == 0)
			return 1;
	}
	return 0;
}

/* ---- documents ----------------------------------------------------------------- */

static json_object *str_array(char *const *v, size_t n)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; a && i < n; i++)
		if (eng_arr_add(a, json_object_new_string(v[i]))) {
			json_object_put(a);
			return NULL;
		}
	return a;
}

static char *json_text(json_object *o)
{
	const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE)
			  : NULL;
	char *out = s ? strdup(s) : NULL;
	json_object_put(o);
	return out;
}

char *auth_metadata_json(const auth_metadata *m)
{
	if (!m || !m->resource)
		return NULL;
	int bad = 0;
	json_object *o = json_object_new_object();
	eng_obj_set(o, "resource", json_object_new_string(m->resource), &bad);
	eng_obj_set(o, "authorization_servers", str_array(m->servers, m->nservers), &bad);
	if (m->nscopes)
		eng_obj_set(o, "scopes_supported", str_array(m->scopes, m->nscopes), &bad);
	/* MCP allows the token in the Authorization header only. */
	char *header = "header";
	eng_obj_set(o, "bearer_methods_supported", str_array(&header, 1), &bad);
	if (m->name)
		eng_obj_set(o, "resource_name", json_object_new_string(m->name), &bad);
	if (m->documentation)
		eng_obj_set(o, "resource_documentation", json_object_new_string(m->documentation),
			    &bad);
	if (bad) {
		json_object_put(o);
		return NULL;
	}
	return json_text(o);
}

/* ---- challenges -------------------------------------------------------------- */

typedef struct sbuf {
	char *p;
	size_t n, cap;
	int failed;
} sbuf;

static void sb_putc(sbuf *b, char c)
{
	if (b->failed)
		return;
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		char *g = realloc(b->p, cap);
		if (!g) {
			b->failed = 1;
			return;
		}
		b->p = g;
		b->cap = cap;
	}
	b->p[b->n++] = c;
	b->p[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *s)
{
	while (*s)
		sb_putc(b, *s++);
}

/* scope-token characters of RFC 6749 section 3.3. */
static int scope_char(int c)
{
	return c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e);
}

static int scope_token_valid(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!scope_char((unsigned char)*s))
			return 0;
	return 1;
}

/* One auth-param.  `strict` keeps only RFC 6750's error_description
 * characters (%x20-21 / %x23-5B / %x5D-7E): quotes and backslashes become
 * apostrophes and slashes, anything else (controls, CR, LF, non-ASCII) a
 * '?', so no value can end the header or the quoted-string early.
 * Otherwise the value is a URI, written as a quoted-string with '"' and
 * '\' escaped and controls dropped. */
static void sb_param(sbuf *b, int *first, const char *name, const char *value, int strict)
{
	sb_puts(b, *first ? " " : ", ");
	*first = 0;
	sb_puts(b, name);
	sb_puts(b, "=\"");
	for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
		if (strict) {
			sb_putc(b, *c == '"' ? '\'' : *c == '\\' ? '/' : (*c >= 0x20 && *c < 0x7f) ? (char)*c : '?');
		} else if (*c >= 0x20 && *c != 0x7f) {
			if (*c == '"' || *c == '\\')
				sb_putc(b, '\\');
			sb_putc(b, (char)*c);
		}
	}
	sb_putc(b, '"');
}

static char *scope_list(char *const *scopes, size_t n)
{
	sbuf b = { 0 };
	for (size_t i = 0; i < n; i++) {
		if (!scope_token_valid(scopes[i]))
			continue;
		if (b.n)
			sb_putc(&b, ' ');
		sb_puts(&b, scopes[i]);
	}
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p ? b.p : strdup("");
}

char *auth_challenge(auth_verdict v, char *const *scopes, size_t nscopes,
		     const char *resource_metadata, const char *description)
{
	sbuf b = { 0 };
	int first = 1;
	sb_puts(&b, "Bearer");
	const char *error = auth_verdict_error(v);
	char *scope = scope_list(scopes, nscopes);
	if (!scope)
		b.failed = 1;
	/* The order of the MCP specification's examples: for 401 the
	 * metadata first; for 403 the error and the scopes it needs first. */
	if (error)
		sb_param(&b, &first, "error", error, 1);
	if (v == AUTH_INSUFFICIENT_SCOPE && scope && *scope)
		sb_param(&b, &first, "scope", scope, 1);
	if (resource_metadata)
		sb_param(&b, &first, "resource_metadata", resource_metadata, 0);
	if (v != AUTH_INSUFFICIENT_SCOPE && scope && *scope)
		sb_param(&b, &first, "scope", scope, 1);
	if (description && v != AUTH_NO_TOKEN)
		sb_param(&b, &first, "error_description", description, 1);
	free(scope);
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

char *auth_error_body(auth_verdict v, const char *description, char *const *scopes,
		      size_t nscopes)
{
	int code = v == AUTH_INSUFFICIENT_SCOPE ? MCP_JSONRPC_FORBIDDEN
		   : v == AUTH_SERVER_ERROR	? MCP_JSONRPC_INTERNAL_ERROR
						: MCP_JSONRPC_UNAUTHORIZED;
	const char *message = v == AUTH_INSUFFICIENT_SCOPE ? "Forbidden: insufficient scope"
			      : v == AUTH_INVALID_REQUEST   ? "Unauthorized: invalid request"
			      : v == AUTH_SERVER_ERROR	    ? "Internal error"
							    : "Unauthorized";
	int bad = 0;
	json_object *data = json_object_new_object();
	const char *error = auth_verdict_error(v);
	if (error)
		eng_obj_set(data, "error", json_object_new_string(error), &bad);
	if (description)
		eng_obj_set(data, "error_description", json_object_new_string(description), &bad);
	if (nscopes) {
		char *s = scope_list(scopes, nscopes);
		eng_obj_set(data, "scope", s ? json_object_new_string(s) : NULL, &bad);
		free(s);
	}
	json_object *err = json_object_new_object();
	eng_obj_set(err, "code", json_object_new_int(code), &bad);
	eng_obj_set(err, "message", json_object_new_string(message), &bad);
	eng_obj_set(err, "data", data, &bad);
	json_object *msg = json_object_new_object();
	eng_obj_set(msg, "jsonrpc", json_object_new_string("2.0"), &bad);
	/* id null: the refusal comes before any request was read. */
	if (!msg || json_object_object_add(msg, "id", NULL) != 0)
		bad = 1;
	eng_obj_set(msg, "error", err, &bad);
	if (bad) {
		json_object_put(msg);
		return NULL;
	}
	return json_text(msg);
}

int auth_http_status(int code, json_object *data, int *retry_after_s)
{
	if (retry_after_s)
		*retry_after_s = 0;
	if (code == MCP_JSONRPC_UNAUTHORIZED) {
		json_object *e = api_get(data, "error");
		return json_object_is_type(e, json_type_string) &&
				       strcmp(json_object_get_string(e), "invalid_request") == 0
			       ? 400
			       : 401;
	}
	if (code == MCP_JSONRPC_FORBIDDEN)
		return 403;
	json_object *ra = api_get(data, "retryAfterMs");
	if (code == MCP_JSONRPC_SERVER_BUSY && json_object_is_type(ra, json_type_int)) {
		int64_t ms = json_object_get_int64(ra);
		if (retry_after_s)
			*retry_after_s = ms <= 0 ? 0 : (int)((ms + 999) / 1000);
		return 429;
	}
	return 0;
}

int auth_scopes_parse(const char *text, char ***out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!text)
		return MCP_OK;
	char **v = NULL;
	size_t count = 0;
	while (*text) {
		size_t len = strcspn(text, " ");
		if (len) {
			char *one = strndup(text, len);
			if (!one) {
				auth_strv_free(v, count);
				return MCP_ENOMEM;
			}
			int dup = 0;
			for (size_t i = 0; i < count && !dup; i++)
				dup = strcmp(v[i], one) == 0;
			if (!scope_token_valid(one)) {
				free(one);
				auth_strv_free(v, count);
				return MCP_EINVAL;
			}
			char **g = dup ? v : realloc(v, (count + 1) * sizeof *v);
			if (!g) {
				free(one);
				auth_strv_free(v, count);
				return MCP_ENOMEM;
			}
			v = g;
			if (dup)
				free(one);
			else
				v[count++] = one;
		}
		text += len;
		text += strspn(text, " ");
	}
	*out = v;
	*n = count;
	return MCP_OK;
}
