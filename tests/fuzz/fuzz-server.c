/*
 * fuzz-server.c - the handlers both dispatch targets serve (fuzz-dispatch,
 * fuzz-dispatch-push): tools that build every kind of content, sleep, report
 * progress and log, ask the client for roots, a sample and a form; two
 * resources, two templates and a prompt with completions.  Every handler
 * honours its token and waits at most the target's max_wait_ms.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/fuzz/fuzz-server.h"

static int64_t max_wait_ms = 20;
static _Atomic int *running;

/* Counted in *running (when the target asked) from entry to return. */
static void handler_enter(void)
{
	if (running)
		atomic_fetch_add(running, 1);
}

static int handler_leave(int rc)
{
	if (running)
		atomic_fetch_sub(running, 1);
	return rc;
}

/* ---- handlers: each honours its token and keeps its waits short -------- */

json_object *fuzz_arg(json_object *args, const char *key)
{
	json_object *v = NULL;
	json_object_object_get_ex(args, key, &v);
	return v;
}

static int64_t int_arg(json_object *args, const char *key, int64_t lo, int64_t hi)
{
	int64_t v = json_object_get_int64(fuzz_arg(args, key));
	return v < lo ? lo : v > hi ? hi : v;
}

/* Builds every kind of content the arguments ask for. */
static int echo_body(json_object *args, mcp_result *out)
{
	json_object *text = fuzz_arg(args, "text");
	if (text && !json_object_is_type(text, json_type_string)) {
		mcp_result_set_error(out, MCP_JSONRPC_INVALID_PARAMS, "text must be a string",
				     json_object_get(text));
		return MCP_EINVAL;
	}
	const char *s = text ? json_object_get_string(text) : "";
	size_t n = text ? (size_t)json_object_get_string_len(text) : 0;
	int rc = mcp_result_add_text_len(out, s, strlen(s) < n ? strlen(s) : n);
	if (rc == MCP_OK && json_object_get_boolean(fuzz_arg(args, "image")))
		rc = mcp_result_add_image(out, s, n, "image/png");
	if (rc == MCP_OK && json_object_get_boolean(fuzz_arg(args, "audio")))
		rc = mcp_result_add_audio(out, s, n, "audio/wav");
	if (rc == MCP_OK && json_object_get_boolean(fuzz_arg(args, "link")))
		rc = mcp_result_add_resource_link(out, "mem://a", "a", s, "text/plain");
	if (rc == MCP_OK && json_object_get_boolean(fuzz_arg(args, "embed")))
		rc = mcp_result_add_resource_text(out, "mem://a", NULL, s);
	if (rc == MCP_OK && json_object_get_boolean(fuzz_arg(args, "blob")))
		rc = mcp_result_add_resource_blob(out, "mem://b", "application/octet-stream", s, n);
	json_object *st = fuzz_arg(args, "structured");
	if (rc == MCP_OK && st) {
		json_object *copy = NULL;
		if (json_object_deep_copy(st, &copy, NULL) == 0)
			rc = mcp_result_set_structured(out, copy);
		if (rc == MCP_EINVAL)
			rc = MCP_OK;
	}
	if (json_object_get_boolean(fuzz_arg(args, "is_error")))
		mcp_result_set_is_error(out, 1);
	int code = json_object_get_int(fuzz_arg(args, "error_code"));
	if (rc == MCP_OK && code != 0) {
		mcp_result_set_error(out, code, s, NULL);
		return MCP_EINVAL;
	}
	return rc;
}

static int tool_echo(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	handler_enter();
	return handler_leave(echo_body(args, out));
}

static int tool_sleep(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	handler_enter();
	int rc = mcp_ctx_sleep(ctx, int_arg(args, "ms", 0, max_wait_ms));
	if (rc == MCP_OK)
		rc = mcp_result_add_text(out, "slept");
	return handler_leave(rc);
}

static int progress_body(mcp_ctx *ctx, json_object *args, mcp_result *out)
{
	int64_t steps = int_arg(args, "steps", 0, 5);
	for (int64_t i = 1; i <= steps; i++) {
		int rc = mcp_ctx_progress(ctx, (double)i, (double)steps, "step");
		if (rc == MCP_ECANCELED)
			return rc;
		mcp_ctx_log_text(ctx, (mcp_log_level)(i % 8), "fuzz", "a log line");
	}
	mcp_ctx_log(ctx, MCP_LOG_INFO, NULL, json_object_get(args));
	return mcp_result_add_text(out, "done");
}

static int tool_progress(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	handler_enter();
	return handler_leave(progress_body(ctx, args, out));
}

/* Asks the client for roots, a sample and a form; the input (byte 0 bit
 * 7) may or may not answer (our request ids count from 1). */
static int ask_body(mcp_ctx *ctx, json_object *args, mcp_result *out)
{
	int64_t timeout = int_arg(args, "timeout_ms", 0, max_wait_ms);
	json_object *res = NULL;
	int rc = mcp_ctx_list_roots(ctx, timeout, &res);
	json_object_put(res);
	if (rc == MCP_ECANCELED || rc == MCP_ECLOSED)
		return rc;
	rc = mcp_ctx_sample_text(ctx, "system", "hello", 10, timeout, &res);
	json_object_put(res);
	if (rc == MCP_ECANCELED || rc == MCP_ECLOSED)
		return rc;
	mcp_form *form = mcp_form_new("who are you?");
	if (form) {
		mcp_field f = { MCP_FIELD_INIT, .kind = MCP_FIELD_STRING, .name = "name", .required = 1 };
		mcp_form_add(form, &f);
		rc = mcp_ctx_elicit_form(ctx, form, timeout, &res);
		json_object_put(res);
		mcp_form_free(form);
		if (rc == MCP_ECANCELED || rc == MCP_ECLOSED)
			return rc;
	}
	return mcp_result_add_text(out, mcp_strerror(rc));
}

static int tool_ask(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	handler_enter();
	return handler_leave(ask_body(ctx, args, out));
}

static const mcp_tool tools[] = {
	{ MCP_TOOL_INIT, .name = "echo", .description = "echo",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}",
	  .output_schema = "{\"type\":\"object\"}", .fn = tool_echo,
	  .annotations = "{\"readOnlyHint\":true}" },
	{ MCP_TOOL_INIT, .name = "sleep", .title = "Sleep", .fn = tool_sleep,
	  .task_support = MCP_TASKS_OPTIONAL },
	{ MCP_TOOL_INIT, .name = "progress", .fn = tool_progress },
	{ MCP_TOOL_INIT, .name = "ask", .fn = tool_ask },
	{ MCP_TOOL_INIT, .name = "task_only", .fn = tool_sleep, .task_support = MCP_TASKS_REQUIRED },
	/* Run on the thread that fed their call (issue 29). */
	{ MCP_TOOL_INIT, .name = "here", .fn = tool_echo, .flags = MCP_TOOL_NONBLOCKING },
	{ MCP_TOOL_INIT, .name = "here_progress", .fn = tool_progress,
	  .flags = MCP_TOOL_NONBLOCKING },
};

static int read_body(const char *uri, json_object *vars, mcp_contents *out)
{
	json_object *path = fuzz_arg(vars, "path");
	if (path && strcmp(json_object_get_string(path), "missing") == 0)
		return MCP_ENOENT;
	if (path && strcmp(json_object_get_string(path), "error") == 0) {
		mcp_contents_set_error(out, -32000, "resource failed", NULL);
		return MCP_EINVAL;
	}
	if (strcmp(uri, "mem://b") == 0)
		return mcp_contents_add_blob(out, uri, "application/octet-stream", "\0\1\2", 3);
	return mcp_contents_add_text(out, uri, "text/plain", uri);
}

static int read_resource(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			 void *user)
{
	(void)ctx;
	(void)user;
	handler_enter();
	return handler_leave(read_body(uri, vars, out));
}

static int complete(mcp_ctx *ctx, const char *argument, const char *value, json_object *context,
		    mcp_completion *out, void *user)
{
	(void)ctx;
	(void)context;
	(void)user;
	handler_enter();
	mcp_completion_add(out, argument);
	mcp_completion_add(out, value);
	if (value && value[0] == 'x')
		for (int i = 0; i < 120; i++)
			mcp_completion_add(out, "x");
	return handler_leave(MCP_OK);
}

static int prompt_body(json_object *args, mcp_prompt_result *out)
{
	const char *name = json_object_get_string(fuzz_arg(args, "name"));
	mcp_prompt_set_description(out, "a greeting");
	int rc = mcp_prompt_add_text(out, MCP_ROLE_USER, name ? name : "world");
	if (rc == MCP_OK)
		rc = mcp_prompt_add_image(out, MCP_ROLE_ASSISTANT, "png", 3, "image/png");
	if (rc == MCP_OK)
		rc = mcp_prompt_add_resource_text(out, MCP_ROLE_USER, "mem://a", NULL, "text");
	return rc;
}

static int get_prompt(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)user;
	handler_enter();
	return handler_leave(prompt_body(args, out));
}

static const mcp_prompt_arg prompt_args[] = {
	{ MCP_PROMPT_ARG_INIT, .name = "name", .required = 1 },
	{ MCP_PROMPT_ARG_INIT, .name = "style", .description = "how" },
};

int fuzz_client_answer(json_object *m, char *buf, size_t size)
{
	json_object *id = fuzz_arg(m, "id"), *method = fuzz_arg(m, "method");
	if (!json_object_is_type(id, json_type_int) || !json_object_is_type(method, json_type_string))
		return 0;
	const char *name = json_object_get_string(method);
	long long k = (long long)json_object_get_int64(id);
	const char *result =
		k % 3 == 0 ? NULL
		: strcmp(name, "roots/list") == 0 ? "{\"roots\":[{\"uri\":\"file:///tmp\"}]}"
		: strcmp(name, "sampling/createMessage") == 0
			? "{\"role\":\"assistant\",\"model\":\"m\","
			  "\"content\":{\"type\":\"text\",\"text\":\"hi\"}}"
		: strcmp(name, "elicitation/create") == 0
			? "{\"action\":\"accept\",\"content\":{\"name\":\"x\"}}"
			: "{}";
	int n = result ? snprintf(buf, size, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}", k,
				  result)
		       : snprintf(buf, size,
				  "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":"
				  "{\"code\":-1,\"message\":\"no\"}}",
				  k);
	return n > 0 && (size_t)n < size ? n : 0;
}

int fuzz_server_register(mcp_server *srv, int64_t wait_ms, _Atomic int *handlers_running)
{
	max_wait_ms = wait_ms;
	running = handlers_running;
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (mcp_server_add_tool(srv, &tools[i]) != MCP_OK)
			return MCP_EINVAL;
	mcp_resource a = { MCP_RESOURCE_INIT, .uri = "mem://a", .name = "a", .mime_type = "text/plain",
			   .size = 7, .read = read_resource };
	mcp_resource b = { MCP_RESOURCE_INIT, .uri = "mem://b", .name = "b", .read = read_resource };
	mcp_resource_template tpl = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "file:///{path}",
				      .name = "files", .read = read_resource, .complete = complete };
	mcp_resource_template tpl2 = { MCP_RESOURCE_TEMPLATE_INIT,
				       .uri_template = "db://{table}/{row}", .name = "rows",
				       .read = read_resource };
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "greet", .description = "greets", .args = prompt_args,
			 .nargs = 2, .get = get_prompt, .complete = complete };
	if (mcp_server_add_resource(srv, &a) || mcp_server_add_resource(srv, &b) ||
	    mcp_server_add_resource_template(srv, &tpl) ||
	    mcp_server_add_resource_template(srv, &tpl2) || mcp_server_add_prompt(srv, &p))
		return MCP_EINVAL;
	return MCP_OK;
}
