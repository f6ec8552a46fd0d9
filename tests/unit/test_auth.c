/*
 * test_auth.c - authorization (the JWT verifier itself is test_jwt.c's):
 * the OAuth protected resource helpers (bearer extraction, challenges, metadata, well-known
 * paths), principals and session binding, and, through an in-process
 * connection, scopes per item and the request hooks.
 *
 * With MCP_AUTH_VECTORS naming a file written by tests/auth/make-tokens.mjs
 * (make check-auth), it also checks every token the jose library made, and
 * prints the table of verdicts: case, HTTP status, WWW-Authenticate.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "api/auth.h"
#include "api/internal.h"
#include "tests/unit/runner.h"

#define RESOURCE "https://mcp.example.test/mcp"
#define ISSUER "https://auth.example.test"
#define METADATA_URL "https://mcp.example.test/.well-known/oauth-protected-resource/mcp"

/* ---- HTTP helpers ---------------------------------------------------------------- */

START_TEST(bearer_header_rules)
{
	const char *t;
	size_t n;
	ck_assert_int_eq(auth_bearer_token("Bearer abc.DEF-_~+/==", &t, &n), AUTH_OK);
	ck_assert_uint_eq(n, strlen("abc.DEF-_~+/=="));
	ck_assert_int_eq(strncmp(t, "abc.DEF-_~+/==", n), 0);
	ck_assert_int_eq(auth_bearer_token("bEaReR tok  ", &t, &n), AUTH_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(auth_bearer_token(NULL, &t, &n), AUTH_NO_TOKEN);
	ck_assert_int_eq(auth_bearer_token("", &t, &n), AUTH_NO_TOKEN);
	ck_assert_int_eq(auth_bearer_token("Basic dXNlcjpw", &t, &n), AUTH_NO_TOKEN);
	ck_assert_int_eq(auth_bearer_token("Bearertok", &t, &n), AUTH_NO_TOKEN);
	ck_assert_int_eq(auth_bearer_token("Bearer", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer  tok", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer\ttok", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer a b", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer a,b", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer =abc", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer ab=c", &t, &n), AUTH_INVALID_REQUEST);
	ck_assert_int_eq(auth_bearer_token("Bearer \"abc\"", &t, &n), AUTH_INVALID_REQUEST);

	ck_assert(auth_url_has_query_token("/mcp?access_token=x"));
	ck_assert(auth_url_has_query_token("/mcp?a=1&access_token"));
	ck_assert(auth_url_has_query_token("/mcp?a=1;access%5Ftoken=x"));
	ck_assert(!auth_url_has_query_token("/mcp"));
	ck_assert(!auth_url_has_query_token("/mcp?my_access_token=x&access_tokens=y"));
	ck_assert(!auth_url_has_query_token("/mcp#access_token=x"));
	ck_assert(!auth_url_has_query_token(NULL));
}
END_TEST

START_TEST(well_known_paths)
{
	char *s = auth_metadata_path(RESOURCE);
	ck_assert_str_eq(s, "/.well-known/oauth-protected-resource/mcp");
	free(s);
	s = auth_metadata_url(RESOURCE "/");
	ck_assert_str_eq(s, METADATA_URL);
	free(s);
	s = auth_metadata_path("https://mcp.example.test");
	ck_assert_str_eq(s, "/.well-known/oauth-protected-resource");
	free(s);
	s = auth_metadata_url("https://mcp.example.test:8443/");
	ck_assert_str_eq(s, "https://mcp.example.test:8443/.well-known/oauth-protected-resource");
	free(s);
	s = auth_metadata_path("https://h.example/a/b/mcp");
	ck_assert_str_eq(s, "/.well-known/oauth-protected-resource/a/b/mcp");
	free(s);
	ck_assert_ptr_null(auth_metadata_path("ftp://h.example/x"));
	ck_assert_ptr_null(auth_metadata_path("https://h.example/x#frag"));
	ck_assert_ptr_null(auth_metadata_path("https://h.example/x?q=1"));
	ck_assert_ptr_null(auth_metadata_path("https:///x"));
	ck_assert_ptr_null(auth_metadata_path("https://u@h.example/x"));

	ck_assert(auth_is_metadata_path("/.well-known/oauth-protected-resource", RESOURCE, "/mcp"));
	ck_assert(auth_is_metadata_path("/.well-known/oauth-protected-resource/mcp", RESOURCE,
					NULL));
	ck_assert(auth_is_metadata_path("/.well-known/oauth-protected-resource/local",
					"https://h.example/public/mcp", "/local"));
	ck_assert(auth_is_metadata_path("/.well-known/oauth-protected-resource/public/mcp",
					"https://h.example/public/mcp", "/local"));
	ck_assert(!auth_is_metadata_path("/.well-known/oauth-protected-resource/other", RESOURCE,
					 "/mcp"));
	ck_assert(!auth_is_metadata_path("/.well-known/oauth-protected-resourcex", RESOURCE,
					 "/mcp"));
	ck_assert(!auth_is_metadata_path("/.well-known/oauth-authorization-server", RESOURCE,
					 "/mcp"));

	ck_assert(auth_audience_matches(RESOURCE, RESOURCE));
	ck_assert(auth_audience_matches("HTTPS://MCP.example.test:443/mcp/", RESOURCE));
	ck_assert(!auth_audience_matches("https://mcp.example.test/MCP", RESOURCE));
	ck_assert(!auth_audience_matches("https://mcp.example.test/mcp2", RESOURCE));
	ck_assert(!auth_audience_matches("http://mcp.example.test/mcp", RESOURCE));
	ck_assert(!auth_audience_matches("https://mcp.example.test:8443/mcp", RESOURCE));
	ck_assert(auth_audience_matches("http://127.0.0.1:80/", "http://127.0.0.1"));
}
END_TEST

START_TEST(metadata_document)
{
	char *servers[] = { ISSUER, "https://backup.example.test" };
	char *scopes[] = { "mcp:read", "mcp:write" };
	auth_metadata m = { RESOURCE, servers, 2, scopes, 2, "Example", "https://docs.example.test/mcp" };
	char *text = auth_metadata_json(&m);
	json_object *o = json_tokener_parse(text);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_object_get_string(api_get(o, "resource")), RESOURCE);
	json_object *as = api_get(o, "authorization_servers");
	ck_assert_uint_eq(json_object_array_length(as), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(as, 0)), ISSUER);
	ck_assert_uint_eq(json_object_array_length(api_get(o, "scopes_supported")), 2);
	json_object *bm = api_get(o, "bearer_methods_supported");
	ck_assert_uint_eq(json_object_array_length(bm), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(bm, 0)), "header");
	ck_assert_str_eq(json_object_get_string(api_get(o, "resource_name")), "Example");
	ck_assert_str_eq(json_object_get_string(api_get(o, "resource_documentation")),
			 "https://docs.example.test/mcp");
	/* Slashes are not escaped: the URLs read as themselves. */
	ck_assert_ptr_nonnull(strstr(text, "\"" RESOURCE "\""));
	json_object_put(o);
	free(text);
	auth_metadata bare = { RESOURCE, NULL, 0, NULL, 0, NULL, NULL };
	text = auth_metadata_json(&bare);
	ck_assert_str_eq(text, "{\"resource\":\"" RESOURCE "\",\"authorization_servers\":[],"
			       "\"bearer_methods_supported\":[\"header\"]}");
	free(text);
}
END_TEST

START_TEST(challenges_are_quoted)
{
	char *need[] = { "mcp:read", "files:write" };
	char *h = auth_challenge(AUTH_NO_TOKEN, need, 1, METADATA_URL, "ignored");
	ck_assert_str_eq(h, "Bearer resource_metadata=\"" METADATA_URL "\", scope=\"mcp:read\"");
	free(h);
	h = auth_challenge(AUTH_INSUFFICIENT_SCOPE, need, 2, METADATA_URL, "Additional permission required");
	ck_assert_str_eq(h, "Bearer error=\"insufficient_scope\", scope=\"mcp:read files:write\", "
			    "resource_metadata=\"" METADATA_URL "\", "
			    "error_description=\"Additional permission required\"");
	free(h);
	h = auth_challenge(AUTH_INVALID_TOKEN, NULL, 0, METADATA_URL, "the token has expired");
	ck_assert_str_eq(h, "Bearer error=\"invalid_token\", resource_metadata=\"" METADATA_URL
			    "\", error_description=\"the token has expired\"");
	free(h);
	/* Nothing in a value can close the quoted-string or the header. */
	char *odd[] = { "ok", "bad\"scope", "bad\\scope", "sp ace" };
	h = auth_challenge(AUTH_INVALID_REQUEST, odd, 4, "https://h.example/a\"b\\c\r\nX: y",
			   "say \"hi\"\\ \r\nInjected: 1 \xc3\xa9");
	ck_assert_str_eq(h, "Bearer error=\"invalid_request\", resource_metadata=\"https://h.example/"
			    "a\\\"b\\\\cX: y\", scope=\"ok\", "
			    "error_description=\"say 'hi'/ ??Injected: 1 ??\"");
	ck_assert_ptr_null(strpbrk(h, "\r\n"));
	free(h);
	h = auth_challenge(AUTH_NO_TOKEN, NULL, 0, NULL, NULL);
	ck_assert_str_eq(h, "Bearer");
	free(h);
}
END_TEST

START_TEST(refusal_bodies_and_statuses)
{
	char *need[] = { "admin" };
	char *b = auth_error_body(AUTH_INSUFFICIENT_SCOPE, "more needed", need, 1);
	json_object *o = json_tokener_parse(b);
	ck_assert_int_eq(json_object_get_int(api_get(api_get(o, "error"), "code")),
			 MCP_JSONRPC_FORBIDDEN);
	ck_assert(json_object_is_type(api_get(o, "id"), json_type_null));
	json_object *data = api_get(api_get(o, "error"), "data");
	ck_assert_str_eq(json_object_get_string(api_get(data, "error")), "insufficient_scope");
	ck_assert_str_eq(json_object_get_string(api_get(data, "scope")), "admin");
	int retry = -1;
	ck_assert_int_eq(auth_http_status(MCP_JSONRPC_FORBIDDEN, data, &retry), 403);
	json_object_put(o);
	free(b);
	b = auth_error_body(AUTH_INVALID_REQUEST, "no", NULL, 0);
	o = json_tokener_parse(b);
	ck_assert_int_eq(auth_http_status(json_object_get_int(api_get(api_get(o, "error"), "code")),
					  api_get(api_get(o, "error"), "data"), NULL),
			 400);
	json_object_put(o);
	free(b);
	json_object *d = json_tokener_parse("{\"retryAfterMs\":1500}");
	ck_assert_int_eq(auth_http_status(MCP_JSONRPC_SERVER_BUSY, d, &retry), 429);
	ck_assert_int_eq(retry, 2);
	json_object_put(d);
	ck_assert_int_eq(auth_http_status(MCP_JSONRPC_SERVER_BUSY, NULL, &retry), 0);
	ck_assert_int_eq(auth_http_status(MCP_JSONRPC_UNAUTHORIZED, NULL, &retry), 401);
	ck_assert_int_eq(auth_http_status(MCP_JSONRPC_INVALID_PARAMS, NULL, &retry), 0);
}
END_TEST

START_TEST(principals_and_binding)
{
	char **v;
	size_t n;
	ck_assert_int_eq(auth_scopes_parse("  a b  a c ", &v, &n), MCP_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[2], "c");
	ck_assert_ptr_null(auth_principal_missing(NULL, v, 0));
	mcp_principal *p = auth_principal_new();
	ck_assert_int_eq(mcp_principal_set_subject(p, "alice"), MCP_OK);
	ck_assert_int_eq(mcp_principal_add_scope(p, "a"), MCP_OK);
	ck_assert_int_eq(mcp_principal_add_scope(p, "a"), MCP_OK);
	ck_assert_int_eq(mcp_principal_add_scope(p, "b c"), MCP_EINVAL);
	ck_assert_uint_eq(p->nscopes, 1);
	ck_assert_str_eq(auth_principal_missing(p, v, n), "b");
	auth_strv_free(v, n);
	ck_assert_int_eq(auth_scopes_parse("ok bad\"one", &v, &n), MCP_EINVAL);
	p->frozen = 1;
	ck_assert_int_eq(mcp_principal_set_client_id(p, "c"), MCP_ESTATE);
	ck_assert_int_eq(mcp_principal_set_expiry(p, 5), MCP_ESTATE);

	mcp_principal *q = auth_principal_new();
	mcp_principal_set_subject(q, "alice");
	mcp_principal_add_scope(q, "a");
	mcp_principal_add_scope(q, "b");
	mcp_principal *eve = auth_principal_new();
	mcp_principal_set_subject(eve, "eve");
	ck_assert(auth_principal_same_party(p, q));
	ck_assert(!auth_principal_same_party(p, eve));

	/* A session keeps its party: a refreshed token of the same subject
	 * replaces the principal (step-up), another subject's is refused. */
	mcp_server *srv = mcp_server_new("t", "1");
	api_sess *ms = api_sess_new(srv);
	ck_assert_ptr_null(api_authz_current(ms));
	ck_assert_int_eq(api_authz_bind(ms, p), MCP_OK);
	ck_assert_int_eq(api_authz_bind(ms, eve), MCP_ENOENT);
	ck_assert_ptr_eq(api_authz_current(ms), p);
	ck_assert_int_eq(api_authz_bind(ms, q), MCP_OK);
	ck_assert_ptr_eq(api_authz_current(ms), q);
	api_authz_sess_free(ms);
	pthread_mutex_destroy(&ms->mu);
	free(ms);
	mcp_server_free(srv);
	auth_principal_unref(p);
	auth_principal_unref(q);
	auth_principal_unref(eve);
}
END_TEST

/* ---- the HTTP entry point with an application verifier ----------------------------- */

static int verify_fn(const char *token, const char *resource, mcp_principal *out, void *user)
{
	(void)user;
	ck_assert_str_eq(resource, RESOURCE);
	if (strcmp(token, "broken") == 0)
		return MCP_ESYS;
	if (strcmp(token, "weak") == 0)
		return MCP_AUTH_INSUFFICIENT_SCOPE;
	if (strncmp(token, "good", 4) != 0)
		return MCP_AUTH_INVALID_TOKEN;
	mcp_principal_set_subject(out, "bob");
	mcp_principal_add_scope(out, "mcp");
	if (strcmp(token, "good-old") == 0)
		mcp_principal_set_expiry(out, 1000);
	if (strcmp(token, "good-elsewhere") == 0)
		mcp_principal_add_audience(out, "https://elsewhere.example.test");
	return MCP_AUTH_OK;
}

static int http_status(mcp_server *srv, const char *url, const char *header, char **www,
		       mcp_principal **p)
{
	char *body = NULL;
	int st = api_authz_http(srv, url, header, 1800000000, p, www, &body);
	if (st) {
		json_object *o = json_tokener_parse(body);
		ck_assert_ptr_nonnull(o);
		ck_assert_ptr_nonnull(api_get(api_get(o, "error"), "code"));
		json_object_put(o);
	}
	free(body);
	return st;
}

START_TEST(http_entry_with_custom_verifier)
{
	mcp_server *srv = mcp_server_new("t", "1");
	char *www = NULL;
	mcp_principal *p = NULL;
	/* Off until a resource is set. */
	ck_assert_int_eq(http_status(srv, "/mcp", NULL, &www, &p), 0);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(mcp_server_set_auth_resource(srv, "ftp://x"), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_resource(srv, RESOURCE), MCP_OK);
	ck_assert_int_eq(mcp_server_add_auth_server(srv, ISSUER), MCP_OK);
	ck_assert_int_eq(mcp_server_set_auth_required_scopes(srv, "mcp"), MCP_OK);
	ck_assert_int_eq(mcp_server_set_auth_scopes_supported(srv, "mcp admin"), MCP_OK);
	ck_assert_int_eq(mcp_server_set_auth_verifier(srv, verify_fn, NULL), MCP_OK);

	ck_assert_int_eq(http_status(srv, "/mcp", NULL, &www, &p), 401);
	ck_assert_str_eq(www, "Bearer resource_metadata=\"" METADATA_URL "\", scope=\"mcp\"");
	free(www);
	ck_assert_int_eq(http_status(srv, "/mcp", "Bearer good", &www, &p), 0);
	ck_assert_str_eq(p->subject, "bob");
	ck_assert(p->frozen);
	auth_principal_unref(p);
	ck_assert_int_eq(http_status(srv, "/mcp?access_token=good", "Bearer good", &www, &p), 400);
	ck_assert_ptr_nonnull(strstr(www, "error=\"invalid_request\""));
	free(www);
	ck_assert_int_eq(http_status(srv, "/mcp", "Bearer bad", &www, &p), 401);
	ck_assert_ptr_nonnull(strstr(www, "error=\"invalid_token\""));
	free(www);
	ck_assert_int_eq(http_status(srv, "/mcp", "Bearer good-old", &www, &p), 401);
	free(www);
	ck_assert_int_eq(http_status(srv, "/mcp", "Bearer good-elsewhere", &www, &p), 401);
	free(www);
	ck_assert_int_eq(http_status(srv, "/mcp", "Bearer weak", &www, &p), 403);
	ck_assert_ptr_nonnull(strstr(www, "error=\"insufficient_scope\", scope=\"mcp\""));
	free(www);
	ck_assert_int_eq(http_status(srv, "/mcp", "Bearer broken", &www, &p), 500);
	ck_assert_ptr_null(www);

	char *json = NULL;
	ck_assert_int_eq(api_authz_metadata(srv, "/.well-known/oauth-protected-resource/mcp", "/mcp",
					    &json),
			 1);
	ck_assert_ptr_nonnull(strstr(json, "\"scopes_supported\":[\"mcp\",\"admin\"]"));
	free(json);
	ck_assert_int_eq(api_authz_metadata(srv, "/mcp", "/mcp", &json), 0);
	mcp_server_free(srv);
}
END_TEST

/* ---- scopes and hooks through an in-process connection -------------------------------- */

static mcp_server *srv;
static mcp_memconn *conn;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char access_log[64][256];
static int nlog;

/* A token bucket per principal: `capacity` calls, one more every
 * `refill_ms`.  The example of a per-caller rate limit. */
typedef struct bucket {
	char who[64];
	double tokens;
	int64_t at_ns;
} bucket;
static bucket buckets[8];
static int nbuckets;
static const double capacity = 3, refill_ms = 60000;

static int before_hook(mcp_ctx *ctx, void *user)
{
	(void)user;
	const char *who = mcp_ctx_auth_subject(ctx);
	json_object *meta = mcp_ctx_meta(ctx);
	json_object *tp = api_get(meta, "traceparent");
	if (tp && strcmp(json_object_get_string(tp), "deny") == 0)
		return mcp_ctx_refuse(ctx, MCP_REFUSE_FORBIDDEN, NULL, 0);
	if (tp && strcmp(json_object_get_string(tp), "block") == 0)
		/* A hook that waits (for a rate limiter's slot, say): only the
		 * request's cancellation ends it. */
		return mcp_ctx_sleep(ctx, 600000);
	/* Local clients are not limited; only calls count. */
	if (!who || strcmp(mcp_ctx_method(ctx), "tools/call") != 0)
		return MCP_OK;
	int64_t now = eng_now_ns();
	pthread_mutex_lock(&log_mu);
	bucket *b = NULL;
	for (int i = 0; i < nbuckets && !b; i++)
		if (strcmp(buckets[i].who, who) == 0)
			b = &buckets[i];
	if (!b) {
		b = &buckets[nbuckets++];
		snprintf(b->who, sizeof b->who, "%s", who);
		b->tokens = capacity;
		b->at_ns = now;
	}
	b->tokens += (double)(now - b->at_ns) / 1e6 / refill_ms;
	if (b->tokens > capacity)
		b->tokens = capacity;
	b->at_ns = now;
	int allowed = b->tokens >= 1;
	if (allowed)
		b->tokens -= 1;
	int64_t wait_ms = allowed ? 0 : (int64_t)((1 - b->tokens) * refill_ms);
	pthread_mutex_unlock(&log_mu);
	if (!allowed)
		return mcp_ctx_refuse(ctx, MCP_REFUSE_RATE_LIMITED, "Rate limit exceeded", wait_ms);
	return MCP_OK;
}

/* One access-log line per request. */
static void after_hook(mcp_ctx *ctx, const char *outcome, int code, int64_t duration_us,
		       void *user)
{
	(void)user;
	ck_assert_int_ge(duration_us, 0);
	pthread_mutex_lock(&log_mu);
	if (nlog < 64)
		snprintf(access_log[nlog++], sizeof access_log[0], "%s %s sub=%s outcome=%s code=%d",
			 mcp_ctx_method(ctx), mcp_ctx_target(ctx) ? mcp_ctx_target(ctx) : "-",
			 mcp_ctx_auth_subject(ctx) ? mcp_ctx_auth_subject(ctx) : "-", outcome,
			 code);
	pthread_mutex_unlock(&log_mu);
}

static int whoami(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	size_t n = 0;
	const char *const *scopes = mcp_ctx_auth_scopes(ctx, &n);
	char buf[256];
	snprintf(buf, sizeof buf, "auth=%d sub=%s client=%s n=%zu first=%s read=%d admin=%d",
		 mcp_ctx_authenticated(ctx), mcp_ctx_auth_subject(ctx) ? mcp_ctx_auth_subject(ctx) : "-",
		 mcp_ctx_auth_client_id(ctx) ? mcp_ctx_auth_client_id(ctx) : "-", n,
		 n ? scopes[0] : "-", mcp_ctx_auth_has_scope(ctx, "mcp:read"),
		 mcp_ctx_auth_has_scope(ctx, "admin"));
	return mcp_result_add_text(out, buf);
}

static int read_secret(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
		       void *user)
{
	(void)ctx;
	(void)vars;
	(void)user;
	return mcp_contents_add_text(out, uri, "text/plain", "secret");
}

static int get_prompt(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_prompt_add_text(out, MCP_ROLE_USER, "hi");
}

/* The after-hook runs once the answer is on its way, so the client may
 * read the answer first: wait for the log to reach `n` lines. */
static void wait_log(int n)
{
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&log_mu);
		int have = nlog;
		pthread_mutex_unlock(&log_mu);
		if (have >= n)
			return;
		usleep(1000);
	}
}

/* How many lines of the log read `line`: the after-hooks of consecutive
 * requests run on different workers, so their order is not fixed. */
static int log_count(const char *line)
{
	int n = 0;
	for (int i = 0; i < nlog; i++)
		n += strcmp(access_log[i], line) == 0;
	return n;
}

static void send_msg(const char *m)
{
	ck_assert_int_eq(mcp_memconn_send(conn, m, strlen(m)), MCP_OK);
}

static json_object *request(const char *method, const char *params)
{
	static int next_id = 1;
	char buf[1024];
	int id = next_id++;
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
		 id, method, params);
	send_msg(buf);
	for (;;) {
		char *line;
		size_t len;
		ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
		json_object *m = json_tokener_parse(line);
		free(line);
		json_object *jid = api_get(m, "id");
		if (jid && json_object_get_int(jid) == id)
			return m;
		json_object_put(m);
	}
}

static int error_code(json_object *m)
{
	return json_object_get_int(api_get(api_get(m, "error"), "code"));
}

static const char *text_of(json_object *m)
{
	json_object *c = api_get(api_get(m, "result"), "content");
	return json_object_get_string(api_get(json_object_array_get_idx(c, 0), "text"));
}

static size_t list_len(json_object *m, const char *key)
{
	return json_object_array_length(api_get(api_get(m, "result"), key));
}

static void setup(void)
{
	nlog = 0;
	nbuckets = 0;
	srv = mcp_server_new("auth", "1.0");
	mcp_tool t1 = { MCP_TOOL_INIT, .name = "whoami", .fn = whoami };
	mcp_tool t2 = { MCP_TOOL_INIT, .name = "secret", .fn = whoami };
	ck_assert_int_eq(mcp_server_add_tool(srv, &t1), MCP_OK);
	/* Declared before registration: never reachable without it. */
	ck_assert_int_eq(mcp_server_set_scopes(srv, MCP_ITEM_TOOL, "secret", "admin"), MCP_OK);
	ck_assert_int_eq(mcp_server_set_scopes(srv, MCP_ITEM_TOOL, "secret", "bad\"scope"),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_server_add_tool(srv, &t2), MCP_OK);
	mcp_resource r = { MCP_RESOURCE_INIT, .uri = "test://secret", .name = "secret", .read = read_secret };
	mcp_resource r2 = { MCP_RESOURCE_INIT, .uri = "test://open", .name = "open", .read = read_secret };
	ck_assert_int_eq(mcp_server_add_resource(srv, &r), MCP_OK);
	ck_assert_int_eq(mcp_server_add_resource(srv, &r2), MCP_OK);
	ck_assert_int_eq(mcp_server_set_scopes(srv, MCP_ITEM_RESOURCE, "test://secret", "admin"),
			 MCP_OK);
	mcp_resource_template tpl = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "test://doc/{id}", .name = "doc",
				      .read = read_secret };
	ck_assert_int_eq(mcp_server_add_resource_template(srv, &tpl), MCP_OK);
	ck_assert_int_eq(mcp_server_set_scopes(srv, MCP_ITEM_TEMPLATE, "test://doc/{id}",
					       "docs admin"),
			 MCP_OK);
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "p", .get = get_prompt };
	ck_assert_int_eq(mcp_server_add_prompt(srv, &p), MCP_OK);
	ck_assert_int_eq(mcp_server_set_scopes(srv, MCP_ITEM_PROMPT, "p", "prompts"), MCP_OK);
	ck_assert_int_eq(mcp_server_set_request_hooks(srv, before_hook, after_hook, NULL), MCP_OK);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	json_object_put(request("initialize", "{\"protocolVersion\":\"2025-11-25\","
					      "\"capabilities\":{}}"));
	ck_assert_int_eq(mcp_server_set_request_hooks(srv, NULL, NULL, NULL), MCP_ESTATE);
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	/* initialize ran between the hooks too; each test counts its own. */
	wait_log(1);
	pthread_mutex_lock(&log_mu);
	ck_assert_int_eq(nlog, 1);
	ck_assert_str_eq(access_log[0], "initialize - sub=- outcome=completed code=0");
	nlog = 0;
	pthread_mutex_unlock(&log_mu);
}

static void teardown(void)
{
	mcp_memconn_close(conn);
	char *line;
	size_t len;
	while (mcp_memconn_recv(conn, 10000, &line, &len) == 1)
		free(line);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}

/* What the HTTP layer will do for each request: bind the principal of its
 * token to the connection's session. */
static void bind_principal(const char *sub, const char *scopes)
{
	mcp_principal *p = auth_principal_new();
	mcp_principal_set_subject(p, sub);
	mcp_principal_set_client_id(p, "client-a");
	char **v;
	size_t n;
	ck_assert_int_eq(auth_scopes_parse(scopes, &v, &n), MCP_OK);
	for (size_t i = 0; i < n; i++)
		mcp_principal_add_scope(p, v[i]);
	auth_strv_free(v, n);
	p->frozen = 1;
	pthread_mutex_lock(&srv->sess_mu);
	api_sess *ms = srv->sessions;
	pthread_mutex_unlock(&srv->sess_mu);
	ck_assert_ptr_nonnull(ms);
	ck_assert_int_eq(api_authz_bind(ms, p), MCP_OK);
	auth_principal_unref(p);
}

START_TEST(no_principal_is_unrestricted)
{
	json_object *m = request("tools/list", "{}");
	ck_assert_uint_eq(list_len(m, "tools"), 2);
	json_object_put(m);
	m = request("tools/call", "{\"name\":\"secret\"}");
	ck_assert_str_eq(text_of(m), "auth=0 sub=- client=- n=0 first=- read=0 admin=0");
	json_object_put(m);
	m = request("resources/read", "{\"uri\":\"test://secret\"}");
	ck_assert_ptr_nonnull(api_get(m, "result"));
	json_object_put(m);
	wait_log(3);
	pthread_mutex_lock(&log_mu);
	ck_assert_int_eq(nlog, 3);
	ck_assert_int_eq(log_count("tools/list - sub=- outcome=completed code=0"), 1);
	ck_assert_int_eq(log_count("tools/call secret sub=- outcome=completed code=0"), 1);
	ck_assert_int_eq(log_count("resources/read test://secret sub=- outcome=completed code=0"), 1);
	pthread_mutex_unlock(&log_mu);
}
END_TEST

START_TEST(scopes_filter_lists_and_refuse_calls)
{
	bind_principal("user-1", "mcp:read docs");
	json_object *m = request("tools/list", "{}");
	ck_assert_uint_eq(list_len(m, "tools"), 1);
	ck_assert_str_eq(json_object_get_string(api_get(
				 json_object_array_get_idx(api_get(api_get(m, "result"), "tools"), 0),
				 "name")),
			 "whoami");
	json_object_put(m);
	m = request("resources/list", "{}");
	ck_assert_uint_eq(list_len(m, "resources"), 1);
	json_object_put(m);
	m = request("resources/templates/list", "{}");
	ck_assert_uint_eq(list_len(m, "resourceTemplates"), 0);
	json_object_put(m);
	m = request("prompts/list", "{}");
	ck_assert_uint_eq(list_len(m, "prompts"), 0);
	json_object_put(m);

	m = request("tools/call", "{\"name\":\"whoami\"}");
	ck_assert_str_eq(text_of(m), "auth=1 sub=user-1 client=client-a n=2 first=mcp:read read=1 admin=0");
	json_object_put(m);
	m = request("tools/call", "{\"name\":\"secret\"}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	json_object *data = api_get(api_get(m, "error"), "data");
	ck_assert_str_eq(json_object_get_string(api_get(data, "error")), "insufficient_scope");
	/* What to ask for: the tool's scope, then those already held. */
	ck_assert_str_eq(json_object_get_string(api_get(data, "scope")), "admin mcp:read docs");
	char *h = api_authz_forbidden_challenge(srv, data);
	ck_assert_ptr_null(h); /* no resource configured: no HTTP challenge */
	json_object_put(m);
	m = request("resources/read", "{\"uri\":\"test://doc/7\"}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	ck_assert_str_eq(json_object_get_string(api_get(api_get(api_get(m, "error"), "data"),
							"scope")),
			 "docs admin mcp:read");
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"p\"}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	json_object_put(m);
	m = request("completion/complete", "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},"
					   "\"argument\":{\"name\":\"x\",\"value\":\"\"}}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	json_object_put(m);

	/* Step-up: the same subject comes back with more scopes. */
	bind_principal("user-1", "mcp:read docs admin prompts");
	m = request("tools/list", "{}");
	ck_assert_uint_eq(list_len(m, "tools"), 2);
	json_object_put(m);
	m = request("tools/call", "{\"name\":\"secret\"}");
	ck_assert_str_eq(text_of(m), "auth=1 sub=user-1 client=client-a n=4 first=mcp:read read=1 admin=1");
	json_object_put(m);
	/* Lifting a requirement while serving. */
	ck_assert_int_eq(mcp_server_set_scopes(srv, MCP_ITEM_PROMPT, "p", NULL), MCP_OK);
	wait_log(11);
	pthread_mutex_lock(&log_mu);
	ck_assert_int_eq(nlog, 11);
	ck_assert_int_eq(log_count("tools/list - sub=user-1 outcome=completed code=0"), 2);
	ck_assert_int_eq(log_count("prompts/list - sub=user-1 outcome=completed code=0"), 1);
	ck_assert_int_eq(log_count("tools/call whoami sub=user-1 outcome=completed code=0"), 1);
	ck_assert_int_eq(log_count("tools/call secret sub=user-1 outcome=refused code=-32052"), 1);
	ck_assert_int_eq(log_count("resources/read test://doc/7 sub=user-1 outcome=refused code=-32052"), 1);
	ck_assert_int_eq(log_count("tools/call secret sub=user-1 outcome=completed code=0"), 1);
	pthread_mutex_unlock(&log_mu);
}
END_TEST

START_TEST(hooks_rate_limit_and_refuse)
{
	bind_principal("user-2", "mcp:read");
	for (int i = 0; i < 3; i++) {
		json_object *m = request("tools/call", "{\"name\":\"whoami\"}");
		ck_assert_ptr_nonnull(api_get(m, "result"));
		json_object_put(m);
	}
	json_object *m = request("tools/call", "{\"name\":\"whoami\"}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_SERVER_BUSY);
	ck_assert_str_eq(json_object_get_string(api_get(api_get(m, "error"), "message")),
			 "Rate limit exceeded");
	json_object *data = api_get(api_get(m, "error"), "data");
	int64_t retry = json_object_get_int64(api_get(data, "retryAfterMs"));
	ck_assert_int_gt(retry, 0);
	ck_assert_int_le(retry, 60000);
	int secs = 0;
	ck_assert_int_eq(auth_http_status(MCP_JSONRPC_SERVER_BUSY, data, &secs), 429);
	ck_assert_int_ge(secs, 1);
	json_object_put(m);
	wait_log(4);
	pthread_mutex_lock(&log_mu);
	ck_assert_int_eq(nlog, 4);
	ck_assert_int_eq(log_count("tools/call whoami sub=user-2 outcome=refused code=-32050"), 1);
	buckets[0].tokens = capacity; /* the bucket refills */
	pthread_mutex_unlock(&log_mu);
	/* A hook reads the request's _meta (trace context) and refuses. */
	m = request("tools/call", "{\"name\":\"whoami\",\"_meta\":{\"traceparent\":\"deny\"}}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	ck_assert_str_eq(json_object_get_string(api_get(api_get(api_get(m, "error"), "data"), "error")),
			 "forbidden");
	json_object_put(m);
	m = request("tools/call", "{\"name\":\"whoami\",\"_meta\":{\"traceparent\":\"00-ab-cd-01\"}}");
	ck_assert_ptr_nonnull(api_get(m, "result"));
	json_object_put(m);
	m = request("tools/call", "{\"name\":\"nosuch\"}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_INVALID_PARAMS);
	json_object_put(m);
	wait_log(6);
	pthread_mutex_lock(&log_mu);
	/* An unknown tool never reaches a worker's handler: no line. */
	ck_assert_int_eq(nlog, 6);
	ck_assert_int_eq(log_count("tools/call whoami sub=user-2 outcome=refused code=-32052"), 1);
	ck_assert_int_eq(log_count("tools/call whoami sub=user-2 outcome=completed code=0"), 4);
	pthread_mutex_unlock(&log_mu);
}
END_TEST

/* The methods a connection's reader answers itself without hooks run on a
 * worker between them once hooks are installed: every one is seen, and
 * the before-hook may refuse any of them. */
START_TEST(hooks_cover_every_method)
{
	bind_principal("user-3", "mcp:read");
	static const char *const calls[][2] = {
		{ "ping", "{}" },
		{ "logging/setLevel", "{\"level\":\"info\"}" },
		{ "tools/list", "{}" },
		{ "resources/list", "{}" },
		{ "resources/templates/list", "{}" },
		{ "prompts/list", "{}" },
		{ "resources/subscribe", "{\"uri\":\"test://open\"}" },
		{ "resources/unsubscribe", "{\"uri\":\"test://open\"}" },
		{ "tasks/list", "{}" },
		{ "tasks/get", "{\"taskId\":\"none\"}" },
		{ "tasks/cancel", "{\"taskId\":\"none\"}" },
		{ "tasks/result", "{\"taskId\":\"none\"}" },
	};
	size_t n = sizeof calls / sizeof calls[0];
	for (size_t i = 0; i < n; i++) {
		json_object *m = request(calls[i][0], calls[i][1]);
		int is_task = strncmp(calls[i][0], "tasks/", 6) == 0 && strcmp(calls[i][0], "tasks/list");
		if (is_task)
			ck_assert_int_eq(error_code(m), MCP_JSONRPC_INVALID_PARAMS);
		else
			ck_assert_ptr_nonnull(api_get(m, "result"));
		json_object_put(m);
	}
	/* 2026-07-28 methods on the same connection. */
	static const char modern_meta[] =
		"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
		"\"io.modelcontextprotocol/clientCapabilities\":{}";
	char params[512];
	snprintf(params, sizeof params, "{%s}}", modern_meta);
	json_object *m = request("server/discover", params);
	ck_assert_ptr_nonnull(api_get(api_get(m, "result"), "supportedVersions"));
	json_object_put(m);
	m = request("tools/list", params);
	ck_assert_uint_eq(list_len(m, "tools"), 1); /* scope-filtered: whoami only */
	ck_assert_str_eq(json_object_get_string(api_get(api_get(m, "result"), "resultType")),
			 "complete");
	json_object_put(m);
	/* A listen is let through by the before-hook, then handed to its
	 * stream: the after-hook sees it then, as "streaming". */
	char line_buf[640];
	snprintf(line_buf, sizeof line_buf,
		 "{\"jsonrpc\":\"2.0\",\"id\":\"listen-1\",\"method\":\"subscriptions/listen\","
		 "\"params\":{\"notifications\":{\"toolsListChanged\":true},%s}}}",
		 modern_meta);
	send_msg(line_buf);
	for (int acked = 0; !acked;) {
		char *line;
		size_t len;
		ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
		acked = strstr(line, "notifications/subscriptions/acknowledged") != NULL;
		free(line);
	}
	/* Refused by the before-hook, which reads each request's _meta. */
	m = request("ping", "{\"_meta\":{\"traceparent\":\"deny\"}}");
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	json_object_put(m);
	snprintf(params, sizeof params, "{%s,\"traceparent\":\"deny\"}}", modern_meta);
	m = request("server/discover", params);
	ck_assert_int_eq(error_code(m), MCP_JSONRPC_FORBIDDEN);
	json_object_put(m);
	wait_log((int)n + 5);
	pthread_mutex_lock(&log_mu);
	ck_assert_int_eq(nlog, (int)n + 5);
	for (size_t i = 0; i < n; i++) {
		char line[128];
		int is_task = strncmp(calls[i][0], "tasks/", 6) == 0 && strcmp(calls[i][0], "tasks/list");
		snprintf(line, sizeof line, "%s - sub=user-3 outcome=%s", calls[i][0],
			 is_task ? "error code=-32602" : "completed code=0");
		/* tools/list twice: once in each era. */
		int want = strcmp(calls[i][0], "tools/list") == 0 ? 2 : 1;
		ck_assert_msg(log_count(line) == want, "not %d line(s) \"%s\"", want, line);
	}
	ck_assert_int_eq(log_count("server/discover - sub=user-3 outcome=completed code=0"), 1);
	ck_assert_int_eq(log_count("subscriptions/listen - sub=user-3 outcome=streaming code=0"), 1);
	ck_assert_int_eq(log_count("ping - sub=user-3 outcome=refused code=-32052"), 1);
	ck_assert_int_eq(log_count("server/discover - sub=user-3 outcome=refused code=-32052"), 1);
	pthread_mutex_unlock(&log_mu);
}
END_TEST

/* A before-hook that blocks is cancelled like a handler: the client's
 * cancellation wakes it, nothing is written for the request, and the
 * after-hook sees the cancellation. */
START_TEST(blocking_hook_is_cancelled)
{
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"blocked\",\"method\":\"ping\","
		 "\"params\":{\"_meta\":{\"traceparent\":\"block\"}}}");
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"blocked-call\",\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"whoami\",\"_meta\":{\"traceparent\":\"block\"}}}");
	/* Both hooks now wait on workers; the connection answers others. */
	json_object *m = request("ping", "{}");
	ck_assert_ptr_nonnull(api_get(m, "result"));
	json_object_put(m);
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		 "\"params\":{\"requestId\":\"blocked\"}}");
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
		 "\"params\":{\"requestId\":\"blocked-call\"}}");
	wait_log(3);
	/* Whatever was written for the cancelled ones would come before the
	 * answer to a later request. */
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"ping\"}");
	for (int done = 0; !done;) {
		char *line;
		size_t len;
		ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
		ck_assert_msg(!strstr(line, "\"blocked"), "written for a cancelled request: %s", line);
		done = strstr(line, "\"id\":\"after\"") != NULL;
		free(line);
	}
	pthread_mutex_lock(&log_mu);
	ck_assert_int_eq(log_count("ping - sub=- outcome=peer_cancelled code=0"), 1);
	ck_assert_int_eq(log_count("tools/call whoami sub=- outcome=peer_cancelled code=0"), 1);
	pthread_mutex_unlock(&log_mu);
}
END_TEST

/* ---- the jose vectors (make check-auth) ---------------------------------------------- */

static json_object *vectors;

START_TEST(jose_vectors)
{
	json_object *cases = api_get(vectors, "cases");
	const char *resource = json_object_get_string(api_get(vectors, "resource"));
	const char *issuer = json_object_get_string(api_get(vectors, "issuer"));
	int64_t now = json_object_get_int64(api_get(vectors, "now"));
	char *full = strdup(json_object_to_json_string(api_get(vectors, "jwks")));
	char *single = strdup(json_object_to_json_string(api_get(vectors, "jwks_single")));
	char *meta = auth_metadata_url(resource);
	size_t n = json_object_array_length(cases);
	ck_assert_uint_ge(n, 40);
	printf("| token | status | WWW-Authenticate |\n| --- | --- | --- |\n");
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(cases, i);
		const char *name = json_object_get_string(api_get(c, "name"));
		const char *token = json_object_get_string(api_get(c, "token"));
		int want = json_object_get_int(api_get(c, "status"));
		json_object *jstrict = api_get(c, "strict"), *jreq = api_get(c, "required");
		json_object *jurl = api_get(c, "url"), *jhdr = NULL, *jscheme = api_get(c, "scheme");
		json_object *jjwks = api_get(c, "jwks");
		int has_hdr = json_object_object_get_ex(c, "header", &jhdr);

		mcp_server *s = mcp_server_new("vectors", "1");
		ck_assert_int_eq(mcp_server_set_auth_resource(s, resource), MCP_OK);
		ck_assert_int_eq(mcp_server_add_auth_server(s, issuer), MCP_OK);
		ck_assert_int_eq(mcp_server_set_auth_issuer(s, issuer), MCP_OK);
		ck_assert_int_eq(mcp_server_set_auth_jwks_text(s, jjwks ? single : full), MCP_OK);
		if (jstrict)
			ck_assert_int_eq(mcp_server_set_auth_strict_typ(s, 1), MCP_OK);
		if (jreq)
			ck_assert_int_eq(mcp_server_set_auth_required_scopes(
						 s, json_object_get_string(jreq)),
					 MCP_OK);
		char *header = NULL;
		if (!has_hdr)
			ck_assert_int_gt(asprintf(&header, "%s %s",
						  jscheme ? json_object_get_string(jscheme) : "Bearer",
						  token),
					 0);
		else if (jhdr)
			header = strdup(json_object_get_string(jhdr));
		mcp_principal *p = NULL;
		char *www = NULL, *body = NULL;
		int st = api_authz_http(s, jurl ? json_object_get_string(jurl) : "/mcp", header, now,
					&p, &www, &body);
		printf("| %s | %d | %s |\n", name, st ? st : 200, www ? www : "");
		ck_assert_msg((st ? st : 200) == want, "%s: status %d, expected %d (%s)", name,
			      st ? st : 200, want, www ? www : "");
		if (want == 200) {
			ck_assert_ptr_nonnull(p);
			json_object *sub = api_get(c, "sub"), *cid = api_get(c, "client_id");
			ck_assert_str_eq(p->subject, json_object_get_string(sub));
			ck_assert_str_eq(p->client_id, json_object_get_string(cid));
			json_object *sc = api_get(c, "scopes");
			for (size_t k = 0; sc && k < json_object_array_length(sc); k++)
				ck_assert_msg(auth_principal_has_scope(
						      p, json_object_get_string(
								 json_object_array_get_idx(sc, k))),
					      "%s: scope missing", name);
			if (sc)
				ck_assert_uint_eq(p->nscopes, json_object_array_length(sc));
		} else {
			ck_assert_ptr_null(p);
			ck_assert_ptr_nonnull(www);
			ck_assert_msg(strstr(www, meta) != NULL, "%s: no resource_metadata", name);
			json_object *err = api_get(c, "error");
			if (err) {
				char want_err[64];
				snprintf(want_err, sizeof want_err, "error=\"%s\"",
					 json_object_get_string(err));
				ck_assert_msg(strstr(www, want_err) != NULL, "%s: %s", name, www);
			} else {
				ck_assert_msg(strstr(www, "error=") == NULL, "%s: %s", name, www);
			}
			json_object *b = json_tokener_parse(body);
			int code = json_object_get_int(api_get(api_get(b, "error"), "code"));
			ck_assert_int_eq(auth_http_status(code, api_get(api_get(b, "error"), "data"),
							  NULL),
					 want);
			json_object_put(b);
		}
		auth_principal_unref(p);
		free(www);
		free(body);
		free(header);
		mcp_server_free(s);
	}
	free(meta);
	free(full);
	free(single);
}
END_TEST

/* After the run: the vectors read for the jose tcase. */
static void release_vectors(void)
{
	json_object_put(vectors);
	vectors = NULL;
}

Suite *unit_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("tokens");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bearer_header_rules);
	tcase_add_test(tc, well_known_paths);
	tcase_add_test(tc, metadata_document);
	tcase_add_test(tc, challenges_are_quoted);
	tcase_add_test(tc, refusal_bodies_and_statuses);
	tcase_add_test(tc, principals_and_binding);
	tcase_add_test(tc, http_entry_with_custom_verifier);
	suite_add_tcase(s, tc);
	TCase *conn_tc = tcase_create("connection");
	tcase_set_timeout(conn_tc, 60);
	tcase_add_checked_fixture(conn_tc, setup, teardown);
	tcase_add_test(conn_tc, no_principal_is_unrestricted);
	tcase_add_test(conn_tc, scopes_filter_lists_and_refuse_calls);
	tcase_add_test(conn_tc, hooks_rate_limit_and_refuse);
	tcase_add_test(conn_tc, hooks_cover_every_method);
	tcase_add_test(conn_tc, blocking_hook_is_cancelled);
	suite_add_tcase(s, conn_tc);
	const char *path = getenv("MCP_AUTH_VECTORS");
	if (path && *path) {
		vectors = json_object_from_file(path);
		if (!vectors) {
			fprintf(stderr, "test_auth: cannot read the vectors in %s\n", path);
			exit(EXIT_FAILURE);
		}
		atexit(release_vectors);
		TCase *jose = tcase_create("jose");
		tcase_set_timeout(jose, 120);
		tcase_add_test(jose, jose_vectors);
		suite_add_tcase(s, jose);
	} else {
		printf("test_auth: MCP_AUTH_VECTORS not set: the jose vectors run in make check-auth\n");
	}
	return s;
}
