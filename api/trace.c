/*
 * trace.c - W3C trace context in MCP (SEP-414): the traceparent and
 * tracestate of a request, checked against the W3C Trace Context formats,
 * given to its handler and passed on in the _meta of every request the
 * server sends on its behalf (sampling, elicitation, roots, and the input
 * requests of input_required results and tasks).
 *
 * The values come from the request's params._meta; over HTTP, the W3C
 * traceparent and tracestate headers of the POST stand in when _meta has
 * none (mcp_trace_from_headers).  A value that breaks the format is
 * dropped, never passed on: a client must not be able to push arbitrary
 * text into the requests the server makes, or into its traces.
 */
#include <string.h>

#include "api/internal.h"

#define TRACEPARENT_LEN 55 /* version 00: 2-32-16-2 hex digits, 3 dashes */
#define TRACESTATE_MAX 512 /* W3C: propagate at least 512 characters */
#define TRACESTATE_MEMBERS 32

static int lower_hex(const char *p, size_t n, int *all_zero)
{
	*all_zero = 1;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		if (c != '0')
			*all_zero = 0;
	}
	return 1;
}

int mcp_trace_valid_parent(const char *v)
{
	/* 00-<trace-id>-<parent-id>-<flags>.  Only version 00 is defined; a
	 * value of another version is not passed on in a form this server
	 * cannot vouch for. */
	int zero;
	if (!v || strlen(v) != TRACEPARENT_LEN || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return 0;
	if (v[0] != '0' || v[1] != '0')
		return 0;
	if (!lower_hex(v + 3, 32, &zero) || zero) /* an all-zero trace id is invalid */
		return 0;
	if (!lower_hex(v + 36, 16, &zero) || zero) /* and so is a zero parent id */
		return 0;
	return lower_hex(v + 53, 2, &zero);
}

static int lcalpha(char c)
{
	return c >= 'a' && c <= 'z';
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

static int key_char(char c)
{
	return lcalpha(c) || digit(c) || c == '_' || c == '-' || c == '*' || c == '/';
}

/* One list member "key=value" (no surrounding spaces), [p, end). */
static int valid_member(const char *p, const char *end, const char **key_end)
{
	const char *eq = memchr(p, '=', (size_t)(end - p));
	if (!eq || eq == p)
		return 0;
	*key_end = eq;
	const char *at = memchr(p, '@', (size_t)(eq - p));
	if (!at) {
		/* simple-key: lcalpha 0*255(key chars) */
		if (!lcalpha(*p) || eq - p > 256)
			return 0;
		for (const char *q = p + 1; q < eq; q++)
			if (!key_char(*q))
				return 0;
	} else {
		/* tenant-id "@" system-id */
		if (at == p || at - p > 241 || !(lcalpha(*p) || digit(*p)) || eq - at - 1 < 1 ||
		    eq - at - 1 > 14 || !lcalpha(at[1]))
			return 0;
		for (const char *q = p + 1; q < at; q++)
			if (!key_char(*q))
				return 0;
		for (const char *q = at + 2; q < eq; q++)
			if (!key_char(*q))
				return 0;
	}
	/* value: 0*255(chr) nblk-chr; chr is space or nblk-chr, and nblk-chr
	 * is printable ASCII but ',' and '='. */
	const char *v = eq + 1;
	size_t n = (size_t)(end - v);
	if (n < 1 || n > 256 || v[n - 1] == ' ')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x20 || c > 0x7e || c == ',' || c == '=')
			return 0;
	}
	return 1;
}

int mcp_trace_valid_state(const char *v)
{
	if (!v || strlen(v) > TRACESTATE_MAX)
		return 0;
	const char *keys[TRACESTATE_MEMBERS];
	size_t key_len[TRACESTATE_MEMBERS];
	int members = 0;
	const char *p = v;
	for (;;) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		const char *a = p, *b = end;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (a < b) { /* empty members are allowed and skipped */
			const char *kend;
			if (members == TRACESTATE_MEMBERS || !valid_member(a, b, &kend))
				return 0;
			for (int i = 0; i < members; i++)
				if (key_len[i] == (size_t)(kend - a) &&
				    memcmp(keys[i], a, key_len[i]) == 0)
					return 0; /* a key at most once */
			keys[members] = a;
			key_len[members++] = (size_t)(kend - a);
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return members > 0;
}

void mcp_trace_begin(mcp_ctx *ctx, json_object *params)
{
	json_object *meta = mcp_get(params, "_meta");
	json_object *tp = mcp_get(meta, "traceparent");
	json_object *ts = mcp_get(meta, "tracestate");
	ctx->traceparent = ctx->tracestate = NULL;
	if (!json_object_is_type(tp, json_type_string) ||
	    !mcp_trace_valid_parent(json_object_get_string(tp)))
		return;
	ctx->traceparent = json_object_get_string(tp);
	/* tracestate means nothing without the traceparent it belongs to. */
	if (json_object_is_type(ts, json_type_string) &&
	    mcp_trace_valid_state(json_object_get_string(ts)))
		ctx->tracestate = json_object_get_string(ts);
}

MCP_EXTERN int mcp_ctx_trace_context(const mcp_ctx *ctx, const char **traceparent,
				     const char **tracestate)
{
	const char *tp = ctx ? ctx->traceparent : NULL;
	if (traceparent)
		*traceparent = tp;
	if (tracestate)
		*tracestate = tp ? ctx->tracestate : NULL;
	return tp != NULL;
}

void mcp_trace_meta_add(const mcp_ctx *ctx, json_object *params)
{
	if (!ctx->traceparent || !json_object_is_type(params, json_type_object))
		return;
	json_object *meta = mcp_get(params, "_meta");
	if (!meta) {
		meta = json_object_new_object();
		if (eng_obj_add(params, "_meta", meta))
			return;
	}
	if (!json_object_is_type(meta, json_type_object))
		return;
	/* What the handler set itself (its own span, say) stays. */
	if (mcp_get(meta, "traceparent"))
		return;
	eng_obj_add(meta, "traceparent", json_object_new_string(ctx->traceparent));
	if (ctx->tracestate)
		eng_obj_add(meta, "tracestate", json_object_new_string(ctx->tracestate));
}

void mcp_trace_from_headers(json_object *msg, const char *traceparent, const char *tracestate)
{
	json_object *params = mcp_get(msg, "params");
	if (!traceparent || !json_object_is_type(params, json_type_object))
		return;
	json_object *meta = mcp_get(params, "_meta");
	if (meta && (!json_object_is_type(meta, json_type_object) || mcp_get(meta, "traceparent")))
		return; /* _meta is the MCP carrier: it wins */
	/* HTTP allows spaces around a field value (RFC 9110 section 5.5). */
	char tp[TRACEPARENT_LEN + 1];
	while (*traceparent == ' ' || *traceparent == '\t')
		traceparent++;
	size_t n = strlen(traceparent);
	while (n && (traceparent[n - 1] == ' ' || traceparent[n - 1] == '\t'))
		n--;
	if (n != TRACEPARENT_LEN)
		return;
	memcpy(tp, traceparent, n);
	tp[n] = 0;
	if (!mcp_trace_valid_parent(tp))
		return;
	if (!meta) {
		meta = json_object_new_object();
		if (eng_obj_add(params, "_meta", meta))
			return;
	}
	eng_obj_add(meta, "traceparent", json_object_new_string(tp));
	if (tracestate && !mcp_get(meta, "tracestate") && mcp_trace_valid_state(tracestate))
		eng_obj_add(meta, "tracestate", json_object_new_string(tracestate));
}
