/*
 * loadgen.c - the load generator of `make bench`: it drives an MCP server
 * over stdio (a child process on pipes) or over Streamable HTTP (raw
 * keep-alive sockets) and prints one machine-readable RESULT line and one
 * line for people.
 *
 * One thread and one poll loop: the client must cost far less than the
 * server it measures, so responses are never built into json-c trees; a
 * scanner of the top-level members finds the id, latencies go into an
 * array that is sorted once at the end.  Besides throughput it measures
 * what only a client can see: how long a server takes to exit after EOF
 * with blocked handlers, how long a notifications/cancelled takes to reach
 * the handler (from the server's --trace lines), and the server's memory.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "scan.h"

#define HANDSHAKE_ID 1000000000L /* ids of our own requests; bench ids are 1..N */

/* ---- small helpers ------------------------------------------------------- */

static pid_t the_child = -1; /* killed when we give up */

/* The last lines the server wrote to stderr, shown when we give up. */
static char err_tail[2048];
static size_t err_tail_len;

static void keep_err_line(const char *line, size_t len)
{
	if (len + 1 > sizeof err_tail)
		len = sizeof err_tail - 1;
	if (err_tail_len + len + 1 > sizeof err_tail) {
		size_t drop = err_tail_len + len + 1 - sizeof err_tail;
		memmove(err_tail, err_tail + drop, err_tail_len - drop);
		err_tail_len -= drop;
	}
	memcpy(err_tail + err_tail_len, line, len);
	err_tail_len += len;
	err_tail[err_tail_len++] = '\n';
}

static void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("loadgen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (err_tail_len)
		fprintf(stderr, "loadgen: the server's last stderr lines:\n%.*s", (int)err_tail_len,
			err_tail);
	if (the_child > 0)
		kill(the_child, SIGKILL);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		fatal("out of memory");
	return p;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		fatal("fcntl: %s", strerror(errno));
}

/* A growable byte buffer; `off` marks what has been consumed from the
 * front, so a reader takes lines without moving memory for each. */
struct buf {
	char *p;
	size_t len, cap, off;
};

static void buf_reserve(struct buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return;
	if (b->off) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->len + extra <= b->cap)
			return;
	}
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra)
		cap *= 2;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

static void buf_add(struct buf *b, const void *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void buf_adds(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("vsnprintf failed");
	buf_reserve(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void buf_add_long(struct buf *b, long v)
{
	char tmp[24];
	int n = 0;
	unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[n++] = '-';
	buf_reserve(b, (size_t)n);
	while (n)
		b->p[b->len++] = tmp[--n];
}

static size_t buf_pending(const struct buf *b)
{
	return b->len - b->off;
}

static void buf_clear(struct buf *b)
{
	b->len = b->off = 0;
}

/* The scanner of a message's top-level members: scan.h. */

/* ---- options ------------------------------------------------------------ */

struct opts {
	const char *cmd;        /* stdio, http, close, cancel, memory, has-tool */
	const char *tool;
	const char *args;       /* compact JSON text of the arguments */
	const char *label;
	const char *protocol;
	const char *path;       /* http */
	const char *target;     /* http HOST:PORT, or has-tool's NAME */
	long window, requests, warmup, queue, timeout_ms, settle_ms, duration_ms;
	int expect_requests;
	int stateless;          /* http: no initialize, no session */
	long sessions;          /* http-idle, http-streams: how many */
	pid_t pid;              /* http: the server, for CPU and memory */
	char **argv;            /* the server command */
};

static struct opts O = {
	.tool = "echo", .label = "-", .protocol = "2025-06-18", .path = "/mcp",
	.window = 1, .requests = 10000, .warmup = -1, .queue = 10000,
	.timeout_ms = 120000, .settle_ms = 50,
};

static uint64_t deadline_ns;

/* With --duration-ms: whether the measured part has run long enough, so no
 * more requests are sent (those in flight are still awaited). */
static int duration_over(uint64_t t_start, long done)
{
	return O.duration_ms > 0 && done >= O.warmup &&
	       now_ns() - t_start >= (uint64_t)O.duration_ms * 1000000u;
}

static void check_deadline(const char *what)
{
	if (now_ns() > deadline_ns)
		fatal("timed out %s (after --timeout-ms %ld)", what, O.timeout_ms);
}

/* ---- measurements ------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double pct_us(const uint64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	size_t r = (size_t)(q * (double)n + 0.999999);
	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return (double)v[r - 1] / 1000.0;
}

/* utime + stime of a process in microseconds from /proc/PID/stat, which
 * counts in clock ticks (10 ms); -1 when unknown. */
static long long proc_cpu_ticks_us(pid_t pid)
{
	char path[64], text[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = 0;
	/* Field 2 is "(comm)", which may hold spaces: start after the last ')'. */
	char *p = strrchr(text, ')');
	if (!p)
		return -1;
	unsigned long long ut = 0, st = 0;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	return (long long)((ut + st) * 1000000ULL / (unsigned long long)(hz > 0 ? hz : 100));
}

/* CPU time of a process in microseconds: the sum of its live threads' time
 * on CPU from /proc/PID/task/TID/schedstat (nanoseconds), precise enough
 * for short runs.  Threads that have exited are not counted, which is fine
 * across a run whose threads all live; falls back to clock ticks. */
static long long proc_cpu_us(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return proc_cpu_ticks_us(pid);
	unsigned long long ns = 0;
	int seen = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char sp[96];
		snprintf(sp, sizeof sp, "/proc/%d/task/%.16s/schedstat", (int)pid, e->d_name);
		FILE *f = fopen(sp, "r");
		unsigned long long v;
		if (f && fscanf(f, "%llu", &v) == 1) {
			ns += v;
			seen = 1;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return seen ? (long long)(ns / 1000) : proc_cpu_ticks_us(pid);
}

/* VmRSS and VmHWM of a process in KiB (-1 when unknown). */
static void proc_mem_kb(pid_t pid, long *rss, long *hwm)
{
	char path[64], line[256];
	*rss = *hwm = -1;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			*rss = strtol(line + 6, NULL, 10);
		else if (strncmp(line, "VmHWM:", 6) == 0)
			*hwm = strtol(line + 6, NULL, 10);
	}
	fclose(f);
}

static long long self_cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
	       (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
}

/* Latencies of one run, and what is needed for requests/s and CPU. */
struct stats {
	uint64_t *lat;
	size_t nlat, cap;
	long errors;
	uint64_t t_start, t_end;
	long long srv_cpu0, srv_cpu1, self_cpu0, self_cpu1;
};

static void stats_add(struct stats *st, uint64_t ns)
{
	if (st->nlat == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 1024;
		st->lat = xrealloc(st->lat, st->cap * sizeof *st->lat);
	}
	st->lat[st->nlat++] = ns;
}

static void stats_begin(struct stats *st, pid_t pid)
{
	st->t_start = now_ns();
	st->srv_cpu0 = pid > 0 ? proc_cpu_us(pid) : -1;
	st->self_cpu0 = self_cpu_us();
}

static void stats_end(struct stats *st, pid_t pid)
{
	st->t_end = now_ns();
	st->srv_cpu1 = pid > 0 ? proc_cpu_us(pid) : -1;
	st->self_cpu1 = self_cpu_us();
}

/* Prints the RESULT line and the human one of a throughput run. */
static void stats_print(struct stats *st, const char *kind, const char *extra, pid_t pid)
{
	qsort(st->lat, st->nlat, sizeof *st->lat, cmp_u64);
	double secs = (double)(st->t_end - st->t_start) / 1e9;
	double rps = secs > 0 ? (double)st->nlat / secs : 0;
	double srv_cpu = -1;
	if (st->srv_cpu0 >= 0 && st->srv_cpu1 >= 0 && st->nlat)
		srv_cpu = (double)(st->srv_cpu1 - st->srv_cpu0) / (double)st->nlat;
	double self_pct = secs > 0 ? (double)(st->self_cpu1 - st->self_cpu0) / 1e4 / secs : 0;
	double srv_pct = secs > 0 && st->srv_cpu0 >= 0 && st->srv_cpu1 >= 0
				 ? (double)(st->srv_cpu1 - st->srv_cpu0) / 1e4 / secs
				 : -1;
	long rss = -1, hwm = -1;
	if (pid > 0)
		proc_mem_kb(pid, &rss, &hwm);
	double p50 = pct_us(st->lat, st->nlat, 0.50), p99 = pct_us(st->lat, st->nlat, 0.99);
	double mx = st->nlat ? (double)st->lat[st->nlat - 1] / 1000.0 : 0;
	printf("RESULT kind=%s label=%s tool=%s window=%ld requests=%zu errors=%ld secs=%.3f "
	       "rps=%.1f p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f "
	       "server_cpu_us_per_req=%.2f server_cpu_pct=%.1f loadgen_cpu_pct=%.1f "
	       "rss_kb=%ld hwm_kb=%ld%s%s\n",
	       kind, O.label, O.tool, O.window, st->nlat, st->errors, secs, rps, p50,
	       pct_us(st->lat, st->nlat, 0.90), p99, mx, srv_cpu, srv_pct, self_pct, rss, hwm,
	       extra ? " " : "", extra ? extra : "");
	printf("# %s %s %s window %ld: %.0f req/s, p50 %.0f us, p99 %.0f us, max %.0f us, "
	       "%ld errors, server %.1f us CPU/request, loadgen %.0f%% CPU\n",
	       kind, O.label, O.tool, O.window, rps, p50, p99, mx, st->errors, srv_cpu, self_pct);
	fflush(stdout);
}

/* ---- a server child on pipes ------------------------------------------- */

struct sess;
typedef void (*response_fn)(struct sess *s, const struct msg *m, const char *line, size_t len,
			    uint64_t now);
typedef void (*trace_fn)(struct sess *s, const char *line, size_t len, uint64_t now);

struct sess {
	pid_t pid;
	int in, out, err, pidfd;      /* our ends: its stdin, stdout, stderr */
	struct buf wbuf, rbuf, ebuf;  /* to write; read from stdout; from stderr */
	int out_eof, err_eof, exited, status, stdin_closed;
	int answer_requests;          /* answer roots/list and ping from the server */
	long server_requests;         /* server-to-client requests seen */
	response_fn on_response;
	trace_fn on_trace;
	long awaited;                 /* an id sess_call waits for */
	int awaited_done;
	struct buf awaited_line;
	void *user;
};

static int pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static void sess_spawn(struct sess *s, char **argv)
{
	int pin[2], pout[2], perr[2];
	memset(s, 0, sizeof *s);
	s->awaited = -1;
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC))
		fatal("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "loadgen: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	s->pid = the_child = pid;
	s->in = pin[1];
	s->out = pout[0];
	s->err = perr[0];
	set_nonblock(s->in);
	set_nonblock(s->out);
	set_nonblock(s->err);
	s->pidfd = pidfd_open_compat(pid);
}

static void sess_close_stdin(struct sess *s)
{
	if (!s->stdin_closed) {
		close(s->in);
		s->stdin_closed = 1;
		buf_clear(&s->wbuf);
	}
}

/* Writes what it can of the queued bytes without blocking. */
static void sess_flush(struct sess *s)
{
	while (!s->stdin_closed && buf_pending(&s->wbuf)) {
		ssize_t w = write(s->in, s->wbuf.p + s->wbuf.off, buf_pending(&s->wbuf));
		if (w > 0) {
			s->wbuf.off += (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && errno == EAGAIN) {
			return;
		} else if (w < 0 && errno == EPIPE) {
			/* The server is gone; its stderr and the EOF on its
			 * output say why, where the caller checks. */
			sess_close_stdin(s);
			return;
		} else {
			fatal("writing to the server: %s", w < 0 ? strerror(errno) : "short write");
		}
	}
	if (buf_pending(&s->wbuf) == 0)
		buf_clear(&s->wbuf);
}

static void sess_send(struct sess *s, const char *line)
{
	buf_adds(&s->wbuf, line);
	buf_add(&s->wbuf, "\n", 1);
	sess_flush(s);
}

static void answer_server_request(struct sess *s, const struct msg *m)
{
	struct buf *w = &s->wbuf;
	buf_adds(w, "{\"jsonrpc\":\"2.0\",\"id\":");
	buf_add(w, m->id_raw, m->id_raw_len);
	if (method_is(m, "roots/list"))
		buf_adds(w, ",\"result\":{\"roots\":[]}}\n");
	else if (method_is(m, "ping"))
		buf_adds(w, ",\"result\":{}}\n");
	else
		buf_adds(w, ",\"error\":{\"code\":-32601,\"message\":\"not offered by loadgen\"}}\n");
}

static void sess_line(struct sess *s, const char *line, size_t len, uint64_t now)
{
	struct msg m;
	if (msg_scan(line, len, &m) != 0)
		fatal("the server wrote a line that is not a JSON object: %.*s", (int)len, line);
	if (m.has_method) {
		if (m.has_id) {
			s->server_requests++;
			if (s->answer_requests)
				answer_server_request(s, &m);
		}
		return; /* notifications (progress, log) are not measured */
	}
	if (m.has_id && m.id_is_num && m.id == s->awaited) {
		s->awaited_done = 1;
		buf_clear(&s->awaited_line);
		buf_add(&s->awaited_line, line, len);
		buf_add(&s->awaited_line, "", 1);
		return;
	}
	if (s->on_response)
		s->on_response(s, &m, line, len, now);
}

/* Reads what is there from one of the child's output pipes and hands each
 * complete line on; returns -1 at EOF. */
static int sess_read(struct sess *s, int fd, struct buf *b, int is_err, uint64_t now)
{
	for (;;) {
		buf_reserve(b, 65536);
		ssize_t r = read(fd, b->p + b->len, b->cap - b->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return -1;
		size_t scan = b->len;
		b->len += (size_t)r;
		char *nl;
		while ((nl = memchr(b->p + scan, '\n', b->len - scan)) != NULL) {
			const char *line = b->p + b->off;
			size_t len = (size_t)(nl - line);
			scan = (size_t)(nl - b->p) + 1;
			b->off = scan;
			if (is_err) {
				keep_err_line(line, len);
				if (s->on_trace)
					s->on_trace(s, line, len, now);
			} else if (len > 0) {
				sess_line(s, line, len, now);
			}
		}
		if (b->off == b->len)
			buf_clear(b);
		if ((size_t)r < 65536)
			return 0;
	}
}

static void sess_reap(struct sess *s, int block)
{
	if (s->exited)
		return;
	int st;
	pid_t r = waitpid(s->pid, &st, block ? 0 : WNOHANG);
	if (r == s->pid) {
		s->exited = 1;
		s->status = st;
		the_child = -1;
	}
}

/* One round of the event loop: waits up to timeout_ms for the child's
 * pipes (and its exit), writes, reads and dispatches.  Returns the time it
 * woke up. */
static uint64_t sess_pump(struct sess *s, int timeout_ms)
{
	struct pollfd p[4];
	int n = 0, iw = -1, io = -1, ie = -1, ip = -1;
	if (!s->stdin_closed && buf_pending(&s->wbuf)) {
		p[n] = (struct pollfd){ .fd = s->in, .events = POLLOUT };
		iw = n++;
	}
	if (!s->out_eof) {
		p[n] = (struct pollfd){ .fd = s->out, .events = POLLIN };
		io = n++;
	}
	if (!s->err_eof) {
		p[n] = (struct pollfd){ .fd = s->err, .events = POLLIN };
		ie = n++;
	}
	if (s->pidfd >= 0 && !s->exited) {
		p[n] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		ip = n++;
	}
	int r = poll(p, (nfds_t)n, timeout_ms);
	uint64_t now = now_ns();
	if (r < 0 && errno != EINTR)
		fatal("poll: %s", strerror(errno));
	if (r <= 0)
		return now;
	if (iw >= 0 && (p[iw].revents & (POLLOUT | POLLERR | POLLHUP)))
		sess_flush(s);
	if (io >= 0 && p[io].revents && sess_read(s, s->out, &s->rbuf, 0, now) < 0)
		s->out_eof = 1;
	if (ie >= 0 && p[ie].revents && sess_read(s, s->err, &s->ebuf, 1, now) < 0)
		s->err_eof = 1;
	if (ip >= 0 && p[ip].revents)
		sess_reap(s, 1);
	if (buf_pending(&s->wbuf))
		sess_flush(s);
	return now;
}

/* Sends one request of ours and waits for its answer; the line is left in
 * s->awaited_line (NUL-terminated). */
static void sess_call(struct sess *s, long id, const char *method, const char *params)
{
	char head[128];
	snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\"", id, method);
	buf_adds(&s->wbuf, head);
	if (params) {
		buf_adds(&s->wbuf, ",\"params\":");
		buf_adds(&s->wbuf, params);
	}
	buf_adds(&s->wbuf, "}\n");
	sess_flush(s);
	s->awaited = id;
	s->awaited_done = 0;
	while (!s->awaited_done) {
		if (s->out_eof)
			fatal("the server closed its output while we waited for %s", method);
		check_deadline(method);
		sess_pump(s, 100);
	}
	s->awaited = -1;
}

static void sess_handshake(struct sess *s)
{
	char params[256];
	snprintf(params, sizeof params,
		 "{\"protocolVersion\":\"%s\",\"capabilities\":{\"roots\":{}},"
		 "\"clientInfo\":{\"name\":\"libmcp-loadgen\",\"version\":\"1\"}}",
		 O.protocol);
	sess_call(s, HANDSHAKE_ID, "initialize", params);
	struct msg m;
	if (msg_scan(s->awaited_line.p, s->awaited_line.len - 1, &m) || !m.has_result)
		fatal("initialize failed: %s", s->awaited_line.p);
	sess_send(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* Closes the server's stdin (unless done already) and waits for its exit,
 * killing it after `grace_ms`; returns the time it exited. */
static uint64_t sess_finish(struct sess *s, int grace_ms)
{
	sess_close_stdin(s);
	uint64_t until = now_ns() + (uint64_t)grace_ms * 1000000u;
	while (!s->exited) {
		uint64_t t = sess_pump(s, s->pidfd >= 0 ? 50 : 1);
		if (s->pidfd < 0)
			sess_reap(s, 0);
		if (s->exited)
			return t;
		if (now_ns() > until) {
			kill(s->pid, SIGKILL);
			sess_reap(s, 1);
			fprintf(stderr, "loadgen: the server did not exit within %d ms; killed\n",
				grace_ms);
			s->status = -1;
		}
	}
	return now_ns();
}

static void sess_free(struct sess *s)
{
	if (!s->stdin_closed)
		close(s->in);
	close(s->out);
	close(s->err);
	if (s->pidfd >= 0)
		close(s->pidfd);
	free(s->wbuf.p);
	free(s->rbuf.p);
	free(s->ebuf.p);
	free(s->awaited_line.p);
}

static const char *exit_text(const struct sess *s, char *tmp, size_t n)
{
	if (s->status == -1)
		snprintf(tmp, n, "killed");
	else if (WIFEXITED(s->status))
		snprintf(tmp, n, "%d", WEXITSTATUS(s->status));
	else if (WIFSIGNALED(s->status))
		snprintf(tmp, n, "sig%d", WTERMSIG(s->status));
	else
		snprintf(tmp, n, "?");
	return tmp;
}

/* ---- tools/call request text ------------------------------------------------ */

static struct buf req_suffix; /* everything after the id, with the newline */

static void build_request_template(void)
{
	json_object *a = json_tokener_parse(O.args);
	if (!a || !json_object_is_type(a, json_type_object))
		fatal("--args must be a JSON object: %s", O.args);
	json_object *name = json_object_new_string(O.tool);
	buf_adds(&req_suffix, ",\"method\":\"tools/call\",\"params\":{\"name\":");
	buf_adds(&req_suffix, json_object_to_json_string_ext(name, JSON_C_TO_STRING_PLAIN));
	buf_adds(&req_suffix, ",\"arguments\":");
	buf_adds(&req_suffix, json_object_to_json_string_ext(
				     a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	buf_adds(&req_suffix, "}}");
	json_object_put(name);
	json_object_put(a);
}

/* Appends a tools/call with `id` to b (without a newline). */
static void add_call(struct buf *b, long id)
{
	buf_adds(b, "{\"jsonrpc\":\"2.0\",\"id\":");
	buf_add_long(b, id);
	buf_add(b, req_suffix.p, req_suffix.len);
}

static void add_cancel(struct buf *b, long id)
{
	buf_adds(b, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
		    "{\"requestId\":");
	buf_add_long(b, id);
	buf_adds(b, ",\"reason\":\"loadgen\"}}\n");
}

/* ---- stdio: throughput and latency ---------------------------------------- */

/* Send times by id modulo RING; a slot is 0 once answered.  A request whose
 * slot is still taken waits, so a stuck answer cannot be overwritten. */
#define RING 65536

struct tput {
	long total, sent, done;
	uint64_t *sent_at;
	struct stats st;
	int finished;
};

static void tput_top_up(struct sess *s, struct tput *t)
{
	uint64_t now = 0;
	if (t->sent < t->total && duration_over(t->st.t_start, t->done))
		t->total = t->sent;
	while (t->sent < t->total && t->sent - t->done < O.window &&
	       !t->sent_at[(t->sent + 1) % RING]) {
		long id = ++t->sent;
		add_call(&s->wbuf, id);
		buf_add(&s->wbuf, "\n", 1);
		if (!now)
			now = now_ns();
		t->sent_at[id % RING] = now;
	}
	sess_flush(s);
}

static void tput_response(struct sess *s, const struct msg *m, const char *line, size_t len,
			  uint64_t now)
{
	struct tput *t = s->user;
	if (!m->has_id || !m->id_is_num || m->id < 1 || m->id > t->sent ||
	    !t->sent_at[m->id % RING])
		fatal("an answer to no request of ours: %.*s", (int)len, line);
	uint64_t t0 = t->sent_at[m->id % RING];
	t->sent_at[m->id % RING] = 0;
	t->done++;
	if (t->done <= O.warmup) {
		if (t->done == O.warmup)
			stats_begin(&t->st, s->pid);
	} else {
		if (!m->has_result)
			t->st.errors++;
		stats_add(&t->st, now - t0);
	}
	if (t->done == t->total || (duration_over(t->st.t_start, t->done) && t->done == t->sent)) {
		t->total = t->done;
		stats_end(&t->st, s->pid);
		t->finished = 1;
	}
}

static int run_stdio(void)
{
	struct sess s;
	struct tput t;
	memset(&t, 0, sizeof t);
	t.total = O.warmup + O.requests;
	t.sent_at = calloc(RING, sizeof *t.sent_at);
	if (!t.sent_at)
		fatal("out of memory");
	sess_spawn(&s, O.argv);
	s.answer_requests = 1;
	sess_handshake(&s);
	s.on_response = tput_response;
	s.user = &t;
	if (O.warmup == 0)
		stats_begin(&t.st, s.pid);
	tput_top_up(&s, &t);
	while (!t.finished) {
		if (s.out_eof)
			fatal("the server closed its output after %ld of %ld answers", t.done,
			      t.total);
		check_deadline("waiting for answers");
		sess_pump(&s, 100);
		tput_top_up(&s, &t);
	}
	char tmp[16];
	stats_print(&t.st, "stdio", NULL, s.pid);
	sess_finish(&s, 5000);
	int rc = 0;
	if (s.status != 0) {
		/* After EOF a stdio server must exit cleanly: say so. */
		fprintf(stderr, "loadgen: the server's exit status after EOF: %s\n",
			exit_text(&s, tmp, sizeof tmp));
		rc = 3;
	}
	sess_free(&s);
	free(t.sent_at);
	free(t.st.lat);
	return rc;
}

/* ---- stdio: the trace lines of --trace ---------------------------------------- */

struct trace_count {
	long started, peer_cancelled, transport_closed, completed, other;
	long want_id;           /* cancel: the id whose lines we wait for */
	uint64_t started_at, cleanup_at;
	uint64_t last_cleanup_at;   /* close: when the last handler ended */
};

/* "started <id>" / "cleanup <id> <reason>"; other stderr lines are ignored. */
static void trace_line(struct sess *s, const char *line, size_t len, uint64_t now)
{
	struct trace_count *tc = s->user;
	long id;
	char reason[32] = "";
	char tmp[128];
	if (len >= sizeof tmp)
		return;
	memcpy(tmp, line, len);
	tmp[len] = 0;
	if (sscanf(tmp, "started %ld", &id) == 1) {
		tc->started++;
		if (id == tc->want_id)
			tc->started_at = now;
	} else if (sscanf(tmp, "cleanup %ld %31s", &id, reason) == 2) {
		if (strcmp(reason, "peer_cancelled") == 0)
			tc->peer_cancelled++;
		else if (strcmp(reason, "transport_closed") == 0)
			tc->transport_closed++;
		else if (strcmp(reason, "completed") == 0)
			tc->completed++;
		else
			tc->other++;
		if (id == tc->want_id)
			tc->cleanup_at = now;
		tc->last_cleanup_at = now;
	}
}

/* ---- close: EOF with W blocked handlers, until the process has exited ------- */

static int run_close(void)
{
	long reps = O.requests;
	uint64_t *ms = calloc((size_t)reps, sizeof *ms);
	uint64_t *woke = calloc((size_t)reps, sizeof *woke);
	struct trace_count last;
	char tmp[16];
	const char *status = "-";
	int bad_exit = 0;
	if (!ms || !woke)
		fatal("out of memory");
	memset(&last, 0, sizeof last);
	for (long r = 0; r < reps; r++) {
		struct sess s;
		struct trace_count tc;
		memset(&tc, 0, sizeof tc);
		tc.want_id = -1;
		sess_spawn(&s, O.argv);
		s.user = &tc;
		s.on_trace = trace_line;
		sess_handshake(&s);
		for (long id = 1; id <= O.window; id++) {
			add_call(&s.wbuf, id);
			buf_add(&s.wbuf, "\n", 1);
		}
		sess_flush(&s);
		while (tc.started < O.window || (O.expect_requests && s.server_requests < O.window)) {
			if (s.out_eof)
				fatal("the server closed its output before its handlers blocked");
			check_deadline("waiting for the handlers to start (is --trace on?)");
			sess_pump(&s, 100);
		}
		/* Let the last handlers reach their wait. */
		uint64_t settle = now_ns() + (uint64_t)O.settle_ms * 1000000u;
		while (now_ns() < settle)
			sess_pump(&s, 5);
		if (s.pidfd < 0)
			fatal("pidfd_open is not available: cannot time the exit");
		uint64_t t0 = now_ns();
		uint64_t t1 = sess_finish(&s, 10000);
		ms[r] = t1 - t0;
		while (!s.err_eof)
			sess_pump(&s, 100); /* the last trace lines */
		/* When the last handler's cleanup line arrived: all of them had
		 * seen the close; what follows is the engine's teardown. */
		woke[r] = tc.last_cleanup_at > t0 ? tc.last_cleanup_at - t0 : 0;
		status = exit_text(&s, tmp, sizeof tmp);
		if (s.status != 0)
			bad_exit = 1;
		last = tc;
		sess_free(&s);
	}
	qsort(ms, (size_t)reps, sizeof *ms, cmp_u64);
	qsort(woke, (size_t)reps, sizeof *woke, cmp_u64);
	double p50 = pct_us(ms, (size_t)reps, 0.5) / 1000, mx = (double)ms[reps - 1] / 1e6;
	double wp50 = pct_us(woke, (size_t)reps, 0.5) / 1000;
	printf("RESULT kind=close label=%s tool=%s window=%ld repeats=%ld p50_ms=%.2f "
	       "max_ms=%.2f min_ms=%.2f last_cleanup_p50_ms=%.2f cleanup_transport_closed=%ld "
	       "cleanup_other=%ld server_requests_blocked=%s exit=%s\n",
	       O.label, O.tool, O.window, reps, p50, mx, (double)ms[0] / 1e6, wp50,
	       last.transport_closed, last.completed + last.peer_cancelled + last.other,
	       O.expect_requests ? "yes" : "no", bad_exit ? "nonzero" : status);
	printf("# close %s: %ld handlers blocked in %s, EOF to exit p50 %.2f ms, max %.2f ms "
	       "over %ld runs (last handler ended after %.2f ms)\n",
	       O.label, O.window, O.tool, p50, mx, reps, wp50);
	free(ms);
	free(woke);
	return 0;
}

/* ---- cancel: notifications/cancelled to the handler seeing it ---------------- */

static int run_cancel(void)
{
	struct sess s;
	struct trace_count tc;
	struct stats st;
	memset(&tc, 0, sizeof tc);
	memset(&st, 0, sizeof st);
	tc.want_id = -1;
	sess_spawn(&s, O.argv);
	s.user = &tc;
	s.on_trace = trace_line;
	s.answer_requests = 1;
	sess_handshake(&s);
	long total = O.warmup + O.requests;
	for (long id = 1; id <= total; id++) {
		tc.want_id = id;
		tc.started_at = tc.cleanup_at = 0;
		add_call(&s.wbuf, id);
		buf_add(&s.wbuf, "\n", 1);
		sess_flush(&s);
		while (!tc.started_at) {
			check_deadline("waiting for 'started' (is --trace on?)");
			if (s.err_eof)
				fatal("the server closed stderr");
			sess_pump(&s, 100);
		}
		/* Give the handler time to reach its wait, so what is timed is
		 * the wake-up and not a cancel that races the handler's start. */
		uint64_t settle = now_ns() + (uint64_t)O.settle_ms * 1000000u;
		while (now_ns() < settle)
			sess_pump(&s, 1);
		add_cancel(&s.wbuf, id);
		uint64_t t0 = now_ns();
		sess_flush(&s);
		while (!tc.cleanup_at) {
			check_deadline("waiting for 'cleanup' after the cancel");
			sess_pump(&s, 100);
		}
		if (id > O.warmup)
			stats_add(&st, tc.cleanup_at - t0);
	}
	sess_finish(&s, 5000);
	qsort(st.lat, st.nlat, sizeof *st.lat, cmp_u64);
	double p50 = pct_us(st.lat, st.nlat, 0.5), p99 = pct_us(st.lat, st.nlat, 0.99);
	double mx = st.nlat ? (double)st.lat[st.nlat - 1] / 1000 : 0;
	printf("RESULT kind=cancel label=%s tool=%s requests=%zu p50_us=%.1f p90_us=%.1f "
	       "p99_us=%.1f max_us=%.1f peer_cancelled=%ld other_cleanups=%ld\n",
	       O.label, O.tool, st.nlat, p50, pct_us(st.lat, st.nlat, 0.9), p99, mx,
	       tc.peer_cancelled, tc.completed + tc.transport_closed + tc.other);
	printf("# cancel %s: notifications/cancelled to 'cleanup peer_cancelled' p50 %.0f us, "
	       "p99 %.0f us, max %.0f us (%zu cancels)\n",
	       O.label, p50, p99, mx, st.nlat);
	sess_free(&s);
	free(st.lat);
	return 0;
}

/* ---- ping: round trips that start from idle -------------------------------- */

/* The floor for the cancel figure: a cancel reaches a server that has been
 * idle for --settle-ms, so its wake-ups start cold; so do these pings. */
static int run_ping(void)
{
	struct sess s;
	struct stats st;
	memset(&st, 0, sizeof st);
	sess_spawn(&s, O.argv);
	s.answer_requests = 1;
	sess_handshake(&s);
	long total = O.warmup + O.requests;
	for (long i = 1; i <= total; i++) {
		uint64_t settle = now_ns() + (uint64_t)O.settle_ms * 1000000u;
		while (now_ns() < settle)
			sess_pump(&s, 1);
		uint64_t t0 = now_ns();
		sess_call(&s, HANDSHAKE_ID + i, "ping", NULL);
		if (i > O.warmup)
			stats_add(&st, now_ns() - t0);
	}
	sess_finish(&s, 5000);
	qsort(st.lat, st.nlat, sizeof *st.lat, cmp_u64);
	double p50 = pct_us(st.lat, st.nlat, 0.5), p99 = pct_us(st.lat, st.nlat, 0.99);
	double mx = st.nlat ? (double)st.lat[st.nlat - 1] / 1000 : 0;
	printf("RESULT kind=ping label=%s requests=%zu settle_ms=%ld p50_us=%.1f p90_us=%.1f "
	       "p99_us=%.1f max_us=%.1f\n",
	       O.label, st.nlat, O.settle_ms, p50, pct_us(st.lat, st.nlat, 0.9), p99, mx);
	printf("# ping %s: after %ld ms idle, round trip p50 %.0f us, p99 %.0f us, max %.0f us\n",
	       O.label, O.settle_ms, p50, p99, mx);
	sess_free(&s);
	free(st.lat);
	return 0;
}

/* ---- memory: RSS idle and with Q requests queued ---------------------------- */

static int run_memory(void)
{
	struct sess s;
	long rss0, hwm0, rss1, hwm1;
	char tmp[16];
	sess_spawn(&s, O.argv);
	sess_handshake(&s);
	/* A ping answered means everything before it was read. */
	sess_call(&s, HANDSHAKE_ID + 1, "ping", NULL);
	uint64_t settle = now_ns() + 200000000u;
	while (now_ns() < settle)
		sess_pump(&s, 20);
	proc_mem_kb(s.pid, &rss0, &hwm0);
	for (long id = 1; id <= O.queue; id++) {
		add_call(&s.wbuf, id);
		buf_add(&s.wbuf, "\n", 1);
	}
	sess_flush(&s);
	sess_call(&s, HANDSHAKE_ID + 2, "ping", NULL);
	settle = now_ns() + 200000000u;
	while (now_ns() < settle)
		sess_pump(&s, 20);
	proc_mem_kb(s.pid, &rss1, &hwm1);
	uint64_t t0 = now_ns();
	uint64_t t1 = sess_finish(&s, 30000);
	printf("RESULT kind=memory label=%s tool=%s queued=%ld idle_rss_kb=%ld idle_hwm_kb=%ld "
	       "queued_rss_kb=%ld queued_hwm_kb=%ld delta_hwm_kb=%ld exit_ms=%.1f exit=%s\n",
	       O.label, O.tool, O.queue, rss0, hwm0, rss1, hwm1, hwm1 - hwm0,
	       (double)(t1 - t0) / 1e6, exit_text(&s, tmp, sizeof tmp));
	printf("# memory %s: idle RSS %ld KiB (peak %ld), with %ld %s requests queued RSS %ld KiB "
	       "(peak %ld, +%ld)\n",
	       O.label, rss0, hwm0, O.queue, O.tool, rss1, hwm1, hwm1 - hwm0);
	sess_free(&s);
	return 0;
}

/* ---- has-tool: whether tools/list names a tool ------------------------------- */

static int run_has_tool(void)
{
	struct sess s;
	char needle[256];
	sess_spawn(&s, O.argv);
	sess_handshake(&s);
	sess_call(&s, HANDSHAKE_ID + 1, "tools/list", NULL);
	snprintf(needle, sizeof needle, "\"name\":\"%s\"", O.target);
	int found = strstr(s.awaited_line.p, needle) != NULL;
	sess_finish(&s, 5000);
	sess_free(&s);
	return found ? 0 : 1;
}

/* ---- HTTP/1.1 over raw sockets -------------------------------------------- */

struct hresp {
	int status, sse, close;
	size_t consumed;                /* bytes of this response */
	const char *session;            /* Mcp-Session-Id, in the input */
	size_t session_len;
	struct buf body;                /* de-chunked */
};

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
	while (*vlen && isspace((unsigned char)(*val)[*vlen - 1]))
		(*vlen)--;
	return 1;
}

/* Parses one complete response from p[0..n): 1 when complete, 0 when more
 * bytes are needed, -1 when malformed. */
static int http_parse(const char *p, size_t n, struct hresp *r)
{
	const char *end = memmem(p, n, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t hlen = (size_t)(end - p) + 4;
	if (n < 12 || strncmp(p, "HTTP/1.", 7) != 0)
		return -1;
	r->status = atoi(p + 9);
	r->sse = r->close = 0;
	r->session = NULL;
	r->session_len = 0;
	buf_clear(&r->body);
	long clen = -1;
	int chunked = 0;
	const char *line = (const char *)memchr(p, '\n', hlen) + 1;
	while (line < p + hlen - 2) {
		const char *eol = memchr(line, '\n', (size_t)(p + hlen - line));
		size_t len = (size_t)(eol - line);
		const char *v;
		size_t vl;
		if (header_is(line, len, "Content-Length", &v, &vl))
			clen = strtol(v, NULL, 10);
		else if (header_is(line, len, "Transfer-Encoding", &v, &vl))
			chunked = vl >= 7 && strncasecmp(v + vl - 7, "chunked", 7) == 0;
		else if (header_is(line, len, "Content-Type", &v, &vl))
			r->sse = vl >= 17 && strncasecmp(v, "text/event-stream", 17) == 0;
		else if (header_is(line, len, "Connection", &v, &vl))
			r->close = vl == 5 && strncasecmp(v, "close", 5) == 0;
		else if (header_is(line, len, "Mcp-Session-Id", &v, &vl)) {
			r->session = v;
			r->session_len = vl;
		}
		line = eol + 1;
	}
	if (chunked) {
		size_t i = hlen;
		for (;;) {
			const char *crlf = memmem(p + i, n - i, "\r\n", 2);
			if (!crlf)
				return 0;
			char *e;
			unsigned long sz = strtoul(p + i, &e, 16);
			if (e == p + i)
				return -1;
			i = (size_t)(crlf - p) + 2;
			if (sz == 0) {
				/* Trailers, then an empty line. */
				for (;;) {
					const char *t = memmem(p + i, n - i, "\r\n", 2);
					if (!t)
						return 0;
					size_t tl = (size_t)(t - (p + i));
					i += tl + 2;
					if (tl == 0) {
						r->consumed = i;
						return 1;
					}
				}
			}
			if (n - i < sz + 2)
				return 0;
			buf_add(&r->body, p + i, sz);
			i += sz + 2;
		}
	}
	if (clen < 0)
		clen = 0; /* 202 Accepted and friends */
	if (n - hlen < (size_t)clen)
		return 0;
	buf_add(&r->body, p + hlen, (size_t)clen);
	r->consumed = hlen + (size_t)clen;
	return 1;
}

/* Finds the JSON-RPC response to `id` in a body (application/json, or the
 * data lines of an event stream); 1 found with a result, 2 found with an
 * error, 0 not found. */
static int body_find_answer(struct hresp *r, long id)
{
	const char *p = r->body.p;
	size_t n = r->body.len;
	struct msg m;
	if (!r->sse)
		return msg_scan(p, n, &m) == 0 && m.has_id && m.id_is_num && m.id == id
			       ? (m.has_result ? 1 : 2)
			       : 0;
	size_t i = 0;
	while (i < n) {
		const char *eol = memchr(p + i, '\n', n - i);
		size_t len = eol ? (size_t)(eol - (p + i)) : n - i;
		const char *line = p + i;
		i += len + 1;
		if (len > 0 && line[len - 1] == '\r')
			len--;
		if (len < 5 || memcmp(line, "data:", 5) != 0)
			continue;
		if (msg_scan(line + 5, len - 5, &m) == 0 && !m.has_method && m.has_id &&
		    m.id_is_num && m.id == id)
			return m.has_result ? 1 : 2;
	}
	return 0;
}

static char http_host[256], http_port[16], http_session[256];

static int http_try_connect(void)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	int rc = getaddrinfo(http_host, http_port, &hints, &ai);
	if (rc)
		fatal("%s:%s: %s", http_host, http_port, gai_strerror(rc));
	int fd = -1;
	for (struct addrinfo *a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd >= 0) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	return fd;
}

static int http_connect(void)
{
	int fd = http_try_connect();
	if (fd < 0)
		fatal("cannot connect to %s:%s: %s", http_host, http_port, strerror(errno));
	return fd;
}

static void http_add_post(struct buf *b, const char *body, size_t len)
{
	buf_addf(b,
		 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
		 "Accept: application/json, text/event-stream\r\n",
		 O.path, http_host, http_port);
	if (http_session[0])
		buf_addf(b, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", http_session,
			 O.protocol);
	buf_addf(b, "Content-Length: %zu\r\n\r\n", len);
	buf_add(b, body, len);
}

/* One blocking POST on fd; the response is left in r (body de-chunked). */
static void http_post_blocking(int fd, const char *body, struct buf *in, struct hresp *r)
{
	struct buf req = { 0 };
	http_add_post(&req, body, strlen(body));
	for (size_t off = 0; off < req.len;) {
		ssize_t w = write(fd, req.p + off, req.len - off);
		if (w <= 0)
			fatal("HTTP write: %s", strerror(errno));
		off += (size_t)w;
	}
	free(req.p);
	buf_clear(in);
	for (;;) {
		int pr = http_parse(in->p, in->len, r);
		if (pr < 0)
			fatal("malformed HTTP response");
		if (pr > 0)
			return;
		check_deadline("waiting for an HTTP response");
		buf_reserve(in, 65536);
		ssize_t n = read(fd, in->p + in->len, in->cap - in->len);
		if (n <= 0)
			fatal("HTTP read: %s", n < 0 ? strerror(errno) : "connection closed");
		in->len += (size_t)n;
	}
}

struct hconn {
	int fd;
	struct buf out, in;
	struct hresp r;
	long id;
	uint64_t t0;
	int busy;
};

static long h_sent, h_done, h_total, h_reconnects;
static struct stats h_st;
static int h_sse_seen, h_json_seen;

static void hconn_start(struct hconn *c)
{
	char head[48];
	long id = ++h_sent;
	int hn = snprintf(head, sizeof head, "{\"jsonrpc\":\"2.0\",\"id\":%ld", id);
	size_t blen = (size_t)hn + req_suffix.len;
	buf_clear(&c->out);
	buf_addf(&c->out,
		 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
		 "Accept: application/json, text/event-stream\r\n",
		 O.path, http_host, http_port);
	if (http_session[0])
		buf_addf(&c->out, "Mcp-Session-Id: %s\r\n", http_session);
	buf_addf(&c->out, "MCP-Protocol-Version: %s\r\nContent-Length: %zu\r\n\r\n", O.protocol,
		 blen);
	buf_add(&c->out, head, (size_t)hn);
	buf_add(&c->out, req_suffix.p, req_suffix.len);
	c->id = id;
	c->busy = 1;
	c->t0 = now_ns();
	while (buf_pending(&c->out)) {
		ssize_t w = write(c->fd, c->out.p + c->out.off, buf_pending(&c->out));
		if (w > 0)
			c->out.off += (size_t)w;
		else if (w < 0 && errno == EAGAIN)
			break;
		else if (!(w < 0 && errno == EINTR))
			fatal("HTTP write: %s", w < 0 ? strerror(errno) : "short");
	}
}

/* Reads what is there; finishes the request when its response is whole. */
static void hconn_read(struct hconn *c, uint64_t now)
{
	for (;;) {
		buf_reserve(&c->in, 65536);
		ssize_t n = read(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			fatal("HTTP read: %s", n < 0 ? strerror(errno) : "the server closed a connection");
		c->in.len += (size_t)n;
		if ((size_t)n < 65536)
			break;
	}
	int pr = http_parse(c->in.p + c->in.off, buf_pending(&c->in), &c->r);
	if (pr < 0)
		fatal("malformed HTTP response");
	if (pr == 0)
		return;
	c->in.off += c->r.consumed;
	if (buf_pending(&c->in) == 0)
		buf_clear(&c->in);
	int found = c->r.status == 200 ? body_find_answer(&c->r, c->id) : 0;
	if (found == 0)
		fatal("HTTP %d without the answer to request %ld: %.*s", c->r.status, c->id,
		      (int)c->r.body.len, c->r.body.p ? c->r.body.p : "");
	if (c->r.sse)
		h_sse_seen = 1;
	else
		h_json_seen = 1;
	c->busy = 0;
	h_done++;
	if (h_done <= O.warmup) {
		if (h_done == O.warmup)
			stats_begin(&h_st, O.pid);
	} else {
		if (found != 1)
			h_st.errors++;
		stats_add(&h_st, now - c->t0);
	}
	if (h_sent < h_total && duration_over(h_st.t_start, h_done))
		h_total = h_sent;
	if (h_done == h_total)
		stats_end(&h_st, O.pid);
	if (c->r.close) {
		close(c->fd);
		c->fd = http_connect();
		set_nonblock(c->fd);
		h_reconnects++;
	}
}

/* HOST:PORT of O.target into http_host and http_port. */
static void http_target(void)
{
	const char *colon = strrchr(O.target, ':');
	if (!colon || colon == O.target || (size_t)(colon - O.target) >= sizeof http_host)
		fatal("http wants HOST:PORT, not %s", O.target);
	memcpy(http_host, O.target, (size_t)(colon - O.target));
	http_host[colon - O.target] = 0;
	if (http_host[0] == '[') { /* [v6]:port */
		size_t l = strlen(http_host);
		memmove(http_host, http_host + 1, l);
		if (l >= 2 && http_host[l - 2] == ']')
			http_host[l - 2] = 0;
	}
	snprintf(http_port, sizeof http_port, "%s", colon + 1);
}

/* A connection to the server, which may still be starting. */
static int http_connect_waiting(void)
{
	int fd;
	while ((fd = http_try_connect()) < 0) {
		check_deadline("connecting");
		if (O.pid > 0 && kill(O.pid, 0) != 0)
			fatal("the server (pid %d) is gone", (int)O.pid);
		usleep(20000);
	}
	return fd;
}

/* initialize and notifications/initialized on fd; the session id goes to
 * sid[sidsz]. */
static void http_initialize(int fd, char *sid, size_t sidsz)
{
	struct buf in = { 0 };
	struct hresp r;
	memset(&r, 0, sizeof r);
	char init[256];
	snprintf(init, sizeof init,
		 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"initialize\",\"params\":{"
		 "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{"
		 "\"name\":\"libmcp-loadgen\",\"version\":\"1\"}}}",
		 HANDSHAKE_ID, O.protocol);
	http_session[0] = 0;
	http_post_blocking(fd, init, &in, &r);
	if (r.status != 200 || body_find_answer(&r, HANDSHAKE_ID) != 1)
		fatal("HTTP initialize failed: %d %.*s", r.status, (int)r.body.len, r.body.p);
	if (!r.session || r.session_len >= sidsz || r.session_len >= sizeof http_session)
		fatal("HTTP initialize: no Mcp-Session-Id");
	memcpy(http_session, r.session, r.session_len);
	http_session[r.session_len] = 0;
	http_post_blocking(fd, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
			   &in, &r);
	if (r.status != 202 && r.status != 200)
		fatal("notifications/initialized: HTTP %d", r.status);
	if (sid != http_session)
		snprintf(sid, sidsz, "%s", http_session);
	free(in.p);
	free(r.body.p);
}

static int run_http(void)
{
	http_target();
	/* Initialize on a connection of its own, keep the session id (not in
	 * stateless mode, where every request stands alone). */
	int fd = http_connect_waiting();
	if (!O.stateless)
		http_initialize(fd, http_session, sizeof http_session);
	close(fd);

	struct hconn *c = calloc((size_t)O.window, sizeof *c);
	struct pollfd *p = calloc((size_t)O.window, sizeof *p);
	if (!c || !p)
		fatal("out of memory");
	for (long i = 0; i < O.window; i++) {
		c[i].fd = http_connect();
		set_nonblock(c[i].fd);
	}
	h_total = O.warmup + O.requests;
	if (O.warmup == 0)
		stats_begin(&h_st, O.pid);
	for (long i = 0; i < O.window && h_sent < h_total; i++)
		hconn_start(&c[i]);
	while (h_done < h_total) {
		check_deadline("waiting for HTTP answers");
		for (long i = 0; i < O.window; i++) {
			p[i].fd = c[i].busy ? c[i].fd : -1;
			p[i].events = (short)(buf_pending(&c[i].out) ? POLLOUT : POLLIN);
			p[i].revents = 0;
		}
		int pr = poll(p, (nfds_t)O.window, 100);
		if (pr < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		uint64_t now = now_ns();
		for (long i = 0; pr > 0 && i < O.window; i++) {
			if (!p[i].revents)
				continue;
			if (buf_pending(&c[i].out)) {
				ssize_t w = write(c[i].fd, c[i].out.p + c[i].out.off,
						  buf_pending(&c[i].out));
				if (w > 0)
					c[i].out.off += (size_t)w;
				else if (w < 0 && errno != EAGAIN && errno != EINTR)
					fatal("HTTP write: %s", strerror(errno));
				continue;
			}
			hconn_read(&c[i], now);
			if (!c[i].busy && h_sent < h_total)
				hconn_start(&c[i]);
		}
	}
	char extra[96];
	snprintf(extra, sizeof extra, "http_mode=%s reconnects=%ld",
		 h_sse_seen && h_json_seen ? "mixed" : h_sse_seen ? "sse" : "json", h_reconnects);
	stats_print(&h_st, "http", extra, O.pid);
	for (long i = 0; i < O.window; i++) {
		close(c[i].fd);
		free(c[i].out.p);
		free(c[i].in.p);
		free(c[i].r.body.p);
	}
	free(c);
	free(p);
	free(h_st.lat);
	return 0;
}

/* ---- HTTP at scale: idle sessions, GET streams, a broadcast ---------------- */

/* Threads of a process (/proc/PID/status), or -1. */
static long proc_threads(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* One connection opening sessions one after another. */
struct sconn {
	int fd;
	int state;              /* 0 idle, 1 initialize sent, 2 initialized sent */
	struct buf out, in;
	struct hresp r;
	char sid[80];
};

static void sconn_send(struct sconn *c, const char *body, const char *sid)
{
	buf_clear(&c->out);
	buf_addf(&c->out,
		 "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
		 "Accept: application/json, text/event-stream\r\n",
		 O.path, http_host, http_port);
	if (sid)
		buf_addf(&c->out, "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", sid,
			 O.protocol);
	buf_addf(&c->out, "Content-Length: %zu\r\n\r\n", strlen(body));
	buf_adds(&c->out, body);
}

/* Opens `n` sessions over `k` connections at once (initialize, then
 * initialized); calls got(sid, arg) for each. */
static void open_sessions(long n, long k, void (*got)(const char *sid, void *arg), void *arg)
{
	char init[320];
	snprintf(init, sizeof init,
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		 "\"protocolVersion\":\"%s\",\"capabilities\":{\"roots\":{\"listChanged\":true},"
		 "\"sampling\":{}},\"clientInfo\":{\"name\":\"libmcp-loadgen\",\"version\":\"1\"}}}",
		 O.protocol);
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	struct sconn *c = calloc((size_t)k, sizeof *c);
	struct pollfd *p = calloc((size_t)k, sizeof *p);
	if (!c || !p)
		fatal("out of memory");
	long started = 0, done = 0;
	for (long i = 0; i < k; i++) {
		c[i].fd = http_connect_waiting();
		set_nonblock(c[i].fd);
	}
	while (done < n) {
		check_deadline("opening sessions");
		for (long i = 0; i < k; i++) {
			if (c[i].state == 0 && started < n) {
				sconn_send(&c[i], init, NULL);
				c[i].state = 1;
				started++;
			}
			p[i].fd = c[i].state ? c[i].fd : -1;
			p[i].events = (short)(buf_pending(&c[i].out) ? POLLOUT : POLLIN);
			p[i].revents = 0;
		}
		if (poll(p, (nfds_t)k, 1000) < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno));
		for (long i = 0; i < k; i++) {
			struct sconn *x = &c[i];
			if (!p[i].revents)
				continue;
			if (buf_pending(&x->out)) {
				ssize_t w = write(x->fd, x->out.p + x->out.off, buf_pending(&x->out));
				if (w > 0)
					x->out.off += (size_t)w;
				else if (w < 0 && errno != EAGAIN && errno != EINTR)
					fatal("HTTP write: %s", strerror(errno));
				continue;
			}
			buf_reserve(&x->in, 65536);
			ssize_t rn = read(x->fd, x->in.p + x->in.len, x->in.cap - x->in.len);
			if (rn == 0 || (rn < 0 && errno != EAGAIN && errno != EINTR))
				fatal("HTTP read: %s", rn < 0 ? strerror(errno) : "connection closed");
			if (rn < 0)
				continue;
			x->in.len += (size_t)rn;
			int pr = http_parse(x->in.p, x->in.len, &x->r);
			if (pr < 0)
				fatal("malformed HTTP response");
			if (pr == 0)
				continue;
			if (x->state == 1) {
				if (x->r.status != 200 || !x->r.session ||
				    x->r.session_len >= sizeof x->sid)
					fatal("initialize %ld: HTTP %d %.*s", started, x->r.status,
					      (int)x->r.body.len, x->r.body.p ? x->r.body.p : "");
				memcpy(x->sid, x->r.session, x->r.session_len);
				x->sid[x->r.session_len] = 0;
				buf_clear(&x->in);
				sconn_send(x, initialized, x->sid);
				x->state = 2;
			} else {
				if (x->r.status != 202)
					fatal("initialized: HTTP %d", x->r.status);
				buf_clear(&x->in);
				x->state = 0;
				done++;
				if (got)
					got(x->sid, arg);
			}
		}
	}
	for (long i = 0; i < k; i++) {
		close(c[i].fd);
		free(c[i].out.p);
		free(c[i].in.p);
		free(c[i].r.body.p);
	}
	free(c);
	free(p);
}

/* http-idle: O.sessions sessions, opened and left idle; what they cost. */
static int run_http_idle(void)
{
	http_target();
	if (O.pid <= 0)
		fatal("http-idle needs --pid");
	close(http_connect_waiting());
	usleep(200000);
	long th0 = proc_threads(O.pid), rss0, hwm;
	proc_mem_kb(O.pid, &rss0, &hwm);
	uint64_t t0 = now_ns();
	open_sessions(O.sessions, O.window, NULL, NULL);
	double secs = (double)(now_ns() - t0) / 1e9;
	usleep((useconds_t)O.settle_ms * 1000);
	long th1 = proc_threads(O.pid), rss1;
	proc_mem_kb(O.pid, &rss1, &hwm);
	printf("RESULT kind=http-idle label=%s sessions=%ld threads_before=%ld threads_after=%ld "
	       "rss_before_kb=%ld rss_after_kb=%ld bytes_per_session=%.0f open_per_s=%.0f\n",
	       O.label, O.sessions, th0, th1, rss0, rss1,
	       (double)(rss1 - rss0) * 1024.0 / (double)O.sessions, (double)O.sessions / secs);
	printf("# %ld idle sessions: threads %ld -> %ld, RSS %ld -> %ld KiB (%.0f bytes each)\n",
	       O.sessions, th0, th1, rss0, rss1, (double)(rss1 - rss0) * 1024.0 / (double)O.sessions);
	return 0;
}

/* http-streams: O.sessions sessions each holding a GET stream; what they
 * cost, then how long notifications/tools/list_changed takes to reach each
 * stream after a tool is added (test_trigger_tool_change, from the moment
 * its POST is written). */
struct stream_set {
	char (*sids)[80];
	long n;
};

static void keep_sid(const char *sid, void *arg)
{
	struct stream_set *ss = arg;
	snprintf(ss->sids[ss->n++], 80, "%s", sid);
}

static int run_http_streams(void)
{
	http_target();
	if (O.pid <= 0)
		fatal("http-streams needs --pid");
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	long n = O.sessions;
	close(http_connect_waiting());
	usleep(200000);
	long th0 = proc_threads(O.pid), rss0, hwm;
	proc_mem_kb(O.pid, &rss0, &hwm);
	struct stream_set ss = { calloc((size_t)n, 80), 0 };
	int *fds = calloc((size_t)n, sizeof *fds);
	struct buf *in = calloc((size_t)n, sizeof *in);
	uint64_t *arrived = calloc((size_t)n, sizeof *arrived);
	if (!ss.sids || !fds || !in || !arrived)
		fatal("out of memory");
	open_sessions(n, O.window, keep_sid, &ss);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	for (long i = 0; i < n; i++) {
		fds[i] = http_connect();
		struct buf g = { 0 };
		buf_addf(&g,
			 "GET %s HTTP/1.1\r\nHost: %s:%s\r\nAccept: text/event-stream\r\n"
			 "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n",
			 O.path, http_host, http_port, ss.sids[i], O.protocol);
		if (write(fds[i], g.p, g.len) != (ssize_t)g.len)
			fatal("GET write: %s", strerror(errno));
		free(g.p);
		set_nonblock(fds[i]);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
	}
	/* Every stream's response head (200) must be in before the change. */
	long heads = 0;
	struct epoll_event evs[256];
	while (heads < n) {
		check_deadline("opening GET streams");
		int k = epoll_wait(ep, evs, 256, 1000);
		for (int j = 0; j < k; j++) {
			long i = (long)evs[j].data.u64;
			buf_reserve(&in[i], 4096);
			ssize_t rn = read(fds[i], in[i].p + in[i].len, in[i].cap - in[i].len);
			if (rn <= 0)
				continue;
			int had = memmem(in[i].p, in[i].len, "\r\n\r\n", 4) != NULL;
			in[i].len += (size_t)rn;
			if (!had && memmem(in[i].p, in[i].len, "\r\n\r\n", 4)) {
				if (in[i].len < 12 || strncmp(in[i].p + 9, "200", 3) != 0)
					fatal("GET stream %ld: %.*s", i, (int)(in[i].len < 80 ? in[i].len : 80),
					      in[i].p);
				heads++;
			}
		}
	}
	usleep((useconds_t)O.settle_ms * 1000);
	long th1 = proc_threads(O.pid), rss1;
	proc_mem_kb(O.pid, &rss1, &hwm);
	/* The change. */
	int tfd = http_connect();
	snprintf(http_session, sizeof http_session, "%s", ss.sids[0]);
	struct buf tin = { 0 };
	struct hresp tr;
	memset(&tr, 0, sizeof tr);
	uint64_t t0 = now_ns();
	http_post_blocking(tfd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
			   "{\"name\":\"test_trigger_tool_change\",\"arguments\":{}}}", &tin, &tr);
	if (tr.status != 200 || body_find_answer(&tr, 7) != 1)
		fatal("test_trigger_tool_change: HTTP %d %.*s", tr.status, (int)tr.body.len, tr.body.p);
	long got = 0;
	static const char needle[] = "notifications/tools/list_changed";
	for (long i = 0; i < n; i++)
		if (memmem(in[i].p, in[i].len, needle, sizeof needle - 1)) {
			arrived[i] = now_ns();
			got++;
		}
	while (got < n) {
		check_deadline("waiting for list_changed on every stream");
		int k = epoll_wait(ep, evs, 256, 1000);
		uint64_t now = now_ns();
		for (int j = 0; j < k; j++) {
			long i = (long)evs[j].data.u64;
			buf_reserve(&in[i], 4096);
			ssize_t rn = read(fds[i], in[i].p + in[i].len, in[i].cap - in[i].len);
			if (rn <= 0)
				continue;
			in[i].len += (size_t)rn;
			if (!arrived[i] && memmem(in[i].p, in[i].len, needle, sizeof needle - 1)) {
				arrived[i] = now;
				got++;
			}
		}
	}
	for (long i = 0; i < n; i++)
		arrived[i] -= t0;
	qsort(arrived, (size_t)n, sizeof *arrived, cmp_u64);
	double p50 = pct_us(arrived, (size_t)n, 0.5) / 1000, p99 = pct_us(arrived, (size_t)n, 0.99) / 1000;
	double mx = (double)arrived[n - 1] / 1e6;
	printf("RESULT kind=http-streams label=%s streams=%ld threads_before=%ld threads_after=%ld "
	       "rss_before_kb=%ld rss_after_kb=%ld bytes_per_stream=%.0f broadcast_p50_ms=%.2f "
	       "broadcast_p99_ms=%.2f broadcast_max_ms=%.2f\n",
	       O.label, n, th0, th1, rss0, rss1, (double)(rss1 - rss0) * 1024.0 / (double)n, p50,
	       p99, mx);
	printf("# %ld GET streams: threads %ld -> %ld; list_changed on every one: p50 %.2f ms, p99 "
	       "%.2f ms, max %.2f ms\n", n, th0, th1, p50, p99, mx);
	close(tfd);
	for (long i = 0; i < n; i++) {
		close(fds[i]);
		free(in[i].p);
	}
	close(ep);
	free(tin.p);
	free(tr.body.p);
	free(ss.sids);
	free(fds);
	free(in);
	free(arrived);
	return 0;
}

/* Prints a TCP port of 127.0.0.1 that was free a moment ago. */
static int run_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		fatal("no free port: %s", strerror(errno));
	printf("%d\n", ntohs(a.sin_port));
	close(fd);
	return 0;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fputs("usage: loadgen stdio  [OPTIONS] -- SERVER [ARGS...]   throughput and latency\n"
	      "       loadgen http   [OPTIONS] HOST:PORT             the same over HTTP\n"
	      "       loadgen http-idle -n SESSIONS --pid PID HOST:PORT   threads and memory of\n"
	      "                                                      idle sessions\n"
	      "       loadgen http-streams -n STREAMS --pid PID HOST:PORT   the same with a GET\n"
	      "                                                      stream each, then a broadcast\n"
	      "       loadgen close  [OPTIONS] -- SERVER [ARGS...]   EOF to exit, W handlers blocked\n"
	      "       loadgen cancel [OPTIONS] -- SERVER [ARGS...]   cancel to handler (needs --trace)\n"
	      "       loadgen memory [OPTIONS] -- SERVER [ARGS...]   RSS idle and with Q queued\n"
	      "       loadgen ping   [OPTIONS] -- SERVER [ARGS...]   ping round trips from idle\n"
	      "       loadgen has-tool NAME -- SERVER [ARGS...]      exit 0 if tools/list has NAME\n"
	      "       loadgen free-port                              a free port of 127.0.0.1\n"
	      "options:\n"
	      "  -t, --tool NAME       tool to call (echo)\n"
	      "  -a, --args JSON       its arguments ({\"text\":\"hello\"})\n"
	      "  -w, --window W        requests in flight (stdio), blocked handlers (close; the\n"
	      "                        server needs as many workers) or connections (http) (1)\n"
	      "  -n, --requests N      measured requests; close: runs; cancel: cancels (10000)\n"
	      "      --warmup N        unmeasured requests first (N/10, at most 2000)\n"
	      "      --duration-ms MS  stdio, http: stop sending after MS of measuring (N caps)\n"
	      "      --queue Q         memory: requests to queue (10000)\n"
	      "      --expect-requests close: wait until W server-to-client requests arrived\n"
	      "      --settle-ms MS    close, cancel, ping: pause before EOF, each cancel or ping (50)\n"
	      "      --pid PID         http: the server's pid, for its CPU time and memory\n"
	      "      --stateless       http: no session; every POST stands alone\n"
	      "      --path PATH       http: the endpoint (/mcp)\n"
	      "      --protocol VER    protocolVersion to ask for (2025-06-18)\n"
	      "      --label TEXT      names the run in the output (-)\n"
	      "      --timeout-ms MS   give up after MS (120000)\n"
	      "Prints one 'RESULT key=value...' line and a '# ' line for people.\n",
	      f);
}

static long num_arg(const char *s, long lo, long hi, const char *name)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		fatal("bad %s: %s", name, s);
	return v;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	O.cmd = argv[1];
	if (strcmp(O.cmd, "free-port") == 0)
		return run_free_port();
	int i = 2;
	if (strcmp(O.cmd, "has-tool") == 0 && i < argc)
		O.target = argv[i++];
	for (; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--") == 0) {
			O.argv = argv + i + 1;
			break;
		} else if ((!strcmp(a, "-t") || !strcmp(a, "--tool")) && v) {
			O.tool = v;
		} else if ((!strcmp(a, "-a") || !strcmp(a, "--args")) && v) {
			O.args = v;
		} else if ((!strcmp(a, "-w") || !strcmp(a, "--window")) && v) {
			O.window = num_arg(v, 1, RING / 2, a);
		} else if ((!strcmp(a, "-n") || !strcmp(a, "--requests")) && v) {
			O.requests = num_arg(v, 1, 100000000, a);
		} else if (!strcmp(a, "--warmup") && v) {
			O.warmup = num_arg(v, 0, 100000000, a);
		} else if (!strcmp(a, "--duration-ms") && v) {
			O.duration_ms = num_arg(v, 1, 86400000, a);
		} else if (!strcmp(a, "--queue") && v) {
			O.queue = num_arg(v, 1, 10000000, a);
		} else if (!strcmp(a, "--settle-ms") && v) {
			O.settle_ms = num_arg(v, 0, 60000, a);
		} else if (!strcmp(a, "--pid") && v) {
			O.pid = (pid_t)num_arg(v, 1, 1L << 30, a);
		} else if (!strcmp(a, "--path") && v) {
			O.path = v;
		} else if (!strcmp(a, "--protocol") && v) {
			O.protocol = v;
		} else if (!strcmp(a, "--label") && v) {
			O.label = v;
		} else if (!strcmp(a, "--timeout-ms") && v) {
			O.timeout_ms = num_arg(v, 1, 86400000, a);
		} else if (!strcmp(a, "--expect-requests")) {
			O.expect_requests = 1;
			continue;
		} else if (!strcmp(a, "--stateless")) {
			O.stateless = 1;
			continue;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] != '-' && !O.target && strncmp(O.cmd, "http", 4) == 0) {
			O.target = a;
			continue;
		} else {
			usage(stderr);
			return 2;
		}
		i++; /* the option's value */
	}
	if (!O.args)
		O.args = strcmp(O.tool, "echo") == 0 ? "{\"text\":\"hello\"}" : "{}";
	if (O.warmup < 0)
		O.warmup = O.requests / 10 < 2000 ? O.requests / 10 : 2000;
	signal(SIGPIPE, SIG_IGN);
	deadline_ns = now_ns() + (uint64_t)O.timeout_ms * 1000000u;
	build_request_template();

	int is_http = strncmp(O.cmd, "http", 4) == 0;
	if (is_http ? !O.target : !O.argv || !O.argv[0]) {
		usage(stderr);
		return 2;
	}
	O.sessions = O.requests;
	if (!strcmp(O.cmd, "http-idle"))
		return run_http_idle();
	if (!strcmp(O.cmd, "http-streams"))
		return run_http_streams();
	if (is_http)
		return run_http();
	if (!strcmp(O.cmd, "stdio"))
		return run_stdio();
	if (!strcmp(O.cmd, "close"))
		return run_close();
	if (!strcmp(O.cmd, "cancel"))
		return run_cancel();
	if (!strcmp(O.cmd, "memory"))
		return run_memory();
	if (!strcmp(O.cmd, "ping"))
		return run_ping();
	if (!strcmp(O.cmd, "has-tool") && O.target)
		return run_has_tool();
	usage(stderr);
	return 2;
}
