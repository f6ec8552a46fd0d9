/*
 * http.c - the MCP Streamable HTTP transport on libmicrohttpd: one endpoint
 * for POST, GET and DELETE, sessions keyed by Mcp-Session-Id, each served
 * by its own engine session (reader thread) on the server's shared pool.
 *
 * Each POSTed request gets a stream: an SSE response on which the
 * request's progress, logs and server-to-client requests travel before its
 * answer, or a JSON body holding just the answer.  Everything not tied to a
 * request goes to the session's standalone GET stream.  A connection whose
 * stream has nothing to send is suspended, never polled.
 *
 * Resumability: every SSE event carries the id "S-N" (S the stream's number
 * in its session, N its sequence in the stream), and each SSE stream keeps
 * an event log that outlives the HTTP connection carrying it.  When that
 * connection ends (the client went away, or a handler called
 * mcp_ctx_close_stream), the stream stays in the session and goes on
 * logging; a GET with Last-Event-ID "S-N" re-attaches it and replays what
 * followed event N, then continues live.  The log keeps REPLAY_KEEP bytes of
 * delivered events and at most BACKLOG_MAX bytes in all; finished streams
 * are kept for replay up to RETAIN_DONE per session.  Sessions that
 * negotiated 2025-11-25 or later get a priming event (id, retry, empty data)
 * first on every new SSE stream.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sodium.h>

#include "api/mhd.h"
#include "api/internal.h"

#define REPLAY_KEEP (256u << 10)   /* delivered SSE bytes kept per stream */
#define BACKLOG_MAX (4u << 20)     /* SSE bytes kept per stream in all */
#define RETAIN_DONE 16             /* finished SSE streams kept per session */
#define RETRY_MS 1000              /* the reconnection delay advertised */

typedef struct http_sess http_sess;

/* One SSE event as written on the wire, in a stream's log. */
typedef struct sse_ev {
	struct sse_ev *next;
	uint64_t seq;
	size_t len;
	char text[];
} sse_ev;

/* An outbound stream: one POST's answer (SSE or JSON) or the session's
 * standalone GET stream.  Shared by the session and the MHD response
 * attached to it (at most one at a time); freed when all let go.  Every
 * field is under hs->mu. */
typedef struct stream {
	struct stream *next;        /* hs->streams */
	int refs;
	char *route;                /* request id key; NULL for the GET stream */
	unsigned num;               /* S of the event ids "S-N" */
	int sse;
	/* JSON: the answer. */
	char *buf;
	size_t len, cap;
	int gone;                   /* the JSON client disconnected */
	int no_ids;                 /* 2026-07-28: events carry no ids */
	/* SSE: the event log, oldest first; `cur` is the next event to send
	 * (NULL: all sent), `cur_off` the bytes of it already sent. */
	sse_ev *head, *tail, *cur;
	size_t cur_off, kept;
	uint64_t next_seq;
	/* A handler ended this connection: the events logged until then
	 * (seq <= hang_upto) go out, then `hang_text` ("retry: N"), then the
	 * end of the response; the stream itself lives on. */
	int hangup;
	int64_t hang_upto;
	char hang_text[40];
	size_t hang_len, hang_off;
	int finished;               /* nothing more will be added */
	int suspended;              /* the attached connection is suspended */
	struct MHD_Connection *conn; /* the attached connection, or NULL */
	unsigned gen;               /* attachments so far */
	http_sess *hs;
} stream;

/* One SSE response reading a stream: the attachment `gen` of `st`.  A
 * response whose stream was re-attached since sends nothing more. */
typedef struct sse_att {
	stream *st;
	unsigned gen;
} sse_att;

struct http_sess {
	tp_conn tp;                 /* the engine's view; first member */
	struct http_server *hsrv;
	http_sess *next;            /* hsrv->sessions, under hsrv->mu */
	int refs;                   /* under hsrv->mu */
	char id[33];
	pthread_mutex_t mu;         /* inbound queue, streams, last_active_ns;
				       taken after hsrv->mu, never before */
	pthread_cond_t cv;
	char **in;                  /* inbound lines */
	size_t nin, capin, headin;
	int woken, in_closed, out_closed;
	char *current;
	stream *streams;
	stream *standalone;
	int64_t last_active_ns;
	int ended;                  /* its reader returned */
	int deleted;                /* DELETE or expiry asked it to end */
	pthread_t thread;
	int joined;
	unsigned stream_no;         /* numbers handed out (under mu) */
	int rev;                    /* negotiated revision index; -1 unknown */
	int ephemeral;              /* stateless mode: serves one request */
	int preset_rev;             /* stateless: served as initialized at this
				       revision; -1 for an initialize */
};

typedef struct http_server {
	mcp_server *srv;
	struct MHD_Daemon *daemon;
	pthread_mutex_t mu;         /* sessions */
	http_sess *sessions;
	size_t nsessions;
	int stopping;
} http_server;

/* Per-request state MHD keeps for us between calls. */
typedef struct http_req {
	char *body;
	size_t len, cap;
	int too_big;
	stream *st;                 /* set while a JSON answer is awaited */
	http_sess *hs;
	int new_session;
	int batch;                  /* a 2025-03-26 batch awaits its answer */
	int modern;                 /* a 2026-07-28 request (no session) */
} http_req;

/* ---- sessions --------------------------------------------------------- */

static void hs_ref(http_sess *hs)
{
	pthread_mutex_lock(&hs->hsrv->mu);
	hs->refs++;
	pthread_mutex_unlock(&hs->hsrv->mu);
}

static void stream_unref_locked(stream *st);

static void hs_unref(http_sess *hs)
{
	http_server *h = hs->hsrv;
	pthread_mutex_lock(&h->mu);
	int last = --hs->refs == 0;
	pthread_mutex_unlock(&h->mu);
	if (!last)
		return;
	/* Every response let go of its session first, so the streams left
	 * hold only the session's reference. */
	pthread_mutex_lock(&hs->mu);
	while (hs->streams) {
		stream *st = hs->streams;
		hs->streams = st->next;
		stream_unref_locked(st);
	}
	if (hs->standalone)
		stream_unref_locked(hs->standalone);
	hs->standalone = NULL;
	pthread_mutex_unlock(&hs->mu);
	for (size_t i = 0; i < hs->nin; i++)
		free(hs->in[(hs->headin + i) % hs->capin]);
	free(hs->in);
	free(hs->current);
	pthread_mutex_destroy(&hs->mu);
	pthread_cond_destroy(&hs->cv);
	free(hs);
}

/* ---- streams ---------------------------------------------------------- */

/* Under hs->mu.  Two references: the session's and the first response's
 * (the SSE response, or the POST waiting for a JSON answer). */
static stream *stream_new(http_sess *hs, const char *route, int sse)
{
	stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	if (route && !(st->route = strdup(route))) {
		free(st);
		return NULL;
	}
	st->sse = sse;
	st->hs = hs;
	st->num = ++hs->stream_no;
	st->next_seq = 1;
	st->refs = 2;
	return st;
}

/* Under hs->mu. */
static void stream_unref_locked(stream *st)
{
	if (--st->refs > 0)
		return;
	while (st->head) {
		sse_ev *e = st->head;
		st->head = e->next;
		free(e);
	}
	free(st->route);
	free(st->buf);
	free(st);
}

/* Wakes the MHD connection waiting on `st`.  Under hs->mu. */
static void stream_kick(stream *st)
{
	if (st->suspended && st->conn) {
		st->suspended = 0;
		MHD_resume_connection(st->conn);
	}
}

static int json_append(stream *st, const char *data, size_t n)
{
	if (st->len + n > st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 4096;
		while (cap < st->len + n)
			cap *= 2;
		char *b = realloc(st->buf, cap);
		if (!b)
			return -1;
		st->buf = b;
		st->cap = cap;
	}
	memcpy(st->buf + st->len, data, n);
	st->len += n;
	return 0;
}

/* Drops the oldest events: delivered ones beyond REPLAY_KEEP, then any
 * beyond BACKLOG_MAX (a client that stays away that long loses the oldest
 * messages rather than the server its memory).  Under hs->mu. */
static void log_trim(stream *st)
{
	for (;;) {
		sse_ev *e = st->head;
		if (!e || e == st->tail)
			return;
		if (e == st->cur) {
			if (st->kept <= BACKLOG_MAX || (st->conn && st->cur_off))
				return;
			st->cur = e->next;
			st->cur_off = 0;
		} else if (st->kept <= REPLAY_KEEP) {
			return;
		}
		st->head = e->next;
		st->kept -= e->len;
		free(e);
	}
}

/* Appends one event to the log: a message (`data`, without its newline),
 * or with data NULL the priming event (an id, the retry delay, empty
 * data).  Under hs->mu. */
static int sse_log(stream *st, const char *data, size_t n)
{
	if (n && data[n - 1] == '\n')
		n--;
	size_t cap = n + 96;
	sse_ev *e = malloc(sizeof *e + cap);
	if (!e)
		return -1;
	e->next = NULL;
	e->seq = data ? st->next_seq++ : 0;
	int k = !data	     ? snprintf(e->text, cap, "id: %u-0\nretry: %d\ndata: ", st->num, RETRY_MS)
		: st->no_ids ? snprintf(e->text, cap, "event: message\ndata: ")
			     : snprintf(e->text, cap, "id: %u-%llu\nevent: message\ndata: ", st->num,
					(unsigned long long)e->seq);
	/* A JSON text never has a raw newline, so one data line suffices. */
	if (data)
		memcpy(e->text + k, data, n);
	memcpy(e->text + k + (data ? n : 0), "\n\n", 2);
	e->len = (size_t)k + (data ? n : 0) + 2;
	if (st->tail)
		st->tail->next = e;
	else
		st->head = e;
	st->tail = e;
	if (!st->cur) {
		st->cur = e;
		st->cur_off = 0;
	}
	st->kept += e->len;
	log_trim(st);
	return 0;
}

/* Unlinks a stream from its session.  Under hs->mu. */
static void stream_detach(http_sess *hs, stream *st)
{
	for (stream **pp = &hs->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			stream_unref_locked(st);
			return;
		}
	if (hs->standalone == st) {
		hs->standalone = NULL;
		stream_unref_locked(st);
	}
}

/* Keeps at most RETAIN_DONE finished, unattached SSE streams for replay,
 * dropping the oldest (the list is newest first).  Under hs->mu. */
static void retain_trim(http_sess *hs)
{
	int n = 0;
	for (stream **pp = &hs->streams; *pp;) {
		stream *st = *pp;
		if (st->sse && st->finished && !st->conn && ++n > RETAIN_DONE) {
			*pp = st->next;
			stream_unref_locked(st);
			continue;
		}
		pp = &st->next;
	}
}

/* The live (unfinished) stream of a request, or NULL.  Under hs->mu. */
static stream *stream_of_route(http_sess *hs, const char *route)
{
	for (stream *s = hs->streams; s; s = s->next)
		if (!s->finished && s->route && strcmp(s->route, route) == 0)
			return s;
	return NULL;
}

/* Whether the session negotiated 2025-11-25 or later (priming events,
 * servers closing streams).  Under hs->mu. */
static int hs_polling(const http_sess *hs)
{
	return hs->rev >= 0 && hs->rev >= mcp_revision_index("2025-11-25");
}

/* ---- the session's transport (the engine's side) ----------------------- */

static int hs_recv(tp_conn *c, const char **line, size_t *len)
{
	http_sess *hs = (http_sess *)c;
	pthread_mutex_lock(&hs->mu);
	free(hs->current);
	hs->current = NULL;
	while (!hs->woken && hs->nin == 0 && !hs->in_closed)
		pthread_cond_wait(&hs->cv, &hs->mu);
	if (hs->woken) {
		pthread_mutex_unlock(&hs->mu);
		return TP_WOKEN;
	}
	if (hs->nin == 0) {
		pthread_mutex_unlock(&hs->mu);
		return TP_EOF;
	}
	char *l = hs->in[hs->headin];
	hs->headin = (hs->headin + 1) % hs->capin;
	hs->nin--;
	hs->current = l;
	pthread_mutex_unlock(&hs->mu);
	*line = l;
	*len = strlen(l);
	return TP_LINE;
}

/* The first answer of a session is the one to initialize: it names the
 * negotiated revision.  Under hs->mu. */
static void note_revision(http_sess *hs, const char *data, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *m = tok ? eng_json_parse_ex(tok, data, (int)len) : NULL;
	json_object *res = NULL, *v = NULL;
	if (json_object_object_get_ex(m, "result", &res) &&
	    json_object_object_get_ex(res, "protocolVersion", &v) &&
	    json_object_is_type(v, json_type_string))
		hs->rev = mcp_revision_index(json_object_get_string(v));
	else
		hs->rev = 0;
	json_object_put(m);
	if (tok)
		json_tokener_free(tok);
}

static int hs_send_routed(tp_conn *c, const tp_out *out, int n,
			  const _Atomic int64_t *deadline_ns)
{
	http_sess *hs = (http_sess *)c;
	(void)deadline_ns;
	pthread_mutex_lock(&hs->mu);
	for (int i = 0; i < n; i++) {
		if (hs->rev < 0 && out[i].is_response)
			note_revision(hs, out[i].data, out[i].len);
		if (hs->ephemeral && out[i].is_response) {
			/* Its one request is answered: the session ends. */
			hs->in_closed = 1;
			pthread_cond_broadcast(&hs->cv);
		}
		stream *st = out[i].route ? stream_of_route(hs, out[i].route) : NULL;
		/* Not tied to a request with a stream: the standalone stream
		 * if the client opened one (attached now or not: it logs for
		 * the next GET), else it has nowhere to go. */
		if (!st && !out[i].is_response)
			st = hs->standalone;
		if (!st || st->finished)
			continue;
		if (!st->sse) {
			/* A JSON answer carries only the answer. */
			if (!out[i].is_response || st->gone)
				continue;
			json_append(st, out[i].data, out[i].len);
			st->finished = 1;
			stream_kick(st);
			stream_detach(hs, st);
			continue;
		}
		sse_log(st, out[i].data, out[i].len);
		if (out[i].is_response && st != hs->standalone) {
			st->finished = 1;
			retain_trim(hs);
		}
		stream_kick(st);
	}
	pthread_mutex_unlock(&hs->mu);
	return 0;
}

static int hs_send(tp_conn *c, const struct iovec *iov, int n, const _Atomic int64_t *dl)
{
	(void)c;
	(void)iov;
	(void)n;
	(void)dl;
	return 0; /* unused: the writer always calls send_routed */
}

static void hs_wake(tp_conn *c)
{
	http_sess *hs = (http_sess *)c;
	pthread_mutex_lock(&hs->mu);
	hs->woken = 1;
	pthread_cond_broadcast(&hs->cv);
	pthread_mutex_unlock(&hs->mu);
}

static void hs_close_output(tp_conn *c)
{
	/* Every stream ends: SSE streams close (what they logged stays for
	 * replay until the session is gone), and a POST still waiting for a
	 * JSON answer gets none (the request was cut off by the close). */
	http_sess *hs = (http_sess *)c;
	pthread_mutex_lock(&hs->mu);
	hs->out_closed = 1;
	for (stream *st = hs->streams, *next; st; st = next) {
		next = st->next;
		st->finished = 1;
		stream_kick(st);
		if (!st->sse)
			stream_detach(hs, st);
	}
	if (hs->standalone) {
		hs->standalone->finished = 1;
		stream_kick(hs->standalone);
	}
	pthread_mutex_unlock(&hs->mu);
}

/* A JSON answer carries only the answer: a handler's request to the client
 * would have nowhere to go. */
static int hs_can_request(tp_conn *c, const char *route)
{
	http_sess *hs = (http_sess *)c;
	pthread_mutex_lock(&hs->mu);
	stream *st = stream_of_route(hs, route);
	int ok = !st || st->sse;
	pthread_mutex_unlock(&hs->mu);
	return ok;
}

/* mcp_ctx_close_stream: ends the HTTP response carrying a request's SSE
 * stream, after a "retry" field; the stream keeps logging for the GET
 * that resumes it. */
static int hs_close_route(tp_conn *c, const char *route, int retry_ms)
{
	http_sess *hs = (http_sess *)c;
	int rc = 0;
	pthread_mutex_lock(&hs->mu);
	stream *st = stream_of_route(hs, route);
	if (!st)
		rc = -ENOENT;
	else if (!st->sse || !hs_polling(hs))
		rc = -ENOTSUP;
	else if (st->conn && !st->hangup) {
		st->hangup = 1;
		st->hang_upto = st->tail ? (int64_t)st->tail->seq : -1;
		st->hang_len = (size_t)snprintf(st->hang_text, sizeof st->hang_text,
						"retry: %d\n\n", retry_ms);
		st->hang_off = 0;
		stream_kick(st);
	}
	pthread_mutex_unlock(&hs->mu);
	return rc;
}

static void hs_free(tp_conn *c)
{
	hs_unref((http_sess *)c);
}

static const struct tp_ops hs_ops = {
	.recv = hs_recv,
	.send = hs_send,
	.send_routed = hs_send_routed,
	.wake = hs_wake,
	.close_output = hs_close_output,
	.close_route = hs_close_route,
	.can_request = hs_can_request,
	.free = hs_free,
};

static int hs_push(http_sess *hs, const char *body, size_t len)
{
	char *l = malloc(len + 1);
	if (!l)
		return -1;
	memcpy(l, body, len);
	l[len] = 0;
	pthread_mutex_lock(&hs->mu);
	if (hs->nin == hs->capin) {
		size_t cap = hs->capin ? hs->capin * 2 : 16;
		char **n = malloc(cap * sizeof *n);
		if (!n) {
			pthread_mutex_unlock(&hs->mu);
			free(l);
			return -1;
		}
		for (size_t i = 0; i < hs->nin; i++)
			n[i] = hs->in[(hs->headin + i) % hs->capin];
		free(hs->in);
		hs->in = n;
		hs->capin = cap;
		hs->headin = 0;
	}
	hs->in[(hs->headin + hs->nin) % hs->capin] = l;
	hs->nin++;
	hs->last_active_ns = eng_now_ns();
	pthread_cond_broadcast(&hs->cv);
	pthread_mutex_unlock(&hs->mu);
	return 0;
}

static void *hs_main(void *arg)
{
	http_sess *hs = arg;
	/* The engine session takes the transport's reference. */
	mcp_server_serve_connection_as(hs->hsrv->srv, &hs->tp, hs->preset_rev);
	pthread_mutex_lock(&hs->hsrv->mu);
	hs->ended = 1;
	pthread_mutex_unlock(&hs->hsrv->mu);
	return NULL;
}

/* A new session with its reader thread, counted for the caller; NULL when
 * out of resources or at the session limit.  `preset_rev` >= 0 makes an
 * ephemeral stateless session already initialized at that revision;
 * ephemeral with -1 is a stateless one serving an initialize. */
static http_sess *session_create(http_server *h, int ephemeral, int preset_rev)
{
	http_sess *hs = calloc(1, sizeof *hs);
	if (!hs)
		return NULL;
	hs->tp.ops = &hs_ops;
	hs->tp.max_message = h->srv->max_message;
	hs->hsrv = h;
	hs->refs = 2; /* the server's map and the engine session */
	hs->rev = -1;
	hs->ephemeral = ephemeral;
	hs->preset_rev = preset_rev;
	pthread_mutex_init(&hs->mu, NULL);
	pthread_cond_init(&hs->cv, NULL);
	mcp_random_hex(hs->id);
	hs->last_active_ns = eng_now_ns();
	pthread_mutex_lock(&h->mu);
	if (h->stopping || h->nsessions >= (size_t)h->srv->max_sessions) {
		pthread_mutex_unlock(&h->mu);
		pthread_mutex_destroy(&hs->mu);
		pthread_cond_destroy(&hs->cv);
		free(hs);
		return NULL;
	}
	hs->next = h->sessions;
	h->sessions = hs;
	h->nsessions++;
	pthread_mutex_unlock(&h->mu);
	if (pthread_create(&hs->thread, NULL, hs_main, hs)) {
		pthread_mutex_lock(&h->mu);
		for (http_sess **pp = &h->sessions; *pp; pp = &(*pp)->next)
			if (*pp == hs) {
				*pp = hs->next;
				break;
			}
		h->nsessions--;
		pthread_mutex_unlock(&h->mu);
		pthread_mutex_destroy(&hs->mu);
		pthread_cond_destroy(&hs->cv);
		free(hs);
		return NULL;
	}
	hs_ref(hs); /* the caller's */
	return hs;
}

/* The live session with this id, counted; NULL if unknown or ended. */
static http_sess *session_find(http_server *h, const char *id)
{
	http_sess *found = NULL;
	pthread_mutex_lock(&h->mu);
	for (http_sess *hs = h->sessions; hs; hs = hs->next)
		if (!hs->deleted && strcmp(hs->id, id) == 0) {
			found = hs;
			hs->refs++;
			break;
		}
	pthread_mutex_unlock(&h->mu);
	return found;
}

/* Ends a session: its engine runs the shutdown sequence for it alone. */
static void session_end(http_sess *hs)
{
	pthread_mutex_lock(&hs->hsrv->mu);
	hs->deleted = 1;
	pthread_mutex_unlock(&hs->hsrv->mu);
	pthread_mutex_lock(&hs->mu);
	hs->in_closed = 1;
	pthread_cond_broadcast(&hs->cv);
	pthread_mutex_unlock(&hs->mu);
}

/* Joins sessions whose reader returned and drops them from the map; with
 * `all`, ends and joins every session.  Also expires idle ones. */
static void sessions_reap(http_server *h, int all)
{
	int64_t now = eng_now_ns();
	for (;;) {
		http_sess *victim = NULL;
		pthread_mutex_lock(&h->mu);
		for (http_sess **pp = &h->sessions; *pp; pp = &(*pp)->next) {
			http_sess *hs = *pp;
			if (!hs->deleted && !all) {
				/* Lock order: the server's map, then a session. */
				pthread_mutex_lock(&hs->mu);
				int busy = hs->standalone && hs->standalone->conn;
				for (stream *st = hs->streams; st && !busy; st = st->next)
					busy = st->conn || !st->finished;
				int idle = !busy && now - hs->last_active_ns >
							    h->srv->session_idle_ms * ENG_NS_PER_MS;
				pthread_mutex_unlock(&hs->mu);
				if (idle)
					hs->deleted = 2; /* expired */
			}
			if (hs->ended || all || hs->deleted) {
				*pp = hs->next;
				h->nsessions--;
				victim = hs;
				break;
			}
		}
		pthread_mutex_unlock(&h->mu);
		if (!victim)
			return;
		session_end(victim);
		pthread_join(victim->thread, NULL);
		hs_unref(victim); /* the map's reference */
	}
}

/* ---- HTTP ----------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
			     const char *body, const char *session_id)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		body ? strlen(body) : 0, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	if (session_id)
		MHD_add_response_header(r, "Mcp-Session-Id", session_id);
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_rpc_error(struct MHD_Connection *conn, unsigned status, int code,
				       const char *message)
{
	char body[512];
	snprintf(body, sizeof body,
		 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
		 code, message);
	return reply(conn, status, "application/json", body, NULL);
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result reply_unauthorized(struct MHD_Connection *conn)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
				   "\"message\":\"Unauthorized\"}}";
	struct MHD_Response *r = MHD_create_response_from_buffer(
		sizeof body - 1, (void *)body, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	return rc;
}

static int accepts(struct MHD_Connection *conn, const char *type)
{
	const char *a = header(conn, "Accept");
	return a && (strstr(a, type) || strstr(a, "*/*"));
}

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
static int host_allowed(const mcp_server *srv, struct MHD_Connection *conn)
{
	const char *v = header(conn, "Host");
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
static int origin_allowed(const mcp_server *srv, struct MHD_Connection *conn)
{
	const char *o = header(conn, "Origin");
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

/* The attachment `gen` of `st` ended: the stream is free for the next
 * GET at once, before MHD gets round to freeing the response.  Under
 * hs->mu. */
static void att_end_locked(stream *st, unsigned gen)
{
	if (st->gen != gen || !st->conn)
		return;
	st->conn = NULL;
	st->suspended = 0;
	st->hangup = 0;
	st->hang_len = st->hang_off = 0;
	st->cur_off = 0; /* a half-sent event is sent whole next time */
	st->hs->last_active_ns = eng_now_ns();
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	sse_att *att = cls;
	stream *st = att->st;
	http_sess *hs = st->hs;
	(void)pos;
	pthread_mutex_lock(&hs->mu);
	if (st->gen != att->gen) {
		pthread_mutex_unlock(&hs->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	/* After a hang-up, only what was logged before it. */
	if (st->cur && (!st->hangup || (int64_t)st->cur->seq <= st->hang_upto)) {
		sse_ev *e = st->cur;
		size_t n = e->len - st->cur_off;
		if (n > max)
			n = max;
		memcpy(buf, e->text + st->cur_off, n);
		st->cur_off += n;
		if (st->cur_off == e->len) {
			st->cur = e->next;
			st->cur_off = 0;
			log_trim(st);
		}
		hs->last_active_ns = eng_now_ns();
		pthread_mutex_unlock(&hs->mu);
		return (ssize_t)n;
	}
	if (st->hangup && st->hang_off < st->hang_len) {
		size_t n = st->hang_len - st->hang_off;
		if (n > max)
			n = max;
		memcpy(buf, st->hang_text + st->hang_off, n);
		st->hang_off += n;
		pthread_mutex_unlock(&hs->mu);
		return (ssize_t)n;
	}
	if (st->hangup || st->finished) {
		att_end_locked(st, att->gen);
		pthread_mutex_unlock(&hs->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	/* Nothing to send: park the connection until the writer kicks it. */
	st->suspended = 1;
	MHD_suspend_connection(st->conn);
	pthread_mutex_unlock(&hs->mu);
	return 0;
}

static void sse_free(void *cls)
{
	sse_att *att = cls;
	stream *st = att->st;
	http_sess *hs = st->hs;
	/* The response ended: the stream ran out, a handler hung up, or the
	 * client went away.  None of these cancels anything (2025-11-25); the
	 * stream stays in the session, logging, for a GET with Last-Event-ID. */
	pthread_mutex_lock(&hs->mu);
	/* 2026-07-28 has no resumption: a client that leaves before the
	 * answer cancels its request. */
	int abandon = st->no_ids && !st->finished && st->gen == att->gen;
	att_end_locked(st, att->gen);
	stream_unref_locked(st);
	retain_trim(hs);
	pthread_mutex_unlock(&hs->mu);
	free(att);
	if (abandon)
		session_end(hs);
	hs_unref(hs);
}

/* Queues the SSE response reading `st`.  The caller attached it under
 * hs->mu (conn set, gen bumped, a stream reference and a session
 * reference taken for the response), which sse_free gives back. */
static enum MHD_Result start_sse(struct MHD_Connection *conn, stream *st, const char *sid)
{
	http_sess *hs = st->hs;
	sse_att *att = malloc(sizeof *att);
	struct MHD_Response *r = NULL;
	if (att) {
		pthread_mutex_lock(&hs->mu);
		*att = (sse_att){ st, st->gen };
		pthread_mutex_unlock(&hs->mu);
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_reader, att,
						      sse_free);
	}
	if (!r) {
		pthread_mutex_lock(&hs->mu);
		st->conn = NULL;
		st->suspended = 0;
		stream_unref_locked(st);
		pthread_mutex_unlock(&hs->mu);
		free(att);
		hs_unref(hs);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	if (sid)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	enum MHD_Result rc = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* Checks what the engine would refuse without an id to answer to; those
 * must be answered here, or the POST would wait forever. */
static const char *envelope_problem(json_object *m)
{
	json_object *v = mcp_get(m, "jsonrpc");
	if (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "2.0"))
		return "Invalid Request: \\\"jsonrpc\\\" must be \\\"2.0\\\"";
	json_object *method = mcp_get(m, "method");
	json_object *id = NULL;
	int has_id = json_object_object_get_ex(m, "id", &id);
	if (!method)
		return NULL; /* a response: the engine routes it */
	if (!json_object_is_type(method, json_type_string))
		return "Invalid Request: \\\"method\\\" must be a string";
	if (has_id && !json_object_is_type(id, json_type_string) &&
	    !json_object_is_type(id, json_type_int))
		return "Invalid Request: \\\"id\\\" must be a string or an integer";
	return NULL;
}

/* The live session the request names (counted), or NULL after answering
 * 400 (no Mcp-Session-Id) or 404 (unknown or ended) into *rc. */
static http_sess *session_of_request(http_server *h, struct MHD_Connection *conn,
				     enum MHD_Result *rc)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	if (!sid) {
		*rc = reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
				      "Bad Request: Mcp-Session-Id header is required");
		return NULL;
	}
	http_sess *hs = session_find(h, sid);
	if (!hs)
		*rc = reply_rpc_error(conn, MHD_HTTP_NOT_FOUND, MCP_JSONRPC_INVALID_REQUEST,
				      "Session not found");
	return hs;
}

/* The HTTP status of the ladder's errors: 404 for an unknown method, 400
 * for the envelope, version, header and capability errors. */
static unsigned error_status(int code)
{
	switch (code) {
	case MCP_JSONRPC_METHOD_NOT_FOUND:
		return MHD_HTTP_NOT_FOUND;
	case MCP_JSONRPC_INVALID_PARAMS:
	case MCP_JSONRPC_HEADER_MISMATCH:
	case MCP_JSONRPC_MISSING_CAPABILITY:
	case MCP_JSONRPC_UNSUPPORTED_VERSION:
		return MHD_HTTP_BAD_REQUEST;
	}
	return MHD_HTTP_OK;
}

/* The HTTP status of a 2026-07-28 answer from a handler: 400 when it
 * needed a capability the request did not declare, else 200 (a handler's
 * own -32602 is an answer, not a malformed request). */
static unsigned modern_status(const char *body)
{
	json_object *m = json_tokener_parse(body);
	json_object *e = NULL, *c = NULL;
	unsigned st = MHD_HTTP_OK;
	if (json_object_object_get_ex(m, "error", &e) && json_object_object_get_ex(e, "code", &c) &&
	    json_object_get_int(c) == MCP_JSONRPC_MISSING_CAPABILITY)
		st = MHD_HTTP_BAD_REQUEST;
	json_object_put(m);
	return st;
}

/* Answers a request with a JSON-RPC error on its own id. */
static enum MHD_Result reply_error_id(struct MHD_Connection *conn, unsigned status,
				      json_object *id, int code, const char *message,
				      json_object *data)
{
	json_object *m = json_object_new_object();
	json_object *e = json_object_new_object();
	eng_obj_add(m, "jsonrpc", json_object_new_string("2.0"));
	eng_obj_add(m, "id", json_object_get(id));
	eng_obj_add(e, "code", json_object_new_int(code));
	eng_obj_add(e, "message", json_object_new_string(message));
	if (data)
		eng_obj_add(e, "data", data);
	eng_obj_add(m, "error", e);
	enum MHD_Result rc = reply(
		conn, status, "application/json",
		json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE),
		NULL);
	json_object_put(m);
	return rc;
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
static const char *header_matches(struct MHD_Connection *conn, const char *name,
				  const char *body_value, const char *what)
{
	const char *raw = header(conn, name);
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
static const char *modern_headers_problem(http_server *h, struct MHD_Connection *conn,
					  const char *method, json_object *params)
{
	const char *p = header_matches(conn, "Mcp-Method", method,
				       "Header mismatch: Mcp-Method must equal the request's method");
	if (p)
		return p;
	const char *name = NULL;
	if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
		name = json_object_get_string(mcp_get(params, "name"));
	else if (strcmp(method, "resources/read") == 0)
		name = json_object_get_string(mcp_get(params, "uri"));
	if ((p = header_matches(conn, "Mcp-Name", name,
				"Header mismatch: Mcp-Name must equal params.name (or params.uri)")))
		return p;
	if (!name || strcmp(method, "tools/call") != 0)
		return NULL;
	mcp_tool_entry *tool =
		(mcp_tool_entry *)mcp_registry_find(h->srv, &h->srv->tools, name);
	if (!tool)
		return NULL; /* answered by the handler's lookup */
	json_object *props = mcp_get(tool->input_schema, "properties");
	json_object *args = mcp_get(params, "arguments");
	p = NULL;
	if (json_object_is_type(props, json_type_object)) {
		json_object_object_foreach(props, key, schema)
		{
			json_object *suffix = mcp_get(schema, "x-mcp-header");
			json_object *arg = mcp_get(args, key);
			if (!json_object_is_type(suffix, json_type_string) || !arg)
				continue;
			char hname[160], buf[64];
			snprintf(hname, sizeof hname, "Mcp-Param-%s", json_object_get_string(suffix));
			if ((p = header_matches(conn, hname, scalar_text(arg, buf, sizeof buf),
						"Header mismatch: an Mcp-Param header does not match "
						"its argument")))
				break;
		}
	}
	mcp_entry_unref(&tool->base);
	return p;
}

/* Suspends a POST until its JSON answer is in `st` (rq->st), or answers
 * at once when it already is. */
static enum MHD_Result handle_post(http_server *h, struct MHD_Connection *conn, http_req *rq);
static enum MHD_Result await_json(http_server *h, struct MHD_Connection *conn, http_req *rq,
				  stream *st)
{
	http_sess *hs = rq->hs;
	pthread_mutex_lock(&hs->mu);
	rq->st = st;
	int ready = st->finished;
	if (!ready) {
		st->suspended = 1;
		MHD_suspend_connection(conn);
	}
	pthread_mutex_unlock(&hs->mu);
	return ready ? handle_post(h, conn, rq) : MHD_YES;
}

/* A JSON array: a JSON-RPC batch, allowed in 2025-03-26 sessions only.  It
 * is answered with one JSON array (never SSE: progress and requests of its
 * elements go to the session's GET stream), or 202 when none of its
 * elements is answered. */
static enum MHD_Result post_batch(http_server *h, struct MHD_Connection *conn, http_req *rq,
				  size_t n)
{
	if (n == 0)
		return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
				       "Invalid Request: empty batch");
	if (h->srv->http_stateless)
		return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
				       "Invalid Request: batches need a 2025-03-26 session");
	enum MHD_Result rc;
	http_sess *hs = session_of_request(h, conn, &rc);
	if (!hs)
		return rc;
	char key[ENG_BATCH_ROUTE_LEN];
	eng_batch_route(rq->body, rq->len, key);
	pthread_mutex_lock(&hs->mu);
	const char *problem = NULL;
	unsigned status = MHD_HTTP_BAD_REQUEST;
	int code = MCP_JSONRPC_INVALID_REQUEST;
	stream *st = NULL;
	if (hs->rev != mcp_revision_index("2025-03-26"))
		problem = "Invalid Request: batches are not supported in this protocol version";
	else if (stream_of_route(hs, key))
		problem = "Invalid Request: the same batch is already in flight";
	else if (hs->out_closed || !(st = stream_new(hs, key, 0))) {
		problem = "Session ended";
		status = MHD_HTTP_NOT_FOUND;
		code = MCP_JSONRPC_CONNECTION_CLOSED;
	}
	if (problem) {
		pthread_mutex_unlock(&hs->mu);
		hs_unref(hs);
		return reply_rpc_error(conn, status, code, problem);
	}
	st->next = hs->streams;
	hs->streams = st;
	st->conn = conn;
	st->gen++;
	pthread_mutex_unlock(&hs->mu);
	rq->hs = hs; /* released in request_completed */
	rq->batch = 1;
	hs_push(hs, rq->body, rq->len);
	return await_json(h, conn, rq, st);
}

static enum MHD_Result handle_post(http_server *h, struct MHD_Connection *conn, http_req *rq)
{
	if (rq->st) {
		/* Resumed: the JSON answer is ready (or the session closed). */
		stream *st = rq->st;
		http_sess *hs = rq->hs;
		pthread_mutex_lock(&hs->mu);
		char *body = st->len ? strndup(st->buf, st->len) : NULL;
		rq->st = NULL;
		stream_unref_locked(st);
		pthread_mutex_unlock(&hs->mu);
		enum MHD_Result rc;
		if (body) {
			size_t n = strlen(body);
			while (n && body[n - 1] == '\n')
				body[--n] = 0;
			if (rq->batch && strcmp(body, "[]") == 0)
				/* A batch with nothing to answer. */
				rc = reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
			else
				rc = reply(conn, rq->modern ? modern_status(body) : MHD_HTTP_OK,
					   "application/json", body, rq->new_session ? hs->id : NULL);
		} else {
			rc = reply_rpc_error(conn, MHD_HTTP_NOT_FOUND, MCP_JSONRPC_CONNECTION_CLOSED,
					     "Session ended before the request was answered");
		}
		free(body);
		return rc;
	}
	if (rq->too_big)
		return reply_rpc_error(conn, 413,
				       MCP_JSONRPC_INVALID_REQUEST, "Request body too large");
	const char *ct = header(conn, "Content-Type");
	if (!ct || strncasecmp(ct, "application/json", 16) != 0)
		return reply_rpc_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				       MCP_JSONRPC_INVALID_REQUEST,
				       "Content-Type must be application/json");
	json_object *m = rq->body ? json_tokener_parse(rq->body) : NULL;
	if (!m || strlen(rq->body) != rq->len ||
	    !tp_utf8_valid((const unsigned char *)rq->body, rq->len) ||
	    (eng_json_precheck(rq->body, rq->len) & ENG_JSON_NOT_JSON))
		return json_object_put(m), reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST,
							   MCP_JSONRPC_PARSE_ERROR, "Parse error");
	if (json_object_is_type(m, json_type_array)) {
		size_t n = json_object_array_length(m);
		json_object_put(m);
		return post_batch(h, conn, rq, n);
	}
	if (!json_object_is_type(m, json_type_object)) {
		json_object_put(m);
		return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
				       "Invalid Request: one JSON-RPC message per POST");
	}
	const char *problem = envelope_problem(m);
	if (problem) {
		json_object_put(m);
		return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
				       problem);
	}
	json_object *method = mcp_get(m, "method");
	json_object *id = mcp_get(m, "id");
	int is_request = method && id;
	int is_init = is_request && strcmp(json_object_get_string(method), "initialize") == 0;
	char route[256] = "";
	if (is_request) {
		const char *t = eng_json_text(id, NULL);
		snprintf(route, sizeof route, "%s", t ? t : "");
	}
	/* 2026-07-28: a request without a session (not an initialize) is
	 * served from its own _meta, after the ladder of checks whose errors
	 * carry HTTP statuses of their own. */
	json_object *params = mcp_get(m, "params");
	json_object *meta = mcp_get(params, "_meta");
	if (mcp_get(meta, MCP_META_VERSION) || mcp_get(meta, MCP_META_CAPS))
		is_init = 0; /* a 2026-07-28 "initialize": -32601 below */
	int modern = !header(conn, "Mcp-Session-Id") && !is_init && method &&
		     (!h->srv->http_stateless || mcp_get(meta, MCP_META_VERSION) ||
		      mcp_get(meta, MCP_META_CAPS));
	int want_sse = 0;
	if (modern && is_request) {
		const char *message = NULL;
		json_object *data = NULL;
		const char *pv = header(conn, "MCP-Protocol-Version");
		int code = mcp_modern_check(json_object_get_string(method), params, pv ? pv : "",
					    &message, &data);
		if (!code && (message = modern_headers_problem(h, conn, json_object_get_string(method),
							       params)))
			code = MCP_JSONRPC_HEADER_MISMATCH;
		if (code) {
			enum MHD_Result rc =
				reply_error_id(conn, error_status(code), id, code, message, data);
			json_object_put(m);
			return rc;
		}
		/* Streamed only when there is something to stream first. */
		want_sse = mcp_get(meta, "progressToken") || mcp_get(meta, MCP_META_LOG) ||
			   strcmp(json_object_get_string(method), "subscriptions/listen") == 0;
	}
	json_object_put(m);

	http_sess *hs;
	if (modern) {
		if (!is_request) /* a notification has no session to go to */
			return reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
		hs = session_create(h, 1, MCP_REV_2026_07_28);
		if (!hs) {
			sessions_reap(h, 0);
			hs = session_create(h, 1, MCP_REV_2026_07_28);
		}
		if (!hs)
			return reply_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					       MCP_JSONRPC_SERVER_BUSY, "Too many requests at once");
		rq->modern = 1;
	} else if (h->srv->http_stateless) {
		/* Every request on its own; nothing else has anywhere to go. */
		if (!is_request)
			return reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
		const char *pv = header(conn, "MCP-Protocol-Version");
		int rev = mcp_revision_index(pv ? pv : "2025-03-26");
		if (rev < 0)
			return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
					       "Bad Request: unsupported MCP-Protocol-Version");
		hs = session_create(h, 1, is_init ? -1 : rev);
		if (!hs) {
			sessions_reap(h, 0); /* finished ones may still hold places */
			hs = session_create(h, 1, is_init ? -1 : rev);
		}
		if (!hs)
			return reply_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					       MCP_JSONRPC_SERVER_BUSY, "Too many requests at once");
	} else if (is_init) {
		hs = session_create(h, 0, -1);
		if (!hs)
			return reply_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					       MCP_JSONRPC_SERVER_BUSY, "Too many sessions");
		rq->new_session = 1;
	} else {
		enum MHD_Result rc;
		hs = session_of_request(h, conn, &rc);
		if (!hs)
			return rc;
		const char *pv = header(conn, "MCP-Protocol-Version");
		if (pv && !mcp_protocol_supported(pv)) {
			hs_unref(hs);
			return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
					       "Bad Request: unsupported MCP-Protocol-Version");
		}
	}
	rq->hs = hs; /* released in request_completed */

	if (!is_request) {
		/* Notifications and responses: accepted, answered by nobody. */
		hs_push(hs, rq->body, rq->len);
		return reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
	}
	int sse = !h->srv->http_json_only && accepts(conn, "text/event-stream") &&
		  (!rq->modern || want_sse);
	pthread_mutex_lock(&hs->mu);
	if (stream_of_route(hs, route)) {
		/* P5 over HTTP: the first request keeps its stream. */
		pthread_mutex_unlock(&hs->mu);
		return reply_rpc_error(conn, MHD_HTTP_OK, MCP_JSONRPC_INVALID_REQUEST,
				       "Invalid Request: id is already in flight");
	}
	stream *st = hs->out_closed ? NULL : stream_new(hs, route, sse);
	if (!st || (sse && hs_polling(hs) && sse_log(st, NULL, 0) != 0)) {
		if (st) {
			st->refs = 1;
			stream_unref_locked(st);
		}
		pthread_mutex_unlock(&hs->mu);
		return reply_rpc_error(conn, MHD_HTTP_NOT_FOUND, MCP_JSONRPC_CONNECTION_CLOSED,
				       "Session ended");
	}
	st->next = hs->streams;
	hs->streams = st;
	st->conn = conn;
	st->gen++;
	st->no_ids = rq->modern;
	pthread_mutex_unlock(&hs->mu);

	/* The stream exists before the engine sees the request, so no line of
	 * its can arrive with nowhere to go. */
	hs_push(hs, rq->body, rq->len);
	if (sse) {
		hs_ref(hs); /* the response's; released by sse_free */
		return start_sse(conn, st, rq->new_session ? hs->id : NULL);
	}
	/* JSON: wait (suspended) for the answer, then MHD calls us again. */
	return await_json(h, conn, rq, st);
}

/* Parses a Last-Event-ID of ours, "S-N". */
static int parse_event_id(const char *v, unsigned *num, uint64_t *seq)
{
	char *end;
	errno = 0;
	unsigned long s = strtoul(v, &end, 10);
	if (end == v || *end != '-' || errno || s == 0 || s > UINT32_MAX)
		return -1;
	const char *p = end + 1;
	unsigned long long n = strtoull(p, &end, 10);
	if (end == p || *end || errno)
		return -1;
	*num = (unsigned)s;
	*seq = n;
	return 0;
}

/* GET: the standalone stream, or with Last-Event-ID the resumption of any
 * SSE stream of the session (a POST's included) after that event. */
static enum MHD_Result handle_get(http_server *h, struct MHD_Connection *conn)
{
	if (!accepts(conn, "text/event-stream"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, NULL, NULL);
	enum MHD_Result rc;
	http_sess *hs = session_of_request(h, conn, &rc);
	if (!hs)
		return rc;
	const char *last = header(conn, "Last-Event-ID");
	unsigned num = 0;
	uint64_t seq = 0;
	if (last && parse_event_id(last, &num, &seq) != 0) {
		hs_unref(hs);
		return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST, MCP_JSONRPC_INVALID_REQUEST,
				       "Bad Request: malformed Last-Event-ID");
	}
	pthread_mutex_lock(&hs->mu);
	stream *st = NULL;
	if (last) {
		if (hs->standalone && hs->standalone->num == num)
			st = hs->standalone;
		for (stream *s = hs->streams; s && !st; s = s->next)
			if (s->sse && s->num == num)
				st = s;
		if (!st) {
			pthread_mutex_unlock(&hs->mu);
			hs_unref(hs);
			return reply_rpc_error(conn, MHD_HTTP_BAD_REQUEST,
					       MCP_JSONRPC_INVALID_REQUEST,
					       "Bad Request: Last-Event-ID names no stream of "
					       "this session");
		}
	} else {
		st = hs->standalone;
	}
	if ((st && st->conn) || (!st && hs->out_closed)) {
		pthread_mutex_unlock(&hs->mu);
		hs_unref(hs);
		return reply_rpc_error(conn, MHD_HTTP_CONFLICT, MCP_JSONRPC_INVALID_REQUEST,
				       "Conflict: that stream is already open");
	}
	if (st) {
		/* Re-attach; with Last-Event-ID, replay from the event after
		 * it (or the oldest kept, if it is gone). */
		if (last) {
			st->cur = st->head;
			while (st->cur && st->cur->seq <= seq)
				st->cur = st->cur->next;
			st->cur_off = 0;
		}
		st->refs++;
	} else {
		st = stream_new(hs, NULL, 1);
		if (!st || (hs_polling(hs) && sse_log(st, NULL, 0) != 0)) {
			if (st) {
				st->refs = 1;
				stream_unref_locked(st);
			}
			pthread_mutex_unlock(&hs->mu);
			hs_unref(hs);
			return MHD_NO;
		}
		hs->standalone = st;
	}
	st->conn = conn;
	st->gen++;
	hs->last_active_ns = eng_now_ns();
	pthread_mutex_unlock(&hs->mu);
	return start_sse(conn, st, NULL); /* keeps the session reference */
}

static enum MHD_Result handle_delete(http_server *h, struct MHD_Connection *conn)
{
	enum MHD_Result rc;
	http_sess *hs = session_of_request(h, conn, &rc);
	if (!hs)
		return rc;
	/* Its own shutdown sequence: handlers cancelled, pending requests
	 * failed, nothing written after.  The main loop joins its reader. */
	session_end(hs);
	hs_unref(hs);
	return reply(conn, MHD_HTTP_OK, NULL, NULL, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	http_server *h = cls;
	(void)version;
	http_req *rq = *con_cls;
	if (!rq) {
		rq = calloc(1, sizeof *rq);
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		return MHD_YES;
	}
	/* A response may only be queued once the body is in: bodies are
	 * gathered first, every check runs on the final call. */
	if (*upload_size) {
		{
			if (strcmp(method, "POST") != 0) {
				/* Another method's body: read and dropped, so the
				 * answer (405) can go out. */
			} else if (rq->len + *upload_size > h->srv->max_message) {
				rq->too_big = 1;
			} else {
				if (rq->len + *upload_size + 1 > rq->cap) {
					size_t cap = (rq->len + *upload_size + 1) * 2;
					char *b = realloc(rq->body, cap);
					if (!b)
						return MHD_NO;
					rq->body = b;
					rq->cap = cap;
				}
				memcpy(rq->body + rq->len, upload, *upload_size);
				rq->len += *upload_size;
				rq->body[rq->len] = 0;
			}
			*upload_size = 0;
			return MHD_YES;
		}
	}
	if (strcmp(url, h->srv->http_path ? h->srv->http_path : "/mcp") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", NULL);
	if (!host_allowed(h->srv, conn))
		return reply(conn, MHD_HTTP_FORBIDDEN, "text/plain", "forbidden host\n", NULL);
	if (!origin_allowed(h->srv, conn))
		return reply(conn, MHD_HTTP_FORBIDDEN, "text/plain", "forbidden origin\n", NULL);
	if (h->srv->http_auth) {
		int verdict = h->srv->http_auth(header(conn, "Authorization"),
						header(conn, "Mcp-Session-Id"),
						h->srv->http_auth_user);
		if (verdict == 403)
			return reply_rpc_error(conn, MHD_HTTP_FORBIDDEN, MCP_JSONRPC_INVALID_REQUEST,
					       "Forbidden");
		if (verdict != 0)
			return reply_unauthorized(conn);
	}
	if (h->srv->http_stateless && strcmp(method, "POST") != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, NULL, NULL);
	if (strcmp(method, "POST") == 0)
		return handle_post(h, conn, rq);
	if (strcmp(method, "GET") == 0)
		return handle_get(h, conn);
	if (strcmp(method, "DELETE") == 0)
		return handle_delete(h, conn);
	return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, NULL, NULL);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	http_req *rq = *con_cls;
	if (!rq)
		return;
	if (rq->st) {
		/* A JSON-mode client left before its answer: drop the stream
		 * (and, for a 2026-07-28 request, cancel it). */
		pthread_mutex_lock(&rq->hs->mu);
		rq->st->gone = 1;
		rq->st->conn = NULL;
		stream_detach(rq->hs, rq->st);
		stream_unref_locked(rq->st);
		pthread_mutex_unlock(&rq->hs->mu);
		if (rq->modern)
			session_end(rq->hs);
	}
	if (rq->hs)
		hs_unref(rq->hs);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

/* "HOST:PORT" with HOST an IPv4 address, "localhost", or "[IPv6]". */
static int parse_address(const char *address, struct sockaddr_storage *ss, int *v6)
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
		*v6 = 1;
		return inet_pton(AF_INET6, host + 1, &sa->sin6_addr) == 1 ? 0 : -1;
	}
	struct sockaddr_in *sa = (struct sockaddr_in *)ss;
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	*v6 = 0;
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

MCP_EXTERN int mcp_server_run_http(mcp_server *srv, const char *address, int *bound_port)
{
	if (!srv || !address)
		return MCP_EINVAL;
	struct sockaddr_storage sa;
	int v6 = 0;
	if (parse_address(address, &sa, &v6) != 0)
		return MCP_EINVAL;
	/* libmicrohttpd is loaded now, not with libmcp (see api/mhd.h). */
	if (mcp_mhd_load() != MCP_OK)
		return MCP_ENOTSUP;
	int rc = mcp_server_begin(srv);
	if (rc != MCP_OK)
		return rc;
	http_server h = { .srv = srv };
	pthread_mutex_init(&h.mu, NULL);
	/* No MHD_USE_ERROR_LOG: a library does not write to the application's
	 * stderr; a client that hangs up mid-stream is not an error here. */
	h.daemon = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
			(v6 ? MHD_USE_IPv6 : 0),
		0,
		NULL, NULL, on_request, &h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, &h, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_END);
	if (!h.daemon) {
		mcp_server_end(srv);
		pthread_mutex_destroy(&h.mu);
		return MCP_ESYS;
	}
	if (bound_port) {
		const union MHD_DaemonInfo *info =
			MHD_get_daemon_info(h.daemon, MHD_DAEMON_INFO_BIND_PORT);
		*bound_port = info ? info->port : 0;
	}
	/* The calling thread waits for the shutdown request and reaps ended
	 * or expired sessions meanwhile. */
	for (;;) {
		struct pollfd p = { .fd = srv->wake_fd, .events = POLLIN };
		int n = poll(&p, 1, 250);
		if (n > 0)
			break;
		sessions_reap(&h, 0);
	}
	pthread_mutex_lock(&h.mu);
	h.stopping = 1;
	pthread_mutex_unlock(&h.mu);
	/* Every session runs its own shutdown; their streams end; then the
	 * daemon stops. */
	pthread_mutex_lock(&h.mu);
	for (http_sess *hs = h.sessions; hs; hs = hs->next)
		hs_wake(&hs->tp);
	pthread_mutex_unlock(&h.mu);
	sessions_reap(&h, 1);
	MHD_stop_daemon(h.daemon);
	mcp_server_end(srv);
	pthread_mutex_destroy(&h.mu);
	return MCP_OK;
}
