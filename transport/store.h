/*
 * store.h - the shared state store: versioned records with a time to live,
 * and publish/subscribe, kept outside the process so that several servers
 * (or one restarted) see the same tasks and notifications.
 *
 * The MCP layer talks to this interface only.  A backend is one file that
 * fills a tp_store_backend: memory (store-mem.c: one process, the tests'
 * reference) and Redis (store-redis.c, through hiredis opened at run time).
 * A third is one more file and one line in store.c's table.
 *
 * The operations are the few a fleet needs to agree without a lock server:
 *  - create: a record appears only if absent (durable when it returns: the
 *    Redis backend has the write acknowledged by the server);
 *  - get: the record and its version;
 *  - cas: replace the record only if its version is still the one read, so
 *    two processes updating one task cannot lose each other's change (the
 *    loser reads again); a lease is a record renewed by cas;
 *  - del;
 *  - publish/subscribe: at-most-once messages on named channels (Redis
 *    pub/sub semantics: a subscriber that is down misses them, so state
 *    that must not be missed lives in a record and the message is a hint).
 *
 * Keys and channels are byte strings chosen by the caller; the store puts
 * its prefix (default "mcp:v1:") in front of them.  Values are byte strings
 * of any content.
 *
 * Errors: every call returns TP_STORE_OK or one of the codes below, and
 * tp_store_error() then says why in words, without the password.
 *
 * Threads: every call may be made from any thread and may block up to the
 * command timeout (the Redis backend talks to the server synchronously), so
 * the MCP layer calls the store from workers only, never from a reader or
 * writer thread.  Subscription callbacks run on the store's own thread: they
 * may copy the message, queue work or fire a token, and must not call the
 * store back (the subscriber thread would wait for itself).
 */
#ifndef MCP_TRANSPORT_STORE_H
#define MCP_TRANSPORT_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_store tp_store;

enum {
	TP_STORE_OK = 0,
	TP_STORE_ENOENT = -1,   /* no such record (absent or expired) */
	TP_STORE_EEXIST = -2,   /* create: the record exists */
	TP_STORE_ESTALE = -3,   /* cas: the version moved (someone wrote first) */
	TP_STORE_ETIMEDOUT = -4, /* no answer within the command timeout */
	TP_STORE_EDOWN = -5,    /* cannot be reached: refused, reset, or backing
				   off before the next reconnection */
	TP_STORE_EPROTO = -6,   /* the store answered something unexpected */
	TP_STORE_ENOMEM = -7,
	TP_STORE_EINVAL = -8,   /* a bad URL, key or argument */
};

/* A message on a subscribed channel.  `chan` is the caller's channel name
 * (without the prefix); `msg` holds `len` bytes and is valid during the
 * call only. */
typedef void (*tp_store_msg_fn)(void *arg, const char *chan, const char *msg, size_t len);

typedef struct tp_store_opts {
	size_t struct_size;         /* sizeof(tp_store_opts) */
	int64_t connect_timeout_ms; /* 0: 1000 */
	int64_t command_timeout_ms; /* 0: 1000 */
	int64_t backoff_max_ms;     /* 0: 2000; the first retry waits 50 ms, doubling */
	const char *prefix;         /* NULL: "mcp:v1:" */
} tp_store_opts;

/* A backend: its URL scheme and its operations on its own state.  `open`
 * parses the part of the URL after "scheme:" and returns its state in
 * *state, or an error with a message (never containing a password) in
 * err.  The others have the meaning above; `get` returns a malloc'd copy
 * the caller frees (with a NUL after the bytes, not counted in *len);
 * `cas` and `create` set the record's time to live to ttl_ms (> 0) from
 * now.  `subscribe` may be called at any time except from a subscription
 * callback.  `error` returns the calling thread's last failure, in words;
 * each backend keeps its own (thread-local) text. */
typedef struct tp_store_backend {
	const char *scheme;
	int (*open)(const char *rest, const tp_store_opts *o, void **state, char *err, size_t errlen);
	int (*create)(void *st, const char *key, const void *val, size_t len, int64_t ttl_ms);
	int (*get)(void *st, const char *key, char **val, size_t *len, uint64_t *ver);
	int (*cas)(void *st, const char *key, uint64_t ver, const void *val, size_t len,
		   int64_t ttl_ms, uint64_t *newver);
	int (*del)(void *st, const char *key);
	int (*publish)(void *st, const char *chan, const void *msg, size_t len);
	int (*subscribe)(void *st, const char *chan, tp_store_msg_fn fn, void *arg);
	const char *(*error)(void *st);
	void (*close)(void *st);
} tp_store_backend;

/* Opens the store a URL names:
 *   memory:                         this process only (tests, the default's
 *                                   reference)
 *   redis://[:PASSWORD@]HOST[:PORT][/DB]   Redis or Valkey over TCP (port 6379)
 *   unix:PATH[?db=N&password=PW]    Redis over a Unix socket
 * Returns 0 and *out, or an error with a reason in err (the URL's
 * password is never copied there).  `o` may be NULL. */
int tp_store_open(const char *url, const tp_store_opts *o, tp_store **out, char *err, size_t errlen);

/* Ends every subscription (its thread joined) and frees the store.  No
 * call may be in progress or start. */
void tp_store_close(tp_store *s);

/* The URL with any password replaced by "***", for logs. */
const char *tp_store_name(const tp_store *s);

int tp_store_create(tp_store *s, const char *key, const void *val, size_t len, int64_t ttl_ms);
int tp_store_get(tp_store *s, const char *key, char **val, size_t *len, uint64_t *ver);
int tp_store_cas(tp_store *s, const char *key, uint64_t ver, const void *val, size_t len,
		 int64_t ttl_ms, uint64_t *newver);
int tp_store_del(tp_store *s, const char *key);
int tp_store_publish(tp_store *s, const char *chan, const void *msg, size_t len);
int tp_store_subscribe(tp_store *s, const char *chan, tp_store_msg_fn fn, void *arg);

/* Why the calling thread's last failed call on `s` failed; never NULL. */
const char *tp_store_error(tp_store *s);

/* The backends (store-mem.c, store-redis.c). */
extern const tp_store_backend tp_store_memory;
extern const tp_store_backend tp_store_redis;
extern const tp_store_backend tp_store_redis_unix;

#endif /* MCP_TRANSPORT_STORE_H */
