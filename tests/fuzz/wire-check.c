/*
 * wire-check.c - the invariants checked on a server's output by the fuzz
 * targets and the allocation-failure test: strict UTF-8 JSON-RPC 2.0 lines,
 * and never more answers to an id than requests that used it.
 *
 * Test code only; it parses with its own strict tokener so a line the
 * library would not accept from a client is not accepted from it either.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/wire-check.h"

void wire_ids_init(wire_ids *ids)
{
	memset(ids, 0, sizeof *ids);
}

void wire_ids_free(wire_ids *ids)
{
	for (size_t i = 0; i < ids->n; i++)
		free(ids->keys[i]);
	free(ids->keys);
	free(ids->counts);
	memset(ids, 0, sizeof *ids);
}

static long ids_find(const wire_ids *ids, const char *key)
{
	for (size_t i = 0; i < ids->n; i++)
		if (strcmp(ids->keys[i], key) == 0)
			return (long)i;
	return -1;
}

int wire_ids_add(wire_ids *ids, const char *key)
{
	long at = ids_find(ids, key);
	if (at >= 0) {
		ids->counts[at]++;
		return 0;
	}
	if (ids->n == ids->cap) {
		size_t cap = ids->cap ? ids->cap * 2 : 16;
		char **k = realloc(ids->keys, cap * sizeof *k);
		if (!k)
			return -1;
		ids->keys = k;
		size_t *c = realloc(ids->counts, cap * sizeof *c);
		if (!c)
			return -1;
		ids->counts = c;
		ids->cap = cap;
	}
	char *d = strdup(key);
	if (!d)
		return -1;
	ids->keys[ids->n] = d;
	ids->counts[ids->n++] = 1;
	return 0;
}

size_t wire_ids_count(const wire_ids *ids, const char *key)
{
	long at = ids_find(ids, key);
	return at < 0 ? 0 : ids->counts[at];
}

int wire_utf8_valid(const unsigned char *s, size_t len)
{
	/* Decode each sequence to its code point, then reject what RFC 3629
	 * forbids: overlong forms, surrogates, values past U+10FFFF. */
	static const unsigned long min_for_len[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		size_t n;
		unsigned long cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 2;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 3;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 4;
			cp = c & 0x07;
		} else {
			return 0;
		}
		if (len - i < n)
			return 0;
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min_for_len[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n;
	}
	return 1;
}

const char *wire_id_key(json_object *id)
{
	return json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN |
							  JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* json-c reads NaN, Infinity and -Infinity even in strict mode (and
 * writes non-finite doubles that way); JSON has no such numbers. */
static int all_finite(json_object *v, int depth)
{
	if (depth > 4096)
		return 0;
	switch (json_object_get_type(v)) {
	case json_type_double:
		return isfinite(json_object_get_double(v));
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (!all_finite(json_object_array_get_idx(v, i), depth + 1))
				return 0;
		return 1;
	case json_type_object: {
		json_object_object_foreach(v, key, val) {
			(void)key;
			if (!all_finite(val, depth + 1))
				return 0;
		}
		return 1;
	}
	default:
		return 1;
	}
}

/* With wire_keep_tokeners(1), one tokener of each kind is kept between
 * lines: a tokener of depth 4096 is a 128 KiB allocation, which under ASan
 * is an mmap and an munmap per line (and, in a process with threads, a TLB
 * shootdown on every CPU).  One that failed is never reused: json-c can
 * keep state past a failed parse (the stale surrogate of
 * corpus/dispatch/regress-stale-surrogate). */
static int keep_tokeners;
static json_tokener *kept[2];

void wire_keep_tokeners(int on)
{
	keep_tokeners = on;
	if (!on)
		for (int i = 0; i < 2; i++) {
			json_tokener_free(kept[i]);
			kept[i] = NULL;
		}
}

static json_tokener *tokener_get(int strict)
{
	json_tokener *tok = kept[strict];
	kept[strict] = NULL;
	if (!tok) {
		tok = json_tokener_new_ex(4096);
		if (tok && strict)
			json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	}
	return tok;
}

static void tokener_put(int strict, json_tokener *tok, int failed)
{
	if (keep_tokeners && !failed && !kept[strict]) {
		json_tokener_reset(tok);
		kept[strict] = tok;
	} else {
		json_tokener_free(tok);
	}
}

static json_object *parse_strict(const char *line, size_t len, const char **err)
{
	json_tokener *tok = tokener_get(1);
	if (!tok) {
		*err = "tokener: out of memory";
		return NULL;
	}
	json_object *v = json_tokener_parse_ex(tok, line, (int)len);
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t used = tok->char_offset;
	tokener_put(1, tok, e != json_tokener_success || used != len);
	if (e != json_tokener_success) {
		json_object_put(v);
		*err = json_tokener_error_desc(e);
		return NULL;
	}
	if (used != len) {
		json_object_put(v);
		*err = "data after the JSON value";
		return NULL;
	}
	if (!all_finite(v, 0)) {
		json_object_put(v);
		*err = "NaN or Infinity";
		return NULL;
	}
	return v;
}

/* A request, valid or not: anything with an id that is not a response
 * may be answered under that id (JSON-RPC 2.0 section 5). */
static void note_sent_one(json_object *m, wire_ids *sent)
{
	json_object *id = NULL;
	if (json_object_is_type(m, json_type_object) &&
	    (json_object_object_get_ex(m, "method", NULL) ||
	     !(json_object_object_get_ex(m, "result", NULL) ||
	       json_object_object_get_ex(m, "error", NULL))) &&
	    json_object_object_get_ex(m, "id", &id) && id)
		wire_ids_add(sent, wire_id_key(id));
}

void wire_note_sent(const char *line, size_t len, wire_ids *sent)
{
	/* Client lines are parsed leniently: only what the server could take
	 * for a request matters here. */
	json_tokener *tok = tokener_get(0);
	if (!tok)
		return;
	json_object *v = json_tokener_parse_ex(tok, line, (int)len);
	tokener_put(0, tok, json_tokener_get_error(tok) != json_tokener_success ||
				    tok->char_offset != (int)len);
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++)
			note_sent_one(json_object_array_get_idx(v, i), sent);
	} else {
		note_sent_one(v, sent);
	}
	json_object_put(v);
}

#define FAIL(...)                                       \
	do {                                            \
		snprintf(why, whylen, __VA_ARGS__);     \
		return -1;                              \
	} while (0)

static int check_message(json_object *m, const wire_ids *sent, wire_ids *answered, char *why,
			 size_t whylen)
{
	json_object *v = NULL, *id = NULL, *res = NULL, *err = NULL, *method = NULL;
	if (!json_object_is_type(m, json_type_object))
		FAIL("a message that is not an object");
	if (!json_object_object_get_ex(m, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0)
		FAIL("no \"jsonrpc\": \"2.0\"");
	int has_id = json_object_object_get_ex(m, "id", &id);
	int has_res = json_object_object_get_ex(m, "result", &res);
	int has_err = json_object_object_get_ex(m, "error", &err);
	int has_method = json_object_object_get_ex(m, "method", &method);
	if (has_method) {
		if (has_res || has_err)
			FAIL("a request or notification with result/error");
		if (!json_object_is_type(method, json_type_string))
			FAIL("a method that is not a string");
		if (has_id && !json_object_is_type(id, json_type_int))
			FAIL("a server request id that is not an integer");
		return 0;
	}
	if (!has_id)
		FAIL("a response without an id");
	if (has_res == has_err)
		FAIL("a response needs exactly one of result and error");
	if (has_res && !json_object_is_type(res, json_type_object))
		FAIL("a result that is not an object");
	if (has_err) {
		json_object *code = NULL, *msg = NULL;
		if (!json_object_is_type(err, json_type_object) ||
		    !json_object_object_get_ex(err, "code", &code) ||
		    !json_object_is_type(code, json_type_int) ||
		    !json_object_object_get_ex(err, "message", &msg) ||
		    !json_object_is_type(msg, json_type_string))
			FAIL("an error without an integer code and a string message");
	}
	if (!id) {
		if (!has_err)
			FAIL("a result with a null id");
		return 0;
	}
	if (!json_object_is_type(id, json_type_int) && !json_object_is_type(id, json_type_string))
		FAIL("a response id that is neither null, an integer nor a string");
	const char *key = wire_id_key(id);
	if (answered && wire_ids_add(answered, key) != 0)
		FAIL("out of memory in the checker");
	if (sent && answered && wire_ids_count(answered, key) > wire_ids_count(sent, key))
		FAIL("id %s answered %zu times, sent %zu times", key,
		     wire_ids_count(answered, key), wire_ids_count(sent, key));
	return 0;
}

int wire_check_line(const char *line, size_t len, const wire_ids *sent, wire_ids *answered,
		    char *why, size_t whylen)
{
	if (memchr(line, '\n', len))
		FAIL("a newline inside a line");
	if (!wire_utf8_valid((const unsigned char *)line, len))
		FAIL("invalid UTF-8");
	const char *perr = NULL;
	json_object *v = parse_strict(line, len, &perr);
	if (!v)
		FAIL("not strict JSON (%s)", perr);
	int rc = 0;
	if (json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);
		if (n == 0) {
			snprintf(why, whylen, "an empty batch answer");
			rc = -1;
		}
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = check_message(json_object_array_get_idx(v, i), sent, answered, why,
					   whylen);
	} else {
		rc = check_message(v, sent, answered, why, whylen);
	}
	json_object_put(v);
	return rc;
}

static int answer_in(json_object *m, const char *key, int *code)
{
	json_object *id = NULL, *err = NULL, *c = NULL;
	if (!json_object_is_type(m, json_type_object) ||
	    json_object_object_get_ex(m, "method", NULL) ||
	    !json_object_object_get_ex(m, "id", &id) || !id ||
	    strcmp(wire_id_key(id), key) != 0)
		return 0;
	if (json_object_object_get_ex(m, "result", NULL))
		return 1;
	if (json_object_object_get_ex(m, "error", &err) &&
	    json_object_object_get_ex(err, "code", &c))
		*code = json_object_get_int(c);
	return 2;
}

int wire_answer_of(const char *line, size_t len, const char *key, int *code)
{
	const char *perr;
	json_object *v = parse_strict(line, len, &perr);
	int rc = 0;
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v) && !rc; i++)
			rc = answer_in(json_object_array_get_idx(v, i), key, code);
	} else if (v) {
		rc = answer_in(v, key, code);
	}
	json_object_put(v);
	return rc;
}
