/*
 * mcp-call - a command-line MCP client on libmcp's client API: connects to
 * one server (a command over stdio, or an HTTP URL: Streamable HTTP, or
 * HTTP+SSE for servers of 2024-11-05), runs one command and prints the
 * JSON result on standard output.
 *
 *   mcp-call --stdio 'mcp-everything' tools
 *   mcp-call --http http://127.0.0.1:8080/mcp --bearer T call echo '{"text":"hi"}'
 *   mcp-call --http http://127.0.0.1:3001/sse --verbose tools
 *
 * Progress notifications draw a bar on standard error.  Ctrl-C cancels the
 * call in flight (the server gets notifications/cancelled) and exits 130.
 * Sampling and elicitation requests are refused unless --interactive, which
 * asks the person at the terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mcp/client.h>

#include "mcp-call-oauth.h"

#define EXIT_TOOL_ERROR 1 /* the server answered with an error, or isError */
#define EXIT_USAGE 2
#define EXIT_CONNECT 3
#define EXIT_INTERRUPTED 130

static int sig_pipe[2] = { -1, -1 };
static int bar_drawn;
static pthread_mutex_t tty_mu = PTHREAD_MUTEX_INITIALIZER;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mcp-call (--stdio 'COMMAND ARGS' | --http URL) [options] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  tools                  list the tools (every page)\n"
		"  call NAME [JSON]       call a tool with arguments JSON (default {})\n"
		"  resources              list the resources\n"
		"  templates              list the resource templates\n"
		"  read URI               read a resource\n"
		"  prompts                list the prompts\n"
		"  get NAME [JSON]        get a prompt with arguments JSON (strings)\n"
		"  ping                   check that the server answers\n"
		"\n"
		"options:\n"
		"  --stdio CMD            spawn CMD (run by /bin/sh) and speak over its stdin/stdout\n"
		"  --http URL             speak HTTP to URL: Streamable HTTP, or HTTP+SSE (2024-11-05)\n"
		"                         when the server turns Streamable HTTP away\n"
		"  --transport T          HTTP transport: auto (default), streamable or sse\n"
		"  --bearer TOKEN         send Authorization: Bearer TOKEN (HTTP)\n"
		"  --oauth                get a token by OAuth when the server asks (HTTP): the URL\n"
		"                         to authorize is printed, the redirect comes back to\n"
		"                         127.0.0.1; tokens are kept in $XDG_STATE_HOME/mcp-call/\n"
		"  --client-id ID         OAuth client id, or the https URL of its metadata document\n"
		"  --client-secret-file F OAuth client secret, read from F\n"
		"  --client-key FILE      PEM private key for private_key_jwt\n"
		"  --client-credentials   OAuth client credentials grant (no person)\n"
		"  --scope SCOPES         OAuth scopes when the server names none\n"
		"  --logout               forget the OAuth tokens kept for --http URL, and exit\n"
		"  --era ERA              legacy, 2026-07-28, auto (default) or a revision date\n"
		"  --root DIR             offer DIR as a root (repeatable)\n"
		"  --interactive          answer sampling and elicitation by asking on the terminal\n"
		"  --timeout MS           give up after MS milliseconds, connecting included\n"
		"                         (default: none; the handshake alone gets 30 s)\n"
		"  --compact              one-line JSON even on a terminal\n"
		"  --verbose              say on standard error how the connection was made\n"
		"  --help                 this text\n"
		"\n"
		"exit status: 0 done; 1 the server answered with an error or isError, or the\n"
		"command failed (timed out, an answer too large or not JSON); 2 usage;\n"
		"3 no connection, or it ended; 130 interrupted (the call was cancelled)\n"
		"Every failure is explained on standard error.\n");
}

static void on_signal(int sig)
{
	int saved = errno;
	char b = (char)sig;
	ssize_t w = write(sig_pipe[1], &b, 1);
	(void)w;
	errno = saved;
}

/* ---- the progress bar (reader thread) ------------------------------------------- */

static void on_progress(mcp_call *call, double progress, double total, const char *message,
			void *user)
{
	(void)call;
	(void)user;
	pthread_mutex_lock(&tty_mu);
	if (isatty(STDERR_FILENO)) {
		char bar[41];
		int width = 40, fill = 0;
		if (total > 0) {
			fill = (int)(progress / total * width + 0.5);
			if (fill > width)
				fill = width;
		}
		for (int i = 0; i < width; i++)
			bar[i] = i < fill ? '#' : total > 0 ? '-' : (i == ((int)progress % width) ? '#' : '-');
		bar[width] = 0;
		if (total > 0)
			fprintf(stderr, "\r[%s] %g/%g %.40s\033[K", bar, progress, total,
				message ? message : "");
		else
			fprintf(stderr, "\r[%s] %g %.40s\033[K", bar, progress, message ? message : "");
		bar_drawn = 1;
	} else {
		if (total > 0)
			fprintf(stderr, "progress %g/%g%s%s\n", progress, total, message ? " " : "",
				message ? message : "");
		else
			fprintf(stderr, "progress %g%s%s\n", progress, message ? " " : "",
				message ? message : "");
	}
	fflush(stderr);
	pthread_mutex_unlock(&tty_mu);
}

static void end_bar(void)
{
	pthread_mutex_lock(&tty_mu);
	if (bar_drawn)
		fputs("\n", stderr);
	bar_drawn = 0;
	pthread_mutex_unlock(&tty_mu);
}

static void on_log(mcp_call *call, mcp_log_level level, const char *logger, json_object *data,
		   void *user)
{
	(void)call;
	(void)user;
	static const char *const names[] = { "debug", "info",	 "notice", "warning",
					     "error", "critical", "alert",  "emergency" };
	pthread_mutex_lock(&tty_mu);
	if (bar_drawn)
		fputs("\n", stderr);
	bar_drawn = 0;
	fprintf(stderr, "[%s]%s%s %s\n", names[level], logger ? " " : "", logger ? logger : "",
		json_object_is_type(data, json_type_string)
			? json_object_get_string(data)
			: json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN));
	pthread_mutex_unlock(&tty_mu);
}

static void on_notification(mcp_client *c, const char *method, json_object *params, void *user)
{
	(void)c;
	(void)user;
	if (strcmp(method, "notifications/message") == 0) {
		json_object *lv = NULL, *data = NULL, *logger = NULL;
		json_object_object_get_ex(params, "level", &lv);
		json_object_object_get_ex(params, "data", &data);
		json_object_object_get_ex(params, "logger", &logger);
		pthread_mutex_lock(&tty_mu);
		fprintf(stderr, "[%s]%s%s %s\n", lv ? json_object_get_string(lv) : "log",
			logger ? " " : "", logger ? json_object_get_string(logger) : "",
			json_object_is_type(data, json_type_string)
				? json_object_get_string(data)
				: json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN));
		pthread_mutex_unlock(&tty_mu);
	}
}

/* ---- --interactive: the person at the terminal answers ----------------------------- */

static FILE *tty_in, *tty_out;

/* Reads one line from the terminal into buf (no newline); 0, or -1. */
static int ask(const char *prompt, char *buf, size_t sz)
{
	fprintf(tty_out, "%s", prompt);
	fflush(tty_out);
	if (!fgets(buf, (int)sz, tty_in))
		return -1;
	buf[strcspn(buf, "\r\n")] = 0;
	return 0;
}

static int ask_sampling(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
			json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)tok;
	(void)user;
	char line[4096];
	pthread_mutex_lock(&tty_mu);
	fprintf(tty_out, "\nThe server asks for a model's answer (sampling/createMessage):\n%s\n",
		json_object_to_json_string_ext(params, JSON_C_TO_STRING_PRETTY));
	int rc = ask("Your answer (empty line: refuse): ", line, sizeof line);
	pthread_mutex_unlock(&tty_mu);
	if (rc || !line[0]) {
		*result = json_tokener_parse(
			"{\"code\":-1,\"message\":\"The user refused the sampling request\"}");
		return MCP_EREMOTE;
	}
	json_object *r = json_object_new_object(), *content = json_object_new_object();
	json_object_object_add(content, "type", json_object_new_string("text"));
	json_object_object_add(content, "text", json_object_new_string(line));
	json_object_object_add(r, "role", json_object_new_string("assistant"));
	json_object_object_add(r, "content", content);
	json_object_object_add(r, "model", json_object_new_string("human-at-the-terminal"));
	json_object_object_add(r, "stopReason", json_object_new_string("endTurn"));
	*result = r;
	return MCP_OK;
}

static int ask_elicitation(mcp_client *c, const char *method, json_object *params, mcp_token *tok,
			   json_object **result, void *user)
{
	(void)c;
	(void)method;
	(void)tok;
	(void)user;
	json_object *msg = NULL, *mode = NULL, *url = NULL, *schema = NULL, *props = NULL;
	json_object_object_get_ex(params, "message", &msg);
	json_object_object_get_ex(params, "mode", &mode);
	json_object_object_get_ex(params, "url", &url);
	json_object_object_get_ex(params, "requestedSchema", &schema);
	json_object_object_get_ex(schema, "properties", &props);
	char line[4096];
	json_object *r = json_object_new_object();
	pthread_mutex_lock(&tty_mu);
	fprintf(tty_out, "\nThe server asks: %s\n", msg ? json_object_get_string(msg) : "");
	if (mode && strcmp(json_object_get_string(mode), "url") == 0) {
		fprintf(tty_out, "Open this URL: %s\n", url ? json_object_get_string(url) : "?");
		int rc = ask("Done? [y/N] ", line, sizeof line);
		json_object_object_add(r, "action", json_object_new_string(
							    !rc && (line[0] == 'y' || line[0] == 'Y')
								    ? "accept"
								    : "decline"));
		pthread_mutex_unlock(&tty_mu);
		*result = r;
		return MCP_OK;
	}
	if (ask("Answer it? [y/N] ", line, sizeof line) || (line[0] != 'y' && line[0] != 'Y')) {
		json_object_object_add(r, "action", json_object_new_string("decline"));
		pthread_mutex_unlock(&tty_mu);
		*result = r;
		return MCP_OK;
	}
	json_object *content = json_object_new_object();
	json_object_object_foreach(props, key, prop)
	{
		json_object *type = NULL, *desc = NULL;
		json_object_object_get_ex(prop, "type", &type);
		json_object_object_get_ex(prop, "description", &desc);
		char prompt[512];
		snprintf(prompt, sizeof prompt, "%s (%s)%s%s: ", key,
			 type ? json_object_get_string(type) : "string", desc ? " - " : "",
			 desc ? json_object_get_string(desc) : "");
		if (ask(prompt, line, sizeof line))
			break;
		if (!line[0])
			continue;
		const char *t = type ? json_object_get_string(type) : "string";
		json_object *v;
		if (strcmp(t, "integer") == 0)
			v = json_object_new_int64(strtoll(line, NULL, 10));
		else if (strcmp(t, "number") == 0)
			v = json_object_new_double(strtod(line, NULL));
		else if (strcmp(t, "boolean") == 0)
			v = json_object_new_boolean(line[0] == 'y' || line[0] == 't' || line[0] == '1');
		else
			v = json_object_new_string(line);
		json_object_object_add(content, key, v);
	}
	pthread_mutex_unlock(&tty_mu);
	json_object_object_add(r, "action", json_object_new_string("accept"));
	json_object_object_add(r, "content", content);
	*result = r;
	return MCP_OK;
}

/* ---- main ------------------------------------------------------------------------------ */

static void print_json(json_object *o, int pretty)
{
	const char *text = json_object_to_json_string_ext(
		o, (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN) |
			   JSON_C_TO_STRING_NOSLASHESCAPE);
	fputs(text, stdout);
	fputc('\n', stdout);
	fflush(stdout);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What is left of the --timeout (-1: none). */
static int64_t left_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t left = deadline - now_ms();
	return left > 0 ? left : 0;
}

/* Prints why the command failed: `why`, and what the server sent that the
 * client dropped, when that is not said already (it is often the real
 * cause: an answer under an id never sent, a message too large). */
static void report_failure(mcp_client *c, const char *cmd, const char *why)
{
	char dropped[400];
	uint64_t n = mcp_client_last_dropped(c, dropped, sizeof dropped);
	pthread_mutex_lock(&tty_mu);
	if (n > 0 && !strstr(why, dropped))
		fprintf(stderr, "mcp-call: %s: %s; %s\n", cmd, why, dropped);
	else
		fprintf(stderr, "mcp-call: %s: %s\n", cmd, why);
	pthread_mutex_unlock(&tty_mu);
}

/* The text of a JSON-RPC error object. */
static void error_words(json_object *err, char *buf, size_t sz)
{
	json_object *code = NULL, *msg = NULL;
	json_object_object_get_ex(err, "code", &code);
	json_object_object_get_ex(err, "message", &msg);
	if (!err)
		snprintf(buf, sz, "the server answered with an error");
	else
		snprintf(buf, sz, "the server answered error %d: %s", json_object_get_int(code),
			 msg ? json_object_get_string(msg) : "(no message)");
}

/* ping, as mcp_client_ping() sends it, but with the error object of a
 * refusal in *err, to print it. */
static int ping(mcp_client *c, int64_t timeout_ms, mcp_token *tok, json_object **err)
{
	const char *v = mcp_client_protocol_version(c);
	int modern = v && strcmp(v, "2026-07-28") == 0;
	json_object *res = NULL;
	int rc = mcp_client_request(c, modern ? "server/discover" : "ping", NULL, timeout_ms, tok,
				    &res);
	if (rc == MCP_EREMOTE)
		*err = res;
	else
		json_object_put(res);
	return rc;
}

static int is_error_result(json_object *res)
{
	json_object *e = NULL;
	return json_object_object_get_ex(res, "isError", &e) && json_object_get_boolean(e);
}

/* Ctrl-C (or SIGTERM) fires the token every call was given: the call in
 * flight is cancelled and the server told.  A thread of its own, because
 * a signal handler may not take locks. */
static mcp_token *interrupt_tok;
static volatile sig_atomic_t interrupted;

static void *watch_signals(void *arg)
{
	(void)arg;
	char b;
	while (read(sig_pipe[0], &b, 1) < 0 && errno == EINTR)
		;
	interrupted = 1;
	mcp_token_cancel(interrupt_tok);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *stdio_cmd = NULL, *url = NULL, *bearer = NULL, *era = NULL, *transport = NULL;
	const char *roots[64];
	int nroots = 0, interactive = 0, compact = 0, verbose = 0, oauth = 0, logout = 0;
	mcp_call_oauth_opts oopt = {0};
	int64_t timeout_ms = -1;
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		const char *o = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(o, "--interactive") == 0) {
			interactive = 1;
		} else if (strcmp(o, "--compact") == 0) {
			compact = 1;
		} else if (strcmp(o, "--verbose") == 0) {
			verbose = 1;
		} else if (strcmp(o, "--oauth") == 0) {
			oauth = 1;
		} else if (strcmp(o, "--client-credentials") == 0) {
			oauth = oopt.client_credentials = 1;
		} else if (strcmp(o, "--logout") == 0) {
			logout = 1;
		} else if (!v) {
			fprintf(stderr, "mcp-call: %s needs a value\n", o);
			return EXIT_USAGE;
		} else if (strcmp(o, "--stdio") == 0) {
			stdio_cmd = v, i++;
		} else if (strcmp(o, "--http") == 0) {
			url = v, i++;
		} else if (strcmp(o, "--bearer") == 0) {
			bearer = v, i++;
		} else if (strcmp(o, "--client-id") == 0) {
			oopt.client_id = v, oauth = 1, i++;
		} else if (strcmp(o, "--client-secret-file") == 0) {
			oopt.secret_file = v, oauth = 1, i++;
		} else if (strcmp(o, "--client-key") == 0) {
			oopt.key_file = v, oauth = 1, i++;
		} else if (strcmp(o, "--scope") == 0) {
			oopt.scope = v, oauth = 1, i++;
		} else if (strcmp(o, "--transport") == 0) {
			transport = v, i++;
		} else if (strcmp(o, "--era") == 0) {
			era = v, i++;
		} else if (strcmp(o, "--timeout") == 0) {
			char *end;
			timeout_ms = strtoll(v, &end, 10);
			if (*end || timeout_ms < 0) {
				fprintf(stderr, "mcp-call: --timeout takes milliseconds\n");
				return EXIT_USAGE;
			}
			i++;
		} else if (strcmp(o, "--root") == 0) {
			if (nroots == 64) {
				fprintf(stderr, "mcp-call: at most 64 roots\n");
				return EXIT_USAGE;
			}
			roots[nroots++] = v;
			i++;
		} else {
			fprintf(stderr, "mcp-call: unknown option %s (see --help)\n", o);
			return EXIT_USAGE;
		}
	}
	if (logout) {
		if (!url) {
			fprintf(stderr, "mcp-call: --logout is for --http URL\n");
			return EXIT_USAGE;
		}
		return mcp_call_oauth_logout(url);
	}
	if (oauth && !url) {
		fprintf(stderr, "mcp-call: OAuth is for --http URL\n");
		return EXIT_USAGE;
	}
	if ((!stdio_cmd) == (!url) || i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[i++];
	const char *a1 = i < argc ? argv[i] : NULL;
	const char *a2 = i + 1 < argc ? argv[i + 1] : NULL;
	int needs1 = strcmp(cmd, "call") == 0 || strcmp(cmd, "read") == 0 || strcmp(cmd, "get") == 0;
	int known = needs1 || strcmp(cmd, "tools") == 0 || strcmp(cmd, "resources") == 0 ||
		    strcmp(cmd, "templates") == 0 || strcmp(cmd, "prompts") == 0 ||
		    strcmp(cmd, "ping") == 0;
	if (!known || (needs1 && !a1)) {
		fprintf(stderr, "mcp-call: %s\n", known ? "missing argument" : "unknown command");
		usage(stderr);
		return EXIT_USAGE;
	}
	json_object *args = NULL;
	if ((strcmp(cmd, "call") == 0 || strcmp(cmd, "get") == 0) && a2) {
		args = json_tokener_parse(a2);
		if (!json_object_is_type(args, json_type_object)) {
			fprintf(stderr, "mcp-call: the arguments must be a JSON object: %s\n", a2);
			return EXIT_USAGE;
		}
	}

	mcp_http_transport http_transport = MCP_HTTP_AUTO;
	if (transport) {
		if (strcmp(transport, "sse") == 0) {
			http_transport = MCP_HTTP_SSE;
		} else if (strcmp(transport, "streamable") == 0) {
			http_transport = MCP_HTTP_STREAMABLE;
		} else if (strcmp(transport, "auto") != 0) {
			fprintf(stderr, "mcp-call: unknown transport %s (auto, streamable or sse)\n",
				transport);
			return EXIT_USAGE;
		}
		if (!url) {
			fprintf(stderr, "mcp-call: --transport is for --http\n");
			return EXIT_USAGE;
		}
	}

	mcp_client *c = mcp_client_new("mcp-call", "0.1.0");
	if (!c)
		return EXIT_CONNECT;
	mcp_client_set_http_transport(c, http_transport);
	if (era) {
		int rc = strcmp(era, "legacy") == 0	  ? mcp_client_set_era(c, MCP_ERA_LEGACY)
			 : strcmp(era, "auto") == 0	  ? mcp_client_set_era(c, MCP_ERA_AUTO)
			 : strcmp(era, "modern") == 0 ? mcp_client_set_era(c, MCP_ERA_MODERN)
						      : mcp_client_set_protocol_version(c, era);
		if (rc != MCP_OK) {
			fprintf(stderr, "mcp-call: unknown era %s (legacy, 2026-07-28, auto, or a revision)\n",
				era);
			return EXIT_USAGE;
		}
	}
	for (int k = 0; k < nroots; k++) {
		char path[PATH_MAX], uri[PATH_MAX + 16];
		if (!realpath(roots[k], path)) {
			fprintf(stderr, "mcp-call: --root %s: %s\n", roots[k], strerror(errno));
			return EXIT_USAGE;
		}
		snprintf(uri, sizeof uri, "file://%s", path);
		const char *base = strrchr(path, '/');
		mcp_client_add_root(c, uri, base && base[1] ? base + 1 : path);
	}
	if (interactive) {
		tty_in = fopen("/dev/tty", "r");
		tty_out = fopen("/dev/tty", "w");
		if (!tty_in || !tty_out) {
			fprintf(stderr, "mcp-call: --interactive needs a terminal (/dev/tty)\n");
			return EXIT_USAGE;
		}
		mcp_client_set_sampling_handler(c, ask_sampling, NULL);
		mcp_client_set_elicitation_handler(c, ask_elicitation, NULL,
						   MCP_ELICIT_FORM | MCP_ELICIT_URL);
	}
	mcp_client_set_notification_handler(c, on_notification, NULL);
	if (oauth && mcp_call_oauth_setup(c, &oopt) != 0)
		return EXIT_USAGE;
	if (bearer && mcp_client_set_bearer(c, bearer) != MCP_OK) {
		fprintf(stderr, "mcp-call: invalid bearer token\n");
		return EXIT_USAGE;
	}

	interrupt_tok = mcp_token_new();
	pthread_t watcher;
	if (!interrupt_tok || pipe2(sig_pipe, O_CLOEXEC) != 0 ||
	    pthread_create(&watcher, NULL, watch_signals, NULL) != 0)
		return EXIT_CONNECT;
	pthread_detach(watcher);
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* --timeout bounds the whole run: the handshake gets what is left of
	 * it, the command the rest, and the close a tenth (50 ms to 2 s). */
	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
	if (timeout_ms >= 0) {
		int64_t close_ms = timeout_ms / 10;
		close_ms = close_ms < 50 ? 50 : close_ms > 2000 ? 2000 : close_ms;
		mcp_client_set_connect_timeout_ms(c, timeout_ms > 0 ? timeout_ms : 1);
		mcp_client_set_grace_ms(c, close_ms);
		mcp_client_set_kill_grace_ms(c, close_ms, close_ms);
	} else if (oauth) {
		/* The handshake may wait for a person to authorize. */
		mcp_client_set_connect_timeout_ms(c, 6 * 60 * 1000);
	}
	int rc;
	if (stdio_cmd) {
		/* exec: the shell becomes the server, so signals and exit
		 * status are the server's own. */
		size_t n = strlen(stdio_cmd) + 6;
		char *line = malloc(n);
		snprintf(line, n, "exec %s", stdio_cmd);
		char *sargv[] = { "/bin/sh", "-c", line, NULL };
		rc = mcp_client_connect_stdio(c, sargv, NULL, NULL);
		free(line);
	} else {
		rc = mcp_client_connect_http(c, url);
	}
	if (rc != MCP_OK) {
		if (!interrupted)
			report_failure(c, "cannot connect",
				       mcp_client_error(c)[0] ? mcp_client_error(c) : mcp_strerror(rc));
		mcp_client_free(c);
		json_object_put(args);
		return EXIT_CONNECT;
	}
	if (verbose) {
		static const char *const names[] = {
			[MCP_TRANSPORT_NONE] = "no transport",
			[MCP_TRANSPORT_STDIO] = "stdio",
			[MCP_TRANSPORT_FDS] = "descriptors",
			[MCP_TRANSPORT_MEMORY] = "memory",
			[MCP_TRANSPORT_STREAMABLE_HTTP] = "Streamable HTTP",
			[MCP_TRANSPORT_HTTP_SSE] = "HTTP+SSE (the 2024-11-05 transport)",
		};
		mcp_transport_kind k = mcp_client_transport(c);
		fprintf(stderr, "mcp-call: connected over %s, protocol %s\n",
			k <= MCP_TRANSPORT_HTTP_SSE ? names[k] : "an unknown transport",
			mcp_client_protocol_version(c));
	}

	int pretty = !compact && isatty(STDOUT_FILENO);
	int status = 0;
	json_object *out = NULL;
	const char *list_field = strcmp(cmd, "tools") == 0	 ? "tools"
				 : strcmp(cmd, "resources") == 0 ? "resources"
				 : strcmp(cmd, "templates") == 0 ? "resourceTemplates"
				 : strcmp(cmd, "prompts") == 0	 ? "prompts"
								 : NULL;
	mcp_token *tok = interrupt_tok;
	char why[700] = "";
	int64_t timeout_given = timeout_ms;
	timeout_ms = left_ms(deadline);
	if (list_field || strcmp(cmd, "ping") == 0) {
		json_object *arr = NULL;
		rc = strcmp(cmd, "tools") == 0	     ? mcp_client_list_tools(c, timeout_ms, tok, &arr)
		     : strcmp(cmd, "resources") == 0 ? mcp_client_list_resources(c, timeout_ms, tok, &arr)
		     : strcmp(cmd, "templates") == 0
			     ? mcp_client_list_resource_templates(c, timeout_ms, tok, &arr)
		     : strcmp(cmd, "prompts") == 0 ? mcp_client_list_prompts(c, timeout_ms, tok, &arr)
						   : ping(c, timeout_ms, tok, &arr);
		if (rc == MCP_OK) {
			out = json_object_new_object();
			if (list_field)
				json_object_object_add(out, list_field, arr);
		} else {
			out = arr;
			if (rc == MCP_EREMOTE)
				error_words(out, why, sizeof why);
			else if (rc == MCP_ETIMEDOUT)
				snprintf(why, sizeof why, "timed out (--timeout %lld ms)",
					 (long long)timeout_given);
			else
				snprintf(why, sizeof why, "%s%s%s", mcp_strerror(rc),
					 mcp_client_error(c)[0] ? ": " : "", mcp_client_error(c));
		}
	} else {
		mcp_call *call = strcmp(cmd, "call") == 0 ? mcp_call_new_tool(c, a1, args)
				 : strcmp(cmd, "read") == 0 ? mcp_call_new_read(c, a1)
							    : mcp_call_new_prompt(c, a1, args);
		mcp_call_set_progress(call, on_progress, NULL);
		mcp_call_set_log(call, MCP_LOG_DEBUG, on_log, NULL);
		mcp_call_set_token(call, tok);
		rc = mcp_call_start(call);
		if (rc == MCP_OK) {
			rc = mcp_call_wait(call, timeout_ms, &out);
			if (rc == MCP_ETIMEDOUT) {
				/* Cancelled towards the server, then ended. */
				mcp_call_cancel(call);
				mcp_call_wait(call, -1, NULL);
			}
		}
		end_bar();
		if (rc == MCP_ETIMEDOUT)
			snprintf(why, sizeof why, "timed out (--timeout %lld ms); the call was cancelled",
				 (long long)timeout_given);
		else if (rc != MCP_OK)
			snprintf(why, sizeof why, "%s",
				 mcp_call_error(call)[0] ? mcp_call_error(call) : mcp_strerror(rc));
		mcp_call_free(call);
	}
	if (rc == MCP_OK) {
		print_json(out, pretty);
		status = is_error_result(out) ? EXIT_TOOL_ERROR : 0;
		/* It worked, but the server also sent what had to be dropped:
		 * worth knowing. */
		char dropped[400];
		uint64_t n = mcp_client_last_dropped(c, dropped, sizeof dropped);
		if (n > 0)
			fprintf(stderr, "mcp-call: warning: %llu message%s of the server dropped; the "
					"last: %s\n",
				(unsigned long long)n, n > 1 ? "s" : "", dropped);
	} else if (interrupted) {
		fprintf(stderr, "mcp-call: interrupted; the call was cancelled\n");
		status = EXIT_INTERRUPTED;
	} else {
		/* The error object of a JSON-RPC error answer goes to standard
		 * output as {"error": ...}; the reason of every failure goes to
		 * standard error. */
		if (rc == MCP_EREMOTE && out) {
			json_object *wrap = json_object_new_object();
			json_object_object_add(wrap, "error", out);
			out = wrap;
			print_json(out, pretty);
		}
		report_failure(c, cmd, why[0] ? why : mcp_strerror(rc));
		status = rc == MCP_ECLOSED ? EXIT_CONNECT : EXIT_TOOL_ERROR;
	}
	json_object_put(out);
	json_object_put(args);
	mcp_client_free(c);
	mcp_token_free(interrupt_tok);
	return status;
}
