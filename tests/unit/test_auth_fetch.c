/*
 * test_auth_fetch.c - what the resource server's fetches decide without a
 * network (api/auth-fetch.c): how long a key set may be used by its
 * caching headers (RFC 9111), which URLs may be fetched, the form
 * encoding of credentials; and the setters of the fetched key set and of
 * introspection (api/authz.c).  tests/auth/test_jwks_fetch.py covers the
 * fetches themselves over real sockets.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api/auth.h"
#include "api/internal.h"
#include "tests/unit/runner.h"

#define MIN 1000
#define DFLT 60000
#define MAX 3600000
/* Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example) */
#define T0 784111777

static int64_t life(const char *cc, const char *expires, const char *date)
{
	return auth_cache_lifetime_ms(cc, expires, date, T0, DFLT, MIN, MAX);
}

START_TEST(lifetime_from_cache_control)
{
	ck_assert_int_eq(life("max-age=600", NULL, NULL), 600000);
	ck_assert_int_eq(life("public, max-age=120, must-revalidate", NULL, NULL), 120000);
	ck_assert_int_eq(life("MAX-AGE=30", NULL, NULL), 30000);
	ck_assert_int_eq(life("max-age=\"45\"", NULL, NULL), 45000);
	/* The first max-age counts (RFC 9111 section 4.2.1: a duplicate is
	 * invalid; the first is the conservative reading here). */
	ck_assert_int_eq(life("max-age=10, max-age=900", NULL, NULL), 10000);
	/* Malformed values are ignored: the default applies. */
	ck_assert_int_eq(life("max-age=", NULL, NULL), DFLT);
	ck_assert_int_eq(life("max-age=abc", NULL, NULL), DFLT);
	ck_assert_int_eq(life("max-age=\"12", NULL, NULL), DFLT);
	ck_assert_int_eq(life("max-agent=5", NULL, NULL), DFLT);
	/* no-store and no-cache: as soon as the floor allows. */
	ck_assert_int_eq(life("no-store", NULL, NULL), MIN);
	ck_assert_int_eq(life("max-age=600, no-cache", NULL, NULL), MIN);
	ck_assert_int_eq(life("No-Store", "Sun, 06 Nov 1994 09:49:37 GMT", NULL), MIN);
	/* Clamped both ways. */
	ck_assert_int_eq(life("max-age=0", NULL, NULL), MIN);
	ck_assert_int_eq(life("max-age=999999999", NULL, NULL), MAX);
	ck_assert_int_eq(life("max-age=99999999999999999999999", NULL, NULL), MAX);
}
END_TEST

START_TEST(lifetime_from_expires)
{
	/* Expires minus Date. */
	ck_assert_int_eq(life(NULL, "Sun, 06 Nov 1994 08:59:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"),
			 600000);
	/* Without Date, minus now. */
	ck_assert_int_eq(life(NULL, "Sun, 06 Nov 1994 08:50:37 GMT", NULL), 60000);
	/* max-age wins over Expires (section 5.3). */
	ck_assert_int_eq(life("max-age=5", "Sun, 06 Nov 1994 09:49:37 GMT", NULL), 5000);
	/* An invalid Expires, or one in the past: stale, so the floor. */
	ck_assert_int_eq(life(NULL, "0", NULL), MIN);
	ck_assert_int_eq(life(NULL, "Sun, 06 Nov 1994 08:00:00 GMT", NULL), MIN);
	/* Neither: the default. */
	ck_assert_int_eq(life(NULL, NULL, NULL), DFLT);
	ck_assert_int_eq(life("public", NULL, NULL), DFLT);
}
END_TEST

START_TEST(which_urls_may_be_fetched)
{
	ck_assert(auth_fetch_url_allowed("https://idp.example.com/.well-known/jwks.json"));
	ck_assert(auth_fetch_url_allowed("HTTPS://idp.example.com:8443/k"));
	ck_assert(auth_fetch_url_allowed("http://127.0.0.1:9400/jwks"));
	ck_assert(auth_fetch_url_allowed("http://127.1.2.3/jwks"));
	ck_assert(auth_fetch_url_allowed("http://localhost:80/jwks"));
	ck_assert(auth_fetch_url_allowed("http://[::1]:9400/jwks"));
	ck_assert(!auth_fetch_url_allowed(NULL));
	ck_assert(!auth_fetch_url_allowed("http://idp.example.com/jwks"));
	ck_assert(!auth_fetch_url_allowed("http://127.0.0.1.evil.example/jwks"));
	ck_assert(!auth_fetch_url_allowed("http://localhost.evil.example/jwks"));
	ck_assert(!auth_fetch_url_allowed("http://[::2]/jwks"));
	ck_assert(!auth_fetch_url_allowed("http://user@127.0.0.1/jwks"));
	ck_assert(!auth_fetch_url_allowed("https://user:pw@idp.example.com/jwks"));
	ck_assert(!auth_fetch_url_allowed("https:///jwks"));
	ck_assert(!auth_fetch_url_allowed("https://idp.example.com/a b"));
	ck_assert(!auth_fetch_url_allowed("file:///etc/passwd"));
	ck_assert(!auth_fetch_url_allowed("ftp://idp.example.com/jwks"));
}
END_TEST

START_TEST(form_encoding)
{
	char *e = auth_form_encode("rs one:s3cr3t&x=%~é");
	ck_assert_str_eq(e, "rs+one%3As3cr3t%26x%3D%25%7E%C3%A9");
	free(e);
	e = auth_form_encode("");
	ck_assert_str_eq(e, "");
	free(e);
}
END_TEST

START_TEST(setters_check_their_arguments)
{
	mcp_server *srv = mcp_server_new("t", "1");
	ck_assert_ptr_nonnull(srv);
	char why[700];
	/* Plain http to a remote host, and discovery without an issuer. */
	ck_assert_int_eq(mcp_server_set_auth_jwks_url(srv, "http://idp.example.com/jwks"), MCP_EINVAL);
	mcp_server_auth_keys_error(srv, why, sizeof why);
	ck_assert_ptr_nonnull(strstr(why, "not an https URL"));
	ck_assert_int_eq(mcp_server_set_auth_jwks_url(srv, NULL), MCP_ESTATE);
	ck_assert_int_eq(mcp_server_set_auth_jwks_url(NULL, "https://a.example/k"), MCP_EINVAL);
	/* Intervals and lifetimes. */
	ck_assert_int_eq(mcp_server_set_auth_jwks_refresh(srv, 999, 0), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_refresh(srv, 1000, 10001), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_refresh(srv, 1000, -1), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_refresh(srv, 1000, 0), MCP_OK);
	ck_assert_int_eq(mcp_server_set_auth_jwks_lifetime(srv, 999, 1000, 1000), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_lifetime(srv, 2000, 1000, 3000), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_lifetime(srv, 1000, 3000, 2000), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_lifetime(srv, 1000, 1000, 604800001), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_jwks_lifetime(srv, 1000, 1000, 604800000), MCP_OK);
	/* Introspection: the cache needs the endpoint first. */
	ck_assert_int_eq(mcp_server_set_auth_introspection_cache(srv, 10, 1000), MCP_ESTATE);
	ck_assert_int_eq(mcp_server_set_auth_introspection(srv, "http://idp.example.com/i", "c", "s"),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_introspection(srv, "https://idp.example.com/i", NULL, "s"),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_introspection(srv, "https://idp.example.com/i", "", NULL),
			 MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_introspection(srv, "https://idp.example.com/i", "c", "s"),
			 MCP_OK);
	ck_assert_int_eq(mcp_server_set_auth_introspection_cache(srv, 0, 1000), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_introspection_cache(srv, 10, 86400001), MCP_EINVAL);
	ck_assert_int_eq(mcp_server_set_auth_introspection_cache(srv, 10, 0), MCP_OK);
	/* Replaced, not leaked. */
	ck_assert_int_eq(mcp_server_set_auth_introspection(srv, "https://idp.example.com/j", NULL, NULL),
			 MCP_OK);
	mcp_server_free(srv);
}
END_TEST

START_TEST(failed_first_fetch_names_its_url)
{
	/* A loopback port nothing listens on: the first fetch fails and its
	 * reason names the URL; freeing joins the fetcher.  (That the old
	 * keys keep working is test_jwks_fetch.py's.) */
	mcp_server *srv = mcp_server_new("t", "1");
	ck_assert_int_eq(mcp_server_set_auth_resource(srv, "http://127.0.0.1:1/mcp"), MCP_OK);
	ck_assert_int_eq(mcp_server_set_auth_jwks_text(
				 srv, "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"a\","
				      "\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\","
				      "\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}]}"),
			 MCP_OK);
	int rc = mcp_server_set_auth_jwks_url(srv, "http://127.0.0.1:1/jwks");
	ck_assert(rc == MCP_ESYS || rc == MCP_ENOTSUP);
	char why[700];
	mcp_server_auth_keys_error(srv, why, sizeof why);
	ck_assert_ptr_nonnull(strstr(why, "127.0.0.1:1/jwks"));
	/* A second call is refused. */
	if (rc == MCP_ESYS)
		ck_assert_int_eq(mcp_server_set_auth_jwks_url(srv, "http://127.0.0.1:1/jwks"),
				 MCP_ESTATE);
	mcp_server_free(srv);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("auth_fetch");
	TCase *tc = tcase_create("fetch");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lifetime_from_cache_control);
	tcase_add_test(tc, lifetime_from_expires);
	tcase_add_test(tc, which_urls_may_be_fetched);
	tcase_add_test(tc, form_encoding);
	tcase_add_test(tc, setters_check_their_arguments);
	tcase_add_test(tc, failed_first_fetch_names_its_url);
	suite_add_tcase(s, tc);
	return s;
}
