/*
 * test_store.c - the state store's contract (transport/store.h), the same
 * tests against every backend: memory, and Redis through a TCP URL and a
 * Unix socket, each a redis-server this test starts on its own (a Unix
 * socket in a scratch directory, or a free loopback port).  Then what only
 * a separate store can do: fail.  A Redis killed, stopped or restarted
 * empty must give clear errors, never a hang or a crash, and service must
 * come back by itself.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/runner.h"
#include "transport/store.h"

/* ---- a redis-server of the test's own ---------------------------------- */

typedef struct redis_proc {
	pid_t pid;
	char dir[64];
	char sock[96];
	int port;
} redis_proc;

static int have_redis_server(void)
{
#ifdef HAVE_HIREDIS
	return system("command -v redis-server >/dev/null 2>&1") == 0;
#else
	return 0;
#endif
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof a;
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &n), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* Starts redis-server on p->sock (and on p->port when > 0), with a
 * password when pw is given, and waits until it accepts a command. */
static void redis_start(redis_proc *p, const char *pw)
{
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid == 0) {
		char port[16];
		snprintf(port, sizeof port, "%d", p->port);
		const char *argv[16] = { "redis-server", "--port", port, "--bind", "127.0.0.1",
					 "--unixsocket", p->sock, "--save", "", "--appendonly", "no",
					 "--loglevel", "warning" };
		int n = 13;
		if (pw) {
			argv[n++] = "--requirepass";
			argv[n++] = pw;
		}
		argv[n] = NULL;
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		execvp("redis-server", (char *const *)argv);
		_exit(127);
	}
	/* Ready when its socket answers: a bounded wait, not a timing
	 * assumption (a slow start only waits longer). */
	char url[160];
	snprintf(url, sizeof url, "unix:%s%s%s", p->sock, pw ? "?password=" : "", pw ? pw : "");
	for (int i = 0; i < 600; i++) {
		tp_store *s;
		char err[256];
		if (tp_store_open(url, NULL, &s, err, sizeof err) == TP_STORE_OK) {
			char *v;
			size_t len;
			uint64_t ver;
			int rc = tp_store_get(s, "probe", &v, &len, &ver);
			tp_store_close(s);
			if (rc == TP_STORE_ENOENT)
				return;
		}
		usleep(50000);
	}
	ck_abort_msg("redis-server did not start on %s", p->sock);
}

static void redis_new(redis_proc *p, int tcp, const char *pw)
{
	memset(p, 0, sizeof *p);
	snprintf(p->dir, sizeof p->dir, "/tmp/mcp-store-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(p->dir));
	snprintf(p->sock, sizeof p->sock, "%s/redis.sock", p->dir);
	p->port = tcp ? free_port() : 0;
	redis_start(p, pw);
}

static void redis_kill(redis_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

static void redis_end(redis_proc *p)
{
	redis_kill(p);
	unlink(p->sock);
	rmdir(p->dir);
}

/* ---- the backend under test -------------------------------------------- */

enum { B_MEMORY, B_REDIS_UNIX, B_REDIS_TCP, B_COUNT };
static const char *const backend_names[] = { "memory", "redis-unix", "redis-tcp" };

static redis_proc server;
static char url[256];

/* The store of backend `_i`, fresh: its own key prefix per test keeps
 * tests independent on one redis-server. */
static tp_store *open_store(int b, const char *test)
{
	if (b == B_MEMORY)
		snprintf(url, sizeof url, "memory:");
	else if (b == B_REDIS_UNIX)
		snprintf(url, sizeof url, "unix:%s", server.sock);
	else
		snprintf(url, sizeof url, "redis://127.0.0.1:%d/2", server.port);
	char prefix[96];
	snprintf(prefix, sizeof prefix, "test:%d:%s:", (int)getpid(), test);
	tp_store_opts o = { .struct_size = sizeof o, .prefix = prefix, .command_timeout_ms = 5000 };
	tp_store *s = NULL;
	char err[256];
	int rc = tp_store_open(url, &o, &s, err, sizeof err);
	ck_assert_msg(rc == TP_STORE_OK, "open %s: %s", url, err);
	return s;
}

static void setup(void)
{
	if (have_redis_server())
		redis_new(&server, 1, NULL);
}

static void teardown(void)
{
	redis_end(&server);
}

/* The Redis rows of a loop test skip (as one line) without redis-server. */
#define NEED_BACKEND(b)                                                           \
	do {                                                                      \
		if ((b) != B_MEMORY && !have_redis_server()) {                    \
			fprintf(stderr, "%s: no redis-server, %s not run\n", __func__, \
				backend_names[b]);                                \
			return;                                                   \
		}                                                                 \
	} while (0)

START_TEST(records_create_get_cas_del)
{
	NEED_BACKEND(_i);
	tp_store *s = open_store(_i, "records");
	char *v;
	size_t len;
	uint64_t ver, nv = 0;
	ck_assert_int_eq(tp_store_get(s, "t1", &v, &len, &ver), TP_STORE_ENOENT);
	ck_assert_int_eq(tp_store_create(s, "t1", "one", 3, 60000), TP_STORE_OK);
	ck_assert_int_eq(tp_store_create(s, "t1", "two", 3, 60000), TP_STORE_EEXIST);
	ck_assert_int_eq(tp_store_get(s, "t1", &v, &len, &ver), TP_STORE_OK);
	ck_assert_uint_eq(len, 3);
	ck_assert_str_eq(v, "one");
	ck_assert_uint_eq(ver, 1);
	free(v);
	ck_assert_int_eq(tp_store_cas(s, "t1", ver, "three", 5, 60000, &nv), TP_STORE_OK);
	ck_assert_uint_eq(nv, 2);
	/* The loser of a race holds the old version: refused, not merged. */
	ck_assert_int_eq(tp_store_cas(s, "t1", ver, "stale", 5, 60000, &nv), TP_STORE_ESTALE);
	ck_assert_ptr_nonnull(strstr(tp_store_error(s), "changed"));
	ck_assert_int_eq(tp_store_get(s, "t1", &v, &len, &ver), TP_STORE_OK);
	ck_assert_str_eq(v, "three");
	ck_assert_uint_eq(ver, 2);
	free(v);
	ck_assert_int_eq(tp_store_del(s, "t1"), TP_STORE_OK);
	ck_assert_int_eq(tp_store_del(s, "t1"), TP_STORE_ENOENT);
	ck_assert_int_eq(tp_store_get(s, "t1", &v, &len, &ver), TP_STORE_ENOENT);
	ck_assert_int_eq(tp_store_cas(s, "t1", 2, "x", 1, 60000, &nv), TP_STORE_ENOENT);
	/* Bad arguments are refused before any backend sees them. */
	ck_assert_int_eq(tp_store_create(s, "", "x", 1, 60000), TP_STORE_EINVAL);
	ck_assert_int_eq(tp_store_create(s, "k", "x", 1, 0), TP_STORE_EINVAL);
	ck_assert_int_eq(tp_store_cas(s, "k", 0, "x", 1, 60000, &nv), TP_STORE_EINVAL);
	char longkey[600];
	memset(longkey, 'k', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	ck_assert_int_eq(tp_store_create(s, longkey, "x", 1, 60000), TP_STORE_EINVAL);
	tp_store_close(s);
}
END_TEST

START_TEST(values_are_bytes)
{
	NEED_BACKEND(_i);
	tp_store *s = open_store(_i, "bytes");
	/* NULs, every byte value, and a value of 1 MiB come back unchanged. */
	size_t n = 1 << 20;
	char *big = malloc(n);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 7 + (i >> 8));
	ck_assert_int_eq(tp_store_create(s, "big", big, n, 60000), TP_STORE_OK);
	ck_assert_int_eq(tp_store_create(s, "empty", "", 0, 60000), TP_STORE_OK);
	char *v;
	size_t len;
	uint64_t ver;
	ck_assert_int_eq(tp_store_get(s, "big", &v, &len, &ver), TP_STORE_OK);
	ck_assert_uint_eq(len, n);
	ck_assert_int_eq(memcmp(v, big, n), 0);
	ck_assert_int_eq(v[n], '\0');
	free(v);
	ck_assert_int_eq(tp_store_get(s, "empty", &v, &len, &ver), TP_STORE_OK);
	ck_assert_uint_eq(len, 0);
	free(v);
	free(big);
	tp_store_close(s);
}
END_TEST

START_TEST(records_expire_and_cas_renews)
{
	NEED_BACKEND(_i);
	tp_store *s = open_store(_i, "ttl");
	char *v;
	size_t len;
	uint64_t ver, nv;
	ck_assert_int_eq(tp_store_create(s, "short", "x", 1, 30), TP_STORE_OK);
	/* Gone within a bounded wait (a slow machine only waits longer). */
	int rc = TP_STORE_OK;
	for (int i = 0; i < 500 && rc == TP_STORE_OK; i++) {
		usleep(10000);
		rc = tp_store_get(s, "short", &v, &len, &ver);
		if (rc == TP_STORE_OK)
			free(v);
	}
	ck_assert_int_eq(rc, TP_STORE_ENOENT);
	/* An expired record can be created again, as new. */
	ck_assert_int_eq(tp_store_create(s, "short", "y", 1, 60000), TP_STORE_OK);
	ck_assert_int_eq(tp_store_get(s, "short", &v, &len, &ver), TP_STORE_OK);
	ck_assert_uint_eq(ver, 1);
	free(v);
	/* cas sets the new time to live: a lease renewed outlives its first
	 * term. */
	ck_assert_int_eq(tp_store_create(s, "lease", "owner-a", 7, 2000), TP_STORE_OK);
	ck_assert_int_eq(tp_store_cas(s, "lease", 1, "owner-a", 7, 600000, &nv), TP_STORE_OK);
	usleep(2500000);
	ck_assert_int_eq(tp_store_get(s, "lease", &v, &len, &ver), TP_STORE_OK);
	ck_assert_uint_eq(ver, 2);
	free(v);
	tp_store_close(s);
}
END_TEST

typedef struct counter_arg {
	tp_store *s;
	int rounds;
	atomic_int stale;
} counter_arg;

/* Increments the counter record `rounds` times by read, add, cas; a
 * stale cas reads again. */
static void *increment(void *p)
{
	counter_arg *a = p;
	for (int i = 0; i < a->rounds; i++) {
		for (;;) {
			char *v;
			size_t len;
			uint64_t ver, nv;
			ck_assert_int_eq(tp_store_get(a->s, "counter", &v, &len, &ver), TP_STORE_OK);
			char next[24];
			int n = snprintf(next, sizeof next, "%ld", strtol(v, NULL, 10) + 1);
			free(v);
			int rc = tp_store_cas(a->s, "counter", ver, next, (size_t)n, 60000, &nv);
			if (rc == TP_STORE_OK)
				break;
			ck_assert_int_eq(rc, TP_STORE_ESTALE);
			atomic_fetch_add(&a->stale, 1);
		}
	}
	return NULL;
}

START_TEST(cas_loses_no_update_under_contention)
{
	NEED_BACKEND(_i);
	tp_store *s = open_store(_i, "counter");
	ck_assert_int_eq(tp_store_create(s, "counter", "0", 1, 60000), TP_STORE_OK);
	enum { THREADS = 4, ROUNDS = 250 };
	counter_arg a = { .s = s, .rounds = ROUNDS };
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, increment, &a);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	char *v;
	size_t len;
	uint64_t ver;
	ck_assert_int_eq(tp_store_get(s, "counter", &v, &len, &ver), TP_STORE_OK);
	ck_assert_int_eq(atoi(v), THREADS * ROUNDS);
	ck_assert_uint_eq(ver, 1 + THREADS * ROUNDS);
	free(v);
	tp_store_close(s);
}
END_TEST

typedef struct inbox {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char got[256][32];
	int n;
	int wrong_chan;
} inbox;

static void on_msg(void *arg, const char *chan, const char *msg, size_t len)
{
	inbox *b = arg;
	pthread_mutex_lock(&b->mu);
	if (strcmp(chan, "events") != 0)
		b->wrong_chan++;
	if (b->n < 256) {
		snprintf(b->got[b->n], sizeof b->got[0], "%.*s", (int)len, msg);
		b->n++;
	}
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
}

/* Waits until the inbox holds n messages, at most 20 s (a hang guard). */
static int wait_for(inbox *b, int n)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&b->mu);
	while (b->n < n && pthread_cond_timedwait(&b->cv, &b->mu, &until) == 0)
		;
	int got = b->n;
	pthread_mutex_unlock(&b->mu);
	return got;
}

START_TEST(publish_reaches_subscribers_in_order)
{
	NEED_BACKEND(_i);
	tp_store *pub = open_store(_i, "pubsub");
	/* For Redis, a second store (another process's view) subscribes;
	 * memory channels are per store, so it listens on the publisher. */
	tp_store *sub = _i == B_MEMORY ? pub : open_store(_i, "pubsub");
	inbox b = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	ck_assert_int_eq(tp_store_subscribe(sub, "events", on_msg, &b), TP_STORE_OK);
	/* Confirmed on return: nothing published from now on is missed. */
	ck_assert_int_eq(tp_store_publish(pub, "other", "not for us", 10), TP_STORE_OK);
	for (int i = 0; i < 100; i++) {
		char m[16];
		int n = snprintf(m, sizeof m, "m%d", i);
		ck_assert_int_eq(tp_store_publish(pub, "events", m, (size_t)n), TP_STORE_OK);
	}
	ck_assert_int_eq(wait_for(&b, 100), 100);
	for (int i = 0; i < 100; i++) {
		char m[16];
		snprintf(m, sizeof m, "m%d", i);
		ck_assert_str_eq(b.got[i], m);
	}
	ck_assert_int_eq(b.wrong_chan, 0);
	if (sub != pub)
		tp_store_close(sub);
	tp_store_close(pub);
}
END_TEST

START_TEST(urls_refused_with_reasons)
{
	tp_store *s = NULL;
	char err[256];
	static const char *const bad[] = {
		"", "nosuch:x", "memory:extra", "redis:", "redis://", "redis://:pw@", "redis://h:0",
		"redis://h:70000", "redis://h:12x", "redis://h/abc", "redis://user:pw@h",
		"unix:", "unix:relative", "unix:/p?db=x", "unix:/p?colour=red",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		int rc = tp_store_open(bad[i], NULL, &s, err, sizeof err);
		ck_assert_msg(rc == TP_STORE_EINVAL, "%s: %d", bad[i], rc);
		ck_assert_ptr_null(s);
		ck_assert_msg(err[0] != '\0', "%s: no reason", bad[i]);
		ck_assert_msg(!strstr(err, "pw"), "%s: the reason shows the password: %s", bad[i], err);
	}
#ifdef HAVE_HIREDIS
	/* A valid URL opens without connecting; its name hides the password. */
	ck_assert_int_eq(tp_store_open("redis://:s3cret@127.0.0.1:1/3", NULL, &s, err, sizeof err),
			 TP_STORE_OK);
	ck_assert_str_eq(tp_store_name(s), "redis://:***@127.0.0.1:1/3");
	tp_store_close(s);
	ck_assert_int_eq(tp_store_open("unix:/run/r.sock?db=1&password=s3cret", NULL, &s, err, sizeof err),
			 TP_STORE_OK);
	ck_assert_str_eq(tp_store_name(s), "unix:/run/r.sock?db=1&password=***");
	tp_store_close(s);
#endif
}
END_TEST

/* ---- failures: Redis only ------------------------------------------------ */

static tp_store *open_fast(const char *u)
{
	tp_store_opts o = { .struct_size = sizeof o, .prefix = "fail:", .command_timeout_ms = 300,
			    .connect_timeout_ms = 300, .backoff_max_ms = 200 };
	tp_store *s = NULL;
	char err[256];
	ck_assert_msg(tp_store_open(u, &o, &s, err, sizeof err) == TP_STORE_OK, "%s", err);
	return s;
}

/* Retries get until it answers (found or not), at most 20 s. */
static int until_up(tp_store *s)
{
	int rc = TP_STORE_EDOWN;
	for (int i = 0; i < 400; i++) {
		char *v;
		size_t len;
		uint64_t ver;
		rc = tp_store_get(s, "k", &v, &len, &ver);
		if (rc == TP_STORE_OK)
			free(v);
		if (rc == TP_STORE_OK || rc == TP_STORE_ENOENT)
			break;
		usleep(50000);
	}
	return rc;
}

START_TEST(redis_killed_then_restarted_empty)
{
	if (!have_redis_server()) {
		fprintf(stderr, "no redis-server: not run\n");
		return;
	}
	redis_proc p;
	redis_new(&p, 0, "pa55word");
	snprintf(url, sizeof url, "unix:%s?password=pa55word", p.sock);
	tp_store *s = open_fast(url);
	inbox b = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	ck_assert_int_eq(tp_store_subscribe(s, "events", on_msg, &b), TP_STORE_OK);
	ck_assert_int_eq(tp_store_create(s, "k", "v", 1, 600000), TP_STORE_OK);

	redis_kill(&p);
	/* Down: each call fails at once or within its timeout, with a reason
	 * that names the store and not its password. */
	for (int i = 0; i < 50; i++) {
		char *v;
		size_t len;
		uint64_t ver;
		int rc = tp_store_get(s, "k", &v, &len, &ver);
		ck_assert_msg(rc == TP_STORE_EDOWN || rc == TP_STORE_ETIMEDOUT, "rc %d", rc);
		const char *e = tp_store_error(s);
		ck_assert_msg(strstr(e, p.sock) != NULL, "%s", e);
		ck_assert_msg(strstr(e, "pa55word") == NULL, "%s", e);
		rc = tp_store_publish(s, "events", "lost", 4);
		ck_assert(rc == TP_STORE_EDOWN || rc == TP_STORE_ETIMEDOUT);
	}

	/* Back, empty: the record is unknown, and service resumes by itself,
	 * subscriptions included. */
	redis_start(&p, "pa55word");
	ck_assert_int_eq(until_up(s), TP_STORE_ENOENT);
	int got = 0;
	for (int i = 0; i < 400 && !got; i++) {
		ck_assert_int_eq(tp_store_publish(s, "events", "again", 5), TP_STORE_OK);
		usleep(50000);
		pthread_mutex_lock(&b.mu);
		got = b.n;
		pthread_mutex_unlock(&b.mu);
	}
	ck_assert_int_gt(got, 0);
	ck_assert_str_eq(b.got[0], "again");
	tp_store_close(s);
	redis_end(&p);
}
END_TEST

START_TEST(redis_stopped_times_out_then_recovers)
{
	if (!have_redis_server()) {
		fprintf(stderr, "no redis-server: not run\n");
		return;
	}
	redis_proc p;
	redis_new(&p, 0, NULL);
	snprintf(url, sizeof url, "unix:%s", p.sock);
	tp_store *s = open_fast(url);
	ck_assert_int_eq(tp_store_create(s, "k", "v", 1, 600000), TP_STORE_OK);
	kill(p.pid, SIGSTOP);
	char *v;
	size_t len;
	uint64_t ver;
	/* A store that accepts but never answers: the command timeout ends
	 * the call. */
	ck_assert_int_eq(tp_store_get(s, "k", &v, &len, &ver), TP_STORE_ETIMEDOUT);
	ck_assert_ptr_nonnull(strstr(tp_store_error(s), "did not answer in time"));
	kill(p.pid, SIGCONT);
	ck_assert_int_eq(until_up(s), TP_STORE_OK);
	tp_store_close(s);
	redis_end(&p);
}
END_TEST

START_TEST(redis_wrong_password_is_named)
{
	if (!have_redis_server()) {
		fprintf(stderr, "no redis-server: not run\n");
		return;
	}
	redis_proc p;
	redis_new(&p, 0, "right-one");
	snprintf(url, sizeof url, "unix:%s?password=wrong-one", p.sock);
	tp_store *s = open_fast(url);
	char *v;
	size_t len;
	uint64_t ver;
	ck_assert_int_eq(tp_store_get(s, "k", &v, &len, &ver), TP_STORE_EDOWN);
	const char *e = tp_store_error(s);
	ck_assert_msg(strstr(e, "AUTH") != NULL, "%s", e);
	ck_assert_msg(strstr(e, "wrong-one") == NULL && strstr(e, "right-one") == NULL, "%s", e);
	tp_store_close(s);
	redis_end(&p);
}
END_TEST

Suite *unit_suite(void)
{
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("contract");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, records_create_get_cas_del, 0, B_COUNT);
	tcase_add_loop_test(tc, values_are_bytes, 0, B_COUNT);
	tcase_add_loop_test(tc, records_expire_and_cas_renews, 0, B_COUNT);
	tcase_add_loop_test(tc, cas_loses_no_update_under_contention, 0, B_COUNT);
	tcase_add_loop_test(tc, publish_reaches_subscribers_in_order, 0, B_COUNT);
	tcase_add_test(tc, urls_refused_with_reasons);
	suite_add_tcase(s, tc);
	TCase *tf = tcase_create("failures");
	tcase_set_timeout(tf, 120);
	tcase_add_test(tf, redis_killed_then_restarted_empty);
	tcase_add_test(tf, redis_stopped_times_out_then_recovers);
	tcase_add_test(tf, redis_wrong_password_is_named);
	suite_add_tcase(s, tf);
	return s;
}
