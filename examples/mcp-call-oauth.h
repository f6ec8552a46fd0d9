/* mcp-call-oauth.h - mcp-call's OAuth options (examples/mcp-call-oauth.c). */
#ifndef MCP_CALL_OAUTH_H
#define MCP_CALL_OAUTH_H

#include <mcp/client.h>

typedef struct mcp_call_oauth_opts {
	const char *client_id;   /* --client-id: an id, or the https URL of a metadata document */
	const char *secret_file; /* --client-secret-file */
	const char *key_file;    /* --client-key: PEM, for private_key_jwt */
	const char *scope;       /* --scope */
	int client_credentials;  /* --client-credentials */
} mcp_call_oauth_opts;

/* OAuth on `c`; -1 after saying why on standard error. */
int mcp_call_oauth_setup(mcp_client *c, const mcp_call_oauth_opts *o);
/* --logout: forgets the tokens kept for `url`.  0, or 1 after saying why. */
int mcp_call_oauth_logout(const char *url);

#endif
