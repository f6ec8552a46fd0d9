/*
 * conformance.c - the fixtures of the official MCP conformance suite
 * (@modelcontextprotocol/conformance 0.1.16, server scenarios) for
 * mcp-everything.
 *
 * Each fixture below names the scenario it serves.  Texts, MIME types,
 * argument names and schemas follow what the scenarios send and assert;
 * where a scenario only describes a result, the description is followed to
 * the letter.  The image and audio fixtures are real files: a 1x1 red RGBA
 * PNG and sixteen samples of a 1 kHz tone as 8 kHz mono 16-bit PCM WAV,
 * generated for this file.
 *
 * Handlers that wait (sleep, sampling, elicitation) use the library's
 * cancellation-aware waits and return MCP_ECANCELED when the request's
 * token fired, so nothing is written for a cancelled call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* How long a tool waits for the client to answer sampling or elicitation.
 * A person may be filling in the form, so it is generous; cancellation and
 * the connection closing end the wait at once anyway. */
#define CLIENT_TIMEOUT_MS 600000

/* ---- media ------------------------------------------------------------------ */

/* PNG, 1x1 pixel, 8-bit RGBA, the pixel opaque red (255, 0, 0, 255). */
static const unsigned char red_pixel_png[70] = {
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d,
	0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
	0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
	0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00,
	0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};

/* RIFF/WAVE, PCM, 1 channel, 8000 Hz, 16 bits, 16 samples of a 1 kHz sine. */
static const unsigned char tone_wav[76] = {
	0x52, 0x49, 0x46, 0x46, 0x44, 0x00, 0x00, 0x00, 0x57, 0x41, 0x56, 0x45,
	0x66, 0x6d, 0x74, 0x20, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
	0x40, 0x1f, 0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x02, 0x00, 0x10, 0x00,
	0x64, 0x61, 0x74, 0x61, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x16,
	0x40, 0x1f, 0x18, 0x16, 0x00, 0x00, 0xe8, 0xe9, 0xc0, 0xe0, 0xe8, 0xe9,
	0x00, 0x00, 0x18, 0x16, 0x40, 0x1f, 0x18, 0x16, 0x00, 0x00, 0xe8, 0xe9,
	0xc0, 0xe0, 0xe8, 0xe9,
};

/* ---- helpers ---------------------------------------------------------------- */

/* A newly allocated formatted string (free()), or NULL when out of memory. */
static char *vformat(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

static char *format(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

/* Appends a formatted text block to a tool result. */
static int add_textf(mcp_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	if (!s)
		return MCP_ENOMEM;
	int rc = mcp_result_add_text(out, s);
	free(s);
	return rc;
}

/* Compact JSON text of `v` (owned by `v`), "{}" for NULL. */
static const char *json_text(json_object *v)
{
	if (!v)
		return "{}";
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
						      JSON_C_TO_STRING_NOSLASHESCAPE);
}

static json_object *member(json_object *obj, const char *key)
{
	json_object *v = NULL;
	if (!json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

/* The string member `key`, or NULL when it is absent or not a string. */
static const char *string_member(json_object *obj, const char *key)
{
	json_object *v = member(obj, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* A tool-level error (isError: true) the model can read. */
static int tool_error(mcp_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	if (!s)
		return MCP_ENOMEM;
	mcp_result_set_is_error(out, 1);
	int rc = mcp_result_add_text(out, s);
	free(s);
	return rc;
}

/* Turns a failed server-to-client request into the tool's answer.  A
 * cancelled request or a closed connection writes nothing: both mean the
 * request's token fired (peer cancel, or end of input, where the waiter
 * may see either code first), and only MCP_ECANCELED makes the library
 * stay silent, so both return it.  Everything else is a tool-level error
 * naming why.  `remote_error` (the client's error object for MCP_EREMOTE)
 * is released. */
static int client_request_failed(mcp_result *out, const char *what, const char *capability,
				 int rc, json_object *remote_error)
{
	int ret;
	if (rc == MCP_ECANCELED) {
		ret = MCP_ECANCELED;
	} else if (rc == MCP_ENOTSUP) {
		ret = tool_error(out, "%s is not available: the client did not declare the %s "
				      "capability, or the negotiated revision lacks it",
				 what, capability);
	} else if (rc == MCP_EREMOTE) {
		const char *msg = string_member(remote_error, "message");
		json_object *code = member(remote_error, "code");
		ret = tool_error(out, "%s failed: the client answered error %lld: %s", what,
				 (long long)json_object_get_int64(code), msg ? msg : "(no message)");
	} else {
		ret = tool_error(out, "%s failed: %s", what, mcp_strerror(rc));
	}
	json_object_put(remote_error);
	return ret;
}

/* Log and progress notifications are best effort, except that a fired
 * token ends the handler. */
static int notify_status(int rc)
{
	return rc == MCP_ECANCELED ? MCP_ECANCELED : MCP_OK;
}

/* ---- tools: content types ----------------------------------------------------- */

/* tools-call-simple-text */
static int tool_simple_text(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_text(out, "This is a simple text response for testing.");
}

/* tools-call-image */
static int tool_image_content(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_image(out, red_pixel_png, sizeof red_pixel_png, "image/png");
}

/* tools-call-audio: the scenario insists on the MIME type audio/wav. */
static int tool_audio_content(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_audio(out, tone_wav, sizeof tone_wav, "audio/wav");
}

/* tools-call-embedded-resource */
static int tool_embedded_resource(mcp_ctx *ctx, json_object *args, mcp_result *out,
				  void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_resource_text(out, "test://embedded-resource", "text/plain",
					    "This is an embedded resource content.");
}

/* tools-call-mixed-content: text, image and an embedded resource. */
static int tool_multiple_content_types(mcp_ctx *ctx, json_object *args, mcp_result *out,
				       void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	int rc = mcp_result_add_text(out, "Multiple content types test:");
	if (rc == MCP_OK)
		rc = mcp_result_add_image(out, red_pixel_png, sizeof red_pixel_png, "image/png");
	if (rc == MCP_OK)
		rc = mcp_result_add_resource_text(out, "test://mixed-content-resource",
						  "application/json",
						  "{\"test\":\"data\",\"value\":123}");
	return rc;
}

/* tools-call-error: fails at its task, which the model should see
 * (isError), as opposed to a JSON-RPC error. */
static int tool_error_handling(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return tool_error(out, "This tool intentionally returns an error for testing");
}

/* ---- tools: notifications during a call -------------------------------------- */

/* tools-call-with-logging: three info messages, 50 ms apart.  The scenario
 * sets the level to debug first, so all three pass the filter. */
static int tool_with_logging(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	static const char *const steps[] = { "Tool execution started", "Tool processing data",
					     "Tool execution completed" };
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		if (i > 0 && mcp_ctx_sleep(ctx, 50) != MCP_OK)
			return MCP_ECANCELED;
		int rc = notify_status(mcp_ctx_log_text(ctx, MCP_LOG_INFO, NULL, steps[i]));
		if (rc != MCP_OK)
			return rc;
	}
	return mcp_result_add_text(out, "Tool with logging executed successfully");
}

/* tools-call-with-progress: 0, 50 and 100 of 100, 50 ms apart.  Without a
 * progressToken the library sends nothing and the delays still happen. */
static int tool_with_progress(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	static const double steps[] = { 0, 50, 100 };
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		if (i > 0 && mcp_ctx_sleep(ctx, 50) != MCP_OK)
			return MCP_ECANCELED;
		char msg[64];
		snprintf(msg, sizeof msg, "Completed step %.0f of 100", steps[i]);
		int rc = notify_status(mcp_ctx_progress(ctx, steps[i], 100, msg));
		if (rc != MCP_OK)
			return rc;
	}
	return mcp_result_add_text(out, "Tool with progress executed successfully");
}

/* server-sse-polling (SEP-1699).  Over streamable HTTP the tool should close
 * the request's SSE stream mid-call and answer after the client resumed
 * with Last-Event-ID; libmcp has no call for closing a request's stream, so
 * this waits as the reference does and answers normally. */
static int tool_reconnection(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	/* Over Streamable HTTP (2025-11-25) the POST's stream ends here and the
	 * answer waits for the client's GET with Last-Event-ID; elsewhere the
	 * call is refused and the answer goes out as usual. */
	int rc = mcp_ctx_close_stream(ctx, 200);
	if (rc != MCP_OK && rc != MCP_ENOTSUP)
		return rc;
	if (mcp_ctx_sleep(ctx, 100) != MCP_OK)
		return MCP_ECANCELED;
	return mcp_result_add_text(out, "Reconnection test completed successfully. If you "
					"received this, the client properly reconnected after "
					"stream closure.");
}

/* ---- tools: 2026-07-28 fixtures -------------------------------------------------- */

/* test_missing_capability: needs sampling; a 2026-07-28 client that did
 * not declare it gets -32021 naming "sampling". */
static int tool_missing_capability(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *answer = NULL;
	int rc = mcp_ctx_sample_text(ctx, NULL, "Say hello.", 16, 10000, &answer);
	json_object_put(answer);
	if (rc != MCP_OK)
		return rc;
	return mcp_result_add_text(out, "The client declared sampling.");
}

/* test_logging_tool: three log messages, then the answer.  A 2026-07-28
 * request gets the messages only when its _meta asked for a log level. */
static int tool_logging(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	static const char *const steps[] = { "Tool execution started",
					     "Tool processing data", "Tool execution completed" };
	for (int i = 0; i < 3; i++) {
		int rc = mcp_ctx_log_text(ctx, MCP_LOG_INFO, "conformance", steps[i]);
		if (rc != MCP_OK)
			return rc;
		if (i < 2 && mcp_ctx_sleep(ctx, 20) != MCP_OK)
			return MCP_ECANCELED;
	}
	return mcp_result_add_text(out, "Logging test completed.");
}

/* ---- tools: a custom header ----------------------------------------------------------
 * test_custom_header's "region" argument is mirrored in the Mcp-Param-Region
 * header of 2026-07-28 HTTP requests ("x-mcp-header"), which the transport
 * checks against the body before the handler runs. */
static int tool_custom_header(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *region = string_member(args, "region");
	char text[256];
	snprintf(text, sizeof text, "Region: %.200s", region ? region : "(none)");
	return mcp_result_add_text(out, text);
}

/* ---- tools: list changes ---------------------------------------------------------- */

static mcp_server *registered_on; /* the server the fixtures were added to */

static int tool_dynamic(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_result_add_text(out, "A tool that comes and goes.");
}

static int prompt_dynamic(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_prompt_add_text(out, MCP_ROLE_USER, "A prompt that comes and goes.");
}

/* Each call adds test_dynamic_tool, or removes it when present: the tool
 * list changes, and every session and listen stream that asked hears so. */
static int tool_trigger_tool_change(mcp_ctx *ctx, json_object *args, mcp_result *out,
				    void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	static const mcp_tool dynamic = { MCP_TOOL_INIT, .name = "test_dynamic_tool", .title = "Dynamic",
					  .description = "Added and removed by "
							 "test_trigger_tool_change",
					  .fn = tool_dynamic };
	int rc = mcp_server_add_tool(registered_on, &dynamic);
	if (rc == MCP_EEXIST)
		rc = mcp_server_remove_tool(registered_on, dynamic.name);
	return rc == MCP_OK ? mcp_result_add_text(out, "The tool list changed.") : rc;
}

static int tool_trigger_prompt_change(mcp_ctx *ctx, json_object *args, mcp_result *out,
				      void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	static const mcp_prompt dynamic = { MCP_PROMPT_INIT, .name = "test_dynamic_prompt", .title = "Dynamic",
					    .description = "Added and removed by "
							   "test_trigger_prompt_change",
					    .get = prompt_dynamic };
	int rc = mcp_server_add_prompt(registered_on, &dynamic);
	if (rc == MCP_EEXIST)
		rc = mcp_server_remove_prompt(registered_on, dynamic.name);
	return rc == MCP_OK ? mcp_result_add_text(out, "The prompt list changed.") : rc;
}

/* ---- tools: input_required (multi round-trip requests) -------------------------
 *
 * Each is written once, in re-entry style: with no answer yet it names
 * what it needs and returns MCP_EINPUT; called again, it reads the answers
 * and the state it left.  A 2026-07-28 client gets input_required results
 * and retries; a legacy client is asked by the library over the
 * connection. */

/* Asks for `key` with a request given as JSON text (parsed here). */
static int ask(mcp_ctx *ctx, const char *key, const char *method, const char *params_json)
{
	json_object *p = json_tokener_parse(params_json);
	int rc = p ? mcp_ctx_require_input(ctx, key, method, p) : MCP_ENOMEM;
	json_object_put(p);
	return rc;
}

#define ELICIT_NAME                                                                      \
	"{\"message\":\"What is your name?\",\"requestedSchema\":{\"type\":\"object\","    \
	"\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]}}"

/* The accepted content field of an elicitation answer, or NULL. */
static const char *elicited(json_object *answer, const char *field)
{
	if (!answer || strcmp(string_member(answer, "action") ? string_member(answer, "action")
							       : "", "accept") != 0)
		return NULL;
	return string_member(member(answer, "content"), field);
}

/* The first text of a sampling answer, or NULL. */
static const char *sampled_text(json_object *result);

static int tool_ir_elicitation(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *a = mcp_ctx_input_response(ctx, "user_name");
	if (!a) {
		int rc = ask(ctx, "user_name", "elicitation/create", ELICIT_NAME);
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	const char *name = elicited(a, "name");
	char text[256];
	snprintf(text, sizeof text, "Hello, %.200s!", name ? name : "stranger");
	return mcp_result_add_text(out, text);
}

static int tool_ir_sampling(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *a = mcp_ctx_input_response(ctx, "capital_question");
	if (!a) {
		int rc = ask(ctx, "capital_question", "sampling/createMessage",
			     "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
			     "\"text\":\"What is the capital of France?\"}}],\"maxTokens\":100}");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	const char *t = sampled_text(a);
	char text[512];
	snprintf(text, sizeof text, "The model answered: %.400s", t ? t : "(no text)");
	return mcp_result_add_text(out, text);
}

static int tool_ir_list_roots(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *a = mcp_ctx_input_response(ctx, "client_roots");
	if (!a) {
		int rc = ask(ctx, "client_roots", "roots/list", "{}");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	json_object *roots = member(a, "roots");
	char text[1024] = "Roots:";
	size_t n = json_object_is_type(roots, json_type_array) ? json_object_array_length(roots) : 0;
	for (size_t i = 0; i < n && strlen(text) < 900; i++) {
		const char *uri = string_member(json_object_array_get_idx(roots, i), "uri");
		size_t used = strlen(text);
		snprintf(text + used, sizeof text - used, " %.200s", uri ? uri : "?");
	}
	if (n == 0)
		strcat(text, " none");
	return mcp_result_add_text(out, text);
}

static int tool_ir_request_state(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	const char *state = mcp_ctx_request_state(ctx);
	json_object *a = mcp_ctx_input_response(ctx, "confirm");
	if (!a || !state || strcmp(state, "awaiting-confirmation") != 0) {
		int rc = ask(ctx, "confirm", "elicitation/create",
			     "{\"message\":\"Please confirm\",\"requestedSchema\":{\"type\":\"object\","
			     "\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"]}}");
		if (rc == MCP_OK)
			rc = mcp_ctx_set_request_state(ctx, "awaiting-confirmation");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	return mcp_result_add_text(out, "state-ok: the request state came back intact");
}

static int tool_ir_multiple(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *name = mcp_ctx_input_response(ctx, "user_name");
	json_object *greeting = mcp_ctx_input_response(ctx, "greeting");
	json_object *roots = mcp_ctx_input_response(ctx, "client_roots");
	const char *state = mcp_ctx_request_state(ctx);
	if (!name || !greeting || !roots || !state || strcmp(state, "three-inputs") != 0) {
		int rc = ask(ctx, "user_name", "elicitation/create", ELICIT_NAME);
		if (rc == MCP_OK)
			rc = ask(ctx, "greeting", "sampling/createMessage",
				 "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":"
				 "\"text\",\"text\":\"Generate a greeting\"}}],\"maxTokens\":50}");
		if (rc == MCP_OK)
			rc = ask(ctx, "client_roots", "roots/list", "{}");
		if (rc == MCP_OK)
			rc = mcp_ctx_set_request_state(ctx, "three-inputs");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	const char *who = elicited(name, "name");
	const char *hello = sampled_text(greeting);
	char text[512];
	snprintf(text, sizeof text, "%.100s, %.200s (all three inputs received)",
		 hello ? hello : "Hello", who ? who : "stranger");
	return mcp_result_add_text(out, text);
}

static int tool_ir_multi_round(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	const char *state = mcp_ctx_request_state(ctx);
	json_object *step1 = mcp_ctx_input_response(ctx, "step1");
	json_object *step2 = mcp_ctx_input_response(ctx, "step2");
	int rc;
	if (state && strncmp(state, "round-2:", 8) == 0 && step2) {
		const char *color = elicited(step2, "color");
		char text[512];
		snprintf(text, sizeof text, "%.200s likes %.200s", state + 8,
			 color ? color : "no color");
		return mcp_result_add_text(out, text);
	}
	if (state && strcmp(state, "round-1") == 0 && step1) {
		const char *name = elicited(step1, "name");
		char next[256];
		snprintf(next, sizeof next, "round-2:%.200s", name ? name : "someone");
		rc = ask(ctx, "step2", "elicitation/create",
			 "{\"message\":\"Step 2: What is your favorite color?\",\"requestedSchema\":"
			 "{\"type\":\"object\",\"properties\":{\"color\":{\"type\":\"string\"}},"
			 "\"required\":[\"color\"]}}");
		if (rc == MCP_OK)
			rc = mcp_ctx_set_request_state(ctx, next);
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	rc = ask(ctx, "step1", "elicitation/create",
		 "{\"message\":\"Step 1: What is your name?\",\"requestedSchema\":{\"type\":"
		 "\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":"
		 "[\"name\"]}}");
	if (rc == MCP_OK)
		rc = mcp_ctx_set_request_state(ctx, "round-1");
	return rc == MCP_OK ? MCP_EINPUT : rc;
}

/* The library rejects a tampered requestState before this runs again. */
static int tool_ir_tampered(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	const char *state = mcp_ctx_request_state(ctx);
	if (!state || !mcp_ctx_input_response(ctx, "confirm")) {
		int rc = ask(ctx, "confirm", "elicitation/create",
			     "{\"message\":\"Please confirm\",\"requestedSchema\":{\"type\":\"object\","
			     "\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"]}}");
		if (rc == MCP_OK)
			rc = mcp_ctx_set_request_state(ctx, "integrity-protected");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	return mcp_result_add_text(out, "The request state verified.");
}

/* Asks only for what this request's client declared. */
static int tool_ir_capabilities(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *caps = mcp_ctx_client_capabilities(ctx);
	int answered = mcp_ctx_input_response(ctx, "user_name") ||
		       mcp_ctx_input_response(ctx, "greeting") ||
		       mcp_ctx_input_response(ctx, "client_roots");
	if (answered)
		return mcp_result_add_text(out, "Received input for the declared capabilities.");
	int asked = 0, rc = MCP_OK;
	if (member(caps, "elicitation") && rc == MCP_OK && ++asked)
		rc = ask(ctx, "user_name", "elicitation/create", ELICIT_NAME);
	if (member(caps, "sampling") && rc == MCP_OK && ++asked)
		rc = ask(ctx, "greeting", "sampling/createMessage",
			 "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
			 "\"text\":\"Generate a greeting\"}}],\"maxTokens\":50}");
	if (member(caps, "roots") && rc == MCP_OK && ++asked)
		rc = ask(ctx, "client_roots", "roots/list", "{}");
	if (rc != MCP_OK)
		return rc;
	if (!asked)
		return mcp_result_add_text(out, "The client declared no capability to ask with.");
	return MCP_EINPUT;
}

/* ---- tools: server-to-client requests ----------------------------------------- */

/* The text of a sampling result's content: one block or (2025-11-25) an
 * array of blocks; the first text block wins.  NULL when there is none. */
static const char *sampled_text(json_object *result)
{
	json_object *content = member(result, "content");
	if (json_object_is_type(content, json_type_array)) {
		size_t n = json_object_array_length(content);
		for (size_t i = 0; i < n; i++) {
			json_object *b = json_object_array_get_idx(content, i);
			const char *type = string_member(b, "type");
			if (type && strcmp(type, "text") == 0 && string_member(b, "text"))
				return string_member(b, "text");
		}
		return NULL;
	}
	const char *type = string_member(content, "type");
	return type && strcmp(type, "text") == 0 ? string_member(content, "text") : NULL;
}

/* tools-call-sampling: sampling/createMessage with the prompt as the one
 * user message and maxTokens 100, exactly as the scenario shows. */
static int tool_sampling(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	const char *prompt = string_member(args, "prompt");
	if (!prompt)
		return tool_error(out, "Invalid arguments: prompt (string) is required");

	json_object *params = json_object_new_object();
	json_object *messages = json_object_new_array();
	json_object *message = json_object_new_object();
	json_object *content = json_object_new_object();
	if (!params || !messages || !message || !content) {
		json_object_put(params);
		json_object_put(messages);
		json_object_put(message);
		json_object_put(content);
		return MCP_ENOMEM;
	}
	json_object_object_add(content, "type", json_object_new_string("text"));
	json_object_object_add(content, "text", json_object_new_string(prompt));
	json_object_object_add(message, "role", json_object_new_string("user"));
	json_object_object_add(message, "content", content);
	json_object_array_add(messages, message);
	json_object_object_add(params, "messages", messages);
	json_object_object_add(params, "maxTokens", json_object_new_int(100));

	json_object *result = NULL;
	int rc = mcp_ctx_sample(ctx, params, CLIENT_TIMEOUT_MS, &result);
	json_object_put(params);
	if (rc != MCP_OK)
		return client_request_failed(out, "Sampling", "sampling", rc, result);
	const char *text = sampled_text(result);
	rc = add_textf(out, "LLM response: %s", text ? text : "(no text content)");
	json_object_put(result);
	return rc;
}

/* Sends `form` (taken: freed here) and answers with
 * "<prefix>: action=..., content={...}". */
static int elicit_and_report(mcp_ctx *ctx, mcp_form *form, const char *prefix,
			     mcp_result *out)
{
	json_object *result = NULL;
	int rc = mcp_ctx_elicit_form(ctx, form, CLIENT_TIMEOUT_MS, &result);
	mcp_form_free(form);
	if (rc != MCP_OK)
		return client_request_failed(out, "Elicitation", "elicitation", rc, result);
	const char *action = string_member(result, "action");
	rc = add_textf(out, "%s: action=%s, content=%s", prefix, action ? action : "(none)",
		       json_text(member(result, "content")));
	json_object_put(result);
	return rc;
}

/* Builds a form from `n` fields; NULL when out of memory or a field is
 * rejected (a bug in this file). */
static mcp_form *build_form(const char *message, const mcp_field *fields, size_t n)
{
	mcp_form *form = mcp_form_new(message);
	for (size_t i = 0; form && i < n; i++) {
		if (mcp_form_add(form, &fields[i]) != MCP_OK) {
			mcp_form_free(form);
			form = NULL;
		}
	}
	return form;
}

/* tools-call-elicitation: the form of the scenario, username and email,
 * both required. */
static int tool_elicitation(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	const char *message = string_member(args, "message");
	if (!message)
		return tool_error(out, "Invalid arguments: message (string) is required");
	const mcp_field fields[] = {
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_STRING, .name = "username", .description = "User's response",
		  .required = 1 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_STRING, .name = "email", .description = "User's email address",
		  .required = 1 },
	};
	mcp_form *form = build_form(message, fields, sizeof fields / sizeof fields[0]);
	if (!form)
		return MCP_ENOMEM;
	return elicit_and_report(ctx, form, "User response", out);
}

/* elicitation-sep1034-defaults: a default for every primitive type. */
static int tool_elicitation_defaults(mcp_ctx *ctx, json_object *args, mcp_result *out,
				     void *user)
{
	(void)args;
	(void)user;
	static const char *const statuses[] = { "active", "inactive", "pending" };
	const mcp_field fields[] = {
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_STRING, .name = "name", .description = "User name",
		  .has_default = 1, .default_string = "John Doe" },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_INTEGER, .name = "age", .description = "User age",
		  .has_default = 1, .default_number = 30 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_NUMBER, .name = "score", .description = "User score",
		  .has_default = 1, .default_number = 95.5 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "status", .description = "User status",
		  .options = statuses, .noptions = 3, .style = MCP_ENUM_UNTITLED,
		  .has_default = 1, .default_string = "active" },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_BOOLEAN, .name = "verified", .description = "Verification status",
		  .has_default = 1, .default_bool = 1 },
	};
	mcp_form *form = build_form("Please review and update the form fields with defaults",
				    fields, sizeof fields / sizeof fields[0]);
	if (!form)
		return MCP_ENOMEM;
	return elicit_and_report(ctx, form, "Elicitation completed", out);
}

/* elicitation-sep1330-enums: the five enum shapes, one field each.  The
 * multi-select fields (type array) exist from 2025-11-25 on; an older
 * revision's schema rejects them, so older sessions get a tool error
 * instead of an invalid request. */
static int tool_elicitation_enums(mcp_ctx *ctx, json_object *args, mcp_result *out,
				  void *user)
{
	(void)args;
	(void)user;
	const char *rev = mcp_ctx_protocol_version(ctx);
	if (strcmp(rev, "2025-11-25") < 0)
		return tool_error(out, "Enum elicitation (SEP-1330) needs protocol revision "
				       "2025-11-25 or later; this session negotiated %s",
				  rev);
	static const char *const options[] = { "option1", "option2", "option3" };
	static const char *const values[] = { "value1", "value2", "value3" };
	static const char *const option_titles[] = { "First Option", "Second Option",
						     "Third Option" };
	static const char *const legacy[] = { "opt1", "opt2", "opt3" };
	static const char *const legacy_names[] = { "Option One", "Option Two", "Option Three" };
	static const char *const choice_titles[] = { "First Choice", "Second Choice",
						     "Third Choice" };
	const mcp_field fields[] = {
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "untitledSingle",
		  .description = "Select one option", .options = options, .noptions = 3,
		  .style = MCP_ENUM_UNTITLED },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "titledSingle",
		  .description = "Select one option with titles", .options = values,
		  .option_titles = option_titles, .noptions = 3, .style = MCP_ENUM_TITLED },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_ENUM, .name = "legacyEnum",
		  .description = "Select one option (legacy)", .options = legacy,
		  .option_titles = legacy_names, .noptions = 3, .style = MCP_ENUM_LEGACY },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_MULTI_ENUM, .name = "untitledMulti",
		  .description = "Select multiple options", .options = options, .noptions = 3,
		  .style = MCP_ENUM_UNTITLED, .has_items = 1, .min_items = 1, .max_items = 3 },
		{ MCP_FIELD_INIT, .kind = MCP_FIELD_MULTI_ENUM, .name = "titledMulti",
		  .description = "Select multiple options with titles", .options = values,
		  .option_titles = choice_titles, .noptions = 3, .style = MCP_ENUM_TITLED,
		  .has_items = 1, .min_items = 1, .max_items = 3 },
	};
	mcp_form *form = build_form("Please select options from the enum fields", fields,
				    sizeof fields / sizeof fields[0]);
	if (!form)
		return MCP_ENOMEM;
	return elicit_and_report(ctx, form, "Elicitation completed", out);
}

/* ---- tools: JSON Schema 2020-12 ----------------------------------------------- */

/* json-schema-2020-12 (SEP-1613, SEP-2106) checks that $schema, $defs,
 * $anchor, additionalProperties, allOf/anyOf and if/then/else reach
 * tools/list unchanged. */
static const char json_schema_2020_12[] =
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
	"\"type\":\"object\","
	"\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\","
	"\"properties\":{\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
	"\"properties\":{\"name\":{\"type\":\"string\"},"
	"\"address\":{\"$ref\":\"#/$defs/address\"},"
	"\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
	"\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
	"\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
	"\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"
	"\"required\":[\"contactMethod\"]},"
	"\"then\":{\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
	"\"additionalProperties\":false}";

/* The library checked the arguments against the schema above before the
 * call (its $ref, anyOf, if/then/else and additionalProperties included),
 * so the handler only reports them. */
static int tool_json_schema_2020_12(mcp_ctx *ctx, json_object *args, mcp_result *out,
				    void *user)
{
	(void)ctx;
	(void)user;
	return add_textf(out, "JSON Schema 2020-12 tool called with: %s", json_text(args));
}

/* ---- the tool table -------------------------------------------------------------- */

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static const mcp_tool conformance_tools[] = {
	{ MCP_TOOL_INIT, .name = "test_simple_text", .title = "Simple text",
	  .description = "Tests simple text content response", .input_schema = NO_ARGS,
	  .fn = tool_simple_text },
	{ MCP_TOOL_INIT, .name = "test_image_content", .title = "Image content",
	  .description = "Tests image content response (a 1x1 red PNG)", .input_schema = NO_ARGS,
	  .fn = tool_image_content },
	{ MCP_TOOL_INIT, .name = "test_audio_content", .title = "Audio content",
	  .description = "Tests audio content response (a short WAV tone)",
	  .input_schema = NO_ARGS, .fn = tool_audio_content },
	{ MCP_TOOL_INIT, .name = "test_embedded_resource", .title = "Embedded resource",
	  .description = "Tests embedded resource content response", .input_schema = NO_ARGS,
	  .fn = tool_embedded_resource },
	{ MCP_TOOL_INIT, .name = "test_multiple_content_types", .title = "Multiple content types",
	  .description = "Tests response with multiple content types (text, image, resource)",
	  .input_schema = NO_ARGS, .fn = tool_multiple_content_types },
	{ MCP_TOOL_INIT, .name = "test_tool_with_logging", .title = "Tool with logging",
	  .description = "Tests tool that emits log messages during execution",
	  .input_schema = NO_ARGS, .fn = tool_with_logging },
	{ MCP_TOOL_INIT, .name = "test_error_handling", .title = "Error handling",
	  .description = "Tests error response handling (always returns isError)",
	  .input_schema = NO_ARGS, .fn = tool_error_handling },
	{ MCP_TOOL_INIT, .name = "test_tool_with_progress", .title = "Tool with progress",
	  .description = "Tests tool that reports progress notifications",
	  .input_schema = NO_ARGS, .fn = tool_with_progress },
	{ MCP_TOOL_INIT, .name = "test_sampling", .title = "Sampling",
	  .description = "Tests server-initiated sampling (LLM completion request)",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
			  "\"description\":\"The prompt to send to the LLM\"}},"
			  "\"required\":[\"prompt\"]}",
	  .fn = tool_sampling },
	{ MCP_TOOL_INIT, .name = "test_elicitation", .title = "Elicitation",
	  .description = "Tests server-initiated elicitation (user input request)",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
			  "\"description\":\"The message to show the user\"}},"
			  "\"required\":[\"message\"]}",
	  .fn = tool_elicitation },
	{ MCP_TOOL_INIT, .name = "test_elicitation_sep1034_defaults", .title = "Elicitation defaults",
	  .description = "Tests elicitation with default values per SEP-1034",
	  .input_schema = NO_ARGS, .fn = tool_elicitation_defaults },
	{ MCP_TOOL_INIT, .name = "test_elicitation_sep1330_enums", .title = "Elicitation enums",
	  .description = "Tests elicitation with enum schema improvements per SEP-1330",
	  .input_schema = NO_ARGS, .fn = tool_elicitation_enums },
	{ MCP_TOOL_INIT, .name = "json_schema_2020_12_tool", .title = "JSON Schema 2020-12",
	  .description = "Tool with JSON Schema 2020-12 features for conformance testing "
			 "(SEP-1613)",
	  .input_schema = json_schema_2020_12, .fn = tool_json_schema_2020_12 },
	{ MCP_TOOL_INIT, .name = "test_missing_capability", .title = "Missing capability",
	  .description = "Needs the client's sampling capability (2026-07-28: -32021 "
			 "without it)",
	  .input_schema = NO_ARGS, .fn = tool_missing_capability },
	{ MCP_TOOL_INIT, .name = "test_logging_tool", .title = "Logging",
	  .description = "Sends three log messages, then answers",
	  .input_schema = NO_ARGS, .fn = tool_logging },
	{ MCP_TOOL_INIT, .name = "test_custom_header", .title = "Custom header",
	  .description = "Echoes its region argument, which HTTP clients also send in the "
			 "Mcp-Param-Region header",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":"
			  "\"string\",\"x-mcp-header\":\"Region\"}},\"required\":[\"region\"]}",
	  .fn = tool_custom_header },
	{ MCP_TOOL_INIT, .name = "test_trigger_tool_change", .title = "Change the tool list",
	  .description = "Adds test_dynamic_tool, or removes it when present",
	  .input_schema = NO_ARGS, .fn = tool_trigger_tool_change },
	{ MCP_TOOL_INIT, .name = "test_trigger_prompt_change", .title = "Change the prompt list",
	  .description = "Adds test_dynamic_prompt, or removes it when present",
	  .input_schema = NO_ARGS, .fn = tool_trigger_prompt_change },
	{ MCP_TOOL_INIT, .name = "test_streaming_elicitation", .title = "Elicitation on the request's stream",
	  .description = "Asks the user's name: the answer is an input_required result, "
			 "never a request of its own on the stream",
	  .input_schema = NO_ARGS, .fn = tool_ir_elicitation },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_elicitation", .title = "Input required: elicitation",
	  .description = "Asks the user's name through input_required, then greets",
	  .input_schema = NO_ARGS, .fn = tool_ir_elicitation },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_sampling", .title = "Input required: sampling",
	  .description = "Asks the model a question through input_required",
	  .input_schema = NO_ARGS, .fn = tool_ir_sampling },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_list_roots", .title = "Input required: roots",
	  .description = "Asks for the client's roots through input_required",
	  .input_schema = NO_ARGS, .fn = tool_ir_list_roots },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_request_state", .title = "Input required: state",
	  .description = "Round-trips a request state through input_required",
	  .input_schema = NO_ARGS, .fn = tool_ir_request_state },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_multiple_inputs",
	  .title = "Input required: three inputs",
	  .description = "Asks for an elicitation, a sampling and the roots at once",
	  .input_schema = NO_ARGS, .fn = tool_ir_multiple },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_multi_round", .title = "Input required: two rounds",
	  .description = "Asks twice, with the state evolving between rounds",
	  .input_schema = NO_ARGS, .fn = tool_ir_multi_round },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_tampered_state",
	  .title = "Input required: sealed state",
	  .description = "Its request state is sealed; a tampered one is refused",
	  .input_schema = NO_ARGS, .fn = tool_ir_tampered },
	{ MCP_TOOL_INIT, .name = "test_input_required_result_capabilities",
	  .title = "Input required: declared capabilities",
	  .description = "Asks only through the capabilities the client declared",
	  .input_schema = NO_ARGS, .fn = tool_ir_capabilities },
	{ MCP_TOOL_INIT, .name = "test_reconnection", .title = "Reconnection",
	  .description = "Tests SSE stream disconnection and client reconnection (SEP-1699)",
	  .input_schema = NO_ARGS, .fn = tool_reconnection },
};

/* ---- resources ------------------------------------------------------------------ */

static const char static_text[] = "This is the content of the static text resource.";

/* resources-read-text */
static int read_static_text(mcp_ctx *ctx, const char *uri, json_object *vars,
			    mcp_contents *out, void *user)
{
	(void)ctx;
	(void)vars;
	(void)user;
	return mcp_contents_add_text(out, uri, "text/plain", static_text);
}

/* resources-read-binary */
static int read_static_binary(mcp_ctx *ctx, const char *uri, json_object *vars,
			      mcp_contents *out, void *user)
{
	(void)ctx;
	(void)vars;
	(void)user;
	return mcp_contents_add_blob(out, uri, "image/png", red_pixel_png, sizeof red_pixel_png);
}

/* resources-subscribe and resources-unsubscribe subscribe to this one; the
 * library answers both.  Its content never changes, so no
 * notifications/resources/updated is ever due. */
static int read_watched(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			void *user)
{
	(void)ctx;
	(void)vars;
	(void)user;
	return mcp_contents_add_text(out, uri, "text/plain", "Watched resource content");
}

/* resources-templates-read: test://template/{id}/data gives
 * {"id":"<id>","templateTest":true,"data":"Data for ID: <id>"}. */
static int read_template(mcp_ctx *ctx, const char *uri, json_object *vars, mcp_contents *out,
			 void *user)
{
	(void)ctx;
	(void)user;
	const char *id = string_member(vars, "id");
	if (!id)
		return MCP_ENOENT;
	char *data = format("Data for ID: %s", id);
	json_object *doc = json_object_new_object();
	if (!data || !doc) {
		free(data);
		json_object_put(doc);
		return MCP_ENOMEM;
	}
	json_object_object_add(doc, "id", json_object_new_string(id));
	json_object_object_add(doc, "templateTest", json_object_new_boolean(1));
	json_object_object_add(doc, "data", json_object_new_string(data));
	free(data);
	int rc = mcp_contents_add_text(out, uri, "application/json", json_text(doc));
	json_object_put(doc);
	return rc;
}

/* Adds the candidates of `list` (NULL-terminated) that start with `prefix`. */
static int complete_from(mcp_completion *out, const char *const *list, const char *prefix)
{
	size_t n = strlen(prefix);
	for (; *list; list++) {
		if (strncmp(*list, prefix, n) == 0) {
			int rc = mcp_completion_add(out, *list);
			if (rc != MCP_OK)
				return rc;
		}
	}
	return MCP_OK;
}

/* completion/complete on ref/resource test://template/{id}/data, variable id. */
static int complete_template(mcp_ctx *ctx, const char *argument, const char *value,
			     json_object *context, mcp_completion *out, void *user)
{
	(void)ctx;
	(void)context;
	(void)user;
	static const char *const ids[] = { "123", "456", "789", NULL };
	if (strcmp(argument, "id") != 0)
		return MCP_OK;
	return complete_from(out, ids, value);
}

static const mcp_resource conformance_resources[] = {
	{ MCP_RESOURCE_INIT, .uri = "test://static-text", .name = "static-text", .title = "Static Text Resource",
	  .description = "A static text resource for testing", .mime_type = "text/plain",
	  .size = sizeof static_text - 1, .read = read_static_text },
	{ MCP_RESOURCE_INIT, .uri = "test://static-binary", .name = "static-binary",
	  .title = "Static Binary Resource",
	  .description = "A static binary resource (a 1x1 red PNG) for testing",
	  .mime_type = "image/png", .size = sizeof red_pixel_png, .read = read_static_binary },
	{ MCP_RESOURCE_INIT, .uri = "test://watched-resource", .name = "watched-resource",
	  .title = "Watched Resource",
	  .description = "A resource clients may subscribe to (resources/subscribe)",
	  .mime_type = "text/plain", .read = read_watched },
};

static const mcp_resource_template conformance_templates[] = {
	{ MCP_RESOURCE_TEMPLATE_INIT, .uri_template = "test://template/{id}/data", .name = "template",
	  .title = "Resource Template",
	  .description = "A resource template with parameter substitution",
	  .mime_type = "application/json", .read = read_template,
	  .complete = complete_template },
};

/* ---- prompts -------------------------------------------------------------------- */

/* prompts-get-simple */
static int prompt_simple(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	return mcp_prompt_add_text(out, MCP_ROLE_USER, "This is a simple prompt for testing.");
}

/* prompts-get-with-args (both arguments are required, so the library
 * guarantees them) and completion-complete (argument arg1). */
static int prompt_with_arguments(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out,
				 void *user)
{
	(void)ctx;
	(void)user;
	const char *arg1 = string_member(args, "arg1");
	const char *arg2 = string_member(args, "arg2");
	char *text = format("Prompt with arguments: arg1='%s', arg2='%s'", arg1 ? arg1 : "",
			    arg2 ? arg2 : "");
	if (!text)
		return MCP_ENOMEM;
	int rc = mcp_prompt_add_text(out, MCP_ROLE_USER, text);
	free(text);
	return rc;
}

/* prompts-get-embedded-resource */
static int prompt_with_embedded_resource(mcp_ctx *ctx, json_object *args,
					 mcp_prompt_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *uri = string_member(args, "resourceUri");
	if (!uri)
		return MCP_EINVAL;
	int rc = mcp_prompt_add_resource_text(out, MCP_ROLE_USER, uri, "text/plain",
					      "Embedded resource content for testing.");
	if (rc == MCP_OK)
		rc = mcp_prompt_add_text(out, MCP_ROLE_USER,
					 "Please process the embedded resource above.");
	return rc;
}

/* prompts-get-with-image */
static int prompt_with_image(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out,
			     void *user)
{
	(void)ctx;
	(void)args;
	(void)user;
	int rc = mcp_prompt_add_image(out, MCP_ROLE_USER, red_pixel_png, sizeof red_pixel_png,
				      "image/png");
	if (rc == MCP_OK)
		rc = mcp_prompt_add_text(out, MCP_ROLE_USER, "Please analyze the image above.");
	return rc;
}

/* Completion candidates per prompt argument name (completion/complete on
 * ref/prompt); the scenario asks for arg1 of test_prompt_with_arguments
 * with the value "test". */
static const char *const arg1_candidates[] = { "paris", "park", "party", "test", "testValue1",
					       NULL };
static const char *const arg2_candidates[] = { "hello", "testValue2", "world", NULL };
static const char *const uri_candidates[] = { "test://static-text", "test://static-binary",
					      "test://watched-resource",
					      "test://template/123/data", NULL };

static const struct {
	const char *argument;
	const char *const *candidates;
} prompt_completions[] = {
	{ "arg1", arg1_candidates },
	{ "arg2", arg2_candidates },
	{ "resourceUri", uri_candidates },
};

static int complete_prompt_argument(mcp_ctx *ctx, const char *argument, const char *value,
				    json_object *context, mcp_completion *out, void *user)
{
	(void)ctx;
	(void)context;
	(void)user;
	for (size_t i = 0; i < sizeof prompt_completions / sizeof prompt_completions[0]; i++)
		if (strcmp(argument, prompt_completions[i].argument) == 0)
			return complete_from(out, prompt_completions[i].candidates, value);
	return MCP_OK;
}

static const mcp_prompt_arg with_arguments_args[] = {
	{ MCP_PROMPT_ARG_INIT, .name = "arg1", .description = "First test argument", .required = 1 },
	{ MCP_PROMPT_ARG_INIT, .name = "arg2", .description = "Second test argument", .required = 1 },
};

static const mcp_prompt_arg embedded_resource_args[] = {
	{ MCP_PROMPT_ARG_INIT, .name = "resourceUri", .description = "URI of the resource to embed", .required = 1 },
};

/* A prompt that needs input (2026-07-28 input_required, or the legacy
 * bridge). */
static int prompt_input_required(mcp_ctx *ctx, json_object *args, mcp_prompt_result *out,
				 void *user)
{
	(void)args;
	(void)user;
	json_object *a = mcp_ctx_input_response(ctx, "user_context");
	if (!a) {
		int rc = ask(ctx, "user_context", "elicitation/create",
			     "{\"message\":\"What context should the prompt use?\",\"requestedSchema\":"
			     "{\"type\":\"object\",\"properties\":{\"context\":{\"type\":"
			     "\"string\"}},\"required\":[\"context\"]}}");
		return rc == MCP_OK ? MCP_EINPUT : rc;
	}
	const char *context = elicited(a, "context");
	char text[512];
	snprintf(text, sizeof text, "Answer with this context in mind: %.400s",
		 context ? context : "(none given)");
	return mcp_prompt_add_text(out, MCP_ROLE_USER, text);
}

static const mcp_prompt conformance_prompts[] = {
	{ MCP_PROMPT_INIT, .name = "test_simple_prompt", .title = "Simple Test Prompt",
	  .description = "A simple prompt without arguments", .get = prompt_simple },
	{ MCP_PROMPT_INIT, .name = "test_prompt_with_arguments", .title = "Prompt With Arguments",
	  .description = "A prompt with required arguments", .args = with_arguments_args,
	  .nargs = 2, .get = prompt_with_arguments, .complete = complete_prompt_argument },
	{ MCP_PROMPT_INIT, .name = "test_prompt_with_embedded_resource", .title = "Prompt With Embedded Resource",
	  .description = "A prompt that includes an embedded resource",
	  .args = embedded_resource_args, .nargs = 1, .get = prompt_with_embedded_resource,
	  .complete = complete_prompt_argument },
	{ MCP_PROMPT_INIT, .name = "test_prompt_with_image", .title = "Prompt With Image",
	  .description = "A prompt that includes image content", .get = prompt_with_image },
	{ MCP_PROMPT_INIT, .name = "test_input_required_result_prompt", .title = "Input required prompt",
	  .description = "A prompt that asks the user for context first",
	  .get = prompt_input_required },
};

/* ---- registration --------------------------------------------------------------- */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int everything_register_conformance(mcp_server *srv)
{
	if (!srv)
		return MCP_EINVAL;
	registered_on = srv;
	int rc = MCP_OK;
	for (size_t i = 0; rc == MCP_OK && i < COUNT(conformance_tools); i++)
		rc = mcp_server_add_tool(srv, &conformance_tools[i]);
	for (size_t i = 0; rc == MCP_OK && i < COUNT(conformance_resources); i++)
		rc = mcp_server_add_resource(srv, &conformance_resources[i]);
	for (size_t i = 0; rc == MCP_OK && i < COUNT(conformance_templates); i++)
		rc = mcp_server_add_resource_template(srv, &conformance_templates[i]);
	for (size_t i = 0; rc == MCP_OK && i < COUNT(conformance_prompts); i++)
		rc = mcp_server_add_prompt(srv, &conformance_prompts[i]);
	return rc;
}
