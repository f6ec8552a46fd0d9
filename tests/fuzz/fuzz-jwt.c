/*
 * fuzz-jwt.c - libFuzzer target: a request's Authorization header through
 * to the verdict (api/authz.c api_authz_http: the Bearer scheme, the query
 * token check, then the built-in JWT verifier of api/jwt/jwt.c: base64url,
 * the JSON header and claims, alg, kid, the signature, exp/nbf/iat, iss,
 * aud, the scopes), with a fixed key set and a fixed clock (the `now`
 * argument).
 *
 * A fuzzer cannot forge a signature, so the claims are reached by signing
 * what the input says with test keys held here.  Input: byte 0 chooses
 *   bit 0: 0 raw: the rest is the header value up to a NUL, and what
 *             follows the NUL (if any) the request URL ("/mcp" otherwise);
 *          1 signed: the rest is HEADER-JSON NUL CLAIMS-JSON; each text is
 *             base64url-encoded verbatim and the two signed with the key
 *             of bit 1 (0: Ed25519, kid "ed"; 1: P-256, kid "ec"), and
 *             "Bearer <token>" is the header value;
 *   bit 2: the server checked against: 0 server A (issuer ISSUER, scope
 *          "mcp:read" required, 60 s of skew), 1 server B (no issuer, no
 *          scope required, typ must be at+jwt, no skew);
 *   bit 3 (signed mode): a byte of the signature changed (must not pass);
 *   bit 4 (raw mode): server C instead, whose application verifier
 *          (mcp_server_set_auth_verifier) takes a token "EXPIRY" or
 *          "EXPIRY.rest" as valid with that expiry (a decimal; none or
 *          negative: not set) and the scope mcp:read, so the checks the
 *          library adds after an application's verdict are reached.
 * The key set also holds an RSA key (kid "rsa") whose private half is not
 * here: the seeds hold a few tokens it signed (made once, offline).
 *
 * Checked beyond ASan, UBSan and LeakSanitizer: the status is one of 0,
 * 400, 401, 403, 500; a principal comes exactly with 0; every refusal has
 * a JSON-RPC error body with id null, an integer code and a non-empty
 * message, and (but 500) a WWW-Authenticate value that starts "Bearer",
 * holds only printable ASCII (no header can be split) and names the error
 * code of its status.  An acceptance is checked again here, independently:
 * the header value is "Bearer" and one token whose three parts decode; the
 * header names a key of the set and its algorithm; the claims, as decoded
 * here, have an exp (now before exp + skew), no nbf/iat ahead of now +
 * skew, the issuer (A), an aud naming the resource, the required scope (A)
 * among "scope"/"scp"; and the principal says what the claims say, with
 * the strings whole (no NUL cut one short).  A changed signature never
 * passes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>

#include "api/auth.h"
#include "api/internal.h"

#define NOW 1800000000
#define RESOURCE "https://mcp.example.test/mcp"
#define ISSUER "https://issuer.example.test"
#define SKEW_A 60

/* The public key set: Ed25519 "ed", P-256 "ec", RSA-2048 "rsa". */
static const char jwks[] =
	"{\"keys\":["
	"{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"ed\",\"use\":\"sig\",\"alg\":\"EdDSA\","
	"\"x\":\"pVLjvNx0KiiVRK-Vxl37T1dyqbNuwZrHs3V7F8F8vKg\"},"
	"{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"ec\",\"use\":\"sig\",\"alg\":\"ES256\","
	"\"x\":\"f-7Kk3Qw418DI7hRtP0p2XZVF_srqtTCxSk4e2JpqPU\","
	"\"y\":\"nzTfRjWypWA6JHHEgsPm5yGrPqdD4CwnMm6xPTVe1wc\"},"
	"{\"kty\":\"RSA\",\"kid\":\"rsa\",\"use\":\"sig\",\"alg\":\"RS256\","
	"\"n\":\"oFftEBKbfd7NXMlGRbzLmSOuia6myVHzoMNxTgz11iyFnOIbVURrFtGhMlvA4-yE0LMImWyJxgb"
	"38qanh5vGEYjWqP7EdExNi8z1fn5qeEXheuK3AFVHAcA-3IqxOzXqO5ZUmlqM5Ul1eqD3MupJ5rxxGpvO7MA1"
	"am8y69d8wlbPdrBLDEH8aXNlfD7tcHgJJWdBQUbzxBgexy44u2oZvss_jTPuYqqOtuOuaKjBli7TjXHIH9XOj"
	"gc9vqqiomqyt-yZzxmY-ET7F0npR4QVrJw6qEKBzvVasOG0Y1RCzd1g5bMcDxHbH818KL3HzfFpPjXVmY8ZeS9"
	"qWsFJVEugvQ\",\"e\":\"AQAB\"}]}";

/* TEST-ONLY private keys, made for this target and used nowhere else:
 * they sign what the input asks, so that the fuzzer reaches the claims. */
static const char test_only_ed25519_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MC4CAQAwBQYDK2VwBCIEIOdRzCOj0l7b0+dI7Q47sDyjt+iZUh6CzqstiyMIzcuQ\n"
	"-----END PRIVATE KEY-----\n";
static const char test_only_p256_key[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUT6y0P2zN76aUR/1\n"
	"SI2URgfgZ2wccfXm1/SCJB1F6GahRANCAAR/7sqTdDDjXwMjuFG0/SnZdlUX+yuq\n"
	"1MLFKTh7Ymmo9Z8030Y1sqVgOiRxxILD5uchqz6nQ+AsJzJusT01XtcH\n"
	"-----END PRIVATE KEY-----\n";

static mcp_server *srv_a, *srv_b, *srv_c;
static EVP_PKEY *key_ed, *key_ec;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz-jwt: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

static EVP_PKEY *load_key(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	if (!k)
		fail("cannot load a test key", NULL);
	return k;
}

static mcp_server *server(int a)
{
	mcp_server *s = mcp_server_new("fuzz-jwt", "1");
	if (!s || mcp_server_set_auth_resource(s, RESOURCE) != MCP_OK ||
	    mcp_server_set_auth_jwks_text(s, jwks) != MCP_OK)
		fail("cannot configure a server", NULL);
	if (a) {
		if (mcp_server_set_auth_issuer(s, ISSUER) != MCP_OK ||
		    mcp_server_set_auth_required_scopes(s, "mcp:read") != MCP_OK ||
		    mcp_server_set_auth_clock_skew_ms(s, SKEW_A * 1000) != MCP_OK)
			fail("cannot configure server A", NULL);
	} else if (mcp_server_set_auth_strict_typ(s, 1) != MCP_OK ||
		   mcp_server_set_auth_clock_skew_ms(s, 0) != MCP_OK) {
		fail("cannot configure server B", NULL);
	}
	return s;
}

/* Server C's verifier: the token's leading decimal is its expiry. */
static int verify_c(const char *token, const char *resource, mcp_principal *out, void *user)
{
	(void)resource;
	(void)user;
	char *end = NULL;
	long long e = strtoll(token, &end, 10);
	if (end != token && e >= 0 && mcp_principal_set_expiry(out, e) != MCP_OK)
		return MCP_EINVAL;
	return mcp_principal_add_scope(out, "mcp:read") == MCP_OK ? MCP_AUTH_OK : MCP_ENOMEM;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (sodium_init() < 0)
		fail("sodium_init", NULL);
	srv_a = server(1);
	srv_b = server(0);
	srv_c = mcp_server_new("fuzz-jwt-c", "1");
	if (!srv_c || mcp_server_set_auth_resource(srv_c, RESOURCE) != MCP_OK ||
	    mcp_server_set_auth_verifier(srv_c, verify_c, NULL) != MCP_OK)
		fail("cannot configure server C", NULL);
	key_ed = load_key(test_only_ed25519_key);
	key_ec = load_key(test_only_p256_key);
	return 0;
}

static char *b64url(const unsigned char *p, size_t n)
{
	size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	char *out = malloc(cap);
	if (!out)
		abort();
	return sodium_bin2base64(out, cap, p, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

static unsigned char *unb64url(const char *s, size_t len, size_t *n)
{
	unsigned char *out = malloc(len + 1);
	if (!out)
		abort();
	const char *end = NULL;
	if (sodium_base642bin(out, len + 1, s, len, NULL, n, &end,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    end != s + len) {
		free(out);
		return NULL;
	}
	out[*n] = 0;
	return out;
}

/* "Bearer " and a compact JWS of the two texts, signed with `key`. */
static char *mint(const char *hdr, size_t hl, const char *claims, size_t cl, int ec, int tamper)
{
	char *h = b64url((const unsigned char *)hdr, hl);
	char *c = b64url((const unsigned char *)claims, cl);
	size_t il = strlen(h) + 1 + strlen(c);
	char *input = malloc(il + 1);
	if (!input)
		abort();
	snprintf(input, il + 1, "%s.%s", h, c);
	unsigned char der[256], raw[64];
	size_t dl = sizeof der;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (!md || EVP_DigestSignInit(md, NULL, ec ? EVP_sha256() : NULL, NULL,
				      ec ? key_ec : key_ed) != 1 ||
	    EVP_DigestSign(md, der, &dl, (const unsigned char *)input, il) != 1)
		fail("cannot sign", NULL);
	EVP_MD_CTX_free(md);
	unsigned char *sig = der;
	size_t sl = dl;
	if (ec) {
		/* JWS wants r || s, 32 bytes each, not DER. */
		const unsigned char *p = der;
		ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)dl);
		if (!es || BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32) != 32 ||
		    BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32) != 32)
			fail("cannot convert a signature", NULL);
		ECDSA_SIG_free(es);
		sig = raw;
		sl = 64;
	}
	if (tamper)
		sig[tamper % sl] ^= (unsigned char)(1u << (tamper / sl % 8));
	char *s = b64url(sig, sl);
	size_t tl = 7 + il + 1 + strlen(s);
	char *token = malloc(tl + 1);
	if (!token)
		abort();
	snprintf(token, tl + 1, "Bearer %s.%s", input, s);
	free(h);
	free(c);
	free(s);
	free(input);
	return token;
}

/* A JSON string member compared whole (json-c keeps a NUL inside). */
static int str_member(json_object *o, const char *key, const char **s, size_t *n)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return 0;
	*s = json_object_get_string(v);
	*n = (size_t)json_object_get_string_len(v);
	return 1;
}

/* The same string as the principal's copy: equal and whole. */
static void same_str(const char *what, json_object *claims, const char *key, const char *have)
{
	const char *s;
	size_t n;
	if (!str_member(claims, key, &s, &n)) {
		if (have && strcmp(key, "client_id") != 0)
			fail("the principal has a claim the token lacks", what);
		return;
	}
	if (!have || strlen(have) != n || memcmp(have, s, n) != 0)
		fail("the principal's claim is not the token's", what);
}

/* Whether `aud` can name RESOURCE: equal ignoring case, one trailing '/'
 * and a default port (looser than the library's rule, so a token the
 * library accepts must pass it). */
static int aud_names_resource(const char *aud, size_t n)
{
	char buf[256];
	size_t k = 0;
	if (memchr(aud, 0, n))
		return 0;
	for (size_t i = 0; i < n && k + 1 < sizeof buf; i++) {
		if (!strncmp(aud + i, ":443/", 5) || !strncmp(aud + i, ":80/", 4) ||
		    ((n - i == 4 && !strncmp(aud + i, ":443", 4)) ||
		     (n - i == 3 && !strncmp(aud + i, ":80", 3)))) {
			i += aud[i + 1] == '4' ? 3 : 2;
			continue;
		}
		buf[k++] = aud[i];
	}
	if (k && buf[k - 1] == '/')
		k--;
	buf[k] = 0;
	return k == strlen(RESOURCE) && strncasecmp(buf, RESOURCE, k) == 0;
}

static int64_t time_claim(json_object *claims, const char *key, int *has)
{
	json_object *v = NULL;
	*has = json_object_object_get_ex(claims, key, &v);
	if (!*has)
		return 0;
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (json_object_is_type(v, json_type_double))
		return (int64_t)json_object_get_double(v);
	fail("accepted a time claim that is not a number", key);
	return 0;
}

/* An accepted header value, checked from scratch. */
static void check_accepted(const char *value, const mcp_principal *p, int a)
{
	if (!p->frozen)
		fail("the principal is not frozen", NULL);
	if (strncasecmp(value, "Bearer ", 7) != 0)
		fail("accepted without the Bearer scheme", value);
	const char *tok = value + 7;
	size_t tl = strcspn(tok, " ");
	if (tok[tl + strspn(tok + tl, " ")])
		fail("accepted a header with more than one token", value);
	const char *d1 = memchr(tok, '.', tl);
	const char *d2 = d1 ? memchr(d1 + 1, '.', tl - (size_t)(d1 + 1 - tok)) : NULL;
	if (!d2 || memchr(d2 + 1, '.', tl - (size_t)(d2 + 1 - tok)))
		fail("accepted a token that is not three parts", tok);
	size_t hl, cl, sl;
	unsigned char *h = unb64url(tok, (size_t)(d1 - tok), &hl);
	unsigned char *c = unb64url(d1 + 1, (size_t)(d2 - d1 - 1), &cl);
	unsigned char *s = unb64url(d2 + 1, tl - (size_t)(d2 + 1 - tok), &sl);
	if (!h || !c || !s)
		fail("accepted a part that is not base64url", tok);
	json_object *hdr = json_tokener_parse((const char *)h);
	json_object *claims = json_tokener_parse((const char *)c);
	if (!json_object_is_type(hdr, json_type_object) ||
	    !json_object_is_type(claims, json_type_object) || strlen((char *)h) != hl ||
	    strlen((char *)c) != cl)
		fail("accepted a header or claims that are not a JSON object", NULL);

	const char *alg, *kid, *typ;
	size_t n;
	if (!str_member(hdr, "alg", &alg, &n) || strlen(alg) != n)
		fail("accepted without an alg", (char *)h);
	int has_kid = str_member(hdr, "kid", &kid, &n);
	if (has_kid && strlen(kid) != n)
		fail("accepted a kid with a NUL in it", (char *)h);
	/* Every key of the set has a kid and one algorithm. */
	if (!(!strcmp(alg, "EdDSA") && (!has_kid || !strcmp(kid, "ed"))) &&
	    !(!strcmp(alg, "ES256") && (!has_kid || !strcmp(kid, "ec"))) &&
	    !(!strcmp(alg, "RS256") && (!has_kid || !strcmp(kid, "rsa"))) &&
	    !(!strncmp(alg, "PS", 2) && (!has_kid || !strcmp(kid, "rsa"))) &&
	    !(!strncmp(alg, "RS", 2) && (!has_kid || !strcmp(kid, "rsa"))))
		fail("accepted an alg and kid no key of the set has", (char *)h);
	if (!a && (!str_member(hdr, "typ", &typ, &n) ||
		   (strcasecmp(typ, "at+jwt") != 0 && strcasecmp(typ, "application/at+jwt") != 0)))
		fail("server B accepted a token whose typ is not at+jwt", (char *)h);

	int64_t skew = a ? SKEW_A : 0;
	int has;
	int64_t exp = time_claim(claims, "exp", &has);
	if (!has || !(NOW < exp + (__int128)skew))
		fail("accepted an expired token, or one without exp", (char *)c);
	if (p->expires_at != exp)
		fail("the principal's expiry is not exp", (char *)c);
	int64_t nbf = time_claim(claims, "nbf", &has);
	if (has && NOW + skew < nbf)
		fail("accepted a token not valid yet", (char *)c);
	int64_t iat = time_claim(claims, "iat", &has);
	if (has && NOW + skew < iat)
		fail("accepted a token issued in the future", (char *)c);
	const char *iss;
	if (a && (!str_member(claims, "iss", &iss, &n) || n != strlen(ISSUER) ||
		  memcmp(iss, ISSUER, n) != 0))
		fail("accepted a token from another issuer", (char *)c);
	json_object *aud = NULL;
	int aud_ok = 0;
	json_object_object_get_ex(claims, "aud", &aud);
	if (json_object_is_type(aud, json_type_string)) {
		aud_ok = aud_names_resource(json_object_get_string(aud),
					    (size_t)json_object_get_string_len(aud));
	} else if (json_object_is_type(aud, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(aud); i++) {
			json_object *e = json_object_array_get_idx(aud, i);
			if (json_object_is_type(e, json_type_string))
				aud_ok |= aud_names_resource(json_object_get_string(e),
							     (size_t)json_object_get_string_len(e));
		}
	}
	if (!aud_ok)
		fail("accepted a token not meant for the resource", (char *)c);
	if (a && !auth_principal_has_scope(p, "mcp:read"))
		fail("accepted a token without the required scope", (char *)c);
	for (size_t i = 0; i < p->nscopes; i++) {
		const char *scope = NULL;
		int found = 0;
		if (str_member(claims, "scope", &scope, &n)) {
			/* the scope must be a whole word of "scope" */
			size_t k = strlen(p->scopes[i]);
			for (const char *q = scope; !found && (q = strstr(q, p->scopes[i])); q++)
				found = (q == scope || q[-1] == ' ') && (q[k] == ' ' || !q[k]);
			if (strlen(scope) != n && found)
				fail("a scope came from a \"scope\" cut at a NUL", scope);
		}
		json_object *scp = NULL;
		if (!found && json_object_object_get_ex(claims, "scp", &scp))
			for (size_t j = 0; j < json_object_array_length(scp) && !found; j++) {
				json_object *e = json_object_array_get_idx(scp, j);
				found = json_object_is_type(e, json_type_string) &&
					(size_t)json_object_get_string_len(e) ==
						strlen(p->scopes[i]) &&
					!strcmp(json_object_get_string(e), p->scopes[i]);
			}
		if (!found)
			fail("the principal has a scope the token does not grant", p->scopes[i]);
	}
	same_str("sub", claims, "sub", p->subject);
	same_str("iss", claims, "iss", p->issuer);
	if (!str_member(claims, "client_id", &iss, &n))
		same_str("azp", claims, "azp", p->client_id);
	else
		same_str("client_id", claims, "client_id", p->client_id);
	json_object_put(hdr);
	json_object_put(claims);
	free(h);
	free(c);
	free(s);
}

/* A refusal's WWW-Authenticate and body. */
static void check_refused(int status, const char *www, const char *body)
{
	if (!body)
		fail("a refusal without a body", NULL);
	json_object *b = json_tokener_parse(body);
	json_object *id = NULL, *err = NULL, *code = NULL, *msg = NULL;
	if (!json_object_is_type(b, json_type_object) || !json_object_object_get_ex(b, "id", &id) ||
	    id || !json_object_object_get_ex(b, "error", &err) ||
	    !json_object_object_get_ex(err, "code", &code) ||
	    !json_object_is_type(code, json_type_int) ||
	    !json_object_object_get_ex(err, "message", &msg) ||
	    !json_object_is_type(msg, json_type_string) || !json_object_get_string_len(msg))
		fail("a refusal's body is not a JSON-RPC error with id null and a message", body);
	json_object_put(b);
	if (status == 500) {
		if (www)
			fail("a 500 with a challenge", www);
		return;
	}
	if (!www || strncmp(www, "Bearer", 6) != 0)
		fail("a refusal without a Bearer challenge", www);
	for (const char *p = www; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			fail("a challenge with a byte a header cannot carry", www);
	const char *want = status == 400 ? "error=\"invalid_request\""
			 : status == 403 ? "error=\"insufficient_scope\""
					 : "error=\"invalid_token\"";
	if (!strstr(www, want) && !(status == 401 && !strstr(www, "error=")))
		fail("a challenge whose error is not its status's", www);
}

/* Whether the query of `url` (after its first '?', before a '#') has a
 * parameter spelled "access_token" (RFC 6750 2.3), as a reader sees it
 * without decoding.  Not "access_token" anywhere: a path, a fragment or
 * another parameter's value may hold the word, and so may a name after
 * a second '?', which separates nothing. */
static int query_names_access_token(const char *url)
{
	const char *q = strchr(url, '?');
	const char *frag = strchr(url, '#');
	if (!q || (frag && frag < q))
		return 0;
	size_t len = frag ? (size_t)(frag - q) : strlen(q);
	static const char name[] = "access_token";
	for (size_t i = 0; i + 1 + sizeof name - 1 <= len; i++) {
		char c = q[i];
		/* The query's first '?' begins a parameter; a later '?' is a
		 * character of a name or a value (RFC 3986 3.4). */
		if ((i == 0 || c == '&' || c == ';') &&
		    memcmp(q + i + 1, name, sizeof name - 1) == 0) {
			char after = i + sizeof name < len ? q[i + sizeof name] : 0;
			if (after == 0 || after == '=' || after == '&' || after == ';')
				return 1;
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t flags = data[0];
	char *text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	size_t n = size - 1, first = strlen(text);
	int a = !(flags & 4);
	char *value = NULL;
	const char *url = "/mcp";
	if (flags & 1) {
		const char *claims = first < n ? text + first + 1 : "";
		size_t cl = first < n ? n - first - 1 : 0;
		int tamper = flags & 8 ? 1 + (int)(cl + first) * 7 : 0;
		value = mint(text, first, claims, cl, flags & 2, tamper);
	} else {
		value = strdup(text);
		if (first < n)
			url = text + first + 1;
		if (!value)
			abort();
	}

	mcp_principal *p = NULL;
	char *www = NULL, *body = NULL;
	int c = !(flags & 1) && (flags & 16);
	mcp_server *srv = c ? srv_c : a ? srv_a : srv_b;
	int status = api_authz_http(srv, url, value, NOW, &p, &www, &body);
	if (status != 0 && status != 400 && status != 401 && status != 403 && status != 500)
		fail("an unknown status", NULL);
	if (!status != !!p)
		fail("a principal without acceptance, or the reverse", value);
	if (p) {
		if (www || body)
			fail("an acceptance with a challenge or body", NULL);
		if (flags & 1 && flags & 8)
			fail("a changed signature verified", value);
		if (query_names_access_token(url))
			fail("accepted with a token in the query", url);
		if (!c)
			check_accepted(value, p, a);
		else if (p->expires_at && !(NOW < (__int128)p->expires_at + 60))
			fail("server C accepted an expired principal", value);
		auth_principal_unref(p);
	} else {
		check_refused(status, www, body);
	}
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "%d %s\n%s\n", status, value, body ? body : "");
	free(www);
	free(body);
	free(value);
	free(text);
	return 0;
}
