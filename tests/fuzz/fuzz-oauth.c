/*
 * fuzz-oauth.c - libFuzzer target: what an authorization server, a
 * protected resource or a browser's redirect can put in front of the
 * OAuth code, on both sides:
 *   - the client's checks (api/client-oauth.c): a WWW-Authenticate value's
 *     auth-params, the authorization response (redirect URL: state, iss,
 *     code, error), the protected-resource metadata's resource against the
 *     server's URL, the authorization server's issuer, which URLs may
 *     carry OAuth traffic;
 *   - the resource server's fetcher (api/auth-fetch.c): which key-set URLs
 *     may be fetched, and a fetched document's lifetime from its
 *     Cache-Control, Expires and Date headers;
 *   - a fetched key set (JWKS text) loaded into a server's verifier.
 *
 * Input: byte 0 chooses the check (mod 8), byte 1 is a small parameter
 * (an output size, a flag), and the rest is up to four NUL-separated
 * strings A, B, C, D (missing ones are "").
 *
 * Checked beyond ASan, UBSan and LeakSanitizer, independently of the code
 * under test:
 *   - every output buffer is NUL-terminated within its size, every refusal
 *     says why (a non-empty reason), an acceptance hands over a code;
 *   - the issuer check accepts exactly the byte-equal strings;
 *   - a resource accepted for a server URL names the same host (userinfo
 *     and port aside, without regard to case) and the same scheme;
 *   - a URL allowed for OAuth or for a key-set fetch is https, or http to
 *     a loopback host (127.x, [::1], localhost), and has no userinfo when
 *     it is a fetch;
 *   - a lifetime is within the bounds asked for;
 *   - loading a key set answers MCP_OK, MCP_EINVAL or MCP_ENOMEM.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/auth.h"
#include "api/client-oauth.h"
#include "api/internal.h"

static void fail(const char *what, const char *a, const char *b)
{
	fprintf(stderr, "fuzz-oauth: %s\n  A: %s\n  B: %s\n", what, a, b);
	__builtin_trap();
}

static void reason_ok(const char *why, size_t sz, int refused, const char *a, const char *b)
{
	if (strnlen(why, sz) >= sz)
		fail("a reason is not NUL-terminated", a, b);
	if (refused && !why[0])
		fail("a refusal without a reason", a, b);
}

/* The scheme (lowercased) and host (lowercased, userinfo and port left
 * out) of an absolute URL, as a reader would take them apart; 0 when it
 * has no "://". */
static int scheme_host(const char *url, char *scheme, size_t ssz, char *host, size_t hsz)
{
	const char *sep = strstr(url, "://");
	if (!sep || (size_t)(sep - url) >= ssz)
		return 0;
	size_t i;
	for (i = 0; url + i < sep; i++)
		scheme[i] = (char)tolower((unsigned char)url[i]);
	scheme[i] = 0;
	const char *a = sep + 3;
	size_t alen = strcspn(a, "/?#");
	const char *at = NULL;
	for (size_t k = 0; k < alen; k++)
		if (a[k] == '@')
			at = a + k;
	if (at) {
		alen -= (size_t)(at + 1 - a);
		a = at + 1;
	}
	size_t hlen = alen;
	if (a[0] == '[') {
		const char *end = memchr(a, ']', alen);
		hlen = end ? (size_t)(end - a) + 1 : alen;
	} else {
		const char *colon = memchr(a, ':', alen);
		if (colon)
			hlen = (size_t)(colon - a);
	}
	if (hlen >= hsz)
		hlen = hsz - 1;
	for (i = 0; i < hlen; i++)
		host[i] = (char)tolower((unsigned char)a[i]);
	host[i] = 0;
	return 1;
}

static int loopback_host(const char *h)
{
	if (strcmp(h, "[::1]") == 0 || strcmp(h, "localhost") == 0)
		return 1;
	return strncmp(h, "127.", 4) == 0;
}

static void check_url_rule(const char *url, int allowed, int no_userinfo)
{
	if (!allowed)
		return;
	char scheme[16], host[300];
	if (!scheme_host(url, scheme, sizeof scheme, host, sizeof host))
		fail("an allowed URL is not absolute", url, "");
	if (strcmp(scheme, "https") == 0)
		goto userinfo;
	if (strcmp(scheme, "http") != 0)
		fail("an allowed URL is neither https nor http", url, "");
	if (!loopback_host(host))
		fail("an allowed http URL is not to a loopback host", url, host);
userinfo:
	if (no_userinfo) {
		const char *a = strstr(url, "://") + 3;
		if (memchr(a, '@', strcspn(a, "/?#")))
			fail("an allowed fetch URL carries userinfo", url, "");
	}
}

static mcp_server *keys_srv;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	unsigned mode = data[0] % 8, param = data[1];
	/* The strings, each NUL-terminated in a copy. */
	char *buf = malloc(size - 2 + 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 2, size - 2);
	buf[size - 2] = 0;
	const char *s[4] = { "", "", "", "" };
	char *p = buf, *end = buf + (size - 2);
	for (int i = 0; i < 4 && p <= end; i++) {
		s[i] = p;
		p += strlen(p) + 1;
	}
	char why[256], out[80];
	memset(why, 0x55, sizeof why);
	why[sizeof why - 1] = 0;

	switch (mode) {
	case 0: { /* an auth-param of a WWW-Authenticate value */
		size_t outsz = 1 + param % sizeof out;
		memset(out, 0x55, sizeof out);
		int got = coauth_www_param(s[0], s[1], out, outsz);
		if (got != 0 && got != 1)
			fail("coauth_www_param returned neither 0 nor 1", s[0], s[1]);
		if (got && strnlen(out, outsz) >= outsz)
			fail("an auth-param value is not NUL-terminated", s[0], s[1]);
		break;
	}
	case 1: { /* the authorization response */
		char *code = NULL;
		why[0] = 0;
		int rc = coauth_check_redirect(s[0], s[1], s[2], param & 1, &code, why, sizeof why);
		if (rc == 0) {
			if (!code)
				fail("an accepted redirect hands over no code", s[0], s[1]);
			if (!s[1][0])
				fail("a redirect accepted against an empty state", s[0], s[1]);
		} else if (rc != -1) {
			fail("coauth_check_redirect returned neither 0 nor -1", s[0], s[1]);
		}
		reason_ok(why, sizeof why, rc != 0, s[0], s[1]);
		free(code);
		break;
	}
	case 2: { /* the resource of the protected-resource metadata */
		why[0] = 0;
		int rc = coauth_check_resource(s[0], s[1], why, sizeof why);
		reason_ok(why, sizeof why, rc != 0, s[0], s[1]);
		if (rc == 0) {
			char s1[16], h1[300], s2[16], h2[300];
			if (!scheme_host(s[0], s1, sizeof s1, h1, sizeof h1) ||
			    !scheme_host(s[1], s2, sizeof s2, h2, sizeof h2))
				fail("a resource accepted without two absolute URLs", s[0], s[1]);
			if (strcmp(s1, s2) != 0 || strcmp(h1, h2) != 0)
				fail("a resource accepted for another origin", s[0], s[1]);
		}
		break;
	}
	case 3: { /* the authorization server's issuer */
		why[0] = 0;
		int rc = coauth_check_issuer(s[0], s[1], why, sizeof why);
		reason_ok(why, sizeof why, rc != 0, s[0], s[1]);
		if ((rc == 0) != (strcmp(s[0], s[1]) == 0))
			fail("the issuer check is not string equality", s[0], s[1]);
		break;
	}
	case 4: /* URLs for OAuth traffic, and for key-set fetches */
		check_url_rule(s[0], coauth_url_allowed(s[0]), 0);
		check_url_rule(s[0], auth_fetch_url_allowed(s[0]), 1);
		break;
	case 5: { /* a fetched document's lifetime */
		int64_t min = (int64_t)(param % 16) * 1000, max = min + (int64_t)(param / 16) * 60000;
		int64_t got = auth_cache_lifetime_ms(param & 1 ? s[0] : NULL, s[1][0] ? s[1] : NULL,
						     s[2][0] ? s[2] : NULL, 1800000000, 3600000, min,
						     max);
		if (got < min || got > max)
			fail("a lifetime outside its bounds", s[0], s[1]);
		break;
	}
	default: { /* a fetched key set */
		if (!keys_srv)
			keys_srv = mcp_server_new("fuzz-oauth", "1");
		int rc = mcp_server_set_auth_jwks_text(keys_srv, s[0]);
		if (rc != MCP_OK && rc != MCP_EINVAL && rc != MCP_ENOMEM)
			fail("loading a key set answered an unexpected code", s[0], "");
		break;
	}
	}
	free(buf);
	return 0;
}
