/*
 * mcp-everything.c - the reference server of libmcp: every tool the test
 * harness, the benchmarks and the interop tests drive, over stdio.
 *
 * It is also the example to read first: registration, handlers that honour
 * cancellation, progress, a server-to-client request, and a signal handler
 * that asks for the orderly shutdown.
 */
#include <ctype.h>
#include <math.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <strings.h>
#include <time.h>

#include <pthread.h>
#include <stdarg.h>

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
	size_t n = 0;
	int64_t pad = 0;
	/* With its length: the text may hold U+0000, and is echoed whole. */
	mcp_args_string_len(args, "text", &text, &n);
	mcp_args_int64(args, "pad_bytes", &pad);
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
	if (rc == MCP_ECANCELED) {
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
	int log = 0;
	mcp_args_int64(args, "steps", &steps);
	mcp_args_int64(args, "interval_ms", &interval);
	mcp_args_bool(args, "log", &log);
	for (int64_t i = 1; i <= steps; i++) {
		int rc = mcp_ctx_sleep(ctx, interval);
		if (rc != MCP_OK)
			return rc;
		rc = mcp_ctx_progress(ctx, (double)i, (double)steps, NULL);
		if (rc == MCP_ECANCELED)
			return rc;
		if (log) {
			char text[64];
			snprintf(text, sizeof text, "step %lld of %lld", (long long)i,
				 (long long)steps);
			if (mcp_ctx_log_text(ctx, MCP_LOG_INFO, "progress", text) == MCP_ECANCELED)
				return MCP_ECANCELED;
		}
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
	/* 1e400 reads as an infinity, and two finite numbers may overflow:
	 * JSON has no number for the result. */
	if (!isfinite(a + b))
		return mcp_result_tool_error(out, "the sum of %.17g and %.17g is not a finite "
					     "number",
					     a, b);
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

/* ---- authorization fixtures -------------------------------------------------- */

/* Who the request comes from, as the handler sees it (mcp_ctx_auth_*): a
 * JSON text, {"authenticated":false} over stdio. */
static int tool_whoami(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)args;
	(void)user;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "authenticated",
			       json_object_new_boolean(mcp_ctx_authenticated(ctx)));
	if (mcp_ctx_auth_subject(ctx))
		json_object_object_add(o, "subject",
				       json_object_new_string(mcp_ctx_auth_subject(ctx)));
	if (mcp_ctx_auth_client_id(ctx))
		json_object_object_add(o, "client_id",
				       json_object_new_string(mcp_ctx_auth_client_id(ctx)));
	size_t n = 0;
	const char *const *scopes = mcp_ctx_auth_scopes(ctx, &n);
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(scopes[i]));
	json_object_object_add(o, "scopes", a);
	int rc = mcp_result_add_text(out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return rc;
}

/* An echo only tokens with the scope mcp:admin may call or even see (set
 * with mcp_server_set_scopes in main). */
static int tool_admin_echo(mcp_ctx *ctx, json_object *args, mcp_result *out, void *user)
{
	(void)ctx;
	(void)user;
	/* The schema made `text` a string, if present. */
	const char *text = "";
	mcp_args_string(args, "text", &text);
	char buf[512];
	snprintf(buf, sizeof buf, "admin: %s", text);
	return mcp_result_add_text(out, buf);
}

static const mcp_tool tools[] = {
	{ MCP_TOOL_INIT, .name = "echo", .title = "Echo",
	  .description = "Returns the text it was given, optionally padded with pad_bytes of 'x'.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
			  "\"pad_bytes\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":67108864}},"
			  "\"required\":[\"text\"]}",
	  .fn = tool_echo },
	{ MCP_TOOL_INIT, .name = "sleep", .title = "Sleep",
	  .description = "Waits ms milliseconds; wakes early on cancellation unless "
			 "cancellable is false.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":86400000},\"cancellable\":{\"type\":"
			  "\"boolean\"}},\"required\":[\"ms\"]}",
	  .fn = tool_sleep,
	  .task_support = MCP_TASKS_OPTIONAL /* 2025-11-25 clients may run it as a task */ },
	{ MCP_TOOL_INIT, .name = "spin", .title = "Spin",
	  .description = "Busy-loops for ms milliseconds and never looks at cancellation.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":3600000}},\"required\":[\"ms\"]}",
	  .fn = tool_spin },
	{ MCP_TOOL_INIT, .name = "burn", .title = "Burn",
	  .description = "Spends a fixed amount of CPU (rounds of a xorshift mix; default "
			 "1000000).",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"rounds\":{\"type\":"
			  "\"integer\",\"minimum\":0,\"maximum\":1099511627776}}}",
	  .fn = tool_burn },
	{ MCP_TOOL_INIT, .name = "roots", .title = "Roots",
	  .description = "Asks the client for its roots (roots/list) `times` times, sleeps "
			 "sleep_ms, and returns the last answer.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"timeout_ms\":{\"type\":"
			  "\"integer\",\"minimum\":0,\"maximum\":3600000},\"times\":{\"type\":"
			  "\"integer\",\"minimum\":1,\"maximum\":8},\"sleep_ms\":{\"type\":"
			  "\"integer\",\"minimum\":0,\"maximum\":3600000}}}",
	  .fn = tool_roots },
	{ MCP_TOOL_INIT, .name = "progress", .title = "Progress",
	  .description = "Reports steps progress notifications, one every interval_ms (with "
			 "log, a log message after each).",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":100000},\"interval_ms\":{\"type\":\"integer\","
			  "\"minimum\":0,\"maximum\":3600000},\"log\":{\"type\":\"boolean\"}}}",
	  .fn = tool_progress },
	{ MCP_TOOL_INIT, .name = "add", .title = "Add",
	  .description = "Adds two numbers a and b.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
			  "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"],"
			  "\"additionalProperties\":false}",
	  .output_schema = "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
			   "\"required\":[\"sum\"]}",
	  .fn = tool_add },
	{ MCP_TOOL_INIT, .name = "bad_output", .title = "Bad output",
	  .description = "Returns structuredContent that breaks its own outputSchema (a test "
			 "of the server-side check); with as_error, as an error result.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"as_error\":{\"type\":"
			  "\"boolean\"}}}",
	  .output_schema = "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
			   "\"required\":[\"sum\"]}",
	  .fn = tool_bad_output },
	{ MCP_TOOL_INIT, .name = "whoami", .title = "Who am I",
	  .description = "Returns the caller's principal: subject, client id and scopes of "
			 "its bearer token (none over stdio).",
	  .input_schema = "{\"type\":\"object\"}",
	  .fn = tool_whoami },
	{ MCP_TOOL_INIT, .name = "admin_echo", .title = "Admin echo",
	  .description = "Echoes text; needs the scope mcp:admin over HTTP with authorization.",
	  .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
			  "\"required\":[\"text\"]}",
	  .fn = tool_admin_echo },
};

/* ---- request hooks: a rate limit and an access log ------------------------------ */

/* --rate-limit N/SECONDS: a token bucket per principal (its subject, else
 * its client id; one bucket for local clients), N requests at once and N
 * more every SECONDS.  A request over the limit is refused with
 * MCP_REFUSE_RATE_LIMITED: over HTTP 429 with Retry-After, over stdio the
 * JSON-RPC error -32050 with data.retryAfterMs. */
#define MAX_BUCKETS 1024
typedef struct bucket {
	char who[128];
	double tokens;
	int64_t at_ms;
} bucket;
static struct {
	pthread_mutex_t mu;
	double capacity, per_ms;
	bucket b[MAX_BUCKETS];
	int n;
	int enabled, log;
} limits = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Takes one token of `who`'s bucket: 0, or the ms until one is there. */
static int64_t bucket_take(const char *who)
{
	int64_t now = mono_ms();
	pthread_mutex_lock(&limits.mu);
	bucket *b = NULL, *oldest = NULL;
	for (int i = 0; i < limits.n && !b; i++) {
		if (strcmp(limits.b[i].who, who) == 0)
			b = &limits.b[i];
		else if (!oldest || limits.b[i].at_ms < oldest->at_ms)
			oldest = &limits.b[i];
	}
	if (!b) {
		/* A new caller; when the table is full, the one seen least
		 * recently is forgotten (it comes back with a full bucket). */
		b = limits.n < MAX_BUCKETS ? &limits.b[limits.n++] : oldest;
		snprintf(b->who, sizeof b->who, "%s", who);
		b->tokens = limits.capacity;
		b->at_ms = now;
	}
	b->tokens += (double)(now - b->at_ms) * limits.per_ms;
	if (b->tokens > limits.capacity)
		b->tokens = limits.capacity;
	b->at_ms = now;
	int64_t wait = 0;
	if (b->tokens >= 1)
		b->tokens -= 1;
	else
		wait = (int64_t)((1 - b->tokens) / limits.per_ms) + 1;
	pthread_mutex_unlock(&limits.mu);
	return wait;
}

/* One line per event, written at once so lines of several workers never
 * interleave. */
static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	fwrite(line, 1, (size_t)n, stderr);
}

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

/* The W3C traceparent a client sent with the request, if valid: the
 * library checked its format, so a client cannot write what it likes into
 * the log through it. */
static const char *traceparent(mcp_ctx *ctx)
{
	const char *tp = NULL;
	mcp_ctx_trace_context(ctx, &tp, NULL);
	return tp;
}

static int before_hook(mcp_ctx *ctx, void *user)
{
	(void)user;
	const char *who = mcp_ctx_auth_subject(ctx);
	if (!who)
		who = mcp_ctx_auth_client_id(ctx);
	if (limits.log)
		log_line("hook before method=%s name=%s sub=%s client=%s traceparent=%s",
			 or_dash(mcp_ctx_method(ctx)), or_dash(mcp_ctx_target(ctx)),
			 or_dash(mcp_ctx_auth_subject(ctx)), or_dash(mcp_ctx_auth_client_id(ctx)),
			 or_dash(traceparent(ctx)));
	if (!limits.enabled)
		return MCP_OK;
	int64_t wait = bucket_take(who ? who : "");
	if (wait > 0)
		return mcp_ctx_refuse(ctx, MCP_REFUSE_RATE_LIMITED, "Too many requests", wait);
	return MCP_OK;
}

static void after_hook(mcp_ctx *ctx, const char *outcome, int code, int64_t duration_us,
		       void *user)
{
	(void)user;
	if (limits.log)
		log_line("hook after method=%s name=%s sub=%s outcome=%s code=%d us=%lld "
			 "traceparent=%s",
			 or_dash(mcp_ctx_method(ctx)), or_dash(mcp_ctx_target(ctx)),
			 or_dash(mcp_ctx_auth_subject(ctx)), outcome, code,
			 (long long)duration_us, or_dash(traceparent(ctx)));
}

/* "N/SECONDS" of --rate-limit. */
static int parse_rate(const char *s)
{
	char *end;
	errno = 0;
	long n = strtol(s, &end, 10);
	if (errno || end == s || *end != '/' || n < 1 || n > 1000000)
		return -1;
	const char *p = end + 1;
	long secs = strtol(p, &end, 10);
	if (errno || end == p || *end || secs < 1 || secs > 86400)
		return -1;
	limits.capacity = (double)n;
	limits.per_ms = (double)n / ((double)secs * 1000.0);
	limits.enabled = 1;
	return 0;
}

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
		"                      [--trace] [--stats] [--max-message BYTES] [--max-values N]\n"
		"                      [--json] [--max-sessions N] [--stateless] [--legacy-sse]\n"
		"                      [--session-idle-ms N] [--max-connections N] [--max-streams N]\n"
		"                      [--stream-backlog BYTES] [--session-workers N]\n"
		"                      [--session-queue N] [--header-timeout-ms N]\n"
		"                      [--body-timeout-ms N]\n"
		"                      [--allow-host NAME]... [--allow-origin ORIGIN]...\n"
		"                      [--bearer TOKEN] [--state-key HEX64 [--state-key-old HEX64]]\n"
		"                      [--state-ttl-ms N] [--max-parked N] [--park-ttl-ms N]\n"
		"                      [--unchecked-args] [--nonblocking TOOL]...\n"
		"                      [--instance TAG] [--max-tasks N]\n"
		"                      [--max-tasks-per-principal N]\n"
		"                      [--task-ttl-ms N] [--store URL] [--store-timeout-ms N]\n"
		"                      [--task-lease-ms N]\n"
		"                      [--auth-resource URI --auth-jwks FILE [--auth-issuer ISS]\n"
		"                       [--auth-jwks-url URL | --auth-jwks-discover]\n"
		"                       [--auth-jwks-interval-ms N] [--auth-jwks-wait-ms N]\n"
		"                       [--auth-jwks-lifetime-ms MIN/DEFAULT/MAX]\n"
		"                       [--auth-introspect URL [--auth-introspect-client ID\n"
		"                        [--auth-introspect-secret-file FILE]]\n"
		"                        [--auth-introspect-ttl-ms N]]\n"
		"                       [--auth-server URL]... [--auth-scopes SCOPES]\n"
		"                       [--auth-require SCOPES]]\n"
		"                      [--rate-limit N/SECONDS] [--access-log]\n"
		"--legacy-sse also serves the HTTP+SSE transport of MCP 2024-11-05 (GET /sse,\n"
		"POST /messages?sessionId=ID) beside Streamable HTTP on /mcp.\n"
		"--nonblocking TOOL declares the tool MCP_TOOL_NONBLOCKING: its calls run on\n"
		"the thread that read them (echo, add: the benchmark's; spin, roots: the\n"
		"tests' of a broken promise).\n");
}

/* The --auth-* options. */
typedef struct auth_opts {
	const char *resource, *jwks, *issuer, *scopes, *require;
	const char *servers[8];
	int nservers;
	const char *jwks_url;        /* --auth-jwks-url */
	int discover;                /* --auth-jwks-discover */
	long interval_ms, wait_ms;   /* -1: the library's default */
	long life_min, life_dflt, life_max;
	const char *introspect, *introspect_client, *introspect_secret_file;
	long introspect_ttl_ms;
} auth_opts;

/* Each fetch of the key set, on stderr (the library prints nothing). */
static void keys_fetched(int rc, size_t nkeys, const char *why, void *user)
{
	(void)user;
	if (rc == MCP_OK)
		fprintf(stderr, "mcp-everything: key set fetched: %zu keys\n", nkeys);
	else
		fprintf(stderr, "mcp-everything: key set fetch failed, old keys kept: %s\n", why);
}

/* The first line of a file, into buf; 0, or -1. */
static int read_secret(const char *path, char *buf, size_t bufsz)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)bufsz, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\r\n")] = 0;
	return 0;
}

/* --auth-*: an OAuth 2.1 protected resource whose tokens are JWTs signed
 * by the keys of a JWKS file or of the issuer's JWKS URL, or opaque tokens
 * an introspection endpoint vouches for, from the issuer (also the
 * authorization server the metadata names, unless --auth-server says
 * otherwise).  0, or -1 after saying what is wrong. */
static int configure_auth(mcp_server *srv, const auth_opts *o)
{
	int keyed = (o->jwks != NULL) + (o->jwks_url != NULL) + o->discover;
	if (!o->resource) {
		if (keyed || o->issuer || o->nservers || o->scopes || o->require || o->introspect) {
			fprintf(stderr, "mcp-everything: --auth-* options need --auth-resource\n");
			return -1;
		}
		return 0;
	}
	if (!keyed && !o->introspect) {
		fprintf(stderr, "mcp-everything: --auth-resource needs --auth-jwks, "
				"--auth-jwks-url, --auth-jwks-discover or --auth-introspect\n");
		return -1;
	}
	if (keyed > 1) {
		fprintf(stderr, "mcp-everything: give one of --auth-jwks, --auth-jwks-url and "
				"--auth-jwks-discover\n");
		return -1;
	}
	int rc;
	const char *what = "--auth-resource";
	rc = mcp_server_set_auth_resource(srv, o->resource);
	if (rc == MCP_OK && o->issuer) {
		what = "--auth-issuer";
		rc = mcp_server_set_auth_issuer(srv, o->issuer);
	}
	if (rc == MCP_OK && (o->interval_ms >= 0 || o->wait_ms >= 0)) {
		what = "--auth-jwks-interval-ms/--auth-jwks-wait-ms";
		rc = mcp_server_set_auth_jwks_refresh(srv, o->interval_ms >= 0 ? o->interval_ms : 60000,
						      o->wait_ms >= 0 ? o->wait_ms : 3000);
	}
	if (rc == MCP_OK && o->life_min >= 0) {
		what = "--auth-jwks-lifetime-ms";
		rc = mcp_server_set_auth_jwks_lifetime(srv, o->life_min, o->life_dflt, o->life_max);
	}
	if (rc == MCP_OK && (o->jwks_url || o->discover))
		rc = mcp_server_set_auth_keys_notify(srv, keys_fetched, NULL);
	if (rc == MCP_OK && o->jwks) {
		what = "--auth-jwks";
		rc = mcp_server_set_auth_jwks_file(srv, o->jwks);
	}
	if (rc == MCP_OK && (o->jwks_url || o->discover)) {
		what = o->discover ? "--auth-jwks-discover" : "--auth-jwks-url";
		rc = mcp_server_set_auth_jwks_url(srv, o->jwks_url);
	}
	if (rc == MCP_OK && o->introspect) {
		char secret[512] = "";
		what = "--auth-introspect-secret-file";
		if (o->introspect_secret_file &&
		    read_secret(o->introspect_secret_file, secret, sizeof secret) != 0) {
			fprintf(stderr, "mcp-everything: %s: cannot read %s\n", what,
				o->introspect_secret_file);
			return -1;
		}
		what = "--auth-introspect";
		rc = mcp_server_set_auth_introspection(srv, o->introspect, o->introspect_client,
						       o->introspect_secret_file ? secret : NULL);
		memset(secret, 0, sizeof secret);
		if (rc == MCP_OK && o->introspect_ttl_ms >= 0) {
			what = "--auth-introspect-ttl-ms";
			rc = mcp_server_set_auth_introspection_cache(srv, 10000, o->introspect_ttl_ms);
		}
	}
	for (int i = 0; rc == MCP_OK && i < o->nservers; i++) {
		what = "--auth-server";
		rc = mcp_server_add_auth_server(srv, o->servers[i]);
	}
	if (rc == MCP_OK && !o->nservers && o->issuer) {
		what = "--auth-issuer (as the authorization server)";
		rc = mcp_server_add_auth_server(srv, o->issuer);
	}
	if (rc == MCP_OK && o->scopes) {
		what = "--auth-scopes";
		rc = mcp_server_set_auth_scopes_supported(srv, o->scopes);
	}
	if (rc == MCP_OK && o->require) {
		what = "--auth-require";
		rc = mcp_server_set_auth_required_scopes(srv, o->require);
	}
	if (rc != MCP_OK) {
		char why[700] = "";
		if (strncmp(what, "--auth-jwks", 11) == 0)
			mcp_server_auth_keys_error(srv, why, sizeof why);
		fprintf(stderr, "mcp-everything: %s: %s%s%s\n", what, mcp_strerror(rc),
			why[0] ? ": " : "", why);
		return -1;
	}
	return 0;
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
	long workers = 4, grace = 1500, max_message = 16L << 20, max_values = 1048576;
	int want_trace = 0, want_stats = 0, unchecked = 0;
	/* --nonblocking: names of tools, and how many of them were found */
	const char *nonblocking[8];
	int nnonblocking = 0, nblocking_found = 0;
	const char *http = NULL;
	int json_only = 0, stateless = 0, legacy_sse = 0;
	long max_sessions = 1000;
	/* HTTP limits: -1 keeps the library's default. */
	long header_ms = -1, body_ms = -1;
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
	long max_tasks = -1, task_ttl = -1, tasks_each = -1, store_timeout = -1, task_lease = -1;
	const char *store = NULL;
	auth_opts ao = { .interval_ms = -1, .wait_ms = -1, .life_min = -1,
			 .introspect_ttl_ms = -1 };

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
		} else if (strcmp(a, "--legacy-sse") == 0) {
			legacy_sse = 1;
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
		} else if (strcmp(a, "--header-timeout-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 100, 1L << 31, &header_ms))
				goto bad;
		} else if (strcmp(a, "--body-timeout-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 100, 1L << 31, &body_ms))
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
		} else if (strcmp(a, "--max-tasks-per-principal") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1, 10000000, &tasks_each))
				goto bad;
		} else if (strcmp(a, "--task-ttl-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1000, 1L << 31, &task_ttl))
				goto bad;
		} else if (strcmp(a, "--store") == 0 && i + 1 < argc) {
			store = argv[++i];
		} else if (strcmp(a, "--store-timeout-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 10, 60000, &store_timeout))
				goto bad;
		} else if (strcmp(a, "--task-lease-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 300, 600000, &task_lease))
				goto bad;
		} else if (strcmp(a, "--auth-resource") == 0 && i + 1 < argc) {
			ao.resource = argv[++i];
		} else if (strcmp(a, "--auth-jwks") == 0 && i + 1 < argc) {
			ao.jwks = argv[++i];
		} else if (strcmp(a, "--auth-jwks-url") == 0 && i + 1 < argc) {
			ao.jwks_url = argv[++i];
		} else if (strcmp(a, "--auth-jwks-discover") == 0) {
			ao.discover = 1;
		} else if (strcmp(a, "--auth-jwks-interval-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 1000, 86400000, &ao.interval_ms))
				goto bad;
		} else if (strcmp(a, "--auth-jwks-wait-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 10000, &ao.wait_ms))
				goto bad;
		} else if (strcmp(a, "--auth-jwks-lifetime-ms") == 0 && i + 1 < argc) {
			if (sscanf(argv[++i], "%ld/%ld/%ld", &ao.life_min, &ao.life_dflt,
				   &ao.life_max) != 3)
				goto bad;
		} else if (strcmp(a, "--auth-introspect") == 0 && i + 1 < argc) {
			ao.introspect = argv[++i];
		} else if (strcmp(a, "--auth-introspect-client") == 0 && i + 1 < argc) {
			ao.introspect_client = argv[++i];
		} else if (strcmp(a, "--auth-introspect-secret-file") == 0 && i + 1 < argc) {
			ao.introspect_secret_file = argv[++i];
		} else if (strcmp(a, "--auth-introspect-ttl-ms") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 0, 86400000, &ao.introspect_ttl_ms))
				goto bad;
		} else if (strcmp(a, "--auth-issuer") == 0 && i + 1 < argc) {
			ao.issuer = argv[++i];
		} else if (strcmp(a, "--auth-server") == 0 && i + 1 < argc && ao.nservers < 8) {
			ao.servers[ao.nservers++] = argv[++i];
		} else if (strcmp(a, "--auth-scopes") == 0 && i + 1 < argc) {
			ao.scopes = argv[++i];
		} else if (strcmp(a, "--auth-require") == 0 && i + 1 < argc) {
			ao.require = argv[++i];
		} else if (strcmp(a, "--rate-limit") == 0 && i + 1 < argc) {
			if (parse_rate(argv[++i]))
				goto bad;
		} else if (strcmp(a, "--access-log") == 0) {
			limits.log = 1;
		} else if (strcmp(a, "--trace") == 0) {
			want_trace = 1;
		} else if (strcmp(a, "--unchecked-args") == 0) {
			unchecked = 1;
		} else if (strcmp(a, "--nonblocking") == 0 && i + 1 < argc) {
			if (nnonblocking == sizeof nonblocking / sizeof nonblocking[0])
				goto bad;
			nonblocking[nnonblocking++] = argv[++i];
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
		} else if (strcmp(a, "--max-values") == 0 && i + 1 < argc) {
			if (parse_int(argv[++i], 16, 100000000, &max_values))
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
	mcp_server_set_max_values(srv, (size_t)max_values);
	mcp_server_set_http_json(srv, json_only);
	mcp_server_set_max_sessions(srv, (int)max_sessions);
	mcp_server_set_http_stateless(srv, stateless);
	mcp_server_set_http_legacy_sse(srv, legacy_sse);
	if (idle_ms >= 0)
		mcp_server_set_session_idle_ms(srv, idle_ms);
	if (max_conns >= 0)
		mcp_server_set_max_connections(srv, (int)max_conns);
	if (max_streams >= 0)
		mcp_server_set_max_streams(srv, (int)max_streams);
	if (backlog >= 0)
		mcp_server_set_stream_backlog(srv, (size_t)backlog);
	if (header_ms >= 0)
		mcp_server_set_http_header_timeout_ms(srv, header_ms);
	if (body_ms >= 0)
		mcp_server_set_http_body_timeout_ms(srv, body_ms);
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
	if (tasks_each > 0)
		mcp_server_set_max_tasks_per_principal(srv, (int)tasks_each);
	if (task_ttl > 0)
		mcp_server_set_task_ttl(srv, task_ttl, task_ttl > 86400000 ? task_ttl : 86400000);
	/* A shared store: tasks outlive this process and are reached
	 * through any process that shares it (README). */
	if (store && mcp_server_set_store(srv, store) != MCP_OK) {
		fprintf(stderr, "mcp-everything: --store: %s\n", mcp_server_store_error(srv));
		return 2;
	}
	if (store_timeout > 0)
		mcp_server_set_store_timeout_ms(srv, store_timeout);
	if (task_lease > 0)
		mcp_server_set_task_lease_ms(srv, task_lease);
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
	if (configure_auth(srv, &ao) != 0)
		return 2;
	if ((limits.enabled || limits.log) &&
	    mcp_server_set_request_hooks(srv, before_hook, after_hook, NULL) != MCP_OK) {
		fprintf(stderr, "mcp-everything: cannot install the request hooks\n");
		return 1;
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
	/* Only tokens with mcp:admin see or call it; local clients, which
	 * carry no token, are not restricted. */
	mcp_server_set_scopes(srv, MCP_ITEM_TOOL, "admin_echo", "mcp:admin");
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
		mcp_tool t = tools[i];
		/* --unchecked-args: the benchmark's reference, arguments
		 * straight to the handlers (which then trust them blindly). */
		if (unchecked)
			t.flags |= MCP_TOOL_UNCHECKED_ARGS;
		for (int k = 0; k < nnonblocking; k++)
			if (strcmp(nonblocking[k], t.name) == 0) {
				t.flags |= MCP_TOOL_NONBLOCKING;
				nblocking_found++;
			}
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
	if (nblocking_found != nnonblocking) {
		fprintf(stderr, "mcp-everything: --nonblocking names a tool that is not here\n");
		return 1;
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
