/*
 * mcp-everything.c - the reference server of libmcp: every tool the test
 * harness, the benchmarks and the interop tests drive, over stdio.
 *
 * It is also the example to read first: registration, handlers that honour
 * cancellation, progress, a server-to-client request, and a signal handler
 * that asks for the orderly shutdown.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <strings.h>
#include <time.h>

#include <mcp/mcp.h>

#include "conformance.h"
#include "extensions.h"

static mcp_server *the_server;

/* ---- tools ---------------------------------------------------------------- */

/* Every tool's arguments are checked against its input_schema before the
 * handler runs, ranges included: the handlers below read them with
 * mcp_args_* and never look at a type. */

static int tool_echo(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	const char *text = "";
	int64_t pad = 0;
	mcp_args_string(args, "text", &text);
	mcp_args_int64(args, "pad_bytes", &pad);
	size_t n = strlen(text);
	/* The schema bounds pad_bytes; under --unchecked-args nothing does,
	 * and the one thing this fixture must still never do is crash. */
	if (pad < 0 || pad > 64 << 20)
		pad = 0;
	if (pad == 0)
		return mcp_result_add_text_len(out, text, n);
	char *buf = malloc(n + (size_t)pad);
	if (!buf)
		return MCP_ENOMEM;
	memcpy(buf, text, n);
	memset(buf + n, 'x', (size_t)pad);
	int rc = mcp_result_add_text_len(out, buf, n + (size_t)pad);
	free(buf);
	return rc;
}

static int tool_sleep(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t ms = 0;
	int cancellable = 1;
	mcp_args_int64(args, "ms", &ms);
	mcp_args_bool(args, "cancellable", &cancellable);
	if (cancellable) {
		int rc = mcp_ctx_sleep(ctx, ms);
		if (rc != MCP_OK)
			return rc;
	} else {
		struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	char text[64];
	snprintf(text, sizeof text, "slept %lld", (long long)ms);
	return mcp_result_add_text(out, text);
}

static int tool_spin(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	int64_t ms = 0;
	mcp_args_int64(args, "ms", &ms);
	/* Deliberately blind to cancellation: the shutdown must abandon it. */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	volatile uint64_t x = 0;
	do {
		for (int i = 0; i < 10000; i++)
			x += (uint64_t)i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	char text[64];
	snprintf(text, sizeof text, "spun %lld", (long long)ms);
	return mcp_result_add_text(out, text);
}

/* A fixed amount of CPU work (for the benchmarks' scaling runs): rounds of
 * an xorshift mix, checking the token every million rounds. */
static int tool_burn(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t rounds = 1000000;
	mcp_args_int64(args, "rounds", &rounds);
	uint64_t x = 88172645463325252u;
	for (int64_t i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if ((i & 0xfffff) == 0 && mcp_ctx_cancelled(ctx))
			return MCP_ECANCELED;
	}
	char text[64];
	snprintf(text, sizeof text, "burned %lld %016llx", (long long)rounds,
		 (unsigned long long)x);
	return mcp_result_add_text(out, text);
}

static int tool_roots(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t timeout = 5000, times = 1, sleep_ms = 0;
	mcp_args_int64(args, "timeout_ms", &timeout);
	mcp_args_int64(args, "times", &times);
	mcp_args_int64(args, "sleep_ms", &sleep_ms);
	json_object *res = NULL;
	int rc = MCP_OK;
	/* Asked `times` times, the last answer kept (a 2026-07-28 client
	 * sees one input_required per ask). */
	for (int64_t i = 0; i < times && rc == MCP_OK; i++) {
		json_object_put(res);
		res = NULL;
		rc = mcp_ctx_list_roots(ctx, timeout, &res);
	}
	if (rc == MCP_OK && sleep_ms > 0)
		rc = mcp_ctx_sleep(ctx, sleep_ms);
	if (rc == MCP_ECANCELED || rc == MCP_ECLOSED) {
		json_object_put(res);
		return rc; /* stopped by cancellation or the close: no answer */
	}
	if (rc == MCP_OK) {
		json_object *roots = NULL;
		json_object_object_get_ex(res, "roots", &roots);
		rc = mcp_result_add_text(out, roots ? json_object_to_json_string_ext(
							      roots, JSON_C_TO_STRING_PLAIN |
								     JSON_C_TO_STRING_NOSLASHESCAPE)
						    : "[]");
		json_object_put(res);
		return rc;
	}
	json_object_put(res);
	return mcp_result_tool_error(out, "roots/list failed: %s", mcp_strerror(rc));
}

static int tool_progress(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t steps = 5, interval = 10;
	mcp_args_int64(args, "steps", &steps);
	mcp_args_int64(args, "interval_ms", &interval);
	for (int64_t i = 1; i <= steps; i++) {
		int rc = mcp_ctx_sleep(ctx, interval);
		if (rc != MCP_OK)
			return rc;
		rc = mcp_ctx_progress(ctx, (double)i, (double)steps, NULL);
		if (rc == MCP_ECANCELED)
			return rc;
	}
	return mcp_result_add_text(out, "done");
}

/* The two-number tool of issue 18: no type checks here, because the
 * schema (required numbers, nothing else) was checked before the call. */
static int tool_add(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	double a = 0, b = 0;
	mcp_args_double(args, "a", &a);
	mcp_args_double(args, "b", &b);
	char text[64];
	snprintf(text, sizeof text, "%.17g", a + b);
	json_object *sum = json_object_new_object();
	if (!sum || json_object_object_add(sum, "sum", json_object_new_double(a + b))) {
		json_object_put(sum);
		return MCP_ENOMEM;
	}
	int rc = mcp_result_set_structured(out, sum);
	return rc == MCP_OK ? mcp_result_add_text(out, text) : rc;
}

/* A server bug on purpose: structuredContent that breaks the declared
 * outputSchema (a string sum).  The client gets -32603, never the result;
 * with isError it is sent, since error results are exempt. */
static int tool_bad_output(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	int as_error = 0;
	mcp_args_bool(args, "as_error", &as_error);
	json_object *sum = json_object_new_object();
	if (!sum || json_object_object_add(sum, "sum", json_object_new_string("three"))) {
		json_object_put(sum);
		return MCP_ENOMEM;
	}
	int rc = mcp_result_set_structured(out, sum);
	if (rc == MCP_OK)
		rc = mcp_result_add_text(out, "three");
	mcp_result_set_is_error(out, as_error);
	return rc;
}

static const mcp_tool tools[] = {
	{ .name = "echo", .title = "Echo",
	  .description = "Returns the text it was given, optionally padded with pad_bytes of 'x'.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
			  "\"pad_bytes\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":67108864}},"
			  "\"required\":[\"text\"]}",
	  .fn = tool_echo },
	{ .name = "sleep", .title = "Sleep",
	  .description = "Waits ms milliseconds; wakes early on cancellation unless "
			 "cancellable is false.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":86400000},\"cancellable\":{\"type\":"
			  "\"boolean\"}},\"required\":[\"ms\"]}",
	  .fn = tool_sleep,
	  .task_support = MCP_TASKS_OPTIONAL /* 2025-11-25 clients may run it as a task */ },
	{ .name = "spin", .title = "Spin",
	  .description = "Busy-loops for ms milliseconds and never looks at cancellation.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":3600000}},\"required\":[\"ms\"]}",
	  .fn = tool_spin },
	{ .name = "burn", .title = "Burn",
	  .description = "Spends a fixed amount of CPU (rounds of a xorshift mix; default "
			 "1000000).",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"rounds\":{\"type\":"
			  "\"integer\",\"minimum\":0,\"maximum\":1099511627776}}}",
	  .fn = tool_burn },
	{ .name = "roots", .title = "Roots",
	  .description = "Asks the client for its roots (roots/list) `times` times, sleeps "
			 "sleep_ms, and returns the last answer.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"timeout_ms\":{\"type\":"
			  "\"integer\",\"minimum\":0,\"maximum\":3600000},\"times\":{\"type\":"
			  "\"integer\",\"minimum\":1,\"maximum\":8},\"sleep_ms\":{\"type\":"
			  "\"integer\",\"minimum\":0,\"maximum\":3600000}}}",
	  .fn = tool_roots },
	{ .name = "progress", .title = "Progress",
	  .description = "Reports steps progress notifications, one every interval_ms.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":100000},\"interval_ms\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":3600000}}}",
	  .fn = tool_progress },
	{ .name = "add", .title = "Add",
	  .description = "Adds two numbers a and b.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
			  "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"],"
			  "\"additionalProperties\":false}",
	  .output_schema = "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
			   "\"required\":[\"sum\"]}",
	  .fn = tool_add },
	{ .name = "bad_output", .title = "Bad output",
	  .description = "Returns structuredContent that breaks its own outputSchema (a test "
			 "of the server-side check); with as_error, as an error result.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"as_error\":{\"type\":"
			  "\"boolean\"}}}",
	  .output_schema = "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
			   "\"required\":[\"sum\"]}",
	  .fn = tool_bad_output },
};

/* ---- main ------------------------------------------------------------------ */

static void trace_to_stderr(const char *event, const char *id_json, const char *reason,
			    void *user)
{
	(void)user;
	/* One write per line so lines from several workers never interleave. */
	char line[512];
	int n = reason ? snprintf(line, sizeof line, "%s %s %s\n", event, id_json, reason)
		       : snprintf(line, sizeof line, "%s %s\n", event, id_json);
	if (n > 0)
		fwrite(line, 1, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, stderr);
}

static void on_signal(int sig)
{
	(void)sig;
	mcp_server_shutdown_from_signal(the_server);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mcp-everything [--stdio | --http HOST:PORT] [--workers N] [--grace-ms N]\n"
		"                      [--trace] [--stats] [--max-message BYTES]\n"
		"                      [--json] [--max-sessions N] [--stateless]\n"
		"                      [--session-idle-ms N] [--max-connections N] [--max-streams N]\n"
		"                      [--stream-backlog BYTES] [--session-workers N]\n"
		"                      [--session-queue N]\n"
		"                      [--allow-host NAME]... [--allow-origin ORIGIN]...\n"
		"                      [--bearer TOKEN] [--state-key HEX64 [--state-key-old HEX64]]\n"
		"                      [--state-ttl-ms N] [--max-parked N] [--park-ttl-ms N]\n"
		"                      [--unchecked-args] [--instance TAG] [--max-tasks N]\n"
		"                      [--task-ttl-ms N]\n");
}

/* 64 hex digits into 32 bytes; 0, or -1 when malformed. */
static int parse_key(const char *hex, unsigned char key[32])
{
	if (strlen(hex) != 64)
		return -1;
	for (int i = 0; i < 32; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1 || !isxdigit((unsigned char)hex[2 * i]) ||
		    !isxdigit((unsigned char)hex[2 * i + 1]))
			return -1;
		key[i] = (unsigned char)v;
	}
	return 0;
}

/* --bearer: the authorization hook of a deployment with one static token
 * (a real one would verify a signed token or ask an introspection
 * endpoint). */
static int check_bearer(const char *authorization, const char *session_id, void *user)
{
	const char *token = user;
	(void)session_id;
	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return 401;
	return strcmp(authorization + 7, token) == 0 ? 0 : 403;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	long workers = 4, grace = 1500, max_message = 16L << 20;
	int want_trace = 0, want_stats = 0, unchecked = 0;
	const char *http = NULL;
	int json_only = 0, stateless = 0;
	long max_sessions = 1000;
	/* HTTP limits: -1 keeps the library's default. */
	long idle_ms = -1, max_conns = -1, max_streams = -1, backlog = -1, sess_workers = -1,
	     sess_queue = -1;
	const char *bearer = NULL;
	unsigned char state_key[32], state_key_old[32];
	int have_key = 0, have_key_old = 0;
	long state_ttl = 0;
	long max_parked = -1, park_ttl = 60000;
	const char *allow_host[16], *allow_origin[16];
	int n_hosts = 0, n_origins = 0;
	const char *instance = NULL;
	long max_tasks = -1, task_ttl = -1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--stdio") == 0) {
			http = NULL;
		} else if (strcmp(a, "--http") == 0 && i + 1 < argc) {
			http = argv[++i];
		} else if (strcmp(a, "--json") == 0) {
			json_only = 1;
		} else if (strcmp(a, "--stateless") == 0) {
			stateless = 1;
		} else if (strcmp(a, "--bearer") == 0 && i + 1 < argc) {
			bearer = argv[++i];
		} else if (strcmp(a, "--state-key") == 0 && i + 1 < argc) {
			if (parse_key(argv[++i], state_key))
				goto bad;
			have_key = 1;
		} else if (strcmp(a, "--state-key-old") == 0 && i + 1 < argc) {
			if (parse_key(argv[++i], state_key_old))
				goto bad;
			have_key_old = 1;
		} else if (strcmp(a, "--state-ttl-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1000, 86400000, &state_ttl))
				goto bad;
		} else if (strcmp(a, "--max-parked") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 65536, &max_parked))
				goto bad;
		} else if (strcmp(a, "--park-ttl-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 86400000, &park_ttl))
				goto bad;
		} else if (strcmp(a, "--allow-host") == 0 && i + 1 < argc && n_hosts < 16) {
			allow_host[n_hosts++] = argv[++i];
		} else if (strcmp(a, "--allow-origin") == 0 && i + 1 < argc && n_origins < 16) {
			allow_origin[n_origins++] = argv[++i];
		} else if (strcmp(a, "--max-sessions") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 1000000, &max_sessions))
				goto bad;
		} else if (strcmp(a, "--session-idle-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1000, 1L << 31, &idle_ms))
				goto bad;
		} else if (strcmp(a, "--max-connections") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 1000000, &max_conns))
				goto bad;
		} else if (strcmp(a, "--max-streams") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 1000000, &max_streams))
				goto bad;
		} else if (strcmp(a, "--stream-backlog") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 4096, 1L << 30, &backlog))
				goto bad;
		} else if (strcmp(a, "--session-workers") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 1024, &sess_workers))
				goto bad;
		} else if (strcmp(a, "--session-queue") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 10000000, &sess_queue))
				goto bad;
		} else if (strcmp(a, "--instance") == 0 && i + 1 < argc) {
			instance = argv[++i];
		} else if (strcmp(a, "--max-tasks") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 10000000, &max_tasks))
				goto bad;
		} else if (strcmp(a, "--task-ttl-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1000, 1L << 31, &task_ttl))
				goto bad;
		} else if (strcmp(a, "--trace") == 0) {
			want_trace = 1;
		} else if (strcmp(a, "--unchecked-args") == 0) {
			unchecked = 1;
		} else if (strcmp(a, "--stats") == 0) {
			want_stats = 1;
		} else if (strcmp(a, "--workers") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 1024, &workers))
				goto bad;
		} else if (strcmp(a, "--grace-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 600000, &grace))
				goto bad;
		} else if (strcmp(a, "--max-message") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1024, 1L << 30, &max_message))
				goto bad;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			goto bad;
		}
	}

	mcp_server *srv = mcp_server_new("mcp-everything", "0.1.0");
	if (!srv) {
		fprintf(stderr, "mcp-everything: out of memory\n");
		return 1;
	}
	the_server = srv;
	mcp_server_set_workers(srv, (int)workers);
	mcp_server_set_grace_ms(srv, (int)grace);
	mcp_server_set_max_message(srv, (size_t)max_message);
	mcp_server_set_http_json(srv, json_only);
	mcp_server_set_max_sessions(srv, (int)max_sessions);
	mcp_server_set_http_stateless(srv, stateless);
	if (idle_ms >= 0)
		mcp_server_set_session_idle_ms(srv, idle_ms);
	if (max_conns >= 0)
		mcp_server_set_max_connections(srv, (int)max_conns);
	if (max_streams >= 0)
		mcp_server_set_max_streams(srv, (int)max_streams);
	if (backlog >= 0)
		mcp_server_set_stream_backlog(srv, (size_t)backlog);
	if (sess_workers >= 0)
		mcp_server_set_session_workers(srv, (int)sess_workers);
	if (sess_queue >= 0)
		mcp_server_set_session_queue(srv, (int)sess_queue);
	if (have_key)
		mcp_server_set_state_key(srv, state_key, have_key_old ? state_key_old : NULL);
	if (state_ttl)
		mcp_server_set_state_ttl(srv, state_ttl);
	mcp_server_set_parking(srv, max_parked >= 0 ? (int)max_parked : 64, park_ttl);
	if (bearer)
		mcp_server_set_http_auth(srv, check_bearer, (void *)bearer);
	/* Behind a proxy: task ids name this process (README). */
	if (instance && mcp_server_set_instance_id(srv, instance) != MCP_OK) {
		fprintf(stderr, "mcp-everything: bad --instance %s (1 to 32 of A-Z a-z 0-9 - _)\n",
			instance);
		return 2;
	}
	if (max_tasks > 0)
		mcp_server_set_max_tasks(srv, (int)max_tasks);
	if (task_ttl > 0)
		mcp_server_set_task_ttl(srv, task_ttl, task_ttl > 86400000 ? task_ttl : 86400000);
	for (int i = 0; i < n_hosts; i++)
		if (mcp_server_add_http_allowed_host(srv, allow_host[i]) != MCP_OK) {
			fprintf(stderr, "mcp-everything: bad --allow-host %s\n", allow_host[i]);
			return 2;
		}
	for (int i = 0; i < n_origins; i++)
		if (mcp_server_add_http_allowed_origin(srv, allow_origin[i]) != MCP_OK) {
			fprintf(stderr, "mcp-everything: bad --allow-origin %s\n", allow_origin[i]);
			return 2;
		}
	mcp_server_set_instructions(srv, "The libmcp fixture server: echo, sleep, spin, "
					 "roots and progress tools for tests and benchmarks.");
	if (want_trace)
		mcp_server_set_trace(srv, trace_to_stderr, NULL);
	/* What the official conformance suite expects of an everything server,
	 * first: its header-validation scenario calls the first tool listed
	 * without arguments. */
	int crc = everything_register_conformance(srv);
	if (crc != MCP_OK) {
		fprintf(stderr, "mcp-everything: conformance fixtures: %s\n", mcp_strerror(crc));
		return 1;
	}
	crc = everything_register_extensions(srv);
	if (crc != MCP_OK) {
		fprintf(stderr, "mcp-everything: extension fixtures: %s\n", mcp_strerror(crc));
		return 1;
	}
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		mcp_tool t = tools[i];
		/* --unchecked-args: the benchmark's reference, arguments
		 * straight to the handlers (which then trust them blindly). */
		if (unchecked)
			t.flags |= MCP_TOOL_UNCHECKED_ARGS;
		int rc = mcp_server_add_tool(srv, &t);
		if (rc != MCP_OK) {
			char why[256];
			mcp_tool_check(&t, why, sizeof why);
			fprintf(stderr, "mcp-everything: tool %s: %s%s%s\n", tools[i].name,
				mcp_strerror(rc), rc == MCP_EINVAL ? ": " : "",
				rc == MCP_EINVAL ? why : "");
			return 1;
		}
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	int rc;
	if (http) {
		/* Every connection is a descriptor: take what the hard limit
		 * allows (a server holding thousands of SSE streams needs it). */
		struct rlimit nofile;
		if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
		}
		int port = 0;
		rc = mcp_server_run_http(srv, http, &port);
	} else {
		rc = mcp_server_run_stdio(srv);
	}
	if (rc != MCP_OK)
		fprintf(stderr, "mcp-everything: %s\n", mcp_strerror(rc));
	if (want_stats) {
		char *st = mcp_server_stats_json(srv);
		if (st)
			fprintf(stderr, "stats %s\n", st);
		free(st);
	}
	mcp_server_free(srv);
	return rc == MCP_OK ? 0 : 1;

bad:
	usage(stderr);
	return 2;
}
