/*
 * http.c - MCP over Streamable HTTP: the rules of the endpoint (Host and
 * Origin checks, authorization, the Mcp-* and MCP-Protocol-Version headers,
 * which message goes to which session, the HTTP status of each answer) on
 * top of the transport in transport/http.c, which owns the connections,
 * the session table and the SSE streams.
 *
 * No thread per session or per request: a POST's message is fed into its
 * session's engine on the HTTP thread that read it (a push session), its
 * handler runs on the shared worker pool, and its answer comes back to the
 * transport's stream.  A session that negotiated with initialize lives in
 * the transport's table under its Mcp-Session-Id; a 2026-07-28 request,
 * and every request of a stateless server, gets an ephemeral session that
 * ends with its POST.
 *
 * With authorization configured (api/authz.c; doc/auth.md) the server is an
 * OAuth 2.1 protected resource: its metadata is served at the well-known
 * paths, every request to the endpoint needs a bearer token, the principal
 * of the token is bound to the session it names (another party's token
 * finds no such session), and a request refused on its worker (a scope it
 * lacks, a request hook) is answered with 403 or 429, its SSE response
 * held back until it is let through.
 *
 * With mcp_server_set_http_legacy_sse the same endpoint also serves the
 * 2024-11-05 HTTP+SSE transport: a GET on its SSE path opens a session
 * whose output all goes to that one stream, POSTs to its messages path
 * feed it and are answered 202, and the stream's end ends the session
 * (doc/design.md, "HTTP+SSE, the legacy transport").
 *
 * Sessions end through the engine's shutdown sequence (eng_session_close),
 * never by freeing them: DELETE, idle expiry, a 2026-07-28 client that
 * hangs up, and the server's shutdown each fire the handlers' tokens with
 * their own reason.  The closing ones are polled here for their grace
 * deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sodium.h>

#include "api/auth.h"
#include "api/internal.h"
#include "transport/tp_http.h"

typedef struct http_server {
	mcp_server *srv;
	tp_http *tp;
	pthread_mutex_t mu;          /* closing */
	eng_session **closing;       /* counted: closed, not yet finished */
	int *closing_ephemeral;
	size_t nclosing, capclosing;
	_Atomic int stopping;
	_Atomic uint64_t batch_no;
} http_server;

/* One POST that opened a stream: what the transport's hooks need later. */
typedef struct http_call {
	http_server *h;
	eng_session *es;             /* counted */
	int ephemeral;
	int modern;
	int batch;
	int closed_at_feed;          /* the session was gone when fed */
	char *id_text;               /* the request's id as JSON */
	int legacy;                  /* the GET of an HTTP+SSE session */
} http_call;

static const char *const retry_1[] = { "Retry-After", "1", NULL };

/* The code of the 404 for an unknown or ended session. */
#define SESSION_NOT_FOUND MCP_JSONRPC_INVALID_REQUEST

/* ---- sessions --------------------------------------------------------- */

static void closing_add(http_server *h, eng_session *es, int ephemeral)
{
	pthread_mutex_lock(&h->mu);
	if (h->nclosing == h->capclosing) {
		size_t cap = h->capclosing ? h->capclosing * 2 : 32;
		eng_session **c = realloc(h->closing, cap * sizeof *c);
		int *e = c ? realloc(h->closing_ephemeral, cap * sizeof *e) : NULL;
		if (c)
			h->closing = c;
		if (!e) {
			/* Not polled: it still finishes when its last request
			 * ends, or with everything at the server's stop. */
			pthread_mutex_unlock(&h->mu);
			if (ephemeral)
				api_server_drop_session(h->srv, es);
			else
				eng_session_unref(es);
			return;
		}
		h->closing_ephemeral = e;
		h->capclosing = cap;
	}
	h->closing[h->nclosing] = es;
	h->closing_ephemeral[h->nclosing] = ephemeral;
	h->nclosing++;
	pthread_mutex_unlock(&h->mu);
}

/* Ends a session (the caller's reference taken): its shutdown starts now
 * and is polled until its handlers are done or its grace passed.  An
 * ephemeral session also leaves the server's list then; a published one
 * when the transport drops it (session_gone). */
static void session_close(http_server *h, eng_session *es, int reason, int ephemeral)
{
	eng_session_close(es, reason);
	if (!eng_session_close_poll(es, eng_now_ns())) {
		closing_add(h, es, ephemeral);
		return;
	}
	if (ephemeral)
		api_server_drop_session(h->srv, es);
	else
		eng_session_unref(es);
}

/* The tick: closing sessions past their grace are finished. */
static void hook_tick(void *arg, int64_t now)
{
	http_server *h = arg;
	for (;;) {
		eng_session *done = NULL;
		int ephemeral = 0;
		pthread_mutex_lock(&h->mu);
		for (size_t i = 0; i < h->nclosing; i++)
			if (eng_session_close_poll(h->closing[i], now)) {
				done = h->closing[i];
				ephemeral = h->closing_ephemeral[i];
				h->closing[i] = h->closing[h->nclosing - 1];
				h->closing_ephemeral[i] = h->closing_ephemeral[h->nclosing - 1];
				h->nclosing--;
				break;
			}
		pthread_mutex_unlock(&h->mu);
		if (!done)
			return;
		if (ephemeral)
			api_server_drop_session(h->srv, done);
		else
			eng_session_unref(done);
	}
}

static void hook_app_ref(void *arg, void *app)
{
	(void)arg;
	eng_session_ref(app);
}

static void hook_session_expired(void *arg, void *app)
{
	http_server *h = arg;
	eng_session_ref(app);
	session_close(h, app, MCP_CANCEL_SESSION_EXPIRED, 0);
}

static void hook_session_gone(void *arg, void *app)
{
	http_server *h = arg;
	api_server_drop_session(h->srv, app);
}

/* A 500 whose JSON-RPC body needs no memory of its own: the paths that
 * take it are mostly the ones where memory ran out. */
static void reply_internal(tp_http_req *rq)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,"
				   "\"message\":\"Internal error\"}}";
	tp_http_reply(rq, 500, "application/json", body, sizeof body - 1, NULL);
}

/* A new push session over a new transport session; NULL after answering
 * 503 (at the session limit) or 500. */
static eng_session *session_open(http_server *h, tp_http_req *rq, int ephemeral, int preset_rev,
				 tp_http_sess **out)
{
	int err;
	tp_http_sess *ts = tp_http_session_new(h->tp, ephemeral, &err);
	if (!ts) {
		static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32050,"
					   "\"message\":\"Server busy: too many sessions\"}}";
		tp_http_reply(rq, err == -EBUSY ? 503 : 500, "application/json", body,
			      sizeof body - 1, retry_1);
		return NULL;
	}
	eng_session *es = api_server_open_session(h->srv, tp_http_conn(ts), preset_rev, 1);
	if (!es) {
		reply_internal(rq);
		return NULL;
	}
	*out = ts;
	return es;
}

/* ---- answers -------------------------------------------------------------- */

static void reply_json(tp_http_req *rq, unsigned status, json_object *m,
		       const char *const *headers)
{
	size_t len = 0;
	const char *text = m ? eng_json_text(m, &len) : NULL;
	if (!text)
		reply_internal(rq);
	else
		tp_http_reply(rq, status, "application/json", text, len, headers);
}

/* Answers with a JSON-RPC error on `id` (NULL: null; borrowed). */
static void reply_error(tp_http_req *rq, unsigned status, json_object *id, int code,
			const char *message, json_object *data, const char *const *headers)
{
	json_object *m = json_object_new_object();
	json_object *e = json_object_new_object();
	eng_obj_add(m, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(m, "id", id ? json_object_get(id) : NULL);
	eng_obj_add(e, "code", json_object_new_int(code));
	eng_obj_add(e, "message", json_object_new_string(message));
	if (data)
		eng_obj_add(e, "data", data);
	eng_obj_add(m, "error", e);
	reply_json(rq, status, m, headers);
	json_object_put(m);
}

/* 405 with the methods the path takes (RFC 9110 section 15.5.6) and a
 * JSON-RPC error that says why. */
static void reply_not_allowed(tp_http_req *rq, const char *why, const char *const *allow)
{
	reply_error(rq, 405, NULL, MCP_JSONRPC_INVALID_REQUEST, why, NULL, allow);
}

static void reply_session_not_found(tp_http_req *rq, json_object *id)
{
	reply_error(rq, 404, id, SESSION_NOT_FOUND, "Session not found", NULL, NULL);
}

/* The HTTP status of the ladder's errors: 404 for an unknown method, 400
 * for the envelope, version, header and capability errors. */
static unsigned ladder_status(int code)
{
	switch (code) {
	case MCP_JSONRPC_METHOD_NOT_FOUND:
		return 404;
	case MCP_JSONRPC_INVALID_PARAMS:
	case API_JSONRPC_HEADER_MISMATCH:
	case API_JSONRPC_MISSING_CAPABILITY:
	case API_JSONRPC_UNSUPPORTED_VERSION:
		return 400;
	}
	return 200;
}

/* The transport asks how to answer a POST whose stream ended before its
 * response began. */
static void hook_post_answer(void *arg, void *app, const char *line, size_t len, int closed,
			     tp_http_answer *out)
{
	http_server *h = arg;
	http_call *c = app;
	out->status = 200;
	out->content_type = "application/json";
	if (!line) {
		/* Ended without an answer: cut off by the session's end, or
		 * by the server's shutdown, or cancelled by the client (who
		 * wants nothing more). */
		const char *message = NULL;
		int code = MCP_JSONRPC_CONNECTION_CLOSED;
		if (atomic_load(&h->stopping)) {
			out->status = 503;
			out->retry_after_s = 1;
			message = "Server shutting down: the request was not answered";
		} else if (closed || (c && (c->closed_at_feed || atomic_load(&c->es->closed)))) {
			/* Cut off by the session's end (DELETE, expiry) rather
			 * than cancelled by the client. */
			out->status = 404;
			code = SESSION_NOT_FOUND;
			message = "Session not found";
		} else {
			out->status = 202;
			out->content_type = NULL;
			return;
		}
		char *body = NULL;
		int n = asprintf(&body, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,"
				 "\"message\":\"%s\"}}",
				 c && c->id_text ? c->id_text : "null", code, message);
		if (n > 0) {
			out->body = body;
			out->len = (size_t)n;
		}
		return;
	}
	if (c && c->batch && len == 2 && memcmp(line, "[]", 2) == 0) {
		out->status = 202; /* a batch with nothing to answer */
		out->content_type = NULL;
		return;
	}
	out->body = malloc(len);
	if (!out->body) {
		out->status = 500;
		out->content_type = NULL;
		return;
	}
	memcpy(out->body, line, len);
	out->len = len;
	/* The status follows the answer: an error on a null id is about the
	 * message itself (400); a limit is 429 for this session's queue, 503
	 * for the server's; a 2026-07-28 request missing a capability its
	 * handler needed is 400; anything else answered is 200.  Only an
	 * answer that can be an error is read again. */
	static const char error_key[] = "\"error\":{\"code\":";
	if (!memmem(line, len, error_key, sizeof error_key - 1))
		return;
	json_tokener *tok = json_tokener_new();
	json_object *msg = tok ? json_tokener_parse_ex(tok, line, (int)len) : NULL;
	json_object *err = api_get(msg, "error");
	int code = json_object_get_int(api_get(err, "code"));
	/* A refusal on the worker: a scope the token lacks (403 with the
	 * challenge naming the scopes to ask for), a request hook's refusal
	 * (403) or rate limit (429 with Retry-After).  A handler's own -32051
	 * keeps 200: a 401 would need a challenge only the door can make. */
	int retry = 0;
	int refusal = err ? auth_http_status(code, api_get(err, "data"), &retry) : 0;
	if (refusal == 403) {
		out->status = 403;
		out->www_authenticate = api_authz_forbidden_challenge(h->srv, api_get(err, "data"));
	} else if (refusal == 429) {
		out->status = 429;
		out->retry_after_s = retry > 0 ? retry : 1;
	} else if (err && json_object_is_type(api_get(msg, "id"), json_type_null) &&
		   (code == MCP_JSONRPC_PARSE_ERROR || code == MCP_JSONRPC_INVALID_REQUEST)) {
		out->status = 400;
	} else if (err && code == MCP_JSONRPC_SERVER_BUSY) {
		const char *text = json_object_get_string(api_get(err, "message"));
		out->status = text && strstr(text, "this session") ? 429 : 503;
		out->retry_after_s = 1;
	} else if (err && c && c->modern && code == API_JSONRPC_MISSING_CAPABILITY) {
		out->status = 400;
	}
	json_object_put(msg);
	if (tok)
		json_tokener_free(tok);
}

static void call_free(http_call *c)
{
	free(c->id_text);
	free(c);
}

static void hook_request_done(void *arg, void *app, int client_left)
{
	http_server *h = arg;
	http_call *c = app;
	(void)client_left;
	if (c->legacy) {
		/* The stream of an HTTP+SSE session is its connection: its
		 * client left (or the session's end closed it), so the session
		 * ends as stdio's does at end of input.  While the server
		 * stops, its shutdown closes the sessions and polls them, and
		 * may be past polling: closed here (a no-op when the shutdown
		 * came first), the session finishes with its last request. */
		tp_http_session_end((tp_http_sess *)c->es->tp);
		if (atomic_load(&h->stopping)) {
			eng_session_close(c->es, MCP_CANCEL_SHUTDOWN);
			eng_session_unref(c->es);
		} else
			session_close(h, c->es, MCP_CANCEL_TRANSPORT_CLOSED, 0);
	} else if (c->ephemeral)
		/* Its one request is over, answered or not: a 2026-07-28
		 * client that hung up first has cancelled it (no resumption
		 * in that era), and its handler's token says so. */
		session_close(h, c->es, MCP_CANCEL_TRANSPORT_CLOSED, 1);
	else
		eng_session_unref(c->es);
	call_free(c);
}

/* ---- the rules of the endpoint ---------------------------------------------- */

/* Splits "name[:port]" or "[v6][:port]" into its host part (with the
 * brackets) and port ("" when none).  0, or -1 when malformed. */
static int split_host(const char *v, char *host, size_t hostsz, const char **port)
{
	const char *end;
	if (v[0] == '[') {
		end = strchr(v, ']');
		if (!end)
			return -1;
		end++;
	} else {
		end = strchr(v, ':');
		if (!end)
			end = v + strlen(v);
	}
	size_t n = (size_t)(end - v);
	if (n == 0 || n >= hostsz || (*end && *end != ':'))
		return -1;
	memcpy(host, v, n);
	host[n] = 0;
	*port = *end ? end + 1 : "";
	return 0;
}

static int loopback_name(const char *host)
{
	return strcasecmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
	       strcmp(host, "[::1]") == 0;
}

/* DNS rebinding protection, part one: the Host a browser sent must be one
 * this server answers to. */
static int host_allowed(const mcp_server *srv, tp_http_req *rq)
{
	const char *v = tp_http_req_header(rq, "Host");
	if (!v)
		return 1; /* HTTP/1.0; browsers always send Host */
	char host[256];
	const char *port;
	if (split_host(v, host, sizeof host, &port) != 0)
		return 0;
	if (loopback_name(host))
		return 1;
	for (size_t i = 0; i < srv->n_http_hosts; i++) {
		const char *a = srv->http_hosts[i];
		char ahost[256];
		const char *aport;
		if (strcmp(a, "*") == 0)
			return 1;
		if (split_host(a, ahost, sizeof ahost, &aport) == 0 &&
		    strcasecmp(ahost, host) == 0 && (!*aport || strcmp(aport, port) == 0))
			return 1;
	}
	return 0;
}

/* DNS rebinding protection, part two: a browser page from another origin
 * must not reach the server. */
static int origin_allowed(const mcp_server *srv, tp_http_req *rq)
{
	const char *o = tp_http_req_header(rq, "Origin");
	if (!o)
		return 1;
	for (size_t i = 0; i < srv->n_http_origins; i++)
		if (strcmp(srv->http_origins[i], "*") == 0 ||
		    strcasecmp(srv->http_origins[i], o) == 0)
			return 1;
	const char *rest = strncasecmp(o, "http://", 7) == 0	 ? o + 7
			   : strncasecmp(o, "https://", 8) == 0 ? o + 8
								: NULL;
	char host[256];
	const char *port;
	return rest && !strchr(rest, '/') && split_host(rest, host, sizeof host, &port) == 0 &&
	       loopback_name(host);
}

/* A POST's body, UTF-8 and parsed as every transport parses: the same
 * depth and value limits, the same errors (a well-formed body past a
 * limit is -32600, not -32700).  The message (the caller's), its body in
 * *body and *len and its precheck flags in *pre; or NULL, the request
 * answered 400 (or 500 when memory ran out). */
static json_object *parse_body(const mcp_server *srv, tp_http_req *rq, const char **body,
			       size_t *len, unsigned *pre)
{
	*body = tp_http_req_body(rq, len);
	if (strlen(*body) != *len || !tp_utf8_valid((const unsigned char *)*body, *len)) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_PARSE_ERROR,
			    "Parse error: the body is not UTF-8 JSON text", NULL, NULL);
		return NULL;
	}
	int code;
	char why[128];
	json_object *m = NULL;
	if (eng_json_parse_message(*body, *len, srv->max_depth, srv->max_values, pre, &m, &code,
				   why, sizeof why)) {
		reply_error(rq, code == MCP_JSONRPC_INTERNAL_ERROR ? 500 : 400, NULL, code, why,
			    NULL, NULL);
		return NULL;
	}
	return m;
}

/* Whether a POST's body is declared JSON; else it is answered 415. */
static int json_body_or_415(tp_http_req *rq)
{
	const char *ct = tp_http_req_header(rq, "Content-Type");
	if (ct && strncasecmp(ct, "application/json", 16) == 0)
		return 1;
	reply_error(rq, 415, NULL, MCP_JSONRPC_INVALID_REQUEST,
		    "Unsupported Media Type: Content-Type must be application/json", NULL, NULL);
	return 0;
}

/* Whether an Accept header names `type` (or a wildcard covering it).
 * Absent, it accepts anything (RFC 9110 section 12.5.1). */
static int accepts(tp_http_req *rq, const char *type)
{
	const char *a = tp_http_req_header(rq, "Accept");
	if (!a)
		return 1;
	char major[32];
	const char *slash = strchr(type, '/');
	snprintf(major, sizeof major, "%.*s/*", (int)(slash - type), type);
	return strcasestr(a, type) || strstr(a, "*/*") || strcasestr(a, major);
}

/* ---- 2026-07-28 request headers (Mcp-Method, Mcp-Name, Mcp-Param-*) ---- */

/* A header value with the optional whitespace around it removed, and the
 * "=?base64?...?=" form decoded (strictly: padded, standard alphabet).
 * Returns 0 with `out` set, or -1 when the encoded form is invalid. */
static int header_value(const char *raw, char *out, size_t outsz)
{
	while (*raw == ' ' || *raw == '\t')
		raw++;
	size_t n = strlen(raw);
	while (n && (raw[n - 1] == ' ' || raw[n - 1] == '\t'))
		n--;
	if (n >= 12 && strncmp(raw, "=?base64?", 9) == 0 && strncmp(raw + n - 2, "?=", 2) == 0) {
		const char *b = raw + 9;
		size_t bn = n - 11, len = 0;
		if (bn % 4 != 0)
			return -1;
		for (size_t i = 0; i < bn; i++) {
			char c = b[i];
			int pad_ok = c == '=' && i >= bn - 2 && (i == bn - 1 || b[bn - 1] == '=');
			if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			      (c >= '0' && c <= '9') || c == '+' || c == '/' || pad_ok))
				return -1;
		}
		if (bn / 4 * 3 >= outsz ||
		    sodium_base642bin((unsigned char *)out, outsz - 1, b, bn, NULL, &len, NULL,
				      sodium_base64_VARIANT_ORIGINAL) != 0)
			return -1;
		out[len] = 0;
		return memchr(out, 0, len) ? -1 : 0;
	}
	if (n >= outsz)
		return -1;
	memcpy(out, raw, n);
	out[n] = 0;
	return 0;
}

/* The text a header must carry for a JSON value, or NULL for objects and
 * arrays (not carried in headers). */
static const char *scalar_text(json_object *v, char *buf, size_t bufsz)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		return json_object_get_string(v);
	case json_type_boolean:
		return json_object_get_boolean(v) ? "true" : "false";
	case json_type_int:
	case json_type_double:
		snprintf(buf, bufsz, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
		return buf;
	default:
		return NULL;
	}
}

/* Checks one header against the body's value: present when the body has
 * one, equal once decoded.  NULL, or the problem. */
static const char *header_matches(tp_http_req *rq, const char *name, const char *body_value,
				  const char *what)
{
	const char *raw = tp_http_req_header(rq, name);
	char value[4096];
	if (!body_value)
		return NULL;
	if (!raw)
		return what;
	if (header_value(raw, value, sizeof value) != 0 || strcmp(value, body_value) != 0)
		return what;
	return NULL;
}

/* The header checks of a 2026-07-28 request: Mcp-Method always, Mcp-Name
 * for the methods that name something, and an Mcp-Param-<Name> header for
 * each tool argument whose schema carries "x-mcp-header".  NULL, or the
 * message of the -32020 answer. */
static const char *modern_headers_problem(mcp_server *srv, tp_http_req *rq, const char *method,
					  json_object *params)
{
	const char *p = header_matches(rq, "Mcp-Method", method,
				       "Header mismatch: Mcp-Method must equal the request's method");
	if (p)
		return p;
	const char *name = NULL;
	if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
		name = json_object_get_string(api_get(params, "name"));
	else if (strcmp(method, "resources/read") == 0)
		name = json_object_get_string(api_get(params, "uri"));
	else if (strncmp(method, "tasks/", 6) == 0) /* SEP-2663: routing by task */
		name = json_object_get_string(api_get(params, "taskId"));
	if ((p = header_matches(rq, "Mcp-Name", name,
				"Header mismatch: Mcp-Name must equal params.name (or params.uri, "
				"or params.taskId)")))
		return p;
	if (!name || strcmp(method, "tools/call") != 0)
		return NULL;
	api_tool_entry *tool = (api_tool_entry *)api_registry_find(srv, &srv->tools, name);
	if (!tool)
		return NULL; /* answered by the handler's lookup */
	json_object *props = api_get(tool->input_schema, "properties");
	json_object *args = api_get(params, "arguments");
	p = NULL;
	if (json_object_is_type(props, json_type_object)) {
		json_object_object_foreach(props, key, schema)
		{
			json_object *suffix = api_get(schema, "x-mcp-header");
			json_object *arg = api_get(args, key);
			if (!json_object_is_type(suffix, json_type_string) || !arg)
				continue;
			char hname[160], buf[64];
			snprintf(hname, sizeof hname, "Mcp-Param-%s", json_object_get_string(suffix));
			if ((p = header_matches(rq, hname, scalar_text(arg, buf, sizeof buf),
						"Header mismatch: an Mcp-Param header does not match "
						"its argument")))
				break;
		}
	}
	api_entry_unref(&tool->base);
	return p;
}

/* Checks what the engine would refuse without an id to answer to; those
 * are answered here.  NULL, or the message of a -32600 answer. */
/* A message's envelope, checked before anything is looked up: by the
 * engine's rule (eng_request_problem) for a request or notification; a
 * response, which the engine routes, only for its "jsonrpc". */
static const char *envelope_problem(json_object *m, unsigned pre)
{
	if (api_get(m, "method") || (!api_get(m, "result") && !api_get(m, "error")))
		return eng_request_problem(m, pre);
	json_object *v = api_get(m, "jsonrpc");
	if (!api_str(v) || strcmp(api_str(v), "2.0"))
		return "Invalid Request: \"jsonrpc\" must be \"2.0\"";
	return NULL;
}

/* ---- authorization ---------------------------------------------------------- */

/* A request for the Protected Resource Metadata (RFC 9728) at one of its
 * well-known paths: the document is public, so it is answered before the
 * Host and Origin checks and without a token.  1 when answered, 0 when
 * `rq` is not for it (or authorization is off). */
static int serve_metadata(http_server *h, tp_http_req *rq)
{
	const char *path = tp_http_req_path(rq);
	if (strncmp(path, "/.well-known/", 13) != 0)
		return 0;
	char *json = NULL;
	int rc = api_authz_metadata(h->srv, path, h->srv->http_path ? h->srv->http_path : "/mcp",
				    &json);
	if (rc == 0)
		return 0;
	const char *method = tp_http_req_method(rq);
	/* Any web page may read it (a browser client discovers the
	 * authorization server with it); nothing in it is secret. */
	static const char *const cors[] = { "Access-Control-Allow-Origin", "*", NULL };
	static const char *const preflight[] = { "Access-Control-Allow-Origin", "*",
						 "Access-Control-Allow-Methods", "GET, OPTIONS",
						 "Access-Control-Allow-Headers", "MCP-Protocol-Version",
						 "Access-Control-Max-Age", "86400",
						 NULL };
	static const char *const allow[] = { "Allow", "GET, HEAD, OPTIONS", NULL };
	if (rc < 0)
		reply_internal(rq);
	else if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
		tp_http_reply(rq, 200, "application/json", json, strlen(json), cors);
	else if (strcmp(method, "OPTIONS") == 0)
		tp_http_reply(rq, 204, NULL, NULL, 0, preflight);
	else
		reply_not_allowed(rq, "Method Not Allowed: the metadata takes GET, HEAD and OPTIONS",
				  allow);
	free(json);
	return 1;
}

/* Answers a refusal of the door: `status` with its challenge and body
 * (both freed here). */
static void reply_refusal(tp_http_req *rq, int status, char *www, char *body)
{
	const char *const hdrs[] = { "WWW-Authenticate", www, NULL };
	if (body)
		tp_http_reply(rq, (unsigned)status, "application/json", body, strlen(body),
			      www ? hdrs : NULL);
	else
		reply_internal(rq);
	free(www);
	free(body);
}

/* The bearer token of a request to the endpoint, when authorization is on
 * (`several`: the joined values when the request has several Authorization
 * headers, else NULL): 0 with *principal (counted; NULL when authorization is off), or -1 after
 * answering 400, 401, 403 or 500. */
static int check_token(http_server *h, tp_http_req *rq, const char *several,
		       mcp_principal **principal)
{
	*principal = NULL;
	if (!api_authz_enabled(h->srv))
		return 0;
	char *www = NULL, *body = NULL;
	/* The transport hands over the path without its query; what the
	 * check needs of the query is whether it carries a token (RFC 6750
	 * section 2.3, which MCP forbids), so that is all it is given. */
	const char *url = tp_http_req_has_query_param(rq, "access_token") ? "?access_token" : "";
	/* Several Authorization headers go to the check joined, as one
	 * field with their values separated by commas: never one token. */
	int st = api_authz_http(h->srv, url, several ? several : tp_http_req_header(rq, "Authorization"),
				api_authz_now(), principal, &www, &body);
	if (st == 0)
		return 0;
	reply_refusal(rq, st, www, body);
	return -1;
}

/* Binds the request's principal (NULL: authorization off) to the session
 * it reaches.  0 to go on; -1 after answering: 404 as for an unknown
 * session when the session belongs to another party (its id is no
 * evidence of anything), 401 when it has seen too many tokens, 500. */
static int bind_principal(http_server *h, tp_http_req *rq, eng_session *es, mcp_principal *p,
			  json_object *id)
{
	if (!p)
		return 0;
	int rc = api_authz_bind(es->proto_data, p);
	if (rc == MCP_OK)
		return 0;
	if (rc == MCP_ENOENT) {
		reply_session_not_found(rq, id);
	} else if (rc == MCP_EBUSY) {
		char *www, *body;
		int st = api_authz_http_invalid(
			h->srv, "this session has seen too many tokens: start a new one", &www, &body);
		reply_refusal(rq, st, www, body);
	} else {
		reply_internal(rq);
	}
	return -1;
}

/* ---- POST ------------------------------------------------------------------ */

/* Lets go of the session a POST reached when it ends before the feed:
 * an ephemeral one served only this request and is closed; another is
 * only unreferenced. */
static void post_release(http_server *h, eng_session *es, int ephemeral)
{
	if (ephemeral)
		session_close(h, es, MCP_CANCEL_TRANSPORT_CLOSED, 1);
	else
		eng_session_unref(es);
}

/* Feeds `m` (taken) to `es` on a stream of its own and answers the POST
 * from it (the caller's reference of es is the call's). */
static void post_to_session(http_server *h, tp_http_req *rq, eng_session *es, json_object *m,
			    unsigned pre, const char *route, json_object *id, unsigned flags,
			    int ephemeral, int modern, int batch, const char *new_sid)
{
	size_t len;
	const char *body = tp_http_req_body(rq, &len);
	http_call *c = calloc(1, sizeof *c);
	char *id_text = id ? eng_json_dup(id, NULL) : NULL;
	if (!c || (id && !id_text)) {
		free(c);
		free(id_text);
		json_object_put(m);
		reply_internal(rq);
		post_release(h, es, ephemeral);
		return;
	}
	*c = (http_call){ h, es, ephemeral, modern, batch, 0, id_text, 0 };
	tp_http_sess *ts = (tp_http_sess *)es->tp;
	int rc = tp_http_post_open(rq, ts, route, flags);
	if (rc != 0) {
		json_object_put(m);
		if (rc == -EEXIST)
			/* P5 over HTTP: the first request keeps its stream. */
			reply_error(rq, 200, id, MCP_JSONRPC_INVALID_REQUEST,
				    "Invalid Request: id is already in flight", NULL, NULL);
		else if (rc == -EPIPE && atomic_load(&h->stopping))
			/* The shutdown closed the session between its lookup
			 * (or, stateless, its creation) and this stream: the
			 * server, not the session, is going away. */
			reply_error(rq, 503, id, MCP_JSONRPC_CONNECTION_CLOSED,
				    "Server shutting down: the request was not answered", NULL,
				    retry_1);
		else if (rc == -EPIPE)
			reply_session_not_found(rq, id);
		else
			reply_internal(rq);
		post_release(h, es, ephemeral);
		call_free(c);
		return;
	}
	tp_http_req_set_app(rq, c); /* released in request_done */
	int admitted = 0;
	if (eng_session_feed(es, body, len, m, pre, route, &admitted) == MCP_ECLOSED)
		c->closed_at_feed = 1;
	tp_http_post_respond(rq, admitted, new_sid);
}

/* A JSON-RPC batch (`m`, an array, taken): 2025-03-26 sessions only (the
 * engine refuses it in any other), answered with one JSON array. */
static void post_batch(http_server *h, tp_http_req *rq, mcp_principal *principal, json_object *m,
		       unsigned pre, const char *sid)
{
	size_t n = json_object_array_length(m);
	const char *problem =
		n == 0				  ? "Invalid Request: empty batch"
		: h->srv->http_stateless || !sid ? "Invalid Request: batches need a 2025-03-26 session"
						  : NULL;
	if (problem) {
		json_object_put(m);
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST, problem, NULL, NULL);
		return;
	}
	eng_session *es = tp_http_session_find(h->tp, sid, 0);
	if (!es) {
		json_object_put(m);
		reply_session_not_found(rq, NULL);
		return;
	}
	if (bind_principal(h, rq, es, principal, NULL)) {
		eng_session_unref(es);
		json_object_put(m);
		return;
	}
	char route[32];
	snprintf(route, sizeof route, "#batch-%llu",
		 (unsigned long long)atomic_fetch_add(&h->batch_no, 1));
	post_to_session(h, rq, es, m, pre, route, NULL, 0, 0, 0, 1, NULL);
}

/* The checks of a 2026-07-28 request served from its own _meta, whose
 * errors carry HTTP statuses of their own (the method and its params
 * against MCP-Protocol-Version, then the Mcp-* headers): 0 to go on, with
 * *want_sse set when the request has something to stream before its
 * answer (progress, log messages, a subscription); -1 after answering. */
static int post_modern_ladder(http_server *h, tp_http_req *rq, json_object *id,
			      const char *method, json_object *params, json_object *meta,
			      int *want_sse)
{
	const char *message = NULL;
	json_object *data = NULL;
	const char *pv = tp_http_req_header(rq, "MCP-Protocol-Version");
	int code = api_request_check(method, params, pv ? pv : "", &message, &data);
	if (!code && (message = modern_headers_problem(h->srv, rq, method, params)))
		code = API_JSONRPC_HEADER_MISMATCH;
	if (code) {
		reply_error(rq, ladder_status(code), id, code, message, data, NULL);
		return -1;
	}
	*want_sse = api_get(meta, "progressToken") || api_get(meta, API_META_LOG) ||
		    strcmp(method, "subscriptions/listen") == 0;
	return 0;
}

/* The session a message goes to, with a reference for the caller:
 *   - modern or stateless: a new ephemeral one (*ephemeral), for a
 *     request only (a notification is answered 202 here);
 *   - an initialize: a new one, published, its id in *new_sid;
 *   - anything else: the one its Mcp-Session-Id names.
 * Its principal is bound to it.  NULL after answering. */
static eng_session *post_session(http_server *h, tp_http_req *rq, mcp_principal *principal,
				 const char *sid, json_object *id, int is_request, int is_init,
				 int modern, int *ephemeral, const char **new_sid)
{
	mcp_server *srv = h->srv;
	tp_http_sess *ts = NULL;
	eng_session *es;
	if (modern || srv->http_stateless) {
		/* Every request on its own; nothing else has anywhere to go. */
		if (!is_request) {
			tp_http_reply(rq, 202, NULL, NULL, 0, NULL);
			return NULL;
		}
		int rev = API_REV_2026_07_28;
		if (!modern) {
			const char *pv = tp_http_req_header(rq, "MCP-Protocol-Version");
			rev = is_init ? -1 : api_revision_index(pv ? pv : "2025-03-26");
			if (!is_init && rev < 0) {
				reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
					    "Bad Request: unsupported MCP-Protocol-Version", NULL,
					    NULL);
				return NULL;
			}
		}
		es = session_open(h, rq, 1, rev, &ts); /* NULL: answered */
		*ephemeral = 1;
		if (es && bind_principal(h, rq, es, principal, NULL)) {
			session_close(h, es, MCP_CANCEL_TRANSPORT_CLOSED, 1);
			return NULL;
		}
		return es;
	}
	if (is_init) {
		es = session_open(h, rq, 0, -1, &ts);
		if (!es)
			return NULL; /* answered */
		/* The table's reference, and this call's. */
		eng_session_ref(es);
		tp_http_session_publish(ts, es);
		*new_sid = tp_http_session_id(ts);
		/* Its party, before anyone can know its id. */
		if (bind_principal(h, rq, es, principal, id)) {
			tp_http_session_end(ts);
			session_close(h, es, MCP_CANCEL_TRANSPORT_CLOSED, 0);
			return NULL;
		}
		return es;
	}
	if (!sid) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: Mcp-Session-Id header is required", NULL, NULL);
		return NULL;
	}
	es = tp_http_session_find(h->tp, sid, 0);
	if (!es) {
		reply_session_not_found(rq, is_request ? id : NULL);
		return NULL;
	}
	if (bind_principal(h, rq, es, principal, is_request ? id : NULL)) {
		eng_session_unref(es);
		return NULL;
	}
	return es;
}

/* A request (`m`, taken) into `es` (the caller's reference, taken): on a
 * stream of its own, SSE when the client takes it and (2026-07-28) there
 * is something to stream before the answer. */
static void post_request(http_server *h, tp_http_req *rq, eng_session *es, json_object *m,
			 unsigned pre, json_object *id, int modern, int want_sse, int ephemeral,
			 const char *new_sid)
{
	mcp_server *srv = h->srv;
	unsigned flags = 0;
	if (!srv->http_json_only && accepts(rq, "text/event-stream") && (!modern || want_sse))
		flags |= TP_HTTP_SSE;
	if (modern)
		flags |= TP_HTTP_NO_IDS;
	/* A refusal on the worker (scopes, a hook) must still be able to
	 * choose its status: the SSE response waits until the request is let
	 * through. */
	if ((flags & TP_HTTP_SSE) && api_authz_may_refuse(srv))
		flags |= TP_HTTP_HOLD;
	/* The stream's route is the engine's key for the request: its id as
	 * compact JSON, computed from the same tree. */
	char *route = eng_json_dup(id, NULL);
	if (!route) {
		json_object_put(m);
		reply_internal(rq);
		post_release(h, es, ephemeral);
		return;
	}
	/* W3C trace context from the headers when _meta carries none (SEP-414). */
	api_trace_from_headers(m, tp_http_req_header(rq, "traceparent"),
			       tp_http_req_header(rq, "tracestate"));
	json_object *id_copy = json_object_get(id);
	post_to_session(h, rq, es, m, pre, route, id_copy, flags, ephemeral, modern, 0, new_sid);
	json_object_put(id_copy);
	free(route);
}

/* A POST to the endpoint, down its ladder: what the client accepts and
 * sends, the body (a batch, or one message and its envelope), the
 * 2026-07-28 checks, the session, then the message into it. */
static void handle_post(http_server *h, tp_http_req *rq, mcp_principal *principal)
{
	mcp_server *srv = h->srv;
	/* The client must take JSON or SSE; it may list both. */
	if (!accepts(rq, "application/json") && !accepts(rq, "text/event-stream")) {
		reply_error(rq, 406, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Not Acceptable: the client must accept application/json or "
			    "text/event-stream",
			    NULL, NULL);
		return;
	}
	if (!json_body_or_415(rq))
		return;
	size_t len;
	const char *body;
	unsigned pre;
	json_object *m = parse_body(srv, rq, &body, &len, &pre);
	if (!m)
		return;
	const char *sid = tp_http_req_header(rq, "Mcp-Session-Id");
	if (json_object_is_type(m, json_type_array)) {
		post_batch(h, rq, principal, m, pre, sid);
		return;
	}
	if (!json_object_is_type(m, json_type_object)) {
		json_object_put(m);
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Invalid Request: one JSON-RPC message per POST", NULL, NULL);
		return;
	}
	const char *problem = envelope_problem(m, pre);
	json_object *id = NULL;
	int has_id = json_object_object_get_ex(m, "id", &id);
	if (problem) {
		/* Answered under the request's id when that id is itself
		 * valid (JSON-RPC 2.0 section 5), else null: the engine's
		 * rule, eng_request_answer_id. */
		reply_error(rq, 400, eng_request_answer_id(m, pre), MCP_JSONRPC_INVALID_REQUEST,
			    problem, NULL, NULL);
		json_object_put(m);
		return;
	}
	json_object *method = api_get(m, "method");
	int is_request = method && has_id;
	/* "initialize\u0000x" is no initialize: it opens no session. */
	int is_init = is_request && api_str(method) && strcmp(api_str(method), "initialize") == 0;
	json_object *params = api_get(m, "params");
	json_object *meta = api_get(params, "_meta");
	int meta_modern = api_get(meta, API_META_VERSION) || api_get(meta, API_META_CAPS);
	if (meta_modern)
		is_init = 0; /* a 2026-07-28 "initialize": -32601 in the engine */
	/* 2026-07-28: a request without a session (not an initialize) is
	 * served from its own _meta, after the ladder of checks whose errors
	 * carry HTTP statuses of their own. */
	int modern = !sid && !is_init && method && (!srv->http_stateless || meta_modern);
	int want_sse = 0;
	if (modern && is_request &&
	    post_modern_ladder(h, rq, id, json_object_get_string(method), params, meta,
			       &want_sse)) {
		json_object_put(m);
		return;
	}
	int ephemeral = 0;
	const char *new_sid = NULL;
	eng_session *es = post_session(h, rq, principal, sid, id, is_request, is_init, modern,
				       &ephemeral, &new_sid);
	if (!es) {
		json_object_put(m);
		return; /* answered */
	}
	if (!is_request) {
		/* Notifications and responses: accepted, answered by nobody. */
		int rc = eng_session_feed(es, body, len, m, pre, NULL, NULL);
		eng_session_unref(es);
		if (rc == MCP_ECLOSED)
			reply_session_not_found(rq, NULL);
		else
			tp_http_reply(rq, 202, NULL, NULL, 0, NULL);
		return;
	}
	post_request(h, rq, es, m, pre, id, modern, want_sse, ephemeral, new_sid);
}

/* ---- GET and DELETE ------------------------------------------------------- */

static void handle_get(http_server *h, tp_http_req *rq, mcp_principal *principal)
{
	if (!accepts(rq, "text/event-stream") || !tp_http_req_header(rq, "Accept")) {
		static const char *const allow[] = { "Allow", "GET, POST, DELETE", NULL };
		reply_not_allowed(rq,
				  "Method Not Allowed: a GET opens an event stream, and its "
				  "Accept must name text/event-stream",
				  allow);
		return;
	}
	const char *sid = tp_http_req_header(rq, "Mcp-Session-Id");
	if (!sid) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: Mcp-Session-Id header is required", NULL, NULL);
		return;
	}
	eng_session *es = tp_http_session_find(h->tp, sid, 0);
	if (!es) {
		reply_session_not_found(rq, NULL);
		return;
	}
	if (bind_principal(h, rq, es, principal, NULL)) {
		eng_session_unref(es);
		return;
	}
	int rc = tp_http_get(rq, (tp_http_sess *)es->tp, tp_http_req_header(rq, "Last-Event-ID"));
	eng_session_unref(es);
	switch (rc) {
	case 0:
		return;
	case -EINVAL:
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: malformed Last-Event-ID", NULL, NULL);
		return;
	case -ENOENT:
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: Last-Event-ID names no stream of this session", NULL,
			    NULL);
		return;
	case -EBUSY:
		reply_error(rq, 409, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Conflict: that stream is already open", NULL, NULL);
		return;
	case -EAGAIN:
		reply_error(rq, 503, NULL, MCP_JSONRPC_SERVER_BUSY,
			    "Server busy: too many open streams", NULL, retry_1);
		return;
	case -EPIPE:
		reply_session_not_found(rq, NULL);
		return;
	default:
		reply_internal(rq);
	}
}

static void handle_delete(http_server *h, tp_http_req *rq, mcp_principal *principal)
{
	const char *sid = tp_http_req_header(rq, "Mcp-Session-Id");
	if (!sid) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: Mcp-Session-Id header is required", NULL, NULL);
		return;
	}
	eng_session *es = tp_http_session_find(h->tp, sid, 0);
	if (!es) {
		reply_session_not_found(rq, NULL);
		return;
	}
	if (bind_principal(h, rq, es, principal, NULL)) {
		eng_session_unref(es);
		return;
	}
	/* Its own shutdown sequence: handlers cancelled (session_deleted),
	 * pending requests failed, nothing written after. */
	tp_http_session_end((tp_http_sess *)es->tp);
	session_close(h, es, MCP_CANCEL_SESSION_DELETED, 0);
	tp_http_reply(rq, 200, NULL, NULL, 0, NULL);
}

/* ---- HTTP+SSE (2024-11-05) --------------------------------------------------- */

/* GET on the SSE path: a new session whose one stream this response is.
 * It is made here, as Streamable HTTP makes one at initialize, under the
 * same limits (max_sessions, max_streams, idle expiry); the client then
 * negotiates with initialize on it, as on stdio. */
static void handle_legacy_get(http_server *h, tp_http_req *rq, mcp_principal *principal)
{
	mcp_server *srv = h->srv;
	if (!accepts(rq, "text/event-stream")) {
		reply_error(rq, 406, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Not Acceptable: the client must accept text/event-stream", NULL, NULL);
		return;
	}
	tp_http_sess *ts;
	eng_session *es = session_open(h, rq, 0, -1, &ts);
	if (!es)
		return; /* answered */
	tp_http_session_set_legacy(ts);
	/* The table's reference, and the GET's (its http_call's). */
	eng_session_ref(es);
	tp_http_session_publish(ts, es);
	if (bind_principal(h, rq, es, principal, NULL)) {
		tp_http_session_end(ts);
		session_close(h, es, MCP_CANCEL_TRANSPORT_CLOSED, 0);
		return;
	}
	http_call *c = calloc(1, sizeof *c);
	char *endpoint = NULL;
	int rc = -ENOMEM;
	if (c && asprintf(&endpoint, "%s?sessionId=%s",
			  srv->http_messages_path ? srv->http_messages_path : "/messages",
			  tp_http_session_id(ts)) > 0)
		rc = tp_http_legacy_get(rq, ts, endpoint);
	else
		endpoint = NULL;
	free(endpoint);
	if (rc == 0) {
		*c = (http_call){ .h = h, .es = es, .legacy = 1 };
		tp_http_req_set_app(rq, c); /* the session ends in request_done */
		return;
	}
	free(c);
	tp_http_session_end(ts);
	session_close(h, es, MCP_CANCEL_TRANSPORT_CLOSED, 0);
	if (rc == -EAGAIN)
		reply_error(rq, 503, NULL, MCP_JSONRPC_SERVER_BUSY,
			    "Server busy: too many open streams", NULL, retry_1);
	else if (rc == -EPIPE)
		reply_error(rq, 503, NULL, MCP_JSONRPC_CONNECTION_CLOSED,
			    "Server shutting down", NULL, retry_1);
	else
		reply_internal(rq);
}

/* POST to the messages path: one message for the session named by the
 * query's sessionId, fed as a Streamable HTTP POST's is (the same parse,
 * limits and envelope check), answered 202 at once; whatever it causes
 * goes out on the session's stream. */
static void handle_legacy_post(http_server *h, tp_http_req *rq, mcp_principal *principal)
{
	mcp_server *srv = h->srv;
	const char *sid = tp_http_req_query(rq, "sessionId");
	if (!sid || !*sid) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: the sessionId query parameter is required", NULL, NULL);
		return;
	}
	if (!json_body_or_415(rq))
		return;
	eng_session *es = tp_http_session_find(h->tp, sid, 1);
	if (!es) {
		reply_session_not_found(rq, NULL);
		return;
	}
	size_t len;
	const char *body;
	unsigned pre;
	json_object *m = parse_body(srv, rq, &body, &len, &pre);
	if (!m) {
		eng_session_unref(es);
		return;
	}
	/* A batch goes to the engine, which serves it where the negotiated
	 * revision has batches and refuses it (on the stream) elsewhere. */
	json_object *id = NULL;
	if (json_object_is_type(m, json_type_object)) {
		const char *problem = envelope_problem(m, pre);
		if (problem) {
			reply_error(rq, 400, eng_request_answer_id(m, pre),
				    MCP_JSONRPC_INVALID_REQUEST, problem, NULL, NULL);
			json_object_put(m);
			eng_session_unref(es);
			return;
		}
		if (api_get(m, "method"))
			json_object_object_get_ex(m, "id", &id);
	} else if (!json_object_is_type(m, json_type_array) ||
		   json_object_array_length(m) == 0) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    json_object_is_type(m, json_type_array)
				    ? "Invalid Request: empty batch"
				    : "Invalid Request: a JSON-RPC message must be an object",
			    NULL, NULL);
		json_object_put(m);
		eng_session_unref(es);
		return;
	}
	if (bind_principal(h, rq, es, principal, id)) {
		json_object_put(m);
		eng_session_unref(es);
		return;
	}
	if (id)
		api_trace_from_headers(m, tp_http_req_header(rq, "traceparent"),
				       tp_http_req_header(rq, "tracestate"));
	int rc = eng_session_feed(es, body, len, m, pre, NULL, NULL);
	eng_session_unref(es);
	if (rc == MCP_ECLOSED)
		reply_session_not_found(rq, NULL);
	else
		tp_http_reply(rq, 202, "text/plain", "Accepted", 8, NULL);
}

/* Which endpoint a path names: 0 Streamable HTTP, 1 the legacy SSE path,
 * 2 the legacy messages path, -1 none. */
static int endpoint_of(const mcp_server *srv, const char *path)
{
	if (strcmp(path, srv->http_path ? srv->http_path : "/mcp") == 0)
		return 0;
	if (!srv->http_legacy_sse)
		return -1;
	if (strcmp(path, srv->http_sse_path ? srv->http_sse_path : "/sse") == 0)
		return 1;
	if (strcmp(path, srv->http_messages_path ? srv->http_messages_path : "/messages") == 0)
		return 2;
	return -1;
}

static void hook_request(void *arg, tp_http_req *rq)
{
	http_server *h = arg;
	mcp_server *srv = h->srv;
	const char *method = tp_http_req_method(rq);
	if (serve_metadata(h, rq))
		return;
	int endpoint = endpoint_of(srv, tp_http_req_path(rq));
	if (endpoint < 0) {
		reply_error(rq, 404, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Not Found: no MCP endpoint at this path", NULL, NULL);
		return;
	}
	if (endpoint > 0 && strcmp(method, endpoint == 1 ? "GET" : "POST") != 0) {
		static const char *const allow_get[] = { "Allow", "GET", NULL };
		static const char *const allow_post[] = { "Allow", "POST", NULL };
		reply_error(rq, 405, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    endpoint == 1 ? "Method Not Allowed: the SSE endpoint takes GET"
					  : "Method Not Allowed: the messages endpoint takes POST",
			    NULL, endpoint == 1 ? allow_get : allow_post);
		return;
	}
	/* DNS rebinding: refused with a JSON-RPC body like every other
	 * refusal of the endpoint (the id is unknown: not read yet). */
	if (!host_allowed(srv, rq)) {
		reply_error(rq, 403, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Forbidden: the Host header names a host this server does not serve",
			    NULL, NULL);
		return;
	}
	if (!origin_allowed(srv, rq)) {
		reply_error(rq, 403, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Forbidden: the Origin header names an origin this server does not allow",
			    NULL, NULL);
		return;
	}
	/* Several Authorization field lines are several credentials, and
	 * which of them a party in between would act on is anyone's guess:
	 * RFC 6750 section 3.1 refuses the request (invalid_request, 400)
	 * rather than serve it as the first. */
	char *authz_all = NULL;
	int n_authz = tp_http_req_header_all(rq, "Authorization", &authz_all);
	if (n_authz < 0) {
		reply_internal(rq);
		return;
	}
	if (n_authz <= 1) {
		free(authz_all); /* the one value is read where it is needed */
		authz_all = NULL;
	}
	if (n_authz > 1 && !api_authz_enabled(srv) && srv->http_auth) {
		free(authz_all);
		static const char *const challenge[] = { "WWW-Authenticate",
							 "Bearer error=\"invalid_request\", "
							 "error_description=\"several Authorization "
							 "headers\"",
							 NULL };
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: several Authorization headers", NULL, challenge);
		return;
	}
	if (srv->http_auth) {
		/* A legacy POST names its session in the query. */
		const char *sid = endpoint == 2 ? tp_http_req_query(rq, "sessionId")
			      : endpoint == 1 ? NULL
					      : tp_http_req_header(rq, "Mcp-Session-Id");
		int verdict = srv->http_auth(tp_http_req_header(rq, "Authorization"), sid,
					     srv->http_auth_user);
		if (verdict != 0)
			free(authz_all);
		if (verdict == 403) {
			reply_error(rq, 403, NULL, MCP_JSONRPC_INVALID_REQUEST, "Forbidden", NULL,
				    NULL);
			return;
		}
		if (verdict != 0) {
			static const char *const challenge[] = { "WWW-Authenticate", "Bearer", NULL };
			reply_error(rq, 401, NULL, MCP_JSONRPC_INVALID_REQUEST, "Unauthorized", NULL,
				    challenge);
			return;
		}
	}
	/* The OAuth 2.1 resource server's check (doc/auth.md), after the
	 * application's own hook above, which predates it. */
	mcp_principal *principal; /* NULL when authorization is off */
	int refused = check_token(h, rq, n_authz > 1 ? authz_all : NULL, &principal);
	free(authz_all);
	if (refused)
		return;
	if (endpoint > 0) {
		/* No MCP-Protocol-Version header in the 2024-11-05 era, and
		 * sessions whatever the stateless setting (which is Streamable
		 * HTTP's). */
		if (endpoint == 1)
			handle_legacy_get(h, rq, principal);
		else
			handle_legacy_post(h, rq, principal);
		auth_principal_unref(principal);
		return;
	}
	int is_post = strcmp(method, "POST") == 0;
	if (srv->http_stateless && !is_post) {
		static const char *const allow_post[] = { "Allow", "POST", NULL };
		auth_principal_unref(principal);
		reply_not_allowed(rq, "Method Not Allowed: a stateless server takes POST only",
				  allow_post);
		return;
	}
	/* A version the server does not speak is refused on every method
	 * (a POST without a session checks its own in the 2026-07-28
	 * ladder). */
	const char *pv = tp_http_req_header(rq, "MCP-Protocol-Version");
	if (pv && (!is_post || tp_http_req_header(rq, "Mcp-Session-Id")) &&
	    !mcp_protocol_supported(pv)) {
		reply_error(rq, 400, NULL, MCP_JSONRPC_INVALID_REQUEST,
			    "Bad Request: unsupported MCP-Protocol-Version", NULL, NULL);
	} else if (is_post) {
		handle_post(h, rq, principal);
	} else if (strcmp(method, "GET") == 0) {
		handle_get(h, rq, principal);
	} else if (strcmp(method, "DELETE") == 0) {
		handle_delete(h, rq, principal);
	} else {
		static const char *const allow[] = { "Allow", "GET, POST, DELETE", NULL };
		reply_not_allowed(rq, "Method Not Allowed: the endpoint takes GET, POST and DELETE",
				  allow);
	}
	/* A session bound to it keeps its own reference. */
	auth_principal_unref(principal);
}

/* ---- running ------------------------------------------------------------------ */

/* "HOST:PORT" with HOST an IPv4 address, "localhost", or "[IPv6]". */
static int parse_address(const char *address, struct sockaddr_storage *ss, socklen_t *sslen)
{
	char host[256];
	const char *colon = strrchr(address, ':');
	if (!colon || colon == address || (size_t)(colon - address) >= sizeof host)
		return -1;
	memcpy(host, address, (size_t)(colon - address));
	host[colon - address] = 0;
	char *end;
	errno = 0;
	long port = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || *end || errno || port < 0 || port > 65535)
		return -1;
	memset(ss, 0, sizeof *ss);
	size_t n = strlen(host);
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)ss;
		host[n - 1] = 0;
		sa->sin6_family = AF_INET6;
		sa->sin6_port = htons((uint16_t)port);
		*sslen = sizeof *sa;
		return inet_pton(AF_INET6, host + 1, &sa->sin6_addr) == 1 ? 0 : -1;
	}
	struct sockaddr_in *sa = (struct sockaddr_in *)ss;
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	*sslen = sizeof *sa;
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* The server's shutdown over HTTP: new requests are refused, every
 * session runs its shutdown sequence, and the daemon stops once they are
 * all done or their grace has passed. */
static void http_shutdown(http_server *h)
{
	mcp_server *srv = h->srv;
	atomic_store(&h->stopping, 1);
	tp_http_refuse(h->tp);
	/* A snapshot of the live sessions, closed outside the list's lock
	 * (a closing request's callbacks take it). */
	for (;;) {
		eng_session *batch[64];
		size_t n = 0;
		pthread_mutex_lock(&srv->sess_mu);
		for (api_sess *ms = srv->sessions; ms && n < 64; ms = ms->next)
			if (!atomic_load(&ms->es->shutdown_once)) {
				eng_session_ref(ms->es);
				batch[n++] = ms->es;
			}
		pthread_mutex_unlock(&srv->sess_mu);
		if (n == 0)
			break;
		for (size_t i = 0; i < n; i++) {
			eng_session_close(batch[i], MCP_CANCEL_SHUTDOWN);
			closing_add(h, batch[i], 0);
		}
	}
	/* Wait for the handlers (each session's grace is the server's),
	 * polling the deadlines, then finish whatever is left. */
	tp_http_run(h->tp, -1, eng_now_ns() + (int64_t)srv->grace_ms * ENG_NS_PER_MS +
				       100 * ENG_NS_PER_MS);
	hook_tick(h, INT64_MAX);
}

MCP_EXTERN int mcp_server_run_http(mcp_server *srv, const char *address, int *bound_port)
{
	if (!srv || !address)
		return MCP_EINVAL;
	struct sockaddr_storage sa;
	socklen_t salen;
	if (parse_address(address, &sa, &salen) != 0)
		return MCP_EINVAL;
	int rc = api_server_begin(srv);
	if (rc != MCP_OK)
		return rc;
	http_server h = { .srv = srv };
	pthread_mutex_init(&h.mu, NULL);
	tp_http_config cfg = {
		.addr = (struct sockaddr *)&sa,
		.addrlen = salen,
		.max_message = srv->max_message,
		.max_connections = (unsigned)srv->max_connections,
		.max_sessions = (unsigned)srv->max_sessions,
		.max_streams = (unsigned)srv->max_streams,
		.stream_backlog = srv->stream_backlog,
		.header_timeout_ms = srv->http_header_timeout_ms,
		.body_timeout_ms = srv->http_body_timeout_ms,
		.session_idle_ms = srv->session_idle_ms,
		.http_threads = 2,
		.hooks = { .request = hook_request,
			   .post_answer = hook_post_answer,
			   .request_done = hook_request_done,
			   .app_ref = hook_app_ref,
			   .session_expired = hook_session_expired,
			   .session_gone = hook_session_gone,
			   .tick = hook_tick },
		.arg = &h,
	};
	int trc = tp_http_start(&cfg, &h.tp, bound_port);
	if (trc != 0) {
		api_server_end(srv);
		pthread_mutex_destroy(&h.mu);
		return trc == -ENOTSUP ? MCP_ENOTSUP : trc == -ENOMEM ? MCP_ENOMEM : MCP_ESYS;
	}
	/* Served until mcp_server_shutdown() or the signal-safe variant. */
	tp_http_run(h.tp, srv->wake_fd, INT64_MAX);
	http_shutdown(&h);
	tp_http_stop(h.tp);
	free(h.closing);
	free(h.closing_ephemeral);
	api_server_end(srv);
	pthread_mutex_destroy(&h.mu);
	return MCP_OK;
}
