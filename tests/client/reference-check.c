/*
 * reference-check.c - libmcp's client against a server not written here:
 * every tool, resource, resource template and prompt the reference server
 * (@modelcontextprotocol/server-everything) offers, each called and its
 * answer asserted.  Run by tests/client/run.sh (make check-client):
 *
 *   reference-check --stdio NODE SCRIPT stdio
 *   reference-check --http URL
 *
 * The client declares sampling, elicitation (form and URL) and roots, so
 * the server also offers the tools that need them; the handlers answer
 * with fixed values the assertions look for.  A tool the table does not
 * know is called with {} and must succeed without isError: a new tool in
 * a newer release is exercised, not skipped.  Prints one line per item
 * and a summary; exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mcp/client.h>

static int checked, failed;
static int tools_n, tools_ok, res_n, res_ok, prompts_n, prompts_ok;
static int sampled, elicited, progress_seen;

static void verdict(int ok, int *n, int *good, const char *kind, const char *name,
		    const char *why)
{
	checked++;
	(*n)++;
	if (ok)
		(*good)++;
	else
		failed++;
	printf("%s %s %s%s%s\n", ok ? "ok  " : "FAIL", kind, name, why && !ok ? ": " : "",
	       why && !ok ? why : "");
}

static const char *text_of(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* The content blocks of a result, and how many have type `type`. */
static int count_type(json_object *res, const char *type)
{
	json_object *content = NULL;
	json_object_object_get_ex(res, "content", &content);
	int n = 0;
	for (size_t i = 0; json_object_is_type(content, json_type_array) &&
			   i < json_object_array_length(content);
	     i++) {
		json_object *t = NULL;
		json_object_object_get_ex(json_object_array_get_idx(content, i), "type", &t);
		if (t && strcmp(json_object_get_string(t), type) == 0)
			n++;
	}
	return n;
}

static int sampling(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
		    json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)params;
	(void)tok;
	(void)user;
	sampled++;
	*result = json_tokener_parse("{\"role\":\"assistant\",\"model\":\"reference-check\","
				     "\"stopReason\":\"endTurn\","
				     "\"content\":{\"type\":\"text\",\"text\":\"SAMPLED-42\"}}");
	return MCP_OK;
}

/* Accepts: a form with every field given (its default, or a value of its
 * type), a URL as opened. */
static int elicitation(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
		       json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)tok;
	(void)user;
	elicited++;
	json_object *mode = NULL, *schema = NULL, *props = NULL;
	json_object_object_get_ex(params, "mode", &mode);
	json_object *r = json_object_new_object();
	json_object_object_add(r, "action", json_object_new_string("accept"));
	if (mode && strcmp(json_object_get_string(mode), "url") == 0) {
		*result = r;
		return MCP_OK;
	}
	json_object_object_get_ex(params, "requestedSchema", &schema);
	json_object_object_get_ex(schema, "properties", &props);
	json_object *content = json_object_new_object();
	json_object_object_foreach(props, key, prop)
	{
		json_object *def = NULL, *type = NULL, *en = NULL, *fmt = NULL;
		json_object_object_get_ex(prop, "type", &type);
		json_object_object_get_ex(prop, "format", &fmt);
		const char *t = type ? json_object_get_string(type) : "string";
		if (json_object_object_get_ex(prop, "default", &def)) {
			json_object_object_add(content, key, json_object_get(def));
		} else if (json_object_object_get_ex(prop, "enum", &en) &&
			   json_object_array_length(en) > 0) {
			json_object_object_add(content, key,
					       json_object_get(json_object_array_get_idx(en, 0)));
		} else if (strcmp(t, "boolean") == 0) {
			json_object_object_add(content, key, json_object_new_boolean(1));
		} else if (strcmp(t, "integer") == 0 || strcmp(t, "number") == 0) {
			json_object_object_add(content, key, json_object_new_int(7));
		} else if (strcmp(t, "array") == 0) {
			json_object_object_add(content, key, json_object_new_array());
		} else {
			const char *f = fmt ? json_object_get_string(fmt) : "";
			json_object_object_add(content, key,
					       json_object_new_string(
						       strcmp(f, "email") == 0 ? "check@example.com"
						       : strcmp(f, "uri") == 0 ? "https://example.com/"
						       : strcmp(f, "date") == 0 ? "2026-01-02"
						       : strcmp(f, "date-time") == 0
							       ? "2026-01-02T03:04:05Z"
							       : "ELICITED"));
		}
	}
	json_object_object_add(r, "content", content);
	*result = r;
	return MCP_OK;
}

static void on_progress(mcp_call *call, double progress, double total, const char *message,
			void *user)
{
	(void)call;
	(void)progress;
	(void)total;
	(void)message;
	(void)user;
	progress_seen++;
}

/* ---- tools ------------------------------------------------------------------- */

typedef struct tool_case {
	const char *name;
	const char *args;
	/* Returns NULL when the result is right, else what is wrong. */
	const char *(*check)(json_object *res);
} tool_case;

static const char *has_text(json_object *res, const char *needle)
{
	return strstr(text_of(res), needle) ? NULL : "the expected text is missing";
}
static const char *ck_echo(json_object *r) { return has_text(r, "hello reference"); }
static const char *ck_sum(json_object *r) { return has_text(r, "is 5"); }
static const char *ck_any_text(json_object *r)
{
	return count_type(r, "text") > 0 ? NULL : "no text block";
}
static const char *ck_annotated(json_object *r)
{
	if (count_type(r, "image") < 1)
		return "no image block";
	return strstr(text_of(r), "\"annotations\"") ? NULL : "no annotations";
}
static const char *ck_links(json_object *r)
{
	return count_type(r, "resource_link") == 3 ? NULL : "not 3 resource_link blocks";
}
static const char *ck_reference(json_object *r)
{
	return count_type(r, "resource") == 1 ? NULL : "no embedded resource";
}
static const char *ck_structured(json_object *r)
{
	json_object *s = NULL;
	return json_object_object_get_ex(r, "structuredContent", &s) &&
			       json_object_is_type(s, json_type_object)
		       ? NULL
		       : "no structuredContent";
}
static const char *ck_image(json_object *r)
{
	return count_type(r, "image") == 1 ? NULL : "no image block";
}
static const char *ck_gzip(json_object *r)
{
	return count_type(r, "resource_link") + count_type(r, "resource") > 0
		       ? NULL
		       : "no resource for the gzip file";
}
static const char *ck_long(json_object *r)
{
	if (progress_seen < 3)
		return "fewer than 3 progress notifications reached the call";
	return ck_any_text(r);
}
static const char *ck_sampling(json_object *r) { return has_text(r, "SAMPLED-42"); }
static const char *ck_elicit(json_object *r)
{
	return strstr(text_of(r), "accept") || strstr(text_of(r), "ELICITED")
		       ? NULL
		       : "the elicitation answer is not in the result";
}
static const char *ck_roots(json_object *r) { return has_text(r, "file:///tmp/reference-root"); }

static const tool_case tool_cases[] = {
	{ "echo", "{\"message\":\"hello reference\"}", ck_echo },
	{ "get-sum", "{\"a\":2,\"b\":3}", ck_sum },
	{ "get-env", "{}", ck_any_text },
	{ "get-annotated-message", "{\"messageType\":\"error\",\"includeImage\":true}", ck_annotated },
	{ "get-resource-links", "{\"count\":3}", ck_links },
	{ "get-resource-reference", "{\"resourceType\":\"Text\",\"resourceId\":1}", ck_reference },
	{ "get-structured-content", "{\"location\":\"Chicago\"}", ck_structured },
	{ "get-tiny-image", "{}", ck_image },
	{ "gzip-file-as-resource",
	  "{\"name\":\"hello.txt.gz\",\"data\":\"data:text/plain;base64,aGVsbG8gcmVmZXJlbmNl\"}",
	  ck_gzip },
	{ "toggle-simulated-logging", "{}", ck_any_text },
	{ "toggle-subscriber-updates", "{}", ck_any_text },
	{ "trigger-long-running-operation", "{\"duration\":1,\"steps\":4}", ck_long },
	{ "simulate-research-query", "{\"topic\":\"libmcp\"}", ck_any_text },
	{ "trigger-sampling-request", "{\"prompt\":\"Say the magic number\",\"maxTokens\":10}",
	  ck_sampling },
	{ "trigger-elicitation-request", "{}", ck_elicit },
	{ "trigger-url-elicitation",
	  "{\"url\":\"https://example.com/verify\",\"message\":\"Open it\",\"elicitationId\":\"e-1\"}",
	  ck_any_text },
	{ "get-roots-list", "{}", ck_roots },
};

/* A tool that must run as a task (2025-11-25 tasks): tools/call with a
 * task, tasks/get until it ends, then tasks/result, all through the
 * client's generic request (the client API has no task helpers). */
static const char *run_as_task(mcp_client *c, const char *name, json_object *args)
{
	static char why[512];
	json_object *p = json_object_new_object(), *task = json_object_new_object(), *res = NULL;
	json_object_object_add(p, "name", json_object_new_string(name));
	json_object_object_add(p, "arguments", json_object_get(args));
	json_object_object_add(task, "ttl", json_object_new_int(60000));
	json_object_object_add(p, "task", task);
	int rc = mcp_client_request(c, "tools/call", p, 20000, NULL, &res);
	json_object_put(p);
	json_object *t = NULL, *id = NULL;
	json_object_object_get_ex(res, "task", &t);
	json_object_object_get_ex(t, "taskId", &id);
	if (rc != MCP_OK || !id) {
		snprintf(why, sizeof why, "no task created: %s %s", mcp_strerror(rc), text_of(res));
		json_object_put(res);
		return why;
	}
	char tid[256];
	snprintf(tid, sizeof tid, "%s", json_object_get_string(id));
	json_object_put(res);
	const char *status = "working";
	for (int k = 0; k < 600; k++) {
		json_object *q = json_object_new_object(), *st = NULL;
		json_object_object_add(q, "taskId", json_object_new_string(tid));
		res = NULL;
		rc = mcp_client_request(c, "tasks/get", q, 20000, NULL, &res);
		json_object_put(q);
		json_object_object_get_ex(res, "status", &st);
		static char sbuf[64];
		snprintf(sbuf, sizeof sbuf, "%s", st ? json_object_get_string(st) : "?");
		status = sbuf;
		json_object_put(res);
		if (rc != MCP_OK || strcmp(status, "working") != 0)
			break;
		struct timespec ts = { 0, 100 * 1000000 };
		nanosleep(&ts, NULL);
	}
	if (strcmp(status, "completed") != 0) {
		snprintf(why, sizeof why, "the task ended %s", status);
		return why;
	}
	json_object *q = json_object_new_object();
	json_object_object_add(q, "taskId", json_object_new_string(tid));
	res = NULL;
	rc = mcp_client_request(c, "tasks/result", q, 20000, NULL, &res);
	json_object_put(q);
	const char *w = rc != MCP_OK ? "tasks/result failed" : ck_any_text(res);
	if (w)
		snprintf(why, sizeof why, "%s: %s", w, text_of(res));
	json_object_put(res);
	return w ? why : NULL;
}

static void check_tools(mcp_client *c)
{
	json_object *tools = NULL;
	int rc = mcp_client_list_tools(c, 20000, NULL, &tools);
	verdict(rc == MCP_OK && json_object_array_length(tools) >= 10, &tools_n, &tools_ok, "list",
		"tools/list", mcp_strerror(rc));
	for (size_t i = 0; rc == MCP_OK && i < json_object_array_length(tools); i++) {
		json_object *name = NULL;
		json_object_object_get_ex(json_object_array_get_idx(tools, i), "name", &name);
		const char *n = json_object_get_string(name);
		const tool_case *tc = NULL;
		for (size_t k = 0; k < sizeof tool_cases / sizeof *tool_cases; k++)
			if (strcmp(tool_cases[k].name, n) == 0)
				tc = &tool_cases[k];
		json_object *args = json_tokener_parse(tc ? tc->args : "{}");
		json_object *exec = NULL, *ts = NULL;
		json_object_object_get_ex(json_object_array_get_idx(tools, i), "execution", &exec);
		json_object_object_get_ex(exec, "taskSupport", &ts);
		if (ts && strcmp(json_object_get_string(ts), "required") == 0) {
			const char *why = run_as_task(c, n, args);
			verdict(!why, &tools_n, &tools_ok, "tool (as a task)", n, why);
			json_object_put(args);
			continue;
		}
		mcp_call *call = mcp_call_new_tool(c, n, args);
		mcp_call_set_progress(call, on_progress, NULL);
		progress_seen = 0;
		json_object *res = NULL;
		int crc = mcp_call_start(call);
		if (crc == MCP_OK)
			crc = mcp_call_wait(call, 60000, &res);
		const char *why = crc != MCP_OK ? mcp_call_error(call) : NULL;
		json_object *ie = NULL;
		if (!why && json_object_object_get_ex(res, "isError", &ie) && json_object_get_boolean(ie))
			why = text_of(res);
		if (!why && tc)
			why = tc->check(res);
		verdict(!why, &tools_n, &tools_ok, "tool", n, why);
		json_object_put(res);
		json_object_put(args);
		mcp_call_free(call);
	}
	json_object_put(tools);
}

/* ---- resources -------------------------------------------------------------- */

static void read_one(mcp_client *c, const char *uri, const char *kind)
{
	json_object *res = NULL, *contents = NULL, *u = NULL, *text = NULL, *blob = NULL;
	int rc = mcp_client_read_resource(c, uri, 20000, NULL, &res);
	const char *why = rc != MCP_OK ? mcp_strerror(rc) : NULL;
	json_object_object_get_ex(res, "contents", &contents);
	json_object *first = json_object_is_type(contents, json_type_array) &&
					     json_object_array_length(contents) > 0
				     ? json_object_array_get_idx(contents, 0)
				     : NULL;
	json_object_object_get_ex(first, "uri", &u);
	json_object_object_get_ex(first, "text", &text);
	json_object_object_get_ex(first, "blob", &blob);
	if (!why && (!u || strcmp(json_object_get_string(u), uri) != 0))
		why = "contents[0].uri is not the URI read";
	if (!why && !(text && json_object_get_string_len(text) > 0) &&
	    !(blob && json_object_get_string_len(blob) > 0))
		why = "neither text nor blob";
	verdict(!why, &res_n, &res_ok, kind, uri, why);
	json_object_put(res);
}

static void check_resources(mcp_client *c, int legacy)
{
	json_object *list = NULL;
	int rc = mcp_client_list_resources(c, 20000, NULL, &list);
	verdict(rc == MCP_OK && json_object_array_length(list) > 0, &res_n, &res_ok, "list",
		"resources/list", mcp_strerror(rc));
	for (size_t i = 0; rc == MCP_OK && i < json_object_array_length(list); i++) {
		json_object *uri = NULL;
		json_object_object_get_ex(json_object_array_get_idx(list, i), "uri", &uri);
		read_one(c, json_object_get_string(uri), "resource");
	}
	if (legacy && rc == MCP_OK && json_object_array_length(list) > 0) {
		json_object *uri = NULL;
		json_object_object_get_ex(json_object_array_get_idx(list, 0), "uri", &uri);
		int s = mcp_client_subscribe(c, json_object_get_string(uri), 20000, NULL);
		int u = s == MCP_OK ? mcp_client_unsubscribe(c, json_object_get_string(uri), 20000, NULL)
				    : s;
		verdict(s == MCP_OK && u == MCP_OK, &res_n, &res_ok, "subscribe",
			json_object_get_string(uri), mcp_strerror(s ? s : u));
	}
	json_object_put(list);
	json_object *tpls = NULL;
	rc = mcp_client_list_resource_templates(c, 20000, NULL, &tpls);
	verdict(rc == MCP_OK && json_object_array_length(tpls) > 0, &res_n, &res_ok, "list",
		"resources/templates/list", mcp_strerror(rc));
	for (size_t i = 0; rc == MCP_OK && i < json_object_array_length(tpls); i++) {
		json_object *t = NULL;
		json_object_object_get_ex(json_object_array_get_idx(tpls, i), "uriTemplate", &t);
		/* Every variable of these templates is an integer id. */
		char uri[512];
		const char *tpl = json_object_get_string(t);
		const char *open = strchr(tpl, '{'), *close = open ? strchr(open, '}') : NULL;
		if (!close) {
			verdict(0, &res_n, &res_ok, "template", tpl, "no {variable}");
			continue;
		}
		snprintf(uri, sizeof uri, "%.*s1%s", (int)(open - tpl), tpl, close + 1);
		read_one(c, uri, "template");
	}
	json_object_put(tpls);
}

/* ---- prompts ------------------------------------------------------------------ */

static void check_prompts(mcp_client *c)
{
	json_object *list = NULL;
	int rc = mcp_client_list_prompts(c, 20000, NULL, &list);
	verdict(rc == MCP_OK && json_object_array_length(list) > 0, &prompts_n, &prompts_ok, "list",
		"prompts/list", mcp_strerror(rc));
	for (size_t i = 0; rc == MCP_OK && i < json_object_array_length(list); i++) {
		json_object *p = json_object_array_get_idx(list, i), *name = NULL, *pargs = NULL;
		json_object_object_get_ex(p, "name", &name);
		json_object_object_get_ex(p, "arguments", &pargs);
		if (!json_object_is_type(pargs, json_type_array))
			pargs = NULL;
		const char *n = json_object_get_string(name);
		/* Each argument gets a value its prompt accepts. */
		json_object *args = json_object_new_object();
		for (size_t k = 0; pargs && k < json_object_array_length(pargs); k++) {
			json_object *an = NULL;
			json_object_object_get_ex(json_object_array_get_idx(pargs, k), "name", &an);
			const char *a = json_object_get_string(an);
			const char *v = strcmp(a, "resourceType") == 0 ? "Text"
					: strcmp(a, "resourceId") == 0	 ? "1"
					: strcmp(a, "department") == 0	 ? "Engineering"
					: strcmp(a, "name") == 0	 ? "Alice"
					: strcmp(a, "city") == 0	 ? "Lisbon"
									 : "VALUE";
			json_object_object_add(args, a, json_object_new_string(v));
		}
		json_object *res = NULL, *msgs = NULL;
		int prc = mcp_client_get_prompt(c, n, args, 20000, NULL, &res);
		const char *why = prc != MCP_OK ? mcp_strerror(prc) : NULL;
		json_object_object_get_ex(res, "messages", &msgs);
		if (!why && (!json_object_is_type(msgs, json_type_array) ||
			     json_object_array_length(msgs) == 0))
			why = "no messages";
		if (!why && strcmp(n, "args-prompt") == 0 && !strstr(text_of(res), "Lisbon"))
			why = "the argument is not in the prompt";
		verdict(!why, &prompts_n, &prompts_ok, "prompt", n, why);
		/* A prompt with arguments: completion of its first one. */
		if (pargs && strcmp(n, "completable-prompt") == 0) {
			json_object *ref = json_object_new_object(), *cres = NULL;
			json_object_object_add(ref, "type", json_object_new_string("ref/prompt"));
			json_object_object_add(ref, "name", json_object_new_string(n));
			int crc = mcp_client_complete(c, ref, "department", "Eng", NULL, 20000, NULL,
						      &cres);
			verdict(crc == MCP_OK && strstr(text_of(cres), "Engineering"), &prompts_n,
				&prompts_ok, "complete", n, crc ? mcp_strerror(crc) : text_of(cres));
			json_object_put(cres);
			json_object_put(ref);
		}
		json_object_put(res);
		json_object_put(args);
	}
	json_object_put(list);
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "--stdio") && strcmp(argv[1], "--http"))) {
		fprintf(stderr, "usage: reference-check --stdio CMD ARGS... | --http URL\n");
		return 2;
	}
	mcp_client *c = mcp_client_new("libmcp-reference-check", "0.1.0");
	mcp_client_set_sampling_handler(c, sampling, NULL);
	mcp_client_set_elicitation_handler(c, elicitation, NULL, MCP_ELICIT_FORM | MCP_ELICIT_URL);
	mcp_client_add_root(c, "file:///tmp/reference-root", "reference-root");
	int rc = strcmp(argv[1], "--stdio") == 0 ? mcp_client_connect_stdio(c, argv + 2, NULL, NULL)
						 : mcp_client_connect_http(c, argv[2]);
	if (rc != MCP_OK) {
		fprintf(stderr, "reference-check: connect: %s: %s\n", mcp_strerror(rc),
			mcp_client_error(c));
		mcp_client_free(c);
		return 1;
	}
	const char *version = mcp_client_protocol_version(c);
	int legacy = strcmp(version, "2026-07-28") != 0;
	printf("connected: %s, revision %s\n", argv[1] + 2, version);
	verdict(mcp_client_ping(c, 10000, NULL) == MCP_OK, &tools_n, &tools_ok, "ping", "ping", NULL);
	verdict(mcp_client_set_log_level(c, MCP_LOG_DEBUG, 10000, NULL) == MCP_OK, &tools_n, &tools_ok,
		"logging", "logging/setLevel", NULL);
	check_tools(c);
	check_resources(c, legacy);
	check_prompts(c);
	printf("reference-check %s: tools %d/%d, resources %d/%d, prompts %d/%d "
	       "(sampling answered %d, elicitation answered %d): %s\n",
	       argv[1] + 2, tools_ok, tools_n, res_ok, res_n, prompts_ok, prompts_n, sampled, elicited,
	       failed ? "FAILED" : "passed");
	mcp_client_free(c);
	return failed ? 1 : 0;
}
