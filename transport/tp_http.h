/*
 * tp_http.h - the Streamable HTTP transport: libmicrohttpd's daemon, the
 * HTTP requests, the session table, each session's streams with their SSE
 * event logs and replay, and a watch on idle connections.
 *
 * It has no thread per session or per request: a request's body is handed
 * to the layer above on an HTTP thread, which feeds it into the session's
 * engine (a push session) and returns; the session's output comes back
 * through its tp_conn's send_routed, which only appends to a stream and
 * wakes the connection waiting on it.  The MCP rules (which requests are
 * allowed, with which headers, answered with which status) are the layer
 * above's (api/http.c); this layer knows HTTP, SSE and sessions only.
 *
 * Threads: the daemon's HTTP threads call the hooks; the thread that calls
 * tp_http_run watches idle connections for a peer that went away, expires
 * idle sessions and calls the tick hook.  The engine's threads call the
 * sessions' tp_conn operations.
 *
 * Locks: the transport's table lock, then one session's lock; the engine's
 * writer lock may be held when a session's lock is taken (delivery), so
 * no hook is ever called with a transport lock held.
 */
#ifndef MCP_TRANSPORT_TP_HTTP_H
#define MCP_TRANSPORT_TP_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/tp.h"

typedef struct tp_http tp_http;
typedef struct tp_http_req tp_http_req;   /* one HTTP request being answered */
typedef struct tp_http_sess tp_http_sess; /* one session: a tp_conn and its streams */

/* The answer of a POST whose request's stream ended before its HTTP
 * response began (answered at once, refused, cut off). */
typedef struct tp_http_answer {
	unsigned status;
	const char *content_type;  /* static; NULL: no body */
	char *body;                /* malloc'd, taken by the transport; or NULL */
	size_t len;
	int retry_after_s;         /* > 0: a Retry-After header */
	char *www_authenticate;    /* malloc'd, taken; or NULL: no such header */
} tp_http_answer;

typedef struct tp_http_hooks {
	/* A request to the endpoint whose body is in.  It must be answered
	 * (tp_http_reply, tp_http_post_respond or tp_http_get) before the
	 * hook returns.  On an HTTP thread. */
	void (*request)(void *arg, tp_http_req *rq);
	/* Decides the answer of a POST whose stream ended before its
	 * response began: `line` is the request's JSON-RPC answer (NULL when
	 * it ended without one; `closed` then says whether the session's
	 * output closed).  On an HTTP thread. */
	void (*post_answer)(void *arg, void *req_app, const char *line, size_t len, int closed,
			    tp_http_answer *out);
	/* The HTTP exchange of a request that set an app (tp_http_req_set_app)
	 * is over: answered and sent, or the client went away.  On an HTTP
	 * thread; the last call for that request. */
	void (*request_done)(void *arg, void *req_app, int client_left);
	/* Takes a counted reference of a session's app for a lookup
	 * (tp_http_session_find).  Called with the table lock held: it must
	 * not block or call back. */
	void (*app_ref)(void *arg, void *sess_app);
	/* A published session was idle past the idle limit: the layer above
	 * ends it (its output closes, then session_gone follows).  On the
	 * tp_http_run thread; `sess_app` stays valid for the call. */
	void (*session_expired)(void *arg, void *sess_app);
	/* A published session left the table (its output closed): the
	 * reference published with it is the layer above's to drop.  On the
	 * tp_http_run thread. */
	void (*session_gone)(void *arg, void *sess_app);
	/* About every 20 ms on the tp_http_run thread. */
	void (*tick)(void *arg, int64_t now_ns);
} tp_http_hooks;

typedef struct tp_http_config {
	const struct sockaddr *addr;
	socklen_t addrlen;
	size_t max_message;        /* a larger body is refused with 413, a
				      declared one on its header */
	int64_t header_timeout_ms; /* a request's header (or, on a kept-alive
				      connection, the next one's) must be in
				      within this: else 408, and closed;
				      0: no limit */
	int64_t body_timeout_ms;   /* its body within this of the header (0:
				      no limit) */
	unsigned max_connections;  /* beyond: 503 with Retry-After, then close */
	unsigned max_sessions;     /* published sessions, and ephemeral ones */
	unsigned max_streams;      /* GET streams attached at once */
	size_t stream_backlog;     /* undelivered SSE bytes a reader may owe */
	int64_t session_idle_ms;
	unsigned http_threads;     /* the daemon's threads */
	tp_http_hooks hooks;
	void *arg;
} tp_http_config;

/* Loads libmicrohttpd (see mhd.h) and starts the daemon.  0 with *out
 * (and *bound_port when not NULL), -ENOTSUP when libmicrohttpd cannot be
 * loaded, -EADDRINUSE or another -errno when it cannot listen, -ENOMEM. */
int tp_http_start(const tp_http_config *cfg, tp_http **out, int *bound_port);
/* Runs the watch loop on the calling thread until `wake_fd` is readable
 * (or, with wake_fd -1, until `until_ns` passes or no session and no
 * HTTP request is left, whichever is first: every response begun has
 * then been handed to its client). */
void tp_http_run(tp_http *h, int wake_fd, int64_t until_ns);
/* From now on requests get 503 (shutting down) without reaching the
 * request hook, and no session is created. */
void tp_http_refuse(tp_http *h);
/* Sessions not yet gone (published and ephemeral). */
size_t tp_http_sessions(tp_http *h);
/* Stops the daemon (open responses end) and frees everything.  Sessions
 * still held by the engine stay valid until it releases them. */
void tp_http_stop(tp_http *h);

/* ---- requests (on the HTTP thread of the request hook) ---------------- */

const char *tp_http_req_method(const tp_http_req *rq);
const char *tp_http_req_path(const tp_http_req *rq);
/* A request header's value (case-insensitive name), or NULL. */
const char *tp_http_req_header(tp_http_req *rq, const char *name);
/* How many field lines the request has of header `name` (case-insensitive),
 * with *joined (malloc'd, the caller frees; NULL when none) their values
 * joined by ", " as RFC 9110 section 5.3 combines them; -ENOMEM. */
int tp_http_req_header_all(tp_http_req *rq, const char *name, char **joined);
/* The value of the query parameter `name` (percent-decoded by
 * libmicrohttpd), or NULL when absent.  Borrowed for the request. */
const char *tp_http_req_query(tp_http_req *rq, const char *name);
/* Whether the request target's query names the parameter `name` (with or
 * without a value; names compared after percent-decoding). */
int tp_http_req_has_query_param(tp_http_req *rq, const char *name);
/* The body (NUL-terminated; *len excludes the NUL). */
const char *tp_http_req_body(const tp_http_req *rq, size_t *len);
/* Remembers the layer above's state for this request, for post_answer
 * and request_done. */
void tp_http_req_set_app(tp_http_req *rq, void *app);
/* Answers now.  `headers`: NULL, or name, value, ..., NULL (copied). */
void tp_http_reply(tp_http_req *rq, unsigned status, const char *content_type, const char *body,
		   size_t len, const char *const *headers);

/* ---- sessions --------------------------------------------------------- */

/* A new session with one reference, for the engine session it is given
 * to (as tp_http_conn(ts), whose ops->free drops it).  An ephemeral one
 * serves one request and is never in the table.  NULL with *err -EBUSY at
 * max_sessions (or while refusing), -ENOMEM. */
tp_http_sess *tp_http_session_new(tp_http *h, int ephemeral, int *err);
tp_conn *tp_http_conn(tp_http_sess *ts);
/* Puts a session in the table under its id with `app`, whose reference
 * the table now holds (dropped through session_gone).  From here on
 * tp_http_session_find can return it. */
void tp_http_session_publish(tp_http_sess *ts, void *app);
/* The session's id: 32 hex digits.  Stable for its life. */
const char *tp_http_session_id(const tp_http_sess *ts);
/* The app of the published session `id` with a reference taken by
 * app_ref, or NULL when unknown or ended.  Marks it active.  `legacy`
 * says which kind is looked for: a Streamable HTTP session (0) is never
 * found by a legacy HTTP+SSE id (1), nor the reverse. */
void *tp_http_session_find(tp_http *h, const char *id, int legacy);
/* Makes `ts` a legacy HTTP+SSE session (MCP 2024-11-05), before it is
 * published: every line of its output, answers included, goes to its one
 * SSE stream (tp_http_legacy_get), as "event: message" without ids. */
void tp_http_session_set_legacy(tp_http_sess *ts);
/* Lookups fail from now on (DELETE, expiry); its streams end when its
 * output closes. */
void tp_http_session_end(tp_http_sess *ts);

/* ---- answering ---------------------------------------------------------- */

enum {
	TP_HTTP_SSE = 1,     /* answer as text/event-stream */
	TP_HTTP_NO_IDS = 2,  /* SSE events without ids (no resumption) */
	/* With TP_HTTP_SSE: the SSE response begins only once the request's
	 * session says it was let through (tp_ops.open_route, from
	 * eng_req_admitted) or its stream has something to send; until then
	 * the connection waits like a JSON one.  A request that ends first
	 * with nothing but its answer (a refusal) is answered as plain JSON
	 * by the post_answer hook, which can still choose the status. */
	TP_HTTP_HOLD = 4,
};

/* Opens the stream a POSTed request will be answered on, before the
 * message is fed to the engine, so no line of it can find nowhere to go.
 * `route` (copied) is the key the engine routes its lines by.  0;
 * -EEXIST while a stream of `route` is still open (its request in
 * flight); -EPIPE when the session's output is closed; -ENOMEM. */
int tp_http_post_open(tp_http_req *rq, tp_http_sess *ts, const char *route, unsigned flags);
/* After the feed: answers the POST from its stream.  With `admitted` 0
 * (the feed put no request in flight) the post_answer hook decides a
 * plain answer from what the feed wrote (an answer given at once, a
 * refusal) or from nothing (nothing will come); otherwise the SSE
 * response starts, or the connection waits for the JSON answer.  `session_header`: the
 * Mcp-Session-Id to send (NULL: none). */
void tp_http_post_respond(tp_http_req *rq, int admitted, const char *session_header);
/* GET: the session's standalone SSE stream, or with `last_event_id` the
 * resumption of any SSE stream of the session after that event.  0 when
 * the response started; -EINVAL for a malformed id, -ENOENT when it names
 * no stream of the session, -EBUSY when that stream is attached already,
 * -EAGAIN at max_streams, -EPIPE when the output is closed, -ENOMEM. */
int tp_http_get(tp_http_req *rq, tp_http_sess *ts, const char *last_event_id);

/* GET of a legacy HTTP+SSE session (tp_http_session_set_legacy): its one
 * SSE stream, whose first event is "event: endpoint" with `endpoint` as
 * data (the URL the client POSTs to; copied).  No resumption: a second
 * GET is -EBUSY.  0 when the response started; -EAGAIN at max_streams,
 * -EBUSY, -EPIPE when the output is closed, -ENOMEM.  The request's end
 * (request_done, with the app set by tp_http_req_set_app) says the stream
 * is over: the layer above ends the session then. */
int tp_http_legacy_get(tp_http_req *rq, tp_http_sess *ts, const char *endpoint);

#endif /* MCP_TRANSPORT_TP_HTTP_H */
