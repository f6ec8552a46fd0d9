/*
 * client-oauth.h - the client's OAuth 2.1 (api/client-oauth.c), private to
 * the library: the settings kept on an mcp_client, the hooks the HTTP
 * transport calls, and the checks the unit tests forge input for.
 */
#ifndef MCP_API_CLIENT_OAUTH_H
#define MCP_API_CLIENT_OAUTH_H

#include <stddef.h>

#include "mcp/client.h"

typedef struct client_oauth client_oauth;

/* The settings behind mcp_client_set_oauth*() (api/client.c checks that
 * the client is not connected yet): *slot is made on first use.  The
 * public functions' arguments and results. */
int client_oauth_set(client_oauth **slot, mcp_oauth_grant grant, mcp_oauth_authorize_fn authorize,
		     void *user);
int client_oauth_set_client(client_oauth **slot, const char *client_id, const char *secret,
			    mcp_oauth_auth_method method);
int client_oauth_set_private_key(client_oauth **slot, const char *pem);
int client_oauth_set_signer(client_oauth **slot, mcp_oauth_sign_fn sign, void *user);
int client_oauth_set_scopes(client_oauth **slot, const char *scopes);
int client_oauth_set_redirect_uri(client_oauth **slot, const char *uri);
int client_oauth_set_store(client_oauth **slot, mcp_oauth_load_fn load, mcp_oauth_save_fn save,
			   void *user);

void client_oauth_free(client_oauth *o);

#ifdef HAVE_CURL
struct tp_httpc;
/* Puts `o` in front of the connection `http` to `url` (the resource):
 * loads the stored record and installs the transport's auth hooks.
 * The connecting thread.  0, or -1 with the reason in err[errsz]. */
int client_oauth_attach(client_oauth *o, mcp_client *c, struct tp_httpc *http, const char *url,
			char *err, size_t errsz);
#endif

/* ---- checks, without I/O (tests/unit/test_oauth.c) ---- */

/* The S256 code challenge of `verifier` (RFC 7636 4.2): base64url of its
 * SHA-256, 43 characters and a NUL in out[44]. */
void coauth_pkce_challenge(const char *verifier, char out[44]);
/* A fresh code verifier (43 characters of base64url) in out[44]. */
void coauth_pkce_verifier(char out[44]);
/* The authorization response `redirect` (the full URL) against the
 * request: its state must equal `state`; its iss must equal `issuer` when
 * the server advertises iss (`iss_supported`) or sends one anyway
 * (RFC 9207, SEP-2468); an error response is a refusal.  0 with the code
 * in *code (malloc'd), or -1 with the reason in why[whysz]. */
int coauth_check_redirect(const char *redirect, const char *state, const char *issuer,
			  int iss_supported, char **code, char *why, size_t whysz);
/* The protected-resource metadata's `resource` against the server's URL:
 * the same origin, and the URL's path at or under the resource's
 * (RFC 9728 3.3).  0, or -1 with the reason. */
int coauth_check_resource(const char *resource, const char *server_url, char *why, size_t whysz);
/* The authorization-server metadata's `issuer` against the issuer it was
 * fetched for: equal as strings (RFC 8414 3.3).  0, or -1 with the reason. */
int coauth_check_issuer(const char *got, const char *expected, char *why, size_t whysz);
/* The value of auth-param `name` in a WWW-Authenticate value (quotes
 * removed) in out[outsz]; 1 when present, else 0. */
int coauth_www_param(const char *www, const char *name, char *out, size_t outsz);
/* 1 when `url` may carry OAuth traffic: https, or http to a loopback host. */
int coauth_url_allowed(const char *url);

#endif /* MCP_API_CLIENT_OAUTH_H */
