/*
 * tasks-store.c - the shared record of a 2026-07-28 task, when the server
 * has a state store (mcp_server_set_store): its JSON, its reads and
 * compare-and-set writes, the lease that says its process is alive, and
 * the channels that carry a cancel or an input to that process and a
 * status change to every process's listen streams.
 *
 * Keys (under the store's prefix, "mcp:v1:" by default):
 *   t:ID   the task's record (JSON, below), kept for its TTL plus the
 *          minute a finished task stays readable
 *   l:ID   its lease: the owner's id, renewed every third of the lease
 *          time by the process running the handler; when it lapses (the
 *          process was killed) the next reader marks the task failed
 *   o:OWNER  the channel of one process: "cancel ID" and "input ID\nJSON"
 *   n      every process: "status OWNER ID\nJSON" (notifications/tasks
 *          parameters, for the listen streams that asked for ID)
 *
 * The record: {"s": status, "m": statusMessage, "c": createdAt ms,
 * "u": lastUpdatedAt ms, "ttl": ttlMs, "o": owner, "p": party, "ir":
 * inputRequests, "r": round, "rs": responses not yet taken by the owner,
 * "a": the final JSON-RPC response, "x": cancel requested}.  Any process
 * writes it by compare-and-set, each its own fields: the owner the status,
 * input requests and answer; another process the responses and the
 * cancel.  A final status absorbs every later write.
 *
 * Pub/sub loses what is published while a subscriber is away, so the
 * record is the truth and a message is a hint: the lease thread also reads
 * the record of each task it renews and hands on a cancel or responses a
 * message did not bring.
 *
 * Threads: the calls here block up to the store's timeout and are made on
 * workers only (the method table sends the task methods there when a store
 * is set).  The hooks run on the store's subscriber thread or on the lease
 * thread: they only fire tokens and queue lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "transport/store.h"
#include "transport/sigpipe.h"

typedef struct lease {
	struct lease *next;
	char id[API_TASK_ID_MAX];
	uint64_t ver;
} lease;

struct api_tstore {
	tp_store *st;
	mcp_server *srv;
	char owner[API_INSTANCE_ID_MAX + 40];
	int64_t lease_ms;
	api_tstore_hooks hooks;
	pthread_mutex_t mu; /* below; a leaf */
	pthread_cond_t cv;
	lease *leases;
	int started, stopping;
	pthread_t thread;
	char err[256];      /* the last failure's reason, for logs */
};

static int map(int rc)
{
	switch (rc) {
	case TP_STORE_OK:
		return MCP_OK;
	case TP_STORE_ENOENT:
		return MCP_ENOENT;
	case TP_STORE_EEXIST:
		return MCP_EEXIST;
	case TP_STORE_ESTALE:
		return MCP_ESTATE;
	case TP_STORE_ENOMEM:
		return MCP_ENOMEM;
	case TP_STORE_EINVAL:
		return MCP_EINVAL;
	default:
		return MCP_ESYS; /* down, timed out, or a protocol error */
	}
}

/* Keeps the reason of a store failure for api_tstore_error. */
static int note(api_tstore *ts, int rc)
{
	if (rc == TP_STORE_OK || rc == TP_STORE_ENOENT || rc == TP_STORE_ESTALE || rc == TP_STORE_EEXIST)
		return map(rc);
	pthread_mutex_lock(&ts->mu);
	snprintf(ts->err, sizeof ts->err, "%s", tp_store_error(ts->st));
	pthread_mutex_unlock(&ts->mu);
	return map(rc);
}

int api_tstore_open(mcp_server *srv, const char *url, int64_t timeout_ms, int64_t lease_ms,
		    char *err, size_t errlen)
{
	api_tstore *ts = calloc(1, sizeof *ts);
	if (!ts) {
		snprintf(err, errlen, "out of memory");
		return MCP_ENOMEM;
	}
	tp_store_opts o = { .struct_size = sizeof o, .command_timeout_ms = timeout_ms,
			    .connect_timeout_ms = timeout_ms };
	int rc = tp_store_open(url, &o, &ts->st, err, errlen);
	if (rc != TP_STORE_OK) {
		free(ts);
		return map(rc);
	}
	char hex[33];
	api_random_hex(hex);
	/* Unique per process run: a restarted process owns none of the
	 * leases its former self held. */
	snprintf(ts->owner, sizeof ts->owner, "%s%s%.16s", srv->instance,
		 srv->instance[0] ? "." : "", hex);
	ts->srv = srv;
	ts->lease_ms = lease_ms;
	pthread_mutex_init(&ts->mu, NULL);
	pthread_cond_init(&ts->cv, NULL);
	srv->tstore = ts;
	return MCP_OK;
}

const char *api_tstore_name(const api_tstore *ts)
{
	return tp_store_name(ts->st);
}

const char *api_tstore_error(api_tstore *ts)
{
	static __thread char copy[256];
	pthread_mutex_lock(&ts->mu);
	snprintf(copy, sizeof copy, "%s", ts->err);
	pthread_mutex_unlock(&ts->mu);
	return copy;
}

const char *api_tstore_owner(const api_tstore *ts)
{
	return ts->owner;
}

/* ---- channels ----------------------------------------------------------------- */

/* "KIND ID\nJSON" or "KIND OWNER ID\nJSON": the word after the kind, the
 * id, and the JSON (NULL when absent or not JSON). */
static json_object *split(const char *msg, size_t len, char *w1, size_t n1, char *w2, size_t n2)
{
	const char *nl = memchr(msg, '\n', len);
	size_t head = nl ? (size_t)(nl - msg) : len;
	char line[API_TASK_ID_MAX + sizeof ((api_tstore *)0)->owner + 32];
	if (head >= sizeof line)
		return NULL;
	memcpy(line, msg, head);
	line[head] = '\0';
	char *sp = strchr(line, ' ');
	w1[0] = w2[0] = '\0';
	if (!sp)
		return NULL;
	*sp++ = '\0';
	char *sp2 = strchr(sp, ' ');
	if (sp2)
		*sp2++ = '\0';
	snprintf(w1, n1, "%s", sp);
	if (sp2)
		snprintf(w2, n2, "%s", sp2);
	if (!nl)
		return NULL;
	json_tokener *tok = json_tokener_new();
	json_object *o = tok ? json_tokener_parse_ex(tok, nl + 1, (int)(len - head - 1)) : NULL;
	json_tokener_free(tok);
	return o;
}

/* A message on this process's channel: a cancel or an input for a task
 * it runs.  On the subscriber thread. */
static void on_own(void *arg, const char *chan, const char *msg, size_t len)
{
	(void)chan;
	api_tstore *ts = arg;
	char id[API_TASK_ID_MAX], unused[8];
	json_object *payload = split(msg, len, id, sizeof id, unused, sizeof unused);
	if (len > 7 && strncmp(msg, "cancel ", 7) == 0 && id[0])
		ts->hooks.cancel(ts->srv, id);
	else if (len > 6 && strncmp(msg, "input ", 6) == 0 && id[0] &&
		 json_object_is_type(payload, json_type_object))
		ts->hooks.input(ts->srv, id, payload);
	json_object_put(payload);
}

/* News for every process: a task's status change (for the listen streams
 * that asked for it: every process's, the writer's too, since the writer
 * may be any process), or a list_changed or resources/updated raised in
 * another process.  On the subscriber thread. */
static void on_news(void *arg, const char *chan, const char *msg, size_t len)
{
	(void)chan;
	api_tstore *ts = arg;
	char origin[sizeof ts->owner], word[API_TASK_ID_MAX];
	json_object *payload = split(msg, len, origin, sizeof origin, word, sizeof word);
	int elsewhere = origin[0] && strcmp(origin, ts->owner) != 0;
	if (len > 7 && strncmp(msg, "status ", 7) == 0 && payload && word[0]) {
		ts->hooks.status(ts->srv, word, payload);
		payload = NULL;
	} else if (len > 5 && strncmp(msg, "list ", 5) == 0 && elsewhere) {
		int kind = atoi(word);
		if (kind == API_KIND_TOOLS || kind == API_KIND_RESOURCES || kind == API_KIND_PROMPTS)
			ts->hooks.list_changed(ts->srv, kind);
	} else if (len > 8 && strncmp(msg, "updated ", 8) == 0 && elsewhere &&
		   json_object_is_type(payload, json_type_string)) {
		ts->hooks.resource_updated(ts->srv, json_object_get_string(payload));
	}
	json_object_put(payload);
}

static int publish(api_tstore *ts, const char *chan, const char *head, json_object *payload)
{
	size_t jl = 0;
	const char *j = payload ? eng_json_text(payload, &jl) : NULL;
	size_t hl = strlen(head);
	char *buf = malloc(hl + 1 + jl + 1);
	if (!buf)
		return MCP_ENOMEM;
	memcpy(buf, head, hl);
	size_t n = hl;
	if (j) {
		buf[n++] = '\n';
		memcpy(buf + n, j, jl);
		n += jl;
	}
	int rc = note(ts, tp_store_publish(ts->st, chan, buf, n));
	free(buf);
	return rc;
}

int api_tstore_send(api_tstore *ts, const char *owner, const char *kind, const char *id,
		    json_object *payload)
{
	char chan[sizeof ts->owner + 4], head[API_TASK_ID_MAX + 16];
	snprintf(chan, sizeof chan, "o:%s", owner);
	snprintf(head, sizeof head, "%s %s", kind, id);
	return publish(ts, chan, head, payload);
}

int api_tstore_announce(api_tstore *ts, const char *id, json_object *params)
{
	char head[sizeof ts->owner + API_TASK_ID_MAX + 16];
	snprintf(head, sizeof head, "status %s %s", ts->owner, id);
	return publish(ts, "n", head, params);
}

int api_tstore_broadcast_list(api_tstore *ts, int kind)
{
	char head[sizeof ts->owner + 32];
	snprintf(head, sizeof head, "list %s %d", ts->owner, kind);
	return publish(ts, "n", head, NULL);
}

int api_tstore_broadcast_updated(api_tstore *ts, const char *uri)
{
	char head[sizeof ts->owner + 32];
	snprintf(head, sizeof head, "updated %s -", ts->owner);
	json_object *u = json_object_new_string(uri);
	int rc = u ? publish(ts, "n", head, u) : MCP_ENOMEM;
	json_object_put(u);
	return rc;
}

/* ---- leases ------------------------------------------------------------------- */

static void lease_key(char *out, size_t n, const char *id)
{
	snprintf(out, n, "l:%s", id);
}

/* One pass of the lease thread: every lease renewed, every record read
 * for what a lost message carried.  Without ts->mu around the store calls;
 * the list is copied first. */
static void renew_all(api_tstore *ts)
{
	pthread_mutex_lock(&ts->mu);
	size_t n = 0;
	for (lease *l = ts->leases; l; l = l->next)
		n++;
	lease *snap = n ? calloc(n, sizeof *snap) : NULL;
	n = 0;
	for (lease *l = ts->leases; snap && l; l = l->next)
		snap[n++] = *l;
	pthread_mutex_unlock(&ts->mu);
	for (size_t i = 0; i < n; i++) {
		char key[API_TASK_ID_MAX + 4];
		lease_key(key, sizeof key, snap[i].id);
		uint64_t nv = 0;
		int rc = tp_store_cas(ts->st, key, snap[i].ver, ts->owner, strlen(ts->owner),
				      ts->lease_ms, &nv);
		if (rc == TP_STORE_ENOENT || rc == TP_STORE_ESTALE) {
			/* Lapsed (this process stalled past it, or the store
			 * restarted empty): the task is no longer ours. */
			api_tstore_release(ts, snap[i].id, 0);
			ts->hooks.lost(ts->srv, snap[i].id);
			continue;
		}
		if (rc != TP_STORE_OK) {
			note(ts, rc);
			continue; /* the store is away: try again next pass */
		}
		pthread_mutex_lock(&ts->mu);
		for (lease *l = ts->leases; l; l = l->next)
			if (strcmp(l->id, snap[i].id) == 0)
				l->ver = nv;
		pthread_mutex_unlock(&ts->mu);
		json_object *rec = NULL;
		uint64_t ver;
		if (api_tstore_read(ts, snap[i].id, &rec, &ver) != MCP_OK)
			continue;
		if (json_object_get_boolean(api_get(rec, "x")))
			ts->hooks.cancel(ts->srv, snap[i].id);
		else if (json_object_is_type(api_get(rec, "rs"), json_type_object) &&
			 json_object_object_length(api_get(rec, "rs")) > 0)
			ts->hooks.input(ts->srv, snap[i].id, api_get(rec, "rs"));
		json_object_put(rec);
	}
	free(snap);
}

static void *lease_thread(void *arg)
{
	api_tstore *ts = arg;
	pthread_mutex_lock(&ts->mu);
	while (!ts->stopping) {
		struct timespec until;
		eng_abstime(eng_now_ns() + ts->lease_ms / 3 * ENG_NS_PER_MS, &until);
		while (!ts->stopping && pthread_cond_timedwait(&ts->cv, &ts->mu, &until) != ETIMEDOUT)
			;
		if (ts->stopping)
			break;
		pthread_mutex_unlock(&ts->mu);
		renew_all(ts);
		pthread_mutex_lock(&ts->mu);
	}
	pthread_mutex_unlock(&ts->mu);
	return NULL;
}

int api_tstore_start(api_tstore *ts, const api_tstore_hooks *hooks)
{
	pthread_mutex_lock(&ts->mu);
	if (ts->started) {
		pthread_mutex_unlock(&ts->mu);
		return MCP_OK;
	}
	ts->hooks = *hooks;
	if (tp_thread_create(&ts->thread, NULL, lease_thread, ts) != 0) {
		pthread_mutex_unlock(&ts->mu);
		return MCP_ESYS;
	}
	ts->started = 1;
	pthread_mutex_unlock(&ts->mu);
	char chan[sizeof ts->owner + 4];
	snprintf(chan, sizeof chan, "o:%s", ts->owner);
	/* Not confirmed in time (the store is away): the subscriber keeps
	 * trying, and the lease thread's reads cover what it misses. */
	int rc = tp_store_subscribe(ts->st, chan, on_own, ts);
	if (rc == TP_STORE_OK)
		rc = tp_store_subscribe(ts->st, "n", on_news, ts);
	if (rc != TP_STORE_OK)
		note(ts, rc);
	return MCP_OK;
}

int api_tstore_lease_alive(api_tstore *ts, const char *id)
{
	char key[API_TASK_ID_MAX + 4];
	lease_key(key, sizeof key, id);
	char *v = NULL;
	size_t len;
	uint64_t ver;
	int rc = tp_store_get(ts->st, key, &v, &len, &ver);
	free(v);
	if (rc == TP_STORE_OK)
		return 1;
	return rc == TP_STORE_ENOENT ? 0 : note(ts, rc);
}

void api_tstore_release(api_tstore *ts, const char *id, int delete_key)
{
	pthread_mutex_lock(&ts->mu);
	for (lease **pp = &ts->leases; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->id, id) == 0) {
			lease *l = *pp;
			*pp = l->next;
			free(l);
			break;
		}
	pthread_mutex_unlock(&ts->mu);
	if (delete_key) {
		char key[API_TASK_ID_MAX + 4];
		lease_key(key, sizeof key, id);
		int rc = tp_store_del(ts->st, key);
		if (rc != TP_STORE_ENOENT)
			note(ts, rc);
	}
}

/* ---- records -------------------------------------------------------------------- */

static void record_key(char *out, size_t n, const char *id)
{
	snprintf(out, n, "t:%s", id);
}

int api_tstore_create(api_tstore *ts, const char *id, json_object *rec, int64_t ttl_ms)
{
	lease *l = calloc(1, sizeof *l);
	if (!l)
		return MCP_ENOMEM;
	snprintf(l->id, sizeof l->id, "%s", id);
	char key[API_TASK_ID_MAX + 4];
	/* The lease first: a reader that finds the record finds it alive. */
	lease_key(key, sizeof key, id);
	int rc = tp_store_create(ts->st, key, ts->owner, strlen(ts->owner), ts->lease_ms);
	if (rc == TP_STORE_OK) {
		size_t len;
		const char *text = eng_json_text(rec, &len);
		record_key(key, sizeof key, id);
		rc = text ? tp_store_create(ts->st, key, text, len, ttl_ms) : TP_STORE_ENOMEM;
		if (rc != TP_STORE_OK) {
			int keep = rc;
			lease_key(key, sizeof key, id);
			tp_store_del(ts->st, key);
			rc = keep;
		}
	}
	if (rc != TP_STORE_OK) {
		free(l);
		return note(ts, rc);
	}
	l->ver = 1;
	pthread_mutex_lock(&ts->mu);
	l->next = ts->leases;
	ts->leases = l;
	pthread_mutex_unlock(&ts->mu);
	return MCP_OK;
}

int api_tstore_read(api_tstore *ts, const char *id, json_object **rec, uint64_t *ver)
{
	char key[API_TASK_ID_MAX + 4];
	record_key(key, sizeof key, id);
	char *text = NULL;
	size_t len = 0;
	*rec = NULL;
	int rc = tp_store_get(ts->st, key, &text, &len, ver);
	if (rc != TP_STORE_OK)
		return note(ts, rc);
	json_tokener *tok = json_tokener_new();
	json_object *o = tok && len < INT32_MAX ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
	json_tokener_free(tok);
	free(text);
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		pthread_mutex_lock(&ts->mu);
		snprintf(ts->err, sizeof ts->err, "%s: the record of task %s is not JSON",
			 tp_store_name(ts->st), id);
		pthread_mutex_unlock(&ts->mu);
		return MCP_ESYS;
	}
	*rec = o;
	return MCP_OK;
}

int api_tstore_write(api_tstore *ts, const char *id, uint64_t ver, json_object *rec, int64_t ttl_ms)
{
	char key[API_TASK_ID_MAX + 4];
	record_key(key, sizeof key, id);
	size_t len;
	const char *text = eng_json_text(rec, &len);
	if (!text)
		return MCP_ENOMEM;
	return note(ts, tp_store_cas(ts->st, key, ver, text, len, ttl_ms, NULL));
}

void api_tstore_close(mcp_server *srv)
{
	api_tstore *ts = srv->tstore;
	if (!ts)
		return;
	pthread_mutex_lock(&ts->mu);
	ts->stopping = 1;
	pthread_cond_broadcast(&ts->cv);
	int started = ts->started;
	pthread_mutex_unlock(&ts->mu);
	if (started)
		pthread_join(ts->thread, NULL);
	/* The subscriber thread is joined here: no hook runs after this. */
	tp_store_close(ts->st);
	while (ts->leases) {
		lease *l = ts->leases;
		ts->leases = l->next;
		free(l);
	}
	pthread_cond_destroy(&ts->cv);
	pthread_mutex_destroy(&ts->mu);
	free(ts);
	srv->tstore = NULL;
}
