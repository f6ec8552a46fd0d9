/*
 * test_writer.c - unit tests of the outbound writer (engine/writer.c)
 * against a transport made here, which records every write and can hold a
 * write, fail it or take a line only in part.
 *
 * What is pinned: lines leave in the order they were queued (one producer,
 * and each of several racing ones); what queues while a write is under way
 * leaves in one coalesced write; a write error latches the writer failed
 * and reports once; nothing is written after close, and close drains what
 * came before it or gives up at its deadline; a line tied to a request
 * that the peer cancelled is discarded (its answer and its requests to
 * the client are not); a push writer delivers on the pushing thread; the
 * end-of-route mark follows the request's lines; a waiting server-to-client
 * request can be withdrawn; a full queue holds a handler until it drains
 * or its token fires; a quiet stream is written on the calling thread.
 *
 * The requests are stand-ins owned by the test (eng_req with a reference
 * the test holds): the writer takes and gives back references of its own,
 * and each test checks it gave back every one.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"
#include "tests/unit/runner.h"

/* A hang is caught by this bound; it never measures anything. */
#define WAIT_NS (60 * INT64_C(1000000000))

/* Atomic counters read through functions, so a failed assertion prints
 * the counter's name rather than the expansion of atomic_load. */
static int geti(_Atomic int *p)
{
	return atomic_load(p);
}

static unsigned long long getu(_Atomic uint64_t *p)
{
	return atomic_load(p);
}

/* ---- a transport that records ---------------------------------------------- */

typedef struct rec {
	char *data;   /* NULL: an end-of-route mark */
	size_t len;
	char *route;
	int is_response;
} rec;

typedef struct fake {
	tp_conn base; /* first: the writer sees a tp_conn */
	struct tp_ops ops;
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* any change below */
	char *text;               /* every byte written, in order */
	size_t len, cap;
	int calls;                /* send / send_routed calls */
	int iov[4096];            /* lines per call */
	rec *recs;                /* send_routed: each tp_out */
	int nrecs, rcap;
	int hold;                 /* writes wait while set (or until their deadline) */
	int in_write;             /* writes waiting on hold */
	int fail;                 /* writes fail with -EPIPE */
	long try_limit;           /* try_send takes at most this many bytes; < 0: all */
	int try_fail;             /* try_send fails with -EPIPE */
	int tries;
	pthread_t try_thread;     /* the thread of the last try_send */
	pthread_t routed_thread;  /* the thread of the last send_routed */
	int closed_output;
	size_t len_at_close;      /* bytes written when the output closed */
	int wrote_after_close;
	int errors;               /* on_error calls */
	int last_rc;              /* what the last write returned */
} fake;

static void append(fake *f, const char *d, size_t n)
{
	if (f->len + n + 1 > f->cap) {
		f->cap = (f->len + n + 1) * 2;
		f->text = realloc(f->text, f->cap);
		ck_assert_ptr_nonnull(f->text);
	}
	memcpy(f->text + f->len, d, n);
	f->len += n;
	f->text[f->len] = 0;
}

/* Under f->mu: waits while the writes are held, re-reading the deadline as
 * the writer's contract says (tp.h). */
static int hold_locked(fake *f, const _Atomic int64_t *deadline)
{
	f->in_write++;
	pthread_cond_broadcast(&f->cv);
	int rc = 0;
	while (f->hold) {
		int64_t dl = atomic_load(deadline);
		if (dl != INT64_MAX && eng_now_ns() >= dl) {
			rc = -ETIMEDOUT;
			break;
		}
		struct timespec ts;
		eng_abstime(eng_now_ns() + 10 * ENG_NS_PER_MS, &ts);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	f->in_write--;
	return rc;
}

static int f_send(tp_conn *c, const struct iovec *iov, int n, const _Atomic int64_t *dl)
{
	fake *f = (fake *)c;
	pthread_mutex_lock(&f->mu);
	int rc = hold_locked(f, dl);
	if (!rc && f->fail)
		rc = -EPIPE;
	if (!rc) {
		for (int i = 0; i < n; i++)
			append(f, iov[i].iov_base, iov[i].iov_len);
		if (f->closed_output)
			f->wrote_after_close = 1;
	}
	if (f->calls < 4096)
		f->iov[f->calls] = n;
	f->calls++;
	f->last_rc = rc;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int f_send_routed(tp_conn *c, const tp_out *out, int n, const _Atomic int64_t *dl)
{
	fake *f = (fake *)c;
	pthread_mutex_lock(&f->mu);
	f->routed_thread = pthread_self();
	int rc = hold_locked(f, dl);
	if (!rc && f->fail)
		rc = -EPIPE;
	for (int i = 0; !rc && i < n; i++) {
		if (f->nrecs == f->rcap) {
			f->rcap = f->rcap ? f->rcap * 2 : 64;
			f->recs = realloc(f->recs, (size_t)f->rcap * sizeof *f->recs);
			ck_assert_ptr_nonnull(f->recs);
		}
		rec *r = &f->recs[f->nrecs++];
		r->data = out[i].data ? strndup(out[i].data, out[i].len) : NULL;
		r->len = out[i].len;
		r->route = out[i].route ? strdup(out[i].route) : NULL;
		r->is_response = out[i].is_response;
		if (out[i].data)
			append(f, out[i].data, out[i].len);
		if (f->closed_output)
			f->wrote_after_close = 1;
	}
	if (f->calls < 4096)
		f->iov[f->calls] = n;
	f->calls++;
	f->last_rc = rc;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static ssize_t f_try_send(tp_conn *c, const char *data, size_t len)
{
	fake *f = (fake *)c;
	pthread_mutex_lock(&f->mu);
	f->tries++;
	f->try_thread = pthread_self();
	ssize_t n;
	if (f->try_fail) {
		n = -EPIPE;
	} else {
		n = f->try_limit >= 0 && (size_t)f->try_limit < len ? f->try_limit : (ssize_t)len;
		append(f, data, (size_t)n);
	}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return n;
}

static int f_recv(tp_conn *c, const char **line, size_t *len)
{
	(void)c;
	(void)line;
	(void)len;
	return TP_EOF;
}

static void f_wake(tp_conn *c)
{
	(void)c;
}

static void f_close_output(tp_conn *c)
{
	fake *f = (fake *)c;
	pthread_mutex_lock(&f->mu);
	f->closed_output++;
	f->len_at_close = f->len;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void f_free(tp_conn *c)
{
	(void)c;
}

enum { PLAIN = 0, INLINE = 1, ROUTED = 2 };

/* PLAIN: send only (every line goes through the writer thread); INLINE:
 * with try_send (a quiet stream is written by the caller); ROUTED:
 * send_routed (a routing transport, like HTTP). */
static fake *fake_new(int kind)
{
	fake *f = calloc(1, sizeof *f);
	ck_assert_ptr_nonnull(f);
	pthread_mutex_init(&f->mu, NULL);
	eng_cond_init(&f->cv);
	f->ops.recv = f_recv;
	f->ops.send = f_send;
	f->ops.wake = f_wake;
	f->ops.close_output = f_close_output;
	f->ops.free = f_free;
	if (kind == INLINE)
		f->ops.try_send = f_try_send;
	if (kind == ROUTED)
		f->ops.send_routed = f_send_routed;
	f->base.ops = &f->ops;
	f->base.max_message = 1 << 20;
	f->try_limit = -1;
	return f;
}

static void fake_free(fake *f)
{
	for (int i = 0; i < f->nrecs; i++) {
		free(f->recs[i].data);
		free(f->recs[i].route);
	}
	free(f->recs);
	free(f->text);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->cv);
	free(f);
}

static void on_error(void *arg)
{
	fake *f = arg;
	pthread_mutex_lock(&f->mu);
	f->errors++;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* Waits (bounded by WAIT_NS, a hang) until *what reaches `n`. */
static void wait_at_least(fake *f, const int *what, int n, const char *why)
{
	int64_t end = eng_now_ns() + WAIT_NS;
	pthread_mutex_lock(&f->mu);
	while (*what < n && eng_now_ns() < end) {
		struct timespec ts;
		eng_abstime(eng_now_ns() + 100 * ENG_NS_PER_MS, &ts);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	int got = *what;
	pthread_mutex_unlock(&f->mu);
	ck_assert_msg(got >= n, "timed out waiting for %s (%d of %d)", why, got, n);
}

static void set_hold(fake *f, int hold)
{
	pthread_mutex_lock(&f->mu);
	f->hold = hold;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* ---- lines and requests ---------------------------------------------------- */

/* A line as the writer takes it: len bytes and one spare for the '\n'. */
static char *line_of(const char *s, size_t *len)
{
	size_t n = strlen(s);
	char *p = malloc(n + 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p, s, n);
	*len = n;
	return p;
}

static int push(eng_writer *w, const char *s, eng_req *r, int is_response)
{
	size_t n;
	char *p = line_of(s, &n);
	return eng_writer_push(w, p, n, r, is_response);
}

/* Starts the writer thread on `f` with its first line `first` (tied to
 * `r`, or to none) held inside the transport's send, so that what the
 * test pushes next waits in the queue behind it. */
static void start_held(eng_writer *w, fake *f, eng_stats *st, const char *first, eng_req *r)
{
	ck_assert_int_eq(eng_writer_start(w, &f->base, st, on_error, f), MCP_OK);
	set_hold(f, 1);
	ck_assert_int_eq(push(w, first, r, 0), MCP_OK);
	wait_at_least(f, &f->in_write, 1, "the held write");
}

/* A request stand-in: the test's reference is its only one. */
static void req_init(eng_req *r, const char *key)
{
	memset(r, 0, sizeof *r);
	atomic_init(&r->refs, 1);
	atomic_init(&r->outcome, ENG_OUT_NONE);
	r->id_key = (char *)key;
}

static void req_check_refs(eng_req *r)
{
	ck_assert_int_eq(geti(&r->refs), 1);
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(one_producer_in_order)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	char want[64 * 1000], buf[32];
	size_t wl = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(buf, sizeof buf, "line-%d", i);
		ck_assert_int_eq(push(&w, buf, NULL, 1), MCP_OK);
		wl += (size_t)snprintf(want + wl, sizeof want - wl, "%s\n", buf);
	}
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_uint_eq(f->len, wl);
	ck_assert(memcmp(f->text, want, wl) == 0);
	ck_assert_int_eq(f->closed_output, 1);
	ck_assert_uint_eq(f->len_at_close, wl);
	ck_assert_uint_eq(getu(&st.responses_written), 1000);
	ck_assert_uint_eq(getu(&st.responses_dropped), 0);
	ck_assert_int_eq(f->errors, 0);
	fake_free(f);
}
END_TEST

/* Several producers at once, through both queueing paths (the locked push
 * and the lock-free push_quiet with its kick): every line arrives whole,
 * once, and each producer's lines in its own order. */
#define PRODUCERS 4
#define PER_PRODUCER 300

typedef struct producer {
	eng_writer *w;
	int id;
} producer;

static void *produce(void *arg)
{
	producer *p = arg;
	char buf[32];
	for (int i = 0; i < PER_PRODUCER; i++) {
		snprintf(buf, sizeof buf, "p%d-%d", p->id, i);
		size_t n;
		char *l = line_of(buf, &n);
		if ((i + p->id) % 3 == 0) {
			ck_assert_int_eq(eng_writer_push_quiet(p->w, l, n, NULL, 0), MCP_OK);
			eng_writer_kick(p->w);
		} else {
			ck_assert_int_eq(eng_writer_push(p->w, l, n, NULL, 0), MCP_OK);
		}
	}
	return NULL;
}

static void producers_round(int kind)
{
	fake *f = fake_new(kind);
	eng_stats st = { 0 };
	eng_writer w;
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	pthread_t th[PRODUCERS];
	producer pr[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++) {
		pr[i] = (producer){ &w, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, produce, &pr[i]), 0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(th[i], NULL);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	int next[PRODUCERS] = { 0 };
	int lines = 0;
	char *save = NULL;
	for (char *ln = strtok_r(f->text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		int p, i;
		char tail;
		ck_assert_msg(sscanf(ln, "p%d-%d%c", &p, &i, &tail) == 2, "torn line: %s", ln);
		ck_assert_int_ge(p, 0);
		ck_assert_int_lt(p, PRODUCERS);
		ck_assert_msg(i == next[p], "producer %d: line %d after %d", p, i, next[p] - 1);
		next[p]++;
		lines++;
	}
	ck_assert_int_eq(lines, PRODUCERS * PER_PRODUCER);
	ck_assert_int_eq(f->closed_output, 1);
	fake_free(f);
}

START_TEST(racing_producers_keep_their_order)
{
	for (int round = 0; round < 30; round++) {
		producers_round(PLAIN);
		producers_round(INLINE);
	}
}
END_TEST

/* While one write is under way, what is queued goes out in one write
 * (512 lines at most per write). */
START_TEST(lines_queued_during_a_write_are_coalesced)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	set_hold(f, 1);
	ck_assert_int_eq(push(&w, "first", NULL, 0), MCP_OK);
	wait_at_least(f, &f->in_write, 1, "the first write");
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(push(&w, "ten", NULL, 0), MCP_OK);
	set_hold(f, 0);
	wait_at_least(f, &f->calls, 2, "the second write");
	pthread_mutex_lock(&f->mu);
	ck_assert_int_eq(f->iov[0], 1);
	ck_assert_int_eq(f->iov[1], 10);
	pthread_mutex_unlock(&f->mu);

	/* 1200 behind a held write: three writes, none past 512 lines. */
	set_hold(f, 1);
	ck_assert_int_eq(push(&w, "again", NULL, 0), MCP_OK);
	wait_at_least(f, &f->in_write, 1, "the held write");
	for (int i = 0; i < 1200; i++)
		ck_assert_int_eq(push(&w, "x", NULL, 0), MCP_OK);
	set_hold(f, 0);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_int_eq(f->calls, 6);
	int sum = 0;
	for (int i = 3; i < 6; i++) {
		ck_assert_int_le(f->iov[i], 512);
		sum += f->iov[i];
	}
	ck_assert_int_eq(sum, 1200);
	ck_assert_uint_eq(f->len, strlen("first\n") + 10 * strlen("ten\n") + strlen("again\n") +
					  1200 * 2);
	fake_free(f);
}
END_TEST

/* A failed write latches the writer: on_error once, every later push
 * refused (an answer among them counted dropped), nothing more written. */
START_TEST(a_write_error_latches_and_reports_once)
{
	fake *f = fake_new(PLAIN);
	f->fail = 1;
	eng_stats st = { 0 };
	eng_writer w;
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	ck_assert_int_eq(push(&w, "doomed", NULL, 1), MCP_OK);
	wait_at_least(f, &f->errors, 1, "the error report");
	ck_assert_uint_eq(getu(&st.responses_dropped), 1);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(push(&w, "after", NULL, 1), MCP_ECLOSED);
		size_t n;
		char *l = line_of("quiet", &n);
		ck_assert_int_eq(eng_writer_push_quiet(&w, l, n, NULL, 0), MCP_ECLOSED);
	}
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_int_eq(f->errors, 1);
	ck_assert_int_eq(f->calls, 1);
	ck_assert_uint_eq(f->len, 0);
	ck_assert_uint_eq(getu(&st.responses_dropped), 21);
	ck_assert_uint_eq(getu(&st.responses_written), 0);
	ck_assert_int_eq(f->closed_output, 1);
	fake_free(f);
}
END_TEST

/* Close drains what was queued before it, then closes the output once;
 * nothing is accepted or written after. */
typedef struct closer {
	eng_writer *w;
	int64_t deadline;
} closer;

static void *close_thread(void *arg)
{
	closer *c = arg;
	eng_writer_close(c->w, c->deadline);
	return NULL;
}

START_TEST(close_drains_then_nothing_more)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	eng_req r;
	req_init(&r, "7");
	start_held(&w, f, &st, "held", NULL);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(push(&w, "queued", &r, 0), MCP_OK);
	closer c = { &w, ENG_NO_DEADLINE };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, close_thread, &c), 0);
	/* The close is under way (or not yet): either way a push now must
	 * not be written after the output closes. */
	set_hold(f, 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(push(&w, "late", &r, 1), MCP_ECLOSED);
	size_t n;
	char *l = line_of("late quiet", &n);
	ck_assert_int_eq(eng_writer_push_quiet(&w, l, n, &r, 1), MCP_ECLOSED);
	eng_writer_close(&w, ENG_NO_DEADLINE); /* a second close does nothing */
	eng_writer_destroy(&w);
	ck_assert_str_eq(f->text, "held\nqueued\nqueued\nqueued\nqueued\nqueued\n");
	ck_assert_int_eq(f->closed_output, 1);
	ck_assert_uint_eq(f->len_at_close, f->len);
	ck_assert_int_eq(f->wrote_after_close, 0);
	ck_assert_uint_eq(getu(&st.responses_dropped), 2);
	req_check_refs(&r);
	fake_free(f);
}
END_TEST

/* A write that never completes is given up at the close's deadline: the
 * close returns, the error is reported, what waited behind is dropped. */
START_TEST(close_gives_up_a_blocked_write_at_its_deadline)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	set_hold(f, 1); /* never released */
	ck_assert_int_eq(push(&w, "stuck", NULL, 1), MCP_OK);
	wait_at_least(f, &f->in_write, 1, "the stuck write");
	ck_assert_int_eq(push(&w, "behind", NULL, 1), MCP_OK);
	eng_writer_close(&w, eng_now_ns() + 50 * ENG_NS_PER_MS);
	ck_assert_int_eq(f->last_rc, -ETIMEDOUT);
	ck_assert_int_eq(f->errors, 1);
	ck_assert_int_eq(f->closed_output, 1);
	eng_writer_destroy(&w);
	ck_assert_uint_eq(f->len, 0);
	ck_assert_uint_eq(getu(&st.responses_written), 0);
	ck_assert_uint_eq(getu(&st.responses_dropped), 2);
	fake_free(f);
}
END_TEST

/* A request the peer cancelled: its queued progress and logs are
 * discarded when they reach the head of the queue; its answer (decided
 * before it was queued) and its requests to the client are not. */
START_TEST(lines_of_a_peer_cancelled_request_are_discarded)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	eng_req a, b;
	req_init(&a, "\"a\"");
	req_init(&b, "\"b\"");
	start_held(&w, f, &st, "head", NULL);
	ck_assert_int_eq(push(&w, "a-progress", &a, 0), MCP_OK);
	ck_assert_int_eq(push(&w, "b-progress", &b, 0), MCP_OK);
	size_t n;
	char *l = line_of("a-asks-client", &n);
	uint64_t seq = 0;
	ck_assert_int_eq(eng_writer_push_wait(&w, l, n, &a, NULL, &seq), MCP_OK);
	ck_assert_uint_gt(seq, 0);
	ck_assert_int_eq(push(&w, "a-log", &a, 0), MCP_OK);
	ck_assert_int_eq(push(&w, "a-answer", &a, 1), MCP_OK);
	ck_assert_int_eq(eng_req_decide(&a, ENG_OUT_SUPPRESSED), 1);
	set_hold(f, 0);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_str_eq(f->text, "head\nb-progress\na-asks-client\na-answer\n");
	ck_assert_uint_eq(getu(&st.responses_written), 1);
	req_check_refs(&a);
	req_check_refs(&b);
	fake_free(f);
}
END_TEST

/* A push writer has no thread: each line reaches the transport before the
 * push returns, on the pushing thread, with its route. */
START_TEST(push_writer_delivers_on_the_calling_thread)
{
	fake *f = fake_new(ROUTED);
	eng_stats st = { 0 };
	eng_writer w;
	eng_req a;
	req_init(&a, "1");
	eng_writer_start_push(&w, &f->base, &st, on_error, f);
	ck_assert_int_eq(push(&w, "progress", &a, 0), MCP_OK);
	ck_assert_int_eq(f->nrecs, 1);
	ck_assert(pthread_equal(f->routed_thread, pthread_self()));
	ck_assert_str_eq(f->recs[0].data, "progress\n");
	ck_assert_str_eq(f->recs[0].route, "1");
	ck_assert_int_eq(f->recs[0].is_response, 0);

	size_t n;
	char *l = line_of("elsewhere", &n);
	ck_assert_int_eq(eng_writer_push_routed(&w, l, n, &a, "#stream", 0), MCP_OK);
	ck_assert_str_eq(f->recs[1].route, "#stream");
	ck_assert_int_eq(push(&w, "untied", NULL, 0), MCP_OK);
	ck_assert_ptr_null(f->recs[2].route);

	/* A request to the client: delivered now, never withdrawn. */
	uint64_t seq = 99;
	l = line_of("asks-client", &n);
	ck_assert_int_eq(eng_writer_push_wait(&w, l, n, &a, NULL, &seq), MCP_OK);
	ck_assert_uint_eq(seq, 0);
	ck_assert_str_eq(f->recs[3].route, "1");
	ck_assert_int_eq(eng_writer_unqueue(&w, seq), 0);

	/* Cancelled by the peer: its lines go nowhere, its answer does. */
	ck_assert_int_eq(eng_req_decide(&a, ENG_OUT_SUPPRESSED), 1);
	ck_assert_int_eq(push(&w, "suppressed", &a, 0), MCP_OK);
	ck_assert_int_eq(f->nrecs, 4);
	ck_assert_int_eq(push(&w, "answer", &a, 1), MCP_OK);
	ck_assert_int_eq(f->nrecs, 5);
	ck_assert_int_eq(f->recs[4].is_response, 1);
	ck_assert_uint_eq(getu(&st.responses_written), 1);

	/* The end of a route: a mark with no data. */
	eng_writer_end_route(&w, &a);
	ck_assert_int_eq(f->nrecs, 6);
	ck_assert_ptr_null(f->recs[5].data);
	ck_assert_str_eq(f->recs[5].route, "1");
	ck_assert_int_eq(f->recs[5].is_response, 1);

	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	ck_assert_int_eq(f->closed_output, 1);
	ck_assert_int_eq(push(&w, "closed", &a, 1), MCP_ECLOSED);
	eng_writer_end_route(&w, &a);
	ck_assert_int_eq(f->nrecs, 6);
	ck_assert_uint_eq(getu(&st.responses_dropped), 1);
	eng_writer_destroy(&w);
	ck_assert_int_eq(f->errors, 0);
	req_check_refs(&a);
	fake_free(f);
}
END_TEST

START_TEST(push_writer_latches_a_failed_delivery)
{
	fake *f = fake_new(ROUTED);
	eng_stats st = { 0 };
	eng_writer w;
	eng_writer_start_push(&w, &f->base, &st, on_error, f);
	f->fail = 1;
	ck_assert_int_eq(push(&w, "lost", NULL, 1), MCP_ECLOSED);
	ck_assert_int_eq(f->errors, 1);
	f->fail = 0;
	ck_assert_int_eq(push(&w, "after", NULL, 1), MCP_ECLOSED);
	ck_assert_int_eq(f->errors, 1);
	ck_assert_int_eq(f->nrecs, 0);
	ck_assert_uint_eq(getu(&st.responses_dropped), 2);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	fake_free(f);
}
END_TEST

/* A routing transport behind the writer thread: the mark that ends a
 * request's stream comes after every line queued for it; a transport that
 * does not route gets no mark at all. */
START_TEST(end_of_route_follows_the_request_lines)
{
	fake *f = fake_new(ROUTED);
	eng_stats st = { 0 };
	eng_writer w;
	eng_req a, b;
	req_init(&a, "1");
	req_init(&b, "2");
	start_held(&w, f, &st, "b-1", &b);
	ck_assert_int_eq(push(&w, "a-1", &a, 0), MCP_OK);
	ck_assert_int_eq(push(&w, "a-2", &a, 0), MCP_OK);
	eng_writer_end_route(&w, &a);
	ck_assert_int_eq(push(&w, "b-answer", &b, 1), MCP_OK);
	set_hold(f, 0);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_end_route(&w, &b); /* after close: nothing */
	eng_writer_destroy(&w);
	ck_assert_int_eq(f->nrecs, 5);
	const char *want[5][2] = {
		{ "b-1\n", "2" }, { "a-1\n", "1" }, { "a-2\n", "1" }, { NULL, "1" }, { "b-answer\n", "2" }
	};
	for (int i = 0; i < 5; i++) {
		if (want[i][0])
			ck_assert_str_eq(f->recs[i].data, want[i][0]);
		else
			ck_assert_ptr_null(f->recs[i].data);
		ck_assert_str_eq(f->recs[i].route, want[i][1]);
	}
	ck_assert_int_eq(f->recs[3].is_response, 1);
	req_check_refs(&a);
	req_check_refs(&b);
	fake_free(f);

	/* Not a routing transport: end_route writes nothing. */
	f = fake_new(PLAIN);
	memset(&st, 0, sizeof st);
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	eng_writer_end_route(&w, &a);
	ck_assert_int_eq(push(&w, "only", &a, 1), MCP_OK);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_str_eq(f->text, "only\n");
	ck_assert_int_eq(f->calls, 1);
	req_check_refs(&a);
	fake_free(f);
}
END_TEST

/* A server-to-client request still waiting in the queue is withdrawn
 * (never written); once the writer took it, unqueue says so. */
START_TEST(unqueue_withdraws_a_waiting_request)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	eng_req a;
	req_init(&a, "1");
	start_held(&w, f, &st, "head", NULL);
	uint64_t s1 = 0, s2 = 0, s3 = 0;
	size_t n;
	char *l = line_of("call-1", &n);
	ck_assert_int_eq(eng_writer_push_wait(&w, l, n, &a, NULL, &s1), MCP_OK);
	l = line_of("call-2", &n);
	ck_assert_int_eq(eng_writer_push_wait(&w, l, n, &a, NULL, &s2), MCP_OK);
	l = line_of("call-3", &n);
	ck_assert_int_eq(eng_writer_push_wait(&w, l, n, &a, NULL, &s3), MCP_OK);
	ck_assert_uint_gt(s2, s1);
	ck_assert_uint_gt(s3, s2);
	ck_assert_int_eq(eng_writer_unqueue(&w, s2), 1);
	ck_assert_int_eq(eng_writer_unqueue(&w, s2), 0);
	ck_assert_int_eq(eng_writer_unqueue(&w, s3), 1); /* the tail */
	ck_assert_int_eq(push(&w, "after", NULL, 0), MCP_OK);
	set_hold(f, 0);
	wait_at_least(f, &f->calls, 2, "the queue drained");
	ck_assert_int_eq(eng_writer_unqueue(&w, s1), 0); /* written */
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_str_eq(f->text, "head\ncall-1\nafter\n");
	req_check_refs(&a);
	fake_free(f);
}
END_TEST

/* Past the high-water mark a handler's push waits: its token firing ends
 * the wait (the line is never written); a drained queue lets it through,
 * behind what was queued first. */
typedef struct waiter {
	eng_writer *w;
	eng_token *tok;
	const char *text;
	int rc;
} waiter;

static void *push_waiting(void *arg)
{
	waiter *wt = arg;
	size_t n;
	char *l = line_of(wt->text, &n);
	wt->rc = eng_writer_push_wait(wt->w, l, n, NULL, wt->tok, NULL);
	return NULL;
}

START_TEST(full_queue_holds_a_handler_until_drained_or_cancelled)
{
	fake *f = fake_new(PLAIN);
	eng_stats st = { 0 };
	eng_writer w;
	eng_token tok;
	ck_assert_int_eq(eng_token_init(&tok), MCP_OK);
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	pthread_mutex_lock(&w.mu);
	w.high_water = 16;
	pthread_mutex_unlock(&w.mu);
	set_hold(f, 1);
	ck_assert_int_eq(push(&w, "head", NULL, 0), MCP_OK);
	wait_at_least(f, &f->in_write, 1, "the held write");
	ck_assert_int_eq(push(&w, "a line longer than the sixteen bytes allowed", NULL, 0), MCP_OK);

	waiter cancelled = { &w, &tok, "never written", -1 };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, push_waiting, &cancelled), 0);
	eng_token_fire(&tok, MCP_CANCEL_PEER);
	pthread_join(th, NULL);
	ck_assert_int_eq(cancelled.rc, MCP_ECANCELED);

	eng_token tok2;
	ck_assert_int_eq(eng_token_init(&tok2), MCP_OK);
	waiter through = { &w, &tok2, "let through", -1 };
	ck_assert_int_eq(pthread_create(&th, NULL, push_waiting, &through), 0);
	set_hold(f, 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(through.rc, MCP_OK);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_str_eq(f->text,
			 "head\na line longer than the sixteen bytes allowed\nlet through\n");
	eng_token_destroy(&tok);
	eng_token_destroy(&tok2);
	fake_free(f);
}
END_TEST

/* A quiet stream (nothing queued, nobody writing, off the pool) is written
 * by the pushing thread; what the stream does not take at once is
 * finished by the writer thread before anything queued later. */
START_TEST(quiet_stream_is_written_inline)
{
	fake *f = fake_new(INLINE);
	eng_stats st = { 0 };
	eng_writer w;
	eng_req a;
	req_init(&a, "1");
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	ck_assert_int_eq(push(&w, "inline", &a, 1), MCP_OK);
	pthread_mutex_lock(&f->mu);
	ck_assert_str_eq(f->text, "inline\n"); /* before push returned */
	ck_assert(pthread_equal(f->try_thread, pthread_self()));
	ck_assert_int_eq(f->calls, 0);
	pthread_mutex_unlock(&f->mu);
	ck_assert_uint_eq(getu(&st.responses_written), 1);

	/* A quiet answer and its kick: written by the kicking thread. */
	size_t n;
	char *l = line_of("kicked", &n);
	ck_assert_int_eq(eng_writer_push_quiet(&w, l, n, &a, 1), MCP_OK);
	eng_writer_kick(&w);
	pthread_mutex_lock(&f->mu);
	ck_assert_str_eq(f->text, "inline\nkicked\n");
	ck_assert_int_eq(f->calls, 0);
	pthread_mutex_unlock(&f->mu);

	/* Taken in part: the rest, then the next line. */
	pthread_mutex_lock(&f->mu);
	f->try_limit = 3;
	pthread_mutex_unlock(&f->mu);
	ck_assert_int_eq(push(&w, "partial line", &a, 1), MCP_OK);
	ck_assert_int_eq(push(&w, "next", &a, 1), MCP_OK);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_str_eq(f->text, "inline\nkicked\npartial line\nnext\n");
	ck_assert_int_ge(f->calls, 1);
	ck_assert_uint_eq(getu(&st.responses_written), 4);
	req_check_refs(&a);
	fake_free(f);

	/* A failed inline write latches the writer like a failed write. */
	f = fake_new(INLINE);
	f->try_fail = 1;
	memset(&st, 0, sizeof st);
	ck_assert_int_eq(eng_writer_start(&w, &f->base, &st, on_error, f), MCP_OK);
	ck_assert_int_eq(push(&w, "lost", NULL, 1), MCP_ECLOSED);
	ck_assert_int_eq(f->errors, 1);
	ck_assert_int_eq(push(&w, "after", NULL, 1), MCP_ECLOSED);
	ck_assert_int_eq(f->errors, 1);
	eng_writer_close(&w, ENG_NO_DEADLINE);
	eng_writer_destroy(&w);
	ck_assert_uint_eq(f->len, 0);
	ck_assert_uint_eq(getu(&st.responses_dropped), 2);
	fake_free(f);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, one_producer_in_order);
	tcase_add_test(tc, racing_producers_keep_their_order);
	tcase_add_test(tc, lines_queued_during_a_write_are_coalesced);
	tcase_add_test(tc, a_write_error_latches_and_reports_once);
	tcase_add_test(tc, close_drains_then_nothing_more);
	tcase_add_test(tc, close_gives_up_a_blocked_write_at_its_deadline);
	tcase_add_test(tc, lines_of_a_peer_cancelled_request_are_discarded);
	tcase_add_test(tc, push_writer_delivers_on_the_calling_thread);
	tcase_add_test(tc, push_writer_latches_a_failed_delivery);
	tcase_add_test(tc, end_of_route_follows_the_request_lines);
	tcase_add_test(tc, unqueue_withdraws_a_waiting_request);
	tcase_add_test(tc, full_queue_holds_a_handler_until_drained_or_cancelled);
	tcase_add_test(tc, quiet_stream_is_written_inline);
	suite_add_tcase(s, tc);
	return s;
}
