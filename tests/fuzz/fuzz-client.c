/*
 * fuzz-client.c - libFuzzer target: the client's reading of a server's
 * Streamable HTTP response bodies and HTTP+SSE streams
 * (transport/httpc.c: on_body, which splits an event stream into lines,
 * sse_line, which assembles events, deliver, the legacy endpoint event
 * and its same-origin check, and the size limit).
 *
 * on_body and sse_line are static and run on the transport's thread
 * under libcurl.  The least invasive way to reach them: this file
 * compiles transport/httpc.c itself (the #include below), so it defines
 * every symbol of httpc.c and the linker never takes httpc.o from the
 * archive; the library is unchanged.  No thread and no socket: a
 * connection and a response are built by hand, and libcurl's
 * curl_easy_getinfo (reached through the tp_curl table that httpc.c
 * calls) is replaced by one that answers the two questions on_body asks
 * (the connection, and the Content-Type "text/event-stream").  libcurl
 * itself is loaded for the URL parser the endpoint check uses.
 *
 * Input: byte 0 chooses the response (bits 0-1: 0 the SSE answer of a
 * POST, 1 a resumed GET, 2 the session's GET stream, 3 the HTTP+SSE
 * stream of 2024-11-05, whose first `endpoint` event names the POST
 * URL) and the message limit (bits 2-3: 16, 64, 1024 or 65536 bytes);
 * byte 1 seeds the sizes of the pieces the body arrives in; the rest is
 * the body.
 *
 * Checked beyond ASan, UBSan and LeakSanitizer: the body fed whole and
 * fed in pieces gives the same messages, failures, last event id, retry
 * and endpoint (the split does not depend on how the bytes arrive, a CR
 * and its LF in two pieces included); when the body fits the limit, the
 * messages are those of an independent SSE reader written here (the
 * WHATWG event-stream rules, with the client's trimming of whitespace
 * and its legacy event types); every message is non-empty, at most one
 * byte over the limit (the engine refuses that one by its size), with no
 * whitespace at either end, and carries the route of its request (none
 * on a GET stream); a request fails at most once, never once it no
 * longer waits, and always with a reason; an endpoint accepted is on
 * the connection's origin; a last event id has no NUL and fits its
 * buffer.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/httpc.c"

#define BASE_URL "http://127.0.0.1:8080/mcp"

typedef struct record {
	char *msgs[256];
	size_t lens[256];
	int nmsgs;
	int dropped;             /* messages past the 256 kept */
	int failures, toobig;
	char last_id[256];
	int retry_ms;
	char endpoint[4200];
	int refused;
} record;

static tp_httpc *current;
static int have_curl;

static CURLcode fake_getinfo(CURL *e, CURLINFO info, ...)
{
	(void)e;
	va_list ap;
	va_start(ap, info);
	if (info == CURLINFO_PRIVATE)
		*va_arg(ap, void **) = current;
	else if (info == CURLINFO_CONTENT_TYPE)
		*va_arg(ap, const char **) = "text/event-stream; charset=utf-8";
	va_end(ap);
	return CURLE_OK;
}

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz-client: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	have_curl = tp_curl_load() == 0;
	tp_curl.easy_getinfo = fake_getinfo;
	return 0;
}

/* What deliver() trims (not strchr: it finds the NUL of its string). */
static int is_ws(char c)
{
	return c == ' ' || c == '\r' || c == '\n';
}

static void on_message(void *arg, const char *route, const char *data, size_t len)
{
	record *r = arg;
	tp_httpc *h = current;
	if (len == 0 || len > h->max_message + 1)
		fail("a message of a length the limit does not allow", NULL);
	if (is_ws(data[0]) || is_ws(data[len - 1]))
		fail("a message with whitespace at an end", NULL);
	if ((route == NULL) != (h->active->kind == X_STREAM) ||
	    (route && strcmp(route, "r1") != 0))
		fail("a message with the wrong route", route);
	if (r->nmsgs == 256) {
		r->dropped++;
		return;
	}
	r->msgs[r->nmsgs] = malloc(len);
	if (!r->msgs[r->nmsgs])
		abort();
	memcpy(r->msgs[r->nmsgs], data, len);
	r->lens[r->nmsgs++] = len;
}

/* As the client says: a request waits until it fails (its answer is not
 * looked for here: a resume then reads on, which covers more). */
static int route_waiting(void *arg, const char *route)
{
	record *r = arg;
	return route != NULL && r->failures == 0;
}

static void on_failure(void *arg, const char *route, int kind, int status, const char *why)
{
	record *r = arg;
	(void)status;
	if (!route || !why || !why[0])
		fail("a failure without a route or a reason", why);
	if (!route_waiting(arg, route))
		fail("a failure of a request that no longer waits", why);
	r->failures++;
	r->toobig += kind == TP_HTTPC_TOOBIG;
}

static void record_free(record *r)
{
	for (int i = 0; i < r->nmsgs; i++)
		free(r->msgs[i]);
}

/* Feeds `body` to a fresh response, in pieces chosen by `seed` (0: whole). */
static void run(int kind, size_t max, const char *body, size_t n, unsigned seed, record *r)
{
	memset(r, 0, sizeof *r);
	tp_httpc *h = calloc(1, sizeof *h);
	xfer *x = calloc(1, sizeof *x);
	if (!h || !x || !(h->url = strdup(BASE_URL)))
		abort();
	h->hooks = (tp_httpc_hooks){ on_message, route_waiting, on_failure, NULL, r };
	h->max_message = max;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->ep_cv, NULL);
	x->kind = kind == 3 ? X_STREAM : kind == 2 ? X_STREAM : kind == 1 ? X_RESUME : X_POST;
	x->legacy = h->legacy = kind == 3;
	x->status = 200;
	x->easy = (CURL *)h; /* only handed to fake_getinfo */
	if (x->kind != X_STREAM && !(x->route = strdup("r1")))
		abort();
	h->active = x;
	current = h;
	size_t at = 0;
	while (at < n) {
		size_t piece = n - at;
		if (seed) {
			seed = seed * 1103515245u + 12345u;
			piece = 1 + (seed >> 16) % 13;
			if (piece > n - at)
				piece = n - at;
		}
		char *copy = malloc(piece); /* exactly the piece: no reading past it */
		if (!copy)
			abort();
		memcpy(copy, body + at, piece);
		size_t took = on_body(copy, 1, piece, x);
		free(copy);
		if (took != piece)
			break; /* curl ends the transfer */
		at += piece;
	}
	if (!memchr(x->last_id, 0, sizeof x->last_id))
		fail("the last event id is not terminated", NULL);
	if (strlen(x->last_id) != strnlen(x->last_id, sizeof x->last_id))
		fail("the last event id holds a NUL", NULL);
	memcpy(r->last_id, x->last_id, sizeof r->last_id);
	r->retry_ms = x->retry_ms;
	r->refused = x->refused;
	if (h->endpoint) {
		if (strncmp(h->endpoint, BASE_URL, strlen("http://127.0.0.1:8080/")) != 0)
			fail("an endpoint on another origin", h->endpoint);
		snprintf(r->endpoint, sizeof r->endpoint, "%s", h->endpoint);
	}
	free(x->buf);
	free(x->data);
	free(x->route);
	free(x);
	pthread_cond_destroy(&h->ep_cv);
	pthread_mutex_destroy(&h->mu);
	free(h->endpoint);
	free(h->url);
	free(h);
	current = NULL;
}

/* ---- an independent event-stream reader (WHATWG HTML 9.2.6) --------------- */

typedef struct ref {
	record *r;
	int legacy, stream;
	char *data;
	size_t dlen;
	int has_data;
	char event[64];
	int event_long;
	int endpoint_seen;
} ref;

static void ref_dispatch(ref *f)
{
	const char *d = f->data ? f->data : "";
	size_t n = f->dlen;
	if (f->legacy && !strcmp(f->event, "endpoint") && !f->event_long)
		return; /* resolved by the library; compared between runs */
	if (f->legacy && (f->event[0] || f->event_long) && strcmp(f->event, "message") != 0)
		return;
	while (n && is_ws(d[n - 1]))
		n--;
	while (n && is_ws(*d))
		d++, n--;
	if (!n || f->r->nmsgs == 256)
		return;
	f->r->msgs[f->r->nmsgs] = malloc(n);
	if (!f->r->msgs[f->r->nmsgs])
		abort();
	memcpy(f->r->msgs[f->r->nmsgs], d, n);
	f->r->lens[f->r->nmsgs++] = n;
}

static void ref_line(ref *f, const char *l, size_t n)
{
	if (n == 0) {
		if (f->has_data)
			ref_dispatch(f);
		f->dlen = 0;
		f->has_data = 0;
		f->event[0] = 0;
		f->event_long = 0;
		return;
	}
	if (l[0] == ':')
		return;
	size_t fl = 0;
	while (fl < n && l[fl] != ':')
		fl++;
	const char *v = fl < n ? l + fl + 1 : l + n;
	size_t vl = fl < n ? n - fl - 1 : 0;
	if (vl && v[0] == ' ')
		v++, vl--;
	if (fl == 4 && !memcmp(l, "data", 4)) {
		f->data = realloc(f->data, f->dlen + vl + 2);
		if (!f->data)
			abort();
		if (f->has_data)
			f->data[f->dlen++] = '\n';
		memcpy(f->data + f->dlen, v, vl);
		f->dlen += vl;
		f->has_data = 1;
	} else if (fl == 5 && !memcmp(l, "event", 5)) {
		/* the client keeps 15 bytes of a name: longer is no name it knows */
		f->event_long = vl >= 16 || memchr(v, 0, vl);
		if (!f->event_long) {
			memcpy(f->event, v, vl);
			f->event[vl] = 0;
		} else {
			f->event[0] = 0;
		}
	}
}

static void ref_run(int kind, const char *body, size_t n, record *r)
{
	memset(r, 0, sizeof *r);
	ref f = { .r = r, .legacy = kind == 3 };
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (body[i] != '\r' && body[i] != '\n')
			continue;
		ref_line(&f, body + start, i - start);
		if (body[i] == '\r' && i + 1 < n && body[i + 1] == '\n')
			i++;
		start = i + 1;
	}
	free(f.data);
}

static void compare(const record *a, const record *b, const char *what)
{
	if (a->nmsgs != b->nmsgs)
		fail(what, "not as many messages");
	for (int i = 0; i < a->nmsgs; i++)
		if (a->lens[i] != b->lens[i] || memcmp(a->msgs[i], b->msgs[i], a->lens[i]) != 0)
			fail(what, "a message differs");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	int kind = data[0] & 3;
	static const size_t limits[] = { 16, 64, 1024, 65536 };
	size_t max = limits[data[0] >> 2 & 3];
	unsigned seed = data[1] | 1u;
	const char *body = (const char *)data + 2;
	size_t n = size - 2;
	if (kind == 3 && !have_curl)
		kind = 2;

	record whole, pieces;
	run(kind, max, body, n, 0, &whole);
	run(kind, max, body, n, seed, &pieces);
	compare(&whole, &pieces, "whole and in pieces");
	if (whole.dropped != pieces.dropped || whole.failures != pieces.failures ||
	    whole.toobig != pieces.toobig || strcmp(whole.last_id, pieces.last_id) != 0 ||
	    whole.retry_ms != pieces.retry_ms || strcmp(whole.endpoint, pieces.endpoint) != 0 ||
	    whole.refused != pieces.refused) {
		fprintf(stderr,
			"whole: %d dropped, %d failures (%d too big), id \"%s\", retry %d, "
			"endpoint \"%s\", refused %d\n"
			"pieces: %d dropped, %d failures (%d too big), id \"%s\", retry %d, "
			"endpoint \"%s\", refused %d\n",
			whole.dropped, whole.failures, whole.toobig, whole.last_id, whole.retry_ms,
			whole.endpoint, whole.refused, pieces.dropped, pieces.failures,
			pieces.toobig, pieces.last_id, pieces.retry_ms, pieces.endpoint,
			pieces.refused);
		fail("whole and in pieces: the state differs", NULL);
	}
	if (whole.toobig && kind < 2 && whole.failures != 1)
		fail("a message over the limit did not fail its request once", NULL);
	/* The reference knows no limit, and the legacy stream ends at a
	 * refused endpoint. */
	if (n <= max && !whole.refused && !whole.dropped) {
		record want;
		ref_run(kind, body, n, &want);
		compare(&whole, &want, "the client and the reference reader");
		record_free(&want);
	}
	record_free(&whole);
	record_free(&pieces);
	return 0;
}
