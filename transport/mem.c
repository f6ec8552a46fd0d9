/*
 * mem.c - the in-memory transport: a connection between a server and a
 * client in the same process, for unit tests and for embedding.
 *
 * Two line queues under one lock; the server side is an ordinary tp_conn,
 * so the engine runs over it exactly as over a pipe.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/tp.h"

typedef struct mem_line {
	struct mem_line *next;
	size_t len;
	char data[];
} mem_line;

typedef struct mem_queue {
	mem_line *head, *tail;
} mem_queue;

struct tp_mem {
	tp_conn base;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	mem_queue in, out;      /* client->server, server->client */
	int in_closed;          /* client sent EOF */
	int out_closed;         /* server closed its output */
	int woken;
	mem_line *current;      /* the line last returned by recv */
	/* The client end as a connection of its own (tp_mem_client_conn):
	 * its recv reads `out`, its send writes `in`. */
	tp_conn client;
	int client_woken;
	mem_line *client_current;
};

static tp_mem *of_client(tp_conn *c)
{
	return (tp_mem *)((char *)c - offsetof(tp_mem, client));
}

static void q_push(mem_queue *q, mem_line *l)
{
	l->next = NULL;
	if (q->tail)
		q->tail->next = l;
	else
		q->head = l;
	q->tail = l;
}

static mem_line *q_pop(mem_queue *q)
{
	mem_line *l = q->head;
	if (l) {
		q->head = l->next;
		if (!q->head)
			q->tail = NULL;
	}
	return l;
}

static void q_free(mem_queue *q)
{
	mem_line *l;
	while ((l = q_pop(q)))
		free(l);
}

static mem_line *line_new(const char *s, size_t n)
{
	mem_line *l = malloc(sizeof *l + n + 1);
	if (!l)
		return NULL;
	memcpy(l->data, s, n);
	l->data[n] = 0;
	l->len = n;
	return l;
}

static int mem_recv(tp_conn *c, const char **line, size_t *len)
{
	tp_mem *m = (tp_mem *)c;
	int announced = 0;
	pthread_mutex_lock(&m->mu);
	free(m->current);
	m->current = NULL;
	for (;;) {
		if (m->woken) {
			pthread_mutex_unlock(&m->mu);
			return TP_WOKEN;
		}
		mem_line *l = q_pop(&m->in);
		if (l) {
			pthread_mutex_unlock(&m->mu);
			size_t n = l->len;
			while (n > 0 && (l->data[n - 1] == '\n' || l->data[n - 1] == '\r'))
				n--;
			if (n == 0) {
				free(l);
				pthread_mutex_lock(&m->mu);
				continue;
			}
			if (n > c->max_message) {
				free(l);
				return TP_TOOLONG;
			}
			m->current = l;
			*line = l->data;
			*len = n;
			return tp_utf8_valid((const unsigned char *)l->data, n) ? TP_LINE
										: TP_BADUTF8;
		}
		if (m->in_closed) {
			pthread_mutex_unlock(&m->mu);
			return TP_EOF;
		}
		if (!announced && c->before_wait) {
			/* Outside the lock: the engine may write meanwhile. */
			announced = 1;
			pthread_mutex_unlock(&m->mu);
			c->before_wait(c->before_wait_arg);
			pthread_mutex_lock(&m->mu);
			continue;
		}
		pthread_cond_wait(&m->cv, &m->mu);
	}
}

static int mem_send(tp_conn *c, const struct iovec *iov, int n,
		    const _Atomic int64_t *deadline_ns)
{
	tp_mem *m = (tp_mem *)c;
	(void)deadline_ns;
	/* Each iovec holds whole lines (the writer never splits a line), so
	 * split on newlines to hand the client one message at a time. */
	mem_queue tmp = { 0 };
	for (int i = 0; i < n; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left > 0) {
			const char *nl = memchr(p, '\n', left);
			size_t ln = nl ? (size_t)(nl - p) : left;
			mem_line *l = line_new(p, ln);
			if (!l) {
				q_free(&tmp);
				return -ENOMEM;
			}
			q_push(&tmp, l);
			ln += nl ? 1 : 0;
			p += ln;
			left -= ln;
		}
	}
	pthread_mutex_lock(&m->mu);
	if (m->out_closed) {
		pthread_mutex_unlock(&m->mu);
		q_free(&tmp);
		return -EPIPE;
	}
	if (tmp.head) {
		if (m->out.tail)
			m->out.tail->next = tmp.head;
		else
			m->out.head = tmp.head;
		m->out.tail = tmp.tail;
	}
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

static void mem_wake(tp_conn *c)
{
	/* Not async-signal-safe (takes a lock): embedding code triggers
	 * shutdowns from threads, not from signal handlers. */
	tp_mem *m = (tp_mem *)c;
	pthread_mutex_lock(&m->mu);
	m->woken = 1;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static void mem_close_output(tp_conn *c)
{
	tp_mem *m = (tp_mem *)c;
	pthread_mutex_lock(&m->mu);
	m->out_closed = 1;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static void mem_server_free(tp_conn *c)
{
	mem_close_output(c);
}

static const struct tp_ops mem_ops = {
	.recv = mem_recv,
	.send = mem_send,
	.wake = mem_wake,
	.close_output = mem_close_output,
	.free = mem_server_free,
};

/* ---- the client end as a tp_conn ----------------------------------------- */

static int mem_client_recv(tp_conn *c, const char **line, size_t *len)
{
	tp_mem *m = of_client(c);
	pthread_mutex_lock(&m->mu);
	free(m->client_current);
	m->client_current = NULL;
	for (;;) {
		if (m->client_woken) {
			pthread_mutex_unlock(&m->mu);
			return TP_WOKEN;
		}
		mem_line *l = q_pop(&m->out);
		if (l) {
			pthread_mutex_unlock(&m->mu);
			if (l->len == 0) {
				free(l);
				pthread_mutex_lock(&m->mu);
				continue;
			}
			if (l->len > c->max_message) {
				free(l);
				return TP_TOOLONG;
			}
			m->client_current = l;
			*line = l->data;
			*len = l->len;
			return tp_utf8_valid((const unsigned char *)l->data, l->len) ? TP_LINE
										     : TP_BADUTF8;
		}
		if (m->out_closed) {
			pthread_mutex_unlock(&m->mu);
			return TP_EOF;
		}
		pthread_cond_wait(&m->cv, &m->mu);
	}
}

static int mem_client_send(tp_conn *c, const struct iovec *iov, int n,
			   const _Atomic int64_t *deadline_ns)
{
	tp_mem *m = of_client(c);
	(void)deadline_ns;
	/* Whole lines, as for the server side; split on newlines. */
	for (int i = 0; i < n; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left > 0) {
			const char *nl = memchr(p, '\n', left);
			size_t ln = nl ? (size_t)(nl - p) : left;
			if (ln > 0) {
				int rc = tp_mem_client_send(m, p, ln);
				if (rc)
					return rc;
			}
			ln += nl ? 1 : 0;
			p += ln;
			left -= ln;
		}
	}
	return 0;
}

static void mem_client_wake(tp_conn *c)
{
	tp_mem *m = of_client(c);
	pthread_mutex_lock(&m->mu);
	m->client_woken = 1;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static void mem_client_close_output(tp_conn *c)
{
	tp_mem_client_close(of_client(c));
}

static void mem_client_free(tp_conn *c)
{
	/* The pair belongs to whoever made it (mcp_memconn): only the
	 * server's input ends here. */
	tp_mem *m = of_client(c);
	tp_mem_client_close(m);
	pthread_mutex_lock(&m->mu);
	free(m->client_current);
	m->client_current = NULL;
	pthread_mutex_unlock(&m->mu);
}

static const struct tp_ops mem_client_ops = {
	.recv = mem_client_recv,
	.send = mem_client_send,
	.wake = mem_client_wake,
	.close_output = mem_client_close_output,
	.free = mem_client_free,
};

tp_conn *tp_mem_client_conn(tp_mem *m)
{
	return &m->client;
}

tp_mem *tp_mem_new(size_t max_message)
{
	tp_mem *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->base.ops = &mem_ops;
	m->base.max_message = max_message;
	m->base.announces_wait = 1;
	m->client.ops = &mem_client_ops;
	m->client.max_message = max_message;
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	return m;
}

tp_conn *tp_mem_server(tp_mem *m)
{
	return &m->base;
}

int tp_mem_client_send(tp_mem *m, const char *line, size_t len)
{
	mem_line *l = line_new(line, len);
	if (!l)
		return -ENOMEM;
	pthread_mutex_lock(&m->mu);
	if (m->in_closed) {
		pthread_mutex_unlock(&m->mu);
		free(l);
		return -EPIPE;
	}
	q_push(&m->in, l);
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

int tp_mem_client_recv(tp_mem *m, int timeout_ms, char **line, size_t *len)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (timeout_ms >= 0) {
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&m->mu);
	for (;;) {
		mem_line *l = q_pop(&m->out);
		if (l) {
			pthread_mutex_unlock(&m->mu);
			*len = l->len;
			/* Hand out the allocation itself: data is NUL-terminated. */
			char *s = malloc(l->len + 1);
			if (s)
				memcpy(s, l->data, l->len + 1);
			free(l);
			*line = s;
			return s ? 1 : -1;
		}
		if (m->out_closed) {
			pthread_mutex_unlock(&m->mu);
			return -1;
		}
		if (timeout_ms < 0) {
			pthread_cond_wait(&m->cv, &m->mu);
		} else if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT) {
			pthread_mutex_unlock(&m->mu);
			return 0;
		}
	}
}

void tp_mem_client_close(tp_mem *m)
{
	pthread_mutex_lock(&m->mu);
	m->in_closed = 1;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

void tp_mem_free(tp_mem *m)
{
	if (!m)
		return;
	q_free(&m->in);
	q_free(&m->out);
	free(m->current);
	free(m->client_current);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	free(m);
}
