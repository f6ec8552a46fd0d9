/*
 * sse-floor.c - the floor of the http-streams benchmark: an HTTP/1.1 server
 * on raw non-blocking sockets and one epoll, which hands out a session id
 * at initialize, holds a GET event stream per session, and at
 * test_trigger_tool_change writes one notifications/tools/list_changed event
 * to every stream, one send() each, split over one or two threads.  No MCP
 * library, no libmicrohttpd, no session table, no JSON parser (the body is
 * matched as text): what a broadcast to N streams costs once everything but
 * the kernel's send path is removed.
 *
 * Usage: sse-floor [--threads N] HOST:PORT    (N: 1 or 2, default 2;
 * port 0: a free one, printed on stdout)
 * Runs until SIGTERM or SIGINT.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "scan.h"

#define MAX_HEAD (64 * 1024)
#define MAX_BODY (4 * 1024 * 1024)

struct buf {
	char *p;
	size_t len, off, cap;
};

struct conn {
	int fd;
	int stream;             /* a GET event stream: input is read and dropped */
	int close_after;        /* Connection: close, or a request we cannot frame */
	int want_out;           /* EPOLLOUT armed */
	size_t stream_idx;      /* in streams[], when stream */
	struct buf in, out;
	struct conn *prev, *next;       /* in `conns`, for the shutdown */
};

static int ep;
static struct conn conns = { .prev = &conns, .next = &conns };

/* The open event streams.  Appended and removed by the main thread only; a
 * helper thread reads a range of it during a broadcast, while the main
 * thread waits for it. */
static struct conn **streams;
static size_t nstreams, streams_cap;

static char event[256];
static size_t event_len;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int buf_add(struct buf *b, const void *s, size_t n)
{
	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 512;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

static int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int buf_addf(struct buf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp)
		return -1;
	return buf_add(b, tmp, (size_t)n);
}

static void set_out(struct conn *c, int on)
{
	if (c->want_out == on)
		return;
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	c->want_out = on;
}

/* -1 when the connection is dead. */
static int conn_flush(struct conn *c)
{
	while (c->out.off < c->out.len) {
		ssize_t w = send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			set_out(c, 1);
			return 0;
		}
		if (w <= 0)
			return -1;
		c->out.off += (size_t)w;
	}
	c->out.off = c->out.len = 0;
	if (c->stream) { /* idle until the next event: hold no memory */
		free(c->out.p);
		c->out.p = NULL;
		c->out.cap = 0;
	}
	set_out(c, 0);
	return c->close_after ? -1 : 0;
}

static void conn_close(struct conn *c)
{
	if (c->stream) {
		struct conn *last = streams[--nstreams];
		streams[c->stream_idx] = last;
		last->stream_idx = c->stream_idx;
	}
	c->prev->next = c->next;
	c->next->prev = c->prev;
	close(c->fd);
	free(c->in.p);
	free(c->out.p);
	free(c);
}

/* ---- the broadcast ---------------------------------------------------------- */

/* One send per stream.  Whatever the socket does not take waits in the
 * stream's out buffer for EPOLLOUT; a dead stream is left to the main
 * thread, which sees its hang-up. */
static void send_event(size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		struct conn *c = streams[i];
		if (c->out.off < c->out.len) {
			buf_add(&c->out, event, event_len);
			continue;
		}
		ssize_t w = send(c->fd, event, event_len, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			continue;
		if (w < 0)
			w = 0;
		if ((size_t)w < event_len) {
			buf_add(&c->out, event + w, event_len - (size_t)w);
			set_out(c, 1);
		}
	}
}

/* The second thread writes the second half of streams[].  Lock order: only
 * `lock`.  `posted` and `finished` count broadcasts; the main thread posts
 * one, writes its half, and waits until finished catches up, so streams[]
 * and the connections in the helper's range are touched by one thread at a
 * time. */
static struct {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	unsigned long posted, finished;
	size_t from, to;
	int quit, running;
} helper = { .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
	     .done = PTHREAD_COND_INITIALIZER };

static void *helper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&helper.lock);
	for (;;) {
		while (helper.finished == helper.posted && !helper.quit)
			pthread_cond_wait(&helper.work, &helper.lock);
		if (helper.quit)
			break;
		size_t from = helper.from, to = helper.to;
		pthread_mutex_unlock(&helper.lock);
		send_event(from, to);
		pthread_mutex_lock(&helper.lock);
		helper.finished = helper.posted;
		pthread_cond_signal(&helper.done);
	}
	pthread_mutex_unlock(&helper.lock);
	return NULL;
}

static void broadcast(void)
{
	size_t n = nstreams;
	if (!helper.running) {
		send_event(0, n);
		return;
	}
	size_t half = n / 2;
	pthread_mutex_lock(&helper.lock);
	helper.from = half;
	helper.to = n;
	helper.posted++;
	pthread_cond_signal(&helper.work);
	pthread_mutex_unlock(&helper.lock);
	send_event(0, half);
	pthread_mutex_lock(&helper.lock);
	while (helper.finished != helper.posted)
		pthread_cond_wait(&helper.done, &helper.lock);
	pthread_mutex_unlock(&helper.lock);
}

/* ---- requests --------------------------------------------------------------- */

static uint64_t session_base, session_count;

static int reply_json(struct conn *c, const char *extra_head, const char *body, size_t len)
{
	if (buf_addf(&c->out,
		     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s"
		     "Content-Length: %zu\r\n\r\n",
		     extra_head, len) < 0)
		return -1;
	return buf_add(&c->out, body, len);
}

static int reply_empty(struct conn *c, const char *status)
{
	return buf_addf(&c->out, "HTTP/1.1 %s\r\nContent-Length: 0\r\n%s\r\n", status,
			c->close_after ? "Connection: close\r\n" : "");
}

/* Appends the answer to one POST body; 1 when it was the tool that changes
 * the list, so the caller broadcasts once the answer is sent. */
static int on_post(struct conn *c, const char *body, size_t len)
{
	struct msg m;
	if (msg_scan(body, len, &m) != 0 || (!m.has_method && !m.has_id))
		return reply_empty(c, "400 Bad Request");
	if (!m.has_id) /* a notification */
		return reply_empty(c, "202 Accepted");
	if (!m.has_method) /* an answer to a request we never sent */
		return reply_empty(c, "202 Accepted");
	char out[1024];
	int n;
	if (method_is(&m, "initialize")) {
		const char *pv = memmem(body, len, "\"protocolVersion\":\"", 19);
		const char *pe = pv ? memchr(pv + 19, '"', (size_t)(body + len - (pv + 19))) : NULL;
		int pvl = pe && pe - (pv + 19) < 64 ? (int)(pe - (pv + 19)) : 10;
		char head[128];
		snprintf(head, sizeof head, "Mcp-Session-Id: %016llx%016llx\r\n",
			 (unsigned long long)session_base, (unsigned long long)++session_count);
		n = snprintf(out, sizeof out,
			     "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"protocolVersion\":\"%.*s\","
			     "\"capabilities\":{\"tools\":{\"listChanged\":true}},"
			     "\"serverInfo\":{\"name\":\"sse-floor\",\"version\":\"1\"}}}",
			     (int)m.id_raw_len, m.id_raw, pvl, pe ? pv + 19 : "2025-06-18");
		if (n < 0 || (size_t)n >= sizeof out)
			return reply_empty(c, "400 Bad Request");
		return reply_json(c, head, out, (size_t)n);
	}
	int trigger = method_is(&m, "tools/call") &&
		      memmem(body, len, "\"test_trigger_tool_change\"", 26) != NULL;
	if (trigger)
		n = snprintf(out, sizeof out,
			     "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":"
			     "[{\"type\":\"text\",\"text\":\"ok\"}]}}",
			     (int)m.id_raw_len, m.id_raw);
	else
		n = snprintf(out, sizeof out, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{}}",
			     (int)m.id_raw_len, m.id_raw);
	if (n < 0 || (size_t)n >= sizeof out)
		return reply_empty(c, "400 Bad Request");
	if (reply_json(c, "", out, (size_t)n))
		return -1;
	return trigger;
}

static int on_get(struct conn *c, int wants_events)
{
	if (!wants_events)
		return reply_empty(c, "405 Method Not Allowed");
	if (nstreams == streams_cap) {
		size_t cap = streams_cap ? streams_cap * 2 : 1024;
		struct conn **p = realloc(streams, cap * sizeof *p);
		if (!p)
			return -1;
		streams = p;
		streams_cap = cap;
	}
	c->stream = 1;
	c->close_after = 0; /* a stream ends when the client closes it */
	c->stream_idx = nstreams;
	streams[nstreams++] = c;
	return buf_addf(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				 "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
}

static int header_is(const char *line, size_t len, const char *name, const char **val,
		     size_t *vlen)
{
	size_t n = strlen(name);
	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return 0;
	size_t i = n + 1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	*val = line + i;
	*vlen = len - i;
	while (*vlen && ((*val)[*vlen - 1] == '\r' || (*val)[*vlen - 1] == ' '))
		(*vlen)--;
	return 1;
}

/* Answers every complete request in c->in; -1 when the connection is to
 * be closed. */
static int on_input(struct conn *c)
{
	size_t used = 0;
	int trigger = 0;
	while (!c->stream && !c->close_after) {
		const char *p = c->in.p + used;
		size_t n = c->in.len - used;
		const char *end = memmem(p, n, "\r\n\r\n", 4);
		if (!end) {
			if (n > MAX_HEAD)
				return -1;
			break;
		}
		size_t hlen = (size_t)(end - p) + 4;
		const char *sp = memchr(p, ' ', hlen);
		if (!sp)
			return -1;
		size_t mlen = (size_t)(sp - p);
		long clen = 0;
		int events = 0, chunked = 0;
		for (const char *line = (const char *)memchr(p, '\n', hlen) + 1; line < p + hlen - 2;) {
			const char *eol = memchr(line, '\n', (size_t)(p + hlen - line));
			size_t len = (size_t)(eol - line);
			const char *v;
			size_t vl;
			if (header_is(line, len, "Content-Length", &v, &vl))
				clen = strtol(v, NULL, 10);
			else if (header_is(line, len, "Transfer-Encoding", &v, &vl))
				chunked = 1;
			else if (header_is(line, len, "Accept", &v, &vl))
				events = memmem(v, vl, "text/event-stream", 17) != NULL;
			else if (header_is(line, len, "Connection", &v, &vl))
				c->close_after = vl == 5 && strncasecmp(v, "close", 5) == 0;
			line = eol + 1;
		}
		if (chunked || clen < 0 || clen > MAX_BODY) {
			c->close_after = 1;
			if (reply_empty(c, chunked ? "501 Not Implemented" : "413 Content Too Large"))
				return -1;
			break;
		}
		if (n - hlen < (size_t)clen)
			break;
		int rc;
		if (mlen == 4 && memcmp(p, "POST", 4) == 0)
			rc = on_post(c, p + hlen, (size_t)clen);
		else if (mlen == 3 && memcmp(p, "GET", 3) == 0)
			rc = on_get(c, events);
		else if (mlen == 6 && memcmp(p, "DELETE", 6) == 0)
			rc = reply_empty(c, "200 OK");
		else
			rc = reply_empty(c, "405 Method Not Allowed");
		if (rc < 0)
			return -1;
		trigger |= rc;
		used += hlen + (size_t)clen;
	}
	if (c->stream) {
		free(c->in.p);
		memset(&c->in, 0, sizeof c->in);
	} else {
		memmove(c->in.p, c->in.p + used, c->in.len - used);
		c->in.len -= used;
	}
	/* The answer to the trigger goes out before the first event. */
	int rc = conn_flush(c);
	if (trigger)
		broadcast();
	return rc;
}

static int on_readable(struct conn *c)
{
	if (c->stream) {
		char drop[4096];
		ssize_t r = read(c->fd, drop, sizeof drop);
		return r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ? -1 : 0;
	}
	if (c->in.cap - c->in.len < 4096) {
		size_t cap = c->in.cap ? c->in.cap * 2 : 8192;
		char *p = realloc(c->in.p, cap);
		if (!p)
			return -1;
		c->in.p = p;
		c->in.cap = cap;
	}
	ssize_t r = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0)
		return -1;
	c->in.len += (size_t)r;
	return on_input(c);
}

static void on_accept(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				perror("sse-floor: accept");
			return;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct conn *c = calloc(1, sizeof *c);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		if (!c || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->next = &conns;
		c->prev = conns.prev;
		conns.prev->next = c;
		conns.prev = c;
	}
}

int main(int argc, char **argv)
{
	int threads = 2;
	if (argc == 4 && strcmp(argv[1], "--threads") == 0) {
		threads = atoi(argv[2]);
		argv += 2;
		argc -= 2;
	}
	if (argc != 2 || !strchr(argv[1], ':') || threads < 1 || threads > 2) {
		fprintf(stderr, "usage: sse-floor [--threads N] HOST:PORT\n");
		return 2;
	}
	struct sockaddr_in sa;
	if (scan_ipv4_target("sse-floor", argv[1], &sa) != 0)
		return 2;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrandom(&session_base, sizeof session_base, 0) != sizeof session_base)
		session_base = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL);
	static const char data[] = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
				   "\"notifications/tools/list_changed\"}\n\n";
	event_len = (size_t)snprintf(event, sizeof event, "%zx\r\n%s\r\n", sizeof data - 1, data);

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (lfd >= 0)
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 4096) < 0) {
		fprintf(stderr, "sse-floor: cannot listen on %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	socklen_t salen = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &salen);
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = NULL };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) {
		perror("sse-floor: epoll");
		return 1;
	}
	if (threads == 2) {
		if (pthread_create(&helper.thread, NULL, helper_main, NULL) != 0) {
			fprintf(stderr, "sse-floor: cannot start the second thread\n");
			return 1;
		}
		helper.running = 1;
	}

	/* The signals are blocked but while epoll waits, so a stop cannot slip
	 * in between the check and the wait. */
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = on_signal;
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	sigset_t block, waitmask;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &waitmask);
	sigdelset(&waitmask, SIGTERM);
	sigdelset(&waitmask, SIGINT);

	printf("%u\n", ntohs(sa.sin_port));
	fflush(stdout);

	struct epoll_event evs[256];
	while (!stop) {
		int k = epoll_pwait(ep, evs, 256, -1, &waitmask);
		if (k < 0 && errno != EINTR) {
			perror("sse-floor: epoll_wait");
			break;
		}
		for (int j = 0; j < k; j++) {
			struct conn *c = evs[j].data.ptr;
			if (!c) {
				on_accept(lfd);
				continue;
			}
			int rc = 0;
			if (evs[j].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				rc = on_readable(c);
			if (rc == 0 && (evs[j].events & EPOLLOUT))
				rc = conn_flush(c);
			if (rc < 0)
				conn_close(c);
		}
	}

	if (helper.running) {
		pthread_mutex_lock(&helper.lock);
		helper.quit = 1;
		pthread_cond_signal(&helper.work);
		pthread_mutex_unlock(&helper.lock);
		pthread_join(helper.thread, NULL);
	}
	while (conns.next != &conns)
		conn_close(conns.next);
	close(ep);
	close(lfd);
	free(streams);
	return 0;
}
