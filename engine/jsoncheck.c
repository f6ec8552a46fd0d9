/*
 * jsoncheck.c - the part of RFC 8259 that json-c's strict mode does not
 * enforce, checked on the raw line before json-c parses it.
 *
 * json-c (0.16) with JSON_TOKENER_STRICT still accepts NaN, Infinity and
 * -Infinity, a number ending in '.', and raw control characters inside
 * strings; and it alters two kinds of value a request id may hold without
 * saying so: integers beyond the int64/uint64 range are saturated, and a
 * lone UTF-16 surrogate escape becomes U+FFFD.  A request answered under an
 * id the client never sent breaks P7, and two distinct ids that collide
 * break P5, so both are refused here.
 *
 * It also finds what json-c would alter elsewhere: a member name holding
 * U+0000 (json-c keeps names as C strings, so "a\u0000evil" would become
 * "a" and replace the member "a": a schema would check one object and the
 * handler read another), and an integer beyond 64 bits in any value
 * (json-c saturates it; eng_json_widen turns it into the nearest double,
 * as other JSON readers do).  And it counts the values, weighted by what
 * json-c spends on them (an empty object 784 bytes, an empty array 152, a
 * number about 80), so that a message whose tree would cost far more than
 * its text (a 3 MiB line of empty objects is 700 MiB of json-c objects)
 * is refused before json-c builds any of it.
 *
 * The scan is one pass over the bytes with no allocation.  It does not
 * check the structure (brackets, commas, colons): json-c does that, and
 * whatever json-c refuses stays refused.  It only reports what json-c would
 * let through.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

/* The kind of every open container is kept (a bit each) up to this depth,
 * past the largest depth limit a server accepts (10000): member names are
 * recognised at any depth json-c will parse. */
#define KIND_DEPTH 10240

typedef struct scan {
	const unsigned char *p, *end;
	int depth;
	unsigned char is_obj[KIND_DEPTH / 8]; /* bit d: container d is an object */
	int want_key;		/* the next string in this object is a key */
	int id_next;		/* the next value is a request's "id" */
	unsigned flags;
	size_t values, max_values;
	/* eng_json_widen only: where the widened copy goes. */
	char *out;
	size_t on;
	const unsigned char *copied; /* input before this is in out */
} scan;

static int in_object(const scan *s, int depth)
{
	return depth >= 0 && depth < KIND_DEPTH && (s->is_obj[depth / 8] >> (depth % 8)) & 1;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads the four hex digits after "\u" at q; -1 when they are not hex. */
long eng_json_u4(const unsigned char *q, const unsigned char *end)
{
	if (end - q < 4)
		return -1;
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(q[i]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* A string, from its opening quote.  Sets *lone when it holds an
 * unpaired surrogate escape, *nul when it holds U+0000 and *is_id when its
 * decoded text is "id".  Returns -1 on a raw control character; a
 * malformed escape or an unterminated string is left to json-c. */
static int scan_string(scan *s, int *lone, int *nul, int *is_id)
{
	const unsigned char *q = s->p + 1;
	/* The decoded text, as far as needed to recognise "id". */
	char txt[3];
	size_t tn = 0;
	int ascii_only = 1;

	*lone = 0;
	*nul = 0;
	while (q < s->end && *q != '"') {
		unsigned char c = *q;
		if (c < 0x20)
			return -1;
		if (c != '\\') {
			if (tn < sizeof txt)
				txt[tn] = (char)c;
			tn++;
			q++;
			continue;
		}
		if (q + 1 >= s->end)
			break;
		if (q[1] != 'u') {
			if (tn < sizeof txt)
				txt[tn] = (char)q[1];
			tn++;
			q += 2;
			continue;
		}
		long u = eng_json_u4(q + 2, s->end);
		if (u < 0) {
			q += 2;
			continue;
		}
		q += 6;
		if (u >= 0xD800 && u <= 0xDBFF) {
			long lo = -1;
			if (s->end - q >= 6 && q[0] == '\\' && q[1] == 'u')
				lo = eng_json_u4(q + 2, s->end);
			if (lo >= 0xDC00 && lo <= 0xDFFF)
				q += 6;
			else
				*lone = 1;
			ascii_only = 0;
		} else if (u >= 0xDC00 && u <= 0xDFFF) {
			*lone = 1;
			ascii_only = 0;
		} else if (u < 0x80) {
			if (u == 0)
				*nul = 1;
			if (tn < sizeof txt)
				txt[tn] = (char)u;
			tn++;
		} else {
			ascii_only = 0;
		}
	}
	*is_id = ascii_only && tn == 2 && txt[0] == 'i' && txt[1] == 'd';
	s->p = q < s->end ? q + 1 : q;
	return 0;
}

/* The digits of an integer beyond int64 (negative) or uint64 (positive). */
static int int_out_of_range(const unsigned char *d, size_t n, int neg)
{
	static const char max_u64[] = "18446744073709551615";
	static const char min_i64[] = "9223372036854775808"; /* after the '-' */
	const char *lim = neg ? min_i64 : max_u64;
	size_t ln = strlen(lim);
	if (n != ln)
		return n > ln;
	return memcmp(d, lim, n) > 0;
}

/* A number per RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 * Returns -1 when it is not one, else whether it is an integer out of
 * range in *big. */
static int scan_number(scan *s, int *big)
{
	const unsigned char *q = s->p, *e = s->end;
	int neg = 0, integral = 1;
	*big = 0;
	if (*q == '-') {
		neg = 1;
		q++;
	}
	const unsigned char *digits = q;
	if (q >= e || *q < '0' || *q > '9')
		return -1;
	if (*q == '0') {
		if (++q < e && *q >= '0' && *q <= '9')
			return -1; /* a leading zero */
	} else
		while (q < e && *q >= '0' && *q <= '9')
			q++;
	size_t ndig = (size_t)(q - digits);
	if (q < e && *q == '.') {
		integral = 0;
		q++;
		if (q >= e || *q < '0' || *q > '9')
			return -1;
		while (q < e && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < e && (*q == 'e' || *q == 'E')) {
		integral = 0;
		q++;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		if (q >= e || *q < '0' || *q > '9')
			return -1;
		while (q < e && *q >= '0' && *q <= '9')
			q++;
	}
	if (integral)
		*big = int_out_of_range(digits, ndig, neg);
	s->p = q;
	return 0;
}

/* eng_json_widen: the input up to s->p, then ".0" (room was reserved). */
static void widen_here(scan *s)
{
	size_t n = (size_t)(s->p - s->copied);
	memcpy(s->out + s->on, s->copied, n);
	s->on += n;
	memcpy(s->out + s->on, ".0", 2);
	s->on += 2;
	s->copied = s->p;
}

static int scan_literal(scan *s)
{
	static const char *const words[] = { "true", "false", "null" };
	const unsigned char *q = s->p;
	while (q < s->end && ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
		q++;
	size_t n = (size_t)(q - s->p);
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (n == strlen(words[i]) && memcmp(s->p, words[i], n) == 0) {
			s->p = q;
			return 0;
		}
	return -1;
}

/* Whether a value starting now is a request id: a member "id" of a
 * top-level object, or of an object that is an element of a top-level
 * array (a 2025-03-26 batch). */
static int at_id_position(const scan *s)
{
	if (!s->id_next)
		return 0;
	return s->depth == 1 || (s->depth == 2 && !in_object(s, 0));
}

/* Whether a member name at the current depth belongs to a message's
 * envelope (its own members, or a batch element's). */
static int at_envelope(const scan *s)
{
	return s->depth == 1 || (s->depth == 2 && !in_object(s, 0));
}

/* Counts a value of `weight` (ENG_JSON_WEIGHT_*); 1 when the bound is
 * passed. */
static int count_value(scan *s, size_t weight)
{
	s->values += weight;
	return s->max_values && s->values > s->max_values;
}

static unsigned run_scan(scan *s)
{
	while (s->p < s->end) {
		unsigned char c = *s->p;
		int lone, nul, is_id, big;
		switch (c) {
		case ' ': case '\t': case '\r': case '\n':
			s->p++;
			break;
		case '{': case '[':
			if (count_value(s, c == '{' ? ENG_JSON_WEIGHT_OBJECT : ENG_JSON_WEIGHT_ARRAY))
				return s->flags | ENG_JSON_TOO_MANY;
			if (s->depth < KIND_DEPTH) {
				unsigned char bit = (unsigned char)(1u << (s->depth % 8));
				if (c == '{')
					s->is_obj[s->depth / 8] |= bit;
				else
					s->is_obj[s->depth / 8] &= (unsigned char)~bit;
			}
			s->depth++;
			s->want_key = c == '{';
			s->id_next = 0;
			s->p++;
			break;
		case '}': case ']':
			if (s->depth > 0)
				s->depth--;
			s->want_key = 0;
			s->id_next = 0;
			s->p++;
			break;
		case ',':
			s->want_key = in_object(s, s->depth - 1);
			s->id_next = 0;
			s->p++;
			break;
		case ':':
			s->p++;
			break;
		case '"': {
			int key = s->want_key, id_val = at_id_position(s);
			if (!key && count_value(s, 1))
				return s->flags | ENG_JSON_TOO_MANY;
			if (scan_string(s, &lone, &nul, &is_id) < 0)
				return ENG_JSON_BAD_CONTROL;
			if (key && nul)
				s->flags |= at_envelope(s) ? ENG_JSON_NUL_NAME : ENG_JSON_NUL_KEY;
			s->want_key = 0;
			s->id_next = key && is_id;
			if (id_val && lone)
				s->flags |= ENG_JSON_BAD_ID;
			if (!key)
				s->id_next = 0;
			break;
		}
		default:
			if (c == '-' || (c >= '0' && c <= '9')) {
				int id_val = at_id_position(s);
				if (count_value(s, 1))
					return s->flags | ENG_JSON_TOO_MANY;
				if (scan_number(s, &big) < 0)
					return ENG_JSON_BAD_NUMBER;
				if (id_val && big)
					s->flags |= ENG_JSON_BAD_ID;
				else if (big) {
					s->flags |= ENG_JSON_BIG_INT;
					if (s->out)
						widen_here(s);
				}
			} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
				if (count_value(s, 1))
					return s->flags | ENG_JSON_TOO_MANY;
				if (scan_literal(s) < 0)
					return ENG_JSON_BAD_LITERAL;
			} else {
				/* Not JSON at all; json-c says so. */
				return s->flags;
			}
			s->id_next = 0;
			s->want_key = 0;
			break;
		}
	}
	return s->flags;
}

unsigned eng_json_precheck(const char *line, size_t len, size_t max_values)
{
	scan s;
	memset(&s, 0, sizeof s);
	s.p = (const unsigned char *)line;
	s.end = s.p + len;
	s.max_values = max_values;
	return run_scan(&s);
}

char *eng_json_widen(const char *line, size_t len, size_t *out_len)
{
	/* Each widened number is at least 20 digits long, so the copy is
	 * at most len + len / 10 bytes. */
	scan s;
	memset(&s, 0, sizeof s);
	s.p = (const unsigned char *)line;
	s.end = s.p + len;
	s.out = malloc(len + len / 10 + 3);
	if (!s.out)
		return NULL;
	s.copied = s.p;
	if (run_scan(&s) & ENG_JSON_NOT_JSON) {
		free(s.out);
		return NULL;
	}
	size_t n = (size_t)(s.end - s.copied);
	memcpy(s.out + s.on, s.copied, n);
	s.on += n;
	s.out[s.on] = '\0';
	*out_len = s.on;
	return s.out;
}
