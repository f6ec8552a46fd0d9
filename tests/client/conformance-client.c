/*
 * conformance-client.c - the client the official conformance suite drives
 * (`conformance client --command 'conformance-client' --scenario S`): it
 * gets the server's URL as its last argument, the scenario in
 * MCP_CONFORMANCE_SCENARIO, the revision in
 * MCP_CONFORMANCE_PROTOCOL_VERSION and the scenario's data in
 * MCP_CONFORMANCE_CONTEXT, and does what the scenario expects of a
 * client, through libmcp's client API only.
 *
 * What each scenario asks of it:
 * - a context with "toolCalls" (http-custom-headers): tools/list, then
 *   exactly those calls with those arguments, so that the headers the
 *   library mirrors from them (SEP-2243) can be checked;
 * - json-schema-2020-12-preservation: tools/list, then json_schema_echo
 *   called with the inputSchema the library handed over for
 *   json_schema_2020_12_tool, to show nothing of it was lost;
 * - sep-2640-client-*: skills/list as a host does; then, except in
 *   sep-2640-client-no-prefetch (where the host never needs a skill), the
 *   first skill is loaded: its SKILL.md read and verified by the library,
 *   and only when it passed, its other files (the need the skill creates);
 *   a refused SKILL.md is named and the skill left unloaded;
 * - every other scenario: tools/list and each listed tool called
 *   (add_numbers with numbers, the others without arguments); the tools
 *   the library excluded (an invalid x-mcp-header) are not called.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/client.h>

#include "conformance-auth.h"

#define CALL_TIMEOUT_MS 20000

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

static int fail(mcp_client *c, const char *what, int rc, const char *why)
{
	fprintf(stderr, "conformance-client: %s: %s (%s)\n", what, mcp_strerror(rc),
		why && *why ? why : mcp_client_error(c));
	mcp_client_free(c);
	return 1;
}

/* Calls one tool through a call handle, so that a failure names its own
 * reason (mcp_call_error), and prints the result.  MCP_OK or the code. */
static int call_tool(mcp_client *c, const char *name, json_object *args, char *why,
		     size_t whysz)
{
	mcp_call *call = mcp_call_new_tool(c, name, args);
	if (!call) {
		snprintf(why, whysz, "cannot make the call");
		return MCP_ENOMEM;
	}
	json_object *res = NULL;
	int rc = mcp_call_start(call);
	if (rc == MCP_OK)
		rc = mcp_call_wait(call, CALL_TIMEOUT_MS, &res);
	if (rc == MCP_OK)
		printf("%s: %s\n", name, json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
	else
		snprintf(why, whysz, "%s", mcp_call_error(call));
	json_object_put(res);
	mcp_call_free(call);
	return rc;
}

/* The listed tool called `name`, or NULL (borrowed from `tools`). */
static json_object *find_tool(json_object *tools, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(tools); i++) {
		json_object *t = json_object_array_get_idx(tools, i), *n = NULL;
		if (json_object_object_get_ex(t, "name", &n) &&
		    strcmp(json_object_get_string(n), name) == 0)
			return t;
	}
	return NULL;
}

/* A host of the Skills extension: lists, and loads the first skill
 * unless `load` is 0.  0, or 1 when the listing failed. */
static int skills_host(mcp_client *c, int load)
{
	json_object *skills = NULL;
	int rc = mcp_client_list_skills(c, CALL_TIMEOUT_MS, NULL, &skills);
	if (rc != MCP_OK) {
		fprintf(stderr, "conformance-client: skills/list: %s (%s)\n", mcp_strerror(rc),
			mcp_client_error(c));
		json_object_put(skills);
		return 1;
	}
	printf("skills/list: %zu skill(s)\n", json_object_array_length(skills));
	json_object *entry = json_object_array_length(skills) ? json_object_array_get_idx(skills, 0)
							       : NULL;
	if (load && entry) {
		char why[400], *md = NULL;
		size_t len = 0;
		rc = mcp_client_read_skill_file(c, entry, NULL, CALL_TIMEOUT_MS, NULL, &md, &len,
						why, sizeof why);
		if (rc != MCP_OK) {
			fprintf(stderr, "conformance-client: skill not loaded: %s\n", why);
		} else {
			printf("SKILL.md verified (%zu bytes)\n", len);
			free(md);
			json_object *files = NULL;
			json_object_object_get_ex(entry, "resources", &files);
			json_object *self = NULL;
			json_object_object_get_ex(entry, "uri", &self);
			for (size_t i = 0; i < json_object_array_length(files); i++) {
				json_object *u = NULL;
				json_object_object_get_ex(json_object_array_get_idx(files, i), "uri",
							  &u);
				const char *uri = json_object_get_string(u);
				if (!uri || strcmp(uri, json_object_get_string(self)) == 0)
					continue;
				char *body = NULL;
				rc = mcp_client_read_skill_file(c, entry, uri, CALL_TIMEOUT_MS, NULL,
								&body, &len, why, sizeof why);
				if (rc == MCP_OK)
					printf("%s verified (%zu bytes)\n", uri, len);
				else
					fprintf(stderr, "conformance-client: %s\n", why);
				free(body);
			}
		}
	}
	json_object_put(skills);
	return 0;
}

/* The arguments for a listed tool when the scenario names none. */
static json_object *default_args(json_object *tools, const char *name)
{
	if (strcmp(name, "add_numbers") == 0)
		return json_tokener_parse("{\"a\":5,\"b\":3}");
	json_object *args = json_object_new_object();
	if (strcmp(name, "json_schema_echo") == 0) {
		/* Handed back exactly as the library gave it. */
		json_object *focal = find_tool(tools, "json_schema_2020_12_tool"), *schema = NULL;
		if (json_object_object_get_ex(focal, "inputSchema", &schema))
			json_object_object_add(args, "schema", json_object_get(schema));
	}
	return args;
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
	const char *context = getenv("MCP_CONFORMANCE_CONTEXT");
	if (!scenario)
		scenario = "initialize";
	mcp_client *c = mcp_client_new("libmcp-conformance-client", "0.1.0");
	if (!c)
		return 1;
	/* The lifecycle follows the revision asked for: dated revisions up
	 * to 2025-11-25 initialize, 2026-07-28 is stateless. */
	if (version && *version && mcp_client_set_protocol_version(c, version) != MCP_OK)
		version = NULL;
	if (!version || !*version)
		mcp_client_set_era(c, strcmp(scenario, "request-metadata") == 0 ? MCP_ERA_MODERN
										 : MCP_ERA_LEGACY);
	mcp_client_set_elicitation_handler(c, accept_defaults, NULL, MCP_ELICIT_FORM);
	if (conformance_auth_setup(c, scenario) != MCP_OK)
		return fail(c, "OAuth settings", MCP_EINVAL, NULL);
	int rc = mcp_client_connect_http(c, url);
	if (rc != MCP_OK)
		return fail(c, "connect", rc, NULL);
	if (strncmp(scenario, "sep-2640-client-", 16) == 0) {
		rc = skills_host(c, strcmp(scenario, "sep-2640-client-no-prefetch") != 0);
		mcp_client_free(c);
		return rc;
	}
	json_object *tools = NULL;
	rc = mcp_client_list_tools(c, CALL_TIMEOUT_MS, NULL, &tools);
	if (rc != MCP_OK) {
		/* On MCP_EREMOTE `tools` is the server's error: name it. */
		char err[300] = "";
		if (tools)
			snprintf(err, sizeof err, "%s",
				 json_object_to_json_string_ext(tools, JSON_C_TO_STRING_PLAIN));
		json_object_put(tools);
		return fail(c, "tools/list", rc, err);
	}
	/* The SHOULD of SEP-2243: a warning for each tool left out. */
	char reason[300];
	uint64_t rejected = mcp_client_tools_rejected(c, reason, sizeof reason);
	if (rejected)
		fprintf(stderr, "conformance-client: %llu tool(s) excluded; the last: %s\n",
			(unsigned long long)rejected, reason);

	json_object *ctx = context && *context ? json_tokener_parse(context) : NULL;
	json_object *planned = NULL;
	json_object_object_get_ex(ctx, "toolCalls", &planned);
	size_t n = json_object_is_type(planned, json_type_array) ? json_object_array_length(planned)
								  : json_object_array_length(tools);
	char why[700];
	for (size_t i = 0; i < n && rc == MCP_OK; i++) {
		json_object *spec = planned ? json_object_array_get_idx(planned, i)
					    : json_object_array_get_idx(tools, i);
		json_object *name = NULL, *args = NULL;
		json_object_object_get_ex(spec, "name", &name);
		const char *tool = json_object_get_string(name);
		if (!tool)
			continue;
		if (planned && json_object_object_get_ex(spec, "arguments", &args))
			args = json_object_get(args);
		else
			args = default_args(tools, tool);
		why[0] = 0;
		rc = call_tool(c, tool, args, why, sizeof why);
		json_object_put(args);
		if (rc != MCP_OK) {
			char what[200];
			snprintf(what, sizeof what, "%s", tool);
			json_object_put(ctx);
			json_object_put(tools);
			return fail(c, what, rc, why);
		}
	}
	json_object_put(ctx);
	json_object_put(tools);
	mcp_client_free(c);
	return 0;
}
