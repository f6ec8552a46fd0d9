/*
 * jwt.h - the JWT access-token verifier and everything in libmcp that
 * needs OpenSSL (libcrypto 3), as a library of its own inside the tree
 * (api/jwt/libjwt.la: never installed, nothing exported).
 *
 *  - jwt.c: the principal, the JWKS key set and the verification of a
 *    compact JWS access token against it (RFC 7515, 7517, 7519, 8725,
 *    9068);
 *  - resource.c: resource identifiers, as the audience check and the
 *    HTTP layer compare them;
 *  - sign.c: a client assertion signed with a PEM private key (RFC 7523,
 *    private_key_jwt), for the client's OAuth.
 *
 * It needs json-c, libsodium (base64url), OpenSSL and <mcp/mcp.h> for its
 * error codes and the principal's public type, nothing of the rest of
 * libmcp: its unit test links it alone, so the linker refuses a call from
 * it into the library above.  Every function may be called from any
 * thread; what each takes and returns is said at each.
 */
#ifndef MCP_API_JWT_H
#define MCP_API_JWT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include <mcp/mcp.h>

/* What a token check decided.  Each maps to one HTTP answer of RFC 6750
 * section 3.1 and the MCP authorization spec: */
typedef enum auth_verdict {
	AUTH_OK = 0,
	AUTH_NO_TOKEN,           /* 401, challenge without an error code */
	AUTH_INVALID_REQUEST,    /* 400 invalid_request (malformed header,
				    a token in the query string) */
	AUTH_INVALID_TOKEN,      /* 401 invalid_token */
	AUTH_INSUFFICIENT_SCOPE, /* 403 insufficient_scope */
	AUTH_SERVER_ERROR        /* 500: no memory, no key set, no resource */
} auth_verdict;

/* Longest token accepted, in bytes: far above what real authorization
 * servers issue (1-4 KiB), far below what would cost real work to parse. */
#define AUTH_MAX_TOKEN 16384

/* ---- the principal ------------------------------------------------------
 *
 * Made once (by the JWT verifier, or by an application verifier through
 * the public mcp_principal_set_* calls), then frozen: every reader on any
 * thread sees the same immutable values, so it is shared by reference
 * count, never copied.  Strings are NUL-terminated UTF-8 copies. */
struct mcp_principal {
	_Atomic int refs;
	int frozen;                /* no setter works once set */
	char *subject;             /* "sub", or NULL */
	char *client_id;           /* "client_id" or "azp", or NULL */
	char *issuer;              /* "iss", or NULL */
	char **scopes;             /* distinct, in token order */
	size_t nscopes;
	char **audiences;
	size_t naudiences;
	int64_t expires_at;        /* Unix seconds; 0: not stated */
};

mcp_principal *auth_principal_new(void);
mcp_principal *auth_principal_ref(mcp_principal *p);
void auth_principal_unref(mcp_principal *p);
/* Adds a scope (copied) unless present; MCP_OK, MCP_ENOMEM, MCP_ESTATE. */
int auth_principal_add_scope(mcp_principal *p, const char *scope);
int auth_principal_add_audience(mcp_principal *p, const char *aud);
/* 1 when the principal holds `scope`, else 0 (also for NULL). */
int auth_principal_has_scope(const mcp_principal *p, const char *scope);
/* The first of `need` (n entries) the principal lacks, or NULL. */
const char *auth_principal_missing(const mcp_principal *p, char *const *need, size_t n);
/* Whether two principals are the same party: same issuer and subject, or,
 * when neither has a subject, the same client id.  A session created by
 * one is refused to the other. */
int auth_principal_same_party(const mcp_principal *a, const mcp_principal *b);

/* ---- the JWT verifier (api/jwt/jwt.c) ---------------------------------------
 *
 * Holds the current key set; verifications take a reference to it, so a
 * reload swaps the pointer under a mutex while verifications in flight
 * finish with the set they started with. */
typedef struct auth_jwt auth_jwt;

/* What a token must satisfy besides its signature. */
typedef struct auth_jwt_rules {
	const char *issuer;      /* exact "iss"; NULL: not checked */
	const char *audience;    /* the canonical resource URI; required */
	int64_t skew_s;          /* allowed clock difference, seconds */
	int require_at_jwt;      /* typ must be at+jwt (RFC 9068 strictly) */
} auth_jwt_rules;

auth_jwt *auth_jwt_new(void);
void auth_jwt_free(auth_jwt *v);
/* Replaces the key set with the JWKS document `text` (len bytes).  Keys
 * the verifier cannot use (encryption keys, symmetric keys, curves it does
 * not serve) are skipped; *nkeys (may be NULL) gets the usable count.  On
 * any error the previous set stays.  MCP_OK, MCP_EINVAL (not a JWKS, or no
 * usable key), MCP_ENOMEM. */
int auth_jwt_set_jwks(auth_jwt *v, const char *text, size_t len, size_t *nkeys);
/* Remembers `path` and loads it; auth_jwt_reload reads it again.
 * MCP_ESYS when it cannot be read, MCP_ENOENT (reload) when no path. */
int auth_jwt_set_jwks_file(auth_jwt *v, const char *path, size_t *nkeys);
int auth_jwt_reload(auth_jwt *v, size_t *nkeys);
/* Why the last set, set_file or reload failed, naming the rule or the
 * limit broken and its value ("" after a success), copied into
 * buf[bufsz].  Any thread. */
void auth_jwt_error(auth_jwt *v, char *buf, size_t bufsz);
/* Records why a key set could not be had (a fetch failed) for
 * auth_jwt_error; the set stays. */
void auth_jwt_note_error(auth_jwt *v, const char *why);
/* Verifies a compact JWS access token at time `now` (Unix seconds).  On
 * AUTH_OK *out gets a new frozen principal (caller unrefs).  Otherwise
 * *reason (may be NULL) gets a static, client-safe sentence. */
auth_verdict auth_jwt_verify(auth_jwt *v, const auth_jwt_rules *rules, const char *token,
			     int64_t now, mcp_principal **out, const char **reason);

/* The reason auth_jwt_verify gives when the token's kid is not in the set:
 * the one refusal a fetched key set may cure (api/auth-keys.c). */
extern const char auth_reason_unknown_kid[];
/* The reason it gives when no key set is loaded yet. */
extern const char auth_reason_no_keys[];

/* base64url without padding, strictly (RFC 7515 section 2): the alphabet
 * only, no '=', no bits set past the last byte.  Returns a NUL-terminated
 * buffer (caller frees) and *out_len, or NULL. */
unsigned char *auth_b64url_decode(const char *s, size_t len, size_t *out_len);
/* Members of a JSON object text at its top level, counted in the text;
 * compared with what json-c kept, it exposes duplicate names (json-c keeps
 * only the last).  -1 when the text is not an object. */
long auth_json_top_members(const char *text, size_t len);

/* Frees n malloc'd strings and the array. */
void auth_strv_free(char **v, size_t n);

/* ---- resource identifiers (api/jwt/resource.c) ---------------------------- */

/* The length of "scheme://authority" of an absolute http(s) URI with no
 * userinfo and nothing a header cannot carry, in *origin_len: 1, or 0
 * when `uri` is not one. */
int auth_uri_origin(const char *uri, size_t *origin_len);
/* Whether `uri` may be a resource identifier (RFC 9728 section 1.2 and RFC
 * 8707): absolute http(s), a host, no fragment, no query. */
int auth_resource_uri_valid(const char *uri);
/* Whether an "aud" value names `resource`: equal after lowercasing scheme
 * and host, dropping a default port and one trailing '/'. */
int auth_audience_matches(const char *aud, const char *resource);

/* ---- a client assertion (api/jwt/sign.c) ---------------------------------- */

/* The JWS algorithm a PEM private key (text, NUL-terminated) signs with:
 * "ES256" for an EC key, "RS256" for an RSA key, NULL for anything else
 * or text that does not parse. */
const char *auth_pem_key_alg(const char *pem);
/* The compact JWS of `claims` (an object, borrowed) with the header
 * {"alg": auth_pem_key_alg(pem), "typ": "JWT"}, signed with the PEM key
 * (ES256 signatures as r || s, RFC 7518 section 3.4).  Returns a malloc'd
 * string the caller frees, or NULL (no memory, a key that does not parse
 * or cannot sign). */
char *auth_jws_sign_pem(const char *pem, json_object *claims);

#endif /* MCP_API_JWT_H */
