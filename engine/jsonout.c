/*
 * jsonout.c - compact JSON text of a json-c tree, for the wire.
 *
 * Every message leaves through here, so it is written for the common case:
 * the text is built in a buffer on the caller's stack (grown on the heap
 * only for large messages) and copied once into an exact-size allocation,
 * which the writer takes.  json-c's own serialiser grows a fresh printbuf
 * per message by repeated reallocs and formats integers with snprintf; the
 * output here is the same text, byte for byte, as json-c's with
 * JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE (the equivalence
 * is a unit test).  Doubles are left to json-c, which knows their original
 * text; a custom serializer set with json_object_set_serializer() on an
 * object of another type is not honoured (libmcp sets none).
 *
 * Only JSON leaves: json-c writes NaN and Infinity for non-finite doubles,
 * which no JSON reader accepts (a strict client fails on the whole
 * message).  Such a tree is not serialised at all (eng_json_dup fails with
 * EDOM), whoever built it: this is the one place every message passes.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng.h"

#define STACK_BYTES 4096

typedef struct jbuf {
	char *p;
	size_t len, cap;
	int heap;
	int failed;
	int nonfinite; /* failed on NaN or an infinity */
} jbuf;

static int grow(jbuf *b, size_t need)
{
	if (b->failed)
		return -1;
	size_t cap = b->cap * 2;
	while (cap < b->len + need)
		cap *= 2;
	char *n = b->heap ? realloc(b->p, cap) : malloc(cap);
	if (!n) {
		b->failed = 1;
		return -1;
	}
	if (!b->heap)
		memcpy(n, b->p, b->len);
	b->p = n;
	b->cap = cap;
	b->heap = 1;
	return 0;
}

static inline void put(jbuf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap && grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void put_c(jbuf *b, char c)
{
	if (b->len + 1 > b->cap && grow(b, 1))
		return;
	b->p[b->len++] = c;
}

static void put_string(jbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	put_c(b, '"');
	size_t run = 0; /* start of the bytes copied as they are */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(b, s + run, i - run);
		run = i + 1;
		char esc[6] = { '\\', 0 };
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		case '\f': esc[1] = 'f'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			put(b, esc, 6);
			continue;
		}
		put(b, esc, 2);
	}
	put(b, s + run, n - run);
	put_c(b, '"');
}

static void put_u64(jbuf *b, uint64_t v, int neg)
{
	char tmp[24];
	int i = (int)sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		tmp[--i] = '-';
	put(b, tmp + i, sizeof tmp - (size_t)i);
}

static void put_value(jbuf *b, json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:
		put(b, "null", 4);
		break;
	case json_type_boolean:
		if (json_object_get_boolean(o))
			put(b, "true", 4);
		else
			put(b, "false", 5);
		break;
	case json_type_int: {
		int64_t v = json_object_get_int64(o);
		if (v == INT64_MAX)
			put_u64(b, json_object_get_uint64(o), 0); /* maybe above */
		else if (v < 0)
			put_u64(b, (uint64_t)0 - (uint64_t)v, 1);
		else
			put_u64(b, (uint64_t)v, 0);
		break;
	}
	case json_type_double: {
		if (!isfinite(json_object_get_double(o))) {
			b->failed = b->nonfinite = 1;
			break;
		}
		size_t n = 0;
		int saved = errno;
		errno = 0;
		const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
								JSON_C_TO_STRING_NOSLASHESCAPE, &n);
		if (!s || errno == ENOMEM)
			b->failed = 1;
		else
			put(b, s, n);
		errno = saved;
		break;
	}
	case json_type_string:
		put_string(b, json_object_get_string(o), (size_t)json_object_get_string_len(o));
		break;
	case json_type_array: {
		size_t n = json_object_array_length(o);
		put_c(b, '[');
		for (size_t i = 0; i < n && !b->failed; i++) {
			if (i)
				put_c(b, ',');
			json_object *e = json_object_array_get_idx(o, i);
			if (e)
				put_value(b, e);
			else
				put(b, "null", 4);
		}
		put_c(b, ']');
		break;
	}
	case json_type_object: {
		int first = 1;
		put_c(b, '{');
		json_object_object_foreach(o, key, val) {
			if (b->failed)
				break;
			if (!first)
				put_c(b, ',');
			first = 0;
			put_string(b, key, strlen(key));
			put_c(b, ':');
			if (val)
				put_value(b, val);
			else
				put(b, "null", 4);
		}
		put_c(b, '}');
		break;
	}
	}
}

char *eng_json_dup(json_object *o, size_t *len)
{
	char stack[STACK_BYTES];
	jbuf b = { stack, 0, sizeof stack, 0, 0, 0 };
	if (o)
		put_value(&b, o);
	else
		put(&b, "null", 4);
	char *d = NULL;
	if (!b.failed) {
		if (b.heap && b.len < b.cap) {
			d = b.p; /* already ours, with room for the spare byte */
			b.heap = 0;
		} else if ((d = malloc(b.len + 1)) != NULL) {
			memcpy(d, b.p, b.len);
		}
	}
	if (b.heap)
		free(b.p);
	if (!d) {
		errno = b.nonfinite ? EDOM : ENOMEM;
		return NULL;
	}
	d[b.len] = '\0';
	if (len)
		*len = b.len;
	return d;
}
