/*
 * eng.h - the protocol-agnostic JSON-RPC 2.0 engine: cancellation tokens,
 * the in-flight and pending tables, the work queue and worker pool, the
 * outbound writer, sessions and their shutdown sequence.
 *
 * The engine knows JSON-RPC, never MCP: method names and their semantics
 * live in the protocol layer (api/), which plugs in through eng_proto.
 *
 * Lock order (take left before right, never the reverse):
 *   session->feed_mu  ->  session->mu  ->  token->mu  ->  writer->mu
 *   pending->mu is never held while taking another lock: an entry is
 *   settled under its token->mu once pending->mu is released (the
 *   shutdown's eng_pending_fail_all included)
 *   writer->mu  ->  the transport's own locks (a push session's writer
 *   delivers under its lock, so a transport never holds its lock while it
 *   feeds or closes a session)
 *   pool->mu is never held while taking another engine lock.
 * Callbacks registered on a token run with no engine lock held.
 */
#ifndef MCP_ENGINE_ENG_H
#define MCP_ENGINE_ENG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <json-c/json.h>

#include "transport/tp.h"

/* Internal error codes are the public MCP_E* values. */
#include <mcp/mcp.h>

/* ---- adding to JSON containers ------------------------------------------
 *
 * json-c asserts (aborts the process) when asked to add to a NULL object or
 * array, and keeps a value it failed to add: both happen when an allocation
 * fails.  Library code never aborts or leaks because of that, so every add
 * goes through these: they take `val` in every case and return 0, or -1
 * when it could not be added (and was released). */
static inline int eng_obj_add(json_object *o, const char *key, json_object *val)
{
	if (json_object_is_type(o, json_type_object) && json_object_object_add(o, key, val) == 0)
		return 0;
	json_object_put(val);
	return -1;
}

static inline int eng_arr_add(json_object *a, json_object *val)
{
	if (json_object_is_type(a, json_type_array) && json_object_array_add(a, val) == 0)
		return 0;
	json_object_put(val);
	return -1;
}

/* For a member that must be there: a NULL `val` (its construction failed)
 * or a failed add sets *bad, so a builder checks once at its end and
 * answers "out of memory" instead of an incomplete message. */
static inline void eng_obj_set(json_object *o, const char *key, json_object *val, int *bad)
{
	if (!val || eng_obj_add(o, key, val))
		*bad = 1;
}

/* ---- time ------------------------------------------------------------ */

/* Monotonic clock in nanoseconds. */
int64_t eng_now_ns(void);
/* A timespec for pthread_cond_timedwait on a CLOCK_MONOTONIC condvar. */
void eng_abstime(int64_t deadline_ns, struct timespec *ts);
/* Initialises a condition variable that waits on CLOCK_MONOTONIC. */
int eng_cond_init(pthread_cond_t *cv);

#define ENG_NS_PER_MS INT64_C(1000000)
#define ENG_NO_DEADLINE INT64_MAX

/* ---- cancellation token (engine/token.c) ------------------------------ */

typedef struct eng_cancel_cb eng_cancel_cb;

/* One token per inbound request.  `mu` and `cv` are also the wait point for
 * everything the request's handler blocks on (sleep, server-to-client
 * answers), so a single broadcast wakes every wait of that request. */
typedef struct eng_token {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	_Atomic int reason;        /* mcp_cancel_reason; set once */
	int efd;                   /* eventfd, created on demand; -1 */
	eng_cancel_cb *cbs;        /* registered callbacks (under mu) */
	int next_handle;
	int running_handle;        /* callback being run by the firer, or 0 */
	pthread_t firer;           /* thread running callbacks */
} eng_token;

int eng_token_init(eng_token *t);
void eng_token_destroy(eng_token *t);
/* Fires with `reason`; returns 1 when this call fired it, 0 if it had
 * already fired (the first reason stays). */
int eng_token_fire(eng_token *t, int reason);
static inline int eng_token_reason(eng_token *t)
{
	return atomic_load_explicit(&t->reason, memory_order_acquire);
}
int eng_token_sleep(eng_token *t, int64_t ms);
int eng_token_fd(eng_token *t);
int eng_token_on_cancel(eng_token *t, mcp_cancel_fn fn, void *arg, int *handle);
int eng_token_off_cancel(eng_token *t, int handle);
/* Drops every registration (the handler has returned). */
void eng_token_clear_callbacks(eng_token *t);
/* Waits on an external condition variable, also woken by the token. */
int eng_token_wait_external(eng_token *t, pthread_cond_t *cond,
			    pthread_mutex_t *mutex, int64_t timeout_ms);

/* ---- string-keyed hash table (engine/idtable.c) ----------------------- */

typedef struct eng_idnode {
	struct eng_idnode *next;
	const char *key;   /* owned by whoever owns the node */
	uint64_t hash;
} eng_idnode;

typedef struct eng_idtable {
	eng_idnode **slots;
	size_t nslots;
	size_t count;
} eng_idtable;

int eng_idtable_init(eng_idtable *t);
void eng_idtable_destroy(eng_idtable *t);
uint64_t eng_idhash(const char *key);
eng_idnode *eng_idtable_get(eng_idtable *t, const char *key);
/* Inserts a node whose key/hash are set; returns MCP_EEXIST when taken. */
int eng_idtable_put(eng_idtable *t, eng_idnode *n);
int eng_idtable_del(eng_idtable *t, eng_idnode *n);

/* ---- requests ---------------------------------------------------------- */

/* The terminal outcome of an inbound request (policy P8), decided once by
 * compare-and-swap from ENG_OUT_NONE. */
enum {
	ENG_OUT_NONE = 0,
	ENG_OUT_RESPONDED,
	ENG_OUT_SUPPRESSED, /* peer cancel */
	ENG_OUT_DROPPED,    /* transport closed / shutdown */
	ENG_OUT_REJECTED
};

typedef struct eng_session eng_session;
typedef struct eng_req eng_req;
typedef struct eng_batch eng_batch;

/* A unit of work for the pool (engine/pool.c), embedded in what it runs
 * (libuv's uv__work): `run` is called once, on a worker, with the item;
 * whoever queued it owns it, and `run` releases what queueing held. */
typedef struct eng_work {
	struct eng_work *next;    /* the pool's queue, or a list to queue */
	void (*run)(struct eng_work *w);
} eng_work;

struct eng_req {
	eng_idnode node;          /* in-flight table link; key = id_key */
	_Atomic int refs;
	_Atomic int outcome;
	eng_session *sess;        /* counted reference */
	json_object *msg;         /* the request; owned by the running thread */
	json_object *id;          /* borrowed from msg, or own_id */
	/* A request queued deep (ENG_RAW_DEPTH) keeps its line, not its
	 * tree: json-c spends ~2.9 KB on a 100-byte tools/call.  The worker
	 * parses it again (session.c, dispatch_run). */
	char *raw;
	size_t raw_len;
	json_object *own_id;      /* the id, parsed from id_key, when msg was freed */
	char *id_key;             /* compact JSON text of the id; after
				     eng_req_detach, the internal key */
	char *client_key;         /* after eng_req_detach: the client's id
				     text (eng_req_client_key) */
	eng_token token;
	eng_work work;            /* its run on a worker (session.c) */
	eng_req *qnext;           /* the session's lists: held by the reader,
				     waiting for the session's cap, to reap */
	eng_batch *batch;         /* non-NULL inside a JSON-RPC batch */
	void (*run)(eng_req *r);  /* runs on a worker */
	void *proto;              /* protocol layer's per-request data */
	int parsed_here;          /* msg was built by the worker running it
				     (from raw), which also frees it */
	int started;              /* handler began (for counters) */
	int finished;             /* an eng_req_finish_* ran */
	int kept;                 /* its run handed it over (eng_req_keep) */
	int here;                 /* runs on the thread that admitted it
				     (eng_session_run_here), not a worker */
	int capped;               /* holds a place of its session's cap
				     (limits.max_running) until it leaves the
				     pool */
	int batched;              /* an element of a JSON-RPC batch */
	/* Its id is free for reuse (P5): set once by the thread that
	 * finishes the request, before the answer is queued.  The node may
	 * stay in the in-flight table until the request is freed (or a new
	 * request takes the id), so that a finishing worker never takes the
	 * session lock; lookups skip it. */
	_Atomic int forgotten;
	/* The node is in the in-flight table: changed under sess->mu; read
	 * without it only as a hint (once cleared it is never set again). */
	_Atomic int in_table;
	/* Set by eng_req_detach: the final answer goes here, not to the wire
	 * (`msg` taken). */
	void (*sink)(eng_req *r, json_object *msg, void *arg);
	void *sink_arg;
	void (*free_proto)(void *proto);
};

/* ---- a request's life (engine/req.c) ---------------------------------- */

/* A request of `s` holding `msg` (taken) with one reference for the
 * caller and one on `s`; `key`, when not NULL, is the id's text, taken
 * (freed on failure).  NULL without memory. */
eng_req *eng_req_new(eng_session *s, json_object *msg, json_object *id);
eng_req *eng_req_new_keyed(eng_session *s, json_object *msg, json_object *id, char *key);
void eng_req_ref(eng_req *r);
/* The last reference frees the request, on the session's reader when it
 * runs one (the tree came from its heap: eng_req_reap). */
void eng_req_unref(eng_req *r);
/* The reader loop of `s` runs on this thread from now (NULL: none);
 * returns the previous one.  Whether the calling thread is s's reader. */
eng_session *eng_req_reader_swap(eng_session *s);
int eng_req_on_reader(const eng_session *s);
/* The reader frees what other threads left to it (s->reap_stack). */
void eng_req_reap(eng_session *s);
/* The in-flight table (s->inflight, under s->mu): the request of a node,
 * or NULL when the node only waits to be unlinked (its id was
 * forgotten); the same with a reference for the caller, taken only from
 * a count that is not zero; unlinking a request's node. */
eng_req *eng_req_live(eng_idnode *n);
eng_req *eng_req_live_ref(eng_idnode *n);
void eng_req_unlink_locked(eng_session *s, eng_req *r);
/* Decides the outcome; returns 1 when this call decided it. */
static inline int eng_req_decide(eng_req *r, int outcome)
{
	int expect = ENG_OUT_NONE;
	return atomic_compare_exchange_strong(&r->outcome, &expect, outcome);
}

/* ---- outbound writer (engine/writer.c) -------------------------------- */

typedef struct eng_out eng_out;

/* A writer owns one output stream: a queue of complete lines drained by one
 * thread with coalesced writes.  A write error latches `failed` and calls
 * the on_error hook once.
 *
 * A push writer (eng_writer_start_push) has no thread and no queue: each
 * line is handed to the transport's send_routed at once, under `mu`, by
 * the thread that produced it.  Such a transport must never block in
 * send_routed (it keeps what it cannot send yet, and bounds it). */
typedef struct eng_writer {
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* work for the writer thread */
	pthread_cond_t space_cv;  /* queue drained below the high-water mark */
	eng_out *head, *tail;
	/* Answers queued by eng_writer_push_quiet without the lock: a stack
	 * (newest first) that every holder of `mu` moves, in order, to the
	 * tail of head/tail before it looks at the queue. */
	_Atomic(eng_out *) inbox;
	size_t queued_bytes;
	size_t high_water;
	_Atomic int closing;      /* no more input; drain then exit (set under
				     mu, read without it as a hint) */
	_Atomic int64_t flush_deadline; /* give up a blocked write after this */
	_Atomic int failed;       /* set under mu, like closing */
	int writing;              /* a thread is writing: the writer's batch or
				     an inline write (one at a time) */
	/* The writer thread waits for work: written under `mu`, read without
	 * it by eng_writer_kick's fast path. */
	_Atomic int sleeping;
	int done;                 /* thread exited */
	pthread_t thread;
	int started;
	tp_conn *tp;
	void (*on_error)(void *arg);
	void *on_error_arg;
	struct eng_stats *stats;  /* responses_written / responses_dropped */
	uint64_t next_seq;        /* under mu: numbers the queued calls */
	int push;                 /* no thread: lines delivered when pushed */
} eng_writer;

int eng_writer_start(eng_writer *w, tp_conn *tp, struct eng_stats *stats,
		     void (*on_error)(void *), void *arg);
/* A writer without a thread, for a transport whose send_routed never
 * blocks (see above).  Cannot fail. */
void eng_writer_start_push(eng_writer *w, tp_conn *tp, struct eng_stats *stats,
			   void (*on_error)(void *), void *arg);
/* For a routing transport: the request `req` ended without an answer, so
 * the stream of its route can end (a tp_out with no data), after every
 * line queued for it before.  A no-op for transports that do not route,
 * and after close. */
void eng_writer_end_route(eng_writer *w, eng_req *req);
/* Queues one line (`line` taken, '\n' appended by the writer).  `req`, when
 * given, ties the line to an inbound request: it is discarded instead of
 * written if that request has been suppressed by a peer cancel by the time
 * it reaches the head of the queue.  `is_response` counts it in the
 * responses_* counters.  Never blocks.  Returns MCP_ECLOSED after close. */
int eng_writer_push(eng_writer *w, char *line, size_t len, eng_req *req, int is_response);
/* Like push, with an explicit route key (copied) for routing transports;
 * NULL route falls back to req's key. */
int eng_writer_push_routed(eng_writer *w, char *line, size_t len, eng_req *req,
			   const char *route, int is_response);
/* Queues like eng_writer_push, without waking the writer thread and
 * without taking its lock; the caller must call eng_writer_kick
 * afterwards.  For a request's answer:
 * queued while the request still counts as in flight (so a shutdown
 * cannot close the output before it), and written (inline on a quiet
 * server, or by the writer) only after the request is done, so a client
 * that acts on the answer at once never finds the request still open. */
int eng_writer_push_quiet(eng_writer *w, char *line, size_t len, eng_req *req,
			  int is_response);
void eng_writer_kick(eng_writer *w);
/* Like push, but first waits while the queue is above its high-water mark,
 * waking on `tok`.  Used by handlers, never by the reader.  With `call_seq`
 * the line is a server-to-client request: routed by `req` but never
 * discarded for its peer cancel, and numbered in *call_seq for
 * eng_writer_unqueue (so the request is either withdrawn unsent or written,
 * and a cancel notification follows only what was written). */
int eng_writer_push_wait(eng_writer *w, char *line, size_t len, eng_req *req,
			 eng_token *tok, uint64_t *call_seq);
/* Withdraws the line numbered `seq` if it still waits in the queue: 1 when
 * withdrawn (it will never be written), 0 when the writer has taken it. */
int eng_writer_unqueue(eng_writer *w, uint64_t seq);
/* Stops accepting lines, drains until `deadline_ns`, joins the thread. */
void eng_writer_close(eng_writer *w, int64_t deadline_ns);
void eng_writer_destroy(eng_writer *w);

/* ---- pending server-to-client requests (engine/pending.c) -------------- */

enum { ENG_PEND_WAITING = 0, ENG_PEND_ANSWERED, ENG_PEND_FAILED };

typedef struct eng_call eng_call;

typedef struct eng_pending {
	struct eng_pending *next;
	int64_t id;
	_Atomic int refs;
	int state;               /* under tok->mu */
	json_object *answer;     /* the whole response message */
	eng_req *owner;          /* the waiting request, or NULL for a call */
	eng_call *call;          /* the call it belongs to, or NULL */
	eng_token *tok;          /* the wait point: owner's or call's token */
} eng_pending;

/* An outbound request that no inbound request owns: a client's call to
 * its server.  It brings the token its pending entries wake (a waiter
 * sleeps on token.cv until the entry leaves WAITING, the token fires or
 * its own deadline passes) and a hook the table runs once for each entry
 * it settles, on the settling thread (the reader for an answer, the
 * shutdown for the failure of a snapshot), after the waiter was woken and
 * with no engine lock held.  The hook is not run for an entry its caller
 * removed itself (eng_pending_remove).
 *
 * Counted: every pending entry of the call holds a reference, so the
 * token outlives any settle that may still reach it.  The last
 * reference runs `release` (the owner frees the enclosing object). */
struct eng_call {
	eng_token token;
	_Atomic int refs;
	/* `answer` is the entry's answer (taken: the hook owns it), NULL
	 * for a failure (the connection closed). */
	void (*on_settle)(eng_call *c, eng_pending *p, int state, json_object *answer);
	void (*release)(eng_call *c);
};

/* One reference; the token initialised.  MCP_OK or MCP_ESYS. */
int eng_call_init(eng_call *c, void (*on_settle)(eng_call *, eng_pending *, int, json_object *),
		  void (*release)(eng_call *));
void eng_call_ref(eng_call *c);
void eng_call_unref(eng_call *c);

typedef struct eng_pending_table {
	pthread_mutex_t mu;
	eng_pending **slots;
	size_t nslots;
	size_t count;
	int64_t next_id;
	int closed;
	size_t max;
} eng_pending_table;

int eng_pending_init(eng_pending_table *pt, size_t max);
void eng_pending_destroy(eng_pending_table *pt);
/* Registers a new outbound request for `owner`; *out gets the entry (two
 * references: the table's and the caller's). */
int eng_pending_add(eng_pending_table *pt, eng_req *owner, eng_pending **out);
/* The same for a call (eng_call): the entry is settled through the
 * call's hook, which receives the answer. */
int eng_pending_add_call(eng_pending_table *pt, eng_call *call, eng_pending **out);
/* 1 while the entry with `id` waits in the table. */
int eng_pending_waiting(eng_pending_table *pt, int64_t id);
/* Routes a response message (taken) to its waiter.  Unknown, late and
 * duplicate answers are dropped.  Returns 1 if it matched. */
int eng_pending_answer(eng_pending_table *pt, int64_t id, json_object *msg);
/* Removes the caller's entry if still present (timeout/cancel paths).
 * Returns 1 when this call removed it: nothing else will settle it. */
int eng_pending_remove(eng_pending_table *pt, eng_pending *p);
/* Shutdown step 3: swap the table out under the lock, then fail every
 * entry outside it.  Returns the number failed. */
size_t eng_pending_fail_all(eng_pending_table *pt);
void eng_pending_unref(eng_pending *p);
size_t eng_pending_count(eng_pending_table *pt);

/* ---- worker pool (engine/pool.c) --------------------------------------- */

typedef struct eng_worker eng_worker;

typedef struct eng_pool {
	pthread_mutex_t mu;
	pthread_cond_t idle_cv;    /* a worker became idle / exited */
	eng_work *head, *tail;
	_Atomic size_t queued;     /* changed under mu, read without it */
	size_t max_queue;
	int nthreads;
	int started;
	int stopping;
	int busy;                  /* workers running a request */
	int alive;                 /* worker threads not yet exited */
	int detached;              /* workers left running by a stop: the pool's
				      memory must then outlive the server */
	/* The wake policy (pool.c): workers that sleep are on a LIFO stack,
	 * each with its own condvar; one is woken only when queued work has
	 * no taker, and only while fewer than `limit` workers are runnable. */
	eng_worker *workers;       /* nthreads of them */
	eng_worker *idle_top;      /* sleeping, not signalled */
	int waking;                /* signalled, not yet running */
	int spinning;              /* polling the queue before sleeping: each
				      counts as a taker, like `waking` */
	int64_t poll_ns;           /* how long such a poll lasts; 0: never */
	_Atomic uint64_t polls;    /* polls begun, and those that found work */
	_Atomic uint64_t poll_hits;
	_Atomic int running;       /* in a request, not blocked in an engine wait
				      (changed under mu, read without it) */
	int limit;                 /* runnable workers wanted (CPUs online) */
	uint64_t progress;         /* requests taken off the queue */
	pthread_t monitor;         /* wakes past the limit when the queue stalls */
	pthread_cond_t monitor_cv;
	int monitor_sleeping;
	int monitor_started;
	pthread_t *threads;
} eng_pool;

/* Starts `nthreads` workers.  `poll_ns` bounds the poll of a worker that
 * answered its last requests one at a time, before it sleeps (0: none). */
int eng_pool_start(eng_pool *p, int nthreads, size_t max_queue, int64_t poll_ns);
/* Queues one item; its run is then owed (a stopping pool still runs what
 * it queued).  MCP_EBUSY when full, MCP_ECLOSED when the pool is
 * stopping: then the item stays the caller's. */
int eng_pool_submit(eng_pool *p, eng_work *w);
/* Queues the chain `*list` (linked by next) in order under one lock and
 * wakes the workers it needs.  What did not fit is left in *list, still
 * linked and still the caller's; *why (when not NULL) then says why:
 * MCP_EBUSY (full) or MCP_ECLOSED (stopping).  Returns the number
 * queued. */
int eng_pool_submit_list(eng_pool *p, eng_work **list, int *why);
/* Requests waiting in the queue now (a hint: read without the lock). */
size_t eng_pool_depth(eng_pool *p);
/* Stops the workers; waits until `deadline_ns` for them to exit; returns the
 * number still running (abandoned, detached). */
int eng_pool_stop(eng_pool *p, int64_t deadline_ns);
/* Called by the engine's own waits (token sleeps, waits for a client's
 * answer, external condvar waits, writer backpressure) around the time a
 * worker is blocked: a blocked worker is not runnable, so another may be
 * woken for queued work.  No-ops on threads that are not pool workers;
 * calls nest. */
void eng_pool_blocking(void);
void eng_pool_unblocked(void);
/* Whether a line may be written on the calling thread rather than handed to
 * the writer: yes off the pool, and on a worker whose request is the only
 * one running with nothing queued (under load, the writer's coalesced
 * writes win). */
int eng_pool_alone(void);
/* Called after a line was written on the calling thread because the pool
 * was alone (eng_pool_alone): on a worker, the hint that requests come one
 * at a time, so that it polls for the next before sleeping.  A no-op off
 * the pool. */
void eng_pool_note_quiet(void);

/* ---- counters ----------------------------------------------------------- */

typedef struct eng_stats {
	_Atomic uint64_t started, completed, cancelled_peer, cancelled_transport,
		responses_written, responses_dropped, dropped_queued,
		pending_failed, abandoned, rejected, inflight_left, pending_left,
		/* answers that matched no waiting outbound request (unknown,
		 * late, duplicate, or not an integer id): dropped */
		answers_unmatched,
		/* requests run on the thread that read them
		 * (eng_session_run_here), and of those, the protocol layer's
		 * count of handlers that broke the promise not to wait: they
		 * tried (refused), or ran too long (overran) */
		ran_here, ran_here_refused, ran_here_overran;
} eng_stats;

/* ---- sessions (engine/session.c) ---------------------------------------- */

/* What the protocol layer provides.  All hooks run on the session's reader
 * thread unless stated otherwise. */
typedef struct eng_proto {
	/* A valid request (`id` non-NULL) or notification.  `msg` is taken.
	 * The hook answers inline (eng_session_respond*) or submits it with
	 * eng_session_submit(). */
	void (*on_request)(eng_session *s, json_object *msg, json_object *id,
			   const char *method, json_object *params);
	void (*on_notification)(eng_session *s, json_object *msg, const char *method,
				json_object *params);
	/* Whether a top-level array is a batch in this session (else -32600). */
	int (*batches_allowed)(eng_session *s);
	/* Builds the notification that cancels our outbound request `id`
	 * (timeout or the waiting handler's cancellation). */
	json_object *(*cancel_notification)(int64_t id, const char *reason);
	/* The session is being destroyed: free `proto` data. */
	void (*on_free)(eng_session *s);
	/* Optional, on the reader: for a request whose envelope was read from
	 * the raw line (eng_json_envelope), the function to run it on a
	 * worker exactly as on_request would have submitted it, with no
	 * protocol data; NULL when on_request must see its tree (answered on
	 * the reader, refused, or anything else). */
	void (*(*raw_route)(eng_session *s, const char *method))(eng_req *r);
	/* Optional, for a session with limits.drop_invalid (whose peer's
	 * garbage is never answered): a message of the peer was dropped.
	 * `kind` says why (ENG_DROP_*), `why` in words (the message an error
	 * answer would have carried), `id` the id of an answer that matched
	 * no waiting request, as JSON text (NULL when it had none).  Both
	 * borrowed for the call.  On the thread that read the message; it
	 * must return quickly and call nothing of the session. */
	void (*on_dropped)(eng_session *s, int kind, const char *why, const char *id);
} eng_proto;

/* Why a peer's message was dropped (eng_proto.on_dropped). */
enum {
	ENG_DROP_INVALID = 1, /* not JSON, or not a valid JSON-RPC message */
	ENG_DROP_TOOLONG,     /* longer than limits.max_message */
	ENG_DROP_UNMATCHED    /* an answer no outbound request waits for */
};

typedef struct eng_limits {
	size_t max_message;
	int max_depth;
	/* Values one inbound message may hold (eng_json_precheck); 0:
	 * ENG_DEFAULT_MAX_VALUES. */
	size_t max_values;
	size_t max_pending;
	int64_t grace_ms;
	/* A push session: no reader thread (the transport calls
	 * eng_session_feed) and a push writer (eng_writer_start_push). */
	int push;
	/* Fairness between sessions on the shared pool: at most this many of
	 * the session's requests are queued for or running on a worker at
	 * once (0: no cap); the others wait in the session, in order, up to
	 * max_waiting (beyond it they are answered "busy"). */
	int max_running;
	size_t max_waiting;
	/* Never answer what cannot be answered under an id (parse errors,
	 * invalid envelopes, oversized lines: the "id": null errors of
	 * P3/P7): drop and count them (stats.rejected).  For a client, whose
	 * peer is a server: MCP's schemas give an error response a real id. */
	int drop_invalid;
} eng_limits;

struct eng_session {
	_Atomic int refs;
	/* Its teardown (session.c), run by the last eng_session_unref:
	 * requests, below the session, hold it alive without knowing it. */
	void (*destroy)(eng_session *s);
	pthread_mutex_t mu;          /* in-flight table, counters below */
	pthread_cond_t idle_cv;      /* inflight reached zero */
	eng_idtable inflight;
	/* Requests not yet finished (queued+running): raised under `mu`
	 * (with the closed check), lowered without it; the thread that
	 * lowers it to zero broadcasts idle_cv under `mu`. */
	_Atomic size_t inflight_n;
	_Atomic size_t running_n;    /* handlers executing now (statistics) */
	eng_pending_table pending;
	eng_writer writer;
	tp_conn *tp;
	eng_pool *pool;
	eng_stats *stats;
	eng_limits limits;
	const eng_proto *proto;
	void *proto_data;
	_Atomic int closed;          /* shutdown step 1 done */
	_Atomic int close_reason;    /* first trigger's cancel reason */
	_Atomic int shutdown_once;
	json_tokener *tok;           /* reader thread only */
	eng_batch *cur_batch;        /* reader thread only: batch being read */
	/* Reader thread only: admitted requests not yet handed to the pool,
	 * linked by qnext (held while more input is buffered, and handed
	 * over together before the reader blocks; see submit_held). */
	eng_req *held_head, *held_tail;
	int held_n;
	const char *cur_line;        /* reader thread only: the line of the
					single message being dispatched */
	size_t cur_len;
	unsigned cur_pre;            /* reader thread only: the line's
					eng_json_precheck flags */
	/* parse-error rate limit (reader thread only) */
	double perr_tokens;
	int64_t perr_last_ns;
	/* Requests whose last reference went away on another thread while
	 * the reader runs: a stack (linked by qnext) that the reader frees.
	 * The reader allocated them, and a free on the allocating thread
	 * neither takes another thread's malloc arena lock nor leaves the
	 * reader's own cache empty (eng_req_unref). */
	_Atomic(eng_req *) reap_stack;
	_Atomic int reaping;         /* the reader frees reap_stack */
	/* A push session (limits.push): feeds are serialised by feed_mu,
	 * which stands for the reader thread: every "reader thread only"
	 * field above is then "under feed_mu".  `tok` is NULL (a feed uses
	 * its thread's tokener). */
	pthread_mutex_t feed_mu;
	const char *feed_route;      /* under feed_mu: where the feed's own
					answers go (the transport's stream) */
	int feed_admitted;           /* under feed_mu: requests it admitted */
	_Atomic int close_done;      /* shutdown steps 4-5 began (push) */
	_Atomic int close_finished;  /* ... and ended: the output is closed */
	_Atomic int64_t close_deadline; /* the grace deadline, set by the
					   shutdown's start before `closed` */
	/* The per-session cap (limits.max_running), under `mu`: requests
	 * of this session in the pool, and those waiting for a place
	 * (linked by qnext, in arrival order). */
	int sched_n;
	eng_req *wait_head, *wait_tail;
	size_t wait_n;
};

eng_session *eng_session_new(tp_conn *tp, eng_pool *pool, eng_stats *stats,
			     const eng_limits *lim, const eng_proto *proto,
			     void *proto_data);
static inline void eng_session_ref(eng_session *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

static inline void eng_session_unref(eng_session *s)
{
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		s->destroy(s);
}

/* Runs the reader loop on the calling thread until end of input or a
 * trigger, then the shutdown sequence.  Returns MCP_OK.  Not for push
 * sessions. */
int eng_session_run(eng_session *s);
/* Triggers the shutdown from any thread (`reason` for the tokens).  For a
 * push session this is eng_session_close. */
void eng_session_trigger(eng_session *s, int reason);

/* ---- push sessions (limits.push) -------------------------------------
 *
 * The transport owns the I/O: it feeds each complete inbound message and
 * takes output through its send_routed (never blocking).  The same
 * dispatch and the same shutdown sequence run as for a reader thread; only
 * who calls them differs. */

/* Dispatches one message: the raw `line` (parsed here, as a reader
 * would), or with `value` non-NULL the caller's parse of it by
 * eng_json_parse_message (taken), whose precheck flags are `pre`.  Any thread; feeds of one
 * session are serialised.  Answers the feed itself produces (errors,
 * requests answered at once) go to `route` (copied when needed; NULL:
 * routed by their id).  *admitted (when not NULL) gets the number of
 * requests the message put in flight: their answers come later, routed
 * by their id.  MCP_OK, or MCP_ECLOSED when the session is closing
 * (nothing was done; `value` is released). */
int eng_session_feed(eng_session *s, const char *line, size_t len, json_object *value,
		     unsigned pre, const char *route, int *admitted);
/* Starts the shutdown sequence of a push session from any thread, without
 * waiting: steps 1-3 now; steps 4-5 as soon as nothing is in flight (on
 * the thread that ends the last request, or here), else at the grace
 * deadline through eng_session_close_poll.  The first reason wins; later
 * calls do nothing. */
void eng_session_close(eng_session *s, int reason);
/* Completes a started push shutdown whose grace deadline has passed by
 * `now_ns` (what still runs is abandoned, as by a reader's shutdown).
 * Returns 1 when the shutdown is complete (by now or before: its output
 * closed), 0 while it waits, or while another thread is still finishing
 * it.  Any thread. */
int eng_session_close_poll(eng_session *s, int64_t now_ns);
/* Tells the transport what the protocol negotiated (TP_FEATURE_*). */
void eng_session_set_transport_features(eng_session *s, unsigned flags);

/* Registers a request in the in-flight table (P5) and queues it.
 * Takes ownership of `msg`.  On a duplicate id answers -32600; on a full
 * queue answers MCP_JSONRPC_SERVER_BUSY.  `run` executes on a worker. */
int eng_session_submit(eng_session *s, json_object *msg, json_object *id,
		       void (*run)(eng_req *), void *proto_req,
		       void (*free_proto)(void *));
/* Like eng_session_submit, but `run` executes at once on the calling
 * thread (the reader, or the thread feeding a push session, which holds
 * the session's feed lock meanwhile), with no hand-off to the pool and no
 * place in the session's cap: for work that never waits (the protocol
 * layer decides which).  The request is in flight as any other: a
 * duplicate id is refused, its token fires on a peer cancel or the
 * close, and its one outcome is decided as on a worker. */
int eng_session_run_here(eng_session *s, json_object *msg, json_object *id,
			 void (*run)(eng_req *), void *proto_req, void (*free_proto)(void *));
/* Whether r runs on the thread that admitted it (eng_session_run_here). */
static inline int eng_req_here(const eng_req *r)
{
	return r->here;
}
/* Runs `run` on a worker as a request that no peer sent: the local side's
 * own work that must obey the session's shutdown (a client answering an
 * input_required result with its handlers).  It is in flight under `key`
 * (copied; must start with '#', so it is never JSON text and never meets a
 * peer's id), its token fires with the shutdown and the shutdown waits
 * for it within the grace period like any request; it has no id and
 * nothing of it is ever written: however it ends (answered, silent,
 * dropped unrun), `sink` is called once with what it finished with
 * (taken, NULL when nothing).  Any thread.  MCP_OK, MCP_EINVAL (a key
 * without '#'), MCP_ECLOSED, MCP_EBUSY (the pool is full; the sink was
 * called) or MCP_ENOMEM; on a failure `free_proto(proto_req)` has run. */
int eng_session_submit_local(eng_session *s, const char *key, void (*run)(eng_req *),
			     void *proto_req, void (*free_proto)(void *),
			     void (*sink)(eng_req *r, json_object *msg, void *arg), void *sink_arg);
/* Whether `id` is in flight (for requests answered inline). */
int eng_session_id_in_flight(eng_session *s, json_object *id);
/* Peer cancellation by id (P2); unknown ids are ignored. */
void eng_session_cancel_peer(eng_session *s, json_object *id);

/* The JSON-RPC 2.0 envelope of an object message that is not a response
 * (section 4): NULL for a valid request or notification, else why it is
 * an Invalid Request (a static text); `pre` holds eng_json_precheck's
 * flags of its line (ENG_JSON_BAD_ID: its id cannot be echoed as sent).
 * answer_id: the id such a message is answered under (section 5): its own
 * when valid (a string or an integer, echoed as sent; borrowed), NULL
 * (null) when missing or invalid.  One rule for every transport. */
const char *eng_request_problem(json_object *msg, unsigned pre);
json_object *eng_request_answer_id(json_object *msg, unsigned pre);
/* Answers from the reader thread (inline requests, envelope errors):
 * `result` and `data` taken.  id may be NULL (null id). */
void eng_session_respond_result(eng_session *s, json_object *id, json_object *result);
void eng_session_respond_error(eng_session *s, json_object *id, int code,
			       const char *message, json_object *data);
/* Sends a notification not tied to a request (taken).  Never blocks. */
int eng_session_notify(eng_session *s, json_object *msg);
/* The same for a notification already serialised (`text`, len bytes,
 * copied): one broadcast to many sessions is built once. */
int eng_session_notify_text(eng_session *s, const char *text, size_t len);
/* Registers a request in flight without queueing it: a long-lived one
 * (a subscription) that the protocol layer ends itself with eng_req_finish_*
 * (typically from a cancel callback on its token).  Returns a counted
 * reference, or NULL after answering the error (duplicate id, closed). */
eng_req *eng_session_hold(eng_session *s, json_object *msg, json_object *id, void *proto_req,
			  void (*free_proto)(void *));
/* A batch's answer is the JSON array of its elements' answers, written
 * when the last one has ended; on a routing transport it goes to the
 * route of the feed that carried the batch, as "[]" when none is due. */
/* Asks the transport to end the stream carrying request r's messages for
 * now (tp_ops.close_route).  MCP_OK, MCP_ENOTSUP (the transport cannot),
 * MCP_ENOENT (r has no live stream) or MCP_ECLOSED. */
int eng_session_close_stream(eng_session *s, eng_req *r, int retry_ms);

/* From a worker: finish `r` with a result or an error (taken), honouring
 * the outcome rules.  Also removes r from the in-flight table. */
void eng_req_finish_result(eng_req *r, json_object *result);
void eng_req_finish_error(eng_req *r, int code, const char *message, json_object *data);
/* The handler ended without an answer (it saw cancellation). */
void eng_req_finish_silent(eng_req *r);
/* Answers `r` now with `result` (taken) while its handler goes on: the
 * request stays in flight under `key` (copied; must not look like JSON, e.g.
 * start with '#'), so the shutdown still cancels and waits for it, but the
 * client's id is free and a cancel for it no longer applies.  The handler's
 * final answer is handed to `sink` instead of being written.  From the
 * worker running r.  MCP_OK, MCP_ENOMEM or MCP_ECANCELED (already decided). */
int eng_req_detach(eng_req *r, json_object *result, const char *key,
		   void (*sink)(eng_req *r, json_object *msg, void *arg), void *arg);
/* The same, and `r` moves to session `to` (counted there, in its in-flight
 * table under `key`, cancelled by its shutdown; no longer counted in its
 * own session, which may then end): for work that must outlive the
 * session that received it, such as a task started by a request whose
 * HTTP session ends with its answer.  The answer to the client still
 * leaves by r's session.  `to` NULL or r's own session: eng_req_detach.
 * From the worker running r.  MCP_OK, MCP_ENOMEM, MCP_ECANCELED (already
 * decided) or MCP_ECLOSED (`to` is shutting down; nothing changed). */
int eng_req_detach_to(eng_req *r, eng_session *to, json_object *result, const char *key,
		      void (*sink)(eng_req *r, json_object *msg, void *arg), void *arg);
/* From a worker: a message tied to `r` (progress, log), written before its
 * response and never after a peer cancel.  `msg` taken. */
int eng_req_emit(eng_req *r, json_object *msg);
/* A server-to-client request on behalf of `r`: `msg` taken (its "id" is
 * filled in here).  Blocks until an answer, timeout, token or close.
 * On MCP_OK *answer is the whole response message (caller owns). */
int eng_req_call(eng_req *r, json_object *msg, int64_t timeout_ms,
		 json_object **answer);
/* From the worker running r: r stays in flight when its run returns,
 * without a worker, like a request registered by eng_session_hold; whoever
 * keeps it ends it with eng_req_finish_*.  Call before anything else can
 * end it (before registering its cancel callback). */
void eng_req_keep(eng_req *r);
/* From the worker running r: the request was let through (the protocol
 * layer's admission checks passed), so a transport that holds back the
 * start of its response until then may begin it (tp_ops.open_route).
 * Any other request of that stream begins at its first line anyway. */
void eng_req_admitted(eng_req *r);
/* For a request that found its session closed before the shutdown reached
 * its token: fires the token with the session's close reason, so the
 * handler sees why it must stop, and returns MCP_ECANCELED. */
int eng_req_closed(eng_req *r);
/* The client's id of `r` as compact JSON text, also after eng_req_detach
 * re-keyed it.  Valid for r's lifetime. */
const char *eng_req_client_key(const eng_req *r);

/* Serialises a JSON value compactly, without escaping '/'.  eng_json_dup
 * (jsonout.c) gives a copy the caller frees, or NULL with errno ENOMEM,
 * or EDOM when the value holds a non-finite double (NaN, an infinity),
 * which JSON cannot carry: nothing of it is written. */
const char *eng_json_text(json_object *o, size_t *len);
char *eng_json_dup(json_object *o, size_t *len);
/* 0 when the value holds a non-finite double anywhere, else 1.  Recursion
 * as deep as the value. */
int eng_json_finite(json_object *o);

/* What eng_json_precheck() found in a raw line, beyond what json-c checks.
 * The low flags leave the line servable:
 *  - ENG_JSON_BAD_ID: a request id is out of the integer range or holds a
 *    lone surrogate escape, which json-c would alter (the request is
 *    refused, answered under a null id);
 *  - ENG_JSON_NUL_NAME: a member name of a message's envelope holds
 *    U+0000 (json-c would cut it there: "id\u0000x" would replace "id"),
 *    refused like a bad id;
 *  - ENG_JSON_NUL_KEY: a member name deeper down (in params) holds
 *    U+0000: the request is refused with -32602 under its id;
 *  - ENG_JSON_BIG_INT: a value is an integer beyond 64 bits, which json-c
 *    would saturate: the line is parsed as eng_json_widen() rewrites it.
 * ENG_JSON_TOO_MANY: more values than the limit; the scan stopped there
 * and the line is refused (-32600) before json-c builds any of it.
 * The ENG_JSON_NOT_JSON ones mean the line is not JSON. */
enum {
	ENG_JSON_BAD_ID = 1,
	ENG_JSON_NUL_NAME = 2,
	ENG_JSON_NUL_KEY = 4,
	ENG_JSON_BIG_INT = 8,
	ENG_JSON_BAD_CONTROL = 0x10, /* raw control character in a string */
	ENG_JSON_BAD_NUMBER = 0x20,  /* "1.", "01", "+1", ".5" ... */
	ENG_JSON_BAD_LITERAL = 0x40, /* NaN, Infinity, any word but true/false/null */
	ENG_JSON_TOO_MANY = 0x100,
};
#define ENG_JSON_NOT_JSON 0xf0u
/* The default of eng_limits.max_values and mcp_server_set_max_values. */
#define ENG_DEFAULT_MAX_VALUES 1048576
/* What a value counts toward that bound: about json-c's cost of it over a
 * number's (an empty object 784 bytes, an empty array 152, a number 72
 * plus its array slot). */
#define ENG_JSON_WEIGHT_OBJECT 8
#define ENG_JSON_WEIGHT_ARRAY 2
/* One pass over `len` bytes at `line`; no allocation, no state: any
 * thread.  `max_values` bounds the values the line may hold: strings
 * other than member names, numbers, true, false and null count 1, an
 * array ENG_JSON_WEIGHT_ARRAY, an object ENG_JSON_WEIGHT_OBJECT; 0: no
 * bound. */
unsigned eng_json_precheck(const char *line, size_t len, size_t max_values);
/* A copy of `line` (NUL-terminated, its length in *out_len; caller frees)
 * in which every integer beyond 64 bits that is not a request id has ".0"
 * appended, so that json-c reads it as the nearest double instead of
 * saturating it.  NULL without memory or when the line is not JSON. */
char *eng_json_widen(const char *line, size_t len, size_t *out_len);
/* The value of the four hex digits at q (the ones after "\u"), or -1 when
 * fewer than four remain before `end` or one is not hex. */
long eng_json_u4(const unsigned char *q, const unsigned char *end);
/* Parses one inbound message exactly as a session's reader does: the
 * checks of eng_json_precheck (its flags in *pre; at most max_values
 * values, 0: ENG_DEFAULT_MAX_VALUES), strict json-c with a depth limit of
 * max_depth, integers beyond 64 bits read as doubles (eng_json_widen),
 * nothing but whitespace after the value.  Returns 0 with the value in
 * *out (caller owns; NULL for the text "null"), or -1 with the JSON-RPC
 * code of the answer in *code (-32700; -32600 for well-formed JSON nested
 * deeper than the limit or with more values; -32603 without memory) and
 * its message in why[whysz].  Any thread (it uses
 * the thread's own tokener). */
int eng_json_parse_message(const char *line, size_t len, int max_depth, size_t max_values,
			   unsigned *pre, json_object **out, int *code, char *why, size_t whysz);
/* A json-c tokener in strict mode for `max_depth`, or NULL. */
json_tokener *eng_json_tokener(int max_depth);
/* json_tokener_parse_ex, without the process-wide locale lock json-c
 * takes on every call (util.c); same arguments and result. */
json_object *eng_json_parse_ex(json_tokener *tok, const char *text, int len);

/* A plain request's envelope, read from its raw line (envelope.c). */
typedef struct eng_envelope {
	char method[64];     /* NUL-terminated; no escapes in the line */
	const char *id;      /* the id's JSON text in the line, as eng_json_dup
				would write it back */
	size_t id_len;
	int id_is_string;
} eng_envelope;
/* 1 when the line is certainly a request json-c reads as an object with
 * exactly "jsonrpc": "2.0", an integer or string "id", a "method" and
 * maybe an object "params" holding no "_meta", all plain enough that the
 * reader may route it from `env` alone and leave the parse to the
 * worker.  0 for anything else, valid or not: that line takes the
 * ordinary path.  Nesting deeper than max_depth - 2 gives 0.  No
 * allocation; `env` is filled only on 1. */
int eng_json_envelope(const char *line, size_t len, int max_depth, eng_envelope *env);

#endif /* MCP_ENGINE_ENG_H */
