/*
 * fd.c - the descriptor transport: newline-delimited messages over a pair
 * of file descriptors (stdin/stdout, pipes, sockets).
 *
 * It owns framing: CRLF accepted, blank lines skipped, strict UTF-8, a size
 * limit with resynchronisation at the next newline, and interruptible reads
 * and writes so a shutdown never waits on a peer that stopped talking.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/tp.h"

#define READ_CHUNK (64 * 1024)

typedef struct tp_fd {
	tp_conn base;
	int in_fd, out_fd;
	int wake_fd;        /* ours, an eventfd */
	int extra_wake_fd;  /* the owner's, may be -1 */
	char *buf;
	size_t cap, start, end, scan;
	int skipping;       /* discarding an oversized line up to its newline */
	int eof;
	unsigned since_wake_check;
	int out_nonblock;   /* we set O_NONBLOCK on out_fd and must restore it */
	int out_nb;         /* out_fd is non-blocking: try_send may write */
	int out_flags;
} tp_fd;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/* Waits for input or a wake-up.  Returns 1 readable, 0 woken, -errno. */
static int wait_input(tp_fd *t)
{
	struct pollfd p[3];
	int n = 0;
	p[n++] = (struct pollfd){ .fd = t->in_fd, .events = POLLIN };
	p[n++] = (struct pollfd){ .fd = t->wake_fd, .events = POLLIN };
	if (t->extra_wake_fd >= 0)
		p[n++] = (struct pollfd){ .fd = t->extra_wake_fd, .events = POLLIN };
	for (;;) {
		int r = poll(p, (nfds_t)n, -1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents || (n == 3 && p[2].revents))
			return 0;
		if (p[0].revents)
			return 1;
	}
}

static int fd_recv(tp_conn *c, const char **line, size_t *len)
{
	tp_fd *t = (tp_fd *)c;
	size_t max = c->max_message;
	int announced = 0;

	for (;;) {
		/* A wake-up wins over buffered input, checked every 64 lines so a
		 * shutdown never waits for a client that keeps writing, without a
		 * system call per message. */
		if ((++t->since_wake_check & 63) == 0) {
			struct pollfd w[2] = { { .fd = t->wake_fd, .events = POLLIN },
					       { .fd = t->extra_wake_fd, .events = POLLIN } };
			if (poll(w, t->extra_wake_fd >= 0 ? 2 : 1, 0) > 0)
				return TP_WOKEN;
		}

		char *nl = memchr(t->buf + t->scan, '\n', t->end - t->scan);
		if (nl) {
			size_t ls = t->start;
			size_t le = (size_t)(nl - t->buf);
			t->start = t->scan = le + 1;
			if (t->skipping) {
				t->skipping = 0;
				continue;
			}
			size_t n = le - ls;
			if (n > 0 && t->buf[ls + n - 1] == '\r')
				n--;
			if (n > max)
				return TP_TOOLONG;
			if (is_blank(t->buf + ls, n))
				continue;
			*line = t->buf + ls;
			*len = n;
			return tp_utf8_valid((const unsigned char *)*line, n) ? TP_LINE : TP_BADUTF8;
		}
		t->scan = t->end;
		if (!t->skipping && t->end - t->start > max + 1) {
			/* Too long already: report now, then drop bytes until the
			 * next newline instead of buffering them. */
			t->skipping = 1;
			t->start = t->scan = t->end = 0;
			return TP_TOOLONG;
		}
		if (t->skipping)
			t->start = t->scan = t->end = 0;
		if (t->eof) {
			if (t->end > t->start && !t->skipping) {
				/* A last line without its newline is still a message. */
				size_t ls = t->start, n = t->end - t->start;
				t->start = t->scan = t->end;
				if (n > 0 && t->buf[ls + n - 1] == '\r')
					n--;
				if (n > max)
					return TP_TOOLONG;
				if (is_blank(t->buf + ls, n))
					return TP_EOF;
				*line = t->buf + ls;
				*len = n;
				return tp_utf8_valid((const unsigned char *)*line, n) ? TP_LINE
										      : TP_BADUTF8;
			}
			return TP_EOF;
		}
		/* Make room: move the partial line to the front, grow if needed. */
		if (t->start > 0) {
			memmove(t->buf, t->buf + t->start, t->end - t->start);
			t->end -= t->start;
			t->scan -= t->start;
			t->start = 0;
		}
		if (t->cap - t->end < READ_CHUNK) {
			size_t ncap = t->cap * 2;
			while (ncap - t->end < READ_CHUNK)
				ncap *= 2;
			char *nb = realloc(t->buf, ncap);
			if (!nb)
				return TP_ERROR;
			t->buf = nb;
			t->cap = ncap;
		}
		if (!announced && c->before_wait) {
			announced = 1;
			c->before_wait(c->before_wait_arg);
		}
		int w8 = wait_input(t);
		if (w8 == 0)
			return TP_WOKEN;
		if (w8 < 0)
			return TP_ERROR;
		ssize_t r = read(t->in_fd, t->buf + t->end, t->cap - t->end);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			t->eof = 1;
			if (t->end == t->start)
				return TP_ERROR;
			continue;
		}
		if (r == 0)
			t->eof = 1;
		t->end += (size_t)r;
	}
}

static int fd_send(tp_conn *c, const struct iovec *iov_in, int n,
		   const _Atomic int64_t *deadline_ns)
{
	tp_fd *t = (tp_fd *)c;
	struct iovec stackv[64];
	struct iovec *iov = n <= 64 ? stackv : malloc(sizeof(*iov) * (size_t)n);
	if (!iov)
		return -ENOMEM;
	memcpy(iov, iov_in, sizeof(*iov) * (size_t)n);
	int i = 0, rc = 0;

	while (i < n) {
		int cnt = n - i > 1024 ? 1024 : n - i;
		ssize_t w = tp_writev(t->out_fd, iov + i, cnt);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				rc = -errno;
				break;
			}
			/* The peer is not reading: wait, but never past the
			 * deadline, which a closing writer may shorten. */
			int64_t dl = atomic_load(deadline_ns);
			int64_t left = dl == INT64_MAX ? 100 : (dl - now_ns()) / 1000000;
			if (left <= 0) {
				rc = -ETIMEDOUT;
				break;
			}
			struct pollfd p = { .fd = t->out_fd, .events = POLLOUT };
			poll(&p, 1, left > 100 ? 100 : (int)left);
			continue;
		}
		size_t done = (size_t)w;
		while (i < n && done >= iov[i].iov_len) {
			done -= iov[i].iov_len;
			i++;
		}
		if (i < n) {
			iov[i].iov_base = (char *)iov[i].iov_base + done;
			iov[i].iov_len -= done;
		}
	}
	if (iov != stackv)
		free(iov);
	return rc;
}

static ssize_t fd_try_send(tp_conn *c, const char *data, size_t len)
{
	tp_fd *t = (tp_fd *)c;
	if (!t->out_nb)
		return -EOPNOTSUPP;
	for (;;) {
		ssize_t w = tp_write(t->out_fd, data, len);
		if (w >= 0)
			return w;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? 0 : -errno;
	}
}

static void fd_wake(tp_conn *c)
{
	tp_fd *t = (tp_fd *)c;
	uint64_t one = 1;
	ssize_t r = write(t->wake_fd, &one, sizeof one);
	(void)r;
}

static void fd_close_output(tp_conn *c)
{
	tp_fd *t = (tp_fd *)c;
	t->out_nb = 0;
	if (t->out_nonblock) {
		fcntl(t->out_fd, F_SETFL, t->out_flags);
		t->out_nonblock = 0;
	}
}

static void fd_free(tp_conn *c)
{
	tp_fd *t = (tp_fd *)c;
	if (!t)
		return;
	fd_close_output(c);
	close(t->wake_fd);
	free(t->buf);
	free(t);
}

static const struct tp_ops fd_ops = {
	.recv = fd_recv,
	.send = fd_send,
	.try_send = fd_try_send,
	.wake = fd_wake,
	.close_output = fd_close_output,
	.free = fd_free,
};

tp_conn *tp_fd_new(int in_fd, int out_fd, int extra_wake_fd, size_t max_message)
{
	tp_fd *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->base.ops = &fd_ops;
	t->base.max_message = max_message;
	t->base.announces_wait = 1;
	t->in_fd = in_fd;
	t->out_fd = out_fd;
	t->extra_wake_fd = extra_wake_fd;
	t->cap = 2 * READ_CHUNK;
	t->buf = malloc(t->cap);
	t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!t->buf || t->wake_fd < 0) {
		if (t->wake_fd >= 0)
			close(t->wake_fd);
		free(t->buf);
		free(t);
		return NULL;
	}
	/* Writes to a pipe or socket must never block a shutdown forever: use
	 * non-blocking writes with a deadline.  Only for pipes and sockets,
	 * whose description the client made for us; a terminal or file is left
	 * alone. */
	struct stat st;
	if (fstat(out_fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
		int fl = fcntl(out_fd, F_GETFL);
		if (fl >= 0 && !(fl & O_NONBLOCK) &&
		    fcntl(out_fd, F_SETFL, fl | O_NONBLOCK) == 0) {
			t->out_flags = fl;
			t->out_nonblock = 1;
		}
		t->out_nb = t->out_nonblock || (fl >= 0 && (fl & O_NONBLOCK));
	}
	return &t->base;
}
