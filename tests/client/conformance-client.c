/*
 * conformance-client.c - the client the official conformance suite drives
 * (`conformance client --command 'conformance-client' --scenario S`): it
 * gets the server's URL as its last argument and the scenario in
 * MCP_CONFORMANCE_SCENARIO, and does what the scenario expects of a client,
 * through libmcp's client API only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/client.h>

#include "conformance-auth.h"

/* Accepts every elicitation, filling each field with its schema's default
 * (SEP-1034: a client applies the defaults the user left alone). */
static int accept_defaults(mcp_client *c, const char *method, json_object *params,
			   mcp_token *tok, json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)tok;
	(void)user;
	json_object *schema = NULL, *props = NULL;
	json_object_object_get_ex(params, "requestedSchema", &schema);
	json_object_object_get_ex(schema, "properties", &props);
	json_object *content = json_object_new_object();
	json_object_object_foreach(props, key, prop)
	{
		json_object *def = NULL;
		if (json_object_object_get_ex(prop, "default", &def))
			json_object_object_add(content, key, json_object_get(def));
	}
	json_object *r = json_object_new_object();
	json_object_object_add(r, "action", json_object_new_string("accept"));
	json_object_object_add(r, "content", content);
	*result = r;
	return MCP_OK;
}

static int fail(mcp_client *c, const char *what, int rc)
{
	fprintf(stderr, "conformance-client: %s: %s (%s)\n", what, mcp_strerror(rc),
		mcp_client_error(c));
	mcp_client_free(c);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: conformance-client URL\n");
		return 2;
	}
	const char *url = argv[argc - 1];
	const char *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
	const char *version = getenv("MCP_CONFORMANCE_PROTOCOL_VERSION");
	if (!scenario)
		scenario = "initialize";
	mcp_client *c = mcp_client_new("libmcp-conformance-client", "0.1.0");
	/* The lifecycle follows the revision asked for: dated revisions up
	 * to 2025-11-25 initialize, 2026-07-28 is stateless. */
	if (version && mcp_client_set_protocol_version(c, version) != MCP_OK)
		version = NULL;
	if (!version)
		mcp_client_set_era(c, strcmp(scenario, "request-metadata") == 0 ? MCP_ERA_MODERN
										 : MCP_ERA_LEGACY);
	mcp_client_set_elicitation_handler(c, accept_defaults, NULL, MCP_ELICIT_FORM);
	if (conformance_auth_setup(c, scenario) != MCP_OK)
		return fail(c, "OAuth settings", MCP_EINVAL);
	int rc = mcp_client_connect_http(c, url);
	if (rc != MCP_OK)
		return fail(c, "connect", rc);
	json_object *tools = NULL;
	rc = mcp_client_list_tools(c, 20000, NULL, &tools);
	if (rc != MCP_OK)
		return fail(c, "tools/list", rc);
	/* Every scenario's tools are called: add_numbers with numbers, the
	 * others without arguments. */
	for (size_t i = 0; i < json_object_array_length(tools); i++) {
		json_object *t = json_object_array_get_idx(tools, i), *name = NULL;
		json_object_object_get_ex(t, "name", &name);
		const char *n = json_object_get_string(name);
		json_object *args = strcmp(n, "add_numbers") == 0
					    ? json_tokener_parse("{\"a\":5,\"b\":3}")
					    : json_object_new_object();
		json_object *res = NULL;
		rc = mcp_client_call_tool(c, n, args, 20000, NULL, &res);
		json_object_put(args);
		if (rc != MCP_OK) {
			json_object_put(res);
			json_object_put(tools);
			return fail(c, n, rc);
		}
		printf("%s: %s\n", n, json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
		json_object_put(res);
	}
	json_object_put(tools);
	mcp_client_free(c);
	return 0;
}
