/*
 * jwt.c - who a request comes from: the principal, and the built-in
 * verifier of JWT access tokens signed with keys from a JWKS document.
 *
 * Every cryptographic step is OpenSSL's (libcrypto 3): keys are built from
 * JWK parameters with EVP_PKEY_fromdata and checked with
 * EVP_PKEY_public_check, signatures are checked with EVP_DigestVerify.
 * OpenSSL rather than libsodium, which the library already links, because
 * libsodium has no RSA and no ECDSA over P-256, and those are what
 * authorization servers sign with (RS256 is the OpenID default).  OpenSSL
 * rather than libjwt, because libjwt is one more dependency that wraps the
 * same OpenSSL calls and decides policy (algorithm choice, key selection)
 * that a resource server must decide itself (RFC 8725).  What is written
 * here is policy and parsing: the base64url decoding is libsodium's, the
 * JSON parsing json-c's.
 *
 * Policy (doc/auth.md has the table):
 *  - algorithms RS256/384/512, PS256/384/512, ES256/384/512 and EdDSA
 *    (Ed25519), each pinned to its key type and curve; "none", the HS*
 *    family (an HMAC keyed with a public key is a classic forgery) and
 *    anything else are refused;
 *  - the key is chosen by "kid"; a kid not in the set is refused; a token
 *    without kid is accepted only when exactly one key of the set fits its
 *    algorithm (trying every key would let one token pick among them);
 *  - "crit" and "b64" headers are refused (no extension is understood);
 *  - exp is required, nbf and iat are checked when present, all with the
 *    configured clock skew; aud must name the resource; iss must equal the
 *    configured issuer when one is set;
 *  - typ may be absent, "JWT" or "at+jwt" (RFC 9068); strict mode wants
 *    at+jwt only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <sodium.h>

#include "api/jwt/jwt.h"

/* The member `key` of object o, or NULL (also when o is not an object). */
static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A copy of s, or NULL for NULL; *failed set when memory ran out. */
static char *dup_opt(const char *s, int *failed)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*failed = 1;
	return d;
}

/* ---- the principal ------------------------------------------------------ */

mcp_principal *auth_principal_new(void)
{
	mcp_principal *p = calloc(1, sizeof *p);
	if (p)
		atomic_init(&p->refs, 1);
	return p;
}

mcp_principal *auth_principal_ref(mcp_principal *p)
{
	if (p)
		atomic_fetch_add(&p->refs, 1);
	return p;
}

void auth_principal_unref(mcp_principal *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	free(p->subject);
	free(p->client_id);
	free(p->issuer);
	auth_strv_free(p->scopes, p->nscopes);
	auth_strv_free(p->audiences, p->naudiences);
	free(p);
}

static int strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	if (strv_has(*v, *n, s))
		return MCP_OK;
	char *d = strdup(s);
	char **grown = d ? realloc(*v, (*n + 1) * sizeof **v) : NULL;
	if (!grown) {
		free(d);
		return MCP_ENOMEM;
	}
	grown[(*n)++] = d;
	*v = grown;
	return MCP_OK;
}

int auth_principal_add_scope(mcp_principal *p, const char *scope)
{
	if (!p || !scope || !*scope)
		return MCP_EINVAL;
	if (p->frozen)
		return MCP_ESTATE;
	return strv_add(&p->scopes, &p->nscopes, scope);
}

int auth_principal_add_audience(mcp_principal *p, const char *aud)
{
	if (!p || !aud || !*aud)
		return MCP_EINVAL;
	if (p->frozen)
		return MCP_ESTATE;
	return strv_add(&p->audiences, &p->naudiences, aud);
}

int auth_principal_has_scope(const mcp_principal *p, const char *scope)
{
	return p && scope && strv_has(p->scopes, p->nscopes, scope);
}

const char *auth_principal_missing(const mcp_principal *p, char *const *need, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!auth_principal_has_scope(p, need[i]))
			return need[i];
	return NULL;
}

static int str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int auth_principal_same_party(const mcp_principal *a, const mcp_principal *b)
{
	if (!a || !b)
		return 0;
	if (a->subject || b->subject)
		return str_eq(a->subject, b->subject) && str_eq(a->issuer, b->issuer);
	return a->client_id && str_eq(a->client_id, b->client_id) && str_eq(a->issuer, b->issuer);
}

/* ---- strict decoding ------------------------------------------------------ */

unsigned char *auth_b64url_decode(const char *s, size_t len, size_t *out_len)
{
	/* libsodium refuses characters outside the alphabet, '=' in this
	 * variant, a length of 4k+1 and bits set past the last byte, so each
	 * byte string has exactly one accepted spelling. */
	size_t cap = len / 4 * 3 + 3;
	unsigned char *buf = malloc(cap + 1);
	if (!buf)
		return NULL;
	const char *end = NULL;
	size_t n = 0;
	if (len == 0 ||
	    sodium_base642bin(buf, cap, s, len, NULL, &n, &end,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    end != s + len) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*out_len = n;
	return buf;
}

long auth_json_top_members(const char *text, size_t len)
{
	size_t i = 0;
	while (i < len && strchr(" \t\r\n", text[i]))
		i++;
	if (i == len || text[i] != '{')
		return -1;
	long count = 0;
	int depth = 0, in_str = 0, esc = 0, want_key = 0;
	for (; i < len; i++) {
		char c = text[i];
		if (in_str) {
			if (esc)
				esc = 0;
			else if (c == '\\')
				esc = 1;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		switch (c) {
		case '"':
			in_str = 1;
			if (depth == 1 && want_key) {
				count++;
				want_key = 0;
			}
			break;
		case '{':
		case '[':
			if (++depth == 1)
				want_key = 1;
			break;
		case '}':
		case ']':
			depth--;
			break;
		case ',':
			if (depth == 1)
				want_key = 1;
			break;
		}
	}
	return count;
}

/* Whether a JSON text holds a NUL, raw or as the escape \u0000.  A
 * backslash outside a string is no JSON, so no string state is needed. */
static int json_has_nul(const char *text, size_t len)
{
	if (memchr(text, 0, len))
		return 1;
	for (size_t i = 0; i + 1 < len; i++) {
		if (text[i] != '\\')
			continue;
		if (text[i + 1] == 'u' && i + 6 <= len && !memcmp(text + i + 2, "0000", 4))
			return 1;
		i++; /* the escaped character */
	}
	return 0;
}

/* Parses a JWS part: strict JSON, valid UTF-8, one object, nothing after
 * it, no member named twice, no NUL in a name or a string.  Every check
 * below compares C strings (alg, kid, iss, aud, the scopes) and the
 * principal keeps C strings: json-c keeps "aud":"<resource>\u0000x"
 * whole, and strcmp saw <resource> and accepted a token meant for another
 * audience (fuzz-jwt); a subject "a\u0000b" became "a". */
static json_object *parse_part(const char *text, size_t len)
{
	if (json_has_nul(text, len))
		return NULL;
	json_tokener *tok = json_tokener_new_ex(16);
	if (!tok)
		return NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *o = json_tokener_parse_ex(tok, text, (int)len);
	size_t used = json_tokener_get_parse_end(tok);
	int ok = o && json_tokener_get_error(tok) == json_tokener_success && used == len &&
		 json_object_is_type(o, json_type_object) &&
		 auth_json_top_members(text, len) == (long)json_object_object_length(o);
	json_tokener_free(tok);
	if (!ok) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* ---- algorithms and keys ------------------------------------------------- */

enum { KTY_RSA = 1, KTY_EC, KTY_OKP };

typedef struct jws_alg {
	const char *name;
	int kty;
	const char *crv;     /* EC and OKP: the JWK curve */
	const char *md;      /* digest; NULL for EdDSA (it hashes itself) */
	int pss;
	size_t coord;        /* EC: bytes per coordinate (signature = 2x) */
} jws_alg;

static const jws_alg algs[] = {
	{ "RS256", KTY_RSA, NULL, "SHA256", 0, 0 },
	{ "RS384", KTY_RSA, NULL, "SHA384", 0, 0 },
	{ "RS512", KTY_RSA, NULL, "SHA512", 0, 0 },
	{ "PS256", KTY_RSA, NULL, "SHA256", 1, 0 },
	{ "PS384", KTY_RSA, NULL, "SHA384", 1, 0 },
	{ "PS512", KTY_RSA, NULL, "SHA512", 1, 0 },
	{ "ES256", KTY_EC, "P-256", "SHA256", 0, 32 },
	{ "ES384", KTY_EC, "P-384", "SHA384", 0, 48 },
	{ "ES512", KTY_EC, "P-521", "SHA512", 0, 66 },
	{ "EdDSA", KTY_OKP, "Ed25519", NULL, 0, 0 },
};

static const jws_alg *find_alg(const char *name)
{
	for (size_t i = 0; name && i < sizeof algs / sizeof algs[0]; i++)
		if (strcmp(algs[i].name, name) == 0)
			return &algs[i];
	return NULL;
}

typedef struct jwk {
	char *kid;           /* NULL when the JWK has none */
	int kty;
	const char *crv;     /* static: one of the table's */
	const jws_alg *alg;  /* the JWK's own "alg", or NULL (any of its type) */
	EVP_PKEY *pkey;
} jwk;

typedef struct keyset {
	_Atomic int refs;
	jwk *keys;
	size_t n;
} keyset;

static void keyset_unref(keyset *ks)
{
	if (!ks || atomic_fetch_sub(&ks->refs, 1) != 1)
		return;
	for (size_t i = 0; i < ks->n; i++) {
		free(ks->keys[i].kid);
		EVP_PKEY_free(ks->keys[i].pkey);
	}
	free(ks->keys);
	free(ks);
}

static int key_fits(const jwk *k, const jws_alg *a)
{
	if (k->kty != a->kty)
		return 0;
	if (a->crv && (!k->crv || strcmp(k->crv, a->crv) != 0))
		return 0;
	return !k->alg || k->alg == a;
}

static const char *get_s(json_object *o, const char *key)
{
	json_object *v = member(o, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* The decoded bytes of a base64url JWK member, or NULL. */
static unsigned char *jwk_bytes(json_object *o, const char *key, size_t *n)
{
	json_object *v = member(o, key);
	if (!json_object_is_type(v, json_type_string))
		return NULL;
	return auth_b64url_decode(json_object_get_string(v), (size_t)json_object_get_string_len(v),
				  n);
}

/* Builds a public key of `type` from parameters and lets OpenSSL check it
 * (an EC point on its curve, a sane RSA modulus). */
static EVP_PKEY *key_from_params(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
	EVP_PKEY *pk = NULL;
	if (!ctx || EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		pk = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	if (pk) {
		EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
		int rc = check ? EVP_PKEY_public_check(check) : 0;
		EVP_PKEY_CTX_free(check);
		/* -2: the type has no check (Ed25519: every 32 bytes decode). */
		if (rc != 1 && rc != -2) {
			EVP_PKEY_free(pk);
			pk = NULL;
		}
	}
	ERR_clear_error();
	return pk;
}

static EVP_PKEY *rsa_key(json_object *o)
{
	size_t nn = 0, en = 0;
	unsigned char *n = jwk_bytes(o, "n", &nn);
	unsigned char *e = jwk_bytes(o, "e", &en);
	BIGNUM *bn = n ? BN_bin2bn(n, (int)nn, NULL) : NULL;
	BIGNUM *be = e ? BN_bin2bn(e, (int)en, NULL) : NULL;
	EVP_PKEY *pk = NULL;
	/* RFC 7518 section 3.3: RSA keys of 2048 bits or more. */
	if (bn && be && BN_num_bits(bn) >= 2048 && BN_num_bits(bn) <= 16384 && en <= 8) {
		OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
		if (bld && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
		    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
			pk = key_from_params("RSA", bld);
		OSSL_PARAM_BLD_free(bld);
	}
	BN_free(bn);
	BN_free(be);
	free(n);
	free(e);
	return pk;
}

static EVP_PKEY *ec_key(json_object *o, const jws_alg *a)
{
	static const struct {
		const char *crv, *group;
	} groups[] = { { "P-256", "prime256v1" }, { "P-384", "secp384r1" }, { "P-521", "secp521r1" } };
	const char *group = NULL;
	for (size_t i = 0; i < 3; i++)
		if (strcmp(groups[i].crv, a->crv) == 0)
			group = groups[i].group;
	size_t xn = 0, yn = 0;
	unsigned char *x = jwk_bytes(o, "x", &xn);
	unsigned char *y = jwk_bytes(o, "y", &yn);
	EVP_PKEY *pk = NULL;
	unsigned char *pt = malloc(1 + 2 * a->coord);
	/* RFC 7518 section 6.2.1.2: coordinates at their full length. */
	if (group && x && y && pt && xn == a->coord && yn == a->coord) {
		pt[0] = 0x04; /* uncompressed point */
		memcpy(pt + 1, x, xn);
		memcpy(pt + 1 + xn, y, yn);
		OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
		if (bld && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) &&
		    OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt,
						     1 + 2 * a->coord))
			pk = key_from_params("EC", bld);
		OSSL_PARAM_BLD_free(bld);
	}
	free(pt);
	free(x);
	free(y);
	return pk;
}

static EVP_PKEY *ed25519_key(json_object *o)
{
	size_t xn = 0;
	unsigned char *x = jwk_bytes(o, "x", &xn);
	EVP_PKEY *pk = NULL;
	if (x && xn == 32) {
		OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
		if (bld && OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, x, xn))
			pk = key_from_params("ED25519", bld);
		OSSL_PARAM_BLD_free(bld);
	}
	free(x);
	return pk;
}

/* Reads one JWK into *k.  0 when usable; 1 when it is not a signature
 * key this verifier serves (skipped); -1 when out of memory. */
static int jwk_parse(json_object *o, jwk *k)
{
	memset(k, 0, sizeof *k);
	if (!json_object_is_type(o, json_type_object))
		return 1;
	const char *kty = get_s(o, "kty");
	const char *use = get_s(o, "use");
	json_object *ops = member(o, "key_ops");
	json_object *jalg = member(o, "alg");
	json_object *jkid = member(o, "kid");
	if (!kty || (member(o, "use") && (!use || strcmp(use, "sig") != 0)))
		return 1;
	if (ops) {
		int verify = 0;
		size_t n = json_object_is_type(ops, json_type_array) ? json_object_array_length(ops) : 0;
		for (size_t i = 0; i < n; i++) {
			json_object *op = json_object_array_get_idx(ops, i);
			verify |= json_object_is_type(op, json_type_string) &&
				  strcmp(json_object_get_string(op), "verify") == 0;
		}
		if (!verify)
			return 1;
	}
	if (jkid && !json_object_is_type(jkid, json_type_string))
		return 1;
	if (jalg) {
		k->alg = json_object_is_type(jalg, json_type_string)
				 ? find_alg(json_object_get_string(jalg))
				 : NULL;
		if (!k->alg)
			return 1; /* an encryption algorithm, or one not served */
	}
	const char *crv = get_s(o, "crv");
	if (strcmp(kty, "RSA") == 0) {
		k->kty = KTY_RSA;
	} else if (strcmp(kty, "EC") == 0 || strcmp(kty, "OKP") == 0) {
		k->kty = strcmp(kty, "EC") == 0 ? KTY_EC : KTY_OKP;
		for (size_t i = 0; crv && i < sizeof algs / sizeof algs[0]; i++)
			if (algs[i].kty == k->kty && strcmp(algs[i].crv, crv) == 0)
				k->crv = algs[i].crv;
		if (!k->crv)
			return 1; /* Ed448, X25519, secp256k1, ... */
	} else {
		return 1; /* "oct" has no place in a public key set */
	}
	/* The JWK's own alg must be one its type and curve can make. */
	if (k->alg && !key_fits(k, k->alg))
		return 1;
	const jws_alg *shape = NULL;
	for (size_t i = 0; i < sizeof algs / sizeof algs[0] && !shape; i++)
		if (key_fits(k, &algs[i]))
			shape = &algs[i];
	k->pkey = k->kty == KTY_RSA ? rsa_key(o) : k->kty == KTY_EC ? ec_key(o, shape)
								    : ed25519_key(o);
	if (!k->pkey)
		return 1;
	if (jkid && !(k->kid = strdup(json_object_get_string(jkid)))) {
		EVP_PKEY_free(k->pkey);
		return -1;
	}
	return 0;
}

/* A JWKS document is at most this large and holds at most this many keys. */
#define JWKS_MAX_BYTES (1u << 20)
#define JWKS_MAX_KEYS 256

/* Parses a key set; on failure why[whysz] says which rule or limit it
 * broke, with the limit's value, for the operator to read. */
static int keyset_parse(const char *text, size_t len, keyset **out, char *why, size_t whysz)
{
	*out = NULL;
	if (!text || len == 0) {
		snprintf(why, whysz, "the key set is empty");
		return MCP_EINVAL;
	}
	if (len > JWKS_MAX_BYTES) {
		snprintf(why, whysz,
			 "the key set is larger than the limit of %u bytes (%u MiB): %zu bytes",
			 JWKS_MAX_BYTES, JWKS_MAX_BYTES >> 20, len);
		return MCP_EINVAL;
	}
	json_tokener *tok = json_tokener_new_ex(32);
	if (!tok)
		return MCP_ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	errno = 0;
	json_object *doc = json_tokener_parse_ex(tok, text, (int)len);
	int complete = json_tokener_get_error(tok) == json_tokener_success &&
		       json_tokener_get_parse_end(tok) == len;
	json_tokener_free(tok);
	if (!doc && errno == ENOMEM)
		return MCP_ENOMEM;
	json_object *keys = member(doc, "keys");
	size_t n = json_object_is_type(keys, json_type_array) ? json_object_array_length(keys) : 0;
	if (!complete || n == 0 || n > JWKS_MAX_KEYS) {
		if (!complete)
			snprintf(why, whysz, "the key set is not valid JSON");
		else if (!json_object_is_type(keys, json_type_array))
			snprintf(why, whysz, "the key set has no \"keys\" array (RFC 7517 section 5)");
		else if (n == 0)
			snprintf(why, whysz, "the key set holds no keys");
		else
			snprintf(why, whysz, "the key set holds %zu keys; the limit is %d keys", n,
				 JWKS_MAX_KEYS);
		json_object_put(doc);
		return MCP_EINVAL;
	}
	keyset *ks = calloc(1, sizeof *ks);
	if (ks)
		ks->keys = calloc(n, sizeof *ks->keys);
	if (!ks || !ks->keys) {
		free(ks);
		json_object_put(doc);
		return MCP_ENOMEM;
	}
	atomic_init(&ks->refs, 1);
	int rc = MCP_OK;
	for (size_t i = 0; i < n && rc == MCP_OK; i++) {
		int r = jwk_parse(json_object_array_get_idx(keys, i), &ks->keys[ks->n]);
		if (r == 0)
			ks->n++;
		else if (r < 0)
			rc = MCP_ENOMEM;
	}
	json_object_put(doc);
	if (rc == MCP_OK && ks->n == 0) {
		snprintf(why, whysz,
			 "none of the %zu keys can verify a signature here (RSA of 2048 bits or "
			 "more, EC P-256, P-384 or P-521, or Ed25519; signing keys only)",
			 n);
		rc = MCP_EINVAL;
	}
	if (rc == MCP_ENOMEM)
		snprintf(why, whysz, "out of memory");
	if (rc != MCP_OK) {
		keyset_unref(ks);
		return rc;
	}
	*out = ks;
	return MCP_OK;
}

/* ---- the verifier -------------------------------------------------------- */

struct auth_jwt {
	pthread_mutex_t mu;   /* the fields below */
	keyset *keys;         /* counted; NULL until a set is loaded */
	char *path;           /* the JWKS file, or NULL */
	char why[600];        /* why the last load failed ("" after a success) */
};

static void set_why(auth_jwt *v, const char *why)
{
	pthread_mutex_lock(&v->mu);
	snprintf(v->why, sizeof v->why, "%s", why);
	pthread_mutex_unlock(&v->mu);
}

void auth_jwt_error(auth_jwt *v, char *buf, size_t bufsz)
{
	if (!bufsz)
		return;
	buf[0] = 0;
	if (!v)
		return;
	pthread_mutex_lock(&v->mu);
	snprintf(buf, bufsz, "%s", v->why);
	pthread_mutex_unlock(&v->mu);
}

void auth_jwt_note_error(auth_jwt *v, const char *why)
{
	set_why(v, why);
}

auth_jwt *auth_jwt_new(void)
{
	auth_jwt *v = calloc(1, sizeof *v);
	if (v && pthread_mutex_init(&v->mu, NULL) != 0) {
		free(v);
		v = NULL;
	}
	return v;
}

void auth_jwt_free(auth_jwt *v)
{
	if (!v)
		return;
	keyset_unref(v->keys);
	free(v->path);
	pthread_mutex_destroy(&v->mu);
	free(v);
}

static void swap_in(auth_jwt *v, keyset *ks)
{
	pthread_mutex_lock(&v->mu);
	keyset *old = v->keys;
	v->keys = ks;
	pthread_mutex_unlock(&v->mu);
	keyset_unref(old); /* verifications holding it finish first */
}

int auth_jwt_set_jwks(auth_jwt *v, const char *text, size_t len, size_t *nkeys)
{
	if (!v || !text)
		return MCP_EINVAL;
	keyset *ks;
	char why[300] = "";
	int rc = keyset_parse(text, len, &ks, why, sizeof why);
	set_why(v, why);
	if (rc != MCP_OK)
		return rc;
	if (nkeys)
		*nkeys = ks->n;
	swap_in(v, ks);
	return MCP_OK;
}

static int load_file(auth_jwt *v, const char *path, size_t *nkeys)
{
	char why[300];
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(why, sizeof why, "cannot open the key set file: %s", strerror(errno));
		set_why(v, why);
		return MCP_ESYS;
	}
	char *buf = malloc(JWKS_MAX_BYTES + 1);
	size_t len = buf ? fread(buf, 1, JWKS_MAX_BYTES + 1, f) : 0;
	int err = ferror(f) ? errno : 0;
	fclose(f);
	if (!buf) {
		set_why(v, "out of memory");
		return MCP_ENOMEM;
	}
	int rc;
	if (err) {
		snprintf(why, sizeof why, "cannot read the key set file: %s", strerror(err));
		set_why(v, why);
		rc = MCP_ESYS;
	} else if (len > JWKS_MAX_BYTES) {
		/* Not read to its end: its size is more than the limit. */
		snprintf(why, sizeof why,
			 "the key set file is larger than the limit of %u bytes (%u MiB)",
			 JWKS_MAX_BYTES, JWKS_MAX_BYTES >> 20);
		set_why(v, why);
		rc = MCP_EINVAL;
	} else {
		rc = auth_jwt_set_jwks(v, buf, len, nkeys);
	}
	free(buf);
	return rc;
}

int auth_jwt_set_jwks_file(auth_jwt *v, const char *path, size_t *nkeys)
{
	if (!v || !path || !*path)
		return MCP_EINVAL;
	int rc = load_file(v, path, nkeys);
	if (rc != MCP_OK)
		return rc;
	char *copy = strdup(path);
	if (!copy)
		return MCP_ENOMEM;
	pthread_mutex_lock(&v->mu);
	free(v->path);
	v->path = copy;
	pthread_mutex_unlock(&v->mu);
	return MCP_OK;
}

int auth_jwt_reload(auth_jwt *v, size_t *nkeys)
{
	if (!v)
		return MCP_EINVAL;
	pthread_mutex_lock(&v->mu);
	char *path = v->path ? strdup(v->path) : NULL;
	int had = v->path != NULL;
	pthread_mutex_unlock(&v->mu);
	if (!path)
		return had ? MCP_ENOMEM : MCP_ENOENT;
	int rc = load_file(v, path, nkeys);
	free(path);
	return rc;
}

/* Checks a JWS signature with OpenSSL.  ECDSA signatures travel as r||s
 * (RFC 7518 section 3.4); OpenSSL wants DER, so they are re-encoded. */
static int signature_ok(const jws_alg *a, EVP_PKEY *pkey, const unsigned char *sig,
			size_t siglen, const char *data, size_t datalen)
{
	unsigned char *der = NULL;
	int ok = 0;
	if (a->kty == KTY_EC) {
		if (siglen != 2 * a->coord)
			return 0;
		ECDSA_SIG *es = ECDSA_SIG_new();
		BIGNUM *r = BN_bin2bn(sig, (int)a->coord, NULL);
		BIGNUM *s = BN_bin2bn(sig + a->coord, (int)a->coord, NULL);
		int dlen = -1;
		if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
			r = s = NULL; /* owned by es now */
			dlen = i2d_ECDSA_SIG(es, &der);
		}
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		if (dlen <= 0) {
			ERR_clear_error();
			return 0;
		}
		sig = der;
		siglen = (size_t)dlen;
	}
	EVP_MD_CTX *mctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	if (mctx && EVP_DigestVerifyInit_ex(mctx, &pctx, a->md, NULL, NULL, pkey, NULL) == 1 &&
	    (!a->pss ||
	     (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
	      EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 &&
	      EVP_PKEY_CTX_set_rsa_mgf1_md_name(pctx, a->md, NULL) == 1)))
		ok = EVP_DigestVerify(mctx, sig, siglen, (const unsigned char *)data, datalen) == 1;
	EVP_MD_CTX_free(mctx);
	OPENSSL_free(der);
	ERR_clear_error(); /* leave the thread's error queue as we found it */
	return ok;
}

/* A NumericDate claim (RFC 7519 section 2): 1 and *out when present and a
 * number, 0 when absent, -1 when of another type. */
/* A NumericDate within +-9e15 seconds (far beyond any real date), for
 * integers as for doubles: the checks add the skew to it, and
 * "exp":9223372036854775807 overflowed exp + skew (fuzz-jwt, UBSan). */
static int numeric_date(json_object *claims, const char *key, int64_t *out)
{
	json_object *v = member(claims, key);
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);
		if (i <= -9000000000000000 || i >= 9000000000000000)
			return -1;
		*out = i;
		return 1;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (!(d > -9e15 && d < 9e15))
			return -1;
		*out = (int64_t)d;
		return 1;
	}
	return -1;
}

static int typ_ok(const char *typ, int strict)
{
	if (!typ)
		return !strict;
	if (strcasecmp(typ, "at+jwt") == 0 || strcasecmp(typ, "application/at+jwt") == 0)
		return 1;
	return !strict && strcasecmp(typ, "JWT") == 0;
}

const char auth_reason_unknown_kid[] = "the token's key id is not in the key set";
const char auth_reason_no_keys[] = "the server has no key set loaded";

#define REFUSE(why)                            \
	do {                                   \
		verdict = AUTH_INVALID_TOKEN;  \
		*reason = (why);               \
		goto done;                     \
	} while (0)

/* Fills the principal from verified claims. */
static int principal_from_claims(json_object *claims, mcp_principal *p)
{
	int failed = 0;
	p->subject = dup_opt(get_s(claims, "sub"), &failed);
	const char *client = get_s(claims, "client_id");
	p->client_id = dup_opt(client ? client : get_s(claims, "azp"), &failed);
	p->issuer = dup_opt(get_s(claims, "iss"), &failed);
	if (failed)
		return MCP_ENOMEM;
	int rc = MCP_OK;
	const char *scope = get_s(claims, "scope");
	while (scope && *scope && rc == MCP_OK) {
		size_t n = strcspn(scope, " ");
		if (n > 0) {
			char *one = strndup(scope, n);
			rc = one ? auth_principal_add_scope(p, one) : MCP_ENOMEM;
			free(one);
		}
		scope += n;
		scope += strspn(scope, " ");
	}
	json_object *scp = member(claims, "scp");
	size_t ns = json_object_is_type(scp, json_type_array) ? json_object_array_length(scp) : 0;
	for (size_t i = 0; i < ns && rc == MCP_OK; i++) {
		json_object *s = json_object_array_get_idx(scp, i);
		if (json_object_is_type(s, json_type_string) && *json_object_get_string(s))
			rc = auth_principal_add_scope(p, json_object_get_string(s));
	}
	json_object *aud = member(claims, "aud");
	if (json_object_is_type(aud, json_type_string)) {
		if (rc == MCP_OK)
			rc = auth_principal_add_audience(p, json_object_get_string(aud));
	} else {
		size_t na = json_object_array_length(aud);
		for (size_t i = 0; i < na && rc == MCP_OK; i++)
			rc = auth_principal_add_audience(
				p, json_object_get_string(json_object_array_get_idx(aud, i)));
	}
	return rc;
}

/* The header's checks (RFC 8725): an asymmetric algorithm this verifier
 * knows, no critical extensions, typ at+jwt when the rules want it, a
 * string kid if any.  NULL with *alg and *kid (NULL: none) set, or why
 * the token is refused. */
static const char *header_problem(json_object *hdr, const auth_jwt_rules *rules,
				  const jws_alg **alg, const char **kid)
{
	const char *alg_name = get_s(hdr, "alg");
	if (!alg_name)
		return "the token header has no alg";
	if (strcmp(alg_name, "none") == 0)
		return "unsigned tokens (alg none) are refused";
	if (strncmp(alg_name, "HS", 2) == 0)
		return "HMAC-signed tokens are refused: the keys here are public";
	if (!(*alg = find_alg(alg_name)))
		return "the token's algorithm is not supported";
	if (member(hdr, "crit") || member(hdr, "b64"))
		return "the token header has critical extensions";
	json_object *jtyp = member(hdr, "typ");
	if (jtyp && !json_object_is_type(jtyp, json_type_string))
		return "the token header's typ is not a string";
	if (!typ_ok(jtyp ? json_object_get_string(jtyp) : NULL, rules->require_at_jwt))
		return "the token is not an access token (typ)";
	json_object *jkid = member(hdr, "kid");
	if (jkid && !json_object_is_type(jkid, json_type_string))
		return "the token header's kid is not a string";
	*kid = jkid ? json_object_get_string(jkid) : NULL;
	return NULL;
}

/* The one key of `ks` that may have signed a token of `alg` and `kid`
 * (NULL: none named): NULL with *key set, or why the token is refused. */
static const char *pick_key(const keyset *ks, const jws_alg *alg, const char *kid,
			    const jwk **key)
{
	size_t matches = 0;
	int kid_known = 0;
	for (size_t i = 0; i < ks->n; i++) {
		const jwk *k = &ks->keys[i];
		if (kid && (!k->kid || strcmp(k->kid, kid) != 0))
			continue;
		kid_known = 1;
		if (key_fits(k, alg)) {
			*key = k;
			matches++;
		}
	}
	if (kid && !kid_known)
		return auth_reason_unknown_kid;
	if (matches == 0)
		return "the token's algorithm does not match its key";
	if (matches > 1)
		return kid ? "the token's key id names several keys"
			   : "the token has no key id and several keys could have signed it";
	return NULL;
}

/* The claims' checks, once the signature holds: the times against `now`
 * (with the rules' skew), the issuer, the audience, the types of the
 * claims the principal is made of.  NULL with *exp set, or why the token
 * is refused. */
static const char *claims_problem(json_object *claims, const auth_jwt_rules *rules, int64_t now,
				  int64_t *exp)
{
	int64_t nbf = 0, iat = 0;
	int has_exp = numeric_date(claims, "exp", exp);
	int has_nbf = numeric_date(claims, "nbf", &nbf);
	int has_iat = numeric_date(claims, "iat", &iat);
	if (has_exp < 0 || has_nbf < 0 || has_iat < 0)
		return "a time claim of the token is not a number (or out of range)";
	if (!has_exp)
		return "the token has no expiry (exp)";
	if (now >= *exp + rules->skew_s)
		return "the token has expired";
	if (has_nbf && now + rules->skew_s < nbf)
		return "the token is not valid yet (nbf)";
	if (has_iat && now + rules->skew_s < iat)
		return "the token was issued in the future (iat)";
	json_object *iss = member(claims, "iss");
	if (iss && !json_object_is_type(iss, json_type_string))
		return "the token's issuer is not a string";
	if (rules->issuer && (!iss || strcmp(json_object_get_string(iss), rules->issuer) != 0))
		return "the token was not issued by the expected issuer";
	json_object *aud = member(claims, "aud");
	int aud_ok = 0;
	if (json_object_is_type(aud, json_type_string)) {
		aud_ok = auth_audience_matches(json_object_get_string(aud), rules->audience);
	} else if (json_object_is_type(aud, json_type_array)) {
		size_t na = json_object_array_length(aud);
		for (size_t i = 0; i < na; i++) {
			json_object *a = json_object_array_get_idx(aud, i);
			if (!json_object_is_type(a, json_type_string))
				return "the token's audience is not a string or an array of strings";
			aud_ok |= auth_audience_matches(json_object_get_string(a), rules->audience);
		}
	}
	if (!aud_ok)
		return "the token is not meant for this resource (aud)";
	json_object *scope = member(claims, "scope"), *scp = member(claims, "scp");
	json_object *sub = member(claims, "sub"), *cid = member(claims, "client_id");
	if ((scope && !json_object_is_type(scope, json_type_string)) ||
	    (scp && !json_object_is_type(scp, json_type_array)) ||
	    (sub && !json_object_is_type(sub, json_type_string)) ||
	    (cid && !json_object_is_type(cid, json_type_string)))
		return "a claim of the token has the wrong type";
	return NULL;
}

auth_verdict auth_jwt_verify(auth_jwt *v, const auth_jwt_rules *rules, const char *token,
			     int64_t now, mcp_principal **out, const char **reason)
{
	const char *ignored;
	if (!reason)
		reason = &ignored;
	*out = NULL;
	*reason = NULL;
	if (!v || !rules || !rules->audience) {
		*reason = "the server has no resource identifier or key set configured";
		return AUTH_SERVER_ERROR;
	}
	auth_verdict verdict = AUTH_OK;
	unsigned char *hdr_raw = NULL, *body_raw = NULL, *sig = NULL;
	json_object *hdr = NULL, *claims = NULL;
	keyset *ks = NULL;
	mcp_principal *p = NULL;
	size_t hlen = 0, blen = 0, slen = 0;
	const jws_alg *alg = NULL;
	const jwk *key = NULL;
	const char *kid = NULL, *why;
	int64_t exp = 0;

	size_t len = token ? strnlen(token, AUTH_MAX_TOKEN + 1) : 0;
	if (len == 0)
		REFUSE("the token is empty");
	if (len > AUTH_MAX_TOKEN)
		REFUSE("the token is too long");
	const char *dot1 = memchr(token, '.', len);
	const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
	if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token)))
		REFUSE("the token is not a JWS in compact form (three parts)");
	size_t l0 = (size_t)(dot1 - token), l1 = (size_t)(dot2 - dot1 - 1);
	size_t l2 = len - (size_t)(dot2 + 1 - token);
	if (l0 == 0 || l1 == 0 || l2 == 0)
		REFUSE("a part of the token is empty");
	if (!(hdr_raw = auth_b64url_decode(token, l0, &hlen)) ||
	    !(body_raw = auth_b64url_decode(dot1 + 1, l1, &blen)) ||
	    !(sig = auth_b64url_decode(dot2 + 1, l2, &slen)))
		REFUSE("a part of the token is not canonical base64url");
	if (!(hdr = parse_part((const char *)hdr_raw, hlen)))
		REFUSE("the token header is not a JSON object (or names a member twice, or "
		       "holds a NUL)");
	if ((why = header_problem(hdr, rules, &alg, &kid)))
		REFUSE(why);

	pthread_mutex_lock(&v->mu);
	ks = v->keys;
	if (ks)
		atomic_fetch_add(&ks->refs, 1);
	pthread_mutex_unlock(&v->mu);
	if (!ks) {
		verdict = AUTH_SERVER_ERROR;
		*reason = auth_reason_no_keys;
		goto done;
	}
	if ((why = pick_key(ks, alg, kid, &key)))
		REFUSE(why);
	if (!signature_ok(alg, key->pkey, sig, slen, token, (size_t)(dot2 - token)))
		REFUSE("the token's signature does not verify");

	if (!(claims = parse_part((const char *)body_raw, blen)))
		REFUSE("the token's claims are not a JSON object (or name a member twice, or "
		       "hold a NUL)");
	if ((why = claims_problem(claims, rules, now, &exp)))
		REFUSE(why);

	p = auth_principal_new();
	if (!p || principal_from_claims(claims, p) != MCP_OK) {
		verdict = AUTH_SERVER_ERROR;
		*reason = "out of memory";
		goto done;
	}
	p->expires_at = exp;
	p->frozen = 1;
	*out = p;
	p = NULL;
done:
	auth_principal_unref(p);
	keyset_unref(ks);
	json_object_put(hdr);
	json_object_put(claims);
	free(hdr_raw);
	free(body_raw);
	free(sig);
	return verdict;
}
