/*
 * auth-keys.c - the key set fetched from the authorization server: its
 * URL (given, or the jwks_uri of the issuer's metadata), the thread that
 * fetches it again when its caching headers say so, and the fetches that
 * a token with an unknown kid may ask for, at most one per interval.
 *
 * The HTTP threads never fetch: they ask this thread and wait, bounded,
 * for the fetch to end (auth_keysrc_kid_miss).  The set itself lives in
 * the verifier (api/jwt/jwt.c), which keeps the old set whenever a new
 * document is refused, so a failed fetch changes nothing but the reason
 * reported.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/auth.h"
#include "api/internal.h"
#include "transport/sigpipe.h"

/* The key set file limit of api/jwt/jwt.c holds for a fetched document too. */
#define JWKS_FETCH_MAX (1u << 20)
/* Metadata documents are small; this is far above any real one. */
#define METADATA_MAX (256u << 10)

struct auth_keysrc {
	auth_jwt *jwt;
	char *jwks_url;            /* NULL until discovered */
	char *issuer;
	auth_keysrc_conf conf;     /* its strings point at the two above */
	_Atomic int stop;          /* also cuts an exchange in flight */
	pthread_t thread;
	int started;
	/* Lock order: mu, then the verifier's lock (through auth_jwt_*). */
	pthread_mutex_t mu;
	pthread_cond_t cond;       /* CLOCK_MONOTONIC; fetch asked, fetch ended, stop */
	int want;                  /* a fetch is asked for (an unknown kid) */
	int fetching;
	int64_t last_miss_ms;      /* monotonic; when a miss last asked; 0: never */
	int64_t next_ms;           /* when the set expires and is fetched again */
	unsigned long generation;  /* fetches ended */
	int last_rc;
	unsigned long fetches;
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timespec deadline_at(int64_t ms)
{
	return (struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
}

/* The metadata URLs of an issuer, in the order RFC 8414 section 3.1 and
 * OpenID Connect Discovery 1.0 section 4 give: the well-known suffix
 * inserted between host and path, then appended to the issuer. */
static int metadata_urls(const char *issuer, char **first, char **second)
{
	*first = *second = NULL;
	const char *scheme = strstr(issuer, "://");
	if (!scheme)
		return MCP_EINVAL;
	const char *path = strchr(scheme + 3, '/');
	size_t origin = path ? (size_t)(path - issuer) : strlen(issuer);
	const char *tail = path ? path : "";
	size_t tlen = strlen(tail);
	while (tlen && tail[tlen - 1] == '/')
		tlen--;
	static const char oas[] = "/.well-known/oauth-authorization-server";
	static const char oidc[] = "/.well-known/openid-configuration";
	size_t n1 = origin + sizeof oas + tlen, n2 = origin + tlen + sizeof oidc;
	*first = malloc(n1);
	*second = malloc(n2);
	if (!*first || !*second) {
		free(*first);
		free(*second);
		*first = *second = NULL;
		return MCP_ENOMEM;
	}
	snprintf(*first, n1, "%.*s%s%.*s", (int)origin, issuer, oas, (int)tlen, tail);
	snprintf(*second, n2, "%.*s%.*s%s", (int)origin, issuer, (int)tlen, tail, oidc);
	return MCP_OK;
}

/* One metadata document: its jwks_uri (*out, caller frees) when it is an
 * object whose issuer is ours (RFC 8414 section 3.3: else it must not be
 * used) and whose jwks_uri may be fetched. */
static int metadata_jwks_uri(auth_keysrc *s, const char *url, char **out, char *why,
			     size_t whysz)
{
	auth_fetch f = { .url = url, .max_bytes = METADATA_MAX, .timeout_ms = s->conf.timeout_ms,
			 .cancel = &s->stop };
	int rc = auth_fetch_run(&f, why, whysz);
	if (rc != MCP_OK)
		return rc;
	rc = MCP_EINVAL;
	json_object *o = NULL;
	if (f.status != 200) {
		snprintf(why, whysz, "%s answered HTTP %ld", url, f.status);
		rc = MCP_ESYS;
	} else if (!(o = json_tokener_parse(f.body)) || !json_object_is_type(o, json_type_object)) {
		snprintf(why, whysz, "%s is not a JSON object", url);
	} else {
		json_object *iss = api_get(o, "issuer"), *ju = api_get(o, "jwks_uri");
		if (!json_object_is_type(iss, json_type_string) ||
		    strcmp(json_object_get_string(iss), s->issuer) != 0)
			snprintf(why, whysz, "the metadata at %s names another issuer than %s", url,
				 s->issuer);
		else if (!json_object_is_type(ju, json_type_string))
			snprintf(why, whysz, "the metadata at %s has no jwks_uri", url);
		else if (!auth_fetch_url_allowed(json_object_get_string(ju)))
			snprintf(why, whysz,
				 "the jwks_uri of %s is not an https URL (plain http only to a "
				 "loopback host)",
				 url);
		else if (!(*out = strdup(json_object_get_string(ju))))
			rc = MCP_ENOMEM;
		else
			rc = MCP_OK;
	}
	json_object_put(o);
	auth_fetch_clear(&f);
	return rc;
}

static int discover(auth_keysrc *s, char *why, size_t whysz)
{
	char *u1, *u2;
	int rc = metadata_urls(s->issuer, &u1, &u2);
	if (rc != MCP_OK) {
		snprintf(why, whysz, "the issuer %s is not a URL", s->issuer);
		return rc;
	}
	char *found = NULL;
	char why1[300] = "";
	rc = metadata_jwks_uri(s, u1, &found, why1, sizeof why1);
	if (rc != MCP_OK && rc != MCP_ENOMEM && rc != MCP_ECANCELED) {
		rc = metadata_jwks_uri(s, u2, &found, why, whysz);
		if (rc != MCP_OK) {
			size_t l = strlen(why);
			snprintf(why + l, whysz - l, "; before it, %s", why1);
		}
	} else if (rc != MCP_OK) {
		snprintf(why, whysz, "%s", why1);
	}
	free(u1);
	free(u2);
	if (rc == MCP_OK) {
		pthread_mutex_lock(&s->mu);
		s->jwks_url = found;
		s->conf.jwks_url = found;
		pthread_mutex_unlock(&s->mu);
	}
	return rc;
}

/* One fetch of the key set (discovery first when its URL is not known
 * yet): MCP_OK with *life_ms the set's lifetime and *nkeys. */
static int fetch_once(auth_keysrc *s, int64_t *life_ms, size_t *nkeys, char *why, size_t whysz)
{
	*nkeys = 0;
	int rc = MCP_OK;
	if (!s->jwks_url && (rc = discover(s, why, whysz)) != MCP_OK)
		return rc;
	auth_fetch f = { .url = s->jwks_url, .max_bytes = JWKS_FETCH_MAX,
			 .timeout_ms = s->conf.timeout_ms, .cancel = &s->stop };
	if ((rc = auth_fetch_run(&f, why, whysz)) != MCP_OK)
		return rc;
	if (f.status != 200) {
		snprintf(why, whysz, "%s answered HTTP %ld", f.url, f.status);
		rc = MCP_ESYS;
	} else if ((rc = auth_jwt_set_jwks(s->jwt, f.body, f.len, nkeys)) != MCP_OK) {
		/* The verifier kept its old set; say why with the URL. */
		char inner[300];
		auth_jwt_error(s->jwt, inner, sizeof inner);
		snprintf(why, whysz, "the key set at %s was refused: %s", f.url, inner);
	} else {
		*life_ms = auth_cache_lifetime_ms(f.cache_control, f.expires, f.date,
						  (int64_t)time(NULL), s->conf.ttl_default_ms,
						  s->conf.ttl_min_ms, s->conf.ttl_max_ms);
	}
	auth_fetch_clear(&f);
	return rc;
}

/* Fetches once and records the outcome; `mu` not held.  Returns the rc. */
static int fetch_and_record(auth_keysrc *s)
{
	char why[600] = "";
	int64_t life = 0;
	size_t nkeys = 0;
	int rc = fetch_once(s, &life, &nkeys, why, sizeof why);
	if (rc != MCP_OK && rc != MCP_ECANCELED)
		auth_jwt_note_error(s->jwt, why);
	pthread_mutex_lock(&s->mu);
	s->fetching = 0;
	s->fetches++;
	s->generation++;
	s->last_rc = rc;
	/* A failure is tried again after the kid-miss interval: soon, yet
	 * never a storm against a server that is down. */
	s->next_ms = mono_ms() + (rc == MCP_OK ? life : s->conf.miss_interval_ms);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (s->conf.notify && rc != MCP_ECANCELED)
		s->conf.notify(rc, nkeys, rc == MCP_OK ? "" : why, s->conf.notify_user);
	return rc;
}

/* The fetcher: sleeps until the set expires or a fetch is asked for. */
static void *fetcher_main(void *arg)
{
	auth_keysrc *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!atomic_load(&s->stop)) {
		int64_t now = mono_ms();
		if (!s->want && now < s->next_ms) {
			struct timespec ts = deadline_at(s->next_ms);
			pthread_cond_timedwait(&s->cond, &s->mu, &ts);
			continue;
		}
		s->want = 0;
		s->fetching = 1;
		pthread_mutex_unlock(&s->mu);
		fetch_and_record(s);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int auth_keysrc_start(auth_jwt *jwt, const auth_keysrc_conf *conf, auth_keysrc **out)
{
	*out = NULL;
	auth_keysrc *s = calloc(1, sizeof *s);
	if (!s)
		return MCP_ENOMEM;
	s->jwt = jwt;
	s->conf = *conf;
	s->jwks_url = conf->jwks_url ? strdup(conf->jwks_url) : NULL;
	s->issuer = conf->issuer ? strdup(conf->issuer) : NULL;
	pthread_condattr_t ca;
	int ok = (!conf->jwks_url || s->jwks_url) && (!conf->issuer || s->issuer) &&
		 pthread_condattr_init(&ca) == 0;
	if (ok) {
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		ok = pthread_cond_init(&s->cond, &ca) == 0;
		pthread_condattr_destroy(&ca);
	}
	if (ok && pthread_mutex_init(&s->mu, NULL) != 0) {
		pthread_cond_destroy(&s->cond);
		ok = 0;
	}
	if (!ok) {
		free(s->jwks_url);
		free(s->issuer);
		free(s);
		return MCP_ENOMEM;
	}
	s->conf.jwks_url = s->jwks_url;
	s->conf.issuer = s->issuer;
	s->fetching = 1;
	int rc = fetch_and_record(s);
	if (tp_thread_create(&s->thread, NULL, fetcher_main, s) != 0) {
		auth_keysrc_free(s);
		return MCP_ESYS;
	}
	s->started = 1;
	*out = s;
	return rc;
}

void auth_keysrc_free(auth_keysrc *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	atomic_store(&s->stop, 1);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	free(s->jwks_url);
	free(s->issuer);
	free(s);
}

int auth_keysrc_kid_miss(auth_keysrc *s, const char **reason)
{
	pthread_mutex_lock(&s->mu);
	int64_t now = mono_ms();
	/* Only fetches asked by misses count against the interval: the
	 * scheduled ones are the set's own, and a rotation right after one
	 * must still be seen. */
	if (!s->want && !s->fetching) {
		if (s->last_miss_ms && now - s->last_miss_ms < s->conf.miss_interval_ms) {
			pthread_mutex_unlock(&s->mu);
			*reason = "the token's key id is not in the key set, which was fetched "
				  "again for an unknown key id a short time ago";
			return 0;
		}
		s->want = 1;
		s->last_miss_ms = now;
		pthread_cond_broadcast(&s->cond);
	}
	unsigned long gen = s->generation;
	int64_t until = now + s->conf.miss_wait_ms;
	struct timespec ts = deadline_at(until);
	while (s->generation == gen && !atomic_load(&s->stop) && mono_ms() < until)
		if (pthread_cond_timedwait(&s->cond, &s->mu, &ts) == ETIMEDOUT)
			break;
	int ended = s->generation != gen, rc = s->last_rc;
	pthread_mutex_unlock(&s->mu);
	if (!ended)
		*reason = "the token's key id is not in the key set; the key set is being "
			  "fetched from the issuer again, retry shortly";
	else if (rc != MCP_OK)
		*reason = "the token's key id is not in the key set, and the key set could not "
			  "be fetched from the issuer again";
	return ended && rc == MCP_OK;
}

unsigned long auth_keysrc_fetches(auth_keysrc *s)
{
	pthread_mutex_lock(&s->mu);
	unsigned long n = s->fetches;
	pthread_mutex_unlock(&s->mu);
	return n;
}
