/*
 * test_surface.c - in-process tests of the MCP server surface beyond tools:
 * resources and templates, subscriptions, prompts, completion, pagination,
 * capabilities and list_changed notifications.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "tests/unit/runner.h"

static mcp_server *srv;
static mcp_memconn *conn;

static int read_static(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
		       void *user)
{
	(void)ctx;
	(void)vars;
	(void)user;
	return mcp_contents_add_text(out, uri, "text/plain", "static body");
}

static int read_template(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			 void *user)
{
	(void)ctx;
	(void)user;
	json_object *id = NULL;
	json_object_object_get_ex(vars, "id", &id);
	if (strcmp(json_object_get_string(id), "missing") == 0)
		return MCP_ENOENT;
	if (strcmp(json_object_get_string(id), "huge") == 0) {
		mcp_contents_set_error(out, -32603, "file too large for --max-file-bytes", NULL);
		return MCP_EBUSY;
	}
	static const unsigned char bytes[] = { 0, 1, 2, 255 };
	mcp_contents_add_text(out, uri, NULL, json_object_get_string(id));
	return mcp_contents_add_blob(out, uri, "application/octet-stream", bytes, sizeof bytes);
}

static int complete_id(mcp_ctx *ctx, const char *arg, const char *value, json_object *context,
		       mcp_completion *out, void *user)
{
	(void)ctx;
	(void)arg;
	(void)context;
	(void)user;
	char buf[32];
	for (int i = 0; i < 150; i++) {
		snprintf(buf, sizeof buf, "%s%d", value, i);
		mcp_completion_add(out, buf);
	}
	return MCP_OK;
}

static int get_prompt(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)user;
	json_object *topic = NULL;
	json_object_object_get_ex(args, "topic", &topic);
	mcp_prompt_set_description(out, "a prompt");
	mcp_prompt_add_text(out, MCP_ROLE_USER, json_object_get_string(topic));
	mcp_prompt_add_image(out, MCP_ROLE_ASSISTANT, "\x89PNG", 4, "image/png");
	return mcp_prompt_add_resource_text(out, MCP_ROLE_USER, "test://r", "text/plain", "embedded");
}

static int noop_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_text(out, "ok");
}

static int form_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	mcp_form *f = mcp_form_new("Tell us about you");
	static const char *const colors[] = { "red", "green" };
	static const char *const titles[] = { "Red", "Green" };
	static const char *const dflt[] = { "green" };
	mcp_field fields[] = {
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_STRING, .name = "email", .format = "email", .required = 1,
		  .has_lengths = 1, .min_length = 3, .max_length = -1 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_INTEGER, .name = "age", .has_minimum = 1, .minimum = 0,
		  .has_default = 1, .default_number = 30 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_NUMBER, .name = "score", .has_maximum = 1, .maximum = 9.5 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_BOOLEAN, .name = "ok", .has_default = 1, .default_bool = 1 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "plain", .options = colors, .noptions = 2,
		  .has_default = 1, .default_string = "red" },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "titled", .options = colors, .option_titles = titles,
		  .noptions = 2, .style = MCP_ENUM_TITLED },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "legacy", .options = colors, .option_titles = titles,
		  .noptions = 2, .style = MCP_ENUM_LEGACY },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_MULTI_ENUM, .name = "many", .options = colors, .noptions = 2,
		  .has_items = 1, .min_items = 1, .max_items = 2, .has_default = 1,
		  .default_options = dflt, .ndefault_options = 1 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_MULTI_ENUM, .name = "many_titled", .options = colors,
		  .option_titles = titles, .noptions = 2, .style = MCP_ENUM_TITLED },
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		ck_assert_int_eq(mcp_form_add(f, &fields[i]), MCP_OK);
	ck_assert_int_eq(mcp_form_add(f, &fields[0]), MCP_EEXIST);
	mcp_field bad_format = { MCP_FIELD_INIT, .kind = MCP_FIELD_STRING, .name = "x", .format = "phone" };
	ck_assert_int_eq(mcp_form_add(f, &bad_format), MCP_EINVAL);
	mcp_field bad_default = { MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "y", .options = colors,
				  .noptions = 2, .has_default = 1, .default_string = "blue" };
	ck_assert_int_eq(mcp_form_add(f, &bad_default), MCP_EINVAL);
	mcp_field legacy_multi = { MCP_FIELD_INIT, .kind = MCP_FIELD_MULTI_ENUM, .name = "z", .options = colors,
				   .option_titles = titles, .noptions = 2,
				   .style = MCP_ENUM_LEGACY };
	ck_assert_int_eq(mcp_form_add(f, &legacy_multi), MCP_EINVAL);
	json_object *res = NULL;
	int rc = mcp_ctx_elicit_form(ctx, f, 10000, &res);
	mcp_form_free(f);
	if (rc != MCP_OK) {
		mcp_result_set_is_error(out, 1);
		return mcp_result_add_text(out, mcp_strerror(rc));
	}
	json_object *action = NULL;
	json_object_object_get_ex(res, "action", &action);
	rc = mcp_result_add_text(out, json_object_get_string(action));
	json_object_put(res);
	return rc;
}

static int url_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *res = NULL;
	int rc = mcp_ctx_elicit_url(ctx, "Sign in", "https://example.com/login", "el-1", 10000,
				    &res);
	json_object_put(res);
	/* The setter's result is returned as it is: it means "send it". */
	if (rc == MCP_ENOTSUP)
		return mcp_result_set_url_elicitation_required(out, "Sign in first",
							       "https://example.com/login", "el-1");
	return mcp_result_add_text(out, mcp_strerror(rc));
}

static int slow_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	json_object *ms = NULL;
	json_object_object_get_ex(args, "ms", &ms);
	int rc = mcp_ctx_sleep(ctx, ms ? json_object_get_int64(ms) : 0);
	if (rc != MCP_OK)
		return rc;
	return mcp_result_add_text(out, "slow done");
}

static int ask_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *res = NULL;
	int rc = mcp_ctx_sample_text(ctx, "be brief", "hello?", 10, 1000, &res);
	json_object_put(res);
	ck_assert_ptr_null(res == NULL ? NULL : res);
	return mcp_result_add_text(out, mcp_strerror(rc));
}

static void send_msg(const char *s)
{
	ck_assert_int_eq(mcp_memconn_send(conn, s, strlen(s)), MCP_OK);
}

/* The method of each request this test sent, by integer id, so a recorded
 * response can name the result type it must have. */
static const char *sent_method[4096];
/* The revision the connection under test negotiated. */
static const char *record_rev = "2025-11-25";

/* With MCP_SCHEMA_RECORD set, every message the server wrote is appended
 * there for tests/schema/validate.mjs (make check-schema). */
static void record(const char *line, json_object *m)
{
	const char *path = getenv("MCP_SCHEMA_RECORD");
	if (!path)
		return;
	const char *method = NULL;
	json_object *id = NULL;
	if (!json_object_object_get_ex(m, "method", NULL) &&
	    json_object_object_get_ex(m, "id", &id)) {
		if (json_object_is_type(id, json_type_int) && json_object_get_int(id) >= 0 &&
		    json_object_get_int(id) < 4096)
			method = sent_method[json_object_get_int(id)];
		else if (json_object_is_type(id, json_type_string))
			method = "tools/call"; /* the tests' string ids are tool calls */
	}
	FILE *f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"rev\":\"%s\",\"method\":%s%s%s,\"msg\":%s}\n", record_rev,
		method ? "\"" : "", method ? method : "null", method ? "\"" : "", line);
	fclose(f);
}

static json_object *recv_msg(void)
{
	char *line;
	size_t len;
	int rc = mcp_memconn_recv(conn, 10000, &line, &len);
	ck_assert_int_eq(rc, 1);
	json_object *m = json_tokener_parse(line);
	ck_assert_msg(m != NULL, "not JSON: %s", line);
	record(line, m);
	free(line);
	return m;
}

/* Follows a dotted path ("result.contents.0.text"). */
static json_object *at(json_object *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *tok = strtok(buf, "."); tok && o; tok = strtok(NULL, ".")) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(o, tok, &o))
			o = NULL;
	}
	return o;
}

static const char *str_at(json_object *o, const char *path)
{
	json_object *v = at(o, path);
	return v ? json_object_get_string(v) : "(missing)";
}

static json_object *request(const char *method, const char *params)
{
	static int next_id = 100;
	char buf[1024];
	int id = next_id++;
	sent_method[id % 4096] = method;
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
		 id, method, params);
	send_msg(buf);
	for (;;) {
		json_object *m = recv_msg();
		json_object *jid = at(m, "id");
		if (jid && json_object_get_int(jid) == id)
			return m;
		json_object_put(m); /* a notification: not this test's concern */
	}
}

static void setup(void)
{
	srv = mcp_server_new("surface", "1.0");
	mcp_server_set_page_size(srv, 2);
	mcp_resource r = { MCP_RESOURCE_INIT, .uri = "test://static", .name = "static", .title = "Static",
			   .mime_type = "text/plain", .size = 11, .read = read_static };
	ck_assert_int_eq(mcp_server_add_resource(srv, &r), MCP_OK);
	ck_assert_int_eq(mcp_server_add_resource(srv, &r), MCP_EEXIST);
	mcp_resource_template t = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "test://item/{id}/data", .name = "item",
				    .read = read_template, .complete = complete_id };
	ck_assert_int_eq(mcp_server_add_resource_template(srv, &t), MCP_OK);
	mcp_resource_template bad = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "test://{a}{b}", .name = "bad",
				      .read = read_template };
	ck_assert_int_eq(mcp_server_add_resource_template(srv, &bad), MCP_EINVAL);
	mcp_prompt_arg args[] = { { MCP_PROMPT_ARG_INIT, .name = "topic", .required = 1 }, { MCP_PROMPT_ARG_INIT, .name = "style" } };
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "greet", .title = "Greet", .args = args, .nargs = 2,
			 .get = get_prompt, .complete = complete_id };
	ck_assert_int_eq(mcp_server_add_prompt(srv, &p), MCP_OK);
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof name, "tool%d", i);
		mcp_tool tool = { MCP_TOOL_INIT, .name = name, .fn = noop_tool };
		ck_assert_int_eq(mcp_server_add_tool(srv, &tool), MCP_OK);
	}
	mcp_tool st = { MCP_TOOL_INIT, .name = "slow", .fn = slow_tool, .task_support = MCP_TASKS_OPTIONAL };
	ck_assert_int_eq(mcp_server_add_tool(srv, &st), MCP_OK);
	mcp_tool at_ = { MCP_TOOL_INIT, .name = "ask", .fn = ask_tool,
			 .annotations = "{\"readOnlyHint\":true}" };
	ck_assert_int_eq(mcp_server_add_tool(srv, &at_), MCP_OK);
	mcp_tool bad_ann = { MCP_TOOL_INIT, .name = "bad", .fn = ask_tool, .annotations = "[1]" };
	ck_assert_int_eq(mcp_server_add_tool(srv, &bad_ann), MCP_EINVAL);
	mcp_tool ft = { MCP_TOOL_INIT, .name = "form", .fn = form_tool };
	mcp_tool ut = { MCP_TOOL_INIT, .name = "url", .fn = url_tool };
	ck_assert_int_eq(mcp_server_add_tool(srv, &ft), MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(srv, &ut), MCP_OK);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	json_object *m = request("initialize", "{\"protocolVersion\":\"2025-11-25\","
					       "\"capabilities\":{\"elicitation\":{\"form\":{}}}}");
	ck_assert_str_eq(str_at(m, "result.capabilities.resources.subscribe"), "true");
	ck_assert_str_eq(str_at(m, "result.capabilities.prompts.listChanged"), "true");
	ck_assert_ptr_nonnull(at(m, "result.capabilities.completions"));
	ck_assert_ptr_nonnull(at(m, "result.capabilities.tasks.requests.tools.call"));
	json_object_put(m);
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	/* The reader handles messages in order: once the ping is answered the
	 * connection is ready and may receive list_changed notifications. */
	json_object_put(request("ping", "{}"));
}

static void teardown(void)
{
	mcp_memconn_close(conn);
	char *line;
	size_t len;
	while (mcp_memconn_recv(conn, 10000, &line, &len) == 1)
		free(line);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}

START_TEST(resources_list_and_read)
{
	json_object *m = request("resources/list", "{}");
	ck_assert_str_eq(str_at(m, "result.resources.0.uri"), "test://static");
	ck_assert_str_eq(str_at(m, "result.resources.0.title"), "Static");
	ck_assert_int_eq(json_object_get_int(at(m, "result.resources.0.size")), 11);
	json_object_put(m);
	m = request("resources/templates/list", "{}");
	ck_assert_str_eq(str_at(m, "result.resourceTemplates.0.uriTemplate"),
			 "test://item/{id}/data");
	json_object_put(m);
	m = request("resources/read", "{\"uri\":\"test://static\"}");
	ck_assert_str_eq(str_at(m, "result.contents.0.text"), "static body");
	json_object_put(m);
	m = request("resources/read", "{\"uri\":\"test://item/42/data\"}");
	ck_assert_str_eq(str_at(m, "result.contents.0.text"), "42");
	ck_assert_str_eq(str_at(m, "result.contents.1.blob"), "AAEC/w==");
	json_object_put(m);
	/* Unknown resource: -32002 with the uri in data; also when the
	 * handler says it does not exist. */
	m = request("resources/read", "{\"uri\":\"test://nope\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32002);
	ck_assert_str_eq(str_at(m, "error.data.uri"), "test://nope");
	json_object_put(m);
	m = request("resources/read", "{\"uri\":\"test://item/missing/data\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32002);
	json_object_put(m);
	/* A handler's own error text reaches the client. */
	m = request("resources/read", "{\"uri\":\"test://item/huge/data\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32603);
	ck_assert_str_eq(str_at(m, "error.message"), "file too large for --max-file-bytes");
	json_object_put(m);
	/* A variable never spans a '/'. */
	m = request("resources/read", "{\"uri\":\"test://item/a/b/data\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32002);
	json_object_put(m);
	m = request("resources/read", "{}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
}
END_TEST

START_TEST(subscriptions_reach_only_subscribers)
{
	json_object *m = request("resources/subscribe", "{\"uri\":\"test://static\"}");
	ck_assert_ptr_nonnull(at(m, "result"));
	json_object_put(m);
	m = request("resources/subscribe", "{\"uri\":\"test://unknown\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32002);
	json_object_put(m);
	ck_assert_int_eq(mcp_server_resource_updated(srv, "test://other"), MCP_OK);
	ck_assert_int_eq(mcp_server_resource_updated(srv, "test://static"), MCP_OK);
	m = recv_msg();
	ck_assert_str_eq(str_at(m, "method"), "notifications/resources/updated");
	ck_assert_str_eq(str_at(m, "params.uri"), "test://static");
	json_object_put(m);
	m = request("resources/unsubscribe", "{\"uri\":\"test://static\"}");
	json_object_put(m);
	mcp_server_resource_updated(srv, "test://static");
	m = request("ping", "{}"); /* nothing arrives before this answer */
	ck_assert_ptr_nonnull(at(m, "result"));
	json_object_put(m);
}
END_TEST

START_TEST(prompts_get_and_errors)
{
	json_object *m = request("prompts/list", "{}");
	ck_assert_str_eq(str_at(m, "result.prompts.0.name"), "greet");
	ck_assert_str_eq(str_at(m, "result.prompts.0.arguments.0.required"), "true");
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"greet\",\"arguments\":{\"topic\":\"cats\"}}");
	ck_assert_str_eq(str_at(m, "result.description"), "a prompt");
	ck_assert_str_eq(str_at(m, "result.messages.0.role"), "user");
	ck_assert_str_eq(str_at(m, "result.messages.0.content.text"), "cats");
	ck_assert_str_eq(str_at(m, "result.messages.1.content.type"), "image");
	ck_assert_str_eq(str_at(m, "result.messages.2.content.resource.text"), "embedded");
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"greet\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"nope\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
}
END_TEST

START_TEST(completion_caps_at_100)
{
	json_object *m = request("completion/complete",
				 "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"greet\"},"
				 "\"argument\":{\"name\":\"topic\",\"value\":\"c\"}}");
	ck_assert_int_eq(json_object_array_length(at(m, "result.completion.values")), 100);
	ck_assert_str_eq(str_at(m, "result.completion.values.0"), "c0");
	ck_assert_int_eq(json_object_get_int(at(m, "result.completion.total")), 150);
	ck_assert_str_eq(str_at(m, "result.completion.hasMore"), "true");
	json_object_put(m);
	m = request("completion/complete",
		    "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"test://item/{id}/data\"},"
		    "\"argument\":{\"name\":\"id\",\"value\":\"7\"}}");
	ck_assert_str_eq(str_at(m, "result.completion.values.1"), "71");
	json_object_put(m);
	m = request("completion/complete",
		    "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"nope\"},"
		    "\"argument\":{\"name\":\"x\",\"value\":\"\"}}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
}
END_TEST

START_TEST(pagination_with_checked_cursors)
{
	/* Nine tools, pages of two: 2 + 2 + 2 + 2 + 1. */
	const char *cursor = NULL;
	char params[256];
	int seen = 0, pages = 0;
	json_object *m = NULL;
	for (;;) {
		if (cursor)
			snprintf(params, sizeof params, "{\"cursor\":\"%s\"}", cursor);
		else
			snprintf(params, sizeof params, "{}");
		json_object *next = request("tools/list", params);
		json_object_put(m);
		m = next;
		seen += (int)json_object_array_length(at(m, "result.tools"));
		pages++;
		json_object *c = at(m, "result.nextCursor");
		if (!c)
			break;
		cursor = json_object_get_string(c);
	}
	json_object_put(m);
	ck_assert_int_eq(seen, 9);
	ck_assert_int_eq(pages, 5);
	m = request("tools/list", "{\"cursor\":\"not-a-cursor\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
	/* A well-formed forged cursor: base64("libmcp:tools:1") once skipped
	 * a tool.  Cursors carry a MAC now; this one has none. */
	m = request("tools/list", "{\"cursor\":\"bGlibWNwOnRvb2xzOjE=\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
	/* A real cursor, one character changed, and the same cursor on
	 * another list: neither is accepted. */
	m = request("tools/list", "{}");
	char real[128];
	snprintf(real, sizeof real, "%s", str_at(m, "result.nextCursor"));
	json_object_put(m);
	snprintf(params, sizeof params, "{\"cursor\":\"%s\"}", real);
	m = request("prompts/list", params);
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
	real[3] = real[3] == 'A' ? 'B' : 'A';
	snprintf(params, sizeof params, "{\"cursor\":\"%s\"}", real);
	m = request("tools/list", params);
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
}
END_TEST

START_TEST(runtime_changes_notify)
{
	mcp_tool extra = { MCP_TOOL_INIT, .name = "extra", .fn = noop_tool };
	ck_assert_int_eq(mcp_server_add_tool(srv, &extra), MCP_OK);
	json_object *m = recv_msg();
	ck_assert_str_eq(str_at(m, "method"), "notifications/tools/list_changed");
	json_object_put(m);
	ck_assert_int_eq(mcp_server_remove_prompt(srv, "greet"), MCP_OK);
	m = recv_msg();
	ck_assert_str_eq(str_at(m, "method"), "notifications/prompts/list_changed");
	json_object_put(m);
	ck_assert_int_eq(mcp_server_remove_resource(srv, "test://static"), MCP_OK);
	m = recv_msg();
	ck_assert_str_eq(str_at(m, "method"), "notifications/resources/list_changed");
	json_object_put(m);
	ck_assert_int_eq(mcp_server_remove_tool(srv, "nope"), MCP_ENOENT);
}
END_TEST

START_TEST(elicitation_form_every_field_kind)
{
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"f\",\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"form\"}}");
	json_object *m = recv_msg();
	ck_assert_str_eq(str_at(m, "method"), "elicitation/create");
	ck_assert_str_eq(str_at(m, "params.mode"), "form");
	ck_assert_str_eq(str_at(m, "params.requestedSchema.required.0"), "email");
	const char *checks[][2] = {
		{ "params.requestedSchema.properties.email.format", "email" },
		{ "params.requestedSchema.properties.email.minLength", "3" },
		{ "params.requestedSchema.properties.age.type", "integer" },
		{ "params.requestedSchema.properties.age.default", "30" },
		{ "params.requestedSchema.properties.score.maximum", "9.5" },
		{ "params.requestedSchema.properties.ok.default", "true" },
		{ "params.requestedSchema.properties.plain.enum.1", "green" },
		{ "params.requestedSchema.properties.titled.oneOf.1.title", "Green" },
		{ "params.requestedSchema.properties.legacy.enumNames.0", "Red" },
		{ "params.requestedSchema.properties.many.items.enum.0", "red" },
		{ "params.requestedSchema.properties.many.default.0", "green" },
		{ "params.requestedSchema.properties.many.maxItems", "2" },
		{ "params.requestedSchema.properties.many_titled.items.anyOf.0.const", "red" },
	};
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
		ck_assert_msg(strcmp(str_at(m, checks[i][0]), checks[i][1]) == 0, "%s is %s",
			      checks[i][0], str_at(m, checks[i][0]));
	ck_assert_ptr_null(at(m, "params.requestedSchema.properties.email.maxLength"));
	char buf[256];
	snprintf(buf, sizeof buf,
		 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"action\":\"accept\","
		 "\"content\":{\"email\":\"a@b.c\"}}}",
		 json_object_to_json_string(at(m, "id")));
	json_object_put(m);
	send_msg(buf);
	m = recv_msg();
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "accept");
	json_object_put(m);
}
END_TEST

START_TEST(url_elicitation_needs_the_capability)
{
	/* The client declared form only: URL mode is refused locally and the
	 * tool answers -32042 with the URL. */
	json_object *m = request("tools/call", "{\"name\":\"url\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32042);
	ck_assert_str_eq(str_at(m, "error.data.elicitations.0.url"), "https://example.com/login");
	ck_assert_str_eq(str_at(m, "error.data.elicitations.0.elicitationId"), "el-1");
	json_object_put(m);
	ck_assert_int_eq(mcp_server_elicitation_complete(srv, "el-1"), MCP_ENOENT);
}
END_TEST

START_TEST(sampling_needs_the_capability)
{
	/* The client declared no sampling: refused locally, nothing sent. */
	json_object *m = request("tools/call", "{\"name\":\"ask\"}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), mcp_strerror(MCP_ENOTSUP));
	json_object_put(m);
	/* The page from the seventh tool on, reached by real cursors. */
	m = request("tools/list", "{}");
	for (int page = 1; page < 4; page++) {
		char params[256];
		snprintf(params, sizeof params, "{\"cursor\":\"%s\"}",
			 str_at(m, "result.nextCursor"));
		json_object_put(m);
		m = request("tools/list", params);
	}
	ck_assert_str_eq(str_at(m, "result.tools.0.name"), "ask");
	ck_assert_str_eq(str_at(m, "result.tools.0.annotations.readOnlyHint"), "true");
	json_object_put(m);
}
END_TEST

START_TEST(tasks_lifecycle)
{
	json_object *m = request("initialize", "{\"protocolVersion\":\"2025-11-25\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32600);
	json_object_put(m);
	m = request("tools/call", "{\"name\":\"slow\",\"arguments\":{\"ms\":50},"
				  "\"task\":{\"ttl\":60000}}");
	const char *tid0 = str_at(m, "result.task.taskId");
	ck_assert_uint_eq(strlen(tid0), 32);
	char tid[40];
	snprintf(tid, sizeof tid, "%s", tid0);
	ck_assert_str_eq(str_at(m, "result.task.status"), "working");
	ck_assert_int_eq(json_object_get_int(at(m, "result.task.ttl")), 60000);
	json_object_put(m);
	char params[128];
	snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", tid);
	m = request("tasks/result", params);
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "slow done");
	json_object *meta = at(m, "result._meta");
	json_object *rel = NULL;
	ck_assert(json_object_object_get_ex(meta, "io.modelcontextprotocol/related-task", &rel));
	ck_assert_str_eq(str_at(rel, "taskId"), tid);
	json_object_put(m);
	m = request("tasks/get", params);
	ck_assert_str_eq(str_at(m, "result.status"), "completed");
	json_object_put(m);
	m = request("tasks/cancel", params);
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
	m = request("tasks/list", "{}");
	ck_assert_str_eq(str_at(m, "result.tasks.0.taskId"), tid);
	json_object_put(m);

	/* A long task cancelled by tasks/cancel: its handler wakes, and
	 * tasks/result reports the cancellation. */
	m = request("tools/call", "{\"name\":\"slow\",\"arguments\":{\"ms\":60000},"
				  "\"task\":{}}");
	snprintf(params, sizeof params, "{\"taskId\":\"%s\"}", str_at(m, "result.task.taskId"));
	json_object_put(m);
	m = request("tasks/cancel", params);
	ck_assert_str_eq(str_at(m, "result.status"), "cancelled");
	json_object_put(m);
	m = request("tasks/result", params);
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32603);
	json_object_put(m);
	m = request("tasks/get", "{\"taskId\":\"nope\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32602);
	json_object_put(m);
	/* A tool without task support refuses task-augmented calls. */
	m = request("tools/call", "{\"name\":\"tool0\",\"task\":{}}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32601);
	json_object_put(m);
}
END_TEST

/* ---- 2024-11-05: what the first revision lacks is never written ---------------- */

static const unsigned char tone[] = { 'R', 'I', 'F', 'F', 0, 1, 2, 3, 4, 5, 6, 7 };

/* Every kind of block a handler can add, new and old. */
static int kinds_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx, (void)args, (void)user;
	int rc = mcp_result_add_text(out, "text");
	if (rc == MCP_OK)
		rc = mcp_result_add_audio(out, tone, sizeof tone, "audio/ogg");
	if (rc == MCP_OK)
		rc = mcp_result_add_resource_link(out, "test://static", "static", NULL, NULL);
	if (rc == MCP_OK)
		rc = mcp_result_add_content(out, json_tokener_parse(
			"{\"type\":\"audio\",\"data\":\"AAAA\",\"mimeType\":\"audio/mpeg\"}"));
	if (rc == MCP_OK)
		rc = mcp_result_add_content(out, json_tokener_parse(
			"{\"type\":\"resource_link\",\"uri\":\"test://x\",\"name\":\"x\"}"));
	if (rc == MCP_OK)
		rc = mcp_result_set_structured(out, json_tokener_parse("{\"n\":1}"));
	return rc;
}

/* Progress with a message, then sampling that asks about audio. */
static int audio_question_tool(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	int rc = mcp_ctx_progress(ctx, 1, 2, "half way");
	if (rc != MCP_OK)
		return rc;
	json_object *p = json_tokener_parse(
		"{\"maxTokens\":5,\"messages\":[{\"role\":\"user\",\"content\":"
		"{\"type\":\"audio\",\"data\":\"AAAA\",\"mimeType\":\"audio/wav\"}}]}");
	json_object *res = NULL;
	rc = mcp_ctx_sample(ctx, p, 1000, &res);
	json_object_put(p);
	json_object_put(res);
	return mcp_result_add_text(out, mcp_strerror(rc));
}

static int audio_prompt(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx, (void)args, (void)user;
	return mcp_prompt_add_audio(out, MCP_ROLE_USER, tone, sizeof tone, "audio/wav");
}

START_TEST(rev_2024_11_05_leaves_out_what_it_lacks)
{
	/* A server of its own, initialized at 2024-11-05. */
	teardown();
	record_rev = "2024-11-05";
	srv = mcp_server_new("surface-2024", "1.0");
	mcp_tool kinds = { MCP_TOOL_INIT, .name = "kinds", .title = "Kinds", .fn = kinds_tool,
			   .annotations = "{\"readOnlyHint\":true}",
			   .output_schema = "{\"type\":\"object\"}" };
	ck_assert_int_eq(mcp_server_add_tool(srv, &kinds), MCP_OK);
	mcp_tool aq = { MCP_TOOL_INIT, .name = "audio_question", .fn = audio_question_tool };
	ck_assert_int_eq(mcp_server_add_tool(srv, &aq), MCP_OK);
	mcp_prompt_arg parg = { MCP_PROMPT_ARG_INIT, .name = "topic", .title = "Topic" };
	mcp_prompt ap = { MCP_PROMPT_INIT, .name = "hear", .title = "Hear", .args = &parg, .nargs = 1,
			  .get = audio_prompt, .complete = complete_id };
	ck_assert_int_eq(mcp_server_add_prompt(srv, &ap), MCP_OK);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	json_object *m = request("initialize", "{\"protocolVersion\":\"2024-11-05\","
					       "\"capabilities\":{\"sampling\":{}}}");
	ck_assert_str_eq(str_at(m, "result.protocolVersion"), "2024-11-05");
	/* completion/complete is served, but has no capability yet. */
	ck_assert_ptr_null(at(m, "result.capabilities.completions"));
	ck_assert_ptr_nonnull(at(m, "result.capabilities.prompts"));
	json_object_put(m);
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

	m = request("tools/list", "{}");
	ck_assert_str_eq(str_at(m, "result.tools.0.name"), "kinds");
	ck_assert_ptr_null(at(m, "result.tools.0.annotations"));
	ck_assert_ptr_null(at(m, "result.tools.0.title"));
	ck_assert_ptr_null(at(m, "result.tools.0.outputSchema"));
	json_object_put(m);

	/* Audio becomes a note, a resource_link "name <uri>", raw blocks
	 * too; structuredContent is not sent. */
	m = request("tools/call", "{\"name\":\"kinds\",\"arguments\":{}}");
	json_object *content = at(m, "result.content");
	ck_assert_int_eq(json_object_array_length(content), 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(str_at(json_object_array_get_idx(content, i), "type"), "text");
	ck_assert_ptr_nonnull(strstr(str_at(m, "result.content.1.text"), "audio/ogg"));
	ck_assert_str_eq(str_at(m, "result.content.2.text"), "static <test://static>");
	ck_assert_ptr_nonnull(strstr(str_at(m, "result.content.3.text"), "audio/mpeg"));
	ck_assert_str_eq(str_at(m, "result.content.4.text"), "x <test://x>");
	ck_assert_ptr_null(at(m, "result.structuredContent"));
	json_object_put(m);

	/* Progress without its message; sampling of audio refused before it
	 * reaches the client (no sampling/createMessage is written). */
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"audio_question\",\"arguments\":{},\"_meta\":{\"progressToken\":9}}}");
	sent_method[1] = "tools/call";
	int progress = 0;
	for (;;) {
		m = recv_msg();
		const char *method = str_at(m, "method");
		ck_assert_str_ne(method, "sampling/createMessage");
		if (strcmp(method, "notifications/progress") == 0) {
			progress++;
			ck_assert_ptr_null(at(m, "params.message"));
			ck_assert_int_eq(json_object_get_int(at(m, "params.progress")), 1);
		}
		if (at(m, "id") && json_object_get_int(at(m, "id")) == 1)
			break;
		json_object_put(m);
	}
	ck_assert_int_eq(progress, 1);
	ck_assert_str_eq(str_at(m, "result.content.0.text"), mcp_strerror(MCP_ENOTSUP));
	json_object_put(m);

	m = request("prompts/list", "{}");
	ck_assert_ptr_null(at(m, "result.prompts.0.title"));
	ck_assert_ptr_null(at(m, "result.prompts.0.arguments.0.title"));
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"hear\"}");
	ck_assert_str_eq(str_at(m, "result.messages.0.content.type"), "text");
	ck_assert_ptr_nonnull(strstr(str_at(m, "result.messages.0.content.text"), "audio/wav"));
	json_object_put(m);
	m = request("completion/complete", "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"hear\"},"
					    "\"argument\":{\"name\":\"topic\",\"value\":\"\"}}");
	ck_assert_ptr_nonnull(at(m, "result.completion.values"));
	json_object_put(m);
	/* A batch is refused whole, as in every revision but 2025-03-26. */
	send_msg("[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]");
	m = recv_msg();
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32600);
	ck_assert(json_object_is_type(at(m, "id"), json_type_null));
	json_object_put(m);
	record_rev = "2025-11-25";
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("surface");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, resources_list_and_read);
	tcase_add_test(tc, subscriptions_reach_only_subscribers);
	tcase_add_test(tc, prompts_get_and_errors);
	tcase_add_test(tc, completion_caps_at_100);
	tcase_add_test(tc, pagination_with_checked_cursors);
	tcase_add_test(tc, runtime_changes_notify);
	tcase_add_test(tc, elicitation_form_every_field_kind);
	tcase_add_test(tc, url_elicitation_needs_the_capability);
	tcase_add_test(tc, tasks_lifecycle);
	tcase_add_test(tc, sampling_needs_the_capability);
	tcase_add_test(tc, rev_2024_11_05_leaves_out_what_it_lacks);
	suite_add_tcase(s, tc);
	return s;
}
