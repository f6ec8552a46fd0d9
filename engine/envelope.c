/*
 * envelope.c - reading a plain request's envelope from its raw line, so
 * the reader can route it without building a json-c tree.
 *
 * Most traffic is requests of one shape: an object with "jsonrpc", "id",
 * "method" and maybe "params", nothing unusual in any of them.  For those
 * the reader needs only the method and the id; the tree is for the
 * handler, and the worker that runs the handler builds it (and frees it)
 * on its own thread.  Parsing on the reader cost the reader most of its
 * time, and freeing there a tree built by one thread and released by
 * another cost the allocator's locks.
 *
 * The scan is a strict validator, and it is conservative: it answers 1
 * only when it is sure that json-c would accept the line as this very
 * envelope, and 0 for anything else, including much valid JSON (an escape
 * in a member name, an exponent, a surrogate escape, deep nesting, other
 * top-level members, a "_meta" in params, which can change the protocol
 * era).  A 0 sends the line down the ordinary path, which parses it with
 * json-c and gives every answer it always gave.  The scan never decides
 * an error.
 */
#include <string.h>

#include "engine/eng.h"

/* Nesting the fast path accepts at most (recursion depth of the scan);
 * deeper lines take the ordinary path. */
#define ENV_MAX_DEPTH 64

typedef struct env_scan {
	const unsigned char *p, *end;
	int depth, limit;
} env_scan;

static void skip_ws(env_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* A string at s->p (its opening quote).  On success, *text and *n give
 * the bytes between the quotes and *escaped whether any escape occurs. */
static int scan_str(env_scan *s, const unsigned char **text, size_t *n, int *escaped)
{
	const unsigned char *q = s->p + 1;
	*escaped = 0;
	for (;;) {
		if (q >= s->end)
			return 0;
		unsigned char c = *q;
		if (c == '"')
			break;
		if (c < 0x20)
			return 0;
		if (c != '\\') {
			q++;
			continue;
		}
		*escaped = 1;
		if (q + 1 >= s->end)
			return 0;
		c = q[1];
		if (c == 'u') {
			/* Surrogates: json-c's handling of pairs across calls is
			 * its own business; leave them to the ordinary path. */
			long v = eng_json_u4(q + 2, s->end);
			if (v < 0 || (v >= 0xd800 && v <= 0xdfff))
				return 0;
			q += 6;
		} else if (strchr("\"\\/bfnrt", c) && c) {
			q += 2;
		} else {
			return 0;
		}
	}
	*text = s->p + 1;
	*n = (size_t)(q - (s->p + 1));
	s->p = q + 1;
	return 1;
}

/* A number; *integer tells whether it is a plain integer of at most 18
 * digits (which json-c keeps exactly as written, "-0" aside). */
static int scan_num(env_scan *s, int *integer)
{
	const unsigned char *q = s->p;
	if (q < s->end && *q == '-')
		q++;
	if (q >= s->end || *q < '0' || *q > '9')
		return 0;
	const unsigned char *digits = q;
	if (*q == '0')
		q++;
	else
		while (q < s->end && *q >= '0' && *q <= '9')
			q++;
	size_t ndigits = (size_t)(q - digits);
	/* Integers json-c might saturate, or read as a double: the ordinary
	 * path. */
	if (ndigits > 18)
		return 0;
	*integer = 1;
	if (q < s->end && *q == '.') {
		q++;
		if (q >= s->end || *q < '0' || *q > '9')
			return 0;
		while (q < s->end && *q >= '0' && *q <= '9')
			q++;
		*integer = 0;
	}
	if (q < s->end && (*q == 'e' || *q == 'E'))
		return 0; /* exponents: out-of-range doubles are json-c's call */
	if (q < s->end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '.'))
		return 0;
	s->p = q;
	return 1;
}

static int scan_value(env_scan *s);

/* An object or array at s->p.  In an object directly under "params"
 * (`params_obj`), a member named "_meta", or any escaped name, stops the
 * fast path. */
static int scan_container(env_scan *s, int params_obj)
{
	int obj = *s->p == '{';
	if (++s->depth > s->limit)
		return 0;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == (obj ? '}' : ']')) {
		s->p++;
		s->depth--;
		return 1;
	}
	for (;;) {
		if (obj) {
			const unsigned char *k;
			size_t kn;
			int esc;
			if (s->p >= s->end || *s->p != '"' || !scan_str(s, &k, &kn, &esc))
				return 0;
			if (params_obj && (esc || (kn == 5 && memcmp(k, "_meta", 5) == 0)))
				return 0;
			skip_ws(s);
			if (s->p >= s->end || *s->p != ':')
				return 0;
			s->p++;
		}
		if (!scan_value(s))
			return 0;
		skip_ws(s);
		if (s->p >= s->end)
			return 0;
		if (*s->p == ',') {
			s->p++;
			skip_ws(s);
			continue;
		}
		if (*s->p != (obj ? '}' : ']'))
			return 0;
		s->p++;
		s->depth--;
		return 1;
	}
}

static int scan_word(env_scan *s, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
		return 0;
	s->p += n;
	if (s->p < s->end && ((*s->p >= 'a' && *s->p <= 'z') || (*s->p >= 'A' && *s->p <= 'Z') ||
			      (*s->p >= '0' && *s->p <= '9')))
		return 0;
	return 1;
}

static int scan_value(env_scan *s)
{
	skip_ws(s);
	if (s->p >= s->end)
		return 0;
	const unsigned char *t;
	size_t n;
	int esc, integer;
	switch (*s->p) {
	case '{':
	case '[':
		return scan_container(s, 0);
	case '"':
		return scan_str(s, &t, &n, &esc);
	case 't':
		return scan_word(s, "true");
	case 'f':
		return scan_word(s, "false");
	case 'n':
		return scan_word(s, "null");
	default:
		return scan_num(s, &integer);
	}
}

int eng_json_envelope(const char *line, size_t len, int max_depth, eng_envelope *env)
{
	env_scan s = { (const unsigned char *)line, (const unsigned char *)line + len, 0,
		       max_depth - 2 < ENV_MAX_DEPTH ? max_depth - 2 : ENV_MAX_DEPTH };
	int seen_jsonrpc = 0, seen_id = 0, seen_method = 0, seen_params = 0;

	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{' || s.limit < 2)
		return 0;
	s.p++;
	s.depth = 1;
	skip_ws(&s);
	for (;;) {
		const unsigned char *k, *t;
		size_t kn, n;
		int esc;
		if (s.p >= s.end || *s.p != '"' || !scan_str(&s, &k, &kn, &esc) || esc)
			return 0;
		skip_ws(&s);
		if (s.p >= s.end || *s.p != ':')
			return 0;
		s.p++;
		skip_ws(&s);
		if (s.p >= s.end)
			return 0;
		if (kn == 7 && memcmp(k, "jsonrpc", 7) == 0 && !seen_jsonrpc) {
			seen_jsonrpc = 1;
			if (*s.p != '"' || !scan_str(&s, &t, &n, &esc) || n != 3 ||
			    memcmp(t, "2.0", 3) != 0)
				return 0;
		} else if (kn == 6 && memcmp(k, "method", 6) == 0 && !seen_method) {
			seen_method = 1;
			if (*s.p != '"' || !scan_str(&s, &t, &n, &esc) || esc ||
			    n >= sizeof env->method)
				return 0;
			memcpy(env->method, t, n);
			env->method[n] = '\0';
		} else if (kn == 2 && memcmp(k, "id", 2) == 0 && !seen_id) {
			seen_id = 1;
			const unsigned char *start = s.p;
			int integer = 0;
			if (*s.p == '"') {
				/* Without escapes, the text between the quotes is
				 * what eng_json_dup writes back. */
				if (!scan_str(&s, &t, &n, &esc) || esc)
					return 0;
				env->id_is_string = 1;
			} else {
				if (!scan_num(&s, &integer) || !integer ||
				    (s.p - start == 2 && start[0] == '-' && start[1] == '0'))
					return 0;
				env->id_is_string = 0;
			}
			env->id = (const char *)start;
			env->id_len = (size_t)(s.p - start);
		} else if (kn == 6 && memcmp(k, "params", 6) == 0 && !seen_params) {
			seen_params = 1;
			if (*s.p != '{' || !scan_container(&s, 1))
				return 0;
		} else {
			return 0; /* another member, or one seen twice */
		}
		skip_ws(&s);
		if (s.p >= s.end)
			return 0;
		if (*s.p == ',') {
			s.p++;
			skip_ws(&s);
			continue;
		}
		if (*s.p != '}')
			return 0;
		s.p++;
		break;
	}
	skip_ws(&s);
	return s.p == s.end && seen_jsonrpc && seen_id && seen_method;
}
