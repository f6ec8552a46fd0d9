/*
 * jschema-format.c - the "format" assertions a server may switch on: dates
 * and times (RFC 3339), durations (RFC 3339 appendix A), e-mail addresses
 * (RFC 5321, RFC 6531 local parts), host names (RFC 1123), IP addresses,
 * URIs and IRIs, URI templates (RFC 6570), UUIDs, regular expressions and
 * JSON pointers.
 *
 * Checks are syntactic, on the bytes, with ASCII digits only (a Bengali
 * digit is not a digit here).  IDNA2008's rules for non-ASCII host names
 * are not implemented: idn-hostname stays an annotation, and an "xn--"
 * label is checked only as ASCII.
 */
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"

enum {
	F_NONE = 0,
	F_DATE_TIME,
	F_DATE,
	F_TIME,
	F_DURATION,
	F_EMAIL,
	F_IDN_EMAIL,
	F_HOSTNAME,
	F_IPV4,
	F_IPV6,
	F_URI,
	F_URI_REF,
	F_IRI,
	F_IRI_REF,
	F_URI_TEMPLATE,
	F_UUID,
	F_REGEX,
	F_JSON_POINTER,
	F_REL_JSON_POINTER,
};

static const struct {
	const char *name;
	int id;
} formats[] = {
	{ "date-time", F_DATE_TIME },
	{ "date", F_DATE },
	{ "time", F_TIME },
	{ "duration", F_DURATION },
	{ "email", F_EMAIL },
	{ "idn-email", F_IDN_EMAIL },
	{ "hostname", F_HOSTNAME },
	{ "ipv4", F_IPV4 },
	{ "ipv6", F_IPV6 },
	{ "uri", F_URI },
	{ "uri-reference", F_URI_REF },
	{ "iri", F_IRI },
	{ "iri-reference", F_IRI_REF },
	{ "uri-template", F_URI_TEMPLATE },
	{ "uuid", F_UUID },
	{ "regex", F_REGEX },
	{ "json-pointer", F_JSON_POINTER },
	{ "relative-json-pointer", F_REL_JSON_POINTER },
};

int jschema_format_id(const char *name)
{
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (strcmp(formats[i].name, name) == 0)
			return formats[i].id;
	return F_NONE;
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hexdig(char c)
{
	return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* `k` ASCII digits at s as a number, or -1. */
static int num(const char *s, int k)
{
	int v = 0;
	for (int i = 0; i < k; i++) {
		if (!digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* ---- RFC 3339 ----------------------------------------------------------- */

static int full_date(const char *s, size_t n)
{
	if (n != 10 || s[4] != '-' || s[7] != '-')
		return 0;
	int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);
	if (y < 0 || m < 1 || m > 12 || d < 1)
		return 0;
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int max = days[m - 1];
	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		max = 29;
	return d <= max;
}

/* time-hour ":" time-minute ":" time-second [frac] time-offset */
static int full_time(const char *s, size_t n)
{
	if (n < 9 || s[2] != ':' || s[5] != ':')
		return 0;
	int h = num(s, 2), mi = num(s + 3, 2), se = num(s + 6, 2);
	if (h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 || se > 60)
		return 0;
	size_t i = 8;
	if (i < n && s[i] == '.') {
		size_t j = ++i;
		while (i < n && digit(s[i]))
			i++;
		if (i == j)
			return 0;
	}
	if (i >= n)
		return 0; /* the offset is required */
	int off = 0; /* minutes east of UTC */
	if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n) {
		off = 0;
	} else if ((s[i] == '+' || s[i] == '-') && n - i == 6 && s[i + 3] == ':') {
		int oh = num(s + i + 1, 2), om = num(s + i + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return 0;
		off = (oh * 60 + om) * (s[i] == '-' ? -1 : 1);
	} else {
		return 0;
	}
	if (se == 60) {
		/* A leap second is 23:59:60 in UTC. */
		int utc = ((h * 60 + mi - off) % 1440 + 1440) % 1440;
		if (utc != 23 * 60 + 59)
			return 0;
	}
	return 1;
}

static int date_time(const char *s, size_t n)
{
	if (n < 20 || (s[10] != 'T' && s[10] != 't'))
		return 0;
	return full_date(s, 10) && full_time(s + 11, n - 11);
}

/* P[nY][nM][nD][T[nH][nM][nS]] or PnW, each unit at most once, in order,
 * with no gaps in the sense of RFC 3339's ABNF (dur-month needs dur-day
 * after it only when years precede?  no: the ABNF allows Y, YM, YMD, M,
 * MD, D and H, HM, HMS, M, MS, S). */
static int duration(const char *s, size_t n)
{
	if (n < 2 || s[0] != 'P')
		return 0;
	size_t i = 1;
	static const char date_units[] = "YMD", time_units[] = "HMS";
	int last = -1, have = 0, in_time = 0, week = 0, time_items = 0;
	while (i < n) {
		if (s[i] == 'T') {
			if (in_time || week)
				return 0;
			in_time = 1;
			last = -1;
			i++;
			if (i >= n)
				return 0;
			continue;
		}
		size_t j = i;
		while (i < n && digit(s[i]))
			i++;
		if (i == j || i >= n)
			return 0;
		char u = s[i++];
		if (u == 'W') {
			if (have || in_time || i != n)
				return 0;
			week = 1;
			have = 1;
			continue;
		}
		const char *units = in_time ? time_units : date_units;
		const char *p = strchr(units, u);
		if (!u || !p)
			return 0;
		int k = (int)(p - units);
		/* in order, and contiguous: Y then M then D, H then M then S */
		if (last >= 0 && k != last + 1)
			return 0;
		last = k;
		have = 1;
		if (in_time)
			time_items++;
	}
	if (in_time && !time_items)
		return 0;
	return have;
}

/* ---- networks (IP addresses: jschema-uri.c) -------------------------------- */

static int hostname(const char *s, size_t n, int idn)
{
	if (n == 0 || n > 253)
		return 0;
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (i < n && s[i] != '.') {
			unsigned char c = (unsigned char)s[i];
			if (!(alpha((char)c) || digit((char)c) || c == '-' || (idn && c >= 0x80)))
				return 0;
			i++;
		}
		size_t k = i - j;
		if (k == 0 || k > 63 || s[j] == '-' || s[i - 1] == '-')
			return 0;
		/* "--" in the third and fourth place marks an encoded label;
		 * only "xn--" is one. */
		if (k >= 4 && s[j + 2] == '-' && s[j + 3] == '-' &&
		    !((s[j] == 'x' || s[j] == 'X') && (s[j + 1] == 'n' || s[j + 1] == 'N')))
			return 0;
		if (i == n)
			return 1;
		i++; /* the dot; a trailing dot leaves an empty label */
	}
	return 0;
}

static int atext(unsigned char c, int idn)
{
	return alpha((char)c) || digit((char)c) || (c && strchr("!#$%&'*+/=?^_`{|}~-", c)) ||
	       (idn && c >= 0x80);
}

static int email(const char *s, size_t n, int idn)
{
	size_t i = 0;
	if (n && s[0] == '"') {
		i = 1;
		while (i < n && s[i] != '"') {
			if (s[i] == '\\')
				i++;
			else if ((unsigned char)s[i] < 0x20)
				return 0;
			i++;
		}
		if (i >= n)
			return 0;
		i++; /* the closing quote */
	} else {
		int prev_dot = 1;
		while (i < n && s[i] != '@') {
			if (s[i] == '.') {
				if (prev_dot)
					return 0;
				prev_dot = 1;
			} else if (atext((unsigned char)s[i], idn)) {
				prev_dot = 0;
			} else {
				return 0;
			}
			i++;
		}
		if (i == 0 || prev_dot)
			return 0;
	}
	if (i >= n || s[i] != '@' || i > 64)
		return 0;
	const char *d = s + i + 1;
	size_t dn = n - i - 1;
	if (dn >= 2 && d[0] == '[' && d[dn - 1] == ']') {
		if (dn > 7 && strncmp(d + 1, "IPv6:", 5) == 0)
			return jschema_is_ipv6(d + 6, dn - 7);
		return jschema_is_ipv4(d + 1, dn - 2);
	}
	return hostname(d, dn, idn);
}

/* ---- the rest ------------------------------------------------------------ */

static int uuid(const char *s, size_t n)
{
	if (n != 36)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!hexdig(s[i])) {
			return 0;
		}
	}
	return 1;
}

static int json_pointer(const char *s, size_t n)
{
	if (n && s[0] != '/')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '~' && (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1')))
			return 0;
	return 1;
}

static int rel_json_pointer(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && digit(s[i]))
		i++;
	if (i == 0 || (i > 1 && s[0] == '0'))
		return 0;
	if (i < n && s[i] == '#')
		return i + 1 == n;
	return json_pointer(s + i, n - i);
}

/* RFC 6570: literals, and expressions {[op]varspec[,varspec...]} where a
 * varspec is a name with an optional :maxlength or *. */
static int uri_template(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '}')
			return 0;
		if (c != '{') {
			/* RFC 6570 literals (an apostrophe is allowed, as the
			 * JSON Schema suite reads it) */
			if (c <= 0x20 || c == 0x7f || strchr("\"<>\\^`|", c))
				return 0;
			continue;
		}
		i++;
		if (i < n && strchr("+#./;?&=,!@|", s[i]))
			i++;
		for (;;) {
			/* varname: varchars, single dots between them */
			size_t j = i;
			while (i < n && (alpha(s[i]) || digit(s[i]) || s[i] == '_' || s[i] == '.' ||
					 s[i] == '%')) {
				if (s[i] == '.' && (i == j || s[i - 1] == '.'))
					return 0;
				i++;
			}
			if (i == j || i >= n || s[i - 1] == '.')
				return 0;
			if (s[i] == ':') {
				size_t k = ++i;
				while (i < n && digit(s[i]))
					i++;
				if (i == k || i - k > 4 || s[k] == '0')
					return 0;
			} else if (s[i] == '*') {
				i++;
			}
			if (i >= n)
				return 0;
			if (s[i] == ',') {
				i++;
				continue;
			}
			if (s[i] != '}')
				return 0;
			break;
		}
	}
	return 1;
}

static int regex(const char *s, size_t n)
{
	int oom = 0;
	struct jschema_regex *re = jschema_regex_new(s, n, 0, NULL, 0, &oom);
	jschema_regex_free(re);
	/* Out of memory is not the string's fault: do not call it invalid. */
	return re != NULL || oom;
}

int jschema_format_check(int id, const char *s, size_t n)
{
	switch (id) {
	case F_DATE_TIME: return date_time(s, n);
	case F_DATE: return full_date(s, n);
	case F_TIME: return full_time(s, n);
	case F_DURATION: return duration(s, n);
	case F_EMAIL: return email(s, n, 0);
	case F_IDN_EMAIL: return email(s, n, 1);
	case F_HOSTNAME: return hostname(s, n, 0);
	case F_IPV4: return jschema_is_ipv4(s, n);
	case F_IPV6: return jschema_is_ipv6(s, n);
	case F_URI: return jschema_is_uri(s, n, 0, 0);
	case F_URI_REF: return jschema_is_uri(s, n, 1, 0);
	case F_IRI: return jschema_is_uri(s, n, 0, 1);
	case F_IRI_REF: return jschema_is_uri(s, n, 1, 1);
	case F_URI_TEMPLATE: return uri_template(s, n);
	case F_UUID: return uuid(s, n);
	case F_REGEX: return regex(s, n);
	case F_JSON_POINTER: return json_pointer(s, n);
	case F_REL_JSON_POINTER: return rel_json_pointer(s, n);
	default: return 1;
	}
}
