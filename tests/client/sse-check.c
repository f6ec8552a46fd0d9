/*
 * sse-check.c - libmcp's client (mcp_client itself, not mcp-call) against
 * a server of the HTTP+SSE transport of 2024-11-05 not written here: the
 * TypeScript SDK's SSEServerTransport (tests/client/ts-sse-server.mjs).
 * Run by tests/client/run.sh (make check-client):
 *
 *   sse-check [--transport auto|sse] [--bearer T] URL/sse
 *        the fallback (or the forced transport), the tool list, calls,
 *        concurrent calls, progress, log and list_changed notifications,
 *        a cancelled call, a timed-out call, then the server ending the
 *        event stream mid-call: every waiting call fails, none hangs
 *   sse-check --kill PID URL/sse
 *        the server (PID) killed with SIGKILL while two calls wait: both
 *        fail with MCP_ECLOSED within seconds
 *   sse-check --expect-streamable URL
 *        a Streamable HTTP server is never mistaken for a legacy one
 *
 * Prints one line per check and a summary ("N passed, N failed"); exits 1
 * on any failure.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mcp/client.h>

static int passed, failed;

static void check(int ok, const char *what, const char *why)
{
	if (ok)
		passed++;
	else
		failed++;
	printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, !ok && why ? ": " : "",
	       !ok && why ? why : "");
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The text of the first content block of a CallToolResult, or "". */
static const char *first_text(json_object *res)
{
	json_object *content = NULL, *text = NULL;
	json_object_object_get_ex(res, "content", &content);
	if (json_object_is_type(content, json_type_array) && json_object_array_length(content) > 0)
		json_object_object_get_ex(json_object_array_get_idx(content, 0), "text", &text);
	return text ? json_object_get_string(text) : "";
}

/* ---- what the reader thread saw -------------------------------------------------- */

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_progress, n_call_logs, n_other_logs, n_list_changed;
static double last_progress;

static void on_progress(mcp_call *call, double progress, double total, const char *message,
			void *user)
{
	(void)call, (void)total, (void)message, (void)user;
	pthread_mutex_lock(&seen_mu);
	n_progress++;
	last_progress = progress;
	pthread_mutex_unlock(&seen_mu);
}

static void on_log(mcp_call *call, mcp_log_level level, const char *logger, json_object *data,
		   void *user)
{
	(void)call, (void)level, (void)logger, (void)data, (void)user;
	pthread_mutex_lock(&seen_mu);
	n_call_logs++;
	pthread_mutex_unlock(&seen_mu);
}

static void on_notification(mcp_client *c, const char *method, json_object *params, void *user)
{
	(void)c, (void)params, (void)user;
	pthread_mutex_lock(&seen_mu);
	if (strcmp(method, "notifications/tools/list_changed") == 0)
		n_list_changed++;
	else if (strcmp(method, "notifications/message") == 0)
		n_other_logs++;
	pthread_mutex_unlock(&seen_mu);
}

static mcp_client *connect_to(const char *url, mcp_http_transport t, const char *bearer, int *rc)
{
	mcp_client *c = mcp_client_new("sse-check", "0.1.0");
	mcp_client_set_http_transport(c, t);
	mcp_client_set_connect_timeout_ms(c, 10000);
	mcp_client_set_notification_handler(c, on_notification, NULL);
	if (bearer)
		mcp_client_set_bearer(c, bearer);
	*rc = mcp_client_connect_http(c, url);
	return c;
}

static mcp_call *start_tool(mcp_client *c, const char *name, const char *args, mcp_token *tok)
{
	json_object *a = json_tokener_parse(args);
	mcp_call *call = mcp_call_new_tool(c, name, a);
	json_object_put(a);
	if (tok)
		mcp_call_set_token(call, tok);
	mcp_call_start(call);
	return call;
}

/* ---- the checks -------------------------------------------------------------------- */

static void check_tools(mcp_client *c)
{
	json_object *tools = NULL;
	int rc = mcp_client_list_tools(c, 10000, NULL, &tools);
	int found = 0;
	for (size_t i = 0; rc == MCP_OK && i < json_object_array_length(tools); i++) {
		json_object *name = NULL;
		json_object_object_get_ex(json_object_array_get_idx(tools, i), "name", &name);
		const char *n = name ? json_object_get_string(name) : "";
		found += !strcmp(n, "echo") || !strcmp(n, "slow") || !strcmp(n, "progress") ||
			 !strcmp(n, "hangup");
	}
	check(rc == MCP_OK && found == 4, "tools/list: echo, slow, progress, hangup",
	      rc == MCP_OK ? "a tool is missing" : mcp_strerror(rc));
	json_object_put(tools);
}

static void check_echo(mcp_client *c)
{
	json_object *args = json_object_new_object(), *res = NULL;
	json_object_object_add(args, "text", json_object_new_string("h\xc3\xa9llo \"sse\"\n"));
	int rc = mcp_client_call_tool(c, "echo", args, 10000, NULL, &res);
	check(rc == MCP_OK && strcmp(first_text(res), "h\xc3\xa9llo \"sse\"\n") == 0,
	      "tools/call echo: the text comes back", rc ? mcp_strerror(rc) : first_text(res));
	json_object_put(res);
	json_object_put(args);
}

static void check_concurrent(mcp_client *c)
{
	enum { N = 24 };
	mcp_call *calls[N];
	char args[64];
	for (int i = 0; i < N; i++) {
		snprintf(args, sizeof args, "{\"text\":\"call %d\"}", i);
		calls[i] = start_tool(c, "echo", args, NULL);
	}
	int good = 0;
	for (int i = 0; i < N; i++) {
		json_object *res = NULL;
		char want[32];
		snprintf(want, sizeof want, "call %d", i);
		if (mcp_call_wait(calls[i], 10000, &res) == MCP_OK && !strcmp(first_text(res), want))
			good++;
		json_object_put(res);
		mcp_call_free(calls[i]);
	}
	char why[64];
	snprintf(why, sizeof why, "%d of %d answered right", good, N);
	check(good == N, "24 concurrent calls, each answer matched to its call by id", why);
}

static void check_notifications(mcp_client *c)
{
	json_object *a = json_tokener_parse("{\"steps\":3}");
	mcp_call *call = mcp_call_new_tool(c, "progress", a);
	json_object_put(a);
	mcp_call_set_progress(call, on_progress, NULL);
	mcp_call_set_log(call, MCP_LOG_DEBUG, on_log, NULL);
	mcp_call_start(call);
	json_object *res = NULL;
	int rc = mcp_call_wait(call, 10000, &res);
	check(rc == MCP_OK && !strcmp(first_text(res), "done 3"), "tools/call progress: answered",
	      rc ? mcp_call_error(call) : first_text(res));
	json_object_put(res);
	mcp_call_free(call);
	/* One stream, in order: every notification the server sent before
	 * its answer has been handled by now. */
	pthread_mutex_lock(&seen_mu);
	char why[160];
	snprintf(why, sizeof why, "progress %d (last %.0f), call logs %d, other logs %d, list_changed %d",
		 n_progress, last_progress, n_call_logs, n_other_logs, n_list_changed);
	check(n_progress == 3 && last_progress == 3, "notifications/progress: 3 reached the call", why);
	check(n_call_logs >= 1 && n_call_logs + n_other_logs == 2,
	      "notifications/message: both log messages arrived", why);
	check(n_list_changed == 1, "notifications/tools/list_changed reached the handler", why);
	pthread_mutex_unlock(&seen_mu);
}

static void check_cancel(mcp_client *c)
{
	mcp_token *tok = mcp_token_new();
	mcp_call *call = start_tool(c, "slow", "{\"ms\":60000}", tok);
	usleep(300 * 1000);
	int64_t t0 = now_ms();
	mcp_token_cancel(tok);
	int rc = mcp_call_wait(call, 5000, NULL);
	char why[120];
	snprintf(why, sizeof why, "%s after %lld ms", mcp_strerror(rc), (long long)(now_ms() - t0));
	check(rc == MCP_ECANCELED && now_ms() - t0 < 1000, "a cancelled call ends at once", why);
	printf("cancelled request %lld\n", (long long)mcp_call_request_id(call));
	mcp_call_free(call);
	mcp_token_free(tok);
	/* The server got notifications/cancelled; the connection goes on. */
	check_echo(c);
}

static void check_timeout(mcp_client *c)
{
	json_object *args = json_tokener_parse("{\"ms\":60000}");
	int64_t t0 = now_ms();
	int rc = mcp_client_call_tool(c, "slow", args, 300, NULL, NULL);
	json_object_put(args);
	char why[120];
	snprintf(why, sizeof why, "%s after %lld ms", mcp_strerror(rc), (long long)(now_ms() - t0));
	check(rc == MCP_ETIMEDOUT && now_ms() - t0 < 2000, "a call past its timeout fails", why);
}

/* Two calls wait; the stream ends (hangup, or a killed server): both fail
 * with MCP_ECLOSED and the reason, within seconds, and so does any call
 * after. */
static void check_stream_end(mcp_client *c, pid_t kill_pid)
{
	mcp_call *slow = start_tool(c, "slow", "{\"ms\":60000}", NULL);
	mcp_call *other = kill_pid > 0 ? start_tool(c, "slow", "{\"ms\":60000}", NULL)
				       : start_tool(c, "hangup", "{}", NULL);
	usleep(500 * 1000);
	int64_t t0 = now_ms();
	if (kill_pid > 0)
		kill(kill_pid, SIGKILL);
	int rc1 = mcp_call_wait(slow, 10000, NULL);
	int rc2 = mcp_call_wait(other, 10000, NULL);
	int64_t took = now_ms() - t0;
	char why[700];
	snprintf(why, sizeof why, "%s / %s after %lld ms: %s", mcp_strerror(rc1), mcp_strerror(rc2),
		 (long long)took, mcp_call_error(slow));
	check(rc1 == MCP_ECLOSED && rc2 == MCP_ECLOSED && took < 5000,
	      kill_pid > 0 ? "server killed mid-call: both waiting calls fail at once"
			   : "event stream ended mid-call: both waiting calls fail at once",
	      why);
	printf("the call's error: %s\n", mcp_call_error(slow));
	const char *expect = kill_pid > 0 ? "event stream" : "ended the event stream";
	check(strstr(mcp_call_error(slow), expect) != NULL, "the error says the stream ended",
	      mcp_call_error(slow));
	check(!mcp_client_connected(c), "the client is no longer connected", NULL);
	mcp_call_free(slow);
	mcp_call_free(other);
	t0 = now_ms();
	int rc = mcp_client_ping(c, 10000, NULL);
	check(rc == MCP_ECLOSED && now_ms() - t0 < 500, "a call after the end fails at once",
	      mcp_strerror(rc));
}

int main(int argc, char **argv)
{
	mcp_http_transport t = MCP_HTTP_AUTO;
	const char *bearer = NULL;
	pid_t kill_pid = 0;
	int expect_streamable = 0;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--transport")) {
			i++;
			t = !strcmp(argv[i], "sse") ? MCP_HTTP_SSE : MCP_HTTP_AUTO;
		} else if (!strcmp(argv[i], "--bearer")) {
			bearer = argv[++i];
		} else if (!strcmp(argv[i], "--kill")) {
			kill_pid = (pid_t)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--expect-streamable")) {
			expect_streamable = 1;
		}
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: sse-check [--transport auto|sse] [--bearer T] "
				"[--kill PID | --expect-streamable] URL\n");
		return 2;
	}
	const char *url = argv[i];
	int rc;
	mcp_client *c = connect_to(url, t, bearer, &rc);
	char why[700];
	snprintf(why, sizeof why, "%s: %s", mcp_strerror(rc), mcp_client_error(c));
	check(rc == MCP_OK, "connect", why);
	if (rc != MCP_OK) {
		mcp_client_free(c);
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	mcp_transport_kind want = expect_streamable ? MCP_TRANSPORT_STREAMABLE_HTTP
						    : MCP_TRANSPORT_HTTP_SSE;
	snprintf(why, sizeof why, "mcp_client_transport is %d, protocol %s",
		 (int)mcp_client_transport(c), mcp_client_protocol_version(c));
	check(mcp_client_transport(c) == want,
	      expect_streamable ? "a Streamable HTTP server stays on Streamable HTTP"
				: "the connection is on HTTP+SSE",
	      why);
	if (!expect_streamable) {
		json_object *info = mcp_client_server_info(c), *name = NULL;
		json_object_object_get_ex(info, "name", &name);
		check(name && !strcmp(json_object_get_string(name), "ts-sse"),
		      "serverInfo is the TypeScript SDK server's", NULL);
		check_tools(c);
		if (kill_pid > 0) {
			check_stream_end(c, kill_pid);
		} else {
			check_echo(c);
			check_concurrent(c);
			check_notifications(c);
			check_cancel(c);
			check_timeout(c);
			check_stream_end(c, 0);
		}
	}
	mcp_client_free(c);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
