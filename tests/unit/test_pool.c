/*
 * test_pool.c - unit tests of the work queue and its workers
 * (engine/pool.c): FIFO order, refusal when full or stopping, the stop
 * and its deadline, and the wake policy: at most `limit` runnable workers
 * woken by submitters, engine waits freeing their slot, the monitor waking
 * past the limit when blocked handlers stall the queue, the LIFO choice of
 * the most recently active worker and its poll before sleeping.
 *
 * pool.c is included here, not linked from the library: the test sees its
 * idle stack and counters.  The pool runs generic work items (eng_work:
 * a link and a run function) and owns none of them: an item queued is run
 * exactly once, an item refused stays the caller's and never runs.  So
 * the pool is tested alone, with work the test controls.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/eng.h"
#include "tests/unit/runner.h"

#include "engine/pool.c"

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

/* ---- work the test controls --------------------------------------------------- */

enum { RECORD, GATE, QUIET, REPORT_ALONE };

typedef struct item {
	eng_work r; /* first: the pool queues &r */
	int id;
	int kind;
	_Atomic int runs;
	pthread_t thread;
	int alone;            /* eng_pool_alone() as it ran */
} item;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int started, finished, gate_open;
static int order[4096], norder;
/* Per item id: 1 asks a GATE item to enter an engine wait
 * (eng_pool_blocking), 2 to nest another and leave it, 3 to leave. */
static int command[64], acked[64];

static void reset_counts(void)
{
	pthread_mutex_lock(&mu);
	started = finished = gate_open = norder = 0;
	memset(command, 0, sizeof command);
	memset(acked, 0, sizeof acked);
	pthread_mutex_unlock(&mu);
}

static void setup(void)
{
	eng_cond_init(&cv);
	reset_counts();
}

static void teardown(void)
{
	pthread_cond_destroy(&cv);
}

static void item_run(eng_work *r)
{
	item *it = (item *)r;
	atomic_fetch_add(&it->runs, 1);
	pthread_mutex_lock(&mu);
	it->thread = pthread_self();
	started++;
	if (norder < (int)(sizeof order / sizeof order[0]))
		order[norder++] = it->id;
	pthread_cond_broadcast(&cv);
	if (it->kind == REPORT_ALONE)
		it->alone = eng_pool_alone();
	if (it->kind == GATE) {
		int blocked = 0;
		while (!gate_open) {
			int c = it->id < 64 ? command[it->id] : 0;
			if (c && acked[it->id] != c) {
				pthread_mutex_unlock(&mu);
				if (c == 1 && !blocked) {
					eng_pool_blocking();
					blocked = 1;
				} else if (c == 2) {
					eng_pool_blocking(); /* nested: no change */
					eng_pool_unblocked();
				} else if (c == 3 && blocked) {
					eng_pool_unblocked();
					blocked = 0;
				}
				pthread_mutex_lock(&mu);
				acked[it->id] = c;
				pthread_cond_broadcast(&cv);
				continue;
			}
			pthread_cond_wait(&cv, &mu);
		}
		pthread_mutex_unlock(&mu);
		if (blocked)
			eng_pool_unblocked();
		pthread_mutex_lock(&mu);
	}
	pthread_mutex_unlock(&mu);
	if (it->kind == QUIET)
		eng_pool_note_quiet(); /* as if it had written its answer inline */
	pthread_mutex_lock(&mu);
	finished++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static item *items_new(int n, int kind)
{
	item *v = calloc((size_t)n, sizeof *v);
	ck_assert_ptr_nonnull(v);
	for (int i = 0; i < n; i++) {
		v[i].id = i;
		v[i].kind = kind;
		v[i].r.run = item_run;
	}
	return v;
}

/* Links v[from..to) into a chain for eng_pool_submit_list. */
static eng_work *chain(item *v, int from, int to)
{
	for (int i = from; i < to; i++)
		v[i].r.next = i + 1 < to ? &v[i + 1].r : NULL;
	return from < to ? &v[from].r : NULL;
}

/* Waits, under `mu`, until `cond` holds (a hang fails at WAIT_NS). */
#define WAIT_UNTIL(cond, what)                                                           \
	do {                                                                             \
		int64_t end_ = eng_now_ns() + WAIT_NS;                                   \
		pthread_mutex_lock(&mu);                                                 \
		while (!(cond) && eng_now_ns() < end_) {                                 \
			struct timespec ts_;                                             \
			eng_abstime(eng_now_ns() + 100 * ENG_NS_PER_MS, &ts_);           \
			pthread_cond_timedwait(&cv, &mu, &ts_);                          \
		}                                                                        \
		int ok_ = (cond);                                                        \
		pthread_mutex_unlock(&mu);                                               \
		ck_assert_msg(ok_, "timed out waiting for %s", what);                    \
	} while (0)

static void open_gate(void)
{
	pthread_mutex_lock(&mu);
	gate_open = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void send_command(int id, int c)
{
	pthread_mutex_lock(&mu);
	command[id] = c;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	WAIT_UNTIL(acked[id] == c, "the item's acknowledgement");
}

/* ---- the pool's own state ------------------------------------------------------ */

/* Under p->mu. */
static int idle_len(eng_pool *p)
{
	int n = 0;
	for (eng_worker *w = p->idle_top; w; w = w->next_idle)
		n++;
	return n;
}

/* Polls the pool's state (under its lock) until `cond` holds. */
#define POOL_WAIT(p, cond, what)                                                         \
	do {                                                                             \
		int64_t end_ = eng_now_ns() + WAIT_NS;                                   \
		int ok_ = 0;                                                             \
		while (!ok_ && eng_now_ns() < end_) {                                    \
			pthread_mutex_lock(&(p)->mu);                                    \
			ok_ = (cond);                                                    \
			pthread_mutex_unlock(&(p)->mu);                                  \
			if (!ok_) {                                                      \
				struct timespec ts_ = { 0, 1000000 };                    \
				nanosleep(&ts_, NULL);                                   \
			}                                                                \
		}                                                                        \
		ck_assert_msg(ok_, "timed out waiting for %s", what);                    \
	} while (0)

static eng_pool *pool_new(int workers, size_t max_queue, int64_t poll_ns)
{
	eng_pool *p = calloc(1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(eng_pool_start(p, workers, max_queue, poll_ns), MCP_OK);
	ck_assert_int_eq(p->nthreads, workers);
	return p;
}

static void pool_free(eng_pool *p)
{
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->idle_cv);
	pthread_cond_destroy(&p->monitor_cv);
	free(p);
}

/* ---- tests ------------------------------------------------------------------------ */

/* One worker takes the queue in the order it was filled, by single
 * submits and by lists; the queue's references all come back. */
START_TEST(one_worker_runs_the_queue_in_order)
{
	eng_pool *p = pool_new(1, 1000, 0);
	item *g = items_new(1, GATE);
	g[0].id = 1000;
	ck_assert_int_eq(eng_pool_submit(p, &g[0].r), MCP_OK);
	WAIT_UNTIL(started == 1, "the gate item");
	item *v = items_new(300, RECORD);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(eng_pool_submit(p, &v[i].r), MCP_OK);
	eng_work *l = chain(v, 100, 200);
	int why = 0;
	ck_assert_int_eq(eng_pool_submit_list(p, &l, &why), 100);
	ck_assert_ptr_null(l);
	for (int i = 200; i < 300; i++)
		ck_assert_int_eq(eng_pool_submit(p, &v[i].r), MCP_OK);
	ck_assert_uint_eq(eng_pool_depth(p), 300);
	open_gate();
	WAIT_UNTIL(finished == 301, "the queue to drain");
	ck_assert_int_eq(eng_pool_stop(p, ENG_NO_DEADLINE), 0);
	ck_assert_int_eq(norder, 301);
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(order[i + 1], i);
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(geti(&v[i].runs), 1);
	free(v);
	free(g);
	pool_free(p);
}
END_TEST

/* A full queue takes what fits of a list, in order, and leaves the rest
 * linked for the caller to refuse (MCP_EBUSY); nothing refused runs. */
START_TEST(full_queue_refuses_the_rest_of_a_list)
{
	eng_pool *p = pool_new(1, 3, 0);
	item *g = items_new(1, GATE);
	g[0].id = 1000;
	ck_assert_int_eq(eng_pool_submit(p, &g[0].r), MCP_OK);
	WAIT_UNTIL(started == 1, "the gate item");
	item *v = items_new(6, RECORD);
	eng_work *l = chain(v, 0, 5);
	int why = 0;
	ck_assert_int_eq(eng_pool_submit_list(p, &l, &why), 3);
	ck_assert_int_eq(why, MCP_EBUSY);
	ck_assert_ptr_eq(l, &v[3].r);
	ck_assert_ptr_eq(v[3].r.next, &v[4].r);
	ck_assert_ptr_null(v[4].r.next);
	ck_assert_uint_eq(eng_pool_depth(p), 3);
	ck_assert_int_eq(eng_pool_submit(p, &v[5].r), MCP_EBUSY);
	open_gate();
	WAIT_UNTIL(finished == 4, "the three queued");
	ck_assert_int_eq(eng_pool_stop(p, ENG_NO_DEADLINE), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(geti(&v[i].runs), 1);
	for (int i = 3; i < 6; i++) /* refused: still the caller's, never run */
		ck_assert_int_eq(geti(&v[i].runs), 0);
	free(v);
	free(g);
	pool_free(p);
}
END_TEST

typedef struct stopper {
	eng_pool *p;
	int64_t deadline;
	int left;
} stopper;

static void *stop_thread(void *arg)
{
	stopper *s = arg;
	s->left = eng_pool_stop(s->p, s->deadline);
	return NULL;
}

/* A stop refuses new work (MCP_ECLOSED) at once, but what was queued
 * before it is still taken by the workers before they exit. */
START_TEST(stop_refuses_new_work_and_drains_the_queue)
{
	eng_pool *p = pool_new(1, 100, 0);
	item *g = items_new(1, GATE);
	g[0].id = 1000;
	ck_assert_int_eq(eng_pool_submit(p, &g[0].r), MCP_OK);
	WAIT_UNTIL(started == 1, "the gate item");
	item *v = items_new(5, RECORD);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(eng_pool_submit(p, &v[i].r), MCP_OK);
	stopper s = { p, ENG_NO_DEADLINE, -1 };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, stop_thread, &s), 0);
	POOL_WAIT(p, p->stopping, "the stop to begin");
	eng_work *l = chain(v, 3, 5);
	int why = 0;
	ck_assert_int_eq(eng_pool_submit_list(p, &l, &why), 0);
	ck_assert_int_eq(why, MCP_ECLOSED);
	ck_assert_ptr_eq(l, &v[3].r);
	ck_assert_int_eq(eng_pool_submit(p, &v[4].r), MCP_ECLOSED);
	open_gate();
	pthread_join(th, NULL);
	ck_assert_int_eq(s.left, 0);
	ck_assert_int_eq(finished, 4);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(order[i + 1], i);
	ck_assert_int_eq(geti(&v[3].runs) + geti(&v[4].runs), 0);
	ck_assert_int_eq(p->alive, 0);
	free(v);
	free(g);
	pool_free(p);
}
END_TEST

/* The deadline is for workers inside a handler: one that is still there
 * is left running (detached, counted), while idle workers are waited for
 * however late they run.  Memory the detached worker uses stays valid. */
START_TEST(stop_deadline_leaves_a_stuck_handler_behind)
{
	eng_pool *p = pool_new(3, 100, 0);
	item *g = items_new(1, GATE);
	ck_assert_int_eq(eng_pool_submit(p, &g[0].r), MCP_OK);
	WAIT_UNTIL(started == 1, "the stuck item");
	eng_worker *workers = p->workers; /* left to us with a detached worker */
	ck_assert_int_eq(eng_pool_stop(p, eng_now_ns() + 50 * ENG_NS_PER_MS), 1);
	ck_assert_int_eq(p->detached, 1);
	ck_assert_ptr_null(p->workers);
	item *late = items_new(1, RECORD);
	ck_assert_int_eq(eng_pool_submit(p, &late[0].r), MCP_ECLOSED);
	open_gate();
	/* The detached worker finishes its handler and exits on its own. */
	POOL_WAIT(p, p->alive == 0, "the detached worker to exit");
	ck_assert_int_eq(geti(&g[0].runs), 1);
	ck_assert_int_eq(finished, 1);
	for (int i = 0; i < 3; i++)
		pthread_cond_destroy(&workers[i].cv);
	free(workers);
	free(late);
	free(g);
	pool_free(p);

	/* Every worker idle and a deadline already past: none is left, each
	 * is waited for however late it gets to run (looped: the idle
	 * workers' exit races the stop's wait). */
	for (int round = 0; round < 100; round++) {
		p = pool_new(4, 100, 0);
		POOL_WAIT(p, idle_len(p) == 4, "four idle workers");
		ck_assert_int_eq(eng_pool_stop(p, eng_now_ns()), 0);
		ck_assert_int_eq(p->alive, 0);
		ck_assert_int_eq(p->detached, 0);
		pool_free(p);
	}
}
END_TEST

/* The wake policy.  Submitters wake a worker only for work that has no
 * taker and only while fewer than `limit` workers are runnable; a worker
 * entering an engine wait frees its slot (another is woken), and nested
 * waits count once; blocked elsewhere, the monitor wakes workers past the
 * limit once the queue has not moved for a while. */
START_TEST(wake_policy_bounds)
{
	eng_pool *p = pool_new(8, 100, 0);
	pthread_mutex_lock(&p->mu);
	p->limit = 2;
	pthread_mutex_unlock(&p->mu);
	POOL_WAIT(p, idle_len(p) == 8, "eight idle workers");
	/* Silence the monitor: it sleeps until a submitter pokes it, and a
	 * submitter pokes it only when it says it sleeps.  (It is woken
	 * again below, and by the stop.) */
	POOL_WAIT(p, p->monitor_sleeping, "the monitor to sleep");
	pthread_mutex_lock(&p->mu);
	p->monitor_sleeping = 0;
	pthread_mutex_unlock(&p->mu);

	item *v = items_new(8, GATE);
	eng_work *l = chain(v, 0, 8);
	ck_assert_int_eq(eng_pool_submit_list(p, &l, NULL), 8);
	WAIT_UNTIL(started >= 2, "two items to start");
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->waking, 0); /* nobody else on the way */
	ck_assert_int_eq(p->running, 2);
	ck_assert_int_eq(p->busy, 2);
	ck_assert_uint_eq(p->queued, 6);
	ck_assert_int_eq(idle_len(p), 6);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_lock(&mu);
	int first = order[0];
	ck_assert_int_eq(started, 2);
	pthread_mutex_unlock(&mu);

	/* Off the pool the engine's waits change nothing. */
	eng_pool_blocking();
	eng_pool_unblocked();
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->running, 2);
	pthread_mutex_unlock(&p->mu);

	/* One running item enters an engine wait: its slot goes to a third. */
	send_command(first, 1);
	WAIT_UNTIL(started >= 3, "a third item");
	pthread_mutex_lock(&mu);
	ck_assert_int_eq(started, 3);
	pthread_mutex_unlock(&mu);
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->waking, 0);
	ck_assert_int_eq(p->running, 2);
	ck_assert_int_eq(p->busy, 3);
	ck_assert_uint_eq(p->queued, 5);
	pthread_mutex_unlock(&p->mu);
	/* A nested wait inside it counts once. */
	send_command(first, 2);
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->running, 2);
	pthread_mutex_unlock(&p->mu);
	/* Back from its wait: runnable again (3 > limit, nobody woken). */
	send_command(first, 3);
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->running, 3);
	ck_assert_int_eq(p->waking, 0);
	ck_assert_uint_eq(p->queued, 5);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_lock(&mu);
	ck_assert_int_eq(started, 3);
	pthread_mutex_unlock(&mu);

	/* The three block outside the engine; the monitor, woken, sees the
	 * queue stalled and wakes workers past the limit until all run. */
	pthread_cond_signal(&p->monitor_cv);
	WAIT_UNTIL(started == 8, "the monitor to start the rest");
	pthread_mutex_lock(&p->mu);
	ck_assert_uint_eq(p->queued, 0);
	ck_assert_int_eq(p->running, 8);
	pthread_mutex_unlock(&p->mu);
	open_gate();
	WAIT_UNTIL(finished == 8, "all to finish");
	POOL_WAIT(p, p->busy == 0, "the workers to settle");
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->running, 0);
	pthread_mutex_unlock(&p->mu);
	ck_assert_int_eq(eng_pool_stop(p, ENG_NO_DEADLINE), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(geti(&v[i].runs), 1);
	free(v);
	pool_free(p);
}
END_TEST

/* Work goes to the most recently idle worker (LIFO); one whose last
 * answers were written inline polls the queue before it sleeps, counts as
 * the taker meanwhile (nobody else is woken), and takes the next item. */
START_TEST(recent_worker_takes_work_and_polls_when_quiet)
{
	/* The poll lasts far longer than any scheduling delay: it is still
	 * on when the next item comes. */
	eng_pool *p = pool_new(2, 100, 30 * INT64_C(1000000000));
	POOL_WAIT(p, idle_len(p) == 2, "two idle workers");
	item *v = items_new(5, QUIET);
	v[4].kind = RECORD;
	for (int i = 0; i < QUIET_STREAK; i++) {
		ck_assert_int_eq(eng_pool_submit(p, &v[i].r), MCP_OK);
		WAIT_UNTIL(finished == i + 1, "the quiet item");
		if (i + 1 < QUIET_STREAK)
			POOL_WAIT(p, idle_len(p) == 2 && p->busy == 0, "the worker back on the stack");
	}
	/* Four answered inline in a row: the worker polls instead of sleeping. */
	POOL_WAIT(p, atomic_load(&p->polls) == 1 && p->spinning == 1, "the poll");
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(idle_len(p), 1);
	pthread_mutex_unlock(&p->mu);
	ck_assert_int_eq(eng_pool_submit(p, &v[4].r), MCP_OK);
	pthread_mutex_lock(&p->mu);
	ck_assert_int_eq(p->waking, 0); /* the poller is the taker */
	pthread_mutex_unlock(&p->mu);
	WAIT_UNTIL(finished == 5, "the polled item");
	ck_assert_uint_eq(getu(&p->poll_hits), 1);
	for (int i = 1; i < 5; i++)
		ck_assert(pthread_equal(v[i].thread, v[0].thread));
	/* The last was not quiet: the worker sleeps, and the stop is prompt. */
	ck_assert_int_eq(eng_pool_stop(p, ENG_NO_DEADLINE), 0);
	free(v);
	pool_free(p);
}
END_TEST

/* Whether a worker may write inline: alone when it is the only one
 * running and nothing is queued; not with a second one running. */
START_TEST(alone_means_one_running_and_nothing_queued)
{
	ck_assert_int_eq(eng_pool_alone(), 1); /* off the pool */
	eng_pool *p = pool_new(2, 100, 0);
	item *solo = items_new(1, REPORT_ALONE);
	ck_assert_int_eq(eng_pool_submit(p, &solo[0].r), MCP_OK);
	WAIT_UNTIL(finished == 1, "the lone item");
	ck_assert_int_eq(solo[0].alone, 1);
	item *g = items_new(1, GATE);
	g[0].id = 1000;
	ck_assert_int_eq(eng_pool_submit(p, &g[0].r), MCP_OK);
	WAIT_UNTIL(started == 2, "the gate item");
	item *other = items_new(1, REPORT_ALONE);
	ck_assert_int_eq(eng_pool_submit(p, &other[0].r), MCP_OK);
	WAIT_UNTIL(finished == 2, "the second item");
	ck_assert_int_eq(other[0].alone, 0);
	open_gate();
	ck_assert_int_eq(eng_pool_stop(p, ENG_NO_DEADLINE), 0);
	free(solo);
	free(g);
	free(other);
	pool_free(p);
}
END_TEST

/* Submitters racing each other and the stop: every item accepted runs
 * exactly once before the stop returns, none refused ever runs.  The
 * submitters are under way when the stop comes (each has had some items
 * taken, a number that grows from round to round), and go on until they
 * are refused. */
#define SUBMITTERS 3
#define PER_SUBMITTER 4000

typedef struct submitter {
	eng_pool *p;
	item *v;
	_Atomic int accepted;
	int want;            /* items accepted before it waits for ... */
	_Atomic int *go;     /* ... the stop's start, then races it */
} submitter;

static void *submit_many(void *arg)
{
	submitter *s = arg;
	for (int i = 0; i < PER_SUBMITTER;) {
		/* Past `want`, go on only once the stop is starting: the rest
		 * of the items race it however the threads are scheduled
		 * (a loaded machine, or valgrind running one thread at a time,
		 * would otherwise let every submitter finish first). */
		if (i >= s->want && !atomic_load(s->go)) {
			sched_yield();
			continue;
		}
		if (i % 4 == 0) {
			int to = i + 4 < PER_SUBMITTER ? i + 4 : PER_SUBMITTER;
			eng_work *l = chain(s->v, i, to);
			int why = 0;
			int k = eng_pool_submit_list(s->p, &l, &why);
			atomic_fetch_add(&s->accepted, k);
			i += k;
			if (l) {
				ck_assert_int_eq(why, MCP_ECLOSED);
				break;
			}
		} else {
			int rc = eng_pool_submit(s->p, &s->v[i].r);
			if (rc != MCP_OK) {
				ck_assert_int_eq(rc, MCP_ECLOSED);
				break;
			}
			atomic_fetch_add(&s->accepted, 1);
			i++;
		}
	}
	return NULL;
}

START_TEST(submits_racing_the_stop_run_once_or_never)
{
	int partial = 0;
	for (int round = 0; round < 100; round++) {
		reset_counts();
		eng_pool *p = pool_new(3, SUBMITTERS * PER_SUBMITTER, 0);
		submitter s[SUBMITTERS];
		pthread_t th[SUBMITTERS];
		_Atomic int go;
		atomic_init(&go, 0);
		int want = 1 + round * 10;
		for (int i = 0; i < SUBMITTERS; i++) {
			s[i].p = p;
			s[i].v = items_new(PER_SUBMITTER, RECORD);
			atomic_init(&s[i].accepted, 0);
			s[i].want = want;
			s[i].go = &go;
			ck_assert_int_eq(pthread_create(&th[i], NULL, submit_many, &s[i]), 0);
		}
		for (int i = 0; i < SUBMITTERS; i++)
			while (atomic_load(&s[i].accepted) < want)
				sched_yield();
		atomic_store(&go, 1);
		ck_assert_int_eq(eng_pool_stop(p, ENG_NO_DEADLINE), 0);
		pthread_mutex_lock(&mu);
		int ran_by_stop = finished;
		pthread_mutex_unlock(&mu);
		int accepted = 0;
		for (int i = 0; i < SUBMITTERS; i++) {
			pthread_join(th[i], NULL);
			accepted += atomic_load(&s[i].accepted);
			partial += atomic_load(&s[i].accepted) < PER_SUBMITTER;
		}
		/* Nothing was taken after the stop returned, and all it took ran. */
		ck_assert_int_eq(finished, ran_by_stop);
		ck_assert_int_eq(finished, accepted);
		for (int i = 0; i < SUBMITTERS; i++) {
			int acc = atomic_load(&s[i].accepted);
			for (int k = 0; k < PER_SUBMITTER; k++)
				ck_assert_int_eq(geti(&s[i].v[k].runs), k < acc);
			free(s[i].v);
		}
		pool_free(p);
	}
	/* The race was there: submitters were cut off by the stop. */
	ck_assert_int_gt(partial, 0);
}
END_TEST

Suite *unit_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, one_worker_runs_the_queue_in_order);
	tcase_add_test(tc, full_queue_refuses_the_rest_of_a_list);
	tcase_add_test(tc, stop_refuses_new_work_and_drains_the_queue);
	tcase_add_test(tc, stop_deadline_leaves_a_stuck_handler_behind);
	tcase_add_test(tc, wake_policy_bounds);
	tcase_add_test(tc, recent_worker_takes_work_and_polls_when_quiet);
	tcase_add_test(tc, alone_means_one_running_and_nothing_queued);
	tcase_add_test(tc, submits_racing_the_stop_run_once_or_never);
	suite_add_tcase(s, tc);
	return s;
}
