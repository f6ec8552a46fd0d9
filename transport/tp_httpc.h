/*
 * tp_httpc.h - the client end of Streamable HTTP, and of the HTTP+SSE
 * transport of 2024-11-05, on libcurl: one thread drives every request of
 * a connection through a curl multi handle.
 *
 * It knows HTTP and SSE, not JSON-RPC: each message it receives (a JSON
 * body, or the data of an SSE event) is handed up whole with the route of
 * the request whose response carried it, and the layer above says whether
 * a route still waits for its answer (a cut SSE stream is then resumed
 * with GET and Last-Event-ID after the server's `retry`).
 *
 * HTTP+SSE (tp_httpc_start_legacy) is a mode of the same connection: one
 * GET stream carries every message of the server (route NULL), its first
 * event names the endpoint every message of the client is POSTed to, and
 * the connection lives exactly as long as that stream (on_closed).
 */
#ifndef MCP_TRANSPORT_TP_HTTPC_H
#define MCP_TRANSPORT_TP_HTTPC_H

#include <stddef.h>
#include <stdint.h>

#include "transport/tp.h"

typedef struct tp_httpc tp_httpc;

/* How a request failed (tp_httpc_hooks.on_failure). */
enum {
	TP_HTTPC_CLOSED = 1, /* no complete HTTP answer: refused, cut, the server gone;
			      * or a 404 to a request of a session (it ended) */
	TP_HTTPC_STATUS,     /* an HTTP error status without a JSON-RPC answer (a 404
			      * before any session: no Streamable HTTP at the URL) */
	TP_HTTPC_TOOBIG,     /* a message larger than max_message (not read on) */
	TP_HTTPC_NOANSWER    /* a complete response that did not hold the answer */
};

/* What the layer above provides.  Every hook runs on the transport's
 * thread, one at a time. */
typedef struct tp_httpc_hooks {
	/* One inbound message (not NUL-terminated), from the response to the
	 * POST of `route` (NULL: the GET stream, or a POST without route). */
	void (*on_message)(void *arg, const char *route, const char *data, size_t len);
	/* 1 while the request of `route` still waits for its answer. */
	int (*route_waiting)(void *arg, const char *route);
	/* The POST of `route` (a request) ended without its answer: `kind`
	 * says how (TP_HTTPC_*), `status` is the HTTP status (0: no HTTP
	 * answer at all), `why` says what happened.  Not called once
	 * route_waiting says 0. */
	void (*on_failure)(void *arg, const char *route, int kind, int status, const char *why);
	/* HTTP+SSE only: the event stream ended after the endpoint event, so
	 * the connection is over (`why` says how).  Called once; no message
	 * arrives after it.  May be NULL. */
	void (*on_closed)(void *arg, const char *why);
	void *arg;
} tp_httpc_hooks;

/* A connection to `url` (copied).  Starts its thread.  NULL with a reason
 * in err[errsz] when libcurl or the thread cannot be had. */
tp_httpc *tp_httpc_new(const char *url, const tp_httpc_hooks *hooks, size_t max_message,
		       char *err, size_t errsz);
/* OAuth (api/client-oauth.c): where the bearer token comes from, and who
 * answers a 401 or a 403.  A POST answered 401 or 403 is parked (its
 * answer not delivered) and handed to the connection's auth thread, which
 * calls `challenge` (blocking: discovery, a person, token requests) for
 * one parked request at a time; then the request is sent again with the
 * new token, or fails with the reason.  A request is challenged at most
 * TP_HTTPC_AUTH_TRIES times. */
#define TP_HTTPC_AUTH_TRIES 3
typedef struct tp_httpc_auth {
	/* The token for the next request in buf[bufsz] ("" none).  1 when it
	 * is about to expire and a refresh should run before it is sent (the
	 * request is parked as for a challenge with status 0), else 0.  The
	 * transport thread; must not block. */
	int (*token)(void *arg, char *buf, size_t bufsz);
	/* status 401 or 403 (0: the token is about to expire), `www` the
	 * WWW-Authenticate value ("" none), `used` the token the request
	 * carried ("" none).  0: send it again; -1: fails, the reason in
	 * why[whysz] (never a token or a secret).  The auth thread. */
	int (*challenge)(void *arg, int status, const char *www, const char *used, char *why,
			 size_t whysz);
	/* Abandons a running challenge soon: the connection closes.  The
	 * closing thread. */
	void (*cancel)(void *arg);
	void *arg;
} tp_httpc_auth;
/* Turns OAuth on (copied; starts the auth thread).  Before the first
 * request.  0, or -1 when the thread cannot start. */
int tp_httpc_set_auth(tp_httpc *h, const tp_httpc_auth *auth);
/* "Authorization: Bearer TOKEN" on every request (copied; NULL: none).
 * Before the first request. */
int tp_httpc_set_bearer(tp_httpc *h, const char *token);
/* The MCP-Protocol-Version header of every later request (copied; NULL:
 * none).  Any thread. */
int tp_httpc_set_protocol_version(tp_httpc *h, const char *version);
/* POSTs one message (`data` copied; `len` bytes, no newline needed) with
 * extra header lines ("Name: value", copied; NULL-terminated, may be NULL)
 * and a route (copied; NULL: none, for notifications and answers whose
 * fate nobody waits for).  Never blocks.  0, or -ENOMEM, -EPIPE after
 * close. */
int tp_httpc_post(tp_httpc *h, const char *data, size_t len, const char *route,
		  const char *const *headers);
/* Opens the standalone GET stream of the session (messages not tied to a
 * request), reopened with Last-Event-ID when it ends while the connection
 * is open; a 405 answer means the server offers none.  Any thread. */
void tp_httpc_open_stream(tp_httpc *h);
/* Switches the connection to the HTTP+SSE transport (2024-11-05): GETs
 * the URL as an event stream and waits, on the calling thread until
 * `deadline_ns` (CLOCK_MONOTONIC), for its `endpoint` event, whose URL is
 * resolved against the connection's and must have the same origin.  Every
 * later POST goes there; a POST answered 2xx has done its work (the
 * answer comes on the stream), a 4xx or 5xx fails its route
 * (TP_HTTPC_STATUS); no session header, no DELETE, no resume.  0, or -1
 * with the reason in err[errsz] (not an event stream, no endpoint in
 * time, a refused endpoint, the connection closed).  Once, before any
 * other request is queued in this mode. */
int tp_httpc_start_legacy(tp_httpc *h, int64_t deadline_ns, char *err, size_t errsz);
/* The session id the server gave (a copy in buf[bufsz]), or "" . */
void tp_httpc_session_id(tp_httpc *h, char *buf, size_t bufsz);
/* The engine's side: a tp_conn whose send_routed POSTs each line (never
 * blocking), for a push session.  Freed with the connection. */
tp_conn *tp_httpc_conn(tp_httpc *h);
/* Ends the connection: DELETEs the session (when there is one, bounded
 * by `timeout_ms`), stops the thread, drops what is unsent.  No hook runs
 * after it returns.  Idempotent. */
void tp_httpc_close(tp_httpc *h, int timeout_ms);
/* Frees it (after tp_httpc_close). */
void tp_httpc_free(tp_httpc *h);

#endif /* MCP_TRANSPORT_TP_HTTPC_H */
