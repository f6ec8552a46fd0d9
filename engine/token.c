/*
 * token.c - the per-request cancellation token: a reason set once, a
 * condition variable every blocking helper of the request waits on, an
 * eventfd for poll(), and race-free on-cancel callbacks.
 *
 * Cancellation is cooperative (GCancellable style): nothing is interrupted,
 * every wait the library offers a handler wakes when the token fires.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/eng.h"

struct eng_cancel_cb {
	eng_cancel_cb *next;
	int handle;
	mcp_cancel_fn fn;
	void *arg;
};

int eng_token_init(eng_token *t)
{
	if (pthread_mutex_init(&t->mu, NULL))
		return MCP_ESYS;
	if (eng_cond_init(&t->cv)) {
		pthread_mutex_destroy(&t->mu);
		return MCP_ESYS;
	}
	atomic_init(&t->reason, MCP_CANCEL_NONE);
	t->efd = -1;
	t->cbs = NULL;
	t->next_handle = 1;
	t->running_handle = 0;
	return MCP_OK;
}

void eng_token_destroy(eng_token *t)
{
	eng_token_clear_callbacks(t);
	if (t->efd >= 0)
		close(t->efd);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
}

static void signal_fd(int fd)
{
	uint64_t one = 1;
	ssize_t r = write(fd, &one, sizeof one);
	(void)r;
}

int eng_token_fire(eng_token *t, int reason)
{
	pthread_mutex_lock(&t->mu);
	if (atomic_load(&t->reason) != MCP_CANCEL_NONE) {
		pthread_mutex_unlock(&t->mu);
		return 0;
	}
	atomic_store_explicit(&t->reason, reason, memory_order_release);
	if (t->efd >= 0)
		signal_fd(t->efd);
	pthread_cond_broadcast(&t->cv);
	/* Run callbacks one by one with the lock released, so a callback may
	 * lock the handler's own mutex; off_cancel waits on running_handle so a
	 * deregistered callback is never running after off_cancel returns. */
	t->firer = pthread_self();
	while (t->cbs) {
		eng_cancel_cb *cb = t->cbs;
		t->cbs = cb->next;
		t->running_handle = cb->handle;
		pthread_mutex_unlock(&t->mu);
		cb->fn((mcp_cancel_reason)reason, cb->arg);
		free(cb);
		pthread_mutex_lock(&t->mu);
		t->running_handle = 0;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
	return 1;
}

int eng_token_sleep(eng_token *t, int64_t ms)
{
	int64_t deadline = eng_now_ns() + (ms > 0 ? ms : 0) * ENG_NS_PER_MS;
	struct timespec ts;
	eng_abstime(deadline, &ts);
	int rc = MCP_OK;
	eng_pool_blocking();
	pthread_mutex_lock(&t->mu);
	for (;;) {
		if (atomic_load(&t->reason) != MCP_CANCEL_NONE) {
			rc = MCP_ECANCELED;
			break;
		}
		if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT) {
			rc = atomic_load(&t->reason) != MCP_CANCEL_NONE ? MCP_ECANCELED : MCP_OK;
			break;
		}
	}
	pthread_mutex_unlock(&t->mu);
	eng_pool_unblocked();
	return rc;
}

int eng_token_fd(eng_token *t)
{
	pthread_mutex_lock(&t->mu);
	if (t->efd < 0) {
		t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (t->efd >= 0 && atomic_load(&t->reason) != MCP_CANCEL_NONE)
			signal_fd(t->efd);
	}
	int fd = t->efd;
	pthread_mutex_unlock(&t->mu);
	return fd;
}

int eng_token_on_cancel(eng_token *t, mcp_cancel_fn fn, void *arg, int *handle)
{
	if (!fn)
		return MCP_EINVAL;
	eng_cancel_cb *cb = malloc(sizeof *cb);
	if (!cb)
		return MCP_ENOMEM;
	pthread_mutex_lock(&t->mu);
	int reason = atomic_load(&t->reason);
	if (reason != MCP_CANCEL_NONE) {
		/* Already fired: run now, on this thread (the race-free rule). */
		pthread_mutex_unlock(&t->mu);
		free(cb);
		if (handle)
			*handle = 0;
		fn((mcp_cancel_reason)reason, arg);
		return MCP_OK;
	}
	cb->handle = t->next_handle++;
	cb->fn = fn;
	cb->arg = arg;
	cb->next = t->cbs;
	t->cbs = cb;
	if (handle)
		*handle = cb->handle;
	pthread_mutex_unlock(&t->mu);
	return MCP_OK;
}

int eng_token_off_cancel(eng_token *t, int handle)
{
	if (handle <= 0)
		return MCP_ENOENT;
	pthread_mutex_lock(&t->mu);
	for (eng_cancel_cb **pp = &t->cbs; *pp; pp = &(*pp)->next) {
		if ((*pp)->handle == handle) {
			eng_cancel_cb *cb = *pp;
			*pp = cb->next;
			pthread_mutex_unlock(&t->mu);
			free(cb);
			return MCP_OK;
		}
	}
	/* Being run right now by the firing thread: wait until it returns,
	 * unless we are that thread (a callback removing itself). */
	while (t->running_handle == handle && !pthread_equal(t->firer, pthread_self()))
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	return MCP_ENOENT;
}

void eng_token_clear_callbacks(eng_token *t)
{
	pthread_mutex_lock(&t->mu);
	eng_cancel_cb *cb = t->cbs;
	t->cbs = NULL;
	while (t->running_handle && !pthread_equal(t->firer, pthread_self()))
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	while (cb) {
		eng_cancel_cb *n = cb->next;
		free(cb);
		cb = n;
	}
}

struct ext_wait {
	pthread_cond_t *cond;
	pthread_mutex_t *mutex;
};

static void ext_wake(mcp_cancel_reason reason, void *arg)
{
	struct ext_wait *w = arg;
	(void)reason;
	/* Taking the waiter's mutex orders this broadcast after its check of
	 * the token, so the wake-up cannot fall between check and wait. */
	pthread_mutex_lock(w->mutex);
	pthread_cond_broadcast(w->cond);
	pthread_mutex_unlock(w->mutex);
}

int eng_token_wait_external(eng_token *t, pthread_cond_t *cond,
			    pthread_mutex_t *mutex, int64_t timeout_ms)
{
	if (atomic_load(&t->reason) != MCP_CANCEL_NONE)
		return MCP_ECANCELED;
	struct ext_wait w = { cond, mutex };
	int handle = 0;
	/* Registering runs ext_wake at once if the token fired meanwhile; it
	 * would lock `mutex`, which the caller holds: check first, register
	 * only while not fired, and drop the lock around registration. */
	eng_cancel_cb *cb = malloc(sizeof *cb);
	if (!cb)
		return MCP_ENOMEM;
	pthread_mutex_lock(&t->mu);
	if (atomic_load(&t->reason) != MCP_CANCEL_NONE) {
		pthread_mutex_unlock(&t->mu);
		free(cb);
		return MCP_ECANCELED;
	}
	cb->handle = handle = t->next_handle++;
	cb->fn = ext_wake;
	cb->arg = &w;
	cb->next = t->cbs;
	t->cbs = cb;
	pthread_mutex_unlock(&t->mu);

	int rc = 0;
	/* `cond` belongs to the caller and uses the default (realtime) clock,
	 * as the public header requires.  (The pool's lock is a leaf: taking
	 * it under the caller's mutex is safe.) */
	if (atomic_load(&t->reason) == MCP_CANCEL_NONE) {
		eng_pool_blocking();
		if (timeout_ms < 0) {
			rc = pthread_cond_wait(cond, mutex);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			int64_t ns = ts.tv_nsec + (timeout_ms % 1000) * ENG_NS_PER_MS;
			ts.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
			ts.tv_nsec = (long)(ns % 1000000000);
			rc = pthread_cond_timedwait(cond, mutex, &ts);
		}
		eng_pool_unblocked();
	}
	/* Deregister without holding the caller's mutex: the firer may be
	 * blocked on it inside ext_wake. */
	pthread_mutex_unlock(mutex);
	eng_token_off_cancel(t, handle);
	pthread_mutex_lock(mutex);
	if (atomic_load(&t->reason) != MCP_CANCEL_NONE)
		return MCP_ECANCELED;
	return rc == ETIMEDOUT ? MCP_ETIMEDOUT : MCP_OK;
}
