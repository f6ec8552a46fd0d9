/*
 * auth-fetch.c - the resource server's one way to speak HTTP to its
 * authorization server (a JWKS, metadata, introspection), and how long
 * an answer may be used by its caching headers (RFC 9111).
 *
 * Every exchange is bounded in time, size and reach: the caller gives the
 * limits, https is required except to the loopback, and no redirect is
 * followed, so a metadata document cannot send the server to fetch from
 * a place it was not told of.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/auth.h"
#ifdef HAVE_CURL
#include "transport/curl.h"
#endif

/* The longest header value kept (Cache-Control lines joined). */
#define HEADER_KEEP 1024

int auth_fetch_url_allowed(const char *url)
{
	if (!url)
		return 0;
	if (strncasecmp(url, "https://", 8) == 0)
		return url[8] && url[8] != '/' && !strpbrk(url, " \t\r\n") &&
		       !memchr(url + 8, '@', strcspn(url + 8, "/?#"));
	if (strncasecmp(url, "http://", 7) != 0)
		return 0;
	const char *h = url + 7;
	size_t alen = strcspn(h, "/?#");
	if (memchr(h, '@', alen) || strpbrk(url, " \t\r\n"))
		return 0;
	/* The host, without the port. */
	size_t hlen;
	if (h[0] == '[') {
		const char *end = memchr(h, ']', alen);
		if (!end)
			return 0;
		hlen = (size_t)(end - h) + 1;
		return hlen == 5 && memcmp(h, "[::1]", 5) == 0;
	}
	const char *colon = memchr(h, ':', alen);
	hlen = colon ? (size_t)(colon - h) : alen;
	if (hlen == 9 && strncasecmp(h, "localhost", 9) == 0)
		return 1;
	/* 127.0.0.0/8 in dotted-quad form only. */
	if (hlen < 7 || strncmp(h, "127.", 4) != 0)
		return 0;
	int dots = 0;
	for (size_t i = 0; i < hlen; i++) {
		if (h[i] == '.')
			dots++;
		else if (!isdigit((unsigned char)h[i]))
			return 0;
	}
	return dots == 3;
}

char *auth_form_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '*') {
			*o++ = (char)c;
		} else if (c == ' ') {
			*o++ = '+';
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = 0;
	return out;
}

/* ---- caching headers (RFC 9111) ------------------------------------------ */

/* An HTTP-date (RFC 9110 section 5.6.7) in its preferred form, as Unix
 * seconds; -1 when it is not one. */
static int64_t http_date(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	const char *end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
	if (!end || *end)
		return -1;
	return (int64_t)timegm(&tm);
}

int64_t auth_cache_lifetime_ms(const char *cache_control, const char *expires, const char *date,
			       int64_t now, int64_t dflt_ms, int64_t min_ms, int64_t max_ms)
{
	int64_t life = -1;
	int fresh_never = 0;
	for (const char *p = cache_control; p && *p;) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t name = strcspn(p, "=, \t");
		if (name > n)
			name = n;
		if ((name == 8 && strncasecmp(p, "no-store", 8) == 0) ||
		    (name == 8 && strncasecmp(p, "no-cache", 8) == 0)) {
			fresh_never = 1;
		} else if (name == 7 && strncasecmp(p, "max-age", 7) == 0 && p[7] == '=') {
			/* delta-seconds, perhaps quoted (section 5.2: a recipient
			 * should accept the quoted form too). */
			const char *v = p + 8;
			int quoted = *v == '"';
			v += quoted;
			int64_t secs = 0;
			int digits = 0;
			for (; isdigit((unsigned char)*v); v++, digits++)
				secs = secs < 100000000000LL ? secs * 10 + (*v - '0') : secs;
			if (digits && (!quoted || *v == '"') && life < 0)
				life = secs * 1000;
		}
		p += n;
	}
	if (fresh_never)
		life = 0;
	else if (life < 0 && expires) {
		/* Section 5.3: an Expires that is not a date means already
		 * expired; the lifetime is Expires minus Date (section 4.2.1). */
		int64_t e = http_date(expires), d = date ? http_date(date) : -1;
		if (d < 0)
			d = now;
		life = e < 0 || e <= d ? 0 : (e - d) * 1000;
	}
	if (life < 0)
		life = dflt_ms;
	if (life < min_ms)
		life = min_ms;
	if (life > max_ms)
		life = max_ms;
	return life;
}

void auth_fetch_clear(auth_fetch *f)
{
	free(f->body);
	free(f->cache_control);
	free(f->expires);
	free(f->date);
	f->body = f->cache_control = f->expires = f->date = NULL;
	f->len = 0;
	f->status = 0;
}

#ifndef HAVE_CURL

int auth_fetch_run(auth_fetch *f, char *why, size_t whysz)
{
	snprintf(why, whysz, "libmcp was built without libcurl: %s cannot be fetched", f->url);
	return MCP_ENOTSUP;
}

#else

typedef struct fetch_io {
	auth_fetch *f;
	size_t cap;
	int too_big;
	int no_memory;
} fetch_io;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	fetch_io *io = arg;
	auth_fetch *f = io->f;
	size_t n = size * nmemb;
	if (n > f->max_bytes - f->len) {
		io->too_big = 1;
		return 0; /* ends the exchange */
	}
	if (f->len + n + 1 > io->cap) {
		size_t cap = io->cap ? io->cap : 4096;
		while (cap < f->len + n + 1)
			cap *= 2;
		char *g = realloc(f->body, cap);
		if (!g) {
			io->no_memory = 1;
			return 0;
		}
		f->body = g;
		io->cap = cap;
	}
	memcpy(f->body + f->len, data, n);
	f->len += n;
	f->body[f->len] = 0;
	return n;
}

/* Keeps `value` (len bytes, trailing CR LF and blanks dropped) in *slot;
 * `join`: append to what is there with ", " (a list header sent on
 * several lines, RFC 9110 section 5.3). */
static void keep_header(char **slot, const char *value, size_t len, int join)
{
	while (len && (value[len - 1] == '\r' || value[len - 1] == '\n' || value[len - 1] == ' ' ||
		       value[len - 1] == '\t'))
		len--;
	size_t have = *slot && join ? strlen(*slot) : 0;
	if (have + len + 3 > HEADER_KEEP)
		return; /* longer than any honest caching header */
	char *g = realloc(join ? *slot : NULL, have + len + 3);
	if (!g)
		return;
	if (!join)
		free(*slot);
	if (have)
		memcpy(g + have, ", ", 2), have += 2;
	memcpy(g + have, value, len);
	g[have + len] = 0;
	*slot = g;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	fetch_io *io = arg;
	size_t n = size * nmemb;
	const char *colon = memchr(data, ':', n);
	if (!colon)
		return n;
	size_t name = (size_t)(colon - data);
	const char *v = colon + 1;
	size_t vlen = n - name - 1;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	if (name == 13 && strncasecmp(data, "cache-control", 13) == 0)
		keep_header(&io->f->cache_control, v, vlen, 1);
	else if (name == 7 && strncasecmp(data, "expires", 7) == 0)
		keep_header(&io->f->expires, v, vlen, 0);
	else if (name == 4 && strncasecmp(data, "date", 4) == 0)
		keep_header(&io->f->date, v, vlen, 0);
	return n;
}

int auth_fetch_run(auth_fetch *f, char *why, size_t whysz)
{
	auth_fetch_clear(f);
	if (!auth_fetch_url_allowed(f->url)) {
		snprintf(why, whysz, "%s is not an https URL (plain http only to a loopback host)",
			 f->url ? f->url : "(none)");
		return MCP_EINVAL;
	}
	if (tp_curl_load() != 0) {
		snprintf(why, whysz, "libcurl cannot be loaded: %s cannot be fetched", f->url);
		return MCP_ENOTSUP;
	}
	CURL *e = curl_easy_init();
	CURLM *m = e ? curl_multi_init() : NULL;
	struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: application/json");
	if (!e || !m || !hdrs) {
		if (m)
			curl_multi_cleanup(m);
		if (e)
			curl_easy_cleanup(e);
		curl_slist_free_all(hdrs);
		snprintf(why, whysz, "out of memory");
		return MCP_ENOMEM;
	}
	fetch_io io = { f, 0, 0, 0 };
	curl_easy_setopt(e, CURLOPT_URL, f->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, f->timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, f->timeout_ms);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f->max_bytes);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &io);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &io);
	if (f->form) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, f->form);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(f->form));
	}
	if (f->user) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, f->user);
		curl_easy_setopt(e, CURLOPT_PASSWORD, f->password ? f->password : "");
	}
	curl_multi_add_handle(m, e);
	int running = 1, canceled = 0;
	CURLcode res = CURLE_OK;
	while (running) {
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			res = CURLE_FAILED_INIT;
			break;
		}
		if (!running)
			break;
		if (f->cancel && atomic_load(f->cancel)) {
			canceled = 1;
			break;
		}
		/* The exchange's own timeout ends the loop; 100 ms between
		 * looks at the cancel flag. */
		curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	int left;
	CURLMsg *msg;
	while ((msg = curl_multi_info_read(m, &left)))
		if (msg->msg == CURLMSG_DONE)
			res = msg->data.result;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &f->status);
	curl_multi_remove_handle(m, e);
	curl_multi_cleanup(m);
	curl_easy_cleanup(e);
	curl_slist_free_all(hdrs);

	int rc = MCP_OK;
	if (canceled) {
		snprintf(why, whysz, "the fetch of %s was stopped", f->url);
		rc = MCP_ECANCELED;
	} else if (io.no_memory) {
		snprintf(why, whysz, "out of memory");
		rc = MCP_ENOMEM;
	} else if (io.too_big || res == CURLE_FILESIZE_EXCEEDED) {
		snprintf(why, whysz, "%s answered more than the limit of %zu bytes", f->url,
			 f->max_bytes);
		rc = MCP_EBUSY;
	} else if (res == CURLE_OPERATION_TIMEDOUT) {
		snprintf(why, whysz, "%s did not answer within %ld ms", f->url, f->timeout_ms);
		rc = MCP_ETIMEDOUT;
	} else if (res != CURLE_OK) {
		snprintf(why, whysz, "%s cannot be fetched: %s", f->url, curl_easy_strerror(res));
		rc = MCP_ESYS;
	} else if (!f->body && !(f->body = calloc(1, 1))) {
		snprintf(why, whysz, "out of memory");
		rc = MCP_ENOMEM;
	}
	if (rc != MCP_OK)
		auth_fetch_clear(f);
	return rc;
}

#endif /* HAVE_CURL */
