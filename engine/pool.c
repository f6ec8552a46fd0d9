/*
 * pool.c - the work queue and the worker threads that run handlers.
 *
 * One pool serves every session of a server.  It runs work items
 * (eng_work: a function and a link, embedded in what they run) and knows
 * nothing of requests: a request whose outcome was decided while it sat
 * in the queue (a peer cancel, a dropped session) is skipped by its own
 * run function (session.c), not here.
 *
 * The wake policy is what makes a stream of short requests cheap.  A
 * worker that finds the queue empty sleeps on its own condvar, pushed on a
 * LIFO stack, so the next request goes to the most recently active (cache
 * hot) thread.  The submitter wakes one only when the queued work has no
 * taker yet (more queued than already signalled) and fewer than `limit`
 * workers are runnable; a worker that finishes takes the next request
 * without sleeping.  `limit` is the number of CPUs: more runnable workers
 * than CPUs only contend for the queue lock, the allocator and the CPUs
 * with the reader and writer threads.
 *
 * A client that sends one request at a time pays a wake-up per request:
 * the reader's hand-off to a sleeping worker.  So a worker that answered
 * its last QUIET_STREAK requests inline (nothing else running, the writer
 * idle) and finds the queue empty polls it, yielding the CPU, for
 * poll_ns before it sleeps; meanwhile it counts as a taker, so the
 * submitter wakes nobody.  Under load the answers go through the writer
 * and no worker polls: the CPUs are better left to the reader and writer.
 *
 * Handlers block, and the policy must not starve the queue behind them.
 * The engine's own waits (token sleeps, a client's answer, external condvar
 * waits, writer backpressure) mark their worker blocked, which frees its
 * runnable slot at once.  For a handler that blocks elsewhere (a read(2)
 * of its own), a monitor thread wakes one more worker, past the limit,
 * whenever work is queued and no request has left the queue for
 * STALL_NS.  All signals are sent after the pool's mutex is released, so
 * the woken thread never wakes into a held lock.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "engine/eng.h"

#define STALL_NS (2 * ENG_NS_PER_MS)
#define QUIET_STREAK 4

struct eng_worker {
	eng_pool *pool;
	pthread_cond_t cv;
	eng_worker *next_idle;
	int signalled;  /* under pool->mu: popped off the idle stack to run */
};

/* The pool of the worker running on this thread, and how deeply it is
 * inside engine waits. */
static __thread eng_pool *tl_pool;
static __thread int tl_blocked;
/* How many requests in a row this worker answered inline
 * (eng_pool_note_quiet), up to QUIET_STREAK. */
static __thread int tl_quiet;
static __thread int tl_quiet_now;

/* Under p->mu: pops the idle worker to wake, or NULL.  `force` ignores the
 * runnable limit (the monitor, a stop). */
static eng_worker *take_idle_locked(eng_pool *p, int force)
{
	if (!p->idle_top || p->queued <= (size_t)(p->waking + p->spinning))
		return NULL;
	if (!force && p->running + p->waking >= p->limit)
		return NULL;
	eng_worker *w = p->idle_top;
	p->idle_top = w->next_idle;
	w->next_idle = NULL;
	w->signalled = 1;
	p->waking++;
	return w;
}

/* Under p->mu: whether queued work waits for the limit (the monitor's
 * business). */
static int withheld_locked(const eng_pool *p)
{
	return p->idle_top && p->queued > (size_t)(p->waking + p->spinning);
}

/* Polls the queue, without its lock, for at most poll_ns; returns when
 * work is queued or the time is up. */
static void spin_for_work(eng_pool *p)
{
	int64_t until = eng_now_ns() + p->poll_ns;
	atomic_fetch_add_explicit(&p->polls, 1, memory_order_relaxed);
	for (;;) {
		if (atomic_load_explicit(&p->queued, memory_order_relaxed) > 0) {
			atomic_fetch_add_explicit(&p->poll_hits, 1, memory_order_relaxed);
			return;
		}
		/* Give way to any thread runnable here (the reader, the
		 * writer): the poll uses only time nobody else wants. */
		sched_yield();
		if (eng_now_ns() >= until)
			return;
	}
}

static void *worker_main(void *arg)
{
	eng_worker *me = arg;
	eng_pool *p = me->pool;
	tl_pool = p;

	int spun = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		eng_work *w = p->head;
		if (w) {
			spun = 0;
			p->head = w->next;
			if (!p->head)
				p->tail = NULL;
			p->queued--;
			p->busy++;
			p->running++;
			p->progress++;
			pthread_mutex_unlock(&p->mu);

			tl_quiet_now = 0;
			w->run(w);
			if (!tl_quiet_now)
				tl_quiet = 0;
			else if (tl_quiet < QUIET_STREAK)
				tl_quiet++;

			pthread_mutex_lock(&p->mu);
			p->busy--;
			p->running--;
			continue;
		}
		if (p->stopping)
			break; /* stopping and drained */
		if (tl_quiet >= QUIET_STREAK && p->poll_ns > 0 && !spun && p->spinning == 0 &&
		    atomic_load(&p->running) == 0 && p->waking == 0) {
			/* Requests come one at a time (the last QUIET_STREAK
			 * answers were written inline) and nothing else runs:
			 * poll before sleeping (see the top of the file). */
			spun = 1;
			p->spinning++;
			pthread_mutex_unlock(&p->mu);
			spin_for_work(p);
			pthread_mutex_lock(&p->mu);
			p->spinning--;
			continue;
		}
		me->next_idle = p->idle_top;
		p->idle_top = me;
		pthread_cond_broadcast(&p->idle_cv);
		while (!me->signalled)
			pthread_cond_wait(&me->cv, &p->mu);
		me->signalled = 0;
		p->waking--;
	}
	p->alive--;
	pthread_cond_broadcast(&p->idle_cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void *monitor_main(void *arg)
{
	eng_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		if (!withheld_locked(p)) {
			p->monitor_sleeping = 1;
			pthread_cond_wait(&p->monitor_cv, &p->mu);
			p->monitor_sleeping = 0;
			continue;
		}
		uint64_t seen = p->progress;
		struct timespec ts;
		eng_abstime(eng_now_ns() + STALL_NS, &ts);
		pthread_cond_timedwait(&p->monitor_cv, &p->mu, &ts);
		if (p->stopping || p->progress != seen)
			continue;
		eng_worker *w = take_idle_locked(p, 1);
		if (w) {
			pthread_mutex_unlock(&p->mu);
			pthread_cond_signal(&w->cv);
			pthread_mutex_lock(&p->mu);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int cpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

int eng_pool_start(eng_pool *p, int nthreads, size_t max_queue, int64_t poll_ns)
{
	if (pthread_mutex_init(&p->mu, NULL))
		return MCP_ESYS;
	eng_cond_init(&p->idle_cv);
	eng_cond_init(&p->monitor_cv);
	p->head = p->tail = NULL;
	p->queued = 0;
	p->max_queue = max_queue;
	p->stopping = 0;
	p->busy = 0;
	p->alive = 0;
	p->idle_top = NULL;
	p->waking = 0;
	p->spinning = 0;
	p->poll_ns = poll_ns > 0 ? poll_ns : 0;
	atomic_init(&p->polls, 0);
	atomic_init(&p->poll_hits, 0);
	p->running = 0;
	p->progress = 0;
	p->monitor_sleeping = 0;
	p->monitor_started = 0;
	p->limit = cpus_online();
	p->nthreads = 0;
	p->threads = calloc((size_t)nthreads, sizeof *p->threads);
	p->workers = calloc((size_t)nthreads, sizeof *p->workers);
	if (!p->threads || !p->workers) {
		free(p->threads);
		free(p->workers);
		p->threads = NULL;
		p->workers = NULL;
		return MCP_ENOMEM;
	}
	/* Handlers run on these threads: give them room for real work, but not
	 * the 8 MiB default each (idle footprint matters). */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1024 * 1024);
	int rc = MCP_OK;
	if (tp_thread_create(&p->monitor, &attr, monitor_main, p) == 0)
		p->monitor_started = 1;
	else
		rc = MCP_ESYS;
	for (int i = 0; i < nthreads && rc == MCP_OK; i++) {
		eng_worker *w = &p->workers[i];
		w->pool = p;
		eng_cond_init(&w->cv);
		if (tp_thread_create(&p->threads[i], &attr, worker_main, w)) {
			pthread_cond_destroy(&w->cv);
			rc = MCP_ESYS;
			break;
		}
		p->nthreads = i + 1;
		pthread_mutex_lock(&p->mu);
		p->alive++;
		pthread_mutex_unlock(&p->mu);
	}
	pthread_attr_destroy(&attr);
	if (rc != MCP_OK) {
		eng_pool_stop(p, ENG_NO_DEADLINE);
		return rc;
	}
	p->started = 1;
	return MCP_OK;
}

int eng_pool_submit_list(eng_pool *p, eng_work **list, int *why)
{
	eng_worker *wake[8];
	int nwake = 0, k = 0;
	pthread_mutex_lock(&p->mu);
	if (why)
		*why = p->stopping ? MCP_ECLOSED : MCP_EBUSY;
	while (*list && !p->stopping && p->queued < p->max_queue) {
		eng_work *w = *list;
		*list = w->next;
		w->next = NULL;
		if (p->tail)
			p->tail->next = w;
		else
			p->head = w;
		p->tail = w;
		p->queued++;
		k++;
	}
	/* As many wake-ups as the new work has no taker for, within the
	 * runnable limit (take_idle_locked); past 8, the woken workers keep
	 * taking without sleeping. */
	eng_worker *w;
	while (nwake < 8 && (w = take_idle_locked(p, 0)))
		wake[nwake++] = w;
	/* Work still without a taker (past the limit, or past 8) is the
	 * monitor's. */
	int poke_monitor = p->monitor_sleeping && withheld_locked(p);
	if (poke_monitor)
		p->monitor_sleeping = 0;
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < nwake; i++)
		pthread_cond_signal(&wake[i]->cv);
	if (poke_monitor)
		pthread_cond_signal(&p->monitor_cv);
	return k;
}

int eng_pool_submit(eng_pool *p, eng_work *w)
{
	w->next = NULL;
	eng_work *one = w;
	int why;
	return eng_pool_submit_list(p, &one, &why) == 1 ? MCP_OK : why;
}

size_t eng_pool_depth(eng_pool *p)
{
	return atomic_load_explicit(&p->queued, memory_order_relaxed);
}

void eng_pool_blocking(void)
{
	eng_pool *p = tl_pool;
	if (!p || tl_blocked++ > 0)
		return;
	pthread_mutex_lock(&p->mu);
	p->running--;
	eng_worker *w = take_idle_locked(p, 0);
	pthread_mutex_unlock(&p->mu);
	if (w)
		pthread_cond_signal(&w->cv);
}

int eng_pool_alone(void)
{
	eng_pool *p = tl_pool;
	return !p || (atomic_load_explicit(&p->running, memory_order_relaxed) <= 1 &&
		      atomic_load_explicit(&p->queued, memory_order_relaxed) == 0);
}

void eng_pool_note_quiet(void)
{
	tl_quiet_now = 1;
}

void eng_pool_unblocked(void)
{
	eng_pool *p = tl_pool;
	if (!p || --tl_blocked > 0)
		return;
	pthread_mutex_lock(&p->mu);
	p->running++;
	pthread_mutex_unlock(&p->mu);
}

int eng_pool_stop(eng_pool *p, int64_t deadline_ns)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	/* Every sleeping worker wakes, drains what is queued (decided work,
	 * dropped without running) and exits. */
	for (eng_worker *w = p->idle_top; w; w = w->next_idle) {
		w->signalled = 1;
		p->waking++;
		pthread_cond_signal(&w->cv);
	}
	p->idle_top = NULL;
	pthread_cond_signal(&p->monitor_cv);
	struct timespec ts;
	eng_abstime(deadline_ns, &ts);
	while (p->alive > 0) {
		/* The deadline is for workers inside handlers.  One that is
		 * merely idle exits as soon as it is scheduled, however late:
		 * wait for it, or it would be detached and then read a pool
		 * freed under it. */
		if (deadline_ns == ENG_NO_DEADLINE || (p->busy == 0 && !p->head))
			pthread_cond_wait(&p->idle_cv, &p->mu);
		else if (pthread_cond_timedwait(&p->idle_cv, &p->mu, &ts) == ETIMEDOUT)
			break;
	}
	int left = p->alive;
	p->detached += left;
	pthread_mutex_unlock(&p->mu);
	if (p->monitor_started)
		pthread_join(p->monitor, NULL);
	p->monitor_started = 0;
	for (int i = 0; i < p->nthreads; i++) {
		/* A worker still inside an abandoned handler is detached: it
		 * cannot be interrupted, and the process must still exit. */
		if (left)
			pthread_detach(p->threads[i]);
		else
			pthread_join(p->threads[i], NULL);
	}
	/* A detached worker still uses its eng_worker: that memory, like the
	 * pool's, then outlives the server. */
	if (!left) {
		for (int i = 0; i < p->nthreads; i++)
			pthread_cond_destroy(&p->workers[i].cv);
		free(p->workers);
	}
	p->workers = NULL;
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
	p->started = 0;
	return left;
}
