/*
 * httpc.c - the client end of Streamable HTTP on libcurl: every POST, GET
 * and DELETE of a connection runs on one thread through one curl multi
 * handle, and each message that arrives (a JSON body or an SSE event) is
 * handed up whole with the route of the request that carried it.
 *
 * One thread with curl multi rather than a thread per request: a client
 * keeps many SSE responses open at once (a window of 64 calls is 64 open
 * streams), and one poll loop serves them all with curl's connection
 * reuse; senders never block, they queue a job and wake the loop
 * (curl_multi_wakeup).
 *
 * A response stream cut before the answer of its request (the server
 * closed it on purpose, or the connection broke) is resumed: a GET with
 * Last-Event-ID after the server's `retry`, as often as the stream makes
 * progress; a resume that cannot connect fails the request, which is how
 * a server that died mid-call fails its calls promptly.
 *
 * The HTTP+SSE transport of 2024-11-05 is a mode of the same loop
 * (tp_httpc_start_legacy): the one GET stream is the server's only way to
 * speak, so it is never resumed (that transport has no event ids, and a
 * new stream would be a new session), and its end is the connection's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "config.h"
#include "transport/curl.h"
#include "transport/tp_httpc.h"
#include "transport/sigpipe.h"

#define DEFAULT_RETRY_MS 1000
#define BROKEN_RETRY_MS 100     /* a broken (not ended) stream: retry soon */
#define MAX_STALLED_RESUMES 5   /* resumes in a row that brought nothing */
#define NOTIFY_TIMEOUT_MS 30000 /* a POST nobody waits for */
#define MAX_ENDPOINT 4096       /* bytes of an HTTP+SSE endpoint URL */
#define SNIPPET 100             /* bytes of an error body quoted in a reason */

enum { X_POST = 0, X_RESUME, X_STREAM, X_DELETE };

typedef struct xfer {
	struct xfer *next;       /* the job queue, then the in-flight list */
	int kind;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	size_t body_len;
	char *route;
	char **extra;            /* extra header lines (POST) */
	int64_t due_ns;          /* a resume waits until then */
	int status;
	int sse;
	int json;                /* the body is application/json */
	int saw_type;
	int after_cr;            /* SSE: the last byte was a CR */
	int answered;            /* a resume whose request got its answer */
	/* the body (JSON), or the SSE line being assembled */
	char *buf;
	size_t len, cap;
	int too_big;             /* 1: a body not read on; 2: and its request failed */
	/* SSE: the event being assembled, the last event id, the retry */
	char *data;
	size_t dlen, dcap;
	int has_data;
	char last_id[256];
	int retry_ms;
	int events;              /* events delivered on this response */
	int stalled;             /* resumes in a row that brought nothing */
	int had_session;         /* sent with an Mcp-Session-Id */
	/* HTTP+SSE: the mode when it started, the event type being
	 * assembled ("?" for a name too long to be one we know), and whether
	 * the stream was refused (its endpoint) and is being dropped */
	int legacy;
	char event[16];
	int endpoint_seen;
	int refused;
	/* OAuth: the challenge of a 401 or 403 (WWW-Authenticate), the token
	 * the request carried, how often it was challenged, and the reason
	 * the auth thread refused it (the transport thread then fails it) */
	char *www;
	char *used;
	int auth_status;
	int auth_tries;
	char *auth_why;
} xfer;

struct tp_httpc {
	tp_conn base;            /* the engine's side (tp_httpc_conn) */
	char *url;
	tp_httpc_hooks hooks;
	size_t max_message;
	pthread_mutex_t mu;      /* the fields below, up to `thread` */
	xfer *queue, *queue_tail;
	char *bearer;
	char *version;
	char session[256];
	int closing;
	int want_stream;
	int stream_open;         /* a GET stream job exists */
	int64_t close_deadline;
	/* HTTP+SSE (tp_httpc_start_legacy): the mode, the endpoint POSTs go
	 * to, and how the wait for it ended (0 waiting, 1 known, -errno
	 * failed, with the reason); ep_cv signals the change */
	int legacy;
	char *endpoint;
	int ep_state;
	char ep_err[400];
	pthread_cond_t ep_cv;
	CURLM *multi;
	pthread_t thread;
	int started;
	/* OAuth (tp_httpc_set_auth): requests parked for the auth thread,
	 * which waits on auth_cv; both under mu */
	int auth_on;
	tp_httpc_auth auth;
	xfer *parked, *parked_tail;
	pthread_cond_t auth_cv;
	pthread_t auth_thread;
	xfer *active;            /* transport thread only */
	xfer *waiting;           /* resumes not yet due (transport thread) */
	int stream_failures;     /* transport thread only */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void xfer_free(xfer *x)
{
	if (!x)
		return;
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	for (char **e = x->extra; e && *e; e++)
		free(*e);
	free(x->extra);
	free(x->body);
	free(x->route);
	free(x->buf);
	free(x->data);
	free(x->www);
	if (x->used) {
		/* a bearer token: not left in freed memory (explicit_bzero: a
		 * memset before free may be optimised away) */
		explicit_bzero(x->used, strlen(x->used));
		free(x->used);
	}
	free(x->auth_why);
	free(x);
}

/* ---- receiving -------------------------------------------------------------- */

static void too_big(tp_httpc *h, xfer *x);

static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t n, size_t max)
{
	if (*len + n > max)
		return -1;
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 1024;
		while (nc < *len + n + 1)
			nc *= 2;
		char *b = realloc(*buf, nc);
		if (!b)
			return -1;
		*buf = b;
		*cap = nc;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = 0;
	return 0;
}

static void deliver(tp_httpc *h, xfer *x, const char *data, size_t len)
{
	/* Leading and trailing whitespace is no part of a message. */
	while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
		len--;
	while (len && (*data == ' ' || *data == '\n' || *data == '\r')) {
		data++;
		len--;
	}
	if (len == 0)
		return;
	x->events++;
	h->hooks.on_message(h->hooks.arg, x->kind == X_STREAM ? NULL : x->route, data, len);
	/* A resumed stream has done its work once its request is answered
	 * (the server may keep it open for other messages: they have the
	 * session's own stream). */
	if (x->kind == X_RESUME && !h->hooks.route_waiting(h->hooks.arg, x->route))
		x->answered = 1;
}

static void legacy_event(tp_httpc *h, xfer *x, const char *data, size_t len);

/* One SSE line (without its end of line). */
static void sse_line(tp_httpc *h, xfer *x, const char *line, size_t n)
{
	if (x->too_big)
		return; /* the event was refused whole; nothing of it is read on */
	if (n == 0) {
		if (x->has_data && x->legacy && x->kind == X_STREAM)
			legacy_event(h, x, x->data ? x->data : "", x->dlen);
		else if (x->has_data)
			deliver(h, x, x->data ? x->data : "", x->dlen);
		x->dlen = 0;
		x->has_data = 0;
		x->event[0] = 0;
		return;
	}
	if (line[0] == ':')
		return; /* a comment (keep-alive) */
	const char *colon = memchr(line, ':', n);
	size_t fl = colon ? (size_t)(colon - line) : n;
	const char *v = colon ? colon + 1 : line + n;
	size_t vl = colon ? n - fl - 1 : 0;
	if (vl && *v == ' ') {
		v++;
		vl--;
	}
	if (fl == 4 && memcmp(line, "data", 4) == 0) {
		if (x->has_data)
			append(&x->data, &x->dlen, &x->dcap, "\n", 1, h->max_message + 1);
		if (append(&x->data, &x->dlen, &x->dcap, v, vl, h->max_message + 1))
			too_big(h, x);
		x->has_data = 1;
	} else if (fl == 2 && memcmp(line, "id", 2) == 0) {
		if (vl < sizeof x->last_id && !memchr(v, 0, vl)) {
			memcpy(x->last_id, v, vl);
			x->last_id[vl] = 0;
		}
	} else if (fl == 5 && memcmp(line, "event", 5) == 0) {
		if (vl < sizeof x->event && !memchr(v, 0, vl)) {
			memcpy(x->event, v, vl);
			x->event[vl] = 0;
		} else {
			strcpy(x->event, "?");
		}
	} else if (fl == 5 && memcmp(line, "retry", 5) == 0) {
		int ms = 0, digits = vl > 0 && vl < 9;
		for (size_t i = 0; digits && i < vl; i++) {
			digits = v[i] >= '0' && v[i] <= '9';
			ms = ms * 10 + (v[i] - '0');
		}
		if (digits)
			x->retry_ms = ms;
	}
	/* Unknown fields: nothing to do. */
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	xfer *x = arg;
	tp_httpc *h = NULL;
	curl_easy_getinfo(x->easy, CURLINFO_PRIVATE, &h);
	size_t n = size * nmemb;
	if (!x->saw_type) {
		x->saw_type = 1;
		char *ct = NULL;
		curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
		x->sse = ct && strncasecmp(ct, "text/event-stream", 17) == 0 && x->status < 300;
		x->json = ct && strncasecmp(ct, "application/json", 16) == 0;
		if (x->legacy && x->kind == X_POST)
			x->sse = x->json = 0; /* its answer comes on the stream */
	}
	if (x->refused)
		return 0;
	if (x->legacy && x->kind == X_POST) {
		/* Nothing of the body is a message: its start is kept for
		 * the reason of a refusal. */
		if (x->len < SNIPPET)
			append(&x->buf, &x->len, &x->cap, p, n < SNIPPET ? n : SNIPPET, SNIPPET);
		return n;
	}
	if (!x->sse) {
		if (x->too_big)
			return 0;
		if (append(&x->buf, &x->len, &x->cap, p, n, h->max_message)) {
			/* Only a JSON body can be an answer; an error page is cut
			 * short silently (its status says what went wrong). */
			if (x->json && x->status < 300)
				too_big(h, x);
			else
				x->too_big = 1;
			return x->json && x->status < 300 ? 0 : n;
		}
		return n;
	}
	/* SSE: split into lines (LF, CRLF or CR), the bytes between ends of
	 * line appended as one run (a large event is megabytes). */
	size_t i = 0;
	while (i < n && !x->answered && !x->refused) {
		char ch = p[i];
		if (ch == '\n' && x->after_cr) {
			x->after_cr = 0; /* the LF of a CRLF */
			i++;
			continue;
		}
		if (ch == '\n' || ch == '\r') {
			x->after_cr = ch == '\r';
			sse_line(h, x, x->buf ? x->buf : "", x->len);
			x->len = 0;
			i++;
			continue;
		}
		x->after_cr = 0;
		const char *lf = memchr(p + i, '\n', n - i);
		const char *cr = memchr(p + i, '\r', (size_t)((lf ? lf : p + n) - (p + i)));
		size_t run = (size_t)((cr ? cr : lf ? lf : p + n) - (p + i));
		if (append(&x->buf, &x->len, &x->cap, p + i, run, h->max_message + 16)) {
			too_big(h, x);
			return 0;
		}
		i += run;
	}
	/* 0 ends the transfer (CURLE_WRITE_ERROR, expected in finished()). */
	return x->answered || x->too_big || x->refused ? 0 : n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	xfer *x = arg;
	size_t n = size * nmemb;
	if (n > 5 && strncmp(p, "HTTP/", 5) == 0) {
		/* A new response (after a redirect or a 100): start over. */
		const char *sp = memchr(p, ' ', n);
		x->status = sp ? atoi(sp + 1) : 0;
		x->saw_type = 0;
		return n;
	}
	static const char www[] = "www-authenticate:";
	if (n > sizeof www - 1 && n < 8192 && strncasecmp(p, www, sizeof www - 1) == 0 && !x->www) {
		const char *v = p + sizeof www - 1;
		size_t vl = n - (sizeof www - 1);
		while (vl && (*v == ' ' || *v == '\t')) {
			v++;
			vl--;
		}
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		x->www = strndup(v, vl);
		return n;
	}
	static const char key[] = "mcp-session-id:";
	if (n > sizeof key - 1 && strncasecmp(p, key, sizeof key - 1) == 0) {
		tp_httpc *h = NULL;
		curl_easy_getinfo(x->easy, CURLINFO_PRIVATE, &h);
		const char *v = p + sizeof key - 1;
		size_t vl = n - (sizeof key - 1);
		while (vl && (*v == ' ' || *v == '\t')) {
			v++;
			vl--;
		}
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		/* HTTP+SSE has no session header: its session is the stream. */
		if (vl > 0 && vl < sizeof h->session && !x->legacy) {
			pthread_mutex_lock(&h->mu);
			memcpy(h->session, v, vl);
			h->session[vl] = 0;
			pthread_mutex_unlock(&h->mu);
		}
	}
	return n;
}

/* ---- starting transfers ---------------------------------------------------------- */

static struct curl_slist *add_header(struct curl_slist *l, const char *fmt, const char *v)
{
	/* Sized to fit: a header is never cut short (an Mcp-Param value
	 * may be long, and half a value would be a different value; a
	 * bearer token may be a long JWT). */
	int need = snprintf(NULL, 0, fmt, v);
	char *line = need >= 0 ? malloc((size_t)need + 1) : NULL;
	struct curl_slist *n = NULL;
	if (line) {
		snprintf(line, (size_t)need + 1, fmt, v);
		n = curl_slist_append(l, line);
		memset(line, 0, (size_t)need); /* may hold a token */
		free(line);
	}
	if (!n) {
		curl_slist_free_all(l);
		return NULL;
	}
	return n;
}

static void park(tp_httpc *h, xfer *x, int status);

static int start(tp_httpc *h, xfer *x)
{
	char token[8192] = "";
	if (h->auth_on && !h->legacy) {
		int stale = h->auth.token(h->auth.arg, token, sizeof token);
		if (stale && x->kind == X_POST && x->auth_tries < TP_HTTPC_AUTH_TRIES) {
			memset(token, 0, sizeof token);
			park(h, x, 0);
			return 0;
		}
	}
	x->easy = curl_easy_init();
	if (!x->easy)
		return -1;
	CURL *e = x->easy;
	pthread_mutex_lock(&h->mu);
	char session[256], version[64] = "", bearer[8192] = "";
	snprintf(session, sizeof session, "%s", h->session);
	if (h->version)
		snprintf(version, sizeof version, "%s", h->version);
	if (h->bearer)
		snprintf(bearer, sizeof bearer, "%s", h->bearer);
	if (token[0]) {
		snprintf(bearer, sizeof bearer, "%s", token);
		memset(token, 0, sizeof token);
	}
	if (h->auth_on) {
		free(x->used);
		x->used = strdup(bearer);
	}
	x->legacy = h->legacy;
	/* libcurl copies the URL. */
	curl_easy_setopt(e, CURLOPT_URL, x->legacy && x->kind == X_POST && h->endpoint ? h->endpoint
										     : h->url);
	pthread_mutex_unlock(&h->mu);
	struct curl_slist *l = NULL;
	if (x->legacy) {
		/* As the 2024-11-05 clients do: the POST says what it sends,
		 * the GET what it wants; no resume.  The protocol version
		 * header below goes along as over Streamable HTTP (the
		 * TypeScript SDK's SSE client sends it too, once
		 * negotiated); servers of that era ignore it. */
		l = add_header(l, "%s",
			       x->kind == X_POST ? "Content-Type: application/json"
						 : "Accept: text/event-stream");
	} else if (x->kind == X_POST) {
		l = add_header(l, "%s", "Content-Type: application/json");
		l = l ? add_header(l, "%s", "Accept: application/json, text/event-stream") : NULL;
	} else if (x->kind != X_DELETE) {
		l = add_header(l, "%s", "Accept: text/event-stream");
		if (l && x->last_id[0])
			l = add_header(l, "Last-Event-ID: %s", x->last_id);
	} else {
		l = add_header(l, "%s", "Accept: application/json, text/event-stream");
	}
	x->had_session = session[0] && !x->legacy;
	if (l && x->had_session)
		l = add_header(l, "Mcp-Session-Id: %s", session);
	if (l && version[0])
		l = add_header(l, "MCP-Protocol-Version: %s", version);
	if (l && bearer[0])
		l = add_header(l, "Authorization: Bearer %s", bearer);
	memset(bearer, 0, sizeof bearer);
	for (char **ex = x->extra; l && ex && *ex; ex++)
		l = add_header(l, "%s", *ex);
	if (!l)
		return -1;
	x->headers = l;
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, l);
	curl_easy_setopt(e, CURLOPT_PRIVATE, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	/* HTTP/1.1: one response stream per connection, reused between
	 * requests; every SSE stream is long-lived and must not share. */
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	if (x->kind == X_POST) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)x->body_len);
		if (!x->route)
			curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)NOTIFY_TIMEOUT_MS);
	} else if (x->kind == X_DELETE) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
		int64_t left = (h->close_deadline - now_ns()) / 1000000;
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}
	x->status = 0;
	x->saw_type = 0;
	x->sse = 0;
	x->json = 0;
	x->len = 0;
	x->dlen = 0;
	x->has_data = 0;
	x->events = 0;
	x->after_cr = 0;
	x->too_big = 0;
	x->event[0] = 0;
	if (curl_multi_add_handle(h->multi, e) != CURLM_OK)
		return -1;
	x->next = h->active;
	h->active = x;
	return 0;
}

static void unlink_active(tp_httpc *h, xfer *x)
{
	for (xfer **pp = &h->active; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			x->next = NULL;
			return;
		}
}

/* The request of x's route failed: tell the layer above (once). */
static void fail_route(tp_httpc *h, xfer *x, int kind, int status, const char *why)
{
	if (x->route && h->hooks.route_waiting(h->hooks.arg, x->route))
		h->hooks.on_failure(h->hooks.arg, x->route, kind, status, why);
}

/* The message of a response that is larger than the limit: its request
 * fails at once, naming the limit, and the rest is not read. */
static void too_big(tp_httpc *h, xfer *x)
{
	char why[200];
	x->too_big = 2;
	snprintf(why, sizeof why,
		 "the server sent a message larger than the limit of %zu bytes "
		 "(mcp_client_set_max_message)",
		 h->max_message);
	fail_route(h, x, TP_HTTPC_TOOBIG, x->status, why);
}

/* Makes x (finished) a resume of its route, due after `ms`. */
static void schedule_resume(tp_httpc *h, xfer *x, int ms)
{
	if (x->easy) {
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
	}
	curl_slist_free_all(x->headers);
	x->headers = NULL;
	if (x->kind == X_POST)
		x->kind = X_RESUME;
	x->due_ns = now_ns() + (int64_t)ms * 1000000;
	x->next = h->waiting;
	h->waiting = x;
}

/* The start of a body, printable, for a reason ("" when none). */
static void snippet(const char *buf, size_t len, char *out, size_t outsz)
{
	size_t k = 0;
	for (size_t i = 0; i < len && i < SNIPPET && k + 1 < outsz; i++) {
		unsigned char ch = (unsigned char)buf[i];
		out[k++] = ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch < 0x20 || ch > 0x7e ? '?' : (char)ch;
	}
	while (k && out[k - 1] == ' ')
		k--;
	if (outsz)
		out[k] = 0;
}

/* The wait for the endpoint ends (0 on success, -errno with `why`). */
static void endpoint_settled(tp_httpc *h, int state, const char *why)
{
	pthread_mutex_lock(&h->mu);
	if (h->ep_state == 0) {
		h->ep_state = state;
		if (why)
			snprintf(h->ep_err, sizeof h->ep_err, "%s", why);
	}
	pthread_cond_broadcast(&h->ep_cv);
	pthread_mutex_unlock(&h->mu);
}

/* The origin (scheme, host, port) of a parsed URL, as one string. */
static int origin_of(CURLU *u, char *buf, size_t sz)
{
	char *scheme = NULL, *host = NULL, *port = NULL;
	int ok = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
		 curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
		 curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;
	if (ok)
		snprintf(buf, sz, "%s://%s:%s", scheme, host, port);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	return ok ? 0 : -1;
}

/* Resolves the data of an `endpoint` event against the connection's URL
 * and checks that it stays on the same origin: a server must not send
 * the client's messages (and its bearer token) elsewhere.  The URL (for
 * free()), or NULL with the reason in why[sz]. */
static char *resolve_endpoint(tp_httpc *h, const char *data, size_t len, char *why, size_t sz)
{
	if (len == 0 || len > MAX_ENDPOINT) {
		snprintf(why, sz, "the server's endpoint event is %s",
			 len ? "longer than 4096 bytes" : "empty");
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)data[i] < 0x20 || data[i] == 0x7f) {
			snprintf(why, sz, "the server's endpoint event holds a control character");
			return NULL;
		}
	char *text = strndup(data, len);
	CURLU *base = curl_url(), *ep = curl_url();
	char *full = NULL, *copy = NULL;
	char o1[300], o2[300];
	if (!text || !base || !ep) {
		snprintf(why, sz, "out of memory");
	} else if (curl_url_set(base, CURLUPART_URL, h->url, 0) != CURLUE_OK ||
		   curl_url_set(ep, CURLUPART_URL, h->url, 0) != CURLUE_OK ||
		   origin_of(base, o1, sizeof o1) != 0) {
		snprintf(why, sz, "the connection's URL cannot be parsed");
	} else if (curl_url_set(ep, CURLUPART_URL, text, 0) != CURLUE_OK ||
		   origin_of(ep, o2, sizeof o2) != 0 ||
		   curl_url_get(ep, CURLUPART_URL, &full, 0) != CURLUE_OK) {
		/* (the endpoint itself is not repeated: it names the session) */
		snprintf(why, sz, "the server's endpoint event is not a URL");
	} else if (strcasecmp(o1, o2) != 0) {
		snprintf(why, sz,
			 "the server's endpoint event names another origin (%.120s) than the "
			 "connection's (%.120s): refused",
			 o2, o1);
	} else if (!(copy = strdup(full))) {
		snprintf(why, sz, "out of memory");
	}
	curl_free(full);
	curl_url_cleanup(base);
	curl_url_cleanup(ep);
	free(text);
	return copy;
}

/* One event of the HTTP+SSE stream: the endpoint (the first only), or a
 * message (type "message", or none: the SSE default).  Other types are
 * not for this client. */
static void legacy_event(tp_httpc *h, xfer *x, const char *data, size_t len)
{
	if (strcmp(x->event, "endpoint") == 0) {
		if (x->endpoint_seen)
			return; /* the first one holds: the session does not move */
		x->endpoint_seen = 1;
		while (len && (data[len - 1] == ' ' || data[len - 1] == '\n'))
			len--;
		char why[400];
		char *url = resolve_endpoint(h, data, len, why, sizeof why);
		if (!url) {
			x->refused = 1; /* the stream is dropped */
			endpoint_settled(h, -EPROTO, why);
			return;
		}
		pthread_mutex_lock(&h->mu);
		free(h->endpoint);
		h->endpoint = url;
		pthread_mutex_unlock(&h->mu);
		endpoint_settled(h, 1, NULL);
		return;
	}
	if (x->event[0] && strcmp(x->event, "message") != 0)
		return;
	deliver(h, x, data, len);
}

/* A request of the HTTP+SSE transport ended. */
static void legacy_finished(tp_httpc *h, xfer *x, CURLcode res)
{
	char why[400], body[SNIPPET + 1];
	char *ct = NULL;
	curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
	snippet(x->buf, x->len, body, sizeof body);
	if (x->kind == X_STREAM) {
		pthread_mutex_lock(&h->mu);
		int st = h->ep_state;
		h->stream_open = 0;
		pthread_mutex_unlock(&h->mu);
		if (st == 0) {
			int code = -EPROTO;
			if (res != CURLE_OK && x->status == 0) {
				code = -ECONNREFUSED;
				snprintf(why, sizeof why, "GET for the event stream failed: %s",
					 curl_easy_strerror(res));
			} else if (x->status != 200) {
				snprintf(why, sizeof why,
					 "GET for the event stream was answered HTTP %d%s%s%s", x->status,
					 body[0] ? " (" : "", body, body[0] ? ")" : "");
			} else if (!x->sse) {
				snprintf(why, sizeof why,
					 "GET was answered with %.60s, not an event stream",
					 ct ? ct : "no content type");
			} else {
				code = -ECONNRESET;
				snprintf(why, sizeof why,
					 "the event stream ended before its endpoint event");
			}
			endpoint_settled(h, code, why);
		} else if (st == 1 && h->hooks.on_closed) {
			if (x->too_big)
				snprintf(why, sizeof why,
					 "the server sent a message larger than the limit of %zu bytes "
					 "(mcp_client_set_max_message) on the HTTP+SSE event stream, "
					 "which was closed",
					 h->max_message);
			else if (res == CURLE_OK)
				snprintf(why, sizeof why,
					 "the server ended the event stream of the HTTP+SSE connection");
			else if (res == CURLE_PARTIAL_FILE || res == CURLE_RECV_ERROR)
				snprintf(why, sizeof why,
					 "the event stream of the HTTP+SSE connection was cut off "
					 "(the server went away: %s)",
					 curl_easy_strerror(res));
			else
				snprintf(why, sizeof why,
					 "the event stream of the HTTP+SSE connection broke: %s",
					 curl_easy_strerror(res));
			h->hooks.on_closed(h->hooks.arg, why);
		}
		xfer_free(x);
		return;
	}
	/* A POST: 2xx is all it says (the answer comes on the stream). */
	if (res != CURLE_OK) {
		snprintf(why, sizeof why, "the POST to the server's endpoint failed: %s",
			 curl_easy_strerror(res));
		fail_route(h, x, TP_HTTPC_CLOSED, 0, why);
	} else if (x->status < 200 || x->status >= 300) {
		snprintf(why, sizeof why, "HTTP status %d for the POST to the endpoint%s%s%s",
			 x->status, body[0] ? " (" : "", body, body[0] ? ")" : "");
		fail_route(h, x, TP_HTTPC_STATUS, x->status, why);
	}
	xfer_free(x);
}

static void finished(tp_httpc *h, xfer *x, CURLcode res)
{
	unlink_active(h, x);
	curl_multi_remove_handle(h->multi, x->easy);
	long code = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code)
		x->status = (int)code;
	pthread_mutex_lock(&h->mu);
	int closing = h->closing;
	pthread_mutex_unlock(&h->mu);
	char why[300];

	if (x->kind == X_DELETE || closing) {
		xfer_free(x);
		return;
	}
	if (x->legacy) {
		legacy_finished(h, x, res);
		return;
	}
	/* OAuth: a refused POST waits for a token and is sent again. */
	if (h->auth_on && x->kind == X_POST && res == CURLE_OK &&
	    (x->status == 401 || x->status == 403)) {
		park(h, x, x->status);
		return;
	}
	/* A JSON body is a message (an answer, or a JSON-RPC error with a
	 * 4xx); any other body (an HTML error page) is not. */
	if (res == CURLE_OK && x->json && x->len > 0 && !x->too_big)
		deliver(h, x, x->buf, x->len);
	if (x->kind == X_STREAM) {
		/* The session's own stream: reopened while it is wanted; a 405
		 * (or any refusal) means the server offers none. */
		int again = res == CURLE_OK ? x->status == 200 : ++h->stream_failures < 5;
		if (x->status >= 400 || !again) {
			pthread_mutex_lock(&h->mu);
			h->stream_open = 0;
			pthread_mutex_unlock(&h->mu);
			xfer_free(x);
			return;
		}
		if (x->events)
			h->stream_failures = 0;
		schedule_resume(h, x, x->retry_ms > 0 ? x->retry_ms : DEFAULT_RETRY_MS);
		return;
	}
	if (!x->route) {
		/* A notification or an answer: nobody waits for its fate. */
		xfer_free(x);
		return;
	}
	if (x->too_big == 2) {
		/* Failed when the limit was passed (too_big()). */
		xfer_free(x);
		return;
	}
	if (x->too_big)
		res = CURLE_OK; /* cut on purpose: its status says what it was */
	if (res != CURLE_OK && !x->sse) {
		if (res == CURLE_PARTIAL_FILE)
			snprintf(why, sizeof why,
				 "the server closed the connection in the middle of its response "
				 "(HTTP %d)",
				 x->status);
		else
			snprintf(why, sizeof why, "HTTP request failed: %s", curl_easy_strerror(res));
		fail_route(h, x, TP_HTTPC_CLOSED, 0, why);
		xfer_free(x);
		return;
	}
	if (x->status >= 300) {
		char *ct = NULL;
		curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
		/* A 404 to a request in a session is the session's end; a
		 * 404 before there is one says the URL serves no Streamable
		 * HTTP (the fallback to HTTP+SSE looks at it). */
		if (x->status == 404 && x->had_session) {
			fail_route(h, x, TP_HTTPC_CLOSED, 404,
				   "the server does not know the session (HTTP 404)");
			xfer_free(x);
			return;
		}
		snprintf(why, sizeof why, "HTTP status %d (%.60s body, no JSON-RPC answer)",
			 x->status, ct ? ct : "no");
		fail_route(h, x, TP_HTTPC_STATUS, x->status, why);
		xfer_free(x);
		return;
	}
	if (!h->hooks.route_waiting(h->hooks.arg, x->route)) {
		xfer_free(x);
		return;
	}
	/* The response ended (or broke) before the answer: resume it from
	 * the last event it saw. */
	if (!x->sse || !x->last_id[0]) {
		if (res != CURLE_OK) {
			fail_route(h, x, TP_HTTPC_CLOSED, x->status,
				   "the response stream broke and cannot be resumed");
		} else {
			char *ct = NULL;
			curl_easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
			snprintf(why, sizeof why,
				 "the server's response (HTTP %d, %.60s) ended without the answer",
				 x->status, ct ? ct : "no content type");
			fail_route(h, x, TP_HTTPC_NOANSWER, x->status, why);
		}
		xfer_free(x);
		return;
	}
	x->stalled = x->events ? 0 : x->stalled + 1;
	if (x->stalled > MAX_STALLED_RESUMES) {
		fail_route(h, x, TP_HTTPC_NOANSWER, x->status,
			   "the response stream was resumed without progress");
		xfer_free(x);
		return;
	}
	int ms = x->retry_ms > 0 ? x->retry_ms : DEFAULT_RETRY_MS;
	if (res != CURLE_OK && ms > BROKEN_RETRY_MS)
		ms = BROKEN_RETRY_MS;
	schedule_resume(h, x, ms);
}

/* A resume that could not even connect: the server is gone. */
static void resume_failed(tp_httpc *h, xfer *x, CURLcode res)
{
	char why[300];
	snprintf(why, sizeof why, "the server went away: %s", curl_easy_strerror(res));
	fail_route(h, x, TP_HTTPC_CLOSED, 0, why);
}

static void *loop(void *arg)
{
	tp_httpc *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		xfer *q = h->queue;
		h->queue = h->queue_tail = NULL;
		int closing = h->closing;
		int64_t deadline = h->close_deadline;
		pthread_mutex_unlock(&h->mu);
		while (q) {
			xfer *next = q->next;
			q->next = NULL;
			if (closing && q->kind != X_DELETE && q->route) {
				xfer_free(q);
			} else if (q->auth_why) {
				fail_route(h, q, TP_HTTPC_STATUS, q->auth_status, q->auth_why);
				xfer_free(q);
			} else if (q->auth_tries && q->route &&
				   !h->hooks.route_waiting(h->hooks.arg, q->route)) {
				/* Its call ended (a timeout, a cancel) while it
				 * waited for a token: not sent after all. */
				xfer_free(q);
			} else if (start(h, q) != 0) {
				fail_route(h, q, TP_HTTPC_CLOSED, 0, "out of memory starting an HTTP request");
				xfer_free(q);
			}
			q = next;
		}
		if (closing) {
			/* Streams and requests are dropped; what is being sent
			 * (cancellations, the DELETE) gets until the deadline. */
			while (h->waiting) {
				xfer *w = h->waiting;
				h->waiting = w->next;
				xfer_free(w);
			}
			for (xfer **pp = &h->active; *pp;) {
				xfer *x = *pp;
				if (x->kind == X_DELETE || (x->kind == X_POST && !x->route)) {
					pp = &x->next;
					continue;
				}
				*pp = x->next;
				curl_multi_remove_handle(h->multi, x->easy);
				xfer_free(x);
			}
			if (!h->active || now_ns() >= deadline)
				break;
		}
		/* Due resumes start now. */
		int64_t now = now_ns(), next_due = INT64_MAX;
		for (xfer **pp = &h->waiting; *pp;) {
			xfer *w = *pp;
			if (w->due_ns <= now) {
				*pp = w->next;
				w->next = NULL;
				if (start(h, w) != 0) {
					fail_route(h, w, TP_HTTPC_CLOSED, 0, "out of memory resuming a stream");
					xfer_free(w);
				}
				continue;
			}
			if (w->due_ns < next_due)
				next_due = w->due_ns;
			pp = &w->next;
		}
		int running = 0;
		curl_multi_perform(h->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(h->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			xfer *x = NULL;
			for (xfer *a = h->active; a && !x; a = a->next)
				if (a->easy == m->easy_handle)
					x = a;
			if (!x)
				continue;
			CURLcode res = m->data.result;
			if (x->kind == X_RESUME && res == CURLE_COULDNT_CONNECT) {
				unlink_active(h, x);
				curl_multi_remove_handle(h->multi, x->easy);
				resume_failed(h, x, res);
				xfer_free(x);
				continue;
			}
			finished(h, x, res);
		}
		int timeout = 1000;
		if (next_due != INT64_MAX) {
			int64_t ms = (next_due - now_ns()) / 1000000 + 1;
			if (ms < timeout)
				timeout = ms < 0 ? 0 : (int)ms;
		}
		if (closing) {
			int64_t ms = (deadline - now_ns()) / 1000000 + 1;
			if (ms < timeout)
				timeout = ms < 0 ? 0 : (int)ms;
		}
		curl_multi_poll(h->multi, NULL, 0, timeout, NULL);
	}
	while (h->active) {
		xfer *x = h->active;
		h->active = x->next;
		curl_multi_remove_handle(h->multi, x->easy);
		xfer_free(x);
	}
	return NULL;
}

/* ---- OAuth: parked requests and the auth thread ---------------------------------------- */

static int enqueue(tp_httpc *h, xfer *x);

/* x (a POST, finished or not started) waits for the auth thread. */
static void park(tp_httpc *h, xfer *x, int status)
{
	if (x->easy) {
		curl_easy_cleanup(x->easy);
		x->easy = NULL;
	}
	curl_slist_free_all(x->headers);
	x->headers = NULL;
	x->len = 0;
	x->auth_status = status;
	pthread_mutex_lock(&h->mu);
	x->next = NULL;
	if (h->parked_tail)
		h->parked_tail->next = x;
	else
		h->parked = x;
	h->parked_tail = x;
	pthread_cond_signal(&h->auth_cv);
	pthread_mutex_unlock(&h->mu);
}

/* One parked request at a time, so one flow at a time per connection:
 * the next parked request finds the new token (challenge() sees that the
 * token it carried is no longer the current one) and is sent at once. */
static void *auth_loop(void *arg)
{
	tp_httpc *h = arg;
	for (;;) {
		pthread_mutex_lock(&h->mu);
		while (!h->parked && !h->closing)
			pthread_cond_wait(&h->auth_cv, &h->mu);
		if (h->closing) {
			pthread_mutex_unlock(&h->mu);
			break;
		}
		xfer *x = h->parked;
		h->parked = x->next;
		if (!h->parked)
			h->parked_tail = NULL;
		x->next = NULL;
		pthread_mutex_unlock(&h->mu);
		char why[600] = "";
		int rc;
		if (x->auth_tries >= TP_HTTPC_AUTH_TRIES) {
			snprintf(why, sizeof why,
				 "the server still refused the request (HTTP %d) after %d "
				 "tries with a new or refreshed token",
				 x->auth_status, TP_HTTPC_AUTH_TRIES);
			rc = -1;
		} else {
			rc = h->auth.challenge(h->auth.arg, x->auth_status, x->www ? x->www : "",
					       x->used ? x->used : "", why, sizeof why);
		}
		x->auth_tries++;
		free(x->www);
		x->www = NULL;
		if (rc != 0 && !(x->auth_why = strdup(why[0] ? why : "authorization failed")))
			x->auth_why = NULL;
		if (rc != 0 && !x->auth_why) {
			xfer_free(x); /* out of memory: its call ends at its timeout */
			continue;
		}
		enqueue(h, x);
	}
	return NULL;
}

int tp_httpc_set_auth(tp_httpc *h, const tp_httpc_auth *auth)
{
	if (h->auth_on)
		return -1;
	h->auth = *auth;
	pthread_cond_init(&h->auth_cv, NULL);
	if (tp_thread_create(&h->auth_thread, NULL, auth_loop, h) != 0) {
		pthread_cond_destroy(&h->auth_cv);
		return -1;
	}
	h->auth_on = 1;
	return 0;
}

/* ---- the interface ------------------------------------------------------------------ */

static int enqueue(tp_httpc *h, xfer *x)
{
	pthread_mutex_lock(&h->mu);
	if (h->closing && x->kind != X_DELETE) {
		pthread_mutex_unlock(&h->mu);
		xfer_free(x);
		return -EPIPE;
	}
	x->next = NULL;
	if (h->queue_tail)
		h->queue_tail->next = x;
	else
		h->queue = x;
	h->queue_tail = x;
	pthread_mutex_unlock(&h->mu);
	curl_multi_wakeup(h->multi);
	return 0;
}

int tp_httpc_post(tp_httpc *h, const char *data, size_t len, const char *route,
		  const char *const *headers)
{
	xfer *x = calloc(1, sizeof *x);
	if (!x)
		return -ENOMEM;
	x->kind = X_POST;
	x->body = malloc(len + 1);
	x->body_len = len;
	x->route = route ? strdup(route) : NULL;
	size_t n = 0;
	while (headers && headers[n])
		n++;
	x->extra = calloc(n + 1, sizeof *x->extra);
	int bad = !x->body || (route && !x->route) || !x->extra;
	for (size_t i = 0; !bad && i < n; i++)
		bad = !(x->extra[i] = strdup(headers[i]));
	if (bad) {
		xfer_free(x);
		return -ENOMEM;
	}
	memcpy(x->body, data, len);
	x->body[len] = 0;
	return enqueue(h, x);
}

void tp_httpc_open_stream(tp_httpc *h)
{
	pthread_mutex_lock(&h->mu);
	int open = h->stream_open || h->closing;
	h->stream_open = 1;
	pthread_mutex_unlock(&h->mu);
	if (open)
		return;
	xfer *x = calloc(1, sizeof *x);
	if (!x)
		return;
	x->kind = X_STREAM;
	enqueue(h, x);
}

static int set_str(tp_httpc *h, char **field, const char *v)
{
	char *copy = v ? strdup(v) : NULL;
	if (v && !copy)
		return -ENOMEM;
	pthread_mutex_lock(&h->mu);
	free(*field);
	*field = copy;
	pthread_mutex_unlock(&h->mu);
	return 0;
}

int tp_httpc_set_bearer(tp_httpc *h, const char *token)
{
	return set_str(h, &h->bearer, token);
}

int tp_httpc_set_protocol_version(tp_httpc *h, const char *version)
{
	return set_str(h, &h->version, version);
}

int tp_httpc_start_legacy(tp_httpc *h, int64_t deadline_ns, char *err, size_t errsz)
{
	xfer *x = calloc(1, sizeof *x);
	if (!x) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	x->kind = X_STREAM;
	pthread_mutex_lock(&h->mu);
	h->legacy = 1;
	h->session[0] = 0;
	h->ep_state = 0;
	h->stream_open = 1;
	pthread_mutex_unlock(&h->mu);
	if (enqueue(h, x) != 0) {
		snprintf(err, errsz, "the connection was closed");
		return -EPIPE;
	}
	struct timespec ts = { .tv_sec = deadline_ns / 1000000000,
			       .tv_nsec = deadline_ns % 1000000000 };
	pthread_mutex_lock(&h->mu);
	while (h->ep_state == 0 && !h->closing)
		if (pthread_cond_timedwait(&h->ep_cv, &h->mu, &ts) == ETIMEDOUT)
			break;
	int rc = h->ep_state == 1 ? 0 : h->ep_state < 0 ? h->ep_state
				  : h->closing	     ? -EPIPE
							     : -ETIMEDOUT;
	if (h->ep_state < 0)
		snprintf(err, errsz, "%s", h->ep_err);
	else if (rc == -EPIPE)
		snprintf(err, errsz, "the connection was closed while waiting for the endpoint event");
	else if (rc == -ETIMEDOUT)
		snprintf(err, errsz, "no endpoint event on the event stream in time");
	pthread_mutex_unlock(&h->mu);
	return rc;
}

void tp_httpc_session_id(tp_httpc *h, char *buf, size_t bufsz)
{
	pthread_mutex_lock(&h->mu);
	snprintf(buf, bufsz, "%s", h->session);
	pthread_mutex_unlock(&h->mu);
}

/* The engine's writer: each line becomes a POST of its own (answers to
 * the server's requests, and what the engine writes by itself). */
static int conn_send_routed(tp_conn *c, const tp_out *out, int n,
			    const _Atomic int64_t *deadline_ns)
{
	tp_httpc *h = (tp_httpc *)c;
	(void)deadline_ns;
	for (int i = 0; i < n; i++) {
		if (!out[i].data)
			continue;
		size_t len = out[i].len;
		if (len && out[i].data[len - 1] == '\n')
			len--;
		int rc = tp_httpc_post(h, out[i].data, len, NULL, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

static int conn_send(tp_conn *c, const struct iovec *iov, int n,
		     const _Atomic int64_t *deadline_ns)
{
	(void)c;
	(void)iov;
	(void)n;
	(void)deadline_ns;
	return -EOPNOTSUPP; /* a push session uses send_routed */
}

static void conn_nop(tp_conn *c)
{
	(void)c;
}

static const struct tp_ops conn_ops = {
	.send = conn_send,
	.send_routed = conn_send_routed,
	.wake = conn_nop,
	.close_output = conn_nop,
	.free = conn_nop, /* the connection is freed by tp_httpc_free */
};

tp_conn *tp_httpc_conn(tp_httpc *h)
{
	return &h->base;
}

tp_httpc *tp_httpc_new(const char *url, const tp_httpc_hooks *hooks, size_t max_message,
		       char *err, size_t errsz)
{
	if (tp_curl_load() != 0) {
		snprintf(err, errsz, "libcurl (%s) could not be loaded or initialised", MCP_CURL_SONAME);
		return NULL;
	}
	tp_httpc *h = calloc(1, sizeof *h);
	if (!h || !(h->url = strdup(url))) {
		free(h);
		snprintf(err, errsz, "out of memory");
		return NULL;
	}
	h->base.ops = &conn_ops;
	h->base.max_message = max_message;
	h->hooks = *hooks;
	h->max_message = max_message;
	pthread_mutex_init(&h->mu, NULL);
	/* tp_httpc_start_legacy waits on the monotonic clock. */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->ep_cv, &ca);
	pthread_condattr_destroy(&ca);
	h->multi = curl_multi_init();
	if (!h->multi || tp_thread_create(&h->thread, NULL, loop, h) != 0) {
		if (h->multi)
			curl_multi_cleanup(h->multi);
		pthread_cond_destroy(&h->ep_cv);
		pthread_mutex_destroy(&h->mu);
		free(h->url);
		free(h);
		snprintf(err, errsz, "cannot start the HTTP thread");
		return NULL;
	}
	h->started = 1;
	return h;
}

void tp_httpc_close(tp_httpc *h, int timeout_ms)
{
	if (!h || !h->started)
		return;
	pthread_mutex_lock(&h->mu);
	int was = h->closing;
	h->closing = 1;
	h->close_deadline = now_ns() + (int64_t)timeout_ms * 1000000;
	int has_session = h->session[0] != 0;
	pthread_cond_broadcast(&h->ep_cv); /* a wait for the endpoint ends */
	if (h->auth_on)
		pthread_cond_broadcast(&h->auth_cv);
	pthread_mutex_unlock(&h->mu);
	if (was)
		return;
	if (h->auth_on) {
		/* A flow in progress (a person, a token request) stops first. */
		h->auth.cancel(h->auth.arg);
		pthread_join(h->auth_thread, NULL);
		while (h->parked) {
			xfer *x = h->parked;
			h->parked = x->next;
			xfer_free(x);
		}
		h->parked_tail = NULL;
	}
	if (has_session) {
		/* The server may end the session's work at once. */
		xfer *x = calloc(1, sizeof *x);
		if (x) {
			x->kind = X_DELETE;
			enqueue(h, x);
		}
	}
	curl_multi_wakeup(h->multi);
	pthread_join(h->thread, NULL);
	h->started = 0;
}

void tp_httpc_free(tp_httpc *h)
{
	if (!h)
		return;
	tp_httpc_close(h, 0);
	while (h->queue) {
		xfer *x = h->queue;
		h->queue = x->next;
		xfer_free(x);
	}
	if (h->multi)
		curl_multi_cleanup(h->multi);
	pthread_cond_destroy(&h->ep_cv);
	if (h->auth_on)
		pthread_cond_destroy(&h->auth_cv);
	pthread_mutex_destroy(&h->mu);
	free(h->url);
	free(h->endpoint);
	free(h->bearer);
	free(h->version);
	free(h);
}
