/*
 * task-bench.c - what a shared store costs a 2026-07-28 task, measured from
 * the client over Streamable HTTP (make bench, the store rows).
 *
 *   task-bench get    --url H:P [-c CONNS] [--duration-ms MS]
 *       one task created, then tasks/get for it as fast as CONNS keep-alive
 *       connections can ask, one request in flight each: requests/second
 *   task-bench create --url H:P [-n N]
 *       N times: a tools/call of slow_compute (0 s) that becomes a task,
 *       then tasks/get until it is completed: microseconds per task, p50
 *   task-bench notify --url H:P --listen H:P [-n N]
 *       a subscriptions/listen stream (toolsListChanged) held by the
 *       second server; N times a test_trigger_tool_change on the first,
 *       timed until the notification arrives on the stream: p50 and p99
 *
 * Prints one line "RESULT kind=task-MODE label=LABEL key=value..." (the
 * format of loadgen, which bench/run.sh reads) and exits 0, or
 * says what failed and exits 1.  Blocking sockets and one thread per
 * connection: the server, not this client, is what is measured, and the
 * same client measures both stores.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define META                                                                        \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","       \
	"\"io.modelcontextprotocol/clientInfo\":{\"name\":\"task-bench\",\"version\":\"1\"}," \
	"\"io.modelcontextprotocol/clientCapabilities\":{\"extensions\":"              \
	"{\"io.modelcontextprotocol/tasks\":{}}}}"

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("task-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void parse_addr(const char *s, struct sockaddr_in *a)
{
	char host[64];
	int port;
	if (sscanf(s, "%63[^:]:%d", host, &port) != 2)
		die("bad address %s (HOST:PORT)", s);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		die("bad host %s (an IPv4 address)", host);
}

/* A connection to a; a server just started may take a moment to listen
 * (tried for up to 10 s). */
static int dial(const struct sockaddr_in *a)
{
	for (int tries = 0;; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket: %s", strerror(errno));
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (connect(fd, (const struct sockaddr *)a, sizeof *a) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (e != ECONNREFUSED || tries >= 1000)
			die("connect: %s", strerror(e));
		usleep(10000);
	}
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			die("send: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* A connection's read buffer. */
typedef struct conn {
	int fd;
	char buf[1 << 16];
	size_t have;
} conn;

/* Sends one POST of `body` (method and name for the routing headers). */
static void post(conn *c, const char *method, const char *name, const char *body, const char *accept)
{
	/* Head and body in one write: one segment, no wait on a delayed
	 * acknowledgement between them. */
	char req[4096];
	int n = snprintf(req, sizeof req,
			 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
			 "Accept: %s\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: %s\r\n"
			 "%s%s%sContent-Length: %zu\r\n\r\n%s",
			 accept, method, name ? "Mcp-Name: " : "", name ? name : "", name ? "\r\n" : "",
			 strlen(body), body);
	if (n < 0 || (size_t)n >= sizeof req)
		die("a request larger than %zu bytes", sizeof req);
	send_all(c->fd, req, (size_t)n);
}

static void fill(conn *c)
{
	if (c->have == sizeof c->buf)
		die("a response larger than %zu bytes", sizeof c->buf);
	ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
	if (r <= 0)
		die("the server closed the connection");
	c->have += (size_t)r;
}

/* Reads one response with a Content-Length into out (NUL-terminated). */
static void response(conn *c, char *out, size_t cap)
{
	char *end;
	while (!(end = memmem(c->buf, c->have, "\r\n\r\n", 4)))
		fill(c);
	size_t head = (size_t)(end - c->buf) + 4;
	c->buf[head - 1] = '\0';
	if (strncmp(c->buf, "HTTP/1.1 200", 12) != 0)
		die("status: %.40s", c->buf);
	char *cl = strcasestr(c->buf, "Content-Length:");
	if (!cl)
		die("a response without Content-Length: %.200s", c->buf);
	size_t len = strtoul(cl + 15, NULL, 10);
	while (c->have < head + len)
		fill(c);
	size_t n = len < cap - 1 ? len : cap - 1;
	memcpy(out, c->buf + head, n);
	out[n] = '\0';
	memmove(c->buf, c->buf + head + len, c->have - head - len);
	c->have -= head + len;
}

static char *create_task(conn *c, char *id, size_t idcap)
{
	static _Atomic long rid;
	char body[1024], res[8192];
	snprintf(body, sizeof body,
		 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
		 "{\"name\":\"slow_compute\",\"arguments\":{\"seconds\":0}," META "}}",
		 ++rid);
	post(c, "tools/call", "slow_compute", body, "application/json");
	response(c, res, sizeof res);
	char *t = strstr(res, "\"taskId\":\"");
	if (!t || sscanf(t + 10, "%127[^\"]", id) != 1 || strlen(id) >= idcap)
		die("not a task: %.300s", res);
	return id;
}

/* tasks/get once; 1 when the task is completed. */
static int get_task(conn *c, const char *id)
{
	char body[1024], res[8192];
	snprintf(body, sizeof body,
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tasks/get\",\"params\":"
		 "{\"taskId\":\"%s\"," META "}}",
		 id);
	post(c, "tasks/get", id, body, "application/json");
	response(c, res, sizeof res);
	if (!strstr(res, "\"status\":"))
		die("tasks/get: %.300s", res);
	return strstr(res, "\"status\":\"completed\"") != NULL;
}

static struct sockaddr_in server, listener;
static char the_task[128];
static int64_t stop_at;
static _Atomic long done_gets;

static void *getter(void *arg)
{
	(void)arg;
	conn *c = calloc(1, sizeof *c);
	c->fd = dial(&server);
	long n = 0;
	while (now_us() < stop_at) {
		get_task(c, the_task);
		n++;
	}
	done_gets += n;
	close(c->fd);
	free(c);
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- notify: the listen stream's reader ------------------------------------ */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long heard;

static void *stream_reader(void *arg)
{
	conn *c = arg;
	size_t scanned = 0;
	for (;;) {
		ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
		if (r <= 0)
			return NULL;
		c->have += (size_t)r;
		const char *needle = "notifications/tools/list_changed";
		char *p = c->buf + (scanned > 40 ? scanned - 40 : 0);
		while ((p = memmem(p, c->have - (size_t)(p - c->buf), needle, strlen(needle)))) {
			pthread_mutex_lock(&mu);
			heard++;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
			p += strlen(needle);
		}
		/* Keep a tail for a name split over two reads. */
		if (c->have > 4096) {
			memmove(c->buf, c->buf + c->have - 64, 64);
			c->have = 64;
		}
		scanned = c->have;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage: task-bench get|create|notify --url H:P [--listen H:P] [-n N] [-c CONNS] "
		    "[--duration-ms MS] [--label LABEL]");
	const char *mode = argv[1], *url = NULL, *lurl = NULL, *label = "-";
	long n = 200, conns = 4, duration_ms = 1500;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--url"))
			url = argv[i + 1];
		else if (!strcmp(argv[i], "--listen"))
			lurl = argv[i + 1];
		else if (!strcmp(argv[i], "-n"))
			n = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "-c"))
			conns = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--duration-ms"))
			duration_ms = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--label"))
			label = argv[i + 1];
		else
			die("unknown option %s", argv[i]);
	}
	if (!url || n < 1 || conns < 1 || conns > 256)
		die("--url is required; -n and -c must be positive");
	parse_addr(url, &server);
	conn *c = calloc(1, sizeof *c);
	c->fd = dial(&server);

	if (!strcmp(mode, "get")) {
		create_task(c, the_task, sizeof the_task);
		for (int i = 0; i < 200 && !get_task(c, the_task); i++)
			usleep(5000);
		stop_at = now_us() + duration_ms * 1000;
		int64_t t0 = now_us();
		pthread_t th[256];
		for (long i = 0; i < conns; i++)
			pthread_create(&th[i], NULL, getter, NULL);
		for (long i = 0; i < conns; i++)
			pthread_join(th[i], NULL);
		double secs = (double)(now_us() - t0) / 1e6;
		printf("RESULT kind=task-get label=%s rps=%.0f conns=%ld\n", label,
		       (double)done_gets / secs, conns);
	} else if (!strcmp(mode, "create")) {
		int64_t *lat = calloc((size_t)n, sizeof *lat);
		for (long i = 0; i < n; i++) {
			char id[128];
			int64_t t0 = now_us();
			create_task(c, id, sizeof id);
			while (!get_task(c, id))
				;
			lat[i] = now_us() - t0;
		}
		qsort(lat, (size_t)n, sizeof *lat, cmp64);
		printf("RESULT kind=task-create label=%s p50_us=%lld p99_us=%lld n=%ld\n", label,
		       (long long)lat[n / 2], (long long)lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
		       n);
		free(lat);
	} else if (!strcmp(mode, "notify")) {
		if (!lurl)
			die("notify needs --listen H:P");
		parse_addr(lurl, &listener);
		conn *s = calloc(1, sizeof *s);
		s->fd = dial(&listener);
		post(s, "subscriptions/listen", NULL,
		     "{\"jsonrpc\":\"2.0\",\"id\":\"L\",\"method\":\"subscriptions/listen\",\"params\":"
		     "{\"notifications\":{\"toolsListChanged\":true}," META "}}",
		     "application/json, text/event-stream");
		/* The acknowledgement first: the stream is open. */
		while (!memmem(s->buf, s->have, "acknowledged", 12))
			fill(s);
		s->have = 0;
		pthread_t rt;
		pthread_create(&rt, NULL, stream_reader, s);
		int64_t *lat = calloc((size_t)n, sizeof *lat);
		char body[512], res[8192];
		for (long i = 0; i < n; i++) {
			pthread_mutex_lock(&mu);
			long before = heard;
			pthread_mutex_unlock(&mu);
			snprintf(body, sizeof body,
				 "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
				 "{\"name\":\"test_trigger_tool_change\",\"arguments\":{}," META "}}",
				 i + 1);
			int64_t t0 = now_us();
			post(c, "tools/call", "test_trigger_tool_change", body, "application/json");
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 10;
			pthread_mutex_lock(&mu);
			while (heard == before)
				if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT)
					die("change %ld never reached the listen stream", i + 1);
			pthread_mutex_unlock(&mu);
			lat[i] = now_us() - t0;
			response(c, res, sizeof res);
		}
		qsort(lat, (size_t)n, sizeof *lat, cmp64);
		printf("RESULT kind=task-notify label=%s p50_us=%lld p99_us=%lld n=%ld\n", label,
		       (long long)lat[n / 2],
		       (long long)lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], n);
		free(lat);
		close(s->fd); /* the reader ends with the stream; not joined */
	} else {
		die("unknown mode %s (get, create or notify)", mode);
	}
	close(c->fd);
	free(c);
	return 0;
}
