/*
 * test_oauth.c - the checks of the client's OAuth (api/client-oauth.c)
 * against forged input: PKCE (RFC 7636 appendix B), the authorization
 * response's state and iss (RFC 6749 10.12, RFC 9207, SEP-2468), the
 * protected resource's `resource` (RFC 9728 3.3), the authorization
 * server's `issuer` (RFC 8414 3.3), which URLs may carry OAuth, the
 * challenge's parameters, and the settings' refusals.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	return s;
}
