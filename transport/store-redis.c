/*
 * store-redis.c - the store in Redis (or Valkey), through hiredis opened at
 * run time: a process that never names a redis:// store does not map it,
 * and the package needs no dependency on it (as with libmicrohttpd and
 * libcurl, transport/mhd.h).
 *
 * Why hiredis: it is the C client Redis itself ships and Debian packages;
 * its synchronous API, with a socket timeout, fits calls made from worker
 * threads, and its reader parses the replies of the subscriber's socket,
 * which this file polls itself.
 *
 * A record is a hash {v: version, d: bytes} under PREFIX+key with a
 * PEXPIRE; create and cas are Lua scripts, so the check and the write are
 * one step on the server whichever process races.  Calls take a connection
 * from a small pool (a new one when none is idle); a connection that fails
 * is dropped, and for a back-off (50 ms doubling to backoff_max_ms) calls
 * fail at once with TP_STORE_EDOWN instead of each waiting for a connect
 * timeout.  Subscriptions share one connection read by the store's own
 * thread, which re-subscribes every channel after a reconnection; messages
 * published while it was down are lost (Redis pub/sub is at most once).
 *
 * The password is kept for AUTH and never copied into an error, a name or
 * a log.
 *
 * Lock order: r->mu (pool, back-off, subscription list) is a leaf; no
 * callback runs under it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "transport/store.h"
#include "transport/dlib.h"
#include "transport/sigpipe.h"

#define POOL_MAX 8
#define BACKOFF_MIN_MS 50

/* ---- hiredis, opened on first use ------------------------------------- */

static struct {
	__typeof__(&redisConnectWithTimeout) connect_tcp;
	__typeof__(&redisConnectUnixWithTimeout) connect_unix;
	__typeof__(&redisSetTimeout) set_timeout;
	__typeof__(&redisFree) free_ctx;
	__typeof__(&redisCommandArgv) command_argv;
	__typeof__(&redisAppendCommandArgv) append_argv;
	__typeof__(&redisBufferWrite) buffer_write;
	__typeof__(&redisBufferRead) buffer_read;
	__typeof__(&redisGetReplyFromReader) reply_from_reader;
	__typeof__(&freeReplyObject) free_reply;
} hr;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -1;

static void load(void)
{
#define SYM(field, name) { (void **)&hr.field, name }
	const tp_dlib_sym syms[] = {
		SYM(connect_tcp, "redisConnectWithTimeout"),
		SYM(connect_unix, "redisConnectUnixWithTimeout"),
		SYM(set_timeout, "redisSetTimeout"),
		SYM(free_ctx, "redisFree"),
		SYM(command_argv, "redisCommandArgv"),
		SYM(append_argv, "redisAppendCommandArgv"),
		SYM(buffer_write, "redisBufferWrite"),
		SYM(buffer_read, "redisBufferRead"),
		SYM(reply_from_reader, "redisGetReplyFromReader"),
		SYM(free_reply, "freeReplyObject"),
	};
#undef SYM
	/* hr is only read once load_rc says it is whole. */
	if (tp_dlib_open(MCP_HIREDIS_SONAME, "libhiredis.so", syms, sizeof syms / sizeof *syms))
		load_rc = 0;
}

/* ---- the backend's state ------------------------------------------------ */

typedef struct rsub {
	struct rsub *next;
	char *chan;     /* the caller's name */
	tp_store_msg_fn fn;
	void *arg;
	int sent;       /* SUBSCRIBE written on the current connection */
	int confirmed;  /* the store acknowledged it once */
} rsub;

typedef struct redis {
	char *host;     /* TCP, or NULL */
	int port;
	char *path;     /* Unix socket, or NULL */
	char *password; /* or NULL; never printed */
	int db;
	char *prefix;
	size_t prefix_len;
	struct timeval connect_tv, command_tv;
	int64_t backoff_max_ms;

	pthread_mutex_t mu;
	redisContext *idle[POOL_MAX];
	int nidle;
	int64_t down_until_ms; /* no new connection before this */
	int64_t backoff_ms;

	rsub *subs;
	pthread_cond_t sub_cv; /* a subscription confirmed */
	int sub_started, sub_stop;
	int wake[2];    /* pipe: a new channel, or the close */
	pthread_t sub_thread;
} redis;

static __thread char errbuf[256];

static int fail(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof errbuf, fmt, ap);
	va_end(ap);
	return rc;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timeval tv_ms(int64_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	return tv;
}

static const char *where(const redis *r)
{
	static __thread char buf[160];
	if (r->path)
		snprintf(buf, sizeof buf, "redis at unix:%s", r->path);
	else
		snprintf(buf, sizeof buf, "redis at %s:%d", r->host, r->port);
	return buf;
}

/* ---- URLs ---------------------------------------------------------------- */

static int parse_db(const char *s, int *db)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 0 || v > 65535)
		return -1;
	*db = (int)v;
	return 0;
}

/* Percent-decodes s[0..n) into a new string (a password may hold '@'). */
static char *unescape(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned hi, lo;
		if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%1x%1x", &hi, &lo) == 2) {
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

static redis *redis_new(const tp_store_opts *o)
{
	redis *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->port = 6379;
	r->wake[0] = r->wake[1] = -1;
	const char *prefix = o->prefix ? o->prefix : "mcp:v1:";
	r->prefix = strdup(prefix);
	r->prefix_len = strlen(prefix);
	r->connect_tv = tv_ms(o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 1000);
	r->command_tv = tv_ms(o->command_timeout_ms > 0 ? o->command_timeout_ms : 1000);
	r->backoff_max_ms = o->backoff_max_ms > 0 ? o->backoff_max_ms : 2000;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->sub_cv, NULL);
	return r;
}

static void redis_free(redis *r)
{
	for (int i = 0; i < r->nidle; i++)
		hr.free_ctx(r->idle[i]);
	while (r->subs) {
		rsub *s = r->subs;
		r->subs = s->next;
		free(s->chan);
		free(s);
	}
	if (r->wake[0] >= 0) {
		close(r->wake[0]);
		close(r->wake[1]);
	}
	pthread_cond_destroy(&r->sub_cv);
	pthread_mutex_destroy(&r->mu);
	free(r->host);
	free(r->path);
	if (r->password) {
		explicit_bzero(r->password, strlen(r->password));
		free(r->password);
	}
	free(r->prefix);
	free(r);
}

static int loaded(char *err, size_t errlen)
{
	pthread_once(&load_once, load);
	if (load_rc != 0) {
		snprintf(err, errlen, "cannot load hiredis (%s): install libhiredis0.14", MCP_HIREDIS_SONAME);
		return 0;
	}
	return 1;
}

/* redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]; the user, which Redis 6 ACLs
 * would take, is refused rather than ignored. */
static int tcp_open(const char *rest, const tp_store_opts *o, void **state, char *err, size_t errlen)
{
	if (!loaded(err, errlen))
		return TP_STORE_EINVAL;
	if (strncmp(rest, "//", 2) != 0) {
		snprintf(err, errlen, "a redis URL is redis://[:PASSWORD@]HOST[:PORT][/DB]");
		return TP_STORE_EINVAL;
	}
	rest += 2;
	redis *r = redis_new(o);
	if (!r || !r->prefix) {
		if (r)
			redis_free(r);
		snprintf(err, errlen, "out of memory");
		return TP_STORE_ENOMEM;
	}
	const char *slash = strchr(rest, '/');
	const char *hostpart_end = slash ? slash : rest + strlen(rest);
	const char *at = memrchr(rest, '@', (size_t)(hostpart_end - rest));
	if (at) {
		if (rest[0] != ':') {
			snprintf(err, errlen, "a redis URL's credentials are :PASSWORD@ (no user name)");
			goto bad;
		}
		r->password = unescape(rest + 1, (size_t)(at - rest - 1));
		rest = at + 1;
	}
	const char *colon = memchr(rest, ':', (size_t)(hostpart_end - rest));
	const char *host_end = colon ? colon : hostpart_end;
	if (host_end == rest) {
		snprintf(err, errlen, "a redis URL needs a host");
		goto bad;
	}
	r->host = strndup(rest, (size_t)(host_end - rest));
	if (colon) {
		char port[8];
		size_t n = (size_t)(hostpart_end - colon - 1);
		char *end;
		long p = 0;
		if (n > 0 && n < sizeof port) {
			memcpy(port, colon + 1, n);
			port[n] = '\0';
			p = strtol(port, &end, 10);
			if (*end)
				p = 0;
		}
		if (p < 1 || p > 65535) {
			snprintf(err, errlen, "a redis URL's port must be 1 to 65535");
			goto bad;
		}
		r->port = (int)p;
	}
	if (slash && slash[1] && parse_db(slash + 1, &r->db) != 0) {
		snprintf(err, errlen, "a redis URL's database must be a number");
		goto bad;
	}
	if (!r->host) {
		snprintf(err, errlen, "out of memory");
		goto bad;
	}
	*state = r;
	return TP_STORE_OK;
bad:
	redis_free(r);
	return TP_STORE_EINVAL;
}

/* unix:PATH[?db=N][&password=PW] */
static int unix_open(const char *rest, const tp_store_opts *o, void **state, char *err, size_t errlen)
{
	if (!loaded(err, errlen))
		return TP_STORE_EINVAL;
	while (rest[0] == '/' && rest[1] == '/') /* unix:///path too */
		rest++;
	const char *q = strchr(rest, '?');
	size_t n = q ? (size_t)(q - rest) : strlen(rest);
	if (n == 0 || rest[0] != '/') {
		snprintf(err, errlen, "a unix store URL is unix:/PATH[?db=N&password=PW]");
		return TP_STORE_EINVAL;
	}
	redis *r = redis_new(o);
	if (!r || !r->prefix || !(r->path = strndup(rest, n))) {
		if (r)
			redis_free(r);
		snprintf(err, errlen, "out of memory");
		return TP_STORE_ENOMEM;
	}
	for (const char *p = q ? q + 1 : NULL; p && *p;) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		if (len > 3 && strncmp(p, "db=", 3) == 0) {
			char num[8] = "";
			if (len - 3 < sizeof num)
				memcpy(num, p + 3, len - 3);
			if (parse_db(num, &r->db) != 0) {
				snprintf(err, errlen, "a unix store URL's db must be a number");
				redis_free(r);
				return TP_STORE_EINVAL;
			}
		} else if (len >= 9 && strncmp(p, "password=", 9) == 0) {
			free(r->password);
			r->password = unescape(p + 9, len - 9);
		} else {
			snprintf(err, errlen, "a unix store URL takes db= and password= only");
			redis_free(r);
			return TP_STORE_EINVAL;
		}
		p = amp ? amp + 1 : NULL;
	}
	*state = r;
	return TP_STORE_OK;
}

/* ---- connections -------------------------------------------------------- */

/* The error a failed context stands for. */
static int ctx_fail(redis *r, const redisContext *c, int saved_errno)
{
	if (c && c->err == REDIS_ERR_IO &&
	    (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
	     saved_errno == EINPROGRESS))
		return fail(TP_STORE_ETIMEDOUT, "%s did not answer in time", where(r));
	return fail(TP_STORE_EDOWN, "%s: %s", where(r), c ? c->errstr : "cannot allocate a connection");
}

/* Sends a command on a fresh connection as part of its set-up; 0 when it
 * was answered with a status. */
static int setup_command(redis *r, redisContext *c, int argc, const char **argv)
{
	tp_sigpipe quiet; /* a Redis that went away is EPIPE, never SIGPIPE */
	tp_sigpipe_block(&quiet);
	redisReply *rep = hr.command_argv(c, argc, argv, NULL);
	int saved = errno;
	quiet.maybe_raised = !rep;
	tp_sigpipe_restore(&quiet);
	if (!rep)
		return ctx_fail(r, c, saved);
	int ok = rep->type == REDIS_REPLY_STATUS;
	if (!ok)
		fail(TP_STORE_EDOWN, "%s refused %s: %.*s", where(r), argv[0],
		     rep->type == REDIS_REPLY_ERROR ? (int)rep->len : 0,
		     rep->type == REDIS_REPLY_ERROR ? rep->str : "");
	hr.free_reply(rep);
	return ok ? 0 : TP_STORE_EDOWN;
}

static redisContext *connect_new(redis *r, int *rc)
{
	redisContext *c = r->path ? hr.connect_unix(r->path, r->connect_tv)
				  : hr.connect_tcp(r->host, r->port, r->connect_tv);
	int saved = errno;
	if (!c || c->err) {
		*rc = ctx_fail(r, c, saved);
		if (c)
			hr.free_ctx(c);
		return NULL;
	}
	hr.set_timeout(c, r->command_tv);
	char db[12];
	snprintf(db, sizeof db, "%d", r->db);
	const char *auth[] = { "AUTH", r->password };
	const char *sel[] = { "SELECT", db };
	if ((r->password && (*rc = setup_command(r, c, 2, auth)) != 0) ||
	    (r->db && (*rc = setup_command(r, c, 2, sel)) != 0)) {
		hr.free_ctx(c);
		return NULL;
	}
	return c;
}

/* A connection for one call: an idle one, or a new one unless the store
 * is backing off after a failure. */
static redisContext *take(redis *r, int *rc)
{
	pthread_mutex_lock(&r->mu);
	if (r->nidle > 0) {
		redisContext *c = r->idle[--r->nidle];
		pthread_mutex_unlock(&r->mu);
		return c;
	}
	int64_t wait = r->down_until_ms - mono_ms();
	pthread_mutex_unlock(&r->mu);
	if (wait > 0) {
		*rc = fail(TP_STORE_EDOWN, "%s is unreachable; next attempt in %lld ms", where(r),
			   (long long)wait);
		return NULL;
	}
	redisContext *c = connect_new(r, rc);
	pthread_mutex_lock(&r->mu);
	if (c) {
		r->backoff_ms = 0;
		r->down_until_ms = 0;
	} else {
		r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : BACKOFF_MIN_MS;
		if (r->backoff_ms > r->backoff_max_ms)
			r->backoff_ms = r->backoff_max_ms;
		r->down_until_ms = mono_ms() + r->backoff_ms;
	}
	pthread_mutex_unlock(&r->mu);
	return c;
}

/* Gives a connection back, or drops it when it failed. */
static void give(redis *r, redisContext *c)
{
	if (c->err) {
		hr.free_ctx(c);
		return;
	}
	pthread_mutex_lock(&r->mu);
	if (r->nidle < POOL_MAX) {
		r->idle[r->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&r->mu);
	if (c)
		hr.free_ctx(c);
}

/* Runs one command (the key, when given, gets the prefix) and returns its
 * reply, or NULL with *rc set. */
static redisReply *run(redis *r, int argc, const char **argv, const size_t *lens, int key_at, int *rc)
{
	char *key = NULL;
	const char *av[8];
	size_t al[8];
	memcpy(av, argv, (size_t)argc * sizeof *av);
	memcpy(al, lens, (size_t)argc * sizeof *al);
	if (key_at >= 0) {
		key = malloc(r->prefix_len + al[key_at] + 1);
		if (!key) {
			*rc = fail(TP_STORE_ENOMEM, "out of memory");
			return NULL;
		}
		memcpy(key, r->prefix, r->prefix_len);
		memcpy(key + r->prefix_len, av[key_at], al[key_at]);
		al[key_at] += r->prefix_len;
		av[key_at] = key;
	}
	redisContext *c = take(r, rc);
	redisReply *rep = NULL;
	if (c) {
		/* hiredis writes with write(2), on whatever thread asks (a
		 * host's thread that notifies, too): EPIPE, never SIGPIPE. */
		tp_sigpipe quiet;
		tp_sigpipe_block(&quiet);
		rep = hr.command_argv(c, argc, av, al);
		int saved = errno;
		quiet.maybe_raised = !rep;
		tp_sigpipe_restore(&quiet);
		if (!rep)
			*rc = ctx_fail(r, c, saved);
		else if (rep->type == REDIS_REPLY_ERROR) {
			*rc = fail(TP_STORE_EPROTO, "%s answered an error: %.*s", where(r), (int)rep->len,
				   rep->str);
			hr.free_reply(rep);
			rep = NULL;
		}
		give(r, c);
	}
	free(key);
	return rep;
}

/* ---- records ------------------------------------------------------------ */

static const char create_lua[] =
	"if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\n"
	"redis.call('HSET', KEYS[1], 'v', 1, 'd', ARGV[1])\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
	"return 1\n";

static const char cas_lua[] =
	"local v = redis.call('HGET', KEYS[1], 'v')\n"
	"if not v then return -1 end\n"
	"if v ~= ARGV[1] then return 0 end\n"
	"local n = tonumber(v) + 1\n"
	"redis.call('HSET', KEYS[1], 'v', n, 'd', ARGV[2])\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
	"return n\n";

static int r_create(void *st, const char *key, const void *val, size_t len, int64_t ttl_ms)
{
	redis *r = st;
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
	const char *av[] = { "EVAL", create_lua, "1", key, val ? val : "", ttl };
	size_t al[] = { 4, sizeof create_lua - 1, 1, strlen(key), len, strlen(ttl) };
	int rc = TP_STORE_OK;
	redisReply *rep = run(r, 6, av, al, 3, &rc);
	if (!rep)
		return rc;
	if (rep->type != REDIS_REPLY_INTEGER)
		rc = fail(TP_STORE_EPROTO, "%s: unexpected reply to create", where(r));
	else if (rep->integer == 0)
		rc = fail(TP_STORE_EEXIST, "the record exists");
	hr.free_reply(rep);
	return rc;
}

static int r_get(void *st, const char *key, char **val, size_t *len, uint64_t *ver)
{
	redis *r = st;
	const char *av[] = { "HMGET", key, "v", "d" };
	size_t al[] = { 5, strlen(key), 1, 1 };
	int rc = TP_STORE_OK;
	redisReply *rep = run(r, 4, av, al, 1, &rc);
	if (!rep)
		return rc;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
		rc = fail(TP_STORE_EPROTO, "%s: unexpected reply to get", where(r));
	} else if (rep->element[0]->type != REDIS_REPLY_STRING ||
		   rep->element[1]->type != REDIS_REPLY_STRING) {
		rc = fail(TP_STORE_ENOENT, "no such record");
	} else {
		char *end;
		unsigned long long v = strtoull(rep->element[0]->str, &end, 10);
		char *copy = malloc(rep->element[1]->len + 1);
		if (*end || v == 0) {
			rc = fail(TP_STORE_EPROTO, "%s: a record's version is not a number", where(r));
			free(copy);
		} else if (!copy) {
			rc = fail(TP_STORE_ENOMEM, "out of memory");
		} else {
			memcpy(copy, rep->element[1]->str, rep->element[1]->len);
			copy[rep->element[1]->len] = '\0';
			*val = copy;
			*len = rep->element[1]->len;
			*ver = v;
		}
	}
	hr.free_reply(rep);
	return rc;
}

static int r_cas(void *st, const char *key, uint64_t ver, const void *val, size_t len, int64_t ttl_ms,
		 uint64_t *newver)
{
	redis *r = st;
	char ttl[24], v[24];
	snprintf(ttl, sizeof ttl, "%lld", (long long)ttl_ms);
	snprintf(v, sizeof v, "%llu", (unsigned long long)ver);
	const char *av[] = { "EVAL", cas_lua, "1", key, v, val ? val : "", ttl };
	size_t al[] = { 4, sizeof cas_lua - 1, 1, strlen(key), strlen(v), len, strlen(ttl) };
	int rc = TP_STORE_OK;
	redisReply *rep = run(r, 7, av, al, 3, &rc);
	if (!rep)
		return rc;
	if (rep->type != REDIS_REPLY_INTEGER)
		rc = fail(TP_STORE_EPROTO, "%s: unexpected reply to cas", where(r));
	else if (rep->integer == -1)
		rc = fail(TP_STORE_ENOENT, "no such record");
	else if (rep->integer == 0)
		rc = fail(TP_STORE_ESTALE, "the record changed since version %llu", (unsigned long long)ver);
	else
		*newver = (uint64_t)rep->integer;
	hr.free_reply(rep);
	return rc;
}

static int r_del(void *st, const char *key)
{
	redis *r = st;
	const char *av[] = { "DEL", key };
	size_t al[] = { 3, strlen(key) };
	int rc = TP_STORE_OK;
	redisReply *rep = run(r, 2, av, al, 1, &rc);
	if (!rep)
		return rc;
	if (rep->type != REDIS_REPLY_INTEGER)
		rc = fail(TP_STORE_EPROTO, "%s: unexpected reply to del", where(r));
	else if (rep->integer == 0)
		rc = fail(TP_STORE_ENOENT, "no such record");
	hr.free_reply(rep);
	return rc;
}

static int r_publish(void *st, const char *chan, const void *msg, size_t len)
{
	redis *r = st;
	const char *av[] = { "PUBLISH", chan, msg ? msg : "" };
	size_t al[] = { 7, strlen(chan), len };
	int rc = TP_STORE_OK;
	redisReply *rep = run(r, 3, av, al, 1, &rc);
	if (!rep)
		return rc;
	hr.free_reply(rep);
	return TP_STORE_OK;
}

/* ---- subscriptions ---------------------------------------------------------- */

/* Writes SUBSCRIBE for every channel not yet sent on this connection. */
static int send_subscribes(redis *r, redisContext *c)
{
	pthread_mutex_lock(&r->mu);
	int rc = 0;
	for (rsub *s = r->subs; s && rc == 0; s = s->next) {
		if (s->sent)
			continue;
		size_t n = strlen(s->chan);
		char *full = malloc(r->prefix_len + n + 1);
		if (!full) {
			rc = -1;
			break;
		}
		memcpy(full, r->prefix, r->prefix_len);
		memcpy(full + r->prefix_len, s->chan, n + 1);
		const char *av[] = { "SUBSCRIBE", full };
		size_t al[] = { 9, r->prefix_len + n };
		rc = hr.append_argv(c, 2, av, al) == REDIS_OK ? 0 : -1;
		free(full);
		s->sent = rc == 0;
	}
	pthread_mutex_unlock(&r->mu);
	int done = 0;
	while (rc == 0 && !done)
		rc = hr.buffer_write(c, &done) == REDIS_OK ? 0 : -1;
	return rc;
}

static void dispatch(redis *r, redisReply *rep)
{
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3 ||
	    rep->element[0]->type != REDIS_REPLY_STRING || rep->element[1]->type != REDIS_REPLY_STRING ||
	    rep->element[1]->len < r->prefix_len)
		return;
	const char *chan = rep->element[1]->str + r->prefix_len;
	if (strcmp(rep->element[0]->str, "subscribe") == 0) {
		pthread_mutex_lock(&r->mu);
		for (rsub *s = r->subs; s; s = s->next)
			if (strcmp(s->chan, chan) == 0)
				s->confirmed = 1;
		pthread_cond_broadcast(&r->sub_cv);
		pthread_mutex_unlock(&r->mu);
		return;
	}
	if (strcmp(rep->element[0]->str, "message") != 0 || rep->element[2]->type != REDIS_REPLY_STRING)
		return;
	/* The list only grows while the store is open: walk it unlocked
	 * after reading its head, so a callback never runs under r->mu. */
	pthread_mutex_lock(&r->mu);
	rsub *s = r->subs;
	pthread_mutex_unlock(&r->mu);
	for (; s; s = s->next)
		if (strcmp(s->chan, chan) == 0)
			s->fn(s->arg, s->chan, rep->element[2]->str, rep->element[2]->len);
}

static void mark_unsent(redis *r)
{
	pthread_mutex_lock(&r->mu);
	for (rsub *s = r->subs; s; s = s->next)
		s->sent = 0;
	pthread_mutex_unlock(&r->mu);
}

static int stopping(redis *r)
{
	pthread_mutex_lock(&r->mu);
	int stop = r->sub_stop;
	pthread_mutex_unlock(&r->mu);
	return stop;
}

/* Waits ms, or less when the store closes; drains the wake pipe. */
static void nap(redis *r, int64_t ms)
{
	struct pollfd p = { .fd = r->wake[0], .events = POLLIN };
	if (poll(&p, 1, (int)ms) > 0) {
		char buf[64];
		(void)!read(r->wake[0], buf, sizeof buf);
	}
}

static void *subscriber(void *arg)
{
	redis *r = arg;
	int64_t backoff = 0;
	while (!stopping(r)) {
		int rc;
		redisContext *c = connect_new(r, &rc);
		if (!c) {
			backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
			if (backoff > r->backoff_max_ms)
				backoff = r->backoff_max_ms;
			nap(r, backoff);
			continue;
		}
		backoff = 0;
		mark_unsent(r);
		int broken = send_subscribes(r, c) != 0;
		while (!broken && !stopping(r)) {
			void *rep = NULL;
			/* What the reader already holds first: poll would not
			 * see it. */
			if (hr.reply_from_reader(c, &rep) != REDIS_OK) {
				broken = 1;
				break;
			}
			if (rep) {
				dispatch(r, rep);
				hr.free_reply(rep);
				continue;
			}
			struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
					       { .fd = r->wake[0], .events = POLLIN } };
			if (poll(p, 2, -1) < 0 && errno != EINTR) {
				broken = 1;
				break;
			}
			if (p[1].revents & POLLIN) {
				char buf[64];
				(void)!read(r->wake[0], buf, sizeof buf);
				broken = send_subscribes(r, c) != 0;
			}
			if (!broken && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
				broken = hr.buffer_read(c) != REDIS_OK;
		}
		hr.free_ctx(c);
	}
	return NULL;
}

static int r_subscribe(void *st, const char *chan, tp_store_msg_fn fn, void *arg)
{
	redis *r = st;
	rsub *s = calloc(1, sizeof *s);
	if (!s || !(s->chan = strdup(chan))) {
		free(s);
		return fail(TP_STORE_ENOMEM, "out of memory");
	}
	s->fn = fn;
	s->arg = arg;
	pthread_mutex_lock(&r->mu);
	if (!r->sub_started) {
		if (pipe2(r->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
			r->wake[0] = r->wake[1] = -1;
			pthread_mutex_unlock(&r->mu);
			free(s->chan);
			free(s);
			return fail(TP_STORE_ENOMEM, "cannot make the subscriber's pipe");
		}
		if (tp_thread_create(&r->sub_thread, NULL, subscriber, r) != 0) {
			pthread_mutex_unlock(&r->mu);
			free(s->chan);
			free(s);
			return fail(TP_STORE_ENOMEM, "cannot start the subscriber thread");
		}
		r->sub_started = 1;
	}
	s->next = r->subs;
	r->subs = s;
	(void)!write(r->wake[1], "s", 1);
	/* Wait for the store's acknowledgement, so that what is published
	 * after this returns reaches the callback. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += r->command_tv.tv_sec + (until.tv_nsec / 1000 + r->command_tv.tv_usec) / 1000000;
	until.tv_nsec = ((until.tv_nsec / 1000 + r->command_tv.tv_usec) % 1000000) * 1000;
	int rc = 0;
	while (!s->confirmed && rc == 0)
		rc = pthread_cond_timedwait(&r->sub_cv, &r->mu, &until);
	int confirmed = s->confirmed;
	pthread_mutex_unlock(&r->mu);
	if (!confirmed)
		return fail(TP_STORE_ETIMEDOUT, "%s has not confirmed the subscription yet; "
			    "it takes effect when the store answers", where(r));
	return TP_STORE_OK;
}

static const char *r_error(void *st)
{
	(void)st;
	return errbuf;
}

static void r_close(void *st)
{
	redis *r = st;
	pthread_mutex_lock(&r->mu);
	r->sub_stop = 1;
	int started = r->sub_started;
	pthread_mutex_unlock(&r->mu);
	if (started) {
		(void)!write(r->wake[1], "x", 1);
		pthread_join(r->sub_thread, NULL);
	}
	redis_free(r);
}

/* Two URL schemes, one backend: only the parsing of the address differs. */
#define REDIS_OPS                                                          \
	.create = r_create, .get = r_get, .cas = r_cas, .del = r_del,      \
	.publish = r_publish, .subscribe = r_subscribe, .error = r_error, \
	.close = r_close

const tp_store_backend tp_store_redis = { .scheme = "redis", .open = tcp_open, REDIS_OPS };
const tp_store_backend tp_store_redis_unix = { .scheme = "unix", .open = unix_open, REDIS_OPS };
