/*
 * sign.c - a client assertion (RFC 7523 section 2.2, the private_key_jwt
 * client authentication of OAuth) signed with a PEM private key: ES256
 * with an EC key, RS256 with an RSA key.  OpenSSL parses the key and
 * signs; the JWS framing (base64url of the header and claims, the ECDSA
 * signature as r || s rather than DER) is written here.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>

#include "api/jwt/jwt.h"

/* The key of a PEM text, or NULL. */
static EVP_PKEY *pem_key(const char *pem)
{
	BIO *b = pem ? BIO_new_mem_buf(pem, -1) : NULL;
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	return k;
}

static const char *key_alg(const EVP_PKEY *k)
{
	if (!k)
		return NULL;
	if (EVP_PKEY_id(k) == EVP_PKEY_EC)
		return "ES256";
	return EVP_PKEY_id(k) == EVP_PKEY_RSA ? "RS256" : NULL;
}

const char *auth_pem_key_alg(const char *pem)
{
	EVP_PKEY *k = pem_key(pem);
	const char *alg = key_alg(k);
	EVP_PKEY_free(k);
	return alg;
}

/* Appends the base64url (no padding) of bin to out at *n; out has room
 * (the caller sized it). */
static void put_b64url(char *out, size_t cap, size_t *n, const void *bin, size_t len)
{
	sodium_bin2base64(out + *n, cap - *n, bin, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	*n += strlen(out + *n);
}

/* An ECDSA signature in DER (sig, *len) rewritten in place as JWS wants
 * it: r and s, 32 bytes each (RFC 7518 section 3.4).  0, or -1. */
static int ecdsa_der_to_jws(unsigned char *sig, size_t *len)
{
	const unsigned char *p = sig;
	ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)*len);
	if (!es)
		return -1;
	const BIGNUM *r, *s;
	ECDSA_SIG_get0(es, &r, &s);
	int ok = BN_bn2binpad(r, sig, 32) == 32 && BN_bn2binpad(s, sig + 32, 32) == 32;
	ECDSA_SIG_free(es);
	*len = 64;
	return ok ? 0 : -1;
}

char *auth_jws_sign_pem(const char *pem, json_object *claims)
{
	EVP_PKEY *k = pem_key(pem);
	const char *alg = key_alg(k);
	if (!alg || !json_object_is_type(claims, json_type_object)) {
		EVP_PKEY_free(k);
		return NULL;
	}
	json_object *hdr = json_object_new_object();
	if (hdr) {
		json_object_object_add(hdr, "alg", json_object_new_string(alg));
		json_object_object_add(hdr, "typ", json_object_new_string("JWT"));
	}
	const char *hs = hdr ? json_object_to_json_string_ext(hdr, JSON_C_TO_STRING_PLAIN) : NULL;
	const char *cs = json_object_to_json_string_ext(claims, JSON_C_TO_STRING_PLAIN);
	unsigned char sig[1024];
	size_t siglen = sizeof sig;
	size_t cap = hs && cs ? (strlen(hs) + strlen(cs)) * 2 + 2 * sizeof sig : 0;
	char *jws = cap ? malloc(cap) : NULL;
	EVP_MD_CTX *md = jws ? EVP_MD_CTX_new() : NULL;
	int ok = md != NULL;
	size_t n = 0;
	if (ok) {
		put_b64url(jws, cap, &n, hs, strlen(hs));
		jws[n++] = '.';
		put_b64url(jws, cap, &n, cs, strlen(cs));
		ok = EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) == 1 &&
		     EVP_DigestSign(md, sig, &siglen, (unsigned char *)jws, n) == 1;
	}
	if (ok && EVP_PKEY_id(k) == EVP_PKEY_EC)
		ok = ecdsa_der_to_jws(sig, &siglen) == 0;
	if (ok) {
		jws[n++] = '.';
		put_b64url(jws, cap, &n, sig, siglen);
	}
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	json_object_put(hdr);
	if (!ok) {
		free(jws);
		return NULL;
	}
	return jws;
}
