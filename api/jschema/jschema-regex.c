/*
 * jschema-regex.c - JSON Schema's regular expressions (ECMA-262, u flag)
 * run by PCRE2: a translator of the ECMA syntax into an equivalent PCRE2
 * pattern, and bounded matching.
 *
 * Why PCRE2: it is the regular expression library Debian ships for
 * exactly this (libpcre2-8), it speaks UTF-8, and it has match, depth and
 * heap limits, so a schema's catastrophic pattern cannot hold a worker for
 * minutes.  Writing a regex engine here would be a second, less tested one.
 *
 * The two dialects agree on most syntax.  Where they differ the
 * translator rewrites (see jschema.h for the list) or refuses: anything
 * PCRE2 would read with a meaning ECMA does not have ((?i), \A, \Q...E,
 * possessive quantifiers, (*VERB)) is an error rather than a silent change
 * of meaning.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"

/* Longest pattern accepted, in bytes of its ECMA source. */
#define MAX_PATTERN (64 * 1024)

struct jschema_regex {
	pcre2_code *code;
	pcre2_match_context *mctx;  /* read-only once made: shared by threads */
};

/* ECMA's character classes as PCRE2 class contents (no brackets).  The
 * negated forms are written out as ranges because a class such as [^\S]
 * or [a\D] cannot be expressed by nesting. */
#define CLS_D "0-9"
#define CLS_W "0-9A-Za-z_"
#define CLS_S "\\x{9}-\\x{d}\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}" \
	      "\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
#define CLS_ND "\\x{0}-\\x{2f}\\x{3a}-\\x{10ffff}"
#define CLS_NW "\\x{0}-\\x{2f}\\x{3a}-\\x{40}\\x{5b}-\\x{5e}\\x{60}\\x{7b}-\\x{10ffff}"
#define CLS_NS "\\x{0}-\\x{8}\\x{e}-\\x{1f}\\x{21}-\\x{9f}\\x{a1}-\\x{167f}\\x{1681}-\\x{1fff}" \
	       "\\x{200b}-\\x{2027}\\x{202a}-\\x{202e}\\x{2030}-\\x{205e}\\x{2060}-\\x{2fff}" \
	       "\\x{3001}-\\x{fefe}\\x{ff00}-\\x{10ffff}"
/* ECMA's "." : anything but a line terminator. */
#define DOT "[^\\n\\r\\x{2028}\\x{2029}]"

typedef struct tr {
	const char *s;
	size_t n, i;
	char *out;
	size_t len, cap;
	int oom;
	char *why;
	size_t whylen;
	int failed;
} tr;

__attribute__((format(printf, 2, 3))) static void fail(tr *t, const char *fmt, ...)
{
	if (t->failed)
		return;
	t->failed = 1;
	if (!t->why || !t->whylen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->why, t->whylen, fmt, ap);
	va_end(ap);
}

static void emit(tr *t, const char *s, size_t n)
{
	if (t->failed || t->oom)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 128;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *p = realloc(t->out, cap);
		if (!p) {
			t->oom = 1;
			return;
		}
		t->out = p;
		t->cap = cap;
	}
	memcpy(t->out + t->len, s, n);
	t->len += n;
	t->out[t->len] = 0;
}

static void emits(tr *t, const char *s)
{
	emit(t, s, strlen(s));
}

static void emit_cp(tr *t, unsigned long cp)
{
	char b[16];
	int k = snprintf(b, sizeof b, "\\x{%lx}", cp);
	emit(t, b, (size_t)k);
}

static int hexv(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads exactly `k` hex digits at t->i; -1 when they are not there. */
static long hex_n(tr *t, int k)
{
	long v = 0;
	for (int j = 0; j < k; j++) {
		if (t->i + (size_t)j >= t->n || hexv((unsigned char)t->s[t->i + (size_t)j]) < 0)
			return -1;
		v = v * 16 + hexv((unsigned char)t->s[t->i + (size_t)j]);
	}
	t->i += (size_t)k;
	return v;
}

/* After "\u": HHHH (a surrogate pair joined) or {H...}.  Returns the code
 * point or -1 (failed). */
static long unicode_escape(tr *t)
{
	if (t->i < t->n && t->s[t->i] == '{') {
		size_t j = t->i + 1;
		long v = 0;
		int digits = 0;
		while (j < t->n && hexv((unsigned char)t->s[j]) >= 0 && v <= 0x10FFFF) {
			v = v * 16 + hexv((unsigned char)t->s[j++]);
			digits++;
		}
		if (!digits || j >= t->n || t->s[j] != '}' || v > 0x10FFFF) {
			fail(t, "\\u{...} needs hex digits of a code point up to 10FFFF");
			return -1;
		}
		t->i = j + 1;
		if (v >= 0xD800 && v <= 0xDFFF) {
			fail(t, "a lone surrogate (\\u{%lx}) is not supported", v);
			return -1;
		}
		return v;
	}
	long v = hex_n(t, 4);
	if (v < 0) {
		fail(t, "\\u needs four hex digits");
		return -1;
	}
	if (v >= 0xD800 && v <= 0xDBFF && t->i + 6 <= t->n && t->s[t->i] == '\\' &&
	    t->s[t->i + 1] == 'u') {
		size_t save = t->i;
		t->i += 2;
		long lo = hex_n(t, 4);
		if (lo >= 0xDC00 && lo <= 0xDFFF)
			return 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
		t->i = save;
	}
	if (v >= 0xD800 && v <= 0xDFFF) {
		fail(t, "a lone surrogate (\\u%04lx) is not supported", v);
		return -1;
	}
	return v;
}

/* What an escape stands for. */
enum { ESC_CP, ESC_CLASS, ESC_VERBATIM, ESC_PROP };

typedef struct esc {
	int kind;
	unsigned long cp;       /* ESC_CP */
	const char *pos, *neg;  /* ESC_CLASS: contents, and the complement's */
	int negated;            /* ESC_CLASS: \D \W \S; ESC_PROP: \P */
	size_t from;            /* ESC_VERBATIM: the source text to copy */
	char prop[64];          /* ESC_PROP: the property as PCRE2 names it */
} esc;

/* General_Category values by their long names and aliases (Unicode's
 * PropertyValueAliases.txt), which ECMA accepts and PCRE2 10.42 does not:
 * it knows the short ones. */
static const char *const gc_names[][2] = {
	{ "Letter", "L" },
	{ "Cased_Letter", "L&" },
	{ "LC", "L&" },
	{ "Uppercase_Letter", "Lu" },
	{ "Lowercase_Letter", "Ll" },
	{ "Titlecase_Letter", "Lt" },
	{ "Modifier_Letter", "Lm" },
	{ "Other_Letter", "Lo" },
	{ "Mark", "M" },
	{ "Combining_Mark", "M" },
	{ "Nonspacing_Mark", "Mn" },
	{ "Spacing_Mark", "Mc" },
	{ "Enclosing_Mark", "Me" },
	{ "Number", "N" },
	{ "Decimal_Number", "Nd" },
	{ "digit", "Nd" },
	{ "Letter_Number", "Nl" },
	{ "Other_Number", "No" },
	{ "Punctuation", "P" },
	{ "punct", "P" },
	{ "Connector_Punctuation", "Pc" },
	{ "Dash_Punctuation", "Pd" },
	{ "Open_Punctuation", "Ps" },
	{ "Close_Punctuation", "Pe" },
	{ "Initial_Punctuation", "Pi" },
	{ "Final_Punctuation", "Pf" },
	{ "Other_Punctuation", "Po" },
	{ "Symbol", "S" },
	{ "Math_Symbol", "Sm" },
	{ "Currency_Symbol", "Sc" },
	{ "Modifier_Symbol", "Sk" },
	{ "Other_Symbol", "So" },
	{ "Separator", "Z" },
	{ "Space_Separator", "Zs" },
	{ "Line_Separator", "Zl" },
	{ "Paragraph_Separator", "Zp" },
	{ "Other", "C" },
	{ "Control", "Cc" },
	{ "cntrl", "Cc" },
	{ "Format", "Cf" },
	{ "Surrogate", "Cs" },
	{ "Private_Use", "Co" },
	{ "Unassigned", "Cn" },
};

/* The PCRE2 spelling of an ECMA property expression (the text between
 * the braces of \p{...}); -1 when it does not fit. */
static int property_name(const char *body, size_t n, char *out, size_t cap)
{
	static const char *const gc_prefixes[] = { "General_Category=", "gc=" };
	for (size_t i = 0; i < 2; i++) {
		size_t k = strlen(gc_prefixes[i]);
		if (n > k && memcmp(body, gc_prefixes[i], k) == 0) {
			body += k;
			n -= k;
			break;
		}
	}
	for (size_t i = 0; i < sizeof gc_names / sizeof gc_names[0]; i++)
		if (strlen(gc_names[i][0]) == n && memcmp(gc_names[i][0], body, n) == 0) {
			body = gc_names[i][1];
			n = strlen(body);
			break;
		}
	if (n == 0 || n + 1 > cap)
		return -1;
	memcpy(out, body, n);
	out[n] = 0;
	return 0;
}

/* Parses the escape after a backslash (t->i at the character after it). */
static int parse_escape(tr *t, int in_class, esc *e)
{
	if (t->i >= t->n) {
		fail(t, "the pattern ends with a backslash");
		return -1;
	}
	size_t start = t->i - 1;
	unsigned char c = (unsigned char)t->s[t->i++];
	memset(e, 0, sizeof *e);
	e->kind = ESC_CP;
	switch (c) {
	case 'd': case 'D':
		e->kind = ESC_CLASS, e->pos = CLS_D, e->neg = CLS_ND, e->negated = c == 'D';
		return 0;
	case 'w': case 'W':
		e->kind = ESC_CLASS, e->pos = CLS_W, e->neg = CLS_NW, e->negated = c == 'W';
		return 0;
	case 's': case 'S':
		e->kind = ESC_CLASS, e->pos = CLS_S, e->neg = CLS_NS, e->negated = c == 'S';
		return 0;
	case 't': e->cp = 9; return 0;
	case 'n': e->cp = 10; return 0;
	case 'v': e->cp = 11; return 0;
	case 'f': e->cp = 12; return 0;
	case 'r': e->cp = 13; return 0;
	case 'b':
		if (in_class) {
			e->cp = 8; /* backspace inside a class */
			return 0;
		}
		e->kind = ESC_VERBATIM, e->from = start;
		return 0;
	case 'B':
		if (in_class) {
			fail(t, "\\B is not allowed inside a character class");
			return -1;
		}
		e->kind = ESC_VERBATIM, e->from = start;
		return 0;
	case 'c':
		if (t->i < t->n && ((t->s[t->i] >= 'a' && t->s[t->i] <= 'z') ||
				    (t->s[t->i] >= 'A' && t->s[t->i] <= 'Z'))) {
			e->cp = (unsigned char)t->s[t->i++] % 32;
			return 0;
		}
		fail(t, "\\c must be followed by a letter");
		return -1;
	case 'x': {
		long v = hex_n(t, 2);
		if (v < 0) {
			fail(t, "\\x needs two hex digits");
			return -1;
		}
		e->cp = (unsigned long)v;
		return 0;
	}
	case 'u': {
		long v = unicode_escape(t);
		if (v < 0)
			return -1;
		e->cp = (unsigned long)v;
		return 0;
	}
	case '0':
		if (t->i < t->n && t->s[t->i] >= '0' && t->s[t->i] <= '9') {
			fail(t, "octal escapes (\\0%c) are not ECMA-262", t->s[t->i]);
			return -1;
		}
		e->cp = 0;
		return 0;
	case 'p': case 'P':
		/* \p{Name} / \p{Name=Value}: PCRE2 knows the common names and
		 * refuses the rest when compiling. */
		if (t->i >= t->n || t->s[t->i] != '{') {
			fail(t, "\\%c must be followed by {property}", c);
			return -1;
		}
		size_t body = ++t->i;
		while (t->i < t->n && t->s[t->i] != '}')
			t->i++;
		if (t->i >= t->n) {
			fail(t, "unterminated \\%c{", c);
			return -1;
		}
		if (property_name(t->s + body, t->i - body, e->prop, sizeof e->prop)) {
			fail(t, "\\%c{%.*s} is not a property name", c, (int)(t->i - body),
			     t->s + body);
			return -1;
		}
		t->i++;
		e->kind = ESC_PROP;
		e->negated = c == 'P';
		(void)start;
		return 0;
	case 'k':
		if (in_class || t->i >= t->n || t->s[t->i] != '<') {
			fail(t, "\\k must name a group: \\k<name>");
			return -1;
		}
		while (t->i < t->n && t->s[t->i] != '>')
			t->i++;
		if (t->i >= t->n) {
			fail(t, "unterminated \\k<name>");
			return -1;
		}
		t->i++;
		e->kind = ESC_VERBATIM, e->from = start;
		return 0;
	default:
		break;
	}
	if (c >= '1' && c <= '9') {
		if (in_class) {
			fail(t, "a backreference (\\%c) is not allowed inside a character class", c);
			return -1;
		}
		e->kind = ESC_VERBATIM, e->from = start; /* rewritten as \g{N} */
		while (t->i < t->n && t->s[t->i] >= '0' && t->s[t->i] <= '9')
			t->i++;
		return 0;
	}
	if (c && strchr("^$\\.*+?()[]{}|/", c)) {
		e->cp = c;
		return 0;
	}
	if (c == '-' && in_class) {
		e->cp = c;
		return 0;
	}
	if (c >= 0x80)
		fail(t, "a backslash before a non-ASCII character is not ECMA-262");
	else
		fail(t, "\\%c is not an ECMA-262 escape", c);
	return -1;
}

/* Writes one code point as a PCRE2 class member or atom. */
static void emit_literal_cp(tr *t, unsigned long cp)
{
	if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
		char ch = (char)cp;
		emit(t, &ch, 1);
	} else {
		emit_cp(t, cp);
	}
}

/* Copies one UTF-8 character of the source (or one byte, which PCRE2 will
 * refuse if it is not valid UTF-8). */
static void copy_char(tr *t)
{
	unsigned char c = (unsigned char)t->s[t->i];
	size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
	if (t->i + k > t->n)
		k = t->n - t->i;
	if (c == 0) {
		emit_cp(t, 0);
		t->i++;
		return;
	}
	emit(t, t->s + t->i, k);
	t->i += k;
}

static void emit_escape(tr *t, const esc *e, int in_class)
{
	switch (e->kind) {
	case ESC_CP:
		emit_literal_cp(t, e->cp);
		break;
	case ESC_PROP:
		emits(t, e->negated ? "\\P{" : "\\p{");
		emits(t, e->prop);
		emits(t, "}");
		break;
	case ESC_CLASS:
		if (in_class) {
			emits(t, e->negated ? e->neg : e->pos);
		} else {
			emits(t, e->negated ? "[^" : "[");
			emits(t, e->pos);
			emits(t, "]");
		}
		break;
	default:
		if (t->s[e->from + 1] >= '1' && t->s[e->from + 1] <= '9') {
			/* \N is always a backreference in ECMA's u mode; PCRE2
			 * reads \10 as octal when there are fewer groups. */
			emits(t, "\\g{");
			emit(t, t->s + e->from + 1, t->i - e->from - 1);
			emits(t, "}");
		} else {
			emit(t, t->s + e->from, t->i - e->from);
		}
		break;
	}
}

/* A character class, t->i just after '['. */
static void parse_class(tr *t)
{
	int neg = t->i < t->n && t->s[t->i] == '^';
	if (neg)
		t->i++;
	if (t->i < t->n && t->s[t->i] == ']') {
		t->i++;
		/* ECMA: [] matches nothing, [^] any character. */
		emits(t, neg ? "[\\x{0}-\\x{10ffff}]" : "(?!)");
		return;
	}
	emits(t, neg ? "[^" : "[");
	int items = 0;      /* class members so far */
	int prev_class = 0; /* the previous member was a class escape */
	int in_range = 0;   /* a '-' after a member: the next one ends a range */
	int after_range = 0;/* the previous member ended a range: '-' is literal */
	while (!t->failed && t->i < t->n && t->s[t->i] != ']') {
		char c = t->s[t->i];
		if (c == '-' && items && !in_range && !after_range && t->i + 1 < t->n &&
		    t->s[t->i + 1] != ']') {
			if (prev_class) {
				fail(t, "a class escape cannot start a range");
				return;
			}
			in_range = 1;
			emits(t, "-");
			t->i++;
			continue;
		}
		if (c == '\\') {
			t->i++;
			esc e;
			if (parse_escape(t, 1, &e))
				return;
			if (e.kind == ESC_CLASS && in_range) {
				fail(t, "a class escape cannot end a range");
				return;
			}
			emit_escape(t, &e, 1);
			prev_class = e.kind == ESC_CLASS;
		} else if (c == '[') {
			/* Literal in ECMA; PCRE2 would read [: :] as a POSIX class. */
			emits(t, "\\[");
			t->i++;
			prev_class = 0;
		} else {
			copy_char(t);
			prev_class = 0;
		}
		items++;
		after_range = in_range;
		in_range = 0;
	}
	if (t->i >= t->n) {
		fail(t, "unterminated character class");
		return;
	}
	t->i++;
	emits(t, "]");
}

/* A quantifier at t->i ({n}, {n,}, {n,m}): its length, or 0. */
static size_t brace_quantifier(const tr *t)
{
	size_t j = t->i + 1, d1 = 0, d2 = 0;
	while (j < t->n && t->s[j] >= '0' && t->s[j] <= '9')
		j++, d1++;
	if (!d1 || j >= t->n)
		return 0;
	if (t->s[j] == ',') {
		j++;
		while (j < t->n && t->s[j] >= '0' && t->s[j] <= '9')
			j++, d2++;
	}
	if (j >= t->n || t->s[j] != '}')
		return 0;
	return j + 1 - t->i;
}

char *jschema_regex_translate(const char *src, size_t len, char *why, size_t whylen, int *oom)
{
	tr t = { .s = src, .n = len, .why = why, .whylen = whylen };
	*oom = 0;
	if (why && whylen)
		why[0] = 0;
	if (len > MAX_PATTERN) {
		fail(&t, "the pattern is longer than %d bytes", MAX_PATTERN);
		return NULL;
	}
	emit(&t, "", 0);
	int can_repeat = 0;    /* the last item is an atom a quantifier may follow */
	while (!t.failed && !t.oom && t.i < t.n) {
		char c = t.s[t.i];
		size_t q = 0;
		if (c == '*' || c == '+' || c == '?' || (c == '{' && (q = brace_quantifier(&t)))) {
			if (!can_repeat) {
				fail(&t, "nothing to repeat at offset %zu", t.i);
				break;
			}
			size_t k = q ? q : 1;
			emit(&t, t.s + t.i, k);
			t.i += k;
			if (t.i < t.n && t.s[t.i] == '?') { /* lazy */
				emit(&t, "?", 1);
				t.i++;
			}
			can_repeat = 0;
			continue;
		}
		can_repeat = 1;
		switch (c) {
		case '\\': {
			t.i++;
			esc e;
			if (parse_escape(&t, 0, &e))
				break;
			emit_escape(&t, &e, 0);
			/* \b and \B are assertions: ECMA does not let them repeat. */
			if (e.kind == ESC_VERBATIM && (t.s[e.from + 1] == 'b' || t.s[e.from + 1] == 'B'))
				can_repeat = 0;
			break;
		}
		case '.':
			emits(&t, DOT);
			t.i++;
			break;
		case '[':
			t.i++;
			parse_class(&t);
			break;
		case '(':
			t.i++;
			if (t.i < t.n && t.s[t.i] == '*') {
				fail(&t, "nothing to repeat at offset %zu", t.i);
				break;
			}
			if (t.i < t.n && t.s[t.i] == '?') {
				const char *p = t.s + t.i;
				size_t left = t.n - t.i;
				size_t k = 0;
				if (left >= 2 && (p[1] == ':' || p[1] == '=' || p[1] == '!'))
					k = 2;
				else if (left >= 3 && p[1] == '<' && (p[2] == '=' || p[2] == '!'))
					k = 3;
				else if (left >= 3 && p[1] == '<')
					k = 2; /* a named group: PCRE2 checks the name */
				if (!k) {
					fail(&t, "(?%c is not an ECMA-262 group", left >= 2 ? p[1] : ' ');
					break;
				}
				emit(&t, "(", 1);
				emit(&t, p, k);
				t.i += k;
			} else {
				emit(&t, "(", 1);
			}
			can_repeat = 0;
			break;
		case ')':
			emit(&t, ")", 1);
			t.i++;
			break;
		case '|':
			emit(&t, "|", 1);
			t.i++;
			can_repeat = 0;
			break;
		case '^':
		case '$':
			emit(&t, &c, 1);
			t.i++;
			can_repeat = 0;
			break;
		case '{':
		case '}':
		case ']':
			/* Annex B: literal when not a quantifier / class end. */
			emit(&t, "\\", 1);
			emit(&t, &c, 1);
			t.i++;
			break;
		default:
			copy_char(&t);
			break;
		}
	}
	if (t.failed || t.oom) {
		*oom = t.oom && !t.failed;
		free(t.out);
		return NULL;
	}
	return t.out;
}

struct jschema_regex *jschema_regex_new(const char *src, size_t len, uint32_t match_limit,
					char *why, size_t whylen, int *oom)
{
	char *pat = jschema_regex_translate(src, len, why, whylen, oom);
	if (!pat)
		return NULL;
	struct jschema_regex *re = calloc(1, sizeof *re);
	if (!re) {
		free(pat);
		*oom = 1;
		return NULL;
	}
	int code = 0;
	PCRE2_SIZE off = 0;
	re->code = pcre2_compile((PCRE2_SPTR)pat, strlen(pat),
				 PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C, &code,
				 &off, NULL);
	free(pat);
	if (!re->code) {
		if (code == PCRE2_ERROR_NOMEMORY || code == PCRE2_ERROR_HEAP_FAILED) {
			*oom = 1;
		} else if (why && whylen) {
			PCRE2_UCHAR msg[160];
			if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
				snprintf((char *)msg, sizeof msg, "error %d", code);
			snprintf(why, whylen, "%s", (const char *)msg);
		}
		free(re);
		return NULL;
	}
	re->mctx = pcre2_match_context_create(NULL);
	if (!re->mctx) {
		jschema_regex_free(re);
		*oom = 1;
		return NULL;
	}
	/* The match limit bounds backtracking steps; the depth and heap
	 * limits what one match may hold (in KiB for the heap). */
	pcre2_set_match_limit(re->mctx, match_limit ? match_limit : 1000000);
	pcre2_set_depth_limit(re->mctx, 10000);
	pcre2_set_heap_limit(re->mctx, 16384);
	return re;
}

void jschema_regex_free(struct jschema_regex *re)
{
	if (!re)
		return;
	pcre2_code_free(re->code);
	pcre2_match_context_free(re->mctx);
	free(re);
}

int jschema_regex_search(const struct jschema_regex *re, const char *s, size_t len)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	if (!md)
		return JSCHEMA_ENOMEM;
	int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, md, re->mctx);
	pcre2_match_data_free(md);
	if (rc >= 0)
		return 1;
	switch (rc) {
	case PCRE2_ERROR_NOMATCH:
		return 0;
	case PCRE2_ERROR_NOMEMORY:
		return JSCHEMA_ENOMEM;
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
		return JSCHEMA_ELIMIT;
	default:
		/* The UTF-8 checks (PCRE2_ERROR_UTF8_ERR*): json-c strings may
		 * hold bytes that are not UTF-8, and such a string matches
		 * nothing. */
		return 0;
	}
}
