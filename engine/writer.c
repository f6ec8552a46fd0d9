/*
 * writer.c - the outbound writer: one thread owns one output stream and is
 * the only one to write to it, draining a queue of complete lines with
 * coalesced writes (writev).
 *
 * Nobody else ever blocks on the stream: producers append and return.  A
 * write error latches the writer failed, reports once, and everything after
 * is discarded, so nothing is written after close (and SIGPIPE is never the
 * way we learn the peer left).
 *
 * A push writer (HTTP) has neither thread nor queue: its transport never
 * blocks, so each line is delivered by the thread that pushes it, under the
 * writer's lock, which keeps the lines of one session in push order.  The
 * rules are the same: nothing after close or failure, nothing for a request
 * after its peer cancel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

struct eng_out {
	eng_out *next;
	char *line;        /* len bytes + 1 spare byte, which becomes '\n';
			      NULL: the end of `route` (eng_writer_end_route) */
	size_t len;
	eng_req *req;      /* tie to an inbound request, or NULL */
	char *route;       /* the request's key when the transport routes */
	int is_response;
	uint64_t seq;      /* a server-to-client request's number, else 0 */
};

#define MAX_IOV 512

static void out_free(eng_out *o)
{
	if (o->req)
		eng_req_unref(o->req);
	free(o->route);
	free(o->line);
	free(o);
}

/* Whether a queued line must be discarded instead of written (P2: nothing
 * for a request after its peer cancel; responses were decided earlier). */
static int out_suppressed_req(const eng_req *req, int is_response)
{
	return req && !is_response && atomic_load(&req->outcome) == ENG_OUT_SUPPRESSED;
}

static int out_suppressed(const eng_out *o)
{
	/* A server-to-client request is withdrawn by its caller instead
	 * (eng_writer_unqueue), which then knows whether it went out. */
	return !o->seq && out_suppressed_req(o->req, o->is_response);
}

static _Atomic int64_t *deadline_of(eng_writer *w)
{
	return &w->flush_deadline;
}

/* Under w->mu: moves the lines pushed without the lock (newest first on
 * the inbox stack) to the tail of the queue, oldest first. */
static void take_inbox_locked(eng_writer *w)
{
	eng_out *o = atomic_exchange(&w->inbox, NULL);
	if (!o)
		return;
	eng_out *first = NULL, *last = o;
	size_t bytes = 0;
	while (o) {
		eng_out *next = o->next;
		o->next = first;
		first = o;
		bytes += o->len;
		o = next;
	}
	if (w->tail)
		w->tail->next = first;
	else
		w->head = first;
	w->tail = last;
	w->queued_bytes += bytes;
}

static void *writer_main(void *arg)
{
	eng_writer *w = arg;
	struct iovec iov[MAX_IOV];
	tp_out routed[MAX_IOV];
	eng_out *batch[MAX_IOV];

	pthread_mutex_lock(&w->mu);
	for (;;) {
		take_inbox_locked(w);
		/* An inline write in progress owns the stream: wait for it,
		 * also before exiting (the output is closed after we return). */
		if (w->writing || (!w->head && !w->closing)) {
			/* Announce the sleep, then look at the inbox once more: a
			 * producer that pushed before the announcement is seen
			 * here, and one that pushes after it sees `sleeping` and
			 * signals (eng_writer_kick). */
			w->sleeping = 1;
			take_inbox_locked(w);
			if (w->writing || (!w->head && !w->closing))
				pthread_cond_wait(&w->cv, &w->mu);
			w->sleeping = 0;
			continue;
		}
		if (!w->head)
			break;
		/* Take up to MAX_IOV lines in one go. */
		int n = 0;
		size_t bytes = 0;
		while (w->head && n < MAX_IOV) {
			eng_out *o = w->head;
			w->head = o->next;
			bytes += o->len;
			batch[n++] = o;
		}
		if (!w->head)
			w->tail = NULL;
		w->queued_bytes -= bytes;
		w->writing = 1;
		int failed = w->failed;
		pthread_mutex_unlock(&w->mu);
		pthread_cond_broadcast(&w->space_cv);

		int k = 0;
		uint64_t responses = 0;
		for (int i = 0; i < n; i++) {
			eng_out *o = batch[i];
			if (failed || out_suppressed(o))
				continue;
			if (!o->line) {
				/* An end-of-route mark: only routing transports
				 * get them. */
				routed[k++] = (tp_out){ NULL, 0, o->route, 1 };
				continue;
			}
			o->line[o->len] = '\n';
			iov[k].iov_base = o->line;
			iov[k].iov_len = o->len + 1;
			routed[k] = (tp_out){ o->line, o->len + 1, o->route, o->is_response };
			k++;
			responses += (uint64_t)o->is_response;
		}
		int rc = 0;
		if (k > 0 && w->tp->ops->send_routed)
			rc = w->tp->ops->send_routed(w->tp, routed, k, deadline_of(w));
		else if (k > 0)
			rc = w->tp->ops->send(w->tp, iov, k, deadline_of(w));
		uint64_t dropped = 0;
		for (int i = 0; i < n; i++) {
			if (batch[i]->is_response && batch[i]->line && (failed || rc != 0))
				dropped++;
			out_free(batch[i]);
		}
		if (rc == 0)
			atomic_fetch_add(&w->stats->responses_written, responses);
		atomic_fetch_add(&w->stats->responses_dropped, dropped);

		pthread_mutex_lock(&w->mu);
		w->writing = 0;
		if (rc != 0 && !w->failed) {
			w->failed = 1;
			pthread_mutex_unlock(&w->mu);
			if (w->on_error)
				w->on_error(w->on_error_arg);
			pthread_mutex_lock(&w->mu);
		}
	}
	w->done = 1;
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int eng_writer_start(eng_writer *w, tp_conn *tp, struct eng_stats *stats,
		     void (*on_error)(void *), void *arg)
{
	memset(w, 0, sizeof *w);
	w->stats = stats;
	if (pthread_mutex_init(&w->mu, NULL))
		return MCP_ESYS;
	pthread_cond_init(&w->cv, NULL);
	eng_cond_init(&w->space_cv);
	w->tp = tp;
	w->on_error = on_error;
	w->on_error_arg = arg;
	w->high_water = 64u << 20;
	atomic_store(deadline_of(w), INT64_MAX);
	if (tp_thread_create(&w->thread, NULL, writer_main, w)) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		pthread_cond_destroy(&w->space_cv);
		return MCP_ESYS;
	}
	w->started = 1;
	return MCP_OK;
}

static eng_out *out_new(eng_writer *w, char *line, size_t len, eng_req *req,
		       const char *route, int is_response)
{
	eng_out *o = malloc(sizeof *o);
	if (!o)
		return NULL;
	o->next = NULL;
	o->line = line;
	o->len = len;
	o->req = req;
	o->route = NULL;
	/* The key is copied at push time: a task re-keys its request later. */
	if (w->tp->ops->send_routed && (route || req)) {
		o->route = strdup(route ? route : req->id_key);
		if (!o->route) {
			free(o);
			return NULL;
		}
	}
	if (req)
		eng_req_ref(req);
	o->is_response = is_response;
	o->seq = 0;
	return o;
}

/* Under w->mu: links `o` at the tail, or at the head (the rest of a line
 * partly written inline, which must precede everything).  Returns whether
 * the writer thread must be signalled (after the unlock). */
static int link_locked(eng_writer *w, eng_out *o, int at_head)
{
	int was_empty = w->head == NULL;
	if (at_head) {
		o->next = w->head;
		w->head = o;
		if (!w->tail)
			w->tail = o;
	} else {
		if (w->tail)
			w->tail->next = o;
		else
			w->head = o;
		w->tail = o;
	}
	w->queued_bytes += o->len;
	return was_empty && w->sleeping;
}

/* The queue entry for `line`; or NULL, with the line freed and an answer
 * counted dropped, when the writer is closed or failed (*rc MCP_ECLOSED)
 * or memory is short (MCP_ENOMEM). */
static eng_out *entry_or_drop(eng_writer *w, char *line, size_t len, eng_req *req,
			      const char *route, int is_response, int *rc)
{
	eng_out *o = NULL;
	*rc = MCP_ECLOSED;
	if (!atomic_load(&w->closing) && !atomic_load(&w->failed)) {
		o = out_new(w, line, len, req, route, is_response);
		*rc = o ? MCP_OK : MCP_ENOMEM;
	}
	if (!o) {
		if (is_response && line)
			atomic_fetch_add(&w->stats->responses_dropped, 1);
		free(line);
	}
	return o;
}

static int push_locked(eng_writer *w, char *line, size_t len, eng_req *req,
		       const char *route, int is_response, int *wake, uint64_t *call_seq);

/* A push writer's delivery: `line` (taken; NULL for an end-of-route mark)
 * goes to the transport now, on this thread, under the lock. */
static int deliver_now(eng_writer *w, char *line, size_t len, eng_req *req, const char *route,
		       int is_response)
{
	int rc = MCP_OK, failed_now = 0;
	pthread_mutex_lock(&w->mu);
	if (w->closing || w->failed) {
		rc = MCP_ECLOSED;
		if (is_response && line)
			atomic_fetch_add(&w->stats->responses_dropped, 1);
	} else if (!out_suppressed_req(req, is_response)) {
		if (line)
			line[len] = '\n';
		tp_out o = { line, line ? len + 1 : 0, route ? route : req ? req->id_key : NULL,
			     is_response };
		if (w->tp->ops->send_routed(w->tp, &o, 1, deadline_of(w)) == 0) {
			if (is_response && line)
				atomic_fetch_add(&w->stats->responses_written, 1);
		} else {
			rc = MCP_ECLOSED;
			failed_now = 1;
			w->failed = 1;
			if (is_response && line)
				atomic_fetch_add(&w->stats->responses_dropped, 1);
		}
	}
	pthread_mutex_unlock(&w->mu);
	free(line);
	if (failed_now && w->on_error)
		w->on_error(w->on_error_arg);
	return rc;
}

void eng_writer_start_push(eng_writer *w, tp_conn *tp, struct eng_stats *stats,
			   void (*on_error)(void *), void *arg)
{
	memset(w, 0, sizeof *w);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	eng_cond_init(&w->space_cv);
	w->stats = stats;
	w->tp = tp;
	w->on_error = on_error;
	w->on_error_arg = arg;
	w->push = 1;
	atomic_store(deadline_of(w), INT64_MAX);
}

void eng_writer_end_route(eng_writer *w, eng_req *req)
{
	if (!w->tp->ops->send_routed)
		return;
	if (w->push) {
		deliver_now(w, NULL, 0, req, NULL, 1);
		return;
	}
	int wake = 0;
	pthread_mutex_lock(&w->mu);
	push_locked(w, NULL, 0, req, NULL, 1, &wake, NULL);
	pthread_mutex_unlock(&w->mu);
	if (wake)
		pthread_cond_signal(&w->cv);
}

/* Appends under w->mu.  Consumes `line` in every case.  *wake tells
 * whether to signal the writer after the unlock. */
static int push_locked(eng_writer *w, char *line, size_t len, eng_req *req,
		       const char *route, int is_response, int *wake, uint64_t *call_seq)
{
	take_inbox_locked(w); /* what was pushed before this goes first */
	int rc;
	eng_out *o = entry_or_drop(w, line, len, req, route, is_response, &rc);
	if (!o)
		return rc;
	if (call_seq)
		*call_seq = o->seq = ++w->next_seq;
	*wake = link_locked(w, o, 0);
	return MCP_OK;
}

/* Writes one line on the calling thread; w->writing is ours.  What the
 * stream does not take at once goes to the head of the queue, for the
 * writer thread, which keeps the deadlines and the backpressure.  Consumes
 * `line`. */
static int write_inline(eng_writer *w, char *line, size_t len, eng_req *req,
			int is_response)
{
	ssize_t n = 0;
	int rc = MCP_OK;
	eng_pool_note_quiet();
	if (!out_suppressed_req(req, is_response)) {
		line[len] = '\n';
		n = w->tp->ops->try_send(w->tp, line, len + 1);
	} else {
		n = (ssize_t)len + 1; /* discarded, as the writer would */
		is_response = 0;
	}
	int failed_now = 0, wake = 0;
	if (n == (ssize_t)len + 1) {
		if (is_response)
			atomic_fetch_add(&w->stats->responses_written, 1);
		free(line);
		pthread_mutex_lock(&w->mu);
	} else if (n < 0 && n != -EOPNOTSUPP) {
		if (is_response)
			atomic_fetch_add(&w->stats->responses_dropped, 1);
		free(line);
		rc = MCP_ECLOSED;
		pthread_mutex_lock(&w->mu);
		failed_now = !w->failed;
		w->failed = 1;
	} else {
		/* Partly written (or not at all): the rest, '\n' included,
		 * is queued.  A partial line is no longer discardable. */
		size_t done = n > 0 ? (size_t)n : 0;
		if (done)
			memmove(line, line + done, len + 1 - done);
		eng_out *o = out_new(w, line, len - done, done ? NULL : req, NULL, is_response);
		pthread_mutex_lock(&w->mu);
		if (o) {
			link_locked(w, o, 1);
		} else {
			free(line);
			if (is_response)
				atomic_fetch_add(&w->stats->responses_dropped, 1);
			failed_now = done && !w->failed; /* a torn line */
			if (done)
				w->failed = 1;
			rc = MCP_ENOMEM;
		}
	}
	w->writing = 0;
	take_inbox_locked(w);
	wake = (w->head || w->closing) && w->sleeping;
	pthread_mutex_unlock(&w->mu);
	if (wake)
		pthread_cond_signal(&w->cv);
	if (failed_now && w->on_error)
		w->on_error(w->on_error_arg);
	return rc;
}

int eng_writer_push(eng_writer *w, char *line, size_t len, eng_req *req, int is_response)
{
	return eng_writer_push_routed(w, line, len, req, NULL, is_response);
}

int eng_writer_push_routed(eng_writer *w, char *line, size_t len, eng_req *req,
			   const char *route, int is_response)
{
	if (w->push)
		return deliver_now(w, line, len, req, route, is_response);
	pthread_mutex_lock(&w->mu);
	take_inbox_locked(w);
	/* Nobody writing and nothing queued: on a quiet server, write here
	 * and save the hand-off to the writer thread. */
	if (!w->head && !w->writing && !w->closing && !w->failed && !route &&
	    w->tp->ops->try_send && !w->tp->ops->send_routed && eng_pool_alone()) {
		w->writing = 1;
		pthread_mutex_unlock(&w->mu);
		return write_inline(w, line, len, req, is_response);
	}
	int wake = 0;
	int rc = push_locked(w, line, len, req, route, is_response, &wake, NULL);
	pthread_mutex_unlock(&w->mu);
	if (wake)
		pthread_cond_signal(&w->cv);
	return rc;
}

int eng_writer_push_quiet(eng_writer *w, char *line, size_t len, eng_req *req,
			  int is_response)
{
	/* Lock-free: answers come from every worker at once, and the lock
	 * they would share with the writer thread is the hottest one under
	 * load.  A line that races a close is dropped by whoever drains the
	 * inbox last (eng_writer_destroy at the latest), as the check in
	 * entry_or_drop would have done. */
	if (w->push)
		return deliver_now(w, line, len, req, NULL, is_response);
	int rc;
	eng_out *o = entry_or_drop(w, line, len, req, NULL, is_response, &rc);
	if (!o)
		return rc;
	eng_out *top = atomic_load_explicit(&w->inbox, memory_order_relaxed);
	do
		o->next = top;
	while (!atomic_compare_exchange_weak(&w->inbox, &top, o));
	return MCP_OK;
}

void eng_writer_kick(eng_writer *w)
{
	/* The writer thread awake and other work running (no inline write
	 * due): it drains the queue, this line included, before it sleeps
	 * again.  Both sides use sequentially consistent atomics: the writer
	 * stores `sleeping` and then looks at the inbox, we pushed and now
	 * look at `sleeping`, so at least one of us sees the other.  A push
	 * writer has delivered already. */
	if (w->push || (!atomic_load(&w->sleeping) && !eng_pool_alone()))
		return;
	pthread_mutex_lock(&w->mu);
	take_inbox_locked(w);
	if (w->head && w->head == w->tail && !w->writing && !w->closing && !w->failed &&
	    w->tp->ops->try_send && !w->tp->ops->send_routed && eng_pool_alone()) {
		/* Only this line, nobody writing, nothing else running: write
		 * it here and spare the writer thread a wake-up. */
		eng_out *o = w->head;
		w->head = w->tail = NULL;
		w->queued_bytes -= o->len;
		w->writing = 1;
		pthread_mutex_unlock(&w->mu);
		char *line = o->line;
		o->line = NULL;
		write_inline(w, line, o->len, o->req, o->is_response);
		out_free(o);
		return;
	}
	int wake = w->head && w->sleeping;
	pthread_mutex_unlock(&w->mu);
	if (wake)
		pthread_cond_signal(&w->cv);
}

int eng_writer_push_wait(eng_writer *w, char *line, size_t len, eng_req *req,
			 eng_token *tok, uint64_t *call_seq)
{
	if (w->push) {
		/* Delivered now (never withdrawn: eng_writer_unqueue finds
		 * nothing); a slow reader is the transport's to bound. */
		if (call_seq)
			*call_seq = 0;
		return deliver_now(w, line, len, call_seq ? NULL : req, call_seq ? req->id_key : NULL,
				   0);
	}
	pthread_mutex_lock(&w->mu);
	int blocked = 0;
	while (w->queued_bytes > w->high_water && !w->closing && !w->failed) {
		if (tok && eng_token_reason(tok) != MCP_CANCEL_NONE) {
			pthread_mutex_unlock(&w->mu);
			if (blocked)
				eng_pool_unblocked();
			free(line);
			return MCP_ECANCELED;
		}
		if (!blocked) {
			blocked = 1;
			eng_pool_blocking();
		}
		/* The token's broadcast goes to its own condvar, not this one:
		 * wait in short slices so a fired token is noticed promptly. */
		struct timespec ts;
		eng_abstime(eng_now_ns() + 20 * ENG_NS_PER_MS, &ts);
		pthread_cond_timedwait(&w->space_cv, &w->mu, &ts);
	}
	int wake = 0;
	int rc = push_locked(w, line, len, req, NULL, 0, &wake, call_seq);
	pthread_mutex_unlock(&w->mu);
	if (wake)
		pthread_cond_signal(&w->cv);
	if (blocked)
		eng_pool_unblocked();
	return rc;
}

int eng_writer_unqueue(eng_writer *w, uint64_t seq)
{
	pthread_mutex_lock(&w->mu);
	eng_out *prev = NULL, *o = w->head;
	while (o && o->seq != seq) {
		prev = o;
		o = o->next;
	}
	if (o) {
		if (prev)
			prev->next = o->next;
		else
			w->head = o->next;
		if (w->tail == o)
			w->tail = prev;
		w->queued_bytes -= o->len;
	}
	pthread_mutex_unlock(&w->mu);
	if (!o)
		return 0;
	pthread_cond_broadcast(&w->space_cv);
	out_free(o);
	return 1;
}

void eng_writer_close(eng_writer *w, int64_t deadline_ns)
{
	if (w->push) {
		pthread_mutex_lock(&w->mu);
		int first = !w->closing;
		w->closing = 1;
		pthread_mutex_unlock(&w->mu);
		if (first)
			w->tp->ops->close_output(w->tp);
		return;
	}
	if (!w->started)
		return;
	pthread_mutex_lock(&w->mu);
	w->closing = 1;
	atomic_store(deadline_of(w), deadline_ns);
	pthread_cond_broadcast(&w->cv);
	pthread_cond_broadcast(&w->space_cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	w->started = 0;
	w->tp->ops->close_output(w->tp);
}

void eng_writer_destroy(eng_writer *w)
{
	take_inbox_locked(w); /* lines that raced the close */
	eng_out *o = w->head;
	while (o) {
		eng_out *n = o->next;
		if (o->is_response && o->line)
			atomic_fetch_add(&w->stats->responses_dropped, 1);
		out_free(o);
		o = n;
	}
	w->head = w->tail = NULL;
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_cond_destroy(&w->space_cv);
}
