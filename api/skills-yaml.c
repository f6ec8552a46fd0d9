/*
 * skills-yaml.c - the YAML frontmatter of a SKILL.md as a json-c object.
 *
 * SEP-2640 has every skill entry carry its SKILL.md frontmatter "rendered
 * verbatim as a JSON object", identical in content to what a host's YAML
 * parser makes of the file.  libyaml parses; the scalars are typed here as
 * the YAML 1.2 core schema types them (what current parsers do by
 * default): null, true/false, integers, floats, else strings, and a
 * quoted scalar is always a string.  What JSON cannot carry, or what two
 * parsers may read differently, is refused with a reason instead of being
 * guessed at: aliases, tags outside the core schema, non-scalar or
 * duplicate keys, infinities and NaN.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "api/internal.h"

#define YAML_MAX_DEPTH 32

typedef struct ycx {
	yaml_parser_t p;
	char *why;
	size_t whylen;
	int depth;
} ycx;

static void fail(ycx *c, const char *fmt, const char *arg)
{
	if (!c->why || !c->whylen || c->why[0])
		return;
	/* The value quoted comes from the file, and a reason is one line
	 * (internal.h): a multi-line scalar's newline, or any other control
	 * character, is shown as '?' (fuzz-skills-yaml). */
	char quoted[256];
	size_t k = 0;
	for (const char *p = arg ? arg : ""; *p && k + 1 < sizeof quoted; p++)
		quoted[k++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
	quoted[k] = 0;
	snprintf(c->why, c->whylen, fmt, quoted);
}

static int all(const char *s, const char *set)
{
	return *s && strspn(s, set) == strlen(s);
}

/* A plain scalar as the core schema types it.  json-c's null is NULL, so
 * these return 0 with the value in *out (NULL for null), or -1 with *why
 * set for what JSON cannot hold (or without memory). */
static json_object *typed(ycx *c, const char *v, size_t len);

static int plain_scalar(ycx *c, const char *v, size_t len, json_object **out)
{
	*out = NULL;
	if (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	    !strcmp(v, "NULL"))
		return 0;
	*out = typed(c, v, len);
	return *out ? 0 : -1;
}

static json_object *typed(ycx *c, const char *v, size_t len)
{
	if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
		return json_object_new_boolean(1);
	if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
		return json_object_new_boolean(0);
	const char *d = v + (*v == '-' || *v == '+');
	errno = 0;
	if (all(d, "0123456789")) {
		char *end;
		long long n = strtoll(v, &end, 10);
		if (!errno && !*end)
			return json_object_new_int64(n);
		/* beyond 64 bits: a float, as a JavaScript parser reads it */
		return json_object_new_double(strtod(v, NULL));
	}
	if (!strncmp(v, "0o", 2) && all(v + 2, "01234567")) {
		unsigned long long n = strtoull(v + 2, NULL, 8);
		return errno || n > INT64_MAX ? json_object_new_double((double)n)
					      : json_object_new_int64((int64_t)n);
	}
	if (!strncmp(v, "0x", 2) && all(v + 2, "0123456789abcdefABCDEF")) {
		unsigned long long n = strtoull(v + 2, NULL, 16);
		return errno || n > INT64_MAX ? json_object_new_double((double)n)
					      : json_object_new_int64((int64_t)n);
	}
	/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
	const char *q = d;
	size_t ip = strspn(q, "0123456789");
	q += ip;
	size_t fp = 0;
	int dot = *q == '.';
	if (dot) {
		q++;
		fp = strspn(q, "0123456789");
		q += fp;
	}
	int ok = (ip > 0 || (dot && fp > 0));
	if (ok && (*q == 'e' || *q == 'E')) {
		q++;
		if (*q == '-' || *q == '+')
			q++;
		size_t ep = strspn(q, "0123456789");
		ok = ep > 0;
		q += ep;
	}
	if (ok && !*q && (dot || strpbrk(d, "eE"))) {
		double x = strtod(v, NULL);
		if (!isfinite(x)) {
			fail(c, "frontmatter: %s does not fit a JSON number", v);
			return NULL;
		}
		return json_object_new_double(x);
	}
	if (!strcmp(d, ".inf") || !strcmp(d, ".Inf") || !strcmp(d, ".INF") || !strcmp(v, ".nan") ||
	    !strcmp(v, ".NaN") || !strcmp(v, ".NAN")) {
		fail(c, "frontmatter: %s (infinity or NaN) has no JSON form", v);
		return NULL;
	}
	return json_object_new_string_len(v, (int)len);
}

static int scalar(ycx *c, yaml_event_t *e, json_object **out)
{
	const char *v = (const char *)e->data.scalar.value;
	size_t len = e->data.scalar.length;
	const char *tag = (const char *)e->data.scalar.tag;
	*out = NULL;
	if (memchr(v, 0, len)) {
		fail(c, "frontmatter: a value holds a NUL character%s", NULL);
		return -1;
	}
	if (tag && strcmp(tag, "!") != 0) {
		if (!strcmp(tag, YAML_STR_TAG))
			return (*out = json_object_new_string_len(v, (int)len)) ? 0 : -1;
		if (!strcmp(tag, YAML_NULL_TAG) || !strcmp(tag, YAML_BOOL_TAG) ||
		    !strcmp(tag, YAML_INT_TAG) || !strcmp(tag, YAML_FLOAT_TAG)) {
			if (plain_scalar(c, v, len, out))
				return -1;
			int null_tag = !strcmp(tag, YAML_NULL_TAG);
			if ((*out == NULL) != null_tag ||
			    (*out && json_object_is_type(*out, json_type_string))) {
				json_object_put(*out);
				*out = NULL;
				fail(c, "frontmatter: %s does not match its tag", v);
				return -1;
			}
			return 0;
		}
		fail(c, "frontmatter: the tag %s is not one of the core schema", tag);
		return -1;
	}
	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && !strcmp(tag, "!")))
		return (*out = json_object_new_string_len(v, (int)len)) ? 0 : -1;
	return plain_scalar(c, v, len, out);
}

static int node(ycx *c, yaml_event_t *first, json_object **out);

static int next(ycx *c, yaml_event_t *e)
{
	if (!yaml_parser_parse(&c->p, e)) {
		char msg[160];
		snprintf(msg, sizeof msg, "%s at line %lu",
			 c->p.problem ? c->p.problem : "malformed YAML",
			 (unsigned long)c->p.problem_mark.line + 1);
		fail(c, "frontmatter: %s", msg);
		return -1;
	}
	if (e->type == YAML_ALIAS_EVENT) {
		fail(c, "frontmatter: aliases (*%s) are not supported",
		     (const char *)e->data.alias.anchor);
		yaml_event_delete(e);
		return -1;
	}
	return 0;
}

static json_object *mapping(ycx *c)
{
	json_object *o = json_object_new_object();
	for (;;) {
		yaml_event_t k;
		if (!o || next(c, &k)) {
			json_object_put(o);
			return NULL;
		}
		if (k.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&k);
			return o;
		}
		if (k.type != YAML_SCALAR_EVENT) {
			yaml_event_delete(&k);
			fail(c, "frontmatter: a key that is not a string%s", NULL);
			json_object_put(o);
			return NULL;
		}
		char *key = strndup((const char *)k.data.scalar.value, k.data.scalar.length);
		yaml_event_delete(&k);
		if (!key || json_object_object_get_ex(o, key, NULL)) {
			fail(c, "frontmatter: the key %s appears twice", key);
			free(key);
			json_object_put(o);
			return NULL;
		}
		yaml_event_t v;
		json_object *val = NULL;
		if (next(c, &v) || node(c, &v, &val) || eng_obj_add(o, key, val)) {
			fail(c, "frontmatter: out of memory%s", NULL);
			free(key);
			json_object_put(o);
			return NULL;
		}
		free(key);
	}
}

static json_object *sequence(ycx *c)
{
	json_object *a = json_object_new_array();
	for (;;) {
		yaml_event_t e;
		if (!a || next(c, &e)) {
			json_object_put(a);
			return NULL;
		}
		if (e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			return a;
		}
		json_object *v = NULL;
		if (node(c, &e, &v) || (v && eng_arr_add(a, v)) ||
		    (!v && json_object_array_add(a, NULL))) {
			json_object_put(a);
			return NULL;
		}
	}
}

/* The value that starts with event `first` (taken) in *out. */
static int node(ycx *c, yaml_event_t *first, json_object **out)
{
	int rc = -1;
	*out = NULL;
	if (++c->depth > YAML_MAX_DEPTH)
		fail(c, "frontmatter: nested too deep%s", NULL);
	else if (first->type == YAML_SCALAR_EVENT)
		rc = scalar(c, first, out);
	else if (first->type == YAML_MAPPING_START_EVENT)
		rc = (*out = mapping(c)) ? 0 : -1;
	else if (first->type == YAML_SEQUENCE_START_EVENT)
		rc = (*out = sequence(c)) ? 0 : -1;
	else
		fail(c, "frontmatter: unexpected YAML%s", NULL);
	c->depth--;
	yaml_event_delete(first);
	return rc;
}

json_object *api_skill_parse_frontmatter(const char *text, size_t len, size_t *body_at, char *why,
					 size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	ycx c = { .why = why, .whylen = whylen };
	char none[1] = "";
	if (!why || !whylen) {
		c.why = none;
		c.whylen = 0;
	}
	/* "---" alone on the first line (after a byte order mark), then the
	 * frontmatter, then "---" alone on a line. */
	size_t at = 0;
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		at = 3;
	const char *s = text + at;
	size_t n = len - at;
	size_t open = 0;
	if (n >= 4 && !memcmp(s, "---\n", 4))
		open = 4;
	else if (n >= 5 && !memcmp(s, "---\r\n", 5))
		open = 5;
	if (!open) {
		fail(&c, "SKILL.md must begin with YAML frontmatter between \"---\" lines%s", NULL);
		return NULL;
	}
	const char *yaml = s + open, *end = NULL;
	size_t ylen = 0, after = 0;
	for (const char *line = yaml; line < s + n;) {
		const char *nl = memchr(line, '\n', (size_t)(s + n - line));
		const char *le = nl ? nl : s + n;
		size_t ll = (size_t)(le - line);
		if (ll && line[ll - 1] == '\r')
			ll--;
		/* "---" then spaces or tabs only, counted within the line:
		 * the text has a length, not a NUL (strspn ran past the end
		 * of a last line without newline, fuzz-skills-yaml). */
		size_t blank = 3;
		while (blank < ll && (line[blank] == ' ' || line[blank] == '\t'))
			blank++;
		if (ll >= 3 && !memcmp(line, "---", 3) && blank == ll) {
			end = line;
			after = (size_t)((nl ? nl + 1 : s + n) - text);
			break;
		}
		line = nl ? nl + 1 : s + n;
	}
	if (!end) {
		fail(&c, "SKILL.md frontmatter has no closing \"---\" line%s", NULL);
		return NULL;
	}
	ylen = end > yaml ? (size_t)(end - yaml) : 0;
	if (!yaml_parser_initialize(&c.p)) {
		fail(&c, "out of memory%s", NULL);
		return NULL;
	}
	yaml_parser_set_input_string(&c.p, (const unsigned char *)yaml, ylen);
	json_object *fm = NULL;
	yaml_event_t e;
	/* stream start, document start, the mapping, document end, stream end */
	int bad = next(&c, &e) || e.type != YAML_STREAM_START_EVENT;
	if (!bad)
		yaml_event_delete(&e);
	if (!bad && !(bad = next(&c, &e))) {
		if (e.type == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&e);
			if (!(bad = next(&c, &e))) {
				if (e.type == YAML_MAPPING_START_EVENT) {
					yaml_event_delete(&e);
					fm = mapping(&c);
				} else {
					yaml_event_delete(&e);
				}
			}
		} else {
			yaml_event_delete(&e);
		}
	}
	if (fm && !next(&c, &e)) {
		int ok = e.type == YAML_DOCUMENT_END_EVENT;
		yaml_event_delete(&e);
		if (!ok || next(&c, &e)) {
			json_object_put(fm);
			fm = NULL;
			fail(&c, "frontmatter: more than one YAML document%s", NULL);
		} else {
			if (e.type != YAML_STREAM_END_EVENT) {
				json_object_put(fm);
				fm = NULL;
				fail(&c, "frontmatter: more than one YAML document%s", NULL);
			}
			yaml_event_delete(&e);
		}
	} else if (fm) {
		json_object_put(fm);
		fm = NULL;
	}
	yaml_parser_delete(&c.p);
	if (!fm)
		fail(&c, "SKILL.md frontmatter must be a YAML mapping%s", NULL);
	else if (body_at)
		*body_at = after;
	return fm;
}
