/*
 * pool.c - the work queue and the worker threads that run handlers.
 *
 * One pool serves every session of a server.  The worker loop is the
 * classic one: lock, wait while empty, pop, unlock, run, repeat.  Work whose
 * outcome was decided while it sat in the queue (a peer cancel, a dropped
 * session) is skipped without running its handler.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "engine/eng.h"

void eng_req_dispatch(eng_req *r);  /* session.c */

static void *worker_main(void *arg)
{
	eng_pool *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		eng_req *r = p->head;
		if (!r)
			break; /* stopping and drained */
		p->head = r->qnext;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		p->busy++;
		pthread_mutex_unlock(&p->mu);

		eng_req_dispatch(r);
		eng_req_unref(r);

		pthread_mutex_lock(&p->mu);
		p->busy--;
	}
	p->alive--;
	pthread_cond_broadcast(&p->idle_cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int eng_pool_start(eng_pool *p, int nthreads, size_t max_queue)
{
	if (pthread_mutex_init(&p->mu, NULL))
		return MCP_ESYS;
	pthread_cond_init(&p->cv, NULL);
	eng_cond_init(&p->idle_cv);
	p->head = p->tail = NULL;
	p->queued = 0;
	p->max_queue = max_queue;
	p->stopping = 0;
	p->busy = 0;
	p->alive = 0;
	p->threads = calloc((size_t)nthreads, sizeof *p->threads);
	if (!p->threads)
		return MCP_ENOMEM;
	/* Handlers run on these threads: give them room for real work, but not
	 * the 8 MiB default each (idle footprint matters). */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1024 * 1024);
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&p->threads[i], &attr, worker_main, p)) {
			pthread_attr_destroy(&attr);
			p->nthreads = i;
			pthread_mutex_lock(&p->mu);
			p->alive = i;
			pthread_mutex_unlock(&p->mu);
			eng_pool_stop(p, ENG_NO_DEADLINE);
			return MCP_ESYS;
		}
		pthread_mutex_lock(&p->mu);
		p->alive++;
		pthread_mutex_unlock(&p->mu);
	}
	pthread_attr_destroy(&attr);
	p->nthreads = nthreads;
	p->started = 1;
	return MCP_OK;
}

int eng_pool_submit(eng_pool *p, eng_req *r)
{
	pthread_mutex_lock(&p->mu);
	if (p->stopping || p->queued >= p->max_queue) {
		pthread_mutex_unlock(&p->mu);
		return p->stopping ? MCP_ECLOSED : MCP_EBUSY;
	}
	eng_req_ref(r);
	r->qnext = NULL;
	if (p->tail)
		p->tail->qnext = r;
	else
		p->head = r;
	p->tail = r;
	p->queued++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return MCP_OK;
}

int eng_pool_stop(eng_pool *p, int64_t deadline_ns)
{
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->cv);
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
	for (int i = 0; i < p->nthreads; i++) {
		/* A worker still inside an abandoned handler is detached: it
		 * cannot be interrupted, and the process must still exit. */
		if (left)
			pthread_detach(p->threads[i]);
		else
			pthread_join(p->threads[i], NULL);
	}
	free(p->threads);
	p->threads = NULL;
	p->nthreads = 0;
	p->started = 0;
	return left;
}
