/*
 * test_tools.c - in-process tests of what issue 18 asks of tools:
 * registration refuses what breaks clients (with the reason from
 * mcp_tool_check), arguments are checked before a handler runs, results
 * against their output schema, the error API has no trap, mcp_args_*
 * read checked arguments, prompt arguments and elicitation answers are
 * checked too.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "tests/unit/runner.h"

static mcp_server *srv;
static mcp_memconn *conn;

/* ---- handlers ------------------------------------------------------------- */

static int noop(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_text(out, "ran");
}

/* Each returns what an error API call returned, as a handler would. */
static int returns_set_error(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_set_error(out, MCP_JSONRPC_INVALID_PARAMS, "depth must be positive",
				    NULL);
}

static int set_error_then_ok(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	mcp_result_add_text(out, "partial");
	mcp_result_set_error(out, -32001, "gone", NULL);
	return MCP_OK;
}

static int returns_tool_error(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	mcp_result_add_text(out, "work in progress");
	return mcp_result_tool_error(out, "no such file: %s (%d)", "a.txt", 2);
}

static int returns_einval(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	if (json_object_object_get_ex(args, "say", NULL))
		mcp_result_add_text(out, "x must be below 10");
	return MCP_EINVAL;
}

static int returns_url_required(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_set_url_elicitation_required(out, "Sign in", "https://example.com/in",
						       "el-9");
}

static int structured(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *mode = "good";
	mcp_args_string(args, "mode", &mode);
	if (strcmp(mode, "none") == 0)
		return mcp_result_add_text(out, "no structure");
	json_object *o = json_object_new_object();
	json_object_object_add(o, "n", strcmp(mode, "good") == 0 ? json_object_new_int(7)
								 : json_object_new_string("seven"));
	mcp_result_set_structured(out, o);
	mcp_result_set_is_error(out, strcmp(mode, "error") == 0);
	return mcp_result_add_text(out, "7");
}

/* Reports what mcp_args_* made of its arguments. */
static int read_args(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *s = "dflt";
	int64_t i = -1;
	double d = -1;
	int b = -1;
	json_object *o = NULL, *a = NULL;
	char text[512];
	int rs = mcp_args_string(args, "s", &s);
	int ri = mcp_args_int64(args, "i", &i);
	int rd = mcp_args_double(args, "d", &d);
	int rb = mcp_args_bool(args, "b", &b);
	int ro = mcp_args_object(args, "o", &o);
	int ra = mcp_args_array(args, "a", &a);
	snprintf(text, sizeof text, "s=%d:%s i=%d:%lld d=%d:%g b=%d:%d o=%d:%d a=%d:%d", rs, s, ri,
		 (long long)i, rd, d, rb, b, ro, o ? json_object_object_length(o) : -1, ra,
		 a ? (int)json_object_array_length(a) : -1);
	return mcp_result_add_text(out, text);
}

static int read_resource(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			 void *user)
{
	(void)ctx;
	(void)vars;
	(void)user;
	return mcp_contents_add_text(out, uri, "text/plain", "r");
}

static int get_prompt(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *topic = NULL;
	mcp_args_string(args, "topic", &topic);
	if (topic && strcmp(topic, "refuse") == 0)
		return mcp_prompt_set_error(out, -32001, "refused", NULL);
	return mcp_prompt_add_text(out, MCP_ROLE_USER, topic ? topic : "?");
}

/* Asks a one-field form and says what came back. */
static int ask_age(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	mcp_form *f = mcp_form_new("Your age?");
	mcp_field age = { MCP_FIELD_INIT, .kind = MCP_FIELD_INTEGER, .name = "age", .required = 1,
			  .has_minimum = 1, .minimum = 0 };
	mcp_form_add(f, &age);
	json_object *res = NULL;
	int rc = mcp_ctx_elicit_form(ctx, f, 10000, &res);
	mcp_form_free(f);
	if (rc != MCP_OK)
		return mcp_result_tool_error(out, "elicitation: %s", mcp_strerror(rc));
	json_object *content = NULL;
	int64_t v = -1;
	json_object_object_get_ex(res, "content", &content);
	mcp_args_int64(content, "age", &v);
	json_object_put(res);
	char text[64];
	snprintf(text, sizeof text, "age %lld", (long long)v);
	return mcp_result_add_text(out, text);
}

/* ---- plumbing --------------------------------------------------------------- */

static void send_msg(const char *s)
{
	ck_assert_int_eq(mcp_memconn_send(conn, s, strlen(s)), MCP_OK);
}

static json_object *recv_msg(void)
{
	char *line;
	size_t len;
	ck_assert_int_eq(mcp_memconn_recv(conn, 10000, &line, &len), 1);
	json_object *m = json_tokener_parse(line);
	ck_assert_msg(m != NULL, "not JSON: %s", line);
	free(line);
	return m;
}

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
	static int next_id = 1;
	char buf[2048];
	int id = next_id++;
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}",
		 id, method, params);
	send_msg(buf);
	for (;;) {
		json_object *m = recv_msg();
		json_object *jid = at(m, "id");
		if (jid && !at(m, "method") && json_object_get_int(jid) == id)
			return m;
		json_object_put(m);
	}
}

/* tools/call `name` with `args` (JSON text). */
static json_object *call(const char *name, const char *args)
{
	char params[1024];
	snprintf(params, sizeof params, "{\"name\":\"%s\",\"arguments\":%s}", name, args);
	return request("tools/call", params);
}

#define ADD_SCHEMA                                                                             \
	"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"                    \
	"\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"],"                            \
	"\"additionalProperties\":false}"

static void setup(void)
{
	srv = mcp_server_new("tools", "1.0");
	const mcp_tool tools[] = {
		{ MCP_TOOL_INIT, .name = "add", .input_schema = ADD_SCHEMA, .fn = noop },
		{ MCP_TOOL_INIT, .name = "unchecked", .input_schema = ADD_SCHEMA, .fn = noop,
		  .flags = MCP_TOOL_UNCHECKED_ARGS },
		{ MCP_TOOL_INIT, .name = "dated",
		  .input_schema = "{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\","
				  "\"format\":\"date\"}}}",
		  .fn = noop, .flags = MCP_TOOL_CHECK_FORMATS },
		{ MCP_TOOL_INIT, .name = "set_error", .fn = returns_set_error },
		{ MCP_TOOL_INIT, .name = "set_error_ok", .fn = set_error_then_ok },
		{ MCP_TOOL_INIT, .name = "tool_error", .fn = returns_tool_error },
		{ MCP_TOOL_INIT, .name = "einval", .fn = returns_einval },
		{ MCP_TOOL_INIT, .name = "url", .fn = returns_url_required },
		{ MCP_TOOL_INIT, .name = "structured", .fn = structured,
		  .output_schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
				   "\"integer\"}},\"required\":[\"n\"]}" },
		{ MCP_TOOL_INIT, .name = "structured_unchecked", .fn = structured, .flags = MCP_TOOL_UNCHECKED_OUTPUT,
		  .output_schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
				   "\"integer\"}},\"required\":[\"n\"]}" },
		{ MCP_TOOL_INIT, .name = "read_args", .fn = read_args, .flags = MCP_TOOL_UNCHECKED_ARGS },
		{ MCP_TOOL_INIT, .name = "ask_age", .fn = ask_age },
	};
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		ck_assert_int_eq(mcp_server_add_tool(srv, &tools[i]), MCP_OK);
	mcp_prompt_arg args[] = { { MCP_PROMPT_ARG_INIT, .name = "topic", .required = 1 }, { MCP_PROMPT_ARG_INIT, .name = "style" } };
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "greet", .args = args, .nargs = 2, .get = get_prompt };
	ck_assert_int_eq(mcp_server_add_prompt(srv, &p), MCP_OK);
	ck_assert_int_eq(mcp_server_start_memory(srv, &conn), MCP_OK);
	json_object_put(request("initialize", "{\"protocolVersion\":\"2025-11-25\","
					      "\"capabilities\":{\"elicitation\":{}}}"));
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	json_object_put(request("ping", "{}"));
}

static void teardown(void)
{
	mcp_memconn_close(conn);
	ck_assert_int_eq(mcp_memconn_free(conn), MCP_OK);
	mcp_server_free(srv);
}

/* ---- registration ------------------------------------------------------------ */

START_TEST(registration_refuses_what_breaks_clients)
{
	mcp_server *s = mcp_server_new("reg", "1");
	struct {
		mcp_tool tool;
		const char *why;
	} bad[] = {
		{ { MCP_TOOL_INIT, .name = "", .fn = noop }, "name \"\": a tool name is 1 to 128 characters" },
		{ { MCP_TOOL_INIT, .name = "has space/and:colon", .fn = noop },
		  "name \"has space/and:colon\": a tool name is 1 to 128 characters" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop, .input_schema = "{\"type\":\"string\"}" },
		  "input_schema: \"type\" must be \"object\"" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop, .input_schema = "{\"properties\":{}}" },
		  "input_schema: \"type\" must be \"object\"" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop, .input_schema = "[1]" },
		  "input_schema: not the text of a JSON object" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop,
		    .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"pattern\":\"(\"}}}" },
		  "input_schema: schema /properties/a/pattern: invalid regular expression" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop,
		    .input_schema = "{\"type\":\"object\",\"$ref\":\"https://example.com/x.json\"}" },
		  "input_schema: schema /$ref: \"https://example.com/x.json\" names" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop, .output_schema = "{\"type\":\"array\"}" },
		  "output_schema: \"type\" must be \"object\"" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop, .annotations = "3" },
		  "annotations: not the text of a JSON object" },
		{ { MCP_TOOL_INIT, .name = "t" }, "t: fn (the handler) is required" },
		{ { MCP_TOOL_INIT, .name = "t", .fn = noop, .input_schema = "{\"type\":\"object\",\"$ref\":\"#\"}" },
		  "input_schema: schema /$ref: a loop" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char why[512];
		ck_assert_int_eq(mcp_server_add_tool(s, &bad[i].tool), MCP_EINVAL);
		ck_assert_int_eq(mcp_tool_check(&bad[i].tool, why, sizeof why), MCP_EINVAL);
		ck_assert_msg(strncmp(why, bad[i].why, strlen(bad[i].why)) == 0,
			      "case %zu: %s\n does not start with %s", i, why, bad[i].why);
	}
	/* A 129-character name is one too many; 128 are fine. */
	char name[130];
	memset(name, 'n', 129);
	name[129] = 0;
	mcp_tool t = { MCP_TOOL_INIT, .name = name, .fn = noop };
	ck_assert_int_eq(mcp_server_add_tool(s, &t), MCP_EINVAL);
	name[128] = 0;
	ck_assert_int_eq(mcp_server_add_tool(s, &t), MCP_OK);
	mcp_tool ok = { MCP_TOOL_INIT, .name = "Ab-9_.z", .fn = noop, .input_schema = ADD_SCHEMA };
	char why[64] = "untouched";
	ck_assert_int_eq(mcp_tool_check(&ok, why, sizeof why), MCP_OK);
	ck_assert_str_eq(why, "");
	ck_assert_int_eq(mcp_server_add_tool(s, &ok), MCP_OK);
	/* A duplicate keeps its own code. */
	ck_assert_int_eq(mcp_server_add_tool(s, &ok), MCP_EEXIST);
	/* The reason is cut to the buffer, never overrun. */
	char tiny[8];
	ck_assert_int_eq(mcp_tool_check(&bad[2].tool, tiny, sizeof tiny), MCP_EINVAL);
	ck_assert_str_eq(tiny, "input_s");
	ck_assert_int_eq(mcp_tool_check(&bad[2].tool, NULL, 0), MCP_EINVAL);
	ck_assert_int_eq(mcp_tool_check(NULL, NULL, 0), MCP_EINVAL);
	mcp_server_free(s);
}
END_TEST

/* ---- descriptor sizes ----------------------------------------------------------- */

/* A descriptor as a program built against a newer header passes it: the
 * struct this library knows, then members it does not. */
struct newer_tool {
	mcp_tool known;
	void *later_pointer;
	int64_t later_number;
};

START_TEST(descriptors_are_read_by_their_declared_size)
{
	mcp_server *s = mcp_server_new("sizes", "1");
	char why[256];

	/* struct_size not set: the INIT macro was forgotten. */
	mcp_tool bare = { .name = "bare", .fn = noop };
	ck_assert_int_eq(mcp_server_add_tool(s, &bare), MCP_EINVAL);
	ck_assert_int_eq(mcp_tool_check(&bare, why, sizeof why), MCP_EINVAL);
	ck_assert_msg(strstr(why, "struct_size") != NULL, "why: %s", why);
	/* Smaller than the first release of the struct. */
	mcp_tool small = { MCP_TOOL_INIT, .name = "small", .fn = noop };
	small.struct_size = offsetof(mcp_tool, flags);
	ck_assert_int_eq(mcp_server_add_tool(s, &small), MCP_EINVAL);

	/* Newer and larger, the unknown members left zero: accepted. */
	struct newer_tool nt;
	memset(&nt, 0, sizeof nt);
	nt.known = (mcp_tool){ MCP_TOOL_INIT, .name = "newer", .fn = noop };
	nt.known.struct_size = sizeof nt;
	ck_assert_int_eq(mcp_tool_check(&nt.known, why, sizeof why), MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(s, &nt.known), MCP_OK);
	/* ... and with an unknown member set: refused, nothing registered. */
	nt.known.name = "newer2";
	nt.later_number = 7;
	ck_assert_int_eq(mcp_server_add_tool(s, &nt.known), MCP_ENOTSUP);
	ck_assert_int_eq(mcp_tool_check(&nt.known, why, sizeof why), MCP_ENOTSUP);
	ck_assert_msg(strstr(why, "newer than this library") != NULL, "why: %s", why);
	ck_assert_int_eq(mcp_server_remove_tool(s, "newer2"), MCP_ENOENT);
	ck_assert_int_eq(mcp_server_remove_tool(s, "newer"), MCP_OK);

	/* The other descriptors follow the same rule. */
	mcp_resource r = { .uri = "test://r", .name = "r", .read = read_resource };
	ck_assert_int_eq(mcp_server_add_resource(s, &r), MCP_EINVAL);
	r.struct_size = sizeof r;
	ck_assert_int_eq(mcp_server_add_resource(s, &r), MCP_OK);
	mcp_resource_template t = { .uri_template = "test://t/{x}", .name = "t",
				    .read = read_resource };
	ck_assert_int_eq(mcp_server_add_resource_template(s, &t), MCP_EINVAL);
	t.struct_size = sizeof t;
	ck_assert_int_eq(mcp_server_add_resource_template(s, &t), MCP_OK);
	mcp_form *f = mcp_form_new("m");
	mcp_field fld = { .kind = MCP_FIELD_STRING, .name = "x" };
	ck_assert_int_eq(mcp_form_add(f, &fld), MCP_EINVAL);
	fld.struct_size = sizeof fld;
	ck_assert_int_eq(mcp_form_add(f, &fld), MCP_OK);
	mcp_form_free(f);

	/* Prompt arguments: the array is stepped through by the elements'
	 * struct_size, which must be the same in each. */
	mcp_prompt_arg args[2] = { { MCP_PROMPT_ARG_INIT, .name = "a" },
				   { MCP_PROMPT_ARG_INIT, .name = "b" } };
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "p", .args = args, .nargs = 2,
			 .get = get_prompt };
	args[1].struct_size = 0;
	ck_assert_int_eq(mcp_server_add_prompt(s, &p), MCP_EINVAL);
	args[1].struct_size = sizeof args[1];
	p.struct_size = 0;
	ck_assert_int_eq(mcp_server_add_prompt(s, &p), MCP_EINVAL);
	p.struct_size = sizeof p;
	ck_assert_int_eq(mcp_server_add_prompt(s, &p), MCP_OK);
	/* A newer caller's larger elements: read at its stride. */
	struct newer_arg {
		mcp_prompt_arg known;
		const char *later;
	} wide[2];
	memset(wide, 0, sizeof wide);
	for (int i = 0; i < 2; i++)
		wide[i].known.struct_size = sizeof wide[i];
	wide[0].known.name = "first";
	wide[1].known.name = "second";
	wide[1].known.required = 1;
	mcp_prompt pw = { MCP_PROMPT_INIT, .name = "pw", .args = &wide[0].known, .nargs = 2,
			  .get = get_prompt };
	ck_assert_int_eq(mcp_server_add_prompt(s, &pw), MCP_OK);
	wide[1].later = "set";
	pw.name = "pw2";
	ck_assert_int_eq(mcp_server_add_prompt(s, &pw), MCP_ENOTSUP);
	mcp_server_free(s);
}
END_TEST

/* ---- arguments ------------------------------------------------------------------ */

START_TEST(arguments_are_checked_before_the_handler)
{
	static const struct {
		const char *args, *text;
	} cases[] = {
		{ "{\"b\":3}", "Input validation error: (root): missing required property \"a\" "
			       "(required)" },
		{ "{\"a\":\"two\",\"b\":3}",
		  "Input validation error: /a: expected number, got string (type)" },
		{ "{\"a\":\"2\",\"b\":3}",
		  "Input validation error: /a: expected number, got string (type)" },
		{ "{\"a\":1,\"b\":2,\"c\":\"extra\"}",
		  "Input validation error: /c: property \"c\" is not allowed "
		  "(additionalProperties)" },
		{ "{}", "Input validation error: (root): missing required property \"a\" "
			"(required)" },
		{ "{\"a\":null,\"b\":true}",
		  "Input validation error: /a: expected number, got null (type)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_object *m = call("add", cases[i].args);
		ck_assert_msg(!at(m, "error"), "%s: a JSON-RPC error", cases[i].args);
		ck_assert_str_eq(str_at(m, "result.isError"), "true");
		ck_assert_str_eq(str_at(m, "result.content.0.text"), cases[i].text);
		ck_assert_int_eq(json_object_array_length(at(m, "result.content")), 1);
		json_object_put(m);
	}
	/* No arguments at all is the empty object. */
	json_object *m = request("tools/call", "{\"name\":\"add\"}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "Input validation error: (root): missing required property \"a\" "
			 "(required)");
	json_object_put(m);
	m = call("add", "{\"a\":1,\"b\":2.5}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "ran");
	ck_assert_ptr_null(at(m, "result.isError"));
	json_object_put(m);
	/* Switched off per tool: the handler gets anything. */
	m = call("unchecked", "{\"a\":\"two\"}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "ran");
	json_object_put(m);
	/* Formats assert where the tool asks. */
	m = call("dated", "{\"d\":\"2025-02-30\"}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "Input validation error: /d: must be a valid date (format)");
	json_object_put(m);
	m = call("dated", "{\"d\":\"2024-02-29\"}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "ran");
	json_object_put(m);
}
END_TEST

START_TEST(typed_accessors)
{
	json_object *m = call("read_args", "{\"s\":\"x\",\"i\":42,\"d\":1.5,\"b\":true,"
					   "\"o\":{\"k\":1},\"a\":[1,2,3]}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "s=1:x i=1:42 d=1:1.5 b=1:1 o=1:1 a=1:3");
	json_object_put(m);
	/* Absent or null: 0, and the default stays. */
	m = call("read_args", "{\"s\":null,\"i\":null}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "s=0:dflt i=0:-1 d=0:-1 b=0:-1 o=0:-1 a=0:-1");
	json_object_put(m);
	/* Wrong types: MCP_EINVAL (-2), the default stays. */
	m = call("read_args", "{\"s\":1,\"i\":1.5,\"d\":\"1\",\"b\":0,\"o\":[],\"a\":{}}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "s=-2:dflt i=-2:-1 d=-2:-1 b=-2:-1 o=-2:-1 a=-2:-1");
	json_object_put(m);
	/* Integers: 3.0 is one, 2^63 does not fit, a big double is not. */
	m = call("read_args", "{\"i\":3.0,\"d\":7}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "s=0:dflt i=1:3 d=1:7 b=0:-1 o=0:-1 a=0:-1");
	json_object_put(m);
	m = call("read_args", "{\"i\":9223372036854775808}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "s=0:dflt i=-2:-1 d=0:-1 b=0:-1 o=0:-1 a=0:-1");
	json_object_put(m);
	m = call("read_args", "{\"i\":-9223372036854775808}");
	ck_assert_ptr_nonnull(strstr(str_at(m, "result.content.0.text"),
				     "i=1:-9223372036854775808"));
	json_object_put(m);
	m = call("read_args", "{\"i\":1e19}");
	ck_assert_ptr_nonnull(strstr(str_at(m, "result.content.0.text"), "i=-2:-1"));
	json_object_put(m);
	/* NULL arguments. */
	int64_t v = 5;
	const char *s = NULL;
	ck_assert_int_eq(mcp_args_int64(NULL, "i", &v), MCP_EINVAL);
	json_object *empty = json_object_new_object();
	ck_assert_int_eq(mcp_args_string(empty, NULL, &s), MCP_EINVAL);
	ck_assert_int_eq(mcp_args_bool(empty, "b", NULL), MCP_EINVAL);
	json_object_put(empty);
	ck_assert_int_eq(v, 5);
}
END_TEST

/* A string holding U+0000 is never handed over cut: mcp_args_string
 * refuses it, mcp_args_string_len gives it whole. */
START_TEST(strings_with_nul_are_not_cut)
{
	json_object *args = json_object_new_object();
	json_object_object_add(args, "s", json_object_new_string_len("secret\0.txt", 11));
	json_object_object_add(args, "plain", json_object_new_string("ok"));
	const char *s = "dflt";
	size_t n = 99;
	ck_assert_int_eq(mcp_args_string(args, "s", &s), MCP_EINVAL);
	ck_assert_str_eq(s, "dflt");
	ck_assert_int_eq(mcp_args_string_len(args, "s", &s, &n), 1);
	ck_assert_uint_eq(n, 11);
	ck_assert(memcmp(s, "secret\0.txt", 12) == 0);
	ck_assert_int_eq(mcp_args_string(args, "plain", &s), 1);
	ck_assert_str_eq(s, "ok");
	ck_assert_int_eq(mcp_args_string_len(args, "plain", &s, &n), 1);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(mcp_args_string_len(args, "absent", &s, &n), 0);
	ck_assert_int_eq(mcp_args_string_len(args, "s", &s, NULL), MCP_EINVAL);
	json_object_put(args);
}
END_TEST

/* Non-finite numbers are refused where a handler sets them. */
START_TEST(nonfinite_results_are_refused)
{
	mcp_result r;
	api_result_init(&r, API_REV_2025_11_25);
	double bad[] = { 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0 };
	for (size_t i = 0; i < 3; i++) {
		json_object *o = json_object_new_object();
		json_object *l = json_object_new_array();
		json_object_array_add(l, json_object_new_double(bad[i]));
		json_object_object_add(o, "l", l);
		ck_assert_int_eq(mcp_result_set_structured(&r, o), MCP_EINVAL);
		json_object *b = json_object_new_object();
		json_object_object_add(b, "type", json_object_new_string("text"));
		json_object_object_add(b, "x", json_object_new_double(bad[i]));
		ck_assert_int_eq(mcp_result_add_content(&r, b), MCP_EINVAL);
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "sum", json_object_new_double(1.5e308));
	ck_assert_int_eq(mcp_result_set_structured(&r, o), MCP_OK);
	api_result_clear(&r);
}
END_TEST

/* ---- the error API ---------------------------------------------------------------- */

START_TEST(error_setters_mean_what_they_say_when_returned)
{
	/* return mcp_result_set_error(...): the error, not an empty success. */
	json_object *m = call("set_error", "{}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), MCP_JSONRPC_INVALID_PARAMS);
	ck_assert_str_eq(str_at(m, "error.message"), "depth must be positive");
	ck_assert_ptr_null(at(m, "result"));
	json_object_put(m);
	/* An error set, then MCP_OK returned: the error still wins. */
	m = call("set_error_ok", "{}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32001);
	json_object_put(m);
	m = call("url", "{}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")),
			 MCP_JSONRPC_URL_ELICITATION_REQUIRED);
	ck_assert_str_eq(str_at(m, "error.data.elicitations.0.elicitationId"), "el-9");
	json_object_put(m);
	/* A tool error replaces what was there, and is a result. */
	m = call("tool_error", "{}");
	ck_assert_str_eq(str_at(m, "result.isError"), "true");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "no such file: a.txt (2)");
	ck_assert_int_eq(json_object_array_length(at(m, "result.content")), 1);
	json_object_put(m);
	/* MCP_EINVAL from a handler: a tool error, never -32602. */
	m = call("einval", "{}");
	ck_assert_str_eq(str_at(m, "result.isError"), "true");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "The tool refused its arguments.");
	json_object_put(m);
	m = call("einval", "{\"say\":1}");
	ck_assert_str_eq(str_at(m, "result.isError"), "true");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "x must be below 10");
	json_object_put(m);
	/* The setters' codes, directly. */
	mcp_result r;
	api_result_init(&r, API_REV_2025_11_25);
	ck_assert_int_eq(mcp_result_set_error(&r, -32000, "x", NULL), MCP_ERESULT);
	ck_assert_int_eq(mcp_result_set_error(&r, 0, "x", NULL), MCP_EINVAL);
	ck_assert_int_eq(mcp_result_set_url_elicitation_required(&r, "m", "https://e.x", "i"),
			 MCP_ERESULT);
	ck_assert_int_eq(mcp_result_tool_error(&r, "%s", "t"), MCP_OK);
	ck_assert_int_eq(mcp_result_tool_error(NULL, "t"), MCP_EINVAL);
	api_result_clear(&r);
	ck_assert_str_eq(mcp_strerror(MCP_ERESULT), "answered with the error set on the result");
}
END_TEST

START_TEST(results_are_checked_against_the_output_schema)
{
	json_object *m = call("structured", "{}");
	ck_assert_int_eq(json_object_get_int(at(m, "result.structuredContent.n")), 7);
	json_object_put(m);
	m = call("structured", "{\"mode\":\"bad\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), MCP_JSONRPC_INTERNAL_ERROR);
	ck_assert_str_eq(str_at(m, "error.message"),
			 "Internal error: the tool's result does not match its outputSchema: /n: "
			 "expected integer, got string (type)");
	json_object_put(m);
	m = call("structured", "{\"mode\":\"none\"}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), MCP_JSONRPC_INTERNAL_ERROR);
	ck_assert_ptr_nonnull(strstr(str_at(m, "error.message"), "returned no structuredContent"));
	json_object_put(m);
	/* Error results are exempt; so is a tool that switched the check off. */
	m = call("structured", "{\"mode\":\"error\"}");
	ck_assert_str_eq(str_at(m, "result.isError"), "true");
	json_object_put(m);
	m = call("structured_unchecked", "{\"mode\":\"bad\"}");
	ck_assert_str_eq(str_at(m, "result.structuredContent.n"), "seven");
	json_object_put(m);
}
END_TEST

/* ---- prompts and elicitation ----------------------------------------------------- */

START_TEST(prompt_arguments_are_checked)
{
	json_object *m = request("prompts/get", "{\"name\":\"greet\",\"arguments\":{}}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), MCP_JSONRPC_INVALID_PARAMS);
	ck_assert_str_eq(str_at(m, "error.message"),
			 "Invalid params: (root): missing required property \"topic\" (required)");
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"greet\",\"arguments\":{\"topic\":\"t\","
				   "\"style\":3}}");
	ck_assert_str_eq(str_at(m, "error.message"),
			 "Invalid params: /style: expected string, got integer (type)");
	ck_assert_str_eq(str_at(m, "error.data.path"), "/style");
	ck_assert_str_eq(str_at(m, "error.data.rule"), "type");
	json_object_put(m);
	m = request("prompts/get", "{\"name\":\"greet\",\"arguments\":{\"topic\":\"cats\"}}");
	ck_assert_str_eq(str_at(m, "result.messages.0.content.text"), "cats");
	json_object_put(m);
	/* return mcp_prompt_set_error(...) sends the error. */
	m = request("prompts/get", "{\"name\":\"greet\",\"arguments\":{\"topic\":\"refuse\"}}");
	ck_assert_int_eq(json_object_get_int(at(m, "error.code")), -32001);
	json_object_put(m);
}
END_TEST

/* Starts ask_age, answers its elicitation with `content`, returns the
 * tool's answer. */
static json_object *answer_age(const char *content)
{
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"age\",\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"ask_age\",\"arguments\":{}}}");
	json_object *req = recv_msg();
	ck_assert_str_eq(str_at(req, "method"), "elicitation/create");
	ck_assert_str_eq(str_at(req, "params.requestedSchema.properties.age.type"), "integer");
	char buf[512];
	snprintf(buf, sizeof buf,
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"action\":\"accept\",\"content\":%s}}",
		 json_object_get_int(at(req, "id")), content);
	json_object_put(req);
	send_msg(buf);
	for (;;) {
		json_object *m = recv_msg();
		if (json_object_is_type(at(m, "id"), json_type_string))
			return m;
		json_object_put(m);
	}
}

START_TEST(elicitation_answers_are_checked)
{
	json_object *m = answer_age("{\"age\":41}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"), "age 41");
	json_object_put(m);
	m = answer_age("{\"age\":\"forty\"}");
	ck_assert_str_eq(str_at(m, "result.content.0.text"),
			 "elicitation: protocol violation by the peer");
	json_object_put(m);
	m = answer_age("{\"age\":-1}");
	ck_assert_str_eq(str_at(m, "result.isError"), "true");
	json_object_put(m);
	m = answer_age("{}");
	ck_assert_str_eq(str_at(m, "result.isError"), "true");
	json_object_put(m);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("tools");
	TCase *reg = tcase_create("registration");
	tcase_add_test(reg, registration_refuses_what_breaks_clients);
	tcase_add_test(reg, descriptors_are_read_by_their_declared_size);
	suite_add_tcase(s, reg);
	TCase *tc = tcase_create("calls");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, arguments_are_checked_before_the_handler);
	tcase_add_test(tc, typed_accessors);
	tcase_add_test(tc, strings_with_nul_are_not_cut);
	tcase_add_test(tc, nonfinite_results_are_refused);
	tcase_add_test(tc, error_setters_mean_what_they_say_when_returned);
	tcase_add_test(tc, results_are_checked_against_the_output_schema);
	tcase_add_test(tc, prompt_arguments_are_checked);
	tcase_add_test(tc, elicitation_answers_are_checked);
	suite_add_tcase(s, tc);
	return s;
}
