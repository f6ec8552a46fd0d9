/*
 * util.c - the engine's small shared helpers: the monotonic clock, condition
 * variables on that clock, compact JSON serialisation, strict tokeners and
 * the parse that runs them.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/eng.h"

int64_t eng_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void eng_abstime(int64_t deadline_ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(deadline_ns / 1000000000);
	ts->tv_nsec = (long)(deadline_ns % 1000000000);
}

int eng_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc = pthread_condattr_init(&ca);
	if (rc)
		return MCP_ESYS;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return rc ? MCP_ESYS : MCP_OK;
}

int eng_json_finite(json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_double:
		return isfinite(json_object_get_double(o));
	case json_type_array: {
		size_t n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++)
			if (!eng_json_finite(json_object_array_get_idx(o, i)))
				return 0;
		return 1;
	}
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			(void)key;
			if (!eng_json_finite(val))
				return 0;
		}
		return 1;
	}
	default:
		return 1;
	}
}

#define ENG_JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

const char *eng_json_text(json_object *o, size_t *len)
{
	size_t n = 0;
	/* json-c writes NaN and Infinity, which are not JSON (jsonout.c). */
	if (!eng_json_finite(o)) {
		if (len)
			*len = 0;
		return NULL;
	}
	/* json-c does not report a failed append while it serialises: it
	 * leaves that piece out and returns the rest, which is not the JSON
	 * of `o` (often not JSON at all).  Its buffer only fails by realloc,
	 * which sets ENOMEM: such a text is no text. */
	int saved = errno;
	errno = 0;
	const char *s = json_object_to_json_string_length(o, ENG_JSON_FLAGS, &n);
	if (errno == ENOMEM)
		s = NULL;
	errno = saved;
	if (len)
		*len = s ? n : 0;
	return s;
}

json_tokener *eng_json_tokener(int max_depth)
{
	json_tokener *t = json_tokener_new_ex(max_depth);
	if (t)
		json_tokener_set_flags(t, JSON_TOKENER_STRICT);
	return t;
}

/* The "C" locale object, or 0 if the C library cannot make one. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

json_object *eng_json_parse_ex(json_tokener *tok, const char *text, int len)
{
	/* json-c parses numbers in the "C" locale: for every call it copies
	 * the thread's locale, derives a "C" one from the copy and frees
	 * both, and in glibc each of those steps takes the process-wide
	 * locale lock for writing, which threads parsing at once then queue
	 * on.  Started from the "C" locale object itself, all three steps
	 * are lock-free no-ops.  The thread's own locale is back in place
	 * before we return, so a handler never sees the switch. */
	pthread_once(&c_locale_once, make_c_locale);
	locale_t old = c_locale ? uselocale(c_locale) : (locale_t)0;
	json_object *v = json_tokener_parse_ex(tok, text, len);
	if (old)
		uselocale(old);
	return v;
}
