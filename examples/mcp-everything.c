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

static mcp_server *the_server;

/* ---- argument helpers ---------------------------------------------------- */

static json_object *arg(json_object *args, const char *key)
{
	json_object *v = NULL;
	json_object_object_get_ex(args, key, &v);
	return v;
}

/* Reads an integer argument; returns -1 and sets an error when it has the
 * wrong type or is out of [lo, hi]. */
static int int_arg(json_object *args, const char *key, int64_t dflt, int64_t lo, int64_t hi,
		   int64_t *out, mcp_result *res)
{
	json_object *v = arg(args, key);
	if (!v) {
		*out = dflt;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < lo || json_object_get_int64(v) > hi) {
		char msg[128];
		snprintf(msg, sizeof msg, "Invalid params: %s must be an integer in [%lld, %lld]",
			 key, (long long)lo, (long long)hi);
		mcp_result_set_error(res, -32602, msg, NULL);
		return -1;
	}
	*out = json_object_get_int64(v);
	return 0;
}

/* ---- tools ---------------------------------------------------------------- */

static int tool_echo(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	json_object *text = arg(args, "text");
	int64_t pad;
	if (!json_object_is_type(text, json_type_string)) {
		mcp_result_set_error(out, -32602, "Invalid params: text must be a string", NULL);
		return MCP_EINVAL;
	}
	if (int_arg(args, "pad_bytes", 0, 0, 64 << 20, &pad, out))
		return MCP_EINVAL;
	size_t n = (size_t)json_object_get_string_len(text);
	if (pad == 0)
		return mcp_result_add_text_len(out, json_object_get_string(text), n);
	char *buf = malloc(n + (size_t)pad);
	if (!buf)
		return MCP_ENOMEM;
	memcpy(buf, json_object_get_string(text), n);
	memset(buf + n, 'x', (size_t)pad);
	int rc = mcp_result_add_text_len(out, buf, n + (size_t)pad);
	free(buf);
	return rc;
}

static int tool_sleep(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t ms;
	if (int_arg(args, "ms", 0, 0, 24 * 3600 * 1000, &ms, out))
		return MCP_EINVAL;
	json_object *c = arg(args, "cancellable");
	int cancellable = !c || json_object_get_boolean(c);
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
	int64_t ms;
	if (int_arg(args, "ms", 0, 0, 3600 * 1000, &ms, out))
		return MCP_EINVAL;
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
	int64_t rounds;
	if (int_arg(args, "rounds", 1000000, 0, INT64_C(1) << 40, &rounds, out))
		return MCP_EINVAL;
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
	int64_t timeout, times, sleep_ms;
	if (int_arg(args, "timeout_ms", 5000, 0, 3600 * 1000, &timeout, out) ||
	    int_arg(args, "times", 1, 1, 8, &times, out) ||
	    int_arg(args, "sleep_ms", 0, 0, 3600 * 1000, &sleep_ms, out))
		return MCP_EINVAL;
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
	char text[160];
	snprintf(text, sizeof text, "roots/list failed: %s", mcp_strerror(rc));
	mcp_result_set_is_error(out, 1);
	return mcp_result_add_text(out, text);
}

static int tool_progress(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)user;
	int64_t steps, interval;
	if (int_arg(args, "steps", 5, 0, 100000, &steps, out) ||
	    int_arg(args, "interval_ms", 10, 0, 3600 * 1000, &interval, out))
		return MCP_EINVAL;
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

static const mcp_tool tools[] = {
	{ .name = "echo", .title = "Echo",
	  .description = "Returns the text it was given, optionally padded with pad_bytes of 'x'.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
			  "\"pad_bytes\":{\"type\":\"integer\",\"minimum\":0}},"
			  "\"required\":[\"text\"]}",
	  .fn = tool_echo },
	{ .name = "sleep", .title = "Sleep",
	  .description = "Waits ms milliseconds; wakes early on cancellation unless "
			 "cancellable is false.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
			  "\"minimum\":0},\"cancellable\":{\"type\":\"boolean\"}},"
			  "\"required\":[\"ms\"]}",
	  .fn = tool_sleep,
	  .task_support = MCP_TASKS_OPTIONAL /* 2025-11-25 clients may run it as a task */ },
	{ .name = "spin", .title = "Spin",
	  .description = "Busy-loops for ms milliseconds and never looks at cancellation.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
			  "\"minimum\":0}},\"required\":[\"ms\"]}",
	  .fn = tool_spin },
	{ .name = "burn", .title = "Burn",
	  .description = "Spends a fixed amount of CPU (rounds of a xorshift mix; default "
			 "1000000).",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"rounds\":{\"type\":"
			  "\"integer\",\"minimum\":0}}}",
	  .fn = tool_burn },
	{ .name = "roots", .title = "Roots",
	  .description = "Asks the client for its roots (roots/list) `times` times, sleeps "
			 "sleep_ms, and returns the last answer.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"timeout_ms\":{\"type\":"
			  "\"integer\",\"minimum\":0},\"times\":{\"type\":\"integer\",\"minimum\":1,"
			  "\"maximum\":8},\"sleep_ms\":{\"type\":\"integer\",\"minimum\":0}}}",
	  .fn = tool_roots },
	{ .name = "progress", .title = "Progress",
	  .description = "Reports steps progress notifications, one every interval_ms.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\","
			  "\"minimum\":0},\"interval_ms\":{\"type\":\"integer\",\"minimum\":0}}}",
	  .fn = tool_progress },
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
		"                      [--state-ttl-ms N] [--max-parked N] [--park-ttl-ms N]\n");
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
	int want_trace = 0, want_stats = 0;
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
		} else if (strcmp(a, "--trace") == 0) {
			want_trace = 1;
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
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		int rc = mcp_server_add_tool(srv, &tools[i]);
		if (rc != MCP_OK) {
			fprintf(stderr, "mcp-everything: tool %s: %s\n", tools[i].name,
				mcp_strerror(rc));
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
