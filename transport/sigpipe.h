/*
 * sigpipe.h - SIGPIPE kept away from the process without touching its
 * disposition.
 *
 * A write to a pipe or socket whose reader has gone raises SIGPIPE at the
 * thread that wrote, which by default ends the process.  The library never
 * changes the process's SIGPIPE action (the host's handler or SIG_DFL stays
 * in force for its own descriptors).  Instead:
 *   - every thread the library starts is born with SIGPIPE blocked
 *     (tp_thread_create), and so are libmicrohttpd's threads (started
 *     inside tp_sigpipe_block / tp_sigpipe_restore);
 *   - a thread of the host that runs the library for a while (the reader
 *     of mcp_server_run_stdio) blocks it for that time, and takes back a
 *     SIGPIPE its writes raised before it restores its mask;
 *   - a write on any other thread of the host (an inline write from
 *     mcp_server_notify_*, a client call) is wrapped: TP_SIGPIPE_GUARD.
 * A SIGPIPE raised by such a write is thread-directed, so blocking it in
 * the writing thread keeps it pending there, and sigtimedwait with a zero
 * timeout takes it back (the technique of libcurl's lib/sigpipe.h, per
 * thread instead of per process).  The write itself fails with EPIPE.
 */
#ifndef MCP_TRANSPORT_SIGPIPE_H
#define MCP_TRANSPORT_SIGPIPE_H

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/uio.h>

/* A thread's SIGPIPE state while blocked: its previous mask, and whether
 * SIGPIPE was already pending (then it is not ours to take back). */
typedef struct tp_sigpipe {
	sigset_t old;
	int was_blocked;  /* already blocked: nothing to undo */
	int was_pending;
	int maybe_raised; /* 0: the writes in between are known to raise none */
} tp_sigpipe;

/* Blocks SIGPIPE in the calling thread until tp_sigpipe_restore(s).
 * Calls nest (an inner pair does nothing).  Any thread. */
void tp_sigpipe_block(tp_sigpipe *s);

/* Takes back a SIGPIPE that writes raised in between (unless one was
 * pending before, or s->maybe_raised was cleared: no write failed with
 * EPIPE), then restores the thread's mask.  errno is kept.  The thread
 * that called tp_sigpipe_block. */
void tp_sigpipe_restore(tp_sigpipe *s);

/* Whether the calling thread has SIGPIPE blocked by the library (a thread
 * it started, or one between block and restore): its writes need no
 * guard. */
int tp_sigpipe_quiet(void);

/* pthread_create for the library's own threads: the new thread starts
 * with SIGPIPE blocked (and knows it).  Same arguments and result as
 * pthread_create; ENOMEM when the trampoline cannot be allocated. */
int tp_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* write(2) and writev(2) that never raise SIGPIPE at the process: on a
 * thread that is not quiet, the call is wrapped in block and restore.
 * Same results and errno. */
ssize_t tp_write(int fd, const void *buf, size_t len);
ssize_t tp_writev(int fd, const struct iovec *iov, int cnt);

#endif /* MCP_TRANSPORT_SIGPIPE_H */
