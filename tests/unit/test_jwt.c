/*
 * test_jwt.c - the JWT verifier as the library of its own it is
 * (api/jwt/libjwt.la, linked alone: a call from it into the rest of
 * libmcp would not link): strict base64url, duplicate members, tokens
 * signed here with a P-256 key made by OpenSSL (claims, key choice,
 * reloads racing verifications), and a client assertion signed by
 * auth_jws_sign_pem and verified by auth_jwt_verify.  The independent
 * vectors (jose) are test_auth's, in make check-auth.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>

#include "api/jwt/jwt.h"
#include "tests/unit/runner.h"

#define RESOURCE "https://mcp.example.test/mcp"
#define ISSUER "https://auth.example.test"

/* ---- helpers ------------------------------------------------------------- */

static char *b64url(const unsigned char *p, size_t n)
{
	size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *out = malloc(cap);
	sodium_bin2base64(out, cap, p, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return out;
}

/* A P-256 key made here with OpenSSL, its JWKS, and tokens it signs: the
 * JWT checks that need no Node (make check); the jose vectors are the
 * independent ones. */
typedef struct test_key {
	EVP_PKEY *pkey;
	char jwks[512];
} test_key;

static void key_make(test_key *k, const char *kid)
{
	k->pkey = EVP_EC_gen("P-256");
	ck_assert_ptr_nonnull(k->pkey);
	unsigned char pub[65];
	size_t n = 0;
	ck_assert_int_eq(EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_PUB_KEY, pub,
							 sizeof pub, &n),
			 1);
	ck_assert_uint_eq(n, 65);
	char *x = b64url(pub + 1, 32), *y = b64url(pub + 33, 32);
	snprintf(k->jwks, sizeof k->jwks,
		 "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\",\"x\":\"%s\","
		 "\"y\":\"%s\",\"use\":\"sig\",\"alg\":\"ES256\"}]}",
		 kid, x, y);
	free(x);
	free(y);
}

/* An ES256 token over `claims` (JSON text), header {alg, kid}. */
static char *key_sign(test_key *k, const char *kid, const char *claims)
{
	char header[128];
	snprintf(header, sizeof header, "{\"alg\":\"ES256\",\"kid\":\"%s\"}", kid);
	char *h = b64url((const unsigned char *)header, strlen(header));
	char *c = b64url((const unsigned char *)claims, strlen(claims));
	char *input = NULL;
	ck_assert_int_gt(asprintf(&input, "%s.%s", h, c), 0);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char der[128];
	size_t dl = sizeof der;
	ck_assert_int_eq(EVP_DigestSignInit_ex(md, NULL, "SHA256", NULL, NULL, k->pkey, NULL), 1);
	ck_assert_int_eq(EVP_DigestSign(md, der, &dl, (unsigned char *)input, strlen(input)), 1);
	EVP_MD_CTX_free(md);
	const unsigned char *dp = der;
	ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &dp, (long)dl);
	unsigned char raw[64];
	ck_assert_int_eq(BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32), 32);
	ck_assert_int_eq(BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32), 32);
	ECDSA_SIG_free(es);
	char *s = b64url(raw, 64);
	char *token = NULL;
	ck_assert_int_gt(asprintf(&token, "%s.%s", input, s), 0);
	free(h);
	free(c);
	free(s);
	free(input);
	return token;
}

static char *claims_text(int64_t now, const char *aud, int64_t exp_delta, const char *scope)
{
	char *out = NULL;
	ck_assert_int_gt(asprintf(&out,
				  "{\"iss\":\"" ISSUER "\",\"aud\":\"%s\",\"sub\":\"user-1\","
				  "\"client_id\":\"client-a\",\"scope\":\"%s\",\"iat\":%lld,"
				  "\"exp\":%lld}",
				  aud, scope, (long long)now, (long long)(now + exp_delta)),
			 0);
	return out;
}

static auth_jwt_rules rules = { ISSUER, RESOURCE, 60, 0 };

/* ---- strict decoding ------------------------------------------------------- */

START_TEST(base64url_is_strict)
{
	size_t n = 0;
	unsigned char *b = auth_b64url_decode("AA", 2, &n);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(b[0], 0);
	free(b);
	/* The same byte with a spare bit set: not canonical. */
	ck_assert_ptr_null(auth_b64url_decode("AB", 2, &n));
	ck_assert_ptr_null(auth_b64url_decode("A", 1, &n));
	ck_assert_ptr_null(auth_b64url_decode("AA==", 4, &n));
	ck_assert_ptr_null(auth_b64url_decode("+/8", 3, &n));
	ck_assert_ptr_null(auth_b64url_decode("AA AA", 5, &n));
	ck_assert_ptr_null(auth_b64url_decode("", 0, &n));
	b = auth_b64url_decode("_-8", 3, &n);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(b[0], 0xff);
	ck_assert_int_eq(b[1], 0xef);
	free(b);
}
END_TEST

START_TEST(duplicate_members_are_counted)
{
	const char *dup = "{\"a\":1,\"b\":{\"a\":2,\"c\":[1,{\"d\":3}]},\"a\":\"x,\\\"y\"}";
	ck_assert_int_eq(auth_json_top_members(dup, strlen(dup)), 3);
	const char *plain = " {\"a\":\"}\",\"b\":[\"{\"]}";
	ck_assert_int_eq(auth_json_top_members(plain, strlen(plain)), 2);
	ck_assert_int_eq(auth_json_top_members("{}", 2), 0);
	ck_assert_int_eq(auth_json_top_members("[1]", 3), -1);
}
END_TEST

/* ---- the verifier with keys made here ---------------------------------------- */

START_TEST(jwt_local_key)
{
	test_key k;
	key_make(&k, "k1");
	auth_jwt *v = auth_jwt_new();
	size_t nkeys = 0;
	ck_assert_int_eq(auth_jwt_set_jwks(v, k.jwks, strlen(k.jwks), &nkeys), MCP_OK);
	ck_assert_uint_eq(nkeys, 1);
	int64_t now = 1800000000;
	char *claims = claims_text(now, RESOURCE, 600, "mcp:read tools");
	char *token = key_sign(&k, "k1", claims);
	mcp_principal *p = NULL;
	const char *why = NULL;
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now, &p, &why), AUTH_OK);
	ck_assert_str_eq(p->subject, "user-1");
	ck_assert_str_eq(p->client_id, "client-a");
	ck_assert_str_eq(p->issuer, ISSUER);
	ck_assert_uint_eq(p->nscopes, 2);
	ck_assert(auth_principal_has_scope(p, "tools"));
	ck_assert(!auth_principal_has_scope(p, "admin"));
	ck_assert_int_eq(p->expires_at, now + 600);
	ck_assert_int_eq(auth_principal_add_scope(p, "more"), MCP_ESTATE);
	auth_principal_unref(p);

	/* Expired beyond the skew; not yet issued; another audience; no
	 * audience configured at all. */
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now + 661, &p, &why), AUTH_INVALID_TOKEN);
	ck_assert_str_eq(why, "the token has expired");
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now - 120, &p, &why), AUTH_INVALID_TOKEN);
	auth_jwt_rules other = rules;
	other.audience = "https://elsewhere.example.test/mcp";
	ck_assert_int_eq(auth_jwt_verify(v, &other, token, now, &p, &why), AUTH_INVALID_TOKEN);
	other.audience = NULL;
	ck_assert_int_eq(auth_jwt_verify(v, &other, token, now, &p, &why), AUTH_SERVER_ERROR);
	other = rules;
	other.issuer = "https://another-issuer.example.test";
	ck_assert_int_eq(auth_jwt_verify(v, &other, token, now, &p, &why), AUTH_INVALID_TOKEN);
	other = rules;
	other.require_at_jwt = 1;
	ck_assert_int_eq(auth_jwt_verify(v, &other, token, now, &p, &why), AUTH_INVALID_TOKEN);
	ck_assert_ptr_null(p);

	/* A key set that is not one leaves the old one in place. */
	ck_assert_int_eq(auth_jwt_set_jwks(v, "{\"keys\":[]}", 11, NULL), MCP_EINVAL);
	ck_assert_int_eq(auth_jwt_set_jwks(v, "{\"keys\":[{\"kty\":\"oct\",\"k\":\"AA\"}]}", 34,
					   NULL),
			 MCP_EINVAL);
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now, &p, &why), AUTH_OK);
	auth_principal_unref(p);

	/* Rotation through a file: the old key's tokens stop verifying. */
	test_key k2;
	key_make(&k2, "k2");
	char path[] = "/tmp/test_auth_jwks.XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, k2.jwks, strlen(k2.jwks)), (ssize_t)strlen(k2.jwks));
	close(fd);
	ck_assert_int_eq(auth_jwt_reload(v, NULL), MCP_ENOENT);
	ck_assert_int_eq(auth_jwt_set_jwks_file(v, path, NULL), MCP_OK);
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now, &p, &why), AUTH_INVALID_TOKEN);
	ck_assert_str_eq(why, "the token's key id is not in the key set");
	char *token2 = key_sign(&k2, "k2", claims);
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token2, now, &p, &why), AUTH_OK);
	auth_principal_unref(p);
	/* The file changes back: reload picks it up. */
	FILE *f = fopen(path, "w");
	fputs(k.jwks, f);
	fclose(f);
	ck_assert_int_eq(auth_jwt_reload(v, NULL), MCP_OK);
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now, &p, &why), AUTH_OK);
	auth_principal_unref(p);
	unlink(path);
	ck_assert_int_eq(auth_jwt_reload(v, NULL), MCP_ESYS);
	ck_assert_int_eq(auth_jwt_verify(v, &rules, token, now, &p, &why), AUTH_OK);
	auth_principal_unref(p);

	free(token2);
	free(token);
	free(claims);
	auth_jwt_free(v);
	EVP_PKEY_free(k.pkey);
	EVP_PKEY_free(k2.pkey);
}
END_TEST

/* Verifications racing key swaps: each sees a whole key set, the old or
 * the new, and nothing is freed under it (ASan, TSan, valgrind). */
struct race {
	auth_jwt *v;
	const char *token;
	int64_t now;
	_Atomic int stop;
	int ok, refused;
};

static void *verify_loop(void *arg)
{
	struct race *r = arg;
	while (!atomic_load(&r->stop)) {
		mcp_principal *p = NULL;
		auth_verdict v = auth_jwt_verify(r->v, &rules, r->token, r->now, &p, NULL);
		if (v == AUTH_OK)
			r->ok++;
		else if (v == AUTH_INVALID_TOKEN)
			r->refused++;
		auth_principal_unref(p);
	}
	return NULL;
}

START_TEST(jwt_reload_races_verification)
{
	test_key k, k2;
	key_make(&k, "k1");
	key_make(&k2, "k2");
	struct race r = { .v = auth_jwt_new(), .now = 1800000000 };
	char *claims = claims_text(r.now, RESOURCE, 600, "a");
	char *token = key_sign(&k, "k1", claims);
	r.token = token;
	ck_assert_int_eq(auth_jwt_set_jwks(r.v, k.jwks, strlen(k.jwks), NULL), MCP_OK);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, verify_loop, &r), 0);
	for (int i = 0; i < 200; i++) {
		const char *set = i % 2 ? k.jwks : k2.jwks;
		ck_assert_int_eq(auth_jwt_set_jwks(r.v, set, strlen(set), NULL), MCP_OK);
	}
	ck_assert_int_eq(auth_jwt_set_jwks(r.v, k.jwks, strlen(k.jwks), NULL), MCP_OK);
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	mcp_principal *p = NULL;
	ck_assert_int_eq(auth_jwt_verify(r.v, &rules, token, r.now, &p, NULL), AUTH_OK);
	auth_principal_unref(p);
	ck_assert_int_gt(r.ok + r.refused, 0);
	auth_jwt_free(r.v);
	free(token);
	free(claims);
	EVP_PKEY_free(k.pkey);
	EVP_PKEY_free(k2.pkey);
}
END_TEST

/* ---- a client assertion ------------------------------------------------------------ */

/* The PEM text of k's private key (caller frees). */
static char *key_pem(test_key *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	ck_assert_int_eq(PEM_write_bio_PrivateKey(b, k->pkey, NULL, NULL, 0, NULL, NULL), 1);
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	char *pem = strndup(data, (size_t)n);
	BIO_free(b);
	return pem;
}

/* What auth_jws_sign_pem makes, the verifier takes: an ES256 assertion
 * with r || s, not DER (a DER signature would be refused); a text that
 * is no key, or an RSA-less garbage key, signs nothing. */
START_TEST(signed_assertion_verifies)
{
	test_key k;
	key_make(&k, "only");
	char *pem = key_pem(&k);
	ck_assert_str_eq(auth_pem_key_alg(pem), "ES256");
	ck_assert_ptr_null(auth_pem_key_alg("-----BEGIN PRIVATE KEY-----\nAAAA\n"));
	ck_assert_ptr_null(auth_pem_key_alg(NULL));
	int64_t now = time(NULL);
	char *text = claims_text(now, RESOURCE, 300, "read");
	json_object *claims = json_tokener_parse(text);
	ck_assert_ptr_nonnull(claims);
	char *jws = auth_jws_sign_pem(pem, claims);
	ck_assert_ptr_nonnull(jws);
	ck_assert_ptr_null(auth_jws_sign_pem("not a key", claims));
	auth_jwt *v = auth_jwt_new();
	ck_assert_int_eq(auth_jwt_set_jwks(v, k.jwks, strlen(k.jwks), NULL), MCP_OK);
	mcp_principal *p = NULL;
	const char *why = NULL;
	/* Its header has no kid: taken, since one key of the set fits. */
	ck_assert_int_eq(auth_jwt_verify(v, &rules, jws, now, &p, &why), AUTH_OK);
	ck_assert_str_eq(p->subject, "user-1");
	ck_assert(auth_principal_has_scope(p, "read"));
	auth_principal_unref(p);
	/* One bit of the signature changed: refused. */
	size_t n = strlen(jws);
	jws[n - 2] = jws[n - 2] == 'A' ? 'B' : 'A';
	p = NULL;
	ck_assert_int_eq(auth_jwt_verify(v, &rules, jws, now, &p, &why), AUTH_INVALID_TOKEN);
	ck_assert_ptr_null(p);
	auth_jwt_free(v);
	free(jws);
	json_object_put(claims);
	free(text);
	free(pem);
	EVP_PKEY_free(k.pkey);
}
END_TEST

/* The audience check's canonical forms (api/jwt/resource.c). */
START_TEST(audiences_compare_canonically)
{
	ck_assert(auth_audience_matches("https://MCP.example.test:443/mcp/", RESOURCE));
	ck_assert(auth_audience_matches(RESOURCE, RESOURCE));
	ck_assert(!auth_audience_matches("https://mcp.example.test/other", RESOURCE));
	ck_assert(!auth_audience_matches("http://mcp.example.test/mcp", RESOURCE));
	ck_assert(!auth_audience_matches(NULL, RESOURCE));
	ck_assert(auth_resource_uri_valid(RESOURCE));
	ck_assert(!auth_resource_uri_valid("https://user@mcp.example.test/mcp"));
	ck_assert(!auth_resource_uri_valid("https://mcp.example.test/mcp?x=1"));
	size_t origin = 0;
	ck_assert(auth_uri_origin(RESOURCE, &origin));
	ck_assert_uint_eq(origin, strlen("https://mcp.example.test"));
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("jwt");
	TCase *tc = tcase_create("tokens");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, base64url_is_strict);
	tcase_add_test(tc, duplicate_members_are_counted);
	tcase_add_test(tc, jwt_local_key);
	tcase_add_test(tc, jwt_reload_races_verification);
	tcase_add_test(tc, signed_assertion_verifies);
	tcase_add_test(tc, audiences_compare_canonically);
	suite_add_tcase(s, tc);
	return s;
}
