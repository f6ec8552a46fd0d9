/*
 * repro-jwt.c - regression tests for what fuzz-jwt found.  First: the JWT
 * verifier (api/jwt/jwt.c) compared the claims and header members as C
 * strings, so a validly signed token whose "aud" was
 * "https://mcp.example.test/mcp\u0000.evil" was accepted by the server
 * whose resource is https://mcp.example.test/mcp, and a "sub" of
 * "a\u0000b" made a principal whose subject was "a".  A header or claims
 * text holding a NUL must be refused.
 *
 * Second: "exp":9223372036854775807 overflowed exp + skew (UBSan: signed
 * integer overflow in auth_jwt_verify); an integer time claim beyond
 * +-9e15 seconds is refused as out of range, as a double one was.
 *
 * Third: an application verifier (mcp_server_set_auth_verifier) may set
 * any expiry, INT64_MAX for "never", and the check the library adds,
 * now >= expires_at + skew, overflowed (UBSan in verify_custom; a plain
 * build wrapped it negative and refused the token as expired).
 *
 * An Ed25519 key is made here; every token is signed with it, so only
 * the claims decide.  Exits 0 when each verdict is the expected one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "api/auth.h"
#include "api/internal.h"

#define RESOURCE "https://mcp.example.test/mcp"
#define ISSUER "https://issuer.example.test"
#define NOW 1800000000

static EVP_PKEY *key;
static int failures;

static char *b64url(const void *p, size_t n)
{
	size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *out = malloc(cap);
	if (!out)
		exit(99);
	return sodium_bin2base64(out, cap, p, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

static char *token(const char *header, const char *claims)
{
	char *h = b64url(header, strlen(header)), *c = b64url(claims, strlen(claims));
	size_t il = strlen(h) + 1 + strlen(c);
	char *input = malloc(il + 1);
	unsigned char sig[64];
	size_t sl = sizeof sig;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!input || !md)
		exit(99);
	snprintf(input, il + 1, "%s.%s", h, c);
	if (EVP_DigestSignInit(md, NULL, NULL, NULL, key) != 1 ||
	    EVP_DigestSign(md, sig, &sl, (unsigned char *)input, il) != 1)
		exit(99);
	EVP_MD_CTX_free(md);
	char *s = b64url(sig, sl);
	char *t = malloc(il + 2 + strlen(s));
	if (!t)
		exit(99);
	sprintf(t, "%s.%s", input, s);
	free(h);
	free(c);
	free(s);
	free(input);
	return t;
}

static void expect_why(auth_jwt *v, const char *header, const char *claims, auth_verdict want,
		       const char *want_why)
{
	auth_jwt_rules rules = { ISSUER, RESOURCE, 60, 0 };
	char *t = token(header, claims);
	mcp_principal *p = NULL;
	const char *why = NULL;
	auth_verdict got = auth_jwt_verify(v, &rules, t, NOW, &p, &why);
	if (got != want || (want_why && (!why || !strstr(why, want_why)))) {
		fprintf(stderr, "FAIL: %s %s: verdict %d, want %d (%s)\n", header, claims, got,
			want, why ? why : "");
		failures++;
	}
	auth_principal_unref(p);
	free(t);
}

static void expect(auth_jwt *v, const char *header, const char *claims, auth_verdict want)
{
	expect_why(v, header, claims, want, NULL);
}

/* An application verifier: the token's leading decimal is its expiry. */
static int verify_app(const char *token, const char *resource, mcp_principal *out, void *user)
{
	(void)resource;
	(void)user;
	if (mcp_principal_set_expiry(out, strtoll(token, NULL, 10)) != MCP_OK)
		return MCP_EINVAL;
	return MCP_AUTH_OK;
}

/* The status api_authz_http gives an application-verified token. */
static void expect_app(mcp_server *srv, const char *header, int want)
{
	mcp_principal *p = NULL;
	char *www = NULL, *body = NULL;
	int got = api_authz_http(srv, "/mcp", header, NOW, &p, &www, &body);
	if (got != want) {
		fprintf(stderr, "FAIL: %s: status %d, want %d (%s)\n", header, got, want,
			body ? body : "");
		failures++;
	}
	auth_principal_unref(p);
	free(www);
	free(body);
}

int main(void)
{
	if (sodium_init() < 0 || !(key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")))
		return 99;
	unsigned char pub[32];
	size_t pl = sizeof pub;
	if (EVP_PKEY_get_raw_public_key(key, pub, &pl) != 1)
		return 99;
	char *x = b64url(pub, pl), jwks[256];
	snprintf(jwks, sizeof jwks,
		 "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"k\",\"x\":\"%s\"}]}",
		 x);
	free(x);
	auth_jwt *v = auth_jwt_new();
	if (!v || auth_jwt_set_jwks(v, jwks, strlen(jwks), NULL) != MCP_OK)
		return 99;

	const char *hdr = "{\"alg\":\"EdDSA\",\"kid\":\"k\"}";
	const char *tail = "\"exp\":1800000600,\"iss\":\"" ISSUER "\"";
	char claims[512];
	/* The clean token passes, so the refusals below are the NUL's. */
	snprintf(claims, sizeof claims, "{\"aud\":\"%s\",\"sub\":\"a\",%s}", RESOURCE, tail);
	expect(v, hdr, claims, AUTH_OK);
	/* The finding: another audience, cut at its NUL, named ours. */
	snprintf(claims, sizeof claims, "{\"aud\":\"%s\\u0000.evil\",%s}", RESOURCE, tail);
	expect(v, hdr, claims, AUTH_INVALID_TOKEN);
	snprintf(claims, sizeof claims, "{\"aud\":[\"%s\\u0000\"],%s}", RESOURCE, tail);
	expect(v, hdr, claims, AUTH_INVALID_TOKEN);
	snprintf(claims, sizeof claims, "{\"aud\":\"%s\",\"sub\":\"a\\u0000b\",%s}", RESOURCE,
		 tail);
	expect(v, hdr, claims, AUTH_INVALID_TOKEN);
	snprintf(claims, sizeof claims,
		 "{\"aud\":\"%s\",\"exp\":1800000600,\"iss\":\"" ISSUER "\\u0000x\"}", RESOURCE);
	expect(v, hdr, claims, AUTH_INVALID_TOKEN);
	snprintf(claims, sizeof claims, "{\"aud\":\"%s\",\"exp\\u0000\":1,%s}", RESOURCE, tail);
	expect(v, hdr, claims, AUTH_INVALID_TOKEN);
	snprintf(claims, sizeof claims, "{\"aud\":\"%s\",%s}", RESOURCE, tail);
	expect(v, "{\"alg\":\"EdDSA\\u0000x\",\"kid\":\"k\"}", claims, AUTH_INVALID_TOKEN);
	expect(v, "{\"alg\":\"EdDSA\",\"kid\":\"k\\u0000\"}", claims, AUTH_INVALID_TOKEN);
	/* An escaped backslash then "u0000" is text, not a NUL. */
	snprintf(claims, sizeof claims, "{\"aud\":\"%s\",\"sub\":\"a\\\\u0000\",%s}", RESOURCE,
		 tail);
	expect(v, hdr, claims, AUTH_OK);

	/* Time claims at the ends of int64: refused as out of range, not
	 * computed with (a plain build wrapped exp + skew to "expired"). */
	snprintf(claims, sizeof claims,
		 "{\"aud\":\"%s\",\"exp\":9223372036854775807,\"iss\":\"" ISSUER "\"}",
		 RESOURCE);
	expect_why(v, hdr, claims, AUTH_INVALID_TOKEN, "out of range");
	snprintf(claims, sizeof claims,
		 "{\"aud\":\"%s\",\"nbf\":-9223372036854775808,%s}", RESOURCE, tail);
	expect_why(v, hdr, claims, AUTH_INVALID_TOKEN, "out of range");
	snprintf(claims, sizeof claims,
		 "{\"aud\":\"%s\",\"exp\":8999999999999999,\"iss\":\"" ISSUER "\"}",
		 RESOURCE);
	expect(v, hdr, claims, AUTH_OK);

	/* An application's expiry: "never", far, just passed, passed by more
	 * than the default skew of 60 s. */
	mcp_server *srv = mcp_server_new("repro-jwt", "1");
	if (!srv || mcp_server_set_auth_resource(srv, RESOURCE) != MCP_OK ||
	    mcp_server_set_auth_verifier(srv, verify_app, NULL) != MCP_OK)
		return 99;
	expect_app(srv, "Bearer 9223372036854775807", 0);
	expect_app(srv, "Bearer 8999999999999999999", 0);
	expect_app(srv, "Bearer 1799999990", 0);
	expect_app(srv, "Bearer 1799999900", 401);
	mcp_server_free(srv);

	auth_jwt_free(v);
	EVP_PKEY_free(key);
	if (failures)
		return 1;
	printf("PASS: repro-jwt\n");
	return 0;
}
