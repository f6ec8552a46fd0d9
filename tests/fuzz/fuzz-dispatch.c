/*
 * fuzz-dispatch.c - libFuzzer target for the whole server: a fresh
 * mcp_server with tools, resources, templates and prompts per input,
 * served over the in-memory connection, fed the input as lines.
 *
 * Byte 0 chooses an optional valid initialize (revision and client
 * capabilities) sent first, so the fuzzer starts past the lifecycle, and
 * whether the client answers the server's own requests; the rest is split
 * at newlines, each piece sent as one message; then the input is closed
 * and everything the server wrote is read and checked:
 * strict UTF-8 JSON-RPC lines, no id answered more often than it was
 * used, every handler that started ended once, nothing abandoned.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>

#include "tests/fuzz/wire-check.h"

#define FAILF(...)                                              \
	do {                                                    \
		fprintf(stderr, "fuzz-dispatch: " __VA_ARGS__); \
		fputc('\n', stderr);                            \
		abort();                                        \
	} while (0)

/* ---- handlers: each honours its token and keeps its waits short -------- */

static json_object *arg(json_object *args, const char *key)
{
	json_object *v = NULL;
	json_object_object_get_ex(args, key, &v);
	return v;
}

static int64_t int_arg(json_object *args, const char *key, int64_t lo, int64_t hi)
{
	int64_t v = json_object_get_int64(arg(args, key));
	return v < lo ? lo : v > hi ? hi : v;
}

/* Builds every kind of content the arguments ask for. */
static int tool_echo(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	json_object *text = arg(args, "text");
	if (text && !json_object_is_type(text, json_type_string)) {
		mcp_result_set_error(out, MCP_JSONRPC_INVALID_PARAMS, "text must be a string",
				     json_object_get(text));
		return MCP_EINVAL;
	}
	const char *s = text ? json_object_get_string(text) : "";
	size_t n = text ? (size_t)json_object_get_string_len(text) : 0;
	int rc = mcp_result_add_text_len(out, s, strlen(s) < n ? strlen(s) : n);
	if (rc == MCP_OK && json_object_get_boolean(arg(args, "image")))
		rc = mcp_result_add_image(out, s, n, "image/png");
	if (rc == MCP_OK && json_object_get_boolean(arg(args, "audio")))
		rc = mcp_result_add_audio(out, s, n, "audio/wav");
	if (rc == MCP_OK && json_object_get_boolean(arg(args, "link")))
		rc = mcp_result_add_resource_link(out, "mem://a", "a", s, "text/plain");
	if (rc == MCP_OK && json_object_get_boolean(arg(args, "embed")))
		rc = mcp_result_add_resource_text(out, "mem://a", NULL, s);
	if (rc == MCP_OK && json_object_get_boolean(arg(args, "blob")))
		rc = mcp_result_add_resource_blob(out, "mem://b", "application/octet-stream", s, n);
	json_object *st = arg(args, "structured");
	if (rc == MCP_OK && st) {
		json_object *copy = NULL;
		if (json_object_deep_copy(st, &copy, NULL) == 0)
			rc = mcp_result_set_structured(out, copy);
		if (rc == MCP_EINVAL)
			rc = MCP_OK;
	}
	if (json_object_get_boolean(arg(args, "is_error")))
		mcp_result_set_is_error(out, 1);
	int code = json_object_get_int(arg(args, "error_code"));
	if (rc == MCP_OK && code != 0) {
		mcp_result_set_error(out, code, s, NULL);
		return MCP_EINVAL;
	}
	return rc;
}

static int tool_sleep(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int rc = mcp_ctx_sleep(ctx, int_arg(args, "ms", 0, 20));
	if (rc != MCP_OK)
		return rc;
	return mcp_result_add_text(out, "slept");
}

static int tool_progress(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
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

/* Asks the client for roots, a sample and a form; the fuzz input may or
 * may not answer (our request ids count from 1). */
static int tool_ask(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t timeout = int_arg(args, "timeout_ms", 0, 20);
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
};

static int read_resource(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			 void *user)
{
	(void)ctx;
	(void)user;
	json_object *path = arg(vars, "path");
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

static int complete(mcp_ctx *ctx, const char *argument, const char *value, json_object *context,
		    mcp_completion *out, void *user)
{
	(void)ctx;
	(void)context;
	(void)user;
	mcp_completion_add(out, argument);
	mcp_completion_add(out, value);
	if (value && value[0] == 'x')
		for (int i = 0; i < 120; i++)
			mcp_completion_add(out, "x");
	return MCP_OK;
}

static int get_prompt(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *name = json_object_get_string(arg(args, "name"));
	mcp_prompt_set_description(out, "a greeting");
	int rc = mcp_prompt_add_text(out, MCP_ROLE_USER, name ? name : "world");
	if (rc == MCP_OK)
		rc = mcp_prompt_add_image(out, MCP_ROLE_ASSISTANT, "png", 3, "image/png");
	if (rc == MCP_OK)
		rc = mcp_prompt_add_resource_text(out, MCP_ROLE_USER, "mem://a", NULL, "text");
	return rc;
}

static const mcp_prompt_arg prompt_args[] = {
	{ MCP_PROMPT_ARG_INIT, .name = "name", .required = 1 },
	{ MCP_PROMPT_ARG_INIT, .name = "style", .description = "how" },
};

/* ---- one session per input ------------------------------------------------ */

typedef struct tally {
	_Atomic int started, cleanups;
} tally;

static void on_trace(const char *event, const char *id_json, const char *reason, void *user)
{
	(void)id_json;
	(void)reason;
	tally *t = user;
	/* Other events ("invalid_output") come between the two. */
	if (strcmp(event, "started") == 0)
		atomic_fetch_add(&t->started, 1);
	else if (strcmp(event, "cleanup") == 0)
		atomic_fetch_add(&t->cleanups, 1);
}

static mcp_server *new_server(tally *t)
{
	mcp_server *srv = mcp_server_new("fuzz", "1.0");
	if (!srv)
		FAILF("mcp_server_new failed");
	mcp_server_set_workers(srv, 2);
	mcp_server_set_grace_ms(srv, 5000);
	mcp_server_set_max_message(srv, 1024);
	mcp_server_set_max_depth(srv, 16);
	mcp_server_set_max_queue(srv, 64);
	mcp_server_set_max_pending(srv, 4);
	mcp_server_set_page_size(srv, 2);
	mcp_server_set_instructions(srv, "fuzzing");
	mcp_server_set_trace(srv, on_trace, t);
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (mcp_server_add_tool(srv, &tools[i]) != MCP_OK)
			FAILF("adding tool %s failed", tools[i].name);
	mcp_resource a = { MCP_RESOURCE_INIT, .uri = "mem://a", .name = "a", .mime_type = "text/plain",
			   .size = 7, .read = read_resource };
	mcp_resource b = { MCP_RESOURCE_INIT, .uri = "mem://b", .name = "b", .read = read_resource };
	mcp_resource_template tpl = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "file:///{path}", .name = "files",
				      .read = read_resource, .complete = complete };
	mcp_resource_template tpl2 = { MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "db://{table}/{row}", .name = "rows",
				       .read = read_resource };
	mcp_prompt p = { MCP_PROMPT_INIT, .name = "greet", .description = "greets", .args = prompt_args,
			 .nargs = 2, .get = get_prompt, .complete = complete };
	if (mcp_server_add_resource(srv, &a) || mcp_server_add_resource(srv, &b) ||
	    mcp_server_add_resource_template(srv, &tpl) ||
	    mcp_server_add_resource_template(srv, &tpl2) || mcp_server_add_prompt(srv, &p))
		FAILF("registration failed");
	return srv;
}

static const char *const versions[] = { NULL, "2025-03-26", "2025-06-18", "2025-11-25" };

/* FUZZ_VERBOSE=1 in the environment shows the conversation on stderr
 * (for reading what a seed or a crash input does). */
static int verbose = -1;

static void show(const char *dir, const char *s, size_t n)
{
	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "%s %.*s\n", dir, (int)n, s);
}

static void send_line(mcp_memconn *c, const char *s, size_t n, wire_ids *sent)
{
	show(">>", s, n);
	wire_note_sent(s, n, sent);
	if (mcp_memconn_send(c, s, n) != MCP_OK)
		FAILF("mcp_memconn_send failed");
}

/* The client's answer to a server-to-client request: a plausible result
 * for each method, or an error for every third id. */
static void answer_request(mcp_memconn *c, const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *m = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	json_tokener_free(tok);
	json_object *id = arg(m, "id"), *method = arg(m, "method");
	if (json_object_is_type(id, json_type_int) && json_object_is_type(method, json_type_string)) {
		const char *name = json_object_get_string(method);
		const char *result =
			json_object_get_int64(id) % 3 == 0 ? NULL
			: strcmp(name, "roots/list") == 0 ? "{\"roots\":[{\"uri\":\"file:///tmp\"}]}"
			: strcmp(name, "sampling/createMessage") == 0
				? "{\"role\":\"assistant\",\"model\":\"m\","
				  "\"content\":{\"type\":\"text\",\"text\":\"hi\"}}"
			: strcmp(name, "elicitation/create") == 0
				? "{\"action\":\"accept\",\"content\":{\"name\":\"x\"}}"
				: "{}";
		char buf[256];
		int n = result ? snprintf(buf, sizeof buf,
					  "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}",
					  (long long)json_object_get_int64(id), result)
			       : snprintf(buf, sizeof buf,
					  "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":"
					  "{\"code\":-1,\"message\":\"no\"}}",
					  (long long)json_object_get_int64(id));
		show(">>", buf, (size_t)n);
		mcp_memconn_send(c, buf, (size_t)n);
	}
	json_object_put(m);
}

/* Reads and checks one line; returns 0 when the output is closed. */
static int take(mcp_memconn *c, int timeout_ms, int answer, const wire_ids *sent,
		wire_ids *answered, int *quiet)
{
	char *line = NULL;
	size_t len = 0;
	int rc = mcp_memconn_recv(c, timeout_ms, &line, &len);
	*quiet = rc == 0;
	if (rc != 1)
		return rc == 0;
	show("<<", line, len);
	char why[256];
	if (wire_check_line(line, len, sent, answered, why, sizeof why) != 0)
		FAILF("output line %.*s: %s", (int)(len > 300 ? 300 : len), line, why);
	if (answer)
		answer_request(c, line, len);
	free(line);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tally t = { 0 };
	mcp_server *srv = new_server(&t);
	mcp_memconn *c = NULL;
	if (mcp_server_start_memory(srv, &c) != MCP_OK)
		FAILF("mcp_server_start_memory failed");
	wire_ids sent, answered;
	wire_ids_init(&sent);
	wire_ids_init(&answered);

	unsigned cfg = size ? data[0] : 0;
	const char *version = versions[cfg & 3];
	if (version) {
		char init[512];
		int n = snprintf(init, sizeof init,
				 "{\"jsonrpc\":\"2.0\",\"id\":\"init\",\"method\":\"initialize\","
				 "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":%s,"
				 "\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}",
				 version,
				 cfg & 4 ? "{\"roots\":{},\"sampling\":{},\"elicitation\":{}}" : "{}");
		send_line(c, init, (size_t)n, &sent);
		if (!(cfg & 8)) {
			static const char done[] =
				"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
			send_line(c, done, sizeof done - 1, &sent);
		}
	}
	const char *p = (const char *)data + (size ? 1 : 0);
	const char *end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		send_line(c, p, n, &sent);
		p += n + (nl ? 1 : 0);
	}
	/* Bit 4: act as a client that answers the server's requests, until
	 * the server has been quiet for 10 ms; then end the input. */
	int quiet = 0;
	if (cfg & 16)
		while (take(c, 10, 1, &sent, &answered, &quiet) && !quiet)
			;
	mcp_memconn_close(c);
	while (take(c, -1, 0, &sent, &answered, &quiet))
		;
	if (mcp_memconn_free(c) != MCP_OK)
		FAILF("the run did not end with MCP_OK");
	char *stats = mcp_server_stats_json(srv);
	if (stats && !strstr(stats, "\"abandoned\":0,"))
		FAILF("a handler was abandoned: %s", stats);
	free(stats);
	if (atomic_load(&t.started) != atomic_load(&t.cleanups))
		FAILF("%d handlers started, %d cleaned up", atomic_load(&t.started),
		      atomic_load(&t.cleanups));
	mcp_server_free(srv);
	wire_ids_free(&sent);
	wire_ids_free(&answered);
	return 0;
}
