/*
 * conformance-auth.c - the auth scenarios (auth/...) of the conformance client:
 * OAuth settings from MCP_CONFORMANCE_CONTEXT, and a headless "browser"
 * that plays the person.  The suite's authorization server redirects at
 * once, so authorizing is a GET of the URL that does not follow the
 * redirect: the Location it answers is the redirect the client waits for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <mcp/client.h>

#include "conformance-auth.h"

#define CIMD_URL "https://conformance-test.local/client-metadata.json"
#define REDIRECT "http://localhost:3000/callback"

static int browse(mcp_client *c, const char *url, const char *redirect_uri, mcp_token *tok,
		  char **redirect_out, void *user)
{
	(void)c;
	(void)redirect_uri;
	(void)user;
	if (mcp_token_reason(tok) != MCP_CANCEL_NONE)
		return MCP_ECANCELED;
	CURL *e = curl_easy_init();
	if (!e)
		return MCP_ENOMEM;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_NOBODY, 0L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fwrite);
	FILE *null = fopen("/dev/null", "w");
	curl_easy_setopt(e, CURLOPT_WRITEDATA, null);
	CURLcode res = curl_easy_perform(e);
	char *loc = NULL;
	long code = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &loc);
	int rc = MCP_EREMOTE;
	if (res == CURLE_OK && code >= 300 && code < 400 && loc) {
		*redirect_out = strdup(loc);
		rc = *redirect_out ? MCP_OK : MCP_ENOMEM;
	} else {
		fprintf(stderr, "conformance-auth: the authorization endpoint answered HTTP %ld "
				"without a redirect\n",
			code);
	}
	curl_easy_cleanup(e);
	if (null)
		fclose(null);
	return rc;
}

static const char *ctx_str(json_object *ctx, const char *k)
{
	json_object *v = NULL;
	return json_object_object_get_ex(ctx, k, &v) ? json_object_get_string(v) : NULL;
}

int conformance_auth_setup(mcp_client *c, const char *scenario)
{
	if (strncmp(scenario, "auth/", 5) != 0)
		return 0;
	const char *raw = getenv("MCP_CONFORMANCE_CONTEXT");
	json_object *ctx = raw ? json_tokener_parse(raw) : NULL;
	int rc;
	if (strncmp(scenario, "auth/client-credentials-", 24) == 0) {
		int jwt = strcmp(scenario, "auth/client-credentials-jwt") == 0;
		rc = mcp_client_set_oauth(c, MCP_OAUTH_CLIENT_CREDENTIALS, NULL, NULL);
		if (rc == MCP_OK)
			rc = mcp_client_set_oauth_client(
				c, ctx_str(ctx, "client_id"), jwt ? NULL : ctx_str(ctx, "client_secret"),
				jwt ? MCP_OAUTH_AUTH_PRIVATE_KEY_JWT : MCP_OAUTH_AUTH_SECRET_BASIC);
		if (rc == MCP_OK && jwt)
			rc = mcp_client_set_oauth_private_key(c, ctx_str(ctx, "private_key_pem"));
	} else {
		rc = mcp_client_set_oauth(c, MCP_OAUTH_AUTHORIZATION_CODE, browse, NULL);
		if (rc == MCP_OK)
			rc = mcp_client_set_oauth_redirect_uri(c, REDIRECT);
		/* Pre-registered where the context gives a client; else a
		 * client ID metadata document, registered when the server
		 * supports none. */
		if (rc == MCP_OK)
			rc = ctx_str(ctx, "client_id")
				     ? mcp_client_set_oauth_client(c, ctx_str(ctx, "client_id"),
								   ctx_str(ctx, "client_secret"),
								   MCP_OAUTH_AUTH_AUTO)
				     : mcp_client_set_oauth_client(c, CIMD_URL, NULL, MCP_OAUTH_AUTH_AUTO);
	}
	json_object_put(ctx);
	if (rc != MCP_OK)
		fprintf(stderr, "conformance-auth: %s: %s\n", scenario, mcp_strerror(rc));
	return rc;
}
