/*
 * test_oauth.c - the checks of the client's OAuth (api/client-oauth.c)
 * against forged input: PKCE (RFC 7636 appendix B), the authorization
 * response's state and iss (RFC 6749 10.12, RFC 9207, SEP-2468), the
 * protected resource's `resource` (RFC 9728 3.3), the authorization
 * server's `issuer` (RFC 8414 3.3), which URLs may carry OAuth, the
 * challenge's parameters, and the settings' refusals.
 *
 * Then whole flows against tests/client/oauth-fixture.py (an authorization
 * server and a resource in one process that counts what it saw): first
 * use, step-up, a token refreshed once for sixteen concurrent calls each
 * sent once, a revoked token, and a stored token for another resource
 * never sent.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"

#include "api/client-oauth.h"
#include "mcp/client.h"
#include "tests/unit/runner.h"

#define ISS "https://as.example.com"

START_TEST(pkce_rfc7636_appendix_b)
{
	char ch[44];
	coauth_pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", ch);
	ck_assert_str_eq(ch, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}
END_TEST

START_TEST(pkce_verifier_is_fresh_and_unreserved)
{
	char a[44], b[44];
	coauth_pkce_verifier(a);
	coauth_pkce_verifier(b);
	ck_assert_uint_eq(strlen(a), 43); /* RFC 7636 4.1: 43..128 */
	ck_assert_str_ne(a, b);
	for (const char *p = a; *p; p++)
		ck_assert(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
				 *p));
}
END_TEST

/* coauth_check_redirect, expecting a refusal whose reason holds `needle`. */
static void refused(const char *url, const char *state, int iss_supported, const char *needle)
{
	char why[512] = "", *code = (char *)"untouched";
	ck_assert_int_eq(coauth_check_redirect(url, state, ISS, iss_supported, &code, why, sizeof why),
			 -1);
	ck_assert_ptr_null(code);
	ck_assert_msg(strstr(why, needle), "reason \"%s\" lacks \"%s\"", why, needle);
}

static void accepted(const char *url, const char *state, int iss_supported, const char *want)
{
	char why[512] = "", *code = NULL;
	ck_assert_msg(coauth_check_redirect(url, state, ISS, iss_supported, &code, why, sizeof why) == 0,
		      "refused: %s", why);
	ck_assert_str_eq(code, want);
	free(code);
}

START_TEST(state_checked)
{
	accepted("http://localhost:3000/callback?code=abc&state=s1", "s1", 0, "abc");
	refused("http://localhost:3000/callback?code=abc&state=s2", "s1", 0, "not the one sent");
	refused("http://localhost:3000/callback?code=abc", "s1", 0, "has no state");
	/* An empty state matches nothing, an empty one sent back included
	 * (fuzz-oauth). */
	refused("http://localhost:3000/callback?code=abc&state=", "", 0, "no state was sent");
	/* a prefix of the state is not the state */
	refused("http://localhost:3000/callback?code=abc&state=s", "s1", 0, "not the one sent");
	/* two states: which one would a server-side check have seen? */
	refused("http://localhost:3000/callback?state=s1&code=abc&state=s1", "s1", 0, "repeats");
	/* a NUL smuggled in an escape */
	refused("http://localhost:3000/callback?code=a%00b&state=s1", "s1", 0, "malformed");
}
END_TEST

START_TEST(iss_rules_sep_2468)
{
	const char *cb = "http://localhost:3000/callback?code=c&state=s";
	char url[512];
	/* advertised: required, and equal */
	snprintf(url, sizeof url, "%s&iss=%s", cb, "https%3A%2F%2Fas.example.com");
	accepted(url, "s", 1, "c");
	refused(cb, "s", 1, "has no iss");
	snprintf(url, sizeof url, "%s&iss=%s", cb, "https%3A%2F%2Fevil.example.com");
	refused(url, "s", 1, "mix-up");
	/* plain string comparison: a trailing slash is another issuer */
	snprintf(url, sizeof url, "%s&iss=%s", cb, "https%3A%2F%2Fas.example.com%2F");
	refused(url, "s", 1, "mix-up");
	/* not advertised: absent is fine, present must still match */
	accepted(cb, "s", 0, "c");
	snprintf(url, sizeof url, "%s&iss=%s", cb, "https%3A%2F%2Fevil.example.com");
	refused(url, "s", 0, "mix-up");
	/* an error response from the wrong issuer is a mix-up first */
	snprintf(url, sizeof url,
		 "http://localhost:3000/callback?error=access_denied&state=s&iss=https%%3A%%2F%%2Fx");
	refused(url, "s", 0, "mix-up");
}
END_TEST

START_TEST(error_response_named)
{
	refused("http://localhost/cb?error=access_denied&error_description=no+way&state=s", "s", 0,
		"refused: access_denied (no way)");
	refused("http://localhost/cb?state=s", "s", 0, "no code");
}
END_TEST

START_TEST(resource_checked)
{
	char why[512];
	ck_assert_int_eq(coauth_check_resource("https://mcp.example.com/mcp",
					       "https://mcp.example.com/mcp", why, sizeof why),
			 0);
	/* a parent path of the same origin covers the server */
	ck_assert_int_eq(coauth_check_resource("https://mcp.example.com/",
					       "https://mcp.example.com/mcp", why, sizeof why),
			 0);
	ck_assert_int_eq(coauth_check_resource("https://MCP.example.com:443/mcp/",
					       "https://mcp.example.com/mcp", why, sizeof why),
			 0);
	const char *forged[] = {
		"https://evil.example.com/mcp",      /* another host */
		"http://mcp.example.com/mcp",        /* another scheme */
		"https://mcp.example.com:8443/mcp",  /* another port */
		"https://mcp.example.com/mcp2",      /* a sibling, not a parent */
		"https://mcp.example.com/other",     /* another path */
		"https://user@mcp.example.com/mcp",  /* user info */
		"urn:example:mcp",                   /* not a URL */
	};
	for (size_t i = 0; i < sizeof forged / sizeof *forged; i++) {
		why[0] = 0;
		ck_assert_msg(coauth_check_resource(forged[i], "https://mcp.example.com/mcp", why,
						    sizeof why) == -1,
			      "accepted %s", forged[i]);
		ck_assert_msg(strstr(why, forged[i]), "reason \"%s\" does not name %s", why, forged[i]);
	}
}
END_TEST

START_TEST(issuer_checked)
{
	char why[512];
	ck_assert_int_eq(coauth_check_issuer(ISS, ISS, why, sizeof why), 0);
	ck_assert_int_eq(coauth_check_issuer(ISS "/", ISS, why, sizeof why), -1);
	ck_assert_ptr_nonnull(strstr(why, "RFC 8414"));
	ck_assert_int_eq(coauth_check_issuer("https://evil.example.com", ISS, why, sizeof why), -1);
	ck_assert_ptr_nonnull(strstr(why, "evil.example.com"));
	ck_assert_int_eq(coauth_check_issuer(NULL, ISS, why, sizeof why), -1);
	ck_assert_ptr_nonnull(strstr(why, "no issuer"));
}
END_TEST

START_TEST(only_https_or_loopback)
{
	ck_assert(coauth_url_allowed("https://as.example.com/token"));
	ck_assert(coauth_url_allowed("http://localhost:8080/token"));
	ck_assert(coauth_url_allowed("http://127.0.0.1/token"));
	ck_assert(coauth_url_allowed("http://[::1]:9/token"));
	ck_assert(!coauth_url_allowed("http://as.example.com/token"));
	ck_assert(!coauth_url_allowed("http://localhost.evil.com/token"));
	ck_assert(!coauth_url_allowed("http://user@localhost/token"));
	ck_assert(!coauth_url_allowed("ftp://localhost/token"));
	ck_assert(!coauth_url_allowed("file:///etc/passwd"));
}
END_TEST

START_TEST(challenge_params)
{
	char v[256];
	const char *www = "Bearer error=\"insufficient_scope\", scope=\"mcp:read mcp:write\", "
			  "resource_metadata=\"https://mcp.example.com/.well-known/x, y\"";
	ck_assert_int_eq(coauth_www_param(www, "scope", v, sizeof v), 1);
	ck_assert_str_eq(v, "mcp:read mcp:write");
	ck_assert_int_eq(coauth_www_param(www, "resource_metadata", v, sizeof v), 1);
	ck_assert_str_eq(v, "https://mcp.example.com/.well-known/x, y");
	ck_assert_int_eq(coauth_www_param(www, "error", v, sizeof v), 1);
	ck_assert_str_eq(v, "insufficient_scope");
	/* a name inside another is not it */
	ck_assert_int_eq(coauth_www_param("Bearer xscope=\"a\"", "scope", v, sizeof v), 0);
	ck_assert_int_eq(coauth_www_param("Bearer realm=x", "scope", v, sizeof v), 0);
	/* an unterminated quote ends at the end, within the buffer */
	ck_assert_int_eq(coauth_www_param("Bearer scope=\"abc", "scope", v, 3), 1);
	ck_assert_str_eq(v, "ab");
	/* a name inside another parameter's quoted value is not a parameter */
	ck_assert_int_eq(coauth_www_param("Bearer realm=\"x, scope=evil\", error=e", "scope", v,
					  sizeof v),
			 0);
	ck_assert_int_eq(coauth_www_param("Bearer realm=\"a\\\" scope=evil\", scope=good", "scope",
					  v, sizeof v),
			 1);
	ck_assert_str_eq(v, "good");
	/* an empty name (fuzz-oauth: it looped for ever) matches nothing */
	ck_assert_int_eq(coauth_www_param("Bearer scope=a", "", v, sizeof v), 0);
	ck_assert_int_eq(coauth_www_param("=,= =", "scope", v, sizeof v), 0);
}
END_TEST

static int no_authorize(mcp_client *c, const char *url, const char *ru, mcp_token *tok, char **out,
			void *user)
{
	(void)c, (void)url, (void)ru, (void)tok, (void)out, (void)user;
	return MCP_ECANCELED;
}

START_TEST(settings_refused)
{
	mcp_client *c = mcp_client_new("t", "1");
	ck_assert_int_eq(mcp_client_set_oauth(c, MCP_OAUTH_AUTHORIZATION_CODE, NULL, NULL), MCP_EINVAL);
	ck_assert_int_eq(mcp_client_set_oauth(c, (mcp_oauth_grant)7, no_authorize, NULL), MCP_EINVAL);
	ck_assert_int_eq(mcp_client_set_oauth(c, MCP_OAUTH_AUTHORIZATION_CODE, no_authorize, NULL),
			 MCP_OK);
	ck_assert_int_eq(mcp_client_set_oauth_private_key(c, "-----BEGIN PRIVATE KEY-----\nno\n"),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_client_set_oauth_store(c, (mcp_oauth_load_fn)NULL,
						    (mcp_oauth_save_fn)1, NULL),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_client_set_oauth_client(c, "id\r\nX-Evil: 1", NULL, MCP_OAUTH_AUTH_AUTO),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_client_set_oauth_client(c, "id", "s", (mcp_oauth_auth_method)9),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_client_set_oauth_client(c, "id", "s", MCP_OAUTH_AUTH_SECRET_POST),
			 MCP_OK);
	ck_assert_int_eq(mcp_client_set_oauth_scopes(c, "a b"), MCP_OK);
	mcp_client_free(c);
}
END_TEST


#ifdef HAVE_CURL
/* ---- whole flows against tests/client/oauth-fixture.py ---- */

static pid_t fx_pid;
static int fx_in = -1, fx_port;

static void fixture_start(int ttl)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	char ttls[16];
	snprintf(ttls, sizeof ttls, "%d", ttl);
	const char *path = getenv("MCP_OAUTH_FIXTURE");
#ifdef MCP_OAUTH_FIXTURE_PATH
	if (!path)
		path = MCP_OAUTH_FIXTURE_PATH;
#endif
	if (!path)
		path = "tests/client/oauth-fixture.py";
	fx_pid = fork();
	ck_assert_int_ge(fx_pid, 0);
	if (fx_pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execlp("python3", "python3", path, ttls, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fx_in = in[1];
	/* the whole line: the fixture dies of EPIPE if its newline finds
	 * the pipe closed */
	char buf[32] = "";
	size_t got = 0;
	ssize_t n;
	while (got < sizeof buf - 1 && !memchr(buf, '\n', got) &&
	       (n = read(out[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)n;
	close(out[0]);
	buf[got] = 0;
	ck_assert_msg(memchr(buf, '\n', got), "the fixture printed no port: \"%s\"", buf);
	fx_port = atoi(buf);
	ck_assert_int_gt(fx_port, 0);
}

static void fixture_stop(void)
{
	close(fx_in);
	int st;
	waitpid(fx_pid, &st, 0);
}

/* One HTTP/1.0 request to the fixture; the response (head and body) in
 * a malloc'd string. */
static char *http(const char *method, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)fx_port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	char req[4096];
	int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
			 method, path);
	ck_assert_int_eq(write(fd, req, (size_t)n), n);
	size_t cap = 65536, len = 0;
	char *r = malloc(cap);
	ssize_t k;
	while ((k = read(fd, r + len, cap - len - 1)) > 0)
		len += (size_t)k;
	r[len] = 0;
	close(fd);
	return r;
}

static json_object *stats(void)
{
	char *r = http("GET", "/stats");
	char *body = strstr(r, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	json_object *j = json_tokener_parse(body + 4);
	free(r);
	ck_assert_ptr_nonnull(j);
	return j;
}

static int64_t stat_int(json_object *st, const char *k, const char *sub)
{
	json_object *v = NULL;
	json_object_object_get_ex(st, k, &v);
	if (sub && !json_object_object_get_ex(v, sub, &v))
		return 0;
	return json_object_get_int64(v);
}

/* The person: follows the authorization URL without following its
 * redirect, which is the answer. */
static int person(mcp_client *c, const char *url, const char *ru, mcp_token *tok, char **out,
		  void *user)
{
	(void)c, (void)ru, (void)tok;
	(*(int *)user)++;
	const char *path = strstr(url + 7, "/");
	char *r = http("GET", path);
	char *loc = strstr(r, "\r\nLocation: ");
	ck_assert_ptr_nonnull(loc);
	loc += 12;
	*out = strndup(loc, strcspn(loc, "\r\n"));
	free(r);
	return MCP_OK;
}

static json_object *saved;
static pthread_mutex_t saved_mu = PTHREAD_MUTEX_INITIALIZER;

static void save_rec(mcp_client *c, const char *resource, json_object *rec, void *user)
{
	(void)c, (void)user;
	pthread_mutex_lock(&saved_mu);
	json_object_put(saved);
	saved = json_object_get(rec);
	json_object_object_add(saved, "saved_for", json_object_new_string(resource));
	pthread_mutex_unlock(&saved_mu);
}

static json_object *stolen(mcp_client *c, const char *resource, void *user)
{
	(void)c, (void)resource, (void)user;
	return json_tokener_parse("{\"resource\":\"http://127.0.0.1:1/other\","
				  "\"access_token\":\"stolen-token\",\"expires_at\":0}");
}

static mcp_client *oauth_client(int *prompts, char *url, size_t urlsz)
{
	snprintf(url, urlsz, "http://127.0.0.1:%d/mcp", fx_port);
	mcp_client *c = mcp_client_new("t", "1");
	ck_assert_int_eq(mcp_client_set_era(c, MCP_ERA_LEGACY), MCP_OK);
	ck_assert_int_eq(mcp_client_set_oauth(c, MCP_OAUTH_AUTHORIZATION_CODE, person, prompts),
			 MCP_OK);
	ck_assert_int_eq(mcp_client_set_oauth_redirect_uri(c, "http://127.0.0.1:9/cb"), MCP_OK);
	ck_assert_int_eq(mcp_client_set_oauth_store(c, stolen, save_rec, NULL), MCP_OK);
	int rc = mcp_client_connect_http(c, url);
	ck_assert_msg(rc == MCP_OK, "connect: %s", mcp_client_error(c));
	return c;
}

static char *call_text(mcp_client *c, const char *tool)
{
	json_object *res = NULL, *args = json_object_new_object();
	int rc = mcp_client_call_tool(c, tool, args, 20000, NULL, &res);
	json_object_put(args);
	ck_assert_msg(rc == MCP_OK, "%s: %s", tool, mcp_strerror(rc));
	json_object *content = NULL, *text = NULL;
	json_object_object_get_ex(res, "content", &content);
	json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &text);
	char *t = strdup(json_object_get_string(text));
	json_object_put(res);
	return t;
}

START_TEST(flow_first_use_step_up_and_foreign_token)
{
	fixture_start(3600);
	int prompts = 0;
	char url[100];
	mcp_client *c = oauth_client(&prompts, url, sizeof url);
	char *t = call_text(c, "echo");
	ck_assert_str_eq(t, "ok mcp:read offline_access"); /* PRM scopes + offline_access */
	free(t);
	t = call_text(c, "admin"); /* 403 insufficient_scope, then the union */
	ck_assert_str_eq(t, "ok mcp:read offline_access mcp:admin");
	free(t);
	ck_assert_int_eq(prompts, 2);
	json_object *st = stats();
	ck_assert_int_eq(stat_int(st, "authorizations", NULL), 2);
	ck_assert_int_eq(stat_int(st, "grants", "authorization_code"), 2);
	/* the stored token of another resource was never sent */
	json_object *bad = NULL;
	json_object_object_get_ex(st, "bad_tokens", &bad);
	ck_assert_uint_eq(json_object_array_length(bad), 0);
	json_object_put(st);
	pthread_mutex_lock(&saved_mu);
	ck_assert_ptr_nonnull(saved);
	json_object *v = NULL;
	json_object_object_get_ex(saved, "saved_for", &v);
	ck_assert_str_eq(json_object_get_string(v), url);
	ck_assert(json_object_object_get_ex(saved, "refresh_token", &v));
	ck_assert(json_object_object_get_ex(saved, "client_secret", &v));
	json_object_put(saved);
	saved = NULL;
	pthread_mutex_unlock(&saved_mu);
	mcp_client_free(c);
	fixture_stop();
}
END_TEST

static void *burst(void *arg)
{
	mcp_client *c = arg;
	json_object *res = NULL, *args = json_object_new_object();
	intptr_t rc = mcp_client_call_tool(c, "echo", args, 20000, NULL, &res);
	json_object_put(args);
	json_object_put(res);
	return (void *)rc;
}

START_TEST(flow_one_refresh_for_concurrent_calls_each_sent_once)
{
	/* Tokens live 31 s: with the 30 s skew each one is due for a refresh
	 * a second after it was issued.  Refresh tokens rotate, so two
	 * refreshes in parallel would fail one (invalid_grant) and send the
	 * person through the code flow again. */
	fixture_start(31);
	int prompts = 0;
	char url[100];
	mcp_client *c = oauth_client(&prompts, url, sizeof url);
	for (int round = 0; round < 3; round++) {
		usleep(1200 * 1000);
		pthread_t th[16];
		for (int i = 0; i < 16; i++)
			pthread_create(&th[i], NULL, burst, c);
		for (int i = 0; i < 16; i++) {
			void *rc;
			pthread_join(th[i], &rc);
			ck_assert_int_eq((int)(intptr_t)rc, MCP_OK);
		}
	}
	/* a revoked token: the 401 is answered with one refresh */
	free(http("POST", "/revoke"));
	char *t = call_text(c, "echo");
	free(t);
	json_object *st = stats();
	ck_assert_int_eq(prompts, 1);
	ck_assert_int_eq(stat_int(st, "authorizations", NULL), 1);
	int64_t refreshes = stat_int(st, "grants", "refresh_token");
	ck_assert_int_ge(refreshes, 4); /* one per round at least, and the revoked one */
	ck_assert_int_le(refreshes, 8);
	/* The first request had no token.  The revoked one meets a 401, or
	 * is refreshed before it is sent when its second is up already
	 * (tests/client/test_mcp_call_oauth.py sees the 401 with long-lived
	 * tokens). */
	ck_assert_int_ge(stat_int(st, "unauthorized", NULL), 1);
	/* every request the resource accepted, accepted once */
	json_object *seen = NULL;
	json_object_object_get_ex(st, "seen", &seen);
	int calls = 0;
	json_object_object_foreach(seen, k, v)
	{
		ck_assert_msg(json_object_get_int(v) == 1, "request %s was sent %d times", k,
			      json_object_get_int(v));
		calls += strstr(k, "tools/call") != NULL;
	}
	ck_assert_int_eq(calls, 3 * 16 + 1);
	json_object_put(st);
	mcp_client_free(c);
	pthread_mutex_lock(&saved_mu);
	json_object_put(saved);
	saved = NULL;
	pthread_mutex_unlock(&saved_mu);
	fixture_stop();
}
END_TEST
#endif

Suite *unit_suite(void)
{
	Suite *s = suite_create("oauth");
	TCase *tc = tcase_create("checks");
	tcase_add_test(tc, pkce_rfc7636_appendix_b);
	tcase_add_test(tc, pkce_verifier_is_fresh_and_unreserved);
	tcase_add_test(tc, state_checked);
	tcase_add_test(tc, iss_rules_sep_2468);
	tcase_add_test(tc, error_response_named);
	tcase_add_test(tc, resource_checked);
	tcase_add_test(tc, issuer_checked);
	tcase_add_test(tc, only_https_or_loopback);
	tcase_add_test(tc, challenge_params);
	tcase_add_test(tc, settings_refused);
	suite_add_tcase(s, tc);
#ifdef HAVE_CURL
	TCase *fl = tcase_create("flows");
	tcase_set_timeout(fl, 120);
	tcase_add_test(fl, flow_first_use_step_up_and_foreign_token);
	tcase_add_test(fl, flow_one_refresh_for_concurrent_calls_each_sent_once);
	suite_add_tcase(s, fl);
#endif
	return s;
}
