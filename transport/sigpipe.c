/*
 * sigpipe.c - SIGPIPE kept away from the process without touching its
 * disposition: see sigpipe.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "transport/sigpipe.h"

/* Depth of block/restore pairs on this thread, or 1 for good in the
 * threads tp_thread_create started. */
static _Thread_local int quiet_depth;

int tp_sigpipe_quiet(void)
{
	return quiet_depth > 0;
}

void tp_sigpipe_block(tp_sigpipe *s)
{
	s->was_blocked = quiet_depth > 0;
	s->was_pending = 0;
	s->maybe_raised = 1;
	quiet_depth++;
	if (s->was_blocked)
		return;
	sigset_t pipe_only;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &s->old);
	if (sigismember(&s->old, SIGPIPE)) {
		/* The host blocks it already: leave its pending state alone. */
		s->was_blocked = 1;
		return;
	}
	sigset_t pending;
	sigemptyset(&pending);
	sigpending(&pending);
	s->was_pending = sigismember(&pending, SIGPIPE);
}

void tp_sigpipe_restore(tp_sigpipe *s)
{
	quiet_depth--;
	if (s->was_blocked)
		return;
	int saved = errno;
	if (!s->was_pending && s->maybe_raised) {
		sigset_t pipe_only;
		sigemptyset(&pipe_only);
		sigaddset(&pipe_only, SIGPIPE);
		struct timespec zero = { 0, 0 };
		/* At most one is pending (standard signals do not queue);
		 * EAGAIN when the writes raised none. */
		while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR) {
		}
	}
	pthread_sigmask(SIG_SETMASK, &s->old, NULL);
	errno = saved;
}

typedef struct trampoline {
	void *(*fn)(void *);
	void *arg;
} trampoline;

static void *start(void *p)
{
	trampoline t = *(trampoline *)p;
	free(p);
	quiet_depth = 1; /* blocked since birth, for good */
	return t.fn(t.arg);
}

int tp_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	trampoline *tr = malloc(sizeof *tr);
	if (!tr)
		return ENOMEM;
	tr->fn = fn;
	tr->arg = arg;
	/* The new thread inherits the creator's mask: SIGPIPE blocked while
	 * it is made, whatever the creator's own state. */
	sigset_t pipe_only, old;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	int rc = pthread_create(t, attr, start, tr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		free(tr);
	return rc;
}

ssize_t tp_writev(int fd, const struct iovec *iov, int cnt)
{
	if (quiet_depth > 0)
		return writev(fd, iov, cnt);
	tp_sigpipe s;
	tp_sigpipe_block(&s);
	ssize_t w = writev(fd, iov, cnt);
	s.maybe_raised = w < 0 && errno == EPIPE;
	tp_sigpipe_restore(&s);
	return w;
}

ssize_t tp_write(int fd, const void *buf, size_t len)
{
	struct iovec one = { (void *)buf, len };
	return tp_writev(fd, &one, 1);
}
