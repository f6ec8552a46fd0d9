/*
 * jschema-uri.c - the URIs of JSON Schema: RFC 3986 reference resolution
 * for $id and $ref, and the syntax checks of the uri, uri-reference, iri and
 * iri-reference formats.
 *
 * Nothing here touches the network or normalises beyond what resolution
 * itself does (dot segments); identifiers are compared as strings.
 */
#include <stdlib.h>
#include <string.h>

#include "api/jschema/jschema.h"

/* The five components of a URI reference; a NULL start means absent (an
 * empty path is present with length 0). */
typedef struct uparts {
	const char *scheme, *auth, *path, *query, *frag;
	size_t nscheme, nauth, npath, nquery, nfrag;
} uparts;

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static size_t scheme_len(const char *s, size_t n)
{
	if (n == 0 || !is_alpha((unsigned char)s[0]))
		return 0;
	size_t i = 1;
	while (i < n && (is_alpha((unsigned char)s[i]) || is_digit((unsigned char)s[i]) ||
			 s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	return i < n && s[i] == ':' ? i : 0;
}

static void split(const char *s, size_t n, uparts *u)
{
	memset(u, 0, sizeof *u);
	size_t i = 0;
	size_t k = scheme_len(s, n);
	if (k) {
		u->scheme = s;
		u->nscheme = k;
		i = k + 1;
	}
	if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
		size_t a = i + 2, e = a;
		while (e < n && s[e] != '/' && s[e] != '?' && s[e] != '#')
			e++;
		u->auth = s + a;
		u->nauth = e - a;
		i = e;
	}
	size_t p = i;
	while (i < n && s[i] != '?' && s[i] != '#')
		i++;
	u->path = s + p;
	u->npath = i - p;
	if (i < n && s[i] == '?') {
		size_t q = ++i;
		while (i < n && s[i] != '#')
			i++;
		u->query = s + q;
		u->nquery = i - q;
	}
	if (i < n && s[i] == '#') {
		u->frag = s + i + 1;
		u->nfrag = n - i - 1;
	}
}

/* A growable output string; `bad` latches an allocation failure. */
typedef struct ubuf {
	char *p;
	size_t n, cap;
	int bad;
} ubuf;

static void put(ubuf *b, const char *s, size_t n)
{
	if (b->bad)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->bad = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

/* RFC 3986 5.2.4, writing the result to `out`.  Works on a copy of the
 * input, since two of its steps replace a prefix with "/". */
static void remove_dots(ubuf *out, const char *path, size_t n)
{
	char *in = malloc(2 * n + 2);
	if (!in) {
		out->bad = 1;
		return;
	}
	char *buf = in + n + 1;
	memcpy(in, path, n);
	in[n] = 0;
	size_t len = 0, i = 0;
	while (i < n) {
		const char *s = in + i;
		size_t left = n - i;
		if (left >= 3 && memcmp(s, "../", 3) == 0) {
			i += 3;
		} else if (left >= 2 && memcmp(s, "./", 2) == 0) {
			i += 2;
		} else if (left >= 3 && memcmp(s, "/./", 3) == 0) {
			i += 2;
		} else if (left == 2 && memcmp(s, "/.", 2) == 0) {
			i += 1;
			in[i] = '/';
		} else if ((left >= 4 && memcmp(s, "/../", 4) == 0) ||
			   (left == 3 && memcmp(s, "/..", 3) == 0)) {
			while (len > 0 && buf[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			if (left == 3) {
				i += 2;
				in[i] = '/';
			} else {
				i += 3;
			}
		} else if ((left == 1 && s[0] == '.') || (left == 2 && memcmp(s, "..", 2) == 0)) {
			i = n;
		} else {
			size_t k = s[0] == '/' ? 1 : 0;
			while (k < left && s[k] != '/')
				k++;
			memcpy(buf + len, s, k);
			len += k;
			i += k;
		}
	}
	put(out, buf, len);
	free(in);
}

char *jschema_uri_resolve(const char *base, const char *ref)
{
	uparts b, r;
	split(base, strlen(base), &b);
	split(ref, strlen(ref), &r);
	ubuf o = { 0 };
	put(&o, "", 0);
	const char *scheme = r.scheme ? r.scheme : b.scheme;
	size_t nscheme = r.scheme ? r.nscheme : b.nscheme;
	if (scheme) {
		put(&o, scheme, nscheme);
		put(&o, ":", 1);
	}
	if (r.scheme || r.auth) {
		if (r.auth) {
			put(&o, "//", 2);
			put(&o, r.auth, r.nauth);
		}
		remove_dots(&o, r.path, r.npath);
		if (r.query) {
			put(&o, "?", 1);
			put(&o, r.query, r.nquery);
		}
	} else {
		if (b.auth) {
			put(&o, "//", 2);
			put(&o, b.auth, b.nauth);
		}
		if (r.npath == 0) {
			put(&o, b.path, b.npath);
			const char *q = r.query ? r.query : b.query;
			if (q) {
				put(&o, "?", 1);
				put(&o, q, r.query ? r.nquery : b.nquery);
			}
		} else {
			if (r.path[0] == '/') {
				remove_dots(&o, r.path, r.npath);
			} else {
				/* merge (5.2.3): the base path up to its last '/' */
				ubuf m = { 0 };
				if (b.auth && b.npath == 0) {
					put(&m, "/", 1);
				} else {
					size_t k = b.npath;
					while (k > 0 && b.path[k - 1] != '/')
						k--;
					put(&m, b.path, k);
				}
				put(&m, r.path, r.npath);
				if (m.bad)
					o.bad = 1;
				else
					remove_dots(&o, m.p ? m.p : "", m.n);
				free(m.p);
			}
			if (r.query) {
				put(&o, "?", 1);
				put(&o, r.query, r.nquery);
			}
		}
	}
	if (r.frag) {
		put(&o, "#", 1);
		put(&o, r.frag, r.nfrag);
	}
	if (o.bad) {
		free(o.p);
		return NULL;
	}
	return o.p;
}

char *jschema_uri_strip(const char *uri, const char **frag)
{
	const char *h = strchr(uri, '#');
	*frag = h ? h + 1 : NULL;
	size_t n = h ? (size_t)(h - uri) : strlen(uri);
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, uri, n);
		d[n] = 0;
	}
	return d;
}

/* ---- syntax (RFC 3986 appendix A, RFC 3987 for the iri forms) ----------- */

static int is_unreserved(int c)
{
	return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int is_subdelim(int c)
{
	return c && strchr("!$&'()*+,;=", c) != NULL;
}

/* Whether s[0..n) is made only of the characters allowed (unreserved,
 * sub-delims, percent-encoded triplets, `extra`, and with `iri` any
 * non-ASCII byte). */
static int chars_ok(const char *s, size_t n, const char *extra, int iri)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n || !is_hex((unsigned char)s[i + 1]) ||
			    !is_hex((unsigned char)s[i + 2]))
				return 0;
			i += 2;
			continue;
		}
		if (c >= 0x80) {
			if (!iri)
				return 0;
			continue;
		}
		if (!is_unreserved(c) && !is_subdelim(c) && !(c && strchr(extra, c)))
			return 0;
	}
	return 1;
}

/* ---- IP addresses (RFC 3986 section 3.2.2; also the ipv4 and ipv6
 * formats) ---------------------------------------------------------------- */

static int ip_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int ip_hexdig(char c)
{
	return ip_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* `k` ASCII digits at s as a number, or -1. */
static int ip_num(const char *s, int k)
{
	int v = 0;
	for (int i = 0; i < k; i++) {
		if (!ip_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int jschema_is_ipv4(const char *s, size_t n)
{
	int parts = 0;
	size_t i = 0;
	while (parts < 4) {
		size_t j = i;
		while (i < n && ip_digit(s[i]) && i - j < 4)
			i++;
		size_t k = i - j;
		if (k == 0 || k > 3 || (k > 1 && s[j] == '0') || ip_num(s + j, (int)k) > 255)
			return 0;
		parts++;
		if (parts < 4) {
			if (i >= n || s[i] != '.')
				return 0;
			i++;
		}
	}
	return i == n;
}

int jschema_is_ipv6(const char *s, size_t n)
{
	int groups = 0, gap = 0;
	size_t i = 0;
	if (n >= 2 && s[0] == ':' && s[1] == ':') {
		gap = 1;
		i = 2;
		if (n == 2)
			return 1;
	} else if (n >= 1 && s[0] == ':') {
		return 0;
	}
	while (i < n) {
		size_t j = i;
		while (i < n && ip_hexdig(s[i]) && i - j < 5)
			i++;
		if (i < n && s[i] == '.') {
			/* an embedded IPv4 address ends it, worth two groups */
			if (!jschema_is_ipv4(s + j, n - j))
				return 0;
			groups += 2;
			i = n;
			break;
		}
		if (i == j || i - j > 4)
			return 0;
		groups++;
		if (i == n)
			break;
		if (s[i] != ':')
			return 0;
		i++;
		if (i < n && s[i] == ':') {
			if (gap)
				return 0;
			gap = 1;
			i++;
			if (i == n)
				break;
		} else if (i == n) {
			return 0; /* a single trailing colon */
		}
	}
	return gap ? groups <= 7 : groups == 8;
}

static int ipv6_literal(const char *s, size_t n)
{
	/* [ ... ] holds hex groups, colons and dots (an embedded IPv4), or
	 * an IPvFuture "v..." form. */
	if (n < 2 || s[0] != '[' || s[n - 1] != ']')
		return 0;
	s++;
	n -= 2;
	if (n > 0 && (s[0] == 'v' || s[0] == 'V'))
		return n > 3 && chars_ok(s + 1, n - 1, ":", 0);
	char tmp[64];
	if (n == 0 || n >= sizeof tmp)
		return 0;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	return jschema_is_ipv6(tmp, n);
}

static int authority_ok(const char *s, size_t n, int iri)
{
	const char *at = memchr(s, '@', n);
	if (at) {
		if (!chars_ok(s, (size_t)(at - s), ":", iri))
			return 0;
		n -= (size_t)(at - s) + 1;
		s = at + 1;
	}
	/* host [":" port] */
	size_t hn = n;
	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return 0;
		hn = (size_t)(close - s) + 1;
		if (!ipv6_literal(s, hn))
			return 0;
	} else {
		const char *colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
		if (!chars_ok(s, hn, "", iri))
			return 0;
	}
	if (hn < n) {
		if (s[hn] != ':')
			return 0;
		for (size_t i = hn + 1; i < n; i++)
			if (!is_digit((unsigned char)s[i]))
				return 0;
	}
	return 1;
}

int jschema_is_uri(const char *s, size_t len, int reference, int iri)
{
	uparts u;
	split(s, len, &u);
	if (!u.scheme && !reference)
		return 0;
	if (!u.scheme && len > 0) {
		/* A relative reference whose first segment holds a colon
		 * would read as a scheme (RFC 3986 4.2). */
		size_t k = 0;
		while (k < u.npath && u.path[k] != '/')
			k++;
		if (!u.auth && memchr(u.path, ':', k))
			return 0;
	}
	if (u.auth && !authority_ok(u.auth, u.nauth, iri))
		return 0;
	if (!chars_ok(u.path, u.npath, ":@/", iri))
		return 0;
	if (u.auth && u.npath > 0 && u.path[0] != '/')
		return 0;
	if (u.query && !chars_ok(u.query, u.nquery, ":@/?", iri))
		return 0;
	if (u.frag && !chars_ok(u.frag, u.nfrag, ":@/?", iri))
		return 0;
	return 1;
}
