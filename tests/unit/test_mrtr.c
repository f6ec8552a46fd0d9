/*
 * test_mrtr.c - unit tests of api/mrtr.c, multi round-trip requests and
 * parked handlers, over in-process connections: a 2026-07-28 handler's
 * input_required with its sealed requestState, the retry that brings the
 * input, a state refused when tampered with or used for another request,
 * a key rotation that keeps the old key's states valid, the blocking
 * client calls of a 2026-07-28 request parked across retries, parking
 * turned off, and the legacy bridge (ctx.c) sending the same input
 * requests as real requests to a legacy client.
 */
#include "runner.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

#define ASK_PARAMS "{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}"

/* ---- the handlers -------------------------------------------------------------------- */

/* Asks for one input by name, with a state; answers with both once it has
 * them. */
static int ask(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args, (void)user;
	json_object *resp = mcp_ctx_input_response(ctx, "name");
	if (!resp) {
		json_object *p = json_tokener_parse(ASK_PARAMS);
		int rc = mcp_ctx_require_input(ctx, "name", "elicitation/create", p);
		json_object_put(p);
		if (rc != MCP_OK)
			return rc;
		mcp_ctx_set_request_state(ctx, "round-1");
		return MCP_EINPUT;
	}
	char text[128];
	snprintf(text, sizeof text, "state=%s action=%s", mcp_ctx_request_state(ctx),
		 api_get_str(resp, "action"));
	return mcp_result_add_text(out, text);
}

/* Blocks on `rounds` elicitations (parked for a 2026-07-28 request). */
static int blocking(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int rounds = json_object_get_int(api_get(args, "rounds"));
	char text[256] = "";
	for (int i = 0; i < rounds; i++) {
		json_object *p = json_tokener_parse(ASK_PARAMS), *res = NULL;
		int rc = mcp_ctx_elicit(ctx, p, 10000, &res);
		json_object_put(p);
		if (rc != MCP_OK) {
			snprintf(text, sizeof text, "failed: %s", mcp_strerror(rc));
			return mcp_result_add_text(out, text);
		}
		strcat(text, api_get_str(res, "action"));
		strcat(text, ";");
		json_object_put(res);
	}
	return mcp_result_add_text(out, text);
}

/* ---- a client over an in-process connection ------------------------------------------ */

static json_object *next_msg(mcp_memconn *c)
{
	char *line;
	size_t len;
	ck_assert_int_eq(mcp_memconn_recv(c, 10000, &line, &len), 1);
	json_object *m = json_tokener_parse(line);
	ck_assert_ptr_nonnull(m);
	free(line);
	return m;
}

static void send_msg(mcp_memconn *c, json_object *m)
{
	const char *text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN);
	ck_assert_int_eq(mcp_memconn_send(c, text, strlen(text)), MCP_OK);
	json_object_put(m);
}

/* The answer to request `id` (the caller owns it), skipping notifications. */
static json_object *answer_of(mcp_memconn *c, int id)
{
	for (;;) {
		json_object *m = next_msg(c);
		json_object *jid = api_get(m, "id");
		if (!api_get(m, "method") && jid && json_object_get_int(jid) == id)
			return m;
		ck_assert_msg(!api_get(m, "id"), "unexpected %s", json_object_to_json_string(m));
		json_object_put(m);
	}
}

/* tools/call `tool` with `args` (JSON text), as a 2026-07-28 request with
 * client capabilities `caps` (JSON text) and, when not NULL, the
 * inputResponses (JSON text) and requestState of a retry. */
static json_object *modern_call(mcp_memconn *c, int id, const char *tool, const char *args,
				const char *caps, const char *responses, const char *state)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "name", json_object_new_string(tool));
	json_object_object_add(p, "arguments", json_tokener_parse(args));
	char meta[512];
	snprintf(meta, sizeof meta,
		 "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
		 "\"io.modelcontextprotocol/clientCapabilities\":%s}",
		 caps);
	json_object_object_add(p, "_meta", json_tokener_parse(meta));
	if (responses)
		json_object_object_add(p, "inputResponses", json_tokener_parse(responses));
	if (state)
		json_object_object_add(p, "requestState", json_object_new_string(state));
	json_object *m = json_object_new_object();
	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", json_object_new_int(id));
	json_object_object_add(m, "method", json_object_new_string("tools/call"));
	json_object_object_add(m, "params", p);
	send_msg(c, m);
	return answer_of(c, id);
}

static const char *text_of(json_object *answer)
{
	json_object *c = api_get(api_get(answer, "result"), "content");
	return api_get_str(json_object_array_get_idx(c, 0), "text");
}

static int error_of(json_object *answer)
{
	return json_object_get_int(api_get(api_get(answer, "error"), "code"));
}

static mcp_server *server(void)
{
	mcp_server *srv = mcp_server_new("t", "1");
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "ask", .fn = ask }), MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "ask2", .fn = ask }), MCP_OK);
	ck_assert_int_eq(mcp_server_add_tool(srv, &(mcp_tool){ MCP_TOOL_INIT, .name = "blocking", .fn = blocking }),
			 MCP_OK);
	return srv;
}

static void finish(mcp_server *srv, mcp_memconn *c)
{
	mcp_memconn_close(c);
	ck_assert_int_eq(mcp_memconn_free(c), MCP_OK);
	mcp_server_free(srv);
}

/* The state of an input_required answer (caller frees), checked. */
static char *input_required(json_object *answer, const char *key)
{
	json_object *res = api_get(answer, "result");
	ck_assert_msg(res, "not a result: %s", json_object_to_json_string(answer));
	ck_assert_str_eq(api_get_str(res, "resultType"), "input_required");
	json_object *req = api_get(api_get(res, "inputRequests"), key);
	ck_assert_str_eq(api_get_str(req, "method"), "elicitation/create");
	ck_assert_str_eq(api_get_str(api_get(req, "params"), "message"), "name?");
	const char *state = api_get_str(res, "requestState");
	ck_assert_ptr_nonnull(state);
	return strdup(state);
}

/* ---- 2026-07-28: input_required and its sealed state ------------------------------------ */

START_TEST(modern_round_with_sealed_state)
{
	mcp_server *srv = server();
	mcp_memconn *c;
	ck_assert_int_eq(mcp_server_start_memory(srv, &c), MCP_OK);
	const char *caps = "{\"elicitation\":{}}";
	json_object *a = modern_call(c, 1, "ask", "{\"x\":1}", caps, NULL, NULL);
	char *state = input_required(a, "name");
	/* The state is sealed: the handler's own text is not in it. */
	ck_assert_ptr_null(strstr(state, "round-1"));
	json_object_put(a);

	const char *resp = "{\"name\":{\"action\":\"accept\",\"content\":{}}}";
	a = modern_call(c, 2, "ask", "{\"x\":1}", caps, resp, state);
	ck_assert_str_eq(text_of(a), "state=round-1 action=accept");
	json_object_put(a);

	/* Bound to its request: another tool, other arguments, a byte
	 * changed, all refused alike. */
	a = modern_call(c, 3, "ask2", "{\"x\":1}", caps, resp, state);
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	a = modern_call(c, 4, "ask", "{\"x\":2}", caps, resp, state);
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	state[10] = state[10] == 'A' ? 'B' : 'A';
	a = modern_call(c, 5, "ask", "{\"x\":1}", caps, resp, state);
	ck_assert_int_eq(error_of(a), -32602);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(api_get(api_get(a, "error"),
								     "message")),
				     "requestState"));
	json_object_put(a);
	free(state);

	/* Without the capability the request declared, the handler cannot ask:
	 * -32021 names it. */
	a = modern_call(c, 6, "ask", "{}", "{}", NULL, NULL);
	ck_assert_int_eq(error_of(a), -32021);
	json_object_put(a);
	finish(srv, c);
}
END_TEST

START_TEST(state_survives_a_key_rotation)
{
	unsigned char k1[32], k2[32];
	memset(k1, 1, sizeof k1);
	memset(k2, 2, sizeof k2);
	const char *caps = "{\"elicitation\":{}}";
	const char *resp = "{\"name\":{\"action\":\"decline\"}}";

	mcp_server *old = server();
	ck_assert_int_eq(mcp_server_set_state_key(old, k1, NULL), MCP_OK);
	mcp_memconn *c1;
	ck_assert_int_eq(mcp_server_start_memory(old, &c1), MCP_OK);
	json_object *a = modern_call(c1, 1, "ask", "{}", caps, NULL, NULL);
	char *state = input_required(a, "name");
	json_object_put(a);
	finish(old, c1);

	/* A process with the new key and the old one as previous opens it; a
	 * process with only the new key does not. */
	mcp_server *rotated = server();
	ck_assert_int_eq(mcp_server_set_state_key(rotated, k2, k1), MCP_OK);
	mcp_memconn *c2;
	ck_assert_int_eq(mcp_server_start_memory(rotated, &c2), MCP_OK);
	a = modern_call(c2, 2, "ask", "{}", caps, resp, state);
	ck_assert_str_eq(text_of(a), "state=round-1 action=decline");
	json_object_put(a);
	finish(rotated, c2);

	mcp_server *fresh = server();
	ck_assert_int_eq(mcp_server_set_state_key(fresh, k2, NULL), MCP_OK);
	mcp_memconn *c3;
	ck_assert_int_eq(mcp_server_start_memory(fresh, &c3), MCP_OK);
	a = modern_call(c3, 3, "ask", "{}", caps, resp, state);
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	finish(fresh, c3);
	free(state);
}
END_TEST

/* ---- 2026-07-28: parked handlers ------------------------------------------------------ */

START_TEST(blocking_calls_parked_across_retries)
{
	mcp_server *srv = server();
	mcp_memconn *c;
	ck_assert_int_eq(mcp_server_start_memory(srv, &c), MCP_OK);
	const char *caps = "{\"elicitation\":{}}";
	/* Two blocking calls: two input_required answers, each to the request
	 * that woke the handler, then the handler's result. */
	json_object *a = modern_call(c, 1, "blocking", "{\"rounds\":2}", caps, NULL, NULL);
	char *s1 = input_required(a, "input-1");
	json_object_put(a);
	a = modern_call(c, 2, "blocking", "{\"rounds\":2}", caps,
			"{\"input-1\":{\"action\":\"accept\",\"content\":{}}}", s1);
	char *s2 = input_required(a, "input-2");
	json_object_put(a);
	/* The state of round 1 no longer names a handler waiting. */
	a = modern_call(c, 3, "blocking", "{\"rounds\":2}", caps,
			"{\"input-1\":{\"action\":\"accept\"}}", s1);
	ck_assert_int_eq(error_of(a), -32602);
	json_object_put(a);
	a = modern_call(c, 4, "blocking", "{\"rounds\":2}", caps,
			"{\"input-2\":{\"action\":\"decline\"}}", s2);
	ck_assert_str_eq(text_of(a), "accept;decline;");
	json_object_put(a);
	free(s1);
	free(s2);
	finish(srv, c);
}
END_TEST

START_TEST(parking_off_means_not_supported)
{
	mcp_server *srv = server();
	ck_assert_int_eq(mcp_server_set_parking(srv, 0, 1000), MCP_OK);
	mcp_memconn *c;
	ck_assert_int_eq(mcp_server_start_memory(srv, &c), MCP_OK);
	json_object *a = modern_call(c, 1, "blocking", "{\"rounds\":1}", "{\"elicitation\":{}}",
				     NULL, NULL);
	char want[256];
	snprintf(want, sizeof want, "failed: %s", mcp_strerror(MCP_ENOTSUP));
	ck_assert_str_eq(text_of(a), want);
	json_object_put(a);
	finish(srv, c);
}
END_TEST

/* ---- the legacy bridge (ctx.c) ------------------------------------------------------- */

START_TEST(legacy_client_asked_with_real_requests)
{
	mcp_server *srv = server();
	mcp_memconn *c;
	ck_assert_int_eq(mcp_server_start_memory(srv, &c), MCP_OK);
	send_msg(c, json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
				       "\"params\":{\"protocolVersion\":\"2025-11-25\","
				       "\"capabilities\":{\"elicitation\":{}},"
				       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}"));
	json_object_put(answer_of(c, 1));
	send_msg(c, json_tokener_parse("{\"jsonrpc\":\"2.0\","
				       "\"method\":\"notifications/initialized\"}"));
	send_msg(c, json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
				       "\"params\":{\"name\":\"ask\",\"arguments\":{}}}"));
	/* The handler's named input goes out as elicitation/create. */
	json_object *q = next_msg(c);
	ck_assert_str_eq(api_get_str(q, "method"), "elicitation/create");
	ck_assert_str_eq(api_get_str(api_get(q, "params"), "message"), "name?");
	json_object *r = json_object_new_object();
	json_object_object_add(r, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(r, "id", json_object_get(api_get(q, "id")));
	json_object_object_add(r, "result",
			       json_tokener_parse("{\"action\":\"accept\",\"content\":{}}"));
	json_object_put(q);
	send_msg(c, r);
	/* ... and it is called again with the answer and its state. */
	json_object *a = answer_of(c, 2);
	ck_assert_str_eq(text_of(a), "state=round-1 action=accept");
	json_object_put(a);
	finish(srv, c);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("mrtr");
	TCase *tc = tcase_create("mrtr");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, modern_round_with_sealed_state);
	tcase_add_test(tc, state_survives_a_key_rotation);
	tcase_add_test(tc, blocking_calls_parked_across_retries);
	tcase_add_test(tc, parking_off_means_not_supported);
	tcase_add_test(tc, legacy_client_asked_with_real_requests);
	suite_add_tcase(s, tc);
	return s;
}

