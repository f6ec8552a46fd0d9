/*
 * store-mem.c - the store in this process's memory: a hash table of
 * versioned records that expire, and channels delivered by a thread of the
 * store's own, as Redis delivers them (so a subscriber sees the same
 * threads and the same ordering with either backend).  It is the reference
 * the store tests hold the Redis backend to.
 *
 * Lock: m->mu guards the table, the subscriptions and the delivery queue;
 * callbacks run with it released.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/store.h"
#include "transport/sigpipe.h"

#define NBUCKETS 1024
#define SWEEP_EVERY 256

typedef struct rec {
	struct rec *next;
	char *key;
	char *val;
	size_t len;
	uint64_t ver;
	int64_t expires_ns;
} rec;

typedef struct sub {
	struct sub *next;
	char *chan;
	tp_store_msg_fn fn;
	void *arg;
} sub;

typedef struct msg {
	struct msg *next;
	char *chan;
	char *data;
	size_t len;
} msg;

typedef struct mem {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	rec *buckets[NBUCKETS];
	sub *subs;
	msg *head, *tail;
	unsigned creates;   /* every SWEEP_EVERY creates, expired records go */
	int thread_started, stopping;
	pthread_t thread;
} mem;

static __thread char errbuf[160];

static int fail(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof errbuf, fmt, ap);
	va_end(ap);
	return rc;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned hash(const char *k)
{
	unsigned h = 2166136261u;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 16777619u;
	return h % NBUCKETS;
}

static void rec_free(rec *r)
{
	free(r->key);
	free(r->val);
	free(r);
}

/* The live record of `key`, dropping it first when it has expired. */
static rec **slot(mem *m, const char *key, int64_t now)
{
	rec **pp = &m->buckets[hash(key)];
	for (; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->key, key) == 0) {
			if ((*pp)->expires_ns <= now) {
				rec *dead = *pp;
				*pp = dead->next;
				rec_free(dead);
			}
			return pp;
		}
	return pp;
}

static char *dup_bytes(const void *p, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

static int mem_open(const char *rest, const tp_store_opts *o, void **state, char *err, size_t errlen)
{
	(void)o;
	if (rest[0]) {
		snprintf(err, errlen, "memory: takes nothing after the colon");
		return TP_STORE_EINVAL;
	}
	mem *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return TP_STORE_ENOMEM;
	}
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	*state = m;
	return TP_STORE_OK;
}

/* Drops every expired record: records nobody reads again must not stay
 * past their time to live. */
static void sweep(mem *m, int64_t now)
{
	for (int i = 0; i < NBUCKETS; i++)
		for (rec **pp = &m->buckets[i]; *pp;) {
			rec *r = *pp;
			if (r->expires_ns <= now) {
				*pp = r->next;
				rec_free(r);
			} else {
				pp = &r->next;
			}
		}
}

static int mem_create(void *st, const char *key, const void *val, size_t len, int64_t ttl_ms)
{
	mem *m = st;
	int64_t now = now_ns();
	pthread_mutex_lock(&m->mu);
	if (++m->creates % SWEEP_EVERY == 0)
		sweep(m, now);
	rec **pp = slot(m, key, now);
	if (*pp) {
		pthread_mutex_unlock(&m->mu);
		return fail(TP_STORE_EEXIST, "the record exists");
	}
	rec *r = calloc(1, sizeof *r);
	if (!r || !(r->key = strdup(key)) || !(r->val = dup_bytes(val, len))) {
		pthread_mutex_unlock(&m->mu);
		if (r)
			rec_free(r);
		return fail(TP_STORE_ENOMEM, "out of memory");
	}
	r->len = len;
	r->ver = 1;
	r->expires_ns = now + ttl_ms * 1000000;
	*pp = r;
	pthread_mutex_unlock(&m->mu);
	return TP_STORE_OK;
}

static int mem_get(void *st, const char *key, char **val, size_t *len, uint64_t *ver)
{
	mem *m = st;
	pthread_mutex_lock(&m->mu);
	rec *r = *slot(m, key, now_ns());
	if (!r) {
		pthread_mutex_unlock(&m->mu);
		return fail(TP_STORE_ENOENT, "no such record");
	}
	char *copy = dup_bytes(r->val, r->len);
	if (!copy) {
		pthread_mutex_unlock(&m->mu);
		return fail(TP_STORE_ENOMEM, "out of memory");
	}
	*val = copy;
	*len = r->len;
	*ver = r->ver;
	pthread_mutex_unlock(&m->mu);
	return TP_STORE_OK;
}

static int mem_cas(void *st, const char *key, uint64_t ver, const void *val, size_t len,
		   int64_t ttl_ms, uint64_t *newver)
{
	mem *m = st;
	int64_t now = now_ns();
	char *copy = dup_bytes(val, len);
	if (!copy)
		return fail(TP_STORE_ENOMEM, "out of memory");
	pthread_mutex_lock(&m->mu);
	rec *r = *slot(m, key, now);
	int rc = TP_STORE_OK;
	if (!r)
		rc = fail(TP_STORE_ENOENT, "no such record");
	else if (r->ver != ver)
		rc = fail(TP_STORE_ESTALE, "the record changed (version %llu, not %llu)",
			  (unsigned long long)r->ver, (unsigned long long)ver);
	if (rc != TP_STORE_OK) {
		pthread_mutex_unlock(&m->mu);
		free(copy);
		return rc;
	}
	free(r->val);
	r->val = copy;
	r->len = len;
	r->ver++;
	r->expires_ns = now + ttl_ms * 1000000;
	*newver = r->ver;
	pthread_mutex_unlock(&m->mu);
	return TP_STORE_OK;
}

static int mem_del(void *st, const char *key)
{
	mem *m = st;
	pthread_mutex_lock(&m->mu);
	rec **pp = slot(m, key, now_ns());
	rec *r = *pp;
	if (r)
		*pp = r->next;
	pthread_mutex_unlock(&m->mu);
	if (!r)
		return fail(TP_STORE_ENOENT, "no such record");
	rec_free(r);
	return TP_STORE_OK;
}

static void msg_free(msg *q)
{
	free(q->chan);
	free(q->data);
	free(q);
}

/* The delivery thread: each message to every subscriber of its channel, in
 * publication order, with the lock released around the callbacks.  The
 * subscription list only grows while the store is open, so the walk can
 * continue from a node after the lock was dropped. */
static void *deliver(void *arg)
{
	mem *m = arg;
	pthread_mutex_lock(&m->mu);
	for (;;) {
		while (!m->head && !m->stopping)
			pthread_cond_wait(&m->cv, &m->mu);
		if (!m->head)
			break;
		msg *q = m->head;
		m->head = q->next;
		if (!m->head)
			m->tail = NULL;
		for (sub *s = m->subs; s; s = s->next) {
			if (strcmp(s->chan, q->chan) != 0)
				continue;
			pthread_mutex_unlock(&m->mu);
			s->fn(s->arg, q->chan, q->data, q->len);
			pthread_mutex_lock(&m->mu);
		}
		pthread_mutex_unlock(&m->mu);
		msg_free(q);
		pthread_mutex_lock(&m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

static int mem_publish(void *st, const char *chan, const void *data, size_t len)
{
	mem *m = st;
	msg *q = calloc(1, sizeof *q);
	if (!q || !(q->chan = strdup(chan)) || !(q->data = dup_bytes(data, len))) {
		if (q)
			msg_free(q);
		return fail(TP_STORE_ENOMEM, "out of memory");
	}
	q->len = len;
	pthread_mutex_lock(&m->mu);
	int listened = 0;
	for (sub *s = m->subs; s && !listened; s = s->next)
		listened = strcmp(s->chan, chan) == 0;
	if (!listened || m->stopping) { /* as Redis: nobody listening, nothing kept */
		pthread_mutex_unlock(&m->mu);
		msg_free(q);
		return TP_STORE_OK;
	}
	if (m->tail)
		m->tail->next = q;
	else
		m->head = q;
	m->tail = q;
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return TP_STORE_OK;
}

static int mem_subscribe(void *st, const char *chan, tp_store_msg_fn fn, void *arg)
{
	mem *m = st;
	sub *s = calloc(1, sizeof *s);
	if (!s || !(s->chan = strdup(chan))) {
		free(s);
		return fail(TP_STORE_ENOMEM, "out of memory");
	}
	s->fn = fn;
	s->arg = arg;
	pthread_mutex_lock(&m->mu);
	if (!m->thread_started) {
		if (tp_thread_create(&m->thread, NULL, deliver, m) != 0) {
			pthread_mutex_unlock(&m->mu);
			free(s->chan);
			free(s);
			return fail(TP_STORE_ENOMEM, "cannot start the delivery thread");
		}
		m->thread_started = 1;
	}
	s->next = m->subs;
	m->subs = s;
	pthread_mutex_unlock(&m->mu);
	return TP_STORE_OK;
}

static const char *mem_error(void *st)
{
	(void)st;
	return errbuf;
}

static void mem_close(void *st)
{
	mem *m = st;
	pthread_mutex_lock(&m->mu);
	m->stopping = 1;
	pthread_cond_signal(&m->cv);
	int started = m->thread_started;
	pthread_mutex_unlock(&m->mu);
	/* What was published before the close is still delivered. */
	if (started)
		pthread_join(m->thread, NULL);
	for (int i = 0; i < NBUCKETS; i++)
		while (m->buckets[i]) {
			rec *r = m->buckets[i];
			m->buckets[i] = r->next;
			rec_free(r);
		}
	while (m->subs) {
		sub *s = m->subs;
		m->subs = s->next;
		free(s->chan);
		free(s);
	}
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

const tp_store_backend tp_store_memory = {
	.scheme = "memory",
	.open = mem_open,
	.create = mem_create,
	.get = mem_get,
	.cas = mem_cas,
	.del = mem_del,
	.publish = mem_publish,
	.subscribe = mem_subscribe,
	.error = mem_error,
	.close = mem_close,
};
