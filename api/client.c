/*
 * client.c - the client object: connecting over each transport, the
 * handshake of either era, calls and their outcomes, the requests and
 * notifications the server sends, and the close.
 *
 * Over HTTP the transport is Streamable HTTP or, for servers of
 * 2024-11-05, HTTP+SSE (both transport/httpc.c); mcp_client_connect_http
 * falls back from the first to the second as the 2025-03-26 transports
 * page asks.
 *
 * It is a second face of the same engine, not a second engine.  The
 * connection is an engine session whose protocol hooks are the client's:
 * a server-to-client request is an inbound request run on the client's
 * pool with its own token; each call is an eng_call whose requests wait in
 * the session's pending table, so the engine's shutdown (EOF, a write
 * error, mcp_client_close) fails every waiting call from one snapshot.
 * An input_required result (2026-07-28) is answered by a local request of
 * the session (eng_session_submit_local), which the shutdown also fires
 * and waits for.
 *
 * Each call ends exactly once: its outcome is decided by one compare and
 * swap, whoever comes first (the answer, a cancel, the connection's end,
 * a failed round), and the loser's message is dropped and counted.
 *
 * Lock order: client->mu and a call's token.mu are never held together;
 * neither is held while calling into the engine or the transport.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "api/internal.h"
#include "mcp/client.h"
#include "api/client-headers.h"
#include "api/client-oauth.h"
#ifdef HAVE_CURL
#include "transport/tp_httpc.h"
#include "transport/sigpipe.h"
#endif

extern char **environ;

#define LEGACY_LATEST "2025-11-25"
#define MAX_PAGES 10000

enum { TK_NONE = 0, TK_STDIO, TK_FDS, TK_MEMORY, TK_HTTP };
enum { ST_NEW = 0, ST_CONNECTING, ST_READY, ST_CLOSED };

struct mcp_token {
	eng_token t; /* first: a handler's token is passed as an mcp_token */
};

struct mcp_client {
	char *name, *version;
	/* configuration (before connecting) */
	int era;
	char *version_asked;
	int workers, grace_ms, connect_ms, max_calls, input_rounds;
	size_t max_message;
	int eof_to_term_ms, term_to_kill_ms;
	char *bearer;
	client_oauth *oauth;         /* api/client-oauth.c; NULL: no OAuth */
	int http_transport;          /* mcp_http_transport */
	mcp_client_handler_fn roots_fn, sampling_fn, elicit_fn;
	void *roots_user, *sampling_user, *elicit_user;
	int elicit_modes;
	mcp_client_notify_fn notify_fn;
	void *notify_user;

	pthread_mutex_t mu;          /* what follows, unless stated */
	json_object *roots;          /* array of {uri, name}; under mu */
	_Atomic int state;
	_Atomic int closing;
	int kind;
	char error[512];             /* why it failed or ended */
	eng_idtable calls;           /* started calls, by serial */
	int64_t next_serial;
	int64_t connect_deadline;    /* the handshake ends by then (ns) */
	/* Messages of the server that were dropped (mcp_client_last_dropped):
	 * how many, and the last one's reason; under mu. */
	uint64_t ndropped;
	char dropped[300];
	_Atomic int64_t max_sent_id; /* the highest request id sent */
	/* SEP-2243 (2026-07-28 over Streamable HTTP): each tool the last
	 * mcp_client_list_tools kept, by name, to the bindings of its
	 * x-mcp-header declarations (api_xheaders_scan); read in place by
	 * senders, replaced whole, never changed, all under mu.  And the
	 * tools left out for an invalid declaration: how many, the last
	 * reason. */
	json_object *tool_headers;
	uint64_t ntools_rejected;
	char tools_rejected[300];
	struct mcp_call *log_calls;  /* calls with a log callback, in flight */
	int n_log_calls;
	_Atomic int log_level;       /* 2026-07-28 _meta level; -1 none */

	/* the connection */
	eng_pool pool;
	int pool_started;
	eng_stats stats;
	eng_session *es;
	pthread_t reader;
	int reader_started;
	pid_t pid;
	int to_child, from_child;
	_Atomic int reaped;
	int wait_status;
	mcp_memconn *mem;
#ifdef HAVE_CURL
	tp_httpc *http;
#endif
	/* The HTTP status that refused the last handshake request without a
	 * JSON-RPC answer (0: none): the fallback to HTTP+SSE reads it. */
	_Atomic int hs_http_status;
	int sse;                     /* speaking HTTP+SSE */
	_Atomic int transport;       /* mcp_transport_kind, once connected */
	int modern;                  /* speaking 2026-07-28 */
	const char *protocol;        /* negotiated revision (static) */
	json_object *server_caps, *server_info;
	char *instructions;
	json_object *client_caps;    /* what we declare (read-only once set) */

	_Atomic uint64_t calls_started, calls_ok, calls_remote, calls_failed, calls_cancelled,
		late_dropped, handlers_run;
};

/* A call: one logical request, possibly several round trips.  Its token's
 * mutex guards the fields marked "mu". */
struct mcp_call {
	eng_call base;               /* first: the pending table's view */
	mcp_client *c;
	eng_idnode node;             /* c->calls, keyed by `key` */
	char key[24];                /* the serial as text: progress token, route */
	int64_t serial;
	char *method;
	json_object *params;         /* the caller's params (a copy), read-only */
	int handshake;               /* allowed before the client is ready */
	int version_retried;         /* sent again after a -32022 (hook only) */
	int started, in_table;
	uint64_t dropped_mark;       /* c->ndropped when it started */
	mcp_call_progress_fn progress_fn;
	void *progress_user;
	mcp_call_log_fn log_fn;
	void *log_user;
	int log_min;
	struct mcp_call *log_next, *log_prev; /* c->log_calls, under c->mu */
	int in_log_list;
	mcp_token *tok;              /* the application's, borrowed */
	int tok_handle;
	_Atomic int outcome;         /* 0 until decided (once) */
	/* mu: */
	eng_pending *pend;           /* the request in flight (the call's ref) */
	eng_req *round;              /* the input round running (counted) */
	json_object *round_answer;   /* the input_required answer for it */
	int rounds;
	int64_t req_id;
	int64_t answered_id;         /* the last request whose answer came */
	int done;
	int rc;
	json_object *result;
	char why[600];
	int efd;
};

static void call_release(eng_call *ec);
static void call_settled(eng_call *ec, eng_pending *p, int state, json_object *answer);
static int call_abort(mcp_call *call, int rc, const char *wire_reason, const char *why);

/* ---- tokens --------------------------------------------------------------- */

MCP_EXTERN mcp_token *mcp_token_new(void)
{
	mcp_token *t = calloc(1, sizeof *t);
	if (t && eng_token_init(&t->t)) {
		free(t);
		return NULL;
	}
	return t;
}

MCP_EXTERN void mcp_token_free(mcp_token *tok)
{
	if (!tok)
		return;
	eng_token_destroy(&tok->t);
	free(tok);
}

MCP_EXTERN int mcp_token_cancel(mcp_token *tok)
{
	return tok ? eng_token_fire(&tok->t, MCP_CANCEL_PEER) : 0;
}

MCP_EXTERN mcp_cancel_reason mcp_token_reason(mcp_token *tok)
{
	return tok ? (mcp_cancel_reason)eng_token_reason(&tok->t) : MCP_CANCEL_NONE;
}

MCP_EXTERN int mcp_token_fd(mcp_token *tok)
{
	return tok ? eng_token_fd(&tok->t) : -1;
}

MCP_EXTERN int mcp_token_sleep(mcp_token *tok, int64_t ms)
{
	return tok ? eng_token_sleep(&tok->t, ms) : MCP_EINVAL;
}

/* ---- the client object -------------------------------------------------- */

MCP_EXTERN mcp_client *mcp_client_new(const char *name, const char *version)
{
	if (!name || !version)
		return NULL;
	mcp_client *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->name = strdup(name);
	c->version = strdup(version);
	c->roots = json_object_new_array();
	if (!c->name || !c->version || !c->roots || eng_idtable_init(&c->calls) != MCP_OK) {
		free(c->name);
		free(c->version);
		json_object_put(c->roots);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->workers = 2;
	c->grace_ms = 1500;
	c->connect_ms = 30000;
	c->max_calls = 4096;
	c->input_rounds = 8;
	c->max_message = 16u << 20;
	c->eof_to_term_ms = 2000;
	c->term_to_kill_ms = 2000;
	c->next_serial = 1;
	c->pid = -1;
	c->to_child = c->from_child = -1;
	atomic_init(&c->log_level, -1);
	return c;
}

static int settable(mcp_client *c)
{
	if (!c)
		return MCP_EINVAL;
	return atomic_load(&c->state) == ST_NEW ? MCP_OK : MCP_ESTATE;
}

MCP_EXTERN int mcp_client_set_era(mcp_client *c, mcp_client_era era)
{
	int rc = settable(c);
	if (rc)
		return rc;
	if (era != MCP_ERA_AUTO && era != MCP_ERA_LEGACY && era != MCP_ERA_MODERN)
		return MCP_EINVAL;
	c->era = era;
	return MCP_OK;
}

MCP_EXTERN int mcp_client_set_protocol_version(mcp_client *c, const char *version)
{
	int rc = settable(c);
	if (rc)
		return rc;
	if (version && api_revision_index(version) < 0)
		return MCP_EINVAL;
	char *v = version ? strdup(version) : NULL;
	if (version && !v)
		return MCP_ENOMEM;
	free(c->version_asked);
	c->version_asked = v;
	if (version)
		c->era = api_revision_index(version) >= API_REV_LEGACY_COUNT ? MCP_ERA_MODERN
									  : MCP_ERA_LEGACY;
	return MCP_OK;
}

#define CLIENT_RANGE(fn, field, type, lo, hi)         \
	MCP_EXTERN int fn(mcp_client *c, type v)      \
	{                                             \
		int rc = settable(c);                 \
		if (rc)                               \
			return rc;                    \
		if (v < (lo) || v > (hi))             \
			return MCP_EINVAL;            \
		c->field = v;                         \
		return MCP_OK;                        \
	}

CLIENT_RANGE(mcp_client_set_workers, workers, int, 1, 256)
CLIENT_RANGE(mcp_client_set_grace_ms, grace_ms, int64_t, 0, 600000)
CLIENT_RANGE(mcp_client_set_connect_timeout_ms, connect_ms, int64_t, 1, 3600000)
CLIENT_RANGE(mcp_client_set_max_message, max_message, size_t, 1024, (size_t)1 << 30)
CLIENT_RANGE(mcp_client_set_max_calls, max_calls, int, 1, 1000000)
CLIENT_RANGE(mcp_client_set_input_rounds, input_rounds, int, 1, 64)

MCP_EXTERN int mcp_client_set_kill_grace_ms(mcp_client *c, int64_t eof_to_term_ms,
					    int64_t term_to_kill_ms)
{
	int rc = settable(c);
	if (rc)
		return rc;
	if (eof_to_term_ms < 0 || eof_to_term_ms > 600000 || term_to_kill_ms < 0 ||
	    term_to_kill_ms > 600000)
		return MCP_EINVAL;
	c->eof_to_term_ms = (int)eof_to_term_ms;
	c->term_to_kill_ms = (int)term_to_kill_ms;
	return MCP_OK;
}

MCP_EXTERN int mcp_client_set_bearer(mcp_client *c, const char *token)
{
	int rc = settable(c);
	if (rc)
		return rc;
	if (token && strpbrk(token, "\r\n"))
		return MCP_EINVAL;
	char *t = token ? strdup(token) : NULL;
	if (token && !t)
		return MCP_ENOMEM;
	free(c->bearer);
	c->bearer = t;
	return MCP_OK;
}

/* OAuth (api/client-oauth.c keeps the settings). */
#define CLIENT_OAUTH(call)                    \
	do {                                  \
		int rc_ = settable(c);        \
		return rc_ ? rc_ : (call);    \
	} while (0)

MCP_EXTERN int mcp_client_set_oauth(mcp_client *c, mcp_oauth_grant grant,
				    mcp_oauth_authorize_fn authorize, void *user)
{
	CLIENT_OAUTH(client_oauth_set(&c->oauth, grant, authorize, user));
}

MCP_EXTERN int mcp_client_set_oauth_client(mcp_client *c, const char *client_id,
					   const char *secret, mcp_oauth_auth_method method)
{
	CLIENT_OAUTH(client_oauth_set_client(&c->oauth, client_id, secret, method));
}

MCP_EXTERN int mcp_client_set_oauth_private_key(mcp_client *c, const char *pem)
{
	CLIENT_OAUTH(client_oauth_set_private_key(&c->oauth, pem));
}

MCP_EXTERN int mcp_client_set_oauth_signer(mcp_client *c, mcp_oauth_sign_fn sign, void *user)
{
	CLIENT_OAUTH(client_oauth_set_signer(&c->oauth, sign, user));
}

MCP_EXTERN int mcp_client_set_oauth_scopes(mcp_client *c, const char *scopes)
{
	CLIENT_OAUTH(client_oauth_set_scopes(&c->oauth, scopes));
}

MCP_EXTERN int mcp_client_set_oauth_redirect_uri(mcp_client *c, const char *uri)
{
	CLIENT_OAUTH(client_oauth_set_redirect_uri(&c->oauth, uri));
}

MCP_EXTERN int mcp_client_set_oauth_store(mcp_client *c, mcp_oauth_load_fn load,
					  mcp_oauth_save_fn save, void *user)
{
	CLIENT_OAUTH(client_oauth_set_store(&c->oauth, load, save, user));
}

MCP_EXTERN int mcp_client_set_http_transport(mcp_client *c, mcp_http_transport transport)
{
	int rc = settable(c);
	if (rc)
		return rc;
	if (transport != MCP_HTTP_AUTO && transport != MCP_HTTP_STREAMABLE &&
	    transport != MCP_HTTP_SSE)
		return MCP_EINVAL;
	c->http_transport = transport;
	return MCP_OK;
}

MCP_EXTERN int mcp_client_set_sampling_handler(mcp_client *c, mcp_client_handler_fn fn, void *user)
{
	int rc = settable(c);
	if (rc)
		return rc;
	c->sampling_fn = fn;
	c->sampling_user = user;
	return MCP_OK;
}

MCP_EXTERN int mcp_client_set_elicitation_handler(mcp_client *c, mcp_client_handler_fn fn,
						  void *user, int modes)
{
	int rc = settable(c);
	if (rc)
		return rc;
	if (fn && (modes & ~(MCP_ELICIT_FORM | MCP_ELICIT_URL) || !modes))
		return MCP_EINVAL;
	c->elicit_fn = fn;
	c->elicit_user = user;
	c->elicit_modes = fn ? modes : 0;
	return MCP_OK;
}

MCP_EXTERN int mcp_client_set_roots_handler(mcp_client *c, mcp_client_handler_fn fn, void *user)
{
	int rc = settable(c);
	if (rc)
		return rc;
	c->roots_fn = fn;
	c->roots_user = user;
	return MCP_OK;
}

MCP_EXTERN int mcp_client_set_notification_handler(mcp_client *c, mcp_client_notify_fn fn,
						   void *user)
{
	int rc = settable(c);
	if (rc)
		return rc;
	c->notify_fn = fn;
	c->notify_user = user;
	return MCP_OK;
}

/* ---- reading answers ---------------------------------------------------- */

static const char *str_of(json_object *o, const char *key)
{
	json_object *v = api_get(o, key);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static void set_error(mcp_client *c, const char *fmt, const char *a, const char *b)
{
	pthread_mutex_lock(&c->mu);
	snprintf(c->error, sizeof c->error, fmt, a ? a : "", b ? b : "");
	pthread_mutex_unlock(&c->mu);
}

/* Sets the reason the connection ended, unless one is known already. */
static void set_end_reason(mcp_client *c, const char *why)
{
	pthread_mutex_lock(&c->mu);
	if (!c->error[0])
		snprintf(c->error, sizeof c->error, "%s", why);
	pthread_mutex_unlock(&c->mu);
}

/* ---- sending -------------------------------------------------------------- */

/* Sends one message line (taken) on the connection.  `route`,
 * `method`/`name` and the header lines `params` (Mcp-Param-*, borrowed,
 * NULL-terminated; may be NULL) matter over HTTP only. */
static int send_line(mcp_client *c, char *line, size_t len, const char *route, const char *method,
		     const char *name, char *const *params)
{
#ifdef HAVE_CURL
	if (c->kind == TK_HTTP) {
		size_t np = 0;
		while (params && params[np])
			np++;
		const char **hdr = calloc(np + 3, sizeof *hdr);
		char mh[160], *nh = NULL;
		int n = 0;
		if (!hdr) {
			free(line);
			return MCP_ENOMEM;
		}
		/* 2026-07-28 requests name their method (and target) in
		 * headers, so that intermediaries route without the body; a
		 * name that is not plain ASCII goes Base64-encoded, as the
		 * transports page's "Value Encoding" asks. */
		if (c->modern && method && strlen(method) < 128) {
			snprintf(mh, sizeof mh, "Mcp-Method: %s", method);
			hdr[n++] = mh;
			char *enc = name ? api_xheader_encode(name, strlen(name)) : NULL;
			if (enc && *enc && strlen(enc) < 4096 &&
			    (nh = malloc(strlen(enc) + sizeof "Mcp-Name: ")))
				sprintf(nh, "Mcp-Name: %s", enc);
			free(enc);
			if (nh)
				hdr[n++] = nh;
			for (size_t i = 0; i < np; i++)
				hdr[n++] = params[i];
		}
		int rc = tp_httpc_post(c->http, line, len, route, hdr);
		free(nh);
		free(hdr);
		free(line);
		return rc == 0 ? MCP_OK : rc == -ENOMEM ? MCP_ENOMEM : MCP_ECLOSED;
	}
#endif
	(void)route;
	(void)method;
	(void)name;
	(void)params;
	return eng_writer_push(&c->es->writer, line, len, NULL, 0);
}

static int send_message(mcp_client *c, json_object *msg, const char *method)
{
	size_t len;
	char *line = eng_json_dup(msg, &len);
	json_object_put(msg);
	if (!line)
		return MCP_ENOMEM;
	return send_line(c, line, len, NULL, method, NULL, NULL);
}

static json_object *notification(const char *method, json_object *params)
{
	json_object *m = json_object_new_object();
	eng_obj_add(m, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(m, "method", json_object_new_string(method));
	if (params)
		eng_obj_add(m, "params", params);
	return m;
}

static void send_cancelled(mcp_client *c, int64_t id, const char *reason)
{
	json_object *p = json_object_new_object();
	eng_obj_add(p, "requestId", json_object_new_int64(id));
	if (reason)
		eng_obj_add(p, "reason", json_object_new_string(reason));
	send_message(c, notification("notifications/cancelled", p), "notifications/cancelled");
}

/* The _meta of a 2026-07-28 request. */
static void add_modern_meta(mcp_client *c, json_object *meta)
{
	eng_obj_add(meta, API_META_VERSION, json_object_new_string(api_revision_names[API_REV_2026_07_28]));
	json_object *caps = NULL;
	json_object_deep_copy(c->client_caps, &caps, NULL);
	eng_obj_add(meta, API_META_CAPS, caps ? caps : json_object_new_object());
	json_object *info = json_object_new_object();
	eng_obj_add(info, "name", json_object_new_string(c->name));
	eng_obj_add(info, "version", json_object_new_string(c->version));
	eng_obj_add(meta, API_META_INFO, info);
	static const char *const levels[] = { "debug",	  "info",  "notice", "warning",
					      "error",	  "critical", "alert", "emergency" };
	int lv = atomic_load(&c->log_level);
	if (lv >= 0 && lv < 8)
		eng_obj_add(meta, API_META_LOG, json_object_new_string(levels[lv]));
}

/* ---- the calls table ------------------------------------------------------ */

static mcp_call *call_find(mcp_client *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	mcp_call *call = (mcp_call *)eng_idtable_get(&c->calls, key);
	if (call)
		call = (mcp_call *)((char *)call - offsetof(mcp_call, node));
	if (call)
		eng_call_ref(&call->base);
	pthread_mutex_unlock(&c->mu);
	return call;
}

/* The call of an HTTP route ("serial:request-id"), and the request id. */
static mcp_call *call_of_route(mcp_client *c, const char *route, int64_t *req_id)
{
	char key[24];
	const char *colon = route ? strchr(route, ':') : NULL;
	if (!colon || (size_t)(colon - route) >= sizeof key)
		return NULL;
	memcpy(key, route, (size_t)(colon - route));
	key[colon - route] = 0;
	*req_id = strtoll(colon + 1, NULL, 10);
	return call_find(c, key);
}

static mcp_call *call_find_token(mcp_client *c, json_object *tok)
{
	char key[40];
	if (json_object_is_type(tok, json_type_int))
		snprintf(key, sizeof key, "%lld", (long long)json_object_get_int64(tok));
	else if (json_object_is_type(tok, json_type_string) &&
		 strlen(json_object_get_string(tok)) < sizeof key)
		snprintf(key, sizeof key, "%s", json_object_get_string(tok));
	else
		return NULL;
	return call_find(c, key);
}

static void call_unlist(mcp_call *call)
{
	mcp_client *c = call->c;
	int had = 0;
	pthread_mutex_lock(&c->mu);
	if (call->in_table) {
		eng_idtable_del(&c->calls, &call->node);
		call->in_table = 0;
		had = 1;
	}
	if (call->in_log_list) {
		if (call->log_prev)
			call->log_prev->log_next = call->log_next;
		else
			c->log_calls = call->log_next;
		if (call->log_next)
			call->log_next->log_prev = call->log_prev;
		call->in_log_list = 0;
		c->n_log_calls--;
	}
	pthread_mutex_unlock(&c->mu);
	if (had)
		eng_call_unref(&call->base);
}

/* ---- outcomes ------------------------------------------------------------- */

static int decide(mcp_call *call)
{
	int expect = 0;
	return atomic_compare_exchange_strong(&call->outcome, &expect, 1);
}

/* Records the decided outcome (`obj` taken) and wakes every waiter. */
static void complete(mcp_call *call, int rc, json_object *obj, const char *why)
{
	mcp_client *c = call->c;
	eng_token *t = &call->base.token;
	/* A call that ends without its answer says what the server sent
	 * instead, if it sent something the client dropped meanwhile (an
	 * answer under an id never sent, a message too large, not JSON):
	 * that is usually why. */
	char noted[600];
	if (why && (rc == MCP_ETIMEDOUT || rc == MCP_ECLOSED || rc == MCP_EPROTO)) {
		pthread_mutex_lock(&c->mu);
		uint64_t n = c->ndropped - call->dropped_mark;
		if (n > 0 && !strstr(why, c->dropped)) {
			if (n > 1)
				snprintf(noted, sizeof noted, "%s; %s (and %llu more messages dropped)",
					 why, c->dropped, (unsigned long long)(n - 1));
			else
				snprintf(noted, sizeof noted, "%s; %s", why, c->dropped);
			why = noted;
		}
		pthread_mutex_unlock(&c->mu);
	}
	/* Counted before anyone can see the end. */
	switch (rc) {
	case MCP_OK: atomic_fetch_add(&c->calls_ok, 1); break;
	case MCP_EREMOTE: atomic_fetch_add(&c->calls_remote, 1); break;
	case MCP_ECANCELED: atomic_fetch_add(&c->calls_cancelled, 1); break;
	default: atomic_fetch_add(&c->calls_failed, 1); break;
	}
	pthread_mutex_lock(&t->mu);
	eng_pending *p = call->pend;
	call->pend = NULL;
	call->rc = rc;
	call->result = obj;
	if (why)
		snprintf(call->why, sizeof call->why, "%s", why);
	call->done = 1;
	if (call->efd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(call->efd, &one, sizeof one);
		(void)w;
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	if (p) {
		/* Still in the table when the call ended another way (an HTTP
		 * failure): an answer coming later finds nothing. */
		eng_pending_remove(&c->es->pending, p);
		eng_pending_unref(p);
	}
	call_unlist(call);
}

/* Ends the call with `rc` unless it has ended: 1 when this did. */
static int finish(mcp_call *call, int rc, json_object *obj, const char *why)
{
	if (!decide(call)) {
		json_object_put(obj);
		return 0;
	}
	complete(call, rc, obj, why);
	return 1;
}

/* The text of a JSON-RPC error object, for mcp_call_error. */
static void error_text(json_object *err, char *buf, size_t sz)
{
	json_object *code = api_get(err, "code");
	const char *m = str_of(err, "message");
	snprintf(buf, sz, "the server answered error %d: %s",
		 json_object_is_type(code, json_type_int) ? json_object_get_int(code) : 0,
		 m ? m : "(no message)");
}

static const char *closed_reason(mcp_client *c, char *buf, size_t sz)
{
	pthread_mutex_lock(&c->mu);
	snprintf(buf, sz, "connection closed: %.250s",
		 c->error[0] ? c->error : "the connection to the server ended");
	pthread_mutex_unlock(&c->mu);
	return buf;
}

/* ---- sending a round ----------------------------------------------------- */

/* The message of one request of the call: its params (`params` taken,
 * NULL: a copy of the call's) with the _meta of the era added. */
static json_object *build_request(mcp_call *call, json_object *params)
{
	mcp_client *c = call->c;
	if (!params) {
		params = NULL;
		if (call->params && json_object_deep_copy(call->params, &params, NULL) != 0)
			return NULL;
		if (!params)
			params = json_object_new_object();
	}
	int want_meta = call->progress_fn || (c->modern && !call->handshake) ||
			(c->modern && strcmp(call->method, "server/discover") == 0);
	if (want_meta) {
		json_object *meta = api_get(params, "_meta");
		if (!json_object_is_type(meta, json_type_object)) {
			meta = json_object_new_object();
			eng_obj_add(params, "_meta", meta);
		}
		if (call->progress_fn)
			eng_obj_add(meta, "progressToken", json_object_new_int64(call->serial));
		if (c->modern)
			add_modern_meta(c, meta);
	}
	json_object *m = json_object_new_object();
	eng_obj_add(m, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(m, "method", json_object_new_string(call->method));
	eng_obj_add(m, "params", params);
	return m;
}

/* The name an HTTP header carries for the call (tool, prompt or URI). */
static const char *call_target(mcp_call *call)
{
	if (strcmp(call->method, "resources/read") == 0)
		return str_of(call->params, "uri");
	if (strcmp(call->method, "tools/call") == 0 || strcmp(call->method, "prompts/get") == 0)
		return str_of(call->params, "name");
	return NULL;
}

/* The Mcp-Param-* lines of a tools/call (SEP-2243): over Streamable HTTP
 * at 2026-07-28, for a tool the last mcp_client_list_tools kept, one per
 * x-mcp-header argument given.  *lines NULL when there are none. */
static int param_headers(mcp_call *call, char ***lines)
{
	mcp_client *c = call->c;
	*lines = NULL;
	if (c->kind != TK_HTTP || c->sse || !c->modern || strcmp(call->method, "tools/call") != 0)
		return MCP_OK;
	const char *name = str_of(call->params, "name");
	if (!name)
		return MCP_OK;
	int rc = MCP_OK;
	pthread_mutex_lock(&c->mu);
	json_object *bindings = api_get(c->tool_headers, name);
	/* json-c asserts on the length of what is not an array. */
	if (json_object_is_type(bindings, json_type_array) &&
	    json_object_array_length(bindings) > 0) {
		*lines = api_xheaders_lines(bindings, api_get(call->params, "arguments"));
		if (!*lines)
			rc = MCP_ENOMEM;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/* Sends one request of the call (`msg` taken) and makes it the call's
 * request in flight.  MCP_OK, or the code the call should end with. */
static int send_round(mcp_call *call, json_object *msg)
{
	mcp_client *c = call->c;
	if (!msg)
		return MCP_ENOMEM;
	eng_pending *p;
	int rc = eng_pending_add_call(&c->es->pending, &call->base, &p);
	if (rc != MCP_OK) {
		json_object_put(msg);
		return rc;
	}
	eng_obj_add(msg, "id", json_object_new_int64(p->id));
	size_t len;
	char *line = eng_json_dup(msg, &len);
	json_object_put(msg);
	eng_token *t = &call->base.token;
	pthread_mutex_lock(&t->mu);
	call->req_id = p->id;
	pthread_mutex_unlock(&t->mu);
	/* Ids only grow: an answer above this one is to a request never
	 * sent. */
	int64_t seen = atomic_load(&c->max_sent_id);
	while (seen < p->id && !atomic_compare_exchange_weak(&c->max_sent_id, &seen, p->id))
		;
	/* Over HTTP the route names the call and this request of it, so
	 * that a failed POST fails the call only while it is the request in
	 * flight (a call may have sent another since). */
	char route[64];
	snprintf(route, sizeof route, "%s:%lld", call->key, (long long)p->id);
	char **params = NULL;
	rc = line ? param_headers(call, &params) : MCP_ENOMEM;
	if (rc == MCP_OK)
		rc = send_line(c, line, len, route, call->method, call_target(call), params);
	else
		free(line);
	api_xheaders_free(params);
	if (rc != MCP_OK) {
		eng_pending_remove(&c->es->pending, p);
		eng_pending_unref(p);
		return rc;
	}
	/* Publish it, unless it has ended meanwhile: answered already (the
	 * hook saw it before us), or decided another way (a cancel that found
	 * nothing to cancel: the cancel is owed now). */
	pthread_mutex_lock(&t->mu);
	int waiting = p->state == ENG_PEND_WAITING;
	int live = atomic_load(&call->outcome) == 0;
	if (waiting && live) {
		call->pend = p;
		p = NULL;
	}
	pthread_mutex_unlock(&t->mu);
	if (p) {
		if (waiting && eng_pending_remove(&c->es->pending, p))
			send_cancelled(c, p->id, "cancelled");
		eng_pending_unref(p);
	}
	return MCP_OK;
}

/* ---- handlers of server-to-client requests ------------------------------------ */

static int answer_roots(mcp_client *c, json_object **result)
{
	json_object *r = json_object_new_object();
	json_object *copy = NULL;
	pthread_mutex_lock(&c->mu);
	int bad = json_object_deep_copy(c->roots, &copy, NULL) != 0;
	pthread_mutex_unlock(&c->mu);
	if (bad || !r) {
		json_object_put(r);
		json_object_put(copy);
		return MCP_ENOMEM;
	}
	eng_obj_add(r, "roots", copy);
	*result = r;
	return MCP_OK;
}

/* Runs the application's handler of `method` on the calling worker. */
static int invoke(mcp_client *c, const char *method, json_object *params, eng_token *tok,
		  json_object **result)
{
	*result = NULL;
	mcp_client_handler_fn fn = NULL;
	void *user = NULL;
	if (strcmp(method, "roots/list") == 0) {
		if (!c->roots_fn)
			return answer_roots(c, result);
		fn = c->roots_fn;
		user = c->roots_user;
	} else if (strcmp(method, "sampling/createMessage") == 0) {
		fn = c->sampling_fn;
		user = c->sampling_user;
	} else if (strcmp(method, "elicitation/create") == 0) {
		fn = c->elicit_fn;
		user = c->elicit_user;
	}
	if (!fn)
		return MCP_ENOTSUP;
	atomic_fetch_add(&c->handlers_run, 1);
	int rc = fn(c, method, params, (mcp_token *)tok, result, user);
	if (rc == MCP_OK && !json_object_is_type(*result, json_type_object)) {
		json_object_put(*result);
		*result = NULL;
		return MCP_EPROTO;
	}
	if (rc != MCP_OK && rc != MCP_EREMOTE) {
		json_object_put(*result);
		*result = NULL;
	}
	if (rc == MCP_OK && eng_token_reason(tok) != MCP_CANCEL_NONE) {
		/* Finished after all, but its token fired: the answer is no
		 * longer wanted (P2 mirrored). */
		json_object_put(*result);
		*result = NULL;
		return MCP_ECANCELED;
	}
	return rc;
}

static int has_handler(mcp_client *c, const char *method)
{
	if (strcmp(method, "roots/list") == 0)
		return c->roots_fn || api_get(c->client_caps, "roots");
	if (strcmp(method, "sampling/createMessage") == 0)
		return c->sampling_fn != NULL;
	if (strcmp(method, "elicitation/create") == 0)
		return c->elicit_fn != NULL;
	return 0;
}

/* A server-to-client request, on a worker. */
static void run_server_request(eng_req *r)
{
	mcp_client *c = r->sess->proto_data;
	const char *method = str_of(r->msg, "method");
	json_object *params = api_get(r->msg, "params");
	json_object *res = NULL;
	int rc = invoke(c, method ? method : "", params, &r->token, &res);
	if (rc == MCP_OK) {
		eng_req_finish_result(r, res);
	} else if (rc == MCP_ECANCELED) {
		eng_req_finish_silent(r);
	} else if (rc == MCP_EREMOTE && json_object_is_type(res, json_type_object)) {
		json_object *code = api_get(res, "code");
		const char *m = str_of(res, "message");
		json_object *data = json_object_get(api_get(res, "data"));
		eng_req_finish_error(r,
				     json_object_is_type(code, json_type_int) ? json_object_get_int(code)
									     : MCP_JSONRPC_INTERNAL_ERROR,
				     m ? m : "refused", data);
		json_object_put(res);
	} else {
		json_object_put(res);
		eng_req_finish_error(r,
				     rc == MCP_ENOTSUP ? MCP_JSONRPC_METHOD_NOT_FOUND
						       : MCP_JSONRPC_INTERNAL_ERROR,
				     mcp_strerror(rc), NULL);
	}
}

/* ---- input_required rounds (2026-07-28) -------------------------------------- */

static void round_sink(eng_req *r, json_object *msg, void *arg)
{
	(void)r;
	(void)arg;
	json_object_put(msg);
}

static void round_free(void *proto)
{
	eng_call_unref(&((mcp_call *)proto)->base);
}

/* Why a round stopped on its token: the call's cancel, or the close. */
static void round_stopped(mcp_call *call)
{
	char buf[300];
	finish(call, MCP_ECLOSED, NULL, closed_reason(call->c, buf, sizeof buf));
}

/* Answers every input request of an input_required result with the
 * client's handlers, then sends the request again with the responses and
 * the server's state.  On a worker, as a local request of the session. */
static void run_round(eng_req *r)
{
	mcp_call *call = r->proto;
	mcp_client *c = call->c;
	eng_token *t = &call->base.token;
	pthread_mutex_lock(&t->mu);
	json_object *answer = call->round_answer;
	call->round_answer = NULL;
	int live = atomic_load(&call->outcome) == 0;
	if (live) {
		eng_req_ref(r);
		call->round = r;
	}
	pthread_mutex_unlock(&t->mu);
	if (!live) {
		json_object_put(answer);
		eng_req_finish_silent(r);
		return;
	}
	json_object *result = api_get(answer, "result");
	json_object *reqs = api_get(result, "inputRequests");
	/* A copy: the answer is released before the retry is built. */
	char *state = str_of(result, "requestState") ? strdup(str_of(result, "requestState"))
						       : NULL;
	json_object *responses = json_object_new_object();
	int rc = MCP_OK;
	char why[300] = "";
	json_object *err = NULL;
	if (json_object_is_type(reqs, json_type_object)) {
		json_object_object_foreach(reqs, key, req)
		{
			const char *method = str_of(req, "method");
			json_object *res = NULL;
			if (!method || !has_handler(c, method)) {
				rc = MCP_ENOTSUP;
				snprintf(why, sizeof why,
					 "the server asked for input (%s) this client does not give",
					 method ? method : "without a method");
				break;
			}
			rc = invoke(c, method, api_get(req, "params"), &r->token, &res);
			if (rc == MCP_EREMOTE) {
				err = res;
				error_text(err, why, sizeof why);
				break;
			}
			if (rc != MCP_OK) {
				json_object_put(res);
				snprintf(why, sizeof why, "the %s handler failed: %s", method,
					 mcp_strerror(rc));
				break;
			}
			eng_obj_add(responses, key, res);
		}
	} else if (!state) {
		rc = MCP_EPROTO;
		snprintf(why, sizeof why, "an input_required result without inputRequests or requestState");
	}
	json_object_put(answer);
	if (rc == MCP_OK && eng_token_reason(&r->token) != MCP_CANCEL_NONE)
		rc = MCP_ECANCELED;
	if (rc == MCP_OK) {
		json_object *params = NULL;
		if (call->params)
			json_object_deep_copy(call->params, &params, NULL);
		if (!params)
			params = json_object_new_object();
		eng_obj_add(params, "inputResponses", responses);
		responses = NULL;
		if (state)
			eng_obj_add(params, "requestState", json_object_new_string(state));
		rc = send_round(call, build_request(call, params));
		if (rc != MCP_OK) {
			char buf[300];
			finish(call, rc, NULL,
			       rc == MCP_ECLOSED ? closed_reason(c, buf, sizeof buf) : mcp_strerror(rc));
		}
	} else if (rc == MCP_ECANCELED) {
		round_stopped(call);
	} else {
		finish(call, rc, err, why);
		err = NULL;
	}
	json_object_put(responses);
	json_object_put(err);
	free(state);
	pthread_mutex_lock(&t->mu);
	call->round = NULL;
	pthread_mutex_unlock(&t->mu);
	eng_req_unref(r);
	eng_req_finish_silent(r);
}

/* From the settle hook: hands an input_required answer (taken) to a round. */
static void schedule_round(mcp_call *call, json_object *answer)
{
	mcp_client *c = call->c;
	eng_token *t = &call->base.token;
	pthread_mutex_lock(&t->mu);
	int n = ++call->rounds;
	int live = atomic_load(&call->outcome) == 0;
	if (live && n <= c->input_rounds) {
		json_object_put(call->round_answer);
		call->round_answer = answer;
		answer = NULL;
	}
	pthread_mutex_unlock(&t->mu);
	if (!live) {
		json_object_put(answer);
		atomic_fetch_add(&c->late_dropped, 1);
		return;
	}
	if (answer) {
		json_object_put(answer);
		char why[120];
		snprintf(why, sizeof why, "more than %d input_required rounds", c->input_rounds);
		finish(call, MCP_EPROTO, NULL, why);
		return;
	}
	char key[64];
	snprintf(key, sizeof key, "#input-%s-%d", call->key, n);
	eng_call_ref(&call->base);
	int rc = eng_session_submit_local(c->es, key, run_round, call, round_free, round_sink, NULL);
	if (rc != MCP_OK && rc != MCP_EBUSY) {
		char buf[300];
		finish(call, rc, NULL,
		       rc == MCP_ECLOSED ? closed_reason(c, buf, sizeof buf) : mcp_strerror(rc));
	} else if (rc == MCP_EBUSY) {
		finish(call, MCP_EBUSY, NULL, "the client's work queue is full");
	}
}

/* ---- the settle hook ------------------------------------------------------- */

/* An UnsupportedProtocolVersionError (-32022) whose data.supported lists
 * the modern revision. */
static int version_offered(json_object *err)
{
	json_object *code = api_get(err, "code");
	json_object *sup = api_get(api_get(err, "data"), "supported");
	if (!json_object_is_type(code, json_type_int) ||
	    json_object_get_int(code) != API_JSONRPC_UNSUPPORTED_VERSION ||
	    !json_object_is_type(sup, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(sup); i++) {
		json_object *v = json_object_array_get_idx(sup, i);
		if (json_object_is_type(v, json_type_string) &&
		    strcmp(json_object_get_string(v), api_revision_names[API_REV_2026_07_28]) == 0)
			return 1;
	}
	return 0;
}

static void call_settled(eng_call *ec, eng_pending *p, int state, json_object *answer)
{
	mcp_call *call = (mcp_call *)ec;
	mcp_client *c = call->c;
	eng_token *t = &ec->token;
	pthread_mutex_lock(&t->mu);
	int current = call->pend == p;
	if (current)
		call->pend = NULL;
	if (answer)
		call->answered_id = p->id;
	int live = atomic_load(&call->outcome) == 0;
	pthread_mutex_unlock(&t->mu);
	/* The table still holds its own reference during the hook.  An entry
	 * that is not the current one is either unpublished yet (its sender
	 * sees it settled and lets it be, so it is ours to handle) or was
	 * withdrawn by a decided outcome (then `live` is 0). */
	if (current)
		eng_pending_unref(p);
	if (!live) {
		/* Cancelled, timed out or failed already: a late answer. */
		if (answer)
			atomic_fetch_add(&c->late_dropped, 1);
		json_object_put(answer);
		return;
	}
	if (state == ENG_PEND_FAILED) {
		char buf[300];
		finish(call, MCP_ECLOSED, NULL, closed_reason(c, buf, sizeof buf));
		return;
	}
	json_object *err = api_get(answer, "error");
	json_object *res = api_get(answer, "result");
	if (err && c->modern && !call->version_retried && version_offered(err)) {
		/* -32022 naming 2026-07-28 among the supported versions: the
		 * server refused the version it says it speaks (a proxy in
		 * between, a deployment switching over).  Sent again once. */
		call->version_retried = 1;
		json_object_put(answer);
		int rc = send_round(call, build_request(call, NULL));
		if (rc != MCP_OK) {
			char buf[300];
			finish(call, rc, NULL,
			       rc == MCP_ECLOSED ? closed_reason(c, buf, sizeof buf) : mcp_strerror(rc));
		}
		return;
	}
	if (err) {
		char why[300];
		error_text(err, why, sizeof why);
		json_object *e = json_object_get(err);
		json_object_put(answer);
		finish(call, MCP_EREMOTE, e, why);
		return;
	}
	if (!json_object_is_type(res, json_type_object)) {
		json_object_put(answer);
		finish(call, MCP_EPROTO, NULL, "the server's answer has no result object");
		return;
	}
	const char *rt = str_of(res, "resultType");
	if (rt && strcmp(rt, "input_required") == 0) {
		schedule_round(call, answer);
		return;
	}
	/* The waiter takes the result; the answer's last reference goes
	 * here, before the waiter is woken (json-c counts are not atomic). */
	json_object *out = json_object_get(res);
	json_object_put(answer);
	finish(call, MCP_OK, out, NULL);
}

static void call_release(eng_call *ec)
{
	mcp_call *call = (mcp_call *)ec;
	free(call->method);
	json_object_put(call->params);
	json_object_put(call->result);
	json_object_put(call->round_answer);
	if (call->efd >= 0)
		close(call->efd);
	free(call);
}

/* ---- call handles ------------------------------------------------------------ */

MCP_EXTERN mcp_call *mcp_call_new(mcp_client *c, const char *method, json_object *params)
{
	if (!c || !method || !*method || (params && !json_object_is_type(params, json_type_object)))
		return NULL;
	mcp_call *call = calloc(1, sizeof *call);
	if (!call)
		return NULL;
	if (eng_call_init(&call->base, call_settled, call_release) != MCP_OK) {
		free(call);
		return NULL;
	}
	call->c = c;
	call->efd = -1;
	call->req_id = -1;
	call->answered_id = -1;
	call->method = strdup(method);
	if (params && json_object_deep_copy(params, &call->params, NULL) != 0) {
		/* Out of memory: the call is not made. */
		free(call->method);
		call->method = NULL;
	}
	if (!call->method) {
		eng_call_unref(&call->base);
		return NULL;
	}
	pthread_mutex_lock(&c->mu);
	call->serial = c->next_serial++;
	pthread_mutex_unlock(&c->mu);
	snprintf(call->key, sizeof call->key, "%lld", (long long)call->serial);
	call->node.key = call->key;
	return call;
}

static mcp_call *call_with(mcp_client *c, const char *method, const char *k1, const char *v1,
			   const char *k2, json_object *v2)
{
	if (!c || !v1)
		return NULL;
	json_object *p = json_object_new_object();
	if (!p)
		return NULL;
	eng_obj_add(p, k1, json_object_new_string(v1));
	if (k2) {
		json_object *copy = NULL;
		if (v2)
			json_object_deep_copy(v2, &copy, NULL);
		eng_obj_add(p, k2, copy ? copy : json_object_new_object());
	}
	mcp_call *call = mcp_call_new(c, method, p);
	json_object_put(p);
	return call;
}

MCP_EXTERN mcp_call *mcp_call_new_tool(mcp_client *c, const char *name, json_object *args)
{
	if (args && !json_object_is_type(args, json_type_object))
		return NULL;
	return call_with(c, "tools/call", "name", name, "arguments", args);
}

MCP_EXTERN mcp_call *mcp_call_new_read(mcp_client *c, const char *uri)
{
	return call_with(c, "resources/read", "uri", uri, NULL, NULL);
}

MCP_EXTERN mcp_call *mcp_call_new_prompt(mcp_client *c, const char *name, json_object *args)
{
	if (args && !json_object_is_type(args, json_type_object))
		return NULL;
	return call_with(c, "prompts/get", "name", name, args ? "arguments" : NULL, args);
}

MCP_EXTERN int mcp_call_set_progress(mcp_call *call, mcp_call_progress_fn fn, void *user)
{
	if (!call)
		return MCP_EINVAL;
	if (call->started)
		return MCP_ESTATE;
	call->progress_fn = fn;
	call->progress_user = user;
	return MCP_OK;
}

MCP_EXTERN int mcp_call_set_log(mcp_call *call, mcp_log_level min_level, mcp_call_log_fn fn,
				void *user)
{
	if (!call || min_level < MCP_LOG_DEBUG || min_level > MCP_LOG_EMERGENCY)
		return MCP_EINVAL;
	if (call->started)
		return MCP_ESTATE;
	call->log_fn = fn;
	call->log_user = user;
	call->log_min = min_level;
	return MCP_OK;
}

MCP_EXTERN int mcp_call_set_token(mcp_call *call, mcp_token *tok)
{
	if (!call)
		return MCP_EINVAL;
	if (call->started)
		return MCP_ESTATE;
	call->tok = tok;
	return MCP_OK;
}

static void on_token_fired(mcp_cancel_reason reason, void *arg)
{
	(void)reason;
	mcp_call_cancel(arg);
}

static int start_call(mcp_call *call)
{
	mcp_client *c = call->c;
	if (call->started)
		return MCP_ESTATE;
	call->started = 1;
	int st = atomic_load(&c->state);
	int rc = MCP_OK;
	const char *why = NULL;
	char buf[300];
	if (atomic_load(&c->closing) || st == ST_CLOSED) {
		rc = MCP_ECLOSED;
		why = closed_reason(c, buf, sizeof buf);
	} else if (st != ST_READY && !(call->handshake && st == ST_CONNECTING)) {
		rc = MCP_ESTATE;
		why = "the client is not connected";
	}
	if (rc == MCP_OK) {
		pthread_mutex_lock(&c->mu);
		if (c->calls.count >= (size_t)c->max_calls) {
			rc = MCP_EBUSY;
			why = "too many calls in flight (mcp_client_set_max_calls)";
		} else if (eng_idtable_put(&c->calls, &call->node) == MCP_OK) {
			call->in_table = 1;
			call->dropped_mark = c->ndropped;
			eng_call_ref(&call->base);
			if (call->log_fn) {
				call->log_prev = NULL;
				call->log_next = c->log_calls;
				if (c->log_calls)
					c->log_calls->log_prev = call;
				c->log_calls = call;
				call->in_log_list = 1;
				c->n_log_calls++;
			}
		} else {
			rc = MCP_EEXIST;
		}
		pthread_mutex_unlock(&c->mu);
	}
	if (rc != MCP_OK) {
		finish(call, rc, NULL, why ? why : mcp_strerror(rc));
		return rc;
	}
	atomic_fetch_add(&c->calls_started, 1);
	if (call->tok) {
		/* Registered before the send: a token that fired already
		 * cancels the call at once, and send_round then sends
		 * nothing. */
		eng_token_on_cancel(&call->tok->t, on_token_fired, call, &call->tok_handle);
	}
	rc = send_round(call, build_request(call, NULL));
	if (rc != MCP_OK) {
		finish(call, rc, NULL,
		       rc == MCP_ECLOSED ? closed_reason(c, buf, sizeof buf) : mcp_strerror(rc));
		return rc;
	}
	return MCP_OK;
}

MCP_EXTERN int mcp_call_start(mcp_call *call)
{
	return call ? start_call(call) : MCP_EINVAL;
}

MCP_EXTERN int mcp_call_wait(mcp_call *call, int64_t timeout_ms, json_object **result)
{
	if (result)
		*result = NULL;
	if (!call)
		return MCP_EINVAL;
	if (!call->started)
		return MCP_ESTATE;
	eng_token *t = &call->base.token;
	struct timespec ts;
	if (timeout_ms >= 0)
		eng_abstime(eng_now_ns() + timeout_ms * ENG_NS_PER_MS, &ts);
	pthread_mutex_lock(&t->mu);
	while (!call->done) {
		if (timeout_ms < 0)
			pthread_cond_wait(&t->cv, &t->mu);
		else if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT && !call->done)
			break;
	}
	int rc = call->done ? call->rc : MCP_ETIMEDOUT;
	/* Handed over, not shared: json-c's counts are not atomic, and the
	 * call's last reference may be dropped on the reader thread. */
	json_object *res = NULL;
	if (call->done && result) {
		res = call->result;
		call->result = NULL;
	}
	pthread_mutex_unlock(&t->mu);
	if (result)
		*result = res;
	return rc;
}

MCP_EXTERN int mcp_call_done(mcp_call *call)
{
	if (!call)
		return 0;
	pthread_mutex_lock(&call->base.token.mu);
	int d = call->done;
	pthread_mutex_unlock(&call->base.token.mu);
	return d;
}

MCP_EXTERN int mcp_call_fd(mcp_call *call)
{
	if (!call)
		return -1;
	eng_token *t = &call->base.token;
	pthread_mutex_lock(&t->mu);
	if (call->efd < 0) {
		call->efd = eventfd(call->done ? 1 : 0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
	int fd = call->efd;
	pthread_mutex_unlock(&t->mu);
	return fd;
}

MCP_EXTERN const char *mcp_call_error(mcp_call *call)
{
	if (!call)
		return "";
	pthread_mutex_lock(&call->base.token.mu);
	const char *w = call->done ? call->why : "";
	pthread_mutex_unlock(&call->base.token.mu);
	return w;
}

MCP_EXTERN int64_t mcp_call_request_id(mcp_call *call)
{
	if (!call)
		return -1;
	pthread_mutex_lock(&call->base.token.mu);
	int64_t id = call->req_id;
	pthread_mutex_unlock(&call->base.token.mu);
	return id;
}

/* Ends a call in flight with `rc`: the request in flight is withdrawn and
 * the server told (notifications/cancelled with `wire_reason`), a round
 * running sees its token fire. */
static int call_abort(mcp_call *call, int rc, const char *wire_reason, const char *why)
{
	mcp_client *c = call->c;
	if (!decide(call))
		return 0;
	eng_token *t = &call->base.token;
	pthread_mutex_lock(&t->mu);
	eng_pending *p = call->pend;
	call->pend = NULL;
	eng_req *round = call->round;
	if (round)
		eng_req_ref(round);
	pthread_mutex_unlock(&t->mu);
	if (p) {
		/* Only when the entry was still waiting: an answer that won
		 * the race is dropped by the hook, and needs no cancel. */
		if (eng_pending_remove(&c->es->pending, p))
			send_cancelled(c, p->id, wire_reason);
		eng_pending_unref(p);
	}
	if (round) {
		eng_token_fire(&round->token, MCP_CANCEL_PEER);
		eng_req_unref(round);
	}
	complete(call, rc, NULL, why);
	return 1;
}

MCP_EXTERN int mcp_call_cancel(mcp_call *call)
{
	if (!call || !call->started)
		return 0;
	return call_abort(call, MCP_ECANCELED, "cancelled by the client", "cancelled");
}

MCP_EXTERN void mcp_call_free(mcp_call *call)
{
	if (!call)
		return;
	if (call->started) {
		if (!mcp_call_done(call))
			call_abort(call, MCP_ECANCELED, "cancelled by the client", "cancelled");
		if (call->tok)
			eng_token_off_cancel(&call->tok->t, call->tok_handle);
	}
	eng_call_unref(&call->base);
}

/* ---- blocking calls ---------------------------------------------------------- */

static int run_blocking(mcp_call *call, int64_t timeout_ms, mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!call)
		return MCP_ENOMEM;
	call->tok = tok;
	int rc = start_call(call);
	if (rc == MCP_OK) {
		rc = mcp_call_wait(call, timeout_ms, out);
		if (rc == MCP_ETIMEDOUT) {
			char why[80];
			snprintf(why, sizeof why, "timed out after %lld ms", (long long)timeout_ms);
			call_abort(call, MCP_ETIMEDOUT, "timeout", why);
			/* It may have ended otherwise just before. */
			rc = mcp_call_wait(call, 0, out);
		}
	}
	mcp_call_free(call);
	return rc;
}

MCP_EXTERN int mcp_client_request(mcp_client *c, const char *method, json_object *params,
				  int64_t timeout_ms, mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!c || !method)
		return MCP_EINVAL;
	return run_blocking(mcp_call_new(c, method, params), timeout_ms, tok, out);
}

/* Every page of a list, joined: `field` of each result. */
static int list_all(mcp_client *c, const char *method, const char *field, int64_t timeout_ms,
		    mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!c)
		return MCP_EINVAL;
	int64_t deadline = timeout_ms < 0 ? -1 : eng_now_ns() + timeout_ms * ENG_NS_PER_MS;
	json_object *all = json_object_new_array();
	char *cursor = NULL;
	int rc = all ? MCP_OK : MCP_ENOMEM;
	for (int page = 0; rc == MCP_OK; page++) {
		if (page >= MAX_PAGES) {
			rc = MCP_EPROTO;
			break;
		}
		json_object *params = NULL;
		if (cursor) {
			params = json_object_new_object();
			eng_obj_add(params, "cursor", json_object_new_string(cursor));
		}
		int64_t left = -1;
		if (deadline >= 0) {
			left = (deadline - eng_now_ns()) / ENG_NS_PER_MS;
			if (left < 0)
				left = 0;
		}
		json_object *res = NULL;
		rc = mcp_client_request(c, method, params, left, tok, &res);
		json_object_put(params);
		if (rc != MCP_OK) {
			if (rc == MCP_EREMOTE && out) {
				json_object_put(all);
				all = res;
				res = NULL;
			}
			json_object_put(res);
			break;
		}
		json_object *items = api_get(res, field);
		for (size_t i = 0; json_object_is_type(items, json_type_array) &&
				   i < json_object_array_length(items);
		     i++)
			eng_arr_add(all, json_object_get(json_object_array_get_idx(items, i)));
		const char *next = str_of(res, "nextCursor");
		int more = next && *next;
		if (more && cursor && strcmp(next, cursor) == 0)
			rc = MCP_EPROTO; /* a server looping on one page */
		free(cursor);
		cursor = more ? strdup(next) : NULL;
		json_object_put(res); /* `next` pointed into it */
		if (!more)
			break;
		if (!cursor && rc == MCP_OK)
			rc = MCP_ENOMEM;
	}
	free(cursor);
	if (rc != MCP_OK && rc != MCP_EREMOTE) {
		json_object_put(all);
		all = NULL;
	}
	if (out)
		*out = all;
	else
		json_object_put(all);
	return rc;
}

/* SEP-2243: over Streamable HTTP at 2026-07-28 a tool whose inputSchema
 * declares an invalid x-mcp-header is left out of the list (the tools
 * page: "the client MUST exclude the invalid tool from the result of
 * tools/list"), and the bindings of the others are kept for their calls.
 * `tools` (an array, changed in place) is the caller's. */
static int screen_tools(mcp_client *c, json_object *tools)
{
	json_object *map = json_object_new_object();
	if (!map)
		return MCP_ENOMEM;
	uint64_t rejected = 0;
	char last[300] = "";
	for (size_t i = 0; i < json_object_array_length(tools);) {
		json_object *t = json_object_array_get_idx(tools, i), *bindings = NULL;
		const char *name = str_of(t, "name");
		char why[200];
		int rc = api_xheaders_scan(api_get(t, "inputSchema"), &bindings, why, sizeof why);
		if (rc == MCP_ENOMEM) {
			json_object_put(map);
			return rc;
		}
		if (rc != MCP_OK) {
			rejected++;
			snprintf(last, sizeof last, "tool \"%.80s\" left out: %s",
				 name ? name : "(no name)", why);
			json_object_array_del_idx(tools, i, 1);
			continue;
		}
		if (name)
			eng_obj_add(map, name, bindings);
		else
			json_object_put(bindings);
		i++;
	}
	pthread_mutex_lock(&c->mu);
	json_object *old = c->tool_headers;
	c->tool_headers = map;
	c->ntools_rejected += rejected;
	if (rejected)
		snprintf(c->tools_rejected, sizeof c->tools_rejected, "%s", last);
	pthread_mutex_unlock(&c->mu);
	/* No sender reads the old map now: they read it under mu. */
	json_object_put(old);
	return MCP_OK;
}

MCP_EXTERN int mcp_client_list_tools(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
				     json_object **out)
{
	json_object *tools = NULL;
	int rc = list_all(c, "tools/list", "tools", timeout_ms, tok, &tools);
	if (rc == MCP_OK && c->kind == TK_HTTP && !c->sse && c->modern)
		rc = screen_tools(c, tools);
	if (rc != MCP_OK && rc != MCP_EREMOTE) {
		json_object_put(tools);
		tools = NULL;
	}
	if (out)
		*out = tools;
	else
		json_object_put(tools);
	return rc;
}

/* A count the client keeps with its last reason (both under c->mu): the
 * count, and the reason copied into buf[bufsz] when buf is not NULL. */
static uint64_t counted_reason(mcp_client *c, const uint64_t *count, const char *reason,
			       char *buf, size_t bufsz)
{
	pthread_mutex_lock(&c->mu);
	uint64_t n = *count;
	if (buf && bufsz)
		snprintf(buf, bufsz, "%s", reason);
	pthread_mutex_unlock(&c->mu);
	return n;
}

MCP_EXTERN uint64_t mcp_client_tools_rejected(mcp_client *c, char *buf, size_t bufsz)
{
	if (buf && bufsz)
		buf[0] = 0;
	return c ? counted_reason(c, &c->ntools_rejected, c->tools_rejected, buf, bufsz) : 0;
}

MCP_EXTERN int mcp_client_list_resources(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
					 json_object **out)
{
	return list_all(c, "resources/list", "resources", timeout_ms, tok, out);
}

MCP_EXTERN int mcp_client_list_resource_templates(mcp_client *c, int64_t timeout_ms,
						  mcp_token *tok, json_object **out)
{
	return list_all(c, "resources/templates/list", "resourceTemplates", timeout_ms, tok, out);
}

MCP_EXTERN int mcp_client_list_prompts(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
				       json_object **out)
{
	return list_all(c, "prompts/list", "prompts", timeout_ms, tok, out);
}

MCP_EXTERN int mcp_client_list_skills(mcp_client *c, int64_t timeout_ms, mcp_token *tok,
				      json_object **out)
{
	return list_all(c, "skills/list", "skills", timeout_ms, tok, out);
}

MCP_EXTERN int mcp_client_call_tool(mcp_client *c, const char *name, json_object *args,
				    int64_t timeout_ms, mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!c || !name)
		return MCP_EINVAL;
	return run_blocking(mcp_call_new_tool(c, name, args), timeout_ms, tok, out);
}

MCP_EXTERN int mcp_client_read_resource(mcp_client *c, const char *uri, int64_t timeout_ms,
					mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!c || !uri)
		return MCP_EINVAL;
	return run_blocking(mcp_call_new_read(c, uri), timeout_ms, tok, out);
}

static int uri_request(mcp_client *c, const char *method, const char *uri, int64_t timeout_ms,
		       mcp_token *tok)
{
	if (!c || !uri)
		return MCP_EINVAL;
	if (c->modern)
		return MCP_ENOTSUP;
	return run_blocking(call_with(c, method, "uri", uri, NULL, NULL), timeout_ms, tok, NULL);
}

MCP_EXTERN int mcp_client_subscribe(mcp_client *c, const char *uri, int64_t timeout_ms,
				    mcp_token *tok)
{
	return uri_request(c, "resources/subscribe", uri, timeout_ms, tok);
}

MCP_EXTERN int mcp_client_unsubscribe(mcp_client *c, const char *uri, int64_t timeout_ms,
				      mcp_token *tok)
{
	return uri_request(c, "resources/unsubscribe", uri, timeout_ms, tok);
}

MCP_EXTERN int mcp_client_get_prompt(mcp_client *c, const char *name, json_object *args,
				     int64_t timeout_ms, mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!c || !name)
		return MCP_EINVAL;
	return run_blocking(mcp_call_new_prompt(c, name, args), timeout_ms, tok, out);
}

MCP_EXTERN int mcp_client_complete(mcp_client *c, json_object *ref, const char *argument,
				   const char *value, json_object *context, int64_t timeout_ms,
				   mcp_token *tok, json_object **out)
{
	if (out)
		*out = NULL;
	if (!c || !json_object_is_type(ref, json_type_object) || !argument || !value ||
	    (context && !json_object_is_type(context, json_type_object)))
		return MCP_EINVAL;
	json_object *p = json_object_new_object();
	json_object *r = NULL, *ctx = NULL;
	json_object_deep_copy(ref, &r, NULL);
	eng_obj_add(p, "ref", r);
	json_object *arg = json_object_new_object();
	eng_obj_add(arg, "name", json_object_new_string(argument));
	eng_obj_add(arg, "value", json_object_new_string(value));
	eng_obj_add(p, "argument", arg);
	if (context) {
		json_object *cx = json_object_new_object();
		json_object_deep_copy(context, &ctx, NULL);
		eng_obj_add(cx, "arguments", ctx);
		eng_obj_add(p, "context", cx);
	}
	mcp_call *call = mcp_call_new(c, "completion/complete", p);
	json_object_put(p);
	return run_blocking(call, timeout_ms, tok, out);
}

static const char *const level_names[] = { "debug", "info",	"notice", "warning",
					   "error", "critical", "alert",  "emergency" };

MCP_EXTERN int mcp_client_set_log_level(mcp_client *c, mcp_log_level level, int64_t timeout_ms,
					mcp_token *tok)
{
	if (!c || level < MCP_LOG_DEBUG || level > MCP_LOG_EMERGENCY)
		return MCP_EINVAL;
	if (c->modern) {
		atomic_store(&c->log_level, (int)level);
		return atomic_load(&c->state) == ST_READY ? MCP_OK : MCP_ECLOSED;
	}
	json_object *p = json_object_new_object();
	eng_obj_add(p, "level", json_object_new_string(level_names[level]));
	mcp_call *call = mcp_call_new(c, "logging/setLevel", p);
	json_object_put(p);
	return run_blocking(call, timeout_ms, tok, NULL);
}

MCP_EXTERN int mcp_client_ping(mcp_client *c, int64_t timeout_ms, mcp_token *tok)
{
	if (!c)
		return MCP_EINVAL;
	return run_blocking(mcp_call_new(c, c->modern ? "server/discover" : "ping", NULL),
			    timeout_ms, tok, NULL);
}

/* ---- the protocol hooks of the connection ----------------------------------- */

static void cl_on_request(eng_session *s, json_object *msg, json_object *id, const char *method,
			  json_object *params)
{
	mcp_client *c = s->proto_data;
	(void)params;
	if (strcmp(method, "ping") == 0) {
		/* Answered at once, like the server does (no pool). */
		eng_session_respond_result(s, id, json_object_new_object());
		json_object_put(msg);
		return;
	}
	if (!has_handler(c, method)) {
		char m[200];
		snprintf(m, sizeof m, "Method not found: this client does not handle %.120s", method);
		eng_session_respond_error(s, id, MCP_JSONRPC_METHOD_NOT_FOUND, m, NULL);
		json_object_put(msg);
		return;
	}
	eng_session_submit(s, msg, id, run_server_request, NULL, NULL);
}

static mcp_log_level level_of(const char *name)
{
	for (int i = 0; name && i < 8; i++)
		if (strcmp(name, level_names[i]) == 0)
			return (mcp_log_level)i;
	return MCP_LOG_INFO;
}

static void cl_on_notification(eng_session *s, json_object *msg, const char *method,
			       json_object *params)
{
	mcp_client *c = s->proto_data;
	/* Close has returned or is returning: call nothing.  A notification
	 * whose method is empty names nothing the host could act on
	 * (fuzz-client-session): dropped, as an unknown one is by a server. */
	if (atomic_load(&c->closing) == 2 || !*method) {
		json_object_put(msg);
		return;
	}
	if (strcmp(method, "notifications/progress") == 0) {
		mcp_call *call = call_find_token(c, api_get(params, "progressToken"));
		if (call) {
			json_object *pr = api_get(params, "progress"), *tot = api_get(params, "total");
			if (call->progress_fn && !mcp_call_done(call))
				call->progress_fn(call, json_object_get_double(pr),
						  tot ? json_object_get_double(tot) : -1.0,
						  str_of(params, "message"), call->progress_user);
			eng_call_unref(&call->base);
		}
		json_object_put(msg);
		return;
	}
	if (strcmp(method, "notifications/cancelled") == 0) {
		/* The server withdrew one of its requests to us: that
		 * handler's token fires and its answer is suppressed. */
		eng_session_cancel_peer(s, api_get(params, "requestId"));
		json_object_put(msg);
		return;
	}
	if (strcmp(method, "notifications/message") == 0) {
		mcp_call *call = NULL;
		int64_t rid;
		if (s->feed_route)
			call = call_of_route(c, s->feed_route, &rid);
		if (!call) {
			pthread_mutex_lock(&c->mu);
			if (c->n_log_calls == 1) {
				call = c->log_calls;
				eng_call_ref(&call->base);
			}
			pthread_mutex_unlock(&c->mu);
		}
		if (call && call->log_fn) {
			mcp_log_level lv = level_of(str_of(params, "level"));
			if ((int)lv >= call->log_min)
				call->log_fn(call, lv, str_of(params, "logger"), api_get(params, "data"),
					     call->log_user);
			eng_call_unref(&call->base);
			json_object_put(msg);
			return;
		}
		if (call)
			eng_call_unref(&call->base);
	}
	if (c->notify_fn)
		c->notify_fn(c, method, params, c->notify_user);
	json_object_put(msg);
}

static int cl_batches(eng_session *s)
{
	(void)s;
	return 0;
}

static json_object *cl_cancel_notification(int64_t id, const char *reason)
{
	json_object *p = json_object_new_object();
	eng_obj_add(p, "requestId", json_object_new_int64(id));
	eng_obj_add(p, "reason", json_object_new_string(reason));
	return notification("notifications/cancelled", p);
}

static void cl_on_free(eng_session *s)
{
	(void)s;
}

/* Remembers a message of the server that was dropped, for
 * mcp_client_last_dropped and for the reason of a call that then ends
 * without its answer. */
static void note_dropped(mcp_client *c, const char *what)
{
	pthread_mutex_lock(&c->mu);
	c->ndropped++;
	snprintf(c->dropped, sizeof c->dropped, "%s", what);
	pthread_mutex_unlock(&c->mu);
}

static void cl_on_dropped(eng_session *s, int kind, const char *why, const char *id)
{
	mcp_client *c = s->proto_data;
	char what[300];
	if (kind == ENG_DROP_UNMATCHED) {
		char *end = NULL;
		long long n = id ? strtoll(id, &end, 10) : 0;
		/* An integer id this client sent: a late answer (to a call
		 * cancelled or timed out), which is no fault of the server. */
		if (id && end && !*end && n >= 1 && n <= atomic_load(&c->max_sent_id))
			return;
		if (id)
			snprintf(what, sizeof what,
				 "the server answered under id %.60s, which this client never sent", id);
		else
			snprintf(what, sizeof what, "the server sent an answer without an id");
	} else if (kind == ENG_DROP_TOOLONG) {
		snprintf(what, sizeof what,
			 "the server sent a message larger than the limit of %zu bytes "
			 "(mcp_client_set_max_message); it was dropped",
			 c->max_message);
	} else if (why && strncmp(why, "Parse error", 11) == 0) {
		snprintf(what, sizeof what, "the server sent invalid JSON (%.200s); it was dropped",
			 why);
	} else {
		snprintf(what, sizeof what,
			 "the server sent an invalid JSON-RPC message (%.200s); it was dropped",
			 why ? why : "?");
	}
	note_dropped(c, what);
}

static const eng_proto client_proto = {
	.on_request = cl_on_request,
	.on_notification = cl_on_notification,
	.batches_allowed = cl_batches,
	.cancel_notification = cl_cancel_notification,
	.on_free = cl_on_free,
	.raw_route = NULL,
	.on_dropped = cl_on_dropped,
};

/* ---- a spawned server ------------------------------------------------------------ */

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

/* Waits up to `ms` for the child to exit and reaps it: 1 when reaped. */
static int reap_within(mcp_client *c, int ms)
{
	if (atomic_load(&c->reaped))
		return 1;
	int fd = pidfd_of(c->pid);
	int64_t deadline = eng_now_ns() + (int64_t)ms * ENG_NS_PER_MS;
	for (;;) {
		int st;
		pid_t r = waitpid(c->pid, &st, WNOHANG);
		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			/* ECHILD: the application reaped it (a SIGCHLD
			 * handler of its own); it is gone all the same. */
			pthread_mutex_lock(&c->mu);
			c->wait_status = r == c->pid ? st : -1;
			pthread_mutex_unlock(&c->mu);
			atomic_store(&c->reaped, 1);
			if (fd >= 0)
				close(fd);
			return 1;
		}
		int64_t left = (deadline - eng_now_ns()) / ENG_NS_PER_MS;
		if (left <= 0)
			break;
		if (fd >= 0) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			poll(&p, 1, left > 100 ? 100 : (int)left);
		} else {
			usleep(2000);
		}
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static void describe_exit(mcp_client *c, char *buf, size_t sz)
{
	int st = c->wait_status;
	if (st < 0)
		snprintf(buf, sz, "the server closed the connection and exited");
	else if (WIFEXITED(st))
		snprintf(buf, sz, "the server exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sz, "the server was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, sz, "the server closed the connection");
}

/* End of input for the child, then SIGTERM, then SIGKILL to its group,
 * each after its grace; always reaped.  On the reader thread, after the
 * session's shutdown. */
static void stop_child(mcp_client *c)
{
	if (c->pid <= 0)
		return;
	if (c->to_child >= 0) {
		close(c->to_child);
		c->to_child = -1;
	}
	if (!reap_within(c, c->eof_to_term_ms)) {
		kill(-c->pid, SIGTERM);
		if (!reap_within(c, c->term_to_kill_ms)) {
			kill(-c->pid, SIGKILL);
			reap_within(c, 60000);
		}
	}
	/* Whatever it left in its group (a shell's children) goes too: the
	 * group must not outlive the connection. */
	kill(-c->pid, SIGKILL);
	if (c->from_child >= 0) {
		close(c->from_child);
		c->from_child = -1;
	}
}

/* The fd transport, with the child's exit noted at end of input so that
 * the failed calls can say why. */
typedef struct child_tp {
	tp_conn base;
	tp_conn *inner;
	mcp_client *c;
} child_tp;

/* The connection to the child broke (`what` it did): its exit, when it
 * has exited within 100 ms, is the reason; a server that closes a pipe
 * usually dies right after (a loaded machine can take tens of
 * milliseconds to finish the exit), and the calls failing now say so. */
static void note_child_end(child_tp *ct, const char *what)
{
	if (atomic_load(&ct->c->closing))
		return;
	char why[200];
	if (reap_within(ct->c, 100))
		describe_exit(ct->c, why, sizeof why);
	else
		snprintf(why, sizeof why, "%s", what);
	set_end_reason(ct->c, why);
}

static int ctp_recv(tp_conn *t, const char **line, size_t *len)
{
	child_tp *ct = (child_tp *)t;
	ct->inner->before_wait = t->before_wait;
	ct->inner->before_wait_arg = t->before_wait_arg;
	int rc = ct->inner->ops->recv(ct->inner, line, len);
	if (rc == TP_EOF || rc == TP_ERROR)
		note_child_end(ct, "the server closed its output");
	return rc;
}

static int ctp_send(tp_conn *t, const struct iovec *iov, int n, const _Atomic int64_t *dl)
{
	child_tp *ct = (child_tp *)t;
	int rc = ct->inner->ops->send(ct->inner, iov, n, dl);
	if (rc == -EPIPE)
		note_child_end(ct, "the server closed its input");
	return rc;
}

static ssize_t ctp_try_send(tp_conn *t, const char *data, size_t len)
{
	child_tp *ct = (child_tp *)t;
	ssize_t rc = ct->inner->ops->try_send(ct->inner, data, len);
	if (rc == -EPIPE)
		note_child_end(ct, "the server closed its input");
	return rc;
}

static void ctp_wake(tp_conn *t)
{
	child_tp *ct = (child_tp *)t;
	ct->inner->ops->wake(ct->inner);
}

static void ctp_close_output(tp_conn *t)
{
	child_tp *ct = (child_tp *)t;
	ct->inner->ops->close_output(ct->inner);
}

static void ctp_free(tp_conn *t)
{
	child_tp *ct = (child_tp *)t;
	ct->inner->ops->free(ct->inner);
	free(ct);
}

static const struct tp_ops child_ops = {
	.recv = ctp_recv,
	.send = ctp_send,
	.try_send = ctp_try_send,
	.wake = ctp_wake,
	.close_output = ctp_close_output,
	.free = ctp_free,
};

/* ---- connecting ------------------------------------------------------------------- */

static json_object *build_caps(mcp_client *c)
{
	json_object *caps = json_object_new_object();
	if (c->roots_fn || json_object_array_length(c->roots) > 0) {
		json_object *r = json_object_new_object();
		eng_obj_add(r, "listChanged", json_object_new_boolean(1));
		eng_obj_add(caps, "roots", r);
	}
	if (c->sampling_fn)
		eng_obj_add(caps, "sampling", json_object_new_object());
	if (c->elicit_fn) {
		json_object *e = json_object_new_object();
		if (c->elicit_modes & MCP_ELICIT_FORM)
			eng_obj_add(e, "form", json_object_new_object());
		if (c->elicit_modes & MCP_ELICIT_URL)
			eng_obj_add(e, "url", json_object_new_object());
		eng_obj_add(caps, "elicitation", e);
	}
	return caps;
}

static void *reader_main(void *arg)
{
	mcp_client *c = arg;
	eng_session_run(c->es);
	set_end_reason(c, "the server closed the connection");
	atomic_store(&c->state, ST_CLOSED);
	stop_child(c);
	return NULL;
}

/* The session and the pool for transport `tp` (taken); the reader thread
 * for a reader transport.  MCP_OK or an error (tp freed). */
static int open_session(mcp_client *c, tp_conn *tp, int push)
{
	if (eng_pool_start(&c->pool, c->workers, 10000, 0) != MCP_OK) {
		tp->ops->free(tp);
		set_error(c, "cannot start the worker threads%s%s", NULL, NULL);
		return MCP_ESYS;
	}
	c->pool_started = 1;
	eng_limits lim = {
		.max_message = c->max_message,
		.max_depth = 128,
		.max_pending = (size_t)c->max_calls + 64,
		.grace_ms = c->grace_ms,
		.push = push,
		/* A server's garbage is dropped and counted, never answered
		 * with an "id": null error the schemas do not allow. */
		.drop_invalid = 1,
	};
	c->es = eng_session_new(tp, &c->pool, &c->stats, &lim, &client_proto, c);
	if (!c->es) {
		tp->ops->free(tp);
		set_error(c, "out of memory%s%s", NULL, NULL);
		return MCP_ENOMEM;
	}
	if (!push) {
		if (tp_thread_create(&c->reader, NULL, reader_main, c) != 0) {
			set_error(c, "cannot start the reader thread%s%s", NULL, NULL);
			return MCP_ESYS;
		}
		c->reader_started = 1;
	}
	return MCP_OK;
}

/* A request of the handshake, waited for up to the connect timeout. */
static int handshake_request(mcp_client *c, const char *method, json_object *params,
			     json_object **out)
{
	mcp_call *call = mcp_call_new(c, method, params);
	json_object_put(params);
	if (!call)
		return MCP_ENOMEM;
	call->handshake = 1;
	atomic_store(&c->hs_http_status, 0);
	int rc = start_call(call);
	if (rc == MCP_OK) {
		/* One deadline for the whole handshake, however many requests
		 * it takes (server/discover, then initialize). */
		int64_t left = (c->connect_deadline - eng_now_ns()) / ENG_NS_PER_MS;
		rc = mcp_call_wait(call, left > 0 ? left : 0, out);
		if (rc == MCP_ETIMEDOUT) {
			char why[120];
			snprintf(why, sizeof why,
				 "no answer within the connect timeout of %d ms "
				 "(mcp_client_set_connect_timeout_ms)",
				 c->connect_ms);
			call_abort(call, MCP_ETIMEDOUT, "timeout", why);
			rc = mcp_call_wait(call, 0, out);
		}
	}
	if (rc != MCP_OK && rc != MCP_EREMOTE)
		set_error(c, "%s: %s", method, mcp_call_error(call));
	mcp_call_free(call);
	return rc;
}

static int try_modern(mcp_client *c)
{
	c->modern = 1;
#ifdef HAVE_CURL
	if (c->http)
		tp_httpc_set_protocol_version(c->http, api_revision_names[API_REV_2026_07_28]);
#endif
	json_object *res = NULL;
	int rc = handshake_request(c, "server/discover", NULL, &res);
	if (rc == MCP_OK) {
		json_object *vs = api_get(res, "supportedVersions");
		int ok = 0;
		for (size_t i = 0; json_object_is_type(vs, json_type_array) &&
				   i < json_object_array_length(vs);
		     i++) {
			json_object *v = json_object_array_get_idx(vs, i);
			ok |= json_object_is_type(v, json_type_string) &&
			      strcmp(json_object_get_string(v),
				     api_revision_names[API_REV_2026_07_28]) == 0;
		}
		if (ok) {
			c->server_caps = json_object_get(api_get(res, "capabilities"));
			c->server_info = json_object_get(
				api_get(api_get(res, "_meta"), API_META_SERVER));
			const char *ins = str_of(res, "instructions");
			c->instructions = ins ? strdup(ins) : NULL;
			c->protocol = api_revision_names[API_REV_2026_07_28];
		} else {
			rc = MCP_EPROTO;
			set_error(c, "server/discover: the server does not offer %s%s",
				  api_revision_names[API_REV_2026_07_28], NULL);
		}
	} else if (rc == MCP_EREMOTE) {
		set_error(c, "server/discover was refused: %s%s",
			  res ? json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN) : "?",
			  NULL);
	}
	json_object_put(res);
	if (rc != MCP_OK)
		c->modern = 0;
	return rc;
}

static int try_legacy(mcp_client *c)
{
	c->modern = 0;
#ifdef HAVE_CURL
	if (c->http)
		tp_httpc_set_protocol_version(c->http, NULL);
#endif
	const char *offer = c->version_asked ? c->version_asked : LEGACY_LATEST;
	json_object *p = json_object_new_object();
	eng_obj_add(p, "protocolVersion", json_object_new_string(offer));
	json_object *caps = NULL;
	json_object_deep_copy(c->client_caps, &caps, NULL);
	eng_obj_add(p, "capabilities", caps ? caps : json_object_new_object());
	json_object *info = json_object_new_object();
	eng_obj_add(info, "name", json_object_new_string(c->name));
	eng_obj_add(info, "version", json_object_new_string(c->version));
	eng_obj_add(p, "clientInfo", info);
	json_object *res = NULL;
	int rc = handshake_request(c, "initialize", p, &res);
	if (rc == MCP_EREMOTE) {
		char why[300];
		error_text(res, why, sizeof why);
		set_error(c, "initialize was refused: %s%s", why, NULL);
	}
	if (rc == MCP_OK) {
		/* The server chooses: any revision initialize negotiates is
		 * taken, older than the offer included (a 2024-11-05 server
		 * answers that whatever it is offered). */
		const char *v = str_of(res, "protocolVersion");
		int idx = v ? api_revision_index(v) : -1;
		if (idx < 0 || idx >= API_REV_LEGACY_COUNT) {
			rc = MCP_EPROTO;
			set_error(c, "initialize: the server chose protocol version %s, which this "
				     "client does not speak%s",
				  v ? v : "(none)", NULL);
		} else {
			c->protocol = api_revision_names[idx];
			c->server_caps = json_object_get(api_get(res, "capabilities"));
			c->server_info = json_object_get(api_get(res, "serverInfo"));
			const char *ins = str_of(res, "instructions");
			c->instructions = ins ? strdup(ins) : NULL;
#ifdef HAVE_CURL
			if (c->http)
				tp_httpc_set_protocol_version(c->http, c->protocol);
#endif
			rc = send_message(c, notification("notifications/initialized", NULL),
					  "notifications/initialized");
#ifdef HAVE_CURL
			if (rc == MCP_OK && c->http)
				tp_httpc_open_stream(c->http);
#endif
		}
	}
	json_object_put(res);
	return rc;
}

static int handshake(mcp_client *c)
{
	int rc;
	if (c->era == MCP_ERA_LEGACY) {
		rc = try_legacy(c);
	} else if (c->era == MCP_ERA_MODERN) {
		rc = try_modern(c);
	} else {
		/* Offered 2026-07-28 first; anything but an answer that
		 * offers it (an error, a refusal) means a legacy server. */
		rc = try_modern(c);
		if (rc == MCP_EREMOTE || rc == MCP_EPROTO) {
			pthread_mutex_lock(&c->mu);
			c->error[0] = 0;
			pthread_mutex_unlock(&c->mu);
			rc = try_legacy(c);
		}
	}
	if (rc == MCP_OK) {
		static const int kinds[] = { [TK_STDIO] = MCP_TRANSPORT_STDIO,
					     [TK_FDS] = MCP_TRANSPORT_FDS,
					     [TK_MEMORY] = MCP_TRANSPORT_MEMORY,
					     [TK_HTTP] = MCP_TRANSPORT_STREAMABLE_HTTP };
		atomic_store(&c->transport, c->sse ? MCP_TRANSPORT_HTTP_SSE : kinds[c->kind]);
		int expect = ST_CONNECTING;
		if (!atomic_compare_exchange_strong(&c->state, &expect, ST_READY)) {
			atomic_store(&c->transport, MCP_TRANSPORT_NONE);
			rc = MCP_ECLOSED;
		}
	}
	return rc;
}

/* The common start of every connect: state and the capabilities. */
static int begin_connect(mcp_client *c)
{
	if (!c)
		return MCP_EINVAL;
	int expect = ST_NEW;
	if (!atomic_compare_exchange_strong(&c->state, &expect, ST_CONNECTING))
		return MCP_ESTATE;
	c->error[0] = 0;
	c->connect_deadline = eng_now_ns() + (int64_t)c->connect_ms * ENG_NS_PER_MS;
	c->client_caps = build_caps(c);
	return c->client_caps ? MCP_OK : MCP_ENOMEM;
}

static int connect_failed(mcp_client *c, int rc)
{
	mcp_client_close(c);
	atomic_store(&c->state, ST_CLOSED);
	return rc;
}

MCP_EXTERN int mcp_client_connect_stdio(mcp_client *c, char *const argv[], char *const envp[],
					const char *cwd)
{
	if (!c || !argv || !argv[0])
		return MCP_EINVAL;
	int rc = begin_connect(c);
	if (rc)
		return rc;
	c->kind = TK_STDIO;
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		set_error(c, "pipe: %s%s", strerror(errno), NULL);
		if (in[0] >= 0) {
			close(in[0]);
			close(in[1]);
		}
		return connect_failed(c, MCP_ESYS);
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
	if (cwd)
		posix_spawn_file_actions_addchdir_np(&fa, cwd);
	/* Its own process group (so the close can signal everything it
	 * started), default signal dispositions and an empty mask: the host
	 * may ignore SIGPIPE or block signals, which the server must not
	 * inherit. */
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	pid_t pid;
	int err = posix_spawnp(&pid, argv[0], &fa, &at, argv, envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(in[0]);
	close(out[1]);
	if (err) {
		close(in[1]);
		close(out[0]);
		set_error(c, "cannot start %s: %s", argv[0], strerror(err));
		return connect_failed(c, MCP_ESYS);
	}
	c->pid = pid;
	c->to_child = in[1];
	c->from_child = out[0];
	tp_conn *inner = tp_fd_new(c->from_child, c->to_child, -1, c->max_message);
	child_tp *ct = inner ? calloc(1, sizeof *ct) : NULL;
	if (!ct) {
		if (inner)
			inner->ops->free(inner);
		stop_child(c);
		set_error(c, "out of memory%s%s", NULL, NULL);
		return connect_failed(c, MCP_ENOMEM);
	}
	ct->base.ops = &child_ops;
	ct->base.max_message = c->max_message;
	ct->base.announces_wait = inner->announces_wait;
	ct->inner = inner;
	ct->c = c;
	rc = open_session(c, &ct->base, 0);
	if (rc == MCP_OK)
		rc = handshake(c);
	return rc == MCP_OK ? MCP_OK : connect_failed(c, rc);
}

MCP_EXTERN int mcp_client_connect_fds(mcp_client *c, int in_fd, int out_fd)
{
	if (!c || in_fd < 0 || out_fd < 0)
		return MCP_EINVAL;
	int rc = begin_connect(c);
	if (rc)
		return rc;
	c->kind = TK_FDS;
	tp_conn *tp = tp_fd_new(in_fd, out_fd, -1, c->max_message);
	if (!tp)
		return connect_failed(c, MCP_ENOMEM);
	rc = open_session(c, tp, 0);
	if (rc == MCP_OK)
		rc = handshake(c);
	return rc == MCP_OK ? MCP_OK : connect_failed(c, rc);
}

MCP_EXTERN int mcp_client_connect_memory(mcp_client *c, mcp_memconn *conn)
{
	if (!c || !conn)
		return MCP_EINVAL;
	int rc = begin_connect(c);
	if (rc)
		return rc;
	c->kind = TK_MEMORY;
	c->mem = conn;
	tp_conn *tp = tp_mem_client_conn(api_memconn_mem(conn));
	tp->max_message = c->max_message;
	rc = open_session(c, tp, 0);
	if (rc == MCP_OK)
		rc = handshake(c);
	return rc == MCP_OK ? MCP_OK : connect_failed(c, rc);
}

#ifdef HAVE_CURL
static void http_on_message(void *arg, const char *route, const char *data, size_t len)
{
	mcp_client *c = arg;
	eng_session_feed(c->es, data, len, NULL, 0, route, NULL);
}

/* Whether the request of `route` still waits for its answer. */
static int http_route_waiting(void *arg, const char *route)
{
	mcp_client *c = arg;
	int64_t id;
	mcp_call *call = call_of_route(c, route, &id);
	if (!call)
		return 0;
	/* The request in flight, also in the moment between its POST and
	 * its publication as call->pend (send_request): a refusal (a 401 at
	 * once) can come back before it, and must fail the call, not leave
	 * it waiting for its timeout.  Not once its answer came: an
	 * input_required answer leaves the call live with no request in
	 * flight until a worker has answered the round and sent the retry,
	 * and the end of the response that carried it must not read as a
	 * response without the answer. */
	pthread_mutex_lock(&call->base.token.mu);
	int w = call->pend ? call->pend->id == id
			   : call->req_id == id && call->answered_id != id &&
				     atomic_load(&call->outcome) == 0;
	pthread_mutex_unlock(&call->base.token.mu);
	eng_call_unref(&call->base);
	return w;
}

static void http_on_failure(void *arg, const char *route, int kind, int status, const char *why)
{
	mcp_client *c = arg;
	if (!http_route_waiting(arg, route))
		return;
	int64_t id;
	mcp_call *call = call_of_route(c, route, &id);
	if (!call)
		return;
	char text[400];
	if (kind == TP_HTTPC_TOOBIG)
		note_dropped(c, why);
	if (kind == TP_HTTPC_STATUS && call->handshake)
		atomic_store(&c->hs_http_status, status);
	if (kind == TP_HTTPC_CLOSED) {
		snprintf(text, sizeof text, "connection closed: %s", why);
		finish(call, MCP_ECLOSED, NULL, text);
	} else if (kind == TP_HTTPC_STATUS) {
		/* The server refused the request with its HTTP status and no
		 * JSON-RPC answer: an error of the server, as a JSON-RPC error
		 * object that carries the status. */
		json_object *err = json_object_new_object();
		eng_obj_add(err, "code", json_object_new_int(MCP_JSONRPC_INTERNAL_ERROR));
		eng_obj_add(err, "message", json_object_new_string(why));
		json_object *d = json_object_new_object();
		eng_obj_add(d, "httpStatus", json_object_new_int(status));
		eng_obj_add(err, "data", d);
		snprintf(text, sizeof text, "the server answered %s", why);
		finish(call, MCP_EREMOTE, err, text);
	} else {
		/* A response that broke the protocol: too large, or without the
		 * answer (what it held instead was dropped and is noted). */
		finish(call, MCP_EPROTO, NULL, why);
	}
	eng_call_unref(&call->base);
}

/* HTTP+SSE: the event stream ended, and with it the connection.  As
 * when a reader sees end of input: every waiting call fails with the
 * reason, and nothing more can be sent. */
static void http_on_closed(void *arg, const char *why)
{
	mcp_client *c = arg;
	set_end_reason(c, why);
	atomic_store(&c->state, ST_CLOSED);
	eng_session_close(c->es, MCP_CANCEL_TRANSPORT_CLOSED);
}

/* Switches the connection to HTTP+SSE: the event stream is opened and
 * its endpoint awaited within the connect deadline.  MCP_OK, or the code
 * the connect fails with (the reason in c->error, after `before`). */
static int start_sse(mcp_client *c, const char *before)
{
	char err[400];
	int rc = tp_httpc_start_legacy(c->http, c->connect_deadline, err, sizeof err);
	if (rc == 0) {
		c->sse = 1;
		return MCP_OK;
	}
	char why[460];
	if (rc == -ETIMEDOUT)
		snprintf(why, sizeof why,
			 "HTTP+SSE: no endpoint event within the connect timeout of %d ms "
			 "(mcp_client_set_connect_timeout_ms)",
			 c->connect_ms);
	else
		snprintf(why, sizeof why, "HTTP+SSE: %s", err);
	pthread_mutex_lock(&c->mu);
	if (before && before[0])
		snprintf(c->error, sizeof c->error, "%.250s; then %.240s", before, why);
	else
		snprintf(c->error, sizeof c->error, "%s", why);
	pthread_mutex_unlock(&c->mu);
	return rc == -ETIMEDOUT ? MCP_ETIMEDOUT : rc == -EPROTO ? MCP_EPROTO : MCP_ECLOSED;
}

/* Whether a Streamable HTTP handshake that failed with `rc` calls for
 * the fallback: its last request was answered 400, 404 or 405 without a
 * JSON-RPC answer, which is how a server of 2024-11-05 turns away a POST
 * to its event stream's URL.  Nothing else does: a refused connection, a
 * timeout or 401/403 mean the same over either transport. */
static int wants_sse_fallback(mcp_client *c, int rc)
{
	int st = atomic_load(&c->hs_http_status);
	return rc == MCP_EREMOTE && atomic_load(&c->state) == ST_CONNECTING &&
	       (st == 400 || st == 404 || st == 405);
}
#endif

MCP_EXTERN int mcp_client_connect_http(mcp_client *c, const char *url)
{
	if (!c || !url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return MCP_EINVAL;
#ifdef HAVE_CURL
	int rc = begin_connect(c);
	if (rc)
		return rc;
	c->kind = TK_HTTP;
	tp_httpc_hooks hooks = {
		.on_message = http_on_message,
		.route_waiting = http_route_waiting,
		.on_failure = http_on_failure,
		.on_closed = http_on_closed,
		.arg = c,
	};
	char err[256];
	c->http = tp_httpc_new(url, &hooks, c->max_message, err, sizeof err);
	if (!c->http) {
		set_error(c, "%s%s", err, NULL);
		return connect_failed(c, MCP_ESYS);
	}
	if (c->bearer)
		tp_httpc_set_bearer(c->http, c->bearer);
	if (c->oauth && client_oauth_attach(c->oauth, c, c->http, url, err, sizeof err)) {
		set_error(c, "%s%s", err, NULL);
		return connect_failed(c, MCP_ESYS);
	}
	rc = open_session(c, tp_httpc_conn(c->http), 1);
	if (rc == MCP_OK && c->http_transport == MCP_HTTP_SSE)
		rc = start_sse(c, NULL);
	if (rc == MCP_OK)
		rc = handshake(c);
	if (rc != MCP_OK && c->http_transport == MCP_HTTP_AUTO && wants_sse_fallback(c, rc)) {
		/* Same session and calls table: only the transport under them
		 * changes, so the handshake is simply done again. */
		char first[300];
		pthread_mutex_lock(&c->mu);
		snprintf(first, sizeof first, "Streamable HTTP: %.260s", c->error);
		c->error[0] = 0;
		pthread_mutex_unlock(&c->mu);
		rc = start_sse(c, first);
		if (rc == MCP_OK)
			rc = handshake(c);
	}
	return rc == MCP_OK ? MCP_OK : connect_failed(c, rc);
#else
	set_error(c, "libmcp was built without libcurl: no HTTP client%s%s", NULL, NULL);
	return MCP_ENOTSUP;
#endif
}

/* ---- closing ------------------------------------------------------------------------- */

/* Every call still in flight, cancelled towards the server and failed. */
static void abort_calls(mcp_client *c)
{
	for (;;) {
		mcp_call *call = NULL;
		pthread_mutex_lock(&c->mu);
		for (size_t i = 0; !call && c->calls.slots && i < c->calls.nslots; i++)
			if (c->calls.slots[i]) {
				call = (mcp_call *)((char *)c->calls.slots[i] - offsetof(mcp_call, node));
				eng_call_ref(&call->base);
			}
		pthread_mutex_unlock(&c->mu);
		if (!call)
			return;
		call_abort(call, MCP_ECLOSED, "the client is closing", "connection closed: the client was closed");
		/* A call whose outcome was decided elsewhere leaves the table
		 * in complete(), which runs right after the decision: make
		 * sure it is gone before looking again. */
		call_unlist(call);
		eng_call_unref(&call->base);
	}
}

MCP_EXTERN void mcp_client_close(mcp_client *c)
{
	if (!c)
		return;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&c->closing, &expect, 1))
		return;
	set_end_reason(c, "the client was closed");
	if (c->es && atomic_load(&c->state) != ST_CLOSED)
		abort_calls(c);
	atomic_store(&c->state, ST_CLOSED);
	if (c->es) {
		if (c->kind == TK_HTTP) {
			eng_session_close(c->es, MCP_CANCEL_SHUTDOWN);
			while (!eng_session_close_poll(c->es, eng_now_ns()))
				usleep(1000);
		} else {
			eng_session_trigger(c->es, MCP_CANCEL_SHUTDOWN);
		}
	}
	if (c->reader_started) {
		pthread_join(c->reader, NULL);
		c->reader_started = 0;
	} else {
		stop_child(c);
	}
#ifdef HAVE_CURL
	/* The DELETE of the session gets the grace period, 2 s at most. */
	if (c->http)
		tp_httpc_close(c->http, c->grace_ms < 2000 ? c->grace_ms : 2000);
#endif
	/* Nothing may call the application from here on. */
	atomic_store(&c->closing, 2);
	if (c->pool_started) {
		eng_pool_stop(&c->pool, eng_now_ns() + 50 * ENG_NS_PER_MS);
		c->pool_started = c->pool.detached > 0 ? 2 : 0;
	}
}

MCP_EXTERN void mcp_client_free(mcp_client *c)
{
	if (!c)
		return;
	mcp_client_close(c);
	if (atomic_load(&c->stats.abandoned) > 0 || c->pool_started == 2) {
		/* A handler abandoned at the deadline may still run and reach
		 * the client: keep everything it can reach. */
		return;
	}
	if (c->es)
		eng_session_unref(c->es);
#ifdef HAVE_CURL
	if (c->http)
		tp_httpc_free(c->http);
#endif
	eng_idtable_destroy(&c->calls);
	json_object_put(c->roots);
	json_object_put(c->tool_headers);
	json_object_put(c->server_caps);
	json_object_put(c->server_info);
	json_object_put(c->client_caps);
	free(c->instructions);
	free(c->name);
	free(c->version);
	free(c->version_asked);
	free(c->bearer);
	client_oauth_free(c->oauth);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* ---- state and counters ----------------------------------------------------------- */

MCP_EXTERN int mcp_client_add_root(mcp_client *c, const char *uri, const char *name)
{
	if (!c || !uri || !*uri)
		return MCP_EINVAL;
	json_object *r = json_object_new_object();
	if (!r)
		return MCP_ENOMEM;
	eng_obj_add(r, "uri", json_object_new_string(uri));
	if (name)
		eng_obj_add(r, "name", json_object_new_string(name));
	pthread_mutex_lock(&c->mu);
	int rc = eng_arr_add(c->roots, r) ? MCP_ENOMEM : MCP_OK;
	pthread_mutex_unlock(&c->mu);
	if (rc == MCP_OK && atomic_load(&c->state) == ST_READY && !c->modern &&
	    api_get(c->client_caps, "roots"))
		send_message(c, notification("notifications/roots/list_changed", NULL),
			     "notifications/roots/list_changed");
	return rc;
}

MCP_EXTERN int mcp_client_connected(mcp_client *c)
{
	return c && atomic_load(&c->state) == ST_READY && !atomic_load(&c->closing) && c->es &&
	       !atomic_load(&c->es->closed);
}

MCP_EXTERN const char *mcp_client_error(mcp_client *c)
{
	return c ? c->error : "";
}

MCP_EXTERN uint64_t mcp_client_last_dropped(mcp_client *c, char *buf, size_t bufsz)
{
	if (buf && bufsz)
		buf[0] = 0;
	return c ? counted_reason(c, &c->ndropped, c->dropped, buf, bufsz) : 0;
}

MCP_EXTERN const char *mcp_client_protocol_version(mcp_client *c)
{
	return c ? c->protocol : NULL;
}

MCP_EXTERN mcp_transport_kind mcp_client_transport(mcp_client *c)
{
	return c ? (mcp_transport_kind)atomic_load(&c->transport) : MCP_TRANSPORT_NONE;
}

MCP_EXTERN json_object *mcp_client_server_capabilities(mcp_client *c)
{
	return c ? c->server_caps : NULL;
}

MCP_EXTERN json_object *mcp_client_server_info(mcp_client *c)
{
	return c ? c->server_info : NULL;
}

MCP_EXTERN const char *mcp_client_server_instructions(mcp_client *c)
{
	return c ? c->instructions : NULL;
}

MCP_EXTERN int mcp_client_server_status(mcp_client *c, int *status)
{
	if (!c || !status || c->kind != TK_STDIO)
		return MCP_EINVAL;
	if (!atomic_load(&c->reaped))
		return MCP_ESTATE;
	pthread_mutex_lock(&c->mu);
	*status = c->wait_status;
	pthread_mutex_unlock(&c->mu);
	return MCP_OK;
}

MCP_EXTERN char *mcp_client_stats_json(mcp_client *c)
{
	if (!c)
		return NULL;
	char *out = NULL;
	int n = asprintf(&out,
			 "{\"calls_started\":%llu,\"calls_ok\":%llu,\"calls_remote_error\":%llu,"
			 "\"calls_failed\":%llu,\"calls_cancelled\":%llu,"
			 "\"answers_unmatched\":%llu,\"answers_late\":%llu,"
			 "\"handlers_run\":%llu,\"handlers_abandoned\":%llu,"
			 "\"server_requests\":%llu,\"invalid_dropped\":%llu}",
			 (unsigned long long)atomic_load(&c->calls_started),
			 (unsigned long long)atomic_load(&c->calls_ok),
			 (unsigned long long)atomic_load(&c->calls_remote),
			 (unsigned long long)atomic_load(&c->calls_failed),
			 (unsigned long long)atomic_load(&c->calls_cancelled),
			 (unsigned long long)atomic_load(&c->stats.answers_unmatched),
			 (unsigned long long)atomic_load(&c->late_dropped),
			 (unsigned long long)atomic_load(&c->handlers_run),
			 (unsigned long long)atomic_load(&c->stats.abandoned),
			 (unsigned long long)atomic_load(&c->stats.started),
			 (unsigned long long)atomic_load(&c->stats.rejected));
	return n < 0 ? NULL : out;
}
