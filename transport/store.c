/*
 * store.c - opens the backend a store URL names and forwards each call to
 * it, after the checks every backend would repeat (arguments, key length).
 * The backends are store-mem.c and store-redis.c; see store.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/store.h"

/* Keys and channel names are the caller's (a task id is at most 128
 * bytes); this bounds what a bug or a hostile id can make the store hold. */
#define KEY_MAX 512

struct tp_store {
	const tp_store_backend *b;
	void *st;
	char *name; /* the URL, password hidden */
};

static const tp_store_backend *const backends[] = {
	&tp_store_memory,
#ifdef HAVE_HIREDIS
	&tp_store_redis,
	&tp_store_redis_unix,
#endif
};

static __thread char open_err[256];

/* The URL with the password of "redis://:PW@host" or "?password=PW"
 * replaced by "***". */
static char *redact(const char *url)
{
	size_t n = strlen(url);
	char *out = malloc(n + 4);
	if (!out)
		return NULL;
	const char *scheme_end = strstr(url, "://");
	const char *at = scheme_end ? strchr(scheme_end + 3, '@') : NULL;
	const char *slash = scheme_end ? strchr(scheme_end + 3, '/') : NULL;
	if (at && (!slash || at < slash)) {
		const char *user_end = memchr(scheme_end + 3, ':', (size_t)(at - scheme_end - 3));
		const char *cut = user_end ? user_end + 1 : scheme_end + 3;
		snprintf(out, n + 4, "%.*s***%s", (int)(cut - url), url, at);
		return out;
	}
	const char *pw = strstr(url, "password=");
	if (pw) {
		const char *end = strchr(pw, '&');
		snprintf(out, n + 4, "%.*spassword=***%s", (int)(pw - url), url, end ? end : "");
		return out;
	}
	memcpy(out, url, n + 1);
	return out;
}

int tp_store_open(const char *url, const tp_store_opts *o, tp_store **out, char *err, size_t errlen)
{
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (!url) {
		snprintf(err, errlen, "no store URL");
		return TP_STORE_EINVAL;
	}
	tp_store_opts def = { .struct_size = sizeof def };
	if (!o || o->struct_size < sizeof *o)
		o = &def;
	const char *colon = strchr(url, ':');
	const tp_store_backend *b = NULL;
	for (size_t i = 0; colon && i < sizeof backends / sizeof backends[0]; i++)
		if (strlen(backends[i]->scheme) == (size_t)(colon - url) &&
		    memcmp(backends[i]->scheme, url, (size_t)(colon - url)) == 0)
			b = backends[i];
	if (!b) {
#ifndef HAVE_HIREDIS
		if (colon && (strncmp(url, "redis:", 6) == 0 || strncmp(url, "unix:", 5) == 0)) {
			snprintf(err, errlen, "this libmcp was built without hiredis: "
				 "no Redis store (configure with libhiredis-dev installed)");
			return TP_STORE_EINVAL;
		}
#endif
		snprintf(err, errlen, "unknown store URL scheme (use memory:, redis:// or unix:)");
		return TP_STORE_EINVAL;
	}
	tp_store *s = calloc(1, sizeof *s);
	if (!s || !(s->name = redact(url))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return TP_STORE_ENOMEM;
	}
	s->b = b;
	int rc = b->open(colon + 1, o, &s->st, err, errlen);
	if (rc != TP_STORE_OK) {
		free(s->name);
		free(s);
		return rc;
	}
	*out = s;
	return TP_STORE_OK;
}

void tp_store_close(tp_store *s)
{
	if (!s)
		return;
	s->b->close(s->st);
	free(s->name);
	free(s);
}

const char *tp_store_name(const tp_store *s)
{
	return s ? s->name : "(none)";
}

static int bad_key(const char *key)
{
	if (!key || !key[0] || strlen(key) > KEY_MAX) {
		snprintf(open_err, sizeof open_err, "a store key or channel is empty or longer than %d bytes",
			 KEY_MAX);
		return 1;
	}
	open_err[0] = '\0';
	return 0;
}

int tp_store_create(tp_store *s, const char *key, const void *val, size_t len, int64_t ttl_ms)
{
	if (bad_key(key) || (!val && len) || ttl_ms <= 0)
		return TP_STORE_EINVAL;
	return s->b->create(s->st, key, val, len, ttl_ms);
}

int tp_store_get(tp_store *s, const char *key, char **val, size_t *len, uint64_t *ver)
{
	*val = NULL;
	*len = 0;
	*ver = 0;
	if (bad_key(key))
		return TP_STORE_EINVAL;
	return s->b->get(s->st, key, val, len, ver);
}

int tp_store_cas(tp_store *s, const char *key, uint64_t ver, const void *val, size_t len,
		 int64_t ttl_ms, uint64_t *newver)
{
	if (bad_key(key) || (!val && len) || ttl_ms <= 0 || ver == 0)
		return TP_STORE_EINVAL;
	uint64_t ignored;
	return s->b->cas(s->st, key, ver, val, len, ttl_ms, newver ? newver : &ignored);
}

int tp_store_del(tp_store *s, const char *key)
{
	if (bad_key(key))
		return TP_STORE_EINVAL;
	return s->b->del(s->st, key);
}

int tp_store_publish(tp_store *s, const char *chan, const void *msg, size_t len)
{
	if (bad_key(chan) || (!msg && len))
		return TP_STORE_EINVAL;
	return s->b->publish(s->st, chan, msg, len);
}

int tp_store_subscribe(tp_store *s, const char *chan, tp_store_msg_fn fn, void *arg)
{
	if (bad_key(chan) || !fn)
		return TP_STORE_EINVAL;
	return s->b->subscribe(s->st, chan, fn, arg);
}

const char *tp_store_error(tp_store *s)
{
	if (open_err[0])
		return open_err;
	const char *e = s ? s->b->error(s->st) : NULL;
	return e && e[0] ? e : "no error";
}
