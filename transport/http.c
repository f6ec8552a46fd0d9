/*
 * http.c - the Streamable HTTP transport on libmicrohttpd: requests and
 * their bodies, the session table, each session's streams with their SSE
 * event logs and replay, and a watch on the connections that wait for
 * output (see tp_http.h for the interface and the threads).
 *
 * A session is a tp_conn driven without a thread: the layer above feeds
 * its engine from the HTTP thread that read a request, and the engine
 * hands every outbound line to hs_send_routed, which appends it to the
 * stream of the line's route and wakes the connection waiting there.
 *
 * Legacy sessions.  A session of the 2024-11-05 HTTP+SSE transport
 * (tp_http_session_set_legacy) has one stream, its standalone one, opened
 * by its GET (tp_http_legacy_get) with an "endpoint" event first; every
 * line of its output, answers included, goes there without an event id,
 * and the GET's end is its session's end (the layer above's request_done).
 *
 * Streams.  Each POSTed request gets one: an SSE response on which its
 * progress, logs and server-to-client requests travel before its answer,
 * or a JSON body holding just the answer.  Lines not tied to a request go
 * to the session's standalone GET stream.  Every SSE event of a stream
 * carries the id "S-N" (S the stream's number in its session, N its
 * sequence), and the stream's log outlives the HTTP connection carrying it:
 * a GET with Last-Event-ID "S-N" re-attaches the stream and replays what
 * followed event N.  The log keeps REPLAY_KEEP bytes of delivered events
 * and at most `stream_backlog` bytes in all; finished streams are kept for
 * replay up to RETAIN_DONE per session.
 *
 * Waiting connections.  A connection whose stream has nothing to send is
 * suspended, never polled; so that a client that goes away meanwhile is
 * seen promptly (and not at the next write), its socket is watched for a
 * hang-up by the tp_http_run thread (epoll, EPOLLRDHUP) from that
 * thread's next tick on: most waits end sooner (an answer in
 * microseconds), and they cost no system call.  A reader that
 * stops reading while events pile up is cut off once it owes
 * `stream_backlog` bytes besides the newest event (its stream stays, for
 * a resumption); a stream that cannot be resumed is never cut (see
 * cut_slow_reader).  A GET's stream is watched from its start, and its
 * place under max_streams is free as soon as its client's hang-up is
 * seen.
 *
 * Clocks.  While a connection's request header or body comes in, it is
 * on a list with the time it began (conn_clock); the run thread refuses
 * those past their limit with 408, and a connection past max_connections
 * makes room by refusing the oldest still sending its header (503).
 *
 * Lifetimes.  libmicrohttpd ends a connection in this order: the request's
 * completion callback, the response's free callback, then close(2) of the
 * socket.  Every use of a connection's socket here happens under the
 * session's lock while the stream still names that connection, and both
 * callbacks clear that first, so a socket number is never used after it
 * could have been reused.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "transport/mhd.h"
#include "transport/sigpipe.h"
#include "transport/tp_http.h"

#define REPLAY_KEEP (256u << 10)   /* delivered SSE bytes kept per stream */
#define RETAIN_DONE 16             /* finished SSE streams kept per session */
#define RETRY_MS 1000              /* the reconnection delay advertised */
#define SSE_BLOCK 4096             /* bytes per SSE read callback */
#define TICK_MS 20
#define CONN_HEADROOM 64           /* connections past the limit told 503 */
#define KEEPALIVE_MS 60000         /* an idle kept-alive connection, at least */
/* libmicrohttpd's memory per connection (headers, its read and write
 * buffers; bodies are streamed to us): zeroed for every request, and held
 * by every open stream, so no bigger than MCP's small requests need. */
#define CONN_MEMORY (16u << 10)

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One SSE event as written on the wire, in a stream's log. */
typedef struct sse_ev {
	struct sse_ev *next;
	uint64_t seq;
	size_t len;
	char text[];
} sse_ev;

/* An outbound stream: one POST's answer (SSE or JSON) or the session's
 * standalone GET stream.  Shared by the session and the connection
 * attached to it (at most one at a time); freed when both let go.  Every
 * field is under the session's lock. */
typedef struct stream {
	struct stream *next;        /* ts->streams */
	int refs;
	char *route;                /* request id key; NULL for the GET stream */
	unsigned num;               /* S of the event ids "S-N" */
	int sse;
	int no_ids;                 /* 2026-07-28: events carry no ids */
	/* JSON: the answer. */
	char *answer;
	size_t answer_len;
	unsigned nlines;            /* lines delivered to the stream */
	/* SSE: the event log, oldest first; `cur` is the next event to send
	 * (NULL: all sent), `cur_off` the bytes of it already sent. */
	sse_ev *head, *tail, *cur;
	size_t cur_off, kept, owed;  /* kept: in the log; owed: not yet sent */
	uint64_t next_seq;
	/* A handler ended this connection: the events logged until then
	 * (seq <= hang_upto) go out, then `hang_text` ("retry: N"), then the
	 * end of the response; the stream itself lives on. */
	int hangup;
	int64_t hang_upto;
	char hang_text[40];
	size_t hang_len, hang_off;
	int finished;               /* nothing more will be added */
	/* TP_HTTP_HOLD: the SSE response has not begun, and waits for the
	 * request to be let through (`opened`) or for a line. */
	int held;
	int opened;
	int closed;                 /* finished by the session's close */
	/* The attached connection (NULL: none) and its state. */
	struct MHD_Connection *conn;
	unsigned gen;               /* attachments so far */
	int fd;                     /* its socket, while attached */
	int suspended;              /* it waits for output (and is watched) */
	int watch;                  /* its watch slot, or -1 */
	int peer_gone;              /* the watch saw the client hang up */
	int left_end;               /* its response ended for that (sse_reader):
				     * the request's end says its client left */
	int cut;                    /* cut off for owing too much */
	int is_get;                 /* attached by a GET (counts as a stream) */
	struct stream *pw_next;     /* h->pending_watch, under watch_mu */
	int pw_queued;              /* on that list (under the session's lock) */
	tp_http_sess *ts;
} stream;

struct tp_http_sess {
	tp_conn tp;                 /* the engine's view; first member */
	tp_http *h;
	_Atomic int refs;
	char id[33];
	/* Last use, stored without a lock; the LRU list is put back in order
	 * lazily, by the expiry scan (housekeeping). */
	_Atomic int64_t last_active_ns;
	/* Under h->mu: */
	tp_http_sess *hnext;        /* hash chain */
	tp_http_sess *lru_prev, *lru_next;
	int in_lru;
	int64_t lru_pos_ns;         /* when it was put at the LRU's end */
	int published, ended, ephemeral, gone;
	int legacy;                 /* HTTP+SSE (2024-11-05); set before publishing */
	void *app;
	/* Under mu: */
	pthread_mutex_t mu;
	stream *streams;            /* POST streams, newest first */
	stream *standalone;
	unsigned stream_no;         /* numbers handed out */
	unsigned features;          /* TP_FEATURE_* */
	int out_closed;
	int busy;                   /* attached connections and open streams */
};

/* A socket watched for a hang-up: slot `i` of h->watches, valid while its
 * generation matches the one in the epoll event. */
typedef struct watch_slot {
	uint32_t gen;
	int used;
	int fd;
	stream *st;                 /* attached (so alive) while registered */
	tp_http_sess *ts;           /* counted */
	int next_free;
} watch_slot;

struct tp_http {
	tp_http_config cfg;
	_Atomic int refs;           /* the owner's, and one per session */
	struct MHD_Daemon *daemon;
	pthread_mutex_t mu;         /* the table, the LRU list, the counts */
	tp_http_sess **buckets;
	size_t nbuckets, npublished, nephemeral;
	tp_http_sess *lru_head, *lru_tail;  /* published, least recent first */
	tp_http_sess *gone_list;    /* published sessions whose output closed */
	_Atomic unsigned requests_open; /* MHD requests begun, not completed:
					   the shutdown waits for them, so no
					   answer queued is cut by the stop */
	_Atomic unsigned get_streams;
	/* Connections open and not refused to make room (those close
	 * soon): what max_connections bounds.  One counter, so that a
	 * check never sees a connection's close half done. */
	_Atomic unsigned live;
	_Atomic int refusing;
	/* The clocks of connections whose header or body is coming in
	 * (conn_clock), each list oldest first; after every other lock. */
	pthread_mutex_t clock_mu;
	struct conn_clock *clock_head[3], *clock_tail[3];
	int epfd;                   /* the watch */
	_Atomic int firing;         /* threads handling hang-ups taken from it */
	pthread_mutex_t watch_mu;   /* the slots; after a session's lock */
	stream *pending_watch;      /* suspended, to watch at the next tick */
	watch_slot *watches;
	int nwatch, free_watch;
};

/* A connection's clock.  While the header of its request (or, kept alive,
 * of its next one) or the body is coming in, it is on one of two lists,
 * oldest first, and the run thread refuses it once past its limit: a
 * client that trickles a byte a second holds a connection for that long
 * and no longer.  A connection waiting for its answer or reading a stream
 * is on no list: long calls and SSE streams have no limit here.  A
 * connection kept alive between requests is on a third list, with the
 * longer of the header limit and KEEPALIVE_MS: a client that reuses its
 * connections now and then keeps them, and one that never comes back
 * has its connection closed (silently: a stale 408 could be read as the
 * answer to its next request).  Under
 * h->clock_mu; freed when libmicrohttpd reports the connection closed,
 * which it does before it closes the socket, so `fd` is the connection's
 * own while the clock is on a list. */
enum { CLOCK_HEADER = 0, CLOCK_BODY = 1, CLOCK_IDLE = 2, CLOCK_NONE = 3 };
typedef struct conn_clock {
	struct conn_clock *prev, *next;
	int list;                   /* CLOCK_* */
	int fd;
	int64_t since;
	int refused;                /* answered on the socket and shut down */
	int evicted;                /* refused to make room (not in h->live) */
} conn_clock;

struct tp_http_req {
	tp_http *h;
	struct MHD_Connection *conn;
	conn_clock *clock;          /* NULL: untimed (no memory for it) */
	int raw_refused;            /* refused on the socket (body past the limit) */
	const char *method, *url;
	char *body;
	size_t len, cap;
	int too_big;
	int refused;                /* answered at the first call (framing) */
	int over_limit;             /* a connection past max_connections */
	void *app;
	stream *st;                 /* the POST's stream, once opened */
	tp_http_sess *ts;           /* counted, with st */
	int waiting;                /* suspended for a JSON answer */
	char *session_header;
	int answered;
};

/* ---- sessions and their table -------------------------------------------- */

static void stream_unref_locked(stream *st);

static void sess_ref(tp_http_sess *ts)
{
	atomic_fetch_add_explicit(&ts->refs, 1, memory_order_relaxed);
}

static void http_unref(tp_http *h);

static void sess_unref(tp_http_sess *ts)
{
	if (atomic_fetch_sub_explicit(&ts->refs, 1, memory_order_acq_rel) != 1)
		return;
	tp_http *h = ts->h;
	pthread_mutex_lock(&h->mu);
	if (!ts->gone) {
		/* Its output never closed (the engine session could not be
		 * made): its place is free again. */
		if (ts->ephemeral)
			h->nephemeral--;
		else
			h->npublished--;
	}
	pthread_mutex_unlock(&h->mu);
	/* Every connection let go of its stream first (each holds a session
	 * reference), so the streams left hold only the session's. */
	pthread_mutex_lock(&ts->mu);
	while (ts->streams) {
		stream *st = ts->streams;
		ts->streams = st->next;
		stream_unref_locked(st);
	}
	if (ts->standalone)
		stream_unref_locked(ts->standalone);
	ts->standalone = NULL;
	pthread_mutex_unlock(&ts->mu);
	pthread_mutex_destroy(&ts->mu);
	free(ts);
	http_unref(h);
}

static size_t bucket_of(const tp_http *h, const char *id)
{
	/* The ids are random hex: their first 16 digits are hash enough. */
	uint64_t v = 0;
	for (int i = 0; i < 16 && id[i]; i++)
		v = v << 4 | (uint64_t)(id[i] <= '9' ? id[i] - '0' : (id[i] | 32) - 'a' + 10);
	return (size_t)(v & (h->nbuckets - 1));
}

/* Under h->mu. */
static void table_grow(tp_http *h)
{
	size_t n = h->nbuckets * 2;
	tp_http_sess **b = calloc(n, sizeof *b);
	if (!b)
		return; /* chains just get longer */
	tp_http_sess **old = h->buckets;
	size_t oldn = h->nbuckets;
	h->buckets = b;
	h->nbuckets = n;
	for (size_t i = 0; i < oldn; i++)
		for (tp_http_sess *ts = old[i], *next; ts; ts = next) {
			next = ts->hnext;
			size_t k = bucket_of(h, ts->id);
			ts->hnext = b[k];
			b[k] = ts;
		}
	free(old);
}

/* Under h->mu. */
static void lru_unlink(tp_http *h, tp_http_sess *ts)
{
	if (!ts->in_lru)
		return;
	ts->in_lru = 0;
	if (ts->lru_prev)
		ts->lru_prev->lru_next = ts->lru_next;
	else
		h->lru_head = ts->lru_next;
	if (ts->lru_next)
		ts->lru_next->lru_prev = ts->lru_prev;
	else
		h->lru_tail = ts->lru_prev;
	ts->lru_prev = ts->lru_next = NULL;
}

/* The session was used now.  Any thread, any lock. */
static void sess_touch(tp_http_sess *ts)
{
	atomic_store_explicit(&ts->last_active_ns, now_ns(), memory_order_relaxed);
}

/* Under h->mu: moves the session to the LRU's end, at time `now`. */
static void lru_to_tail(tp_http *h, tp_http_sess *ts, int64_t now)
{
	ts->lru_pos_ns = now;
	if (!ts->published || ts->gone || ts->ended || (ts->in_lru && h->lru_tail == ts))
		return;
	lru_unlink(h, ts);
	ts->in_lru = 1;
	ts->lru_prev = h->lru_tail;
	if (h->lru_tail)
		h->lru_tail->lru_next = ts;
	else
		h->lru_head = ts;
	h->lru_tail = ts;
}

/* Under h->mu: out of the table and the LRU list. */
static void table_remove(tp_http *h, tp_http_sess *ts)
{
	for (tp_http_sess **pp = &h->buckets[bucket_of(h, ts->id)]; *pp; pp = &(*pp)->hnext)
		if (*pp == ts) {
			*pp = ts->hnext;
			break;
		}
	lru_unlink(h, ts);
	h->npublished--;
}

static void random_hex(char out[33])
{
	unsigned char b[16];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = getrandom(b + got, sizeof b - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			break;
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static const struct tp_ops hs_ops;

tp_http_sess *tp_http_session_new(tp_http *h, int ephemeral, int *err)
{
	*err = -EBUSY;
	pthread_mutex_lock(&h->mu);
	size_t *count = ephemeral ? &h->nephemeral : &h->npublished;
	int full = atomic_load(&h->refusing) || *count >= h->cfg.max_sessions;
	if (!full)
		(*count)++; /* the place is taken now; published or not */
	pthread_mutex_unlock(&h->mu);
	if (full)
		return NULL;
	tp_http_sess *ts = calloc(1, sizeof *ts);
	if (!ts) {
		pthread_mutex_lock(&h->mu);
		(*count)--;
		pthread_mutex_unlock(&h->mu);
		*err = -ENOMEM;
		return NULL;
	}
	ts->tp.ops = &hs_ops;
	ts->tp.max_message = h->cfg.max_message;
	ts->h = h;
	atomic_fetch_add(&h->refs, 1);
	atomic_init(&ts->refs, 1);
	ts->ephemeral = ephemeral;
	pthread_mutex_init(&ts->mu, NULL);
	if (!ephemeral)
		random_hex(ts->id);
	return ts;
}

tp_conn *tp_http_conn(tp_http_sess *ts)
{
	return &ts->tp;
}

const char *tp_http_session_id(const tp_http_sess *ts)
{
	return ts->id;
}

void tp_http_session_publish(tp_http_sess *ts, void *app)
{
	tp_http *h = ts->h;
	sess_ref(ts); /* the table's */
	pthread_mutex_lock(&h->mu);
	ts->app = app;
	ts->published = 1;
	if (h->npublished >= h->nbuckets)
		table_grow(h);
	size_t k = bucket_of(h, ts->id);
	ts->hnext = h->buckets[k];
	h->buckets[k] = ts;
	sess_touch(ts);
	lru_to_tail(h, ts, now_ns());
	pthread_mutex_unlock(&h->mu);
}

void *tp_http_session_find(tp_http *h, const char *id, int legacy)
{
	if (strlen(id) != 32)
		return NULL;
	void *app = NULL;
	pthread_mutex_lock(&h->mu);
	for (tp_http_sess *ts = h->buckets[bucket_of(h, id)]; ts; ts = ts->hnext)
		if (strcmp(ts->id, id) == 0) {
			/* The two kinds share the table, not their ids: a
			 * legacy id in Mcp-Session-Id finds nothing. */
			if (!ts->ended && !ts->gone && ts->legacy == !!legacy) {
				app = ts->app;
				h->cfg.hooks.app_ref(h->cfg.arg, app);
				sess_touch(ts);
			}
			break;
		}
	pthread_mutex_unlock(&h->mu);
	return app;
}

void tp_http_session_set_legacy(tp_http_sess *ts)
{
	pthread_mutex_lock(&ts->mu);
	ts->legacy = 1;
	pthread_mutex_unlock(&ts->mu);
}

void tp_http_session_end(tp_http_sess *ts)
{
	pthread_mutex_lock(&ts->h->mu);
	ts->ended = 1;
	lru_unlink(ts->h, ts); /* no longer one to expire */
	pthread_mutex_unlock(&ts->h->mu);
}

/* The session's output closed (the engine's shutdown finished): a
 * published one leaves the table on the run thread (session_gone). */
static void sess_gone(tp_http_sess *ts)
{
	tp_http *h = ts->h;
	pthread_mutex_lock(&h->mu);
	if (ts->published) {
		if (!ts->gone) {
			ts->gone = 1;
			table_remove(h, ts);
			/* The table's reference moves to the gone list. */
			ts->lru_next = h->gone_list;
			h->gone_list = ts;
		}
	} else if (!ts->gone) {
		ts->gone = 1;
		h->nephemeral--;
	}
	pthread_mutex_unlock(&h->mu);
}

size_t tp_http_sessions(tp_http *h)
{
	pthread_mutex_lock(&h->mu);
	size_t n = h->npublished + h->nephemeral;
	for (tp_http_sess *ts = h->gone_list; ts; ts = ts->lru_next)
		n++;
	pthread_mutex_unlock(&h->mu);
	return n;
}

/* ---- the watch on waiting connections ---------------------------------- */

/* Under ts->mu: watches the socket of st's suspended connection. */
static void watch_add(stream *st)
{
	tp_http_sess *ts = st->ts;
	tp_http *h = ts->h;
	if (st->watch >= 0 || st->fd < 0 || h->epfd < 0)
		return;
	pthread_mutex_lock(&h->watch_mu);
	int i = h->free_watch;
	if (i < 0) {
		int n = h->nwatch ? h->nwatch * 2 : 64;
		watch_slot *w = realloc(h->watches, (size_t)n * sizeof *w);
		if (!w) {
			pthread_mutex_unlock(&h->watch_mu);
			return; /* unwatched: noticed at the next write */
		}
		for (int k = h->nwatch; k < n; k++)
			w[k] = (watch_slot){ .gen = 0, .next_free = k + 1 < n ? k + 1 : -1 };
		h->watches = w;
		h->free_watch = h->nwatch;
		h->nwatch = n;
		i = h->free_watch;
	}
	watch_slot *w = &h->watches[i];
	/* One-shot: once it fired the registration is spent; it is removed
	 * when the attachment ends, not at every wake-up in between (a
	 * broadcast to thousands of streams would cost two system calls
	 * each). */
	struct epoll_event ev = { .events = EPOLLRDHUP | EPOLLONESHOT,
				  .data.u64 = (uint64_t)(w->gen + 1) << 32 | (uint32_t)i };
	if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, st->fd, &ev) != 0) {
		pthread_mutex_unlock(&h->watch_mu);
		return;
	}
	h->free_watch = w->next_free;
	w->gen++;
	w->used = 1;
	w->fd = st->fd;
	w->st = st;
	w->ts = ts;
	sess_ref(ts);
	st->watch = i;
	pthread_mutex_unlock(&h->watch_mu);
}

/* Under ts->mu: st's connection was suspended; its socket is watched from
 * the next tick on (watch_pending), if it still waits then. */
static void watch_later(stream *st)
{
	tp_http *h = st->ts->h;
	if (st->watch >= 0 || st->pw_queued || st->fd < 0 || h->epfd < 0)
		return;
	st->pw_queued = 1;
	st->refs++;
	sess_ref(st->ts);
	pthread_mutex_lock(&h->watch_mu);
	st->pw_next = h->pending_watch;
	h->pending_watch = st;
	pthread_mutex_unlock(&h->watch_mu);
}

/* On the run thread: the connections suspended since the last tick that
 * still wait are watched from now on.  With `watch` 0 (the daemon is
 * stopping) the list is only emptied. */
static void watch_pending(tp_http *h, int watch)
{
	pthread_mutex_lock(&h->watch_mu);
	stream *l = h->pending_watch;
	h->pending_watch = NULL;
	pthread_mutex_unlock(&h->watch_mu);
	while (l) {
		stream *st = l;
		tp_http_sess *ts = st->ts;
		l = st->pw_next;
		pthread_mutex_lock(&ts->mu);
		st->pw_queued = 0;
		if (watch && st->conn && st->suspended)
			watch_add(st);
		stream_unref_locked(st);
		pthread_mutex_unlock(&ts->mu);
		sess_unref(ts);
	}
}

/* Under ts->mu: the connection is no longer suspended (or gone). */
static void watch_del(stream *st)
{
	if (st->watch < 0)
		return;
	tp_http *h = st->ts->h;
	pthread_mutex_lock(&h->watch_mu);
	watch_slot *w = &h->watches[st->watch];
	epoll_ctl(h->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->used = 0;
	w->st = NULL;
	w->ts = NULL;
	w->next_free = h->free_watch;
	h->free_watch = st->watch;
	st->watch = -1;
	pthread_mutex_unlock(&h->watch_mu);
	/* The slot's session reference; never the last one, since whoever
	 * holds the stream's attachment holds another. */
	sess_unref(st->ts);
}

/* Wakes the connection waiting on `st`.  Under ts->mu. */
static void stream_kick(stream *st)
{
	if (st->suspended && st->conn) {
		st->suspended = 0;
		MHD_resume_connection(st->conn);
	}
}

static void att_end_locked(stream *st, unsigned gen);

/* On the run thread (or an HTTP thread, watch_reap): a watched socket
 * hung up. */
static void watch_fired(tp_http *h, uint64_t data)
{
	int i = (int)(uint32_t)data;
	uint32_t gen = (uint32_t)(data >> 32);
	pthread_mutex_lock(&h->watch_mu);
	if (i >= h->nwatch || !h->watches[i].used || h->watches[i].gen != gen) {
		pthread_mutex_unlock(&h->watch_mu);
		return;
	}
	tp_http_sess *ts = h->watches[i].ts;
	sess_ref(ts);
	pthread_mutex_unlock(&h->watch_mu);
	pthread_mutex_lock(&ts->mu);
	/* Still the same registration?  (It is dropped under ts->mu.) */
	pthread_mutex_lock(&h->watch_mu);
	stream *st = h->watches[i].used && h->watches[i].gen == gen ? h->watches[i].st : NULL;
	pthread_mutex_unlock(&h->watch_mu);
	if (st && st->conn) {
		/* Gone, waiting or not (a response being written notices it
		 * too, at its next write). */
		st->peer_gone = 1;
		stream_kick(st);
		/* A GET's stream, and its place under max_streams, are free
		 * now that the hang-up is seen, not once libmicrohttpd gets
		 * round to ending the response: a client that reconnects at
		 * once finds them free.  The old response's reader sees its
		 * attachment gone and ends. */
		if (st->is_get)
			att_end_locked(st, st->gen);
	}
	pthread_mutex_unlock(&ts->mu);
	sess_unref(ts);
}

/* On an HTTP thread, before refusing a GET for a stream or a place that
 * is taken: the hang-ups the watch has seen but the run thread not yet
 * handled are handled now, so that a client that closed a stream and
 * opens another at once is not refused for its own old one.  With no
 * lock held. */
static void watch_reap(tp_http *h)
{
	struct epoll_event evs[64];
	int n;
	do {
		atomic_fetch_add(&h->firing, 1);
		n = epoll_wait(h->epfd, evs, 64, 0);
		for (int i = 0; i < n; i++)
			if (evs[i].data.u64 != UINT64_MAX) /* the run thread's wake-up */
				watch_fired(h, evs[i].data.u64);
		atomic_fetch_sub(&h->firing, 1);
	} while (n == 64);
	/* A hang-up another thread took from the set is handled once it is
	 * done with what it took. */
	while (atomic_load(&h->firing))
		sched_yield();
}

/* On an HTTP thread, when watch_reap did not free what a GET needs: every
 * watched socket is asked directly whether its client hung up (the
 * kernel knows before any thread has told us: libmicrohttpd's own thread
 * may be about to notice it).  One poll(2) over the watched sockets, only
 * on this path.  A registration's socket is its connection's while the
 * slot is used (the slot goes before libmicrohttpd closes the socket), so
 * the snapshot is taken under watch_mu; watch_fired checks the
 * registration again before it acts.  With no lock held. */
static void watch_scan(tp_http *h)
{
	pthread_mutex_lock(&h->watch_mu);
	int n = 0;
	for (int i = 0; i < h->nwatch; i++)
		n += h->watches[i].used;
	struct pollfd *p = n ? malloc((size_t)n * sizeof *p) : NULL;
	uint64_t *key = p ? malloc((size_t)n * sizeof *key) : NULL;
	int k = 0;
	if (key) {
		for (int i = 0; i < h->nwatch && k < n; i++) {
			watch_slot *w = &h->watches[i];
			if (!w->used)
				continue;
			p[k] = (struct pollfd){ .fd = w->fd, .events = POLLRDHUP };
			key[k++] = (uint64_t)w->gen << 32 | (uint32_t)i;
		}
		if (poll(p, (nfds_t)k, 0) <= 0)
			k = 0;
	}
	pthread_mutex_unlock(&h->watch_mu);
	for (int i = 0; i < k; i++)
		if (p[i].revents & (POLLRDHUP | POLLHUP | POLLERR))
			watch_fired(h, key[i]);
	free(p);
	free(key);
}

/* ---- streams ------------------------------------------------------------ */

/* Under ts->mu.  Two references: the session's and the first
 * connection's. */
static stream *stream_new(tp_http_sess *ts, const char *route, int sse)
{
	stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	if (route && !(st->route = strdup(route))) {
		free(st);
		return NULL;
	}
	st->sse = sse;
	st->ts = ts;
	st->num = ++ts->stream_no;
	st->next_seq = 1;
	st->refs = 2;
	st->fd = -1;
	st->watch = -1;
	return st;
}

/* Under ts->mu. */
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
	free(st->answer);
	free(st);
}

static int stream_resumable(const stream *st);

/* A stream no client can resume, read slowly: its unsent events after the
 * one being written, but for the newest, go oldest first until it keeps
 * no more than the backlog.  The answer is always the newest (nothing
 * follows it), so only notifications are lost.  Under ts->mu. */
static void log_trim_unsent(stream *st, size_t backlog)
{
	/* A legacy stream carries answers among its notifications: its
	 * reader is cut off instead (cut_slow_reader). */
	if (!st->cur || stream_resumable(st) || (st->ts->legacy && st->conn))
		return;
	sse_ev *prev = st->cur;
	while (st->kept > backlog && prev->next && prev->next != st->tail) {
		sse_ev *e = prev->next;
		prev->next = e->next;
		st->kept -= e->len;
		st->owed -= e->len;
		free(e);
	}
}

/* Drops the oldest events: delivered ones beyond REPLAY_KEEP, then any
 * beyond the backlog (a client that stays away that long loses the oldest
 * messages rather than the server its memory).  Under ts->mu. */
static void log_trim(stream *st)
{
	size_t backlog = st->ts->h->cfg.stream_backlog;
	for (;;) {
		sse_ev *e = st->head;
		if (!e || e == st->tail) {
			log_trim_unsent(st, backlog);
			return;
		}
		if (e == st->cur) {
			if (st->kept <= backlog || (st->conn && (st->cur_off || st->ts->legacy))) {
				log_trim_unsent(st, backlog);
				return;
			}
			st->owed -= e->len - st->cur_off;
			st->cur = e->next;
			st->cur_off = 0;
		} else if (st->kept <= REPLAY_KEEP) {
			log_trim_unsent(st, backlog);
			return;
		}
		st->head = e->next;
		st->kept -= e->len;
		free(e);
	}
}

/* Appends one event to the log: a message (`data`, without its newline),
 * or with data NULL the priming event (an id, the retry delay, empty
 * data).  `event` names the event type (a legacy stream's first is
 * "endpoint"; every other is "message").  Under ts->mu. */
static int sse_log_event(stream *st, const char *event, const char *data, size_t n)
{
	if (n && data[n - 1] == '\n')
		n--;
	size_t cap = n + 96 + strlen(event);
	sse_ev *e = malloc(sizeof *e + cap);
	if (!e)
		return -1;
	e->next = NULL;
	e->seq = data ? st->next_seq++ : 0;
	int k = !data	     ? snprintf(e->text, cap, "id: %u-0\nretry: %d\ndata: ", st->num, RETRY_MS)
		: st->no_ids ? snprintf(e->text, cap, "event: %s\ndata: ", event)
			     : snprintf(e->text, cap, "id: %u-%llu\nevent: %s\ndata: ", st->num,
					(unsigned long long)e->seq, event);
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
	st->owed += e->len;
	log_trim(st);
	return 0;
}

static int sse_log(stream *st, const char *data, size_t n)
{
	return sse_log_event(st, "message", data, n);
}

/* Whether a client that lost `st`'s connection can get the rest with a
 * GET and Last-Event-ID.  Under ts->mu. */
static int stream_resumable(const stream *st)
{
	return st->sse && !st->no_ids && !st->ts->ephemeral &&
	       (st->ts->features & TP_FEATURE_RESUMABLE);
}

/* A reader attached to `st` that owes more than the backlog is cut off:
 * its socket is shut down, libmicrohttpd ends the response, and the
 * stream stays for a resumption.  The newest event does not count: one
 * message larger than the backlog is delivered whole (the engine made it
 * whole already; the backlog bounds what piles up behind a slow reader,
 * not the size of a message).  A legacy HTTP+SSE stream is cut too, though
 * it cannot be resumed: it carries answers among its notifications, so
 * dropping would lose answers; the cut ends its session instead.  Any
 * other stream that cannot be resumed is never
 * cut, or its answer would be lost: log_trim bounds it instead, dropping
 * its oldest unsent notifications, never the event being written or the
 * newest.  Under ts->mu. */
static void cut_slow_reader(stream *st)
{
	size_t newest = st->tail ? st->tail->len : 0;
	if (st->conn && !st->held && !st->suspended && !st->cut && st->fd >= 0 &&
	    (stream_resumable(st) || st->ts->legacy) && st->owed > newest &&
	    st->owed - newest > st->ts->h->cfg.stream_backlog) {
		st->cut = 1;
		shutdown(st->fd, SHUT_RDWR);
	}
}

/* Unlinks a stream from its session.  Under ts->mu. */
static void stream_detach(tp_http_sess *ts, stream *st)
{
	for (stream **pp = &ts->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			stream_unref_locked(st);
			return;
		}
	if (ts->standalone == st) {
		ts->standalone = NULL;
		stream_unref_locked(st);
	}
}

/* Keeps at most RETAIN_DONE finished, unattached SSE streams for replay,
 * dropping the oldest (the list is newest first).  Under ts->mu. */
static void retain_trim(tp_http_sess *ts)
{
	int n = 0;
	for (stream **pp = &ts->streams; *pp;) {
		stream *st = *pp;
		if (st->sse && st->finished && !st->conn && ++n > RETAIN_DONE) {
			*pp = st->next;
			stream_unref_locked(st);
			continue;
		}
		pp = &st->next;
	}
}

/* The open (unfinished) stream of a request, or NULL.  Under ts->mu. */
static stream *stream_of_route(tp_http_sess *ts, const char *route)
{
	for (stream *s = ts->streams; s; s = s->next)
		if (!s->finished && s->route && strcmp(s->route, route) == 0)
			return s;
	return NULL;
}

/* Whether anything keeps the session from idling: a connection attached
 * or a request in flight.  Under ts->mu. */
static int sess_busy(const tp_http_sess *ts)
{
	if (ts->standalone && ts->standalone->conn)
		return 1;
	for (const stream *st = ts->streams; st; st = st->next)
		if (st->conn || !st->finished)
			return 1;
	return 0;
}

/* ---- the session's transport (the engine's side) ------------------------- */

static int hs_recv(tp_conn *c, const char **line, size_t *len)
{
	(void)c;
	(void)line;
	(void)len;
	return TP_EOF; /* never read: the session is fed */
}

static int hs_send(tp_conn *c, const struct iovec *iov, int n, const _Atomic int64_t *dl)
{
	(void)c;
	(void)iov;
	(void)n;
	(void)dl;
	return 0; /* unused: the writer always calls send_routed */
}

/* Under ts->mu: one line (or end mark) for `st`. */
static void stream_put(tp_http_sess *ts, stream *st, const tp_out *o, int is_standalone)
{
	if (!o->data) {
		/* The request ended without an answer. */
		if (is_standalone)
			return;
		st->finished = 1;
		if (!st->sse)
			stream_detach(ts, st);
		else
			retain_trim(ts);
		stream_kick(st);
		return;
	}
	st->nlines++;
	if (!st->sse) {
		/* A JSON answer carries only the answer. */
		if (!o->is_response)
			return;
		st->answer = malloc(o->len);
		if (st->answer) {
			memcpy(st->answer, o->data, o->len);
			st->answer_len = o->len;
			while (st->answer_len && st->answer[st->answer_len - 1] == '\n')
				st->answer_len--;
		}
		st->finished = 1;
		stream_kick(st);
		stream_detach(ts, st);
		return;
	}
	if (o->is_response && !is_standalone && (!st->conn || st->held) && !st->answer) {
		/* Answered before its response began: kept whole too, so the
		 * POST can be answered as plain JSON (see post_respond). */
		st->answer = malloc(o->len);
		if (st->answer) {
			memcpy(st->answer, o->data, o->len);
			st->answer_len = o->len - 1;
		}
	}
	sse_log(st, o->data, o->len);
	if (o->is_response && !is_standalone) {
		st->finished = 1;
		retain_trim(ts);
	}
	stream_kick(st);
	cut_slow_reader(st);
}

static int hs_send_routed(tp_conn *c, const tp_out *out, int n,
			  const _Atomic int64_t *deadline_ns)
{
	tp_http_sess *ts = (tp_http_sess *)c;
	(void)deadline_ns;
	pthread_mutex_lock(&ts->mu);
	for (int i = 0; i < n; i++) {
		if (ts->legacy) {
			/* HTTP+SSE has one stream for everything, answers
			 * included; a request's end mark means nothing there. */
			if (ts->standalone && !ts->standalone->finished && out[i].data)
				stream_put(ts, ts->standalone, &out[i], 1);
			continue;
		}
		stream *st = out[i].route ? stream_of_route(ts, out[i].route) : NULL;
		/* Not tied to a request with a stream: the standalone stream
		 * if the client opened one (attached now or not: it logs for
		 * the next GET), else it has nowhere to go. */
		int standalone = 0;
		if (!st && !out[i].is_response) {
			st = ts->standalone;
			standalone = 1;
		}
		if (st && !st->finished)
			stream_put(ts, st, &out[i], standalone);
	}
	pthread_mutex_unlock(&ts->mu);
	return 0;
}

static void hs_wake(tp_conn *c)
{
	(void)c; /* no reader to wake */
}

static void hs_close_output(tp_conn *c)
{
	/* Every stream ends: SSE streams close (what they logged stays for
	 * replay until the session is gone), and a POST still waiting for a
	 * JSON answer gets none (its request was cut off by the close). */
	tp_http_sess *ts = (tp_http_sess *)c;
	pthread_mutex_lock(&ts->mu);
	ts->out_closed = 1;
	for (stream *st = ts->streams, *next; st; st = next) {
		next = st->next;
		if (!st->finished) {
			st->finished = 1;
			st->closed = 1;
		}
		stream_kick(st);
		if (!st->sse)
			stream_detach(ts, st);
	}
	if (ts->standalone) {
		ts->standalone->finished = 1;
		stream_kick(ts->standalone);
	}
	pthread_mutex_unlock(&ts->mu);
	sess_gone(ts);
}

/* A JSON answer carries only the answer: a handler's request to the client
 * would have nowhere to go. */
static int hs_can_request(tp_conn *c, const char *route)
{
	tp_http_sess *ts = (tp_http_sess *)c;
	pthread_mutex_lock(&ts->mu);
	stream *st = stream_of_route(ts, route);
	int ok = !st || st->sse;
	pthread_mutex_unlock(&ts->mu);
	return ok;
}

/* mcp_ctx_close_stream: ends the HTTP response carrying a request's SSE
 * stream, after a "retry" field; the stream keeps logging for the GET
 * that resumes it. */
static int hs_close_route(tp_conn *c, const char *route, int retry_ms)
{
	tp_http_sess *ts = (tp_http_sess *)c;
	int rc = 0;
	pthread_mutex_lock(&ts->mu);
	stream *st = stream_of_route(ts, route);
	if (!st)
		rc = -ENOENT;
	else if (!st->sse || !(ts->features & TP_FEATURE_RESUMABLE))
		rc = -ENOTSUP;
	else if (!st->hangup && (st->conn || st->gen == 0)) {
		/* Also before the POST's response has begun (a handler can
		 * be that quick): the response then starts as ended. */
		st->hangup = 1;
		st->hang_upto = st->tail ? (int64_t)st->tail->seq : -1;
		st->hang_len = (size_t)snprintf(st->hang_text, sizeof st->hang_text,
						"retry: %d\n\n", retry_ms);
		st->hang_off = 0;
		stream_kick(st);
	}
	pthread_mutex_unlock(&ts->mu);
	return rc;
}

/* The request of `route` was let through: a held SSE response may begin. */
static void hs_open_route(tp_conn *c, const char *route)
{
	tp_http_sess *ts = (tp_http_sess *)c;
	pthread_mutex_lock(&ts->mu);
	stream *st = stream_of_route(ts, route);
	if (st && st->held && !st->opened) {
		st->opened = 1;
		stream_kick(st);
	}
	pthread_mutex_unlock(&ts->mu);
}

static void hs_set_features(tp_conn *c, unsigned flags)
{
	tp_http_sess *ts = (tp_http_sess *)c;
	pthread_mutex_lock(&ts->mu);
	ts->features = flags;
	pthread_mutex_unlock(&ts->mu);
}

static void hs_free(tp_conn *c)
{
	sess_unref((tp_http_sess *)c);
}

static const struct tp_ops hs_ops = {
	.recv = hs_recv,
	.send = hs_send,
	.send_routed = hs_send_routed,
	.wake = hs_wake,
	.close_output = hs_close_output,
	.close_route = hs_close_route,
	.open_route = hs_open_route,
	.can_request = hs_can_request,
	.set_features = hs_set_features,
	.free = hs_free,
};

/* ---- HTTP responses ---------------------------------------------------------- */

static void add_headers(struct MHD_Response *r, const char *const *headers)
{
	for (; headers && headers[0] && headers[1]; headers += 2)
		MHD_add_response_header(r, headers[0], headers[1]);
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status,
			     const char *content_type, const char *body, size_t len,
			     const char *const *headers, int close)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (content_type)
		MHD_add_response_header(r, "Content-Type", content_type);
	add_headers(r, headers);
	if (close)
		MHD_add_response_header(r, "Connection", "close");
	enum MHD_Result rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

void tp_http_reply(tp_http_req *rq, unsigned status, const char *content_type, const char *body,
		   size_t len, const char *const *headers)
{
	if (rq->answered)
		return;
	rq->answered = queue(rq->conn, status, content_type, body, len, headers, 0) == MHD_YES
			       ? 1
			       : -1;
}

static void reply_answer(tp_http_req *rq, tp_http_answer *a)
{
	char retry[16];
	const char *hdrs[7] = { NULL };
	int k = 0;
	if (a->retry_after_s > 0) {
		snprintf(retry, sizeof retry, "%d", a->retry_after_s);
		hdrs[k++] = "Retry-After";
		hdrs[k++] = retry;
	}
	if (a->www_authenticate) {
		hdrs[k++] = "WWW-Authenticate";
		hdrs[k++] = a->www_authenticate;
	}
	if (rq->session_header) {
		hdrs[k++] = "Mcp-Session-Id";
		hdrs[k++] = rq->session_header;
	}
	tp_http_reply(rq, a->status, a->body ? a->content_type : NULL, a->body, a->body ? a->len : 0,
		      hdrs);
	free(a->body);
	free(a->www_authenticate);
}

/* The post_answer hook's answer for a stream that ended before its
 * response began: with its JSON answer (taken), or none. */
static void answer_ended(tp_http_req *rq, char *line, size_t len, int closed)
{
	tp_http *h = rq->h;
	tp_http_answer a = { .status = 202 };
	h->cfg.hooks.post_answer(h->cfg.arg, rq->app, line, len, closed, &a);
	free(line);
	reply_answer(rq, &a);
}

/* ---- SSE ----------------------------------------------------------------- */

/* One SSE response reading a stream: the attachment `gen` of `st`. */
typedef struct sse_att {
	stream *st;
	unsigned gen;
} sse_att;

/* The attachment `gen` of `st` ended: the stream is free for the next
 * GET at once, before libmicrohttpd gets round to freeing the response.
 * Under ts->mu. */
static void att_end_locked(stream *st, unsigned gen)
{
	if (st->gen != gen || !st->conn)
		return;
	/* The place first, then the watch: a GET that finds the watch gone
	 * (watch_scan) finds the place free. */
	if (st->is_get)
		atomic_fetch_sub(&st->ts->h->get_streams, 1);
	watch_del(st);
	st->conn = NULL;
	st->fd = -1;
	st->suspended = 0;
	st->is_get = 0;
	st->peer_gone = 0;
	st->cut = 0;
	st->hangup = 0;
	st->hang_len = st->hang_off = 0;
	/* A half-sent event is sent whole next time. */
	if (st->cur_off) {
		st->owed += st->cur_off;
		st->cur_off = 0;
	}
	sess_touch(st->ts);
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	sse_att *att = cls;
	stream *st = att->st;
	tp_http_sess *ts = st->ts;
	(void)pos;
	pthread_mutex_lock(&ts->mu);
	if (st->gen != att->gen) {
		pthread_mutex_unlock(&ts->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (st->peer_gone || !st->conn) {
		/* !conn: the watch saw the client go and ended the attachment
		 * (watch_fired).  The client is gone either way, so the end
		 * it would see does not matter; the end libmicrohttpd sees
		 * does.  An error end closes the connection in a pass that
		 * does not clean it up, and libmicrohttpd 0.9.75 finishes
		 * that cleanup only when it walks to the connection again:
		 * after a resume, with an older connection on the same
		 * thread, that waits for the thread's next wake-up, however
		 * late, and the descriptor stays open till then.  A normal
		 * end writes the last chunk, whose failed write (or the read
		 * of the client's end) closes the connection through the
		 * path that cleans it up.  The request's end still says the
		 * client left (on_completed reads left_end). */
		st->left_end = 1;
		pthread_mutex_unlock(&ts->mu);
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
		st->owed -= n;
		if (st->cur_off == e->len) {
			st->cur = e->next;
			st->cur_off = 0;
			log_trim(st);
		}
		pthread_mutex_unlock(&ts->mu);
		return (ssize_t)n;
	}
	if (st->hangup && st->hang_off < st->hang_len) {
		size_t n = st->hang_len - st->hang_off;
		if (n > max)
			n = max;
		memcpy(buf, st->hang_text + st->hang_off, n);
		st->hang_off += n;
		pthread_mutex_unlock(&ts->mu);
		return (ssize_t)n;
	}
	if (st->hangup || st->finished) {
		att_end_locked(st, att->gen);
		pthread_mutex_unlock(&ts->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	/* Nothing to send: park the connection until output or a hang-up.
	 * A GET's stream waits long as a rule, and its place must be free
	 * as soon as its client leaves: watched at once. */
	st->suspended = 1;
	MHD_suspend_connection(st->conn);
	if (st->is_get)
		watch_add(st);
	else
		watch_later(st);
	pthread_mutex_unlock(&ts->mu);
	return 0;
}

static void sse_free(void *cls)
{
	sse_att *att = cls;
	stream *st = att->st;
	tp_http_sess *ts = st->ts;
	/* The response ended: the stream ran out, a handler hung up, or the
	 * client went away.  None of these cancels anything (2025-11-25); the
	 * stream stays in the session, logging, for a GET with Last-Event-ID
	 * (a 2026-07-28 request's ends with its POST: request_done). */
	pthread_mutex_lock(&ts->mu);
	att_end_locked(st, att->gen);
	stream_unref_locked(st);
	retain_trim(ts);
	pthread_mutex_unlock(&ts->mu);
	free(att);
	sess_unref(ts);
}

/* Attaches `conn` to `st`.  Under ts->mu. */
static void attach_locked(stream *st, struct MHD_Connection *conn)
{
	st->conn = conn;
	st->gen++;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	st->fd = ci ? ci->connect_fd : -1;
	st->peer_gone = 0;
	st->left_end = 0;
	st->cut = 0;
}

/* Queues the SSE response reading `st`, attached under ts->mu by the
 * caller with a stream and a session reference for the response, which
 * sse_free gives back. */
static enum MHD_Result start_sse(struct MHD_Connection *conn, stream *st, const char *sid)
{
	tp_http_sess *ts = st->ts;
	sse_att *att = malloc(sizeof *att);
	struct MHD_Response *r = NULL;
	if (att) {
		pthread_mutex_lock(&ts->mu);
		*att = (sse_att){ st, st->gen };
		pthread_mutex_unlock(&ts->mu);
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK, sse_reader, att,
						      sse_free);
	}
	if (!r) {
		pthread_mutex_lock(&ts->mu);
		att_end_locked(st, st->gen);
		stream_unref_locked(st);
		pthread_mutex_unlock(&ts->mu);
		free(att);
		sess_unref(ts);
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

/* ---- POST ---------------------------------------------------------------- */

int tp_http_post_open(tp_http_req *rq, tp_http_sess *ts, const char *route, unsigned flags)
{
	int sse = (flags & TP_HTTP_SSE) != 0;
	pthread_mutex_lock(&ts->mu);
	if (ts->out_closed) {
		pthread_mutex_unlock(&ts->mu);
		return -EPIPE;
	}
	if (stream_of_route(ts, route)) {
		/* P5 over HTTP: the first request keeps its stream. */
		pthread_mutex_unlock(&ts->mu);
		return -EEXIST;
	}
	stream *st = stream_new(ts, route, sse);
	if (st) {
		st->no_ids = (flags & TP_HTTP_NO_IDS) != 0;
		st->held = sse && (flags & TP_HTTP_HOLD) != 0;
	}
	if (!st || (sse && !st->no_ids && (ts->features & TP_FEATURE_RESUMABLE) &&
		    sse_log(st, NULL, 0) != 0)) {
		if (st) {
			st->refs = 1;
			stream_unref_locked(st);
		}
		pthread_mutex_unlock(&ts->mu);
		return -ENOMEM;
	}
	st->next = ts->streams;
	ts->streams = st;
	pthread_mutex_unlock(&ts->mu);
	sess_ref(ts);
	rq->st = st; /* the request's stream reference */
	rq->ts = ts;
	return 0;
}

/* A resumed JSON POST, or one answered at once: the answer (or its
 * absence) goes out as a plain response. */
static void post_answer_now(tp_http_req *rq)
{
	stream *st = rq->st;
	tp_http_sess *ts = rq->ts;
	pthread_mutex_lock(&ts->mu);
	char *line = st->answer;
	size_t len = st->answer_len;
	int closed = st->closed;
	st->answer = NULL;
	watch_del(st);
	st->conn = NULL;
	st->fd = -1;
	stream_detach(ts, st);
	stream_unref_locked(st);
	rq->st = NULL;
	pthread_mutex_unlock(&ts->mu);
	answer_ended(rq, line, len, closed);
}

/* Whether a held SSE stream must still wait before its response begins:
 * not let through, nothing to send, not ended, no hang-up.  Under ts->mu. */
static int held_waits(const stream *st)
{
	return st->held && !st->opened && !st->finished && st->nlines == 0 && !st->hangup;
}

/* Begins the answer of an SSE POST that need not wait (any more): as SSE,
 * or, for a held one that ended first with at most its answer (a refusal,
 * an error given before it ran), as plain JSON, whose status the
 * post_answer hook chooses. */
static void sse_begin(tp_http_req *rq)
{
	stream *st = rq->st;
	tp_http_sess *ts = rq->ts;
	pthread_mutex_lock(&ts->mu);
	if (st->held && !st->opened && st->finished && st->nlines <= 1 && !st->hangup) {
		pthread_mutex_unlock(&ts->mu);
		post_answer_now(rq);
		return;
	}
	st->held = 0;
	st->refs++; /* the response's */
	pthread_mutex_unlock(&ts->mu);
	sess_ref(ts);
	rq->answered = start_sse(rq->conn, st, rq->session_header) == MHD_YES ? 1 : -1;
}

void tp_http_post_respond(tp_http_req *rq, int admitted, const char *session_header)
{
	stream *st = rq->st;
	tp_http_sess *ts = rq->ts;
	free(rq->session_header);
	rq->session_header = session_header ? strdup(session_header) : NULL;
	pthread_mutex_lock(&ts->mu);
	/* Answered by the feed itself (a refusal, an answer given at once):
	 * one plain JSON response, whatever the client accepts, so that its
	 * status can say what the answer says.  Nothing admitted and nothing
	 * answered: nothing will come, likewise with no line.  A request that
	 * went to a worker is answered as the client asked, however quick. */
	int plain = !st->sse ? st->finished : !admitted && (st->finished || st->nlines == 0);
	if (plain) {
		if (!st->finished) {
			st->finished = 1; /* nothing will come */
			stream_detach(ts, st);
		}
		pthread_mutex_unlock(&ts->mu);
		post_answer_now(rq);
		return;
	}
	attach_locked(st, rq->conn);
	if (st->sse && !held_waits(st)) {
		pthread_mutex_unlock(&ts->mu);
		sse_begin(rq);
		return;
	}
	/* JSON, or SSE held back: the connection waits, suspended and
	 * watched, until there is something to say; then libmicrohttpd calls
	 * us again (on_request). */
	st->suspended = 1;
	rq->waiting = 1;
	MHD_suspend_connection(rq->conn);
	watch_later(st);
	pthread_mutex_unlock(&ts->mu);
	rq->answered = 1;
}

/* ---- GET ------------------------------------------------------------------ */

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

/* Takes a place under max_streams for a GET: 0, or -EAGAIN when none is
 * free even after the hang-ups not yet handled are. */
static int get_place(tp_http *h)
{
	if (atomic_fetch_add(&h->get_streams, 1) >= h->cfg.max_streams) {
		atomic_fetch_sub(&h->get_streams, 1);
		watch_reap(h);
		if (atomic_fetch_add(&h->get_streams, 1) >= h->cfg.max_streams) {
			atomic_fetch_sub(&h->get_streams, 1);
			watch_scan(h);
			if (atomic_fetch_add(&h->get_streams, 1) >= h->cfg.max_streams) {
				atomic_fetch_sub(&h->get_streams, 1);
				return -EAGAIN;
			}
		}
	}
	return 0;
}

/* The end of a GET that holds its place under max_streams (get_place):
 * with `rc` 0, attaches `st` to the request as the session's stream and
 * starts it; else gives the place back.  Called under ts->mu, which it
 * releases.  Returns `rc`. */
static int get_finish_locked(tp_http_req *rq, tp_http_sess *ts, stream *st, int rc)
{
	if (rc) {
		pthread_mutex_unlock(&ts->mu);
		atomic_fetch_sub(&rq->h->get_streams, 1);
		return rc;
	}
	attach_locked(st, rq->conn);
	st->is_get = 1;
	/* Watched from the start, not only once it waits: a client that
	 * leaves before its stream's first wait frees its place as soon. */
	watch_add(st);
	pthread_mutex_unlock(&ts->mu);
	sess_touch(ts);
	sess_ref(ts);
	rq->answered = start_sse(rq->conn, st, NULL) == MHD_YES ? 1 : -1;
	return 0;
}

int tp_http_get(tp_http_req *rq, tp_http_sess *ts, const char *last)
{
	tp_http *h = rq->h;
	unsigned num = 0;
	uint64_t seq = 0;
	if (last && parse_event_id(last, &num, &seq) != 0)
		return -EINVAL;
	if (get_place(h))
		return -EAGAIN;
	int rc = 0;
	int reaped = 0;
again:
	pthread_mutex_lock(&ts->mu);
	stream *st = NULL;
	if (last) {
		if (ts->standalone && ts->standalone->num == num)
			st = ts->standalone;
		for (stream *s = ts->streams; s && !st; s = s->next)
			if (s->sse && s->num == num)
				st = s;
		if (!st)
			rc = -ENOENT;
	} else {
		st = ts->standalone;
		if (!st && ts->out_closed)
			rc = -EPIPE;
	}
	if (!rc && st && st->conn) {
		if (!reaped) {
			/* Perhaps its client just left: see (once). */
			pthread_mutex_unlock(&ts->mu);
			watch_reap(h);
			watch_scan(h);
			reaped = 1;
			goto again;
		}
		rc = -EBUSY;
	}
	if (!rc && st) {
		/* Re-attach; with Last-Event-ID, replay from the event after
		 * it (or the oldest kept, if it is gone). */
		if (last) {
			st->cur = st->head;
			st->owed = 0;
			while (st->cur && st->cur->seq <= seq)
				st->cur = st->cur->next;
			for (sse_ev *e = st->cur; e; e = e->next)
				st->owed += e->len;
			st->cur_off = 0;
		}
		st->refs++;
	} else if (!rc) {
		st = stream_new(ts, NULL, 1);
		if (!st || ((ts->features & TP_FEATURE_RESUMABLE) && sse_log(st, NULL, 0) != 0)) {
			if (st) {
				st->refs = 1;
				stream_unref_locked(st);
			}
			rc = -ENOMEM;
		} else {
			ts->standalone = st;
		}
	}
	return get_finish_locked(rq, ts, st, rc);
}

int tp_http_legacy_get(tp_http_req *rq, tp_http_sess *ts, const char *endpoint)
{
	tp_http *h = rq->h;
	if (get_place(h))
		return -EAGAIN;
	int rc = 0;
	pthread_mutex_lock(&ts->mu);
	stream *st = NULL;
	if (ts->out_closed)
		rc = -EPIPE;
	else if (ts->standalone)
		rc = -EBUSY; /* its one stream, never resumed */
	else if (!(st = stream_new(ts, NULL, 1)))
		rc = -ENOMEM;
	if (st) {
		/* No ids: 2024-11-05 has no resumption, and an id would
		 * invite a Last-Event-ID nobody serves. */
		st->no_ids = 1;
		if (sse_log_event(st, "endpoint", endpoint, strlen(endpoint)) != 0) {
			st->refs = 1;
			stream_unref_locked(st);
			rc = -ENOMEM;
		} else {
			ts->standalone = st;
		}
	}
	return get_finish_locked(rq, ts, st, rc);
}

/* ---- connection clocks (tp_http.h: header_timeout_ms, body_timeout_ms) ---- */

/* Under clock_mu. */
static void clock_unlink(tp_http *h, conn_clock *c)
{
	if (c->list == CLOCK_NONE)
		return;
	int l = c->list;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->clock_head[l] = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		h->clock_tail[l] = c->prev;
	c->prev = c->next = NULL;
	c->list = CLOCK_NONE;
}

/* Under clock_mu: `c` runs on list `l` (CLOCK_NONE: stopped) from `now`. */
static void clock_start(tp_http *h, conn_clock *c, int l, int64_t now)
{
	clock_unlink(h, c);
	if (c->refused || l == CLOCK_NONE)
		return;
	c->list = l;
	c->since = now;
	c->prev = h->clock_tail[l];
	c->next = NULL;
	if (h->clock_tail[l])
		h->clock_tail[l]->next = c;
	else
		h->clock_head[l] = c;
	h->clock_tail[l] = c;
}

static void clock_set(tp_http *h, conn_clock *c, int l)
{
	if (!c)
		return;
	pthread_mutex_lock(&h->clock_mu);
	clock_start(h, c, l, l == CLOCK_NONE ? 0 : now_ns());
	pthread_mutex_unlock(&h->clock_mu);
}

/* Under clock_mu: refuses `c`'s connection with `status` and a JSON-RPC
 * error, written on its socket below libmicrohttpd, which cannot queue a
 * response before a request's header is in or while its body comes in
 * (the only times this is called: nothing else is being written there),
 * then shuts the socket down; libmicrohttpd reads the end and closes it.
 * The answer is a few hundred bytes into an idle socket's send buffer. */
static void clock_refuse(tp_http *h, conn_clock *c, unsigned status, const char *reason, int code,
			 const char *message, int retry_after)
{
	char body[320], head[256];
	int bn = snprintf(body, sizeof body,
			  "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}",
			  code, message);
	if (bn < 0 || (size_t)bn >= sizeof body)
		bn = 0;
	int hn = snprintf(head, sizeof head,
			  "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
			  "%sConnection: close\r\n\r\n",
			  status, reason, bn, retry_after ? "Retry-After: 1\r\n" : "");
	if (hn > 0 && (size_t)hn < sizeof head) {
		struct iovec iov[2] = { { head, (size_t)hn }, { body, (size_t)bn } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		(void)sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	shutdown(c->fd, SHUT_RDWR);
	c->refused = 1;
	clock_unlink(h, c);
}

/* On the run thread: connections past their header or body limit are
 * told 408 and closed; idle kept-alive ones are closed. */
static void clock_expire(tp_http *h, int64_t now)
{
	static const char *const what[2] = { "header", "body" };
	pthread_mutex_lock(&h->clock_mu);
	for (int l = CLOCK_HEADER; l <= CLOCK_IDLE; l++) {
		int64_t ms = l == CLOCK_HEADER ? h->cfg.header_timeout_ms
			     : l == CLOCK_BODY ? h->cfg.body_timeout_ms
			     : h->cfg.header_timeout_ms > KEEPALIVE_MS ? h->cfg.header_timeout_ms
								       : KEEPALIVE_MS;
		/* 0 (a configuration that sets none): no limit, never "at
		 * once" (every connection would be refused at the next tick). */
		if (ms <= 0)
			continue;
		conn_clock *c;
		while ((c = h->clock_head[l]) && now - c->since >= ms * 1000000) {
			if (l == CLOCK_IDLE) {
				shutdown(c->fd, SHUT_RDWR);
				c->refused = 1;
				clock_unlink(h, c);
				continue;
			}
			char msg[128];
			snprintf(msg, sizeof msg,
				 "Request Timeout: the request's %s took longer than %lld ms", what[l],
				 (long long)ms);
			clock_refuse(h, c, 408, "Request Timeout", -32600, msg, 0);
		}
	}
	pthread_mutex_unlock(&h->clock_mu);
}

/* ---- the daemon's callbacks ------------------------------------------------ */

const char *tp_http_req_method(const tp_http_req *rq)
{
	return rq->method;
}

const char *tp_http_req_path(const tp_http_req *rq)
{
	return rq->url;
}

const char *tp_http_req_header(tp_http_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

typedef struct header_join {
	const char *name;
	int count;
	char *joined;               /* "v1, v2, ..." (RFC 9110 section 5.3) */
	int failed;
} header_join;

static enum MHD_Result header_collect(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	header_join *j = cls;
	(void)kind;
	if (!key || strcasecmp(key, j->name) != 0)
		return MHD_YES;
	j->count++;
	char *g = NULL;
	if (asprintf(&g, "%s%s%s", j->joined ? j->joined : "", j->joined ? ", " : "",
		     value ? value : "") < 0) {
		j->failed = 1;
		return MHD_NO;
	}
	free(j->joined);
	j->joined = g;
	return MHD_YES;
}

int tp_http_req_header_all(tp_http_req *rq, const char *name, char **joined)
{
	header_join j = { name, 0, NULL, 0 };
	MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, header_collect, &j);
	if (j.failed) {
		free(j.joined);
		*joined = NULL;
		return -ENOMEM;
	}
	*joined = j.joined;
	return j.count;
}

typedef struct query_find {
	const char *name;
	int found;
} query_find;

static enum MHD_Result query_param(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	query_find *q = cls;
	(void)kind;
	(void)value;
	if (key && strcmp(key, q->name) == 0) {
		q->found = 1;
		return MHD_NO; /* enough */
	}
	return MHD_YES;
}

int tp_http_req_has_query_param(tp_http_req *rq, const char *name)
{
	/* libmicrohttpd splits the query into GET arguments, names and
	 * values percent-decoded; the path it hands over has no query. */
	query_find q = { name, 0 };
	MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, query_param, &q);
	return q.found;
}

const char *tp_http_req_query(tp_http_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *tp_http_req_body(const tp_http_req *rq, size_t *len)
{
	*len = rq->len;
	return rq->body ? rq->body : "";
}

void tp_http_req_set_app(tp_http_req *rq, void *app)
{
	rq->app = app;
}

/* Counts the headers that decide how long a body is. */
typedef struct framing {
	int content_length, transfer_encoding;
} framing;

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	framing *f = cls;
	(void)kind;
	(void)value;
	if (strcasecmp(key, "Content-Length") == 0)
		f->content_length++;
	else if (strcasecmp(key, "Transfer-Encoding") == 0)
		f->transfer_encoding++;
	return MHD_YES;
}

static const char ambiguous_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Bad Request: "
	"ambiguous message length (several Content-Length headers, or Content-Length with "
	"Transfer-Encoding)\"}}";
static const char busy_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32050,\"message\":\"Server busy: "
	"too many connections\"}}";
static const char stopping_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32050,\"message\":\"Server busy: "
	"shutting down\"}}";
static const char unanswered_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"Internal "
	"error: the request was not answered\"}}";
/* The 413's message, naming the limit, and its JSON-RPC body. */
static void too_big_message(const tp_http *h, char *out, size_t n, int declared)
{
	snprintf(out, n, "Invalid Request: message exceeds the size limit (%zu bytes)%s",
		 h->cfg.max_message, declared ? ": refused on its Content-Length" : "");
}

static int too_big_text(const tp_http *h, char *out, size_t n, int declared)
{
	char msg[160];
	too_big_message(h, msg, sizeof msg, declared);
	return snprintf(out, n,
			"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
			"\"%s\"}}",
			msg);
}
static const char *const retry_1[] = { "Retry-After", "1", NULL };

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	tp_http *h = cls;
	(void)version;
	tp_http_req *rq = *con_cls;
	if (!rq) {
		rq = calloc(1, sizeof *rq);
		if (!rq)
			return MHD_NO;
		rq->h = h;
		rq->conn = conn;
		rq->method = method;
		rq->url = url;
		*con_cls = rq;
		atomic_fetch_add(&h->requests_open, 1);
		/* The header is in: its clock stops, and the body's runs until
		 * the final call below.  A request refused here has none (its
		 * answer is being written; the connection closes after it). */
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		rq->clock = ci ? ci->socket_context : NULL;
		clock_set(h, rq->clock, CLOCK_NONE);
		/* RFC 9112 section 6.3: a message whose length is ambiguous
		 * is refused and the connection closed, or a proxy in front
		 * and this server could split it differently (smuggling). */
		framing f = { 0, 0 };
		MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f);
		if (f.content_length > 1 || (f.content_length && f.transfer_encoding)) {
			rq->refused = 1;
			return queue(conn, MHD_HTTP_BAD_REQUEST, "application/json", ambiguous_body,
				     sizeof ambiguous_body - 1, NULL, 1);
		}
		if (atomic_load(&h->live) > h->cfg.max_connections) {
			rq->refused = 1;
			return queue(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json", busy_body,
				     sizeof busy_body - 1, retry_1, 1);
		}
		/* A body declared past the limit is refused now, before any
		 * of it is read (libmicrohttpd then closes the connection,
		 * its body unread). */
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
		if (cl) {
			char *end;
			errno = 0;
			unsigned long long n = strtoull(cl, &end, 10);
			if (end != cl && !*end && (errno == ERANGE || n > h->cfg.max_message)) {
				char body[256];
				int bn = too_big_text(h, body, sizeof body, 1);
				rq->refused = 1;
				return queue(conn, MHD_HTTP_CONTENT_TOO_LARGE, "application/json", body,
					     (size_t)bn, NULL, 1);
			}
		}
		clock_set(h, rq->clock, CLOCK_BODY);
		return MHD_YES;
	}
	if (rq->refused)
		return MHD_YES; /* the rest of a refused request's body */
	/* A response may only be queued once the body is in: bodies are
	 * gathered first, every check runs on the final call. */
	if (*upload_size) {
		if (rq->raw_refused) {
			*upload_size = 0; /* read and dropped until the connection ends */
			return MHD_YES;
		}
		if (rq->len + *upload_size > h->cfg.max_message) {
			rq->too_big = 1;
			/* A body of unknown length (chunked) crossed the
			 * limit: refused now, on the socket (no response can
			 * be queued while a body comes in). */
			if (rq->clock) {
				char msg[160];
				too_big_message(h, msg, sizeof msg, 0);
				pthread_mutex_lock(&h->clock_mu);
				if (!rq->clock->refused)
					clock_refuse(h, rq->clock, MHD_HTTP_CONTENT_TOO_LARGE,
						     "Content Too Large", -32600, msg, 0);
				pthread_mutex_unlock(&h->clock_mu);
				rq->raw_refused = 1;
				free(rq->body);
				rq->body = NULL;
				rq->len = rq->cap = 0;
			}
		} else if (!rq->too_big) {
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
	if (rq->clock) {
		/* The body is in (or there was none): no clock until the
		 * answer has been sent.  One that ran out has been answered. */
		pthread_mutex_lock(&h->clock_mu);
		int refused = rq->clock->refused;
		clock_start(h, rq->clock, CLOCK_NONE, 0);
		pthread_mutex_unlock(&h->clock_mu);
		if (refused || rq->raw_refused)
			return MHD_NO;
	}
	if (rq->waiting) {
		/* Resumed: the JSON answer is in, the stream ended without
		 * one, or the client hung up. */
		rq->waiting = 0;
		pthread_mutex_lock(&rq->ts->mu);
		int gone = rq->st->peer_gone;
		pthread_mutex_unlock(&rq->ts->mu);
		if (gone)
			return MHD_NO; /* closes the connection; on_completed cleans up */
		rq->answered = 0;
		pthread_mutex_lock(&rq->ts->mu);
		int sse = rq->st->sse;
		pthread_mutex_unlock(&rq->ts->mu);
		if (sse)
			sse_begin(rq); /* a held SSE response */
		else
			post_answer_now(rq);
		return rq->answered > 0 ? MHD_YES : MHD_NO;
	}
	if (rq->answered)
		return rq->answered > 0 ? MHD_YES : MHD_NO;
	if (atomic_load(&h->refusing)) {
		rq->answered = queue(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
				     stopping_body, sizeof stopping_body - 1, retry_1, 1) == MHD_YES
				       ? 1
				       : -1;
	} else if (rq->too_big) {
		char body[256];
		int bn = too_big_text(h, body, sizeof body, 0);
		tp_http_reply(rq, MHD_HTTP_CONTENT_TOO_LARGE, "application/json", body, (size_t)bn,
			      NULL);
	} else {
		h->cfg.hooks.request(h->cfg.arg, rq);
		if (!rq->answered)
			tp_http_reply(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "application/json",
				      unanswered_body, sizeof unanswered_body - 1, NULL);
	}
	return rq->answered > 0 ? MHD_YES : MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	tp_http *h = cls;
	(void)conn;
	tp_http_req *rq = *con_cls;
	if (!rq)
		return;
	int client_left = toe != MHD_REQUEST_TERMINATED_COMPLETED_OK;
	if (rq->st) {
		/* A JSON client left before its answer: its stream goes (the
		 * answer, if any comes, has nowhere to go).  An SSE stream's
		 * attachment is its response's, which ends next (sse_free). */
		tp_http_sess *ts = rq->ts;
		pthread_mutex_lock(&ts->mu);
		stream *st = rq->st;
		if (st->left_end)
			client_left = 1; /* ended normally, for its client left */
		if (!st->sse || st->held) {
			/* An SSE response that never began is dropped like a JSON
			 * one: its client saw no event id to resume from. */
			if (st->conn == conn) {
				watch_del(st);
				st->conn = NULL;
				st->fd = -1;
				st->suspended = 0;
			}
			stream_detach(ts, st);
		}
		stream_unref_locked(st);
		pthread_mutex_unlock(&ts->mu);
	}
	/* Kept alive, the connection idles from now (libmicrohttpd reports a
	 * connection closed after its last request completed, so the clock
	 * is still there). */
	clock_set(h, rq->clock, CLOCK_IDLE);
	if (rq->app && h->cfg.hooks.request_done)
		h->cfg.hooks.request_done(h->cfg.arg, rq->app, client_left);
	if (rq->ts)
		sess_unref(rq->ts);
	free(rq->session_header);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
	atomic_fetch_sub(&h->requests_open, 1);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	tp_http *h = cls;
	if (toe != MHD_CONNECTION_NOTIFY_STARTED) {
		conn_clock *c = *socket_context;
		if (c) {
			pthread_mutex_lock(&h->clock_mu);
			clock_unlink(h, c);
			if (!c->evicted)
				atomic_fetch_sub(&h->live, 1);
			pthread_mutex_unlock(&h->clock_mu);
			free(c);
			*socket_context = NULL;
		} else {
			atomic_fetch_sub(&h->live, 1);
		}
		return;
	}
	unsigned n = atomic_fetch_add(&h->live, 1) + 1;
	conn_clock *c = calloc(1, sizeof *c);
	if (c) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		c->fd = ci ? ci->connect_fd : -1;
		c->list = CLOCK_NONE;
		if (c->fd < 0) {
			free(c);
			c = NULL;
		}
	}
	*socket_context = c;
	pthread_mutex_lock(&h->clock_mu);
	if (c)
		clock_start(h, c, CLOCK_HEADER, now_ns());
	/* Past the limit, room is made: the connection whose header has
	 * been coming in longest (a client trickling it), or that has been
	 * idle longest since its last request, is told 503 and closed, so
	 * that a table full of slow clients cannot keep a new one out.  A
	 * client that sends its header at once is the newest, and never the
	 * one closed. */
	if (n > h->cfg.max_connections) {
		conn_clock *old = h->clock_head[CLOCK_HEADER];
		conn_clock *idle = h->clock_head[CLOCK_IDLE];
		if (!old || (idle && idle->since < old->since))
			old = idle;
		if (old && old != c) {
			clock_refuse(h, old, MHD_HTTP_SERVICE_UNAVAILABLE, "Service Unavailable",
				     -32050, "Server busy: too many connections", 1);
			old->evicted = 1;
			atomic_fetch_sub(&h->live, 1);
		}
	}
	pthread_mutex_unlock(&h->clock_mu);
}

/* ---- the daemon ---------------------------------------------------------------- */

int tp_http_start(const tp_http_config *cfg, tp_http **out, int *bound_port)
{
	if (tp_mhd_load() != 0)
		return -ENOTSUP;
	tp_http *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	atomic_init(&h->refs, 1);
	h->nbuckets = 64;
	h->buckets = calloc(h->nbuckets, sizeof *h->buckets);
	h->epfd = epoll_create1(EPOLL_CLOEXEC);
	h->free_watch = -1;
	if (!h->buckets || h->epfd < 0) {
		int rc = h->epfd < 0 ? -errno : -ENOMEM;
		if (h->epfd >= 0)
			close(h->epfd);
		free(h->buckets);
		free(h);
		return rc;
	}
	pthread_mutex_init(&h->mu, NULL);
	pthread_mutex_init(&h->watch_mu, NULL);
	pthread_mutex_init(&h->clock_mu, NULL);
	int v6 = cfg->addr->sa_family == AF_INET6;
	/* The caller's handle is set before the daemon's threads exist: a
	 * request may reach the hooks (which use it) at once. */
	*out = h;
	/* No MHD_USE_ERROR_LOG: a library does not write to the application's
	 * stderr; a client that hangs up mid-stream is not an error here.
	 * The daemon admits a few connections past the limit so that they
	 * hear 503 rather than a reset. */
	/* Its threads inherit this mask: SIGPIPE blocked in them, the
	 * process's disposition untouched (transport/sigpipe.h). */
	tp_sigpipe quiet;
	tp_sigpipe_block(&quiet);
	h->daemon = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | (v6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, cfg->addr,
		MHD_OPTION_THREAD_POOL_SIZE, cfg->http_threads, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
		MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections + CONN_HEADROOM,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_END);
	tp_sigpipe_restore(&quiet);
	if (!h->daemon) {
		int e = errno ? errno : EADDRINUSE;
		*out = NULL;
		close(h->epfd);
		pthread_mutex_destroy(&h->mu);
		pthread_mutex_destroy(&h->watch_mu);
		pthread_mutex_destroy(&h->clock_mu);
		free(h->buckets);
		free(h);
		return -e;
	}
	if (bound_port) {
		const union MHD_DaemonInfo *info =
			MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
		*bound_port = info ? info->port : 0;
	}
	return 0;
}

/* On the run thread: idle sessions expire, oldest activity first, and
 * sessions whose output closed leave. */
static void housekeeping(tp_http *h, int64_t now, int expire)
{
	/* The LRU list is in the order sessions were put at its end (their
	 * lru_pos_ns), and a use only stores the time (sess_touch).  A pass
	 * looks at the sessions put there more than half an idle period ago:
	 * one used since goes back to the end, one idle too long expires.
	 * So each session is looked at about twice per idle period whatever
	 * the number of sessions, and one expires within one and a half idle
	 * periods of its last use. */
	int64_t idle = h->cfg.session_idle_ms * 1000000;
	while (expire) {
		void *app = NULL;
		pthread_mutex_lock(&h->mu);
		tp_http_sess *ts = h->lru_head;
		if (!ts || now - ts->lru_pos_ns < idle / 2) {
			pthread_mutex_unlock(&h->mu);
			break;
		}
		if (now - atomic_load_explicit(&ts->last_active_ns, memory_order_relaxed) <= idle) {
			lru_to_tail(h, ts, now);
		} else {
			pthread_mutex_lock(&ts->mu);
			int busy = sess_busy(ts);
			pthread_mutex_unlock(&ts->mu);
			if (busy) {
				sess_touch(ts); /* looked at again in a while */
				lru_to_tail(h, ts, now);
			} else {
				/* Expired.  The table's reference keeps the app
				 * alive: only this thread drops it (below). */
				ts->ended = 1;
				lru_unlink(h, ts);
				app = ts->app;
			}
		}
		pthread_mutex_unlock(&h->mu);
		if (app)
			h->cfg.hooks.session_expired(h->cfg.arg, app);
	}
	pthread_mutex_lock(&h->mu);
	tp_http_sess *gone = h->gone_list;
	h->gone_list = NULL;
	pthread_mutex_unlock(&h->mu);
	while (gone) {
		tp_http_sess *next = gone->lru_next;
		gone->lru_next = NULL;
		h->cfg.hooks.session_gone(h->cfg.arg, gone->app);
		sess_unref(gone); /* the table's */
		gone = next;
	}
}

void tp_http_run(tp_http *h, int wake_fd, int64_t until_ns)
{
	if (wake_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = UINT64_MAX };
		epoll_ctl(h->epfd, EPOLL_CTL_ADD, wake_fd, &ev);
	}
	int64_t next_tick = now_ns();
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(h->epfd, evs, 64, TICK_MS);
		int woken = 0;
		if (n > 0)
			atomic_fetch_add(&h->firing, 1); /* see watch_reap */
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == UINT64_MAX)
				woken = 1;
			else
				watch_fired(h, evs[i].data.u64);
		}
		if (n > 0)
			atomic_fetch_sub(&h->firing, 1);
		int64_t now = now_ns();
		if (now >= next_tick) {
			next_tick = now + TICK_MS * 1000000;
			watch_pending(h, 1);
			clock_expire(h, now);
			housekeeping(h, now, 1);
			if (h->cfg.hooks.tick)
				h->cfg.hooks.tick(h->cfg.arg, now);
		}
		if (woken)
			break;
		/* The shutdown's wait ends when every session is done and
		 * every response begun has been handed to its client (a
		 * stateless request's session can be gone while its answer
		 * is still on the way out), or at the deadline. */
		if (wake_fd < 0 && (now >= until_ns || (tp_http_sessions(h) == 0 &&
							atomic_load(&h->requests_open) == 0)))
			break;
	}
	if (wake_fd >= 0)
		epoll_ctl(h->epfd, EPOLL_CTL_DEL, wake_fd, NULL);
}

void tp_http_refuse(tp_http *h)
{
	/* From now on every request, on a connection open or new, is told
	 * 503 with Retry-After and its connection closed, until the daemon
	 * stops and its listening socket with it.  MHD_quiesce_daemon, which
	 * would stop the listening sooner, is not used: on a daemon whose
	 * threads run epoll it races those threads' own removal of the
	 * listening socket from their epoll sets, and the loser aborts the
	 * process ("Failed to remove listen FD from epoll set", an open
	 * libmicrohttpd defect, seen here in make distcheck). */
	atomic_store(&h->refusing, 1);
}

static void http_unref(tp_http *h)
{
	if (atomic_fetch_sub(&h->refs, 1) != 1)
		return;
	close(h->epfd);
	free(h->watches);
	free(h->buckets);
	pthread_mutex_destroy(&h->mu);
	pthread_mutex_destroy(&h->watch_mu);
	pthread_mutex_destroy(&h->clock_mu);
	free(h);
}

void tp_http_stop(tp_http *h)
{
	/* Every response ends with the daemon (their connections close, and
	 * with them every watch). */
	MHD_stop_daemon(h->daemon);
	h->daemon = NULL;
	watch_pending(h, 0);
	housekeeping(h, 0, 0); /* gone sessions, without expiring any */
	/* Sessions an abandoned handler still holds keep the rest. */
	http_unref(h);
}
