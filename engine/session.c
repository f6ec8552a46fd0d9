/*
 * session.c - one connection's life: the reader loop that parses and routes
 * every inbound message, the in-flight table, the terminal outcome of each
 * request, and the shutdown sequence of doc/design.md, run exactly once.
 *
 * The reader never blocks on a worker or on the writer: requests go to the
 * pool, answers to the pending table, and everything outbound to the
 * writer's queue.
 *
 * A push session (HTTP) has no reader thread: its transport feeds it whole
 * messages (eng_session_feed), which run through the same dispatch under
 * feed_mu, and its shutdown runs in two halves that never wait on the
 * feeding thread (eng_session_close).
 *
 * The reader does as little per request as it can, because it is the one
 * stage that cannot run in parallel.  A plain request (envelope.c) is
 * routed from its raw line and parsed, and its tree freed, by the worker
 * that runs it; anything else is parsed here.  What the reader allocated
 * comes back to it to be freed (eng_req_unref, in req.c, which holds a
 * request's life as an object; what a request does is here).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

/* Parse errors answered per second, with a burst of the same size (P3). */
#define PARSE_ERROR_RATE 20.0
/* Requests the reader holds before it hands them to the pool together. */
#define HOLD_MAX 16
/* The answers of a request refused for a limit (MCP_JSONRPC_SERVER_BUSY). */
#define BUSY_QUEUE "Server busy: the work queue is full"
#define BUSY_SESSION "Server busy: too many requests of this session are waiting"

/* ---- JSON-RPC batches (2025-03-26) -------------------------------------------
 *
 * The answers to a batch's elements are gathered and written as one array
 * once the last element has ended.  The reader holds one count while it
 * routes the elements, and each submitted request holds one until it ends,
 * answered or not. */

struct eng_batch {
	pthread_mutex_t mu;
	json_object *answers;   /* array, under mu */
	int outstanding;        /* under mu */
	eng_session *sess;
	char *route;            /* for routing transports: the feed's route */
};

static eng_batch *batch_new(eng_session *s)
{
	eng_batch *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	b->answers = json_object_new_array();
	if (!b->answers) {
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->mu, NULL);
	b->outstanding = 1;
	b->sess = s;
	eng_session_ref(s);
	return b;
}

static void batch_hold(eng_batch *b)
{
	pthread_mutex_lock(&b->mu);
	b->outstanding++;
	pthread_mutex_unlock(&b->mu);
}

/* Adds an answer (taken, may be NULL for "no answer") and drops one count;
 * the last one writes the array. */
static void batch_release(eng_batch *b, json_object *answer)
{
	pthread_mutex_lock(&b->mu);
	if (answer)
		eng_arr_add(b->answers, answer);
	int last = --b->outstanding == 0;
	pthread_mutex_unlock(&b->mu);
	if (!last)
		return;
	eng_session *s = b->sess;
	size_t n = json_object_array_length(b->answers);
	if (n > 0 || b->route) {
		/* A routing transport waits for the batch's answer, so it gets
		 * one even when nothing is to be answered: "[]". */
		size_t len;
		char *line = eng_json_dup(b->answers, &len);
		if (line && eng_writer_push_routed(&s->writer, line, len, NULL, b->route,
						   b->route != NULL) == MCP_OK)
			atomic_fetch_add(&s->stats->responses_written, n);
		else
			atomic_fetch_add(&s->stats->responses_dropped, n);
	}
	free(b->route);
	json_object_put(b->answers);
	pthread_mutex_destroy(&b->mu);
	free(b);
	eng_session_unref(s);
}

/* ---- building messages ---------------------------------------------------- */

/* The builders below return a complete message or NULL: a message that
 * lost a member to a failed allocation must not reach the wire. */
static json_object *envelope(json_object *id)
{
	json_object *m = json_object_new_object();
	json_object *v = json_object_new_string("2.0");
	/* A copy, not a shared reference: the answer may be serialized on
	 * another thread (a batch's array) while the request that owns `id` is
	 * freed, and json-c's reference counts are not atomic. */
	json_object *copy = NULL;
	int copied = !id || json_object_deep_copy(id, &copy, NULL) == 0;
	if (!m || !v || !copied) {
		json_object_put(m);
		json_object_put(v);
		json_object_put(copy);
		return NULL;
	}
	/* Each add takes its value, so both are attempted. */
	int bad = eng_obj_add(m, "jsonrpc", v);
	bad |= eng_obj_add(m, "id", copy);
	if (bad) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

static json_object *error_message(json_object *id, int code, const char *message,
				  json_object *data)
{
	json_object *m = envelope(id);
	json_object *e = json_object_new_object();
	json_object *c = json_object_new_int(code);
	json_object *t = json_object_new_string(message ? message : "Internal error");
	if (!m || !e || !c || !t) {
		json_object_put(m);
		json_object_put(e);
		json_object_put(c);
		json_object_put(t);
		json_object_put(data);
		return NULL;
	}
	/* Each add takes its value, so every one is attempted. */
	int bad = eng_obj_add(e, "code", c);
	bad |= eng_obj_add(e, "message", t);
	if (data)
		bad |= eng_obj_add(e, "data", data);
	bad |= eng_obj_add(m, "error", e);
	if (bad) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

static json_object *result_message(json_object *id, json_object *result)
{
	json_object *m = envelope(id);
	if (!result)
		result = json_object_new_object();
	if (!m || !result) {
		json_object_put(m);
		json_object_put(result);
		return NULL;
	}
	if (eng_obj_add(m, "result", result)) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

#define NONFINITE_MESSAGE                                                            \
	"Internal error: the answer holds a number JSON cannot carry (NaN or an " \
	"infinity)"

/* The answer of last resort, when the real one could not be built or
 * serialised: a fixed error line that needs one allocation, so the client
 * still learns that its request failed.  `id_text` is the id as JSON (NULL:
 * null); `nonfinite`: eng_json_dup refused the answer for a non-finite
 * number (EDOM), else it was memory.  The buffer has the writer's spare
 * byte. */
static char *oom_error_line(const char *id_text, int nonfinite, size_t *len)
{
	if (!id_text)
		id_text = "null";
	const char *why = nonfinite ? NONFINITE_MESSAGE : "out of memory";
	size_t cap = strlen(id_text) + strlen(why) + 80;
	char *line = malloc(cap);
	if (!line)
		return NULL;
	int n = snprintf(line, cap,
			 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,"
			 "\"message\":\"%s\"}}",
			 id_text, MCP_JSONRPC_INTERNAL_ERROR, why);
	*len = (size_t)n;
	return line;
}

/* Serialises `m` (taken) and queues it.  Never blocks. */
static int push_message(eng_session *s, json_object *m, eng_req *req, int is_response)
{
	if (!m) {
		if (is_response)
			atomic_fetch_add(&s->stats->responses_dropped, 1);
		return MCP_ENOMEM;
	}
	size_t len;
	char *line = eng_json_dup(m, &len);
	int rc = !line && errno == EDOM ? MCP_EINVAL : MCP_ENOMEM;
	json_object_put(m);
	if (!line) {
		if (is_response)
			atomic_fetch_add(&s->stats->responses_dropped, 1);
		return rc;
	}
	return eng_writer_push(&s->writer, line, len, req, is_response);
}

/* Queues the answer `m` (taken; NULL: it could not be built) to request
 * `id` on `route`, or the out-of-memory error in its place. */
static void send_answer(eng_session *s, json_object *id, json_object *m, const char *route)
{
	size_t len = 0;
	char *line = m ? eng_json_dup(m, &len) : NULL;
	int nonfinite = m && !line && errno == EDOM;
	json_object_put(m);
	if (!line)
		line = oom_error_line(id ? eng_json_text(id, NULL) : NULL, nonfinite, &len);
	if (!line) {
		atomic_fetch_add(&s->stats->responses_dropped, 1);
		return;
	}
	eng_writer_push_routed(&s->writer, line, len, NULL, route, 1);
}

/* Answers from the reader thread go into the batch being read, if any;
 * otherwise they are routed where the feed's transport said, or by the id
 * they answer (a null id has none). */
static void reader_answer(eng_session *s, json_object *id, json_object *m)
{
	if (s->cur_batch && m) {
		pthread_mutex_lock(&s->cur_batch->mu);
		eng_arr_add(s->cur_batch->answers, m);
		pthread_mutex_unlock(&s->cur_batch->mu);
		return;
	}
	const char *route = s->feed_route ? s->feed_route
			    : id && s->tp->ops->send_routed ? eng_json_text(id, NULL)
							    : NULL;
	send_answer(s, id, m, route);
}

void eng_session_respond_result(eng_session *s, json_object *id, json_object *result)
{
	reader_answer(s, id, result_message(id, result));
}

/* A message of the peer dropped unanswered (limits.drop_invalid): counted,
 * and the protocol layer told why. */
static void note_dropped(eng_session *s, int kind, const char *why)
{
	atomic_fetch_add(&s->stats->rejected, 1);
	if (s->proto->on_dropped)
		s->proto->on_dropped(s, kind, why, NULL);
}

void eng_session_respond_error(eng_session *s, json_object *id, int code,
			       const char *message, json_object *data)
{
	if (!id && s->limits.drop_invalid) {
		json_object_put(data);
		note_dropped(s, ENG_DROP_INVALID, message);
		return;
	}
	reader_answer(s, id, error_message(id, code, message, data));
}

int eng_session_notify(eng_session *s, json_object *msg)
{
	return push_message(s, msg, NULL, 0);
}

int eng_session_notify_text(eng_session *s, const char *text, size_t len)
{
	char *line = malloc(len + 1); /* the writer's spare byte */
	if (!line)
		return MCP_ENOMEM;
	memcpy(line, text, len);
	return eng_writer_push(&s->writer, line, len, NULL, 0);
}

int eng_session_close_stream(eng_session *s, eng_req *r, int retry_ms)
{
	if (!s->tp->ops->close_route || !r->id_key)
		return MCP_ENOTSUP;
	if (atomic_load(&s->closed))
		return MCP_ECLOSED;
	int rc = s->tp->ops->close_route(s->tp, r->id_key, retry_ms);
	return rc == 0 ? MCP_OK : rc == -ENOENT ? MCP_ENOENT : MCP_ENOTSUP;
}

/* ---- sessions ----------------------------------------------------------- */

static void on_write_error(void *arg)
{
	eng_session_trigger(arg, MCP_CANCEL_TRANSPORT_CLOSED);
}

static void session_destroy(eng_session *s);

eng_session *eng_session_new(tp_conn *tp, eng_pool *pool, eng_stats *stats,
			     const eng_limits *lim, const eng_proto *proto,
			     void *proto_data)
{
	eng_session *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	s->destroy = session_destroy;
	s->tp = tp;
	s->pool = pool;
	s->stats = stats;
	s->limits = *lim;
	s->proto = proto;
	s->proto_data = proto_data;
	s->perr_tokens = PARSE_ERROR_RATE;
	s->perr_last_ns = eng_now_ns();
	if (pthread_mutex_init(&s->mu, NULL))
		goto fail_mu;
	if (eng_cond_init(&s->idle_cv))
		goto fail_cv;
	if (eng_idtable_init(&s->inflight))
		goto fail_table;
	if (eng_pending_init(&s->pending, lim->max_pending))
		goto fail_pending;
	if (pthread_mutex_init(&s->feed_mu, NULL))
		goto fail_feed;
	if (lim->push) {
		/* No reader thread to own a tokener: a feed uses its
		 * thread's (worker_tokener), so an idle session keeps none. */
		eng_writer_start_push(&s->writer, tp, stats, on_write_error, s);
		return s;
	}
	s->tok = eng_json_tokener(lim->max_depth);
	if (!s->tok)
		goto fail_tok;
	if (eng_writer_start(&s->writer, tp, stats, on_write_error, s))
		goto fail_writer;
	return s;

fail_writer:
	json_tokener_free(s->tok);
fail_tok:
	pthread_mutex_destroy(&s->feed_mu);
fail_feed:
	eng_pending_destroy(&s->pending);
fail_pending:
	eng_idtable_destroy(&s->inflight);
fail_table:
	pthread_cond_destroy(&s->idle_cv);
fail_cv:
	pthread_mutex_destroy(&s->mu);
fail_mu:
	free(s);
	return NULL;
}

/* The last reference went (eng_session_unref). */
static void session_destroy(eng_session *s)
{
	eng_writer_close(&s->writer, eng_now_ns());
	eng_writer_destroy(&s->writer);
	eng_pending_destroy(&s->pending);
	eng_idtable_destroy(&s->inflight);
	if (s->tok)
		json_tokener_free(s->tok);
	pthread_mutex_destroy(&s->feed_mu);
	if (s->proto->on_free)
		s->proto->on_free(s);
	s->tp->ops->free(s->tp);
	pthread_cond_destroy(&s->idle_cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void eng_session_trigger(eng_session *s, int reason)
{
	if (s->limits.push) {
		eng_session_close(s, reason);
		return;
	}
	int expect = 0;
	atomic_compare_exchange_strong(&s->close_reason, &expect, reason);
	s->tp->ops->wake(s->tp);
}

/* ---- the in-flight table -------------------------------------------------- */

static eng_req *inflight_find(eng_session *s, json_object *id)
{
	size_t len;
	const char *key = eng_json_text(id, &len);
	if (!key)
		return NULL;
	pthread_mutex_lock(&s->mu);
	eng_req *r = eng_req_live_ref(eng_idtable_get(&s->inflight, key));
	pthread_mutex_unlock(&s->mu);
	return r;
}

int eng_session_id_in_flight(eng_session *s, json_object *id)
{
	eng_req *r = inflight_find(s, id);
	if (r)
		eng_req_unref(r);
	return r != NULL;
}

/* Inserts r's node under s->mu.  A node left by a finished request
 * whose id was forgotten gives way: its id is free (P5).  MCP_EEXIST
 * when the id belongs to a live request. */
static int table_put_locked(eng_session *s, eng_req *r)
{
	eng_idnode *old = eng_idtable_get(&s->inflight, r->node.key);
	if (old && !eng_req_live(old))
		eng_req_unlink_locked(s, (eng_req *)old);
	int rc = eng_idtable_put(&s->inflight, &r->node);
	if (rc == MCP_OK)
		r->in_table = 1;
	return rc;
}

/* The request's id may be reused (P5).  No lock: the node stays in the
 * table, skipped by every lookup, until the request is freed (usually by
 * the reader, in a batch) or its id is taken again.  The store comes
 * before the answer is queued, so a client that reuses the id once it has
 * the answer finds it free. */
static void req_forget_id(eng_req *r)
{
	atomic_store(&r->forgotten, 1);
}

/* The request no longer counts as in flight: its id forgotten, counted,
 * and the shutdown told when the session becomes idle.  No lock in the
 * common case: only the thread that brings the count to zero locks, to
 * wake a shutdown waiting for idleness (it checks the count under the same
 * lock, so the wake-up cannot fall between its check and its wait). */
static void push_close_finish(eng_session *s);

static void req_done(eng_req *r)
{
	eng_session *s = r->sess;
	if (!atomic_load_explicit(&r->forgotten, memory_order_relaxed)) {
		/* Not answered: nothing was queued.  A routing transport is
		 * told the request's stream can end, before its id is free:
		 * a new request reusing the id must not meet this mark. */
		if (!r->sink && !r->batched)
			eng_writer_end_route(&s->writer, r);
		req_forget_id(r);
	}
	if (r->started)
		atomic_fetch_sub(&s->running_n, 1);
	if (atomic_fetch_sub(&s->inflight_n, 1) == 1) {
		if (s->limits.push) {
			/* The last request of a closing push session ends
			 * its shutdown (eng_session_close checks the count
			 * after it sets `closed`, so one of us sees it). */
			if (atomic_load(&s->closed))
				push_close_finish(s);
			return;
		}
		pthread_mutex_lock(&s->mu);
		pthread_cond_broadcast(&s->idle_cv);
		pthread_mutex_unlock(&s->mu);
	}
}

/* The request ends without a batch answer (cancelled, dropped). */
static void release_batch(eng_req *r, json_object *answer)
{
	eng_batch *b = r->batch;
	if (!b) {
		json_object_put(answer);
		return;
	}
	r->batch = NULL;
	batch_release(b, answer);
}

static void count_cancel(eng_req *r)
{
	/* A peer cancel decides the outcome before it fires the token: the
	 * outcome says what the reason may not say yet. */
	int reason = eng_token_reason(&r->token);
	if (reason == MCP_CANCEL_PEER || atomic_load(&r->outcome) == ENG_OUT_SUPPRESSED)
		atomic_fetch_add(&r->sess->stats->cancelled_peer, 1);
	else if (reason != MCP_CANCEL_NONE)
		atomic_fetch_add(&r->sess->stats->cancelled_transport, 1);
}

/* Queue depth from which a request waits as its line rather than its
 * json-c tree (10,000 queued tools/call: +31 MiB as trees, +5 MiB as
 * lines).  Shallow queues keep the tree: no second parse on the fast
 * path. */
#define ENG_RAW_DEPTH 256

/* On the reader: a plain request (no protocol data holding on to its tree)
 * about to join a deep queue keeps its line and an id of its own, and its
 * tree is freed.  Best effort: on any allocation failure the tree stays. */
static void keep_raw_when_deep(eng_session *s, eng_req *r)
{
	/* A line json-c must read widened (ENG_JSON_BIG_INT) keeps its tree. */
	if (!s->cur_line || s->cur_batch || r->proto || !r->msg ||
	    (s->cur_pre & ENG_JSON_BIG_INT) || eng_pool_depth(s->pool) < ENG_RAW_DEPTH)
		return;
	char *raw = malloc(s->cur_len + 1);
	json_object *id = raw ? json_tokener_parse(r->id_key) : NULL;
	if (!id) {
		free(raw);
		return;
	}
	memcpy(raw, s->cur_line, s->cur_len);
	raw[s->cur_len] = '\0';
	r->raw = raw;
	r->raw_len = s->cur_len;
	r->own_id = id;
	r->id = id;
	json_object_put(r->msg);
	r->msg = NULL;
}

/* Each worker keeps one tokener (strict, for the depth of the last
 * session it parsed for), freed when the thread exits. */
static pthread_key_t tok_key;
static pthread_once_t tok_once = PTHREAD_ONCE_INIT;
static int tok_key_ok;

static void tok_key_free(void *t)
{
	json_tokener_free(t);
}

static void tok_key_init(void)
{
	tok_key_ok = pthread_key_create(&tok_key, tok_key_free) == 0;
}

/* The worker's tokener for `depth`, reset; *cached is 0 when it is a
 * one-off the caller frees (no thread-specific slot to keep it in). */
static json_tokener *worker_tokener(int depth, int *cached)
{
	pthread_once(&tok_once, tok_key_init);
	json_tokener *t = tok_key_ok ? pthread_getspecific(tok_key) : NULL;
	*cached = 1;
	if (t && t->max_depth == depth) {
		json_tokener_reset(t);
		return t;
	}
	json_tokener *n = eng_json_tokener(depth);
	if (n && tok_key_ok && pthread_setspecific(tok_key, n) == 0) {
		if (t)
			json_tokener_free(t);
		return n;
	}
	*cached = 0;
	return n;
}

/* On the worker: the tree of a request that arrived or waited as its
 * line.  0, or -1 without memory, or -2 when json-c refuses the line
 * (the envelope scan and json-c disagree: not expected). */
static int reparse_raw(eng_req *r)
{
	int cached;
	json_tokener *tok = worker_tokener(r->sess->limits.max_depth, &cached);
	if (!tok)
		return -1;
	json_object *msg = eng_json_parse_ex(tok, r->raw, (int)r->raw_len);
	enum json_tokener_error err = json_tokener_get_error(tok);
	int ok = msg && err == json_tokener_success;
	if (!ok || !cached) {
		/* After a failed parse a tokener can keep state (see
		 * renew_tokener): it is not kept. */
		if (cached)
			pthread_setspecific(tok_key, NULL);
		json_tokener_free(tok);
	}
	if (!ok) {
		json_object_put(msg);
		/* json-c 0.16 reports no error when an allocation fails. */
		return err == json_tokener_success ? -1 : -2;
	}
	r->msg = msg;
	r->parsed_here = 1;
	/* The line can be large and the request may wait for the reader to
	 * free it: let it go now. */
	free(r->raw);
	r->raw = NULL;
	return 0;
}

static void refuse_busy(eng_session *s, eng_req *r, const char *why);
static void req_work(eng_work *w);

static eng_req *req_of_work(eng_work *w)
{
	return (eng_req *)((char *)w - offsetof(eng_req, work));
}

/* Queues r for a worker with a reference of the queue's, which its run
 * (req_work) drops.  MCP_EBUSY or MCP_ECLOSED when the pool refused it. */
static int pool_submit(eng_session *s, eng_req *r)
{
	eng_req_ref(r);
	int rc = eng_pool_submit(s->pool, &r->work);
	if (rc != MCP_OK)
		eng_req_unref(r);
	return rc;
}

static int sched_enter(eng_session *s, eng_req *r);
static void sched_leave(eng_session *s);
static void submit_held(eng_session *s);
/* Registers a request in flight; with `run`, queues it for a worker.
 * *held (when not NULL) receives a counted reference to a request
 * registered without `run`. */
static int admit_req(eng_session *s, eng_req *r, void (*run)(eng_req *), void *proto_req,
		     void (*free_proto)(void *), eng_req **held);

static void dispatch_run(eng_req *r);

/* A new request of msg, or NULL when memory ran out (answered, and what
 * it was given freed). */
static eng_req *new_req(eng_session *s, json_object *msg, json_object *id, void *proto_req,
			void (*free_proto)(void *))
{
	eng_req *r = eng_req_new(s, msg, id);
	if (!r) {
		if (free_proto && proto_req)
			free_proto(proto_req);
		eng_session_respond_error(s, id, MCP_JSONRPC_INTERNAL_ERROR,
					  "out of memory", NULL);
		json_object_put(msg);
	}
	return r;
}

static int admit(eng_session *s, json_object *msg, json_object *id, void (*run)(eng_req *),
		 void *proto_req, void (*free_proto)(void *), eng_req **held)
{
	eng_req *r = new_req(s, msg, id, proto_req, free_proto);
	return r ? admit_req(s, r, run, proto_req, free_proto, held) : MCP_ENOMEM;
}

static int admit_req(eng_session *s, eng_req *r, void (*run)(eng_req *), void *proto_req,
		     void (*free_proto)(void *), eng_req **held)
{
	json_object *id = r->id;
	r->run = run;
	r->work.run = req_work;
	r->proto = proto_req;
	r->free_proto = free_proto;
	if (s->cur_batch) {
		r->batch = s->cur_batch;
		r->batched = 1;
		batch_hold(r->batch);
	}

	pthread_mutex_lock(&s->mu);
	int rc = atomic_load(&s->closed) ? MCP_ECLOSED : table_put_locked(s, r);
	if (rc == MCP_OK)
		atomic_fetch_add(&s->inflight_n, 1);
	pthread_mutex_unlock(&s->mu);
	if (rc == MCP_EEXIST) {
		/* P5: the first request is untouched, and still cancellable.
		 * The duplicate is answered under its id, which is valid
		 * (JSON-RPC 2.0 section 5). */
		json_object *data = json_object_new_object();
		eng_obj_add(data, "id", json_object_get(id));
		eng_session_respond_error(s, id, MCP_JSONRPC_INVALID_REQUEST,
					  "Invalid Request: id is already in flight", data);
		atomic_fetch_add(&s->stats->rejected, 1);
		eng_req_decide(r, ENG_OUT_REJECTED);
		release_batch(r, NULL);
		eng_req_unref(r);
		return rc;
	}
	if (rc != MCP_OK) {
		eng_req_decide(r, ENG_OUT_DROPPED);
		release_batch(r, NULL);
		eng_req_unref(r);
		return rc;
	}
	if (!run) {
		s->feed_admitted++;
		*held = r; /* the caller's reference */
		return MCP_OK;
	}
	if (r->here) {
		s->feed_admitted++;
		atomic_fetch_add(&s->stats->ran_here, 1);
		dispatch_run(r);
		eng_req_unref(r);
		return MCP_OK;
	}
	keep_raw_when_deep(s, r);
	if (s->limits.max_running > 0) {
		int place = sched_enter(s, r);
		if (place <= 0) {
			/* Waits in the session, or was refused. */
			s->feed_admitted += place == 0;
			return place == 0 ? MCP_OK : MCP_EBUSY;
		}
	}
	if (eng_req_on_reader(s) && s->tp->announces_wait) {
		/* The reader's loop, on a transport that tells it before it
		 * blocks: hold the request, and hand the pool several at once
		 * (submit_held). */
		r->qnext = NULL;
		if (s->held_tail)
			s->held_tail->qnext = r;
		else
			s->held_head = r;
		s->held_tail = r;
		s->feed_admitted++;
		if (++s->held_n >= HOLD_MAX)
			submit_held(s);
		return MCP_OK;
	}
	rc = pool_submit(s, r);
	s->feed_admitted += rc == MCP_OK;
	if (rc != MCP_OK) {
		refuse_busy(s, r, BUSY_QUEUE);
		if (r->capped)
			sched_leave(s);
	}
	eng_req_unref(r);
	return rc;
}

/* ---- the per-session cap ---------------------------------------------------
 *
 * One session's burst must not hold every worker while another session's
 * request waits behind it in the pool's queue: at most max_running of a
 * session's requests are in the pool at once (queued or running), and the
 * rest wait in the session, in order, each taking the place a finished one
 * leaves.  The pool's queue stays FIFO, so a request of another session
 * waits behind at most max_running requests of each busy session. */

/* With the caller's reference of r (admitted, in flight): 1 when r has a
 * place and goes to the pool now; 0 when it waits in the session (the
 * reference is then the session's); -1 when it was refused (answered,
 * the reference gone). */
static int sched_enter(eng_session *s, eng_req *r)
{
	pthread_mutex_lock(&s->mu);
	if (s->sched_n < s->limits.max_running) {
		s->sched_n++;
		r->capped = 1;
		pthread_mutex_unlock(&s->mu);
		return 1;
	}
	if (s->wait_n < s->limits.max_waiting) {
		r->qnext = NULL;
		if (s->wait_tail)
			s->wait_tail->qnext = r;
		else
			s->wait_head = r;
		s->wait_tail = r;
		s->wait_n++;
		r->capped = 1;
		pthread_mutex_unlock(&s->mu);
		return 0;
	}
	pthread_mutex_unlock(&s->mu);
	refuse_busy(s, r, BUSY_SESSION);
	eng_req_unref(r);
	return -1;
}

/* A capped request left the pool (it ran, or was dropped or refused): its
 * place goes to the first waiting request, or is freed. */
static void sched_leave(eng_session *s)
{
	for (;;) {
		pthread_mutex_lock(&s->mu);
		eng_req *next = s->wait_head;
		if (next) {
			s->wait_head = next->qnext;
			if (!s->wait_head)
				s->wait_tail = NULL;
			s->wait_n--;
			next->qnext = NULL;
		} else {
			s->sched_n--;
		}
		pthread_mutex_unlock(&s->mu);
		if (!next)
			return;
		/* It keeps the place; the pool takes its own reference and
		 * the session's goes. */
		int rc = pool_submit(s, next);
		if (rc != MCP_OK)
			refuse_busy(s, next, BUSY_QUEUE);
		eng_req_unref(next);
		if (rc == MCP_OK)
			return;
	}
}

/* A request the pool did not take: it ends here, answered "busy" (queued
 * before it stops counting as in flight, so a shutdown cannot close the
 * output in between).  One decided while the reader held it (a peer
 * cancel) gets no answer, like queued work that is skipped (P2). */
static void refuse_busy(eng_session *s, eng_req *r, const char *why)
{
	if (r->sink && !r->id) {
		/* A local request (eng_session_submit_local): its sink hears
		 * that it will not run; nothing goes on the wire. */
		if (eng_req_decide(r, ENG_OUT_REJECTED))
			atomic_fetch_add(&s->stats->rejected, 1);
		r->finished = 1;
		r->sink(r, NULL, r->sink_arg);
		req_done(r);
		return;
	}
	if (!eng_req_decide(r, ENG_OUT_REJECTED)) {
		atomic_fetch_add(&s->stats->dropped_queued, 1);
		r->finished = 1;
		release_batch(r, NULL);
		req_done(r);
	} else {
		/* Also off the reader (a place freed on a worker): routed by
		 * the request itself, never by whatever feed runs now. */
		atomic_fetch_add(&s->stats->rejected, 1);
		json_object *m = error_message(r->id, MCP_JSONRPC_SERVER_BUSY, why, NULL);
		if (r->batch)
			release_batch(r, m);
		else
			send_answer(s, r->id, m, s->tp->ops->send_routed ? r->id_key : NULL);
		req_done(r);
	}
}


/* Hands the held requests to the pool under one lock.  The reader calls it
 * when HOLD_MAX are held, before its transport blocks for input (so no
 * request waits on input that may never come) and when its loop ends. */
static void submit_held(eng_session *s)
{
	/* The pool takes over the held references of the requests it
	 * queues; the others are refused here. */
	eng_work *list = NULL, **tail = &list;
	for (eng_req *r = s->held_head; r; r = r->qnext) {
		*tail = &r->work;
		tail = &r->work.next;
	}
	*tail = NULL;
	s->held_head = s->held_tail = NULL;
	s->held_n = 0;
	if (list)
		eng_pool_submit_list(s->pool, &list, NULL);
	while (list) {
		eng_req *r = req_of_work(list);
		list = list->next;
		r->work.next = NULL;
		r->qnext = NULL;
		refuse_busy(s, r, BUSY_QUEUE);
		if (r->capped)
			sched_leave(s);
		eng_req_unref(r);
	}
}

static void submit_held_hook(void *arg)
{
	submit_held(arg);
}

int eng_session_submit(eng_session *s, json_object *msg, json_object *id,
		       void (*run)(eng_req *), void *proto_req,
		       void (*free_proto)(void *))
{
	return admit(s, msg, id, run, proto_req, free_proto, NULL);
}

int eng_session_run_here(eng_session *s, json_object *msg, json_object *id,
			 void (*run)(eng_req *), void *proto_req, void (*free_proto)(void *))
{
	eng_req *r = new_req(s, msg, id, proto_req, free_proto);
	if (!r)
		return MCP_ENOMEM;
	r->here = 1;
	return admit_req(s, r, run, proto_req, free_proto, NULL);
}

int eng_session_submit_local(eng_session *s, const char *key, void (*run)(eng_req *),
			     void *proto_req, void (*free_proto)(void *),
			     void (*sink)(eng_req *r, json_object *msg, void *arg), void *sink_arg)
{
	/* The key is not JSON text, so it can never meet a peer's id in the
	 * in-flight table (P7), and the request has no id: nothing of it
	 * can reach the wire, every ending goes to the sink. */
	char *k = key && key[0] == '#' ? strdup(key) : NULL;
	eng_req *r = k ? eng_req_new_keyed(s, NULL, NULL, k) : NULL;
	if (!r) {
		if (free_proto && proto_req)
			free_proto(proto_req);
		return key && key[0] == '#' ? MCP_ENOMEM : MCP_EINVAL;
	}
	r->sink = sink;
	r->sink_arg = sink_arg;
	/* Not the reader's hold-back list: the caller may be any thread. */
	eng_session *outer = eng_req_reader_swap(NULL);
	int rc = admit_req(s, r, run, proto_req, free_proto, NULL);
	eng_req_reader_swap(outer);
	return rc;
}

eng_req *eng_session_hold(eng_session *s, json_object *msg, json_object *id, void *proto_req,
			  void (*free_proto)(void *))
{
	eng_req *r = NULL;
	return admit(s, msg, id, NULL, proto_req, free_proto, &r) == MCP_OK ? r : NULL;
}

/* Runs on a worker. */
static void dispatch_run(eng_req *r)
{
	eng_session *s = r->sess;
	if (atomic_load(&r->outcome) != ENG_OUT_NONE) {
		/* Decided while queued: a peer cancel, or a shutdown deadline.
		 * Queued work is dropped without running (uv_cancel style).  A
		 * sink still hears of the ending (it is owed one). */
		atomic_fetch_add(&s->stats->dropped_queued, 1);
		r->finished = 1;
		if (r->sink)
			r->sink(r, NULL, r->sink_arg);
		release_batch(r, NULL);
		req_done(r);
		return;
	}
	int prc = r->raw ? reparse_raw(r) : 0;
	if (prc != 0) {
		if (prc == -1)
			eng_req_finish_error(r, MCP_JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		else
			eng_req_finish_error(r, MCP_JSONRPC_PARSE_ERROR,
					     "Parse error: invalid JSON", NULL);
		return;
	}
	r->started = 1;
	atomic_fetch_add(&s->running_n, 1);
	atomic_fetch_add(&s->stats->started, 1);
	r->run(r);
	if (!r->finished && !r->kept)
		eng_req_finish_silent(r);
	if (r->parsed_here && !r->sink && !r->kept) {
		/* The handler is done with its tree: free it on the thread
		 * that built it (a detached request's tree stays). */
		json_object_put(r->msg);
		r->msg = NULL;
	}
}

/* A request's work item, run by the pool: its handler, then its place
 * in the session's cap and the queue's reference (pool_submit) go. */
static void req_work(eng_work *w)
{
	eng_req *r = req_of_work(w);
	dispatch_run(r);
	if (r->capped)
		sched_leave(r->sess);
	eng_req_unref(r);
}

void eng_req_keep(eng_req *r)
{
	/* It no longer runs: not counted as running, so neither "completed"
	 * when it ends nor "abandoned" at a shutdown, like a held request. */
	r->kept = 1;
	if (r->started) {
		r->started = 0;
		atomic_fetch_sub(&r->sess->running_n, 1);
	}
}

void eng_req_admitted(eng_req *r)
{
	eng_session *s = r->sess;
	if (s->tp->ops->open_route && r->id_key && !r->batched)
		s->tp->ops->open_route(s->tp, r->id_key);
}

void eng_req_finish_silent(eng_req *r)
{
	r->finished = 1;
	eng_token_clear_callbacks(&r->token);
	eng_req_decide(r, ENG_OUT_DROPPED);
	count_cancel(r);
	if (r->sink)
		r->sink(r, NULL, r->sink_arg);
	/* The batch's answer goes out before the session may see itself idle
	 * and close its output. */
	release_batch(r, NULL);
	req_done(r);
}

/* "completed" counts handlers that ran and answered; a request held
 * without a worker (a subscription) ran no handler. */
static void count_completed(eng_req *r)
{
	if (r->started)
		atomic_fetch_add(&r->sess->stats->completed, 1);
}

static void finish_with(eng_req *r, json_object *m)
{
	r->finished = 1;
	eng_token_clear_callbacks(&r->token);
	eng_session *s = r->sess;
	if (r->sink) {
		/* A detached request: its answer belongs to whoever detached it. */
		if (m && eng_req_decide(r, ENG_OUT_RESPONDED))
			count_completed(r);
		else
			count_cancel(r);
		r->sink(r, m, r->sink_arg);
		req_done(r);
		return;
	}
	if (r->batch) {
		/* Inside a batch the answer joins the batch's array, which is
		 * serialised as one: an answer JSON cannot carry would take
		 * its neighbours' answers with it. */
		if (m && !eng_json_finite(m)) {
			json_object_put(m);
			m = error_message(r->id, MCP_JSONRPC_INTERNAL_ERROR, NONFINITE_MESSAGE,
					  NULL);
		}
		int decided = m && eng_req_decide(r, ENG_OUT_RESPONDED);
		if (decided)
			count_completed(r);
		else
			count_cancel(r);
		release_batch(r, decided ? m : NULL);
		if (!decided)
			json_object_put(m);
		req_done(r);
		return;
	}
	size_t len = 0;
	char *line = m ? eng_json_dup(m, &len) : NULL;
	int nonfinite = m && !line && errno == EDOM;
	if (m)
		json_object_put(m);
	if (!line)
		line = oom_error_line(r->id_key, nonfinite, &len);
	/* P8: the outcome is decided by one atomic change.  A peer cancel that
	 * won first suppresses the answer; one that comes later is ignored. */
	if (line && eng_req_decide(r, ENG_OUT_RESPONDED)) {
		count_completed(r);
		/* The id leaves the in-flight table before the answer can reach
		 * the client, so a client reusing it at once is not refused; the
		 * request still counts as in flight until its answer is queued,
		 * so a shutdown waiting for idleness cannot close the output in
		 * between. */
		req_forget_id(r);
		eng_writer_push_quiet(&s->writer, line, len, r, 1);
		req_done(r);
		eng_writer_kick(&s->writer);
		return;
	}
	if (!line)
		atomic_fetch_add(&s->stats->responses_dropped, 1);
	free(line);
	count_cancel(r);
	req_done(r);
}

/* What a detach needs before it takes a lock: the new key's copy and the
 * client's answer as a line.  MCP_OK, or MCP_ENOMEM with nothing kept. */
static int detach_prepare(eng_req *r, json_object *result, const char *key, char **nkey,
			  char **line, size_t *len)
{
	*nkey = strdup(key);
	json_object *m = result_message(r->id, result);
	*len = 0;
	*line = m ? eng_json_dup(m, len) : NULL;
	json_object_put(m);
	if (!*nkey || !*line) {
		free(*nkey);
		free(*line);
		return MCP_ENOMEM;
	}
	return MCP_OK;
}

/* Under the session lock, out of the table: the request takes `nkey`
 * (its own) as its key; the client's id text is kept once, from the
 * first detach. */
static void rekey_locked(eng_req *r, char *nkey)
{
	if (r->client_key)
		free(r->id_key);
	else
		r->client_key = r->id_key;
	r->id_key = nkey;
	r->node.key = nkey;
}

int eng_req_detach(eng_req *r, json_object *result, const char *key,
		   void (*sink)(eng_req *r, json_object *msg, void *arg), void *arg)
{
	eng_session *s = r->sess;
	char *nkey, *line;
	size_t len;
	if (detach_prepare(r, result, key, &nkey, &line, &len) != MCP_OK)
		return MCP_ENOMEM;
	if (atomic_load(&r->outcome) != ENG_OUT_NONE) {
		free(nkey);
		free(line);
		return MCP_ECANCELED;
	}
	/* Re-key under the session lock: a peer cancel looks the old id up
	 * under the same lock, so it either finds the request before the swap
	 * (and its outcome change makes the checks below fail) or not at all. */
	pthread_mutex_lock(&s->mu);
	eng_req_unlink_locked(s, r);
	if (atomic_load(&r->outcome) != ENG_OUT_NONE) {
		pthread_mutex_unlock(&s->mu);
		free(nkey);
		free(line);
		return MCP_ECANCELED;
	}
	rekey_locked(r, nkey);
	int rc = table_put_locked(s, r);
	r->sink = sink;
	r->sink_arg = arg;
	pthread_mutex_unlock(&s->mu);
	if (rc != MCP_OK) {
		/* Same key twice: a caller bug; the request stays counted and
		 * ends through its sink like any other. */
		free(line);
		return rc;
	}
	/* The answer to the client's id: routed by the original key, which
	 * the request no longer carries. */
	const char *route = s->tp->ops->send_routed ? eng_json_text(r->id, NULL) : NULL;
	eng_writer_push_routed(&s->writer, line, len, NULL, route, 1);
	return MCP_OK;
}

/* The old session's share of a request that moved to another: as req_done
 * does for a request that ends, the last one out of a closing push session
 * finishes its shutdown, and a reader's shutdown waiting for idleness is
 * woken. */
static void inflight_leave(eng_session *s)
{
	if (atomic_fetch_sub(&s->inflight_n, 1) != 1)
		return;
	if (s->limits.push) {
		if (atomic_load(&s->closed))
			push_close_finish(s);
		return;
	}
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->idle_cv);
	pthread_mutex_unlock(&s->mu);
}

int eng_req_detach_to(eng_req *r, eng_session *to, json_object *result, const char *key,
		      void (*sink)(eng_req *r, json_object *msg, void *arg), void *arg)
{
	eng_session *s = r->sess;
	if (!to || to == s)
		return eng_req_detach(r, result, key, sink, arg);
	char *nkey, *line;
	size_t len;
	if (detach_prepare(r, result, key, &nkey, &line, &len) != MCP_OK)
		return MCP_ENOMEM;
	/* A place in the new session first: counted there before it leaves
	 * the old one, so that neither can finish a shutdown while the
	 * request is between them.  A session already closing takes no
	 * newcomer. */
	pthread_mutex_lock(&to->mu);
	int closed = atomic_load(&to->closed);
	if (!closed)
		atomic_fetch_add(&to->inflight_n, 1);
	pthread_mutex_unlock(&to->mu);
	if (closed) {
		free(nkey);
		free(line);
		return MCP_ECLOSED;
	}
	/* Out of the old table under its lock, as eng_req_detach does: a peer
	 * cancel either finds it before (and decides its outcome, checked
	 * here) or never. */
	pthread_mutex_lock(&s->mu);
	eng_req_unlink_locked(s, r);
	if (atomic_load(&r->outcome) != ENG_OUT_NONE) {
		pthread_mutex_unlock(&s->mu);
		free(nkey);
		free(line);
		inflight_leave(to);
		return MCP_ECANCELED;
	}
	rekey_locked(r, nkey);
	r->sink = sink;
	r->sink_arg = arg;
	pthread_mutex_unlock(&s->mu);
	/* The client's answer leaves by the old session, routed by the id it
	 * asked with, before the old session can see itself idle. */
	const char *route = s->tp->ops->send_routed ? eng_json_text(r->id, NULL) : NULL;
	eng_writer_push_routed(&s->writer, line, len, NULL, route, 1);
	/* Now the new session's: its table (a shutdown finds it there), its
	 * counters, its reference.  Its place in the old session's worker
	 * cap is given back, since it no longer runs for that session. */
	eng_session_ref(to);
	pthread_mutex_lock(&to->mu);
	int rc = table_put_locked(to, r);
	r->sess = to;
	closed = atomic_load(&to->closed);
	pthread_mutex_unlock(&to->mu);
	if (r->started) {
		atomic_fetch_sub(&s->running_n, 1);
		atomic_fetch_add(&to->running_n, 1);
	}
	if (r->capped) {
		r->capped = 0;
		sched_leave(s);
	}
	/* A shutdown of `to` that began between the reservation and the
	 * insertion fired every token in its table but this one. */
	if (closed) {
		int reason = atomic_load(&to->close_reason);
		eng_token_fire(&r->token, reason ? reason : MCP_CANCEL_SHUTDOWN);
	}
	inflight_leave(s);
	eng_session_unref(s);
	/* Same key twice is a caller bug (keys are random): the request still
	 * ends through its sink, counted, but no shutdown finds it by key. */
	return rc == MCP_EEXIST ? MCP_OK : rc;
}

void eng_req_finish_result(eng_req *r, json_object *result)
{
	finish_with(r, result_message(r->id, result));
}

void eng_req_finish_error(eng_req *r, int code, const char *message, json_object *data)
{
	finish_with(r, error_message(r->id, code, message, data));
}

int eng_req_emit(eng_req *r, json_object *msg)
{
	int outcome = atomic_load(&r->outcome);
	if (outcome != ENG_OUT_NONE) {
		json_object_put(msg);
		return outcome == ENG_OUT_SUPPRESSED ? MCP_ECANCELED : MCP_ECLOSED;
	}
	size_t len;
	char *line = eng_json_dup(msg, &len);
	int rc = !line && errno == EDOM ? MCP_EINVAL : MCP_ENOMEM;
	json_object_put(msg);
	if (!line)
		return rc;
	/* Run where it was read: that thread never waits for the writer. */
	if (r->here)
		return eng_writer_push(&r->sess->writer, line, len, r, 0);
	return eng_writer_push_wait(&r->sess->writer, line, len, r, &r->token, NULL);
}

int eng_req_closed(eng_req *r)
{
	int reason = atomic_load(&r->sess->close_reason);
	eng_token_fire(&r->token, reason ? reason : MCP_CANCEL_TRANSPORT_CLOSED);
	return MCP_ECANCELED;
}

int eng_req_call(eng_req *r, json_object *msg, int64_t timeout_ms, json_object **answer)
{
	eng_session *s = r->sess;
	*answer = NULL;
	if (eng_token_reason(&r->token) != MCP_CANCEL_NONE) {
		json_object_put(msg);
		return MCP_ECANCELED;
	}
	if (s->tp->ops->can_request && r->id_key && !s->tp->ops->can_request(s->tp, r->id_key)) {
		/* It could never reach the client: fail now, not at the timeout. */
		json_object_put(msg);
		return MCP_ENOTSUP;
	}
	eng_pending *p;
	int rc = eng_pending_add(&s->pending, r, &p);
	if (rc != MCP_OK) {
		json_object_put(msg);
		return rc == MCP_ECLOSED ? eng_req_closed(r) : rc;
	}
	eng_obj_add(msg, "id", json_object_new_int64(p->id));
	size_t len;
	char *line = eng_json_dup(msg, &len);
	json_object_put(msg);
	uint64_t seq = 0;
	rc = line ? eng_writer_push_wait(&s->writer, line, len, r, &r->token, &seq) : MCP_ENOMEM;
	if (rc != MCP_OK) {
		eng_pending_remove(&s->pending, p);
		eng_pending_unref(p);
		/* The output failed: the shutdown it started is on its way to
		 * this token; the handler hears the reason now. */
		return rc == MCP_ECLOSED ? eng_req_closed(r) : rc;
	}

	int64_t deadline = timeout_ms < 0 ? ENG_NO_DEADLINE
					  : eng_now_ns() + timeout_ms * ENG_NS_PER_MS;
	struct timespec ts;
	eng_abstime(deadline, &ts);
	int timed_out = 0;
	eng_token *t = &r->token;
	eng_pool_blocking();
	pthread_mutex_lock(&t->mu);
	while (p->state == ENG_PEND_WAITING && atomic_load(&t->reason) == MCP_CANCEL_NONE) {
		if (deadline == ENG_NO_DEADLINE) {
			pthread_cond_wait(&t->cv, &t->mu);
		} else if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT &&
			   p->state == ENG_PEND_WAITING) {
			timed_out = 1;
			break;
		}
	}
	int state = p->state;
	json_object *ans = p->answer;
	p->answer = NULL;
	int reason = atomic_load(&t->reason);
	pthread_mutex_unlock(&t->mu);
	eng_pool_unblocked();

	if (state == ENG_PEND_ANSWERED) {
		eng_pending_unref(p);
		*answer = ans;
		return MCP_OK;
	}
	/* The entry may be gone already (failed by the shutdown's swap);
	 * removal copes with that. */
	eng_pending_remove(&s->pending, p);
	int64_t id = p->id;
	eng_pending_unref(p);
	/* A fired token wins over a failed table: the shutdown fires every
	 * token before it fails the table, and the handler must see the one
	 * code that means "stop, write nothing". */
	if (state == ENG_PEND_FAILED && reason == MCP_CANCEL_NONE)
		return eng_req_closed(r);
	if ((timed_out || reason == MCP_CANCEL_PEER || reason == MCP_CANCEL_TIMEOUT) &&
	    !eng_writer_unqueue(&s->writer, seq)) {
		/* It went out: tell the client to stop working on it.  Not
		 * tied to r: after a peer cancel of r this is the one message
		 * still owed.  (Withdrawn unsent, it needs no cancel: the
		 * client never heard of it.) */
		json_object *n = s->proto->cancel_notification(
			id, timed_out ? "timeout" : "the request that needed it was cancelled");
		if (n)
			push_message(s, n, NULL, 0);
	}
	return timed_out ? MCP_ETIMEDOUT : MCP_ECANCELED;
}

void eng_session_cancel_peer(eng_session *s, json_object *id)
{
	if (!id)
		return;
	enum json_type ty = json_object_get_type(id);
	if (ty != json_type_string && ty != json_type_int)
		return; /* malformed: ignored, not remembered (P2) */
	eng_req *r = inflight_find(s, id);
	if (!r)
		return;
	if (eng_req_decide(r, ENG_OUT_SUPPRESSED))
		eng_token_fire(&r->token, MCP_CANCEL_PEER);
	eng_req_unref(r);
}

/* ---- the reader ------------------------------------------------------------ */

static void parse_error(eng_session *s, const char *message)
{
	if (s->limits.drop_invalid) {
		/* Never answered, so no bucket: each one is counted. */
		note_dropped(s, ENG_DROP_INVALID, message);
		return;
	}
	/* Token bucket: a flood of garbage must not turn into a flood of
	 * answers (P3). */
	int64_t now = eng_now_ns();
	s->perr_tokens += (double)(now - s->perr_last_ns) / 1e9 * PARSE_ERROR_RATE;
	if (s->perr_tokens > PARSE_ERROR_RATE)
		s->perr_tokens = PARSE_ERROR_RATE;
	s->perr_last_ns = now;
	if (s->perr_tokens < 1.0)
		return;
	s->perr_tokens -= 1.0;
	eng_session_respond_error(s, NULL, MCP_JSONRPC_PARSE_ERROR, message, NULL);
}

static int valid_request_id(json_object *id)
{
	enum json_type ty = json_object_get_type(id);
	return ty == json_type_string || ty == json_type_int;
}

const char *eng_request_problem(json_object *msg, unsigned pre)
{
	json_object *jmethod = NULL, *jid = NULL, *jv = NULL, *params = NULL;
	int has_method = json_object_object_get_ex(msg, "method", &jmethod);
	int has_id = json_object_object_get_ex(msg, "id", &jid);
	if (pre & ENG_JSON_NUL_NAME)
		return "Invalid Request: a member name of the message holds U+0000 (\\u0000)";
	/* Compared with its length: "2.0\u0000junk" is not "2.0". */
	if (!json_object_object_get_ex(msg, "jsonrpc", &jv) ||
	    json_object_get_type(jv) != json_type_string || json_object_get_string_len(jv) != 3 ||
	    memcmp(json_object_get_string(jv), "2.0", 3) != 0)
		return "Invalid Request: \"jsonrpc\" must be \"2.0\"";
	if (!has_method || json_object_get_type(jmethod) != json_type_string)
		return "Invalid Request: \"method\" must be a string";
	if (has_id && !valid_request_id(jid))
		return "Invalid Request: \"id\" must be a string or an integer";
	if (has_id && (pre & ENG_JSON_BAD_ID))
		return "Invalid Request: \"id\" cannot be echoed as sent (an integer "
		       "beyond 64 bits, or a lone UTF-16 surrogate escape)";
	if (json_object_object_get_ex(msg, "params", &params) &&
	    !json_object_is_type(params, json_type_object) &&
	    !json_object_is_type(params, json_type_array))
		return "Invalid Request: \"params\" must be an object or an array";
	return NULL;
}

json_object *eng_request_answer_id(json_object *msg, unsigned pre)
{
	json_object *jid = NULL;
	if (!json_object_object_get_ex(msg, "id", &jid) || !valid_request_id(jid) ||
	    (pre & (ENG_JSON_BAD_ID | ENG_JSON_NUL_NAME)))
		return NULL;
	return jid;
}

/* Why a response cannot be one (JSON-RPC 2.0 section 5: exactly one of
 * result and error; section 5.1: an error is an object with an integer
 * code and a string message), or NULL. */
static const char *response_problem(json_object *msg)
{
	json_object *err = NULL, *code = NULL, *message = NULL;
	int has_result = json_object_object_get_ex(msg, "result", NULL);
	if (!json_object_object_get_ex(msg, "error", &err))
		return NULL;
	if (has_result)
		return "Invalid response: both result and error";
	if (!json_object_object_get_ex(err, "code", &code) ||
	    !json_object_is_type(code, json_type_int) ||
	    !json_object_object_get_ex(err, "message", &message) ||
	    !json_object_is_type(message, json_type_string))
		return "Invalid response: the error has no integer code or no string message";
	return NULL;
}

static void dispatch_object(eng_session *s, json_object *msg)
{
	json_object *jmethod = NULL, *jid = NULL, *params = NULL;
	int has_method = json_object_object_get_ex(msg, "method", &jmethod);
	int has_id = json_object_object_get_ex(msg, "id", &jid);

	if (!has_method && (json_object_object_get_ex(msg, "result", NULL) ||
			    json_object_object_get_ex(msg, "error", NULL))) {
		/* Not a response after all (fuzz-client-session): its caller
		 * would take {"result":{},"error":{}} for the error object {}.
		 * Counted as invalid, and what reaches the request waiting
		 * under its id is an error of our own saying so, a -32603
		 * with a code and a message, rather than nothing: a call
		 * never waits out its timeout for an answer that came. */
		const char *bad = response_problem(msg);
		if (bad) {
			note_dropped(s, ENG_DROP_INVALID, bad);
			char text[128];
			snprintf(text, sizeof text, "%s (from the peer)", bad);
			int oom = 0;
			json_object *e = json_object_new_object();
			eng_obj_set(e, "code", json_object_new_int(MCP_JSONRPC_INTERNAL_ERROR), &oom);
			eng_obj_set(e, "message", json_object_new_string(text), &oom);
			json_object_object_del(msg, "result");
			if (!e || oom) {
				json_object_put(e);
				json_object_put(msg);
				return;
			}
			/* Replaces the peer's "error" (json-c frees it). */
			if (eng_obj_add(msg, "error", e) != 0) {
				json_object_put(msg);
				return;
			}
		}
		/* A response: route it to the pending table, never answer it
		 * (P3).  Our outbound ids are integers (P7: a separate
		 * namespace from the client's request ids). */
		int ours = has_id && json_object_get_type(jid) == json_type_int;
		/* The id as text, taken before the message is handed on: it
		 * may be gone (or another thread's) afterwards. */
		char idtext[64] = "";
		if (s->proto->on_dropped) {
			if (ours)
				snprintf(idtext, sizeof idtext, "%lld",
					 (long long)json_object_get_int64(jid));
			else if (has_id)
				snprintf(idtext, sizeof idtext, "%.60s",
					 json_object_to_json_string_ext(jid, JSON_C_TO_STRING_PLAIN));
		}
		/* eng_pending_answer takes msg (jid with it) in every case. */
		if (!ours)
			json_object_put(msg);
		if (!ours || !eng_pending_answer(&s->pending, json_object_get_int64(jid), msg)) {
			/* Unknown, late (cancelled, timed out), duplicate or
			 * foreign: dropped, and counted. */
			atomic_fetch_add(&s->stats->answers_unmatched, 1);
			if (s->proto->on_dropped)
				s->proto->on_dropped(s, ENG_DROP_UNMATCHED, NULL,
						     has_id ? idtext : NULL);
		}
		return;
	}
	unsigned pre = s->cur_pre;
	const char *why = eng_request_problem(msg, pre);
	if (why) {
		/* Under its own id when that id is valid (JSON-RPC 2.0 section
		 * 5), so that the client's call fails with the reason instead
		 * of waiting for its timeout; null only when it has none. */
		eng_session_respond_error(s, eng_request_answer_id(msg, pre),
					  MCP_JSONRPC_INVALID_REQUEST, why, NULL);
		json_object_put(msg);
		return;
	}
	json_object_object_get_ex(msg, "params", &params);
	const char *method = json_object_get_string(jmethod);
	/* Methods are looked up as C strings: "ping\u0000junk" must not be
	 * taken for ping.  No method holds U+0000, so none is found. */
	const char *refuse = NULL;
	int code = 0;
	if (strlen(method) != (size_t)json_object_get_string_len(jmethod)) {
		code = MCP_JSONRPC_METHOD_NOT_FOUND;
		refuse = "Method not found: the method name holds U+0000 (\\u0000)";
	} else if (pre & ENG_JSON_NUL_KEY) {
		/* json-c has already cut such a name and let it replace
		 * its namesake: what the handler would read is not what was
		 * sent. */
		code = MCP_JSONRPC_INVALID_PARAMS;
		refuse = "Invalid params: a member name holds U+0000 (\\u0000)";
	}
	if (refuse) {
		if (has_id)
			eng_session_respond_error(s, jid, code, refuse, NULL);
		json_object_put(msg);
		return;
	}
	if (has_id)
		s->proto->on_request(s, msg, jid, method, params);
	else
		s->proto->on_notification(s, msg, method, params);
}

/* json_tokener_reset() keeps a UTF-16 high surrogate still waiting for its
 * low half (json-c 0.16 at least): after a message that ended or failed
 * inside such a pair, the next message's first \u escape would be read as
 * U+FFFD plus itself, and an id would not come back as sent (P7).  After
 * any failed parse the tokener is replaced; without memory for a new one
 * the old one stays. */
static void renew_tokener(eng_session *s)
{
	json_tokener *t = eng_json_tokener(s->limits.max_depth);
	if (!t)
		return;
	json_tokener_free(s->tok);
	s->tok = t;
}

/* The fast path for a plain request (envelope.c): routed from its raw
 * line, parsed by the worker that runs it.  0 when the line must take
 * the ordinary path (nothing was done). */
static int dispatch_raw(eng_session *s, const char *line, size_t len)
{
	eng_envelope env;
	if (!s->proto->raw_route || !eng_json_envelope(line, len, s->limits.max_depth, &env))
		return 0;
	void (*run)(eng_req *) = s->proto->raw_route(s, env.method);
	if (!run)
		return 0;
	json_object *id;
	if (env.id_is_string) {
		id = json_object_new_string_len(env.id + 1, (int)env.id_len - 2);
	} else {
		/* At most 18 digits and a sign (the scan made sure). */
		int64_t v = 0;
		size_t i = env.id[0] == '-';
		for (; i < env.id_len; i++)
			v = v * 10 + (env.id[i] - '0');
		id = json_object_new_int64(env.id[0] == '-' ? -v : v);
	}
	char *raw = malloc(len + 1);
	char *key = malloc(env.id_len + 1);
	if (!id || !raw || !key) {
		json_object_put(id);
		free(raw);
		free(key);
		return 0;
	}
	memcpy(raw, line, len);
	raw[len] = '\0';
	memcpy(key, env.id, env.id_len);
	key[env.id_len] = '\0';
	eng_req *r = eng_req_new_keyed(s, NULL, id, key);
	if (!r) {
		json_object_put(id);
		free(raw);
		return 0;
	}
	r->raw = raw;
	r->raw_len = len;
	r->own_id = id;
	admit_req(s, r, run, NULL, NULL, NULL);
	return 1;
}

static const char *precheck_problem(unsigned pre)
{
	return pre == ENG_JSON_BAD_CONTROL ? "Parse error: raw control character in a string"
	       : pre == ENG_JSON_BAD_NUMBER ? "Parse error: malformed number"
					    : "Parse error: invalid literal (JSON has only true, "
					      "false and null)";
}

/* One message with `tok` (reset here): the value, or NULL with *code
 * (-32700, or -32600 for a well-formed message nested too deep) and the
 * message in why[].  *spoiled: the tokener must not be used again (see
 * renew_tokener). */
static int parse_message(json_tokener *tok, const char *line, size_t len, int max_depth,
			 json_object **out, int *code, char *why, size_t whysz, int *spoiled)
{
	*out = NULL;
	json_tokener_reset(tok);
	*spoiled = 0;
	*code = MCP_JSONRPC_PARSE_ERROR;
	json_object *v = eng_json_parse_ex(tok, line, (int)len);
	enum json_tokener_error err = json_tokener_get_error(tok);
	size_t used = tok->char_offset;
	if (err == json_tokener_continue) {
		used = len; /* the whole line went into the value */
		/* Either the line ended inside a value (truncated JSON), or it
		 * holds a complete scalar that json-c cannot know has ended
		 * ("1", "null"): one more byte that ends any token tells the
		 * two apart. */
		v = eng_json_parse_ex(tok, " ", 1);
		err = json_tokener_get_error(tok);
		if (err == json_tokener_continue) {
			*spoiled = 1;
			json_object_put(v);
			snprintf(why, whysz, "Parse error: unexpected end of message");
			return -1;
		}
	}
	if (err != json_tokener_success) {
		*spoiled = 1;
		json_object_put(v);
		if (err == json_tokener_error_depth) {
			/* Valid JSON past a limit is a refused request, not
			 * unreadable input; the limit is the same on every
			 * transport. */
			*code = MCP_JSONRPC_INVALID_REQUEST;
			snprintf(why, whysz,
				 "Invalid Request: nesting deeper than the limit of %d levels",
				 max_depth);
		} else {
			snprintf(why, whysz, "Parse error: invalid JSON");
		}
		return -1;
	}
	for (size_t i = used; i < len; i++) {
		char c = line[i];
		if (c != ' ' && c != '\t' && c != '\r') {
			json_object_put(v);
			snprintf(why, whysz, "Parse error: unexpected data after the JSON value");
			return -1;
		}
	}
	*out = v; /* NULL for the JSON text "null" */
	return 0;
}

/* What a line past the value limit is told (-32600): the limit and its
 * value, so that the client knows what to split. */
static void too_many_values(size_t max_values, char *why, size_t whysz)
{
	snprintf(why, whysz,
		 "Invalid Request: the message holds more than %zu JSON values (the "
		 "limit per message; an object counts %d, an array %d)",
		 max_values, ENG_JSON_WEIGHT_OBJECT, ENG_JSON_WEIGHT_ARRAY);
}

static size_t values_limit(size_t max_values)
{
	return max_values ? max_values : ENG_DEFAULT_MAX_VALUES;
}

/* The text json-c is given for `line` with precheck flags `pre`: the line
 * itself, or (ENG_JSON_BIG_INT) its widened copy in *copy.  NULL without
 * memory. */
static const char *parse_text(const char *line, size_t *len, unsigned pre, char **copy)
{
	*copy = NULL;
	if (!(pre & ENG_JSON_BIG_INT))
		return line;
	*copy = eng_json_widen(line, *len, len);
	return *copy;
}

int eng_json_parse_message(const char *line, size_t len, int max_depth, size_t max_values,
			   unsigned *pre, json_object **out, int *code, char *why, size_t whysz)
{
	*out = NULL;
	max_values = values_limit(max_values);
	*pre = eng_json_precheck(line, len, max_values);
	if (*pre & ENG_JSON_NOT_JSON) {
		*code = MCP_JSONRPC_PARSE_ERROR;
		snprintf(why, whysz, "%s", precheck_problem(*pre));
		return -1;
	}
	if (*pre & ENG_JSON_TOO_MANY) {
		*code = MCP_JSONRPC_INVALID_REQUEST;
		too_many_values(max_values, why, whysz);
		return -1;
	}
	char *copy;
	const char *text = parse_text(line, &len, *pre, &copy);
	int cached, spoiled;
	json_tokener *tok = text ? worker_tokener(max_depth, &cached) : NULL;
	if (!tok) {
		free(copy);
		*code = MCP_JSONRPC_INTERNAL_ERROR;
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	int rc = parse_message(tok, text, len, max_depth, out, code, why, whysz, &spoiled);
	free(copy);
	if (spoiled && cached)
		pthread_setspecific(tok_key, NULL);
	if (spoiled || !cached)
		json_tokener_free(tok);
	return rc;
}

static void dispatch_value(eng_session *s, json_object *v, const char *line, size_t len,
			   unsigned pre);

static void dispatch_line(eng_session *s, const char *line, size_t len)
{
	unsigned pre;
	int code, rc;
	char why[160];
	json_object *v;
	if (s->tok) {
		/* A reader thread's own tokener. */
		size_t max_values = values_limit(s->limits.max_values);
		pre = eng_json_precheck(line, len, max_values);
		if (pre & ENG_JSON_NOT_JSON) {
			parse_error(s, precheck_problem(pre));
			return;
		}
		if (pre & ENG_JSON_TOO_MANY) {
			too_many_values(max_values, why, sizeof why);
			eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST, why, NULL);
			return;
		}
		if (pre == 0 && dispatch_raw(s, line, len))
			return;
		int spoiled;
		char *copy;
		size_t tlen = len;
		const char *text = parse_text(line, &tlen, pre, &copy);
		if (!text) {
			eng_session_respond_error(s, NULL, MCP_JSONRPC_INTERNAL_ERROR,
						  "out of memory", NULL);
			return;
		}
		rc = parse_message(s->tok, text, tlen, s->limits.max_depth, &v, &code, why,
				   sizeof why, &spoiled);
		free(copy);
		if (spoiled)
			renew_tokener(s);
	} else {
		rc = eng_json_parse_message(line, len, s->limits.max_depth, s->limits.max_values,
					    &pre, &v, &code, why, sizeof why);
	}
	if (rc != 0) {
		if (code == MCP_JSONRPC_PARSE_ERROR)
			parse_error(s, why);
		else
			eng_session_respond_error(s, NULL, code, why, NULL);
		return;
	}
	dispatch_value(s, v, line, len, pre);
}

/* A parsed message (taken), from `line` (for the fast path's bookkeeping),
 * whose precheck flags are `pre`. */
static void dispatch_value(eng_session *s, json_object *v, const char *line, size_t len,
			   unsigned pre)
{
	s->cur_pre = pre;
	if (json_object_is_type(v, json_type_object)) {
		s->cur_line = line;
		s->cur_len = len;
		dispatch_object(s, v);
		s->cur_line = NULL;
		return;
	}
	if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0 &&
	    s->proto->batches_allowed && s->proto->batches_allowed(s)) {
		/* 2025-03-26 batches: each element is routed on its own and the
		 * answers are written together as one array. */
		eng_batch *b = batch_new(s);
		/* On a routing transport the array goes where the feed that
		 * carried the batch said (NULL: unrouted, still answered). */
		if (b && s->feed_route)
			b->route = strdup(s->feed_route);
		if (!b) {
			json_object_put(v);
			eng_session_respond_error(s, NULL, MCP_JSONRPC_INTERNAL_ERROR,
						  "out of memory", NULL);
			return;
		}
		s->cur_batch = b;
		/* Take every element out and drop the array before any reaches
		 * a worker: json-c's reference counts are not atomic, so the
		 * array's release must not race a worker's release of its
		 * element. */
		size_t n = json_object_array_length(v);
		json_object **elems = malloc((n ? n : 1) * sizeof *elems);
		if (!elems) {
			s->cur_batch = NULL;
			batch_release(b, NULL);
			json_object_put(v);
			eng_session_respond_error(s, NULL, MCP_JSONRPC_INTERNAL_ERROR,
						  "out of memory", NULL);
			return;
		}
		for (size_t i = 0; i < n; i++)
			elems[i] = json_object_get(json_object_array_get_idx(v, i));
		json_object_put(v);
		v = NULL;
		for (size_t i = 0; i < n; i++) {
			json_object *e = elems[i];
			if (json_object_is_type(e, json_type_object))
				dispatch_object(s, e);
			else {
				json_object_put(e);
				eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST,
							  "Invalid Request: batch element is not an object",
							  NULL);
			}
		}
		s->cur_batch = NULL;
		batch_release(b, NULL);
		free(elems);
		return;
	}
	const char *why = "Invalid Request: a message must be a JSON object";
	if (json_object_is_type(v, json_type_array))
		why = json_object_array_length(v) == 0
			      ? "Invalid Request: empty batch"
			      : "Invalid Request: batches are not supported in this protocol version";
	json_object_put(v);
	eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST, why, NULL);
}

/* ---- shutdown ------------------------------------------------------------- */

/* fire_all without memory for a snapshot: one request at a time, each
 * found under the lock and fired outside it.  A fired token is skipped
 * and no request can join the table any more, so this ends. */
static void fire_one_by_one(eng_session *s, int reason)
{
	for (;;) {
		eng_req *r = NULL;
		pthread_mutex_lock(&s->mu);
		for (size_t i = 0; !r && i < s->inflight.nslots; i++)
			for (eng_idnode *nd = s->inflight.slots[i]; nd && !r; nd = nd->next)
				if (eng_req_live(nd) &&
				    eng_token_reason(&((eng_req *)nd)->token) == MCP_CANCEL_NONE)
					r = eng_req_live_ref(nd); /* NULL: being freed, skipped */
		pthread_mutex_unlock(&s->mu);
		if (!r)
			return;
		eng_token_fire(&r->token, reason);
		eng_req_unref(r);
	}
}

static void fire_all(eng_session *s, int reason)
{
	/* Snapshot under the lock, fire outside it: callbacks may run. */
	pthread_mutex_lock(&s->mu);
	size_t n = s->inflight.count, k = 0;
	eng_req **snap = n ? malloc(n * sizeof *snap) : NULL;
	if (n && !snap) {
		pthread_mutex_unlock(&s->mu);
		fire_one_by_one(s, reason);
		return;
	}
	for (size_t i = 0; snap && i < s->inflight.nslots; i++)
		for (eng_idnode *nd = s->inflight.slots[i]; nd; nd = nd->next) {
			eng_req *r = eng_req_live_ref(nd);
			if (!r)
				continue; /* finished: nothing to cancel */
			snap[k++] = r;
		}
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < k; i++) {
		eng_token_fire(&snap[i]->token, reason);
		eng_req_unref(snap[i]);
	}
	free(snap);
}

static void drop_stragglers(eng_session *s)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->inflight.nslots; i++)
		for (eng_idnode *nd = s->inflight.slots[i]; nd; nd = nd->next) {
			eng_req *r = eng_req_live(nd);
			if (r)
				eng_req_decide(r, ENG_OUT_DROPPED);
		}
	atomic_fetch_add(&s->stats->abandoned, atomic_load(&s->running_n));
	atomic_fetch_add(&s->stats->inflight_left, atomic_load(&s->inflight_n));
	pthread_mutex_unlock(&s->mu);
}

/* Steps 1-3 of the shutdown, run once whatever triggers it; returns 1
 * when this call ran them. */
static int close_begin(eng_session *s, int reason)
{
	if (atomic_exchange(&s->shutdown_once, 1))
		return 0;
	atomic_store(&s->close_deadline, eng_now_ns() + s->limits.grace_ms * ENG_NS_PER_MS);

	/* 1. Closed: no new in-flight or pending entry from here on.  The
	 *    reason is set first: a handler that finds the session closed
	 *    before step 2 reaches its token takes the reason itself
	 *    (eng_req_closed). */
	pthread_mutex_lock(&s->mu);
	int expect = 0;
	atomic_compare_exchange_strong(&s->close_reason, &expect, reason);
	atomic_store(&s->closed, 1);
	pthread_mutex_unlock(&s->mu);
	/* 2. Broadcast the reason to every request, queued or running. */
	fire_all(s, reason);
	/* 3. Fail the pending server-to-client requests from a swapped-out
	 *    snapshot of their table. */
	atomic_fetch_add(&s->stats->pending_failed, eng_pending_fail_all(&s->pending));
	return 1;
}

/* Steps 4-5, once step 4's wait for the handlers is over (they are done,
 * or the grace deadline passed): what still runs is abandoned, what was
 * answered is flushed (bounded), and the output closes.  Runs once. */
static void close_finish(eng_session *s)
{
	if (atomic_exchange(&s->close_done, 1))
		return;
	if (atomic_load(&s->inflight_n) > 0)
		drop_stragglers(s);
	/* The flush gets at least a short window even when handlers used the
	 * whole grace period. */
	int64_t deadline = atomic_load(&s->close_deadline);
	int64_t flush_deadline = eng_now_ns() + 250 * ENG_NS_PER_MS;
	if (flush_deadline < deadline)
		flush_deadline = deadline;
	eng_writer_close(&s->writer, flush_deadline);
	atomic_fetch_add(&s->stats->pending_left, eng_pending_count(&s->pending));
	atomic_store(&s->close_finished, 1);
}

/* The reader's shutdown: all five steps on its thread. */
static void session_shutdown(eng_session *s, int reason)
{
	if (!close_begin(s, reason))
		return;
	/* 4. Wait for this session's handlers, bounded by the grace period. */
	struct timespec ts;
	eng_abstime(atomic_load(&s->close_deadline), &ts);
	pthread_mutex_lock(&s->mu);
	while (atomic_load(&s->inflight_n) > 0)
		if (pthread_cond_timedwait(&s->idle_cv, &s->mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&s->mu);
	close_finish(s);
}

static void push_close_finish(eng_session *s)
{
	close_finish(s);
}

void eng_session_close(eng_session *s, int reason)
{
	if (!close_begin(s, reason))
		return;
	/* Nothing in flight: step 4 has nothing to wait for.  Otherwise the
	 * last request to end finishes (req_done), or the poll at the
	 * deadline. */
	if (atomic_load(&s->inflight_n) == 0)
		close_finish(s);
}

int eng_session_close_poll(eng_session *s, int64_t now_ns)
{
	/* Begun is not done: the thread finishing it (a worker that ran the
	 * last request, say) may still be closing the output, and the caller
	 * frees what the output writes to once this says 1. */
	if (atomic_load(&s->close_done))
		return atomic_load(&s->close_finished);
	/* `closed` is stored after the deadline: a shutdown still in its
	 * first step is not yet ours to finish. */
	if (!atomic_load(&s->closed))
		return 0;
	if (atomic_load(&s->inflight_n) > 0 && now_ns < atomic_load(&s->close_deadline))
		return 0;
	close_finish(s);
	return atomic_load(&s->close_finished);
}

int eng_session_feed(eng_session *s, const char *line, size_t len, json_object *value,
		     unsigned pre, const char *route, int *admitted)
{
	if (admitted)
		*admitted = 0;
	pthread_mutex_lock(&s->feed_mu);
	if (atomic_load(&s->closed)) {
		pthread_mutex_unlock(&s->feed_mu);
		json_object_put(value);
		return MCP_ECLOSED;
	}
	s->feed_route = route;
	s->feed_admitted = 0;
	if (value)
		dispatch_value(s, value, line, len, pre);
	else
		dispatch_line(s, line, len);
	int n = s->feed_admitted;
	s->feed_route = NULL;
	pthread_mutex_unlock(&s->feed_mu);
	if (admitted)
		*admitted = n;
	return MCP_OK;
}

void eng_session_set_transport_features(eng_session *s, unsigned flags)
{
	if (s->tp->ops->set_features)
		s->tp->ops->set_features(s->tp, flags);
}

int eng_session_run(eng_session *s)
{
	int reason = MCP_CANCEL_TRANSPORT_CLOSED;
	eng_session *outer = eng_req_reader_swap(s);
	atomic_store(&s->reaping, 1);
	s->tp->before_wait = submit_held_hook;
	s->tp->before_wait_arg = s;
	for (;;) {
		const char *line;
		size_t len;
		int rc = s->tp->ops->recv(s->tp, &line, &len);
		if (rc == TP_LINE) {
			dispatch_line(s, line, len);
			/* After the hand-off, not before: the frees overlap the
			 * worker's run instead of delaying this request. */
			if (atomic_load_explicit(&s->reap_stack, memory_order_relaxed))
				eng_req_reap(s);
		} else if (rc == TP_BADUTF8) {
			parse_error(s, "Parse error: invalid UTF-8");
		} else if (rc == TP_TOOLONG) {
			if (s->limits.drop_invalid)
				note_dropped(s, ENG_DROP_TOOLONG,
					     "Invalid Request: message exceeds the size limit");
			else
				eng_session_respond_error(s, NULL, MCP_JSONRPC_INVALID_REQUEST,
							  "Invalid Request: message exceeds the size limit",
							  NULL);
		} else if (rc == TP_WOKEN) {
			int r = atomic_load(&s->close_reason);
			reason = r ? r : MCP_CANCEL_SHUTDOWN;
			break;
		} else {
			int r = atomic_load(&s->close_reason);
			reason = r ? r : MCP_CANCEL_TRANSPORT_CLOSED;
			break;
		}
	}
	submit_held(s);
	s->tp->before_wait = NULL;
	session_shutdown(s, reason);
	atomic_store(&s->reaping, 0);
	eng_req_reap(s);
	eng_req_reader_swap(outer);
	return MCP_OK;
}
