/*
 * auth.h - bearer-token authorization, private to the library: who a
 * request comes from (the principal) and the built-in JWT verifier over a
 * JWKS key set (both in api/jwt/jwt.h), and the pure helpers the HTTP layer calls to
 * speak OAuth 2.1 as a protected resource (api/auth-http.c).
 *
 * Nothing here touches a socket or libmicrohttpd: the HTTP transport calls
 * auth_http_admit() once per request and turns its answer into a status,
 * a WWW-Authenticate header and a body; everything else is testable alone.
 */
#ifndef MCP_API_AUTH_H
#define MCP_API_AUTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include <mcp/mcp.h>

/* The verdicts, the principal and the JWT verifier: api/jwt/ (a library
 * of its own, with every use of OpenSSL in libmcp). */
#include "api/jwt/jwt.h"

/* The HTTP status of a verdict (200 for AUTH_OK). */
int auth_verdict_status(auth_verdict v);
/* The RFC 6750 error code of a verdict, or NULL (AUTH_OK, AUTH_NO_TOKEN,
 * AUTH_SERVER_ERROR carry none). */
const char *auth_verdict_error(auth_verdict v);

/* ---- HTTP helpers (api/auth-http.c); pure functions -------------------- */

/* Extracts the token of an Authorization header value (NULL when there is
 * none): "Bearer" in any case, one space, a token68 (RFC 6750 section
 * 2.1).  AUTH_OK with *token and *len pointing into `header`; AUTH_NO_TOKEN
 * for no header or another scheme; AUTH_INVALID_REQUEST for a malformed
 * one, or one holding several credentials (several Authorization field
 * lines joined by commas). */
auth_verdict auth_bearer_token(const char *header, const char **token, size_t *len);
/* 1 when the query part of `url` (a request target, "/mcp?a=b") carries
 * an access_token parameter (RFC 6750 section 2.3, which MCP forbids). */
int auth_url_has_query_token(const char *url);

/* The metadata document's path for `resource` (RFC 9728 section 3.1):
 * "/.well-known/oauth-protected-resource" followed by the resource's path
 * when it has one.  Caller frees; NULL on bad input or no memory. */
char *auth_metadata_path(const char *resource);
/* The same as an absolute URL on the resource's origin (what
 * resource_metadata names).  Caller frees. */
char *auth_metadata_url(const char *resource);
/* Whether a request for `path` asks for the metadata: the root form, the
 * form suffixed with the resource's path, or with `endpoint` (the local
 * endpoint path, for a server behind a proxy that rewrites paths). */
int auth_is_metadata_path(const char *path, const char *resource, const char *endpoint);

/* The Protected Resource Metadata document (RFC 9728 section 2) as JSON
 * text (caller frees); NULL when out of memory. */
typedef struct auth_metadata {
	const char *resource;
	char *const *servers;      /* authorization_servers */
	size_t nservers;
	char *const *scopes;       /* scopes_supported */
	size_t nscopes;
	const char *name;          /* resource_name, or NULL */
	const char *documentation; /* resource_documentation, or NULL */
} auth_metadata;
char *auth_metadata_json(const auth_metadata *m);

/* A WWW-Authenticate value for a verdict (RFC 6750 section 3, RFC 9728
 * section 5.1): "Bearer", then error (when the verdict has one), scope
 * (the space-separated scopes; NULL or empty: left out), resource_metadata
 * (NULL: left out) and error_description (NULL: left out), each quoted,
 * with anything a quoted-string or RFC 6750 cannot carry dropped or
 * replaced, so no header can be split or forged.  Caller frees. */
char *auth_challenge(auth_verdict v, char *const *scopes, size_t nscopes,
		     const char *resource_metadata, const char *description);

/* JSON-RPC codes of refusals (also in mcp.h). */
/* The JSON-RPC error of a refusal with id null, as text (caller frees). */
char *auth_error_body(auth_verdict v, const char *description, char *const *scopes,
		      size_t nscopes);
/* The HTTP status an answer's JSON-RPC error calls for, or 0 to keep the
 * transport's usual one: MCP_JSONRPC_UNAUTHORIZED 401 (400 when its data
 * says invalid_request), MCP_JSONRPC_FORBIDDEN 403, MCP_JSONRPC_SERVER_BUSY
 * with data.retryAfterMs 429 and *retry_after_s (rounded up). */
int auth_http_status(int code, json_object *data, int *retry_after_s);

/* Splits a space-separated scope list into valid scope tokens (RFC 6749
 * section 3.3), distinct; MCP_EINVAL when one is not a scope token. */
int auth_scopes_parse(const char *text, char ***out, size_t *n);

/* ---- fetching over HTTP (api/auth-fetch.c) ------------------------------
 *
 * One bounded HTTP exchange with an authorization server, through libcurl
 * (transport/curl.h): https, or http to a loopback host only; no redirect
 * followed; the body at most max_bytes; the whole exchange at most
 * timeout_ms; `cancel` (may be NULL) checked every 100 ms. */
typedef struct auth_fetch {
	const char *url;
	const char *form;          /* a POST body (form-urlencoded), or NULL: GET */
	const char *user;          /* HTTP Basic, already form-urlencoded, or NULL */
	const char *password;
	size_t max_bytes;
	long timeout_ms;
	const _Atomic int *cancel;
	/* Filled by auth_fetch_run; auth_fetch_clear frees them. */
	long status;
	char *body;                /* NUL-terminated */
	size_t len;
	char *cache_control;       /* the Cache-Control lines joined, or NULL */
	char *expires, *date;      /* those headers, or NULL */
} auth_fetch;

/* MCP_OK once a response came (any status: check f->status); else
 * MCP_EINVAL (a URL refused), MCP_EBUSY (the body is larger than
 * max_bytes), MCP_ETIMEDOUT, MCP_ECANCELED, MCP_ESYS (the exchange
 * failed), MCP_ENOTSUP (no libcurl), MCP_ENOMEM; `why` says which, naming
 * the URL, never a credential. */
int auth_fetch_run(auth_fetch *f, char *why, size_t whysz);
void auth_fetch_clear(auth_fetch *f);
/* Whether `url` may be fetched: https, or http to 127.0.0.0/8, [::1] or
 * localhost; no user information in it. */
int auth_fetch_url_allowed(const char *url);
/* application/x-www-form-urlencoded (RFC 6749 appendix B) of s; caller frees. */
char *auth_form_encode(const char *s);

/* How long a fetched document may be used, in ms (RFC 9111): max-age of
 * Cache-Control (section 5.2.2.1), else Expires minus Date (or `now`, Unix
 * seconds) (section 5.3; an invalid Expires is already stale), else
 * `dflt_ms`; no-store and no-cache give 0; the result is then clamped to
 * [min_ms, max_ms].  Headers may be NULL. */
int64_t auth_cache_lifetime_ms(const char *cache_control, const char *expires, const char *date,
			       int64_t now, int64_t dflt_ms, int64_t min_ms, int64_t max_ms);

/* ---- the key set fetched from the issuer (api/auth-keys.c) -------------- */

typedef struct auth_keysrc auth_keysrc;

/* What the fetcher is told; every time in ms. */
typedef struct auth_keysrc_conf {
	const char *jwks_url;      /* NULL: discovered from the issuer */
	const char *issuer;        /* for discovery and its issuer check */
	int64_t miss_interval_ms;  /* least time between two fetches an unknown kid causes */
	int64_t miss_wait_ms;      /* how long a request waits for such a fetch */
	int64_t ttl_min_ms, ttl_max_ms, ttl_default_ms;
	long timeout_ms;           /* one HTTP exchange */
	mcp_auth_keys_fn notify;
	void *notify_user;
} auth_keysrc_conf;

/* Fetches the key set once now into `jwt` (strings of conf copied), then
 * starts the thread that refreshes it.  *out is made even when the first
 * fetch fails (the thread keeps trying); the return value is that fetch's:
 * MCP_OK, MCP_EINVAL (a bad URL, metadata or key set), MCP_ESYS and the
 * others of auth_fetch_run; auth_jwt_error says why. */
int auth_keysrc_start(auth_jwt *jwt, const auth_keysrc_conf *conf, auth_keysrc **out);
/* Stops and joins the thread (an exchange in flight is cut within 100 ms). */
void auth_keysrc_free(auth_keysrc *s);
/* A token named a kid not in the set (or there is no set yet): asks for a
 * fetch unless one began less than miss_interval_ms ago, and waits for it
 * at most miss_wait_ms.  1 when a fetch ended with a new set meanwhile (so
 * verify again), else 0 with *reason a static sentence for the client. */
int auth_keysrc_kid_miss(auth_keysrc *s, const char **reason);
/* How many fetches the thread made (for tests). */
unsigned long auth_keysrc_fetches(auth_keysrc *s);

/* ---- RFC 7662 token introspection (api/auth-introspect.c) -------------- */

typedef struct auth_introspect auth_introspect;

/* client_id and secret are copied; the secret is never logged nor shown. */
auth_introspect *auth_introspect_new(const char *url, const char *client_id,
				     const char *client_secret);
void auth_introspect_free(auth_introspect *ai);
/* Cache bounds: entries (1..1000000, default 10000) and the longest time
 * an answer is reused, in ms (0..86400000, default 60000; 0: no cache). */
void auth_introspect_set_cache(auth_introspect *ai, size_t max_entries, int64_t max_ttl_ms);
/* Asks the endpoint about `token` (or answers from the cache) at `now`
 * (Unix seconds); an active answer is reused until the token's exp plus
 * `skew_s` (as long as the caller's expiry check would take it), at most
 * the cache's max TTL.  AUTH_OK with *out (a frozen principal; caller unrefs);
 * AUTH_INVALID_TOKEN when inactive or issued by another issuer (`issuer`
 * non-NULL); AUTH_SERVER_ERROR when the endpoint could not answer.
 * *reason: a static sentence. */
auth_verdict auth_introspect_verify(auth_introspect *ai, const char *token, const char *issuer,
				    int64_t now, int64_t skew_s, mcp_principal **out,
				    const char **reason);
/* Exchanges made with the endpoint (for tests). */
unsigned long auth_introspect_requests(auth_introspect *ai);

#endif /* MCP_API_AUTH_H */
